"""EXPERIMENTAL variants of ``jaxcc.sim.core.step`` that measured proposed core fixes.

Historical: these are copies of the core as it was BEFORE the model correction (feedback in a
one-tick window), kept to reproduce the measurements that led to the current core, which now
spreads each tick's feedback over its FIFO departure interval (the ``spread_feedback`` idea, in
O(1) ring slots) and caps the backlog a packet sees (``cap_backlog``).  Installing one replaces the
current core with the old dynamics plus that change.

Not used by the tests; ``tests/fidelity_report.py --variant=...`` installs one (monkeypatching
``core.step``, which ``runner.make_run`` looks up at trace time) to show what a fix would change.

* ``split_feedback``: the tick's ACK/loss feedback is split between the two tick starts around
  its (mid-tick) arrival time, weighted by the fractional delay: slot j collects arrivals in
  [(j - 1/2) dt, (j + 1/2) dt), so feedback is on average neither early nor late.  (The core
  used to round to one slot; it now splits too, but slot j collects [j dt, (j + 1) dt): half a
  tick early on average.)
* ``spread_feedback``: the tick's feedback is spread uniformly over the interval in which its
  bytes leave the FIFO — from ``q/c`` after the tick start to ``(q + admitted)/c`` after it (or the
  tick end, if the link idles) — shifted by the RTT, over at most ``SPREAD_SLOTS`` tick slots.
  Then feedback can never arrive faster than the link serves (a packet link's ACK clock), which
  assigning a whole tick's bytes to one departure instant (their mean backlog) does not ensure.
* ``cap_backlog``: the backlog an admitted packet waits behind is at most ``buffer - MSS``
  (drop-tail admits a packet only if it fits), so the wait is at most ``buffer / c``.

This is a plain, unoptimised copy of the dynamics of ``core.step`` (same state layout) with
those two changes; it is checked for conservation by the report's numbers only.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxcc.sim import core
from jaxcc.sim.core import SimState, TickOut, bytes_servable, flow_active, time_to_serve
from jaxcc.units import MSS

_ORIGINAL = core.step


SPREAD_SLOTS = 16


def make_step(split_feedback: bool, cap_backlog: bool, spread_feedback: bool = False):
    def step(p, s, rate, cwnd):
        dt = p.dt
        h = s.ring.shape[0]
        t0 = s.tick.astype(dt.dtype) * dt
        t1 = t0 + dt
        active = flow_active(p, t0)
        flows = jnp.arange(p.rtt.shape[-1])
        acked, lost, rtt_wsum = s.pending[:, 0], s.pending[:, 1], s.pending[:, 2]
        inflight = s.inflight - acked - lost
        allowance = jnp.maximum(cwnd - inflight, 0.0)
        sent = jnp.where(active, jnp.minimum(jnp.maximum(rate, 0.0) * dt, allowance), 0.0)
        arriving = sent * (1.0 - p.loss)
        total = jnp.sum(arriving)
        servable = bytes_servable(p, t0, t1)
        backlog = s.queue + total - servable
        overflow = jnp.maximum(backlog - p.buffer_bytes, 0.0)
        drop = jnp.where(total > 0, jnp.minimum(overflow / jnp.maximum(total, 1e-30), 1.0), 0.0)
        admitted = arriving * (1.0 - drop)
        lost_now = sent - admitted
        queue = jnp.clip(backlog - overflow, 0.0, p.buffer_bytes)
        served = s.queue + jnp.sum(admitted) - queue
        seen = 0.5 * (s.queue + queue)
        if cap_backlog:
            seen = jnp.minimum(seen, jnp.maximum(p.buffer_bytes - MSS, 0.0))
        qdelay = time_to_serve(p, t0 + 0.5 * dt, seen + MSS)
        owd = qdelay + 0.5 * p.rtt
        r = qdelay + p.rtt
        x = (0.5 * dt + r) / dt  # arrival, in ticks after this tick's start
        if split_feedback:
            d0 = jnp.floor(x)
            w1 = x - d0
        else:
            d0 = jnp.floor(0.5 + x)
            w1 = jnp.zeros_like(x)
        d0 = jnp.clip(d0.astype(jnp.int32), 1, h - 2)
        sched = jnp.stack([admitted, lost_now, admitted * r], axis=-1)
        if spread_feedback:
            c = servable / dt
            start = s.queue / jnp.maximum(c, 1e-30) + MSS / jnp.maximum(c, 1e-30)  # s after t0
            end = jnp.maximum(start + jnp.sum(admitted) / jnp.maximum(c, 1e-30), dt + MSS / jnp.maximum(c, 1e-30))
            a = (start + p.rtt) / dt + 0.5  # slot j collects arrivals in (j - 0.5, j + 0.5] ticks
            b = (end + p.rtt) / dt + 0.5
            j0 = jnp.floor(a)
            ring = s.ring
            for k in range(SPREAD_SLOTS):
                lo = jnp.maximum(a, j0 + k)
                hi = jnp.where(k == SPREAD_SLOTS - 1, b, jnp.minimum(b, j0 + k + 1))
                w = jnp.maximum(hi - lo, 0.0) / jnp.maximum(b - a, 1e-9)
                slot = jnp.mod(s.tick + jnp.clip(j0.astype(jnp.int32) + k, 1, h - 1), h)
                ring = ring.at[slot, flows].add(sched * w[:, None])
            nxt = jnp.mod(s.tick + 1, h)
            pending = ring[nxt]
            ring = ring.at[nxt].set(0.0)
            new = SimState(tick=s.tick + 1, queue=queue, ring=ring, pending=pending, inflight=inflight + sent,
                           sent_total=s.sent_total + sent, acked_total=s.acked_total + acked,
                           lost_total=s.lost_total + lost, admitted_total=s.admitted_total + jnp.sum(admitted),
                           served_total=s.served_total + served, clamped=s.clamped)
            return new, TickOut(time=t1, active=active, sent=sent, acked=acked, lost=lost, rtt_wsum=rtt_wsum,
                                inflight=new.inflight, admitted=admitted, owd=owd, qdelay=qdelay,
                                capacity=servable / dt, queue=queue, served=served)
        ring = s.ring.at[jnp.mod(s.tick + d0, h), flows].add(sched * (1.0 - w1)[:, None])
        ring = ring.at[jnp.mod(s.tick + d0 + 1, h), flows].add(sched * w1[:, None])
        nxt = jnp.mod(s.tick + 1, h)
        pending = ring[nxt]
        ring = ring.at[nxt].set(0.0)
        new = SimState(tick=s.tick + 1, queue=queue, ring=ring, pending=pending, inflight=inflight + sent,
                       sent_total=s.sent_total + sent, acked_total=s.acked_total + acked,
                       lost_total=s.lost_total + lost, admitted_total=s.admitted_total + jnp.sum(admitted),
                       served_total=s.served_total + served, clamped=s.clamped)
        out = TickOut(time=t1, active=active, sent=sent, acked=acked, lost=lost, rtt_wsum=rtt_wsum,
                      inflight=new.inflight, admitted=admitted, owd=owd, qdelay=qdelay, capacity=servable / dt,
                      queue=queue, served=served)
        return new, out

    return step


def install(names: set[str]):
    """Replace ``core.step`` by the variant with the named changes (``{'split_feedback', ...}``)."""
    unknown = names - {"split_feedback", "cap_backlog", "spread_feedback"}
    if unknown:
        raise ValueError(f"unknown variant(s) {sorted(unknown)}")
    core.step = make_step("split_feedback" in names, "cap_backlog" in names, "spread_feedback" in names)


def uninstall():
    core.step = _ORIGINAL
