"""``python -m jaxcc.parity_vectors --out=tests/vectors``."""

from __future__ import annotations

import argparse
import os


from jaxcc.parity_vectors.vectors import write_vectors
from jaxcc.policyfile import load


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxcc.parity_vectors",
                                description="The shared C++/Python parity vectors in tests/vectors (one command writes them all).")
    p.add_argument("--out", metavar="DIR", required=True, help="write the vectors into DIR (the repository's: tests/vectors)")
    p.add_argument("--seed", type=int, default=0, help="the one seed everything is drawn from (committed: 0)")
    p.add_argument("--mocc-policy", metavar="FILE", default=None,
                   help="a MOCC policy file (the trained one: checkpoints/mocc/mocc.safetensors) for features_mocc_v1 "
                        "and mocc_preference_switch instead of a random policy")
    a = p.parse_args(argv)
    if a.mocc_policy is not None:
        if not os.path.isfile(a.mocc_policy):
            p.error(f"--mocc-policy: {a.mocc_policy!r} does not exist")
        spec, _ = load(a.mocc_policy)
        if spec["features"]["name"] != "mocc_v1":
            p.error(f"--mocc-policy: {a.mocc_policy!r} is a {spec['features']['name']} policy, expected mocc_v1")
    for path in write_vectors(a.out, seed=a.seed, mocc_policy=a.mocc_policy):
        print(path)
    return 0
