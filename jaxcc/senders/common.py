"""What every simulator sender of an exported policy shares: the monitor interval (MI) clock,
the feature window, and the ``Controller`` they run as.

A feature set's module (``aurora_v1``, ``eagle_v1``, ...) describes its sender as a ``Sender``:
four pure functions over its own state ``own`` (rate, cwnd, the paper's per-flow memory), each
over one flow (leaves ``[1]`` or scalars, the environment's per-flow code run with one flow):

    own = start(rtt0)                        # before the first decision (rtt0 None: unknown yet)
    own = decide(own, hist, run, rtt0)       # the policy on the window, then the paper's action rules
    x, own = observe(own, m, run, rtt0)      # one MI's statistics -> its feature vector [D]
    action = act(own)                        # what the flow sends during a tick

``rtt0`` is the fallback min RTT before any RTT sample (the environments use the flow's
propagation RTT; the datapath ``--rtt-hint-ms``).  In the simulator it is ``dt · ticks_per_rtt``:
the runner makes a tick ``ticks_per_rtt``-th of the link's smallest propagation RTT, and
``ticks_per_rtt`` is the spec's (what the policy was trained at; a scenario simulated at another
resolution stretches the MI and this RTT by the ratio).

``make_controller`` wraps a ``Sender`` into the per-tick ``Controller`` protocol exactly as the
environment steps (``jaxcc.envs.base.MultiFlowEnv.step_env``): every tick's feedback is
accumulated into the MI with the environment's ``mi.mi_add_tick``; every ``mi_rtts ·
ticks_per_rtt`` ticks (times the flow's ``SenderParams.mi_scale``, round(its RTT / the link's
smallest): each flow decides on its own RTT's clock, as the datapath sender and the
environments' per-flow clocks do) the running statistics are updated, the features computed, pushed into
the ``[T, D]`` window (oldest first, padded with ``features.empty``) and the policy decides.  An
MI in which the flow was never active changes nothing but the clock.  The first decision is
taken on the empty window (the environments act once at reset, before any feedback): at
``init``, or, for a sender whose start needs the link's RTT (``needs_rtt_to_start``), at the end
of the first tick, which reveals it.

A start rate (``SenderParams.init_rate > 0``, a scenario flow's ``init_rate_mbps``) replaces the rate
of every state ``start`` returns (``own.rate``, which every feature set's state has), so the
first decision acts on it, as the environments act once on the start rate they draw and as
``jaxcc-sender --init-mbps`` does; a sender that decides at the end of the first tick sends at
it during that tick.  Everything else ``start`` sets (a window, the paper's memory) is kept.

A preference-conditioned sender (``Sender.preference``, its default preference: ``mocc_v1``)
decides with the preference in force at the decision (``jaxcc.sim.controller.preference_at``):
the flow's ``preference`` (``SenderParams.preference``, a scenario flow's field), switched by its
``preference_changes`` table at their times (the end of the first tick at or after ``at_s``,
so the next decision uses it), else the sender's default.  The controller says so
(``Controller.takes_preference``) and the runner refuses those fields for any other.

A deployed sender (``make_controller(..., safe=True)``, the default: a scenario's
``policy:FILE``) carries the datapath's safety net (``jaxcc.senders.safety``, the twin of
``datapath/src/safety.h``): an in-sender BBR fed by every tick, whose action replaces the
policy's while the runtime monitor says so, and the guard on every decision taken on an MI
without feedback.  At each MI boundary, as ``datapath/src/decision_loop.cc`` does: the monitor
steps on the MI; handed back, the policy decides from BBR's rate; while BBR paces the MI is
observed (features, window) but not decided on.  ``raw-policy:FILE`` is ``safe=False``.

A goal-tuned sender (``Sender.takes_target``: ``deepcc_v1``) also gets, at every decision, the
flow's target (``SenderParams.target`` and ``.target_on``, a scenario flow's ``target``) and tunes its
goal toward them (``jaxcc.senders.goal_tuning``); ``Controller.takes_target`` says so.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.baselines import bbr
from jaxcc.envs import mi as mi_lib
from jaxcc.senders import safety
from jaxcc.sim.controller import (PREFERENCE_DIM, Action, Controller, ControllerParams, SenderParams, TickObs,
                                  preference_at)


class Sender(NamedTuple):
    """A feature set's sender as pure functions over its own state (see the module docstring)."""

    start: Callable[[Any], Any]
    decide: Callable[[Any, jax.Array, mi_lib.RunningStats, Any], Any]
    observe: Callable[[Any, mi_lib.MIStats, mi_lib.RunningStats, Any], tuple[jax.Array, Any]]
    act: Callable[[Any], Action]
    needs_rtt_to_start: bool = False
    # A preference-conditioned sender's default preference [PREFERENCE_DIM] (None: it takes none).
    # Such a sender's ``decide`` takes a fifth argument, the preference in force at the decision.
    preference: Any = None
    # A goal-tuned sender (``deepcc_v1``): its ``decide`` also takes ``target=`` the flow's
    # ``[target (throughput_mbps, delay_ms, loss)..., target_on]`` (``SenderParams``).
    takes_target: bool = False
    # A sender built to explore (``pareto_v1``/``v2`` with ``explore=True``, online fine-tuning's
    # ``--explore``): its ``decide`` also takes ``noise=``, a draw of N(0, σ²) in units of the
    # action's half-range (``explore_noise``).
    takes_noise: bool = False


class SenderState(NamedTuple):
    """A sender's per-flow state in the simulator."""

    own: Any  # the feature set's state (rate, cwnd, paper memory)
    hist: jax.Array  # [T, D] feature window, oldest first
    tick: jax.Array  # ticks into the current MI
    m: mi_lib.MIStats  # the current MI's statistics ([1] leaves)
    run: mi_lib.RunningStats  # statistics across MIs ([1] leaves)
    started: jax.Array  # the first decision was taken
    # The safety net (``jaxcc.senders.safety``; None for a raw policy): the in-sender BBR, fed by
    # every tick, and the runtime monitor that hands it the pacing.
    bbr: Any = None
    mon: Any = None


class MITick(NamedTuple):
    """The ``TickOut`` fields ``mi.mi_add_tick`` reads, for one flow ([1] leaves)."""

    acked: jax.Array
    lost: jax.Array
    rtt_wsum: jax.Array
    sent: jax.Array
    active: jax.Array


def mi_tick(obs: TickObs) -> MITick:
    """One flow's tick observation in the shape ``jaxcc.envs.mi.mi_add_tick`` accumulates."""
    one = lambda x: jnp.reshape(x, (1,))  # noqa: E731
    return MITick(one(obs.acked), one(obs.lost), one(obs.rtt_wsum), one(obs.sent), one(obs.active))


def ticks_per_rtt(spec: dict) -> int:
    """Simulator ticks per min RTT the policy was trained at (``features.ticks_per_rtt``, default 8)."""
    return int(spec["features"].get("ticks_per_rtt", 8))


def spec_window(spec: dict) -> tuple[int, int, int]:
    """(history T, observation size D, ticks per monitor interval) of an exported policy spec."""
    feats = spec["features"]
    return int(feats["history"]), int(feats["obs_dim"]), int(round(float(spec["mi_rtts"]) * ticks_per_rtt(spec)))


def empty_window(spec: dict, default=None) -> jax.Array:
    """The ``[T, D]`` window before any MI: ``features.empty`` (else ``default``, else zeros) per step."""
    T, D, _ = spec_window(spec)
    empty = spec["features"].get("empty", [0.0] * D if default is None else list(default))
    return jnp.broadcast_to(jnp.asarray(empty, jnp.float32), (T, D)).astype(jnp.float32)


def push(hist: jax.Array, x: jax.Array) -> jax.Array:
    """The window with its oldest step dropped and ``x`` [D] appended as the newest."""
    return jnp.concatenate([hist[1:], x[None].astype(jnp.float32)], 0)


def policy_goal(spec: dict, goal=None) -> jax.Array | None:
    """The goal/preference vector fed to a policy with ``goal_dim`` G > 0: ``goal`` if given,
    else 1/G each — the datapath sender's default without ``--goal``.  None when G is 0."""
    G = int(spec.get("goal_dim", 0))
    if G == 0:
        if goal is not None and len(goal):
            raise ValueError(f"goal: the policy takes no goal (goal_dim 0), got {list(goal)}")
        return None
    g = [1.0 / G] * G if goal is None else [float(v) for v in goal]
    if len(g) != G:
        raise ValueError(f"goal: the policy needs {G} values (goal_dim), got {len(g)}")
    return jnp.asarray(g, jnp.float32)


def tensors_as_arrays(tensors: dict) -> dict:
    return {k: jnp.asarray(v) for k, v in tensors.items()}


def start_at(own, rate0: jax.Array):
    """``own`` with its rate replaced by ``rate0`` (bytes/s) where ``rate0 > 0``, else unchanged."""
    r = jnp.broadcast_to(jnp.asarray(rate0, own.rate.dtype), own.rate.shape)
    return own._replace(rate=jnp.where(r > 0, r, own.rate))


def guarded(new, old, dark):
    """The sender state ``new`` decided on an MI, its rate (and window, for a sender that has one)
    no higher than ``old``'s, those in force, when ``dark`` (``jaxcc.senders.safety.guard``)."""
    if not hasattr(old, "cwnd"):
        return new._replace(rate=safety.guard(new.rate, new.rate, old.rate, old.rate, dark)[0])
    rate, cwnd = safety.guard(new.rate, new.cwnd, old.rate, old.cwnd, dark)
    return new._replace(rate=rate, cwnd=cwnd)


def explore_noise(sp: SenderParams, now: jax.Array) -> jax.Array:
    """σ·z for a decision taken at ``now`` (s since the scenario began), z ~ N(0, 1) from the
    flow's stream: ``sp.explore`` = (σ, seed), the key folded with the decision's time in 0.1-ms
    steps (a flow decides at most once a tick, and ticks are longer).  0 when σ is 0 and for the
    decision before the first tick (``now`` = −inf)."""
    sigma, seed = sp.explore[0], sp.explore[1]
    step = jnp.where(jnp.isfinite(now), jnp.round(now * 1e4), 0.0).astype(jnp.int32)
    z = jax.random.normal(jax.random.fold_in(jax.random.PRNGKey(seed.astype(jnp.int32)), step), (), jnp.float32)
    return jnp.where((sigma > 0) & jnp.isfinite(now), sigma * z, 0.0).astype(jnp.float32)


def make_controller(name: str, spec: dict, sender: Sender, default_empty=None, safe: bool = True) -> Controller:
    """The per-tick ``Controller`` that runs ``sender`` (see the module docstring); ``safe``: with
    the deployed sender's guard and monitor (``jaxcc.senders.safety``), else the raw policy."""
    T, D, mi_ticks = spec_window(spec)
    tpr = ticks_per_rtt(spec)
    enter_mis = safety.mis_for(safety.ENTER_RTTS, float(spec["mi_rtts"]))
    exit_mis = safety.mis_for(safety.EXIT_RTTS, float(spec["mi_rtts"]))
    takes_pref = sender.preference is not None
    if takes_pref and len(sender.preference) != PREFERENCE_DIM:
        raise ValueError(f"{name}: a preference-conditioned sender needs {PREFERENCE_DIM} weights, "
                         f"got {len(sender.preference)}")

    def decide(own, hist, run, rtt0, sp: SenderParams, now):
        kw = {"target": jnp.concatenate([sp.target, sp.target_on[None]])} if sender.takes_target else {}
        if sender.takes_noise:
            kw["noise"] = explore_noise(sp, now)
        if not takes_pref:
            return sender.decide(own, hist, run, rtt0, **kw)
        return sender.decide(own, hist, run, rtt0, preference_at(sp, now, sender.preference), **kw)

    def first_decision(hist, rtt0, sp: SenderParams, now):
        return decide(start_at(sender.start(rtt0), sp.init_rate), hist, mi_lib.running_zero(1), rtt0, sp, now)

    def init(cp: ControllerParams):
        hist = empty_window(spec, default_empty)
        if sender.needs_rtt_to_start:
            own, started = start_at(sender.start(None), cp.sender.init_rate), jnp.zeros((), bool)
        else:  # before the first tick: the flow's preference (a change needs at_s > its start)
            own, started = first_decision(hist, None, cp.sender, -jnp.inf), jnp.ones((), bool)
        net = (bbr.bbr_init(cp), safety.monitor_zero()) if safe else (None, None)
        return SenderState(own=own, hist=hist, tick=jnp.zeros((), jnp.int32), m=mi_lib.mi_zero(1),
                           run=mi_lib.running_zero(1), started=started, bbr=net[0], mon=net[1])

    def act(s: SenderState, cp: ControllerParams):
        if not safe:
            return sender.act(s.own)
        mine, bbr_a = sender.act(s.own), bbr.bbr_act(s.bbr, cp)
        return jax.tree.map(lambda b, p: jnp.where(s.mon.fallback, b, p), bbr_a, mine)

    def update(s: SenderState, obs: TickObs, cp: ControllerParams):
        rtt0 = obs.dt * tpr  # the link's min propagation RTT (the env's fallback before a sample)
        if sender.needs_rtt_to_start:
            own = jax.lax.cond(s.started, lambda: s.own, lambda: first_decision(s.hist, rtt0, cp.sender, obs.now))
            s = s._replace(own=own, started=jnp.ones((), bool))
        if safe:  # the in-sender BBR is fed by every ACK, whoever paces
            s = s._replace(bbr=bbr.bbr_update(s.bbr, obs, cp))
        m = mi_lib.mi_add_tick(s.m, mi_tick(obs), obs.dt)
        n = s.tick + 1

        def boundary(_):
            active = m.active > 0
            run = jax.tree.map(lambda a, b: jnp.where(active, a, b), mi_lib.running_update(s.run, m), s.run)
            on = active[0]
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(on, a, b), new, old)  # noqa: E731
            x, own = sender.observe(s.own, m, run, rtt0)
            own = keep(own, s.own)
            hist = jnp.where(on, push(s.hist, x), s.hist)
            if not safe:
                own = keep(decide(own, hist, run, rtt0, cp.sender, obs.now), own)
                mon = s.mon
            else:  # as datapath/src/decision_loop.cc: the monitor first, then the guarded decision
                answered = run.min_rtt[0] < 0.5 * mi_lib.BIG  # an RTT sample so far, this MI's included
                mon = safety.monitor_step(s.mon, m.acked[0], m.lost[0], m.n_samples[0], m.duration[0], answered,
                                          enter_mis, exit_mis)
                mon = keep(mon, s.mon)
                # Handed back: the policy decides from the rate BBR left in force, its window the
                # one it had set (no decision was taken while BBR paced).
                back = s.mon.fallback & ~mon.fallback
                in_force = jnp.broadcast_to(bbr.bbr_rate(s.bbr).astype(own.rate.dtype), jnp.shape(own.rate))
                own = own._replace(rate=jnp.where(back, in_force, own.rate))
                new = guarded(decide(own, hist, run, rtt0, cp.sender, obs.now), own,
                              safety.no_feedback(m.acked[0], m.n_samples[0]) & answered)
                own = keep(jax.tree.map(lambda a, b: jnp.where(mon.fallback, b, a), new, own), own)
            return SenderState(own=own, hist=hist, tick=jnp.zeros((), jnp.int32), m=mi_lib.mi_zero(1), run=run,
                               started=s.started, bbr=s.bbr, mon=mon)

        def inside(_):
            return s._replace(tick=n, m=m)

        # The flow's own MI: ``mi_scale`` times the smallest RTT's (its own RTT's clock).
        own_ticks = mi_ticks * jnp.maximum(jnp.round(cp.sender.mi_scale), 1.0).astype(jnp.int32)
        return jax.lax.cond(n >= own_ticks, boundary, inside, None)

    return Controller(name, init, act, update, takes_preference=takes_pref, takes_target=sender.takes_target)
