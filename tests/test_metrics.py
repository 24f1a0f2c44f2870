"""Metrics on hand-computed values and on the Pareto paper's Table II (Ankh's number)."""

import dataclasses
import math

import numpy as np
import pytest

from jaxcc.evaluation import metrics
from jaxcc.evaluation.metrics import Trace
from jaxcc.units import MBPS


# ----------------------------------------------------------------------------- building blocks


def test_weighted_percentile_by_hand():
    v = np.array([1.0, 2.0, 3.0, 4.0])
    assert metrics.weighted_percentile(v, np.ones(4), 50) == 2.0
    assert metrics.weighted_percentile(v, np.ones(4), 95) == 4.0
    assert metrics.weighted_percentile(v, np.ones(4), 100) == 4.0
    assert metrics.weighted_percentile(v, np.ones(4), 0) == 1.0
    # Byte weighting: 97 % of the bytes at the smallest value.
    assert metrics.weighted_percentile(v, [97, 1, 1, 1], 95) == 1.0
    assert metrics.weighted_percentile(v, [1, 1, 1, 97], 95) == 4.0
    # Unsorted input and zero weights (dropped bytes have no delay).
    assert metrics.weighted_percentile([5.0, 1.0, 9.0], [1, 1, 0], 95) == 5.0
    assert math.isnan(metrics.weighted_percentile([1.0], [0.0], 95))
    with pytest.raises(ValueError, match="differ"):
        metrics.weighted_percentile([1.0, 2.0], [1.0], 50)


def test_jain_index_by_hand():
    assert metrics.jain_index([5, 5, 5]) == pytest.approx(1.0)
    assert metrics.jain_index([1, 0]) == pytest.approx(0.5)
    assert metrics.jain_index([3, 1]) == pytest.approx(16 / 20)
    assert metrics.jain_index([10, 0, 0, 0, 0]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        metrics.jain_index([])


def test_tcr_by_hand():
    targets = np.array([[5, 100, 0.05], [20, 100, 0.05], [5, 10, 0.05], [5, 100, 0.001]])
    assert metrics.tcr([10, 50, 0.01], targets) == pytest.approx(0.25)
    # Goal-conditioned: one result per target.
    per_target = np.array([[10, 50, 0.01], [25, 90, 0.0], [6, 5, 0.0], [6, 5, 0.0]])
    assert metrics.tcr(per_target, targets) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    t = metrics.sample_tcr_targets(rng, 500, 20.0, 300.0)
    assert t.shape == (500, 3) and t[:, 2].max() <= 0.10
    with pytest.raises(ValueError):
        metrics.tcr([1, 2, 3], np.zeros((3, 2)))


def test_power():
    assert metrics.power(50.0, 0.1) == pytest.approx(500.0)


# ----------------------------------------------------------------------------- Ankh (Table II)

# (throughput Mbps, p95 delay ms, loss %, Ankh) from Pareto Table II, with each block's C and d_max
# (the block's largest p95 delay: 116.00 ms for 50 Mbps, 404.97 ms for 10 & 20 Mbps, 117.39 ms
# for two flows).  Rows whose printed values are rounded to 3 decimals are checked to ±0.0015.
TABLE_II = {
    "fixed 50 Mbps": (50.0, 116.00, [
        ("Pareto-Bootstrap", 45.91, 101.06, 0.79, 0.320),
        ("Pareto-Advance", 43.37, 79.48, 0.64, 0.275),
        ("Pareto-Fair", 42.56, 106.78, 1.08, 0.360),
        ("Pareto-Online", 42.15, 97.79, 0.81, 0.336),
        ("Pareto-Online-More", 41.84, 93.93, 0.96, 0.327),
        ("BBR", 47.87, 116.00, 1.70, 0.353),
    ]),
    "dynamic 10 & 20 Mbps": (15.0, 404.97, [
        ("Pareto-Bootstrap", 13.04, 404.97, 7.97, 0.403),
        ("Pareto-Advance", 12.52, 336.05, 0.87, 0.335),
        ("Pareto-Fair", 13.24, 400.595, 3.03, 0.379),
        ("Pareto-Online", 13.20, 348.136, 2.95, 0.336),
        ("BBR", 14.06, 366.18, 0.90, 0.325),
    ]),
    "50 Mbps shared by 2": (50.0, 117.39, [
        ("Pareto-Bootstrap", 45.63, 98.76, 0.84, 0.312),
        ("Pareto-Advance", 42.7, 86.47, 0.60, 0.296),
        ("BBR", 49.07, 117.39, 6.95, 0.363),
    ]),
}


@pytest.mark.parametrize("block", sorted(TABLE_II))
def test_ankh_reproduces_table_ii(block):
    cap, d_max, rows = TABLE_II[block]
    for name, thr, d95, loss_pct, expected in rows:
        got = metrics.ankh(thr, cap, d95, d_max, loss_pct / 100)
        assert got == pytest.approx(expected, abs=0.0015), (block, name, got)


def test_ankh_brief_examples_and_edges():
    assert metrics.ankh(45.91, 50, 101.06, 116, 0.0079) == pytest.approx(0.320, abs=5e-4)
    assert metrics.ankh(47.87, 50, 116.00, 116, 0.0170) == pytest.approx(0.353, abs=5e-4)
    assert metrics.ankh(50, 50, 0.0, 116, 0.0) == 0.0  # perfect
    assert metrics.ankh(0, 50, 116, 116, 1.0) == 1.0  # worst
    assert metrics.ankh(55, 50, 10, 100, 0.0) == pytest.approx(0.1 / 3)  # R > C clipped at 0
    with pytest.raises(ValueError):
        metrics.ankh(1, 0, 1, 1, 0)


# ----------------------------------------------------------------------------- traces


def _trace_one_flow():
    # dt = 1 s, 4 ticks, capacity 10 B/s.  Tick 3 drops 5 of its 10 bytes.
    return Trace(
        time=np.array([1.0, 2.0, 3.0, 4.0]), dt=1.0,
        active=np.ones((4, 1), bool),
        sent=np.array([[10.0], [10.0], [10.0], [10.0]]),
        acked=np.array([[0.0], [10.0], [10.0], [5.0]]),
        lost=np.zeros((4, 1)),
        admitted=np.array([[10.0], [10.0], [5.0], [10.0]]),
        owd=np.array([[0.1], [0.1], [0.3], [0.2]]),
        qdelay=np.array([0.0, 0.0, 0.2, 0.1]),
        capacity=np.full(4, 10.0),
    )


def test_flow_and_link_metrics_by_hand():
    tr = _trace_one_flow()
    fm = metrics.flow_metrics(tr, 0)
    assert fm["throughput"] == pytest.approx(25 / 4)
    assert fm["loss"] == pytest.approx(5 / 40)
    # Admitted bytes by owd: 0.1 → 20, 0.2 → 10 (cum 30), 0.3 → 5 (cum 35); 95 % of 35 = 33.25.
    assert fm["p95_owd"] == pytest.approx(0.3)
    assert fm["p95_qdelay"] == pytest.approx(0.2)
    assert fm["mean_owd"] == pytest.approx((1 + 1 + 1.5 + 2) / 35)
    lm = metrics.link_metrics(tr)
    assert lm["utilization"] == pytest.approx(25 / 40)
    assert lm["capacity"] == pytest.approx(10.0)
    assert lm["throughput"] == pytest.approx(25 / 4)
    # A window (1, 3] holds ticks ending at 2 and 3 s.
    assert metrics.flow_throughput(tr, 0, (1.0, 3.0)) == pytest.approx(20 / 2)


def _trace_two_flows():
    # Flow 1 starts at tick 2; both get equal goodput once both are active.
    t = np.arange(1, 9, dtype=float)
    active = np.ones((8, 2), bool)
    active[:2, 1] = False
    acked = np.zeros((8, 2))
    acked[:, 0] = [10, 10, 5, 5, 5, 5, 5, 5]
    acked[:, 1] = [0, 0, 5, 5, 5, 5, 5, 5]
    sent = acked.copy()
    return Trace(time=t, dt=1.0, active=active, sent=sent, acked=acked, lost=np.zeros((8, 2)), admitted=sent,
                 owd=np.full((8, 2), 0.05), qdelay=np.zeros(8), capacity=np.full(8, 10.0))


def test_evaluate_trace_multi_flow_report_units():
    tr = _trace_two_flows()
    m = metrics.evaluate_trace(tr, jain_last_s=4.0)
    assert m["throughput_mbps"] == pytest.approx(80 / 8 / MBPS)
    assert m["utilization"] == pytest.approx(80 / 80)
    assert m["jain"] == pytest.approx(1.0)  # last 4 s: 5 and 5
    assert m["jain_window_s"] == [4.0, 8.0]
    assert "last 4 s" in m["jain_note"]
    assert m["per_flow"][1]["throughput_mbps"] == pytest.approx(30 / 6 / MBPS)
    assert m["p95_owd_ms"] == pytest.approx(50.0)
    # Over the whole run the split is unequal.
    j, flows = metrics.jain_over(tr)
    assert flows == [0, 1] and j == pytest.approx(metrics.jain_index([50 / 8, 30 / 6]))
    # A flow active for only a sliver of the window (here: one tick of eight) is left out.
    tr.active[1:, 1] = False
    tr.active[0, 1] = True
    assert metrics.jain_over(tr)[1] == [0]
    single = metrics.evaluate_trace(_trace_one_flow())
    assert single["jain"] == 1.0 and single["jain_note"] == "single flow"


def test_one_jain_window_for_simulator_and_emulation():
    """metrics.JAIN_LAST_S (20 s) is the window of evaluate_trace's default and of the
    evaluator; jain_of_active is the selection jain_over and the emulation share."""
    from jaxcc.emulation import results
    assert metrics.JAIN_LAST_S == 20.0
    assert metrics.jain_window(30.0) == (10.0, 30.0)
    assert metrics.jain_window(8.0) == (0.0, 8.0)          # shorter runs: the whole run
    assert metrics.jain_window(8.0, 4.0) == (4.0, 8.0)
    # a flow active under a quarter of the window is left out; the rest are compared
    j, flows = metrics.jain_of_active([3.0, 1.0, 100.0], [20.0, 20.0, 4.9], 20.0)
    assert flows == [0, 1] and j == pytest.approx(16 / 20)
    assert metrics.jain_of_active([1.0, 1.0, 9.0], [20.0, 20.0, 5.0], 20.0)[1] == [0, 1, 2]
    j, flows = metrics.jain_of_active([1.0], [1.0], 20.0)
    assert np.isnan(j) and flows == []
    # the simulator's default is this window: a 30-s run's Jain covers 10-30 s
    tr = _trace_two_flows()
    tr30 = dataclasses.replace(tr, time=tr.time * 30 / 8, dt=30 / 8)
    m = metrics.evaluate_trace(tr30)
    assert m["jain_window_s"] == [10.0, 30.0]
    assert m["jain_note"] == metrics.jain_note((10.0, 30.0), [0, 1])
    assert "last 20 s" in results.RESULTS_META["jain"]


def test_time_series_bins():
    tr = _trace_two_flows()
    ts = metrics.time_series(tr, bin_s=2.0)
    assert ts["t"].tolist() == [1.0, 3.0, 5.0, 7.0]
    assert np.isnan(ts["throughput_mbps"][0, 1])
    np.testing.assert_allclose(ts["throughput_mbps"][:, 0] * MBPS, [10, 5, 5, 5])
    np.testing.assert_allclose(ts["capacity_mbps"] * MBPS, 10.0)


def test_time_series_owd_by_arrival_at_the_receiver():
    # Ticks end at 1..4 s (dt 1): their admitted bytes (10, 10, 5, 10) reach the receiver at the
    # tick's middle + owd: 0.5 + 1.2 = 1.7, 1.5 + 0.1 = 1.6, 2.5 + 0.3 = 2.8, 3.5 + 0.6 = 4.1 (after
    # the trace's end: left out).  Bins of 1 s: [0,1) none, [1,2) (10*1.2 + 10*0.1)/20 = 0.65 s,
    # [2,3) 0.3 s, [3,4) none.
    tr = dataclasses.replace(_trace_one_flow(), owd=np.array([[1.2], [0.1], [0.3], [0.6]]))
    ts = metrics.time_series(tr, bin_s=1.0)
    assert ts["owd_ms"].shape == (4, 1)
    np.testing.assert_allclose(ts["owd_ms"][:, 0], [np.nan, 650.0, 300.0, np.nan])
    # 2-s bins of the original trace: (10*0.1 + 10*0.1)/20 and (5*0.3 + 10*0.2)/15
    ts = metrics.time_series(_trace_one_flow(), bin_s=2.0)
    np.testing.assert_allclose(ts["owd_ms"][:, 0], [100.0, 3.5 / 15 * 1e3])
    two = metrics.time_series(_trace_two_flows(), bin_s=2.0)
    np.testing.assert_allclose(two["owd_ms"][:, 0], 50.0)  # flow 0 sends from the start
    assert np.isnan(two["owd_ms"][0, 1]) and np.allclose(two["owd_ms"][1:, 1], 50.0)
