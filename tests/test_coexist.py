"""Coexistence links and measurements: neighbours that keep their controller, Ware et al.'s harm
and the share by hand, and the ``coexist`` bars."""

import math

import pytest

from jaxcc import scenarios
from jaxcc.emulation.spec import assign_controllers
from jaxcc.evaluation import bars, coexist
from jaxcc.evaluation import runs as evaluation_runs
from jaxcc.scenarios import parse_scenario


def _spec(keep=(False, True), controllers=("cubic", "cubic")):
    return {"name": "two", "duration_s": 10.0, "link": {"bandwidth_mbps": 20, "buffer_bytes": 100_000},
            "flows": [{"rtt_ms": 40.0, "controller": c, **({"keep_controller": k} if k else {})}
                      for c, k in zip(controllers, keep)]}


def test_kept_flows_stay_under_controller_and_round_trip():
    sc = parse_scenario(_spec())
    assert [f.keep_controller for f in sc.flows] == [False, True]
    assert [f.controller for f in sc.with_controller("bbr").flows] == ["bbr", "cubic"]
    assert parse_scenario(sc.to_dict()) == sc
    assert "keep_controller" not in sc.to_dict()["flows"][0]


def test_keep_controller_errors_name_the_field():
    with pytest.raises(ValueError, match=r"^two\.flows\[1\]\.keep_controller: expected true or false, got 'yes'$"):
        d = _spec()
        d["flows"][1]["keep_controller"] = "yes"
        parse_scenario(d, source="two")
    with pytest.raises(ValueError, match=r"^two: every flow keeps its controller \(keep_controller\); "
                                         r"--controller=bbr would run none$"):
        parse_scenario(_spec(keep=(True, True))).with_controller("bbr")


def test_emulation_runs_a_kept_neighbour_as_the_kernels():
    sc = parse_scenario(_spec(controllers=("cubic", "cubic")))
    assert assign_controllers(sc, "bbr") == ["bbr", "kernel:cubic"]
    assert assign_controllers(sc, None) == ["cubic", "kernel:cubic"]
    bbr = parse_scenario(_spec(controllers=("bbr", "bbr")))
    assert assign_controllers(bbr, "fixed:5") == ["fixed:5", "kernel:bbr"]


def test_coexist_links():
    names = scenarios.SUITES["coexist"]
    assert len(names) == 12
    c4 = scenarios.get_scenario("coexist/cubic4")
    assert [(f.controller, f.keep_controller, f.rtt_ms) for f in c4.flows] == \
        [("cubic", False, 40.0)] + [("cubic", True, 40.0)] * 4
    assert c4.link.buffer_bytes == pytest.approx(20 * 125_000 * 0.04)  # 1 BDP
    mixed = scenarios.get_scenario("coexist/bbr1-rtt80-20")
    assert [(f.controller, f.rtt_ms) for f in mixed.flows] == [("bbr", 80.0), ("bbr", 20.0)]


def _rec(scenario, controller, flows, capacity=20.0):
    return {"scenario": scenario, "controller": controller, "capacity_mbps": capacity,
            "per_flow": [{"throughput_mbps": t, "p95_owd_ms": d} for t, d in flows]}


def test_share_and_harm_by_hand():
    """Reference (CUBIC + CUBIC): neighbour 10 Mbit/s at 60 ms.  Beside X: the neighbour gets 8 at
    75 ms: throughput harm (10 - 8) / 10 = 0.2, delay harm (75 - 60) / 75 = 0.2; X's 12 Mbit/s is
    12 / (20 / 2) = 1.2 of its share.  Beside Y: 12.5 at 50 ms: harm -0.25 and -0.2 (it helps)."""
    ref = _rec("coexist/cubic1", "cubic", [(10.0, 60.0), (10.0, 60.0)])
    x = _rec("coexist/cubic1", "X", [(12.0, 75.0), (8.0, 75.0)])
    y = _rec("coexist/cubic1", "Y", [(7.5, 50.0), (12.5, 50.0)])
    assert coexist.share(x) == pytest.approx(1.2)
    assert coexist.harm(x, ref) == pytest.approx({"throughput": 0.2, "delay": 0.2})
    assert coexist.harm(y, ref) == pytest.approx({"throughput": -0.25, "delay": -0.2})
    # Two neighbours: their total throughput and mean p95 delay.
    ref2 = _rec("coexist/cubic2", "cubic", [(6.0, 60.0), (7.0, 60.0), (7.0, 60.0)])
    x2 = _rec("coexist/cubic2", "X", [(2.0, 70.0), (9.0, 70.0), (9.0, 80.0)])
    assert coexist.harm(x2, ref2) == pytest.approx({"throughput": (14 - 18) / 14, "delay": (75 - 60) / 75})
    with pytest.raises(ValueError, match="against a reference on coexist/cubic2"):
        coexist.harm(x, ref2)


def test_emulated_records_name_flow_zeros_controller():
    """Over netns a record's controller joins its flows' (``bbr+kernel:cubic``) and the reference
    is ``kernel:cubic``; the rows come out as in the simulator."""
    def emu(ctrl, flows):
        r = _rec("coexist/cubic1", "+".join([ctrl, "kernel:cubic"]) if ctrl != "kernel:cubic" else ctrl, flows)
        for f, c in zip(r["per_flow"], (ctrl, "kernel:cubic")):
            f["controller"] = c
        return r

    recs = [emu("kernel:cubic", [(10.0, 60.0), (10.0, 60.0)]), emu("bbr", [(17.0, 70.0), (3.0, 70.0)]),
            emu("policy:p.safetensors", [(1.0, 60.0), (19.0, 60.0)])]
    (row,) = coexist.rows(recs, "policy:p.safetensors")
    assert row["share"] == pytest.approx(0.1) and row["harm"] == pytest.approx({"throughput": -0.9, "delay": 0.0})
    assert row["bbr_harm"] == pytest.approx({"throughput": 0.7, "delay": 10 / 70})


def test_a_checkpoints_records_go_by_its_label():
    """``--checkpoint=F`` labels the simulated records by the stage (``Pareto-Fair``) while flow 0
    names the file it ran: the rows go by the label."""
    recs = [_rec("coexist/cubic1", "cubic", [(10.0, 60.0), (10.0, 60.0)]),
            _rec("coexist/cubic1", "Pareto-Fair", [(5.0, 60.0), (15.0, 60.0)])]
    for r in recs:
        r["per_flow"][0]["controller"] = "policy:/runs/a/Pareto-Fair.safetensors" if r["controller"] != "cubic" else "cubic"
        r["per_flow"][1]["controller"] = "cubic"
    (row,) = coexist.rows(recs, "Pareto-Fair")
    assert row["share"] == pytest.approx(0.5) and row["harm"]["throughput"] == pytest.approx(-0.5)
    assert coexist.rows(recs, "policy:/runs/a/Pareto-Fair.safetensors") == []


def _suite(x_flows, bbr_flows):
    """Every coexist/cubic* link: the all-CUBIC reference at 10/10 Mbit/s and 60 ms per flow pair,
    ``X`` and ``bbr`` with the given (flow 0, neighbours) numbers."""
    out = []
    for sc in bars.COEXIST_CUBIC_LINKS:
        n = len(scenarios.get_scenario(sc).flows)
        fair = 20.0 / n
        out.append(_rec(sc, "cubic", [(fair, 60.0)] * n))
        for lab, ((t0, d), (tn, dn)) in (("X", x_flows), ("bbr", bbr_flows)):
            out.append(_rec(sc, lab, [(t0 * fair, d)] + [(tn * fair, dn)] * (n - 1)))
    return out


def test_coexist_bars_at_their_thresholds():
    # X at 0.5x its share, the neighbours at 1.5x their share (harm -0.5), 60 ms (no delay harm);
    # BBR at 1.7x, neighbours at 0.3x, 90 ms: harm 0.7 / 0.33.
    v = bars.check("coexist", _suite(((0.5, 60.0), (1.5, 60.0)), ((1.7, 90.0), (0.3, 90.0))))
    assert list(v) == ["X"]
    assert [x.met for x in v["X"]] == [True, True]
    assert v["X"][0].value.startswith("cubic1 0.50, cubic2 0.50, ")
    assert v["X"][1].value.startswith("cubic1 -0.50/+0.00 (BBR +0.70/+0.33), ")
    starved = bars.check("coexist", _suite(((0.49, 60.0), (1.5, 60.0)), ((1.7, 90.0), (0.3, 90.0))))["X"]
    assert [x.met for x in starved] == [False, True]
    # X takes 1.9x and delays the neighbours more than BBR does (95 > 90 ms): harm missed.
    pushy = bars.check("coexist", _suite(((1.9, 95.0), (0.5, 95.0)), ((1.7, 90.0), (0.3, 90.0))))["X"]
    assert [x.met for x in pushy] == [True, False]


def test_coexist_bars_need_the_reference_and_bbr():
    recs = [r for r in _suite(((1.0, 60.0), (1.0, 60.0)), ((1.7, 90.0), (0.3, 90.0))) if r["controller"] != "bbr"]
    v = bars.check("coexist", recs)["X"]
    assert not any(x.met for x in v) and all("--controller=cubic,bbr" in x.value for x in v)


def test_a_kept_neighbour_runs_beside_the_evaluated_controller():
    """coexist/cubic1 with --controller=fixed:5: flow 0 sends 5 Mbit/s (its sending rate is exact),
    flow 1 is still CUBIC and carries most of the rest of the 20 Mbit/s link."""
    sc = scenarios.get_scenario("coexist/cubic1")
    (rec,) = evaluation_runs.run_evaluation([sc], evaluation_runs.controller_entries("fixed:5"), progress=False,
                                            keep_series=False)["results"]
    f0, f1 = rec["per_flow"]
    assert f0["throughput_mbps"] <= 5.0 + 1e-6 and f0["throughput_mbps"] >= 5.0 * (1 - f0["loss"]) - 0.1
    assert f1["throughput_mbps"] >= 12.0 and rec["utilization"] >= 0.9
    assert math.isclose(coexist.share(rec), f0["throughput_mbps"] / 10.0)
