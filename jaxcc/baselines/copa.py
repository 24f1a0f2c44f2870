"""Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the Internet",
NSDI 2018), default mode, as a per-tick window-based controller of the fluid simulator.

Copa steers its sending rate towards a *target rate* set by the measured queueing delay (§2)::

    λ_t = 1 / (δ · d_q)         packets/s,  d_q = RTTstanding − RTTmin,  δ = 0.5
    λ   = cwnd / RTTstanding    the current rate

and on every ACK moves its window one step towards it::

    cwnd += v / (δ · cwnd)   if λ ≤ λ_t,    else    cwnd −= v / (δ · cwnd)          (packets)

so the window changes by about ``v/δ`` packets per RTT.  At the fixed point every Copa flow
sees the same ``d_q`` and sends at the same ``λ_t``: with n flows on a link the queue holds
about ``n/δ`` packets (``1/δ`` = 2 per flow), and the window's oscillation around it (period
about 5 RTTs, queue between 0 and about ``2.5/δ`` packets for one flow, §3) empties the queue
once per period, so every flow's ``RTTmin`` stays accurate.  Measured here on 12 Mbit/s,
40 ms, one flow: queue 0–4.8 packets, mean 2.2, period ≈ 5.5 RTTs.

What this module computes, and every approximation or choice made:

* **RTTmin** ("the smallest RTT observed over a long period of time", 10 s in the paper's
  implementation): a windowed min over the last ``MIN_RTT_WINDOW_S`` = 10 s, kept with the
  three-sample windowed min filter of Linux ``lib/win_minmax.c`` (Kathleen Nichols' algorithm;
  mvfst's Copa uses the same kind of filter).  It returns the min over a window of *at most*
  10 s ending now: exact when the minimum is recent, otherwise a slightly younger (so ≥) one.
* **RTTstanding** ("the smallest RTT over a recent time-window of duration τ = srtt/2"): the
  simulator reports one byte-weighted mean RTT per tick (``TickObs.rtt_mean``), so RTTstanding
  is **the min of the per-tick mean RTTs of the ticks whose midpoint lies within the last
  srtt/2** — ticks of age ``< srtt/2 − dt/2``, the latest tick always included — kept in a ring
  of the last ``STANDING_TICKS`` = 32 ticks that brought ACKs.  At the default 8 ticks per
  (smallest) RTT, srtt/2 spans ≥ 4 ticks; the ring covers srtt up to 64 ticks (8× the link's
  smallest RTT), beyond which the window is truncated to the last 32 ACK ticks.  A tick's
  mean is ≥ the min of its packets' RTTs (queue changes within 1/8 RTT are averaged);
  RTTmin comes from the same per-tick means, so the bias largely cancels in ``d_q``.
  The simulator's RTT includes one packet's serialisation at the capacity of the moment, so
  after a capacity drop ``d_q`` has a floor of the difference (0.26 ms from 26 to 16.7 Mbit/s)
  until the 10-s RTTmin window forgets the faster period — far below the ~2-packet target.
* **srtt**: the RFC 6298 EWMA (gain 1/8) applied once per tick to the tick's mean RTT (as in
  ``cubic.py``).  It only sets τ.
* **Decision** ``λ ≤ λ_t`` is evaluated as ``cwnd·δ·d_q ≤ MSS·RTTstanding`` (no division;
  ``d_q = 0``, an infinite target, means "increase", as in mvfst).  One decision per tick with
  ACKs (8 per RTT by default) instead of one per ACK.
* **Window update**: the per-ACK rule integrated over the tick's ACKs.  With ``W`` in bytes
  and ``A`` the bytes ACKed, each ACK of one packet moves ``W`` by ``±v·MSS²/(δ·W)``, i.e.
  ``W·dW = ±(v·MSS/δ)·dA``, so over the tick ``W² ← W² ± 2·v·MSS·A/δ``.  To first order this
  is ``W ± v·MSS·A/(δ·W)``; the exact form matters when a tick ACKs more than the window (a
  queue draining after the window fell), where the first-order step would jump by
  ``A/W`` times the per-ACK step.  ``cwnd ≥ MIN_CWND`` = 2 packets.
* **Velocity** v (§2.1): "Once per window, the sender compares the current cwnd to the cwnd
  value at the time that the latest acknowledged packet was sent (i.e., cwnd at the start of
  the current window). If the current cwnd is larger, then set direction to 'up'; if it is
  smaller, then set direction to 'down'. Now, if direction is the same as in the previous
  window, then double v. If not, then reset v to 1. However, start doubling v only after the
  direction has remained the same for three RTTs."  A window (round) ends at the first tick
  whose ACKs and loss notices exceed the bytes in flight when the round began (FIFO delivery:
  data sent after the round start is now being ACKed; the accounting of ``cubic.py``'s HyStart
  rounds).  At a round's end the direction is ``up`` if cwnd grew over the round, ``down``
  otherwise (equal counts as down, as in mvfst); ``same_rtts`` counts consecutive round ends
  that agreed with the previous direction and v doubles at each once ``same_rtts ≥ 3``
  (``VELOCITY_SAME_RTTS``; mvfst's ``numTimesDirectionSame >= 3``), so a direction that lasts
  the ~2.5 RTTs of the steady-state oscillation never doubles v.  A change resets v to 1.
* **Bound on v** (not in the paper's text; from the authors' implementation, genericCC
  ``markoviancc.cc``: ``if (update_amt > _the_window * delta) update_amt /= 2``): before v is
  used it is halved until ``v ≤ max(δ·cwnd_pkts, 1)`` (``velocity_cap``), so one ACK moves the
  window by at most one packet — at most doubling per RTT up, at most emptying it per RTT down.
  Without it v keeps doubling while the window shrinks (the direction is only re-measured
  once per window): a first version without the bound (and with the first-order step) reached
  v = 8192 at a 2-packet window on ``aurora/random16-32``, and the next increase exploded the
  window (97 % loss).  mvfst instead resets v as soon as one ACK's
  decision opposes the recorded direction while v > 1; tried here, it made the oscillation
  after capacity steps *larger* on ``aurora/random16-32`` (utilization 0.80 vs 0.90, p95
  queueing delay 41 vs 19 ms: each overshoot is shed at v = 1), so it is not used.
* **Slow start** ("cwnd doubles once per RTT until λ exceeds λ_t"): ``cwnd += acked`` (one byte
  per byte ACKed: doubling per RTT, spread over the RTT rather than mvfst's one doubling per
  srtt) while ``λ ≤ λ_t``; the first tick with ``λ > λ_t`` ends slow start for good and applies
  the ordinary decrease.  Rounds run during slow start but only record the window (v = 1,
  direction ``up``).
* **Start-up transient** (measured, not tuned): after slow start overshoots (about 1.7×BDP,
  as any once-per-RTT doubling with one RTT of feedback delay), the length of the oscillation
  that follows depends on where the windows (rounds) fall relative to the turns of the
  decision: a turn early in a window resets v to 1 below the BDP, and the next climb (v = 1
  for three windows, then 2, 4, 8, 16) overshoots again.  The paper's per-ACK rules on the
  packet oracle (``tests/test_baselines_copa.py``, ``_PacketCopa``) do the same: on
  12 Mbit/s, 40 ms, one flow, they settle by 0.74 s, but on the 5×5 neighbourhood
  36–44 ms × 10–14 Mbit/s the whole-run p95 queue exceeds 8 packets on 10 of 25 links and
  several never settle (v up to 32, steady-state p95 22 packets).  This module at 8 ticks
  per RTT: 11 of 25 above 8 packets, all settled by 2.4 s; at 16 ticks per RTT 11 of 25,
  with the packet oracle's persistent cycles (steady-state p95 up to 20 packets).
* **Pacing** at ``2·cwnd/RTTstanding`` as in the paper, window-limited by cwnd.  Before the
  first RTT sample the sender is unpaced (``rate = BIG``) and only the initial window (10
  packets, RFC 6928, as in ``cubic.py``) limits it.
* **Loss** is not a congestion signal in the default mode (the update rule has no loss term).
  Lost bytes only leave the flight size (the simulator does that) and end rounds like ACKs;
  there is no loss reaction, no recovery state, and lost bytes give no RTT sample.  Nothing
  can grow without bound: increases need ACKs, the bound on v limits a tick's growth to the
  bytes ACKed, and cwnd ≥ 2 packets.  With a buffer shorter than the standing queue (e.g.
  ``aurora/fig2``'s 10 packets and 1 % random loss) Copa keeps a full link with some drops.
* **Competitive mode** (§2.2: detecting buffer-filling competitors and adapting δ) is out of
  scope: this is the default mode only, for single-scheme experiments (one or more Copa flows
  alone on a link, e.g. Aurora's Fig. 7).  Next to CUBIC or BBR the default mode yields, as
  the paper says it would without competitive mode.

Units: bytes, seconds, bytes/s; windows in bytes (the paper's packet formulas times MSS).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.sim.controller import Action, Controller, ControllerParams, TickObs
from jaxcc.sim.core import BIG
from jaxcc.units import MSS

# δ = 0.5 in the default mode; the standing queue is 1/δ packets per flow.
DELTA = 0.5
# RTTmin: the smallest RTT over a long period, 10 s as in the paper's implementation.
MIN_RTT_WINDOW_S = 10.0
# Copa paces at 2·cwnd/RTTstanding.
PACING_GAIN = 2.0
# §2.1: v doubles only once the direction has stayed the same for three RTTs.
VELOCITY_SAME_RTTS = 3
# Initial window 10 packets (RFC 6928, as cubic.py) and a floor of 2 packets.
INIT_CWND = 10 * MSS
MIN_CWND = 2 * MSS
# RFC 6298 §2: srtt ← (1 − 1/8)·srtt + 1/8·rtt (per tick here).
SRTT_GAIN = 1.0 / 8.0
# Ring of per-tick mean RTTs for RTTstanding (see the module docstring).
STANDING_TICKS = 32
# Slack for comparing fluid byte counters.
EPS_BYTES = 1.0
NO_RTT = 1e9
NEVER = -1e9  # timestamp of an empty filter slot

UP, DOWN = 1, -1


class CopaState(NamedTuple):
    cwnd: jax.Array  # bytes
    srtt: jax.Array  # s (0 before the first sample)
    mm_t: jax.Array  # [3] s: windowed-min filter sample times (win_minmax s[].t)
    mm_v: jax.Array  # [3] s: windowed-min filter sample values (best, 2nd, 3rd choice)
    st_t: jax.Array  # [STANDING_TICKS] s: end time of each recent ACK tick
    st_v: jax.Array  # [STANDING_TICKS] s: mean RTT of that tick
    st_i: jax.Array  # int32: next ring slot
    rtt_min: jax.Array  # s: RTTmin after the last update (NO_RTT before any sample)
    rtt_standing: jax.Array  # s: RTTstanding after the last update (NO_RTT before any sample)
    d_q: jax.Array  # s: queueing delay estimate after the last update
    slow_start: jax.Array  # bool
    velocity: jax.Array  # v
    direction: jax.Array  # int32: UP or DOWN (direction of the last completed window)
    same_rtts: jax.Array  # int32: consecutive windows agreeing with the previous direction
    round_left: jax.Array  # bytes of the current window still to be ACKed (or lost)
    round_cwnd: jax.Array  # bytes: cwnd at the start of the current window
    increase: jax.Array  # bool: the last decision was λ ≤ λ_t (diagnostics)
    ss_exit_time: jax.Array  # s: when slow start ended (-1 while in it; diagnostics)


def copa_init(cp: ControllerParams) -> CopaState:
    f = jnp.float32
    return CopaState(
        cwnd=f(INIT_CWND), srtt=f(0.0),
        mm_t=jnp.full((3,), NEVER, jnp.float32), mm_v=jnp.full((3,), NO_RTT, jnp.float32),
        st_t=jnp.full((STANDING_TICKS,), NEVER, jnp.float32), st_v=jnp.full((STANDING_TICKS,), NO_RTT, jnp.float32),
        st_i=jnp.int32(0), rtt_min=f(NO_RTT), rtt_standing=f(NO_RTT), d_q=f(0.0), slow_start=jnp.bool_(True),
        velocity=f(1.0), direction=jnp.int32(UP), same_rtts=jnp.int32(0), round_left=f(0.0), round_cwnd=f(INIT_CWND),
        increase=jnp.bool_(True), ss_exit_time=f(-1.0))


def windowed_min(mm_t: jax.Array, mm_v: jax.Array, win: jax.Array, t: jax.Array, meas: jax.Array):
    """One ``minmax_running_min`` step of Linux ``lib/win_minmax.c`` (Nichols' windowed min):
    returns the new ``(times[3], values[3])``; ``values[0]`` is the min over (at most) ``win``."""
    new_t, new_v = jnp.full((3,), t), jnp.full((3,), meas)
    # "found new min?" or "nothing left in window?": forget earlier samples.
    reset = (meas <= mm_v[0]) | (t - mm_t[2] > win)
    # Better than the 2nd (or 3rd) choice: it replaces it (and everything after it).
    t1 = jnp.where(meas <= mm_v[1], t, mm_t[1])
    v1 = jnp.where(meas <= mm_v[1], meas, mm_v[1])
    t2 = jnp.where(meas <= mm_v[2], t, mm_t[2])
    v2 = jnp.where(meas <= mm_v[2], meas, mm_v[2])
    mt, mv = jnp.stack([mm_t[0], t1, t2]), jnp.stack([mm_v[0], v1, v2])
    # minmax_subwin_update.
    dt = t - mt[0]
    # Passed the whole window without a new min: shift 2nd → 1st, 3rd → 2nd, new → 3rd (twice
    # if the 2nd choice is out of the window too).
    sh_t, sh_v = jnp.stack([mt[1], mt[2], t]), jnp.stack([mv[1], mv[2], meas])
    sh2 = t - sh_t[0] > win
    sh_t = jnp.where(sh2, jnp.stack([sh_t[1], sh_t[2], t]), sh_t)
    sh_v = jnp.where(sh2, jnp.stack([sh_v[1], sh_v[2], meas]), sh_v)
    # A quarter of the window without a new 2nd choice: take one from the 2nd quarter.
    q_t, q_v = jnp.stack([mt[0], t, t]), jnp.stack([mv[0], meas, meas])
    # Half the window without a new 3rd choice: take one from the last half.
    h_t, h_v = jnp.stack([mt[0], mt[1], t]), jnp.stack([mv[0], mv[1], meas])
    whole = dt > win
    quarter = ~whole & (mt[1] == mt[0]) & (dt > 0.25 * win)
    half = ~whole & ~quarter & (mt[2] == mt[1]) & (dt > 0.5 * win)
    out_t = jnp.where(whole, sh_t, jnp.where(quarter, q_t, jnp.where(half, h_t, mt)))
    out_v = jnp.where(whole, sh_v, jnp.where(quarter, q_v, jnp.where(half, h_v, mv)))
    return jnp.where(reset, new_t, out_t), jnp.where(reset, new_v, out_v)


def velocity_cap(v: jax.Array, cwnd: jax.Array) -> jax.Array:
    """genericCC's bound on v: halve it while ``v > δ·cwnd`` (cwnd in packets), never below 1."""
    lim = jnp.maximum(DELTA * cwnd / MSS, 1.0)
    halvings = jnp.maximum(jnp.ceil(jnp.log2(jnp.maximum(v / lim, 1.0))), 0.0)
    return jnp.maximum(v * jnp.exp2(-halvings), 1.0)


def copa_pacing_rate(s: CopaState) -> jax.Array:
    """2·cwnd/RTTstanding (bytes/s); BIG before the first RTT sample."""
    have = s.rtt_standing < NO_RTT
    return jnp.where(have, PACING_GAIN * s.cwnd / jnp.maximum(s.rtt_standing, 1e-6), BIG)


def copa_act(s: CopaState, cp: ControllerParams) -> Action:
    return Action(rate=copa_pacing_rate(s), cwnd=s.cwnd)


def copa_update(s: CopaState, obs: TickObs, cp: ControllerParams) -> CopaState:
    now, acked, lost = obs.now, obs.acked, obs.lost
    rtt = obs.rtt_mean
    have = (acked > 0) & (rtt > 0)
    srtt = jnp.where(have, jnp.where(s.srtt > 0, (1 - SRTT_GAIN) * s.srtt + SRTT_GAIN * rtt, rtt), s.srtt)

    # --- RTTmin: 10-s windowed min ------------------------------------------------------
    mm_t, mm_v = windowed_min(s.mm_t, s.mm_v, jnp.float32(MIN_RTT_WINDOW_S), now, rtt)
    mm_t, mm_v = jnp.where(have, mm_t, s.mm_t), jnp.where(have, mm_v, s.mm_v)
    rtt_min = mm_v[0]

    # --- RTTstanding: min of per-tick mean RTTs over the last srtt/2 ---------------------
    st_t = jnp.where(have, s.st_t.at[s.st_i].set(now), s.st_t)
    st_v = jnp.where(have, s.st_v.at[s.st_i].set(rtt), s.st_v)
    st_i = jnp.where(have, (s.st_i + 1) % STANDING_TICKS, s.st_i).astype(jnp.int32)
    age = now - st_t
    inside = (age < 0.5 * srtt - 0.5 * obs.dt) | (age <= 0.0)
    rtt_standing = jnp.where(have, jnp.min(jnp.where(inside, st_v, NO_RTT)), s.rtt_standing)
    d_q = jnp.where(have, jnp.maximum(rtt_standing - rtt_min, 0.0), s.d_q)

    # --- the decision: λ = cwnd/RTTstanding ≤ λ_t = MSS/(δ·d_q) ---------------------------
    increase = s.cwnd * DELTA * d_q <= MSS * rtt_standing

    # --- slow start, then the update rule -----------------------------------------------
    leave_ss = have & s.slow_start & ~increase
    slow_start = s.slow_start & ~leave_ss
    pipe_after_ack = jnp.maximum(obs.inflight - obs.sent, 0.0)
    # genericCC's bound on v (see velocity_cap), applied before v is used, as there.
    v = velocity_cap(s.velocity, s.cwnd)
    # The per-ACK rule integrated over the tick's ACKs: cwnd·dcwnd = ±(v·MSS/δ)·dacked.
    sq = s.cwnd * s.cwnd + jnp.where(increase, 2.0, -2.0) * v * MSS * acked / DELTA
    cwnd_ca = jnp.sqrt(jnp.maximum(sq, MIN_CWND * MIN_CWND))
    cwnd = jnp.where(slow_start, s.cwnd + acked, cwnd_ca)
    cwnd = jnp.where(have, jnp.maximum(cwnd, MIN_CWND), s.cwnd)

    # --- velocity: once per window (round), compare with the window's starting cwnd --------
    left = s.round_left - (acked + lost)
    new_round = (acked + lost > 0) & (left < -EPS_BYTES)
    new_dir = jnp.where(cwnd > s.round_cwnd, UP, DOWN).astype(jnp.int32)
    same = new_dir == s.direction
    same_n = jnp.where(same, s.same_rtts + 1, 0)
    velocity = jnp.where(same, jnp.where(same_n >= VELOCITY_SAME_RTTS, 2.0 * v, v), 1.0)
    # During slow start the window only doubles: record it, keep v = 1 and direction up.
    velocity = jnp.where(slow_start, 1.0, velocity)
    same_n = jnp.where(slow_start, 0, same_n)
    new_dir = jnp.where(slow_start, UP, new_dir)

    return CopaState(
        cwnd=cwnd, srtt=srtt, mm_t=mm_t, mm_v=mm_v, st_t=st_t, st_v=st_v, st_i=st_i,
        rtt_min=rtt_min, rtt_standing=rtt_standing, d_q=d_q, slow_start=slow_start,
        velocity=jnp.where(new_round, velocity, v),
        direction=jnp.where(new_round, new_dir, s.direction).astype(jnp.int32),
        same_rtts=jnp.where(new_round, same_n, s.same_rtts).astype(jnp.int32),
        round_left=jnp.where(new_round, pipe_after_ack, left),
        round_cwnd=jnp.where(new_round, cwnd, s.round_cwnd),
        increase=jnp.where(have, increase, s.increase),
        ss_exit_time=jnp.where(leave_ss, now, s.ss_exit_time))


COPA = Controller("copa", copa_init, copa_act, copa_update)
