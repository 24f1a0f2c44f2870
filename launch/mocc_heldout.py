"""MOCC's preference steering on links the sweep's bars do not judge: bar (a)'s per-link test,
applied to the records of preference sweeps over held-out links (several files are read as one).

    python -m jaxcc.preference_sweep --checkpoint=RUN_A0,RUN_A1,RUN_A2,RUN_B0,RUN_B1,RUN_B2 \\
        --suite=aurora-bw,aurora-latency,aurora-queue --baselines= --bars= --noplots --out=DIR
    PYTHONPATH=. python3 launch/mocc_heldout.py DIR/sweep.json [MORE/sweep.json ...]

Per MOCC policy of the records, and per link: Spearman's rank correlation between w_thr and
throughput and between w_thr and p95 queueing over the throughput–delay edge (w_loss = 0), as
``jaxcc.evaluation.bars.mocc_steering`` judges bar (a) on MOCC's own links (both ≥ 0.8, or the
delay flat at ≤ 2 ms; otherwise a constant series has no rank correlation and fails).  It prints
each policy's count of links that pass, and the
median count over each group of policies whose labels differ only in their trailing digits
(``MOCC@ms0``, ``MOCC@ms1``, ... form the group ``MOCC@ms``).  Used to compare trainers on links disjoint from
those that judge them (``checkpoints/mocc/README.md``).

Snapshots of one training run (``python -m jaxcc.export --checkpoint=RUN/checkpoints/N``) labelled
``<name>_u<N>_s<seed>`` are also picked from: per seed, the snapshot that passes on the most links,
the later one on a tie (that README, "Steering over the run").
"""

from __future__ import annotations

import re
import statistics
import sys

from jaxcc.evaluation import bars
from jaxcc.evaluation.preference_sweep import load_sweep


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: launch/mocc_heldout.py SWEEP.json [MORE.json ...]")
    records = []
    for path in argv:
        try:
            records += load_sweep(path)[0]
        except ValueError as e:
            sys.exit(str(e))
    policies = sorted({r["controller"] for r in records if r.get("preference") is not None})
    links = sorted({r["scenario"] for r in records if r.get("preference") is not None})
    if not policies:
        sys.exit(f"{', '.join(argv)}: no MOCC records (none carries a preference)")
    counts: dict[str, int] = {}
    print("| link | " + " | ".join(policies) + " |")
    print("|---|" + "---|" * len(policies))
    for link in links:
        cells = []
        for c in policies:
            _, rt, rq, ok = bars.mocc_steering(records, c, link)
            counts[c] = counts.get(c, 0) + int(ok)
            cells.append(f"{rt:.2f} / {rq:.2f} {'✓' if ok else '✗'}")
        print(f"| {link} | " + " | ".join(cells) + " |")
    print(f"\nlinks passing, of {len(links)}:")
    groups: dict[str, list[int]] = {}
    for c in policies:
        print(f"  {c}: {counts[c]}")
        groups.setdefault(re.sub(r"\d+$", "", c), []).append(counts[c])
    for g, v in groups.items():
        print(f"  median over {g}* ({len(v)} policies): {statistics.median(v):g}")
    picks = pick_snapshots(counts)
    if picks:
        print("\nper seed, the snapshot passing on the most links (the later on a tie):")
        for seed, (label, n) in sorted(picks.items()):
            print(f"  seed {seed}: {label} ({n} links)")


def pick_snapshots(counts: dict[str, int]) -> dict[int, tuple[str, int]]:
    """Per seed, the ``<name>_u<N>_s<seed>`` label with the largest count; on a tie the largest N."""
    best: dict[int, tuple[int, int, str]] = {}
    for label, n in counts.items():
        m = re.fullmatch(r".*_u(\d+)_s(\d+)", label)
        if m:
            key = (n, int(m.group(1)), label)
            best[int(m.group(2))] = max(best.get(int(m.group(2)), key), key)
    return {seed: (label, n) for seed, (n, _, label) in best.items()}


if __name__ == "__main__":
    main(sys.argv[1:])
