"""Run an exported policy file inside the simulator: ``--controller=policy:FILE``.

``policy_controller(path) -> (baselines.base.Controller, cparam)``.  The controller is a per-tick
sender that does what the deployed datapath does: it accumulates monitor-interval statistics
from its own delayed feedback with the environment's code (``jaxcc.envs.mi``), and every
``mi_rtts`` RTTs turns them into the policy's features with the environment's feature code,
pushes them into a ``[T, D]`` window, runs the network (``jaxcc.policyfile.apply``) and maps
its output to a new pacing rate (``policyfile.map_action``).  So a policy behaves in the
simulator as it behaved in training: the same features, the same network, the same action map.

Timing: the monitor interval is ``mi_rtts · ticks_per_rtt`` ticks, i.e. ``mi_rtts`` times the
link's minimum propagation RTT, exactly the environment's step.  Before any feedback the flow
sends at the environment's initial rate (``features.init_pkts_per_rtt`` packets per
``features.init_rtt_s``), with the first action already applied (the environment's first action
is taken on the empty history at reset).

Feature sets supported: ``pareto_v1``, ``aurora_v1``, ``eagle_v1``.  Others raise a clear error
(add them to ``_BUILDERS``).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import policyfile
from jaxcc.baselines.base import CPARAM_DIM, Controller, TickObs, rate_only


class _Tick(NamedTuple):
    """The TickOut fields ``mi.mi_add_tick`` reads, for one flow ([1] leaves)."""

    acked: jax.Array
    lost: jax.Array
    rtt_wsum: jax.Array
    sent: jax.Array
    active: jax.Array


def mi_tick(obs: TickObs) -> _Tick:
    """One flow's tick observation in the shape ``jaxcc.envs.mi.mi_add_tick`` accumulates."""
    one = lambda x: jnp.reshape(x, (1,))  # noqa: E731
    return _Tick(one(obs.acked), one(obs.lost), one(obs.rtt_wsum), one(obs.sent), one(obs.active))


def spec_window(spec: dict) -> tuple[int, int, int]:
    """(history T, observation size D, ticks per monitor interval) of an exported policy spec."""
    feats = spec["features"]
    tpr = int(feats.get("ticks_per_rtt", 8))
    return int(feats["history"]), int(feats["obs_dim"]), int(round(float(spec["mi_rtts"]) * tpr))


def _pareto_v1(spec: dict, tensors: dict) -> Controller:
    from jaxcc.envs import base as env_base
    from jaxcc.envs import mi as mi_lib
    from jaxcc.envs import pareto

    feats = spec["features"]
    T, D, mi_ticks = spec_window(spec)
    tpr = int(feats.get("ticks_per_rtt", 8))
    p = env_base.params_as_arrays(pareto.ParetoParams(), ("stage",))
    over = {k: float(feats[k]) for k in ("scale_dR", "scale_dD", "d_min_ms", "ewma_gain", "d_floor_ms", "l_floor")
            if k in feats}
    p = p.replace(**{k: jnp.asarray(v, jnp.float32) for k, v in over.items()})
    init_rtt = float(feats.get("init_rtt_s", 0.09))
    init_rate = float(feats.get("init_pkts_per_rtt", 10.0)) * 1500.0 / init_rtt
    empty = jnp.asarray(feats.get("empty", [0.0] * D), jnp.float32)
    ten = {k: jnp.asarray(v) for k, v in tensors.items()}

    def decide(hist, rate):
        out = policyfile.apply(spec, ten, hist)
        new_rate, _ = policyfile.map_action(spec, out, rate, jnp.inf)
        return new_rate.astype(jnp.float32)

    class S(NamedTuple):
        rate: jax.Array
        tick: jax.Array
        m: Any
        run: Any
        paper: Any
        hist: jax.Array
        rtt0: jax.Array

    def init(cparam):
        hist = jnp.broadcast_to(empty, (T, D)).astype(jnp.float32)
        r0 = jnp.clip(jnp.float32(init_rate), env_base.MIN_RATE, env_base.MAX_RATE)
        z = jnp.zeros((1,), jnp.float32)
        b = jnp.zeros((1,), bool)
        paper = pareto.ParetoFlow(started=b, rtt=z, R=z, l=z, d_ms=z, dD=z, exp_delay=b, prev_delayed=b)
        return S(rate=decide(hist, r0), tick=jnp.zeros((), jnp.int32), m=mi_lib.mi_zero(1),
                 run=mi_lib.running_zero(1), paper=paper, hist=hist, rtt0=jnp.float32(init_rtt))

    def act(s, cparam):
        return rate_only(s.rate)

    def update(s, obs: TickObs, cparam):
        m = mi_lib.mi_add_tick(s.m, mi_tick(obs), obs.dt)
        n = s.tick + 1
        rtt0 = obs.dt * tpr  # the link's min propagation RTT (the env's fallback before a sample)

        def boundary(_):
            active = m.active > 0
            run = jax.tree.map(lambda a, b: jnp.where(active, a, b), mi_lib.running_update(s.run, m), s.run)
            min_rtt = mi_lib.known_min_rtt(run, rtt0)
            sig, (rtt, R, l) = pareto.signals(s.paper, m, min_rtt, p)
            exp_now = s.paper.exp_delay | sig.delayed
            x = pareto.features(sig, exp_now, p)[0]
            new_paper = pareto.ParetoFlow(started=jnp.ones_like(s.paper.started), rtt=rtt, R=R, l=l, d_ms=sig.d_ms,
                                          dD=sig.dD, exp_delay=exp_now, prev_delayed=sig.delayed)
            paper = jax.tree.map(lambda a, b: jnp.where(active, a, b), new_paper, s.paper)
            hist = jnp.where(active[0], jnp.concatenate([s.hist[1:], x[None].astype(jnp.float32)], 0), s.hist)
            # S_t of the step is what was actually sent; the next rate multiplies the rate in force.
            rate = jnp.where(active[0], decide(hist, s.rate), s.rate)
            return S(rate=rate, tick=jnp.zeros((), jnp.int32), m=mi_lib.mi_zero(1), run=run, paper=paper,
                     hist=hist, rtt0=s.rtt0)

        def inside(_):
            return s._replace(tick=n, m=m)

        return jax.lax.cond(n >= mi_ticks, boundary, inside, None)

    return init, act, update


def _from_agent(module: str):
    """The in-simulator sender an agent module provides for its own feature set (lazy import)."""

    def build(spec, tensors):
        import importlib

        return importlib.import_module(module).sim_controller(spec, tensors)

    return build


_BUILDERS = {
    "pareto_v1": _pareto_v1,
    "aurora_v1": _from_agent("jaxcc.agents.aurora_ppo"),
    "eagle_v1": _from_agent("jaxcc.agents.eagle_cem"),
}


def load_policy(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    return policyfile.load(path)


def policy_controller(path: str) -> tuple[Controller, np.ndarray]:
    """A simulator controller that runs the exported policy ``path`` (see the module docstring)."""
    spec, tensors = load_policy(path)
    fname = spec["features"]["name"]
    if fname not in _BUILDERS:
        raise ValueError(f"policy {path!r}: feature set {fname!r} cannot run in the simulator yet "
                         f"(supported: {', '.join(sorted(_BUILDERS))})")
    init, act, update = _BUILDERS[fname](spec, tensors)
    name = f"policy:{os.path.abspath(path)}"
    return Controller(name, init, act, update), np.zeros((CPARAM_DIM,), np.float32)
