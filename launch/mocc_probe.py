"""Why MOCC's preference barely steers on its own link: three measurements on `mocc/12mbps`
(12 Mbit/s, 20 ms RTT, 375 KB; the BDP is 20 packets), for one policy file.

    PYTHONPATH=. python3 launch/mocc_probe.py checkpoints/mocc/mocc.safetensors

1. **Against episode length.**  Training episodes are at most 200 decisions (Algorithm 1's T, one
   decision per RTT: 4 s here) where the evaluation runs 30 s (1,500).  Each of five preferences
   runs the 30-s link in the simulator; the operating point (utilization, p95 and mean queueing
   delay) is reported over the first 4 s and over the rest.  If the preference steered within the
   training horizon and the points met later, the two windows would differ.
2. **The learned values at the operating points.**  At the steady states of windows of 20 (one
   BDP, no queue), 25, 30 (the init-cwnd: 2.5 × 12) and 40 packets, the policy's preference-weighted
   Q-values ω·Q(s, a, ω) (``jaxcc.policyfile.scalarised_q``) for three preferences: which action it
   takes, and by what margin over the next.  The states are built by hand from the features'
   definitions (``jaxcc.envs.mocc``): delay / timeout = (20 ms + queue) / 200 ms, ACK rate and
   sending rate at their maximum (1, window-limited at or above the BDP), cwnd / BDP estimate.
   Beside them, the reward a step at each point earns by hand, L(x) = 1 − 10^(−x).
3. **Below the BDP, at (0, 1, 0).**  Windows of 0.1–1 BDP with no queue (delay = min RTT; the ACK
   and sending rates that fraction of the maximum, which the start-up set at the link's rate):
   the action ω·Q takes, the small step up's value minus holding (+10 packets or ×1.1, as the
   file's table says; the action names are the file's), and the per-objective
   Q-values of holding.  Where the delay head values larger windows more but +10 ranks below
   hold, the policy does not climb toward the states its own values prefer.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from jaxcc import policyfile
from jaxcc.evaluation import runs
from jaxcc.scenarios import get_scenario

LINK = "mocc/12mbps"
MBPS, RTT_MS, TIMEOUT_MS, BDP_PKTS = 12.0, 20.0, 200.0, 20.0
HORIZON_S = 200 * RTT_MS / 1000.0  # Algorithm 1's T decisions, one per RTT
PREFERENCES = ((1.0, 0.0, 0.0), (0.75, 0.25, 0.0), (0.5, 0.5, 0.0), (0.25, 0.75, 0.0), (0.0, 1.0, 0.0))
HOLD, DOWN, UP = 3, 2, 4  # the table's slots: hold, the small step down and up (−10/+10 packets or ×1/1.1/×1.1)


def action_names(spec: dict) -> list[str]:
    """The file's action table by name (``action.multipliers``, ``action.deltas`` in bytes):
    ×k for a factor, ±N for packets, "hold" for neither."""
    act = spec["action"]
    names = []
    for k, d in zip(act["multipliers"], act.get("deltas", [0.0] * len(act["multipliers"]))):
        parts = ([f"×{k:.3g}"] if abs(k - 1.0) > 1e-6 else []) + ([f"{d / 1500.0:+g}"] if d else [])
        names.append(" ".join(parts) or "hold")
    return names


def L(x):
    return 1.0 - 10.0 ** (-x)


def episode_length(path: str) -> None:
    base = get_scenario(LINK)
    scs = [dataclasses.replace(base, name=f"{LINK}@{p}", flows=tuple(dataclasses.replace(f, preference=p)
                                                                      for f in base.flows)) for p in PREFERENCES]
    rep = runs.run_evaluation(scs, runs.controller_entries(f"policy:{path}"), progress=False)
    print(f"1. Operating point over the first {HORIZON_S:g} s (200 decisions) and after, {LINK}:")
    print("| preference | util 0-4 s | p95 / mean queue 0-4 s (ms) | util 4-30 s | p95 / mean queue 4-30 s (ms) |")
    print("|---|---:|---:|---:|---:|")
    for sc, p in zip(scs, PREFERENCES):
        (s,) = [v for (name, _), v in rep["series"].items() if name == sc.name]
        t = np.asarray(s["t"])
        thr = np.asarray([row[0] if row[0] is not None else np.nan for row in s["throughput_mbps"]])
        q = np.asarray([row[0] if row[0] is not None else np.nan for row in s["owd_ms"]]) - RTT_MS / 2
        cells = []
        for lo, hi in ((0.0, HORIZON_S), (HORIZON_S, float(sc.duration_s))):
            m = (t >= lo) & (t < hi)
            cells += [f"{np.nanmean(thr[m]) / MBPS:.3f}", f"{np.nanpercentile(q[m], 95):.1f} / {np.nanmean(q[m]):.1f}"]
        print(f"| {p} | " + " | ".join(cells) + " |")


def learned_values(path: str) -> None:
    spec, tensors = policyfile.load(path)
    n, m = int(spec["head"]["n"]), policyfile.q_objectives(spec)
    names = action_names(spec)
    print("\n2. The policy's choice at steady states of the window (ω·Q; the margin over the next action):")
    print(f"| window (pkts) | queue (ms) | delay objective −L(d/timeout) | preference | action | margin | {names[DOWN]} minus hold |")
    print("|---:|---:|---:|---|---|---:|---:|")
    for w in (20.0, 25.0, 30.0, 40.0):
        q_ms = max(w - BDP_PKTS, 0.0) * 1500 * 8 / (MBPS * 1e6) * 1000.0
        obs = np.asarray([[(RTT_MS + q_ms) / TIMEOUT_MS, 1.0, 1.0, w / BDP_PKTS]], np.float32)
        for p in ((1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.0, 1.0, 0.0)):
            goal = np.asarray(p, np.float32)
            s = np.asarray(policyfile.scalarised_q(policyfile.forward(spec, tensors, obs, goal), goal, n, m))
            order = np.argsort(-s)
            print(f"| {w:g} | {q_ms:.1f} | {-L((RTT_MS + q_ms) / TIMEOUT_MS):.3f} | {p} | {names[order[0]]} | "
                  f"{s[order[0]] - s[order[1]]:.3f} | {s[DOWN] - s[HOLD]:+.3f} |")


def below_bdp(path: str) -> None:
    spec, tensors = policyfile.load(path)
    n, m = int(spec["head"]["n"]), policyfile.q_objectives(spec)
    names = action_names(spec)
    goal = np.asarray((0.0, 1.0, 0.0), np.float32)
    print("\n3. Below the BDP at (0, 1, 0), no queue (ω·Q; the per-objective Q of holding):")
    print(f"| window / BDP | action | margin | {names[UP]} minus hold | Q(hold): throughput, delay, loss |")
    print("|---:|---|---:|---:|---|")
    for frac in (0.1, 0.225, 0.4, 0.6, 0.8, 1.0):
        obs = np.asarray([[RTT_MS / TIMEOUT_MS, frac, frac, frac]], np.float32)
        out = policyfile.forward(spec, tensors, obs, goal)
        s = np.asarray(policyfile.scalarised_q(out, goal, n, m))
        order = np.argsort(-s)
        q_hold = np.asarray(out).reshape(n, m)[HOLD]
        print(f"| {frac:g} | {names[order[0]]} | {s[order[0]] - s[order[1]]:.3f} | {s[UP] - s[HOLD]:+.3f} | "
              + ", ".join(f"{v:.3f}" for v in q_hold) + " |")


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: launch/mocc_probe.py POLICY.safetensors")
    episode_length(argv[0])
    learned_values(argv[0])
    below_bdp(argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
