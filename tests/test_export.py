"""Checkpoint -> policy file: the exported actor reproduces the training actor exactly."""

import importlib.util
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import checkpointing, policyfile
from jaxcc.agents.pareto import networks
from jaxcc.agents.pareto import td3 as pareto_td3

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def smoke_config():
    spec = importlib.util.spec_from_file_location("smoke", os.path.join(REPO, "configs", "pareto_smoke.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


def test_export_roundtrip_exact(tmp_path):
    tr = pareto_td3.make_train(smoke_config())
    state = jax.jit(tr.init)(jax.random.PRNGKey(3))
    stage_dir = tmp_path / "run" / "stages" / "Pareto-Fair"
    checkpointing.save_stage(str(stage_dir), state, {"stage": 2}, tr.actor_spec)
    out = tmp_path / "p.safetensors"
    r = subprocess.run([sys.executable, "-m", "jaxcc.export", f"--checkpoint={tmp_path / 'run'}", f"--out={out}"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    spec, tensors = policyfile.load(out)
    assert spec["algorithm"] == "pareto" and spec["mi_rtts"] == 2.0 and spec["stage"] == "Pareto-Fair"
    assert spec["features"]["name"] == "pareto_v1" and spec["head"] == {"type": "continuous", "low": -0.7, "high": 2.0}
    assert spec["action"]["type"] == "rate_multiplicative"
    T, D = spec["features"]["history"], spec["features"]["obs_dim"]
    obs = jax.random.normal(jax.random.PRNGKey(0), (64, T, D))
    train_a = jax.jit(jax.vmap(lambda o: networks.actor_apply(tr.actor_spec, state["agent"]["actor"], o)))(obs)
    file_a = jax.jit(jax.vmap(lambda o: policyfile.apply(spec, {k: jnp.asarray(v) for k, v in tensors.items()}, o)[0]))(obs)
    np.testing.assert_array_equal(np.asarray(train_a), np.asarray(file_a))


def test_export_errors_are_clear(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jaxcc.export", f"--checkpoint={tmp_path}", f"--out={tmp_path}/x"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "not a jaxcc checkpoint" in r.stderr
