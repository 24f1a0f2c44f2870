"""BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016; Linux
``net/ipv4/tcp_bbr.c``) as a per-tick controller of the fluid simulator.

BBR builds an explicit model of the path from two estimates, and paces at its bottleneck rate:

* ``BtlBw`` — the bottleneck bandwidth: a windowed *max* of delivery-rate samples over the
  last ``BW_WINDOW_ROUNDS`` round trips (a larger sample can only come from a faster path,
  a lower one may just be a short lull in sending);
* ``RTprop`` — the round-trip propagation time: a windowed *min* of RTT samples over the last
  ``MIN_RTT_WINDOW_S`` seconds (a lower sample can only mean less queueing).

It then sends at ``pacing_gain · BtlBw`` with at most ``cwnd_gain · BtlBw · RTprop`` bytes in
flight, and cycles its gains through a small state machine::

    STARTUP ──(BtlBw plateaued for 3 rounds)──► DRAIN ──(inflight ≤ BDP)──► PROBE_BW
       ▲                                                                  │   ▲
       └──────────── (no plateau yet) ◄── PROBE_RTT ◄──(RTprop 10 s old)──┘   │
                                             └───────(200 ms + one round)─────┘

The state machine, the gains, the round accounting, loss recovery and the cwnd rules follow
``tcp_bbr.c`` (function names are cited at each step).  Left out, because the fluid sender is
always backlogged and runs over a single drop-tail bottleneck: application-limited samples,
idle restart, the long-term ("policer") bandwidth model ``lt_bw``, and the ACK-aggregation
cwnd extra.

Fluid approximation of BBR's measurements
-----------------------------------------
A packet-level BBR gets a *delivery-rate sample* with every ACK (bytes delivered between the
packet's transmission and its ACK, over that interval) and starts a new *round* when a packet
sent after the previous round start is ACKed.  The fluid simulator reports, once per tick,
the bytes ACKed and lost in that tick and their byte-weighted mean RTT.  So here:

* a round is the same: it ends at the first tick whose ACKs (or loss notices) exceed the
  bytes that were in flight when the round began — FIFO delivery means bytes sent after the
  round start are now being ACKed.  ``round_left`` counts those bytes down;
* one delivery-rate sample per tick with ACKs: the bytes ACKed over the last RTT, over that
  RTT — what Linux's per-ACK sample measures (data delivered between a packet's send and its
  ACK), with the core returning ACKs at the rate the bottleneck delivered them
  (``_delivery_rate``);
* an RTT sample is the tick's mean RTT of the ACKed bytes (``TickObs.rtt_mean``);
* a loss event (entering recovery, ending a probing phase) needs one packet's worth of reported
  drops (``lost_acc``); the cwnd still gives back every lost byte (``cwnd −= rs->losses``).

The history costs ``HISTORY_TICKS`` floats per flow.  With ACKs clocked by the link the
samples do not exceed the bottleneck rate, so BtlBw is the capacity and BBR v1 keeps only
the queue its 1.25 probes make (a single flow on the Pareto link: p95 one-way delay 65 ms,
ns-3.37's TcpBbr 66 ms; before the core clocked its ACKs the samples ran 1–2.6 % high and
the max filter kept a standing queue, 111 ms).  Shared links can still fill the buffer (BBR
v1's cwnd is 2·BDP per flow; the Pareto paper's Table II reports 116 ms p95 and 1.7 % loss).

For experts (Eagle's teacher, Pareto's fallback): ``bbr_rate``, ``bbr_cwnd``, ``bbr_btlbw`` and
``bbr_min_rtt`` read a ``BBRState``; ``bbr_init``/``bbr_update`` advance it from ``TickObs``.

Everything is in bytes, seconds and bytes/s; the constants below are tcp_bbr.c's, converted.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.sim.controller import Action, Controller, ControllerParams, TickObs
from jaxcc.units import MSS


# ----------------------------------------------------------------------------- constants

# Modes of the state machine (tcp_bbr.c: enum bbr_mode).
STARTUP, DRAIN, PROBE_BW, PROBE_RTT = 0, 1, 2, 3

# "We use a high_gain value of 2/ln(2) because it's the smallest pacing gain that will allow a
# smoothly increasing pacing rate that will double each RTT and send the same number of packets
# per RTT that an un-paced, slow-starting Reno or CUBIC flow would" (tcp_bbr.c, bbr_high_gain).
# Used as both the pacing and the cwnd gain in STARTUP.
HIGH_GAIN = 2.0 / math.log(2.0)  # ≈ 2.885
# "The pacing gain of 1/high_gain in BBR_DRAIN is calculated to typically drain the queue
# created in BBR_STARTUP in a single round" (bbr_drain_gain).
DRAIN_GAIN = 1.0 / HIGH_GAIN
# "The gain for deriving steady-state cwnd tolerates delayed/stretched ACKs" (bbr_cwnd_gain):
# 2·BDP in flight keeps the pipe full even when ACKs arrive in bunches.
CWND_GAIN = 2.0
# "The pacing_gain values for the PROBE_BW gain cycle, to discover/share bw": probe at 1.25×
# for one RTprop (enough to raise a queue when more bandwidth exists), drain the queue that
# probe made at 0.75×, then cruise at 1× for six RTprops (bbr_pacing_gain[]).
PACING_GAIN_CYCLE = (1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
CYCLE_LEN = len(PACING_GAIN_CYCLE)
# "Randomize the starting gain cycling phase over N phases" (bbr_cycle_rand): the first phase
# is drawn from the 7 phases other than the draining 0.75 one, so that flows which start
# together do not probe in lock-step.
CYCLE_RAND = 7
# "Pace at ~1% below estimated bw, on average, to reduce queue at bottleneck" (bbr_pacing_margin_percent).
PACING_MARGIN = 0.01
# "Window length of bw filter (in rounds)" (bbr_bw_rtts): long enough to cover a whole gain
# cycle (8 phases) plus slack, so a probe's sample survives until the next probe.
BW_WINDOW_ROUNDS = 10
# "Window length of min_rtt filter (in sec)" (bbr_min_rtt_win_sec).
MIN_RTT_WINDOW_S = 10.0
# "Minimum time (in ms) spent at bbr_cwnd_min_target in BBR_PROBE_RTT mode" (bbr_probe_rtt_mode_ms).
PROBE_RTT_DURATION_S = 0.200
# "Try to keep at least this many packets in flight, if things go smoothly. For smooth
# functioning, a sliding window protocol ACKing every other packet needs at least 4 packets
# in flight" (bbr_cwnd_min_target).  Also the cwnd in PROBE_RTT.
CWND_MIN_TARGET = 4 * MSS
# "If bw has increased significantly (1.25x), there may be more bw available" (bbr_full_bw_thresh) ...
FULL_BW_THRESH = 1.25
# ... "But after 3 rounds w/o significant bw growth, estimate pipe is full" (bbr_full_bw_cnt).
FULL_BW_COUNT = 3
# Linux's initial congestion window (TCP_INIT_CWND, RFC 6928).
INIT_CWND = 10 * MSS
# Before the first RTT sample, bbr_init_pacing_rate_from_rtt() assumes a 1 ms RTT ("nominal default RTT").
DEFAULT_RTT_S = 1e-3
# TSO autosizing (bbr_tso_segs_goal): one "segment burst" is ~1 ms of data at the pacing rate
# (sk_pacing_shift = 10, i.e. rate/1024), at most a 64 KB GSO super-packet, at least 2 packets
# (1 below bbr_min_tso_rate = 1.2 Mbit/s).  bbr_quantization_budget() adds 3 bursts to the
# cwnd "to allow for TSO/GSO and delayed ACKs in flight".  The fluid sender has no bursts, but
# the budget is part of BBR's cwnd, so it is kept for fidelity.
PACING_SHIFT_S = 1.0 / 1024.0
GSO_MAX_BYTES = 65536.0
MIN_TSO_RATE = 1.2e6 / 8.0  # bytes/s
# Ticks of ACK history kept for delivery-rate samples: one RTT (queueing included) must fit,
# i.e. RTTs up to ~12× the link's smallest at the default 8 ticks per RTT.
HISTORY_TICKS = 96
# Slack for comparing fluid byte counters (float32 rounding is far below one byte here).
EPS_BYTES = 1.0
# tcp_bbr.c measures RTTs in microseconds (rs->rtt_us).
RTT_RESOLUTION_S = 1e-6
# "Infinite" min RTT before the first sample (tcp_bbr.c uses ~0U).
NO_RTT = 1e9


class BBRState(NamedTuple):
    """One flow's BBR state (all scalars, plus the bandwidth filter's round slots)."""

    mode: jax.Array  # int32: STARTUP, DRAIN, PROBE_BW, PROBE_RTT
    cwnd: jax.Array  # bytes (tp->snd_cwnd)
    pacing_rate: jax.Array  # bytes/s (sk->sk_pacing_rate)
    pacing_gain: jax.Array
    cwnd_gain: jax.Array
    has_seen_rtt: jax.Array  # bool
    # Round-trip counting (bbr->round_start, next_rtt_delivered, rtt_cnt).
    round_count: jax.Array  # int32
    round_left: jax.Array  # bytes that must still be ACKed/lost before the round ends
    # Per-tick history for delivery-rate samples (``_delivery_rate``): slot tick % HISTORY_TICKS
    # holds that tick's ACKed bytes.
    tick: jax.Array  # int32: ticks since the flow started
    hist_acked: jax.Array  # [HISTORY_TICKS]
    last_sample: jax.Array  # the latest delivery-rate sample (bytes/s; 0 without ACKs), for diagnostics
    # BtlBw: max filter over BW_WINDOW_ROUNDS rounds; slot round_count % 10 holds that round's max.
    bw_slots: jax.Array  # [BW_WINDOW_ROUNDS] bytes/s
    # RTprop: min RTT and when it was last refreshed (bbr->min_rtt_us, min_rtt_stamp).
    min_rtt: jax.Array  # s
    min_rtt_stamp: jax.Array  # s
    # STARTUP plateau detection (full_bw, full_bw_cnt, full_bw_reached).
    full_bw: jax.Array
    full_bw_cnt: jax.Array  # int32
    full_bw_reached: jax.Array  # bool
    # PROBE_BW gain cycling (cycle_idx, cycle_mstamp).
    cycle_idx: jax.Array  # int32
    cycle_stamp: jax.Array  # s
    # PROBE_RTT (probe_rtt_done_stamp, probe_rtt_round_done); done_stamp < 0 means unset.
    probe_rtt_done_stamp: jax.Array
    probe_rtt_round_done: jax.Array  # bool
    # Loss recovery (TCP_CA_Recovery as seen by BBR: prior_cwnd, packet_conservation).
    in_recovery: jax.Array  # bool
    lost_acc: jax.Array  # bytes reported lost outside recovery since the last loss event
    recovery_left: jax.Array  # bytes outstanding at loss detection not yet ACKed/lost
    packet_conservation: jax.Array  # bool
    prior_cwnd: jax.Array  # bytes


# ----------------------------------------------------------------------------- helpers


def bbr_btlbw(s: BBRState) -> jax.Array:
    """The bottleneck-bandwidth estimate (bbr_max_bw), bytes/s."""
    return jnp.max(s.bw_slots)


def bbr_min_rtt(s: BBRState) -> jax.Array:
    """The RTprop estimate (s); ``NO_RTT`` before the first sample."""
    return s.min_rtt


def bbr_rate(s: BBRState) -> jax.Array:
    """The pacing rate BBR uses for the next tick (bytes/s) — the Eagle/Pareto expert's action."""
    return s.pacing_rate


def bbr_cwnd(s: BBRState) -> jax.Array:
    """The congestion window BBR uses for the next tick (bytes), PROBE_RTT's cap included."""
    return jnp.where(s.mode == PROBE_RTT, jnp.minimum(s.cwnd, CWND_MIN_TARGET), s.cwnd)


def _pacing_rate(bw, gain):
    """bbr_bw_to_pacing_rate: gain · bw, 1% under (PACING_MARGIN)."""
    return gain * bw * (1.0 - PACING_MARGIN)


def _tso_segs_goal(pacing_rate):
    """bbr_tso_segs_goal in packets: ~1 ms of data at the pacing rate, within [min, 64 KB]."""
    min_segs = jnp.where(pacing_rate < MIN_TSO_RATE, 1.0, 2.0)
    burst = jnp.minimum(pacing_rate * PACING_SHIFT_S, GSO_MAX_BYTES)
    return jnp.maximum(jnp.floor(burst / MSS), min_segs)


def _inflight(s: BBRState, bw, gain, mode, cycle_idx, pacing_rate):
    """bbr_inflight = bbr_bdp + bbr_quantization_budget (bytes)."""
    bdp = jnp.where(s.min_rtt >= NO_RTT, INIT_CWND, gain * bw * s.min_rtt)  # bbr_bdp
    pkts = jnp.ceil(bdp / MSS) + 3.0 * _tso_segs_goal(pacing_rate)
    pkts = 2.0 * jnp.ceil(pkts / 2.0)  # "(cwnd + 1) & ~1U": round up to even for delayed ACKs
    pkts = pkts + jnp.where((mode == PROBE_BW) & (cycle_idx == 0), 2.0, 0.0)  # headroom to probe
    return pkts * MSS


def _delivery_rate(s: BBRState, obs: TickObs):
    """One delivery-rate sample from the ACKs of the last round trip (tcp_rate.c, in fluid form).

    Linux's sample for an ACKed packet P is the data delivered between P's transmission and its
    ACK over that interval (the longer of the send and the ACK interval, against ACK
    compression) — about one RTT of deliveries.  The fluid core returns ACKs at the rate the
    bottleneck delivered the bytes (``core.step`` spreads each tick's ACKs over its FIFO
    departure interval), so the same quantity is the bytes ACKed over the last RTT
    (``ρ = rtt_mean / dt`` ticks, the latest ρ ticks of ACKs with the oldest one in part) over
    that RTT: on a busy link exactly its delivery rate, never more than the capacity; while the
    sender is rate-limited below it, its own rate.  (A sample per tick from the ACK count of one
    tick would be off by a tick's rounding; one from the sending history, as this controller
    did before the core clocked its ACKs, carried the old core's ACK compression into the max
    filter: BtlBw 1–2.6 % above the capacity and a standing queue.)  When the RTT exceeds the
    history (very deep queues) the sample is the ACK rate over the whole history.

    Returns the sample (bytes/s) and the updated ACK history.
    """
    k = HISTORY_TICKS
    t = s.tick  # this tick spans [t, t + 1) in tick units
    h_acked = s.hist_acked.at[jnp.mod(t, k)].set(obs.acked)
    rho = obs.rtt_mean / obs.dt
    age = jnp.mod(t - jnp.arange(k), k).astype(jnp.float32)  # ticks since each slot's tick
    weight = jnp.where(age <= t.astype(jnp.float32), jnp.clip(rho - age, 0.0, 1.0), 0.0)
    by_window = jnp.sum(h_acked * weight) / jnp.maximum(rho * obs.dt, 1e-9)
    span = jnp.clip(t + 1, 1, k - 1)
    by_acks = jnp.sum(jnp.where(age < span.astype(jnp.float32), h_acked, 0.0)) / (span.astype(jnp.float32) * obs.dt)
    # One RTT of history is needed (and a flow younger than its RTT has not filled it yet: its
    # window sample is then the ACK rate since it started, which is what it has).
    sample = jnp.where(rho + 1.0 < k, by_window, by_acks)
    return sample, h_acked


def _mix_u32(x: jax.Array) -> jax.Array:
    """A 32-bit integer hash (Wellons' lowbias32): deterministic pseudo-randomness in jit."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def _random_cycle_start(now, bw, seed):
    """bbr_reset_probe_bw_mode's first phase: CYCLE_LEN − 1 − rand(7), then advanced once.

    The "random" number hashes the time and the bandwidth estimate at which the flow enters
    PROBE_BW (and ``BBRParams.seed``), so runs are deterministic while flows that start at
    different times get different phases.
    """
    bits = (jax.lax.bitcast_convert_type(jnp.float32(now), jnp.uint32)
            ^ _mix_u32(jax.lax.bitcast_convert_type(jnp.float32(bw), jnp.uint32))
            ^ _mix_u32(jax.lax.bitcast_convert_type(jnp.float32(seed), jnp.uint32) + jnp.uint32(0x9E3779B9)))
    r = (_mix_u32(bits) % jnp.uint32(CYCLE_RAND)).astype(jnp.int32)
    return jnp.mod(CYCLE_LEN - 1 - r + 1, CYCLE_LEN)


# ----------------------------------------------------------------------------- controller


def bbr_init(cp: ControllerParams) -> BBRState:
    """bbr_init: STARTUP, initial window, and a pacing rate from a nominal 1 ms RTT.

    ``cp.bbr.seed`` seeds the random choice of the first PROBE_BW phase (0 by default).
    """
    f = jnp.float32
    z = jnp.zeros((), jnp.float32)
    return BBRState(
        mode=jnp.int32(STARTUP),
        cwnd=f(INIT_CWND),
        pacing_rate=f(_pacing_rate(INIT_CWND / DEFAULT_RTT_S, HIGH_GAIN)),
        pacing_gain=f(HIGH_GAIN),
        cwnd_gain=f(HIGH_GAIN),
        has_seen_rtt=jnp.bool_(False),
        round_count=jnp.int32(0),
        round_left=z,
        tick=jnp.int32(0),
        hist_acked=jnp.zeros((HISTORY_TICKS,), jnp.float32),
        last_sample=z,
        bw_slots=jnp.zeros((BW_WINDOW_ROUNDS,), jnp.float32),
        min_rtt=f(NO_RTT),
        min_rtt_stamp=z,
        full_bw=z,
        full_bw_cnt=jnp.int32(0),
        full_bw_reached=jnp.bool_(False),
        cycle_idx=jnp.int32(0),
        cycle_stamp=z,
        probe_rtt_done_stamp=z - 1.0,
        probe_rtt_round_done=jnp.bool_(False),
        in_recovery=jnp.bool_(False),
        lost_acc=z,
        recovery_left=z,
        packet_conservation=jnp.bool_(False),
        prior_cwnd=f(INIT_CWND),
    )


def bbr_act(s: BBRState, cp: ControllerParams) -> Action:
    return Action(rate=bbr_rate(s), cwnd=bbr_cwnd(s))


def _save_cwnd(s: BBRState) -> jax.Array:
    """bbr_save_cwnd: remember the last "good" cwnd before recovery or PROBE_RTT."""
    keep_max = s.in_recovery | (s.mode == PROBE_RTT)
    return jnp.where(keep_max, jnp.maximum(s.prior_cwnd, s.cwnd), s.cwnd)


def bbr_update(s: BBRState, obs: TickObs, cp: ControllerParams) -> BBRState:
    """bbr_main for one tick of feedback: update the model, then set pacing rate and cwnd."""
    now = obs.now
    acked, lost = obs.acked, obs.lost
    got_ack = acked > 0
    # Bytes in flight before this tick's ACKs (rs->prior_in_flight) and after them, before the
    # tick's own sending (tcp_packets_in_flight at ACK time).  The step processes ACKs first.
    pipe_after_ack = jnp.maximum(obs.inflight - obs.sent, 0.0)
    prior_inflight = pipe_after_ack + acked + lost

    # --- loss recovery, as TCP's state machine reports it to BBR ------------------------
    # A loss notice outside recovery enters TCP_CA_Recovery; it lasts until everything that was
    # outstanding at that moment is ACKed (snd_una ≥ high_seq), i.e. about one round.
    # A loss is one packet's worth of reported drops: fluid drops are spread over all flows in
    # proportion to their arrivals; counting them up to one MSS gives the packet-level outcome in
    # expectation (a flow that sent little during a short overflow may escape it).
    rec_left = s.recovery_left - (acked + lost)
    leave_recovery = s.in_recovery & (rec_left <= EPS_BYTES)
    lost_acc = jnp.where(s.in_recovery & ~leave_recovery, 0.0, s.lost_acc + lost)
    loss_event = lost_acc >= MSS
    lost_acc = jnp.where(loss_event, 0.0, lost_acc)
    enter_recovery = loss_event & (~s.in_recovery | leave_recovery)
    prior_cwnd = jnp.where(enter_recovery, _save_cwnd(s), s.prior_cwnd)  # bbr_ssthresh → bbr_save_cwnd
    in_recovery = jnp.where(enter_recovery, True, s.in_recovery & ~leave_recovery)
    # Recovery covers everything sent before it began (Linux high_seq = snd_nxt), this tick's own
    # sending included: the core sends before the controller sees the tick's feedback, so those
    # bytes' drops belong to this loss event and must not open a second recovery a round later.
    recovery_left = jnp.where(enter_recovery, obs.inflight, rec_left)
    exited_recovery = leave_recovery & ~enter_recovery

    # --- bbr_update_bw: round accounting and the delivery-rate sample --------------------
    round_left = s.round_left - (acked + lost)
    round_start = got_ack & (round_left < -EPS_BYTES)
    sample, hist = _delivery_rate(s, obs)
    # The sample joins the current round's slot of the max filter (bbr_update_bw: minmax_running_max).
    slot = jnp.mod(s.round_count, BW_WINDOW_ROUNDS)
    bw_slots = s.bw_slots.at[slot].max(jnp.where(got_ack, sample, 0.0))
    round_count = s.round_count + round_start.astype(jnp.int32)
    # The new round's slot starts empty (it then holds only this round's samples).
    new_slot = jnp.mod(round_count, BW_WINDOW_ROUNDS)
    bw_slots = jnp.where(round_start, bw_slots.at[new_slot].set(0.0), bw_slots)
    round_left = jnp.where(round_start, pipe_after_ack, round_left)
    packet_conservation = s.packet_conservation & ~round_start
    # Entering recovery starts a round now (bbr_set_cwnd_to_recover_or_restore: next_rtt_delivered).
    round_left = jnp.where(enter_recovery, pipe_after_ack, round_left)
    bw = jnp.max(bw_slots)

    mode, cycle_idx, cycle_stamp = s.mode, s.cycle_idx, s.cycle_stamp
    min_rtt, min_rtt_stamp = s.min_rtt, s.min_rtt_stamp

    # --- bbr_update_cycle_phase: advance the PROBE_BW gain cycle -------------------------
    full_length = (now - cycle_stamp) > min_rtt
    gain_now = jnp.asarray(PACING_GAIN_CYCLE, jnp.float32)[cycle_idx]
    next_phase = jnp.where(
        gain_now > 1.0,
        # Probing: keep going until the extra inflight is really in the pipe (or losses say stop).
        full_length & (loss_event | (prior_inflight >= _inflight(s, bw, gain_now, mode, cycle_idx, s.pacing_rate))),
        jnp.where(gain_now < 1.0,
                  # Draining: stop early once the queue the probe made is gone.
                  full_length | (prior_inflight <= _inflight(s, bw, 1.0, mode, cycle_idx, s.pacing_rate)),
                  full_length))
    advance = (mode == PROBE_BW) & next_phase & got_ack
    cycle_idx = jnp.where(advance, jnp.mod(cycle_idx + 1, CYCLE_LEN), cycle_idx)
    cycle_stamp = jnp.where(advance, now, cycle_stamp)

    # --- bbr_check_full_bw_reached: has STARTUP's bandwidth plateaued? -------------------
    check = round_start & ~s.full_bw_reached
    grew = bw >= s.full_bw * FULL_BW_THRESH
    full_bw = jnp.where(check & grew, bw, s.full_bw)
    full_bw_cnt = jnp.where(check, jnp.where(grew, 0, s.full_bw_cnt + 1), s.full_bw_cnt)
    full_bw_reached = s.full_bw_reached | (check & (full_bw_cnt >= FULL_BW_COUNT))

    # --- bbr_check_drain: STARTUP → DRAIN → PROBE_BW --------------------------------------
    mode = jnp.where((mode == STARTUP) & full_bw_reached, DRAIN, mode)
    bdp1 = _inflight(s._replace(min_rtt=min_rtt), bw, 1.0, mode, cycle_idx, s.pacing_rate)
    to_probe_bw = (mode == DRAIN) & (obs.inflight <= bdp1)
    first_phase = _random_cycle_start(now, bw, cp.bbr.seed)
    mode = jnp.where(to_probe_bw, PROBE_BW, mode)
    cycle_idx = jnp.where(to_probe_bw, first_phase, cycle_idx)
    cycle_stamp = jnp.where(to_probe_bw, now, cycle_stamp)

    # --- bbr_update_min_rtt: RTprop filter and PROBE_RTT ---------------------------------
    rtt = obs.rtt_mean
    have_rtt = got_ack & (rtt > 0)
    filter_expired = (min_rtt < NO_RTT) & (now > min_rtt_stamp + MIN_RTT_WINDOW_S)
    # Linux keeps RTTs in whole microseconds, so only a sample at least 1 us lower refreshes the
    # filter (an equal one does not); the fluid's float32 RTTs jitter far below that.
    take = have_rtt & ((rtt < min_rtt - RTT_RESOLUTION_S) | filter_expired)
    min_rtt = jnp.where(take, rtt, min_rtt)
    min_rtt_stamp = jnp.where(take, now, min_rtt_stamp)
    enter_probe_rtt = filter_expired & (mode != PROBE_RTT)
    cur = s._replace(mode=mode, in_recovery=in_recovery, prior_cwnd=prior_cwnd)
    prior_cwnd = jnp.where(enter_probe_rtt, _save_cwnd(cur), prior_cwnd)
    mode = jnp.where(enter_probe_rtt, PROBE_RTT, mode)
    done_stamp = jnp.where(enter_probe_rtt, -1.0, s.probe_rtt_done_stamp)
    rtt_round_done = s.probe_rtt_round_done
    in_prt = mode == PROBE_RTT
    # Once the pipe has drained to the minimum window, hold it there for 200 ms and a round.
    start_hold = in_prt & (done_stamp < 0) & (obs.inflight <= CWND_MIN_TARGET + EPS_BYTES)
    done_stamp = jnp.where(start_hold, now + PROBE_RTT_DURATION_S, done_stamp)
    rtt_round_done = jnp.where(start_hold, False, rtt_round_done | (in_prt & (done_stamp >= 0) & round_start))
    round_left = jnp.where(start_hold, obs.inflight, round_left)
    # bbr_check_probe_rtt_done: RTprop is fresh again; restore cwnd and resume.
    prt_done = in_prt & ~start_hold & (done_stamp >= 0) & rtt_round_done & (now > done_stamp)
    min_rtt_stamp = jnp.where(prt_done, now, min_rtt_stamp)
    # bbr_reset_mode: back to STARTUP if the pipe was never filled, else PROBE_BW.
    mode = jnp.where(prt_done, jnp.where(full_bw_reached, PROBE_BW, STARTUP), mode)
    cycle_idx = jnp.where(prt_done & full_bw_reached, first_phase, cycle_idx)
    cycle_stamp = jnp.where(prt_done & full_bw_reached, now, cycle_stamp)

    # --- bbr_update_gains ------------------------------------------------------------------
    cycle_gain = jnp.asarray(PACING_GAIN_CYCLE, jnp.float32)[cycle_idx]
    pacing_gain = jnp.select([mode == STARTUP, mode == DRAIN, mode == PROBE_BW], [HIGH_GAIN, DRAIN_GAIN, cycle_gain], 1.0)
    cwnd_gain = jnp.select([mode == STARTUP, mode == DRAIN, mode == PROBE_BW], [HIGH_GAIN, HIGH_GAIN, CWND_GAIN], 1.0)
    pacing_gain = pacing_gain.astype(jnp.float32)
    cwnd_gain = cwnd_gain.astype(jnp.float32)

    # --- bbr_set_pacing_rate ---------------------------------------------------------------
    pacing_rate = s.pacing_rate
    first_rtt = have_rtt & ~s.has_seen_rtt
    # bbr_init_pacing_rate_from_rtt: the first RTT sample replaces the nominal 1 ms guess.
    pacing_rate = jnp.where(first_rtt, _pacing_rate(INIT_CWND / jnp.maximum(rtt, 1e-6), HIGH_GAIN), pacing_rate)
    has_seen_rtt = s.has_seen_rtt | have_rtt
    target_rate = _pacing_rate(bw, pacing_gain)
    # Until the pipe is full, the pacing rate only grows (a small early sample must not slow STARTUP).
    pacing_rate = jnp.where((bw > 0) & (full_bw_reached | (target_rate > pacing_rate)), target_rate, pacing_rate)

    # --- bbr_set_cwnd (with bbr_set_cwnd_to_recover_or_restore) ----------------------------
    cwnd = s.cwnd
    cwnd = jnp.where(lost > EPS_BYTES, jnp.maximum(cwnd - lost, MSS), cwnd)
    # Entering recovery: packet conservation for one round — send one byte per byte ACKed.
    cwnd = jnp.where(enter_recovery, pipe_after_ack + acked, cwnd)
    packet_conservation = jnp.where(enter_recovery, True, packet_conservation & ~exited_recovery)
    # Leaving recovery: restore the window from before it.
    cwnd = jnp.where(exited_recovery, jnp.maximum(cwnd, prior_cwnd), cwnd)
    conserving = packet_conservation
    cwnd_cons = jnp.maximum(cwnd, pipe_after_ack + acked)
    target = _inflight(s._replace(min_rtt=min_rtt), bw, cwnd_gain, mode, cycle_idx, pacing_rate)
    grow = jnp.where(full_bw_reached, jnp.minimum(cwnd + acked, target),
                     jnp.where(cwnd < target, cwnd + acked, cwnd))
    cwnd_norm = jnp.maximum(grow, CWND_MIN_TARGET)
    new_cwnd = jnp.where(conserving, cwnd_cons, cwnd_norm)
    cwnd = jnp.where(got_ack, new_cwnd, s.cwnd)
    # bbr_check_probe_rtt_done restores the saved window on the way out of PROBE_RTT.
    cwnd = jnp.where(prt_done, jnp.maximum(cwnd, prior_cwnd), cwnd)
    cwnd = jnp.where(mode == PROBE_RTT, jnp.minimum(cwnd, CWND_MIN_TARGET), cwnd)

    return BBRState(
        mode=mode.astype(jnp.int32), cwnd=cwnd, pacing_rate=pacing_rate, pacing_gain=pacing_gain,
        cwnd_gain=cwnd_gain, has_seen_rtt=has_seen_rtt, round_count=round_count, round_left=round_left,
        tick=s.tick + 1, hist_acked=hist, last_sample=jnp.where(got_ack, sample, 0.0), bw_slots=bw_slots, min_rtt=min_rtt,
        min_rtt_stamp=min_rtt_stamp, full_bw=full_bw, full_bw_cnt=full_bw_cnt.astype(jnp.int32),
        full_bw_reached=full_bw_reached, cycle_idx=cycle_idx.astype(jnp.int32), cycle_stamp=cycle_stamp,
        probe_rtt_done_stamp=done_stamp, probe_rtt_round_done=rtt_round_done, in_recovery=in_recovery, lost_acc=lost_acc,
        recovery_left=recovery_left, packet_conservation=packet_conservation, prior_cwnd=prior_cwnd,
    )


BBR = Controller("bbr", bbr_init, bbr_act, bbr_update)
