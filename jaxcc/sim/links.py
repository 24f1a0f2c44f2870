"""Building ``LinkParams``: capacity schedules, traces, batching, ring sizing, samplers.

Two kinds of builders live here:

* host-side (NumPy) builders used by scenario specs and evaluation: ``Schedule`` values for a
  constant link, a step schedule, a Mahimahi trace, and ``make_link`` / ``stack_links`` that
  pad capacity segments and flow slots so that many different links share one compiled shape;
* jittable samplers used by training environments, which draw a fresh link per episode inside
  ``jit``: ``sample_schedule_steps`` (piecewise-constant, random or alternating) and
  ``link_from_arrays``.

The tick length of a link is ``min(flow RTT) / ticks_per_rtt``.

Realism (``jaxcc.sim.realism``: jitter, ACK aggregation, RTT noise, cross traffic) is built by
``realism_params`` (host) or ``sample_realism`` (inside jit, for training distributions) and
attached with ``make_link(..., realism=...)`` / ``LinkParams.replace(realism=...)``; its
cross-traffic schedule is padded to a fixed number of segments like the capacity schedule.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc.sim import realism as rz
from jaxcc.sim.core import PAD, LinkParams
from jaxcc.sim.trace import TRACE_BIN_MS, read_mahimahi
from jaxcc.units import MBPS, MSS

DEFAULT_TICKS_PER_RTT = 8
DEFAULT_MAX_RING = 1024


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Piecewise-constant capacity: ``rates[k]`` bytes/s from ``times[k]`` s on.

    ``period > 0`` makes the schedule repeat (a Mahimahi trace loops like mm-link does).
    """

    times: np.ndarray
    rates: np.ndarray
    period: float = 0.0

    def __post_init__(self):
        t, r = np.asarray(self.times, np.float64), np.asarray(self.rates, np.float64)
        if t.ndim != 1 or t.shape != r.shape or t.size == 0:
            raise ValueError("schedule: times and rates must be equal-length, non-empty 1-D arrays")
        if t[0] != 0.0:
            raise ValueError(f"schedule: the first segment must start at 0 s, got {t[0]}")
        if np.any(np.diff(t) <= 0):
            raise ValueError("schedule: segment start times must be strictly increasing")
        if np.any(~np.isfinite(r)) or np.any(r < 0):
            raise ValueError("schedule: rates must be finite and >= 0")
        if self.period < 0 or (self.period > 0 and self.period <= t[-1]):
            raise ValueError("schedule: period must be 0 or longer than the last segment start")
        if np.all(r == 0):
            raise ValueError("schedule: the link never has any capacity")
        object.__setattr__(self, "times", t)
        object.__setattr__(self, "rates", r)

    @property
    def num_segments(self) -> int:
        return self.times.size

    def cumulative(self) -> tuple[np.ndarray, float]:
        """Bytes servable from 0 to each segment start, and in one period (0 if not looping)."""
        widths = np.diff(self.times)
        cum = np.concatenate([[0.0], np.cumsum(self.rates[:-1] * widths)])
        per = 0.0
        if self.period > 0:
            per = float(cum[-1] + self.rates[-1] * (self.period - self.times[-1]))
        return cum, per

    def min_positive_rate(self) -> float:
        return float(np.min(self.rates[self.rates > 0]))

    def mean_rate(self, duration: float) -> float:
        """Average capacity (bytes/s) over [0, duration]."""
        grid = np.linspace(0.0, duration, 4001)[:-1] + duration / 8000
        return float(np.mean(self.rate_at(grid)))

    def rate_at(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, np.float64)
        if self.period > 0:
            t = np.mod(t, self.period)
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, self.times.size - 1)
        return self.rates[k]


def constant(mbps: float) -> Schedule:
    return Schedule(np.array([0.0]), np.array([mbps * MBPS]))


def steps(schedule: Sequence[Sequence[float]]) -> Schedule:
    """``[[t_s, mbps], ...]`` as in the scenario spec (must start at t = 0)."""
    arr = np.asarray(schedule, np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError("schedule must be a list of [t_s, mbps] pairs")
    return Schedule(arr[:, 0], arr[:, 1] * MBPS)


def alternating(low_mbps: float, high_mbps: float, every_s: float, duration_s: float) -> Schedule:
    """``low ↔ high`` every ``every_s`` seconds (Pareto's dynamic links start at the low rate)."""
    n = max(1, int(math.ceil(duration_s / every_s)))
    times = np.arange(n) * every_s
    rates = np.where(np.arange(n) % 2 == 0, low_mbps, high_mbps) * MBPS
    return Schedule(times, rates)


def from_trace(path: str, bin_ms: float = TRACE_BIN_MS) -> Schedule:
    """A Mahimahi trace as a looping schedule of ``bin_ms`` bins.

    Each line is one 1500-byte delivery opportunity at that millisecond; the file repeats with
    a period equal to its last timestamp, as mm-link does.
    """
    ts = read_mahimahi(path)
    period_ms = float(ts[-1])
    phase = np.mod(ts.astype(np.float64), period_ms)  # the last line is time 0 of the next lap
    width = min(bin_ms, period_ms)
    nbins = int(math.ceil(period_ms / width))
    counts = np.bincount(np.minimum((phase // width).astype(np.int64), nbins - 1), minlength=nbins)
    starts = np.arange(nbins) * width
    widths = np.minimum(starts + width, period_ms) - starts
    rates = counts * MSS / (widths / 1e3)
    return Schedule(starts / 1e3, rates, period=period_ms / 1e3)


def make_link(
    schedule: Schedule,
    buffer_bytes: float,
    loss: float,
    rtt_s: Sequence[float],
    start_s: Sequence[float],
    stop_s: Sequence[float],
    *,
    num_segments: int | None = None,
    num_flows: int | None = None,
    ticks_per_rtt: int = DEFAULT_TICKS_PER_RTT,
    dt: float | None = None,
    realism: rz.Realism | None = None,
) -> LinkParams:
    """One link as float32 NumPy leaves, padded to ``num_segments`` and ``num_flows``;
    ``realism`` (``realism_params``) is attached as given."""
    rtt = np.asarray(rtt_s, np.float64)
    if rtt.size == 0:
        raise ValueError("a link needs at least one flow")
    k = schedule.num_segments if num_segments is None else num_segments
    f = rtt.size if num_flows is None else num_flows
    if k < schedule.num_segments:
        raise ValueError(f"num_segments={k} is smaller than the schedule ({schedule.num_segments})")
    if f < rtt.size:
        raise ValueError(f"num_flows={f} is smaller than the number of flows ({rtt.size})")
    cum, per = schedule.cumulative()

    def pad(x, n, fill):
        out = np.full((n,), fill, np.float64)
        out[: len(x)] = x
        return out

    if dt is None:
        dt = float(np.min(rtt)) / ticks_per_rtt
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    return LinkParams(
        dt=f32(dt),
        cap_t=f32(pad(schedule.times, k, PAD)),
        cap_bps=f32(pad(schedule.rates, k, schedule.rates[-1])),
        cap_cum=f32(pad(cum, k, PAD)),
        cap_period=f32(schedule.period),
        cap_period_bytes=f32(per),
        buffer_bytes=f32(buffer_bytes),
        loss=f32(loss),
        rtt=f32(pad(rtt, f, rtt[0])),
        start=f32(pad(np.asarray(start_s, np.float64), f, 0.0)),
        stop=f32(pad(np.asarray(stop_s, np.float64), f, 0.0)),
        realism=realism,
    )


def realism_params(*, seed: int = 0, jitter_s: float = 0.0, ack_agg_s: float = 0.0, rtt_noise_s: float = 0.0,
                   cross: Sequence[Sequence[float]] | None = None, num_cross_segments: int | None = None
                   ) -> rz.Realism:
    """A link's realism as NumPy leaves (see ``jaxcc.sim.realism``).

    Args:
      seed: the link's random key is ``jax.random.PRNGKey(seed)`` (jitter and RTT noise).
      jitter_s, ack_agg_s, rtt_noise_s: largest jitter, ACK aggregation period, RTT noise
        standard deviation (s); 0 = off.
      cross: cross traffic ``[[t_s, mbps], ...]`` (piecewise constant, first at 0), or None.
      num_cross_segments: pad the cross-traffic schedule to this many segments.
    """
    pairs = np.zeros((1, 2)) if cross is None else np.asarray(cross, np.float64).reshape(-1, 2)
    if pairs[0, 0] != 0.0 or np.any(np.diff(pairs[:, 0]) <= 0) or np.any(pairs[:, 1] < 0):
        raise ValueError(f"cross traffic: [[t_s, mbps], ...] from t = 0, times increasing, rates >= 0; got {pairs.tolist()}")
    c = pairs.shape[0] if num_cross_segments is None else num_cross_segments
    if c < pairs.shape[0]:
        raise ValueError(f"num_cross_segments={c} is smaller than the cross-traffic schedule ({pairs.shape[0]})")
    t = np.full((c,), PAD, np.float64)
    r = np.zeros((c,), np.float64)
    t[: pairs.shape[0]] = pairs[:, 0]
    r[: pairs.shape[0]] = pairs[:, 1] * MBPS
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    return rz.Realism(key=np.asarray(jax.random.PRNGKey(int(seed))), jitter_s=f32(jitter_s), ack_agg_s=f32(ack_agg_s),
                      rtt_noise_s=f32(rtt_noise_s), cross_t=f32(t), cross_bps=f32(r))


def _pad_realism(r: rz.Realism, c: int) -> rz.Realism:
    n = r.cross_t.shape[-1]
    if n == c:
        return r
    return r.replace(cross_t=np.concatenate([r.cross_t, np.full((c - n,), PAD, np.float32)]),
                     cross_bps=np.concatenate([r.cross_bps, np.zeros((c - n,), np.float32)]))


def stack_links(links: Sequence[LinkParams]) -> LinkParams:
    """Stack already equally padded links into a batch (leading axis).

    When some links have realism, the others get realism with every effect off (the same
    results as none to float rounding, not bit for bit; ``jaxcc.sim.realism``) and every
    cross-traffic schedule is padded to the longest, so they share one structure.
    """
    links = list(links)
    if any(ln.realism is not None for ln in links):
        c = max(ln.realism.cross_t.shape[-1] for ln in links if ln.realism is not None)
        links = [ln.replace(realism=_pad_realism(realism_params() if ln.realism is None else ln.realism, c))
                 for ln in links]
    return jax.tree.map(lambda *xs: np.stack(xs), *links)


def ring_len_for(
    schedule: Schedule, buffer_bytes: float, rtt_s: Sequence[float], dt: float,
    max_ring: int = DEFAULT_MAX_RING, extra_delay_s: float = 0.0,
) -> int:
    """Ring slots needed so that no feedback is clamped: (largest RTT + full-buffer wait) / dt,
    plus ``extra_delay_s`` (realism's jitter and ACK aggregation, ``rz.extra_delay_bound``) and
    two ticks when it is not 0.

    Capped at ``max_ring``; beyond it feedback is delivered at the ring's end (counted in
    ``SimState.clamped``) — only for buffers of hundreds of BDPs.
    """
    wait = (buffer_bytes + 2 * MSS) / schedule.min_positive_rate()
    need = int(math.ceil((max(rtt_s) + wait) / dt)) + 3
    if extra_delay_s > 0:
        need += int(math.ceil(extra_delay_s / dt)) + 2
    return int(min(max_ring, 8 * math.ceil(need / 8)))


# ----------------------------------------------------------------------------- jittable


def schedule_arrays(times: jax.Array, rates: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``cap_t`` and ``cap_cum`` for a non-looping schedule given in JAX (inside jit)."""
    widths = jnp.diff(times)
    cum = jnp.concatenate([jnp.zeros((1,), rates.dtype), jnp.cumsum(rates[:-1] * widths)])
    return times, cum


def link_from_arrays(
    times: jax.Array, rates: jax.Array, buffer_bytes, loss, rtt: jax.Array, start: jax.Array,
    stop: jax.Array, ticks_per_rtt: int = DEFAULT_TICKS_PER_RTT,
) -> LinkParams:
    """A non-looping link built inside jit (training environments sample these per episode)."""
    cap_t, cap_cum = schedule_arrays(times, rates)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return LinkParams(
        dt=f32(jnp.min(rtt) / ticks_per_rtt),
        cap_t=f32(cap_t),
        cap_bps=f32(rates),
        cap_cum=f32(cap_cum),
        cap_period=f32(0.0),
        cap_period_bytes=f32(0.0),
        buffer_bytes=f32(buffer_bytes),
        loss=f32(loss),
        rtt=f32(rtt),
        start=f32(start),
        stop=f32(stop),
    )


def sample_schedule_steps(
    key: jax.Array, num_segments: int, every_s: float, low_mbps, high_mbps, mode: str = "uniform"
) -> tuple[jax.Array, jax.Array]:
    """A capacity that changes every ``every_s`` seconds, inside jit.

    mode 'uniform': each segment uniform in [low, high] (Aurora's random 16–32 Mbps link);
    mode 'alternating': low, high, low, ... (Pareto's 10↔20 / 10↔30 links);
    mode 'walk': a random walk in log space clipped to [low, high].
    """
    times = jnp.arange(num_segments, dtype=jnp.float32) * every_s
    if mode == "uniform":
        mbps = jax.random.uniform(key, (num_segments,), minval=low_mbps, maxval=high_mbps)
    elif mode == "alternating":
        mbps = jnp.where(jnp.arange(num_segments) % 2 == 0, low_mbps, high_mbps) * jnp.ones((num_segments,))
    elif mode == "walk":
        steps_ = jax.random.normal(key, (num_segments,)) * 0.2
        start = jax.random.uniform(jax.random.fold_in(key, 1), (), minval=jnp.log(low_mbps), maxval=jnp.log(high_mbps))
        mbps = jnp.exp(jnp.clip(start + jnp.cumsum(steps_) - steps_[0], jnp.log(low_mbps), jnp.log(high_mbps)))
    else:
        raise ValueError(f"unknown schedule mode {mode!r}; expected uniform, alternating or walk")
    return times, mbps * MBPS


def sample_poisson_schedule(
    key: jax.Array, num_segments: int, slot_s: float, mean_mbps
) -> tuple[jax.Array, jax.Array]:
    """Wi-Fi-like capacity (DeepCC §VI): delivery opportunities arrive as a Poisson process.

    Each ``slot_s`` slot carries a Poisson number of MSS-sized opportunities with mean
    ``mean_mbps · slot_s / (8·MSS)``, so the capacity fluctuates around ``mean_mbps``.
    """
    lam = mean_mbps * MBPS * slot_s / MSS
    counts = jax.random.poisson(key, lam, (num_segments,))
    times = jnp.arange(num_segments, dtype=jnp.float32) * slot_s
    return times, counts.astype(jnp.float32) * MSS / slot_s


def sample_realism(key: jax.Array, ranges, cap0_bps, num_cross_segments: int) -> rz.Realism:
    """A link's realism drawn inside jit from a training distribution (``ranges`` has the fields
    of ``jaxcc.envs.base.RealismRanges``; Python floats).

    Each effect is on in an episode with probability ``ranges.p_each`` (independently), and
    then drawn uniformly from its range: ``jitter_ms``, ``ack_agg_ms``, ``rtt_noise_ms`` (each
    a ``(lo, hi)`` pair, ms).  Cross traffic changes every ``cross_every_s`` seconds to a rate
    uniform in ``cross_frac`` (a ``(lo, hi)`` pair) times ``cap0_bps``, the link's capacity at
    the start (``num_cross_segments`` segments, the last one holds).  The link's own key for the
    per-tick draws is split from ``key``.
    """
    kk, kj, ka, kn, kc, kon = jax.random.split(key, 6)
    on = jax.random.uniform(kon, (4,)) < ranges.p_each

    def draw(k, lo_hi, i):
        lo, hi = lo_hi
        return jnp.where(on[i], jax.random.uniform(k, (), minval=lo, maxval=hi), 0.0) * 1e-3

    times = jnp.arange(num_cross_segments, dtype=jnp.float32) * ranges.cross_every_s
    lo, hi = ranges.cross_frac
    frac = jax.random.uniform(kc, (num_cross_segments,), minval=lo, maxval=hi)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return rz.Realism(key=jax.random.key_data(kk) if jnp.issubdtype(kk.dtype, jax.dtypes.prng_key) else kk,
                      jitter_s=f32(draw(kj, ranges.jitter_ms, 0)), ack_agg_s=f32(draw(ka, ranges.ack_agg_ms, 1)),
                      rtt_noise_s=f32(draw(kn, ranges.rtt_noise_ms, 2)), cross_t=f32(times),
                      cross_bps=f32(jnp.where(on[3], frac * cap0_bps, 0.0)))
