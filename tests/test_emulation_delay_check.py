"""The emulator's self-check verdict (jaxcc.emulation.delay.check) and tbf's rate check
(jaxcc.emulation.netns.tbf_rate_error) on hand-made statistics.

The real-link tests (a run starved by nfq_delay's --stall test knob is invalid, a quiet one is
valid, tbf set off its rate behind the harness's back is caught) are in tests/test_emulate.py.
"""
from __future__ import annotations

import pytest

from jaxcc.emulation import delay, netns, results
from jaxcc.emulation.host import EmulationError


def hist(p95_us, n=1000, p50_us=30.0, max_us=None):
    return {"n": n, "p50": p50_us, "p95": p95_us, "p99": p95_us, "max": max_us or p95_us, "mean": p50_us}


def stats(overall_p95_us, queues=(), dropped=0):
    """nfq_delay's stats file (version 2) with these hold-error p95s: queues = (num, n, p95_us)."""
    qs = [{"queue": num, "delay_ms": 20.0, "packets": n, "dropped_full": 0, "released": n,
           "kstamped": n, "hold_err_us": hist(p95, n), "read_late_us": hist(p95, n)}
          for num, n, p95 in queues]
    return {"version": 2, "sched": "SCHED_FIFO", "sched_priority": 10, "cpu": -1, "arrival": "kernel",
            "queues": qs, "overall": {"packets": 2000, "released": 2000, "kstamped": 1500,
                                      "dropped_full": dropped, "hold_err_us": hist(overall_p95_us, 2000),
                                      "read_late_us": hist(50.0, 1500)}}


def test_p95_hold_error_over_2_ms_is_invalid():
    ok = delay.check(stats(1999.0, [(1, 1000, 1999.0)]), None)
    assert ok["valid"] is True and ok["reasons"] == []
    assert ok["hold_err_ms"]["p95"] == pytest.approx(1.999)
    assert ok["thresholds"]["p95_hold_err_ms"] == 2.0 == delay.MAX_P95_HOLD_ERR_MS
    assert ok["kstamped_fraction"] == pytest.approx(0.75)
    assert ok["sched"] == "SCHED_FIFO:10"
    # exactly at the bound still keeps time; above it does not
    assert delay.check(stats(2000.0), None)["valid"] is True
    bad = delay.check(stats(2500.0), None)
    assert bad["valid"] is False
    assert bad["reasons"] == ["p95 hold error 2.50 ms > 2 ms (max 2.5 ms, 2000 packets)"]


def test_one_late_queue_is_enough_but_tiny_queues_do_not_count():
    # overall fine (the late queue is a small share), queue 1 late: invalid
    bad = delay.check(stats(500.0, [(1, 150, 3000.0), (2, 1850, 100.0)]), None)
    assert bad["valid"] is False and bad["reasons"] == ["queue 1: p95 hold error 3.00 ms > 2 ms"]
    # the ping queue's 6 packets are too few for a p95 of their own
    ok = delay.check(stats(500.0, [(1000, 6, 9000.0), (1, 1994, 100.0)]), None)
    assert ok["valid"] is True
    assert [q["queue"] for q in ok["per_queue"]] == [1000, 1]


def test_ring_overflow_and_tbf_rate_make_a_run_invalid():
    assert delay.check(stats(100.0, dropped=3), None)["reasons"] == [
        "delay line dropped 3 packets (ring full)"]
    tbf = {"rel_err": -0.031, "seconds": 4.0}
    bad = delay.check(stats(100.0), tbf)
    assert bad["valid"] is False and bad["tbf_rate"] is tbf
    assert bad["reasons"] == ["tbf dequeue rate -3.1% off the schedule (> 2%, over 4.0 s with a backlog)"]
    assert delay.check(stats(100.0), {"rel_err": 0.019, "seconds": 4.0})["valid"] is True
    assert delay.check(stats(100.0), {"rel_err": None, "seconds": 0.0})["valid"] is True


def test_without_hold_errors_the_run_is_not_self_checked():
    for s in (None, {}, {"queues": [{"queue": 1, "packets": 10, "mean_late_us": 5.0}]}):  # no / old stats
        c = delay.check(s, None)
        assert c["valid"] is None and "not self-checked" in c["reasons"][0]


def test_records_without_a_check_say_so():
    # Mahimahi keeps its own delay: its records carry valid None
    class Fl:
        index, controller, rtt_ms, start_s, stop_s, kind = 0, "fixed:6", 40.0, 0.0, 2.0, "jaxcc"
        result = {"throughput_mbps": 6.0, "p95_owd_ms": 20.0, "p95_qdelay_ms": 0.0, "loss": 0.0}
    rec = results.make_record("s", 2.0, ["fixed:6"], [Fl()], [(0.0, 12.0)], None, [], emulator="mahimahi")
    assert rec["delay_check"] == {"valid": None, "reasons": ["mahimahi: delay not self-checked"]}


def test_delay_options_arguments():
    assert delay.DelayOptions().args() == ["--rt=10", "--arrival=kernel"]
    assert delay.DelayOptions(rt=0, cpu=1, arrival="read", stall=(50, 10)).args() == [
        "--rt=0", "--arrival=read", "--cpu=1", "--stall=50:10"]
    with pytest.raises(EmulationError, match="arrival"):
        delay.DelayOptions(arrival="late").args()
    with pytest.raises(EmulationError, match="stall"):
        delay.DelayOptions(stall=(10, 10)).args()


# ----------------------------------------------------------------------------- tbf's rate

FRAME_BYTES_PER_S_12 = 12e6 * netns.TBF_SCALE / 8   # 12 Mbit/s of IP packets, as tbf counts frames


def samples(rates_bps, backlogs, t0=100.0, dt=0.1):
    """Samples every dt with the given dequeue rates (bytes/s) and backlogs (bytes)."""
    out, b = [(t0, 0, 0, 0, backlogs[0])], 0
    for i, (r, q) in enumerate(zip(rates_bps, backlogs[1:])):
        b += int(round(r * dt))
        out.append((t0 + (i + 1) * dt, b, 0, 0, q))
    return out


def test_tbf_rate_on_schedule_and_off_it():
    n = 20
    s = samples([FRAME_BYTES_PER_S_12] * n, [100_000] * (n + 1))
    r = netns.tbf_rate_error(s, [(0.0, 12.0)], t0=100.0, min_backlog_bytes=10_000)
    assert r["intervals"] == 20 and r["seconds"] == pytest.approx(2.0)
    assert abs(r["rel_err"]) < 1e-6
    # 10 intervals at 90% of the rate, 10 on it: -5% overall, p5 -10%
    s = samples([0.9 * FRAME_BYTES_PER_S_12] * 10 + [FRAME_BYTES_PER_S_12] * 10, [100_000] * 21)
    r = netns.tbf_rate_error(s, [(0.0, 12.0)], t0=100.0, min_backlog_bytes=10_000)
    assert r["rel_err"] == pytest.approx(-0.05, abs=1e-5)
    assert r["interval_p5"] == pytest.approx(-0.1, abs=1e-5)
    # 3 late intervals (80% of the rate) among 17 on it: -3% overall, the p95 still on it
    s = samples([0.8 * FRAME_BYTES_PER_S_12] * 3 + [FRAME_BYTES_PER_S_12] * 17, [100_000] * 21)
    r = netns.tbf_rate_error(s, [(0.0, 12.0)], t0=100.0, min_backlog_bytes=10_000)
    assert r["rel_err"] == pytest.approx(-0.03, abs=1e-5)
    assert r["interval_p5"] == pytest.approx(-0.2, abs=1e-5) and abs(r["interval_p95"]) < 1e-5


def test_tbf_rate_counts_only_backlogged_intervals_away_from_rate_changes():
    # an empty queue sends less than the rate: those intervals say nothing about tbf
    backlog = [0] * 6 + [50_000] * 15
    rates = [0.3 * FRAME_BYTES_PER_S_12] * 5 + [FRAME_BYTES_PER_S_12] * 15
    r = netns.tbf_rate_error(samples(rates, backlog), [(0.0, 12.0)], t0=100.0, min_backlog_bytes=6056)
    assert r["intervals"] == 14 and abs(r["rel_err"]) < 1e-6
    # the rate doubles at t = 1.0 s: intervals touching [0.95, 1.05] are left out, later ones
    # are held to 24 Mbit/s
    rates = [FRAME_BYTES_PER_S_12] * 10 + [2 * FRAME_BYTES_PER_S_12] * 10
    r = netns.tbf_rate_error(samples(rates, [100_000] * 21), [(0.0, 12.0), (1.0, 24.0)], t0=100.0,
                             min_backlog_bytes=10_000)
    assert r["intervals"] == 18 and abs(r["rel_err"]) < 1e-6
    # too little backlogged time: not checked
    r = netns.tbf_rate_error(samples(rates[:3], [100_000] * 4), [(0.0, 12.0)], t0=100.0, min_backlog_bytes=1)
    assert r["rel_err"] is None and "not checked" in r["note"]


def test_tbf_rate_leaves_out_a_segment_too_small_to_count():
    """An outage segment (0.01 Mbit/s for 3 s) carries ~3 frames: tbf's whole frames put its count
    ~14 % off the rate (2 frames in the 2.8 s judged), which says nothing about tbf's timers.  A
    flow that keeps a backlog only in the dark (MOCC's small queue) gave a run judged on that
    segment alone; the segment is left out (not checked), and backlogged 12 Mbit/s segments are
    judged as before."""
    frame = netns.PACKET_BYTES + netns.ETH_HEADER
    on = [FRAME_BYTES_PER_S_12] * 10
    dark = [0.0] * 9 + [2 * frame / 0.1] + [0.0] * 20  # 3 s: two frames leave, at 1 s
    sched = [(0.0, 12.0), (1.0, 0.01), (4.0, 12.0)]
    only_dark = [0] * 11 + [100_000] * 30 + [0] * 10  # a backlog only during the outage
    s = samples(on + dark + on, only_dark)
    old = netns.tbf_rate_error(s, sched, t0=100.0, min_backlog_bytes=10_000, min_segment_frames=0)
    assert old["intervals"] == 28 and old["rel_err"] == pytest.approx(2 / (0.01e6 * netns.TBF_SCALE / 8 * 2.8 / frame) - 1)
    assert old["rel_err"] < -0.1
    r = netns.tbf_rate_error(s, sched, t0=100.0, min_backlog_bytes=10_000)
    assert r["rel_err"] is None and r["unjudged_seconds"] == pytest.approx(2.8) and "not checked" in r["note"]
    # backlogged throughout: the two 12 Mbit/s segments are judged (on the rate), the dark one is not
    r = netns.tbf_rate_error(samples(on + dark + on, [100_000] * 51), sched, t0=100.0, min_backlog_bytes=10_000)
    assert abs(r["rel_err"]) < 1e-6 and r["intervals"] == 9 + 9 and r["unjudged_seconds"] == pytest.approx(2.8)
