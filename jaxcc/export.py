"""``python -m jaxcc.export --checkpoint=DIR --out=FILE``: a training checkpoint -> policy file.

``DIR`` may be a run's workdir (its last finished stage is exported: Pareto-Fair when the run is
complete; before that, the newest rolling checkpoint), a stage checkpoint
(``<workdir>/stages/Pareto-Advance``) or a rolling checkpoint (``<workdir>/checkpoints/<n>``).
The file is the shared ``jaxcc-policy`` safetensors format (``jaxcc.policyfile``): architecture,
sizes, feature definition and scaling, action mapping, ``mi_rtts`` and version live in its spec;
reloading it reproduces the training actor's actions exactly (same forward function).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

STAGE_ORDER = ("Pareto-Fair", "Pareto-Advance", "Pareto-Bootstrap")


def export_state(state, spec: dict, out: str, *, stage_label: str | None = None) -> str:
    """Write the actor of a training state (live or restored) as a policy file."""
    from jaxcc import policyfile
    from jaxcc.agents import networks

    actor = state["agent"]["actor"]
    tensors = {k: np.asarray(v, np.float32) for k, v in networks.flatten(actor).items()}
    spec = dict(spec)
    if stage_label:
        spec["stage"] = stage_label
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    policyfile.save(out, spec, tensors)
    return out


def _find(ckpt: str) -> tuple[str, str, str | None]:
    """(state dir, spec json path, stage label) for any accepted checkpoint path."""
    ckpt = os.path.abspath(ckpt)
    if os.path.isfile(os.path.join(ckpt, "spec.json")) and os.path.isdir(os.path.join(ckpt, "state")):
        return os.path.join(ckpt, "state"), os.path.join(ckpt, "spec.json"), os.path.basename(ckpt)
    stages = os.path.join(ckpt, "stages")
    if os.path.isdir(stages):
        for lab in STAGE_ORDER:
            if os.path.isfile(os.path.join(stages, lab, "spec.json")):
                return _find(os.path.join(stages, lab))
        # Other algorithms' stages (e.g. Aurora, Eagle): the most recently written one.
        others = [os.path.join(stages, d) for d in os.listdir(stages)
                  if os.path.isfile(os.path.join(stages, d, "spec.json"))]
        if others:
            return _find(max(others, key=lambda d: os.path.getmtime(os.path.join(d, "spec.json"))))
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
        workdir = os.path.dirname(os.path.dirname(roll))
        return os.path.join(roll, "state"), os.path.join(workdir, "config.json"), None
    raise ValueError(f"{ckpt}: not a jaxcc checkpoint (expected a run workdir, a stages/<Label> dir "
                     f"or checkpoints/<n>)")


def load_checkpoint_actor(ckpt: str) -> tuple[dict, dict[str, np.ndarray], str | None]:
    """(spec, tensors, stage label) of the actor stored in a checkpoint."""
    from jaxcc import checkpointing
    from jaxcc.agents import networks

    state_dir, spec_path, label = _find(ckpt)
    state = checkpointing.restore_untyped(state_dir)
    actor = state["agent"]["actor"]
    if spec_path.endswith("spec.json"):
        with open(spec_path) as f:
            spec = json.load(f)
    else:  # rolling checkpoint: rebuild the spec from the run's config
        import ml_collections

        from jaxcc import agents
        with open(spec_path) as f:
            cfg = ml_collections.ConfigDict(json.load(f))
        spec = agents.make_train(cfg).actor_spec
    tensors = {k: np.asarray(v, np.float32) for k, v in networks.flatten(actor).items()}
    if label:
        spec = {**spec, "stage": label}
    return spec, tensors, label


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxcc.export", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True, help="run workdir, stages/<Label> or checkpoints/<n>")
    p.add_argument("--out", required=True, help="policy file to write (.safetensors)")
    a = p.parse_args(argv)
    from jaxcc import policyfile

    try:
        spec, tensors, label = load_checkpoint_actor(a.checkpoint)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    policyfile.save(a.out, spec, tensors)
    print(f"{a.out}  ({spec.get('algorithm')}, {label or 'rolling checkpoint'}, "
          f"history={spec['features']['history']}, mi_rtts={spec['mi_rtts']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
