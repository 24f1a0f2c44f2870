"""Emulated-link harness: run jaxcc controllers on real packets across a Linux emulated link.

    python -m jaxcc.emulate --scenario=NAME | --scenario-file=spec.json \\
        --controller=policy:FILE|bbr|fixed:MBPS|kernel:cubic|kernel:bbr[,...] --out=DIR
    python -m jaxcc.emulate --suite=pareto --controller=policy:F,kernel:cubic --out=DIR
    python -m jaxcc.emulate --cleanup          # remove leftovers of killed runs

Topology (one set per run; names carry a unique prefix so parallel runs never collide)::

    [PREFIX-snd] sa 10.77.1.1 ── sb 10.77.1.2 [PREFIX-rtr] db 10.77.2.1 ── da 10.77.2.2 [PREFIX-rcv]
                                     FORWARD: loss (iptables statistic), delay (NFQUEUE ->
                                     nfq_delay), then egress db: tbf bottleneck (rate + bytes)

Why it is built this way (see ../shared/EMULATION.md for the measurements):

* The bottleneck sits in a *router* namespace. Shaping on the sender's own interface pushes
  back on its socket (EAGAIN) instead of dropping, which hides loss.
* The kernel has no ``netem``, so propagation delay comes from ``datapath/tools/nfq_delay``
  (user space, NFQUEUE): each flow gets its own queue pair (forward, reverse) holding packets
  ``rtt/2`` each way, so flows with different RTTs can share one bottleneck.
* TSO/GSO/GRO are off on every veth so tbf sees real packets, not 64 KB super-packets.
* Link rates and buffers count IP packets (a 1500-byte packet is one unit of the simulator's
  MSS and one Mahimahi delivery opportunity). tbf counts what it dequeues on the veth, the
  Ethernet frame, 14 bytes more per packet (a UDP payload of P bytes is a P+42 byte frame), so
  the tbf rate and limit are scaled by (1500+14)/1500.
* Bandwidth schedules use ``tc qdisc change ... tbf rate X``, which keeps queued packets;
  changes fire against absolute deadlines from one start time, never chained sleeps, and the
  lateness of every change is recorded.
* Every iptables rule, qdisc and veth lives inside the namespaces this run creates, so
  deleting the namespaces (after killing every process we started in them) removes all of it.

Results go to ``DIR/results.json`` in the shared contract (one record per scenario x
controller), with per-flow detail, plus plots.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOOLS_BUILD = REPO / "datapath" / "tools" / "build"
DATAPATH_BUILD = REPO / "datapath" / "build"

PREFIX_BASE = "jxe"           # every namespace / veth of this harness starts with it
MSS = 1500                    # bytes of one IP packet (the simulator's packet)
ETH_HEADER = 14               # bytes tbf counts on top of the IP packet on a veth
TBF_SCALE = (MSS + ETH_HEADER) / MSS
MIN_RATE_MBPS = 0.01          # tbf cannot do 0; trace gaps get this
# tbf bucket depth in seconds of the current rate (at least two full frames). A deeper bucket
# sends small bursts back to back; a shallow one loses capacity whenever tbf's timer fires
# late (tokens beyond the bucket are thrown away), which happens on busy, shared machines.
TBF_BURST_S = 0.001
UDP_PORT_BASE = 9000          # flow i uses UDP port 9000+i
TCP_PORT_BASE = 5201          # flow i uses iperf3 port 5201+i
Q_DEFAULT_FWD, Q_DEFAULT_REV = 1000, 1001  # NFQUEUE numbers for traffic of no flow (ping)

SND_IP, RTR_S_IP, RTR_D_IP, RCV_IP = "10.77.1.1", "10.77.1.2", "10.77.2.1", "10.77.2.2"

# tool -> Debian package, for the error message when it is missing
REQUIRED_TOOLS = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables",
                  "ethtool": "ethtool"}
OPTIONAL_TOOLS = {"iperf3": "iperf3", "ping": "iputils-ping"}


class EmulationError(RuntimeError):
    """A precondition of the harness is not met (root, tools, binaries, scenario)."""


# ----------------------------------------------------------------------------- preconditions

def missing_requirements(need_iperf3: bool = False) -> list[str]:
    """Returns human-readable reasons the harness cannot run here (empty if it can)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, tc, iptables)")
    tools = dict(REQUIRED_TOOLS)
    if need_iperf3:
        tools["iperf3"] = "iperf3"
    for tool, pkg in tools.items():
        if shutil.which(tool) is None:
            problems.append(f"'{tool}' not found: apt-get install {pkg}")
    if not (TOOLS_BUILD / "nfq_delay").exists():
        problems.append(f"{TOOLS_BUILD / 'nfq_delay'} not built: run datapath/tools/build.sh "
                        "(needs apt-get install libnetfilter-queue-dev)")
    return problems


def check_requirements(need_iperf3: bool = False) -> None:
    problems = missing_requirements(need_iperf3)
    if problems:
        raise EmulationError("cannot run the emulation:\n  " + "\n  ".join(problems))


def sender_binary() -> Path | None:
    p = DATAPATH_BUILD / "jaxcc-sender"
    return p if p.exists() else None


def receiver_binary() -> Path | None:
    p = DATAPATH_BUILD / "jaxcc-receiver"
    return p if p.exists() else None


# ----------------------------------------------------------------------------- scenarios

# Small built-in scenarios for the harness itself (used when jaxcc.scenarios does not know the
# name). Same dict spec as the contract.
BUILTIN_SCENARIOS: dict[str, dict[str, Any]] = {
    "emu/fixed12": {"name": "emu/fixed12", "duration_s": 20.0,
                    "link": {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0},
                    "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 20.0,
                               "controller": "bbr"}]},
    "emu/step": {"name": "emu/step", "duration_s": 20.0,
                 "link": {"schedule": [[0, 12.0], [5, 6.0], [10, 24.0], [15, 12.0]],
                          "buffer_bytes": 150000, "loss": 0.0},
                 "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 20.0,
                            "controller": "bbr"}]},
    "emu/two_flows": {"name": "emu/two_flows", "duration_s": 30.0,
                      "link": {"bandwidth_mbps": 24.0, "buffer_bytes": 300000, "loss": 0.0},
                      "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 30.0,
                                 "controller": "bbr"},
                                {"rtt_ms": 80.0, "start_s": 10.0, "stop_s": 30.0,
                                 "controller": "kernel:cubic"}]},
}


def _to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {k: _to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_plain(v) for v in obj]
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return obj


def normalize_spec(spec: Any) -> dict[str, Any]:
    """A contract scenario dict with defaults filled; raises EmulationError if it is wrong.

    Accepts a dict or a jaxcc.scenarios.Scenario. Random capacity forms (random_steps,
    poisson) are drawn once here, through jaxcc.scenarios (seed 0, as the evaluator does),
    and kept as an explicit "schedule" so every controller sees the same link.
    """
    scenario_obj = None
    if hasattr(spec, "to_dict") and hasattr(spec, "link"):
        scenario_obj, spec = spec, spec.to_dict()
    spec = _to_plain(spec)
    try:
        link = dict(spec["link"])
        flows = [dict(f) for f in spec["flows"]]
        duration = float(spec["duration_s"])
    except (KeyError, TypeError) as e:
        raise EmulationError(f"scenario spec missing {e}") from e
    if link.get("random_steps") is not None or link.get("poisson") is not None:
        if scenario_obj is None:
            from jaxcc import scenarios as _sc
            try:
                scenario_obj = _sc.parse_scenario(spec)
            except ValueError as e:
                raise EmulationError(str(e)) from e
        cap = scenario_obj.link.capacity(seed=0, duration_s=duration)
        link = {"schedule": [[float(t), float(r) * 8 / 1e6]
                             for t, r in zip(cap.times, cap.rates) if t < duration],
                "buffer_bytes": link["buffer_bytes"], "loss": link.get("loss", 0.0)}
    kinds = [k for k in ("bandwidth_mbps", "schedule", "trace") if link.get(k) is not None]
    if len(kinds) != 1:
        raise EmulationError(f"link needs exactly one of bandwidth_mbps|schedule|trace, got {kinds}")
    if "buffer_bytes" not in link or int(link["buffer_bytes"]) < MSS:
        raise EmulationError("link.buffer_bytes missing or smaller than one packet")
    link["buffer_bytes"] = int(link["buffer_bytes"])
    link["loss"] = float(link.get("loss", 0.0) or 0.0)
    if not 0.0 <= link["loss"] < 1.0:
        raise EmulationError("link.loss must be in [0, 1)")
    if not flows:
        raise EmulationError("scenario has no flows")
    for i, f in enumerate(flows):
        f["rtt_ms"] = float(f["rtt_ms"])
        f["start_s"] = float(f.get("start_s", 0.0))
        f["stop_s"] = float(f.get("stop_s", duration))
        f.setdefault("controller", "bbr")
        if not 0 <= f["start_s"] < f["stop_s"] <= duration + 1e-9:
            raise EmulationError(f"flow {i}: need 0 <= start_s < stop_s <= duration_s")
    return {"name": str(spec.get("name", "scenario")), "duration_s": duration,
            "link": link, "flows": flows}


def load_spec(name: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Loads a scenario as a contract dict, validated by jaxcc.scenarios when available."""
    try:
        from jaxcc import scenarios as _sc
    except ImportError:   # the harness also works without the JAX side installed
        _sc = None
    try:
        if path is not None:
            if _sc is not None:
                return normalize_spec(_sc.load_scenario(path))
            with open(path) as f:
                return normalize_spec(json.load(f))
        assert name is not None
        if name in BUILTIN_SCENARIOS:
            return normalize_spec(BUILTIN_SCENARIOS[name])
        if _sc is not None:
            return normalize_spec(_sc.get_scenario(name))
    except (ValueError, OSError) as e:
        raise EmulationError(str(e)) from e
    raise EmulationError(f"unknown scenario {name!r} (built-ins: {sorted(BUILTIN_SCENARIOS)})")


def bandwidth_schedule(link: dict[str, Any], duration_s: float,
                       trace_bin_s: float = 0.1) -> list[tuple[float, float]]:
    """The link's capacity as [(t_s, mbps), ...], starting at t=0, merged where equal.

    Traces are binned at trace_bin_s (default 100 ms, coarser than the simulator's 10 ms):
    every ``tc qdisc change`` refills tbf's bucket, so very frequent changes would add up to
    one bucket (>= 2 packets) of extra capacity per change.
    """
    if link.get("bandwidth_mbps") is not None:
        sched = [(0.0, float(link["bandwidth_mbps"]))]
    elif link.get("schedule") is not None:
        sched = sorted((float(t), float(r)) for t, r in link["schedule"])
        if sched[0][0] > 0:
            sched.insert(0, (0.0, sched[0][1]))
    else:
        sched = trace_to_schedule(read_trace(_resolve_trace(link["trace"])), duration_s,
                                  trace_bin_s)
    seg = [b[0] - a[0] for a, b in zip(sched, sched[1:]) if b[0] < duration_s]
    if seg and min(seg) < trace_bin_s - 1e-9:   # e.g. Poisson 10 ms slots: average per bin
        sched = [(i * trace_bin_s, mean_capacity_mbps(sched, i * trace_bin_s,
                                                      (i + 1) * trace_bin_s))
                 for i in range(int(math.ceil(duration_s / trace_bin_s)))]
    out: list[tuple[float, float]] = []
    for t, r in sched:
        r = max(r, MIN_RATE_MBPS)
        if t >= duration_s and out:
            break
        if out and abs(out[-1][1] - r) < 1e-9:
            continue
        out.append((t, r))
    return out


def _resolve_trace(path: str) -> str:
    if os.path.isfile(path):
        return path
    with contextlib.suppress(Exception):
        from jaxcc import scenarios as _sc
        return _sc.find_trace(path)
    raise EmulationError(f"trace {path} not found")


def read_trace(path: str | os.PathLike) -> list[int]:
    """Reads a Mahimahi trace: one ms timestamp per line, one 1500-byte opportunity each."""
    with open(path) as f:
        ts = [int(line) for line in f if line.strip()]
    if not ts:
        raise EmulationError(f"trace {path} is empty")
    return ts


def trace_to_schedule(ts_ms: list[int], duration_s: float,
                      bin_s: float = 0.1) -> list[tuple[float, float]]:
    """Bins delivery opportunities into a rate schedule; the trace loops at its last stamp."""
    period_ms = max(ts_ms[-1], 1)
    bin_ms = bin_s * 1000.0
    n_bins = int(math.ceil(duration_s / bin_s))
    counts = [0] * n_bins
    loops = int(math.ceil(duration_s * 1000.0 / period_ms)) + 1
    for k in range(loops):
        base = k * period_ms
        for t in ts_ms:
            b = int((base + t) // bin_ms)
            if b >= n_bins:
                break
            counts[b] += 1
    return [(i * bin_s, c * MSS * 8 / bin_s / 1e6) for i, c in enumerate(counts)]


def mean_capacity_mbps(sched: list[tuple[float, float]], t0: float, t1: float) -> float:
    total = 0.0
    for i, (t, r) in enumerate(sched):
        end = sched[i + 1][0] if i + 1 < len(sched) else math.inf
        lo, hi = max(t, t0), min(end, t1)
        if hi > lo:
            total += r * (hi - lo)
    return total / max(t1 - t0, 1e-9)


# ----------------------------------------------------------------------------- shell helpers

def _run(cmd: list[str], check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise EmulationError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def tbf_args(rate_mbps: float, buffer_bytes: int) -> list[str]:
    """tbf parameters for a link of rate_mbps (IP bytes) with a buffer of buffer_bytes (IP)."""
    rate_bps = max(rate_mbps, MIN_RATE_MBPS) * 1e6 * TBF_SCALE
    # burst: TBF_BURST_S at this rate but at least two full frames (tbf drops frames > burst)
    burst = max(2 * (MSS + ETH_HEADER), int(rate_bps / 8 * TBF_BURST_S))
    limit = max(MSS + ETH_HEADER, int(buffer_bytes * TBF_SCALE))
    return ["rate", f"{int(rate_bps)}bit", "burst", str(burst), "limit", str(limit)]


def new_prefix() -> str:
    return PREFIX_BASE + secrets.token_hex(3)   # 9 chars; "PREFIX-sa" fits IFNAMSIZ (15)


# ----------------------------------------------------------------------------- the link

class EmulatedLink:
    """Namespaces + veths + router (tbf, loss, delay) and every process started inside.

    Use as a context manager; close() is idempotent and runs on exceptions and signals.
    """

    def __init__(self, prefix: str | None = None, out_dir: str | os.PathLike = ".",
                 verbose: bool = False):
        self.prefix = prefix or new_prefix()
        self.ns_snd, self.ns_rtr, self.ns_rcv = (f"{self.prefix}-snd", f"{self.prefix}-rtr",
                                                 f"{self.prefix}-rcv")
        self.out_dir = Path(out_dir)
        self.verbose = verbose
        self.procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self.bottleneck_dev = f"{self.prefix}-db"
        self.buffer_bytes = 0
        self.schedule_log: list[dict[str, float]] = []
        self._tc: subprocess.Popen | None = None
        self._closed = False

    # -- process management
    def ns_cmd(self, ns: str, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", ns] + [str(c) for c in cmd]

    def sh(self, ns: str | None, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
        full = self.ns_cmd(ns, cmd) if ns else [str(c) for c in cmd]
        if self.verbose:
            print("+", " ".join(full), file=sys.stderr)
        return _run(full, check=check)

    def spawn(self, ns: str, cmd: list[str], stdout=None, stderr=None, nice: int | None = None,
              **kw) -> subprocess.Popen:
        if nice:
            cmd = ["nice", "-n", str(nice)] + list(cmd)
        full = self.ns_cmd(ns, cmd)
        if self.verbose:
            print("&", " ".join(full), file=sys.stderr)
        with self._lock:
            if self._closed:
                raise EmulationError("link already closed")
            # own session: we can signal the whole process group at cleanup
            p = subprocess.Popen(full, stdout=stdout if stdout is not None else subprocess.DEVNULL,
                                 stderr=stderr if stderr is not None else subprocess.DEVNULL,
                                 start_new_session=True, **kw)
            self.procs.append(p)
        return p

    # -- setup
    def setup(self, flows: list[dict[str, Any]], rate_mbps: float, buffer_bytes: int,
              loss: float, default_rtt_ms: float | None = None) -> None:
        """Builds the three namespaces and the bottleneck. flows: [{'rtt_ms': ...}, ...]."""
        p = self.prefix
        for ns in (self.ns_snd, self.ns_rtr, self.ns_rcv):
            self.sh(None, ["ip", "netns", "add", ns])
        # veths are created straight inside their namespaces (nothing appears in the root ns)
        self.sh(None, ["ip", "link", "add", f"{p}-sa", "netns", self.ns_snd, "type", "veth",
                       "peer", "name", f"{p}-sb", "netns", self.ns_rtr])
        self.sh(None, ["ip", "link", "add", f"{p}-db", "netns", self.ns_rtr, "type", "veth",
                       "peer", "name", f"{p}-da", "netns", self.ns_rcv])
        addrs = [(self.ns_snd, f"{p}-sa", SND_IP), (self.ns_rtr, f"{p}-sb", RTR_S_IP),
                 (self.ns_rtr, f"{p}-db", RTR_D_IP), (self.ns_rcv, f"{p}-da", RCV_IP)]
        for ns, dev, ip in addrs:
            self.sh(ns, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
            self.sh(ns, ["ip", "addr", "add", f"{ip}/24", "dev", dev])
            self.sh(ns, ["ip", "link", "set", dev, "up"])
            # real packets for tbf and for the receiver's per-packet timestamps
            self.sh(ns, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"],
                    check=False)
        for ns in (self.ns_snd, self.ns_rtr, self.ns_rcv):
            self.sh(ns, ["ip", "link", "set", "lo", "up"])
        self.sh(self.ns_snd, ["ip", "route", "add", "default", "via", RTR_S_IP])
        self.sh(self.ns_rcv, ["ip", "route", "add", "default", "via", RTR_D_IP])
        self.sh(self.ns_rtr, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])

        # bottleneck: tbf on the router's egress towards the receiver
        self.buffer_bytes = buffer_bytes
        self.sh(self.ns_rtr, ["tc", "qdisc", "add", "dev", self.bottleneck_dev, "root",
                              "handle", "1:", "tbf"] + tbf_args(rate_mbps, buffer_bytes))

        # propagation delay: nfq_delay with one queue pair per flow (+ one for other traffic)
        default_rtt = default_rtt_ms if default_rtt_ms is not None else flows[0]["rtt_ms"]
        qspecs = [f"--queue={Q_DEFAULT_FWD}:{default_rtt / 2:.4f}",
                  f"--queue={Q_DEFAULT_REV}:{default_rtt / 2:.4f}"]
        for i, f in enumerate(flows):
            qspecs += [f"--queue={2 * i + 1}:{f['rtt_ms'] / 2:.4f}",
                       f"--queue={2 * i + 2}:{f['rtt_ms'] / 2:.4f}"]
        nfq = self.spawn(self.ns_rtr, [TOOLS_BUILD / "nfq_delay", *qspecs, "--rt=10",
                                       f"--stats={self.out_dir / 'nfq_delay_stats.json'}"],
                         stdout=subprocess.PIPE, text=True,
                         stderr=open(self.out_dir / "nfq_delay.stderr", "w"))
        line = nfq.stdout.readline()   # blocks until it has bound every queue (or died)
        if line.strip() != "ready":
            nfq.wait(timeout=5)
            err = (self.out_dir / "nfq_delay.stderr").read_text()
            raise EmulationError(f"nfq_delay did not start: {line!r} {err}")
        self.nfq_proc = nfq

        ipt = ["iptables", "-w"]
        fwd = ["-i", f"{p}-sb", "-o", f"{p}-db"]
        rev = ["-i", f"{p}-db", "-o", f"{p}-sb"]
        # random loss on the forward (data) path, before the queue like a lossy line
        if loss > 0:
            self.sh(self.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-m", "statistic", "--mode",
                                        "random", "--probability", f"{loss:.6f}", "-j", "DROP"])
        for i, _ in enumerate(flows):
            for proto, port in (("udp", UDP_PORT_BASE + i), ("tcp", TCP_PORT_BASE + i)):
                self.sh(self.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-p", proto, "--dport",
                                            str(port), "-j", "NFQUEUE", "--queue-num",
                                            str(2 * i + 1)])
                self.sh(self.ns_rtr, ipt + ["-A", "FORWARD", *rev, "-p", proto, "--sport",
                                            str(port), "-j", "NFQUEUE", "--queue-num",
                                            str(2 * i + 2)])
        self.sh(self.ns_rtr, ipt + ["-A", "FORWARD", *fwd, "-j", "NFQUEUE", "--queue-num",
                                    str(Q_DEFAULT_FWD)])
        self.sh(self.ns_rtr, ipt + ["-A", "FORWARD", *rev, "-j", "NFQUEUE", "--queue-num",
                                    str(Q_DEFAULT_REV)])

    def set_rate(self, rate_mbps: float) -> None:
        """Changes the bottleneck rate now (tc qdisc change keeps the queued packets).

        A long-lived ``tc -batch -`` inside the router takes the commands, so a change costs
        a pipe write instead of a fork/exec of ``ip netns exec tc`` (5-15 ms here, and
        variable). Each change is followed by a ``qdisc show`` whose output line tells us
        the change is done, which is what the lateness log records.
        """
        cmd = " ".join(["qdisc", "change", "dev", self.bottleneck_dev, "root", "handle", "1:",
                        "tbf"] + tbf_args(rate_mbps, self.buffer_bytes))
        if self._tc is None:
            self._tc = self.spawn(self.ns_rtr, ["stdbuf", "-oL", "tc", "-batch", "-"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.out_dir / "tc_batch.stderr", "w"),
                                  text=True, bufsize=1)
        try:
            self._tc.stdin.write(cmd + "\n" + f"qdisc show dev {self.bottleneck_dev}\n")
            self._tc.stdin.flush()
            line = self._tc.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise EmulationError(f"tc batch died: {e}") from e
        if not line.startswith("qdisc tbf"):
            raise EmulationError(f"tc qdisc change failed ({cmd}): "
                                 f"{(self.out_dir / 'tc_batch.stderr').read_text()}")

    def ping(self, count: int = 5, interval: float = 0.2) -> dict[str, float] | None:
        if shutil.which("ping") is None:
            return None
        # one unmeasured ping first: it resolves ARP on both hops
        self.sh(self.ns_snd, ["ping", "-n", "-q", "-c", "1", "-W", "2", RCV_IP], check=False)
        p = self.sh(self.ns_snd, ["ping", "-n", "-q", "-c", str(count), "-i", str(interval),
                                  "-W", "2", RCV_IP], check=False)
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", p.stdout)
        if not m:
            return None
        return {"min_ms": float(m.group(1)), "avg_ms": float(m.group(2)),
                "max_ms": float(m.group(3)), "mdev_ms": float(m.group(4))}

    def qdisc_stats(self) -> str:
        return self.sh(self.ns_rtr, ["tc", "-s", "qdisc", "show", "dev", self.bottleneck_dev],
                       check=False).stdout

    # -- teardown
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            procs = list(self.procs)
        for p in procs:
            _terminate(p)
        for ns in (self.ns_snd, self.ns_rtr, self.ns_rcv):
            cleanup_namespace(ns)

    def __enter__(self) -> "EmulatedLink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _terminate(p: subprocess.Popen, timeout: float = 3.0) -> None:
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=timeout)


def cleanup_namespace(ns: str) -> None:
    """Kills whatever still runs in ns, then deletes it (with its veths, qdiscs, rules)."""
    p = _run(["ip", "netns", "pids", ns], check=False)
    pids = [int(x) for x in p.stdout.split()] if p.returncode == 0 else []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
                alive.append(pid)
        if not alive:
            break
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            pids = [pid for pid in alive if _pid_alive(pid)]
            if not pids:
                break
            time.sleep(0.05)
    _run(["ip", "netns", "del", ns], check=False)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(") ")[-1].startswith("Z"):
                return False
    return True


def list_leftovers(prefix: str = PREFIX_BASE) -> dict[str, list[str]]:
    nss = [line.split()[0] for line in _run(["ip", "netns", "list"], check=False).stdout.splitlines()
           if line.strip().startswith(prefix)]
    links = []
    for line in _run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        m = re.match(r"\d+: ([^:@]+)", line)
        if m and m.group(1).startswith(prefix):
            links.append(m.group(1))
    return {"namespaces": nss, "links": links}


def cleanup_leftovers(prefix: str = PREFIX_BASE) -> dict[str, list[str]]:
    """Removes every namespace and root-namespace link whose name starts with prefix."""
    found = list_leftovers(prefix)
    for ns in found["namespaces"]:
        cleanup_namespace(ns)
    for dev in found["links"]:
        _run(["ip", "link", "del", dev], check=False)
    return found


# ----------------------------------------------------------------------------- flows

@dataclasses.dataclass
class FlowRun:
    index: int
    controller: str
    rtt_ms: float
    start_s: float
    stop_s: float
    dir: Path
    kind: str = ""                     # "jaxcc" | "probe" | "iperf3"
    procs: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    started_at: float | None = None    # monotonic time the client was launched
    result: dict[str, Any] = dataclasses.field(default_factory=dict)


SIM_ONLY_CONTROLLERS = ("cubic", "copa", "oracle")  # jaxcc.controllers: no C++ sender for them


def _refuse_sim_only(controller: str, label: str) -> None:
    """EmulationError naming ``label`` when ``controller`` exists only in the simulator."""
    if controller.strip() in SIM_ONLY_CONTROLLERS:
        raise EmulationError(f"{label} runs only in the simulator (python -m jaxcc.evaluate); "
                             "in emulation use kernel:cubic (iperf3), bbr, fixed:MBPS or policy:FILE")


def flow_kind(controller: str, impl: str = "auto") -> str:
    """How a flow runs: "iperf3" (kernel:*), "jaxcc" (datapath binaries) or "probe"
    (udp_probe, fixed rates only: the harness self-test, or when the datapath is not built).
    impl="probe" forces the probe for fixed:* flows."""
    _refuse_sim_only(controller, f"controller {controller}")
    if controller.startswith("kernel:"):
        if controller not in ("kernel:cubic", "kernel:bbr", "kernel:reno"):
            raise EmulationError(f"unknown kernel controller {controller}")
        return "iperf3"
    if impl == "probe" and controller.startswith("fixed:"):
        return "probe"
    if sender_binary() is not None and receiver_binary() is not None:
        return "jaxcc"
    if controller.startswith("fixed:") and impl != "jaxcc":
        # The real datapath is not built: the self-test probe can do a fixed rate.
        return "probe"
    raise EmulationError(f"controller {controller} needs {DATAPATH_BUILD}/jaxcc-sender and "
                         "jaxcc-receiver: build them with datapath/build.sh")


class Runner:
    """Runs one scenario with one controller assignment on a fresh EmulatedLink."""

    def __init__(self, spec: dict[str, Any], controllers: list[str], out_dir: Path,
                 prefix: str | None = None, trace_bin_s: float = 0.1, ping: bool = True,
                 verbose: bool = False, lead_s: float = 0.5, impl: str = "auto",
                 nice: int | None = -10):
        self.spec = spec
        self.controllers = controllers        # one per flow
        self.out_dir = out_dir
        self.prefix = prefix
        self.trace_bin_s = trace_bin_s
        self.do_ping = ping
        self.verbose = verbose
        self.lead_s = lead_s
        self.impl = impl
        # Senders and receivers run at nice -10 so that, on a small machine shared with
        # other jobs, they (and the packet processing done in their context) keep up.
        self.nice = nice

    def run(self) -> dict[str, Any]:
        spec, link_spec = self.spec, self.spec["link"]
        dur = spec["duration_s"]
        sched = bandwidth_schedule(link_spec, dur, self.trace_bin_s)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        flows = [FlowRun(i, c, f["rtt_ms"], f["start_s"], f["stop_s"],
                         self.out_dir / f"flow{i}") for i, (f, c) in
                 enumerate(zip(spec["flows"], self.controllers))]
        for fl in flows:
            fl.kind = flow_kind(fl.controller, self.impl)
            fl.dir.mkdir(parents=True, exist_ok=True)
        check_requirements(need_iperf3=any(f.kind == "iperf3" for f in flows))

        with EmulatedLink(self.prefix, self.out_dir, self.verbose) as link:
            link.setup(spec["flows"], sched[0][1], link_spec["buffer_bytes"], link_spec["loss"])
            self._first_rate = sched[0][1]
            idle = link.ping() if self.do_ping else None
            for fl in flows:
                self._start_server(link, fl, dur)
            t0 = time.monotonic() + self.lead_s
            events: list[tuple[float, str, Any]] = [(t0 + t, "rate", r) for t, r in sched[1:]]
            events += [(t0 + fl.start_s, "flow", fl) for fl in flows]
            events.sort(key=lambda e: (e[0], e[1] != "rate"))
            self._run_events(link, events, t0)
            # wait for the clients (with a margin), then for the servers: iperf3 and
            # jaxcc-receiver stop on their own; udp_probe writes its summary on SIGTERM.
            end = t0 + dur + 15.0
            for fl in flows:
                p = fl.procs.get("client")
                if p is not None:
                    try:
                        p.wait(timeout=max(end - time.monotonic(), 0.1))
                    except subprocess.TimeoutExpired:
                        _terminate(p)
                    fl.result["client_rc"] = p.returncode
            for fl in flows:
                p = fl.procs.get("server")
                if p is None:
                    continue
                grace = 0.3 if fl.kind == "probe" else max(end - time.monotonic(), 0.1)
                try:
                    p.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    _terminate(p)
                fl.result["server_rc"] = p.returncode
            qstats = link.qdisc_stats()
        (self.out_dir / "qdisc_stats.txt").write_text(qstats)
        for fl in flows:
            fl.result.update(collect_flow(fl))
        rec = make_record(self.spec, self.controllers, flows, sched, idle, link.schedule_log)
        rec["delay_tool"] = _read_json(self.out_dir / "nfq_delay_stats.json")
        warn = _health_warnings(rec["delay_tool"])
        if warn:
            rec["warnings"] = warn
            print(f"[emulate] warning: {'; '.join(warn)}", file=sys.stderr)
        return rec

    def _start_server(self, link: EmulatedLink, fl: FlowRun, dur: float) -> None:
        if fl.kind == "iperf3":
            port = TCP_PORT_BASE + fl.index
            p = link.spawn(link.ns_rcv, ["iperf3", "-s", "-1", "-p", port, "-B", RCV_IP, "-J",
                                         "--logfile", fl.dir / "iperf3_server.json"],
                           nice=self.nice)
            fl.procs["server"] = p
            _wait_listening(link, port, "tcp")
            return
        port = UDP_PORT_BASE + fl.index
        # the receiver stops on its own a little after the flow's last packet can arrive
        rdur = fl.stop_s + self.lead_s + 2 * fl.rtt_ms / 1000 + 1.5
        if fl.kind == "jaxcc":
            cmd = [receiver_binary(), f"--port={port}", f"--bind={RCV_IP}",
                   f"--duration={rdur:.3f}", f"--log={fl.dir / 'receiver.csv'}",
                   f"--summary={fl.dir / 'receiver.json'}"]
        else:
            cmd = [TOOLS_BUILD / "udp_probe", "recv", f"--port={port}", f"--bind={RCV_IP}",
                   f"--duration={rdur:.3f}", f"--summary={fl.dir / 'receiver.json'}"]
        fl.procs["server"] = link.spawn(link.ns_rcv, cmd, nice=self.nice,
                                        stderr=open(fl.dir / "receiver.stderr", "w"))
        _wait_listening(link, port, "udp")

    def _start_client(self, link: EmulatedLink, fl: FlowRun) -> None:
        dur = fl.stop_s - fl.start_s
        if fl.kind == "iperf3":
            cmd = ["iperf3", "-c", RCV_IP, "-p", TCP_PORT_BASE + fl.index, "-t", f"{dur:.3f}",
                   "-C", fl.controller.split(":", 1)[1], "-i", "0.1", "-J",
                   "--logfile", fl.dir / "iperf3_client.json"]
        elif fl.kind == "jaxcc":
            # --rtt-hint-ms: the path RTT a policy assumes before its first sample, as the
            # simulator's policy senders know the link's (e.g. aurora_v1's 10-packet start).
            cmd = [sender_binary(), f"--controller={fl.controller}", f"--dest={RCV_IP}",
                   f"--port={UDP_PORT_BASE + fl.index}", f"--duration={dur:.3f}",
                   f"--flow-id={fl.index}", "--drain=1.0", f"--rtt-hint-ms={fl.rtt_ms:g}",
                   f"--log={fl.dir / 'sender.csv'}", f"--summary={fl.dir / 'sender.json'}"]
        else:
            rate = float(fl.controller.split(":", 1)[1])
            cmd = [TOOLS_BUILD / "udp_probe", "send", f"--dest={RCV_IP}",
                   f"--port={UDP_PORT_BASE + fl.index}", f"--rate={rate}",
                   f"--duration={dur:.3f}", f"--log={fl.dir / 'sender.csv'}",
                   f"--summary={fl.dir / 'sender.json'}"]
        fl.started_at = time.monotonic()
        fl.procs["client"] = link.spawn(link.ns_snd, cmd, nice=self.nice,
                                        stderr=open(fl.dir / "sender.stderr", "w"))

    def _run_events(self, link: EmulatedLink, events, t0: float) -> None:
        """Fires rate changes and flow starts at absolute deadlines (no drift from sleeps)."""
        if any(kind == "rate" for _, kind, _ in events):
            link.set_rate(self._first_rate)   # starts the tc batch process before t0
        for deadline, kind, arg in events:
            _sleep_until(deadline)
            if kind == "rate":
                a = time.monotonic()
                wall = time.time()
                link.set_rate(arg)
                b = time.monotonic()
                link.schedule_log.append({"t_s": deadline - t0, "mbps": arg,
                                          "issued_late_ms": (a - deadline) * 1e3,
                                          "done_late_ms": (b - deadline) * 1e3,
                                          "wall_deadline_s": wall - (a - deadline)})
            else:
                self._start_client(link, arg)


def make_record(spec: dict[str, Any], controllers: list[str], flows: list[FlowRun], sched,
                idle, sched_log, emulator: str = "netns-tbf-nfqueue") -> dict[str, Any]:
    """One results.json record (the shared contract) from finished flows."""
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

    def wmean(key):
        vals = [(v, f.get(key)) for v, f in zip(vol, per_flow) if f.get(key) is not None]
        if not vals:
            return None
        w = sum(v for v, _ in vals)
        if w <= 0:
            return sum(x for _, x in vals) / len(vals)
        return sum(v * x for v, x in vals) / w

    tputs = [f.get("throughput_mbps") or 0.0 for f in per_flow]
    jain = (sum(tputs) ** 2 / (len(tputs) * sum(t * t for t in tputs))
            if any(tputs) else None)
    ctrls = sorted(set(controllers))
    rec = {"scenario": spec["name"],
           "controller": ctrls[0] if len(ctrls) == 1 else "+".join(controllers),
           "throughput_mbps": total, "utilization": total / cap if cap > 0 else None,
           "p95_owd_ms": wmean("p95_owd_ms"), "p95_qdelay_ms": wmean("p95_qdelay_ms"),
           "loss": wmean("loss"), "jain": jain, "ankh": None,  # fill_ankh, once all schemes ran
           "per_flow": per_flow, "emulator": emulator,
           "idle_rtt_ms": idle, "capacity_mbps": cap,
           "schedule_changes": sched_log}
    return rec


def _health_warnings(stats: dict[str, Any] | None) -> list[str]:
    """Flags runs whose delay tool fell behind (a busy machine), so numbers can be judged."""
    out = []
    for q in (stats or {}).get("queues", []):
        if q.get("dropped_full"):
            out.append(f"nfq_delay queue {q['queue']} dropped {q['dropped_full']} packets (full)")
        if q.get("packets", 0) > 100 and q.get("mean_late_us", 0) > 1000:
            out.append(f"nfq_delay queue {q['queue']} released {q['mean_late_us']:.0f} us late "
                       f"on average (max {q['max_late_us'] / 1000:.1f} ms): machine overloaded?")
    return out


def fill_ankh(records: list[dict[str, Any]]) -> None:
    """Ankh's number (jaxcc.metrics.ankh, Pareto eq. 10) for records of ONE scenario: its
    delay term is relative to the largest p95 one-way delay among the schemes compared."""
    try:
        from jaxcc.metrics import ankh
    except ImportError:
        return
    d = [r["p95_owd_ms"] for r in records if r.get("p95_owd_ms") is not None]
    d_max = max(d) if d else 0.0
    for r in records:
        if d_max > 0 and r.get("capacity_mbps") and r.get("p95_owd_ms") is not None:
            r["ankh"] = float(ankh(r["throughput_mbps"], r["capacity_mbps"], r["p95_owd_ms"],
                                   d_max, r.get("loss") or 0.0))


def _sleep_until(t: float) -> None:
    while True:
        d = t - time.monotonic()
        if d <= 0:
            return
        time.sleep(min(d, 0.5) if d > 0.002 else d)


def _wait_listening(link: EmulatedLink, port: int, proto: str, timeout: float = 5.0) -> None:
    flag = "-ltn" if proto == "tcp" else "-lun"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = link.sh(link.ns_rcv, ["ss", "-H", flag, f"sport = :{port}"], check=False).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise EmulationError(f"server on {proto} port {port} did not start (see its stderr)")


# ----------------------------------------------------------------------------- results

def _read_json(path: Path) -> dict[str, Any] | None:
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


def collect_flow(fl: FlowRun) -> dict[str, Any]:
    """Per-flow metrics in the contract's units (+ a timeseries for plots)."""
    fwd_prop = fl.rtt_ms / 2
    if fl.kind == "iperf3":
        cj = _read_json(fl.dir / "iperf3_client.json") or {}
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
                "series": series}
    snd = _read_json(fl.dir / "sender.json") or {}
    rcv = _read_json(fl.dir / "receiver.json") or {}
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
    if out.get("p95_owd_ms") is not None and out.get("p95_qdelay_ms") is None:
        out["p95_qdelay_ms"] = max(out["p95_owd_ms"] - fwd_prop, 0.0)
    out["series"] = _read_series(fl.dir / "sender.csv")
    return out


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
    # thin a per-packet log to at most ~2000 points for the plot
    step = max(1, len(out) // 2000)
    return out[::step]


def make_plots(records: list[dict[str, Any]], out_dir: Path) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    files = []
    for rec in records:
        fig, ax = plt.subplots(figsize=(8, 4))
        for f in rec["per_flow"]:
            s = f.get("series") or []
            if s:
                ax.plot([f["start_s"] + t for t, _ in s], [m for _, m in s],
                        label=f"flow {f['flow']} {f['controller']}")
        sched = rec.get("capacity_schedule") or []
        if sched:
            xs, ys = [], []
            for i, (t, r) in enumerate(sched):
                t_end = sched[i + 1][0] if i + 1 < len(sched) else rec.get("duration_s", t + 1)
                xs += [t, t_end]
                ys += [r, r]
            ax.plot(xs, ys, "k--", lw=1, label="capacity")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_title(f"{rec['scenario']} / {rec['controller']}")
        ax.legend(fontsize=7)
        name = out_dir / f"throughput_{_safe(rec['scenario'])}__{_safe(rec['controller'])}.png"
        fig.tight_layout()
        fig.savefig(name, dpi=100)
        plt.close(fig)
        files.append(str(name))
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for rec in records:
        if rec.get("p95_owd_ms") is None:
            continue
        ax.scatter(rec["p95_owd_ms"], rec["throughput_mbps"])
        ax.annotate(f"{rec['controller']}\n{rec['scenario']}", (rec["p95_owd_ms"],
                    rec["throughput_mbps"]), fontsize=6)
    ax.set_xlabel("p95 one-way delay (ms)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.invert_xaxis()  # convention: better (lower delay) to the right
    ax.set_title("throughput vs p95 delay (emulation)")
    fig.tight_layout()
    name = out_dir / "throughput_vs_delay.png"
    fig.savefig(name, dpi=100)
    plt.close(fig)
    files.append(str(name))
    return files


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")[:80]


# ----------------------------------------------------------------------------- Mahimahi

def write_mahimahi_trace(sched: list[tuple[float, float]], duration_s: float,
                         path: str | os.PathLike) -> None:
    """A Mahimahi trace for a rate schedule: evenly spread 1500-byte opportunities per ms.

    The file's last stamp is the duration in ms, so mm-link's loop period is the scenario.
    """
    total_ms = max(int(round(duration_s * 1000)), 1)
    lines, credit, seg = [], 0.0, 0
    for ms in range(total_ms):
        t = ms / 1000.0
        while seg + 1 < len(sched) and sched[seg + 1][0] <= t + 1e-9:
            seg += 1
        credit += sched[seg][1] * 1e6 / 8 / MSS / 1000.0   # packets this ms
        while credit >= 1.0:
            lines.append(ms + 1)
            credit -= 1.0
    if not lines or lines[-1] != total_ms:
        lines.append(total_ms)
    Path(path).write_text("\n".join(map(str, lines)) + "\n")


def mahimahi_plan(spec: dict[str, Any], controller: str | None, out: Path,
                  trace_bin_s: float = 0.1) -> Path:
    """Writes out/plan.json + out/plan.sh (sourced by launch/mahimahi_run.sh) and a trace."""
    out.mkdir(parents=True, exist_ok=True)
    link = spec["link"]
    if link.get("trace") is not None:
        trace = os.path.abspath(_resolve_trace(link["trace"]))   # used as is, like mm-link
    else:
        trace = str((out / "link.trace").resolve())
        write_mahimahi_trace(bandwidth_schedule(link, spec["duration_s"], trace_bin_s),
                             spec["duration_s"], trace)
    ctrls = assign_controllers(spec, controller)
    plan = {"spec": spec, "controllers": ctrls, "trace": trace}
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    import shlex
    sh = [f"TRACE={shlex.quote(trace)}", f"BUFFER_BYTES={int(link['buffer_bytes'])}",
          f"LOSS={link['loss']:.6f}", f"DURATION={spec['duration_s']:.3f}",
          f"NFLOWS={len(spec['flows'])}"]
    for i, (f, c) in enumerate(zip(spec["flows"], ctrls)):
        sh += [f"FLOW{i}_DELAY_MS={f['rtt_ms'] / 2:.3f}", f"FLOW{i}_START={f['start_s']:.3f}",
               f"FLOW{i}_DUR={f['stop_s'] - f['start_s']:.3f}",
               f"FLOW{i}_CTRL={shlex.quote(c)}"]
    (out / "plan.sh").write_text("\n".join(sh) + "\n")
    return out / "plan.sh"


def mahimahi_collect(out: Path) -> dict[str, Any]:
    """results.json for a finished launch/mahimahi_run.sh run (flow dirs out/flowN)."""
    plan = json.loads((out / "plan.json").read_text())
    spec, ctrls = plan["spec"], plan["controllers"]
    flows = []
    for i, (f, c) in enumerate(zip(spec["flows"], ctrls)):
        fl = FlowRun(i, c, f["rtt_ms"], f["start_s"], f["stop_s"], out / f"flow{i}",
                     kind="iperf3" if c.startswith("kernel:") else "jaxcc")
        fl.result.update(collect_flow(fl))
        rc = out / f"flow{i}" / "client_rc"
        if rc.exists():
            fl.result["client_rc"] = int(rc.read_text().strip() or -1)
        flows.append(fl)
    sched = bandwidth_schedule({"trace": plan["trace"]}, spec["duration_s"])
    rec = make_record(spec, ctrls, flows, sched, None, [], emulator="mahimahi")
    rec["duration_s"] = spec["duration_s"]
    fill_ankh([rec])
    _write_results(out, [rec])
    return rec


# ----------------------------------------------------------------------------- entry point

def assign_controllers(spec: dict[str, Any], controller: str | None) -> list[str]:
    """Controllers per flow. A given controller replaces every flow's, except flows whose own
    controller is kernel:* (those are cross traffic and stay as written)."""
    own = [f["controller"] for f in spec["flows"]]
    if controller is None:
        return own
    return [c if c.startswith("kernel:") and len(own) > 1 else controller for c in own]


def run_experiments(specs: list[dict[str, Any]], controllers: list[str | None], out: Path,
                    **kw) -> list[dict[str, Any]]:
    records = []
    for spec in specs:
        for ctrl in controllers:
            flows_ctrl = assign_controllers(spec, ctrl)
            sub = out / "runs" / f"{_safe(spec['name'])}__{_safe(ctrl or 'spec')}"
            print(f"[emulate] {spec['name']} x {ctrl or 'scenario controllers'} -> {sub}",
                  file=sys.stderr)
            rec = Runner(spec, flows_ctrl, sub, **kw).run()
            rec["duration_s"] = spec["duration_s"]
            rec["capacity_schedule"] = bandwidth_schedule(spec["link"], spec["duration_s"],
                                                          kw.get("trace_bin_s", 0.1))
            records.append(rec)
            fill_ankh([r for r in records if r["scenario"] == spec["name"]])
            _write_results(out, records)
    return records


def _write_results(out: Path, records: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    with open(tmp, "w") as f:
        json.dump({"results": records}, f, indent=1, default=str)
    os.replace(tmp, out / "results.json")


def _validate_controller(c: str | None) -> None:
    if c is None:
        return
    try:
        from jaxcc.controllers import parse_controller
    except ImportError:
        return
    try:
        parse_controller(c, field="--controller")
    except ValueError as e:
        raise EmulationError(str(e)) from e
    _refuse_sim_only(c, f"--controller={c}")


def _raise_on_term(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxcc.emulate", description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--scenario", action="append", default=[],
                   help="named scenario (jaxcc.scenarios or emu/*); repeatable or comma list")
    g.add_argument("--scenario-file", action="append", default=[], help="scenario JSON file")
    g.add_argument("--suite", default=None, help="a jaxcc.scenarios suite (get_suite)")
    ap.add_argument("--controller", default=None,
                    help="comma list: policy:FILE, bbr, fixed:MBPS, kernel:cubic, kernel:bbr; "
                         "default: the scenario's own flow controllers")
    ap.add_argument("--out", default="emulate_out")
    ap.add_argument("--trace-bin-ms", type=float, default=100.0,
                    help="bin width when converting a Mahimahi trace to a tbf rate schedule")
    ap.add_argument("--no-ping", action="store_true", help="skip the idle-RTT ping")
    ap.add_argument("--nice", type=int, default=-10,
                    help="nice value for senders/receivers (0: leave as is)")
    ap.add_argument("--tbf-burst-ms", type=float, default=1.0,
                    help="tbf bucket depth in ms of the current rate (min two frames)")
    ap.add_argument("--prefix", default=None, help="name prefix (default: jxe + random hex)")
    ap.add_argument("--cleanup", action="store_true",
                    help=f"remove leftover namespaces/links named {PREFIX_BASE}* and exit")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--mahimahi-plan", metavar="DIR", default=None,
                    help="(for launch/mahimahi_run.sh) write DIR/plan.sh and a trace, exit")
    ap.add_argument("--mahimahi-collect", metavar="DIR", default=None,
                    help="(for launch/mahimahi_run.sh) write DIR/results.json, exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)

    if a.cleanup:
        if os.geteuid() != 0:
            print("emulate: --cleanup must run as root", file=sys.stderr)
            return 2
        found = cleanup_leftovers(a.prefix or PREFIX_BASE)
        print(json.dumps({"removed": found}))
        return 0

    globals()["TBF_BURST_S"] = a.tbf_burst_ms / 1000.0
    if a.mahimahi_collect:
        rec = mahimahi_collect(Path(a.mahimahi_collect))
        print(json.dumps({k: rec[k] for k in ("scenario", "controller", "throughput_mbps",
                                              "p95_owd_ms", "loss")}))
        return 0
    if a.mahimahi_plan:
        try:
            spec = (load_spec(path=a.scenario_file[0]) if a.scenario_file
                    else load_spec(name=a.scenario[0]))
        except (EmulationError, IndexError) as e:
            print(f"emulate: {e or 'give --scenario or --scenario-file'}", file=sys.stderr)
            return 2
        print(mahimahi_plan(spec, a.controller, Path(a.mahimahi_plan),
                            a.trace_bin_ms / 1000.0))
        return 0
    signal.signal(signal.SIGINT, _raise_on_term)   # also when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_on_term)
    signal.signal(signal.SIGHUP, _raise_on_term)
    try:
        specs = [load_spec(path=p) for p in a.scenario_file]
        for s in a.scenario:
            specs += [load_spec(name=n) for n in s.split(",") if n]
        if a.suite:
            try:
                from jaxcc import scenarios as _sc
                specs += [normalize_spec(x) for x in _sc.get_suite(a.suite)]
            except (ImportError, ValueError) as e:
                raise EmulationError(str(e)) from e
        if not specs:
            ap.error("give --scenario, --scenario-file or --suite")
        ctrls: list[str | None] = [c for c in a.controller.split(",")] if a.controller else [None]
        # (a policy path containing a comma cannot be given in this list)
        for c in ctrls:
            _validate_controller(c)
        check_requirements()
        out = Path(a.out)
        records = run_experiments(specs, ctrls, out, trace_bin_s=a.trace_bin_ms / 1000.0,
                                  ping=not a.no_ping, verbose=a.verbose, prefix=a.prefix,
                                  nice=a.nice)
        if not a.no_plots:
            make_plots(records, out)
        for r in records:
            print(f"{r['scenario']:24s} {r['controller']:28s} "
                  f"tput {r['throughput_mbps']:.2f} Mbit/s  util {r['utilization'] or 0:.2f}  "
                  f"p95 owd {r['p95_owd_ms'] if r['p95_owd_ms'] is not None else float('nan'):.1f} ms  "
                  f"loss {r['loss'] if r['loss'] is not None else float('nan'):.3f}")
        return 0
    except EmulationError as e:
        print(f"emulate: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emulate: interrupted; cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
