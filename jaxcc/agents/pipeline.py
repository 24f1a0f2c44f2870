"""What every agent hands to ``jaxcc.train``: its stages and the pure pieces of a run."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class Stage:
    index: int
    name: str  # e.g. bootstrap | advance | fairness
    label: str  # the checkpoint name, e.g. Pareto-Bootstrap
    num_updates: int
    num_chunks: int


@dataclasses.dataclass
class Trainer:
    """Pure pieces of a staged run; ``jaxcc.train`` is the loop that drives them.  Agents may
    subclass it to carry more (e.g. their update or evaluation functions)."""

    config: Any
    stages: list[Stage]
    chunk_updates: int
    actor_spec: dict
    init: Callable  # key -> state (at the start of stage 0)
    enter_stage: Callable  # (state, stage index) -> state with that stage's envs
    run_chunk: Callable  # (state, stage index) -> (state, metrics [chunk_updates])
    template: Callable  # stage index -> abstract state (ShapeDtypeStructs) for restore
    # state -> state, run once when a stage's last chunk is done, before its stage checkpoint and
    # export (e.g. Pareto swaps in its selected snapshot).  None: the state is kept as it is.
    finish_stage: Callable | None = dataclasses.field(default=None, kw_only=True)


def strong(tree):
    """Drop weak types so a state from ``init`` and one from ``run_chunk`` share one compiled shape."""
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=jnp.asarray(x).dtype) + jnp.zeros((), jnp.asarray(x).dtype), tree)


def flat(params: dict) -> dict:
    """``{layer: {tensor: x}}`` → ``{"layer.tensor": x}`` (the policy file's tensor names)."""
    return {f"{layer}.{name}": v for layer, d in params.items() for name, v in d.items()}


def actor_tensors(state) -> dict[str, np.ndarray]:
    """The policy-file tensors of ``state["agent"]["actor"]`` (live or restored), float32 numpy.

    Every agent keeps its actor there as ``{layer: {tensor: array}}`` named after the policy
    file's layers, so this one function serves every agent (``jaxcc.export``)."""
    return {k: np.asarray(v, np.float32) for k, v in flat(jax.device_get(state["agent"]["actor"])).items()}
