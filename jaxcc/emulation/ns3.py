"""ns-3 reference runs: a jaxcc scenario on the ns-3.37 dumbbell (``datapath/ns3/dumbbell.cc``).

The project's second independent reference for the simulator's fidelity (the first is the
kernel's TCP in the netns harness): a packet-level dumbbell with a byte-limited drop-tail
bottleneck and no qdisc, one access link per flow setting its RTT, random loss before the
bottleneck queue, and ns-3's own TCP senders.  Built by ``datapath/ns3/build.sh`` (``make ns3``)
against Debian's ``libns3-dev``; the binary is looked up in ``$JAXCC_NS3_BUILD`` or
``datapath/ns3/build``.

    run_scenario(spec, controllers, out_dir, seed=0) -> dict   one results.json record
    available() -> bool                                        the program is built

Controllers, one per flow (the simulator's names): ``reno`` (ns3::TcpNewReno), ``cubic``
(ns3::TcpCubic), ``bbr`` (ns3::TcpBbr), ``fixed:MBPS`` (a constant-rate UDP sender of 1500-byte
IP packets).  Link forms: ``bandwidth_mbps``, ``schedule`` and ``random_steps`` (drawn from
``seed``, as the simulator draws them from its evaluation seed); traces and Poisson links are
refused (a delivery-opportunity trace is not a piecewise-constant rate).

The record has the contract's fields (``jaxcc.emulation.results.make_record``,
``jaxcc.evaluate``): ``throughput_mbps``, ``utilization``, ``capacity_mbps``, ``p95_owd_ms``,
``p95_qdelay_ms``, ``mean_owd_ms``, ``loss``, ``power``, ``jain`` (+ ``jain_note``,
``jain_window_s``), ``ankh`` (None, as ``make_record``; ``results.fill_ankh`` fills it across
controllers) and ``per_flow``.  Because ns-3 sees every packet, the link's delays are exact
percentiles over all data packets of all flows (the simulator's byte-weighted definition in
``jaxcc.evaluation.metrics.link_metrics``), not the flows' volume-weighted mean the netns harness uses.
Definitions (``datapath/ns3/dumbbell.cc`` has the details):

* throughput: bytes delivered to the receiving application during the flow's active time seen
  one propagation delay later (arrivals in [start + rtt/2, stop + rtt/2]), counted as
  1500-byte packets (the simulator's unit: TCP carries 1448 payload bytes per 1500-byte
  packet, UDP 1472) over stop - start; ``goodput_mbps`` per flow is the payload-byte figure.
  The link's is the flows' bytes over the time at least one flow is active.
* one-way delay: sender NIC (start of transmission) to receiver NIC (end of reception):
  propagation, the bottleneck queue and serialisation (1500*8/C at the bottleneck); queueing
  delay: the bottleneck queue's sojourn only (the simulator's ``qdelay``).
* loss: (drop-tail drops + random losses) / data packets sent, retransmissions included.
* Jain: ``jaxcc.evaluation.metrics.jain_window`` (last 20 s) and ``jain_of_active``, each flow's goodput
  there from its 0.5 s delivery bins.

Known limits of ns-3.37, measured here by ``datapath/ns3/limits.sh`` (50 Mbit/s, 440 kB; means of
3 seeds):

* TcpCubic has no Reno-friendly region (RFC 9438 §4.3): under random loss its goodput is
  0.37x NewReno's (0.32x the Mathis rate) at 1 % loss and 20 ms, 0.72x (0.73x) at 90 ms, but 1.25x
  (1.41x) at 200 ms; at 0.2 %: 0.35x, 0.98x, 1.51x.  Credible: no random loss (large windows).
* TcpBbr after a retransmission timeout: 2 flows on 90 ms / 440 kB reach 2.87 Mbit/s of 50
  together (each took one RTO), 4 flows leave one at 0.52 Mbit/s, one flow at 1 % loss gets
  1.6-9.5 Mbit/s; one flow without random loss survives its start-up RTO (42-46 Mbit/s).
  Credible: a single BBR flow, no random loss.  ``per_flow[i]["rto"]`` and ``rto_times_s`` count
  and time the timeouts of every TCP flow.

Cost: about 30 us of CPU per data packet for TCP (50 Mbit/s, 30 s, 2 flows: 3.5-4 s), 10 us
for UDP (1.3 s); it grows with the link rate (200 Mbit/s, 30 s: 22 s).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

from jaxcc import units
from jaxcc.evaluation import metrics
from jaxcc.emulation.host import EmulationError
from jaxcc.scenarios import REALISM_FIELDS, Scenario
from jaxcc.units import PACKET_BYTES

REPO = Path(__file__).resolve().parent.parent.parent
BINARY_NAME = "ns3-dumbbell"
BIN_S = 0.5
TCP_KINDS = {"reno": "TcpNewReno", "cubic": "TcpCubic", "bbr": "TcpBbr"}
ALLOWED = "reno, cubic, bbr, fixed:MBPS"


class Ns3Error(EmulationError):
    """The ns-3 program is missing or failed (an ``EmulationError``: the CLIs print it on one line)."""


def build_dir() -> Path:
    """Where ``datapath/ns3/build.sh`` puts the program (``$JAXCC_NS3_BUILD`` overrides)."""
    return Path(os.environ.get("JAXCC_NS3_BUILD") or REPO / "datapath" / "ns3" / "build")


def binary() -> Path | None:
    """The built ns-3 dumbbell, or None."""
    p = build_dir() / BINARY_NAME
    return p if p.is_file() and os.access(p, os.X_OK) else None


def available() -> bool:
    """Whether the ns-3 dumbbell is built (``make ns3`` / ``datapath/ns3/build.sh``)."""
    return binary() is not None


def _controller_arg(name: str, field: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"{field}: expected a controller name ({ALLOWED}), got {name!r}")
    text = name.strip()
    if text in TCP_KINDS:
        return text
    if text.startswith("fixed:"):
        try:
            mbps = float(text[len("fixed:"):])
        except ValueError:
            raise ValueError(f"{field}: {text!r}: fixed:MBPS needs a number, e.g. fixed:15") from None
        if not math.isfinite(mbps) or not 0 < mbps <= 100000:
            raise ValueError(f"{field}: {text!r}: the fixed rate must be in (0, 100000] Mbit/s")
        return f"fixed:{mbps!r}"
    raise ValueError(f"{field}: {text!r} has no ns-3 sender; allowed: {ALLOWED}")


def capacity_schedule(spec: Scenario, seed: int = 0) -> list[tuple[float, float]]:
    """The bottleneck's rate steps [(t_s, Mbit/s), ...] from t = 0 (random forms drawn from ``seed``).

    Raises:
      ValueError: a trace or Poisson link or a realism field (naming the field), or a rate below
        0.01 Mbit/s.
    """
    link = spec.link
    on = [k for k in REALISM_FIELDS if getattr(link, k)]
    if on:  # jitter, ACK aggregation, RTT noise and cross traffic exist only in the simulator
        raise ValueError(f"{spec.name}.link.{on[0]}: not modelled by the ns-3 reference (simulator only)")
    if link.trace is not None or link.poisson is not None:
        form = "trace" if link.trace is not None else "poisson"
        raise ValueError(f"{spec.name}.link.{form}: the ns-3 reference takes constant, schedule and "
                         "random_steps links only (a trace is delivery opportunities, not a rate)")
    cap = link.capacity(seed=seed, duration_s=spec.duration_s)
    sched = [(float(t), float(r) / units.MBPS) for t, r in zip(cap.times, cap.rates)
             if float(t) < spec.duration_s or float(t) == 0.0]
    for i, (t, mbps) in enumerate(sched):
        if not 0.01 <= mbps <= 100000:
            raise ValueError(f"{spec.name}.link: rate {mbps:g} Mbit/s at {t:g} s is outside the ns-3 "
                             "reference's [0.01, 100000] Mbit/s")
    return sched


def program_args(spec: Scenario, controllers: list[str], out_file: Path, seed: int = 0) -> list[str]:
    """The dumbbell's command line for ``spec`` with one controller per flow.

    Raises:
      ValueError: a controller, link form or buffer the reference cannot run (naming the field).
    """
    if len(controllers) != len(spec.flows):
        raise ValueError(f"{spec.name}: {len(controllers)} controllers for {len(spec.flows)} flows "
                         "(give one per flow)")
    if spec.link.buffer_bytes < PACKET_BYTES:
        raise ValueError(f"{spec.name}.link.buffer_bytes: must be >= {PACKET_BYTES} (one packet) for the "
                         f"ns-3 reference, got {spec.link.buffer_bytes:g}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    flows = []
    for i, (fl, ctrl) in enumerate(zip(spec.flows, controllers)):
        c = _controller_arg(ctrl, f"{spec.name}.flows[{i}].controller")
        flows.append(f"{c},{fl.rtt_ms!r},{fl.start_s!r},{fl.stop_s!r}")
    sched = capacity_schedule(spec, seed)
    rate = (f"--rate_mbps={sched[0][1]!r}" if len(sched) == 1
            else "--schedule=" + ",".join(f"{t!r}:{m!r}" for t, m in sched))
    return [f"--duration={spec.duration_s!r}", rate, f"--buffer_bytes={spec.link.buffer_bytes!r}",
            f"--loss={spec.link.loss!r}", "--flows=" + ";".join(flows), f"--seed={seed}",
            f"--bin_s={BIN_S!r}", f"--out={out_file}"]


def _busy_intervals(flows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for lo, hi in sorted((f["start_s"], f["stop_s"]) for f in flows):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def _mean_capacity(sched: list[tuple[float, float]], intervals: list[tuple[float, float]]) -> float:
    """Mean rate (Mbit/s) of the step schedule over the union of ``intervals``."""
    total = span = 0.0
    for lo, hi in intervals:
        span += hi - lo
        for i, (t, r) in enumerate(sched):
            end = sched[i + 1][0] if i + 1 < len(sched) else math.inf
            a, b = max(t, lo), min(end, hi)
            if b > a:
                total += r * (b - a)
    return total / span if span > 0 else float("nan")


def _window_goodput(flow: dict[str, Any], bin_s: float, window: tuple[float, float]) -> tuple[float, float]:
    """(Mbit/s, active s) of one flow inside ``window`` from its delivery bins (pro rata at edges)."""
    start, stop = flow["start_s"], flow["stop_s"]
    lo, hi = max(window[0], start), min(window[1], stop)
    active = max(hi - lo, 0.0)
    mbit = 0.0
    for j, b in enumerate(flow["bins_bytes"]):
        a0, a1 = start + j * bin_s, min(start + (j + 1) * bin_s, stop)
        ov = min(a1, hi) - max(a0, lo)
        if ov > 0 and a1 > a0:
            mbit += b * 8 / 1e6 * ov / (a1 - a0)
    return (mbit / active if active > 0 else 0.0), active


def record_from_output(spec: Scenario, controllers: list[str], raw: dict[str, Any],
                       sched: list[tuple[float, float]]) -> dict[str, Any]:
    """One results.json record from the dumbbell's JSON (``raw``)."""
    bin_s = raw["bin_s"]
    per_flow = []
    for fl, ctrl in zip(raw["flows"], controllers):
        series, t = [], 0.0
        active = fl["stop_s"] - fl["start_s"]
        for b in fl["bins_bytes"]:
            end = min(t + bin_s, active)
            series.append((end, b * 8 / 1e6 / (end - t)))
            t = end
        per_flow.append({
            "flow": fl["flow"], "controller": ctrl, "rtt_ms": fl["rtt_ms"], "start_s": fl["start_s"],
            "stop_s": fl["stop_s"], "impl": "ns3:" + fl["ns3_type"], "active_s": active,
            "throughput_mbps": fl["throughput_mbps"], "goodput_mbps": fl["goodput_mbps"],
            "p50_owd_ms": fl["owd"]["p50_ms"], "p95_owd_ms": fl["owd"]["p95_ms"],
            "mean_owd_ms": fl["owd"]["mean_ms"], "p95_qdelay_ms": fl["qdelay"]["p95_ms"],
            "loss": fl["loss"], "sent": fl["sent_packets"], "lost": fl["queue_drops"] + fl["random_losses"],
            "queue_drops": fl["queue_drops"], "random_losses": fl["random_losses"], "rto": fl["rto"],
            "rto_times_s": fl["rto_times_s"], "in_network_at_end": fl["in_network_at_end"],
            "series": series,
        })
    if len(per_flow) == 1:
        jain, note, jwin = 1.0, "single flow", None
    else:
        window = metrics.jain_window(spec.duration_s)
        got = [_window_goodput(fl, bin_s, window) for fl in raw["flows"]]
        jain, flows = metrics.jain_of_active([g[0] for g in got], [g[1] for g in got], window[1] - window[0])
        note, jwin = metrics.jain_note(window, flows), list(window)
    link = raw["link"]
    cap = _mean_capacity(sched, _busy_intervals(raw["flows"]))
    thr = link["throughput_mbps"]
    mean_owd = link["owd"]["mean_ms"]
    ctrls = sorted(set(controllers))
    return {
        "scenario": spec.name,
        "controller": ctrls[0] if len(ctrls) == 1 else "+".join(controllers),
        "throughput_mbps": thr,
        "utilization": thr / cap if cap > 0 else None,
        "capacity_mbps": cap,
        "p95_owd_ms": link["owd"]["p95_ms"],
        "p50_owd_ms": link["owd"]["p50_ms"],
        "mean_owd_ms": mean_owd,
        "p95_qdelay_ms": link["qdelay"]["p95_ms"],
        "loss": link["loss"],
        "power": metrics.power(thr, mean_owd / 1e3) if mean_owd else None,
        "jain": jain, "jain_note": note, "jain_window_s": jwin,
        "ankh": None,
        "per_flow": per_flow,
        "emulator": "ns-3.37",
        "duration_s": spec.duration_s,
        "capacity_schedule": [list(s) for s in sched],
        "seed": raw["seed"],
        "ns3_wall_s": raw["wall_s"],
    }


def run_scenario(spec: Scenario, controllers: list[str], out_dir: Path, seed: int = 0,
                 timeout_s: float = 1800.0) -> dict[str, Any]:
    """Runs ``spec`` on the ns-3 dumbbell with one controller per flow; returns its record.

    Writes OUT_DIR/ns3_raw.json (the program's output), ns3_cmd.txt (its command line) and
    record.json (the returned record).  Deterministic: the same spec, controllers and seed give
    the same record (``ns3_wall_s`` aside).

    Raises:
      ValueError: the scenario or a controller cannot run on the reference (names the field).
      Ns3Error: the program is not built, failed, or ran past ``timeout_s``.
    """
    args = program_args(spec, controllers, Path(out_dir) / "ns3_raw.json", seed)
    prog = binary()
    if prog is None:
        raise Ns3Error(f"{build_dir() / BINARY_NAME} is not built: run `make ns3` "
                       "(datapath/ns3/build.sh; Debian packages ns3 libns3-dev)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    raw_path = out_dir / "ns3_raw.json"
    raw_path.unlink(missing_ok=True)
    cmd = [str(prog), *args]
    (out_dir / "ns3_cmd.txt").write_text(" ".join(f"'{a}'" for a in cmd) + "\n")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise Ns3Error(f"{spec.name}: ns-3 ran past {timeout_s:g} s (see {out_dir / 'ns3_cmd.txt'})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise Ns3Error(f"{spec.name}: ns-3 failed: {last}")
    with open(raw_path) as f:
        raw = json.load(f)
    rec = record_from_output(spec, list(controllers), raw, capacity_schedule(spec, seed))
    rec["ns3_output"] = str(raw_path)
    with open(out_dir / "record.json", "w") as f:
        json.dump(metrics.json_safe(rec), f, indent=1, allow_nan=False)
    return rec
