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

The other resolution, the ring slots a tick's feedback is spread over, the same way with folders
``R/s<N>`` (``--feedback_slots=N``) and bench files ``R/bench_sim_s<N>.json`` (the bare model
only: the environment keeps the model's default):

    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --feedback_slots=2 --references=R/t8/fidelity.json --out=R/s2
    python -m jaxcc.bench --sizes=16384 --mode=sim --feedback_slots=2 --out=R/bench_sim_s2.json   # or _r1, _r2, ...: their median
    PYTHONPATH=. python3 launch/fidelity_resolution.py R s

Per resolution and controller: the cases within every tolerance, and the median absolute error
of each metric over the cases (throughput in % of the reference, p95 one-way delay in ms, loss
in percentage points, Jain's index), with the bench's decisions/s at 16,384 links (bare model and
full Aurora environment) where its files are there.
"""

from __future__ import annotations

import glob
import json
import os
import re
import statistics
import sys

from jaxcc.fidelity.tables import error_cells, error_summary


# Folder prefix -> (the table's first column, the fidelity.json field it must match).
AXES = {"t": ("ticks per RTT", "ticks_per_rtt"), "s": ("feedback slots", "feedback_slots")}


def bench_rate(folder: str, mode: str, t: int, axis: str = "t") -> str:
    """The bench's decisions/s at this resolution: its file ``bench_MODE_AXIS<t>.json``, or the
    median over repeated runs ``bench_MODE_AXIS<t>_<run>.json``; "–" when there is none."""
    paths = [p for p in glob.glob(os.path.join(folder, f"bench_{mode}_{axis}{t}*.json"))
             if re.fullmatch(rf"bench_{mode}_{axis}{t}(_\w+)?\.json", os.path.basename(p))]
    rates = []
    for path in paths:
        with open(path) as fh:
            rates.append(max(r["decisions_per_s"] for r in json.load(fh)["sim"]))
    if not rates:
        return "–"
    runs = f" (median of {len(rates)})" if len(rates) > 1 else ""
    return f"{statistics.median(rates) / 1e6:.2f} M{runs}"


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3) or not os.path.isdir(argv[1]) or (len(argv) == 3 and argv[2] not in AXES):
        raise SystemExit(__doc__)
    folder, axis = argv[1], argv[2] if len(argv) == 3 else "t"
    title, field = AXES[axis]
    runs = sorted((int(m.group(1)), os.path.join(folder, d, "fidelity.json"))
                  for d in os.listdir(folder) if (m := re.fullmatch(axis + r"(\d+)", d))
                  and os.path.isfile(os.path.join(folder, d, "fidelity.json")))
    if not runs:
        raise SystemExit(f"{folder}: no {axis}<N>/fidelity.json")
    table = []
    for t, path in runs:
        with open(path) as fh:
            doc = json.load(fh)
        if doc.get(field) not in (None, t):
            raise SystemExit(f"{path}: {field} {doc[field]}, its folder says {t}")
        table.append((t, doc["reference"], error_summary(doc)))
    ctrls = sorted(table[0][2])
    print(f"| {title} | {' | '.join(f'`{c}` all metrics' for c in ctrls)} | "
          + " | ".join(f"`{c}` median error: throughput % / p95 ms / loss pp / Jain" for c in ctrls)
          + " | decisions/s at 16,384 links: bare model / environment |")
    print("|---:|" + "---:|" * len(ctrls) + "---|" * len(ctrls) + "---|")
    for t, _, s in table:
        errs = [error_cells(s[c]) for c in ctrls]
        print(f"| {t} | " + " | ".join(s[c]["pass"] for c in ctrls) + " | " + " | ".join(errs)
              + f" | {bench_rate(folder, 'sim', t, axis)} / {bench_rate(folder, 'env', t, axis)} |")


if __name__ == "__main__":
    main(sys.argv)
