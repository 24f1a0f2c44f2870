"""NewReno (RFC 5681 congestion control with RFC 6582's recovery; Linux ``tcp_reno_*`` in
``net/ipv4/tcp_cong.c``) as a per-tick window-based controller of the fluid simulator.

The window follows the classic AIMD rules, in bytes:

* slow start (``cwnd < ssthresh``): ``cwnd += acked`` — one byte per byte ACKed, appropriate byte
  counting (RFC 5681 §3.1, RFC 3465; Linux ``tcp_slow_start``), not past ``ssthresh``; it starts at
  10 packets (RFC 6928, Linux ``TCP_INIT_CWND``) with ``ssthresh`` unlimited;
* congestion avoidance: ``cwnd += MSS · acked / cwnd`` — α = one MSS per window of ACKed bytes, i.e.
  per RTT (RFC 5681 eq. 3 with byte counting; Linux ``tcp_cong_avoid_ai`` with ``w = cwnd``);
* on a loss notice outside recovery: ``ssthresh = cwnd ← max(β · cwnd, 2 MSS)`` with β = 1/2
  (RFC 5681 eq. 4; Linux ``tcp_reno_ssthresh`` halves ``cwnd``, not the flight size; PRR brings
  the flight down to it during recovery, the fluid sender sets the window at once), then
  *recovery* (RFC 6582 §3.2: ``recover`` = the highest byte sent): further losses of data sent
  before the decrease are part of the same event, so there is one decrease per window of
  losses, and the window does not grow until recovery ends (Linux calls ``cong_avoid`` only in
  the Open state).  Recovery ends when every byte outstanding at the notice — this tick's own
  sending included, see ``reno_update`` — has been ACKed or reported lost.

Pacing: none (``rate = BIG``).  Linux paces a Reno or CUBIC flow only under the ``fq`` qdisc or
when the congestion control asks for it (BBR does; Reno does not), and the project's netns
harness (``kernel:reno``: tbf, no fq) and ns-3's TcpNewReno send window-limited bursts clocked
by the ACKs.  In the fluid model an unpaced sender sends its whole allowance
(``cwnd − inflight``) in the tick the ACKs free it, so it is ACK-clocked at tick resolution.

Fluid approximations (as in ``cubic.py``): per-ACK increments become per-tick increments with
``acked`` bytes (linear in the ACKed amount, so equal to first order); a loss event is one
packet's worth of reported drops (``recovery.LOSS_EVENT_BYTES``), so a flow that sent little into a short
overflow may escape it, as with packets.  A retransmission timeout is modelled where the flow's
``TimeoutParams.rto_min`` is above 0 (``recovery.timeout``; off by default): a lost
retransmission stops the flow until the timer fires, with ``ssthresh = max(flight/2, 2 MSS)``
(ns-3's ``TcpNewReno::GetSsThresh``), and it starts again from one packet.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.baselines import recovery
from jaxcc.sim.controller import Action, Controller, ControllerParams, TickObs
from jaxcc.sim.core import BIG
from jaxcc.units import MSS

# RFC 5681 eq. 4 / Linux tcp_reno_ssthresh: halve on a loss.
BETA_RENO = 0.5
# RFC 5681 §3.1: one full-sized segment per RTT in congestion avoidance.
ALPHA_RENO = 1.0
# RFC 6928 / Linux TCP_INIT_CWND: 10 packets.
INIT_CWND = 10 * MSS
# RFC 5681 eq. 4: ssthresh is at least 2·SMSS (Linux: max(cwnd >> 1, 2)).
MIN_CWND = 2 * MSS


class RenoState(NamedTuple):
    cwnd: jax.Array  # bytes
    ssthresh: jax.Array  # bytes (BIG until the first loss)
    in_recovery: jax.Array  # bool
    recovery_left: jax.Array  # bytes still outstanding from before the decrease (RFC 6582 "recover")
    lost_acc: jax.Array  # bytes reported lost since the last loss event, outside recovery
    loss_events: jax.Array  # int32: multiplicative decreases so far (tests/diagnostics)
    srtt: jax.Array  # s, RFC 6298 (0 before the first sample): the timer's length
    rttvar: jax.Array  # s, RFC 6298
    rto_until: jax.Array  # s: when the retransmission timer fires (-1: not armed)
    episode_lost: jax.Array  # bytes lost in the current loss episode (the retransmissions owed)
    timeouts: jax.Array  # int32: retransmission timeouts so far (tests/diagnostics)


def reno_init(cp: ControllerParams) -> RenoState:
    f = jnp.float32
    return RenoState(cwnd=f(INIT_CWND), ssthresh=f(BIG), in_recovery=jnp.bool_(False), recovery_left=f(0.0),
                     lost_acc=f(0.0), loss_events=jnp.int32(0), srtt=f(0.0), rttvar=f(0.0), rto_until=f(-1.0),
                     episode_lost=f(0.0), timeouts=jnp.int32(0))


def reno_act(s: RenoState, cp: ControllerParams) -> Action:
    """Window-limited, unpaced (see the module docstring)."""
    return Action(rate=jnp.full_like(s.cwnd, BIG), cwnd=s.cwnd)


def reno_update(s: RenoState, obs: TickObs, cp: ControllerParams) -> RenoState:
    acked, lost = obs.acked, obs.lost
    rto_min = cp.timeout.rto_min
    srtt, rttvar = recovery.rtt_estimates(s.srtt, s.rttvar, obs.rtt_mean, (acked > 0) & (obs.rtt_mean > 0))
    waiting, restarts = recovery.timer(rto_min, obs.now, s.rto_until)

    # --- recovery bookkeeping: one decrease per window of losses (RFC 6582) --------------
    rec_left, still_recovering, lost_acc, loss_event = recovery.loss_event(
        s.in_recovery, s.recovery_left, s.lost_acc, acked, lost)
    loss_event = loss_event & ~waiting  # waiting for the timer: the loss is already being handled

    # --- growth (Open state only) -----------------------------------------------------------
    cwnd = s.cwnd
    # On the tick that ends recovery only the bytes past the recovery point count (the ACKs
    # before it arrived while still in recovery).
    acked = jnp.where(s.in_recovery, jnp.clip(acked + lost - jnp.maximum(s.recovery_left, 0.0), 0.0, acked), acked)
    grow = (acked > 0) & ~still_recovering & ~loss_event & ~waiting
    in_ss = cwnd < s.ssthresh
    # Slow start up to ssthresh; ACKed bytes beyond it count for congestion avoidance
    # (Linux tcp_reno_cong_avoid: tcp_slow_start returns the leftover to tcp_cong_avoid_ai).
    ss_cwnd = jnp.minimum(cwnd + acked, jnp.maximum(s.ssthresh, cwnd))
    leftover = jnp.where(in_ss, jnp.maximum(cwnd + acked - ss_cwnd, 0.0), acked)
    base = jnp.where(in_ss, ss_cwnd, cwnd)
    new_cwnd = base + ALPHA_RENO * MSS * leftover / jnp.maximum(base, 1.0)
    cwnd = jnp.where(grow, new_cwnd, cwnd)

    # --- multiplicative decrease --------------------------------------------------------------
    reduced = jnp.maximum(BETA_RENO * s.cwnd, MIN_CWND)
    ssthresh = jnp.where(loss_event, reduced, s.ssthresh)
    cwnd = jnp.where(loss_event, reduced, cwnd)
    in_recovery = jnp.where(loss_event, True, still_recovering)
    # Everything sent before the decrease, this tick's sending included: the core sends before
    # the controller sees the tick's feedback, so those bytes went out at the old window and
    # their drops belong to this event (``obs.inflight`` is after the tick's sending).
    recovery_left = jnp.where(loss_event, obs.inflight, jnp.where(still_recovering, rec_left, 0.0))

    # --- retransmission timeout (off unless rto_min > 0) ---------------------------------------
    # (The tick's own feedback, obs.acked, not the growth's share past the recovery point.)
    fires, rto_until, episode_lost = recovery.timeout(
        rto_min, obs.now, srtt, rttvar, s.rto_until, s.episode_lost, s.in_recovery, still_recovering,
        s.recovery_left, loss_event, waiting, restarts, obs.acked, lost)
    ssthresh = jnp.where(fires, jnp.maximum(BETA_RENO * obs.inflight, MIN_CWND), ssthresh)
    cwnd, in_recovery, recovery_left, lost_acc = recovery.after_timeout(
        fires, waiting, restarts, cwnd, in_recovery, recovery_left, lost_acc)

    return RenoState(cwnd=cwnd, ssthresh=ssthresh, in_recovery=in_recovery, recovery_left=recovery_left,
                     lost_acc=lost_acc, loss_events=s.loss_events + loss_event.astype(jnp.int32), srtt=srtt,
                     rttvar=rttvar, rto_until=rto_until, episode_lost=episode_lost,
                     timeouts=s.timeouts + fires.astype(jnp.int32))


RENO = Controller("reno", reno_init, reno_act, reno_update)
