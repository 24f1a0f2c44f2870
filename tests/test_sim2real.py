"""The sim-to-real comparison flags exactly the differences beyond the agreed bounds."""

import json
import os

import pytest

from jaxcc import sim2real
from jaxcc.evaluation import sim2real as evaluation_sim2real


def write(tmp_path, name, records):
    p = tmp_path / name
    p.write_text(json.dumps({"results": records}))
    return str(p)


def rec(thr, owd, q, loss, scenario="pareto/fixed50", controller="bbr"):
    return {"scenario": scenario, "controller": controller, "throughput_mbps": thr, "p95_owd_ms": owd,
            "p95_qdelay_ms": q, "loss": loss}


def test_bounds(tmp_path):
    sim = write(tmp_path, "sim.json", [rec(47.0, 100.0, 10.0, 0.020), rec(10.0, 50.0, 5.0, 0.0, controller="fixed:10")])
    emu = write(tmp_path, "emu.json", [rec(50.0, 95.0, 13.0, 0.005), rec(10.2, 50.0, 5.0, 0.0, controller="fixed:10")])
    rows = {(r["controller"], r["metric"]): r for r in evaluation_sim2real.compare(sim, emu)}
    # 47 vs 50 Mbit/s: -6% (over 5%); 100 vs 95 ms: +5.3% (within 10%); 10 vs 13 ms: -23%, 3 ms (over);
    # loss 2.0% vs 0.5%: +1.5 pp (over 1 pp).
    assert rows[("bbr", "throughput_mbps")]["difference"] == pytest.approx(-0.06)
    assert rows[("bbr", "throughput_mbps")]["over"]
    assert not rows[("bbr", "p95_owd_ms")]["over"]
    assert rows[("bbr", "p95_qdelay_ms")]["over"]
    assert rows[("bbr", "loss")]["difference"] == pytest.approx(0.015) and rows[("bbr", "loss")]["over"]
    assert not any(r["over"] for k, r in rows.items() if k[0] == "fixed:10")
    assert "3 of 8 comparisons exceed" in evaluation_sim2real.format_rows(list(rows.values()))


def test_small_delays_within_the_floor_agree(tmp_path):
    # 0.2 ms vs 3.8 ms of queueing is -95% but only 3.6 ms apart: over (> 2 ms); 0.2 vs 1.9 ms is not.
    sim = write(tmp_path, "s.json", [rec(40.0, 45.2, 0.2, 0.0), rec(40.0, 45.2, 0.2, 0.0, controller="b")])
    emu = write(tmp_path, "e.json", [rec(40.0, 47.0, 3.8, 0.0), rec(40.0, 47.0, 1.9, 0.0, controller="b")])
    rows = {(r["controller"], r["metric"]): r for r in evaluation_sim2real.compare(sim, emu)}
    assert rows[("bbr", "p95_qdelay_ms")]["over"]
    assert not rows[("b", "p95_qdelay_ms")]["over"]
    assert not rows[("bbr", "p95_owd_ms")]["over"]  # 45.2 vs 47.0: -3.8%, 1.8 ms


def test_bad_file_is_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="bad.json"):
        evaluation_sim2real.compare(str(bad), str(bad))


def test_invalid_emulated_runs_are_listed_not_judged(tmp_path):
    """An emulated run that did not keep time (delay_check.valid false) gives no pass and no
    failure: it is listed as "invalid, re-run"; an unchecked one (valid null) is compared."""
    bad = dict(rec(10.0, 90.0, 40.0, 0.0), delay_check={"valid": False, "reasons": ["p95 hold error 6.30 ms > 2 ms"]})
    good = dict(rec(47.0, 100.0, 10.0, 0.0, controller="fixed:40"), delay_check={"valid": True, "reasons": []})
    unchecked = dict(rec(47.0, 100.0, 10.0, 0.0, controller="fixed:10"), delay_check={"valid": None, "reasons": ["x"]})
    legacy = rec(20.0, 100.0, 10.0, 0.0, controller="fixed:20")       # written before the check existed
    sim = write(tmp_path, "s.json", [rec(47.0, 100.0, 10.0, 0.0), rec(47.0, 100.0, 10.0, 0.0, controller="fixed:40"),
                                     rec(47.0, 100.0, 10.0, 0.0, controller="fixed:10"),
                                     rec(47.0, 100.0, 10.0, 0.0, controller="fixed:20")])
    emu = write(tmp_path, "e.json", [bad, good, unchecked, legacy])
    rows = evaluation_sim2real.compare(sim, emu)
    # the invalid bbr run (its throughput is -79% off) is not among the judged rows at all
    assert {r["controller"] for r in rows} == {"fixed:40", "fixed:10", "fixed:20"}
    assert len(rows) == 12
    checked = {r["controller"]: r["emu_checked"] for r in rows}
    assert checked == {"fixed:40": True, "fixed:10": False, "fixed:20": False}
    # fixed:20: 47 vs 20 Mbit/s is over the bound (+135%); the others agree exactly
    assert [r["controller"] for r in rows if r["over"]] == ["fixed:20"]
    inv = evaluation_sim2real.invalid_runs(emu)
    assert inv == [{"scenario": "pareto/fixed50", "controller": "bbr", "verdict": "invalid, re-run",
                    "reasons": ["p95 hold error 6.30 ms > 2 ms"]}]
    text = evaluation_sim2real.format_rows(rows, inv)
    assert "bbr            invalid, re-run: p95 hold error 6.30 ms > 2 ms" in text
    assert "1 of 12 comparisons exceed" in text
    assert "1 emulated run(s) invalid" in text
    assert text.count("(emulation unchecked)") == 8


def test_compare_cli_lists_invalid_runs(tmp_path, capsys):
    sim = write(tmp_path, "s.json", [rec(47.0, 100.0, 10.0, 0.0)])
    emu = write(tmp_path, "e.json", [dict(rec(1.0, 900.0, 800.0, 0.5), delay_check={"valid": False, "reasons": ["r"]})])
    assert sim2real.run_cli(["sim2real", "--compare", sim, emu]) == 0
    out = capsys.readouterr().out
    assert "invalid, re-run: r" in out and "0 of 0 comparisons exceed" in out


def test_rerun_replaces_only_the_invalid_runs(tmp_path, monkeypatch):
    """--rerun-invalid: each invalid run is emulated again (its scenario, its controller) and
    its new record takes the old one's place; valid runs are left as they were."""
    bad = dict(rec(10.0, 90.0, 40.0, 0.0), delay_check={"valid": False, "reasons": ["late"]})
    good = dict(rec(40.0, 45.0, 0.0, 0.0, controller="fixed:40"), delay_check={"valid": True, "reasons": []})
    emu = write(tmp_path, "e.json", [bad, good])
    calls = []

    def fake_run(cmd, check):
        calls.append(cmd)
        out = next(a.split("=", 1)[1] for a in cmd if a.startswith("--out="))
        os.makedirs(out)
        new = dict(rec(47.5, 99.0, 9.0, 0.0), delay_check={"valid": True, "reasons": []})
        with open(os.path.join(out, "results.json"), "w") as fh:
            json.dump({"results": [new]}, fh)

    monkeypatch.setattr(sim2real.subprocess, "run", fake_run)
    evaluation_sim2real.rerun(evaluation_sim2real.invalid_runs(emu), ["fixed:40", "bbr"], None, emu, str(tmp_path / "rerun1"))
    assert len(calls) == 1 and "--controller=bbr" in calls[0] and "--scenario=pareto/fixed50" in calls[0]
    after = {r["controller"]: r for r in json.loads(open(emu).read())["results"]}
    assert after["bbr"]["throughput_mbps"] == 47.5 and after["bbr"]["delay_check"]["valid"] is True
    assert after["fixed:40"] == good
    assert evaluation_sim2real.invalid_runs(emu) == []
