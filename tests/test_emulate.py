"""Tests of the emulated-link harness (python -m jaxcc.emulate, the jaxcc.emulation package).

The pure helpers (trace binning, schedules, tbf sizing, spec checks) run everywhere. The tests
marked ``emulation`` build real network namespaces and need root, iproute2, iptables, ethtool,
iperf3 and the nfq_delay tool (datapath/tools/build.sh, libnetfilter-queue-dev); they skip
with the reason when something is missing. Select or drop them with ``-m emulation`` /
``-m "not emulation"``. Wall time of the emulation tests: about a minute.

Reference link (as in docs/emulation.md): 12 Mbit/s, 20 ms each way, 375 KB buffer.
Expected physics, with 1500-byte IP packets (1472-byte UDP payloads):
  * fixed 6 Mbit/s: no queue, RTT = 40 ms (+~1 ms serialisation), goodput 6*1472/1500.
  * fixed 15 Mbit/s: the queue fills and stays full: RTT = 40 + 375000*8/12e6 = 290 ms;
    goodput = 12*1472/1500 = 11.78 Mbit/s (reported over the sending time T, so the 0.25 s
    queue drain after the stop adds (T+0.25)/T); over T seconds the loss is
    1 - (12*T + 0.375*8) / (15*T) (about 18% at T = 8 s, 20% in the long run).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from jaxcc import emulate
from jaxcc.evaluation import metrics
from jaxcc.emulation import delay, host, netns, results, runner, spec

REPO = Path(__file__).resolve().parent.parent

LINK = {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0}


def _spec(name, controller, duration=8.0, link=None, flows=None):
    return spec.as_scenario({
        "name": name, "duration_s": duration, "link": dict(link or LINK),
        "flows": flows or [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": duration,
                            "controller": controller}]})


# ----------------------------------------------------------------------------- pure helpers

def test_trace_schedule_bins_and_loops(tmp_path):
    # one opportunity per ms = 12 Mbit/s; the 10-ms trace loops (the simulator folds a lap's last
    # stamp onto its time 0), so every 100-ms bin of 0.5 s is 12 Mbit/s: one merged step
    p = tmp_path / "loop.trace"
    p.write_text("\n".join(str(t) for t in range(1, 11)) + "\n")
    assert spec.trace_schedule(str(p), duration_s=0.5, bin_s=0.1) == [(0.0, pytest.approx(12.0))]


def test_trace_step_schedule(tmp_path):
    ts = [t for t in range(2, 1001, 2)] + [t for t in range(1001, 2001) for _ in range(2)]
    p = tmp_path / "step.trace"
    p.write_text("\n".join(map(str, ts)) + "\n")
    sc = _spec("step", "bbr", duration=2.0, link={"trace": str(p), "buffer_bytes": 15000})
    sched = spec.rate_schedule(sc, trace_bin_s=0.1)
    assert sched[0] == (0.0, pytest.approx(6.0, rel=0.03))
    assert any(abs(t - 1.0) < 1e-9 and abs(r - 24.0) < 0.2 for t, r in sched)


def test_fine_schedule_is_averaged_per_bin():
    link = {"schedule": [[i * 0.01, 10.0 if i % 2 else 20.0] for i in range(100)],
            "buffer_bytes": 15000}
    sched = spec.rate_schedule(_spec("fine", "bbr", duration=1.0, link=link), trace_bin_s=0.1)
    assert sched == [(0.0, pytest.approx(15.0))]


def test_tbf_args_count_ethernet_frames():
    a = netns.tbf_args(12.0, 375000)
    rate = int(a[a.index("rate") + 1].rstrip("bit"))
    limit = int(a[a.index("limit") + 1])
    assert rate == int(12e6 * 1514 / 1500)
    assert limit == int(375000 * 1514 / 1500)
    assert int(a[a.index("burst") + 1]) >= 2 * 1514


def test_spec_errors_are_clear():
    # jaxcc.scenarios' messages, naming the field
    with pytest.raises(host.EmulationError, match=r"x\.link: give exactly one of"):
        spec.as_scenario({"name": "x", "duration_s": 1, "link": {"buffer_bytes": 3000},
                          "flows": [{"rtt_ms": 10}]})
    with pytest.raises(host.EmulationError, match=r"x\.flows\[0\]\.stop_s: must be > start_s"):
        _spec("x", "fixed:1", duration=5, flows=[{"rtt_ms": 10, "start_s": 4, "stop_s": 2}])
    # and the emulation's own: tbf cannot queue less than one packet
    with pytest.raises(host.EmulationError, match=r"x\.link\.buffer_bytes: must be >= 1500"):
        _spec("x", "fixed:1", link={"bandwidth_mbps": 12, "buffer_bytes": 1000})


def test_scenarios_come_from_jaxcc_scenarios(tmp_path):
    """Named scenarios, spec files (trace paths relative to the file) and emu/* built-ins."""
    sc = spec.load(name="pareto/fixed50")  # Pareto's fixed link: 50 Mbit/s, 440 KB, 90 ms RTT
    assert (sc.name, sc.link.bandwidth_mbps, sc.link.buffer_bytes, sc.link.loss) == ("pareto/fixed50", 50.0, 440_000, 0.0)
    assert [f.rtt_ms for f in sc.flows] == [90.0] and spec.rate_schedule(sc) == [(0.0, 50.0)]
    (tmp_path / "t.trace").write_text("1\n")
    (tmp_path / "s.json").write_text(json.dumps({
        "name": "file", "duration_s": 2, "link": {"trace": "t.trace", "buffer_bytes": 3000},
        "flows": [{"rtt_ms": 10}]}))
    sc = spec.load(path=str(tmp_path / "s.json"))
    assert sc.link.trace == str(tmp_path / "t.trace")
    # one packet per ms, binned as the simulator bins it: 12 Mbit/s throughout
    assert spec.rate_schedule(sc) == [(0.0, pytest.approx(12.0))]
    assert spec.load(name="emu/two_flows").flows[1].controller == "kernel:cubic"
    with pytest.raises(host.EmulationError, match="built-ins"):
        spec.load(name="nope")


def test_simulator_only_controllers_are_refused():
    for c in ("cubic", "copa", "oracle"):
        with pytest.raises(host.EmulationError, match="only in the simulator"):
            spec.validate_controller(c)
    with pytest.raises(host.EmulationError, match="unknown controller"):
        spec.validate_controller("vegas")
    spec.validate_controller("kernel:cubic")


# ----------------------------------------------------------------------------- the command's output and flags

THRESHOLDS = {"p95_hold_err_ms": 2.0, "tbf_rate_rel_err": 0.02, "min_queue_packets": 100}


def test_timing_verdict_of_valid_invalid_and_unchecked_runs():
    ok = {"valid": True, "reasons": [], "thresholds": THRESHOLDS, "hold_err_ms": {"n": 900, "p95": 0.126, "max": 1.5},
          "tbf_rate": {"rel_err": -0.004, "seconds": 6.0}}
    assert emulate.timing_verdict(ok) == ("timing: valid, p95 hold error 0.13 ms (limit 2 ms), "
                                          "tbf rate -0.4% off the schedule (limit 2%)")
    no_backlog = {**ok, "tbf_rate": {"rel_err": None, "seconds": 0.0}}  # tbf's rate not measurable
    assert emulate.timing_verdict(no_backlog) == "timing: valid, p95 hold error 0.13 ms (limit 2 ms)"
    bad = {**ok, "valid": False, "hold_err_ms": {"n": 900, "p95": 3.5, "max": 12.0}, "tbf_rate": None,
           "reasons": ["p95 hold error 3.50 ms > 2 ms (max 12.0 ms, 900 packets)", "delay line dropped 7 packets (ring full)"]}
    assert emulate.timing_verdict(bad) == ("timing: INVALID, p95 hold error 3.50 ms (limit 2 ms); failed: p95 hold "
                                           "error 3.50 ms > 2 ms (max 12.0 ms, 900 packets); delay line dropped 7 "
                                           "packets (ring full)")
    tbf_off = {**ok, "valid": False, "tbf_rate": {"rel_err": 0.05, "seconds": 4.0},
               "reasons": ["tbf dequeue rate +5.0% off the schedule (> 2%, over 4.0 s with a backlog)"]}
    assert emulate.timing_verdict(tbf_off) == ("timing: INVALID, p95 hold error 0.13 ms (limit 2 ms), tbf rate +5.0% "
                                               "off the schedule (limit 2%); failed: tbf dequeue rate +5.0% off the "
                                               "schedule (> 2%, over 4.0 s with a backlog)")
    # the checks' own words when a run cannot check itself: no nfq_delay statistics, Mahimahi's delay
    assert emulate.timing_verdict(delay.check(None, None)) == (
        "timing: not checked (valid: null): delay line not self-checked (no hold-error statistics from nfq_delay)")
    rec = results.make_record("x", 1.0, ["bbr"], [runner.FlowRun(0, "bbr", 40.0, 0.0, 1.0, Path("."))], [(0.0, 12.0)],
                              None, [], emulator="mahimahi")
    assert emulate.timing_verdict(rec["delay_check"]) == "timing: not checked (valid: null): mahimahi: delay not self-checked"


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", "ten"])
def test_duration_flag_outside_its_range_is_one_line(value, tmp_path, capsys):
    assert emulate.run_cli(["emulate", "--scenario=emu/fixed12", f"--duration={value}", f"--out={tmp_path}"]) == 2
    assert capsys.readouterr().err == f"error: --duration must be a finite number of seconds > 0, got {value!r}\n"
    assert not os.listdir(tmp_path)


def _fake_runs(monkeypatch, verdicts):
    """emulate.main without a link: its scenarios are recorded, every run returns a record with the
    next of ``verdicts`` as its delay_check."""
    ran = []

    def run_experiments(specs, ctrls, out, **kw):
        ran.extend(specs)
        return [{"scenario": sc.name, "controller": c or "own", "throughput_mbps": 10.0, "utilization": 0.5,
                 "p95_owd_ms": 45.0, "loss": 0.001, "per_flow": [], "delay_check": v}
                for (sc, c), v in zip([(sc, c) for sc in specs for c in ctrls], verdicts)]
    monkeypatch.setattr(emulate, "check_requirements", lambda: None)
    monkeypatch.setattr(emulate.runner, "run_experiments", run_experiments)
    monkeypatch.setattr(emulate.signal, "signal", lambda *a: None)  # leave pytest's handlers alone
    return ran


def test_every_run_line_has_its_timing_verdict_and_duration_overrides(monkeypatch, tmp_path, capsys):
    """--duration=12 on emu/two_flows (30 s, the second flow from 10 s): both flows run to 12 s; each
    run's line is followed by its verdict, valid ones too."""
    ok = {"valid": True, "reasons": [], "thresholds": THRESHOLDS, "hold_err_ms": {"n": 900, "p95": 0.2, "max": 1.0},
          "tbf_rate": None}
    bad = {**ok, "valid": False, "hold_err_ms": {"n": 900, "p95": 2.5, "max": 9.0},
           "reasons": ["p95 hold error 2.50 ms > 2 ms (max 9.0 ms, 900 packets)"]}
    ran = _fake_runs(monkeypatch, [ok, bad])
    assert emulate.run_cli(["emulate", "--scenario=emu/two_flows", "--controller=bbr,fixed:6", "--duration=12", "--no-plots",
                         f"--out={tmp_path}"]) == 0
    assert [(sc.name, sc.duration_s, [(f.start_s, f.stop_s) for f in sc.flows]) for sc in ran] == [
        ("emu/two_flows", 12.0, [(0.0, 12.0), (10.0, 12.0)])]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[0].startswith("emu/two_flows") and " bbr " in lines[0]
    assert lines[1] == "  timing: valid, p95 hold error 0.20 ms (limit 2 ms)"
    assert lines[2].startswith("emu/two_flows") and " fixed:6 " in lines[2]
    assert lines[3] == ("  timing: INVALID, p95 hold error 2.50 ms (limit 2 ms); failed: p95 hold error 2.50 ms > 2 ms "
                        "(max 9.0 ms, 900 packets)")


def test_duration_before_a_flows_start_is_refused_like_evaluate(monkeypatch, tmp_path, capsys):
    """As python -m jaxcc.evaluate --duration: a flow starting at or after the new end is one line, exit 2."""
    from jaxcc.evaluation import runs as evaluation_runs

    ran = _fake_runs(monkeypatch, [])
    assert emulate.run_cli(["emulate", "--scenario=emu/two_flows", "--duration=10", "--no-plots", f"--out={tmp_path}"]) == 2
    want = "--duration=10: emu/two_flows.flows[1] starts at 10 s, not before the new end; give --duration > 10"
    assert capsys.readouterr().err == f"error: {want}\n" and ran == []
    with pytest.raises(ValueError, match=re.escape(want)):
        evaluation_runs.with_duration(spec.load(name="emu/two_flows"), 10.0)


def _flow(i, start, stop, series, tput=None):
    return {"flow": i, "start_s": start, "stop_s": stop, "series": series,
            "throughput_mbps": tput}


def test_jain_is_the_simulators_last_20_s():
    """Jain's index in emulation: metrics.jain_window (the last 20 s) over the flows active for
    a quarter of it, each flow's goodput there from its series; a run-long figure no more."""
    assert metrics.JAIN_LAST_S == 20.0
    # 30 s; flow 0 runs alone at 10 Mbit/s for 10 s, then both share 5/5: fair in the window,
    # unfair over the whole run (10 s at 10 + 20 s at 5 against 20 s at 5).
    f0 = _flow(0, 0.0, 30.0, [(t / 10, 10.0 if t <= 100 else 5.0) for t in range(1, 301)], 6.67)
    f1 = _flow(1, 10.0, 30.0, [(t / 10, 5.0) for t in range(1, 201)], 5.0)
    j, note, window = results.jain([f0, f1], 30.0)
    assert window == [10.0, 30.0]
    assert j == pytest.approx(1.0)
    assert note == metrics.jain_note((10.0, 30.0), [0, 1])
    # a flow that stops 2 s into the window does not count (less than a quarter of it)
    f2 = _flow(2, 0.0, 12.0, [(t / 10, 20.0) for t in range(1, 121)], 20.0)
    j, note, _ = results.jain([f0, f1, f2], 30.0)
    assert j == pytest.approx(1.0) and "flows active then: [0, 1]" in note
    # 3:1 in the window: (3 + 1)^2 / (2 * (9 + 1)) = 0.8
    f1b = _flow(1, 0.0, 30.0, [(t / 10, 5.0 if t <= 100 else 15.0) for t in range(1, 301)])
    j, _, _ = results.jain([f0, f1b], 30.0)
    assert j == pytest.approx(0.8)
    assert results.jain([f0], 30.0)[:2] == (1.0, "single flow")


def test_record_carries_the_jain_window(tmp_path):
    fls = []
    for i, (start, mbps) in enumerate([(0.0, 4.0), (5.0, 4.0)]):
        fl = runner.FlowRun(i, "bbr", 40.0, start, 30.0, tmp_path, kind="jaxcc")
        fl.result = {"throughput_mbps": mbps, "series": [(t / 2, mbps) for t in range(1, 61)]}
        fls.append(fl)
    rec = results.make_record("x", 30.0, ["bbr", "bbr"], fls, [(0.0, 12.0)], None, [])
    assert rec["jain"] == pytest.approx(1.0) and rec["jain_window_s"] == [10.0, 30.0]
    results.write_results(tmp_path, [rec])
    meta = json.loads((tmp_path / "results.json").read_text())["meta"]
    assert "last 20 s" in meta["jain"]


def test_assign_controllers_keeps_kernel_cross_traffic():
    sc = _spec("x", "bbr", flows=[{"rtt_ms": 40, "controller": "bbr"},
                                    {"rtt_ms": 40, "controller": "kernel:cubic"}])
    assert spec.assign_controllers(sc, "fixed:5") == ["fixed:5", "kernel:cubic"]
    assert spec.assign_controllers(sc, None) == ["bbr", "kernel:cubic"]


# ----------------------------------------------------------------------------- real links

def _emulation_skip_reason() -> str | None:
    if sys.platform != "linux":
        return "emulation needs Linux network namespaces"
    if os.geteuid() != 0:
        return "emulation needs root (network namespaces, tc, iptables)"
    if not (host.TOOLS_BUILD / "nfq_delay").exists() and \
            Path("/usr/include/libnetfilter_queue/libnetfilter_queue.h").exists():
        subprocess.run([str(REPO / "datapath" / "tools" / "build.sh")], capture_output=True)
    problems = host.missing_requirements(need_iperf3=True)
    if not (host.TOOLS_BUILD / "udp_probe").exists():
        problems.append("udp_probe not built: run datapath/tools/build.sh")
    return "; ".join(problems) if problems else None


needs_emulation = [pytest.mark.emulation,
                   pytest.mark.skipif(_emulation_skip_reason() is not None,
                                      reason=str(_emulation_skip_reason()))]


def _apply(marks):
    def deco(f):
        for m in reversed(marks):
            f = m(f)
        return f
    return deco


@pytest.fixture(scope="module")
def prefix():
    p = "jxet" + os.urandom(2).hex()
    yield p
    netns.cleanup_leftovers(p)


# A run the emulator's self-check marks invalid (it did not keep time: a late delay line, or tbf
# off its rate because its timer fired late on a busy machine) says nothing about the link, and
# sim2real re-runs such runs.  The tests do the same, up to this many runs in all; the last
# record is judged, so a run that never keeps time still fails its test's validity assertion.
# Five: a CI host stayed busy through three quiet 5-s runs in a row (p95 hold errors 2.9, 8.4
# and 3.0 ms), while the other real-time tests kept time within their second or third run.
RUNS_WHILE_LATE = 5


def _did_not_keep_time(rec) -> str | None:
    """Why the emulator's self-check marked the run invalid, or None."""
    dc = rec["delay_check"]
    return "; ".join(dc["reasons"]) if dc.get("valid") is False else None


def _run(sc, tmp_path, prefix, impl="auto", tag="r", again_if=_did_not_keep_time):
    """One run of ``sc`` into tmp_path/tag, run again while ``again_if(record)`` names a reason
    (None: never); each such attempt is kept beside it as tmp_path/tag.late<k> and reported as a
    warning with the reason."""
    ctrls = spec.assign_controllers(sc, None)
    out = tmp_path / tag

    def once():
        rec = runner.Runner(sc, ctrls, out, prefix=prefix, impl=impl).run()
        assert netns.list_leftovers(prefix) == {"namespaces": [], "links": []}
        return rec

    for attempt in range(1, RUNS_WHILE_LATE):
        rec = once()
        why = again_if(rec) if again_if else None
        if why is None:
            return rec
        warnings.warn(f"{sc.name}: run {attempt} of at most {RUNS_WHILE_LATE} did not keep time "
                      f"({why}); running it again")
        out.rename(tmp_path / f"{tag}.late{attempt}")
    return once()


@_apply(needs_emulation)
def test_fixed_rate_below_and_above_capacity(tmp_path, prefix):
    T = 8.0
    lo = _run(_spec("fixed6", "fixed:6", T), tmp_path, prefix, impl="probe", tag="lo")
    f = lo["per_flow"][0]
    # The timing first: a late delay line (a busy machine) is named as such, not as a slow link.
    assert lo["delay_check"]["valid"] is True, lo["delay_check"]
    assert lo["idle_rtt_ms"]["avg_ms"] == pytest.approx(40.5, abs=3.0)
    assert f["throughput_mbps"] == pytest.approx(6 * 1472 / 1500, rel=0.03)
    assert f["p50_rtt_ms"] == pytest.approx(41.0, abs=3.0)
    assert f["loss"] < 0.005

    hi = _run(_spec("fixed15", "fixed:15", T), tmp_path, prefix, impl="probe", tag="hi")
    f = hi["per_flow"][0]
    assert hi["delay_check"]["valid"] is True, hi["delay_check"]
    # goodput = acked bytes / sending time; the full queue (0.25 s) drains after the stop.  On a
    # miss, what the receiver saw (its ACK send errors, its longest gap between arrivals) and the
    # sender's per-second log tell a lost ACK stream from a slow link.
    flow = tmp_path / "hi" / "flow0"
    why = {"receiver": json.loads((flow / "receiver.json").read_text()), "sender_csv": (flow / "sender.csv").read_text(),
           "drops_outside_link": hi["delay_check"]["drops_outside_link"]}
    assert f["throughput_mbps"] == pytest.approx(12 * 1472 / 1500 * (T + 0.25) / T, rel=0.04), why
    assert f["p50_rtt_ms"] == pytest.approx(290.0, abs=15.0)
    expected_loss = 1 - (12 * T + 0.375 * 8) / (15 * T)
    assert f["loss"] == pytest.approx(expected_loss, abs=0.03)
    assert hi["utilization"] > 0.9
    # both runs kept time; with the queue full tbf's rate was checked: 12 Mbit/s of packets
    # below capacity no interface of the three namespaces dropped anything (the link drops only in tbf)
    assert lo["delay_check"]["drops_outside_link"]["interfaces"] == {}, lo["delay_check"]["drops_outside_link"]
    for rec in (lo, hi):
        assert rec["delay_check"]["valid"] is True, rec["delay_check"]
        assert emulate.timing_verdict(rec["delay_check"]).startswith("timing: valid, p95 hold error ")
    # tbf was set to the schedule's rate: its on-time 100 ms intervals (the p95; a late timer only
    # lowers the rate) are on it, +0.1% to +0.7% in runs here.  The whole run's error, which a
    # busy machine drags down (beside two JAX test workers: -0.9% to -1.6% in valid runs, -4% to
    # -8% in invalid ones), is judged by the validity check above (delay.MAX_TBF_RATE_REL_ERR).
    tbf = hi["delay_check"]["tbf_rate"]
    assert tbf["seconds"] > T / 2 and abs(tbf["interval_p95"]) < 0.01, tbf
    # behind the full queue no ARP was needed: all four neighbour entries stayed static
    assert set(hi["delay_check"]["neighbours"].values()) == {"PERMANENT"}, hi["delay_check"]["neighbours"]
    assert len(hi["delay_check"]["neighbours"]) == 4


def _owd_excess_ms(rec):
    """The probe receiver's p95 one-way delay above the configured 20 ms: with no queue (6 of
    100 Mbit/s, where even a 10 ms burst of the flow's packets fits tbf's 1 ms bucket) and the
    delay ending at the kernel's receive stamp (the receiver's own read lateness left out), it
    is the delay line's lateness, measured apart from nfq_delay."""
    return rec["per_flow"][0]["p95_owd_ms"] - 20.0


FAST = {"bandwidth_mbps": 100.0, "buffer_bytes": 375000, "loss": 0.0}


@_apply(needs_emulation)
def test_self_check_catches_a_starved_delay_line(tmp_path, prefix):
    """A quiet run keeps time and says so; a run whose delay line is starved (nfq_delay's
    --stall test knob: 10 ms without service every 50 ms, as on an overloaded machine) is
    marked invalid with the error it measured, and that error is the one the receiver sees."""
    T = 5.0

    def not_quiet(rec):
        """A quiet run's delay line is late by under 1 ms at its p95 by its own measure, and by
        under 1.5 ms at the receiver's.  A busy machine breaks either now and then (CI: 1.6 ms
        at the receiver with the hold error under 1 ms, once); a delay line that is late every
        time still fails below."""
        p95 = (rec["delay_check"].get("hold_err_ms") or {}).get("p95")
        if (why := _did_not_keep_time(rec)) or p95 is None or p95 >= 1.0:
            return why or f"p95 hold error {p95} ms"
        excess = _owd_excess_ms(rec)
        return None if excess < 1.5 else (f"receiver's p95 one-way delay {excess:.3f} ms over the configured "
                                          f"(its reads {rec['per_flow'][0].get('p95_read_late_ms')} ms late)")

    quiet = _run(_spec("quiet", "fixed:6", T, link=FAST), tmp_path, prefix, impl="probe", tag="quiet",
                 again_if=not_quiet)
    dc = quiet["delay_check"]
    assert dc["valid"] is True and dc["reasons"] == [], dc
    assert dc["kstamped_fraction"] > 0.99     # every forwarded packet had its kernel stamp
    assert dc["hold_err_ms"]["p95"] < 1.0
    assert _owd_excess_ms(quiet) < 1.5
    assert quiet["per_flow"][0]["unstamped"] == 0      # the kernel stamped every arrival

    sc = _spec("stalled", "fixed:6", T, link=FAST)
    rec = runner.Runner(sc, ["fixed:6"], tmp_path / "stalled", prefix=prefix, impl="probe",
                        delay_opts=delay.DelayOptions(stall=(50.0, 10.0))).run()
    dc = rec["delay_check"]
    assert dc["valid"] is False, dc
    assert dc["test_stall"]["stall_ms"] == 10.0 and dc["test_stall"]["stalls"] >= T / 0.05
    fwd = next(q for q in dc["per_queue"] if q["queue"] == 1)["hold_err_ms"]
    # a packet due during a stall waits for its end: late by up to 10 ms; one in five is due
    # during a stall, so the p95 is well inside (0, 10) ms and over the 2 ms bound, and the p99
    # stays under the stall's 10 ms.  Not the max: one packet the kernel schedules late on a
    # loaded machine sets it (22 ms in the clean chroot and 20 ms in CI, both under load; the
    # CI run's p99 was 8.4 ms), and that is no evidence about the stall.
    assert 2.0 < fwd["p95"] <= 10.5 and fwd["p99"] <= 11.0, fwd
    assert any(r.startswith("p95 hold error") for r in dc["reasons"])
    # independent: the receiver's own one-way delays show the same lateness
    assert _owd_excess_ms(rec) == pytest.approx(fwd["p95"], abs=1.0)


@_apply(needs_emulation)
def test_self_check_catches_tbf_off_its_rate(tmp_path, prefix):
    """tbf set to 10.8 Mbit/s behind the harness's back (the schedule says 12): the run's rate
    check measures about -10% over the time the queue was full and marks the run invalid."""
    T = 6.0
    sc = _spec("offrate", "fixed:15", T)
    dev = f"{prefix}-db"

    def meddle():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            out = subprocess.run(["ip", "netns", "exec", f"{prefix}-rtr", "tc", "qdisc", "show", "dev", dev],
                                 capture_output=True, text=True).stdout
            if "tbf" in out:
                break
            time.sleep(0.05)
        time.sleep(1.0)
        subprocess.run(["ip", "netns", "exec", f"{prefix}-rtr", "tc", "qdisc", "change", "dev", dev, "root",
                        "handle", "1:", "tbf", *netns.tbf_args(10.8, 375000)], check=True)

    th = threading.Thread(target=meddle)
    th.start()
    rec = _run(sc, tmp_path, prefix, impl="probe", tag="offrate", again_if=None)
    th.join()
    dc = rec["delay_check"]
    assert dc["valid"] is False, dc
    # Nearly all the backlogged time is after the change (-10%).  A timer that fires late only
    # lowers tbf's rate further, and a tbf changed while it holds a queue loses more than one set
    # up before it (the harness's own, above): five runs on this quiet machine measured -10.2% to -12.1% (one more -13.3%; -11.2% in CI),
    # their 100 ms intervals' p5 -12% to -18% and p95 -9.8% to -9.9%.  So the run is well past
    # the 2% bound, and its on-time intervals (the p95) show the 10.8 Mbit/s tbf was set to.
    assert -0.2 < dc["tbf_rate"]["rel_err"] < -0.07, dc["tbf_rate"]
    assert dc["tbf_rate"]["interval_p95"] == pytest.approx(-0.1, abs=0.01), dc["tbf_rate"]
    assert [r for r in dc["reasons"] if r.startswith("tbf dequeue rate")], dc["reasons"]
    assert dc["hold_err_ms"]["p95"] < 2.0   # the delay line itself kept time


@_apply(needs_emulation)
def test_kernel_cubic_fills_the_link(tmp_path, prefix):
    rec = _run(_spec("cubic", "kernel:cubic", 8.0), tmp_path, prefix)
    f = rec["per_flow"][0]
    assert f["client_rc"] == 0, f
    # TCP payload on 1500-byte packets: 12*1448/1500 = 11.58 Mbit/s at most; slow start
    # and the first queue fill cost a little of 8 s.
    assert f["throughput_mbps"] > 0.8 * 11.58


@_apply(needs_emulation)
def test_exported_policy_runs_and_exits_cleanly(tmp_path, prefix):
    if host.sender_binary() is None or host.receiver_binary() is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    policyfile = pytest.importorskip("jaxcc.policyfile")
    spec_p, tensors = policyfile.make_random_policy("mlp", 0)   # Aurora-shaped MLP
    path = tmp_path / "random.safetensors"
    policyfile.save(path, spec_p, tensors)
    rec = _run(_spec("policy", f"policy:{path}", 10.0), tmp_path, prefix, tag="pol")
    f = rec["per_flow"][0]
    err = (tmp_path / "pol" / "flow0" / "sender.stderr").read_text()
    if f["client_rc"] == 2 and "not implemented in the datapath" in err:
        pytest.skip(f"datapath cannot run this policy yet: {err.strip()}")
    assert f["client_rc"] == 0 and f["server_rc"] == 0, (f, err)
    assert f["throughput_mbps"] > 0
    assert 0.0 <= f["loss"] <= 1.0


@pytest.mark.full  # tests/test_emulate.py's exported policy covers the path in the fast tier
@_apply(needs_emulation)
@pytest.mark.parametrize("policy,features", [("checkpoints/aurora/aurora.safetensors", "aurora_v1"),
                                             ("checkpoints/eagle/eagle.safetensors", "eagle_v1")])
def test_shipped_policy_runs_in_the_datapath(tmp_path, prefix, policy, features):
    """The shipped Aurora and Eagle policies drive a real flow on the reference link for a few
    seconds: the sender computes their features (no exit 2), decides every MI and reports sane
    figures (it may not fill the link this early: Eagle starts at 300 kbit/s)."""
    if host.sender_binary() is None or host.receiver_binary() is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    T = 6.0
    rec = _run(_spec("shipped", f"policy:{REPO / policy}", T), tmp_path, prefix, tag=features)
    f = rec["per_flow"][0]
    err = (tmp_path / features / "flow0" / "sender.stderr").read_text()
    assert f["client_rc"] == 0 and f["server_rc"] == 0, (f, err)
    s = f["sender_summary"]
    assert s["policy"]["features"] == features
    # One decision per MI (Aurora: 1/2 RTT, Eagle: 3 RTTs of about 40 ms) over T seconds.
    mi_s = {"aurora_v1": 0.02, "eagle_v1": 0.12}[features]
    assert 0.5 * T / mi_s < s["decisions"] <= 1.2 * T / mi_s, s
    # Alive and below the link.  Not a quality bar: an Eagle flow whose first MI carries a spurious
    # delay sample can hold ~0.5 Mbit/s for good (checkpoints/eagle/README.md, "a known weakness").
    assert 0.2 < f["throughput_mbps"] <= 12.0 * 1.05, f
    assert 0.0 <= f["loss"] < 0.05, f
    # p95 one-way delay: the 20 ms propagation plus at most the 375 KB buffer (250 ms).
    assert 19.0 < f["p95_owd_ms"] < 20.0 + 250.0 + 10.0, f


@_apply(needs_emulation)
def test_sigterm_cleans_up(tmp_path):
    p = "jxek" + os.urandom(2).hex()
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({
        "name": "sigterm", "duration_s": 20,
        "link": {"bandwidth_mbps": 12, "buffer_bytes": 100000, "loss": 0.01},
        "flows": [{"rtt_ms": 40, "start_s": 0, "stop_s": 20, "controller": "kernel:cubic"}]}))
    proc = subprocess.Popen([sys.executable, "-m", "jaxcc.emulate", f"--scenario-file={spec}",
                             f"--out={tmp_path / 'o'}", f"--prefix={p}", "--no-ping",
                             "--no-plots"], cwd=REPO, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(netns.list_leftovers(p)["namespaces"]) < 3:
        time.sleep(0.1)
    assert len(netns.list_leftovers(p)["namespaces"]) == 3
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert netns.list_leftovers(p) == {"namespaces": [], "links": []}
    # and nothing of ours still runs
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert p not in ps


@_apply(needs_emulation)
def test_cleanup_command_removes_leftovers():
    p = "jxec" + os.urandom(2).hex()
    subprocess.run(["ip", "netns", "add", f"{p}-snd"], check=True)
    out = subprocess.run([sys.executable, "-m", "jaxcc.emulate", "--cleanup", f"--prefix={p}"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert f"{p}-snd" in out
    assert netns.list_leftovers(p)["namespaces"] == []


def test_missing_tool_is_named(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    problems = host.missing_requirements(need_iperf3=True)
    text = " ".join(problems)
    assert "apt-get install iptables" in text and "apt-get install iperf3" in text


def test_record_loss_and_qdelay_are_the_simulators(tmp_path):
    """Link loss = all drops / all sent (jaxcc.evaluation.metrics.link_metrics), not per-flow loss weighted
    by delivered volume; p95 queueing delay = p95 OWD minus the flow's one-way propagation delay
    (half its RTT), not minus its minimum OWD (a flow that starts into a standing queue)."""
    fls = []
    # pareto/shared2 x fixed:40 as emulated: sent/acked packet counts, per-flow OWD summaries
    for i, (start, sent, acked, p95, mn) in enumerate([(0.0, 101902, 40901, 115.41, 45.01),
                                                       (2.0, 95108, 82856, 115.36, 109.38)]):
        d = tmp_path / f"flow{i}"
        d.mkdir()
        summ = {"sent": sent, "acked": acked, "lost": sent - acked, "loss": 1 - acked / sent,
                "throughput_mbps": acked * 1472 * 8 / (30.0 - start) / 1e6, "p95_owd_ms": p95,
                "min_owd_ms": mn, "p95_qdelay_ms": p95 - mn}
        (d / "sender.json").write_text(json.dumps(summ))
        fl = runner.FlowRun(i, "fixed:40", 90.0, start, 30.0, d, kind="jaxcc")
        fl.result = results.collect_flow(fl)
        fls.append(fl)
    f1 = fls[1].result
    assert f1["p95_qdelay_ms"] == pytest.approx(115.36 - 45.0)
    assert f1["p95_qdelay_minowd_ms"] == pytest.approx(115.36 - 109.38)
    rec = results.make_record("x", 30.0, ["fixed:40"] * 2, fls, [(0.0, 50.0)], None, [])
    # (61001 + 12252) / (101902 + 95108) = 0.37183
    assert rec["loss"] == pytest.approx(73253 / 197010)
    assert rec["p95_qdelay_ms"] == pytest.approx(70.4, abs=0.05)


# ----------------------------------------------------------------------------- owd_series

def test_owd_series_of_a_datapath_flow_from_the_receiver_log(tmp_path):
    """owd_series: per 0.5 s of ARRIVAL time (send + owd, from the flow's first packet, the
    sender's t_s = 0; the simulator's time_series bins its delays by arrival too), the mean
    owd_ms of the bin's packets, duplicates left out, a bin without packets left out; each point
    at its bin's centre, as the simulator's bins."""
    b = 1_700_000_000_000_000_000
    rows = [  # seq, send time (s after the first packet), owd_ms, dup; file order != send order
        (1, 0.2, 22.0, 0), (0, 0.0, 20.0, 0), (1, 0.2, 50.0, 1), (2, 0.45, 30.0, 0),
        (3, 0.5, 40.0, 0), (4, 1.7, 60.0, 0)]
    lines = ["flow,seq,size,send_ts_ns,recv_ts_ns,owd_ms,dup"]
    for seq, t, owd, dup in rows:
        ts = b + round(t * 1e9)
        lines.append(f"0,{seq},1472,{ts},{ts + round(owd * 1e6)},{owd},{dup}")
    (tmp_path / "receiver.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "sender.json").write_text(json.dumps({"throughput_mbps": 1.0, "p95_owd_ms": 60.0}))
    fl = runner.FlowRun(0, "fixed:1", 40.0, 3.0, 5.0, tmp_path, kind="jaxcc")
    out = results.collect_flow(fl)
    # arrivals 0.02, 0.222, 0.48, 0.54, 1.76 s: bin 0: (20 + 22 + 30) / 3 = 24; bin 1: 40; bin 2
    # empty; bin 3: 60 (the same bins as by send time)
    assert out["owd_series"] == [(0.25, 24.0), (0.75, 40.0), (1.75, 60.0)]
    # a packet sent in bin 0 that arrives in bin 1 counts there (by send time bin 0 would be 93)
    lines.append(f"0,5,1472,{b + round(0.3e9)},{b + round(0.3e9) + round(300e6)},300.0,0")  # arrives 0.6 s
    (tmp_path / "receiver.csv").write_text("\n".join(lines) + "\n")
    assert results.collect_flow(fl)["owd_series"] == [(0.25, 24.0), (0.75, 170.0), (1.75, 60.0)]
    lines.pop()
    (tmp_path / "receiver.csv").write_text("\n".join(lines) + "\n")
    # a udp_probe flow logs no per-packet delay, a flow without a log has no series
    assert results.collect_flow(runner.FlowRun(0, "fixed:1", 40.0, 0.0, 2.0, tmp_path,
                                               kind="probe"))["owd_series"] == []
    (tmp_path / "receiver.csv").unlink()
    assert results.collect_flow(fl)["owd_series"] == []


def test_owd_series_of_a_kernel_flow_is_the_rtt_estimate(tmp_path):
    """iperf3 flows: per bin the mean smoothed RTT of the 0.1 s intervals whose midpoint lies
    in it, minus half the flow's RTT (p95_owd_ms's estimate), at least 0."""
    rtts_ms = [50, 52, 54, 56, 58, 70, 80, 90, 100, 110, 15]
    ivs = [{"sum": {"start": i / 10, "end": (i + 1) / 10 + 4e-5, "bits_per_second": 8e6},
            "streams": [{"rtt": r * 1000}]} for i, r in enumerate(rtts_ms)]
    cj = {"intervals": ivs, "end": {"sum_received": {"bits_per_second": 8e6},
                                    "sum_sent": {"bits_per_second": 8e6, "bytes": 1_100_000,
                                                 "retransmits": 0}}}
    (tmp_path / "iperf3_client.json").write_text(json.dumps(cj))
    fl = runner.FlowRun(1, "kernel:cubic", 40.0, 0.0, 1.1, tmp_path, kind="iperf3")
    out = results.collect_flow(fl)
    # bin 0: mean(50..58) = 54 - 20 = 34; bin 1: mean(70..110) = 90 - 20 = 70; bin 2: 15 - 20 < 0
    assert out["owd_series"] == [(0.25, 34.0), (0.75, 70.0), (1.25, 0.0)]
    assert out["owd_is_estimate"] is True


def test_owd_series_stays_bounded():
    """A long run's series is thinned to at most OWD_MAX_POINTS points, each the
    sample-count-weighted mean of the bins it merges (so the run's mean delay is kept)."""
    # 5000 bins (2500 s); bin k holds (k mod 3) + 1 samples of value k
    samples = [((k + 0.25) * 0.5, float(k)) for k in range(5000) for _ in range(k % 3 + 1)]
    s = results.owd_series(samples)
    assert len(s) == 1667 <= results.OWD_MAX_POINTS
    # runs of 3 bins: (0*1 + 1*2 + 2*3) / 6 = 8/6, at the centre of bins 0..2 (0.75 s)
    assert s[0] == (0.75, round(8 / 6, 4))
    # the last run is bins 4998 (1 sample) and 4999 (2): (4998 + 2 * 4999) / 3, centred at 2499.5 s
    assert s[-1] == (2499.5, round(14996 / 3, 4))
    assert [t for t, _ in s] == sorted(t for t, _ in s)


@_apply(needs_emulation)
def test_owd_series_of_a_real_run(tmp_path, prefix):
    """A datapath fixed:10 flow alone on the 12 Mbit/s reference link for 2 s, then with a
    kernel CUBIC flow that fills the 375 KB buffer: the datapath flow's owd_series is near the
    20 ms propagation delay while it is alone and well above it once CUBIC's queue builds
    (which checks its time origin against the run's), every bin between the receiver's minimum
    OWD and the largest logged one, and the bins' median between the minimum and the p95. The
    CUBIC flow's estimate lies between 0 and its p95_owd_ms."""
    if host.sender_binary() is None or host.receiver_binary() is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    T = 6.0
    sc = _spec("owd", None, T, flows=[
        {"rtt_ms": 40.0, "start_s": 0.0, "stop_s": T, "controller": "fixed:10"},
        {"rtt_ms": 40.0, "start_s": 2.0, "stop_s": T, "controller": "kernel:cubic"}])
    rec = _run(sc, tmp_path, prefix, tag="owd")
    json.dumps(rec)  # results.json-safe
    dp, tcp = rec["per_flow"]
    assert dp["impl"] == "jaxcc" and tcp["impl"] == "iperf3"
    for f in (dp, tcp):
        ts = [t for t, _ in f["owd_series"]]
        assert ts == sorted(set(ts)) and ts[0] > 0 and ts[-1] <= f["stop_s"] - f["start_s"] + 0.5, ts
        # about two points a second over the flow's time, and as long as its throughput series
        assert len(ts) >= 1.5 * (f["stop_s"] - f["start_s"]), ts
        assert abs(ts[-1] - f["series"][-1][0]) <= 0.6, (ts[-1], f["series"][-1])
    rs = dp["receiver_summary"]
    log = (tmp_path / "owd" / "flow0" / "receiver.csv").read_text().splitlines()[1:]
    max_owd = max(float(r.split(",")[5]) for r in log)
    owd = [d for _, d in dp["owd_series"]]
    assert all(rs["min_owd_ms"] - 0.01 <= d <= max_owd + 0.01 for d in owd), (owd, rs)
    med = sorted(owd)[len(owd) // 2]
    assert rs["min_owd_ms"] <= med <= dp["p95_owd_ms"], (med, dp["p95_owd_ms"])
    alone = [d for t, d in dp["owd_series"] if t <= 2.0]
    shared = [d for t, d in dp["owd_series"] if t > 4.0]
    assert alone and max(alone) < 30.0, dp["owd_series"]
    assert shared and min(shared) > 60.0, dp["owd_series"]
    est = sorted(d for _, d in tcp["owd_series"])
    assert est[0] >= 0.0 and est[len(est) // 2] <= tcp["p95_owd_ms"], (est, tcp["p95_owd_ms"])
