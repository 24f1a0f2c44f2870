"""The learner's start: a Pareto or MOCC offline training state restored from a ``jaxcc.train``
workdir (``restore_offline``), and policy files as the bytes the learner pushes (``policy_blob``)."""

from __future__ import annotations

import json
import os

import numpy as np

ONLINE_ALGOS = ("pareto_td3", "mocc_envelope")  # the runs an online stage exists for


# ----------------------------------------------------------------------------- restore


def _read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _stage_dirs(workdir: str) -> list[tuple[int, str]]:
    sd = os.path.join(workdir, "stages")
    out = []
    if os.path.isdir(sd):
        for d in os.listdir(sd):
            p = os.path.join(sd, d)
            if os.path.isfile(os.path.join(p, "meta.json")) and os.path.isdir(os.path.join(p, "state")):
                out.append((int(_read_json(os.path.join(p, "meta.json"))["stage"]), p))
    return sorted(out)


def restore_offline(ckpt: str) -> dict:
    """A Pareto or MOCC offline state from a run workdir, a stage checkpoint or a rolling checkpoint.

    Returns ``{"config", "trainer", "state", "spec", "label", "stage"}``; ``spec`` is the actor's
    policy-file spec with the stage label.

    Raises:
      ValueError: one line naming the path and what is missing or wrong.
    """
    import ml_collections

    from jaxcc import agents
    from jaxcc.training import checkpointing

    ckpt = os.path.abspath(ckpt)
    if not os.path.isdir(ckpt):
        raise ValueError(f"--checkpoint {ckpt}: no such directory")
    roll_step = None
    if os.path.isfile(os.path.join(ckpt, "meta.json")) and os.path.isdir(os.path.join(ckpt, "state")):
        stage_dir, workdir = ckpt, os.path.dirname(os.path.dirname(ckpt))
    elif os.path.basename(os.path.dirname(ckpt)) == "checkpoints" and os.path.basename(ckpt).isdigit():
        stage_dir, workdir, roll_step = None, os.path.dirname(os.path.dirname(ckpt)), int(os.path.basename(ckpt))
    else:
        stages = _stage_dirs(ckpt)
        workdir = ckpt
        if stages:
            stage_dir = stages[-1][1]
        else:
            stage_dir = None
            roll = checkpointing.RunCheckpoints(ckpt)
            roll_step = roll.latest()
            roll.close()
            if roll_step is None:
                raise ValueError(f"--checkpoint {ckpt}: no stage checkpoints (stages/<Label>) and no rolling "
                                 f"checkpoints (checkpoints/<n>)")
    cfg_path = os.path.join(workdir, "config.json")
    if not os.path.isfile(cfg_path):
        raise ValueError(f"--checkpoint {ckpt}: the run's config.json is missing ({cfg_path})")
    config = ml_collections.ConfigDict(_read_json(cfg_path))
    if str(config.get("algo", "")) not in ONLINE_ALGOS:
        raise ValueError(f"--checkpoint {ckpt}: config.algo is {config.get('algo')!r}; online training needs "
                         f"a Pareto (pareto_td3) or MOCC (mocc_envelope) run")
    trainer = agents.make_train(config)
    if stage_dir is not None:
        meta = _read_json(os.path.join(stage_dir, "meta.json"))
        stage, label = int(meta["stage"]), str(meta.get("label", os.path.basename(stage_dir)))
        state = checkpointing.restore_stage(stage_dir, trainer.template(stage))
    else:
        roll = checkpointing.RunCheckpoints(workdir)
        meta = roll.meta(roll_step)
        stage, label = int(meta["stage"]), f"{meta.get('stage_label', 'Pareto' if config.algo == 'pareto_td3' else trainer.stages[0].label)}@{roll_step}"
        state = roll.restore(roll_step, trainer.template(stage))
        roll.close()
    spec = {**trainer.actor_spec, "stage": label}
    return {"config": config, "trainer": trainer, "state": state, "spec": spec, "label": label, "stage": stage}


def policy_blob(spec: dict, tensors: dict) -> bytes:
    """The bytes of a policy file (``jaxcc.policyfile.save``'s format, validated)."""
    from safetensors.numpy import save as st_save

    from jaxcc import policyfile

    tensors = {k: np.ascontiguousarray(np.asarray(v, np.float32)) for k, v in tensors.items()}
    policyfile.validate(spec, tensors)
    return st_save(tensors, metadata={policyfile.METADATA_KEY: json.dumps(spec, sort_keys=True)})


def write_atomic(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
