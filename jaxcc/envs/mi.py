"""Monitor-interval (MI) statistics, accumulated per flow from the simulator's per-tick feedback.

This module is deliberately plain: the C++ datapath re-implements it line by line, so every
quantity is a sum, a min, a max or a copy, and every derived value has its formula written out.

Units: bytes, seconds, bytes/s.  RTTs are seconds.

Where the numbers come from
---------------------------
The simulator (``jaxcc.sim.core.step``) reports per tick and per flow:

* ``sent``      bytes the sender put on the wire during the tick;
* ``acked``     bytes whose ACK *arrived* during the tick (feedback is one path delay late);
* ``lost``      bytes the sender *learned* were lost during the tick;
* ``rtt_wsum``  Σ rtt·bytes over the bytes acked in the tick (s·bytes), so the tick's
  byte-weighted mean RTT sample is ``r = rtt_wsum / acked`` (only when ``acked > 0``).

In the fluid model one tick's ACKs carry one RTT value ``r`` for ``acked`` bytes; on a real
sender that is ``acked / MSS`` packets, each with RTT sample ``r``.  Every statistic below is
written so that accumulating per *packet* (C++: weight = packet bytes, sample = its RTT,
time = its ACK arrival time) gives exactly the same numbers as accumulating per *tick*
(Python: weight = acked bytes, sample = r, time = the tick's mid-point).

MIStats fields (all per flow, shape [F] in Python)
--------------------------------------------------
duration      s        length of the MI = number of ticks · dt (C++: now − MI start)
active        s        time the flow was active (sending allowed) during the MI
sent          bytes    Σ sent
acked         bytes    Σ acked
lost          bytes    Σ lost
rtt_wsum      s·bytes  Σ r·w            (w = acked bytes of the sample)
rtt_min       s        min r over samples (BIG when there is no sample)
rtt_max       s        max r over samples (0 when there is no sample)
rtt_first     s        r of the first sample in the MI (0 when there is none)
rtt_last      s        r of the last sample in the MI (0 when there is none)
n_samples     count    number of samples (ticks with acked > 0; C++: ACKed packets)
ls_w          bytes    Σ w
ls_wt         s·bytes  Σ w·t            (t = sample time since the MI start, s)
ls_wtt        s²·bytes Σ w·t²
ls_wr         s·bytes  Σ w·r            (equal to rtt_wsum; kept separate for clarity)
ls_wtr        s²·bytes Σ w·t·r

Derived values (functions below)
--------------------------------
rtt_mean      = rtt_wsum / acked                                    (s; 0 if acked == 0)
send_rate     = sent / duration                                     (bytes/s)
delivery_rate = acked / duration                                    (bytes/s)
loss_rate     = lost / (acked + lost)                               (0..1; 0 if both 0)
rtt_slope     = (ls_w·ls_wtr − ls_wt·ls_wr) / (ls_w·ls_wtt − ls_wt²) (s/s; weighted least-squares
                slope of RTT against time; 0 if fewer than 2 distinct sample times)

RunningStats (across MIs, per flow)
-----------------------------------
min_rtt        s       min over all samples seen so far (min of MI ``rtt_min``)
min_mean_rtt   s       min over MIs with samples of the MI mean RTT (Aurora's latency ratio)
max_delivery   bytes/s max over MIs of ``delivery_rate``
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc.sim.core import BIG, TickOut

# Least-squares slopes need at least this much spread of sample times (s²·bytes²) to be
# defined; below it the slope is reported as 0 (a single sample time, or no samples).
_LS_EPS = 1e-30


@struct.dataclass
class MIStats:
    """Sums over one monitor interval, per flow (see the module docstring for units)."""

    duration: jax.Array
    active: jax.Array
    sent: jax.Array
    acked: jax.Array
    lost: jax.Array
    rtt_wsum: jax.Array
    rtt_min: jax.Array
    rtt_max: jax.Array
    rtt_first: jax.Array
    rtt_last: jax.Array
    n_samples: jax.Array
    ls_w: jax.Array
    ls_wt: jax.Array
    ls_wtt: jax.Array
    ls_wr: jax.Array
    ls_wtr: jax.Array


def mi_zero(num_flows: int, dtype=jnp.float32) -> MIStats:
    """An empty MI: all sums 0, ``rtt_min`` = BIG (no sample yet)."""
    z = jnp.zeros((num_flows,), dtype)
    return MIStats(
        duration=z, active=z, sent=z, acked=z, lost=z, rtt_wsum=z,
        rtt_min=jnp.full((num_flows,), BIG, dtype), rtt_max=z, rtt_first=z, rtt_last=z,
        n_samples=z, ls_w=z, ls_wt=z, ls_wtt=z, ls_wr=z, ls_wtr=z,
    )


def mi_add_sample(m: MIStats, w: jax.Array, r: jax.Array, t: jax.Array) -> MIStats:
    """Adds one RTT sample ``r`` (s) of weight ``w`` (bytes) at time ``t`` (s since MI start).

    Samples with ``w <= 0`` are ignored.  This is the per-packet update of the C++ datapath.
    """
    has = w > 0
    wz = jnp.where(has, w, 0.0)
    rz = jnp.where(has, r, 0.0)
    first = m.n_samples == 0
    return m.replace(
        acked=m.acked + wz,
        rtt_wsum=m.rtt_wsum + wz * rz,
        rtt_min=jnp.where(has, jnp.minimum(m.rtt_min, rz), m.rtt_min),
        rtt_max=jnp.where(has, jnp.maximum(m.rtt_max, rz), m.rtt_max),
        rtt_first=jnp.where(has & first, rz, m.rtt_first),
        rtt_last=jnp.where(has, rz, m.rtt_last),
        n_samples=m.n_samples + has.astype(m.n_samples.dtype),
        ls_w=m.ls_w + wz,
        ls_wt=m.ls_wt + wz * t,
        ls_wtt=m.ls_wtt + wz * t * t,
        ls_wr=m.ls_wr + wz * rz,
        ls_wtr=m.ls_wtr + wz * t * rz,
    )


def mi_add_tick(m: MIStats, out: TickOut, dt: jax.Array) -> MIStats:
    """Accumulates one simulator tick into the MI (all flows at once).

    The tick's ACKs are one sample at the tick's mid-point ``t = duration + dt/2`` (the MI's
    elapsed time before this tick plus half a tick) with ``r = rtt_wsum / acked``.
    """
    t_mid = m.duration + 0.5 * dt
    r = jnp.where(out.acked > 0, out.rtt_wsum / jnp.maximum(out.acked, 1e-30), 0.0)
    m = mi_add_sample(m, out.acked, r, t_mid)
    return m.replace(
        duration=m.duration + dt,
        active=m.active + jnp.where(out.active, dt, 0.0),
        sent=m.sent + out.sent,
        lost=m.lost + out.lost,
    )


# ----------------------------------------------------------------------------- derived values


def rtt_mean(m: MIStats) -> jax.Array:
    """Byte-weighted mean RTT of the MI (s): ``rtt_wsum / acked``; 0 when nothing was acked."""
    return jnp.where(m.acked > 0, m.rtt_wsum / jnp.maximum(m.acked, 1e-30), 0.0)


def send_rate(m: MIStats) -> jax.Array:
    """Bytes/s sent: ``sent / duration``."""
    return m.sent / jnp.maximum(m.duration, 1e-30)


def delivery_rate(m: MIStats) -> jax.Array:
    """Bytes/s acknowledged (goodput seen by the sender): ``acked / duration``."""
    return m.acked / jnp.maximum(m.duration, 1e-30)


def loss_rate(m: MIStats) -> jax.Array:
    """Fraction of the bytes whose fate became known that were lost: ``lost / (acked + lost)``."""
    known = m.acked + m.lost
    return jnp.where(known > 0, m.lost / jnp.maximum(known, 1e-30), 0.0)


def rtt_slope(m: MIStats) -> jax.Array:
    """Weighted least-squares slope of RTT against time within the MI (s per s, unitless).

    ``(Σw·Σwtr − Σwt·Σwr) / (Σw·Σwtt − (Σwt)²)``; 0 when the denominator is ~0 (all samples at
    one time, or none).
    """
    den = m.ls_w * m.ls_wtt - m.ls_wt * m.ls_wt
    num = m.ls_w * m.ls_wtr - m.ls_wt * m.ls_wr
    ok = den > _LS_EPS * jnp.maximum(m.ls_w * m.ls_w, 1.0)
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def has_rtt(m: MIStats) -> jax.Array:
    """Whether the MI carried at least one RTT sample."""
    return m.n_samples > 0


# ----------------------------------------------------------------------------- across MIs


@struct.dataclass
class RunningStats:
    """Per-flow statistics over the whole connection (episode), updated once per MI."""

    min_rtt: jax.Array  # s; BIG until the first sample
    min_mean_rtt: jax.Array  # s; BIG until the first MI with a sample
    max_delivery: jax.Array  # bytes/s


def running_zero(num_flows: int, dtype=jnp.float32) -> RunningStats:
    big = jnp.full((num_flows,), BIG, dtype)
    return RunningStats(min_rtt=big, min_mean_rtt=big, max_delivery=jnp.zeros((num_flows,), dtype))


def running_update(run: RunningStats, m: MIStats) -> RunningStats:
    """``min_rtt = min(min_rtt, mi.rtt_min)``; ``min_mean_rtt = min(.., mean)`` if the MI had
    samples; ``max_delivery = max(.., delivery_rate)``."""
    has = has_rtt(m)
    return RunningStats(
        min_rtt=jnp.minimum(run.min_rtt, m.rtt_min),
        min_mean_rtt=jnp.where(has, jnp.minimum(run.min_mean_rtt, rtt_mean(m)), run.min_mean_rtt),
        max_delivery=jnp.maximum(run.max_delivery, delivery_rate(m)),
    )


def known_min_rtt(run: RunningStats, fallback: jax.Array) -> jax.Array:
    """``run.min_rtt`` once a sample was seen, else ``fallback`` (s)."""
    return jnp.where(run.min_rtt < BIG * 0.5, run.min_rtt, fallback)
