"""How many decisions a MOCC policy takes to settle after a runtime preference change, in the
simulator: the twin of ``jaxcc.emulation.settle`` on the same scenario (``emu/mocc_settle``:
12 Mbit/s, 20 ms RTT, 375 KB, 45 s; (0.8, 0.1, 0.1), then (0.1, 0.8, 0.1) at 15 s, back at 30 s).

    PYTHONPATH=. python3 launch/mocc_settle_sim.py FILE [FILE ...] [--smooth=5]

The simulator's sender (``mocc_v1``) is read at every tick (``jaxcc.sim.runner.make_run``'s
``probe``): its window and whether it decided.  Row j of the emulated sender's log holds the
window in force during interval j, the one decision j − 1 set; here x_j is the window set by
decision j − 1 likewise, so ``jaxcc.emulation.settle.settle_segment`` applies unchanged: a
change used first by decision k owns rows k .. e − 1, and D is the number of decisions under the
new preference before the window stays within ±10 % of its new level (``--smooth`` N: of an
N-decision trailing mean).  A change is used first by the first decision at or after its time
(a decision is taken at the end of its tick, with the preference in force then).
"""

from __future__ import annotations

import sys

import numpy as np

from jaxcc import senders
from jaxcc.emulation.settle import BAND, TAIL_S, settle_segment
from jaxcc.emulation.spec import BUILTIN_SCENARIOS
from jaxcc.scenarios import parse_scenario
from jaxcc.sim import runner

SCENARIO = "emu/mocc_settle"


def probe(cstates) -> dict:
    """Flow 0's window (bytes) after the tick and whether it decided in it (controller 0: MOCC)."""
    s = cstates[0]
    return {"cwnd": s.own.cwnd[0, 0], "decided": s.tick[0] == 0}


def run_decisions(path: str, probe=probe, resolve=senders.resolve) -> tuple[dict, np.ndarray, dict]:
    """``SCENARIO`` run by the MOCC policy ``path``, read at its decisions: the scenario's dict,
    the deciding ticks' end times (s) and ``probe``'s records there (``probe`` returns a dict with
    ``"decided"``; ``resolve``: the controller name -> simulator controller map)."""
    d = dict(BUILTIN_SCENARIOS[SCENARIO])
    d["flows"] = [dict(d["flows"][0], controller=f"policy:{path}")]
    sc = parse_scenario(d, source=SCENARIO)
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=resolve)
    if len(batch.controllers) != 1:
        raise ValueError(f"{path}: one controller expected, got {len(batch.controllers)}")
    _, traj, _, rec = runner.run_batch(batch, probe=probe)
    k_ticks = np.flatnonzero(np.asarray(rec["decided"][0]))
    return d, np.asarray(traj.time[0])[k_ticks], {k: np.asarray(v[0])[k_ticks] for k, v in rec.items()}


def settle(path: str, smooth: int = 1, band: float = BAND, tail_s: float = TAIL_S,
           resolve=senders.resolve) -> list[dict]:
    """The settle of each preference change of ``SCENARIO`` run by the MOCC policy ``path``
    (``resolve``: the controller name -> simulator controller map, ``jaxcc.senders.resolve``)."""
    d, t, rec = run_decisions(path, resolve=resolve)
    c = rec["cwnd"]  # the window decision j set
    x = np.concatenate([[c[0]], c[:-1]])  # row j: the window in force during interval j (decision j-1's)
    changes = [ch["at_s"] for ch in d["flows"][0]["preference_changes"]]
    bounds = [int(np.searchsorted(t, at, side="left")) for at in changes] + [len(t)]  # t: the deciding tick's end
    out = []
    for ch, k, e in zip(d["flows"][0]["preference_changes"], bounds, bounds[1:]):
        seg = settle_segment(list(t), list(x), k, e, band, tail_s, smooth)
        seg["preference"] = ch["preference"]
        seg["previous_level"] = float(np.median(x[max(0, k - 50):k]))  # the 50 decisions before the change
        out.append(seg)
    return out


def main(argv: list[str]) -> None:
    smooth = 1
    files = []
    for a in argv[1:]:
        if a.startswith("--smooth="):
            smooth = int(a.split("=", 1)[1])
            if smooth < 1:
                raise SystemExit(f"--smooth must be >= 1, got {smooth}")
        else:
            files.append(a)
    if not files:
        raise SystemExit(__doc__)
    print(f"{SCENARIO} in the simulator, signal cwnd, band ±{BAND:g}, smooth {smooth}")
    for f in files:
        parts = []
        for s in settle(f, smooth):
            d = s["settle_decisions"]
            parts.append(f"{s['preference']} at {s['t_s']:.2f} s: cwnd {s['previous_level']:.4g} -> {s['level']:.4g}, "
                         + (f"settled in {d} decisions ({s['settle_s']:.2f} s)" if d is not None
                            else f"not settled (tail {100 * s['tail_in_band']:.0f}% in band)"))
        print(f"{f}: " + "; ".join(parts))


if __name__ == "__main__":
    main(sys.argv)
