"""jaxcc.seeds: per-seed bars and the median seed's, on hand-made evaluation records."""

import json
import subprocess
import sys

import pytest

from jaxcc.evaluation import seeds as evaluation_seeds


def _rec(scenario, controller, **kw):
    return {"scenario": scenario, "controller": controller, **kw}


def _run(util, q, reclaim):
    flows = [{"controller": "P", "throughput_mbps": 10 * util}, {"controller": "cubic", "throughput_mbps": 5.0}]
    return [_rec("pareto/fixed50", "P", utilization=util, p95_qdelay_ms=q, loss=0.0, per_flow=flows),
            _rec("pareto/depart4", "P", reclaim_s=reclaim, depart_at_s=[30.0, 40.0, 50.0]),
            _rec("pareto/fixed50", "bbr", utilization=0.97, p95_qdelay_ms=30.0, loss=0.01)]


def test_median_records_by_hand():
    runs = [_run(0.80, 50.0, [1.0, None, 2.0]), _run(0.90, 40.0, [1.0, 1.0, None]),
            _run(0.86, 44.0, [3.0, 1.0, None]), _run(0.84, 60.0, [1.0, 2.0, 2.0])]
    med = {(r["scenario"], r["controller"]): r for r in evaluation_seeds.median_records(runs)}
    f = med[("pareto/fixed50", "P")]
    assert f["utilization"] == pytest.approx(0.85) and f["p95_qdelay_ms"] == pytest.approx(47.0)
    # Flow by flow: [8.0, 9.0, 8.6, 8.4] -> 8.5; the names from the first run.
    assert f["per_flow"] == [{"controller": "P", "throughput_mbps": pytest.approx(8.5)},
                             {"controller": "cubic", "throughput_mbps": 5.0}]
    # Element-wise; None ("never") counts as +inf: [1,1,1,3] -> 1; [None,1,1,2] -> 1.5; [2,None,None,2] -> inf.
    assert med[("pareto/depart4", "P")]["reclaim_s"] == [1.0, 1.5, None]


def test_table_counts_seeds_and_judges_the_median(tmp_path):
    runs = [_run(0.80, 50.0, [1.0] * 3), _run(0.90, 40.0, [1.0] * 3), _run(0.86, 44.0, [1.0] * 3),
            _run(0.84, 60.0, [1.0] * 3)]
    text, js = evaluation_seeds.table(runs, ["s0", "s1", "s2", "s3"], "P", "pareto")
    rows = {v["bar"]: v for v in js["median"]}
    assert rows["fixed50 util >= 0.85"]["met"] and rows["fixed50 util >= 0.85"]["value"] == "0.850"
    assert not rows["fixed50 p95 queueing <= 45 ms"]["met"]  # median 47.0 ms
    line = [l for l in text.splitlines() if l.startswith("| fixed50 util")][0]
    assert line.endswith("| 2 of 4 |")  # 0.90 and 0.86 meet it
    assert [s[0]["met"] for s in js["per_seed"]] == [False, True, True, False]
    with pytest.raises(ValueError, match="--controller: 'Q' is not in s0"):
        evaluation_seeds.table(runs, ["s0", "s1", "s2", "s3"], "Q", "pareto")


def test_cli_reads_result_dirs_and_reports_bad_input(tmp_path):
    for i, util in enumerate((0.8, 0.9, 0.86)):
        d = tmp_path / f"s{i}"
        d.mkdir()
        (d / "results.json").write_text(json.dumps({"results": _run(util, 40.0, [1.0] * 3)}))
    out = tmp_path / "t.md"
    r = subprocess.run([sys.executable, "-m", "jaxcc.seeds", f"--results={tmp_path/'s0'},{tmp_path/'s1'},{tmp_path/'s2'}",
                        "--controller=P", "--bars=pareto", f"--out={out}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "| fixed50 util >= 0.85 | 0.800 ✗ | 0.900 ✓ | 0.860 ✓ | **0.860 ✓** | 2 of 3 |" in r.stdout
    assert json.loads((tmp_path / "t.json").read_text())["total"] == len(json.loads((tmp_path / "t.json").read_text())["median"])
    r = subprocess.run([sys.executable, "-m", "jaxcc.seeds", f"--results={tmp_path/'nope'}", "--controller=P",
                        "--bars=pareto"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().startswith("error: --results:") and len(r.stderr.strip().splitlines()) == 1
