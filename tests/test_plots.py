"""``python -m jaxcc.plots training-curve``: a plot file from a run's metrics.jsonl."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from jaxcc import plots

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write_run(folder, rows):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return str(folder)


def _synthetic(n=20, resume_at=None):
    rows = []
    for i in range(1, n + 1):
        el = 10.0 + 2.0 * i
        if resume_at is not None and i > resume_at:
            el = 5.0 + 2.0 * (i - resume_at)  # the clock restarts on a resume
        rows.append({"update": 5 * i, "env_steps": 5 * i * 65536, "elapsed_s": el,
                     "reward": 1000.0 + 50 * i, "episode_return": math.nan if i == 1 else 4e5 + 2e4 * i})
    return rows


def test_read_metrics_orders_dedups_and_continues_the_clock(tmp_path):
    rows = _synthetic(10, resume_at=6)
    rows.insert(6, dict(rows[5], reward=-1.0))  # update 30 logged twice (resumed), later row wins
    rows[6], rows[5] = rows[5], rows[6]
    m = plots.read_metrics(_write_run(tmp_path / "run", rows))
    assert list(m["update"]) == [5 * i for i in range(1, 11)]
    assert np.all(np.diff(m["wall_s"]) > 0)  # resumed segment continues after 22 s
    assert math.isnan(m["episode_return"][0]) and m["episode_return"][-1] == 4e5 + 2e5


def test_training_curve_cli_writes_a_plot(tmp_path):
    run = _write_run(tmp_path / "run", _synthetic())
    out = tmp_path / "plots" / "curve.png"
    res = subprocess.run([sys.executable, "-m", "jaxcc.plots", "training-curve", f"--run={run}", f"--out={out}"],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert out.exists() and out.stat().st_size > 5000
    assert res.stdout.strip() == str(out)


def test_training_curve_two_runs_and_errors(tmp_path):
    a = _write_run(tmp_path / "a", _synthetic())
    b = _write_run(tmp_path / "b", _synthetic(8))
    out = str(tmp_path / "cmp.svg")
    assert plots.main(["training-curve", f"--run={a}", f"--run={b}", "--label=A", "--label=B", f"--out={out}"]) == 0
    assert os.path.getsize(out) > 5000
    assert plots.main(["training-curve", f"--run={tmp_path / 'missing'}", f"--out={out}"]) == 2
    with pytest.raises(SystemExit):
        plots.main(["training-curve", f"--out={out}"])  # --run is required
