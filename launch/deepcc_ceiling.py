"""How fast a DeepCC policy sends when only throughput counts: its rate ceiling, in the simulator.

    PYTHONPATH=. python3 launch/deepcc_ceiling.py FILE [FILE ...] [--goal=1,0,0] [--json=OUT]

Each file runs as ``jaxcc.tcr`` runs it (``policy:FILE``, the ``deepcc_v1`` sender with the
deployed safety net) at a fixed goal, by default (1, 0, 0): eq. 3 is then the utilization alone,
so the best rate is the link's.  The links are clean and constant, none of them a TCR link:
5, 20, 50 and 90 Mbit/s, each at 100 and 400 ms RTT, a 2-BDP drop-tail buffer, no random loss,
40 s.  Printed per file and link: the median delivery rate of the last 10 s (0.5-s bins) and
its share of the link.  A policy whose rate stops at the same Mbit/s on the 50 and 90 Mbit/s
links, with no queue, has a ceiling of its own: that level, not the link, is what it holds.
Measured with it: ``checkpoints/deepcc/README.md``, "A rate ceiling from the actor's penalty".
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from jaxcc.evaluation import runs
from jaxcc.scenarios import parse_scenario

CAPACITIES_MBPS = (5.0, 20.0, 50.0, 90.0)
RTTS_MS = (100.0, 400.0)
DURATION_S = 40.0
TAIL_S = 10.0
BUFFER_BDP = 2.0


def links(goal: list[float]) -> list:
    """The clean links, each with one flow at the fixed ``goal``."""
    out = []
    for cap in CAPACITIES_MBPS:
        for rtt in RTTS_MS:
            d = {"name": f"clean{cap:g}_rtt{rtt:g}", "duration_s": DURATION_S,
                 "link": {"buffer_bytes": BUFFER_BDP * cap * 1e6 / 8 * rtt / 1e3, "loss": 0.0,
                          "schedule": [[0.0, cap]]},
                 "flows": [{"rtt_ms": rtt, "start_s": 0.0, "controller": "bbr", "goal": goal}]}
            out.append(parse_scenario(d, source="launch/deepcc_ceiling.py"))
    return out


def tail_rate(series: dict) -> float:
    """The median delivery rate (Mbit/s) of the run's last ``TAIL_S`` seconds, flow 0."""
    t = np.asarray(series["t"], dtype=float)
    thr = np.asarray([x[0] if isinstance(x, (list, tuple)) else x for x in series["throughput_mbps"]], dtype=float)
    return float(np.median(thr[t >= DURATION_S - TAIL_S]))


def measure(files: list[str], goal: list[float]) -> dict:
    """``{file: {link: {"rate_mbps", "share", "run_mean_mbps", "p95_qdelay_ms"}}}``: the last
    ``TAIL_S`` seconds' median rate, its share of the link, the whole run's mean rate."""
    scs = links(goal)
    entries = runs.controller_entries([f"policy:{f}" for f in files])
    rep = runs.run_evaluation(scs, entries, progress=False)
    out: dict = {f: {} for f in files}
    for rec in rep["results"]:
        f = rec["controller"].split(":", 1)[1]
        rate = tail_rate(rep["series"][(rec["scenario"], rec["controller"])])
        out[f][rec["scenario"]] = {"rate_mbps": rate, "share": rate / rec["capacity_mbps"],
                                   "run_mean_mbps": rec["throughput_mbps"], "p95_qdelay_ms": rec["p95_qdelay_ms"]}
    return out


def main(argv: list[str]) -> int:
    goal, out_json, files = [1.0, 0.0, 0.0], None, []
    for a in argv[1:]:
        if a.startswith("--goal="):
            try:
                goal = [float(x) for x in a.split("=", 1)[1].split(",")]
            except ValueError:
                goal = []
            if len(goal) != 3 or min(goal) < 0 or abs(sum(goal) - 1.0) > 1e-6:
                print(f"--goal={a.split('=', 1)[1]}: three weights >= 0 summing to 1", file=sys.stderr)
                return 2
        elif a.startswith("--json="):
            out_json = a.split("=", 1)[1]
        elif a.startswith("--"):
            print(f"{a}: unknown flag (--goal, --json)", file=sys.stderr)
            return 2
        else:
            files.append(a)
    if not files:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        print(f"{missing[0]}: no such policy file", file=sys.stderr)
        return 2
    res = measure(files, goal)
    names = [sc.name for sc in links(goal)]
    print(f"goal {goal}: median rate of the last {TAIL_S:g} s, Mbit/s (share of the link)")
    print("| file | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for f in files:
        print(f"| {f} | " + " | ".join(f"{res[f][n]['rate_mbps']:.1f} ({res[f][n]['share']:.2f})" for n in names) + " |")
    if out_json:
        with open(out_json, "w") as fh:
            json.dump({"goal": goal, "command": " ".join(["launch/deepcc_ceiling.py"] + argv[1:]), "rates": res}, fh,
                      indent=1)
        print(f"wrote {out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
