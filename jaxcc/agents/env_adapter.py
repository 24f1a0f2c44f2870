"""One place that turns "Pareto stage X" into a vmappable environment for the agent.

Stages map onto ``jaxcc.envs.make_env``: bootstrap/advance are 'pareto' with ``params.stage``
0/1, fairness is 'pareto-fairness' (two flows, the second starting 2 s later).  The adapter
normalises what the agent relies on:

* ``obs``: ``[F, T, D]`` windows (a ``[F, D]`` observation is windowed here);
* ``info["active"]`` ``[F]``: the flow was active this step (all true if absent);
* ``info["final_obs"]``: the observation before an auto-reset (``obs`` if absent);
* an expert action ``[F]``: ``info["expert_action"]`` if the env has one, else the MI-level BBR
  of ``jaxcc.agents.expert``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp

from jaxcc.agents import expert as expert_lib


@dataclasses.dataclass(frozen=True)
class StageEnv:
    env: Any
    params: Any
    num_flows: int
    history: int
    obs_dim: int
    mi_rtts: float
    source: str  # "jaxcc.envs"
    feature_info: dict


_ENVS_STAGE = {"bootstrap": ("pareto", 0), "advance": ("pareto", 1), "fairness": ("pareto-fairness", 2)}


def _try_envs(stage: str, overrides: dict):
    """``jaxcc.envs``: 'pareto' with ``params.stage`` 0/1, 'pareto-fairness' (two flows) for 2."""
    try:
        from jaxcc.envs import make_env
    except Exception:  # pragma: no cover - env package missing or broken
        return None, {}
    name, idx = _ENVS_STAGE[stage]
    env, params = make_env(name, **overrides)
    params = params.replace(stage=jnp.asarray(idx, jnp.int32))
    finfo = {}
    try:
        from jaxcc.envs import export_features_spec
        finfo = dict(export_features_spec(name, **overrides))
        finfo["init_rtt_s"] = float(params.rtt_s)
        finfo["init_pkts_per_rtt"] = float(params.init_pkts_per_rtt)
        finfo["ticks_per_rtt"] = int(env.config.ticks_per_rtt)
    except Exception:
        pass
    return (env, params), finfo


def make_stage_env(stage: str, *, prefer: str = "envs", overrides: dict | None = None) -> StageEnv:
    """The Pareto training distribution of ``stage`` (bootstrap | advance | fairness)."""
    overrides = dict(overrides or {})
    if stage not in _ENVS_STAGE:
        raise ValueError(f"unknown Pareto stage {stage!r}; expected one of {sorted(_ENVS_STAGE)}")
    made, finfo = _try_envs(stage, overrides)
    if made is None:
        raise RuntimeError("jaxcc.envs.make_env('pareto') is not available")
    env, params = made
    obs, _ = jax.eval_shape(lambda k: env.reset(k, params), jax.random.PRNGKey(0))
    if len(obs.shape) == 3:
        f, t, d = obs.shape
    elif len(obs.shape) == 2:
        f, d = obs.shape
        t = int(overrides.get("history", 8))
    else:
        raise ValueError(f"pareto env observation must be [F, T, D] or [F, D], got {obs.shape}")
    cfg = getattr(env, "config", None)
    mi = float(getattr(cfg, "mi_rtts", 2.0))
    finfo = finfo or {"name": "pareto_v1"}
    return StageEnv(env, params, int(f), int(t), int(d), mi, "jaxcc.envs", finfo)


def windowed(se: StageEnv) -> tuple[Callable, Callable, bool]:
    """``reset(key) -> (obs [F,T,D], state)``, ``step(key, state, a) -> (obs, state, r [F], term [F],
    trunc [F], valid [F], final_obs [F,T,D], expert [F])`` with the adapter's guarantees, and whether
    an expert action is available (the env's ``info["expert_action"]``, else the MI-level BBR of
    ``jaxcc.agents.expert`` when the env reports ``delivery_rate``, ``rtt_mean`` and ``rate``).

    The adapter's state is ``{"env": env state, "win": own window or None, "expert": MI-BBR state}``.
    """
    env, params = se.env, se.params
    f, t = se.num_flows, se.history
    raw_obs, _ = jax.eval_shape(lambda k: env.reset(k, params), jax.random.PRNGKey(0))
    need_window = len(raw_obs.shape) == 2

    def _info(key):
        _, st = env.reset(key, params)
        return env.step(key, st, jnp.zeros((f,), jnp.float32), params)[5]

    info_shape = jax.eval_shape(_info, jax.random.PRNGKey(0))
    env_expert = "expert_action" in info_shape
    own_expert = (not env_expert) and all(k in info_shape for k in ("delivery_rate", "rtt_mean", "rate"))

    def reset(key):
        obs, st = env.reset(key, params)
        win = None
        if need_window:
            win = jnp.zeros((f, t) + obs.shape[1:], jnp.float32).at[:, -1].set(obs)
            obs = win
        ex = expert_lib.init(f, se.mi_rtts) if own_expert else None
        return obs.astype(jnp.float32), {"env": st, "win": win, "expert": ex}

    def step(key, st, a):
        obs, env_st, r, term, trunc, info = env.step(key, st["env"], a, params)
        r = jnp.broadcast_to(jnp.asarray(r, jnp.float32), (f,))
        term = jnp.broadcast_to(term, (f,))
        trunc = jnp.broadcast_to(trunc, (f,))
        done_link = (term | trunc)[0]
        vkey = "active" if "active" in info else ("valid" if "valid" in info else None)
        valid = jnp.broadcast_to(info[vkey], (f,)) if vkey else jnp.ones((f,), bool)
        final = info.get("final_obs", obs)
        ex = st["expert"]
        if env_expert:
            expert = jnp.broadcast_to(jnp.asarray(info["expert_action"], jnp.float32), (f,))
        elif own_expert:
            ex = expert_lib.update(ex, info["delivery_rate"], info["rtt_mean"], valid)
            expert = expert_lib.action(ex, info["rate"])
            ex = jax.tree.map(lambda a0, b: jnp.where(done_link, a0, b), expert_lib.init(f, se.mi_rtts), ex)
        else:
            expert = jnp.zeros((f,), jnp.float32)
        win = st["win"]
        if need_window:
            final = jnp.concatenate([win[:, 1:], final[:, None]], 1)
            obs = jnp.where(done_link, jnp.zeros_like(win).at[:, -1].set(obs), final)
            win = obs
        new = {"env": env_st, "win": win, "expert": ex}
        return obs.astype(jnp.float32), new, r, term, trunc, valid, final.astype(jnp.float32), expert

    return reset, step, env_expert or own_expert
