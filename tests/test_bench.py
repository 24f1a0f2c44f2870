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


def test_train_bench_unknown_config_is_one_line():
    r = subprocess.run([sys.executable, "-m", "jaxcc.bench", "--train=nope", "--out=/tmp/unused-jaxcc-bench.json"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--train: no config 'nope'" in r.stderr
