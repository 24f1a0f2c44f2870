"""``policy:FILE`` in the simulator takes the same actions as the actor in the training env."""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np

import pytest

from jaxcc import policyfile, scenarios, senders
from jaxcc.agents import pipeline
from jaxcc.agents.pareto import env_adapter, networks
from jaxcc.envs.rollout import rollout
from jaxcc.sim import runner
from jaxcc.sim.controller import ControllerParams


def test_policy_controller_matches_env_rollout(tmp_path):
    se = env_adapter.make_stage_env("bootstrap")
    spec = networks.actor_spec(se.history, se.obs_dim, 16, 16, mi_rtts=se.mi_rtts, features=se.feature_info)
    params = networks.init_actor(jax.random.PRNGKey(7), se.obs_dim, 16, 16)
    # A policy that explores, then backs off: random weights scaled so actions vary.
    params["out"]["kernel"] = params["out"]["kernel"] * 20.0
    params["out"]["bias"] = params["out"]["bias"] * 0.0
    path = str(tmp_path / "p.safetensors")
    policyfile.save(path, spec, {k: np.asarray(v) for k, v in pipeline.flat(params).items()})

    n = 24
    p = se.params.replace(boot_mbps=jnp.asarray([50.0]))
    pol = lambda k, obs, st, pp: jax.vmap(lambda o: networks.actor_apply(spec, params, o))(obs)  # noqa: E731
    _, _, _, info, _ = jax.jit(lambda k: rollout(se.env, p, k, pol, n))(jax.random.PRNGKey(0))
    env_rates = np.asarray(info["rate"][:, 0])

    ctrl, cparam = senders.resolve(f"policy:{path}")
    assert ctrl.name == f"policy:{os.path.abspath(path)}" and jax.tree.all(jax.tree.map(np.array_equal, cparam, ControllerParams.zeros()))
    # The environment runs the policy alone: so does raw-policy:FILE (policy:FILE adds the
    # deployed sender's safety net, which hands this exploding policy's pacing to BBR).
    assert senders.resolve(f"raw-policy:{path}")[0].name == f"raw-policy:{os.path.abspath(path)}"
    sc = scenarios.get_scenario("pareto/fixed50")
    sc = dataclasses.replace(sc, duration_s=n * 0.18 + 0.01).with_controller(f"raw-policy:{path}")
    _, _, rates = runner.run_batch(runner.build_batches([runner.Item(sc)], resolve=senders.resolve)[0])
    mi_ticks = int(round(spec["mi_rtts"] * spec["features"]["ticks_per_rtt"]))
    sim_rates = rates[0, ::mi_ticks, 0][:n]
    # Same features and network; only float rounding of dt and sum order differ.
    np.testing.assert_allclose(sim_rates, env_rates, rtol=1e-5)
    assert np.ptp(np.log(env_rates)) > 0.5  # the policy really changed its rate


def test_unknown_feature_set_is_rejected(tmp_path):
    """A file whose feature set has no simulator sender is refused with one line naming the set
    and the supported ones; an aurora_v1 file builds."""
    spec, tensors = policyfile.make_random_policy("mlp", 0, features="orca_v9")
    path = str(tmp_path / "a.safetensors")
    policyfile.save(path, spec, tensors)
    with pytest.raises(ValueError, match="feature set 'orca_v9'") as e:
        senders.resolve(f"policy:{path}")
    msg = str(e.value)
    assert "\n" not in msg
    assert "supported: aurora_v1, aurora_v2, deepcc_v1, eagle_v1, mocc_v1, pareto_v1, pareto_v2" in msg
    spec, tensors = policyfile.make_random_policy("mlp", 0)  # aurora_v1: accepted
    policyfile.save(path, spec, tensors)
    ctrl, _ = senders.resolve(f"policy:{path}")
    assert ctrl.name == f"policy:{os.path.abspath(path)}"


def test_shipped_eagle_start_rate():
    """The shipped Eagle policy's first decision (on the empty window, at init) and so its start:
    300 kbit/s × 2.89 (its first action) with the 10-packet window, the rate clipped to
    [MIN_RATE, MAX_RATE] as the C++ twin does (``jaxcc.senders.eagle_v1``)."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ctrl, cparam = senders.policy_controller(os.path.join(repo, "checkpoints/eagle/eagle.safetensors"))
    act = ctrl.act(ctrl.init(cparam), cparam)
    assert float(act.rate) == float(np.float32(300e3 / 8) * np.float32(2.89)) == 108375.0078125  # float32 product
    assert float(act.cwnd) == 10 * 1500.0
