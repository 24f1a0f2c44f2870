"""kill -9 and resume ends with the same final state, bitwise; NaN stops with a clear message."""

import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from jaxcc.training import checkpointing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(cache):
    env = dict(os.environ)
    env.update({"WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu", "JAX_COMPILATION_CACHE_DIR": str(cache),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})
    env.pop("XLA_FLAGS", None)
    return env


def _cmd(workdir, *extra):
    return [sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", f"--workdir={workdir}", "--no_progress",
            *extra]


def _final_state(workdir):
    ck = os.path.join(workdir, "checkpoints")
    last = max(int(d) for d in os.listdir(ck) if d.isdigit())
    return last, checkpointing.restore_untyped(os.path.join(ck, str(last), "state"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("jax_cache")


@pytest.mark.full
def test_kill9_resume_is_bitwise_identical(tmp_path, cache):
    env = _env(cache)
    a, b = tmp_path / "a", tmp_path / "b"
    r = subprocess.run(_cmd(a), env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]

    # Same command, SIGKILLed after the bootstrap stage (update 4) is checkpointed.
    p = subprocess.Popen(_cmd(b, "--config.debug_chunk_sleep_s=2"), env=env, cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ck = b / "checkpoints"
    t0 = time.time()
    while time.time() - t0 < 900:
        steps = [int(d) for d in os.listdir(ck) if d.isdigit()] if ck.exists() else []
        if steps and max(steps) >= 4:
            break
        if p.poll() is not None:
            break
        time.sleep(0.2)
    assert p.poll() is None, "run finished before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed_at = max(int(d) for d in os.listdir(ck) if d.isdigit())
    assert killed_at < 12
    r = subprocess.run(_cmd(b), env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resuming" in r.stderr
    # the state's tree is checked with its own handler, not a Checkpointer that looks for a step's
    # metadata file inside the item (checkpointing._saved_tree)
    assert "Metadata file does not exist" not in r.stderr, r.stderr[-3000:]

    la, sa = _final_state(a)
    lb, sb = _final_state(b)
    assert la == lb == 12
    fa, fb = jax.tree_util.tree_flatten_with_path(sa)[0], jax.tree_util.tree_flatten_with_path(sb)[0]
    assert [k for k, _ in fa] == [k for k, _ in fb]
    for (k, x), (_, y) in zip(fa, fb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=jax.tree_util.keystr(k))
    for lab in ("Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair"):
        assert (a / "stages" / f"{lab}.safetensors").read_bytes() == (b / "stages" / f"{lab}.safetensors").read_bytes()
    summary = json.loads((b / "summary.json").read_text())
    assert summary["final_update"] == 12


@pytest.mark.full  # a pareto_smoke training to the NaN; the fast tier checks check_finite by hand
def test_nan_stops_and_keeps_last_good_checkpoint(tmp_path, cache):
    w = tmp_path / "nan"
    r = subprocess.run(_cmd(w, "--config.debug_nan_at_update=5"), env=_env(cache), cwd=REPO, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 3, r.stderr[-3000:]
    assert "non-finite critic_loss" in r.stderr and "at update 5 (stage advance)" in r.stderr
    last, state = _final_state(w)
    assert last == 4  # the checkpoint before the bad chunk is intact
    for x in jax.tree.leaves(state["agent"]):
        if np.issubdtype(np.asarray(x).dtype, np.floating):
            assert np.all(np.isfinite(np.asarray(x)))


def test_a_checkpoint_of_another_state_tree_is_one_line_naming_the_leaves(tmp_path):
    """A stage checkpoint whose tree differs from the template (an older jaxcc's agent) is refused
    before orbax's many-line dump, naming the leaves only on each side."""
    import jax.numpy as jnp

    from jaxcc.training import checkpointing

    saved = {"agent": {"w": jnp.ones((2, 3))}, "counters": {"update": jnp.int32(4)}}
    checkpointing.save_stage(str(tmp_path / "s"), saved, {"stage": 0})
    same = checkpointing.restore_stage(str(tmp_path / "s"), saved)
    assert float(same["agent"]["w"].sum()) == 6.0 and int(same["counters"]["update"]) == 4
    newer = {"agent": {"w": jnp.ones((2, 3))}, "counters": {"update": jnp.int32(0)}, "seed": jnp.int32(0)}
    with pytest.raises(checkpointing.CheckpointMismatch) as e:
        checkpointing.restore_stage(str(tmp_path / "s"), newer)
    msg = str(e.value)
    assert "\n" not in msg and "only in the checkpoint: none" in msg and "only in this version: seed" in msg
    older = {"agent": {"w": jnp.ones((2, 3))}}
    with pytest.raises(checkpointing.CheckpointMismatch, match="only in the checkpoint: counters/update"):
        checkpointing.restore_stage(str(tmp_path / "s"), older)


def test_restoring_a_run_checkpoint_logs_no_orbax_warning(tmp_path, caplog):
    """Restoring a rolling checkpoint (what every resume does) reads its saved tree without orbax's
    "Metadata file does not exist" warning: the step's metadata file sits one level above the
    state's folder, where orbax's checkpointer does not look."""
    import logging

    import jax.numpy as jnp

    ck = checkpointing.RunCheckpoints(str(tmp_path / "run"))
    state = {"agent": {"w": jnp.arange(3.0)}, "counters": {"update": jnp.int32(2)}}
    ck.save(2, state, {"stage": 0, "stage_chunk": 1, "stage_done": False})
    with caplog.at_level(logging.WARNING):
        back = ck.restore(2, jax.eval_shape(lambda: state))
    ck.close()
    assert float(back["agent"]["w"][2]) == 2.0 and int(back["counters"]["update"]) == 2
    assert not [r for r in caplog.records if "Metadata file does not exist" in r.getMessage()], caplog.text
