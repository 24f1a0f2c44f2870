"""The reference senders of ``packet_sim`` as in-simulator ``Controller``s for the fluid model.

They follow the same rules as the packet versions, applied once per tick to the tick's
aggregated feedback, so that a fluid-vs-packet comparison tests the *network model*, not two
different algorithms:

* constant rate: ``jaxcc.baselines.simple.FIXED`` (``ControllerParams.fixed.mbps``), re-exported here;
* ``AIMD``: ``packet_sim.AIMD`` per tick;
* ``BBR_LIKE``: ``packet_sim.BBRLike`` per tick.

Timing convention.  The fluid model delivers feedback at tick *starts* (``core.step`` rounds
the ACK time to the nearest tick boundary and uses it for that tick's sending), so the arrival
time of the feedback seen in ``update`` is ``obs.now - obs.dt``; the controllers use that time
wherever the packet senders use an ACK's arrival time.

Per-tick translations of the per-packet rules:

* AIMD window growth in congestion avoidance, ``+MSS·a/cwnd`` per ACKed ``a`` bytes, integrated
  over the tick's ``acked`` bytes: ``cwnd' = sqrt(cwnd² + 2·MSS·acked)``.
* AIMD loss events.  A packet sender detects losses in whole packets; a fluid sender learns of
  fractions of packets.  The fluid AIMD therefore counts the lost bytes of a new episode in a
  *loss credit* and has a loss event when one packet's worth (MSS) has accumulated — the
  mean-field version of "a loss event is the detection of a lost packet".  "New episode" is the
  packet rule (the lost bytes were sent after the last cut took effect): the bytes reported
  lost at ``t`` were sent at ``t - RTT`` (latest sample), and a cut decided on feedback that
  arrived at ``t_cut`` governs sending from the next tick, ``t_cut + dt``, on.
* BBR-like phases end at the first tick with ACKs at least one min RTT after the phase began
  (the packet version: the first ACK), and the phase's delivery rate is the bytes ACKed in it
  over its length, exactly as in the packet version.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from jaxcc.sim.controller import Action, Controller, TickObs
from jaxcc.baselines.simple import FIXED  # noqa: F401  (the constant-rate sender)
from jaxcc.sim.core import BIG
from jaxcc.units import MSS

from reference import packet_sim

_F = jnp.float32


# ----------------------------------------------------------------------------- AIMD


class AimdState(NamedTuple):
    cwnd: jnp.ndarray
    ssthresh: jnp.ndarray
    last_cut: jnp.ndarray
    latest_rtt: jnp.ndarray
    credit: jnp.ndarray  # lost bytes of a new episode so far (a loss event at >= MSS)


def _aimd_init(cp):
    return AimdState(cwnd=_F(packet_sim.AIMD.IW), ssthresh=_F(BIG), last_cut=_F(-1e9),
                     latest_rtt=_F(0.0), credit=_F(0.0))


def _aimd_act(s: AimdState, cp):
    return Action(rate=_F(BIG), cwnd=s.cwnd)


def _aimd_update(s: AimdState, obs: TickObs, cp):
    t = obs.now - obs.dt  # when this tick's feedback arrived
    latest_rtt = jnp.where(obs.acked > 0, obs.rtt_mean, s.latest_rtt)
    slow_start = s.cwnd < s.ssthresh
    cwnd = jnp.where(slow_start, s.cwnd + obs.acked, jnp.sqrt(s.cwnd * s.cwnd + 2.0 * MSS * obs.acked))
    new_episode = (t - latest_rtt) > s.last_cut + obs.dt  # sent after the last cut took effect
    credit = jnp.where(new_episode, s.credit + obs.lost, 0.0)
    cut = credit >= MSS * (1.0 - 1e-4)
    cut_cwnd = jnp.maximum(cwnd / 2.0, packet_sim.AIMD.MIN_CWND)
    return AimdState(
        cwnd=jnp.where(cut, cut_cwnd, cwnd),
        ssthresh=jnp.where(cut, cut_cwnd, s.ssthresh),
        last_cut=jnp.where(cut, t, s.last_cut),
        latest_rtt=latest_rtt,
        credit=jnp.where(cut, 0.0, credit),
    )


AIMD = Controller("ref_aimd", _aimd_init, _aimd_act, _aimd_update)


# ----------------------------------------------------------------------------- BBR-like

_STARTUP, _DRAIN, _PROBE_BW = packet_sim.BBRLike.STARTUP, packet_sim.BBRLike.DRAIN, packet_sim.BBRLike.PROBE_BW
_GAINS = jnp.asarray(packet_sim.BBRLike.GAINS, jnp.float32)


class BbrState(NamedTuple):
    mode: jnp.ndarray  # int32
    min_rtt: jnp.ndarray
    samples: jnp.ndarray  # [BW_WINDOW] last delivery-rate samples (0 = none yet)
    next_sample: jnp.ndarray  # int32 ring index
    btlbw: jnp.ndarray
    phase_start: jnp.ndarray  # < 0: no ACK yet
    phase_acked: jnp.ndarray
    full_bw: jnp.ndarray
    full_cnt: jnp.ndarray  # int32
    cycle: jnp.ndarray  # int32


def _bbr_init(cp):
    i0 = jnp.zeros((), jnp.int32)
    return BbrState(mode=i0 + _STARTUP, min_rtt=_F(BIG), samples=jnp.zeros((packet_sim.BBRLike.BW_WINDOW,), _F),
                    next_sample=i0, btlbw=_F(0.0), phase_start=_F(-1.0), phase_acked=_F(0.0),
                    full_bw=_F(0.0), full_cnt=i0, cycle=i0)


def _bbr_act(s: BbrState, cp):
    known = s.btlbw > 0
    gain = jnp.where(s.mode == _STARTUP, packet_sim.BBRLike.HIGH_GAIN,
                     jnp.where(s.mode == _DRAIN, 1.0 / packet_sim.BBRLike.HIGH_GAIN, _GAINS[s.cycle]))
    rate = jnp.where(known, gain * s.btlbw, BIG)
    cwnd = jnp.where(known, jnp.maximum(2.0 * s.btlbw * s.min_rtt, packet_sim.BBRLike.MIN_CWND),
                     packet_sim.BBRLike.IW)
    return Action(rate=rate.astype(_F), cwnd=cwnd.astype(_F))


def _bbr_update(s: BbrState, obs: TickObs, cp):
    t = obs.now - obs.dt  # when this tick's feedback arrived
    has_ack = obs.acked > 0
    min_rtt = jnp.where(has_ack, jnp.minimum(s.min_rtt, obs.rtt_mean), s.min_rtt)
    phase_start = jnp.where((s.phase_start < 0) & has_ack, t, s.phase_start)
    phase_acked = s.phase_acked + obs.acked
    end = has_ack & (t - phase_start >= min_rtt)

    # End of a phase: one delivery-rate sample, BtlBw = max of the window, state transitions.
    sample = phase_acked / jnp.maximum(t - phase_start, 1e-9)
    samples = jnp.where(end, s.samples.at[s.next_sample].set(sample), s.samples)
    next_sample = jnp.where(end, (s.next_sample + 1) % packet_sim.BBRLike.BW_WINDOW, s.next_sample)
    btlbw = jnp.where(end, jnp.max(samples), s.btlbw)
    grew = btlbw >= 1.25 * s.full_bw
    in_startup = end & (s.mode == _STARTUP)
    full_bw = jnp.where(in_startup & grew, btlbw, s.full_bw)
    full_cnt = jnp.where(in_startup, jnp.where(grew, 0, s.full_cnt + 1), s.full_cnt)
    mode = jnp.where(in_startup & (full_cnt >= 3), _DRAIN, s.mode)
    cycle = jnp.where(end & (s.mode == _PROBE_BW), (s.cycle + 1) % len(packet_sim.BBRLike.GAINS), s.cycle)
    phase_start = jnp.where(end, t, phase_start)
    phase_acked = jnp.where(end, 0.0, phase_acked)

    # Drain ends once the queue it built is gone (checked on ACKs, before this tick's sending).
    inflight_at_ack = obs.inflight - obs.sent
    drained = has_ack & (mode == _DRAIN) & (inflight_at_ack <= btlbw * min_rtt)
    mode = jnp.where(drained, _PROBE_BW, mode)
    cycle = jnp.where(drained, 0, cycle)
    return BbrState(mode=mode.astype(jnp.int32), min_rtt=min_rtt, samples=samples,
                    next_sample=next_sample.astype(jnp.int32), btlbw=btlbw, phase_start=phase_start,
                    phase_acked=phase_acked, full_bw=full_bw, full_cnt=full_cnt.astype(jnp.int32),
                    cycle=cycle.astype(jnp.int32))


BBR_LIKE = Controller("ref_bbr_like", _bbr_init, _bbr_act, _bbr_update)
