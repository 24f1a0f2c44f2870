"""A MOCC policy's window, decision by decision, on one link and one preference in the simulator.

    PYTHONPATH=. python3 launch/mocc_window_trace.py FILE W_THR,W_DELAY,W_LOSS [LINK] [--first=N]

LINK is a named scenario (default ``mocc/50mbps``: 50 Mbit/s, 2 ms RTT, 375 KB); its one flow is
driven by ``policy:FILE`` with the preference.  Prints the link's BDP, then the window (packets and
BDPs) and pacing rate after each of the first N decisions (default 20) and at 1, 15 and the
last second (the preference sweep gives the run's throughput, queueing and loss).  Used to see where a
window goes after §IV-B's init-cwnd (``checkpoints/mocc/README.md``, "A start 15 BDPs over").
"""

from __future__ import annotations

import sys

import numpy as np

from jaxcc import senders, units
from jaxcc.scenarios import get_scenario, parse_scenario
from jaxcc.sim import runner


def probe(cstates) -> dict:
    s = cstates[0]
    return {"cwnd": s.own.cwnd[0, 0], "rate": s.own.rate[0, 0], "decided": s.tick[0] == 0}


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--first=")]
    first = int(next((a.split("=", 1)[1] for a in argv[1:] if a.startswith("--first=")), 20))
    if len(args) not in (2, 3):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path, link = args[0], args[2] if len(args) == 3 else "mocc/50mbps"
    try:
        pref = [float(x) for x in args[1].split(",")]
        if len(pref) != 3 or min(pref) < 0 or abs(sum(pref) - 1) > 1e-3:
            raise ValueError(f"preference {args[1]!r}: three numbers >= 0 summing to 1")
        d = get_scenario(link).to_dict()
        if len(d["flows"]) != 1:
            raise ValueError(f"{link}: one flow expected, got {len(d['flows'])}")
        d["flows"] = [dict(d["flows"][0], controller=f"policy:{path}", preference=pref)]
        sc = parse_scenario(d, source=link)
        (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    except (ValueError, KeyError, OSError) as e:
        print(f"mocc_window_trace: {e}", file=sys.stderr)
        return 2
    _, traj, _, rec = runner.run_batch(batch, probe=probe)
    k = np.flatnonzero(np.asarray(rec["decided"][0]))
    t = np.asarray(traj.time[0])[k]
    cwnd = np.asarray(rec["cwnd"][0])[k] / units.MSS
    rate = np.asarray(rec["rate"][0])[k] / units.MBPS
    bw, rtt = float(d["link"]["bandwidth_mbps"]), float(d["flows"][0]["rtt_ms"]) / 1000.0
    bdp = bw * units.MBPS * rtt / units.MSS
    print(f"{link} at {tuple(pref)}: {len(k)} decisions; the BDP is {bdp:.1f} packets")
    rows = list(range(min(first, len(k)))) + [int(np.searchsorted(t, s)) for s in (1.0, 15.0)] + [len(k) - 1]
    for i in dict.fromkeys(r for r in rows if r < len(k)):
        print(f"  {t[i]:7.3f} s  cwnd {cwnd[i]:9.1f} packets ({cwnd[i] / bdp:7.2f} BDP)  rate {rate[i]:10.1f} Mbit/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
