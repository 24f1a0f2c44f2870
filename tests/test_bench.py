"""``python -m jaxcc.bench --train=CONFIG``: the training-loop benchmark (was ``aurora_ppo --bench``)."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_train_bench_times_the_training_loop(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, "-m", "jaxcc.bench", "--train=aurora_smoke", "--sizes=4,8", "--updates=1",
                        f"--out={out}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["config"] == "aurora_smoke" and [row["num_envs"] for row in res["rows"]] == [4, 8]
    for row in res["rows"]:
        # aurora_smoke: 64 MIs per link per update (one flow per link), one update per timed call.
        assert row["updates"] == 1 and row["num_steps"] == 64
        assert row["env_steps_per_s"] > 0 and row["seconds"] > 0
        assert row["env_steps_per_s"] == row["num_envs"] * 64 / row["seconds"]


def test_train_bench_bad_config_is_one_line():
    """An unknown config, or one whose agent the benchmark does not time: one error line, exit 2."""
    for name, why in (("nope", "unknown config 'nope'; valid configs: "),
                      ("pareto_staged", "does not report env_steps_per_update")):
        r = subprocess.run([sys.executable, "-m", "jaxcc.bench", f"--train={name}", "--sizes=4",
                            "--out=/tmp/unused-jaxcc-bench.json"], cwd=REPO, capture_output=True, text=True, timeout=300)
        err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert r.returncode == 2 and len(err) == 1 and err[0].startswith(f"error: --train={name}: "), r.stderr[-2000:]
        assert why in err[0] and "Traceback" not in r.stderr
