"""A packet-level, event-driven reference simulator of one bottleneck link.

It is deliberately small and plain (Python + NumPy + ``heapq``) so that it can be checked by
eye; the fluid model in ``jaxcc.sim.core`` is tested against it.

The path of every flow::

    sender ──► random loss ──► drop-tail FIFO (buffer B bytes, capacity c) ──► RTT/2 ──► receiver
       ▲                                                                                  │
       └──────────────────────────────── ACK, RTT/2 ◄─────────────────────────────────────┘

* Packets are ``MSS`` = 1500 bytes.  The bottleneck sits right after the sender, so a packet
  reaches the queue at the instant it is sent.
* Random loss: each packet is lost with probability ``loss`` on arrival (a seeded NumPy
  ``Generator``; one draw per packet, in sending order).
* Queue: one FIFO server of constant capacity ``c`` bytes/s.  Its state is a single number,
  ``busy_until``: the time at which the server finishes every packet accepted so far.  The
  unfinished work (backlog, in bytes, including what is left of the packet in service) seen by
  a packet arriving at ``t`` is ``max(busy_until - t, 0) · c``.  The packet is dropped (drop-tail)
  if that backlog plus the packet itself would exceed the buffer; otherwise it leaves the queue
  at ``depart = max(t, busy_until) + MSS/c`` (it waits for the backlog, then is serialised).
* Delays: one-way delay = ``depart - t + RTT/2`` (wait + serialisation + propagation); the ACK
  reaches the sender at ``depart + RTT``.
* Loss detection: a flow's packets stay in order (one FIFO, one propagation delay), so when the
  ACK of packet ``k`` arrives, every earlier packet of that flow that is still outstanding was
  lost — the sender learns of it then (like duplicate ACKs), never by oracle knowledge.  A
  retransmission timeout covers the case in which no later packet gets through (a whole window
  lost): RTO = 2 x the path's largest possible RTT (propagation + full buffer + one packet), a
  well-tuned timer that is never spurious (a fixed 1 s initial RTO would stall flows whose
  initial window is dropped for longer than many short test runs).
* No retransmissions: the senders are traffic sources; a lost packet is counted, not resent.

Metrics per flow (``FlowResult``): goodput = bytes whose ACK arrived while the flow was active
over its active time; p95 one-way delay of the delivered packets; loss = lost / sent packets.
``Result.packets`` holds one row per packet for debugging.

Senders (one object per flow) see only what a real sender sees: ACKs with their RTT samples,
losses when detected (with the send time of the latest lost packet), their own inflight.  Each has ``cwnd`` (bytes) and ``pacing_rate``
(bytes/s; ``inf`` = unpaced).  The simulator sends a packet whenever the window allows it and
the pacing timer has expired.  A packet may be sent when ``inflight + MSS/2 <= cwnd`` — the
window is rounded to the *nearest* whole packet, so on average a packet sender keeps the same
bytes in flight as a fluid sender with the same (fractional) window.

Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import math

import numpy as np

MSS = 1500.0
INF = math.inf

# Fate of a packet in the per-packet log.
DELIVERED, RANDOM_LOSS, DROPPED = 0, 1, 2


# ----------------------------------------------------------------------------- senders


class ConstantRate:
    """Sends at a fixed rate (bytes/s), paced, no window: ``fixed:MBPS``."""

    def __init__(self, rate: float):
        self.rate = float(rate)
        self.cwnd = INF

    @property
    def pacing_rate(self) -> float:
        return self.rate

    def on_ack(self, now, nbytes, rtt, inflight):
        pass

    def on_loss(self, now, nbytes, inflight, sent_at):
        pass


class AIMD:
    """A Reno-like window sender (unpaced, ACK-clocked).

    * Slow start from ``IW`` (cwnd += acked bytes) until the first loss event.
    * Congestion avoidance: cwnd += MSS · acked / cwnd, i.e. +1 MSS per RTT.
    * A loss event halves cwnd (at least ``MIN_CWND``) and ends slow start.  Only the loss of a
      packet sent *after* the last cut is a new event; losses of packets sent before it belong to
      the episode that caused the cut (NewReno's recovery point): at most one halving per RTT.
    """

    IW = 10 * MSS
    MIN_CWND = 2 * MSS

    def __init__(self):
        self.cwnd = self.IW
        self.ssthresh = INF
        self.last_cut = -INF
        self.latest_rtt = 0.0
        self.pacing_rate = INF

    def on_ack(self, now, nbytes, rtt, inflight):
        self.latest_rtt = rtt
        if self.cwnd < self.ssthresh:
            self.cwnd += nbytes
        else:
            self.cwnd += MSS * nbytes / self.cwnd

    def on_loss(self, now, nbytes, inflight, sent_at):
        if sent_at > self.last_cut:
            self.cwnd = max(self.cwnd / 2.0, self.MIN_CWND)
            self.ssthresh = self.cwnd
            self.last_cut = now


class BBRLike:
    """A simple BBR-like sender: paced at ``gain · BtlBw``, window capped at 2 · BDP estimate.

    Time is cut into *phases* of one min RTT (a phase ends at the first ACK at least one min RTT
    after it began; phases start at the first ACK).  At the end of each phase the delivery rate
    of that phase — bytes ACKed during it / its length — is one bandwidth sample; BtlBw is the
    largest of the last ``BW_WINDOW`` samples.  Min RTT is the smallest RTT sample so far.

    * Before the first sample: window ``IW``, unpaced.
    * STARTUP: pacing gain 2.89 until BtlBw has not grown by 25 % for 3 phases, then
    * DRAIN: pacing gain 1/2.89 until inflight <= BDP estimate (BtlBw · min RTT), then
    * PROBE_BW: pacing gains cycle through ``GAINS``, one per phase, starting at 1.25.
    * cwnd = max(2 · BtlBw · min RTT, ``MIN_CWND``) once BtlBw is known.
    Loss is ignored.
    """

    IW = 10 * MSS
    MIN_CWND = 4 * MSS
    HIGH_GAIN = 2.89
    GAINS = (1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    BW_WINDOW = 10
    STARTUP, DRAIN, PROBE_BW = 0, 1, 2

    def __init__(self):
        self.mode = self.STARTUP
        self.min_rtt = INF
        self.samples: collections.deque = collections.deque(maxlen=self.BW_WINDOW)
        self.btlbw = 0.0
        self.phase_start = None
        self.phase_acked = 0.0
        self.full_bw = 0.0
        self.full_cnt = 0
        self.cycle = 0

    @property
    def cwnd(self) -> float:
        if self.btlbw <= 0:
            return self.IW
        return max(2.0 * self.btlbw * self.min_rtt, self.MIN_CWND)

    @property
    def pacing_rate(self) -> float:
        if self.btlbw <= 0:
            return INF
        gain = {self.STARTUP: self.HIGH_GAIN, self.DRAIN: 1.0 / self.HIGH_GAIN,
                self.PROBE_BW: self.GAINS[self.cycle]}[self.mode]
        return gain * self.btlbw

    def on_ack(self, now, nbytes, rtt, inflight):
        self.min_rtt = min(self.min_rtt, rtt)
        if self.phase_start is None:
            self.phase_start = now
        self.phase_acked += nbytes
        if now - self.phase_start >= self.min_rtt:
            self._end_phase(now)
        if self.mode == self.DRAIN and inflight <= self.btlbw * self.min_rtt:
            self.mode, self.cycle = self.PROBE_BW, 0

    def _end_phase(self, now):
        self.samples.append(self.phase_acked / (now - self.phase_start))
        self.btlbw = max(self.samples)
        self.phase_start, self.phase_acked = now, 0.0
        if self.mode == self.STARTUP:
            if self.btlbw >= 1.25 * self.full_bw:
                self.full_bw, self.full_cnt = self.btlbw, 0
            else:
                self.full_cnt += 1
                if self.full_cnt >= 3:
                    self.mode = self.DRAIN
        elif self.mode == self.PROBE_BW:
            self.cycle = (self.cycle + 1) % len(self.GAINS)

    def on_loss(self, now, nbytes, inflight, sent_at):
        pass


# ----------------------------------------------------------------------------- simulator


@dataclasses.dataclass
class Flow:
    """One flow: its propagation RTT (s), active interval [start, stop) (s) and its sender."""

    rtt: float
    start: float
    stop: float
    sender: object


@dataclasses.dataclass
class FlowResult:
    goodput: float  # bytes/s: bytes ACKed during [start, stop) / (stop - start)
    p95_owd: float  # s: 95th percentile one-way delay of delivered packets (nan if none)
    loss: float  # lost / sent packets (0 if nothing sent)
    sent: int  # packets sent
    delivered: int
    lost: int
    rto: int  # retransmission timeouts (whole-window losses)


@dataclasses.dataclass
class Result:
    flows: list[FlowResult]
    packets: dict[str, np.ndarray]  # per packet: flow, seq, t_send, fate, owd, t_ack (nan if lost)


class _FlowState:
    def __init__(self, spec: Flow):
        self.spec = spec
        self.sender = spec.sender
        self.next_seq = 0
        self.next_send = spec.start  # pacing: earliest time of the next packet
        self.timer_at = None  # time of the pending SEND event (None: none pending)
        self.rto_at = None  # time of the pending RTO event
        self.outstanding: collections.deque = collections.deque()  # (seq, t_send), in order
        self.inflight = 0.0
        self.rto_count = 0


def simulate(capacity: float, buffer_bytes: float, loss: float, flows: list[Flow], duration: float,
             seed: int = 0) -> Result:
    """Run the flows over the link until ``duration`` (s); see the module docstring."""
    if capacity <= 0 or buffer_bytes < 0 or not 0 <= loss < 1:
        raise ValueError("need capacity > 0, buffer >= 0, 0 <= loss < 1")
    rng = np.random.default_rng(seed)
    service = MSS / capacity  # serialisation time of one packet
    busy_until = 0.0
    states = [_FlowState(f) for f in flows]
    log = {k: [] for k in ("flow", "seq", "t_send", "fate", "owd", "t_ack")}

    events: list = []  # (time, order, kind, flow index, payload)
    order = 0

    def push(t, kind, i, payload=None):
        nonlocal order
        heapq.heappush(events, (t, order, kind, i, payload))
        order += 1

    def send_one(i, st, now):
        nonlocal busy_until
        seq = st.next_seq
        st.next_seq += 1
        st.outstanding.append((seq, now))
        st.inflight += MSS
        log["flow"].append(i)
        log["seq"].append(seq)
        log["t_send"].append(now)
        # The bottleneck, right after the sender.
        if rng.random() < loss:
            fate, owd, t_ack = RANDOM_LOSS, math.nan, math.nan
        elif max(busy_until - now, 0.0) * capacity + MSS > buffer_bytes * (1 + 1e-12):
            fate, owd, t_ack = DROPPED, math.nan, math.nan
        else:
            depart = max(now, busy_until) + service
            busy_until = depart
            fate, owd, t_ack = DELIVERED, depart - now + 0.5 * st.spec.rtt, depart + st.spec.rtt
            push(t_ack, "ack", i, seq)
        log["fate"].append(fate)
        log["owd"].append(owd)
        log["t_ack"].append(t_ack)
        if st.rto_at is None:
            st.rto_at = now + rto(st)
            push(st.rto_at, "rto", i)

    def rto(st):
        return 2.0 * (st.spec.rtt + (buffer_bytes + MSS) / capacity)

    def try_send(i, now):
        """Send every packet the window and the pacing timer allow at ``now``."""
        st = states[i]
        while st.spec.start <= now < st.spec.stop:
            if st.inflight + 0.5 * MSS > st.sender.cwnd:
                return  # window-limited: the next ACK (or RTO) wakes the sender
            if now < st.next_send:
                if st.timer_at != st.next_send:
                    st.timer_at = st.next_send
                    push(st.next_send, "send", i, st.next_send)
                return
            send_one(i, st, now)
            rate = st.sender.pacing_rate
            st.next_send = max(st.next_send, now) + (MSS / rate if rate < INF else 0.0)

    def on_ack(i, now, seq):
        st = states[i]
        lost, sent_at = 0, None
        while st.outstanding and st.outstanding[0][0] < seq:  # a gap: those packets were lost
            _, sent_at = st.outstanding.popleft()
            st.inflight -= MSS
            lost += 1
        if st.outstanding and st.outstanding[0][0] == seq:
            _, t_send = st.outstanding.popleft()
            st.inflight -= MSS
            st.sender.on_ack(now, MSS, now - t_send, st.inflight)
        if lost:
            st.sender.on_loss(now, lost * MSS, st.inflight, sent_at)
        try_send(i, now)

    def on_rto(i, now):
        st = states[i]
        st.rto_at = None
        if not st.outstanding:
            return
        timeout = rto(st)
        if st.outstanding[0][1] + timeout <= now:
            lost = 0
            while st.outstanding and st.outstanding[0][1] + timeout <= now:
                _, sent_at = st.outstanding.popleft()
                st.inflight -= MSS
                lost += 1
            st.rto_count += 1
            st.sender.on_loss(now, lost * MSS, st.inflight, sent_at)
            try_send(i, now)
        if st.outstanding and st.rto_at is None:
            st.rto_at = max(st.outstanding[0][1] + rto(st), now + 1e-9)
            push(st.rto_at, "rto", i)

    for i, f in enumerate(flows):
        push(f.start, "send", i, f.start)
        states[i].timer_at = f.start

    while events:
        now, _, kind, i, payload = heapq.heappop(events)
        if now >= duration:
            break
        if kind == "ack":
            on_ack(i, now, payload)
        elif kind == "send":
            if states[i].timer_at == payload:  # not superseded by a later timer
                states[i].timer_at = None
                try_send(i, now)
        else:
            on_rto(i, now)

    packets = {k: np.asarray(v, np.float64 if k in ("t_send", "owd", "t_ack") else np.int64)
               for k, v in log.items()}
    results = []
    for i, f in enumerate(flows):
        m = packets["flow"] == i
        fate, owd, t_ack = packets["fate"][m], packets["owd"][m], packets["t_ack"][m]
        delivered = fate == DELIVERED
        acked_in = delivered & (t_ack >= f.start) & (t_ack < min(f.stop, duration))
        active = min(f.stop, duration) - f.start
        n = int(m.sum())
        results.append(FlowResult(
            goodput=float(acked_in.sum() * MSS / active),
            p95_owd=float(np.percentile(owd[delivered], 95, method="inverted_cdf")) if delivered.any()
            else math.nan,
            loss=float((~delivered).sum() / n) if n else 0.0,
            sent=n, delivered=int(delivered.sum()), lost=int((~delivered).sum()),
            rto=states[i].rto_count))
    return Result(results, packets)
