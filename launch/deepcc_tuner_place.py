"""Where DeepCC's goal tuner holds the goal, against the fixed goals that meet what it misses.

    PYTHONPATH=. python3 launch/deepcc_tuner_place.py --policy=FILE --out=FILE.json [--links=outage]
        [--tuner=p95] [--targets=100] [--seed=0]

On the selection links of ``launch/deepcc_tuner_sweep.py`` (``--links``: ``outage`` by default,
or ``six``; never a link TCR judges), for each of ``--targets`` TCR targets per link
(``jaxcc.evaluation.tcr.link_targets``, the sweep's draw):

1. the policy tuned toward the target by ``--tuner`` (``launch/deepcc_reach.py``'s ``tuned``: the
   sender's state read at every tick), and the mean of the goals in force at its tuning steps inside
   the TCR window (``jaxcc.evaluation.tcr.measurement_window``): the lane's *window-mean goal*;
2. the policy at each of the 66 fixed goals of the 1/10 simplex lattice (``deepcc_reach.reach``):
   the goals that meet each target, if any (*reachable*);
3. the policy with the lane's window-mean goal *held* fixed from the start, no tuning.

If holding the window-mean goal meets about as many targets as tuning does, the tuner loses its
targets to where it holds the goal, not to how the goal moves around that place.  For the
targets some lattice goal meets and the tuner misses, the record gives the L1 distance from the
window-mean goal to the nearest meeting goal and their difference per weight (throughput, delay,
loss): which way the tuner would have to go.  It also counts the targets some lattice goal on the
*g2 = g3 path* meets (the six goals (1 - 2k, k, k); ``deepcc_reach.classify``'s throughput path),
and the lanes whose window-mean goal lies on that path (``PATH_TOL``): from the default goal, ⅓
each, the "p95" tuner moves g2 and g3 together (g3 follows g2 on an unmet delay, eq. 12 scales
both alike otherwise), so a target only goals off the path meet is out of its way.

Output (``--out``): per link the tuned, reachable and held TCR, and for the reachable-but-missed
targets: how many the held goal meets, which bound the tuned run missed, the median distance and
the median difference to the nearest meeting goal; per target the window-mean goal, the nearest
meeting goal and the three runs' (throughput Mbit/s, p95 queueing delay ms, loss).  About 4 min
per policy on the outage links (2-core CPU).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Sequence

import numpy as np

import deepcc_reach  # launch/, the folder of this script (sys.path[0] when run as a script)
import deepcc_tuner_sweep


PATH_TOL = 0.01  # a window-mean goal with |g2 - g3| below this is on the g2 = g3 path


def window_mean_goals(series: Sequence[dict], window) -> np.ndarray:
    """[lanes, 3]: each lane's mean goal over its tuning steps inside ``window`` (its last goal when none is)."""
    out = []
    for s in series:
        t, g = np.asarray(s["t"], float), np.asarray(s["goal"], float).reshape(-1, 3)
        inside = (t > window[0]) & (t <= window[1])
        out.append(g[inside].mean(0) if np.any(inside) else (g[-1] if len(g) else np.full(3, 1 / 3)))
    return np.asarray(out)


def nearest(goals: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """The row of ``goals`` [G, 3] nearest ``g`` [3] in L1 (``None`` when ``goals`` is empty)."""
    if len(goals) == 0:
        return None
    return goals[int(np.argmin(np.abs(goals - g).sum(1)))]


def place(sc, policy: str, n_targets: int, seed: int, tuner: str) -> dict:
    """The three runs of the module docstring on one link, summarised."""
    from jaxcc.evaluation import metrics, tcr

    window = tcr.measurement_window(sc)
    targets = tcr.link_targets(sc.name, tcr.link_ranges(sc, seed), n_targets, seed)
    fixed = deepcc_reach.reach(sc, policy, deepcc_tuner_sweep.lattice(), seed, window)
    lanes, series = deepcc_reach.tuned(sc, policy, targets, seed, window, tuner=tuner)
    cls = deepcc_reach.classify(fixed, lanes, targets)
    gbar = window_mean_goals(series, window)
    held = deepcc_reach.reach(sc, policy, [tuple(g) for g in gbar], seed, window)
    held_met = metrics.tcr_met(np.asarray([deepcc_reach.achieved(r) for r in held]), targets)
    lattice = np.asarray([r["goal"] for r in fixed])
    rows, gap = [], []
    for i, t in enumerate(targets):
        meet = lattice[cls["by_goal"][:, i]]
        near = nearest(meet, gbar[i])
        tuned_ach = [float(x) for x in deepcc_reach.achieved(lanes[i])]
        rows.append({"target": [float(x) for x in t], "tuned_met": bool(cls["tuned"][i]),
                     "reachable": bool(cls["reachable"][i]), "on_path": bool(cls["thr_path"][i]),
                     "held_met": bool(held_met[i]),
                     "window_mean_goal": np.round(gbar[i], 4).tolist(),
                     "nearest_meeting_goal": None if near is None else np.round(near, 4).tolist(),
                     "tuned": tuned_ach, "held": [float(x) for x in deepcc_reach.achieved(held[i])],
                     "missed": [bool(tuned_ach[0] < t[0]), bool(tuned_ach[1] > t[1]), bool(tuned_ach[2] > t[2])]})
        if rows[-1]["reachable"] and not rows[-1]["tuned_met"]:
            gap.append(i)
    diff = np.asarray([gbar[i] - np.asarray(rows[i]["nearest_meeting_goal"]) for i in gap]).reshape(-1, 3)
    return {"window_s": list(window), "tcr_tuned": float(np.mean(cls["tuned"])),
            "reachable": float(np.mean(cls["reachable"])), "tcr_held": float(np.mean(held_met)),
            "reachable_on_path": float(np.mean(cls["thr_path"])),
            "window_mean_on_path": float(np.mean(np.abs(gbar[:, 1] - gbar[:, 2]) < PATH_TOL)),
            "reachable_missed": len(gap), "reachable_missed_held_met": int(sum(held_met[i] for i in gap)),
            "reachable_missed_on_path": int(sum(cls["thr_path"][i] for i in gap)),
            "reachable_missed_by": [int(sum(rows[i]["missed"][k] for i in gap)) for k in range(3)],
            "median_l1_to_meeting": round(float(np.median(np.abs(diff).sum(1))), 3) if len(gap) else None,
            "median_goal_minus_meeting": np.round(np.median(diff, 0), 3).tolist() if len(gap) else None,
            "targets": rows}


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("policy", None, "the DeepCC policy file", flag_values=fv)
    flags.DEFINE_list("links", ["outage"], "link sets of launch/deepcc_tuner_sweep.py: six, outage", flag_values=fv)
    flags.DEFINE_string("tuner", "p95", "paper or p95 (jaxcc.senders.goal_tuning.TUNERS)", flag_values=fv)
    flags.DEFINE_integer("targets", 100, "targets per link", lower_bound=1, upper_bound=5000, flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the targets' draw (as jaxcc.tcr --seed)", lower_bound=0, flag_values=fv)
    flags.DEFINE_string("out", None, "the JSON file to write", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str]) -> int:
    from jaxcc.senders import goal_tuning as gt

    if not fv.out:
        raise ValueError("--out: give the JSON file to write")
    if not fv.policy:
        raise ValueError("--policy: give the DeepCC policy file")
    gt.tuner_code(fv.tuner, "--tuner")
    scs = deepcc_tuner_sweep.links(tuple(fv.links))  # refuses an unknown set before any run
    t0 = time.time()
    links = {}
    for sc in scs:
        links[sc.name] = r = place(sc, "policy:" + fv.policy, fv.targets, fv.seed, fv.tuner)
        print(f"{sc.name}: tuned {r['tcr_tuned']:.2f}, reachable {r['reachable']:.2f} (on the g2 = g3 path "
              f"{r['reachable_on_path']:.2f}), held at the window-mean goal {r['tcr_held']:.2f}; window-mean goals on "
              f"the path {r['window_mean_on_path']:.2f}; reachable but missed {r['reachable_missed']} (the held goal "
              f"meets {r['reachable_missed_held_met']}, a goal on the path {r['reachable_missed_on_path']}; "
              f"missed on throughput/delay/loss {r['reachable_missed_by']}; "
              f"median L1 to a meeting goal {r['median_l1_to_meeting']}, window-mean minus "
              f"meeting {r['median_goal_minus_meeting']})", flush=True)
    doc = {"policy": fv.policy, "tuner": fv.tuner, "link_sets": list(fv.links), "targets": fv.targets,
           "seed": fv.seed, "links": links, "wall_s": round(time.time() - t0, 1)}
    with open(fv.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--policy=FILE --out=FILE.json")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
