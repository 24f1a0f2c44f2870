"""``python -m jaxcc.policyfile``: write a random policy (``--random``) or check a file (``--check``).

    python -m jaxcc.policyfile --random=q_values --out=FILE   # a network of that kind
    python -m jaxcc.policyfile --random=mocc_v1 --out=FILE    # one that fits a feature set
    python -m jaxcc.policyfile --check=FILE                   # validate, print the spec
"""

from __future__ import annotations

import json
import sys
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.policyfile.factories import FEATURE_POLICIES, make_feature_policy, make_random_policy
from jaxcc.policyfile.files import load, save


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("random", None, "write a random policy to --out: a network kind (mlp, lstm, lstm2_discrete, "
                        "conv1d_goal, q_values) or a feature set it must fit (" + ", ".join(FEATURE_POLICIES) + ")",
                        flag_values=fv)
    flags.DEFINE_string("out", None, "output file for --random", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the seed of --random's weights", flag_values=fv)
    flags.DEFINE_string("check", None, "load and validate this policy file, print its spec", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run with parsed flags ``fv`` (``define_flags``); returns the exit status."""
    if fv.random:
        if not fv.out:
            raise ValueError("--random needs --out (the file to write)")
        try:
            if fv.random in FEATURE_POLICIES:
                spec, tensors = make_feature_policy(fv.random, fv.seed)
            else:
                spec, tensors = make_random_policy(fv.random, fv.seed)
        except ValueError as e:
            sets = "" if fv.random in FEATURE_POLICIES else f", or a feature set ({', '.join(FEATURE_POLICIES)})"
            raise ValueError(f"--random: {e}{sets}") from e
        save(fv.out, spec, tensors)
        print(fv.out)
    if fv.check:
        try:
            spec, _ = load(fv.check)
        except OSError as e:
            raise ValueError(f"--check: cannot read {fv.check!r} ({e.strerror or e})") from e
        print(json.dumps(spec, indent=1, sort_keys=True))
    if not (fv.random or fv.check):
        print(__doc__)
        print(fv.get_help())
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--check=FILE", uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
