"""Segmented prioritized replay for actor-critic (Pareto §IV, eqs. 2, 6, 9), on device.

A pure, flashbax-shaped buffer: ``init`` / ``add`` / ``sample`` / ``update_priorities`` are pure
functions of a ``ReplayState`` pytree, so they run inside ``jit``/``lax.scan`` and the whole
buffer (transitions, priorities, segment cursors) is checkpointed with the rest of the run.

Why not flashbax: its prioritized buffer has one circular storage; Pareto needs *segments*
("after each stage, we increase the size of the experience replay buffer by a fixed size.
Experiences from the new stage are only added to the new extension, and new experiences will
only replace old experiences from the same stage", §IV) that are all sampled together under one
priority distribution.  Preallocating every stage's segment up front keeps shapes static, and the
O(N) cumsum + searchsorted sampler is exact and cheap for the buffer sizes used here (<= 1e6).

Sampling follows Schaul et al. (Pareto's [30]): ``P(i) = p_i^α / Σ_k p_k^α`` over filled slots
(empty slots have ``p = 0``), stratified over ``B`` equal slices of the mass.  Importance weights
are eq. (6) with the exponent's sign as in [30], ``w_i = (N·P(i))^{-β} / max_k w_k`` (the
paper's typeset ``+β`` would up-weight the *most* over-sampled samples, the opposite of the
correction it describes).  Priorities after a gradient step are eq. (2)/(9)::

    p_i ← tanh(δ_i / c + J_i) + 1 + ζ        (c = 10, ζ = 1e-5)

where δ_i is sample i's critic loss and J_i its actor loss.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class ReplayState:
    """Buffer contents.  ``data`` leaves are ``[N, ...]`` with ``N = sum(segment sizes)``."""

    data: Any
    priority: jax.Array  # [N] float32, 0 for empty slots
    seg_start: jax.Array  # [S] int32 first slot of each segment
    seg_size: jax.Array  # [S] int32
    seg_pos: jax.Array  # [S] int32 next write offset inside the segment
    seg_count: jax.Array  # [S] int32 filled slots
    max_priority: jax.Array  # largest priority ever assigned (new samples start there)


def init(example: Any, segment_sizes: Sequence[int]) -> ReplayState:
    """An empty buffer with one segment per stage, shaped like ``example`` (one transition)."""
    sizes = [int(s) for s in segment_sizes]
    if not sizes or min(sizes) <= 0:
        raise ValueError(f"replay: every segment needs a positive size, got {sizes}")
    n = sum(sizes)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    data = jax.tree.map(lambda x: jnp.zeros((n,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return ReplayState(
        data=data, priority=jnp.zeros((n,), jnp.float32),
        seg_start=jnp.asarray(starts, jnp.int32), seg_size=jnp.asarray(sizes, jnp.int32),
        seg_pos=jnp.zeros((len(sizes),), jnp.int32), seg_count=jnp.zeros((len(sizes),), jnp.int32),
        max_priority=jnp.ones((), jnp.float32))


def add(state: ReplayState, batch: Any, valid: jax.Array, segment, *, new_priority_max: bool = True) -> ReplayState:
    """Writes the ``valid`` rows of ``batch`` (leaves ``[B, ...]``) into ``segment`` only.

    Old segments are never touched ("freeze old samples", Algorithm 2 lines 4 and 9); inside its
    own segment a stage overwrites its oldest samples first.  New samples get the largest
    priority seen so far (or 1, the paper's initial value, with ``new_priority_max=False``) so
    each is replayed at least about once.
    """
    valid = valid.astype(jnp.int32)
    start, size = state.seg_start[segment], state.seg_size[segment]
    pos = state.seg_pos[segment]
    offs = jnp.cumsum(valid) - 1
    slot = start + jnp.mod(pos + offs, size)
    n = state.priority.shape[0]
    slot = jnp.where(valid > 0, slot, n)  # out of range: dropped by the scatter
    data = jax.tree.map(lambda buf, x: buf.at[slot].set(x.astype(buf.dtype), mode="drop"), state.data, batch)
    p0 = jnp.where(new_priority_max, state.max_priority, 1.0)
    priority = state.priority.at[slot].set(p0, mode="drop")
    k = jnp.sum(valid)
    return state.replace(
        data=data, priority=priority,
        seg_pos=state.seg_pos.at[segment].set(jnp.mod(pos + k, size)),
        seg_count=state.seg_count.at[segment].set(jnp.minimum(state.seg_count[segment] + k, size)))


def size(state: ReplayState) -> jax.Array:
    return jnp.sum(state.seg_count)


def priority_alpha(state: ReplayState, alpha) -> jax.Array:
    """``p_i^α`` per slot ``[N]``, 0 for an empty slot (the unnormalised P(i) of eq. (5))."""
    return jnp.where(state.priority > 0, jnp.power(jnp.maximum(state.priority, 1e-30), alpha), 0.0)


def segment_mask(state: ReplayState, segment) -> jax.Array:
    """``[N]`` bool: the slots of ``segment``."""
    slot = jnp.arange(state.priority.shape[0])
    return (slot >= state.seg_start[segment]) & (slot < state.seg_start[segment] + state.seg_size[segment])


def segment_share(state: ReplayState, segment, alpha) -> jax.Array:
    """``Σ_segment p^α / Σ p^α``: the share of a ``sample`` minibatch expected from ``segment``."""
    pa = priority_alpha(state, alpha)
    return jnp.sum(jnp.where(segment_mask(state, segment), pa, 0.0)) / jnp.maximum(jnp.sum(pa), 1e-30)


def sample(state: ReplayState, key: jax.Array, batch_size: int, alpha, beta):
    """Draws ``batch_size`` indices with ``P(i) ∝ p_i^α`` (stratified).

    Returns:
      (batch, idx [B], weights [B] eq. (6) normalised by the batch maximum, probs [B]).
    """
    pa = priority_alpha(state, alpha)
    cdf = jnp.cumsum(pa)
    total = cdf[-1]
    u = (jnp.arange(batch_size, dtype=jnp.float32) + jax.random.uniform(key, (batch_size,))) / batch_size
    idx = jnp.searchsorted(cdf, u * total, side="right")
    idx = jnp.clip(idx, 0, pa.shape[0] - 1)
    # Float rounding at a slice edge can land on an empty slot: step back to a filled one.
    idx = jnp.where(pa[idx] > 0, idx, jnp.argmax(pa > 0))
    probs = pa[idx] / jnp.maximum(total, 1e-30)
    n = jnp.maximum(size(state), 1).astype(jnp.float32)
    w = jnp.power(n * probs, -beta)
    w = w / jnp.max(w)
    batch = jax.tree.map(lambda x: x[idx], state.data)
    return batch, idx, w, probs


def sample_split(state: ReplayState, key: jax.Array, batch_size: int, alpha, beta, *, segment: int, n_segment: int):
    """``sample`` with a fixed split: ``n_segment`` of the ``batch_size`` rows from ``segment``
    and the rest from every other segment, each part with ``P(i) ∝ p_i^α`` within it.

    Jaxcc's (the paper samples every segment by priority alone, ``sample``): it sets how much of
    each minibatch a small segment gets, such as the online one beside the offline stages'
    (``jaxcc.online.pareto``).  The importance weights correct for the split as eq. (6) corrects
    for the priorities: ``P(i) = (n_part / batch_size) · p_i^α / Σ_part p^α``,
    ``w_i = (N·P(i))^{−β} / max_j w_j``.  Both parts need a filled slot.

    Returns:
      (batch, idx [B], weights [B], probs [B]), as ``sample``.
    """
    n_new, n_old = int(n_segment), int(batch_size) - int(n_segment)
    if not 0 < n_new < int(batch_size):
        raise ValueError(f"n_segment must be in (0, {batch_size}), got {n_segment}")
    inside = segment_mask(state, segment)
    k_new, k_old = jax.random.split(key)
    parts = [sample(state.replace(priority=jnp.where(keep, state.priority, 0.0)), k, n, alpha, beta)
             for keep, k, n in ((inside, k_new, n_new), (~inside, k_old, n_old))]
    probs = jnp.concatenate([parts[0][3] * (n_new / batch_size), parts[1][3] * (n_old / batch_size)])
    n = jnp.maximum(size(state), 1).astype(jnp.float32)
    w = jnp.power(n * probs, -beta)
    w = w / jnp.max(w)
    batch = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), parts[0][0], parts[1][0])
    return batch, jnp.concatenate([parts[0][1], parts[1][1]]), w, probs


def pareto_priority(critic_loss: jax.Array, actor_loss: jax.Array, c, zeta) -> jax.Array:
    """Eq. (2)/(9): ``tanh(δ_i / c + J_i) + 1 + ζ``."""
    return jnp.tanh(critic_loss / c + actor_loss) + 1.0 + zeta


def update_priorities(state: ReplayState, idx: jax.Array, priority: jax.Array) -> ReplayState:
    return state.replace(priority=state.priority.at[idx].set(priority),
                         max_priority=jnp.maximum(state.max_priority, jnp.max(priority)))
