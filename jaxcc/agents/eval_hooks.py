"""Turn a training checkpoint into evaluation controllers (``jaxcc.evaluate --checkpoint=DIR``).

``checkpoint_entries(path)`` returns ``evaluate.ControllerEntry(label, "policy:FILE")`` for every
exported stage policy of a run: ``<workdir>/stages/Pareto-Bootstrap.safetensors`` →
label ``Pareto-Bootstrap`` (paper's Fig. 3 names), in stage order.  A stage checkpoint without its
file is exported on the fly (``jaxcc.export``); ``path`` may also be a single stage directory, a
directory of ``.safetensors`` files, or one policy file.
"""

from __future__ import annotations

import json
import os

STAGE_ORDER = ("Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair")


def _stage_index(stages_dir: str, label: str) -> tuple[int, str]:
    try:
        with open(os.path.join(stages_dir, label, "meta.json")) as f:
            return int(json.load(f).get("stage", 99)), label
    except (OSError, ValueError):
        return (STAGE_ORDER.index(label) if label in STAGE_ORDER else 99), label


def checkpoint_policies(path: str) -> list[tuple[str, str]]:
    """(label, policy file) pairs for a checkpoint path (see the module docstring)."""
    from jaxcc import export

    path = os.path.abspath(path)
    if os.path.isfile(path):
        return [(os.path.splitext(os.path.basename(path))[0], path)]
    out = []
    stages = os.path.join(path, "stages")
    if os.path.isfile(os.path.join(path, "spec.json")):  # one stage checkpoint
        stages, labels = os.path.dirname(path), [os.path.basename(path)]
    elif os.path.isdir(stages):
        labels = [d for d in os.listdir(stages) if os.path.isfile(os.path.join(stages, d, "spec.json"))]
    else:
        labels = []
    for _, lab in sorted(_stage_index(stages, lab) for lab in labels):
        f = os.path.join(stages, lab + ".safetensors")
        if not os.path.isfile(f):
            from jaxcc import policyfile
            spec, tensors, _ = export.load_checkpoint_actor(os.path.join(stages, lab))
            policyfile.save(f, spec, tensors)
        out.append((lab, f))
    if not out and os.path.isdir(path):
        out = [(os.path.splitext(n)[0], os.path.join(path, n)) for n in sorted(os.listdir(path))
               if n.endswith(".safetensors")]
    if not out:
        raise ValueError(f"--checkpoint {path!r}: no stage checkpoints (stages/<Label>) or .safetensors policies found")
    return out


def checkpoint_entries(path: str):
    """``evaluate.ControllerEntry`` list (label = stage name, name = ``policy:FILE``)."""
    from jaxcc.evaluate import ControllerEntry

    return [ControllerEntry(label, f"policy:{f}") for label, f in checkpoint_policies(path)]
