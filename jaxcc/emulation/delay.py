"""Propagation delay of the netns link: the NFQUEUE delay tool ``datapath/tools/nfq_delay``.

The kernel here has no ``netem``, so delay comes from user space: iptables in the router
namespace hands every forwarded packet to an NFQUEUE, and ``nfq_delay`` holds it ``rtt/2``
before releasing it. Each flow gets its own queue pair (forward 2i+1, reverse 2i+2, matched by
the flow's port) so flows with different RTTs share one bottleneck; traffic of no flow (ping)
uses the pair 1000/1001 with the first flow's RTT. Random loss (iptables ``statistic``) is
added before the queues, like a lossy line in front of the bottleneck.

The delay line checks itself (``delay_check``): ``nfq_delay`` measures every packet's actual
hold against its queue's configured delay from the kernel's receive stamp of the packet (so a
late wake-up or a late read shows), and the harness samples tbf's dequeue rate against the
schedule while tbf has a backlog (``netns.TbfSampler``). A run whose p95 hold error exceeds
``MAX_P95_HOLD_ERR_MS`` (or whose tbf rate misses the schedule by more than
``MAX_TBF_RATE_REL_ERR``, or whose delay line dropped packets) is marked invalid: the machine
did not keep time, and its numbers say nothing about the controller or the model.
"""
from __future__ import annotations

import dataclasses
import subprocess
from typing import Any

from jaxcc.emulation.host import TCP_PORT_BASE, TOOLS_BUILD, UDP_PORT_BASE, EmulationError

Q_DEFAULT_FWD, Q_DEFAULT_REV = 1000, 1001  # NFQUEUE numbers for traffic of no flow (ping)

# Validity thresholds of an emulated run (the fidelity tolerances: a run whose p95 delay error
# exceeds 2 ms is marked invalid). The tbf bound: a bottleneck that misses its rate by 2% uses up
# almost half of sim-to-real's 5% throughput bound by itself.
MAX_P95_HOLD_ERR_MS = 2.0
MAX_TBF_RATE_REL_ERR = 0.02
# A queue's own p95 counts once it has released this many packets (the ping queues hold ~6).
MIN_QUEUE_PACKETS = 100


@dataclasses.dataclass(frozen=True)
class DelayOptions:
    """How nfq_delay runs (the levers of its timing; see datapath/tools/nfq_delay.c).

    rt: SCHED_FIFO priority (0: normal scheduling); cpu: pin to this CPU (None: any);
    arrival: "kernel" (deadlines from the kernel's receive stamp) or "read" (from our read
    time, the old behaviour); stall: (every_ms, stall_ms) TEST KNOB only, starves the queues
    for stall_ms every every_ms so tests can show the self-check catching a late delay line.
    """
    rt: int = 10
    cpu: int | None = None
    arrival: str = "kernel"
    stall: tuple[float, float] | None = None

    def args(self) -> list[str]:
        if self.arrival not in ("kernel", "read"):
            raise EmulationError(f"DelayOptions.arrival: must be 'kernel' or 'read', got {self.arrival!r}")
        out = [f"--rt={int(self.rt)}", f"--arrival={self.arrival}"]
        if self.cpu is not None:
            out.append(f"--cpu={int(self.cpu)}")
        if self.stall is not None:
            every, stall = self.stall
            if not 0 < stall < every:
                raise EmulationError(f"DelayOptions.stall: want 0 < stall_ms < every_ms, got {self.stall}")
            out.append(f"--stall={every:g}:{stall:g}")
        return out


def queue_args(rtts_ms: list[float]) -> list[str]:
    """nfq_delay's --queue=NUM:ONE_WAY_MS arguments for flows of these RTTs."""
    default_rtt = rtts_ms[0]
    qspecs = [f"--queue={Q_DEFAULT_FWD}:{default_rtt / 2:.4f}",
              f"--queue={Q_DEFAULT_REV}:{default_rtt / 2:.4f}"]
    for i, rtt in enumerate(rtts_ms):
        qspecs += [f"--queue={2 * i + 1}:{rtt / 2:.4f}", f"--queue={2 * i + 2}:{rtt / 2:.4f}"]
    return qspecs


def start(link: Any, rtts_ms: list[float], opts: DelayOptions | None = None) -> subprocess.Popen:
    """Starts nfq_delay in the link's router namespace; returns once it has bound every queue.

    Its per-queue statistics go to OUT/nfq_delay_stats.json when it stops (``check``,
    ``health_warnings``).
    """
    opts = opts or DelayOptions()
    nfq = link.spawn(link.ns_rtr, [TOOLS_BUILD / "nfq_delay", *queue_args(rtts_ms), *opts.args(),
                                   f"--stats={link.out_dir / 'nfq_delay_stats.json'}"],
                     stdout=subprocess.PIPE, text=True,
                     stderr=link.out_dir / "nfq_delay.stderr")
    line = nfq.stdout.readline()   # blocks until it has bound every queue (or died)
    if line.strip() != "ready":
        nfq.wait(timeout=5)
        err = (link.out_dir / "nfq_delay.stderr").read_text()
        raise EmulationError(f"nfq_delay did not start: {line!r} {err}")
    return nfq


def add_rules(link: Any, n_flows: int, loss: float) -> None:
    """The router's FORWARD rules: random loss (forward path), then each flow's queue pair."""
    p = link.prefix
    ipt = ["iptables", "-w"]
    fwd = ["-i", f"{p}-sb", "-o", f"{p}-db"]
    rev = ["-i", f"{p}-db", "-o", f"{p}-sb"]
    # random loss on the forward (data) path, before the queue like a lossy line
    if loss > 0:
        link.sh(link.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-m", "statistic", "--mode",
                                    "random", "--probability", f"{loss:.6f}", "-j", "DROP"])
    for i in range(n_flows):
        for proto, port in (("udp", UDP_PORT_BASE + i), ("tcp", TCP_PORT_BASE + i)):
            link.sh(link.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-p", proto, "--dport",
                                        str(port), "-j", "NFQUEUE", "--queue-num", str(2 * i + 1)])
            link.sh(link.ns_rtr, ipt + ["-A", "FORWARD", *rev, "-p", proto, "--sport",
                                        str(port), "-j", "NFQUEUE", "--queue-num", str(2 * i + 2)])
    link.sh(link.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-j", "NFQUEUE", "--queue-num",
                                str(Q_DEFAULT_FWD)])
    link.sh(link.ns_rtr, ipt + ["-A", "FORWARD", *rev, "-j", "NFQUEUE", "--queue-num",
                                str(Q_DEFAULT_REV)])


def health_warnings(stats: dict[str, Any] | None) -> list[str]:
    """Flags runs whose delay tool fell behind (a busy machine), so numbers can be judged."""
    out = []
    for q in (stats or {}).get("queues", []):
        if q.get("dropped_full"):
            out.append(f"nfq_delay queue {q['queue']} dropped {q['dropped_full']} packets (full)")
        if q.get("packets", 0) > 100 and q.get("mean_late_us", 0) > 1000:
            out.append(f"nfq_delay queue {q['queue']} released {q['mean_late_us']:.0f} us late "
                       f"on average (max {q['max_late_us'] / 1000:.1f} ms): machine overloaded?")
    return out


def _ms(h: dict[str, Any] | None) -> dict[str, Any] | None:
    """nfq_delay's histogram summary (us) in ms."""
    if not h or not h.get("n"):
        return None
    return {"n": h["n"], **{k: h[k] / 1000.0 for k in ("p50", "p95", "p99", "max", "mean") if k in h}}


def check(stats: dict[str, Any] | None, tbf_rate: dict[str, Any] | None,
          max_p95_ms: float = MAX_P95_HOLD_ERR_MS,
          max_rate_err: float = MAX_TBF_RATE_REL_ERR) -> dict[str, Any]:
    """The run's ``delay_check``: measured delay-line and bottleneck errors and the verdict.

    stats: nfq_delay's stats file (version 2: hold-error histograms); tbf_rate:
    ``netns.tbf_rate_error`` of the run (None when not sampled). ``valid`` is None when the
    hold errors were not measured (no stats, or an nfq_delay without the self-check), False
    when the overall p95 hold error, or that of any queue with at least MIN_QUEUE_PACKETS
    packets, exceeds max_p95_ms, when tbf's rate missed the schedule by more than
    max_rate_err (relative, over the intervals with a backlog), or when the delay line dropped
    packets because its ring was full; True otherwise. ``reasons`` says why, with numbers.
    """
    out: dict[str, Any] = {"valid": None, "reasons": [],
                           "thresholds": {"p95_hold_err_ms": max_p95_ms,
                                          "tbf_rate_rel_err": max_rate_err,
                                          "min_queue_packets": MIN_QUEUE_PACKETS},
                           "tbf_rate": tbf_rate}
    overall = (stats or {}).get("overall")
    if not overall or "hold_err_us" not in overall:
        out["reasons"].append("delay line not self-checked (no hold-error statistics from nfq_delay)")
        return out
    out["source"] = "nfq_delay: verdict time - kernel receive stamp - configured delay"
    out["sched"] = f"{stats.get('sched')}:{stats.get('sched_priority')}"
    out["cpu"], out["arrival"] = stats.get("cpu"), stats.get("arrival")
    if stats.get("stall_ms"):
        out["test_stall"] = {"every_ms": stats.get("stall_every_ms"), "stall_ms": stats["stall_ms"],
                             "stalls": stats.get("stalls")}
    released = overall.get("released", 0)
    out["kstamped_fraction"] = overall.get("kstamped", 0) / released if released else None
    out["hold_err_ms"] = _ms(overall["hold_err_us"])
    out["read_late_ms"] = _ms(overall.get("read_late_us"))
    out["per_queue"] = [{"queue": q["queue"], "delay_ms": q["delay_ms"],
                         "hold_err_ms": _ms(q.get("hold_err_us")),
                         "read_late_ms": _ms(q.get("read_late_us")),
                         "dropped_full": q.get("dropped_full", 0)}
                        for q in stats.get("queues", [])]
    bad = []
    if out["hold_err_ms"] and out["hold_err_ms"]["p95"] > max_p95_ms:
        bad.append(f"p95 hold error {out['hold_err_ms']['p95']:.2f} ms > {max_p95_ms:g} ms "
                   f"(max {out['hold_err_ms']['max']:.1f} ms, {released} packets)")
    for q in out["per_queue"]:
        h = q["hold_err_ms"]
        if h and h["n"] >= MIN_QUEUE_PACKETS and h["p95"] > max_p95_ms:
            bad.append(f"queue {q['queue']}: p95 hold error {h['p95']:.2f} ms > {max_p95_ms:g} ms")
    if overall.get("dropped_full"):
        bad.append(f"delay line dropped {overall['dropped_full']} packets (ring full)")
    if tbf_rate and tbf_rate.get("rel_err") is not None and abs(tbf_rate["rel_err"]) > max_rate_err:
        bad.append(f"tbf dequeue rate {100 * tbf_rate['rel_err']:+.1f}% off the schedule "
                   f"(> {100 * max_rate_err:g}%, over {tbf_rate['seconds']:.1f} s with a backlog)")
    out["valid"] = not bad
    out["reasons"] = bad
    return out
