"""The fluid/queue network model: one bottleneck link shared by up to F flows.

Everything here is a pure function of pytrees with fixed shapes, so a batch of links is just
``jax.vmap(step)`` and a run is ``lax.scan(step)``.  The model, per link and per tick of length
``dt`` seconds:

    sender ──(rate, cwnd)──► random loss ──► drop-tail FIFO (buffer B bytes, capacity c(t)) ──►
           propagation RTT/2 ──► receiver ──► ACK, propagation RTT/2 ──► sender

* Sending.  A flow that is active during the tick sends ``min(rate·dt, max(cwnd − inflight, 0))``
  bytes, so rate-based senders (Aurora, Pareto, Eagle, DeepCC) pass ``cwnd = BIG`` and
  window-based senders (CUBIC, MOCC) pass their window and optionally a pacing rate.
* Loss.  A fraction ``loss`` of what is sent is lost at random (the fluid model uses the
  mean); then drop-tail drops the overflow above the buffer,
  shared between flows in proportion to their arrivals in the tick (the usual fluid
  approximation of tail drops).  A link with ``granular`` (``jaxcc.sim.granular``) instead
  splits the drops by whole packets and loses random bytes in discrete events, keyed by the
  tick; without it the model is deterministic.
* Delay.  Bytes admitted in a tick wait behind the mean backlog of the tick (at most the buffer
  less one packet, as an admitted packet had to fit).  Because the
  capacity schedule is known ahead (constant, steps, random walk drawn at reset, or a trace),
  the time to serve that backlog is computed *exactly* from the cumulative capacity — FIFO
  timing stays right when the capacity changes while bytes are queued.  The wait includes the
  bytes' own serialisation (one MSS), as in a packet-level queue.
* Feedback.  The sender learns of delivery, loss and the RTT sample one path delay later.
  The tick's admitted bytes leave the FIFO one after another over their departure interval
  (from when the backlog ahead of them is served until they are, at least until the tick's
  end), and their ACKs (and loss notices) arrive one propagation RTT after that, spread
  uniformly over the interval: on a busy link the ACKs come back at the link's rate, as a
  packet link clocks them.  Each flow keeps a ring of future ticks; a tick's feedback is split
  over the (up to ``LinkParams.feedback_slots``) ticks its arrival interval overlaps.  This is the fluid
  counterpart of a packet simulator's event queue, and it is what makes the feedback delayed
  by a real RTT rather than instantaneous.

Cost does not depend on the link rate: a tick is a fixed number of floating-point operations
whether the link carries 1 Mbit/s or 1 Gbit/s.  The tick length is chosen per link as a fixed
fraction of the smallest propagation RTT (``ticks_per_rtt``), so a monitor interval of k RTTs
is always ``k · ticks_per_rtt`` ticks — a static loop length, which keeps the environments'
``step`` jittable without dynamic shapes.

Conservation is exact by construction and checked by the tests: per flow,
``sent = acked + lost + inflight`` and ``inflight`` equals what the feedback ring still holds;
per link, ``admitted − served = queue``.

Units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc.sim import granular as gr  # GRANULAR: packet-granular drops, random-loss events, drops beyond the ACK clock
from jaxcc.sim import realism as rz  # REALISM: jitter, ACK aggregation, RTT noise, cross traffic
from jaxcc.units import MSS

BIG = 1e30  # "unlimited" for cwnd or rate; finite so that arithmetic never makes inf - inf.
# Padding value for unused capacity-schedule segments: never reached by any real time/bytes.
PAD = 3e38
# Ring slots one tick's feedback is spread over by default (``LinkParams.feedback_slots``; see
# ``step``, 5.): its ACKs arrive over the FIFO departure interval of its bytes, exact up to a burst
# of FEEDBACK_SLOTS − 1 ticks of capacity.
FEEDBACK_SLOTS = 4
FEEDBACK_SLOTS_RANGE = (1, 16)  # the counts a run may ask for (``jaxcc.fidelity``/``jaxcc.bench --feedback_slots``)


@struct.dataclass
class LinkParams:
    """One link (add a leading axis and vmap for a batch).  All leaves are arrays.

    Attributes:
      dt: tick length in seconds.
      cap_t: [K] start time of each capacity segment (s), ascending, ``cap_t[0] == 0``; unused
        trailing segments are padded with ``PAD``.
      cap_bps: [K] capacity of each segment in bytes/s (0 allowed: an outage).
      cap_cum: [K] bytes the link can serve from time 0 to ``cap_t[k]`` (padded with ``PAD``).
      cap_period: schedule period in s (a looping trace); 0 means the last segment holds.
      cap_period_bytes: bytes served in one period (0 when not looping).
      buffer_bytes: drop-tail buffer in bytes.
      loss: random loss probability applied to every byte sent, in [0, 1).
      rtt: [F] propagation round-trip time of each flow (s).
      start: [F] time each flow starts sending (s).
      stop: [F] time each flow stops (s); padding slots have ``start == stop``.
      realism: non-congestive effects (``jaxcc.sim.realism.Realism``) or ``None`` (none: the
        model below, bit for bit).
      granular: packet-granular drops and random-loss events (``jaxcc.sim.granular.Granular``)
        or ``None`` (the fluid split and mean loss below, bit for bit).
      feedback_slots: ring slots one tick's feedback is spread over (static, the same for a
        whole batch; default ``FEEDBACK_SLOTS``): a departure interval longer than
        ``feedback_slots − 1`` ticks is compressed into them.  A resolution of the model, like
        the ticks per RTT: ``jaxcc.fidelity --feedback_slots`` and ``jaxcc.bench
        --feedback_slots`` measure its error against its speed.
    """

    dt: jax.Array
    cap_t: jax.Array
    cap_bps: jax.Array
    cap_cum: jax.Array
    cap_period: jax.Array
    cap_period_bytes: jax.Array
    buffer_bytes: jax.Array
    loss: jax.Array
    rtt: jax.Array
    start: jax.Array
    stop: jax.Array
    realism: rz.Realism | None = None  # REALISM
    granular: gr.Granular | None = None  # GRANULAR
    feedback_slots: int = struct.field(pytree_node=False, default=FEEDBACK_SLOTS)

    @property
    def num_flows(self) -> int:
        return self.rtt.shape[-1]


@struct.dataclass
class SimState:
    """Per-link dynamic state.

    Attributes:
      tick: index of the next tick to simulate.
      queue: bytes in the bottleneck buffer.
      ring: [H, F, 3] future feedback per flow (time-major): acked bytes, lost bytes, Σ rtt·acked bytes.
      pending: [F, 3] the feedback arriving during the next tick (already out of the ring).
      inflight: [F] bytes sent and not yet acked or known lost.
      sent_total, acked_total, lost_total: [F] cumulative counters (conservation checks).
      admitted_total, served_total: cumulative link counters (queue conservation).
      clamped: ticks whose feedback delay exceeded the ring and was clamped to its end
        (0 whenever the ring was sized from the scenario, see ``ring_len_for``).
      realism: ``jaxcc.sim.realism.RealismState`` when the link has realism, else ``None``.
    """

    tick: jax.Array
    queue: jax.Array
    ring: jax.Array
    pending: jax.Array
    inflight: jax.Array
    sent_total: jax.Array
    acked_total: jax.Array
    lost_total: jax.Array
    admitted_total: jax.Array
    served_total: jax.Array
    clamped: jax.Array
    realism: rz.RealismState | None = None  # REALISM


class TickOut(NamedTuple):
    """What one tick produced.  Per-flow fields are [F]; link fields are scalars.

    ``acked``, ``lost`` and ``rtt_wsum`` are the feedback that *arrived at the sender* during this
    tick (delayed by one path delay); ``admitted``/``owd``/``qdelay`` describe the bytes that
    *entered the queue* during this tick (for delay metrics).
    """

    time: jax.Array  # end of this tick (s)
    active: jax.Array  # [F] flow was active during the tick
    sent: jax.Array  # [F] bytes sent
    acked: jax.Array  # [F] bytes whose ACK arrived
    lost: jax.Array  # [F] bytes the sender learned were lost
    rtt_wsum: jax.Array  # [F] Σ rtt·bytes over the acked bytes (s·bytes)
    inflight: jax.Array  # [F] after the tick
    admitted: jax.Array  # [F] bytes that entered the queue
    owd: jax.Array  # [F] one-way delay of the admitted bytes (s)
    qdelay: jax.Array  # queueing delay of bytes admitted this tick (s)
    capacity: jax.Array  # link capacity during the tick (bytes/s)
    queue: jax.Array  # bytes queued at the end of the tick
    served: jax.Array  # bytes that left the queue
    cross: jax.Array = 0.0  # REALISM: cross-traffic bytes admitted to the queue (0 without it)


# ----------------------------------------------------------------------------- capacity


def _segment(cap_t: jax.Array, t: jax.Array) -> jax.Array:
    k = jnp.searchsorted(cap_t, t, side="right") - 1
    return jnp.clip(k, 0, cap_t.shape[-1] - 1)


def _cum_in_period(p: LinkParams, tm: jax.Array) -> jax.Array:
    """Bytes servable from 0 to ``tm`` (``tm`` inside one period, or any t without looping)."""
    k = _segment(p.cap_t, tm)
    return p.cap_cum[k] + p.cap_bps[k] * (tm - p.cap_t[k])


def _inv_cum_in_period(p: LinkParams, x: jax.Array) -> jax.Array:
    """Earliest time by which ``x`` bytes are servable (inverse of ``_cum_in_period``).

    The segment is the last one that starts with fewer than ``x`` bytes served
    (``side='left'``): bytes that complete exactly when an outage (a zero-capacity segment,
    which repeats the same ``cap_cum``) begins are done at its start, not at its end, while
    bytes beyond that wait for the outage to end.
    """
    k = jnp.clip(jnp.searchsorted(p.cap_cum, x, side="left") - 1, 0, p.cap_cum.shape[-1] - 1)
    rate = p.cap_bps[k]
    rest = x - p.cap_cum[k]
    wait = jnp.where(rate > 0, rest / jnp.maximum(rate, 1e-30), jnp.where(rest <= 0, 0.0, BIG))
    return p.cap_t[k] + wait


def bytes_servable(p: LinkParams, t0: jax.Array, t1: jax.Array, span: jax.Array | None = None) -> jax.Array:
    """Bytes the link can serve in [t0, t1] (t1 - t0 <= one period).

    ``span`` is ``t1 - t0`` when the caller knows it exactly (a tick: ``dt``).  Inside one
    capacity segment the answer is then ``rate · span``: the cumulative form below subtracts two
    byte counts of the order ``rate · t`` and two rounded times, and in float32 that loses up to
    1.6 % of a tick's bytes at t = 300 s (the ulp of 300 s is 30 us, of 7.5e9 bytes 512 B).
    """
    looping = p.cap_period > 0
    period = jnp.where(looping, p.cap_period, 1.0)
    base = jnp.where(looping, jnp.floor(t0 / period) * period, 0.0)
    a, b = t0 - base, t1 - base
    wrap = looping & (b > period)
    inside = _cum_in_period(p, jnp.minimum(b, jnp.where(looping, period, b))) - _cum_in_period(p, a)
    general = inside + jnp.where(wrap, _cum_in_period(p, b - period), 0.0)
    if span is None:
        return general
    k = _segment(p.cap_t, a)
    same = ~wrap & (_segment(p.cap_t, b) == k)
    return jnp.where(same, p.cap_bps[k] * span, general)


def time_to_serve(p: LinkParams, t: jax.Array, nbytes: jax.Array) -> jax.Array:
    """Seconds after ``t`` until ``nbytes`` more bytes have been served (queue never idle)."""
    looping = p.cap_period > 0
    period = jnp.where(looping, p.cap_period, 1.0)
    base = jnp.where(looping, jnp.floor(t / period) * period, 0.0)
    tm = t - base
    x = _cum_in_period(p, tm) + nbytes
    per_bytes = jnp.where(looping, jnp.maximum(p.cap_period_bytes, 1e-30), 1.0)
    # Whole laps before the one in which the last byte is served; ``x_in`` lies in (0, lap]
    # so a total that is an exact multiple of a lap ends at the last on-time of that lap.
    laps = jnp.where(looping, jnp.maximum(jnp.ceil(x / per_bytes) - 1.0, 0.0), 0.0)
    x_in = x - laps * jnp.where(looping, p.cap_period_bytes, 0.0)
    done = laps * jnp.where(looping, p.cap_period, 0.0) + _inv_cum_in_period(p, x_in)
    general = jnp.maximum(done - tm, 0.0)
    # Inside one capacity segment the wait is nbytes / rate; the cumulative form above loses
    # its precision to the large byte and time counts late in a run (float32: up to 14 % of a
    # 3 KB wait at 200 Mbit/s and t = 300 s).
    k = _segment(p.cap_t, tm)
    rate = p.cap_bps[k]
    wait = nbytes / jnp.maximum(rate, 1e-30)
    seg_end = jnp.minimum(jnp.where(k + 1 < p.cap_t.shape[-1], p.cap_t[jnp.minimum(k + 1, p.cap_t.shape[-1] - 1)], PAD),
                          jnp.where(looping, p.cap_period, PAD))
    fits = (rate > 0) & (tm + wait <= seg_end)
    return jnp.where(fits, wait, general)


def capacity_at(p: LinkParams, t: jax.Array) -> jax.Array:
    """Instantaneous capacity (bytes/s) at time ``t``."""
    looping = p.cap_period > 0
    tm = jnp.where(looping, jnp.mod(t, jnp.where(looping, p.cap_period, 1.0)), t)
    return p.cap_bps[_segment(p.cap_t, tm)]


# ----------------------------------------------------------------------------- dynamics


def init_state(p: LinkParams, ring_len: int) -> SimState:
    """An empty link: no queue, nothing in flight."""
    f = p.rtt.shape[-1]
    zf = jnp.zeros((f,), jnp.result_type(p.rtt))
    z = jnp.zeros((), jnp.result_type(p.rtt))
    return SimState(
        tick=jnp.zeros((), jnp.int32),
        queue=z,
        ring=jnp.zeros((ring_len, f, 3), jnp.result_type(p.rtt)),
        pending=jnp.zeros((f, 3), jnp.result_type(p.rtt)),
        inflight=zf,
        sent_total=zf,
        acked_total=zf,
        lost_total=zf,
        admitted_total=z,
        served_total=z,
        clamped=jnp.zeros((), jnp.int32),
        realism=rz.init_state(p.realism),  # REALISM
    )


def flow_active(p: LinkParams, t: jax.Array) -> jax.Array:
    """[F] whether each flow sends during the tick starting at ``t``."""
    return (t >= p.start) & (t < p.stop)


def step(p: LinkParams, s: SimState, rate: jax.Array, cwnd: jax.Array) -> tuple[SimState, TickOut]:
    """Advance one link by one tick.

    Args:
      p: link parameters.
      s: state before the tick.
      rate: [F] pacing rate of each flow (bytes/s); ``BIG`` for window-only senders.
      cwnd: [F] congestion window (bytes); ``BIG`` for rate-only senders.

    Returns:
      The state after the tick and what happened during it.
    """
    dt = p.dt
    ring_len = s.ring.shape[0]
    slots = p.feedback_slots
    t0 = s.tick.astype(dt.dtype) * dt
    t1 = t0 + dt
    active = flow_active(p, t0)

    # 1. Feedback arriving at the senders during this tick (scheduled by earlier ticks; it was
    #    taken out of the ring at the end of the previous tick, see step 6).
    flows = jnp.arange(p.rtt.shape[-1])
    acked, lost, rtt_wsum = s.pending[:, 0], s.pending[:, 1], s.pending[:, 2]
    inflight = s.inflight - acked - lost

    # 2. Sending: paced, and limited by the window.
    allowance = jnp.maximum(cwnd - inflight, 0.0)
    sent = jnp.where(active, jnp.minimum(jnp.maximum(rate, 0.0) * dt, allowance), 0.0)

    # 3. Random loss, then drop-tail on the overflow above the buffer.
    if p.granular is None:
        arriving = sent * (1.0 - p.loss)
    else:  # GRANULAR: random loss in discrete events
        ug = gr.tick_uniforms(p.granular, s.tick, p.num_flows, dt.dtype)
        arriving = gr.random_loss(p.granular, ug[:p.num_flows], sent, p.loss)
    total_arriving = jnp.sum(arriving)
    if p.realism is not None:  # REALISM: unresponsive cross traffic joins the queue
        cross_in = rz.cross_offered(p.realism, t0, t1)
        total_arriving = total_arriving + cross_in
    servable = bytes_servable(p, t0, t1, dt)
    backlog = s.queue + total_arriving - servable
    overflow = jnp.maximum(backlog - p.buffer_bytes, 0.0)
    drop_frac = jnp.where(total_arriving > 0, jnp.minimum(overflow / jnp.maximum(total_arriving, 1e-30), 1.0), 0.0)
    if p.granular is None:
        admitted = arriving * (1.0 - drop_frac)
    else:  # GRANULAR: the flows' share of the overflow split by whole packets, or beyond the ACK clock first
        admitted = gr.split_overflow(p.granular, ug[p.num_flows], ug[p.num_flows + 1:], arriving,
                                     drop_frac * jnp.sum(arriving), sent, acked + lost)
    lost_now = sent - admitted
    queue = jnp.clip(backlog - overflow, 0.0, p.buffer_bytes)
    served = s.queue + jnp.sum(admitted) - queue
    cross_adm = jnp.zeros((), queue.dtype)
    if p.realism is not None:  # REALISM: its share of the drops; it is served FIFO with the flows
        cross_adm = cross_in * (1.0 - drop_frac)
        served = served + cross_adm

    # 4. Queueing delay of this tick's bytes: FIFO behind the mean backlog of the tick, plus
    #    their own serialisation, timed against the known capacity schedule.
    #    An admitted packet never waits behind more than ``buffer − MSS`` bytes (it had to fit).
    t_mid = t0 + 0.5 * dt
    ahead = jnp.minimum(0.5 * (s.queue + queue), jnp.maximum(p.buffer_bytes - MSS, 0.0))
    qdelay = time_to_serve(p, t_mid, ahead + MSS)
    owd = qdelay + 0.5 * p.rtt
    rstate = s.realism
    if p.realism is not None:  # REALISM: non-congestive jitter after the queue (one-way and RTT)
        u = rz.tick_uniforms(p.realism, s.tick, 1 + p.rtt.shape[-1], dt.dtype)
        jit, rstate = rz.jitter(p.realism, s.realism, u[0], t_mid + qdelay)
        rstate = rz.cross_update(rstate, cross_in, cross_adm)
        owd = owd + jit

    # 5. Schedule their ACKs (and loss notifications) one path delay later, clocked by the link.
    #    FIFO: the tick's admitted bytes leave the queue one after another, from when the backlog
    #    ahead of them is served (``dep_a``) until the last of them is (``dep_b``; at least the
    #    tick's end, when the link is faster than they arrive), each after its own serialisation
    #    (one MSS).  Their ACKs reach the sender one propagation RTT later, spread uniformly over
    #    that departure interval, so the ACK rate of a busy link is its capacity — a packet
    #    link's ACK clock — however bursty the sending was.  (Before: every tick's ACKs arrived
    #    within one tick-wide window, so a burst of sending came back as a burst of ACKs: ACK
    #    compression that inflated delivery-rate samples and slow-start overshoot.)  A dropped
    #    packet is noticed when the packets sent next to it are acked, i.e. at the same time.
    #    Feedback credited to a tick is usable from that tick's start, so arrival times are
    #    shifted by half a tick: on average an ACK is then used when it arrives.  The interval
    #    is split over ``p.feedback_slots`` ring slots in proportion to the overlap; an interval longer
    #    than that (a burst of over ``feedback_slots`` − 1 ticks of capacity) is compressed into them.
    total_admitted = jnp.sum(admitted)
    if p.realism is not None:  # REALISM: cross traffic leaves the FIFO with the flows' bytes
        total_admitted = total_admitted + cross_adm
    waits = time_to_serve(p, t0, jnp.stack([s.queue + MSS, s.queue + total_admitted + MSS, jnp.asarray(MSS, dt.dtype)]))
    dep_a, dep_b = waits[0], jnp.maximum(waits[1], dt + waits[2])
    # Clamp in float (outages give ~1e30) before any conversion to int.
    width = jnp.clip((dep_b - dep_a) / dt, 1e-6, ring_len)  # ticks
    s_a = jnp.minimum((dep_a + p.rtt) / dt + 0.5, ring_len)  # [F] slot coordinates
    j0_f = jnp.floor(s_a)
    over = j0_f > ring_len - 2
    j0 = jnp.clip(j0_f.astype(jnp.int32), 1, ring_len - 2)
    j0_fc = j0.astype(dt.dtype)
    a_c = jnp.clip(s_a, j0_fc, j0_fc + slots)
    b_c = jnp.clip(s_a + width, a_c, j0_fc + slots)
    w_c = jnp.maximum(b_c - a_c, 1e-9)
    ks = jnp.arange(slots, dtype=dt.dtype)
    lo_e = jnp.maximum(a_c[:, None], j0_fc[:, None] + ks)  # [F, S]
    hi_e = jnp.minimum(b_c[:, None], j0_fc[:, None] + ks + 1.0)
    # Share of the tick's bytes that arrives up to the end of each slot (1 at the last slot), as
    # differences of a non-decreasing cumulative share: every part is >= 0 and they add up to
    # the whole, so bytes are conserved.
    cum = jnp.clip((hi_e - a_c[:, None]) / w_c[:, None], 0.0, 1.0).at[:, -1].set(1.0)
    # Byte fraction x of the tick (sent at x·dt, ACKed at s_a + x·width − ½) gives each slot's
    # mean RTT (RTT is linear in x, so its mean is the RTT at the slot's mean x).
    x_mid = jnp.clip((0.5 * (lo_e + hi_e) - a_c[:, None]) / w_c[:, None], 0.0, 1.0)
    rtt_slot = (s_a[:, None] - 0.5 + x_mid * (width - 1.0)) * dt  # [F, S] seconds
    upto = jnp.stack([admitted[:, None] * cum, lost_now[:, None] * cum], axis=-1)  # [F, S, 2]
    part2 = upto - jnp.concatenate([jnp.zeros_like(upto[:, :1]), upto[:, :-1]], axis=1)
    parts = jnp.concatenate([part2, (part2[..., 0] * rtt_slot)[..., None]], axis=-1)  # [F, S, 3]
    targets = jnp.mod(s.tick + jnp.minimum(j0[:, None] + jnp.arange(slots), ring_len - 1), ring_len)
    if p.realism is not None:  # REALISM: jitter delays the ACKs; ACK aggregation moves and lumps them
        offs, over, cum, rtt_slot = rz.feedback_slots(p.realism, t0, dt, jnp.minimum(s_a + jit / dt, ring_len), width,
                                                      ring_len, slots)
        upto = jnp.stack([admitted[:, None] * cum, lost_now[:, None] * cum], axis=-1)
        part2 = upto - jnp.concatenate([jnp.zeros_like(upto[:, :1]), upto[:, :-1]], axis=1)
        parts = jnp.concatenate([part2, (part2[..., 0] * rtt_slot)[..., None]], axis=-1)
        targets = jnp.mod(s.tick + offs, ring_len)

    # 6. Take out the feedback that arrives during the next tick (it becomes ``pending``) and
    #    empty that slot by subtracting it (exactly 0.0).  Everything is one gather from the old
    #    ring and one scatter-add into it, with indices promised in bounds: a ``.set`` or a
    #    bounds-checked update at a batched index makes XLA select over the whole ring, and a
    #    second read after the update makes it copy the ring, both O(ring length) per tick.
    #    Parts of this tick's bytes due in the next tick (a path delay under two ticks) are
    #    handed over directly.
    nxt = jnp.mod(s.tick + 1, ring_len)
    waiting = s.ring.at[nxt, flows].get(mode="promise_in_bounds")  # [F, 3]
    to_next = (targets == nxt)[..., None]  # [F, S, 1]
    # (Summed slot by slot, left to right: a reduction over the slot axis ran as a single-threaded
    # library reduction on CPU, 15–20 % of the bare model's time at 16,384 links.)
    nxt_parts = jnp.where(to_next, parts, 0.0)
    pending = nxt_parts[:, 0]
    for k in range(1, slots):
        pending = pending + nxt_parts[:, k]
    pending = waiting + pending
    next_slot = jnp.broadcast_to(nxt, flows.shape)
    nf = flows.shape[0]
    ring = s.ring.at[jnp.concatenate([targets.reshape(-1), next_slot]),
                     jnp.concatenate([jnp.repeat(flows, slots), flows])].add(
        jnp.concatenate([jnp.where(to_next, 0.0, parts).reshape(nf * slots, 3), -waiting]),
        mode="promise_in_bounds")

    new = SimState(
        tick=s.tick + 1,
        queue=queue,
        ring=ring,
        pending=pending,
        inflight=inflight + sent,
        sent_total=s.sent_total + sent,
        acked_total=s.acked_total + acked,
        lost_total=s.lost_total + lost,
        admitted_total=s.admitted_total + total_admitted,  # REALISM: includes cross traffic
        served_total=s.served_total + served,
        clamped=s.clamped + jnp.any(over & (sent > 0)).astype(jnp.int32),
        realism=rstate,
    )
    if p.realism is not None:  # REALISM: the RTT samples the senders see are noisy
        rtt_wsum = rz.observe_rtt(p.realism, u[1:], acked, rtt_wsum)
    out = TickOut(
        time=t1,
        active=active,
        sent=sent,
        acked=acked,
        lost=lost,
        rtt_wsum=rtt_wsum,
        inflight=new.inflight,
        admitted=admitted,
        owd=owd,
        qdelay=qdelay,
        capacity=servable / dt,
        queue=queue,
        served=served,
        cross=cross_adm,  # REALISM
    )
    return new, out
