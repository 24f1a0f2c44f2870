"""``python -m jaxcc.export --checkpoint=DIR --out=FILE``: a training checkpoint -> policy file.

``DIR``: a run's workdir (its last finished stage), a stage checkpoint (``<workdir>/stages/<Label>``)
or a rolling checkpoint (``<workdir>/checkpoints/<n>``); the code is ``jaxcc.training.export``.
"""

from __future__ import annotations

import sys
from typing import Sequence

from jaxcc.cli import run_absl_cli


def define_flags(fv):
    """The command's flags on ``fv`` (an ``absl.flags.FlagValues``)."""
    from absl import flags

    flags.DEFINE_string("checkpoint", None, "run workdir, stages/<Label> or checkpoints/<n>", flag_values=fv)
    flags.DEFINE_string("out", None, "policy file to write (.safetensors)", flag_values=fv)
    flags.mark_flags_as_required(["checkpoint", "out"], flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """Export ``--checkpoint``'s actor to ``--out``; a checkpoint that cannot be read is one line."""
    from jaxcc import policyfile
    from jaxcc.training.export import load_checkpoint_actor

    try:
        spec, tensors, label = load_checkpoint_actor(fv.checkpoint)
    except FileNotFoundError as e:
        raise ValueError(str(e)) from None
    policyfile.save(fv.out, spec, tensors)
    print(f"{fv.out}  ({spec.get('algorithm')}, {label or 'rolling checkpoint'}, "
          f"history={spec['features']['history']}, mi_rtts={spec['mi_rtts']})")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and export; errors are one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--checkpoint=DIR --out=FILE", uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
