"""Link samplers: the pieces every trainer's training distribution is composed of.

Each sampler is a pure function of a key (jittable, vmappable); the same key gives the same
draw.  A capacity schedule is a pair ``(times [S], rates [S])``: ``rates[k]`` bytes/s from
``times[k]`` s on (ascending, ``times[0] = 0``, the last segment holds).  Schedules compose by
*overlay*: a multiplier schedule ``(t_m [K], mult [K])`` (1 before ``t_m[0]``) is merged in and
multiplied, so a step, an outage and a cellular process can all act on one link, each from a
key of its own, and a schedule drawn by a paper's own sampler (Aurora's constant link, Eagle's
random walk, MOCC's cellular-like link, DeepCC's Poisson link, Pareto's steps) stays the base.

The named samplers:

* ``log_uniform``: rates, RTTs, buffers in BDP, initial rates (exp of a uniform draw in log space);
* ``capacity_step``: the capacity multiplied or divided by 2–``factor_max`` for a while, then
  back (e.g. 5 → 50 → 5 Mbit/s);
* ``outage``: the capacity at ``level`` × (0: dark) for a log-uniform 0.2–10 s at a uniform time;
  several per episode by calling it once per slot (``LinkDynamics.outage_slots``);
* ``cellular_walk``: a synthetic cellular capacity process, a random walk of the log-capacity over
  segments of random length with dropouts (a segment dark with probability ``p_drop``), the
  shape of the capacity of the LTE traces (bursts, fades, short dark spells) without training on
  any of them;
* ``arrivals``: how many of the ``F`` flow slots are active, when each starts (random gaps) and
  whether and when it leaves;
* link realism (jitter, ACK aggregation, RTT noise, cross traffic): ``jaxcc.sim.links.sample_realism``
  with the ranges of ``jaxcc.envs.base.RealismRanges``.

``LinkDynamics`` is the static description of the steps, outages and cellular process a
training config adds on top of its environment's own link (``config.env.overrides.dynamics``);
``base.MultiFlowEnv.reset_env`` applies it with ``apply`` from keys folded out of the reset key,
so the paper's own draws are unchanged, and off (the default) the environment is bit-identical
to one without it.  Its outage and dropout lengths are capped at a fraction of the episode, so an
episode always shows the link coming back.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxcc.sim import core, links

# Reset-key folds of the overlays (each its own stream; the paper's draws never see them).
STEP_KEY, OUTAGE_KEY, CELL_KEY = 0x57E9, 0x0D7A, 0xCE11


def log_uniform(key, lo, hi, shape=()):
    """exp(U[log lo, log hi])."""
    return jnp.exp(jax.random.uniform(key, shape, minval=jnp.log(lo), maxval=jnp.log(hi)))


def overlay(times, rates, t_m, mult):
    """The schedule ``(times, rates)`` [S] times the multiplier schedule ``(t_m, mult)`` [K]
    (ascending; the multiplier is 1 before ``t_m[0]``), as one schedule of S + K segments: the
    switch times are merged in (a switch before ``times[0]`` only moves it there; equal times
    give zero-width segments, which the model skips).

    A merge, not a sort: each time's place is its index plus how many times of the other
    schedule come before it (O(S log K + K log S); training environments redraw the link at every
    step for the auto-reset, and a sort of DeepCC's 6,000 Poisson slots there cost 10× the step).
    """
    t_m = jnp.asarray(t_m, times.dtype)
    mult = jnp.asarray(mult)
    s, k = times.shape[0], t_m.shape[0]
    j_a = jnp.searchsorted(t_m, times, side="right") - 1  # the multiplier in force at each base time
    r_a = rates * jnp.where(j_a >= 0, mult[jnp.clip(j_a, 0, k - 1)], 1.0)
    i_b = jnp.clip(jnp.searchsorted(times, t_m, side="right") - 1, 0, s - 1)  # the base segment at each switch
    r_b = rates[i_b] * mult
    # Ties: a base time goes before an equal switch, so the switch's value (both factors) holds.
    pos_a = jnp.arange(s) + jnp.searchsorted(t_m, times, side="left")
    pos_b = jnp.arange(k) + jnp.searchsorted(times, t_m, side="right")
    t_all = jnp.zeros((s + k,), times.dtype).at[pos_a].set(times).at[pos_b].set(t_m)
    r_all = jnp.zeros((s + k,), r_a.dtype).at[pos_a].set(r_a).at[pos_b].set(r_b.astype(r_a.dtype))
    return jnp.maximum(t_all, times[0]), r_all


def capacity_step(key, times, rates, p_step, factor_max, t_lo, t_hi, dur_lo, dur_hi):
    """A capacity step up or down inside an episode.

    With probability ``p_step`` the capacity is multiplied by ``f`` from ``t1`` to ``t2`` and goes
    back afterwards (e.g. 5 -> 50 -> 5 Mbit/s): ``|log f|`` uniform in ``[log 2, log factor_max]``
    with a random sign, ``t1`` uniform in ``[t_lo, t_hi]`` s and ``t2 = t1 + U[dur_lo, dur_hi]`` s.
    The schedule [S] becomes [S + 2]; without a step the two switches repeat a rate and the link
    is the same.  Returns ``(times, rates, f)``; ``f`` is 1 without a step.
    """
    kp, kf, ks, k1, k2 = jax.random.split(key, 5)
    mag = jnp.exp(jax.random.uniform(kf, (), minval=jnp.log(2.0), maxval=jnp.log(jnp.maximum(factor_max, 2.0))))
    f = jnp.where(jax.random.uniform(ks, ()) < 0.5, mag, 1.0 / mag)
    f = jnp.where(jax.random.uniform(kp, ()) < p_step, f, 1.0)
    t1 = jax.random.uniform(k1, (), minval=t_lo, maxval=t_hi)
    t2 = t1 + jax.random.uniform(k2, (), minval=dur_lo, maxval=dur_hi)
    t_all, r_all = overlay(times, rates, jnp.stack([t1, t2]), jnp.stack([f, jnp.ones_like(f)]))
    return t_all, r_all, f


def outage(key, times, rates, p_on, dur_lo, dur_hi, horizon, max_frac, level=0.0):
    """With probability ``p_on`` the capacity is ``level`` × its value (0: no delivery at all)
    for ``d`` seconds from ``t0``: ``d`` log-uniform in ``[dur_lo, dur_hi]`` capped at
    ``max_frac · horizon``, ``t0`` uniform over ``[0.1·horizon, horizon − d]`` (never at the very
    start: a flow meets the outage with a path it has measured).  [S] → [S + 2].
    Returns ``(times, rates, d)``; ``d`` is 0 without an outage."""
    kp, kd, kt = jax.random.split(key, 3)
    cap = jnp.maximum(max_frac * horizon, 1e-3)
    d = jnp.minimum(log_uniform(kd, dur_lo, dur_hi), cap)
    t0 = 0.1 * horizon + jax.random.uniform(kt, ()) * jnp.maximum(0.9 * horizon - d, 0.0)
    on = jax.random.uniform(kp, ()) < p_on
    mult = jnp.stack([jnp.where(on, level, 1.0), 1.0]).astype(rates.dtype)
    t_all, r_all = overlay(times, rates, jnp.stack([t0, t0 + d]), mult)
    return t_all, r_all, jnp.where(on, d, 0.0)


def cellular_walk(key, times, rates, p_on, segments: int, horizon, sigma, lo, hi, p_drop, level=0.0):
    """With probability ``p_on``, a synthetic cellular capacity process on top of ``rates``: the
    episode is cut into ``segments`` segments of length ``horizon/segments × U[0.5, 1.5]``; the
    multiplier starts at 1 and moves by exp(σ·N(0, 1)) per segment, clipped to [``lo``, ``hi``];
    each segment after the first is dark (``level``) with probability ``p_drop`` (a dropout of one
    segment).  [S] → [S + segments].  Returns ``(times, rates, mult [segments])``."""
    kp, kl, kw, kd = jax.random.split(key, 4)
    widths = horizon / segments * jax.random.uniform(kl, (segments,), minval=0.5, maxval=1.5)
    t_m = jnp.concatenate([jnp.zeros((1,)), jnp.cumsum(widths)[:-1]])
    z = sigma * jax.random.normal(kw, (segments,))
    logm = jnp.cumsum(z.at[0].set(0.0))
    mult = jnp.clip(jnp.exp(logm), lo, hi)
    drop = (jax.random.uniform(kd, (segments,)) < p_drop) & (jnp.arange(segments) > 0)
    mult = jnp.where(drop, level, mult)
    mult = jnp.where(jax.random.uniform(kp, ()) < p_on, mult, 1.0)
    t_all, r_all = overlay(times, rates, t_m.astype(times.dtype), mult.astype(rates.dtype))
    return t_all, r_all, mult


def arrivals(key_n, key_gap, key_depart, num_flows: int, n_lo, n_hi, gap_lo, gap_hi, p_depart, horizon):
    """Flows arriving and leaving on one link of ``num_flows`` slots.

    ``n`` = floor(U[n_lo, n_hi + 1]) flows are active (clipped to [1, F]); flow 0 starts at 0 and
    flow i a gap U[gap_lo, gap_hi] s after flow i−1; each flow after the first leaves, with
    probability ``p_depart``, at a uniform time between its start and ``horizon``.
    Returns ``(n, start [F], stop [F])`` (``stop`` 0 for unused slots, 1e9 for flows that stay)."""
    f = num_flows
    idx = jnp.arange(f)
    n = jnp.floor(jax.random.uniform(key_n, (), minval=n_lo, maxval=n_hi + 1.0))
    n = jnp.clip(n, 1, f)
    gaps = jax.random.uniform(key_gap, (f,), minval=gap_lo, maxval=gap_hi).at[0].set(0.0)
    start = jnp.cumsum(gaps)
    kdep, kwhen = jax.random.split(key_depart)
    departs = (idx > 0) & (jax.random.uniform(kdep, (f,)) < p_depart)
    leave = start + jax.random.uniform(kwhen, (f,)) * jnp.maximum(horizon - start, 0.0)
    stop = jnp.where(idx < n, jnp.where(departs, leave, 1e9), 0.0)
    return n, start, stop


def mean_capacity(link: core.LinkParams, t_end) -> jax.Array:
    """The link's time-averaged capacity (bytes/s) over [0, ``t_end``] s (non-looping links)."""
    t = jnp.maximum(jnp.asarray(t_end, jnp.float32), 1e-9)
    return core._cum_in_period(link, t) / t


# ----------------------------------------------------------------------------- static ranges
# A training config's static ranges (``LinkDynamics`` here, ``base.RealismRanges``) are frozen
# dataclasses of numbers, given as a mapping in ``config.env.overrides`` and checked in one line
# per field; these three helpers are what both share.


def check_fields(obj, label: str, bounds: dict, integers: tuple = ()):
    """Every field of ``obj`` a number, within ``bounds`` (field -> (lo, hi)), and the fields in
    ``integers`` whole (made ``int``).

    Raises:
      ValueError: ``label.field: ...`` in one line, naming the allowed range."""
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v == v:
            raise ValueError(f"{label}.{f.name}: expected a number, got {v!r}")
    for k, (lo, hi) in bounds.items():
        if not lo <= getattr(obj, k) <= hi:
            raise ValueError(f"{label}.{k}: must be in [{lo:g}, {hi:g}], got {getattr(obj, k)!r}")
    for k in integers:
        if getattr(obj, k) != int(getattr(obj, k)):
            raise ValueError(f"{label}.{k}: must be an integer, got {getattr(obj, k)!r}")
        object.__setattr__(obj, k, int(getattr(obj, k)))


def fields_config(cls, label: str, on: dict) -> dict:
    """Every field of ``cls`` with its default, updated with ``on``: what a training config puts in
    ``config.env.overrides.<label>`` so that each field can be set on the command line."""
    d = {f.name: f.default for f in dataclasses.fields(cls)}
    unknown = sorted(set(on) - set(d))
    if unknown:
        raise ValueError(f"{label}: unknown field(s) {unknown}; allowed: {sorted(d)}")
    d.update(on)
    return d


def from_config(value, cls, label: str):
    """``cls`` from a mapping (a config's ``env.overrides.<label>``), or None when ``value`` is None
    or the result is not ``enabled`` (then the environment is exactly the one without it)."""
    if value is None:
        return None
    if not isinstance(value, cls):
        try:
            items = dict(value)
        except (TypeError, ValueError):
            raise ValueError(f"{label}: expected a mapping of {cls.__name__} fields, got {value!r}") from None
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(items) - names)
        if unknown:
            raise ValueError(f"{label}: unknown field(s) {unknown}; allowed: {sorted(names)}")
        value = cls(**items)
    return value if value.enabled else None


@dataclasses.dataclass(frozen=True)
class LinkDynamics:
    """Capacity dynamics a training config adds on top of its environment's own links
    (static: it decides the schedule's length).  All off by default.

    Attributes:
      p_step: probability of a ``capacity_step`` per episode.
      step_max: its largest factor (×/÷ 2..``step_max``).
      step_at_lo, step_at_hi: when it starts, in fractions of the episode.
      step_for_lo, step_for_hi: how long it lasts, in fractions of the episode.
      outage_slots: how many ``outage`` draws per episode (each on with ``p_outage``).
      p_outage: probability that each slot holds an outage.
      outage_lo_s, outage_hi_s: outage length range, s (log-uniform).
      outage_max_frac: the longest outage, as a fraction of the episode.
      outage_level: capacity multiplier during an outage (0 = nothing is delivered).
      p_cellular: probability of a ``cellular_walk`` per episode.
      cell_segments: its number of segments.
      cell_sigma: the log-capacity's step per segment (standard deviation).
      cell_lo, cell_hi: the multiplier's range.
      cell_p_drop: probability that a segment is a dropout.
    """

    p_step: float = 0.0
    step_max: float = 10.0
    step_at_lo: float = 0.15
    step_at_hi: float = 0.5
    step_for_lo: float = 0.2
    step_for_hi: float = 0.4
    outage_slots: int = 0
    p_outage: float = 0.5
    outage_lo_s: float = 0.2
    outage_hi_s: float = 10.0
    outage_max_frac: float = 0.3
    outage_level: float = 0.0
    p_cellular: float = 0.0
    cell_segments: int = 32
    cell_sigma: float = 0.35
    cell_lo: float = 0.1
    cell_hi: float = 3.0
    cell_p_drop: float = 0.03

    def __post_init__(self):
        bounds = {"p_step": (0.0, 1.0), "step_max": (2.0, 1000.0), "step_at_lo": (0.0, 1.0),
                  "step_at_hi": (0.0, 1.0), "step_for_lo": (0.0, 1.0), "step_for_hi": (0.0, 1.0),
                  "outage_slots": (0, 16), "p_outage": (0.0, 1.0), "outage_lo_s": (1e-3, 1e4),
                  "outage_hi_s": (1e-3, 1e4), "outage_max_frac": (0.0, 0.9), "outage_level": (0.0, 1.0),
                  "p_cellular": (0.0, 1.0), "cell_segments": (2, 1024), "cell_sigma": (0.0, 5.0),
                  "cell_lo": (1e-3, 1.0), "cell_hi": (1.0, 1000.0), "cell_p_drop": (0.0, 1.0)}
        check_fields(self, "dynamics", bounds, ("outage_slots", "cell_segments"))
        for lo, hi in (("step_at_lo", "step_at_hi"), ("step_for_lo", "step_for_hi"),
                       ("outage_lo_s", "outage_hi_s"), ("cell_lo", "cell_hi")):
            if getattr(self, lo) > getattr(self, hi):
                raise ValueError(f"dynamics.{lo}: must be <= dynamics.{hi}, got {getattr(self, lo)!r} > "
                                 f"{getattr(self, hi)!r}")

    @property
    def steps(self) -> bool:
        return self.p_step > 0

    @property
    def outages(self) -> bool:
        return self.outage_slots > 0 and self.p_outage > 0

    @property
    def cellular(self) -> bool:
        return self.p_cellular > 0

    @property
    def enabled(self) -> bool:
        return self.steps or self.outages or self.cellular

    def extra_ring_ticks(self, max_steps: int, mi_rtts: float, ticks_per_rtt: int) -> int:
        """Feedback-ring ticks the dynamics add at the distribution's smallest RTT: bytes queued
        when the link goes dark wait for the outages' (or dropout's) end: back to back, the
        slots' outages last at most ``outage_slots · outage_max_frac`` (plus 1.5 cellular
        segments) of an episode of ``max_steps`` MIs, and never more than the episode."""
        episode_ticks = max_steps * mi_rtts * ticks_per_rtt
        t = 0.0
        if self.outages:
            t += self.outage_slots * self.outage_max_frac * episode_ticks
        if self.cellular and self.cell_p_drop > 0:
            t += 1.5 * episode_ticks / self.cell_segments
        return int(math.ceil(min(t, episode_ticks)))

    def ring_scale(self) -> float:
        """How much longer a full buffer takes to drain at the dynamics' lowest capacity."""
        low = 1.0
        if self.steps:
            low = min(low, 1.0 / self.step_max)
        if self.cellular:
            low = min(low, self.cell_lo)
        return 1.0 / low


# The robust training distribution's dynamics, shared by the ``*_robust`` configs of every trainer
# (on top of each environment's own rate, RTT and buffer draws).  Per episode: a capacity step
# ×/÷ 2–10 in 30 % (half of them up: the 5 → 50 Mbit/s jump), each of two outage slots holds a
# 0.2–10 s outage in 35 % (no delivery at all; one or two outages in 58 % of the episodes), and a
# cellular random walk with dropouts in 30 %.  An episode with none of them (18 %) is the
# environment's own link.
ROBUST_DYNAMICS = dict(p_step=0.3, step_max=10.0, outage_slots=2, p_outage=0.35, outage_lo_s=0.2,
                       outage_hi_s=10.0, outage_max_frac=0.3, p_cellular=0.3, cell_segments=32,
                       cell_sigma=0.35, cell_lo=0.1, cell_hi=3.0, cell_p_drop=0.03)


def dynamics_config(**on) -> dict:
    """Every ``LinkDynamics`` field with its default (all off), updated with ``on``: what a
    training config puts in ``config.env.overrides.dynamics``."""
    return fields_config(LinkDynamics, "dynamics", on)


def as_dynamics(value) -> LinkDynamics | None:
    """``LinkDynamics`` from a mapping (a config's ``env.overrides.dynamics``), or None when all
    of it is off (then the environment is exactly the one without it)."""
    return from_config(value, LinkDynamics, "dynamics")


def refuse_two_steps(env: str, dyn: LinkDynamics | None, own_steps: bool):
    """An environment that draws its own ``capacity_step`` (Aurora, Eagle) draws it from the same
    stream as the dynamics' step (``STEP_KEY``): both on would be one step squared, not two.

    Raises:
      ValueError: in one line, naming both switches."""
    if dyn is not None and dyn.steps and own_steps:
        raise ValueError(f"dynamics.p_step: {env} draws its own capacity step (env.params.step_*, on with its "
                         f"schedule's step segments); set dynamics.p_step=0 or turn its own step off")


def apply(key, link: core.LinkParams, dyn: LinkDynamics, horizon) -> core.LinkParams:
    """``link`` (non-looping) with ``dyn``'s step, outages and cellular process overlaid on its
    capacity, each drawn from ``key`` folded with its own constant; ``horizon`` is the episode's
    length in seconds."""
    # The overlays compose on a small multiplier schedule (1 from t = 0 on), merged into the
    # link's schedule once: DeepCC's links have 6,000 segments, and each merge into them costs
    # about as much as the rest of a reset.
    times, mult = jnp.zeros((1,), jnp.float32), jnp.ones((1,), jnp.float32)
    if dyn.steps:
        times, mult, _ = capacity_step(jax.random.fold_in(key, STEP_KEY), times, mult, dyn.p_step, dyn.step_max,
                                       dyn.step_at_lo * horizon, dyn.step_at_hi * horizon,
                                       dyn.step_for_lo * horizon, dyn.step_for_hi * horizon)
    if dyn.outages:
        k_out = jax.random.fold_in(key, OUTAGE_KEY)
        for i in range(dyn.outage_slots):
            times, mult, _ = outage(jax.random.fold_in(k_out, i), times, mult, dyn.p_outage, dyn.outage_lo_s,
                                    dyn.outage_hi_s, horizon, dyn.outage_max_frac, dyn.outage_level)
    if dyn.cellular:
        times, mult, _ = cellular_walk(jax.random.fold_in(key, CELL_KEY), times, mult, dyn.p_cellular,
                                       dyn.cell_segments, horizon, dyn.cell_sigma, dyn.cell_lo, dyn.cell_hi,
                                       dyn.cell_p_drop, dyn.outage_level)
    times, rates = overlay(link.cap_t, link.cap_bps, times, mult)
    cap_t, cap_cum = links.schedule_arrays(times, rates)
    return link.replace(cap_t=cap_t.astype(jnp.float32), cap_bps=rates.astype(jnp.float32),
                        cap_cum=cap_cum.astype(jnp.float32))
