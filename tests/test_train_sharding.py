"""8 host devices (envs and minibatches sharded over a 'data' mesh) match 1 device.

Tolerance: the sharded run reduces sums in a different order, so float32 results differ in the
last bits.  Adam turns the sign flip of a near-zero gradient component into a full step of size
``lr``, so after 2 chunks (4 updates, 8 TD3 steps) of the smoke config a parameter may differ by
up to two steps at the critic's learning rate: ``atol = 2e-3``; and typically they agree far
better: the median absolute difference over all parameters must stay below ``1e-6``.
Logged metrics (reward, losses, expert share) agree to ``rtol = 1e-3``.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import json, sys, importlib.util, numpy as np, jax
from jaxcc import train
spec = importlib.util.spec_from_file_location("s", "configs/pareto_smoke.py"); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
c = m.get_config()
out = sys.argv[1]
train.train(c, out + "/run", progress=False, log=True, stop_after_chunks=2)
from jaxcc import checkpointing
import os
ck = out + "/run/checkpoints"; last = max(int(d) for d in os.listdir(ck) if d.isdigit())
st = checkpointing.restore_untyped(f"{ck}/{last}/state")
flat = {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_flatten_with_path(st["agent"])[0]}
np.savez(out + "/agent.npz", **flat)
print(json.dumps({"devices": jax.device_count(), "last": last}))
"""


def _run(tmp, n):
    env = dict(os.environ, WANDB_MODE="disabled", JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp)], env=env, cwd=REPO, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["devices"] == n
    return np.load(tmp / "agent.npz"), [json.loads(l) for l in open(tmp / "run" / "metrics.jsonl")]


@pytest.mark.slow
def test_eight_devices_match_one(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "eight").mkdir()
    a1, m1 = _run(tmp_path / "one", 1)
    a8, m8 = _run(tmp_path / "eight", 8)
    assert sorted(a1.files) == sorted(a8.files)
    diffs = []
    for k in a1.files:
        if np.issubdtype(a1[k].dtype, np.floating):
            np.testing.assert_allclose(a8[k], a1[k], atol=2e-3, rtol=0, err_msg=k)
            diffs.append(np.abs(a8[k] - a1[k]).ravel())
    assert np.median(np.concatenate(diffs)) < 1e-6
    for r1, r8 in zip(m1, m8):
        for key in ("reward", "critic_loss", "actor_loss", "expert_share"):
            np.testing.assert_allclose(r8[key], r1[key], rtol=1e-3, atol=1e-5, err_msg=key)
