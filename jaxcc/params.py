"""Plain parameter dicts ``{layer: {tensor: array}}``: the one home of their initialisation and
of the finiteness check every agent reports as ``params_finite``.

Every agent keeps its networks as nested dicts named after the policy file's tensors
(``jaxcc.agents``), and the policy file's random policies draw the same shapes with numpy.

Glorot (Xavier) uniform, Glorot & Bengio 2010, eq. 16: ``W ~ U[-l, l]`` with
``l = gain * sqrt(6 / (fan_in + fan_out))``.  ``jax.nn.initializers.glorot_uniform`` draws the
same distribution, and for gain 1 and most 2-D shapes the same bits, but it scales a U[-1, 1]
draw where this draws U[-l, l] directly: the last float bits differ for a gain ≠ 1 and for some
shapes (64 × 21), which would change every seeded training run and the shipped policies'
reproduction.  So the formula is kept here, once.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np


def glorot_limit(fan_in: int, fan_out: int, gain: float = 1.0) -> float:
    """``l = gain · sqrt(6 / (fan_in + fan_out))``, the half-width of Glorot's uniform."""
    return gain * math.sqrt(6.0 / (fan_in + fan_out))


def glorot_uniform(key, shape, fan_in: int | None = None, fan_out: int | None = None,
                   gain: float = 1.0) -> jax.Array:
    """A float32 ``shape`` array drawn from U[-l, l] (``glorot_limit``); the fans default to a
    2-D kernel's ``shape[0]`` (in) and ``shape[1]`` (out)."""
    lim = glorot_limit(shape[0] if fan_in is None else fan_in, shape[1] if fan_out is None else fan_out, gain)
    return jax.random.uniform(key, shape, jnp.float32, -lim, lim)


def glorot_uniform_np(rng: np.random.Generator, shape, fan_in: int, fan_out: int,
                      gain: float = 1.0) -> np.ndarray:
    """The same draw with a numpy generator (the policy file's random policies, which need no JAX)."""
    lim = glorot_limit(fan_in, fan_out, gain)
    return rng.uniform(-lim, lim, size=shape).astype(np.float32)


def all_finite(tree) -> jax.Array:
    """A scalar bool: every leaf of ``tree`` is finite (no NaN, no ±inf)."""
    return jnp.all(jnp.asarray([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))
