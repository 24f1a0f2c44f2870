"""A training checkpoint -> policy file (the code of ``python -m jaxcc.export --checkpoint=DIR --out=FILE``).

The one export path for every algorithm (``config.algo``): the agent gives its actor's spec
(``trainer.actor_spec``, also stored as a stage checkpoint's ``spec.json``); its flat tensors
are the state's actor (``jaxcc.agents.pipeline.actor_tensors``: every agent keeps its actor as
``state["agent"]["actor"]`` named after the file's layers); this module writes the file, with the stage's
label (``Pareto-Fair``, ``Aurora``, ``Eagle``, ...) as the spec's ``stage``.  The training loop
calls ``export_state`` at the end of every stage.

``DIR`` may be a run's workdir (its last finished stage is exported: the one with the highest
stage index, e.g. Pareto-Fair when a Pareto run is complete; before any stage finished, the
newest rolling checkpoint), a stage checkpoint (``<workdir>/stages/Pareto-Advance``) or a
rolling checkpoint (``<workdir>/checkpoints/<n>``).  The file is the shared ``jaxcc-policy``
safetensors format (``jaxcc.policyfile``): architecture, sizes, feature definition and scaling,
action mapping, ``mi_rtts`` and version live in its spec; reloading it reproduces the training
actor's actions exactly (same forward function).

``checkpoint_policies(path)`` lists the exported stage policies of a run in stage order (what
``jaxcc.evaluate --checkpoint=DIR`` evaluates), exporting a stage whose file is missing.
"""

from __future__ import annotations

import json
import os
import numpy as np


# Pareto's stages in training order: the order of stage checkpoints whose meta.json is missing.
PARETO_STAGE_ORDER = ("Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair")


def export_state(state, spec: dict, out: str, *, stage_label: str | None = None) -> str:
    """Write the actor of a training state (live or restored) as a policy file.

    Args:
      state: the training state (``state["agent"]["actor"]``).
      spec: the actor's policy-file spec (``trainer.actor_spec``).
      out: the ``.safetensors`` path to write (a local path or a URI such as ``gs://b/x.safetensors``).
      stage_label: written as the spec's ``stage`` (e.g. ``Pareto-Fair``).
    """
    from jaxcc import policyfile
    from jaxcc.agents import pipeline

    tensors = pipeline.actor_tensors(state)
    spec = dict(spec)
    if stage_label:
        spec["stage"] = stage_label
    from jaxcc.training import checkpointing

    if not checkpointing.is_uri(out):
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        policyfile.save(out, spec, tensors)
        return out
    # A URI (gs://...): validate and serialize locally, then write the bytes through epath.
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        local = os.path.join(tmp, "policy.safetensors")
        policyfile.save(local, spec, tensors)
        dst = checkpointing.run_path(out)
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(local, "rb") as f:
            dst.write_bytes(f.read())
    return out


def _read_json(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _stage_key(stages_dir: str, label: str) -> tuple[int, str]:
    """Sort key of a stage checkpoint: its meta.json stage index (Pareto's order if absent)."""
    meta = _read_json(os.path.join(stages_dir, label, "meta.json"))
    try:
        return int(meta["stage"]), label
    except (KeyError, TypeError, ValueError):
        return (PARETO_STAGE_ORDER.index(label) if label in PARETO_STAGE_ORDER else 99), label


def _stage_labels(stages_dir: str) -> list[str]:
    """The stage checkpoints under ``<workdir>/stages``, in stage order."""
    if not os.path.isdir(stages_dir):
        return []
    labels = [d for d in os.listdir(stages_dir) if os.path.isfile(os.path.join(stages_dir, d, "spec.json"))]
    return [lab for _, lab in sorted(_stage_key(stages_dir, lab) for lab in labels)]


def _find(ckpt: str) -> tuple[str, str, str | None]:
    """(state dir, spec json path, stage label) for any accepted checkpoint path."""
    ckpt = os.path.abspath(ckpt)
    if os.path.isfile(os.path.join(ckpt, "spec.json")) and os.path.isdir(os.path.join(ckpt, "state")):
        return os.path.join(ckpt, "state"), os.path.join(ckpt, "spec.json"), os.path.basename(ckpt)
    labels = _stage_labels(os.path.join(ckpt, "stages"))
    if labels:  # the last finished stage
        return _find(os.path.join(ckpt, "stages", labels[-1]))
    # A rolling checkpoint: <workdir>/checkpoints/<n>[/state] or <workdir>/checkpoints.
    roll = ckpt
    if os.path.isdir(os.path.join(roll, "checkpoints")):
        roll = os.path.join(roll, "checkpoints")
    if os.path.basename(roll) == "checkpoints":
        steps = sorted((int(d) for d in os.listdir(roll) if d.isdigit()), reverse=True)
        if not steps:
            raise ValueError(f"{ckpt}: no checkpoints found")
        roll = os.path.join(roll, str(steps[0]))
    if os.path.isdir(os.path.join(roll, "state")):
        config_path = os.path.join(os.path.dirname(os.path.dirname(roll)), "config.json")
        return os.path.join(roll, "state"), config_path, None
    raise ValueError(f"{ckpt}: not a jaxcc checkpoint (expected a run workdir, a stages/<Label> dir "
                     f"or checkpoints/<n>)")


def load_checkpoint_actor(ckpt: str) -> tuple[dict, dict[str, np.ndarray], str | None]:
    """(spec, tensors, stage label) of the actor stored in a checkpoint (``spec["stage"]`` is
    the label when there is one)."""
    from jaxcc import agents
    from jaxcc.training import checkpointing
    from jaxcc.agents import pipeline

    state_dir, spec_path, label = _find(ckpt)
    state = checkpointing.restore_untyped(state_dir)
    if spec_path.endswith("spec.json"):
        with open(spec_path) as f:
            spec = json.load(f)
    else:  # rolling checkpoint: rebuild the spec from the run's config
        import ml_collections

        with open(spec_path) as f:
            cfg = ml_collections.ConfigDict(json.load(f))
        spec = agents.make_train(cfg).actor_spec
    tensors = pipeline.actor_tensors(state)
    if label:
        spec = {**spec, "stage": label}
    return spec, tensors, label


def checkpoint_policies(path: str) -> list[tuple[str, str]]:
    """(label, policy file) pairs of a checkpoint path, in stage order.

    ``path`` is a run's workdir (``<workdir>/stages/Pareto-Bootstrap.safetensors`` → label
    ``Pareto-Bootstrap``, the paper's Fig. 3 names; a stage checkpoint without its file is
    exported now), a single stage directory, a directory of ``.safetensors`` files, or one
    policy file.
    """
    from jaxcc import policyfile

    path = os.path.abspath(path)
    if os.path.isfile(path):
        return [(os.path.splitext(os.path.basename(path))[0], path)]
    if os.path.isfile(os.path.join(path, "spec.json")):  # one stage checkpoint
        stages, labels = os.path.dirname(path), [os.path.basename(path)]
    else:
        stages = os.path.join(path, "stages")
        labels = _stage_labels(stages)
    out = []
    for lab in labels:
        f = os.path.join(stages, lab + ".safetensors")
        if not os.path.isfile(f):
            spec, tensors, _ = load_checkpoint_actor(os.path.join(stages, lab))
            policyfile.save(f, spec, tensors)
        out.append((lab, f))
    if not out and os.path.isdir(path):
        out = [(os.path.splitext(n)[0], os.path.join(path, n)) for n in sorted(os.listdir(path))
               if n.endswith(".safetensors")]
    if not out:
        raise ValueError(f"--checkpoint {path!r}: no stage checkpoints (stages/<Label>) or .safetensors policies found")
    return out
