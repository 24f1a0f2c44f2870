"""Network namespaces, veths and the tc/tbf bottleneck of one emulated link; leftovers cleanup.

Topology (one set per run; names carry a unique prefix so parallel runs never collide)::

    [PREFIX-snd] sa 10.77.1.1 ── sb 10.77.1.2 [PREFIX-rtr] db 10.77.2.1 ── da 10.77.2.2 [PREFIX-rcv]
                                     FORWARD: loss (iptables statistic), delay (NFQUEUE ->
                                     nfq_delay, jaxcc.emulation.delay), then egress db: tbf
                                     bottleneck (rate + bytes)

Why it is built this way (see docs/emulation.md for the measurements):

* The bottleneck sits in a *router* namespace. Shaping on the sender's own interface pushes
  back on its socket (EAGAIN) instead of dropping, which hides loss.
* TSO/GSO/GRO are off on every veth so tbf sees real packets, not 64 KB super-packets.
* Link rates and buffers count IP packets (a 1500-byte packet is one unit of the simulator's
  MSS and one Mahimahi delivery opportunity). tbf counts what it dequeues on the veth, the
  Ethernet frame, 14 bytes more per packet (a UDP payload of P bytes is a P+42 byte frame), so
  the tbf rate and limit are scaled by (1500+14)/1500.
* Bandwidth schedules use ``tc qdisc change ... tbf rate X``, which keeps queued packets.
* Every iptables rule, qdisc and veth lives inside the namespaces this run creates, so
  deleting the namespaces (after killing every process we started in them) removes all of it.
"""
from __future__ import annotations

import contextlib
import json
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

from jaxcc.emulation import delay
from jaxcc.emulation.host import EmulationError, run, terminate
from jaxcc.emulation.spec import MIN_RATE_MBPS
from jaxcc.units import PACKET_BYTES

PREFIX_BASE = "jxe"           # every namespace / veth of this harness starts with it
ETH_HEADER = 14               # bytes tbf counts on top of the IP packet on a veth
TBF_SCALE = (PACKET_BYTES + ETH_HEADER) / PACKET_BYTES
# tbf_rate_error judges a schedule segment only if it should carry at least this many frames
# while backlogged: whole frames then quantize its count by at most 2 %, the rate bound.
MIN_JUDGED_FRAMES = 50
# tbf bucket depth in seconds of the current rate (at least two full frames). A deeper bucket
# sends small bursts back to back; a shallow one loses capacity whenever tbf's timer fires
# late (tokens beyond the bucket are thrown away), which happens on busy, shared machines.
# (python -m jaxcc.emulate --tbf-burst-ms sets it.)
TBF_BURST_S = 0.001

SND_IP, RTR_S_IP, RTR_D_IP, RCV_IP = "10.77.1.1", "10.77.1.2", "10.77.2.1", "10.77.2.2"


def tbf_args(rate_mbps: float, buffer_bytes: int) -> list[str]:
    """tbf parameters for a link of rate_mbps (IP bytes) with a buffer of buffer_bytes (IP)."""
    rate_bps = max(rate_mbps, MIN_RATE_MBPS) * 1e6 * TBF_SCALE
    # burst: TBF_BURST_S at this rate but at least two full frames (tbf drops frames > burst)
    burst = max(2 * (PACKET_BYTES + ETH_HEADER), int(rate_bps / 8 * TBF_BURST_S))
    limit = max(PACKET_BYTES + ETH_HEADER, int(buffer_bytes * TBF_SCALE))
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
        return run(full, check=check)

    def spawn(self, ns: str, cmd: list[str], stdout=None, stderr: Path | None = None,
              nice: int | None = None, **kw) -> subprocess.Popen:
        """``cmd`` in namespace ``ns``, in its own session; its stderr goes to the file ``stderr``
        (the child holds the only handle) or nowhere, its stdout to ``stdout`` or nowhere."""
        if nice:
            cmd = ["nice", "-n", str(nice)] + list(cmd)
        full = self.ns_cmd(ns, cmd)
        if self.verbose:
            print("&", " ".join(full), file=sys.stderr)
        with self._lock:
            if self._closed:
                raise EmulationError("link already closed")
            # own session: we can signal the whole process group at cleanup
            with contextlib.ExitStack() as files:
                err = files.enter_context(open(stderr, "w")) if stderr is not None else subprocess.DEVNULL
                p = subprocess.Popen(full, stdout=stdout if stdout is not None else subprocess.DEVNULL,
                                     stderr=err, start_new_session=True, **kw)
            self.procs.append(p)
        return p

    # -- setup
    def setup(self, rtts_ms: list[float], rate_mbps: float, buffer_bytes: int,
              loss: float, delay_opts: "delay.DelayOptions | None" = None) -> None:
        """Builds the three namespaces, the bottleneck and the delay of flows of these RTTs."""
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
        self._static_neighbours()
        self.sh(self.ns_snd, ["ip", "route", "add", "default", "via", RTR_S_IP])
        self.sh(self.ns_rcv, ["ip", "route", "add", "default", "via", RTR_D_IP])
        self.sh(self.ns_rtr, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])

        # bottleneck: tbf on the router's egress towards the receiver
        self.buffer_bytes = buffer_bytes
        self.sh(self.ns_rtr, ["tc", "qdisc", "add", "dev", self.bottleneck_dev, "root",
                              "handle", "1:", "tbf"] + tbf_args(rate_mbps, buffer_bytes))

        # propagation delay (user space: the kernel has no netem) and its NFQUEUE rules
        self.nfq_proc = delay.start(self, rtts_ms, delay_opts)
        delay.add_rules(self, len(rtts_ms), loss)

    def _static_neighbours(self) -> None:
        """Permanent neighbour entries on both hops, so no ARP crosses the emulated link.

        With ARP, the receiver re-confirms its router about 5 s after first use (three unicast
        probes, 1 s apart); the router's replies leave through tbf, and behind a full queue tbf
        drops them.  After the third the entry fails and the receiver's packets (its ACKs) wait
        in the neighbour queue (about 256 of them) or are dropped until a broadcast probe gets
        an answer through: a stall of about a second on the reverse path that no link
        configuration asked for (measured: a fixed 15-Mbit/s flow into 12 Mbit/s lost 15% of its
        ACKs, its last 256 with RTTs near 1 s).
        """
        mac = {dev: self._mac(ns, dev) for ns, dev, _, _ in self._hops()}
        for ns, dev, peer_ip, peer_dev in self._hops():
            self.sh(ns, ["ip", "neigh", "replace", peer_ip, "lladdr", mac[peer_dev], "dev", dev, "nud", "permanent"])

    def _hops(self) -> tuple[tuple[str, str, str, str], ...]:
        """(namespace, device, the peer's address, the peer's device) of each veth end."""
        p = self.prefix
        return ((self.ns_snd, f"{p}-sa", RTR_S_IP, f"{p}-sb"), (self.ns_rtr, f"{p}-sb", SND_IP, f"{p}-sa"),
                (self.ns_rtr, f"{p}-db", RCV_IP, f"{p}-da"), (self.ns_rcv, f"{p}-da", RTR_D_IP, f"{p}-db"))

    def _mac(self, ns: str, dev: str) -> str:
        out = json.loads(self.sh(ns, ["ip", "-j", "link", "show", "dev", dev]).stdout)
        return out[0]["address"]

    def neighbour_states(self) -> dict[str, str]:
        """``{"NS/DEV PEER_IP": state}`` of the four neighbour entries (all PERMANENT unless
        something replaced them)."""
        out: dict[str, str] = {}
        for ns, dev, peer_ip, _ in self._hops():
            p = self.sh(ns, ["ip", "-j", "neigh", "show", peer_ip, "dev", dev], check=False)
            try:
                entries = json.loads(p.stdout or "[]")
            except ValueError:
                entries = []
            out[f"{ns}/{dev} {peer_ip}"] = "+".join(entries[0].get("state", ["?"])) if entries else "none"
        return out

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
                                  stderr=self.out_dir / "tc_batch.stderr",
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
        # one unmeasured ping first: it warms both hops (the neighbours are static)
        self.sh(self.ns_snd, ["ping", "-n", "-q", "-c", "1", "-W", "2", RCV_IP], check=False)
        p = self.sh(self.ns_snd, ["ping", "-n", "-q", "-c", str(count), "-i", str(interval),
                                  "-W", "2", RCV_IP], check=False)
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", p.stdout)
        if not m:
            return None
        return {"min_ms": float(m.group(1)), "avg_ms": float(m.group(2)),
                "max_ms": float(m.group(3)), "mdev_ms": float(m.group(4))}

    def start_tbf_sampler(self, interval_s: float = 0.1) -> "TbfSampler":
        """Samples tbf's counters every interval_s until stopped (``tbf_rate_error``)."""
        proc = self.spawn(self.ns_rtr, ["stdbuf", "-oL", "tc", "-s", "-j", "-batch", "-"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=self.out_dir / "tc_sampler.stderr", text=True,
                          bufsize=1)
        sampler = TbfSampler(proc, self.bottleneck_dev, interval_s)
        sampler.start()
        return sampler

    def qdisc_stats(self) -> str:
        return self.sh(self.ns_rtr, ["tc", "-s", "qdisc", "show", "dev", self.bottleneck_dev],
                       check=False).stdout

    def interface_drops(self) -> dict[str, dict[str, int]]:
        """Packets every interface of the three namespaces dropped so far (``ip -s -j link``):
        ``{"NS/DEV": {"rx_dropped", "tx_dropped", "rx_packets", "tx_packets"}}``.  The emulated
        link drops only in tbf and the loss rule; a drop here happened outside them."""
        out: dict[str, dict[str, int]] = {}
        for ns in (self.ns_snd, self.ns_rtr, self.ns_rcv):
            p = self.sh(ns, ["ip", "-s", "-j", "link", "show"], check=False)
            try:
                links = json.loads(p.stdout or "[]")
            except ValueError:
                continue
            for ln in links:
                st = ln.get("stats64") or {}
                rx, tx = st.get("rx", {}), st.get("tx", {})
                out[f"{ns}/{ln.get('ifname')}"] = {"rx_dropped": int(rx.get("dropped", 0)),
                                                   "tx_dropped": int(tx.get("dropped", 0)),
                                                   "rx_packets": int(rx.get("packets", 0)),
                                                   "tx_packets": int(tx.get("packets", 0))}
        return out

    # -- teardown
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            procs = list(self.procs)
        for p in procs:
            terminate(p)
            for pipe in (p.stdin, p.stdout):   # the parent's ends of the pipes it was given
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        for ns in (self.ns_snd, self.ns_rtr, self.ns_rcv):
            cleanup_namespace(ns)

    def __enter__(self) -> "EmulatedLink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TbfSampler(threading.Thread):
    """tbf's byte/backlog counters over time, from a long-lived ``tc -s -j -batch -``.

    Each sample is (t, bytes, packets, drops, backlog_bytes): t the CLOCK_MONOTONIC midpoint
    of the query, the rest tbf's own counters (``bytes``: frames dequeued so far, Ethernet
    header included, as tbf's rate counts them).
    """

    def __init__(self, proc: subprocess.Popen, dev: str, interval_s: float):
        super().__init__(daemon=True)
        self.proc, self.dev, self.interval_s = proc, dev, interval_s
        self.samples: list[tuple[float, int, int, int, int]] = []
        self.error: str | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        nxt = time.monotonic()
        while not self._stop_event.is_set():
            try:
                a = time.monotonic()
                self.proc.stdin.write(f"qdisc show dev {self.dev}\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
                b = time.monotonic()
                q = next(x for x in json.loads(line) if x.get("kind") == "tbf")
                self.samples.append(((a + b) / 2, int(q["bytes"]), int(q["packets"]),
                                     int(q["drops"]), int(q["backlog"])))
            except (OSError, ValueError, StopIteration, KeyError) as e:
                self.error = f"tbf sampler stopped: {e!r}"
                return
            nxt += self.interval_s
            self._stop_event.wait(max(nxt - time.monotonic(), 0.0))

    def stop(self) -> list[tuple[float, int, int, int, int]]:
        self._stop_event.set()
        self.join(timeout=5)
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        return self.samples


def tbf_rate_error(samples: list[tuple[float, int, int, int, int]],
                   sched: list[tuple[float, float]], t0: float, min_backlog_bytes: int,
                   guard_s: float = 0.05, min_seconds: float = 0.5,
                   min_segment_frames: int = MIN_JUDGED_FRAMES) -> dict[str, object]:
    """tbf's dequeue rate against the configured schedule while it had a backlog.

    While tbf holds packets it must send at exactly its configured rate (a late timer on a
    busy machine loses tokens: it sends less). Over every pair of consecutive samples whose
    backlogs are both at least min_backlog_bytes and whose interval (widened by guard_s)
    contains no scheduled rate change, the bytes dequeued are compared with the schedule's
    rate (IP Mbit/s, times TBF_SCALE for the frames tbf counts) over the interval; rel_err is
    sum(measured) / sum(expected) - 1 over those intervals (None below min_seconds of them);
    interval_p5/p95 are percentiles of the intervals' own errors: a timer that fires late (a busy
    machine) only lowers the rate, so the p5 shows lateness and the p95 the rate tbf was set to.
    A schedule segment whose intervals should carry fewer than ``min_segment_frames`` frames in
    all is left out (``unjudged_seconds``): tbf sends whole frames, so its count there is off by
    up to a frame, more than the bound allows (an outage's 0.01 Mbit/s is one frame per 1.2 s).
    sched: (t_s from t0, Mbit/s); t0: the run's CLOCK_MONOTONIC start.
    """
    changes = [t0 + t for t, _ in sched[1:]]
    by_segment: dict[int, list[tuple[float, float, float]]] = {}  # segment -> [(got, expected, seconds)]
    for (ta, ba, _, _, qa), (tb, bb, _, _, qb) in zip(samples, samples[1:]):
        if qa < min_backlog_bytes or qb < min_backlog_bytes or tb <= ta:
            continue
        if any(ta - guard_s <= c <= tb + guard_s for c in changes):
            continue
        seg = max(i for i, (t, _) in enumerate(sched) if i == 0 or t0 + t <= ta)
        expect = max(sched[seg][1], MIN_RATE_MBPS) * 1e6 * TBF_SCALE / 8 * (tb - ta)
        by_segment.setdefault(seg, []).append((bb - ba, expect, tb - ta))
    frame = PACKET_BYTES + ETH_HEADER
    judged = [iv for ivs in by_segment.values() if sum(e for _, e, _ in ivs) >= min_segment_frames * frame
              for iv in ivs]
    unjudged_s = sum(d for ivs in by_segment.values() for _, _, d in ivs) - sum(d for _, _, d in judged)
    got, want, secs = (sum(x[k] for x in judged) for k in range(3))
    per = [g / e - 1 for g, e, _ in judged]
    out: dict[str, object] = {"seconds": secs, "intervals": len(per), "unjudged_seconds": unjudged_s,
                              "min_backlog_bytes": min_backlog_bytes, "samples": len(samples)}
    if secs < min_seconds or want <= 0:
        out["rel_err"] = None
        out["note"] = f"tbf had a backlog for only {secs:.2f} s of samples: rate not checked"
        return out
    per.sort()
    out["rel_err"] = got / want - 1
    out["interval_p5"] = per[int(0.05 * (len(per) - 1))]
    out["interval_p95"] = per[int(0.95 * (len(per) - 1))]
    return out


def softnet_drops() -> dict[str, int]:
    """The host's network receive backlog counters, summed over CPUs (/proc/net/softnet_stat:
    ``dropped``, packets dropped because a CPU's backlog was full; ``time_squeeze``, times the
    receive softirq ran out of budget).  Host-wide: other traffic counts too."""
    dropped = squeeze = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/softnet_stat").read_text().split("\n"):
            f = line.split()
            if len(f) >= 3:
                dropped += int(f[1], 16)
                squeeze += int(f[2], 16)
    return {"dropped": dropped, "time_squeeze": squeeze}


def cleanup_namespace(ns: str) -> None:
    """Kills whatever still runs in ns, then deletes it (with its veths, qdiscs, rules)."""
    p = run(["ip", "netns", "pids", ns], check=False)
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
    run(["ip", "netns", "del", ns], check=False)


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
    nss = [line.split()[0] for line in run(["ip", "netns", "list"], check=False).stdout.splitlines()
           if line.strip().startswith(prefix)]
    links = []
    for line in run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
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
        run(["ip", "link", "del", dev], check=False)
    return found
