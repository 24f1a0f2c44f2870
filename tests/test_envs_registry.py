"""make_env / export_features_spec for every paper (no compilation)."""

import jax
import pytest

from jaxcc.envs import ENV_NAMES, export_features_spec, make_env


@pytest.mark.parametrize("name", ENV_NAMES)
def test_make_env_and_spec(name):
    env, params = make_env(name)
    c = env.config
    assert env.obs_shape() == (c.num_flows, c.history, c.obs_dim)
    assert all(hasattr(x, "shape") for x in jax.tree.leaves(params))  # vmappable pytree of arrays
    spec = export_features_spec(name)
    assert spec["history"] == c.history and spec["obs_dim"] == c.obs_dim and spec["mi_rtts"] == c.mi_rtts
    assert spec["ticks_per_rtt"] == c.ticks_per_rtt
    assert spec["name"].endswith("_v1") and len(spec["feature_names"]) == c.obs_dim
    assert env.action_spec()["kind"] in ("continuous", "discrete")
    assert c.mi_ticks >= 1 and c.ring_len % 8 == 0


def test_overrides_and_unknown():
    env, _ = make_env("pareto", num_flows=3, history=4)
    assert env.config.num_flows == 3 and env.config.history == 4
    with pytest.raises(ValueError, match="unknown environment"):
        make_env("vegas")
