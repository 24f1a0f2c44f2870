"""The model's error against its resolution (ticks per RTT), beside its speed: one table from
fidelity sweeps of the same cases at several resolutions and bench runs at the same ones.

    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --out=R/t8
    for t in 2 4 16 32; do
      python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --ticks_per_rtt=$t --references=R/t8/fidelity.json --out=R/t$t
    done
    for t in 2 4 8 16 32; do
      python -m jaxcc.bench --sizes=16384 --mode=sim --ticks_per_rtt=$t --out=R/bench_sim_t$t.json
      python -m jaxcc.bench --sizes=16384 --mode=env --ticks_per_rtt=$t --out=R/bench_env_t$t.json
    done
    PYTHONPATH=. python3 launch/fidelity_resolution.py R

Per resolution and controller: the cases within every tolerance, and the median absolute error
of each metric over the cases (throughput in % of the reference, p95 one-way delay in ms, loss
in percentage points, Jain's index), with the bench's decisions/s at 16,384 links (bare model and
full Aurora environment) where its files are there.
"""

from __future__ import annotations

import json
import os
import re
import sys

from jaxcc.fidelity.tables import error_cells, error_summary


def bench_rate(folder: str, mode: str, t: int) -> str:
    path = os.path.join(folder, f"bench_{mode}_t{t}.json")
    if not os.path.isfile(path):
        return "–"
    with open(path) as fh:
        rows = json.load(fh)["sim"]
    return f"{max(r['decisions_per_s'] for r in rows) / 1e6:.2f} M"


def main(argv: list[str]) -> None:
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        raise SystemExit(__doc__)
    folder = argv[1]
    runs = sorted((int(m.group(1)), os.path.join(folder, d, "fidelity.json"))
                  for d in os.listdir(folder) if (m := re.fullmatch(r"t(\d+)", d))
                  and os.path.isfile(os.path.join(folder, d, "fidelity.json")))
    if not runs:
        raise SystemExit(f"{folder}: no t<N>/fidelity.json")
    table = []
    for t, path in runs:
        with open(path) as fh:
            doc = json.load(fh)
        if doc.get("ticks_per_rtt") not in (None, t):
            raise SystemExit(f"{path}: ticks_per_rtt {doc['ticks_per_rtt']}, its folder says {t}")
        table.append((t, doc["reference"], error_summary(doc)))
    ctrls = sorted(table[0][2])
    print(f"| ticks per RTT | {' | '.join(f'`{c}` all metrics' for c in ctrls)} | "
          + " | ".join(f"`{c}` median error: throughput % / p95 ms / loss pp / Jain" for c in ctrls)
          + " | decisions/s at 16,384 links: bare model / environment |")
    print("|---:|" + "---:|" * len(ctrls) + "---|" * len(ctrls) + "---|")
    for t, _, s in table:
        errs = [error_cells(s[c]) for c in ctrls]
        print(f"| {t} | " + " | ".join(s[c]["pass"] for c in ctrls) + " | " + " | ".join(errs)
              + f" | {bench_rate(folder, 'sim', t)} / {bench_rate(folder, 'env', t)} |")


if __name__ == "__main__":
    main(sys.argv)
