"""Retransmission timeouts per flow: the reference's (ns-3's ``rto`` count in a fidelity sweep's
records) beside the model's with ``--rto_min`` (``jaxcc.baselines.recovery.timeout``).

    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --out=R/none
    PYTHONPATH=. python3 launch/fidelity_timeouts.py R/none/fidelity.json 1.0

Re-draws the sweep's ``cubic`` and ``reno`` cases (its controllers, cases and seed), runs each in
the simulator with that timer floor (seconds) and prints, per case, the timeouts of every flow in
the model and in the reference, then per controller the totals, the cases with any, and the cases
whose flows time out exactly as the reference's.
"""

from __future__ import annotations

import json
import sys

from jaxcc import senders
from jaxcc.fidelity import runs
from jaxcc.fidelity.cases import draw_cases
from jaxcc.sim import links, runner

WINDOW_BASED = ("cubic", "reno")


def model_timeouts(case, rto_min: float) -> list[int]:
    """The model's timeouts per flow of one case, at the default resolution."""
    items = [runner.Item(case.scenario, 0, case.name)]
    (b,) = runner.build_batches(items, resolve=senders.resolve, ticks_per_rtt=links.DEFAULT_TICKS_PER_RTT)
    states = runner.run_batch(runs.with_timeouts(b, rto_min), keep_states=True)[3]
    (state,) = [s for s in states if hasattr(s, "timeouts")]  # the one controller of the batch
    return [int(x) for x in state.timeouts[0]]


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        doc = json.load(fh)
    rto_min = float(argv[2])
    refs = {r["case"]: [f.get("rto", 0) for f in r["reference"]["per_flow"]] for r in doc["records"]
            if not isinstance(r["reference"], list)}
    for ctrl in WINDOW_BASED:
        if ctrl not in doc["controllers"]:
            continue
        total_sim = total_ref = any_sim = any_ref = equal = 0
        for case in draw_cases([ctrl], doc["cases_per_controller"], doc["seed"], doc["reference"]):
            sim, ref = model_timeouts(case, rto_min), refs[case.name]
            print(f"{case.name}: model {sim}, {doc['reference']} {ref}")
            total_sim, total_ref = total_sim + sum(sim), total_ref + sum(ref)
            any_sim, any_ref, equal = any_sim + (sum(sim) > 0), any_ref + (sum(ref) > 0), equal + (sim == ref)
        print(f"{ctrl}: {doc['reference']} {total_ref} timeouts in {any_ref} cases, the model {total_sim} in "
              f"{any_sim}; every flow's count equal in {equal} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
