"""A DeepCC policy through an outage, tick by tick, in the simulator: the twin of the emulated
sender's ``sender.csv`` for comparing the two around a dark link.

    PYTHONPATH=. python3 launch/deepcc_outage_trace.py FILE [--scenario=deepcc/cellular] [--from=19.9] [--to=32] [--every=2]

The file runs as ``jaxcc.tcr`` and ``jaxcc.emulate`` run it (``policy:FILE``, the ``deepcc_v1``
sender with the deployed safety net) at the scenario flow's own goal.  The sender is read at every
simulator tick (``jaxcc.sim.runner.run_batch``'s ``probe``); printed for the ticks between
``--from`` and ``--to`` seconds (every ``--every``-th): whether the safety net's BBR paces
(``fb``), whether the policy decided at that tick, the policy's rate and window, the bytes the
flow sent in the tick, the bottleneck queue, and the largest delivery rate so far (eq. 1's
normaliser of the policy's throughput features).  Measured with it:
``checkpoints/deepcc/README.md``, "A rate ceiling from the actor's penalty" (over real packets).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from jaxcc import senders
from jaxcc.scenarios import get_scenario, parse_scenario
from jaxcc.sim import runner


def _probe(cstates) -> dict:
    """Flow 0's policy state after the tick (controller 0)."""
    s = cstates[0]
    return {"rate": s.own.rate[0], "cwnd": s.own.cwnd[0], "fallback": s.mon.fallback, "decided": s.tick[0] == 0,
            "thr_max": s.own.paper.thr_max[0]}


def trace(path: str, scenario: str = "deepcc/cellular") -> dict:
    """Per-tick arrays of one run of ``scenario`` with its flow 0 run by ``policy:path``: ``t``
    (s, the tick's end), ``fallback``, ``decided``, ``rate_mbps``, ``cwnd_bytes``, ``sent_bytes``,
    ``queue_bytes``, ``thr_max_mbps``."""
    d = get_scenario(scenario).to_dict()
    d["flows"] = [dict(d["flows"][0], controller=f"policy:{path}")] + d["flows"][1:]
    sc = parse_scenario(d, source=scenario)
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    _, traj, _, rec = runner.run_batch(batch, probe=_probe)
    flat = lambda a: np.asarray(a).reshape(np.asarray(a).shape[0], -1)[:, 0]  # noqa: E731  (tick, flow 0)
    return {"t": np.asarray(traj.time[0]), "fallback": flat(rec["fallback"][0]).astype(bool),
            "decided": flat(rec["decided"][0]).astype(bool), "rate_mbps": flat(rec["rate"][0]) * 8 / 1e6,
            "cwnd_bytes": flat(rec["cwnd"][0]), "sent_bytes": flat(traj.sent[0]),
            "queue_bytes": np.asarray(traj.queue[0]).reshape(-1), "thr_max_mbps": flat(rec["thr_max"][0]) * 8 / 1e6}


def main(argv: list[str]) -> int:
    opts = {"scenario": "deepcc/cellular", "from": "19.9", "to": "32", "every": "2"}
    files = []
    for a in argv[1:]:
        if a.startswith("--") and "=" in a and a[2:].split("=", 1)[0] in opts:
            k, v = a[2:].split("=", 1)
            opts[k] = v
        elif a.startswith("--"):
            print(f"{a}: unknown flag (--scenario, --from, --to, --every)", file=sys.stderr)
            return 2
        else:
            files.append(a)
    if len(files) != 1:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    try:
        t0, t1, every = float(opts["from"]), float(opts["to"]), int(opts["every"])
    except ValueError:
        print(f"--from={opts['from']} --to={opts['to']} --every={opts['every']}: numbers expected", file=sys.stderr)
        return 2
    if not (t0 < t1 and every >= 1):
        print(f"--from={t0:g} --to={t1:g} --every={every}: need from < to and every >= 1", file=sys.stderr)
        return 2
    if not os.path.isfile(files[0]):
        print(f"{files[0]}: no such policy file", file=sys.stderr)
        return 2
    try:
        tr = trace(files[0], opts["scenario"])
    except (KeyError, ValueError) as e:
        print(f"--scenario={opts['scenario']}: {e}", file=sys.stderr)
        return 2
    print(f"{opts['scenario']}, {files[0]}: t_s fb decided rate_mbps cwnd_bytes sent_bytes queue_bytes thr_max_mbps")
    for i in np.flatnonzero((tr["t"] >= t0) & (tr["t"] < t1))[::every]:
        print(f"{tr['t'][i]:8.3f} {int(tr['fallback'][i])} {int(tr['decided'][i])} {tr['rate_mbps'][i]:7.2f} "
              f"{tr['cwnd_bytes'][i]:9.0f} {tr['sent_bytes'][i]:8.0f} {tr['queue_bytes'][i]:8.0f} {tr['thr_max_mbps'][i]:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
