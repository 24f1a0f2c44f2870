"""Two reference senders: a constant rate (``fixed:MBPS``) and a capacity-aware ``oracle``.

The oracle reads the privileged ``capacity`` and ``n_active`` fields of the observation and sends
exactly its fair share, ``c(t)/n``: full utilisation, no self-inflicted queue, a perfectly fair
split.  It is the upper bound the learned controllers are compared against, not a deployable
algorithm.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxcc.sim.controller import Controller, ControllerParams, TickObs, rate_only
from jaxcc.units import MBPS


def _fixed_init(cp: ControllerParams):
    return jnp.zeros((), jnp.float32)


def _fixed_act(state, cp: ControllerParams):
    return rate_only(cp.fixed.mbps * MBPS)


def _fixed_update(state, obs: TickObs, cp: ControllerParams):
    return state


FIXED = Controller("fixed", _fixed_init, _fixed_act, _fixed_update)


def _oracle_init(cp: ControllerParams):
    return jnp.zeros((), jnp.float32)  # the share to send next tick (0 until the first tick ends)


def _oracle_act(share, cp: ControllerParams):
    return rate_only(share)


def _oracle_update(share, obs: TickObs, cp: ControllerParams):
    return obs.capacity / jnp.maximum(obs.n_active, 1).astype(obs.capacity.dtype)


ORACLE = Controller("oracle", _oracle_init, _oracle_act, _oracle_update)
