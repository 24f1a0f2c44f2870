"""BBR as Pareto's expert (Algorithm 3 lines 3–4), evaluated once per monitor interval.

Pareto asks the BBR expert for the next action when the previous step's reward was below a
threshold.  The environment reports one monitor interval (MI = 2 RTTs) per step, not BBR's
per-ACK/per-tick feedback, so ``jaxcc.baselines.bbr`` (a per-tick controller) cannot be run in
shadow inside the step.  This is the same state machine at MI granularity, with tcp_bbr.c's
constants taken from ``jaxcc.baselines.bbr``:

* BtlBw: max of the MI delivery rates over the last ``BW_WINDOW_ROUNDS`` round trips
  (``BW_WINDOW_ROUNDS / mi_rtts`` MIs); RTprop: min MI mean RTT;
* STARTUP (gain 2/ln2) until BtlBw has not grown by 25% for ``FULL_BW_COUNT`` MIs, DRAIN
  (gain ln2/2) until the mean RTT is within 10% of RTprop, then PROBE_BW cycling
  ``PACING_GAIN_CYCLE`` one phase per MI.

The expert's *action* is what makes Pareto's rate equal BBR's pacing rate:
``a = clip(gain·BtlBw / S − 1, −0.7, 2)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.agents.pareto.networks import A_LOW, A_HIGH
from jaxcc.baselines import bbr

STARTUP, DRAIN, PROBE_BW = 0, 1, 2


class MIBBRState(NamedTuple):
    bw_hist: jax.Array  # [F, W] delivery rates of the last W MIs (bytes/s)
    min_rtt: jax.Array  # [F] s
    mode: jax.Array  # [F] int32
    cycle: jax.Array  # [F] int32
    full_bw: jax.Array  # [F]
    full_cnt: jax.Array  # [F] int32


def window_mis(mi_rtts: float) -> int:
    return max(1, int(round(bbr.BW_WINDOW_ROUNDS / max(mi_rtts, 1e-9))))


def init(num_flows: int, mi_rtts: float = 2.0) -> MIBBRState:
    f = num_flows
    return MIBBRState(bw_hist=jnp.zeros((f, window_mis(mi_rtts)), jnp.float32),
                      min_rtt=jnp.full((f,), bbr.NO_RTT, jnp.float32), mode=jnp.zeros((f,), jnp.int32),
                      cycle=jnp.zeros((f,), jnp.int32), full_bw=jnp.zeros((f,), jnp.float32),
                      full_cnt=jnp.zeros((f,), jnp.int32))


def update(s: MIBBRState, delivery_rate, rtt_mean, active) -> MIBBRState:
    """One MI of feedback (``delivery_rate``, ``rtt_mean`` [F]); inactive flows keep their state."""
    hist = jnp.concatenate([s.bw_hist[:, 1:], delivery_rate[:, None]], 1)
    bw = hist.max(1)
    has_rtt = rtt_mean > 0
    min_rtt = jnp.where(has_rtt, jnp.minimum(s.min_rtt, rtt_mean), s.min_rtt)
    grew = bw >= bbr.FULL_BW_THRESH * s.full_bw
    full_bw = jnp.where(grew, bw, s.full_bw)
    full_cnt = jnp.where(grew, 0, s.full_cnt + 1)
    queue_gone = has_rtt & (rtt_mean <= 1.1 * min_rtt)
    mode = jnp.where((s.mode == STARTUP) & (full_cnt >= bbr.FULL_BW_COUNT), DRAIN, s.mode)
    mode = jnp.where((mode == DRAIN) & (s.mode == DRAIN) & queue_gone, PROBE_BW, mode)
    cycle = jnp.where((mode == PROBE_BW) & (s.mode == PROBE_BW), jnp.mod(s.cycle + 1, bbr.CYCLE_LEN), 0)
    new = MIBBRState(hist, min_rtt, mode.astype(jnp.int32), cycle.astype(jnp.int32), full_bw, full_cnt.astype(jnp.int32))
    m = active
    return jax.tree.map(lambda n, o: jnp.where(m.reshape(m.shape + (1,) * (n.ndim - 1)), n, o), new, s)


def action(s: MIBBRState, rate, a_range=(A_LOW, A_HIGH)) -> jax.Array:
    """Pareto action that sets the rate ``rate`` (bytes/s, [F]) to BBR's pacing rate, clipped to
    the policy's action range (§III's [−0.7, 2] by default)."""
    gains = jnp.asarray(bbr.PACING_GAIN_CYCLE, jnp.float32)
    gain = jnp.where(s.mode == STARTUP, bbr.HIGH_GAIN, jnp.where(s.mode == DRAIN, bbr.DRAIN_GAIN, gains[s.cycle]))
    bw = s.bw_hist.max(1)
    target = gain * bw * (1.0 - bbr.PACING_MARGIN)
    a = jnp.where(bw > 0, target / jnp.maximum(rate, 1.0) - 1.0, bbr.HIGH_GAIN - 1.0)
    return jnp.clip(a, a_range[0], a_range[1])
