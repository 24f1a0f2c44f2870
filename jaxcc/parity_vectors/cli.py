"""``python -m jaxcc.parity_vectors --out=tests/vectors``: the shared C++/Python parity vectors in
tests/vectors (one command writes them all).

    python -m jaxcc.parity_vectors --out tests/vectors
    python -m jaxcc.parity_vectors --out tests/vectors --mocc-policy=checkpoints/mocc/mocc.safetensors

One feature set's (``features_<set>.json`` and its policy; docs/feature-sets.md), for a new set or
for a trained file (then from the set's simulator sender, ``jaxcc.parity_vectors.sender_sets``):

    python -m jaxcc.parity_vectors --features=pareto_v2 --out=/tmp/vectors
    python -m jaxcc.parity_vectors --features=pareto_v2 --out=/tmp/vectors \
        --policy=checkpoints/pareto/pareto_fair.safetensors
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.parity_vectors.vectors import write_set_vectors, write_vectors
from jaxcc.policyfile import load


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("out", None, "write the vectors into this folder (the repository's: tests/vectors)",
                        flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the one seed everything is drawn from (committed: 0)", flag_values=fv)
    flags.DEFINE_string("mocc_policy", None, "a MOCC policy file (the trained one: checkpoints/mocc/mocc.safetensors) "
                        "for features_mocc_v1 and mocc_preference_switch instead of a random policy", flag_values=fv)
    flags.DEFINE_alias("mocc-policy", "mocc_policy", flag_values=fv)
    flags.DEFINE_string("features", None, "write only this feature set's vectors (features_<set>.json and its "
                        "policy): a key of jaxcc.senders.FEATURE_SETS", flag_values=fv)
    flags.DEFINE_string("policy", None, "with --features: the vectors' policy file (e.g. a trained one), run "
                        "through the set's simulator sender", flag_values=fv)
    flags.mark_flag_as_required("out", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """Write the vectors with parsed flags ``fv`` (``define_flags``); prints every file written."""
    if fv.mocc_policy is not None:
        if not os.path.isfile(fv.mocc_policy):
            raise ValueError(f"--mocc-policy: {fv.mocc_policy!r} does not exist")
        spec, _ = load(fv.mocc_policy)
        if spec["features"]["name"] != "mocc_v1":
            raise ValueError(f"--mocc-policy: {fv.mocc_policy!r} is a {spec['features']['name']} policy, "
                             "expected mocc_v1")
    if fv.policy is not None:
        if fv.features is None:
            raise ValueError("--policy needs --features=SET (the feature set whose vectors it runs)")
        if not os.path.isfile(fv.policy):
            raise ValueError(f"--policy: {fv.policy!r} does not exist")
    if fv.features is not None:
        paths = write_set_vectors(fv.out, fv.features, seed=fv.seed, policy=fv.policy, mocc_policy=fv.mocc_policy)
    else:
        paths = write_vectors(fv.out, seed=fv.seed, mocc_policy=fv.mocc_policy)
    for path in paths:
        print(path)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--out=tests/vectors")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
