"""Orbax checkpoints that hold everything needed to resume a run exactly.

Layout of a run's ``workdir``::

    checkpoints/<update>/{state,meta}   rolling checkpoints (CheckpointManager, last K kept)
    stages/<Label>/{state,meta.json,spec.json}   one per finished stage (Pareto-Bootstrap, ...)
    stages/<Label>.safetensors          the stage's exported actor (jaxcc.export)

``state`` is the whole training pytree (parameters, target parameters, optimizer states, the
replay buffer with priorities and segment cursors, environment states, RNG keys, counters);
``meta`` is JSON (stage index, chunks done in the stage, config).  Saves are synchronous, and
orbax writes to a temporary directory that it renames when complete, so a run killed with
SIGKILL leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp


def _pack(tree):
    """Orbax refuses zero-size arrays (e.g. an empty goal vector [F, 0]): store a 1-element stand-in."""
    import numpy as np

    return jax.tree.map(lambda x: np.zeros((1,), x.dtype) if x.size == 0 else x, tree)


def _pack_template(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((1,), x.dtype) if x.size == 0 else x, tree)


def _unpack(restored, template):
    import jax.numpy as jnp

    def fix(r, t):
        if t.size == 0:
            z = jnp.zeros(t.shape, t.dtype)
            sh = getattr(t, "sharding", None)
            return jax.device_put(z, sh) if sh is not None else z
        return r

    return jax.tree.map(fix, restored, template)


class RunCheckpoints:
    """Rolling checkpoints of one run."""

    def __init__(self, workdir: str, keep: int = 2):
        self.dir = os.path.abspath(os.path.join(workdir, "checkpoints"))
        opts = ocp.CheckpointManagerOptions(max_to_keep=keep, enable_async_checkpointing=False, create=True)
        self.mgr = ocp.CheckpointManager(self.dir, options=opts, item_names=("state", "meta"))

    def latest(self) -> int | None:
        return self.mgr.latest_step()

    def save(self, step: int, state: Any, meta: dict) -> None:
        self.mgr.save(int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(_pack(state)),
                                                         meta=ocp.args.JsonSave(meta)), force=True)
        self.mgr.wait_until_finished()

    def meta(self, step: int) -> dict:
        return dict(self.mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])

    def restore(self, step: int, template: Any) -> Any:
        out = self.mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(_pack_template(template))))
        return _unpack(out["state"], template)

    def close(self):
        self.mgr.close()


def save_stage(path: str, state: Any, meta: dict, spec: dict | None = None) -> None:
    """A stage checkpoint: the full state plus JSON meta (and the actor's policy spec)."""
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(os.path.join(path, "state"), _pack(state), force=True)
    ckptr.wait_until_finished()
    _write_json(os.path.join(path, "meta.json"), meta)
    if spec is not None:
        _write_json(os.path.join(path, "spec.json"), spec)


def restore_stage(path: str, template: Any) -> Any:
    """Restore a stage checkpoint's ``state`` (``save_stage``) into the structure of ``template``
    (e.g. ``trainer.template(stage)``: optimizer states and buffers keep their types)."""
    out = ocp.StandardCheckpointer().restore(os.path.abspath(os.path.join(path, "state")), _pack_template(template))
    return _unpack(out, template)


def _write_json(path: str, obj: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, default=str)
    os.replace(tmp, path)


def restore_untyped(path: str) -> Any:
    """Restore a saved state without a template (nested dicts of numpy arrays)."""
    ckptr = ocp.StandardCheckpointer()
    meta = ckptr.metadata(path)
    tree = getattr(meta, "item_metadata", meta)
    tree = getattr(tree, "tree", tree)
    abstract = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype), tree,
                            is_leaf=lambda m: hasattr(m, "shape") and hasattr(m, "dtype"))
    return ckptr.restore(path, abstract)
