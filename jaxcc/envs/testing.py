"""Privileged fixed policies for tests and sanity checks (they read the true link capacity).

``oracle_policy(name, mult)`` returns ``policy(key, obs, state, params) -> action`` that steers
each flow's sending rate to ``mult × capacity / active flows`` using the env's own action space
(e.g. ``mult = 0.95`` is "hold near capacity", ``mult = 3`` is "send at 3× capacity").
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxcc import units
from jaxcc.envs import deepcc, eagle, mocc, pareto
from jaxcc.sim import core


def _target(state, mult):
    t = state.sim.tick.astype(jnp.float32) * state.link.dt
    cap = core.capacity_at(state.link, t)
    n = jnp.maximum(jnp.sum(core.flow_active(state.link, t)), 1)
    f = state.rate.shape[-1]
    return jnp.full((f,), mult * cap / n)


def oracle_policy(name: str, mult):
    base = name.split("-")[0]

    def policy(key, obs, state, params):
        tgt = _target(state, mult)
        x = state.rate
        if base == "aurora":
            alpha = params.alpha
            return jnp.where(tgt >= x, (tgt / x - 1.0) / alpha, -(x / tgt - 1.0) / alpha)
        if base == "pareto":
            return jnp.clip(tgt / x - 1.0, pareto.A_LOW, pareto.A_HIGH)
        if base == "eagle":
            m = jnp.asarray(eagle.MULTIPLIERS, jnp.float32)
            err = jnp.abs(jnp.log(x[:, None] * m[None, :]) - jnp.log(tgt[:, None]))
            return jnp.argmin(err, axis=-1).astype(jnp.int32)
        if base == "mocc":
            want = tgt * state.link.rtt  # bytes in flight for the target rate
            d = jnp.asarray(mocc.CWND_DELTAS_PKTS, jnp.float32) * units.MSS
            k = jnp.asarray(mocc.CWND_MULTS, jnp.float32)
            err = jnp.abs(state.cwnd[:, None] * k[None, :] + d[None, :] - want[:, None])
            return jnp.argmin(err, axis=-1).astype(jnp.int32)
        if base == "deepcc":
            return deepcc.rate_to_action(tgt, params.bound_mbps, params.low_mbps)
        raise ValueError(name)

    return policy
