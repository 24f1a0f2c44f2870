"""The policies shipped under checkpoints/ still score what their READMEs say, in the simulator.

A regression guard for the files themselves: replacing a shipped policy with a worse one (or
changing the environment code it runs on, e.g. Eagle's BDP window) fails here.  Each check is
a bar (jaxcc.evaluation.bars) that the README reports as met, against the in-simulator baseline it names.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from jaxcc.evaluation import bars
from jaxcc.evaluation import runs as ev
from jaxcc import scenarios

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.full  # the shipped files' bars: minutes of simulation


MEASURED_TRACE_S = 30.0


def as_measured(name):
    """A named scenario as the READMEs' figures were measured: trace links binned at 10 ms (the
    simulator's trace bin before it became jaxcc.sim.trace.TRACE_BIN_MS, 100 ms) and run for 30 s
    (the Verizon LTE scenarios run catalogue.VERIZON_DURATION_S now, to include the outage)."""
    sc = scenarios.get_scenario(name)
    if sc.link.trace is None:
        return sc
    sc = dataclasses.replace(sc, link=dataclasses.replace(sc.link, trace_bin_ms=10.0))
    if "Verizon-LTE-short" not in sc.link.trace:
        return sc
    flows = tuple(dataclasses.replace(f, stop_s=min(f.stop_s, MEASURED_TRACE_S)) for f in sc.flows)
    return dataclasses.replace(sc, duration_s=MEASURED_TRACE_S, flows=flows)


def _run(scenario_names, controllers):
    scs = [as_measured(n) for n in scenario_names]
    rep = ev.run_evaluation(scs, ev.controller_entries(controllers), progress=False, keep_series=False)
    return {(r["scenario"], r["controller"].split("/")[-1]): r for r in rep["results"]}


# The model correction fixed the feedback timing (ACKs clocked by the link) and in-sim BBR's
# delivery-rate samples: BBR's p95 one-way delay on the 10 Mbit/s / 100 ms links is 82.4 ms, with
# 50 ms of propagation, so "2x lower" (41.2 ms) is below the propagation delay: no sender can meet
# it on eagle/10mbps-*.  The shipped Eagle (seed 0 of the robust default command) gets
# 8.92 Mbit/s (92 %) at 122.7 ms there, and on LTE 3.58 vs 5.38 Mbit/s (66 %) at 68.2 vs 203.7 ms
# (checkpoints/eagle/README.md, "Robust training").  Strict: a policy meeting either bar must
# drop its mark.
EAGLE_10MBPS_UNREACHABLE = pytest.mark.xfail(
    strict=True, reason="eagle/10mbps-bdp2: BBR's p95 one-way 82.4 ms / 2 = 41.2 ms < the 50 ms propagation; "
                        "the shipped Eagle: 122.7 ms")
EAGLE_LTE_THROUGHPUT_MISSED = pytest.mark.xfail(
    strict=True, reason="eagle/lte (Verizon LTE trace, 20 ms RTT, 375 KB): 3.58 vs BBR 5.38 Mbit/s (66 %, bar 90 %)")


@pytest.mark.parametrize("scenario", [pytest.param("eagle/10mbps-bdp2", marks=EAGLE_10MBPS_UNREACHABLE),
                                      pytest.param("eagle/lte", marks=EAGLE_LTE_THROUGHPUT_MISSED)])
def test_eagle_beats_bbr_delay_at_its_throughput(scenario):
    """Eagle §V (Fig. 7's 10 Mbit/s link with a 2-BDP buffer, Fig. 5's Verizon LTE
    trace): ≥ 90 % of in-sim BBR's throughput at ≥ 2× lower p95 delay."""
    pol = os.path.join(REPO, "checkpoints/eagle/eagle.safetensors")
    by = _run([scenario], ["bbr", f"raw-policy:{pol}"])
    bbr, eagle = by[(scenario, "bbr")], by[(scenario, "eagle.safetensors")]
    assert eagle["throughput_mbps"] >= 0.9 * bbr["throughput_mbps"], (eagle, bbr)
    assert eagle["p95_owd_ms"] * 2.0 <= bbr["p95_owd_ms"], (eagle, bbr)


# The shipped Eagle's numbers (checkpoints/eagle/README.md, seed 0): a changed policy or
# environment moves them by more than these tolerances (the four seeds differ by 0.2-0.5 Mbit/s
# and by 2-65 ms).
EAGLE_PINS = {"eagle/10mbps-bdp2": (8.92, 122.7), "eagle/lte": (3.58, 68.2)}  # Mbit/s, p95 one-way ms


def test_eagle_scores_what_its_readme_says():
    """The file alone (raw-policy: the README measured it before the sender's safety net)."""
    pol = os.path.join(REPO, "checkpoints/eagle/eagle.safetensors")
    by = _run(list(EAGLE_PINS), [f"raw-policy:{pol}"])
    for name, (thr, p95) in EAGLE_PINS.items():
        r = by[(name, "eagle.safetensors")]
        assert abs(r["throughput_mbps"] - thr) <= 0.05 and abs(r["p95_owd_ms"] - p95) <= 1.0, (name, r)


# The robust bars for Eagle (``jaxcc.evaluation.bars.eagle`` [4], [5]): the start at 1 % is met
# (3.0 s); after the 5 -> 50 Mbit/s jump the policy holds ≈ 5 Mbit/s (no probing from a flat
# state, checkpoints/eagle/README.md), on all four seeds.
EAGLE_STEP_MISSED = pytest.mark.xfail(
    strict=True, reason="robust/step5-50 only: the shipped Eagle never reaches 80 % of 50 Mbit/s after the jump "
                        "(13 % utilization over the 30 s)")


@pytest.mark.parametrize("bar", [4, pytest.param(5, marks=EAGLE_STEP_MISSED)])
def test_eagle_robust_bars(bar):
    """``--bars=eagle`` [4] robust/start1pct ≥ 80 % within 10 s, [5] robust/step5-50 ≥ 80 % within
    5 s of the jump."""
    pol = os.path.join(REPO, "checkpoints/eagle/eagle.safetensors")
    scs = [scenarios.get_scenario(n) for n in ("robust/start1pct", "robust/step5-50")]
    rep = ev.run_evaluation(scs, ev.controller_entries([f"policy:{pol}"]), progress=False, keep_series=False)
    verdicts = bars.eagle(rep["results"], ev.controller_entries([f"policy:{pol}"])[0].label)
    assert len(verdicts) == 6 and verdicts[bar].met, verdicts


# checkpoints/pareto/README.md: the shipped Pareto-Fair v2 (seed 0 of the default command) on every
# Pareto bar (jaxcc.evaluation.bars "pareto" and "pareto-links"), one evaluation for all of them.  The bars it
# misses are strict expected failures naming the link and the number; when a retrained file meets
# one, its mark must go.
PARETO_SUITES = ("pareto", "pareto-fair", "robust", "pareto-links")
PARETO_MISSED = {
    "Jain >= 0.95 for 2-5 flows": "shared2-5 Jain 0.819 / 0.858 / 0.842 / 0.822: late flows converge in 15-25 s",
    "rtt20-160 Jain >= in-sim CUBIC's": "20/160 ms Jain 0.864 vs CUBIC 0.871 (each flow on its own clock)",
    "5 -> 50 Mbit/s: >= 80% util within 5 s": "robust/step5-50: 80 % after 5.5 s",
    "Jain >= 0.9 within 5 s of every arrival and departure": "2 of 8 events: Jain >= 0.9 only 9-24.5 s after the "
                                                             "last arrival (shared2-5, shared8, depart4)",
}


@pytest.fixture(scope="module")
def pareto_verdicts():
    pol = os.path.join(REPO, "checkpoints/pareto/pareto_fair.safetensors")
    names = []
    for suite in PARETO_SUITES:
        names += [n for n in scenarios.SUITES[suite] if n not in names]
    entries = ev.controller_entries(["bbr", "cubic", f"policy:{pol}"])
    scs = [scenarios.get_scenario(n) for n in names]
    rep = ev.run_evaluation(scs, entries, progress=False, keep_series=True)
    v = bars.check("pareto,pareto-links", rep["results"])[entries[-1].label]
    return {x.bar: x for x in v}


def _pareto_bar_names():
    recs = [{"scenario": "none", "controller": "P"}]
    return [v.bar for v in bars.check("pareto,pareto-links", recs)["P"]]


@pytest.mark.parametrize("bar", [pytest.param(b, marks=pytest.mark.xfail(strict=True, reason=PARETO_MISSED[b]))
                                 if b in PARETO_MISSED else b for b in _pareto_bar_names()])
def test_pareto_fair_bars(pareto_verdicts, bar):
    """Each Pareto bar (§V and robust training) as the README reports it for the shipped file
    (17 bars)."""
    assert len(pareto_verdicts) == 17
    assert pareto_verdicts[bar].met, pareto_verdicts[bar]


# checkpoints/aurora/README.md, "Robust training": the shipped policy (seed 0 of the robust default
# command) loses 38.1 % of its packets on aurora/fig2: it settles at ≈ 1.6 x the capacity, where
# its action on a flat history with that sending ratio crosses zero (a loss-free climb at the
# action clip looks the same to the sending-ratio feature).
AURORA_FIG2_LOSS = 0.381
AURORA_FIG2_LOSS_TOL = 0.005  # ±0.5 points: the README's rounding (±0.05) plus float32 drift
#   across backends; a changed policy or environment moves it by more (the README's four seeds:
#   38.1 %, 27.7 %, 33.9 %, 28.5 %).


def test_aurora_keeps_the_lossy_link_full_where_cubic_does_not():
    """Aurora Fig. 2: 30 Mbit/s with 1 % random loss and a 10-packet queue: ≥ 90 %
    utilization, CUBIC far lower — and the price the README documents: 38.1 % loss."""
    pol = os.path.join(REPO, "checkpoints/aurora/aurora.safetensors")
    by = _run(["aurora/fig2"], ["cubic", f"policy:{pol}"])
    aurora = by[("aurora/fig2", "aurora.safetensors")]
    assert aurora["utilization"] >= 0.90, aurora
    assert abs(aurora["loss"] - AURORA_FIG2_LOSS) <= AURORA_FIG2_LOSS_TOL, aurora
    assert by[("aurora/fig2", "cubic")]["utilization"] <= 0.5


# The robust Aurora bars (``jaxcc.evaluation.bars.aurora``): the start at 1 % and the 5 -> 50 Mbit/s step
# are met (2.5 s and 2.0 s); the loss on Fig. 2's 10-packet queue (0.07 BDP) is not (38.1 % vs
# CUBIC's 1.00 %, on all four seeds; checkpoints/aurora/README.md, "Why Fig. 2 is still missed").
AURORA_FIG2_BAR_MISSED = pytest.mark.xfail(
    strict=True, reason="aurora/fig2 only (10-packet queue = 0.07 BDP, 1 % random loss): 38.1 % loss vs "
                        "CUBIC's 1.00 %; a loss-free climb and overdrive give the same sending ratio")


@pytest.mark.parametrize("bar", [pytest.param(0, marks=AURORA_FIG2_BAR_MISSED), 1, 2])
def test_aurora_bars(bar):
    """``--bars=aurora``: [0] aurora/fig2 loss below in-sim CUBIC's, [1] robust/start1pct ≥ 80 %
    within 10 s, [2] robust/step5-50 ≥ 80 % within 5 s of the jump."""
    pol = os.path.join(REPO, "checkpoints/aurora/aurora.safetensors")
    scs = [scenarios.get_scenario(n) for n in ("aurora/fig2", "robust/start1pct", "robust/step5-50")]
    rep = ev.run_evaluation(scs, ev.controller_entries(["cubic", f"policy:{pol}"]), progress=False, keep_series=False)
    verdicts = bars.aurora(rep["results"], ev.controller_entries([f"policy:{pol}"])[0].label)
    assert len(verdicts) == 3 and verdicts[bar].met, verdicts


# MOCC's sweep (checkpoints/mocc/README.md): the shipped file's own records (eval_sim.json,
# from `python -m jaxcc.preference_sweep --checkpoint=checkpoints/mocc/mocc.safetensors
# --suite=mocc`), re-run on two links and three preferences: a changed file, action table or
# preference plumbing moves them.  Its bar (b) (throughput-heavy >= 90 % on mocc/12mbps) is met
# and pinned; the bars it misses are in the README.
MOCC_PREFS = ((1.0, 0.0, 0.0), (0.5, 0.0, 0.5), (0.2, 0.2, 0.6))


def test_mocc_scores_what_its_readme_says():
    import json

    from jaxcc.evaluation import preference_sweep as ps

    pol = os.path.join(REPO, "checkpoints", "mocc", "mocc.safetensors")
    with open(os.path.join(REPO, "checkpoints", "mocc", "eval_sim.json")) as f:
        shipped = {(r["scenario"], tuple(r["preference"])): r for r in json.load(f)["results"] if r["preference"]}
    scs = [as_measured(n) for n in ("mocc/12mbps", "mocc/lte-up")]
    # The file alone, as eval_sim.json was measured (before the sender's safety net).
    entries = [ev.ControllerEntry(e.label, "raw-" + e.name) for e in ps.policy_entries(pol)]
    out = ps.run_sweep(scs, entries, MOCC_PREFS, baselines=(), progress=False)
    assert len(out["results"]) == 6
    for r in out["results"]:
        want = shipped[(r["scenario"], tuple(r["preference"]))]
        where = f"{r['scenario']} at {r['preference']}"
        assert r["throughput_mbps"] == pytest.approx(want["throughput_mbps"], rel=0.01), where
        assert r["p95_qdelay_ms"] == pytest.approx(want["p95_qdelay_ms"], rel=0.05, abs=1.0), where
        assert r["loss"] == pytest.approx(want["loss"], abs=0.002), where
    by = {(r["scenario"], tuple(r["preference"])): r for r in out["results"]}
    assert by[("mocc/12mbps", (1.0, 0.0, 0.0))]["utilization"] >= 0.9  # bar (b)
    # The preference steers: the loss-heavy (0.2, 0.2, 0.6) sends far less than (1, 0, 0) here.
    assert by[("mocc/12mbps", (0.2, 0.2, 0.6))]["throughput_mbps"] < 0.6 * by[("mocc/12mbps", (1.0, 0.0, 0.0))]["throughput_mbps"]


def test_deepcc_scores_what_its_tcr_results_say():
    """The shipped DeepCC file (checkpoints/deepcc/deepcc.safetensors = the seed-0 file of
    checkpoints/deepcc/tcr/results.json, label deepcc_seed0) re-scores its Wi-Fi TCR: the same 500
    targets (seed 0), one tuned lane each (the default tuner, "p95"), the same met flags up to a
    few lanes (float reordering across versions), and the tuned lanes' throughput and delay where
    they were."""
    import json

    import numpy as np

    from jaxcc.evaluation import tcr

    with open(os.path.join(REPO, "checkpoints", "deepcc", "tcr", "results.json")) as f:
        shipped = json.load(f)
    want = next(r for r in shipped["tcr"] if r["scenario"] == "deepcc/wifi" and r["controller"] == "deepcc_seed0")
    pol = os.path.join(REPO, "checkpoints", "deepcc", "deepcc.safetensors")
    rep = tcr.run_tcr([scenarios.get_scenario("deepcc/wifi")], tcr.controller_entries(f"policy:{pol}"),
                      n_targets=len(want["met"]), seed=0, progress=False)
    (got,) = rep["tcr"]
    assert np.allclose(rep["links"][0]["targets"], next(lk for lk in shipped["links"]
                                                       if lk["scenario"] == "deepcc/wifi")["targets"])
    assert sum(a != b for a, b in zip(got["met"], want["met"])) <= 5
    thr = np.array([m["throughput_mbps"] for m in got["measured"]])
    thr0 = np.array([m["throughput_mbps"] for m in want["measured"]])
    np.testing.assert_allclose(np.median(thr), np.median(thr0), rtol=0.01)
    assert got["tcr"] >= 0.80  # checkpoints/deepcc/README.md: 92.6 % on deepcc/wifi with the p95 tuner (bar 80 %)
