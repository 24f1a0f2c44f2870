"""How far the online forgetting check moves for an actor that learnt nothing: the start policy
with every tensor perturbed by relative Gaussian noise, run through the same check.

    PYTHONPATH=. python3 launch/forgetting_floor.py --policy=checkpoints/pareto/pareto_fair.safetensors \
        --scales=1e-4,1e-3,1e-2 --seeds=0,1,2

For each scale ε and seed, every tensor x becomes ``x · (1 + ε·z)``, z ~ N(0, 1) per element
(``numpy.random.default_rng(seed)``), and ``jaxcc.online.checks.old_env_check`` compares it with
the start file on the forgetting check's links (``jaxcc.online``'s default ``--old-envs``), as
a learning arm's final actor is compared.  The table gives each link's Ankh change, after −
before over before, and the worst per arm.  A change that random perturbations of this size
reach says nothing about what a learner forgot.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np


def main(argv: list[str]) -> int:
    from jaxcc import policyfile
    from jaxcc.online import checks
    from jaxcc.online.cli import DEFAULT_OLD_ENVS
    from jaxcc.online.restore import policy_blob, write_atomic

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", required=True, help="the start policy file")
    ap.add_argument("--scales", default="1e-4,1e-3,1e-2", help="relative noise scales ε, comma-separated")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--old-envs", default=DEFAULT_OLD_ENVS)
    a = ap.parse_args(argv)
    scales = [float(x) for x in a.scales.split(",") if x]
    seeds = [int(x) for x in a.seeds.split(",") if x]
    if not scales or any(not s > 0 for s in scales):
        ap.error(f"--scales={a.scales}: give one or more numbers > 0")
    names = [n.strip() for n in a.old_envs.split(",") if n.strip()]
    spec, tensors = policyfile.load(a.policy)
    print("| ε | seed | " + " | ".join(names) + " | worst |")
    print("|---|---|" + "---|" * (len(names) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        for eps in scales:
            for seed in seeds:
                rng = np.random.default_rng(seed)
                moved = {k: (v * (1.0 + eps * rng.standard_normal(v.shape))).astype(v.dtype) for k, v in tensors.items()}
                path = os.path.join(tmp, f"eps{eps:g}_s{seed}.safetensors")
                write_atomic(path, policy_blob(spec, moved))
                before, after = checks.old_env_check(a.policy, path, names)
                ch = [(after[n]["ankh"] - before[n]["ankh"]) / before[n]["ankh"] for n in names]
                print(f"| {eps:g} | {seed} | " + " | ".join(f"{100 * c:+.1f} %" for c in ch)
                      + f" | {100 * max(ch):+.1f} % |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
