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

Paths: a run directory is a local path or a URI (``gs://bucket/runs/x``); every file in it goes
through ``etils.epath`` (what orbax uses), and only a local path is made absolute
(``run_path``), so ``gs://b/x`` never becomes a local ``./gs:/b/x``.  Orbax itself writes arrays
with tensorstore, whose kvstore spec (orbax ``tensorstore_utils``) is the ``gcs`` driver for
``gs://`` and the ``file`` driver for absolute local paths; any other scheme is refused here with a
one-line error (``check_workdir``).

Multi-host (``jax.distributed``): every process calls ``save``/``restore``/``save_stage`` (orbax's
saves are collective: each process writes the shards it holds and the primary process writes the
metadata and commits); the JSON files of a stage are written by process 0 only.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp
from etils import epath

# Schemes orbax-checkpoint can write arrays to (tensorstore kvstore drivers it builds specs for).
ORBAX_SCHEMES = ("gs://",)


def is_uri(path) -> bool:
    """``scheme://...`` (``gs://b/x``, ``memory://x``), as opposed to a local path."""
    return "://" in os.fspath(path)


def run_path(path) -> epath.Path:
    """An ``epath.Path`` for a run-directory path: local paths are made absolute, URIs kept as given."""
    s = os.fspath(path)
    if not is_uri(s):
        return epath.Path(os.path.abspath(s))
    if s.startswith("gs://"):
        _gcs_without_listing_cache()
    return path if isinstance(path, epath.Path) else epath.Path(s)


def _gcs_without_listing_cache() -> None:
    """epath reaches ``gs://`` through fsspec's gcsfs, which caches directory listings, while
    orbax writes arrays through tensorstore, behind gcsfs's back: with the cache on, orbax's
    ``exists`` check of a checkpoint it has just written reads a stale listing ("Checkpoint
    directory does not exist: gs://...").  So gcsfs is configured without a listing cache (fsspec's
    config, before epath makes its one cached filesystem; an explicit user setting is kept)."""
    import fsspec.config

    fsspec.config.conf.setdefault("gcs", {}).setdefault("use_listings_cache", False)


def check_workdir(workdir) -> None:
    """Raise ``ValueError`` (one line) for a URI that orbax cannot checkpoint to."""
    s = os.fspath(workdir)
    if is_uri(s) and not s.startswith(ORBAX_SCHEMES):
        raise ValueError(f"workdir {s!r}: orbax-checkpoint writes arrays only to a local path or "
                         f"{', '.join(ORBAX_SCHEMES)} (tensorstore's gcs driver); scheme "
                         f"{s.split('://', 1)[0]}:// is not supported")


def write_text(path, text: str) -> None:
    """Write a small text file (JSON) through epath: atomic rename on local disks, a single
    object write on a bucket (object stores replace an object whole)."""
    path = run_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_uri(path):
        path.write_text(text)
        return
    tmp = path.parent / (path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


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
        self.dir = run_path(workdir) / "checkpoints"
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
        _check_structure(self.dir / str(int(step)) / "state", template)
        out = self.mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(_pack_template(template))))
        return _unpack(out["state"], template)

    def close(self):
        self.mgr.close()


def save_stage(path: str, state: Any, meta: dict, spec: dict | None = None) -> None:
    """A stage checkpoint: the full state plus JSON meta (and the actor's policy spec).

    Collective under ``jax.distributed``: every process calls it; process 0 writes the JSON."""
    path = run_path(path)
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(path / "state", _pack(state), force=True)
    ckptr.wait_until_finished()
    if jax.process_index() == 0:
        _write_json(path / "meta.json", meta)
        if spec is not None:
            _write_json(path / "spec.json", spec)


def restore_stage(path: str, template: Any) -> Any:
    """Restore a stage checkpoint's ``state`` (``save_stage``) into the structure of ``template``
    (e.g. ``trainer.template(stage)``: optimizer states and buffers keep their types)."""
    _check_structure(run_path(path) / "state", template)
    out = ocp.StandardCheckpointer().restore(run_path(path) / "state", _pack_template(template))
    return _unpack(out, template)


class CheckpointMismatch(ValueError):
    """A checkpoint whose state tree is not the one this code builds (e.g. written by another
    jaxcc version, whose agents keep other leaves); one line naming the leaves that differ."""


def _saved_tree(path) -> Any:
    """The saved state's tree of array metadata (shape, dtype) at an item directory (``.../state``).

    Read with the item's handler (``StandardCheckpointHandler.metadata``), not with a
    ``Checkpointer``: a checkpointer's ``metadata`` also reads the *step's* metadata file
    (``<dir>/_CHECKPOINT_METADATA``), which ``CheckpointManager`` writes one level up
    (``checkpoints/<update>/_CHECKPOINT_METADATA``, beside ``state`` and ``meta``), so on a rolling
    checkpoint's ``state`` it logs "Metadata file does not exist" on every resume."""
    tree = ocp.StandardCheckpointHandler().metadata(run_path(path))
    tree = getattr(tree, "item_metadata", tree)
    return getattr(tree, "tree", tree)


def _check_structure(path, template: Any) -> None:
    """Raise ``CheckpointMismatch`` when the saved tree's leaf paths differ from ``template``'s
    (orbax's own error is a many-line dump of both trees)."""
    tree = _saved_tree(path)
    is_leaf = lambda m: hasattr(m, "shape") and hasattr(m, "dtype")  # noqa: E731
    names = lambda t: {jax.tree_util.keystr(k, simple=True, separator="/")  # noqa: E731
                       for k, _ in jax.tree_util.tree_flatten_with_path(t, is_leaf=is_leaf)[0]}
    saved, wanted = names(tree), names(template)
    if saved == wanted:
        return
    only_saved, only_here = sorted(saved - wanted), sorted(wanted - saved)
    show = lambda xs: (", ".join(xs[:4]) + (f" (+{len(xs) - 4} more)" if len(xs) > 4 else "")) or "none"  # noqa: E731
    raise CheckpointMismatch(f"{path}: the checkpoint's state does not match this jaxcc's (written by another "
                             f"version or config?): leaves only in the checkpoint: {show(only_saved)}; only in "
                             f"this version: {show(only_here)}; train in a new --workdir")


def _write_json(path, obj: dict) -> None:
    write_text(path, json.dumps(obj, indent=1, sort_keys=True, default=str))


def restore_untyped(path: str) -> Any:
    """Restore a saved state without a template (nested dicts of arrays on one local device),
    whatever devices and hosts saved it."""
    ckptr = ocp.StandardCheckpointer()
    path = run_path(path)
    tree = _saved_tree(path)
    # Onto this process's first device: a checkpoint saved by other devices or hosts (a pod run,
    # launch/multihost_local.sh) restores anywhere (orbax refuses to reuse the saved shardings).
    one = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    abstract = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=one), tree,
                            is_leaf=lambda m: hasattr(m, "shape") and hasattr(m, "dtype"))
    return ckptr.restore(path, abstract)
