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


# ----------------------------------------------------------------------------- devices

DATA_AXIS = "data"  # the 1-D device mesh's one axis (``jaxcc.training.mesh.make_mesh``)


def mesh_size(mesh) -> int:
    """Devices on ``mesh`` (1 when there is none)."""
    return 1 if mesh is None else int(mesh.devices.size)


def data_sharding(mesh, axis: int = 0) -> Callable:
    """``x -> x`` constrained to be split over ``mesh``'s ``'data'`` axis along its ``axis``.

    Agents call it on their batches inside jitted updates (environment lanes, rollout batches,
    replay minibatches), so the per-example work of a batch is divided among the devices and
    XLA all-reduces the gradients: ``jax.lax.with_sharding_constraint`` with
    ``NamedSharding(mesh, P(None, ..., 'data'))``.  It maps over a pytree; an array whose
    ``axis`` does not exist or is not a multiple of the device count is left as it is, and so is
    everything when ``mesh`` is ``None`` or has one device (the identity).  Agents check their
    batch sizes up front (``require_multiple``) so that a leading axis that cannot be split is an
    error naming its config field, not a silent replication.
    """
    n = mesh_size(mesh)
    if n == 1:
        return lambda x: x
    from jax.sharding import NamedSharding, PartitionSpec as P

    sh = NamedSharding(mesh, P(*([None] * axis), DATA_AXIS))

    def one(x):
        if jnp.ndim(x) > axis and jnp.shape(x)[axis] % n == 0:
            return jax.lax.with_sharding_constraint(x, sh)
        return x

    return lambda tree: jax.tree.map(one, tree)


# The state's subtrees whose every leaf has the environment-lane axis leading: the agents'
# contract (``jaxcc.agents``); all five keep their per-lane arrays under ``env`` only (rollouts and
# replay minibatches live inside an update, never in the state; replay buffers are replicated).
LANE_KEYS = ("env",)


def make_mesh(devices=None):
    """The 1-D ``'data'`` mesh over ``devices`` (default: ``jax.devices()``, all processes')."""
    from jax.sharding import Mesh

    return Mesh(np.asarray(jax.devices() if devices is None else list(devices)), (DATA_AXIS,))


def state_shardings(state, mesh):
    """The lane subtrees (``LANE_KEYS``) split over 'data' on their leading axis; everything else
    replicated (``jaxcc.training.sweep`` shifts these one axis right for its member axis).

    Every leaf under a lane key must have one common lane count, a multiple of the device count:
    anything else is a one-line ``ValueError`` (a leaf replicated by accident would silently
    undo the split)."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    n = mesh.devices.size
    rep = NamedSharding(mesh, P())
    lanes = NamedSharding(mesh, P(DATA_AXIS))
    out = {k: jax.tree.map(lambda _: rep, v) for k, v in state.items() if k not in LANE_KEYS}
    for k in LANE_KEYS:
        if k not in state:
            continue
        leaves = jax.tree_util.tree_flatten_with_path(state[k])[0]
        counts = {jax.tree_util.keystr(p): (x.shape[0] if len(x.shape) else None) for p, x in leaves}
        first = next(iter(counts.values()), None)
        for path, c in counts.items():
            if c is None or c != first or c % n:
                raise ValueError(f"state[{k!r}]{path}: {c} lanes on its leading axis (other leaves: {first}); "
                                 f"every lane leaf needs the same lane count, a multiple of the {n} devices "
                                 f"(config.num_envs)")
        out[k] = jax.tree.map(lambda _: lanes, state[k])
    return out


def require_multiple(mesh, fields: dict[str, int], what: str = "") -> None:
    """One-line ``ValueError`` naming the first config field whose value (an axis the agent splits
    over the devices) is not a multiple of the device count.  ``fields``: {``config.a.b``: value}
    (a derived size may name its formula, e.g. ``num_envs·ppo.num_steps/ppo.num_minibatches``)."""
    n = mesh_size(mesh)
    for name, v in fields.items():
        if int(v) % n:
            raise ValueError(f"{name}={int(v)} must be a multiple of the {n} devices (split over the 'data' mesh"
                             f"{'; ' + what if what else ''})")


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
