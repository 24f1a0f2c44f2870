"""docs/examples/ppo_gymnax.py: PPO written against the gymnax API, exported as a policy file.

Fast tier: the example runs at a tiny size as a user runs it; its file's action on a hand-built
window is the same three ways (a numpy forward pass written here from the file's tensors, jaxcc's
policy interpreter, and the example's own flax network carrying those tensors), and the evaluate
command it prints runs the file beside BBR.  Full tier: at 2 M steps it learns (measured bar below).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import envs, policyfile

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "ppo_gymnax.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}


def run(args, cwd, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)


def run_example(tmp_path, *flags) -> tuple[str, str]:
    """(policy file, printed evaluate command) of one run of the example."""
    out = str(tmp_path / "ppo.safetensors")
    r = run([sys.executable, str(EXAMPLE), f"--out={out}", *flags], REPO)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    cmd = re.search(r"^\s*(python3 -m jaxcc\.evaluate .*)$", r.stdout, re.M)
    assert cmd, r.stdout
    return out, cmd.group(1)


def load_example():
    spec = importlib.util.spec_from_file_location("ppo_gymnax", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def numpy_mean_action(tensors, window) -> float:
    """The exported actor by hand: flatten, fc1..fc3 tanh, linear out, clipped to ±10."""
    x = np.asarray(window, np.float64).reshape(-1)
    for name in ("fc1", "fc2", "fc3"):
        x = np.tanh(x @ tensors[f"{name}.kernel"] + tensors[f"{name}.bias"])
    return float(np.clip(x @ tensors["out.kernel"] + tensors["out.bias"], -10.0, 10.0)[0])


def test_tiny_run_exports_the_trained_mean_and_evaluates_beside_bbr(tmp_path):
    path, cmd = run_example(tmp_path, "--total-steps=1024", "--num-envs=8", "--seed=3")  # 2 updates
    spec, tensors = policyfile.load(path)
    assert spec["features"] == envs.export_features_spec("aurora")
    assert spec["mi_rtts"] == 0.5 and spec["head"] == {"type": "gaussian_mean", "low": -10.0, "high": 10.0}
    assert spec["action"]["type"] == "aurora" and spec["action"]["alpha"] == 0.025
    assert [(l["name"], l["out"], l["activation"]) for l in spec["layers"][1:]] == [
        ("fc1", 64, "tanh"), ("fc2", 64, "tanh"), ("fc3", 64, "tanh"), ("out", 1, "linear")]

    # A hand-built window (oldest first): a queue building up over the last MIs.
    window = np.stack([np.zeros(10), 1.0 + 0.05 * np.arange(10), np.linspace(1.0, 1.3, 10)], axis=1)
    want = numpy_mean_action(tensors, window)
    got = float(policyfile.apply(spec, tensors, window)[0])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The example's own network, given the file's tensors, means the same action.
    ex = load_example()
    actor = {name: {"kernel": jnp.asarray(tensors[f"{name}.kernel"]), "bias": jnp.asarray(tensors[f"{name}.bias"])}
             for name in ("fc1", "fc2", "fc3", "out")}
    params = {"params": {"actor": actor, "critic": actor, "log_std": jnp.zeros((1,))}}
    pi, _ = ex.ActorCritic().apply(params, jnp.asarray(window, jnp.float32))
    np.testing.assert_allclose(float(np.clip(pi.mean()[0], -10, 10)), want, rtol=1e-5, atol=1e-6)
    # Aurora's rate rule (eq. 1) on the action: x(1 + αa) up, x / (1 − αa) down.
    rate, _ = policyfile.map_action(spec, jnp.asarray([want]), 1e6, jnp.inf)
    np.testing.assert_allclose(float(rate), 1e6 * (1 + 0.025 * want) if want >= 0 else 1e6 / (1 - 0.025 * want),
                               rtol=1e-5)

    # The printed command, on one short scenario instead of the whole suite.
    out = tmp_path / "eval"
    args = [a for a in shlex.split(cmd) if not a.startswith(("--suite=", "--out="))]
    args = [sys.executable] + args[1:] + ["--scenario=aurora/bw16", "--duration=3", f"--out={out}", "--noplots",
                                          "--noprogress"]
    assert f"--controller=policy:{path},bbr" in args
    r = run(args, REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["results"]
    by = {row["controller"]: row for row in rows}
    assert set(by) == {f"policy:{path}", "bbr"}, sorted(by)
    for row in by.values():
        assert row["scenario"] == "aurora/bw16" and 0.0 < row["throughput_mbps"] <= 16.0 * 1.01


def test_bad_size_is_one_line_exit_2(tmp_path):
    r = run([sys.executable, str(EXAMPLE), "--num-envs=0", f"--out={tmp_path / 'x.safetensors'}"], REPO)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].endswith("--num-envs must be > 0 and --total-steps >= 0, got 0 and 4000000")
    assert not (tmp_path / "x.safetensors").exists()


# Measured (2 M steps = 122 updates of 256 links × 64 MIs, ~20 s a seed on two CPU cores; aurora-bw
# at the scenarios' own length): the mean utilization over the suite's 8 links, trained minus
# untrained (the same seed's network at initialisation, --total-steps=0), was 0.529, 0.576 and
# 0.528 for seeds 0, 1, 2 (trained 0.928, 0.956, 0.920; untrained 0.399, 0.380, 0.391, which holds
# its starting rate; BBR 0.976).  The bar is well under the measured median, above what a policy
# that does not learn to climb reaches.
BAR = 0.3


@pytest.mark.full
def test_learns_on_the_aurora_bandwidth_sweep(tmp_path):
    files = {}
    for seed in (0, 1, 2):
        for kind, steps in (("trained", 2_000_000), ("untrained", 0)):
            files[seed, kind], _ = run_example(tmp_path / f"{kind}{seed}", f"--total-steps={steps}", f"--seed={seed}")
    out = tmp_path / "eval"
    r = run([sys.executable, "-m", "jaxcc.evaluate", "--controller=" + ",".join(f"policy:{f}" for f in files.values()),
             "--suite=aurora-bw", f"--out={out}", "--noplots", "--noprogress"], REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["results"]

    def util(f):
        return statistics.fmean(row["utilization"] for row in rows if row["controller"] == f"policy:{f}")

    gains = [util(files[s, "trained"]) - util(files[s, "untrained"]) for s in (0, 1, 2)]
    assert statistics.median(gains) >= BAR, gains
