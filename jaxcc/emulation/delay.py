"""Propagation delay of the netns link: the NFQUEUE delay tool ``datapath/tools/nfq_delay``.

The kernel here has no ``netem``, so delay comes from user space: iptables in the router
namespace hands every forwarded packet to an NFQUEUE, and ``nfq_delay`` holds it ``rtt/2``
before releasing it. Each flow gets its own queue pair (forward 2i+1, reverse 2i+2, matched by
the flow's port) so flows with different RTTs share one bottleneck; traffic of no flow (ping)
uses the pair 1000/1001 with the first flow's RTT. Random loss (iptables ``statistic``) is
added before the queues, like a lossy line in front of the bottleneck.
"""
from __future__ import annotations

import subprocess
from typing import Any

from jaxcc.emulation.host import TCP_PORT_BASE, TOOLS_BUILD, UDP_PORT_BASE, EmulationError

Q_DEFAULT_FWD, Q_DEFAULT_REV = 1000, 1001  # NFQUEUE numbers for traffic of no flow (ping)


def queue_args(rtts_ms: list[float]) -> list[str]:
    """nfq_delay's --queue=NUM:ONE_WAY_MS arguments for flows of these RTTs."""
    default_rtt = rtts_ms[0]
    qspecs = [f"--queue={Q_DEFAULT_FWD}:{default_rtt / 2:.4f}",
              f"--queue={Q_DEFAULT_REV}:{default_rtt / 2:.4f}"]
    for i, rtt in enumerate(rtts_ms):
        qspecs += [f"--queue={2 * i + 1}:{rtt / 2:.4f}", f"--queue={2 * i + 2}:{rtt / 2:.4f}"]
    return qspecs


def start(link: Any, rtts_ms: list[float]) -> subprocess.Popen:
    """Starts nfq_delay in the link's router namespace; returns once it has bound every queue.

    Its per-queue statistics go to OUT/nfq_delay_stats.json when it stops (``health_warnings``).
    """
    nfq = link.spawn(link.ns_rtr, [TOOLS_BUILD / "nfq_delay", *queue_args(rtts_ms),
                                   "--rt=10", f"--stats={link.out_dir / 'nfq_delay_stats.json'}"],
                     stdout=subprocess.PIPE, text=True,
                     stderr=open(link.out_dir / "nfq_delay.stderr", "w"))
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
