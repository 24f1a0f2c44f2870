"""Multi-agent, gymnax-1.0-shaped environments over the fluid network model.

One environment instance is one bottleneck link shared by ``F`` flows; every flow is an agent
and agents are the *leading axis* of every per-agent array:

    obs, state = env.reset(key, params)                      # obs [F, T, D]
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        # action [F, ...], reward [F] (or [F, R] for vector rewards), terminated/truncated [F]

* ``params`` (an ``EnvParams`` flax.struct pytree, one per paper) holds the *training
  distribution* (ranges the link is drawn from at every reset) and a few knobs; every leaf is
  an array so ``jax.vmap`` can give each lane its own distribution (or a point mass: a fixed
  link).  Parameters are shared by all agents of one link.
* Static shapes live in ``EnvConfig`` (number of flow slots, ticks per step, history length,
  ring length, number of capacity segments); they are sized from the training distribution so
  that one compiled step serves every draw.
* ``step`` runs ``lax.scan`` over ``core.step`` for the ``mi_ticks`` ticks of one monitor
  interval (MI = ``mi_rtts`` × min propagation RTT, tick = min RTT / ``ticks_per_rtt``),
  accumulates ``mi.MIStats`` from the delayed feedback, and turns them into the paper's
  features and reward.
* ``terminated`` (a true end: MOCC's win/lose/tie) and ``truncated`` (a time limit) are kept
  apart.  Both are per-link events, broadcast to ``[F]``.
* Auto-reset: when an episode ends, ``step`` returns the first observation of a fresh episode
  (drawn with the step's key) and keeps the last observation of the finished one in
  ``info["final_obs"]``; ``state`` is likewise the new episode's.
* Flows that are not active during an MI (e.g. Pareto's second flow before it starts) get a
  zero reward, ``info["active"] == False``, and their paper state and rate are left unchanged.
* Per-flow clocks (``EnvConfig.flow_clock``): by default every flow of a link decides on one
  clock, the MI of the link's smallest RTT (each paper's literal setting).  With ``flow_clock``
  on, flow ``f`` decides on its own MI of ``k_f = max(1, round(rtt_f / min rtt))`` steps, as a
  deployed sender decides on ``mi_rtts`` of its own min RTT (``datapath/src/decision_loop.cc``;
  the simulator's senders use the same ``k_f``, ``SenderParams.mi_scale``).  A step is still one
  MI of the smallest RTT; a flow's action is taken only at the step that opens its MI
  (``info["due"]`` of the previous step; the first step of an episode opens every flow's) and
  held until the MI closes, the MI's statistics accumulate across its steps (one ``MIStats``
  continued tick by tick, exactly as a sender accumulates them), and features, reward and the
  running statistics are produced at the step that closes it.  ``info["active"]`` is then True
  only at a closing step (a transition spans the flow's whole MI: the observation at the step
  that opened it, ``info["action"]``, the action in force, and the reward and next observation of
  the closing step); in between the flow's observation, rate and paper state stay as they were
  and its reward is 0.  ``k_f`` is exact where the RTTs are whole multiples of the smallest
  (30/120 ms, 20/160 ms) and within half a step of the deployed clock elsewhere.  A flow that
  has not started keeps its clock at an MI's opening, so its first MI starts with it.
  ``info["action"]`` (the action in force, [F]) is reported with the clock off too, where it is
  the step's own action.
* A competitor (``EnvConfig.competitor``, e.g. ``"cubic"``; off by default, and then nothing of
  it is in the state): in a share ``p_competitor`` of the episodes the link's last flow slot
  runs that classic controller (``jaxcc.baselines``) tick by tick, exactly as the simulator's
  runner runs it, starting uniformly in [0, ``competitor_start_s``] s and staying to the end,
  beside 1..F−1 of the agents the paper drew (uniformly).  It is part of the link, not an
  agent: ``info["agent"]`` is False for its slot, which is never ``active`` (no transition, reward
  0), whatever action the policy gives it; a paper's link-wide reward terms see its flow like any
  other (its MI statistics are measured as every flow's).  This is how a policy meets a
  neighbour that fills the buffer whatever the policy does.

All randomness comes from the keys: the same key gives the same episode.

Realism (``jaxcc.sim.realism``: jitter, ACK aggregation, RTT measurement noise, cross traffic)
is part of the training distribution when ``EnvConfig.realism`` is given (a ``RealismRanges``
or a mapping of its fields, e.g. ``make_env("pareto", realism={"jitter_ms_max": 20})``, or
``--config.env.overrides.realism.jitter_ms_max=20`` in a training config).  It is off by
default, and then the environments run exactly as without it (bit-identical: the link carries
no realism at all).  When on, every reset draws the link's realism with ``links.sample_realism``
from a key folded out of the reset key, so the paper's own draws are unchanged.  The ranges are
static (in ``EnvConfig``, not ``EnvParams``): switching realism on changes the compiled shape
(the cross-traffic schedule, the simulator's realism state and a longer feedback ring, which
``env_config`` sizes from the ranges), so it cannot be a traced value, and keeping its ranges
beside the switch lets every trainer take them through ``config.env.overrides`` unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc.baselines.bbr import BBR
from jaxcc.baselines.cubic import CUBIC
from jaxcc.baselines.reno import RENO
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import samplers
from jaxcc.sim import controller as ctl
from jaxcc.sim import core, links
from jaxcc.units import MBPS

# Rates are clipped to the same range the exported-policy datapath uses (jaxcc.policyfile).
MIN_RATE = 0.01 * MBPS
MAX_RATE = 100_000.0 * MBPS
REALISM_KEY = 0x5EA1  # reset key fold for the realism draws
MAX_RING = 4096  # the longest feedback ring a distribution is given (ticks)
COMPETITOR_KEY = 0xC0E7  # reset key fold for the competitor draws
# Classic controllers that may hold a link's last flow slot as a competitor (``EnvConfig.competitor``).
COMPETITORS = {c.name: c for c in (CUBIC, BBR, RENO)}


@dataclasses.dataclass(frozen=True)
class RealismRanges:
    """A training distribution of link realism (see the module docstring and
    ``links.sample_realism``).  Each of the four effects is on in an episode with probability
    ``p_each``, independently, and then drawn uniformly from ``[0, max]``.

    Attributes:
      p_each: probability that each effect is on in an episode.
      jitter_ms_max: largest jitter bound (``Realism.jitter_s``), ms.
      ack_agg_ms_max: largest ACK aggregation period, ms.
      rtt_noise_ms_max: largest RTT-noise standard deviation, ms.
      cross_frac_max: largest cross-traffic rate as a fraction of the link's starting capacity;
        a new rate every ``cross_every_s`` seconds, ``cross_segments`` of them (the last holds).
    """

    p_each: float = 0.5
    jitter_ms_max: float = 0.0
    ack_agg_ms_max: float = 0.0
    rtt_noise_ms_max: float = 0.0
    cross_frac_max: float = 0.0
    cross_every_s: float = 5.0
    cross_segments: int = 8

    def __post_init__(self):
        bounds = {"p_each": (0.0, 1.0), "jitter_ms_max": (0.0, 1000.0), "ack_agg_ms_max": (0.0, 1000.0),
                  "rtt_noise_ms_max": (0.0, 1000.0), "cross_frac_max": (0.0, 10.0),
                  "cross_every_s": (1e-3, 1e6), "cross_segments": (1, 4096)}
        samplers.check_fields(self, "realism", bounds, ("cross_segments",))

    @property
    def enabled(self) -> bool:
        return self.p_each > 0 and (self.jitter_ms_max > 0 or self.ack_agg_ms_max > 0 or self.rtt_noise_ms_max > 0
                                    or self.cross_frac_max > 0)

    # what links.sample_realism reads: (lo, hi) ranges
    @property
    def jitter_ms(self):
        return (0.0, self.jitter_ms_max)

    @property
    def ack_agg_ms(self):
        return (0.0, self.ack_agg_ms_max)

    @property
    def rtt_noise_ms(self):
        return (0.0, self.rtt_noise_ms_max)

    @property
    def cross_frac(self):
        return (0.0, self.cross_frac_max)


def realism_config(**on) -> dict:
    """Every ``RealismRanges`` field with its default (all effects off), updated with ``on``:
    what a training config puts in ``config.env.overrides.realism`` so that each field can be
    set on the command line."""
    return samplers.fields_config(RealismRanges, "realism", on)


def as_realism(value) -> RealismRanges | None:
    """``RealismRanges`` from a mapping (a config's ``env.overrides.realism``), or None when
    every effect is off (then the environment is exactly the one without realism)."""
    return samplers.from_config(value, RealismRanges, "realism")


def env_config(cfg: dict, min_rtt_s: float, cls=None) -> "EnvConfig":
    """``EnvConfig(**cfg)`` with ``cfg["realism"]`` (if any) made a ``RealismRanges`` (or None
    when off) and, when on, the ring lengthened by the most that jitter and ACK aggregation can
    delay feedback at the distribution's smallest RTT ``min_rtt_s`` (one tick = min RTT /
    ``ticks_per_rtt``).  ``cls``: an ``EnvConfig`` subclass with fields of its own (``cfg``'s keys)."""
    cfg = dict(cfg)
    rr = as_realism(cfg.pop("realism", None))
    dyn = samplers.as_dynamics(cfg.pop("dynamics", None))
    if dyn is not None:  # a slower or dark link holds feedback longer (``LinkDynamics``)
        ring = int(cfg["ring_len"])
        need = ring * dyn.ring_scale() + dyn.extra_ring_ticks(int(cfg["max_steps"]), float(cfg["mi_rtts"]),
                                                              int(cfg["ticks_per_rtt"]))
        cfg["ring_len"] = max(ring, min(MAX_RING, 8 * int(math.ceil(need / 8))))
    if rr is not None:
        dt = float(min_rtt_s) / int(cfg["ticks_per_rtt"])
        extra = int(math.ceil((rr.jitter_ms_max + rr.ack_agg_ms_max) * 1e-3 / dt)) + 2
        cfg["ring_len"] = 8 * int(math.ceil((int(cfg["ring_len"]) + extra) / 8))
    return (cls or EnvConfig)(**cfg, realism=rr, dynamics=dyn)


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """Static (compile-time) shape of an environment.

    Attributes:
      num_flows: flow slots (agents) per link.
      ticks_per_rtt: ticks per minimum propagation RTT (the simulator's resolution).
      mi_rtts: one env step (monitor interval) in multiples of the min propagation RTT.
      history: number of past feature vectors in an observation (T).
      obs_dim: feature vector length (D).
      max_steps: episode length cap in steps (truncation).
      ring_len: simulator feedback ring length (sized from the distribution).
      num_segments: capacity schedule segments (sized from the distribution).
      goal_dim: length of the goal / preference vector (0 = none).
      reward_dim: 0 for a scalar reward [F], R for a vector reward [F, R].
      realism: the training distribution of link realism (``RealismRanges``), or None (off).
      dynamics: capacity steps, outages and a cellular process overlaid on every drawn link
        (``samplers.LinkDynamics``), or None (off).
      flow_clock: every flow decides on its own MI of ``k_f`` steps (the module docstring), or,
        False (each paper's literal clock), all on the smallest RTT's.
      competitor: a classic controller (a ``COMPETITORS`` name) that holds the last flow slot in a
        share ``p_competitor`` of the episodes (the module docstring), or "" (none).
      p_competitor: the share of episodes with the competitor.
      competitor_start_s: the competitor starts uniformly in [0, competitor_start_s] s.
    """

    num_flows: int = 1
    ticks_per_rtt: int = 8
    mi_rtts: float = 1.0
    history: int = 1
    obs_dim: int = 1
    max_steps: int = 100
    ring_len: int = 64
    num_segments: int = 1
    goal_dim: int = 0
    reward_dim: int = 0
    realism: RealismRanges | None = None
    dynamics: samplers.LinkDynamics | None = None
    flow_clock: bool = False
    competitor: str = ""
    p_competitor: float = 0.5
    competitor_start_s: float = 3.0

    def __post_init__(self):
        if self.competitor and self.competitor not in COMPETITORS:
            raise ValueError(f"competitor: unknown controller {self.competitor!r}; expected one of "
                             f"{', '.join(sorted(COMPETITORS))} or '' (none)")
        if self.competitor and self.num_flows < 2:
            raise ValueError(f"competitor: {self.competitor!r} needs a flow slot of its own beside the agents; "
                             f"num_flows is {self.num_flows}, expected >= 2")
        if not 0.0 <= self.p_competitor <= 1.0:
            raise ValueError(f"p_competitor: {self.p_competitor} is outside [0, 1]")
        if not 0.0 <= self.competitor_start_s <= 1e6:
            raise ValueError(f"competitor_start_s: {self.competitor_start_s} is outside [0, 1e6] s")

    @property
    def mi_ticks(self) -> int:
        n = self.mi_rtts * self.ticks_per_rtt
        if abs(n - round(n)) > 1e-9 or round(n) < 1:
            raise ValueError(f"mi_rtts·ticks_per_rtt must be a positive integer, got {n}")
        return int(round(n))


@struct.dataclass
class EnvState:
    """Dynamic state of one link and its flows.

    Attributes:
      link: the link drawn at reset (LinkParams).
      sim: simulator state.
      rate: [F] current pacing rate (bytes/s).
      cwnd: [F] current congestion window (bytes; ``core.BIG`` for rate-only senders).
      run: per-flow running statistics across MIs.
      hist: [F, T, D] feature history (oldest first); the observation.
      goal: [F, G] goal / preference vector (G may be 0).
      paper: paper-specific per-flow state (every leaf has a leading [F] axis).
      step: steps taken in this episode.
      last_mi: the MI statistics of the previous step (zeros after reset).
      clock: the per-flow clocks (``FlowClock``) with ``EnvConfig.flow_clock``, else None.
      comp: the competitor (``Competitor``) with ``EnvConfig.competitor``, else None.
    """

    link: core.LinkParams
    sim: core.SimState
    rate: jax.Array
    cwnd: jax.Array
    run: mi_lib.RunningStats
    hist: jax.Array
    goal: jax.Array
    paper: Any
    step: jax.Array
    last_mi: mi_lib.MIStats
    clock: Any = None
    comp: Any = None


@struct.dataclass
class FlowClock:
    """Each flow's own decision clock (``EnvConfig.flow_clock``; the module docstring).

    Attributes:
      k: [F] steps per MI of each flow, ``max(1, round(rtt_f / min rtt))``.
      phase: [F] steps of the flow's current MI already taken (0: the next step opens one).
      acc: the flow's current MI so far (``MIStats``, [F] leaves; zeros at an opening).
      cap: [F] bytes the link could serve during the flow's current MI so far.
      held: [F] the action in force, taken at the step that opened the MI.
    """

    k: jax.Array
    phase: jax.Array
    acc: mi_lib.MIStats
    cap: jax.Array
    held: jax.Array


@struct.dataclass
class Competitor:
    """A classic controller in the link's last flow slot (``EnvConfig.competitor``).

    Attributes:
      on: the slot holds the competitor in this episode (else it is an agent like the others).
      cstate: the controller's state for that one flow (``jaxcc.sim.controller`` protocol).
    """

    on: jax.Array
    cstate: Any


def clock_steps(rtt: jax.Array) -> jax.Array:
    """[F] steps per MI of each flow on its own clock: ``max(1, round(rtt_f / min_f rtt_f))``."""
    return jnp.maximum(jnp.round(rtt / jnp.min(rtt)), 1.0).astype(jnp.int32)


class EpisodeInit(NamedTuple):
    """What a paper's sampler draws at reset."""

    link: core.LinkParams
    rate: jax.Array  # [F] bytes/s
    cwnd: jax.Array  # [F] bytes
    goal: jax.Array  # [F, G]


class LinkMI(NamedTuple):
    """Link-level sums over one MI (privileged: for rewards that use the true capacity)."""

    cap_bytes: jax.Array  # Σ capacity·dt: bytes the link could serve during the MI ([F]: each flow's own, per-flow clocks)
    queue_end: jax.Array  # bytes queued at the end of the MI


class StepOut(NamedTuple):
    """What a paper's ``observe`` returns after one MI."""

    features: jax.Array  # [F, D]
    reward: jax.Array  # [F] or [F, R]
    paper: Any  # new paper state
    terminated: jax.Array  # scalar bool
    info: dict  # extra per-flow diagnostics ([F] leaves), same keys every step


def push_history(hist: jax.Array, feats: jax.Array) -> jax.Array:
    """Drops the oldest entry of ``hist`` [F, T, D] and appends ``feats`` [F, D] as the newest."""
    return jnp.concatenate([hist[:, 1:, :], feats[:, None, :]], axis=1)


def _where_tree(mask_f: jax.Array, new, old):
    """Per-flow select over pytrees whose leaves have a leading [F] axis."""

    def sel(n, o):
        m = mask_f.reshape(mask_f.shape + (1,) * (n.ndim - 1))
        return jnp.where(m, n, o)

    return jax.tree.map(sel, new, old)


def _where_all(done: jax.Array, a, b):
    return jax.tree.map(lambda x, y: jnp.where(done, x, y), a, b)


class MultiFlowEnv:
    """Base class; a paper subclasses it and fills in the hooks below.

    Hooks:
      ``sample_episode(key, params) -> EpisodeInit``
      ``init_paper(init, params) -> paper state``          (leaves [F, ...])
      ``empty_features(params) -> [D]``                    (history padding at reset)
      ``apply_action(state, action, params) -> (rate, cwnd, paper)``
      ``observe(state, paper, mi, run, link_mi, params) -> StepOut``
    """

    name: str = "base"

    def __init__(self, config: EnvConfig):
        self.config = config

    # -- gymnax surface -----------------------------------------------------------------

    @property
    def default_params(self):
        raise NotImplementedError

    @property
    def num_agents(self) -> int:
        return self.config.num_flows

    def obs_shape(self) -> tuple[int, ...]:
        c = self.config
        return (c.num_flows, c.history, c.obs_dim)

    def action_spec(self) -> dict:
        """Per-agent action: ``{"kind": "continuous", "low", "high"}`` (one float per agent) or
        ``{"kind": "discrete", "n"}`` (one int per agent); actions are passed as [F]."""
        raise NotImplementedError

    def goal(self, state: EnvState) -> jax.Array:
        """[F, G] goal / preference vector of the current episode."""
        return state.goal

    def time_limit_reached(self, step: jax.Array, time: jax.Array, params) -> jax.Array:
        """The episode's time limit (``truncated`` before a true end takes precedence): ``step``
        decisions taken, or ``time`` seconds of link time simulated (``sim.tick · link.dt``)."""
        return (step >= self.config.max_steps) | (time >= params.max_time_s)

    def reset(self, key: jax.Array, params=None):
        params = self.default_params if params is None else params
        return self.reset_env(key, params)

    def step(self, key: jax.Array, state: EnvState, action: jax.Array, params=None):
        params = self.default_params if params is None else params
        k_step, k_reset = jax.random.split(key)
        obs_st, state_st, reward, terminated, truncated, info = self.step_env(k_step, state, action, params)
        obs_re, state_re = self.reset_env(k_reset, params)
        done = terminated | truncated
        state = _where_all(done, state_re, state_st)
        obs = jnp.where(done, obs_re, obs_st)
        info = dict(info)
        info["final_obs"] = obs_st
        f = self.config.num_flows
        return (obs, state, reward, jnp.broadcast_to(terminated, (f,)), jnp.broadcast_to(truncated, (f,)), info)

    # -- implementation ---------------------------------------------------------------

    def reset_env(self, key: jax.Array, params):
        c = self.config
        init = self.sample_episode(key, params)
        if c.dynamics is not None:  # keys of its own: the paper's draws are unchanged
            init = init._replace(link=samplers.apply(key, init.link, c.dynamics, self.horizon(init.link, params)))
        if c.realism is not None:  # drawn from a key of its own: the paper's draws are unchanged
            rz = links.sample_realism(jax.random.fold_in(key, REALISM_KEY), c.realism, init.link.cap_bps[0],
                                      c.realism.cross_segments)
            init = init._replace(link=init.link.replace(realism=rz))
        comp = None
        if c.competitor:  # keys of its own: the paper's draws are unchanged
            init, comp = self._place_competitor(jax.random.fold_in(key, COMPETITOR_KEY), init)
        sim = core.init_state(init.link, c.ring_len)
        paper = self.init_paper(init, params)
        empty = jnp.asarray(self.empty_features(params), jnp.float32)
        hist = jnp.broadcast_to(empty, (c.num_flows, c.history, c.obs_dim)).astype(jnp.float32)
        state = EnvState(
            link=init.link,
            sim=sim,
            rate=jnp.clip(init.rate, MIN_RATE, MAX_RATE).astype(jnp.float32),
            cwnd=init.cwnd.astype(jnp.float32),
            run=mi_lib.running_zero(c.num_flows),
            hist=hist,
            goal=init.goal.astype(jnp.float32),
            paper=paper,
            step=jnp.zeros((), jnp.int32),
            last_mi=mi_lib.mi_zero(c.num_flows),
            clock=None if not c.flow_clock else FlowClock(
                k=clock_steps(init.link.rtt), phase=jnp.zeros((c.num_flows,), jnp.int32),
                acc=mi_lib.mi_zero(c.num_flows), cap=jnp.zeros((c.num_flows,), jnp.float32),
                held=self._actions(jnp.zeros((c.num_flows,)))),
            comp=comp,
        )
        return hist, state

    def _place_competitor(self, key: jax.Array, init: EpisodeInit) -> tuple[EpisodeInit, Competitor]:
        """With probability ``p_competitor``, the link's last slot becomes the competitor, starting
        uniformly in [0, ``competitor_start_s``] s and staying to the end, beside 1..F−1 of the
        agents the paper drew (uniformly; the slots above are left empty)."""
        c = self.config
        f = c.num_flows
        k_on, k_n, k_t = jax.random.split(key, 3)
        on = jax.random.uniform(k_on, ()) < c.p_competitor
        n_agents = jax.random.randint(k_n, (), 1, f)
        t0 = jax.random.uniform(k_t, (), maxval=c.competitor_start_s)
        idx = jnp.arange(f)
        last = on & (idx == f - 1)
        empty = on & (idx != f - 1) & (idx >= n_agents)  # start == stop: the slot never sends
        link = init.link
        start = jnp.where(last, t0, jnp.where(empty, 0.0, link.start)).astype(link.start.dtype)
        stop = jnp.where(last, 1e9, jnp.where(empty, 0.0, link.stop)).astype(link.stop.dtype)
        ctrl = COMPETITORS[c.competitor]
        cstate = ctrl.init(self._competitor_params())
        return init._replace(link=link.replace(start=start, stop=stop)), Competitor(on=on, cstate=cstate)

    @staticmethod
    def _competitor_params() -> ctl.ControllerParams:
        return jax.tree.map(jnp.asarray, ctl.ControllerParams.zeros())

    def agents(self, state: EnvState) -> jax.Array:
        """[F] bool: the slots the policy controls (all of them, but the competitor's when it is on)."""
        f = self.config.num_flows
        if state.comp is None:
            return jnp.ones((f,), bool)
        return ~(state.comp.on & (jnp.arange(f) == f - 1))

    def _actions(self, action: jax.Array) -> jax.Array:
        """``action`` as the [F] array of the action spec's dtype (int32 discrete, float32 continuous)."""
        dt = jnp.int32 if self.action_spec()["kind"] == "discrete" else jnp.float32
        return jnp.asarray(action).reshape(self.config.num_flows).astype(dt)

    def horizon(self, link: core.LinkParams, params) -> jax.Array:
        """The episode's length in seconds: ``max_steps`` MIs at the link's smallest RTT, or
        ``params.max_time_s`` when shorter."""
        c = self.config
        return jnp.minimum(c.max_steps * c.mi_rtts * jnp.min(link.rtt), params.max_time_s)

    def run_mi(self, link: core.LinkParams, sim: core.SimState, rate: jax.Array, cwnd: jax.Array,
               m0: mi_lib.MIStats | None = None, comp: Competitor | None = None):
        """Simulates one step (``mi_ticks`` ticks) at fixed rate/cwnd; returns (sim, MIStats,
        LinkMI, comp).  ``m0``: each flow's MI so far, continued tick by tick (per-flow clocks),
        else an empty MI.  ``comp``: the competitor, which sets the last slot's rate and window
        every tick from its controller (when on) and sees that tick's feedback, as in the runner."""
        c = self.config
        ctrl = COMPETITORS[c.competitor] if comp is not None else None
        if ctrl is not None:  # built once, outside the tick loop
            cp = self._competitor_params()
            cs0 = ctrl.init(cp)
            last = jnp.arange(c.num_flows) == c.num_flows - 1

        def tick(carry, _):
            s, m, cap, cs = carry
            r, w = rate, cwnd
            if ctrl is not None:
                a = ctrl.act(cs, cp)
                r = jnp.where(comp.on & last, a.rate, rate)
                w = jnp.where(comp.on & last, a.cwnd, cwnd)
            s, out = core.step(link, s, r, w)
            m = mi_lib.mi_add_tick(m, out, link.dt)
            if ctrl is not None:  # an idle competitor starts (or restarts) from its initial state
                obs = jax.tree.map(lambda x: x[-1], ctl.tick_obs(out, link.dt))
                cs = jax.tree.map(lambda n, i: jnp.where(out.active[-1], n, i), ctrl.update(cs, obs, cp), cs0)
            return (s, m, cap + out.capacity * link.dt, cs), out.queue

        init = (sim, mi_lib.mi_zero(c.num_flows) if m0 is None else m0, jnp.zeros((), jnp.float32),
                None if comp is None else comp.cstate)
        (sim, m, cap, cs), queues = jax.lax.scan(tick, init, None, length=c.mi_ticks)
        return sim, m, LinkMI(cap_bytes=cap, queue_end=queues[-1]), None if comp is None else comp.replace(cstate=cs)

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params):
        c = self.config
        action = self._actions(action)
        rate, cwnd, paper_a = self.apply_action(state, action, params)
        rate = jnp.clip(rate, MIN_RATE, MAX_RATE)
        ck = state.clock
        if ck is not None:  # only the flows whose MI opens at this step act; the others hold
            due = ck.phase == 0
            rate, cwnd = jnp.where(due, rate, state.rate), jnp.where(due, cwnd, state.cwnd)
            paper_a = _where_tree(due, paper_a, state.paper)
            action = jnp.where(due, action, ck.held)
        sim, m, lmi, comp = self.run_mi(state.link, state.sim, rate, cwnd, None if ck is None else ck.acc,
                                        state.comp)
        step_cap = lmi.cap_bytes  # this step's, for info["capacity"]
        sending = m.active > 0  # the flow sent during its MI (so far): the rate it took stays in force
        agent = self.agents(state)
        active = sending & agent  # ... and its MI closed here: observed, rewarded, a transition
        if ck is not None:
            closes = ck.phase + 1 >= ck.k
            # Each flow's LinkMI covers its own MI: cap_bytes [F].
            lmi = lmi._replace(cap_bytes=ck.cap + lmi.cap_bytes)
            # A flow not yet sending keeps its clock at an opening (its first MI starts with it).
            restart = closes | ~active
            clock = ck.replace(phase=jnp.where(restart, 0, ck.phase + 1), held=action,
                               acc=_where_tree(restart, mi_lib.mi_zero(c.num_flows), m),
                               cap=jnp.where(restart, 0.0, lmi.cap_bytes))
            active = active & closes
        run = _where_tree(active, mi_lib.running_update(state.run, m), state.run)
        # observe() sees the rate/cwnd that were in force during the MI.
        out = self.observe(state.replace(rate=rate, cwnd=cwnd), paper_a, m, run, lmi, params)
        paper = _where_tree(active, out.paper, _where_tree(sending, paper_a, state.paper))
        feats = jnp.where(active[:, None], out.features, 0.0).astype(jnp.float32)
        hist = jnp.where(active[:, None, None], push_history(state.hist, feats), state.hist)
        reward = out.reward * active.reshape(active.shape + (1,) * (out.reward.ndim - 1))
        step = state.step + 1
        time = sim.tick.astype(jnp.float32) * state.link.dt
        truncated = self.time_limit_reached(step, time, params)
        terminated = out.terminated & ~truncated if self.truncation_wins else out.terminated
        truncated = truncated & ~terminated
        new = EnvState(
            link=state.link,
            sim=sim,
            rate=jnp.where(sending, rate, state.rate),
            cwnd=jnp.where(sending, cwnd, state.cwnd),
            run=run,
            hist=hist,
            goal=state.goal,
            paper=paper,
            step=step,
            last_mi=m,
            clock=None if ck is None else clock,
            comp=comp,
        )
        dur = jnp.maximum(m.duration, 1e-30)
        info = {
            "active": active,
            "action": action,
            "due": jnp.ones_like(active) if ck is None else clock.phase == 0,
            "time": jnp.broadcast_to(time, active.shape),
            "send_rate": m.sent / dur,
            "delivery_rate": m.acked / dur,
            "loss_rate": mi_lib.loss_rate(m),
            "rtt_mean": mi_lib.rtt_mean(m),
            "capacity": jnp.broadcast_to(step_cap / (dur[0] if ck is None else c.mi_ticks * state.link.dt),
                                         active.shape),
            "queue": jnp.broadcast_to(lmi.queue_end, active.shape),
            "rate": new.rate,
            "agent": agent,
        }
        info.update(out.info)
        return hist, new, reward.astype(jnp.float32), terminated, truncated, info

    # A time limit that coincides with a true terminal is reported as terminated.
    truncation_wins = False

    # -- hooks --------------------------------------------------------------------------

    def sample_episode(self, key, params) -> EpisodeInit:
        raise NotImplementedError

    def init_paper(self, init: EpisodeInit, params):
        raise NotImplementedError

    def empty_features(self, params) -> jax.Array:
        return jnp.zeros((self.config.obs_dim,), jnp.float32)

    def apply_action(self, state: EnvState, action: jax.Array, params):
        raise NotImplementedError

    def observe(self, state: EnvState, paper, m: mi_lib.MIStats, run: mi_lib.RunningStats, lmi: LinkMI,
                params) -> StepOut:
        raise NotImplementedError


# ----------------------------------------------------------------------------- helpers


def params_as_arrays(params, int_fields: tuple[str, ...] = ()):
    """Every field of a params dataclass as a float32 array (int32 for ``int_fields``); tuples
    of numbers become 1-D/2-D arrays (not pytrees of scalars)."""
    vals = {}
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        vals[f.name] = jnp.asarray(v, jnp.int32 if f.name in int_fields else jnp.float32)
    return params.replace(**vals)


def replace_params(params, over: dict | None):
    """``params`` with the fields named in ``over`` (a config's ``env.params``) replaced, each
    keeping its field's dtype.

    Raises:
      ValueError: a name that is not a field of ``params``, in one line with the allowed names.
    """
    over = dict(over or {})
    names = [f.name for f in dataclasses.fields(params)]
    unknown = sorted(k for k in over if k not in names)
    if unknown:
        raise ValueError(f"config.env.params: unknown field(s) {unknown} of {type(params).__name__}; "
                         f"allowed: {', '.join(sorted(names))}")
    return params.replace(**{k: jnp.asarray(v, jnp.asarray(getattr(params, k)).dtype) for k, v in over.items()})


def constant_schedule(num_segments: int, bps) -> tuple[jax.Array, jax.Array]:
    """A constant capacity padded to ``num_segments`` segments (1 s apart; all the same rate)."""
    times = jnp.arange(num_segments, dtype=jnp.float32)
    return times, jnp.full((num_segments,), bps, jnp.float32)


def ewma(prev: jax.Array, new: jax.Array, gain: float, first: jax.Array) -> jax.Array:
    """``gain·new + (1−gain)·prev``, or ``new`` on the first sample (``first`` True)."""
    return jnp.where(first, new, gain * new + (1.0 - gain) * prev)


def ring_len_worst(max_wait_over_rtt: float, ticks_per_rtt: int, max_ring: int = MAX_RING) -> int:
    """Static ring length for a whole training distribution (mirrors ``links.ring_len_for``).

    A byte's feedback arrives ``rtt + wait`` after it was sent, with ``wait`` at most a full
    buffer drained at the smallest capacity (plus two MSS).  In ticks of ``rtt/ticks_per_rtt``
    that is ``ticks_per_rtt·(1 + wait/rtt)``, so the worst case is the largest ``wait/rtt`` of
    the distribution (callers pass it, including the 2·MSS term).  Rounded up to a multiple of
    8 with 3 ticks of slack, capped at ``max_ring``.
    """
    import math

    need = int(math.ceil(ticks_per_rtt * (1.0 + max_wait_over_rtt))) + 3
    return int(min(max_ring, 8 * math.ceil(need / 8)))
