"""A uniform replay ring for the off-policy agents (MOCC's envelope Q-learning, DeepCC's DDPG).

A buffer is a dict of ``[capacity, ...]`` arrays (``replay_init``; each agent's ``replay_rows``
names its fields) plus ``ptr`` (the next row to write) and ``size`` (rows filled).  Pure and
jittable.  No library listed for this project offers a jittable buffer; Pareto's segmented
prioritised replay (``jaxcc.agents.pareto``) is a different design.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def replay_init(capacity: int, rows: dict[str, tuple[tuple[int, ...], Any]]) -> dict:
    """An empty ring of ``capacity`` rows: a zero ``[capacity, *shape]`` array of ``dtype`` per
    field ``name: (shape, dtype)`` of ``rows``, and ``ptr`` = ``size`` = 0."""
    buf = {k: jnp.zeros((capacity,) + tuple(shape), dtype) for k, (shape, dtype) in rows.items()}
    return {**buf, "ptr": jnp.zeros((), jnp.int32), "size": jnp.zeros((), jnp.int32)}


def replay_add(buf: dict, tr: dict, valid: jax.Array) -> dict:
    """Append the rows of ``tr`` (leading axis B) where ``valid``; a ring, oldest overwritten."""
    cap = buf["done"].shape[0]
    pos = buf["ptr"] + jnp.cumsum(valid.astype(jnp.int32)) - 1
    idx = jnp.where(valid, pos % cap, cap)  # cap: out of bounds, dropped
    out = {k: buf[k].at[idx].set(tr[k].astype(buf[k].dtype), mode="drop") for k in tr}
    n = jnp.sum(valid.astype(jnp.int32))
    out["ptr"] = (buf["ptr"] + n) % cap
    out["size"] = jnp.minimum(buf["size"] + n, cap)
    return out


def replay_sample(buf: dict, key, n: int) -> dict:
    """``n`` rows drawn uniformly (with replacement) from the filled part."""
    idx = jax.random.randint(key, (n,), 0, jnp.maximum(buf["size"], 1))
    return {k: v[idx] for k, v in buf.items() if k not in ("ptr", "size")}
