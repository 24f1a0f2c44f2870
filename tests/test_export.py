"""Checkpoint -> policy file: the exported actor reproduces the training actor exactly."""

import importlib.util
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile
from jaxcc.training import checkpointing
from jaxcc.agents.pareto import networks
from jaxcc.agents.pareto import td3 as pareto_td3

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def smoke_config(name: str = "pareto_smoke"):
    spec = importlib.util.spec_from_file_location(f"smoke_{name}", os.path.join(REPO, "configs", f"{name}.py"))
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
    assert spec["features"]["name"] == "pareto_v2" and spec["head"] == {"type": "continuous", "low": -0.3, "high": 0.5}
    assert spec["action"]["type"] == "rate_multiplicative"
    T, D = spec["features"]["history"], spec["features"]["obs_dim"]
    obs = jax.random.normal(jax.random.PRNGKey(0), (64, T, D))
    train_a = jax.jit(jax.vmap(lambda o: networks.actor_apply(tr.actor_spec, state["agent"]["actor"], o)))(obs)
    file_a = jax.jit(jax.vmap(lambda o: policyfile.apply(spec, {k: jnp.asarray(v) for k, v in tensors.items()}, o)[0]))(obs)
    np.testing.assert_array_equal(np.asarray(train_a), np.asarray(file_a))
    # evaluate --checkpoint: a stage checkpoint without its file is exported on the spot, same bytes.
    from jaxcc.training import export as training_export
    got = training_export.checkpoint_policies(str(tmp_path / "run"))
    assert got == [("Pareto-Fair", str(stage_dir) + ".safetensors")]
    assert (tmp_path / "run" / "stages" / "Pareto-Fair.safetensors").read_bytes() == out.read_bytes()


def test_export_errors_are_clear(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jaxcc.export", f"--checkpoint={tmp_path}", f"--out={tmp_path}/x"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "not a jaxcc checkpoint" in r.stderr


@pytest.mark.full  # three smoke trainings; the fast tier exports Pareto's (tests/test_docs.py, the README)
@pytest.mark.parametrize("config,algorithm,label", [("aurora_smoke", "aurora", "Aurora"), ("eagle_smoke", "eagle", "Eagle"),
                                                     ("mocc_smoke", "mocc", "MOCC")])
def test_every_algorithm_exports_with_its_stage_label(tmp_path, config, algorithm, label):
    """Aurora and Eagle runs go through the one export path, so their files carry the stage label
    like Pareto's; ``jaxcc.export`` of the run and ``jaxcc.evaluate --checkpoint`` find the same file."""
    from jaxcc import export
    from jaxcc.evaluation import runs as evaluation_runs
    from jaxcc.training import loop

    cfg = smoke_config(config)
    with cfg.unlocked():
        cfg.num_updates = cfg.chunk_updates  # one chunk is enough for the file
    work = tmp_path / "run"
    loop.train(cfg, str(work), progress=False, log=False)
    path = work / "stages" / f"{label}.safetensors"
    spec, tensors = policyfile.load(path)
    assert spec["stage"] == label and spec["algorithm"] == algorithm
    with open(work / "stages" / label / "meta.json") as f:
        assert json.load(f)["algo"] == str(cfg.algo)
    # The checkpoint's own export (stage checkpoint -> file) writes the same bytes.
    out = tmp_path / "again.safetensors"
    assert export.run_cli(["export", f"--checkpoint={work}", f"--out={out}"]) == 0
    assert out.read_bytes() == path.read_bytes()
    assert evaluation_runs.checkpoint_entries(str(work)) == [evaluation_runs.ControllerEntry(label, f"policy:{path}")]
