"""``python -m jaxcc.bench --train=CONFIG``: the training-loop benchmark (was ``aurora_ppo --bench``)."""

import json
import os
import subprocess
import sys

import pytest

from jaxcc import bench, huge_pages

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("algorithm", "config", "devices", "num_envs", "env_steps_per_s", "updates_per_s", "seconds", "updates",
          "env_steps")


def _bad(capsys, args):
    """``python -m jaxcc.bench ARGS`` refused before any timing, run in this process (the CLI's flags are
    fresh per call, ``jaxcc.cli``): (exit status, the stderr lines that start with ``error:``, stderr)."""
    capsys.readouterr()
    code = bench.run_cli(["jaxcc.bench", *args])
    err = capsys.readouterr().err
    return code, [ln for ln in err.splitlines() if ln.startswith("error:")], err


def _bench(args, tmp_path, timeout=600):
    out = tmp_path / "bench.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "jaxcc.bench", *args, f"--out={out}"], cwd=REPO, capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(out.read_text()), (tmp_path / "bench.md").read_text()


@pytest.mark.full  # a benchmark: the fast tier holds the bench's arguments (test_train_bench_bad_input_is_one_line)
def test_train_bench_times_the_training_loop(tmp_path):
    res, md = _bench(["--train=aurora_smoke", "--sizes=4,8", "--updates=1"], tmp_path)
    assert res["config"] == "aurora_smoke" and [row["num_envs"] for row in res["rows"]] == [4, 8]
    for row in res["rows"]:
        assert all(k in row for k in FIELDS), row
        assert row["algorithm"] == "aurora_ppo" and row["devices"] == 1
        # aurora_smoke: 64 MIs per link per update (one flow per link), one update per timed call.
        assert row["updates"] == 1 and row["num_steps"] == 64
        assert row["env_steps_per_s"] > 0 and row["seconds"] > 0
        assert row["env_steps_per_s"] == row["num_envs"] * 64 / row["seconds"]
        assert row["updates_per_s"] == 1 / row["seconds"]
    assert md.count("| aurora_ppo | aurora_smoke | 1 |") == 2


@pytest.mark.full
def test_train_bench_at_each_device_count(tmp_path):
    """``--devices=1,2``: one subprocess per count, each with that many forced host devices; the
    rows record the mesh they ran on and the environment steps the agent counted."""
    res, md = _bench(["--train=aurora_smoke,mocc_smoke", "--devices=1,2", "--sizes=4", "--updates=1"], tmp_path)
    got = [(r["config"], r["devices"], r["process_devices"], r["num_envs"]) for r in res["rows"]]
    assert got == [("aurora_smoke", 1, 1, 4), ("mocc_smoke", 1, 1, 4), ("aurora_smoke", 2, 2, 4), ("mocc_smoke", 2, 2, 4)]
    for r in res["rows"]:
        assert all(k in r for k in FIELDS), r
        assert r["env_steps_per_s"] == r["env_steps"] / r["seconds"] > 0
        assert r["env_steps"] == (4 * 64 if r["config"] == "aurora_smoke" else 4)  # counters.env_steps of 1 update
    assert md.splitlines()[0] == "| algorithm | config | devices | num_envs | env steps/s | updates/s |"
    assert "| mocc_envelope | mocc_smoke | 2 | 4 |" in md


def test_train_bench_bad_input_is_one_line(capsys, tmp_path):
    """An unknown config, a size that cannot be split over the devices, a device count < 1: one
    error line, exit 2, no traceback."""
    for args, why in ((["--train=nope", "--sizes=4"], "unknown config 'nope'; valid configs: "),
                      (["--train=aurora_smoke", "--sizes=4", "--devices=1,8"], "--sizes=4 must be multiples of every"),
                      (["--train=aurora_smoke", "--devices=0"], "device counts must be >= 1")):
        code, err, text = _bad(capsys, [*args, f"--out={tmp_path / 'unused.json'}"])
        assert code == 2 and len(err) == 1 and err[0].startswith(f"{'error: ' + args[0]}: "), text[-2000:]
        assert why in err[0] and "Traceback" not in text
    assert not (tmp_path / "unused.json").exists()


def test_bench_makes_its_output_folder_first(tmp_path, capsys):
    """``--out=results/bench.json`` on a fresh clone: the folder is made before the timing; a
    folder that cannot be made (under a file) is one error line, exit 2, before any timing."""
    out = tmp_path / "new" / "deeper" / "bench.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "jaxcc.bench", "--sizes=1", "--decisions=2", "--repeats=1",
                        "--mode=sim", f"--out={out}"], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["sim"][0]["num_envs"] == 1 and res["complete"] is True and res["rate_independence"]["num_envs"] == 1
    (tmp_path / "afile").write_text("x")
    bad = tmp_path / "afile" / "bench.json"
    code, err, text = _bad(capsys, ["--sizes=1", f"--out={bad}"])
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: --out={bad}: cannot make its folder ("), \
        text[-2000:]
    assert "Traceback" not in text


def test_bench_at_another_resolution(tmp_path, capsys):
    """``--ticks_per_rtt=16``: a decision is 8 ticks (½ RTT), so flow-ticks/s = 8 × decisions/s, and
    the JSON says the resolution (and the packet-granular effects, the ring length and the huge
    pages it ran with); below 2 ticks per RTT there is no ½-RTT decision, an unknown effect is
    none, and a ring length or feedback slots outside their ranges or with the environment are
    refused: one error line each."""
    out = tmp_path / "bench.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "jaxcc.bench", "--sizes=1", "--decisions=2", "--repeats=1",
                        "--mode=sim", "--ticks_per_rtt=16", "--granular=drops,loss", "--ring_len=64",
                        "--feedback_slots=2", f"--out={out}"],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert (res["ticks_per_rtt"], res["mi_ticks"], res["granular"], res["ring_len"], res["feedback_slots"]) == \
        (16, 8, ["drops", "loss"], 64, 2)
    assert res["huge_pages"] is (huge_pages.active() or huge_pages.wanted())
    assert res["sim"][0]["flow_ticks_per_s"] == pytest.approx(8 * res["sim"][0]["decisions_per_s"])
    code, err, text = _bad(capsys, ["--sizes=1", "--ticks_per_rtt=1", f"--out={out}"])
    assert code == 2 and len(err) == 1 and "--ticks_per_rtt=1: must be >= 2" in err[0], text[-2000:]
    code, err, text = _bad(capsys, ["--sizes=1", "--mode=sim", "--granular=burst", f"--out={out}"])
    assert code == 2 and err == ["error: --granular: unknown effect(s) burst; allowed drops,loss,clocked"], text[-2000:]
    for args, want in ((["--mode=sim", "--ring_len=4"], "error: --ring_len=4: must be in [8, 65536]"),
                       (["--mode=env", "--ring_len=64"], "error: --ring_len=64: only with --mode=sim"),
                       (["--mode=sim", "--feedback_slots=0"], "error: --feedback_slots=0: must be in [1, 16]"),
                       (["--mode=env", "--feedback_slots=2"], "error: --feedback_slots=2: only with --mode=sim")):
        code, err, text = _bad(capsys, ["--sizes=1", *args, f"--out={out}"])
        assert code == 2 and len(err) == 1 and err[0].startswith(want), text[-2000:]


@pytest.mark.full  # five training programs compile
def test_gpu_check_writes_every_table_and_counts_a_step_it_stopped(tmp_path):
    """``launch/gpu_check.sh`` on this CPU with tiny sizes: every table is written (Eagle's size
    rounded up to its CEM batch) and the summary says so; a step stopped at its limit (here the environment bench, 1 s) is counted
    as exit 124 with no table, and the script exits 1."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=REPO, JAXCC_PYTHON=sys.executable, SIM_SIZES="1,2",
               ENV_SIZES="1,2", TRAIN_SIZES="2", DECISIONS="3", LIMIT_ENV_S="1", LIMIT_TRAIN_S="300")
    out = tmp_path / "gc"
    r = subprocess.run(["bash", os.path.join(REPO, "launch", "gpu_check.sh"), str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=1800, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    configs = ("aurora_smoke", "eagle_smoke", "pareto_smoke", "mocc_smoke", "deepcc_smoke")
    assert list(summary) == ["bench_sim", "bench_env"] + [f"train_{c}" for c in configs]
    assert summary["bench_env"]["exit"] == 124 and not summary["bench_env"]["written"]
    for name in ["bench_sim"] + [f"train_{c}" for c in configs]:
        assert summary[name]["exit"] == 0 and summary[name]["written"], (name, summary)
    sim = json.loads((out / "bench_sim.json").read_text())
    assert [row["num_envs"] for row in sim["sim"]] == [1, 2] and sim["complete"] and sim["mode"] == "sim"
    train = json.loads((out / "bench_train.json").read_text())
    assert [row["config"] for row in train["rows"]] == list(configs) and train["backend"] == "cpu"
    assert [row["num_envs"] for row in train["rows"]] == [2, 5, 2, 2, 2]  # CEM: batches of 5 episodes
    assert json.loads((out / "device.json").read_text())["platform"] == "cpu"


def test_train_bench_stopped_keeps_the_sizes_it_finished(tmp_path, monkeypatch):
    """``--out`` is rewritten after each measured size with ``"complete": false``, so a run stopped
    at a time limit (here: interrupted while timing its second size) leaves the first size's row;
    a finished run says ``"complete": true``."""
    from absl import flags

    from jaxcc import bench

    def fake(config, updates, sizes, repeats, devices):
        rows = []
        for n in sizes:
            if n == 16:
                raise KeyboardInterrupt  # what the time limit's signal does mid-size
            rows.append({"config_algo": "aurora_ppo", "devices": 1, "num_envs": n, "env_steps_per_s": 1.0,
                         "updates_per_s": 1.0})
        return rows

    monkeypatch.setattr(bench, "bench_training", fake)
    out = tmp_path / "t.json"
    fv = bench.define_flags(flags.FlagValues())
    fv(["bench", "--train=aurora_smoke", "--sizes=8,16", f"--out={out}"])
    with pytest.raises(KeyboardInterrupt):
        bench.main_train(fv, "aurora_smoke")
    got = json.loads(out.read_text())
    assert got["complete"] is False and [(r["config"], r["num_envs"]) for r in got["rows"]] == [("aurora_smoke", 8)]
    assert not os.path.exists(f"{out}.part")
    fv2 = bench.define_flags(flags.FlagValues())
    fv2(["bench", "--train=aurora_smoke", "--sizes=8", f"--out={out}"])
    assert bench.main_train(fv2, "aurora_smoke") == 0
    got = json.loads(out.read_text())
    assert got["complete"] is True and [r["num_envs"] for r in got["rows"]] == [8]
