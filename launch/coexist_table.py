"""The coexistence study's table: share and harm per family and link, from one evaluation.

    python -m jaxcc.evaluate --suite=coexist --controller=cubic,bbr,policy:A,policy:B,... --out=DIR
    python launch/coexist_table.py DIR/results.json
    (over netns: python -m jaxcc.emulate --suite=coexist --controller=kernel:cubic,bbr,policy:A,... --out=DIR)

One row per controller, one column per ``coexist/*`` link: its share of the fair share, then
the throughput / delay harm it does to the neighbours (``jaxcc.evaluation.coexist``).  The
``bbr`` row on the CUBIC links is the bar's yardstick (``--bars=coexist``).
"""
from __future__ import annotations

import json
import sys

from jaxcc.evaluation import coexist
from jaxcc.evaluation.bars import BASELINE_LABELS


def table(records: list[dict]) -> str:
    """Two markdown tables, rows = controllers (the baselines first), columns = ``coexist/*`` links:
    the share, then the throughput / delay harm (a baseline on its own protocol's links: itself)."""
    labels = list(dict.fromkeys(coexist.evaluated(r) for r in records))
    base = [b for b in BASELINE_LABELS + tuple(f"kernel:{b}" for b in BASELINE_LABELS) if b in labels]
    labels = base + [lab for lab in labels if lab not in base]
    rows = {lab: {r["scenario"]: r for r in coexist.rows(records, lab)} for lab in labels}
    links = sorted({s for by in rows.values() for s in by})
    head = "| controller | " + " | ".join(s.split("/")[-1] for s in links) + " |"
    rule = "|---|" + "---:|" * len(links)
    share = [head, rule]
    harm = [head, rule]
    for lab in labels:
        by = rows[lab]
        share.append(f"| {lab} | " + " | ".join(f"{by[s]['share']:.2f}" if s in by else "–" for s in links) + " |")
        harm.append(f"| {lab} | " + " | ".join(
            f"{coexist.fmt(by[s]['harm']['throughput'])} / {coexist.fmt(by[s]['harm']['delay'])}" if s in by else "–"
            for s in links) + " |")
    return ("Share of the fair share (flow 0):\n\n" + "\n".join(share)
            + "\n\nHarm to the neighbours, throughput / p95 delay:\n\n" + "\n".join(harm))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        print(table(json.load(fh)["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
