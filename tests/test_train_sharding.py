"""Every trainer splits its work over 8 host devices, and 8 devices match 1.

``test_work_is_split`` (one subprocess, 8 forced CPU devices, the five smoke configs): after one
chunk placed as ``jaxcc.train`` places it, every leaf of the state's environment lanes is split,
not replicated — 8 shards of ``num_envs / 8`` lanes each, on 8 different devices — and the
compiled chunk all-reduces the gradient of every 2-D tensor of the actor across the devices.
That all-reduce exists only when the update's batch (PPO minibatches, Eagle's episodes, the
replay minibatches) is split: with the batch on every device whole, each device computes the
whole gradient itself and nothing is reduced (checked by hand: without ``data_sharding`` in
Aurora, Pareto, MOCC and DeepCC, and without Eagle's per-step loss, these asserts fail).
``deepcc_smoke`` runs 4 links; here it runs 8 (one per device).

``test_eight_devices_match_one`` (Pareto).  Tolerance: the sharded run reduces sums in a different order, so float32 results differ in the
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
from jaxcc.training import loop
spec = importlib.util.spec_from_file_location("s", "configs/pareto_smoke.py"); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
c = m.get_config()
out = sys.argv[1]
loop.train(c, out + "/run", progress=False, log=True, stop_after_chunks=2)
from jaxcc.training import checkpointing
import os
ck = out + "/run/checkpoints"; last = max(int(d) for d in os.listdir(ck) if d.isdigit())
st = checkpointing.restore_untyped(f"{ck}/{last}/state")
flat = {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_flatten_with_path(st["agent"])[0]}
np.savez(out + "/agent.npz", **flat)
print(json.dumps({"devices": jax.device_count(), "last": last}))
"""


SPLIT_CONFIGS = ("aurora_smoke", "eagle_smoke", "pareto_smoke", "mocc_smoke", "deepcc_smoke")

SPLIT_SCRIPT = r"""
import json, re, sys, jax
from jaxcc import agents
from jaxcc.training.configs import load_config
from jaxcc.training.mesh import make_mesh, state_shardings

# The result shapes of every all-reduce of a compiled HLO module, dims sorted (a gradient of a
# [a, b] kernel may come out of XLA's dot as [b, a]).
AR = re.compile(r"=\s*(.*?)\s(?:all-reduce|all-reduce-start)\(")
def norm(dims):
    return "x".join(str(d) for d in sorted(dims))
def all_reduced(hlo):
    out = set()
    for line in hlo.splitlines():
        m = AR.search(line)
        if m:
            out |= {norm(int(d) for d in s.split(",") if d) for s in re.findall(r"f32\[([0-9,]*)\]", m.group(1))}
    return out

res = {}
for name in sys.argv[1].split(","):
    c = load_config(name)
    if int(c.num_envs) % jax.device_count():
        with c.unlocked():
            c.num_envs = jax.device_count()
    mesh = make_mesh()
    tr = agents.make_train(c, mesh=mesh)
    key = jax.random.PRNGKey(0)
    sh0 = state_shardings(jax.eval_shape(tr.init, key), mesh)
    state = jax.jit(tr.init, out_shardings=sh0)(key)
    sh = state_shardings(state, mesh)
    comp = jax.jit(tr.run_chunk, static_argnums=1, out_shardings=(sh, None)).lower(state, 0).compile()
    state, _ = comp(state)
    lanes = []
    for p, x in jax.tree_util.tree_flatten_with_path(state["env"])[0]:
        lanes.append({"path": jax.tree_util.keystr(p), "replicated": bool(x.sharding.is_fully_replicated),
                      "shard_lanes": [int(s.data.shape[0]) for s in x.addressable_shards],
                      "devices": sorted(s.device.id for s in x.addressable_shards),
                      "starts": sorted(int(s.index[0].start or 0) for s in x.addressable_shards)})
    kernels = sorted({norm(x.shape) for x in jax.tree.leaves(state["agent"]["actor"]) if x.ndim == 2})
    res[name] = {"num_envs": int(c.num_envs), "devices": jax.device_count(), "lanes": lanes,
                 "actor_kernels": kernels, "all_reduced": sorted(all_reduced(comp.as_text()))}
print(json.dumps(res))
"""


@pytest.fixture(scope="module")
def split_result():
    env = dict(os.environ, WANDB_MODE="disabled", JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    r = subprocess.run([sys.executable, "-c", SPLIT_SCRIPT, ",".join(SPLIT_CONFIGS)], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.full
@pytest.mark.parametrize("name", SPLIT_CONFIGS)
def test_work_is_split(split_result, name):
    res = split_result[name]
    n, e = res["devices"], res["num_envs"]
    assert n == 8 and e % 8 == 0
    assert res["lanes"], "no environment lanes in the state"
    for leaf in res["lanes"]:
        assert not leaf["replicated"], leaf["path"]
        assert leaf["shard_lanes"] == [e // n] * n, leaf["path"]  # each device: its own num_envs/8 lanes
        assert leaf["devices"] == list(range(n)), leaf["path"]
        assert leaf["starts"] == [i * (e // n) for i in range(n)], leaf["path"]  # 8 different blocks of lanes
    missing = sorted(set(res["actor_kernels"]) - set(res["all_reduced"]))
    assert res["actor_kernels"] and not missing, (
        f"{name}: the actor's gradient of {missing} is not all-reduced across devices (its batch is not split); "
        f"all-reduced f32 shapes: {res['all_reduced']}")


def _run(tmp, n):
    env = dict(os.environ, WANDB_MODE="disabled", JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp)], env=env, cwd=REPO, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["devices"] == n
    return np.load(tmp / "agent.npz"), [json.loads(l) for l in open(tmp / "run" / "metrics.jsonl")]


@pytest.mark.full
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
