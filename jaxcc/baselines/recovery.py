"""Loss-event bookkeeping shared by the window-based baselines (``cubic``, ``reno``).

One multiplicative decrease per window of losses (RFC 6582's "recover" point, Linux's
``high_seq``): losses of data sent before the decrease are ignored until everything that was in
flight at the loss notice is ACKed or known lost.

Optionally (``TimeoutParams.rto_min`` > 0; off by default) a retransmission timeout: with SACK
and without RACK/TLP (ns-3.37), a loss episode is repaired within one recovery unless a
retransmission is itself lost, which only the timer (at least ``rto_min``) repairs: the flow then
sends nothing until it fires and starts again from one packet (RFC 6298 §5, RFC 5681 §3.1;
ns-3's ``TcpSocketBase::ReTxTimeout``).  The fluid sender has no packets, so ``timeout`` reads
the expected number of lost retransmissions: the bytes lost in the episode (each retransmitted
once) times the loss fraction of the data sent right after the decrease, when they went out
(reported on the tick that ends the recovery); one packet or more times out.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxcc.units import MSS


# A loss event is one packet's worth of dropped bytes (see ``loss_event``).
LOSS_EVENT_BYTES = MSS
# Slack for comparing fluid byte counters (float32 rounding stays far below one byte).
LOSS_EPS_BYTES = 1.0


def loss_event(in_recovery: jax.Array, recovery_left: jax.Array, lost_acc: jax.Array, acked: jax.Array,
               lost: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One tick's recovery bookkeeping.

    Returns ``(rec_left, still_recovering, lost_acc, event)``: the bytes still outstanding from
    before the decrease, whether recovery goes on, the lost bytes counted towards the next event
    (outside recovery), and whether this tick starts a loss event.

    A loss event needs a whole packet: fluid drops are spread over all flows in proportion to
    their arrivals, and counting them up to one MSS before reacting gives the packet-level
    outcome in expectation (a flow that sent little during a short overflow may escape it).  On
    the tick that ends recovery only the losses past the recovery point are new (the tick's
    feedback is a FIFO mix, so they are the lost share of the bytes past it); counting the whole
    tick's losses made the tail of the old loss episode a second decrease.
    """
    rec_left = recovery_left - (acked + lost)
    still_recovering = in_recovery & (rec_left > LOSS_EPS_BYTES)
    _, lost_new = past_recovery_point(in_recovery, recovery_left, acked, lost)
    lost_acc = jnp.where(still_recovering, 0.0, lost_acc + lost_new)
    event = (lost_acc >= LOSS_EVENT_BYTES) & ~still_recovering
    lost_acc = jnp.where(event, 0.0, lost_acc)
    return rec_left, still_recovering, lost_acc, event


def past_recovery_point(in_recovery: jax.Array, recovery_left: jax.Array, acked: jax.Array,
                        lost: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(past, lost_past)``: the tick's feedback bytes for data past the recovery point (all of
    them outside recovery), and the lost share of them (the feedback is a FIFO mix)."""
    past = jnp.where(in_recovery, jnp.clip(acked + lost - jnp.maximum(recovery_left, 0.0), 0.0, acked + lost),
                     acked + lost)
    return past, lost * past / jnp.maximum(acked + lost, 1e-9)


def rto(rto_min: jax.Array, srtt: jax.Array, rttvar: jax.Array) -> jax.Array:
    """The retransmission timeout (RFC 6298 §2.3, §2.4): ``max(rto_min, srtt + 4·rttvar)`` (s)."""
    return jnp.maximum(rto_min, srtt + 4.0 * rttvar)


def rtt_estimates(srtt: jax.Array, rttvar: jax.Array, rtt: jax.Array, have_rtt: jax.Array,
                  gain: float = 1.0 / 8.0) -> tuple[jax.Array, jax.Array]:
    """RFC 6298 §2.2–2.3: ``srtt`` and ``rttvar`` after a sample ``rtt`` (where ``have_rtt``;
    ``srtt`` 0: none yet), α = ``gain``, β = 1/4."""
    first = srtt <= 0
    rttvar_new = jnp.where(first, rtt / 2.0, 0.75 * rttvar + 0.25 * jnp.abs(srtt - rtt))
    srtt_new = jnp.where(first, rtt, (1 - gain) * srtt + gain * rtt)
    return jnp.where(have_rtt, srtt_new, srtt), jnp.where(have_rtt, rttvar_new, rttvar)


def timer(rto_min: jax.Array, now: jax.Array, until: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(waiting, restarts)`` at this tick for a flow whose timer fires at ``until`` (-1: not
    armed): it waits, sending nothing, until the timer fires, and restarts on the tick it does."""
    armed = (rto_min > 0) & (until >= 0)
    return armed & (now < until), armed & (now >= until)


def timeout(rto_min: jax.Array, now: jax.Array, srtt: jax.Array, rttvar: jax.Array, until: jax.Array,
            episode_lost: jax.Array, in_recovery: jax.Array, still_recovering: jax.Array, recovery_left: jax.Array,
            loss_event: jax.Array, waiting: jax.Array, restarts: jax.Array, acked: jax.Array,
            lost: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One tick of the retransmission timer (the module docstring; never where ``rto_min`` <= 0).

    ``until`` and ``episode_lost`` are the flow's state (when its timer fires, -1 when not armed;
    the bytes lost in the current episode); ``in_recovery`` and ``recovery_left`` its recovery
    before the tick, ``still_recovering`` and ``loss_event`` what ``loss_event`` said of this
    tick, ``waiting`` and ``restarts`` what ``timer`` said.  Returns ``(fires, until, episode_lost)``: whether a
    lost retransmission starts a wait at this tick, and the state after it.  The timer was armed
    when the retransmissions were sent, one smoothed RTT before the tick that reports their loss.
    """
    ends = in_recovery & ~still_recovering
    past, lost_past = past_recovery_point(in_recovery, recovery_left, acked, lost)
    lost_retransmissions = episode_lost * lost_past / jnp.maximum(past, 1e-9)
    fires = (rto_min > 0) & ends & ~waiting & (lost_retransmissions >= LOSS_EVENT_BYTES)
    fire_at = jnp.maximum(now - srtt + rto(rto_min, srtt, rttvar), now)
    until = jnp.where(fires, fire_at, jnp.where(restarts, -1.0, until))
    episode_lost = jnp.where(loss_event, lost, jnp.where(still_recovering, episode_lost + lost, 0.0))
    return fires, until, episode_lost


def after_timeout(fires: jax.Array, waiting: jax.Array, restarts: jax.Array, cwnd: jax.Array, in_recovery: jax.Array,
                  recovery_left: jax.Array, lost_acc: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The window and recovery state after the timer's tick: a window of 0 (nothing sent) from
    the lost retransmission until the timer fires, one packet when it does, and no recovery
    either way.  Returns ``(cwnd, in_recovery, recovery_left, lost_acc)``."""
    cwnd = jnp.where(restarts, MSS, jnp.where(waiting | fires, 0.0, cwnd))
    over = waiting | fires | restarts
    return (cwnd, in_recovery & ~over, jnp.where(over, 0.0, recovery_left), jnp.where(over, 0.0, lost_acc))
