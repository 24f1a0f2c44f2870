"""One place that turns "Pareto stage X" into a vmappable environment for the agent.

Stages map onto ``jaxcc.envs.make_env``: bootstrap/advance are 'pareto' with ``params.stage``
0/1, fairness is 'pareto-fairness' (two flows, the second starting 2 s later).  The adapter adds
what the agent needs beyond the env's step: the BBR expert's action for every flow
(``jaxcc.agents.pareto.expert``, fed with the env's ``info``), and the flat tuple the collect
loop reads (``info["active"]`` as ``valid``, ``info["final_obs"]`` before an auto-reset).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp

from jaxcc.agents.pareto import expert as expert_lib
from jaxcc.envs import base as env_base
from jaxcc.envs import export_features_spec, make_env, pareto


@dataclasses.dataclass(frozen=True)
class StageEnv:
    env: Any
    params: Any
    num_flows: int
    history: int
    obs_dim: int
    mi_rtts: float
    feature_info: dict  # the policy file's ``features`` block
    a_range: tuple[float, float]  # the action range (§III's [-0.7, 2]; Pareto-Fair v2's narrower one)


_ENVS_STAGE = {"bootstrap": ("pareto", 0), "advance": ("pareto", 1), "fairness": ("pareto-fairness", 2)}


def make_stage_env(stage: str, *, overrides: dict | None = None, params: dict | None = None) -> StageEnv:
    """The Pareto training distribution of ``stage`` (bootstrap | advance | fairness).

    ``overrides``: static ``EnvConfig`` fields (``feature_set``, ``num_flows``, ``realism``...);
    ``params``: ``ParetoParams`` leaves (``robust``, ``fair_w``, ``util_w``, the ranges...).

    Raises:
      ValueError: unknown stage or unknown ``params`` field.
    """
    overrides = dict(overrides or {})
    if stage not in _ENVS_STAGE:
        raise ValueError(f"unknown Pareto stage {stage!r}; expected one of {sorted(_ENVS_STAGE)}")
    name, idx = _ENVS_STAGE[stage]
    env, _ = make_env(name, **overrides)
    env_params = env_base.replace_params(env.default_params, params).replace(stage=jnp.asarray(idx, jnp.int32))
    finfo = dict(export_features_spec(name, **overrides))
    finfo["init_rtt_s"] = float(env_params.rtt_s)
    finfo["init_pkts_per_rtt"] = float(env_params.init_pkts_per_rtt)
    finfo["ticks_per_rtt"] = int(env.config.ticks_per_rtt)
    obs, _ = jax.eval_shape(lambda k: env.reset(k, env_params), jax.random.PRNGKey(0))
    f, t, d = obs.shape  # [F, T, D]: every flow's window of the last T monitor intervals
    return StageEnv(env, env_params, int(f), int(t), int(d), float(env.config.mi_rtts), finfo, env.a_range)


def make_validation_env(*, overrides: dict | None = None, params: dict | None = None, max_steps: int = 60,
                        coexist: bool = False):
    """The environment and stacked parameters [V] of Pareto-Fair v2's disjoint validation links
    (``jaxcc.envs.pareto.VALIDATION_LINKS``): ``overrides`` and ``params`` as in
    ``make_stage_env`` (the realism ranges and feature set of training; the flow slots are the
    validation list's largest flow count, episodes ``max_steps`` steps).  ``coexist``: the links
    with a CUBIC neighbour instead (``COEXIST_VALIDATION_LINKS``; the neighbour in every episode,
    in the last of ``COEXIST_VALIDATION_FLOWS`` slots)."""
    over = {**dict(overrides or {}), "num_flows": pareto.VALIDATION_FLOWS, "max_steps": int(max_steps)}
    if coexist:
        over.update(num_flows=pareto.COEXIST_VALIDATION_FLOWS, competitor="cubic", p_competitor=1.0,
                    competitor_start_s=pareto.COEXIST_VALIDATION_START_S)
        env, p0 = make_env("pareto", **over)
        return env, pareto.coexist_validation_params(env_base.replace_params(p0, params))
    env, p0 = make_env("pareto", **over)
    return env, pareto.validation_params(env_base.replace_params(p0, params))


def stage_fns(se: StageEnv) -> tuple[Callable, Callable]:
    """``reset(key) -> (obs [F,T,D], state)`` and ``step(key, state, a) -> (obs, state, r [F],
    term [F], trunc [F], valid [F], final_obs [F,T,D], expert [F], r_alg1 [F], action [F])``
    (``r_alg1``: Algorithm 1's reward alone, which calls the expert; ``action``: the action in
    force during the step, ``a`` itself unless a flow on its own clock holds an earlier one,
    ``jaxcc.envs.base``: what a transition stores).

    ``expert`` is the MI-level BBR's action for the next step (``jaxcc.agents.pareto.expert``,
    updated from the env's ``delivery_rate``, ``rtt_mean`` and ``rate``; reset with the link).
    The adapter's state is ``{"env": env state, "win": None, "expert": MI-BBR state}``.
    """
    env, params = se.env, se.params
    f = se.num_flows

    def reset(key):
        obs, st = env.reset(key, params)
        # "win" is always None (the environment keeps the feature window now); the key stays so
        # that checkpoints written before keep their tree structure.
        return obs.astype(jnp.float32), {"env": st, "win": None, "expert": expert_lib.init(f, se.mi_rtts)}

    def step(key, st, a):
        obs, env_st, r, term, trunc, info = env.step(key, st["env"], a, params)
        r = jnp.broadcast_to(jnp.asarray(r, jnp.float32), (f,))
        term = jnp.broadcast_to(term, (f,))
        trunc = jnp.broadcast_to(trunc, (f,))
        done_link = (term | trunc)[0]
        valid = jnp.broadcast_to(info["active"], (f,))
        ex = expert_lib.update(st["expert"], info["delivery_rate"], info["rtt_mean"], valid)
        expert = expert_lib.action(ex, info["rate"], se.a_range)
        ex = jax.tree.map(lambda a0, b: jnp.where(done_link, a0, b), expert_lib.init(f, se.mi_rtts), ex)
        new = {"env": env_st, "win": None, "expert": ex}  # "win": kept for the checkpoint tree (see reset)
        # The expert plays after a step whose Algorithm 1 reward was low (Algorithm 3 line 3); the
        # training-only link-wide terms of Pareto-Fair v2 do not call it (a BBR expert cannot fix
        # an unfair share, and a fairness penalty below the threshold would hand it most steps).
        r_alg1 = jnp.broadcast_to(jnp.asarray(info["alg1_reward"], jnp.float32), (f,))
        return (obs.astype(jnp.float32), new, r, term, trunc, valid, info["final_obs"].astype(jnp.float32), expert,
                r_alg1, info["action"])

    return reset, step
