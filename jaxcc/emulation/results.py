"""Results of emulation runs: per-flow statistics, records in the results.json contract, plots.

A record (one per scenario x controller) has the simulator's fields (``jaxcc.evaluate``):
throughput, utilization, p95 one-way and queueing delay, loss, Jain's index and Ankh's number,
with per-flow detail and what only emulation has (idle RTT, the rate changes' lateness, the
delay tool's health). Jain's index is ``jaxcc.evaluation.metrics``'s one definition: over the last
``metrics.JAIN_LAST_S`` (20) seconds of a multi-flow run, among the flows active for at least a
quarter of that window, each flow's goodput there from its time series; 1.0 for a single flow.
"""
from __future__ import annotations

import array
import contextlib
import csv
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable

from jaxcc.evaluation import metrics
from jaxcc.emulation.spec import mean_capacity_mbps


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in path, or None when it is missing or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _p(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(math.ceil(q * len(v))) - 1))]


def collect_flow(fl: Any) -> dict[str, Any]:
    """Per-flow metrics in the contract's units, and two time series for plots, both with t in
    seconds from the flow's start: ``series`` [[t_s, Mbit/s], ...], each point the rate over the
    interval ending at t, and ``owd_series`` [[t_s, owd_ms], ...], 0.5 s bins at their centres
    (see ``owd_series``; none for udp_probe flows, which log no per-packet delay)."""
    fwd_prop = fl.rtt_ms / 2
    if fl.kind == "iperf3":
        cj = read_json(fl.dir / "iperf3_client.json") or {}
        end = cj.get("end", {})
        if not end:
            return {"error": cj.get("error", "iperf3 produced no result")}
        recv = end.get("sum_received", {})
        sent = end.get("sum_sent", {})
        rtts = []
        series = []
        for iv in cj.get("intervals", []):
            s = iv.get("sum", {})
            series.append((s.get("end", 0.0), s.get("bits_per_second", 0.0) / 1e6))
            for st in iv.get("streams", []):
                if st.get("rtt"):
                    rtts.append(st["rtt"] / 1000.0)
        p95_rtt = _p(rtts, 0.95)
        # TCP gives RTT samples (smoothed, 0.1 s intervals) rather than one-way delays; the
        # one-way estimate removes the reverse path's propagation delay (its queue is empty).
        p95_owd = max(p95_rtt - fl.rtt_ms / 2, 0.0) if p95_rtt is not None else None
        sent_pkts = max(sent.get("bytes", 0) / 1448.0, 1.0)
        return {"throughput_mbps": recv.get("bits_per_second", 0.0) / 1e6,
                "sender_mbps": sent.get("bits_per_second", 0.0) / 1e6,
                "p95_rtt_ms": p95_rtt, "p50_rtt_ms": _p(rtts, 0.5),
                "p95_owd_ms": p95_owd,
                "p95_qdelay_ms": max(p95_owd - fwd_prop, 0.0) if p95_owd is not None else None,
                "loss": min(sent.get("retransmits", 0) / sent_pkts, 1.0),
                "retransmits": sent.get("retransmits"), "owd_is_estimate": True,
                "series": series,
                "owd_series": _iperf3_owd_series(cj.get("intervals", []), fl.rtt_ms)}
    snd = read_json(fl.dir / "sender.json") or {}
    rcv = read_json(fl.dir / "receiver.json") or {}
    if not snd and not rcv:
        return {"error": "no summary from sender or receiver (see stderr files)"}
    out: dict[str, Any] = {}
    if fl.kind == "probe":
        # goodput over the flow's sending time (acked bytes), as jaxcc-sender reports it; the
        # receiver's figure divides by first..last arrival, which includes the queue drain
        out["throughput_mbps"] = snd.get("throughput_mbps", rcv.get("throughput_mbps"))
        out["receiver_throughput_mbps"] = rcv.get("throughput_mbps")
        out["p95_owd_ms"] = rcv.get("p95_owd_ms")
        out["p50_owd_ms"] = rcv.get("p50_owd_ms")
        # its delays end at the kernel's receive stamp; how late the receiver read them, apart
        out["p95_read_late_ms"] = rcv.get("p95_read_late_ms")
        out["unstamped"] = rcv.get("unstamped")   # arrivals without a kernel stamp (read time used)
        out["loss"] = snd.get("loss", rcv.get("loss"))
        out["p95_rtt_ms"] = snd.get("p95_rtt_ms")
        out["p50_rtt_ms"] = snd.get("p50_rtt_ms")
        out["sent"], out["acked"] = snd.get("sent"), snd.get("acked")
    else:
        # the datapath's own summaries: sender first (it sees ACKs: loss, RTT, OWD echoed by
        # the receiver), receiver as a fallback; the raw summaries are kept alongside
        for k in ("throughput_mbps", "p50_owd_ms", "p95_owd_ms", "p95_qdelay_ms", "loss",
                  "p50_rtt_ms", "p95_rtt_ms", "min_rtt_ms", "sent", "acked", "lost"):
            v = snd.get(k, rcv.get(k))
            if v is not None:
                out[k] = v
        out["receiver_throughput_mbps"] = rcv.get("throughput_mbps")
        out["sender_summary"], out["receiver_summary"] = snd, rcv
    # The simulator's definition (jaxcc.evaluation.metrics): queueing delay = one-way delay minus the
    # flow's one-way propagation delay (half its configured RTT). The datapath's own figure
    # (OWD minus the flow's *minimum* OWD) under-reads a flow that starts into a standing queue
    # (pareto/shared3, fixed:40: the third flow's minimum OWD is 109 ms, its figure 6 ms for
    # 70); it is kept as p95_qdelay_minowd_ms. p95(x - c) = p95(x) - c, so this is exact.
    if "p95_qdelay_ms" in out:
        out["p95_qdelay_minowd_ms"] = out.pop("p95_qdelay_ms")
    if out.get("p95_owd_ms") is not None:
        out["p95_qdelay_ms"] = max(out["p95_owd_ms"] - fwd_prop, 0.0)
    out["series"] = _read_series(fl.dir / "sender.csv")
    # udp_probe (the harness self-test) logs no per-packet one-way delay: no owd_series
    out["owd_series"] = _receiver_owd_series(fl.dir / "receiver.csv") if fl.kind != "probe" else []
    return out


OWD_BIN_S = 0.5          # the owd_series' bin width (seconds)
OWD_MAX_POINTS = 2000    # longer series are thinned (count-weighted means of neighbouring bins)


def owd_series(samples: Iterable[tuple[float, float]], bin_s: float = OWD_BIN_S,
               max_points: int = OWD_MAX_POINTS) -> list[tuple[float, float]]:
    """Per-bin mean one-way delay of ``samples`` [(t_s, owd_ms), ...] (t from the flow's
    start): for each bin k that has samples, the point ((k+0.5)*bin_s, their mean), over the
    samples with k*bin_s <= t < (k+1)*bin_s; a bin without any is left out, not zero. The
    point's t is the bin's centre, as the simulator's ``jaxcc.evaluation.metrics.time_series`` places its
    bins (the figures draw both alike). More than ``max_points`` bins are merged in runs of
    neighbours (each merged point the sample-count-weighted mean, at the centre of the bins it
    merges)."""
    bins: dict[int, list[float]] = {}
    for t, d in samples:
        acc = bins.setdefault(max(int(math.floor(t / bin_s)), 0), [0.0, 0])
        acc[0] += d
        acc[1] += 1
    keys = sorted(bins)
    step = max(1, math.ceil(len(keys) / max_points))
    out = []
    for i in range(0, len(keys), step):
        group = keys[i:i + step]
        total = sum(bins[k][0] for k in group)
        n = sum(bins[k][1] for k in group)
        out.append((round((group[0] + group[-1] + 1) * bin_s / 2, 6), round(total / n, 4)))
    return out


def _receiver_owd_series(path: Path) -> list[tuple[float, float]]:
    """``owd_series`` of a jaxcc flow from jaxcc-receiver's per-packet log (``--log``: flow,
    seq, size, send_ts_ns, recv_ts_ns, owd_ms, dup; ``datapath/src/receiver_main.cc``): each
    packet's owd_ms (its receive minus its send CLOCK_REALTIME stamp) at its ARRIVAL time, the
    receiver's view, as the simulator's ``time_series`` bins its one-way delays; duplicates
    left out, as from the receiver's p50/p95_owd_ms. Time origin: the earliest send stamp,
    i.e. the sender's first packet, which it sends at its ``t_s = 0`` (its --log's,
    ``series``' origin), as ``jaxcc.online.network`` does where the harness does not see the start.
    The log is held as three flat arrays (24 bytes a packet) until binned."""
    sent_ns, recv_ns, owd = array.array("q"), array.array("q"), array.array("d")
    try:
        with open(path) as f:
            reader = csv.reader(f)
            head = next(reader, None)
            if head is None:
                return []
            i_ts, i_rx = head.index("send_ts_ns"), head.index("recv_ts_ns")
            i_owd, i_dup = head.index("owd_ms"), head.index("dup")
            for row in reader:
                if len(row) != len(head) or row[i_dup] != "0":
                    continue
                sent_ns.append(int(row[i_ts]))
                recv_ns.append(int(row[i_rx]))
                owd.append(float(row[i_owd]))
    except (OSError, ValueError):  # no log, or not jaxcc-receiver's: no series
        return []
    if not sent_ns:
        return []
    t0 = min(sent_ns)
    return owd_series(zip(((ts - t0) * 1e-9 for ts in recv_ns), owd))


def _iperf3_owd_series(intervals: list[dict[str, Any]], rtt_ms: float) -> list[tuple[float, float]]:
    """``owd_series`` of a kernel TCP flow from iperf3's intervals (0.1 s, t from iperf3's
    start as ``series``): per bin, the mean of its intervals' smoothed RTT (tcpi_rtt, the
    streams' ``rtt`` in us) minus the flow's reverse propagation delay, half its RTT, at least
    0 -- the estimate ``p95_owd_ms`` is (``owd_is_estimate``). An interval counts in the bin
    holding its midpoint (iperf3's interval ends drift a few us past the 0.1 s marks)."""
    samples = []
    for iv in intervals:
        s = iv.get("sum", {})
        mid = (s.get("start", 0.0) + s.get("end", 0.0)) / 2
        for st in iv.get("streams", []):
            if st.get("rtt"):
                samples.append((mid, st["rtt"] / 1000.0))
    return [(t, round(max(d - rtt_ms / 2, 0.0), 4)) for t, d in owd_series(samples)]


def _read_series(path: Path) -> list[tuple[float, float]]:
    """(t_s, Mbit/s) from a per-interval sender CSV; best effort on unknown column names."""
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return []
    if not rows:
        return []
    cols = rows[0].keys()
    tcol = next((c for c in cols if c.lower() in ("t_s", "t", "time_s", "time")), None)
    if tcol is None:
        return []
    if "acked_bytes" in cols:         # udp_probe: per-second byte counts
        prev = 0.0
        out = []
        for r in rows:
            t = float(r[tcol])
            out.append((t, float(r["acked_bytes"]) * 8 / max(t - prev, 1e-9) / 1e6))
            prev = t
        return out
    rcol = next((c for c in cols if "deliver" in c.lower() and "mbps" in c.lower()), None) or \
        next((c for c in cols if "throughput" in c.lower() or "goodput" in c.lower()), None) or \
        next((c for c in cols if "rate" in c.lower() and "mbps" in c.lower()), None)
    if rcol is None:
        return []
    out = []
    for r in rows:
        with contextlib.suppress(ValueError, TypeError):
            out.append((float(r[tcol]), float(r[rcol])))
    return thin_series(out)


def thin_series(series: list[tuple[float, float]], max_points: int = 2000) -> list[tuple[float, float]]:
    """At most ~``max_points`` (t_s, Mbit/s) points from a per-packet log, each the time-weighted
    mean rate of the samples it replaces, so the bytes of every kept interval (what
    ``window_goodput_mbps`` integrates for Jain) are the bytes of the intervals it covers."""
    step = max(1, len(series) // max_points)
    if step == 1:
        return series
    out, prev = [], 0.0
    for i in range(0, len(series), step):
        chunk = series[i:i + step]
        mbit, t0 = 0.0, prev
        for t, mbps in chunk:
            mbit += mbps * max(t - prev, 0.0)
            prev = t
        span = prev - t0
        out.append((prev, mbit / span if span > 0 else chunk[-1][1]))
    return out


def window_goodput_mbps(flow: dict[str, Any], window: tuple[float, float]) -> tuple[float, float] | None:
    """A flow's goodput (Mbit/s) and active time (s) inside ``window`` (absolute seconds).

    The flow's ``series`` holds (t_s from the flow's start, Mbit/s over the interval ending
    then); the goodput is the bytes of those intervals inside the window over the flow's active
    time there ([start_s, stop_s] inside the window). None when the flow has no series.
    """
    lo, hi = max(window[0], flow["start_s"]), min(window[1], flow["stop_s"])
    active = max(hi - lo, 0.0)
    series = flow.get("series") or []
    if not series:
        return None
    mbit, prev = 0.0, 0.0
    for t, mbps in series:
        a, b = max(flow["start_s"] + prev, lo), min(flow["start_s"] + t, hi)
        if b > a:
            mbit += mbps * (b - a)
        prev = t
    return (mbit / active if active > 0 else 0.0), active


def time_to_share(per_flow: list[dict[str, Any]], sched, t0: float, t_end: float,
                  frac: float = metrics.RAMP_FRACTION, bin_s: float = metrics.RAMP_BIN_S,
                  hold_s: float = metrics.RAMP_HOLD_S) -> float | None:
    """``jaxcc.evaluation.metrics.time_to_share`` on an emulated run: how long after ``t0`` the
    flows together carry ``frac`` of the link's capacity (the tbf schedule ``sched``) and hold
    it, in the same bins, hold and cut at ``t_end``.  The goodput is by ACK time from the flows'
    ``series`` (the sender's per-MI log), as the simulator's.  ``inf`` when no bin qualifies;
    None when a flow has no series."""
    def share(lo: float, hi: float) -> float:
        mbit = 0.0
        for f in per_flow:
            got = window_goodput_mbps(f, (lo, hi))
            if got is None:
                raise LookupError
            mbit += got[0] * got[1]
        return mbit / (hi - lo) / max(mean_capacity_mbps(sched, lo, hi), 1e-12)

    try:
        return metrics.first_held_bin(share, t0, t_end, frac, bin_s, hold_s)
    except LookupError:
        return None


def step_recovery(per_flow: list[dict[str, Any]], sched, steps: Iterable[tuple[float, float]],
                  duration_s: float) -> dict[str, list]:
    """``step_up_at_s`` / ``step_ramp_s`` of an emulated run, as the simulator's
    ``jaxcc.evaluation.runs.recovery_metrics``: for each upward step of the scenario's
    ``schedule`` link ``steps`` [(t_s, mbps), ...], how long after it the flows carry ≥ 80 % of
    the capacity (judged until the next step)."""
    steps = list(steps)
    up = [(steps[i][0], steps[i + 1][0] if i + 1 < len(steps) else duration_s)
          for i in range(1, len(steps)) if steps[i][1] > steps[i - 1][1]]
    return {"step_up_at_s": [t for t, _ in up],
            "step_ramp_s": [time_to_share(per_flow, sched, t, t_end) for t, t_end in up]}


def jain(per_flow: list[dict[str, Any]], duration_s: float) -> tuple[float, str, list[float] | None]:
    """Jain's index of a run (metrics.jain_window / jain_of_active), its note and its window."""
    if len(per_flow) == 1:
        return 1.0, "single flow", None
    window = metrics.jain_window(duration_s)
    tputs, active, whole = [], [], []
    for f in per_flow:
        got = window_goodput_mbps(f, window)
        if got is None:   # no time series: the whole run's goodput stands for the window's
            whole.append(f["flow"])
            got = (f.get("throughput_mbps") or 0.0,
                   max(min(window[1], f["stop_s"]) - max(window[0], f["start_s"]), 0.0))
        tputs.append(got[0])
        active.append(got[1])
    value, flows = metrics.jain_of_active(tputs, active, window[1] - window[0])
    note = metrics.jain_note(window, flows)
    if whole:
        note += f"; whole-run goodput for flows without a time series: {whole}"
    return value, note, list(window)


def make_record(name: str, duration_s: float, controllers: list[str], flows: list[Any], sched,
                idle, sched_log, emulator: str = "netns-tbf-nfqueue",
                delay_check: dict[str, Any] | None = None) -> dict[str, Any]:
    """One results.json record (the shared contract) from finished flows (runner.FlowRun).

    delay_check: the run's own timing check (``jaxcc.emulation.delay.check``: ``valid``, the
    measured hold and tbf-rate errors, the thresholds). Without one (Mahimahi keeps its own
    delay, which the harness cannot measure) the record says ``valid: None``, not self-checked.
    """
    per_flow = []
    for fl in flows:
        r = dict(fl.result)
        r.update({"flow": fl.index, "controller": fl.controller, "rtt_ms": fl.rtt_ms,
                  "start_s": fl.start_s, "stop_s": fl.stop_s, "impl": fl.kind})
        per_flow.append(r)
    t_lo = min(f.start_s for f in flows)
    t_hi = max(f.stop_s for f in flows)
    vol = [(f.get("throughput_mbps") or 0.0) * (f["stop_s"] - f["start_s"]) for f in per_flow]
    total = sum(vol) / max(t_hi - t_lo, 1e-9)
    cap = mean_capacity_mbps(sched, t_lo, t_hi)

    def wmean(key, weights=vol):
        vals = [(v, f.get(key)) for v, f in zip(weights, per_flow) if f.get(key) is not None]
        if not vals:
            return None
        w = sum(v for v, _ in vals)
        if w <= 0:
            return sum(x for _, x in vals) / len(vals)
        return sum(v * x for v, x in vals) / w

    # The link's loss is the simulator's (jaxcc.evaluation.metrics.link_metrics): all flows' drops over
    # all flows' sent packets, i.e. per-flow loss weighted by packets sent. Weighting it by
    # delivered volume under-reads it where flows lose unequally (pareto/shared2, fixed:40:
    # flows at 60% and 13% loss gave 28.4% against 37.2% pooled). Without every flow's sent
    # count (iperf3 has none) each flow's offered volume, delivered / (1 - loss), stands for it.
    if all(f.get("sent") for f in per_flow):
        sent_w = [float(f["sent"]) for f in per_flow]
    else:
        sent_w = [v / max(1.0 - (f.get("loss") or 0.0), 1e-9) for v, f in zip(vol, per_flow)]
    jain_value, jain_note, jain_window = jain(per_flow, duration_s)
    ctrls = sorted(set(controllers))
    rec = {"scenario": name,
           "controller": ctrls[0] if len(ctrls) == 1 else "+".join(controllers),
           "throughput_mbps": total, "utilization": total / cap if cap > 0 else None,
           "p95_owd_ms": wmean("p95_owd_ms"), "p95_qdelay_ms": wmean("p95_qdelay_ms"),
           "loss": wmean("loss", sent_w), "jain": jain_value, "ankh": None,  # fill_ankh, once all ran
           "jain_note": jain_note, "jain_window_s": jain_window,
           "per_flow": per_flow, "emulator": emulator,
           "idle_rtt_ms": idle, "capacity_mbps": cap,
           "schedule_changes": sched_log,
           "delay_check": delay_check if delay_check is not None else
           {"valid": None, "reasons": [f"{emulator}: delay not self-checked"]}}
    return rec


def fill_ankh(records: list[dict[str, Any]]) -> None:
    """Ankh's number (jaxcc.evaluation.metrics.ankh, Pareto eq. 10) for records of ONE scenario: its
    delay term is relative to the largest p95 one-way delay among the schemes compared."""
    d = [r["p95_owd_ms"] for r in records if r.get("p95_owd_ms") is not None]
    d_max = max(d) if d else 0.0
    for r in records:
        if d_max > 0 and r.get("capacity_mbps") and r.get("p95_owd_ms") is not None:
            r["ankh"] = float(metrics.ankh(r["throughput_mbps"], r["capacity_mbps"],
                                           r["p95_owd_ms"], d_max, r.get("loss") or 0.0))


def write_results(out: Path, records: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> None:
    """OUT/results.json ({"results": records, "meta": ...}), replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    with open(tmp, "w") as f:
        json.dump(metrics.json_safe({"results": records, "meta": {**RESULTS_META, **(meta or {})}}), f,
                  indent=1, default=str, allow_nan=False)
    os.replace(tmp, out / "results.json")


RESULTS_META = {"jain": f"over the last {metrics.JAIN_LAST_S:g} s of multi-flow scenarios "
                        "(jaxcc.evaluation.metrics.jain_window), each flow's goodput there"}


def make_plots(records: list[dict[str, Any]], out_dir: Path) -> list[str]:
    """Per scenario the throughput/p95-delay scatter and the per-flow throughput and one-way-delay
    time series (``series``, ``owd_series``) with the capacity, drawn by ``jaxcc.plots`` from the
    records as ``results.json`` holds them, into ``out_dir/plots`` (.png, .pdf, .svg per figure;
    ``python -m jaxcc.plots figures --results=OUT/results.json --out=OUT/plots`` redraws them);
    returns the files."""
    from jaxcc import plots

    doc = json.loads(json.dumps(metrics.json_safe({"results": records}), default=str))
    return plots.write_all(doc, str(Path(out_dir) / "plots"))


def safe_name(s: str) -> str:
    """s as a file-name fragment."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")[:80]
