"""The model's error with each packet-granular mechanism on and off: one table from fidelity sweeps
of the same cases that differ only in ``--granular``, ``--hystart`` or ``--rto_min`` (the first without, the
others reusing its reference runs), beside the bare model's speed with each (``jaxcc.bench
--mode=sim --granular``).

    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --out=R/none
    for g in drops loss drops,loss; do
      python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --granular=$g --references=R/none/fidelity.json --out=R/$g
    done
    PYTHONPATH=. python3 launch/fidelity_mechanisms.py R/none R/drops R/loss R/drops,loss

Per sweep and controller: the cases within every tolerance, within each metric's, and the median
absolute error of each metric (``jaxcc.fidelity.tables.error_summary``).  A folder holding
``bench.json`` (a ``jaxcc.bench`` run with the same effects) adds its best decisions/s.
"""

from __future__ import annotations

import json
import os
import sys

from jaxcc.fidelity.cases import METRICS
from jaxcc.fidelity.tables import error_cells, error_summary


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    docs = []
    for folder in argv[1:]:
        with open(os.path.join(folder, "fidelity.json"), encoding="utf-8") as fh:
            doc = json.load(fh)
        bench = os.path.join(folder, "bench.json")
        speed = "–"
        if os.path.isfile(bench):
            with open(bench, encoding="utf-8") as fh:
                speed = f"{max(r['decisions_per_s'] for r in json.load(fh)['sim']) / 1e6:.2f} M"
        docs.append((doc, speed))
    cases = {(v["case"], json.dumps(r["scenario"], sort_keys=True)) for v, r in zip(docs[0][0]["verdicts"],
                                                                                   docs[0][0]["records"])}
    for doc, _ in docs[1:]:
        other = {(v["case"], json.dumps(r["scenario"], sort_keys=True)) for v, r in zip(doc["verdicts"], doc["records"])}
        if other != cases:
            raise SystemExit("the sweeps are not of the same cases")
    print(f"reference: {docs[0][0]['reference']}, {len(cases)} cases")
    print("| switches | controller | all metrics | throughput | p95 one-way delay | loss | Jain | median error: "
          "thr % / p95 ms / loss pp / Jain | decisions/s, bare model |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for doc, speed in docs:
        label = ",".join((doc.get("granular") or []) + (["hystart"] if doc.get("hystart") else [])
                         + ([f"rto_min={doc['rto_min']:g}"] if doc.get("rto_min") else [])) or "none"
        for c, row in error_summary(doc).items():
            errs = error_cells(row)
            print(f"| {label} | `{c}` | {row['pass']} | " + " | ".join(row[f"pass_{m}"] for m in METRICS)
                  + f" | {errs} | {speed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
