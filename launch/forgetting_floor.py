"""How far the online forgetting check moves for an actor that learnt nothing, and for given actors:
the start policy with every tensor perturbed by relative Gaussian noise, and any final actors named
with ``--actors``, each run through the same check as a learning arm's final actor.

    PYTHONPATH=. python3 launch/forgetting_floor.py --policy=checkpoints/pareto/pareto_fair.safetensors \
        --scales=1e-3,1e-2 --seeds=0,1,2

For each scale ε and seed, every tensor x becomes ``x · (1 + ε·z)``, z ~ N(0, 1) per element
(``numpy.random.default_rng(seed)``).  ``jaxcc.online.checks.ankh_changes`` compares every actor
with the start file on the forgetting check's links (``jaxcc.online``'s default ``--old-envs``)
and on ``--neighbours`` neighbours of each (``Scenario.neighbour``), all in one evaluation.  The
table gives per link the Ankh change on the link as named (one run), after − before over before,
then the change of the mean over its neighbours, and the worst of each per actor.  A change that
random perturbations of this size reach says nothing about what a learner forgot.

``--actors=LABEL=FILE,...`` adds files (for example learning arms' ``policy_final.safetensors``)
started from ``--policy``; ``--scales=`` (empty) leaves the perturbations out.
"""

from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--scales", default="1e-3,1e-2", help="relative noise scales ε, comma-separated ('' for none)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--actors", default="", help="LABEL=FILE,... more actors to check against --policy")
    ap.add_argument("--old-envs", default=DEFAULT_OLD_ENVS)
    ap.add_argument("--neighbours", type=int, default=checks.OLD_ENV_NEIGHBOURS)
    ap.add_argument("--json", default=None, help="also write every figure here")
    a = ap.parse_args(argv)
    try:
        scales = [float(x) for x in a.scales.split(",") if x]
        seeds = [int(x) for x in a.seeds.split(",") if x]
    except ValueError as e:
        ap.error(f"--scales/--seeds: {e}")
    if any(not s > 0 for s in scales):
        ap.error(f"--scales={a.scales}: give numbers > 0")
    given: dict[str, str] = {}
    for item in (x for x in a.actors.split(",") if x):
        label, sep, path = item.partition("=")
        if not sep or not label or not os.path.isfile(path):
            ap.error(f"--actors: {item!r} is not LABEL=FILE with an existing file")
        given[label] = path
    if not scales and not given:
        ap.error("nothing to check: give --scales or --actors")
    if not 0 <= a.neighbours <= 256:
        ap.error(f"--neighbours={a.neighbours}: must be in [0, 256]")
    names = [n.strip() for n in a.old_envs.split(",") if n.strip()]
    spec, tensors = policyfile.load(a.policy)
    with tempfile.TemporaryDirectory() as tmp:
        actors: dict[str, str] = {}  # the perturbations first, then --actors
        for eps in scales:
            for seed in seeds:
                rng = np.random.default_rng(seed)
                moved = {k: (v * (1.0 + eps * rng.standard_normal(v.shape))).astype(v.dtype) for k, v in tensors.items()}
                path = os.path.join(tmp, f"eps{eps:g}_s{seed}.safetensors")
                write_atomic(path, policy_blob(spec, moved))
                actors[f"ε={eps:g} seed {seed}"] = path
        actors.update(given)
        res = checks.ankh_changes(a.policy, actors, names, neighbours=a.neighbours)
    print(f"Per link: the link as named (one run) / the mean over {a.neighbours} neighbours.\n")
    print("| actor | " + " | ".join(f"`{n}`" for n in names) + " | worst, one run | worst, neighbourhood |")
    print("|---|" + "---|" * (len(names) + 2))
    for lab, per in res.items():
        one = [per[n]["change"] for n in names]
        nb = [per[n]["neighbourhood_change"] for n in names]
        cells = [f"{100 * o:+.1f} % / {100 * m:+.1f} %" if m is not None else f"{100 * o:+.1f} %"
                 for o, m in zip(one, nb)]
        worst_nb = f"{100 * max(nb):+.1f} %" if None not in nb else "-"
        print(f"| {lab} | " + " | ".join(cells) + f" | {100 * max(one):+.1f} % | {worst_nb} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"policy": a.policy, "old_envs": names, "neighbours": a.neighbours, "checks": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
