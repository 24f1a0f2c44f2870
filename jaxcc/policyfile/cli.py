"""``python -m jaxcc.policyfile``: write a random policy (``--random``) or check a file (``--check``)."""

from __future__ import annotations

import argparse
import json
import sys

from jaxcc import policyfile
from jaxcc.policyfile.factories import FEATURE_POLICIES, make_feature_policy, make_random_policy
from jaxcc.policyfile.files import load, save


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxcc.policyfile", description=policyfile.__doc__.split("\n")[0])
    p.add_argument("--random", metavar="KIND", help="write a random policy to --out: a network kind ("
                   "mlp, lstm, lstm2_discrete, conv1d_goal, q_values) or a feature set it must fit ("
                   + ", ".join(FEATURE_POLICIES) + ")")
    p.add_argument("--out", metavar="FILE", help="output file for --random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", metavar="FILE", help="load and validate FILE, print its spec")
    a = p.parse_args(argv)
    if a.random:
        if not a.out:
            p.error("--random needs --out")
        try:
            if a.random in FEATURE_POLICIES:
                spec, tensors = make_feature_policy(a.random, a.seed)
            else:
                spec, tensors = make_random_policy(a.random, a.seed)
        except ValueError as e:
            sets = "" if a.random in FEATURE_POLICIES else f", or a feature set ({', '.join(FEATURE_POLICIES)})"
            print(f"error: --random: {e}{sets}", file=sys.stderr)
            return 2
        save(a.out, spec, tensors)
        print(a.out)
    if a.check:
        try:
            spec, _ = load(a.check)
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(json.dumps(spec, indent=1, sort_keys=True))
    if not (a.random or a.check):
        p.print_help()
    return 0
