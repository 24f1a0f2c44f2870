"""CUBIC (RFC 8312, updated by RFC 9438; Linux ``net/ipv4/tcp_cubic.c``) as a per-tick
window-based controller of the fluid simulator.

CUBIC grows its congestion window as a cubic function of the time since the last congestion
event, centred on the window ``W_max`` where that event happened (RFC 9438 eq. 1)::

    W_cubic(t) = C·(t − K)³ + W_max,      K = ∛((W_max − cwnd_epoch) / C)          (eq. 1, 2)

— concave while approaching ``W_max`` (carefully, where the last loss was), convex beyond it
(probing for more).  With ``cwnd_epoch = β·W_max`` (no fast convergence) ``K = ∛(W_max(1−β)/C)``,
RFC 8312's form.  Around it:

* slow start (``cwnd += acked``) from 10 packets until the first loss sets ``ssthresh``.
  Optionally (``CubicParams.hystart = 1``; off for the plain ``cubic`` name) HyStart's delay detector
  (Linux ``hystart_update``, on by default in Linux) leaves slow start with ``ssthresh = cwnd``
  when the RTT of a round's first ACKs exceeds the minimum by ``clamp(min_rtt/8, 4 ms, 16 ms)``
  (the ACK-train detector needs per-packet ACK spacing and is left out).  It is off by default
  because on links already queued by other flows it makes newcomers leave slow start at a tiny
  window and starve for many seconds — real, but it hides CUBIC's own convergence.  Linux and
  ns-3 run it by default; ``jaxcc.fidelity --hystart`` compares the model with it on
  (docs/fidelity.md: against the kernel it brings the model's loss close to the kernel's);
* on a loss notice outside recovery: one multiplicative decrease ``cwnd ← β·cwnd``, ``W_max``
  from the window before it (reduced further by *fast convergence* when the window is
  shrinking, so an older flow yields to a newer one), and *recovery*: further losses of data
  sent before the decrease are ignored, so there is one decrease per round trip of losses;
* the *Reno-friendly region* (RFC 9438 §4.3): CUBIC tracks the window ``W_est`` a Reno flow
  with the same β would have (additive increase α = 3(1−β)/(1+β) packets per RTT, 1 once
  past ``W_max``) and never grows slower than it;
* optionally (``TimeoutParams.rto_min`` > 0; off by default) a retransmission timeout when a
  retransmission is lost (``recovery.timeout``): nothing is sent until the timer fires, with
  ``ssthresh = max(β·cwnd, 2 MSS)`` (ns-3's ``TcpCubic::GetSsThresh``), and the flow starts again
  from one packet in a new epoch with ``W_max`` forgotten (Linux ``bictcp_state`` on
  ``TCP_CA_Loss``).

Windows are in bytes (``C`` is defined in packets, so it is scaled by MSS).  The sender is
window-limited and paced the way Linux paces it under the ``fq`` qdisc
(``tcp_update_pacing_rate``): ``2·cwnd/srtt`` in slow start and ``1.2·cwnd/srtt`` in
congestion avoidance — fast enough never to be the binding limit, but it spreads a tick's
window over the tick instead of one instantaneous burst.  Before the first RTT sample the
sender is unpaced (``rate = BIG``) and only the initial window limits it.

Fluid approximations: per-ACK updates become per-tick updates with ``acked`` bytes (the
per-ACK increments are linear in the ACKed amount, so this is the same to first order); a loss
event is one packet's worth of reported drops (fluid drops are spread over flows in proportion
to their arrivals; a flow that sent little during a short overflow may escape it, as with
packets); recovery ends when all bytes that were in
flight at the loss notice are ACKed or known lost (``snd_una ≥ high_seq``); smoothed RTT is the
RFC 6298 EWMA (gain 1/8) applied once per tick to the tick's mean RTT.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.baselines import recovery
from jaxcc.sim.controller import Action, Controller, ControllerParams, TickObs
from jaxcc.sim.core import BIG
from jaxcc.units import MSS

# RFC 9438 §5.1: "C SHOULD be set to 0.4" (packets/s³) — with β = 0.7 this makes CUBIC as fast as
# Reno at small BDPs and lets it reach a large W_max again in a few seconds.
C_CUBIC = 0.4
# RFC 9438 §4.6: "β_cubic SHOULD be set to 0.7": a gentler decrease than Reno's 0.5 (CUBIC's
# concave regrowth makes it up quickly), Linux's beta = 717/1024.
BETA_CUBIC = 0.7
# RFC 9438 §4.3: the Reno-friendly additive increase that gives the same average window as Reno
# (β = 0.5, α = 1) under the same loss rate: α = 3(1 − β)/(1 + β) ≈ 0.53 packets per RTT.
ALPHA_CUBIC = 3.0 * (1.0 - BETA_CUBIC) / (1.0 + BETA_CUBIC)
# RFC 9438 §4.2: the target is clamped to [cwnd, 1.5·cwnd] so the window at most grows by half
# per RTT (Linux: "cnt" never below 2, i.e. one packet per two ACKed).
MAX_GROWTH = 1.5
# RFC 6928 / Linux TCP_INIT_CWND: 10 packets.
INIT_CWND = 10 * MSS
# RFC 9438 §4.6 / RFC 5681: the window never drops below 2 packets after a decrease.
MIN_CWND = 2 * MSS
# RFC 6298 §2: srtt ← (1 − 1/8)·srtt + 1/8·rtt.
SRTT_GAIN = 1.0 / 8.0
# tcp_update_pacing_rate (sysctl_tcp_pacing_ss_ratio = 200, sysctl_tcp_pacing_ca_ratio = 120).
PACING_SS_RATIO = 2.0
PACING_CA_RATIO = 1.2
# HyStart (tcp_cubic.c): only above 16 packets (hystart_low_window); the delay threshold is
# min_rtt/8 clamped to [4, 16] ms (HYSTART_DELAY_MIN/MAX); the round's RTT is the minimum over
# its first 8 ACKs (HYSTART_MIN_SAMPLES) — here, over its first HYSTART_TICKS ticks with ACKs.
HYSTART_LOW_WINDOW = 16 * MSS
HYSTART_DELAY_MIN_S = 0.004
HYSTART_DELAY_MAX_S = 0.016
HYSTART_TICKS = 2
LOSS_EPS_BYTES = recovery.LOSS_EPS_BYTES
NO_RTT = 1e9


class CubicState(NamedTuple):
    cwnd: jax.Array  # bytes
    ssthresh: jax.Array  # bytes (BIG until the first loss)
    w_max: jax.Array  # bytes: window at the last congestion event (W_max, Linux last_max_cwnd)
    epoch_start: jax.Array  # s; < 0 when no congestion-avoidance epoch is running
    k: jax.Array  # s: time from epoch start to reach the origin (eq. 2)
    origin: jax.Array  # bytes: the plateau of the cubic (W_max, or cwnd when already above it)
    w_est: jax.Array  # bytes: Reno-emulation window (RFC 9438 §4.3)
    min_rtt: jax.Array  # s (Linux delay_min; the "t + RTT" look-ahead of the target)
    srtt: jax.Array  # s (0 before the first sample)
    in_recovery: jax.Array  # bool
    recovery_left: jax.Array  # bytes still outstanding from before the loss notice
    loss_events: jax.Array  # int32: multiplicative decreases so far (for tests/diagnostics)
    lost_acc: jax.Array  # bytes reported lost since the last loss event, outside recovery
    hs_round_left: jax.Array  # HyStart round: bytes still to be ACKed before the next round
    hs_round_rtt: jax.Array  # HyStart: min RTT over the round's first ACK ticks
    hs_samples: jax.Array  # int32: ACK ticks sampled in this round
    hystart_exits: jax.Array  # int32: slow starts left by HyStart (diagnostics)
    rttvar: jax.Array  # s, RFC 6298: the retransmission timer's length with ``srtt``
    rto_until: jax.Array  # s: when the retransmission timer fires (-1: not armed)
    episode_lost: jax.Array  # bytes lost in the current loss episode (the retransmissions owed)
    timeouts: jax.Array  # int32: retransmission timeouts so far (diagnostics)


def cubic_window(t: jax.Array, k: jax.Array, origin: jax.Array) -> jax.Array:
    """W_cubic(t) in bytes (RFC 9438 eq. 1; C scaled from packets to bytes)."""
    return C_CUBIC * MSS * (t - k) ** 3 + origin


def cubic_k(w_max: jax.Array, cwnd_epoch: jax.Array) -> jax.Array:
    """K (s) in RFC 9438 eq. 2: when W_cubic climbs back to ``w_max`` from ``cwnd_epoch``."""
    return jnp.cbrt(jnp.maximum(w_max - cwnd_epoch, 0.0) / (C_CUBIC * MSS))


def cubic_init(cp: ControllerParams) -> CubicState:
    f = jnp.float32
    return CubicState(
        cwnd=f(INIT_CWND), ssthresh=f(BIG), w_max=f(0.0), epoch_start=f(-1.0), k=f(0.0), origin=f(0.0),
        w_est=f(INIT_CWND), min_rtt=f(NO_RTT), srtt=f(0.0), in_recovery=jnp.bool_(False),
        recovery_left=f(0.0), loss_events=jnp.int32(0), lost_acc=f(0.0), hs_round_left=f(0.0), hs_round_rtt=f(NO_RTT),
        hs_samples=jnp.int32(0), hystart_exits=jnp.int32(0), rttvar=f(0.0), rto_until=f(-1.0), episode_lost=f(0.0),
        timeouts=jnp.int32(0))


def cubic_pacing_rate(s: CubicState) -> jax.Array:
    """tcp_update_pacing_rate: 2·cwnd/srtt below ssthresh/2, else 1.2·cwnd/srtt (BIG before any RTT)."""
    ratio = jnp.where(s.cwnd < 0.5 * s.ssthresh, PACING_SS_RATIO, PACING_CA_RATIO)
    return jnp.where(s.srtt > 0, ratio * s.cwnd / jnp.maximum(s.srtt, 1e-6), BIG)


def cubic_act(s: CubicState, cp: ControllerParams) -> Action:
    return Action(rate=cubic_pacing_rate(s), cwnd=s.cwnd)


def cubic_update(s: CubicState, obs: TickObs, cp: ControllerParams) -> CubicState:
    now, acked, lost = obs.now, obs.acked, obs.lost
    got_ack = acked > 0
    rtt = obs.rtt_mean
    have_rtt = got_ack & (rtt > 0)
    min_rtt = jnp.where(have_rtt, jnp.minimum(s.min_rtt, rtt), s.min_rtt)
    srtt, rttvar = recovery.rtt_estimates(s.srtt, s.rttvar, rtt, have_rtt, SRTT_GAIN)
    pipe_after_ack = jnp.maximum(obs.inflight - obs.sent, 0.0)
    rto_min = cp.timeout.rto_min
    waiting, restarts = recovery.timer(rto_min, now, s.rto_until)

    # --- recovery bookkeeping: one decrease per window of losses -------------------------
    rec_left, still_recovering, lost_acc, loss_event = recovery.loss_event(
        s.in_recovery, s.recovery_left, s.lost_acc, acked, lost)
    loss_event = loss_event & ~waiting  # waiting for the timer: the loss is already being handled

    # --- HyStart delay detection (hystart_update), during slow start ------------------------
    in_ss = s.cwnd < s.ssthresh
    hs_left = s.hs_round_left - (acked + lost)
    new_round = got_ack & (hs_left < -LOSS_EPS_BYTES)
    hs_left = jnp.where(new_round, pipe_after_ack, hs_left)
    hs_rtt = jnp.where(new_round, NO_RTT, s.hs_round_rtt)
    hs_n = jnp.where(new_round, 0, s.hs_samples)
    sample_it = have_rtt & (hs_n < HYSTART_TICKS)
    hs_rtt = jnp.where(sample_it, jnp.minimum(hs_rtt, rtt), hs_rtt)
    hs_n = hs_n + sample_it.astype(jnp.int32)
    thresh = jnp.clip(min_rtt / 8.0, HYSTART_DELAY_MIN_S, HYSTART_DELAY_MAX_S)
    hystart_exit = ((cp.cubic.hystart > 0.5) & in_ss & (s.cwnd >= HYSTART_LOW_WINDOW) & (hs_n >= HYSTART_TICKS) & (min_rtt < NO_RTT)
                    & (hs_rtt >= min_rtt + thresh))
    ssthresh_hs = jnp.where(hystart_exit, s.cwnd, s.ssthresh)

    # --- growth (only outside recovery; Linux calls cong_avoid only in the Open state) ----
    cwnd = s.cwnd
    in_ss = cwnd < ssthresh_hs
    grow_ok = got_ack & ~still_recovering & ~loss_event & ~waiting
    # Slow start: one byte per byte ACKed (RFC 5681, appropriate byte counting), not past ssthresh.
    ss_cwnd = jnp.minimum(cwnd + acked, jnp.maximum(ssthresh_hs, cwnd))
    # Congestion avoidance.  A new epoch starts at its first ACK (Linux bictcp_update).
    new_epoch = grow_ok & ~in_ss & (s.epoch_start < 0)
    above = cwnd >= s.w_max
    epoch_start = jnp.where(new_epoch, now, s.epoch_start)
    k = jnp.where(new_epoch, jnp.where(above, 0.0, cubic_k(s.w_max, cwnd)), s.k)
    origin = jnp.where(new_epoch, jnp.where(above, cwnd, s.w_max), s.origin)
    w_est = jnp.where(new_epoch, cwnd, s.w_est)
    t = now - epoch_start
    look_ahead = jnp.where(min_rtt < NO_RTT, min_rtt, 0.0)
    target = jnp.clip(cubic_window(t + look_ahead, k, origin), cwnd, MAX_GROWTH * cwnd)
    cubic_cwnd = cwnd + (target - cwnd) * acked / jnp.maximum(cwnd, 1.0)
    # Reno-friendly region: W_est grows α packets per cwnd of ACKed bytes, α = 1 once W_est is
    # back at the window of the last decrease (RFC 9438's cwnd_prior; W_max stands in for it,
    # a little lower after fast convergence).
    alpha = jnp.where(w_est >= s.w_max, 1.0, ALPHA_CUBIC)
    w_est_new = w_est + alpha * MSS * acked / jnp.maximum(cwnd, 1.0)
    ca_cwnd = jnp.where(cubic_window(t, k, origin) < w_est_new, jnp.maximum(w_est_new, cwnd), cubic_cwnd)
    cwnd = jnp.where(grow_ok, jnp.where(in_ss, ss_cwnd, ca_cwnd), cwnd)
    w_est = jnp.where(grow_ok & ~in_ss, w_est_new, w_est)

    # --- multiplicative decrease (RFC 9438 §4.6, §4.7) ----------------------------------
    # Fast convergence: if the window is below the last W_max, the flow is losing ground to
    # others — release more by remembering a lower W_max.
    w_max = jnp.where(loss_event, jnp.where(s.cwnd < s.w_max, s.cwnd * (1.0 + BETA_CUBIC) / 2.0, s.cwnd), s.w_max)
    reduced = jnp.maximum(s.cwnd * BETA_CUBIC, MIN_CWND)
    ssthresh = jnp.where(loss_event, reduced, ssthresh_hs)
    cwnd = jnp.where(loss_event, reduced, cwnd)
    epoch_start = jnp.where(loss_event, -1.0, epoch_start)
    in_recovery = jnp.where(loss_event, True, still_recovering)
    # Recovery lasts until everything sent before the decrease is ACKed or known lost (Linux
    # ``high_seq = snd_nxt`` when it enters recovery).  That includes this tick's own sending:
    # the core sends before the controller sees the tick's feedback, so those bytes went out at
    # the old window, and their drops (the buffer is still full) belong to this loss event.
    # Leaving them out made their drops, reported just after recovery closed, a second loss
    # event one RTT later (two cuts per buffer overflow).
    recovery_left = jnp.where(loss_event, obs.inflight, jnp.where(still_recovering, rec_left, 0.0))

    # --- retransmission timeout (off unless rto_min > 0) ---------------------------------------
    fires, rto_until, episode_lost = recovery.timeout(
        rto_min, now, srtt, rttvar, s.rto_until, s.episode_lost, s.in_recovery, still_recovering,
        s.recovery_left, loss_event, waiting, restarts, acked, lost)
    ssthresh = jnp.where(fires, jnp.maximum(s.cwnd * BETA_CUBIC, MIN_CWND), ssthresh)
    w_max = jnp.where(fires, 0.0, w_max)
    epoch_start = jnp.where(fires | restarts, -1.0, epoch_start)
    cwnd, in_recovery, recovery_left, lost_acc = recovery.after_timeout(
        fires, waiting, restarts, cwnd, in_recovery, recovery_left, lost_acc)

    return CubicState(
        cwnd=cwnd, ssthresh=ssthresh, w_max=w_max, epoch_start=epoch_start, k=k, origin=origin, w_est=w_est,
        min_rtt=min_rtt, srtt=srtt, in_recovery=in_recovery, recovery_left=recovery_left,
        loss_events=s.loss_events + loss_event.astype(jnp.int32), lost_acc=lost_acc, hs_round_left=hs_left, hs_round_rtt=hs_rtt,
        hs_samples=hs_n.astype(jnp.int32), hystart_exits=s.hystart_exits + (hystart_exit & ~loss_event).astype(jnp.int32),
        rttvar=rttvar, rto_until=rto_until, episode_lost=episode_lost, timeouts=s.timeouts + fires.astype(jnp.int32))


CUBIC = Controller("cubic", cubic_init, cubic_act, cubic_update)
