"""The fidelity harness's own logic (jaxcc.fidelity), against hand-computed values; no emulation.

Tolerance edges, the link-level view both sides are compared through, Jain only with two or
more flows, known limitations (decided from parameters, counted, excusing only their metrics),
pass rates, the random case generator, the simulator's one-batch padding, the CLI's errors.
"""

from __future__ import annotations

import io
import json
import math
import os

import numpy as np
import pytest

from jaxcc import fidelity as F
from jaxcc.sim import core, links

CTRLS = list(F.available_controllers())  # reno once the simulator has it


def _case(flows=((40.0, 0.0),), controller="cubic", bw=10.0, loss=0.0, buffer_bytes=50_000, duration=25.0):
    params = {"flows": len(flows), "bandwidth_mbps": bw, "rtt_ms": [r for r, _ in flows],
              "start_s": [s for _, s in flows], "buffer_bdp": 1.0, "buffer_bytes": buffer_bytes, "loss": loss,
              "duration_s": duration}
    if controller == "fixed":
        params.update(fixed_regime="below", fixed_factor=0.5, fixed_mbps=2.5)
    return F.case_from_params("t", controller, params)


def _rec(flows, jain=1.0):
    """A record with per-flow (throughput_mbps, p95_owd_ms, loss[, impl])."""
    per = []
    for i, f in enumerate(flows):
        d = {"flow": i, "throughput_mbps": f[0], "p95_owd_ms": f[1], "loss": f[2]}
        if len(f) > 3:
            d["impl"] = f[3]
        per.append(d)
    return {"per_flow": per, "jain": jain}


# ----------------------------------------------------------------------------- tolerances

@pytest.mark.parametrize("sim,ok", [(105.0, True), (95.0, True), (105.02, False), (94.98, False)])
def test_throughput_edge_is_five_percent_of_the_reference(sim, ok):
    assert F.check_metric("throughput_mbps", sim, 100.0)["ok"] is ok


@pytest.mark.parametrize("sim,ref,ok", [
    (25.0, 20.0, True),     # 5 ms floor (15% of 20 is 3 ms)
    (25.1, 20.0, False),
    (15.0, 20.0, True),
    (115.0, 100.0, True),   # 15% beyond 5 ms
    (115.2, 100.0, False),
    (85.0, 100.0, True),
    (84.8, 100.0, False),
])
def test_delay_edge_is_fifteen_percent_or_five_ms(sim, ref, ok):
    assert F.check_metric("p95_owd_ms", sim, ref)["ok"] is ok


@pytest.mark.parametrize("sim,ok", [(0.03, True), (0.01, True), (0.0302, False), (0.0, False)])
def test_loss_edge_is_one_percentage_point(sim, ok):
    assert F.check_metric("loss", sim, 0.02)["ok"] is ok


@pytest.mark.parametrize("sim,ok", [(0.95, True), (0.85, True), (0.9502, False), (0.8498, False)])
def test_jain_edge_is_five_hundredths(sim, ok):
    assert F.check_metric("jain", sim, 0.9)["ok"] is ok


def test_a_missing_value_fails():
    assert not F.check_metric("throughput_mbps", float("nan"), 10.0)["ok"]
    assert not F.check_metric("p95_owd_ms", 10.0, float("nan"))["ok"]


def test_tolerances_are_the_documented_ones():
    assert (F.THROUGHPUT_REL, F.DELAY_REL, F.DELAY_ABS_MS, F.LOSS_ABS, F.JAIN_ABS) == (0.05, 0.15, 5.0, 0.01, 0.05)
    assert F.PASS_RATE_TARGET == 0.90 and F.MAX_LIMITED_FRACTION == 0.10


# ----------------------------------------------------------------------------- link view

def test_link_view_by_hand():
    # flow 0 runs 0-25 s at 10 Mbit/s, flow 1 5-25 s at 20: 250 + 400 Mbit over 25 s = 26 Mbit/s;
    # delay and loss weighted by those volumes.
    case = _case(flows=((40.0, 0.0), (80.0, 5.0)))
    v = F.link_view(_rec([(10.0, 50.0, 0.01), (20.0, 80.0, 0.04)], jain=0.8), case)
    assert v["throughput_mbps"] == pytest.approx(26.0)
    assert v["p95_owd_ms"] == pytest.approx((250 * 50 + 400 * 80) / 650)
    # loss: lost over sent; flow 0 sent 250/0.99 Mbit and lost 1% of it, flow 1 400/0.96 and 4%
    sent = (250 / 0.99, 400 / 0.96)
    assert v["loss"] == pytest.approx((sent[0] * 0.01 + sent[1] * 0.04) / sum(sent))
    assert v["jain"] == 0.8


def test_reference_goodput_is_counted_in_ip_bytes():
    # iperf3 reports TCP payload (1448 of a 1500-byte packet), udp_probe UDP payload (1472);
    # jaxcc-sender counts IP bytes itself.
    case = _case()
    assert F.link_view(_rec([(14.48, 50.0, 0.0, "iperf3")]), case)["throughput_mbps"] == pytest.approx(15.0)
    assert F.link_view(_rec([(14.72, 50.0, 0.0, "probe")]), case)["throughput_mbps"] == pytest.approx(15.0)
    assert F.link_view(_rec([(15.0, 50.0, 0.0, "sim")]), case)["throughput_mbps"] == pytest.approx(15.0)
    assert F.link_view(_rec([(15.0, 50.0, 0.0, "jaxcc")]), case)["throughput_mbps"] == pytest.approx(15.0)
    assert F.ip_factor({"impl": "iperf3", "mss_bytes": 1460}) == pytest.approx(1512 / 1460)


def test_a_flow_without_a_result_is_an_error_not_a_number():
    with pytest.raises(ValueError, match="flow 0 has no throughput"):
        F.link_view({"per_flow": [{"flow": 0, "error": "iperf3 produced no result"}], "jain": 1.0}, _case())


# ----------------------------------------------------------------------------- verdicts

def test_jain_only_with_two_or_more_flows():
    one = _case()
    v = F.compare_case(one, _rec([(10.0, 50.0, 0.0)], 1.0), _rec([(10.0, 50.0, 0.0)], 0.2), "kernel")
    assert v["checks"]["jain"]["verdict"] == "n/a" and v["verdict"] == "pass"
    two = _case(flows=((40.0, 0.0), (40.0, 0.0)))
    v = F.compare_case(two, _rec([(5.0, 50.0, 0.0)] * 2, 1.0), _rec([(5.0, 50.0, 0.0)] * 2, 0.9), "kernel")
    assert v["checks"]["jain"]["verdict"] == "fail" and v["verdict"] == "fail"
    assert v["checks"]["jain"]["diff"] == pytest.approx(0.1)


def test_several_reference_runs_compare_with_their_median():
    case = _case()
    refs = [_rec([(x, 50.0, 0.0)]) for x in (8.0, 10.4, 20.0)]
    v = F.compare_case(case, _rec([(10.0, 50.0, 0.0)]), refs, "kernel")
    c = v["checks"]["throughput_mbps"]
    assert c["ref"] == pytest.approx(10.4) and c["verdict"] == "pass" and c["ref_runs"] == pytest.approx([8, 10.4, 20])
    assert "(kernel runs 8.00..20.00)" in F.format_cases([v], "kernel")
    assert F.compare_case(case, _rec([(10.0, 50.0, 0.0)]), [], "kernel")["verdict"] == "invalid"


def test_every_metric_is_judged():
    v = F.compare_case(_case(), _rec([(10.0, 50.0, 0.0)]), _rec([(9.0, 50.0, 0.0)]), "kernel")
    assert {m: c["verdict"] for m, c in v["checks"].items()} == {
        "throughput_mbps": "fail", "p95_owd_ms": "pass", "loss": "pass", "jain": "n/a"}


LIMIT = {"deep": F.Limitation(references=("kernel",), controllers=("cubic",), metrics=("loss",),
                              applies=lambda p: p["buffer_bytes"] > 100_000, why="test region")}


def test_a_limitation_excuses_only_its_metrics_in_its_region():
    inside = _case(buffer_bytes=200_000)
    sim, ref = _rec([(10.0, 50.0, 0.05)]), _rec([(10.0, 50.0, 0.0)])
    v = F.compare_case(inside, sim, ref, "kernel", table=LIMIT)
    assert v["limitations"] == ["deep"] and v["checks"]["loss"]["verdict"] == "excused" and v["verdict"] == "pass"
    # the same numbers outside the region fail; another metric is never excused
    assert F.compare_case(_case(buffer_bytes=50_000), sim, ref, "kernel", table=LIMIT)["verdict"] == "fail"
    v = F.compare_case(inside, _rec([(12.0, 50.0, 0.05)]), ref, "kernel", table=LIMIT)
    assert v["checks"]["throughput_mbps"]["verdict"] == "fail" and v["verdict"] == "fail"
    # nor another controller or reference
    assert not F.limitations_for(_case(controller="fixed", buffer_bytes=200_000), "kernel", LIMIT)
    assert not F.limitations_for(inside, "ns3", LIMIT)


def test_limitations_are_counted():
    cases = [_case(buffer_bytes=b) for b in (50_000, 200_000, 60_000, 300_000)]
    vs = [F.compare_case(c, _rec([(10.0, 50.0, 0.0)]), _rec([(10.0, 50.0, 0.0)]), "kernel", table=LIMIT)
          for c in cases]
    assert F.limitation_counts(vs, LIMIT) == {"deep": 2}
    assert F.limited_fraction(vs) == 0.5
    assert F.pass_rates(vs)["cubic"]["cases"]["limited"] == 2


def test_shipped_limitations_are_narrow_and_explained():
    for name, lim in F.KNOWN_LIMITATIONS.items():
        assert lim.why and lim.metrics and set(lim.metrics) <= set(F.METRICS), name
        assert set(lim.controllers) <= set(F.CONTROLLERS) and set(lim.references) <= set(F.REFERENCES), name
    # all of them together cover at most a tenth of the drawn cases of each reference
    for ref in F.REFERENCES:
        cases = F.draw_cases([c for c in CTRLS if ref != "ns3" or c not in F.NS3_NOT_CREDIBLE], 50, 0, ref)
        covered = sum(bool(F.limitations_for(c, ref)) for c in cases)
        assert covered <= F.MAX_LIMITED_FRACTION * len(cases), (ref, covered)


def test_pass_rates_by_hand(tmp_path):
    ok = _rec([(10.0, 50.0, 0.0)])
    vs = [F.compare_case(_case(), ok, ok, "kernel"),
          F.compare_case(_case(), _rec([(11.0, 50.0, 0.0)]), ok, "kernel"),       # throughput fails
          F.compare_case(_case(), _rec([(11.0, 80.0, 0.0)]), ok, "kernel"),       # throughput and delay fail
          F.compare_case(_case(), ok, ok, "kernel", valid=False)]                  # invalid: not counted
    r = F.pass_rates(vs)["cubic"]
    assert r["cases"] == {"drawn": 4, "valid": 3, "invalid": 1, "pass": 1, "rate": pytest.approx(1 / 3), "limited": 0}
    assert r["metrics"]["throughput_mbps"]["rate"] == pytest.approx(1 / 3)
    assert r["metrics"]["p95_owd_ms"]["rate"] == pytest.approx(2 / 3)
    assert r["metrics"]["loss"]["rate"] == 1.0
    assert math.isnan(r["metrics"]["jain"]["rate"])
    text = F.format_pass_rates(F.pass_rates(vs), "kernel")
    assert "1/3 (33%)" in text and "2/3 (67%)" in text
    # the Markdown table docs/fidelity.md carries, headed by the command that made the report
    md = F.write_pass_rate_table({"pass_rates": F.pass_rates(vs)}, "kernel", tmp_path, "python3 -m jaxcc.fidelity X")
    table = md.read_text()
    assert md == tmp_path / "fidelity.md" and table.startswith("`python3 -m jaxcc.fidelity X` (commit ")
    row = next(line for line in table.splitlines() if line.startswith("| `cubic` |"))
    assert [c.strip() for c in row.strip("|").split("|")][1:] == ["1/3", "2/3", "3/3", "–", "1/3", "1"], row


def test_invalid_runs_are_rerun_once(monkeypatch, tmp_path):
    runs = []

    def fake(case, out_dir, prefix):
        runs.append(out_dir.name)
        return {"per_flow": [], "delay_check": {"valid": len(runs) > 1}}

    monkeypatch.setattr(F.runs, "_run_kernel", fake)
    rec = F.run_reference(_case(), "kernel", tmp_path)
    assert runs == ["try1", "try2"] and rec["attempts"] == 2 and rec["valid"]
    runs.clear()
    monkeypatch.setattr(F.runs, "_run_kernel", lambda c, d, p: runs.append(d.name) or {"delay_check": {"valid": False}})
    rec = F.run_reference(_case(), "kernel", tmp_path)
    assert runs == ["try1", "try2"] and not rec["valid"]
    assert F.compare_case(_case(), {}, rec, "kernel", valid=rec["valid"])["verdict"] == "invalid"
    assert F.delay_valid({}) and F.delay_valid({"delay_check": {}})
    assert F.delay_valid({"delay_check": {"valid": None}})  # not measured
    assert not F.delay_valid({"delay_check": {"valid": False}})


def test_lateness_summary():
    rec = {"delay_tool": {"queues": [{"queue": 1, "packets": 300, "mean_late_us": 10.0, "max_late_us": 900.0},
                                     {"queue": 2, "packets": 100, "mean_late_us": 50.0, "max_late_us": 3000.0},
                                     {"queue": 1000, "packets": 0}]}}
    assert F.lateness(rec) == {"packets": 400, "mean_late_us": 20.0, "worst_queue_mean_late_us": 50.0,
                               "max_late_us": 3000.0, "dropped_full": 0}
    assert F.lateness({}) is None


# ----------------------------------------------------------------------------- cases

def test_cases_cover_the_target_space_and_are_deterministic():
    a = F.draw_cases(CTRLS, 30, 7)
    assert [c.params for c in a] == [c.params for c in F.draw_cases(CTRLS, 30, 7)]
    assert [c.params for c in a] != [c.params for c in F.draw_cases(CTRLS, 30, 8)]
    # case i of a controller does not depend on the other controllers or on the count
    only = F.draw_cases(["bbr"], 5, 7)
    assert [c.params for c in only] == [c.params for c in a if c.controller == "bbr"][:5]
    for c in a:
        p, sc = c.params, c.scenario
        assert 1 <= len(sc.flows) <= 5 and 1.0 <= p["bandwidth_mbps"] <= 200.0
        assert all(10.0 <= r <= 400.0 for r in p["rtt_ms"]) and max(p["rtt_ms"]) <= 8 * min(p["rtt_ms"]) + 0.1
        assert 0.0 <= p["loss"] <= 0.02 and sc.link.loss == p["loss"]
        assert sc.link.buffer_bytes >= 3000 and (p["buffer_bdp"] <= 4.0 + 1e-3 or sc.link.buffer_bytes == 3000)
        assert sc.flows[0].start_s == 0.0 and all(0.0 <= f.start_s <= 5.0 for f in sc.flows)
        assert sc.duration_s == math.ceil(max(p["start_s"]) + max(20.0, 0.03 * max(p["rtt_ms"])))
        assert all(f.stop_s == sc.duration_s for f in sc.flows)
        want = f"fixed:{p['fixed_mbps']:g}" if c.controller == "fixed" else c.controller
        assert {f.controller for f in sc.flows} == {want}
    fixed = [c.params for c in a if c.controller == "fixed"]
    assert {p["fixed_regime"] for p in fixed} == {"below", "around", "above"}
    for p in fixed:
        lo, hi = F.FIXED_REGIMES[p["fixed_regime"]]
        assert lo - 0.01 <= p["fixed_mbps"] * p["flows"] / p["bandwidth_mbps"] <= hi + 0.01 or p["fixed_mbps"] == 0.05
    assert any(len(c.scenario.flows) == 5 for c in a) and any(p["loss"] == 0 for p in (c.params for c in a))
    rtts = np.concatenate([c.params["rtt_ms"] for c in a])
    assert rtts.min() < 20 and rtts.max() > 250


def test_reno_friendly_crossover_by_hand():
    # at the crossover window W the Reno-friendly average sqrt(3/(2p)) equals W, so p = 1.5/W^2,
    # and CUBIC's average (C(3+b)/(4(1-b)))^(1/4) RTT^(3/4) / p^(3/4) is W as well
    for rtt in (0.01, 0.1, 0.4):
        w = F.cubic_reno_friendly_window_pkts(rtt)
        p = 1.5 / w ** 2
        assert (0.4 * 3.7 / 1.2) ** 0.25 * rtt ** 0.75 / p ** 0.75 == pytest.approx(w)
    assert F.cubic_reno_friendly_window_pkts(0.1) == pytest.approx(52.3, abs=0.1)


def test_ns3_draws_only_its_credible_region():
    with pytest.raises(ValueError, match="bbr is not compared with ns-3: ns-3.37's TcpBbr collapses"):
        F.draw_cases(["bbr"], 1, 0, "ns3")
    cases = F.draw_cases([c for c in CTRLS if c != "bbr"], 40, 0, "ns3")
    for c in cases:
        if c.controller == "cubic":
            assert c.params["loss"] == 0 and F.cubic_window_is_large(c.params)
    assert any(len(c.scenario.flows) > 1 for c in cases if c.controller == "cubic")
    # a small window (1% loss, 10 Mbit/s, 100 ms, 1 BDP) is not credible for ns-3's CUBIC
    small = _case(flows=((100.0, 0.0),), loss=0.01, bw=10.0, buffer_bytes=125_000).params
    assert not F.ns3_credible("cubic", small) and F.ns3_credible("reno", small)
    assert not F.ns3_credible("bbr", _case(flows=((40.0, 0.0),)).params)


def test_bad_arguments_are_one_line_errors(capsys):
    def cli(*args):
        return F.run_cli(["fidelity", *args])

    assert cli("--reference=foo", "--out=/tmp/x") == 2
    assert cli("--reference=kernel", "--controllers=cubic,vegas", "--out=/tmp/x") == 2
    assert cli("--reference=kernel", "--cases=0", "--out=/tmp/x") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --reference: ['foo'] not allowed; choose from kernel, ns3",
                   f"error: --controllers: ['vegas'] not allowed; choose from {', '.join(CTRLS)}",
                   "error: --cases: must be >= 1, got 0"]
    assert cli("--reference=kernel") == 2  # --out is required
    assert cli("--reference=kernel", "--cases=x", "--out=/tmp/x") == 2
    assert cli("--reference=kernel", "--out=/tmp/x", "stray") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("error: ") for e in err)
    assert "--out" in err[0] and "--cases=x" in err[1] and "'stray'" in err[2]
    assert cli("--reference=kernel", "--repeats=0", "--out=/tmp/x") == 2
    assert capsys.readouterr().err.strip() == "error: --repeats: must be >= 1, got 0"
    assert cli("--reference=ns3", "--controllers=bbr", "--out=/tmp/x") == 2
    assert "bbr is not compared with ns-3" in capsys.readouterr().err
    assert cli("--reference=ns3", "--granular=drops,burst", "--out=/tmp/x") == 2
    assert capsys.readouterr().err.strip() == "error: --granular: unknown effect(s) burst; allowed drops,loss,clocked"
    assert cli("--reference=ns3", "--granular=clocked,drops", "--out=/tmp/x") == 2
    assert capsys.readouterr().err.strip() == ("error: --granular: drops and clocked both split the same overflow "
                                               "between the flows; name one of them")


# ----------------------------------------------------------------------------- simulator side

def test_one_batch_per_controller_equals_separate_runs():
    # a 60-ms and a 20-ms case share one batch (padded to the longer tick count): their metrics
    # are those of each run alone
    a = _case(flows=((60.0, 0.0), (90.0, 1.0)), bw=8.0, duration=21.0)
    b = _case(flows=((20.0, 0.0),), bw=3.0, loss=0.01, buffer_bytes=10_000, duration=20.0)
    b = F.Case("u", b.controller, b.scenario, b.params)
    together = F.simulate([a, b])
    alone = {**F.simulate([a]), **F.simulate([b])}
    for name in ("t", "u"):
        for k in ("throughput_mbps", "p95_owd_ms", "loss", "jain"):
            assert together[name][k] == pytest.approx(alone[name][k], rel=1e-3), (name, k)
        assert together[name]["duration_s"] == alone[name]["duration_s"]
    # and the trace is cut at the case's own end: 20 s of a 3 Mbit/s link at most
    assert together["u"]["throughput_mbps"] <= 3.0 + 1e-6


def test_hystart_ends_cubics_slow_start_before_its_overshoot_and_leaves_reno_alone():
    """One flow on 20 Mbit/s, 40 ms, a 4-BDP buffer (400 kB): CUBIC's slow start without HyStart
    doubles past the BDP and the buffer and loses 1.7 % of its packets; with HyStart's delay
    detector (the references' default) it leaves slow start when the queue adds 5 ms (min RTT
    / 8) and loses under a tenth of that.  NewReno has no HyStart: the same run bit for bit."""
    c = _case(flows=((40.0, 0.0),), bw=20.0, buffer_bytes=400_000, duration=15.0)
    r = _case(flows=((40.0, 0.0),), controller="reno", bw=20.0, buffer_bytes=400_000, duration=15.0)
    r = F.Case("r", r.controller, r.scenario, r.params)
    off, on = F.simulate([c, r]), F.simulate([c, r], hystart=True)
    assert off["t"]["loss"] > 0.01 and on["t"]["loss"] < 0.1 * off["t"]["loss"], (off["t"]["loss"], on["t"]["loss"])
    assert on["t"]["throughput_mbps"] == pytest.approx(off["t"]["throughput_mbps"], rel=0.01)
    assert on["r"] == off["r"]


def test_sweep_writes_the_report(monkeypatch, tmp_path):
    # the sweep's plumbing with both sides faked: every flow 1 Mbit/s, 50 ms, no loss; the
    # reference's second run of each case 2 Mbit/s, the third 1.02 (median 1.02: within 5%)
    def rec(case, mbps):
        return {"per_flow": [{"flow": i, "throughput_mbps": mbps, "p95_owd_ms": 50.0, "loss": 0.0}
                             for i in range(case.num_flows)], "jain": 1.0}

    monkeypatch.setattr(F.runs, "simulate", lambda cases, **kw: {c.name: rec(c, 1.0) for c in cases})
    runs = []

    def fake_ref(case, reference, out_dir, prefix=None, seed=0):
        runs.append((case.name, out_dir.name, seed))
        r = rec(case, {"r0": 1.0, "r1": 2.0, "r2": 1.02}[out_dir.name])
        r.update(attempts=1, valid=True)
        return r

    monkeypatch.setattr(F.runs, "run_reference", fake_ref)
    report = F.run_sweep("kernel", ["fixed"], 2, 3, tmp_path, repeats=3, log=open(os.devnull, "w"))
    assert [r[1:] for r in runs] == [("r0", 3), ("r1", 4), ("r2", 5)] * 2
    assert [v["verdict"] for v in report["verdicts"]] == ["pass", "pass"]
    assert [(v["attempts"], v["reruns"]) for v in report["verdicts"]] == [(3, 0), (3, 0)]
    assert report["pass_rates"]["fixed"]["cases"]["rate"] == 1.0
    saved = json.load(open(tmp_path / "fidelity.json"))
    assert saved["repeats"] == 3 and len(saved["records"][0]["reference"]) == 3
    c = saved["verdicts"][0]["checks"]["throughput_mbps"]
    assert c["ref"] == pytest.approx(1.02 * c["sim"]) and c["ref_runs"] == pytest.approx([c["sim"], 2 * c["sim"], c["ref"]])


def test_the_record_separates_regressions_from_improvements(tmp_path):
    ok = _rec([(10.0, 50.0, 0.0)])
    thr_fails = F.compare_case(_case(), _rec([(11.0, 50.0, 0.0)]), ok, "kernel")      # +10% throughput
    both_fail = F.compare_case(_case(), _rec([(11.0, 80.0, 0.0)]), ok, "kernel")      # and +30 ms delay
    assert set(F.misses(thr_fails)) == {"throughput_mbps"}
    recorded = F.misses(thr_fails)
    assert F.against_record(thr_fails, recorded) == ([], [])
    new, healed = F.against_record(both_fail, recorded)
    assert len(new) == 1 and new[0].startswith("p95_owd_ms") and healed == []
    passes = F.compare_case(_case(), ok, ok, "kernel")
    new, healed = F.against_record(passes, recorded)
    assert new == [] and len(healed) == 1 and healed[0].startswith("throughput_mbps")
    # the record file keeps other references' entries and only lists cases with misses
    report = {"seed": 0, "cases_per_controller": 2, "controllers": ["cubic"],
              "verdicts": [dict(thr_fails, case="a"), dict(passes, case="b")]}
    path = tmp_path / "misses.json"
    path.write_text(json.dumps({"ns3": {"kept": True}}))
    F.write_record(path, "kernel", report)
    data = json.loads(path.read_text())
    assert data["ns3"] == {"kept": True}
    assert list(data["kernel"]["misses"]) == ["a"] and set(data["kernel"]["misses"]["a"]) == {"throughput_mbps"}


def test_short_of_target_by_hand():
    ok = _rec([(10.0, 50.0, 0.0)])
    vs = [F.compare_case(_case(), ok, ok, "kernel"), F.compare_case(_case(), _rec([(11.0, 50.0, 0.0)]), ok, "kernel")]
    too_few, short = F.short_of_target(F.pass_rates(vs))
    assert too_few == [] and len(short) == 1 and short[0].startswith("cubic: 1/2 cases") and "throughput_mbps 50%" in short[0]
    invalid = [F.compare_case(_case(), ok, ok, "kernel", valid=False)] * 2 + vs[:1]
    too_few, short = F.short_of_target(F.pass_rates(invalid))
    assert too_few == ["cubic: only 1 of 3 runs valid (the emulator could not keep time)"] and short == []
    assert F.short_of_target(F.pass_rates(vs[:1])) == ([], [])


def test_a_sweep_reuses_stored_reference_runs_at_another_resolution(monkeypatch, tmp_path):
    """``--references``: a second sweep of the same cases takes the reference runs from the first
    one's fidelity.json and runs only the simulator (here at 4 ticks per RTT, then with two
    feedback slots, then with retransmission timeouts), and it refuses a file of another
    reference, with a case missing or drawn with another scenario, and a setting out of range."""
    def fake_ns3(case, out_dir, seed):  # the reference: the simulator's own record, so every metric agrees
        return dict(F.simulate([case])[case.name])

    monkeypatch.setattr(F.runs, "_run_ns3", fake_ns3)
    first = F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "a", log=io.StringIO())
    assert first["ticks_per_rtt"] == links.DEFAULT_TICKS_PER_RTT and first["references_from"] is None
    assert first["verdicts"][0]["verdict"] == "pass"
    monkeypatch.setattr(F.runs, "_run_ns3", lambda *a: pytest.fail("the reference ran again"))
    stored = tmp_path / "a" / "fidelity.json"
    second = F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "b", log=io.StringIO(), ticks_per_rtt=4,
                         references=str(stored))
    assert second["ticks_per_rtt"] == 4 and second["references_from"] == str(stored)
    assert first["granular"] == second["granular"] == [] and first["hystart"] is second["hystart"] is False
    assert second["records"][0]["reference"] == first["records"][0]["reference"]
    assert second["records"][0]["sim"] != first["records"][0]["sim"]  # another resolution, another run
    with pytest.raises(ValueError, match=r"--references=.*a sweep against 'ns3', not 'kernel'"):
        F.run_sweep("kernel", ["fixed"], 1, 0, tmp_path / "c", references=str(stored))
    with pytest.raises(ValueError, match=r"--references=.*: no case fid-ns3-fixed-s0-1"):
        F.run_sweep("ns3", ["fixed"], 2, 0, tmp_path / "c", references=str(stored))
    doc = json.loads(stored.read_text())
    doc["records"][0]["scenario"]["duration_s"] += 1
    stored.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"case fid-ns3-fixed-s0-0 was drawn with another scenario"):
        F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "c", references=str(stored))
    with pytest.raises(ValueError, match=r"--ticks_per_rtt: must be >= 1, got 0"):
        F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "c", ticks_per_rtt=0)
    third = F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "d", log=io.StringIO(), feedback_slots=2,
                        references=str(tmp_path / "b" / "fidelity.json"))
    assert (first["feedback_slots"], third["feedback_slots"]) == (core.FEEDBACK_SLOTS, 2)
    fourth = F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "e", log=io.StringIO(), rto_min=1.0,
                         references=str(tmp_path / "b" / "fidelity.json"))
    assert (first["rto_min"], fourth["rto_min"]) == (0.0, 1.0)
    with pytest.raises(ValueError, match=r"--rto_min=-1: must be in \[0, 10\] s"):
        F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "c", rto_min=-1.0)
    for bad in (0, 17):
        with pytest.raises(ValueError, match=rf"--feedback_slots={bad}: must be in \[1, 16\]"):
            F.run_sweep("ns3", ["fixed"], 1, 0, tmp_path / "c", feedback_slots=bad)


def test_error_summary_by_hand():
    """Two cubic cases: throughput 105 vs 100 (5 %) and 90 vs 100 (10 %), median 7.5 %; loss
    1 % vs 3 % and 2 % vs 2 % (2 and 0 pp, median 1 pp); Jain only in the first (0.1); delay
    within tolerance in both.  One case passes every metric, the other fails throughput."""
    def chk(sim, ref, ok):
        return {"sim": sim, "ref": ref, "ok": ok}

    verdicts = [
        {"controller": "cubic", "checks": {"throughput_mbps": chk(105.0, 100.0, True), "p95_owd_ms": chk(50.0, 52.0, True),
                                           "loss": chk(0.01, 0.03, False), "jain": chk(0.8, 0.9, False)}},
        {"controller": "cubic", "checks": {"throughput_mbps": chk(90.0, 100.0, False), "p95_owd_ms": chk(50.0, 50.0, True),
                                           "loss": chk(0.02, 0.02, True), "jain": {"sim": None, "ref": None, "ok": None}}},
    ]
    report = {"pass_rates": {"cubic": {"cases": {"pass": 0, "valid": 2}}}, "verdicts": verdicts}
    row = F.tables.error_summary(report)["cubic"]
    assert row["pass"] == "0/2"
    assert (row["pass_throughput_mbps"], row["pass_p95_owd_ms"], row["pass_loss"], row["pass_jain"]) == \
        ("1/2", "2/2", "1/2", "0/1")
    assert row["throughput_mbps"] == pytest.approx(7.5) and row["p95_owd_ms"] == pytest.approx(1.0)
    assert row["loss"] == pytest.approx(1.0) and row["jain"] == pytest.approx(0.1)
