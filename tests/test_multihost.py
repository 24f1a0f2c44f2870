"""Multi-host on one machine: ``launch/multihost_local.sh`` runs the real ``jax.distributed`` path.

``pareto_smoke`` runs to update 4 (``--stop_at_update=4``: two chunks of its first stage) as
2 processes x 4 forced CPU devices, as 1 process x 8 devices and through a kill and a resume, all
in ``make test-full``: the two processes compile the whole program each, about 75 s of both cores,
which the fast tier cannot spend (one process on 8 devices is ``tests/test_train_sharding.py``).  Both build the same 1-D
``'data'`` mesh of 8 devices and the same jitted programs; what differs is how the cross-device
reductions (the sharded minibatch means inside TD3's updates, the environment metrics) are
carried out: inside one XLA CPU client, or between two processes over gloo.  Their summation
order may differ, so float32 results may differ in the last bits, and Adam turns the sign flip of
a near-zero gradient component into a full step of size ``lr``; the bound is the one of
``tests/test_train_sharding.py`` (8 devices vs 1, same smoke config, same number of updates): a
parameter may differ by at most two steps at the critic's learning rate, ``atol = 2e-3``, and the
median absolute difference over all parameters must stay below ``1e-6``.  Measured on this
machine (jax 0.10.2, gloo): max 0, median 0 over 9,676 parameters -- bit-identical, since gloo
and the in-process CPU all-reduce happened to sum in the same order; the bound is not tightened to
equality because neither implementation promises that order (the numbers are printed).

Kill and resume: a 2 x 4 run is SIGKILLed (process 1) after its first checkpoint (update 2, while
``debug_chunk_sleep_s`` holds it before chunk 2); the launch script must fail and stop process 0.
Re-running the same command resumes from the checkpoint (stderr ``resuming``), stops at update 4,
and its parameters must equal the uninterrupted 2 x 4 run's exactly: same topology, same
programs, and the state (RNG keys included) is restored whole, so nothing may differ.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "launch", "multihost_local.sh")
STOP = 4  # updates: 2 chunks of pareto_smoke's first stage


def _env():
    # JAXCC_PYTHON: the script's processes run this interpreter (a venv's too), not PATH's python3
    return dict(os.environ, WANDB_MODE="disabled", GRACE_S="5", JAXCC_PYTHON=sys.executable)


def _cmd(nproc, ndev, workdir, *extra):
    return ["bash", SCRIPT, "pareto_smoke", str(nproc), str(ndev), str(workdir), f"--stop_at_update={STOP}", *extra]


def _launch(nproc, ndev, workdir, *extra, timeout=300):
    r = subprocess.run(_cmd(nproc, ndev, workdir, *extra), env=_env(), cwd=REPO, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _pids(stderr: str) -> dict[int, int]:
    return {int(i): int(p) for i, p in re.findall(r"\[multihost_local\] process (\d+) pid (\d+)", stderr)}


def _params(workdir, update=STOP) -> dict:
    import jax

    from jaxcc.training import checkpointing

    st = checkpointing.restore_untyped(os.path.join(workdir, "checkpoints", str(update), "state"))
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_flatten_with_path(st["agent"])[0]}


def _check_run_json(workdir, nproc, ndev, pids):
    info = json.load(open(os.path.join(workdir, "run.json")))
    assert info["process_count"] == nproc
    assert info["device_count"] == nproc * ndev
    assert info["local_device_count"] == ndev
    assert info["backend"] == "cpu" and info["mesh"] == {"axis": "data", "size": nproc * ndev}
    assert info["written_by_process"] == 0
    assert [p["process_index"] for p in info["processes"]] == list(range(nproc))
    assert all(p["local_device_count"] == ndev for p in info["processes"])
    assert sorted(d for p in info["processes"] for d in p["device_ids"]) == sorted(
        {d for p in info["processes"] for d in p["device_ids"]})  # no device counted twice
    assert {p["process_index"]: p["pid"] for p in info["processes"]} == pids
    import jax

    assert info["jax_version"] == jax.__version__
    return info


@pytest.fixture(scope="module")
def run24(tmp_path_factory):
    """The uninterrupted 2 x 4 run: its folder, its output and its parameters at update STOP."""
    wd = tmp_path_factory.mktemp("multihost") / "r24"
    r24 = _launch(2, 4, wd)
    return wd, r24, _params(wd)


@pytest.mark.full
def test_two_by_four_trains_on_one_mesh_of_eight(run24):
    wd, r24, params = run24
    _check_run_json(wd, 2, 4, _pids(r24.stderr))
    # Only process 0 logs: one metrics row per chunk, printed once.
    rows = [json.loads(line) for line in open(wd / "metrics.jsonl")]
    assert [r["update"] for r in rows] == [2, 4]
    assert r24.stdout.count("stopped as asked") == 1
    assert params and all(np.all(np.isfinite(v)) for v in params.values() if np.issubdtype(v.dtype, np.floating))


@pytest.mark.full  # a third 8-device training; tests/test_train_sharding.py holds 8 devices to 1 too
def test_two_by_four_matches_one_by_eight(tmp_path, run24):
    _, _, a24 = run24
    r18 = _launch(1, 8, tmp_path / "r18")
    _check_run_json(tmp_path / "r18", 1, 8, _pids(r18.stderr))
    a18 = _params(tmp_path / "r18")
    assert sorted(a24) == sorted(a18)
    diffs = []
    for k in a24:
        if np.issubdtype(a24[k].dtype, np.floating):
            np.testing.assert_allclose(a24[k], a18[k], atol=2e-3, rtol=0, err_msg=k)
            diffs.append(np.abs(a24[k] - a18[k]).ravel())
    d = np.concatenate(diffs)
    print(f"2x4 vs 1x8 after {STOP} updates: max |diff| {d.max():.3g}, median {np.median(d):.3g} "
          f"over {d.size} parameters")
    assert np.median(d) < 1e-6


@pytest.mark.full  # two more 2 x 4 launches
def test_two_by_four_resumes_after_kill_to_the_uninterrupted_run(tmp_path, run24):
    _, _, a24 = run24
    t1 = time.time()

    # -- kill one process, the job fails; the same command resumes --------------------------
    wd = tmp_path / "killed"
    err_path = tmp_path / "killed.err"
    cmd = _cmd(2, 4, wd, "--config.debug_chunk_sleep_s=60")
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            deadline = time.time() + 240
            while not (wd / "checkpoints" / "2").is_dir():  # orbax renames its temp dir when committed
                assert p.poll() is None, open(err_path).read()[-3000:]
                assert time.time() < deadline, "no checkpoint at update 2"
                time.sleep(0.5)
            pids = _pids(open(err_path).read())
            assert sorted(pids) == [0, 1]
            os.kill(pids[1], signal.SIGKILL)
            rc = p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
    assert rc != 0
    log = open(err_path).read()
    assert f"pid {pids[1]} exited with status 137" in log, log[-2000:]
    for pid in pids.values():  # the launch script stopped the survivor too
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert not (wd / "checkpoints" / str(STOP)).exists()
    r = _launch(2, 4, wd, "--config.debug_chunk_sleep_s=60")
    assert "resuming" in r.stderr and "at update 2" in r.stderr, r.stderr[-2000:]
    assert json.load(open(wd / "run.json"))["resumed_from_update"] == 2
    assert [json.loads(line)["update"] for line in open(wd / "metrics.jsonl")] == [2, 4]
    ak = _params(wd)
    assert sorted(ak) == sorted(a24)
    for k in a24:
        np.testing.assert_array_equal(ak[k], a24[k], err_msg=k)
    print(f"kill + resume {time.time() - t1:.0f} s")


@pytest.mark.full
def test_a_sweep_across_two_processes_matches_one_process(tmp_path):
    """``--sweep`` on the multi-host path: ``launch/sweep_aurora.yaml`` (4 members) on
    ``aurora_smoke`` as 2 processes x 2 devices against 1 process x 4 devices (the same 4-device
    mesh, lanes split over it inside every member).  Each member's exported policy must agree within
    the sweep tests' bound (``tests/test_sweep.py``: ``|d| <= 1e-5 + 1e-4 |x|``; vmapped and
    cross-process reductions may sum in another order), and only process 0 writes the table."""
    from safetensors.numpy import load_file

    sweep = os.path.join(REPO, "launch", "sweep_aurora.yaml")
    r = subprocess.run(["bash", SCRIPT, "aurora_smoke", "2", "2", str(tmp_path / "mh"), f"--sweep={sweep}",
                        "--no_progress"], env=_env(), cwd=REPO, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    env = dict(_env(), JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=4")
    one = subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=aurora_smoke", f"--sweep={sweep}",
                          f"--workdir={tmp_path / 'one'}", "--no_progress"], env=env, cwd=REPO, capture_output=True,
                         text=True, timeout=400)
    assert one.returncode == 0, one.stderr[-3000:]
    assert r.stdout.count("sweep aurora_lr_ent") == 1, r.stdout[-2000:]  # the table, printed by process 0 only
    for m in range(4):
        a = load_file(str(tmp_path / "mh" / "members" / f"m{m}" / "stages" / "Aurora.safetensors"))
        b = load_file(str(tmp_path / "one" / "members" / f"m{m}" / "stages" / "Aurora.safetensors"))
        assert sorted(a) == sorted(b)
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-4, atol=1e-5, err_msg=f"m{m} {k}")
    rows = open(tmp_path / "mh" / "sweep_results.csv").read().strip().splitlines()
    assert len(rows) == 1 + 4
