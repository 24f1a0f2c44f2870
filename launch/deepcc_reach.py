"""DeepCC's reachable set, its online goal tuner and its long-RTT start, measured on the shipped actor.

    python launch/deepcc_reach.py --out=DIR [--policy=checkpoints/deepcc/deepcc.safetensors] [--grid=10]
        [--targets=500] [--clean_targets=100] [--wifi_draws=2] [--seed=0] [--trace=3] [--tuner=paper]

Nothing is trained or changed: the policy runs in the simulator as ``jaxcc.tcr`` runs it
(``policy:FILE``, the ``deepcc_v1`` sender with the deployed safety net), on the named links
``deepcc/wifi`` (its Poisson capacity drawn once from ``--seed``, as ``jaxcc.tcr`` draws it),
``deepcc/cellular`` and ``deepcc/satellite`` and on two clean constant-rate links that no bar
judges: 12 Mbit/s, 40 ms, a 1-BDP (60 KB) buffer, and the Wi-Fi link's mean rate without its
Poisson variation (2.64 Mbit/s, 176 ms, 130 packets); and ``--wifi_draws`` further draws of the
Wi-Fi capacity (fixed goals only).  Every number is taken over the link's TCR
window (``jaxcc.evaluation.tcr.measurement_window``: from 40 min RTTs, capped at half the run):
goodput, byte-weighted p95 queueing delay and loss, as ``jaxcc.tcr`` judges them.

1. **Reachable set.**  Every goal of the simplex lattice with step 1/``--grid`` (weights k/grid,
   each >= 0, summing to 1: 66 goals at 10) runs as the flow's fixed ``goal``.  A TCR target (the
   link's ``--targets`` targets, ``jaxcc.evaluation.tcr.link_targets``, the same draw as
   ``jaxcc.tcr --seed``) is *reachable* when at least one lattice goal's run meets it
   (``jaxcc.evaluation.metrics.tcr_met``).  Also counted: the targets the default goal (1/3 each)
   meets untuned, and those a lattice goal on the tuner's delay path (g1 = g3: the goals reached
   from 1/3 each by raising the delay weight alone, eq. 12's normalisation taking from the other
   two in proportion) or its throughput path (g2 = g3: raising g1 alone) meets.
2. **The tuner.**  Every target runs once with tuning on (the scenario flow's ``target``), the
   sender's state read at every simulator tick (``probe``): the goal in force, the tuner's
   steps and each tuning interval's mean measurement m (eq. 1).  Each target is *met* (tuned),
   *reachable but missed*, or *unreachable*.  For the missed ones: which bound failed, the goal
   at the end, how far g2 and g3 moved, how often the jump-out fired, and the tuner's view of the
   delay — the interval's mean of the per-MI delay ratio m2 as queueing delay, (m2 - 1) x min RTT,
   the quantity it compares with T2 — against the p95 queueing delay TCR judges.  ``--trace``
   missed low-delay Wi-Fi targets are drawn over time.  With ``--tcr_records`` the tuned runs are
   checked against a ``jaxcc.tcr`` results file of the same policy (largest difference printed).
3. **Satellite start.**  ``deepcc/satellite`` (42 Mbit/s, 800 ms, 1 BDP, 0.74 % loss) for 60 s at
   a few fixed goals and the lattice goal with the best 30-60 s goodput: per decision (every
   400 ms) the action u, the sending rate and the largest delivery rate so far; the rate it settles
   at (median of the last 10 s) and the decisions to 90 % of it; decisions until the sending rate
   and a decision interval's goodput first reach 90 % of the link; the per-decision change of u up
   to the plateau (u is an absolute position on the log rate scale, so no step is capped; a step du
   is a factor (bound/low)^du = 1000^du in rate).

Outputs in ``--out``: ``results.json`` (every run's numbers, the traced lanes' interval series),
``tuner_series.json`` (every tuned lane's intervals: time, goal, the tuner's delay view, met
flags), ``tables.md`` (the tables, also printed), ``plots/reach_<link>``, ``plots/tuner_wifi``,
``plots/satellite_start`` (.png, .pdf, .svg).

Runtime: 2.5-3.5 min on the 2-core CPU at ``nice -n 19`` beside a test run (defaults: 67 goals,
the lattice and ⅓ each, x 7 links; 3 x 500 + 2 x 100 tuned lanes; 6 satellite goals).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Sequence

import numpy as np

from jaxcc import scenarios, senders, units
from jaxcc.cli import run_absl_cli
from jaxcc.envs import deepcc
from jaxcc.evaluation import metrics, tcr
from jaxcc.senders import goal_tuning as gt
from jaxcc.sim import runner

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JUDGED = ("deepcc/wifi", "deepcc/cellular", "deepcc/satellite")
CLEAN = {  # constant-rate links no bar judges (module docstring)
    "clean/12mbps-40ms-1bdp": {"bandwidth_mbps": 12.0, "rtt_ms": 40.0, "buffer_bytes": 12 * units.MBPS * 0.040},
    "clean/2.64mbps-176ms-130pkt": {"bandwidth_mbps": 2.64, "rtt_ms": 176.0, "buffer_bytes": 130 * units.MSS},
}
CLEAN_DURATION_S = 30.0
DEFAULT_GOAL = (1 / 3, 1 / 3, 1 / 3)
SAT_GOALS = ((1 / 3, 1 / 3, 1 / 3), (0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.1, 0.8, 0.1), (0.1, 0.1, 0.8))
SAT_REACH = 0.9  # "reached the link": 90 % of its rate
LOW_DELAY_MS = 100.0  # the README's "targets below about 100 ms" on Wi-Fi
INTERVAL_DECISIONS = gt.interval_decisions(0.5)  # decisions per tuning interval at DeepCC's ½-RTT decisions (8)


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("out", None, "output folder (results.json, plots/)", flag_values=fv)
    flags.DEFINE_string("policy", os.path.join(REPO, "checkpoints", "deepcc", "deepcc.safetensors"),
                        "the DeepCC policy file (features deepcc_v1)", flag_values=fv)
    flags.DEFINE_integer("grid", 10, "goal lattice step 1/grid on the simplex (66 goals at 10)", lower_bound=1,
                         upper_bound=40, flag_values=fv)
    flags.DEFINE_integer("targets", 500, "TCR targets per judged link (tuned, one lane each)", lower_bound=1,
                         upper_bound=5000, flag_values=fv)
    flags.DEFINE_integer("clean_targets", 100, "TCR-like targets per clean link (tuned)", lower_bound=0,
                         upper_bound=5000, flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the targets' draw and the Wi-Fi capacity's (as jaxcc.tcr --seed)",
                         lower_bound=0, flag_values=fv)
    flags.DEFINE_integer("wifi_draws", 2, "further Wi-Fi capacity draws (seeds seed+1, ...) swept with the fixed "
                         "goals only", lower_bound=0, upper_bound=8, flag_values=fv)
    flags.DEFINE_integer("trace", 3, "missed low-delay Wi-Fi targets drawn over time", lower_bound=0,
                         upper_bound=8, flag_values=fv)
    flags.DEFINE_string("tuner", "paper", "the tuner of the tuned runs: paper or p95 (jaxcc.senders.goal_tuning)",
                        flag_values=fv)
    flags.DEFINE_string("tcr_records", os.path.join(REPO, "checkpoints", "deepcc", "tcr_tuner", "paper.json"),
                        "a jaxcc.tcr results.json of the same policy to check the tuned runs against ('' : none)",
                        flag_values=fv)
    flags.DEFINE_string("tcr_controller", "deepcc_seed0", "the controller label of --policy in --tcr_records",
                        flag_values=fv)
    return fv


# ----------------------------------------------------------------------------- scenarios and runs


def goal_lattice(n: int) -> list[tuple[float, float, float]]:
    """The simplex lattice with step 1/n: (i, j, n - i - j)/n, throughput weight first."""
    return [(i / n, j / n, (n - i - j) / n) for i in range(n + 1) for j in range(n + 1 - i)]


def clean_scenario(name: str) -> scenarios.Scenario:
    c = CLEAN[name]
    return scenarios.parse_scenario({
        "name": name, "duration_s": CLEAN_DURATION_S,
        "link": {"bandwidth_mbps": c["bandwidth_mbps"], "buffer_bytes": c["buffer_bytes"], "loss": 0.0},
        "flows": [{"rtt_ms": c["rtt_ms"], "start_s": 0.0, "stop_s": CLEAN_DURATION_S, "controller": "bbr"}]},
        source=name)


def flow_with(sc: scenarios.Scenario, controller: str, goal=None, target=None, tuner: str = "paper") -> scenarios.Scenario:
    """``sc`` with its one flow run by ``controller`` at a fixed ``goal`` or tuned toward ``target`` by ``tuner``."""
    d = sc.to_dict()
    for f in d["flows"]:
        for k in ("preference", "preference_changes", "target", "goal"):
            f.pop(k, None)
        f["controller"] = controller
        if goal is not None:
            f["goal"] = [float(x) for x in goal]
        if target is not None:
            f["target"] = tcr.target_field(target, tuner)
    return scenarios.parse_scenario(d, source=sc.name)


def probe(cstates) -> dict:
    """Flow 0's DeepCC sender state after a tick (``jaxcc.sim.runner.make_run``'s ``probe``;
    controller 0 must be the DeepCC policy)."""
    s = cstates[0]
    return {"goal": s.own.goal[0], "u": s.own.paper.last_action[0, 0], "rate": s.own.rate[0, 0],
            "thr_max": s.own.paper.thr_max[0, 0], "last_m": s.own.last_m[0],
            "steps": s.own.tuner.steps[0], "m_tuned": s.own.tuner.m_hist[0, -1],
            "min_rtt": s.run.min_rtt[0, 0], "decided": s.tick[0] == 0,
            "fallback": s.mon.fallback[0]}


def simulate(scs: Sequence[scenarios.Scenario], seed: int, window) -> list[dict]:
    """Each scenario (one link, its capacity drawn once as ``jaxcc.tcr`` does) run with the probe:
    its window metrics and its per-tick probe arrays (numpy), in order."""
    sched = scs[0].link.capacity(seed=seed, duration_s=scs[0].duration_s)
    items = [runner.Item(dataclasses.replace(sc, link=tcr._DrawnLink(sc.link, sched)), seed) for sc in scs]
    found = {}
    for b in runner.build_batches(items, resolve=senders.resolve):
        if len(b.controllers) != 1:
            raise ValueError("probe: one controller per batch (the DeepCC policy)")
        _, traj, rates, probed = runner.run_batch(b, probe=probe)
        for i, it in enumerate(b.items):
            tr = metrics.from_batch(traj, rates, b, i)
            fm = metrics.flow_metrics(tr, 0, window)
            m = (tr.time > window[0] + 1e-9) & (tr.time <= window[1] + 1e-9)  # metrics' window mask
            found[id(it)] = {
                "throughput_mbps": fm["throughput"] / units.MBPS, "p95_qdelay_ms": fm["p95_qdelay"] * 1e3,
                "loss": fm["loss"], "capacity_mbps": float(np.mean(tr.capacity[m])) / units.MBPS,
                "fallback_frac": float(np.mean(probed["fallback"][i][m])),
                "probe": {k: np.asarray(v[i]) for k, v in probed.items()}, "time": tr.time, "acked": tr.acked[:, 0],
                "dt": tr.dt}
    return [found[id(it)] for it in items]


def decisions(run: dict) -> dict:
    """The probe at decision ticks (an MI closed and the sender decided)."""
    pr = run["probe"]
    k = np.flatnonzero(pr["decided"])
    return {"t": run["time"][k], **{n: pr[n][k] for n in ("u", "rate", "thr_max", "last_m", "goal", "min_rtt")}}


def intervals(run: dict) -> dict:
    """The tuner's steps: time, the goal after the step, the interval's mean measurement m (eq. 1)
    and the min RTT then."""
    pr = run["probe"]
    k = np.flatnonzero(np.diff(pr["steps"], prepend=0) > 0)
    return {"t": run["time"][k], "goal": pr["goal"][k], "m": pr["m_tuned"][k], "min_rtt": pr["min_rtt"][k],
            "thr_max": pr["thr_max"][k]}


def interval_qdelay_ms(run: dict, window, per: int = INTERVAL_DECISIONS) -> float:
    """What the tuner compares with T2, for a run without tuning: the window's decisions in blocks
    of ``per`` (one tuning interval), each block's mean per-MI delay ratio as queueing delay,
    (m2 - 1) x min RTT; the median over the blocks (ms)."""
    d = decisions(run)
    w = (d["t"] > window[0]) & (d["t"] <= window[1])
    q = (d["last_m"][w, 1] - 1.0) * d["min_rtt"][w] * 1e3
    n = q.size // per
    return float(np.median(q[: n * per].reshape(n, per).mean(1))) if n else float("nan")


def achieved(r: dict) -> list[float]:
    return [r["throughput_mbps"], r["p95_qdelay_ms"], r["loss"]]


def summary(r: dict) -> dict:
    return {k: r[k] for k in ("throughput_mbps", "p95_qdelay_ms", "loss", "capacity_mbps", "fallback_frac")}


# ----------------------------------------------------------------------------- the three measurements


def reach(sc, policy: str, goals, seed: int, window) -> list[dict]:
    runs = simulate([flow_with(sc, policy, goal=g) for g in goals], seed, window)
    out = []
    for g, r in zip(goals, runs):
        s = summary(r)
        s["goal"] = [round(x, 6) for x in g]
        s["utilization"] = s["throughput_mbps"] / s["capacity_mbps"]
        s["interval_qdelay_ms"] = interval_qdelay_ms(r, window)
        out.append(s)
    return out


def tuned(sc, policy: str, targets: np.ndarray, seed: int, window, tuner: str = "paper"
          ) -> tuple[list[dict], list[dict]]:
    """(per target: window metrics and the tuner's summary; the interval series of each lane).
    With ``tuner`` "p95" the interval's stored delay measurement (the "tuner's view") is its tail."""
    runs = simulate([flow_with(sc, policy, target=t, tuner=tuner) for t in targets], seed, window)
    out, series = [], []
    for t, r in zip(targets, runs):
        iv = intervals(r)
        w = (iv["t"] > window[0]) & (iv["t"] <= window[1])
        q_tuner = (iv["m"][:, 1] - 1.0) * iv["min_rtt"] * 1e3  # the interval's mean m2 as queueing delay (ms)
        t_hat1 = t[0] * units.MBPS / np.maximum(iv["thr_max"], 1e-9)
        met = np.stack([iv["m"][:, 0] >= t_hat1, q_tuner <= t[1], iv["m"][:, 2] <= t[2]], 1)
        # goal_tuning's jump-out (relative distance > JUMP_THRESHOLD on an updated dimension)
        t_hat2 = 1.0 + t[1] / 1e3 / np.maximum(iv["min_rtt"], 1e-9)
        jump_thr = ~met[:, 0] & ((t_hat1 - iv["m"][:, 0]) / np.maximum(t_hat1, 1e-9) > gt.JUMP_THRESHOLD)
        jump_delay = ~met[:, 1] & ((iv["m"][:, 1] - t_hat2) / t_hat2 > gt.JUMP_THRESHOLD)
        g = iv["goal"]
        pre = iv["t"] <= window[0]
        s = summary(r)
        s.update({
            "target": [float(x) for x in t], "steps": int(len(iv["t"])), "steps_before_window": int(np.sum(pre)),
            "goal_window_start": g[pre][-1].tolist() if np.any(pre) else list(DEFAULT_GOAL),
            "goal_end": g[-1].tolist() if len(g) else list(DEFAULT_GOAL),
            "g2_max": float(np.max(g[:, 1])) if len(g) else 1 / 3,
            "g3_max": float(np.max(g[:, 2])) if len(g) else 1 / 3,
            "tuner_qdelay_ms_window": float(np.mean(q_tuner[w])) if np.any(w) else float("nan"),
            "tuner_delay_met_frac": float(np.mean(met[w, 1])) if np.any(w) else float("nan"),
            "tuner_all_met_frac": float(np.mean(np.all(met[w], 1))) if np.any(w) else float("nan"),
            "delay_unmet_steps": int(np.sum(~met[:, 1])), "jump_thr_steps": int(np.sum(jump_thr)),
            "jump_delay_steps": int(np.sum(jump_delay)),
        })
        out.append(s)
        series.append({"t": np.round(iv["t"], 3).tolist(), "goal": np.round(g, 4).tolist(),
                       "tuner_qdelay_ms": np.round(q_tuner, 2).tolist(), "tuner_met": met.astype(int).tolist()})
    return out, series


def classify(fixed: list[dict], lanes: list[dict], targets: np.ndarray) -> dict:
    """Per target: met tuned / reachable (some lattice goal) / by a goal on the delay path (g1 = g3:
    from ⅓ each the tuner raising g2 alone) or the throughput path (g2 = g3: raising g1 alone) /
    by the default goal."""
    ach = np.asarray([achieved(r) for r in fixed])  # [G, 3]
    by_goal = np.stack([metrics.tcr_met(a, targets) for a in ach])  # [G, N]
    goals = np.asarray([r["goal"] for r in fixed])
    delay_path = np.abs(goals[:, 0] - goals[:, 2]) < 1e-6
    thr_path = np.abs(goals[:, 1] - goals[:, 2]) < 1e-6
    default = int(np.argmin(np.abs(goals - np.asarray(DEFAULT_GOAL)).sum(1)))  # exact: main adds it
    tuned_met = metrics.tcr_met(np.asarray([achieved(r) for r in lanes]), targets)
    return {"reachable": np.any(by_goal, 0), "path": np.any(by_goal[delay_path], 0),
            "thr_path": np.any(by_goal[thr_path], 0), "default": by_goal[default],
            "tuned": tuned_met, "by_goal": by_goal, "default_goal": goals[default].tolist()}


def sat_start(sc, policy: str, goals, seed: int, window) -> list[dict]:
    runs = simulate([flow_with(sc, policy, goal=g) for g in goals], seed, window)
    link = float(sc.to_dict()["link"]["bandwidth_mbps"])
    out = []
    for g, r in zip(goals, runs):
        d = decisions(r)
        u, rate = d["u"], d["rate"] / units.MBPS
        # goodput per decision interval: bytes ACKed since the previous decision
        cum = np.cumsum(r["acked"])
        k = np.flatnonzero(r["probe"]["decided"])
        good = np.diff(np.concatenate([[0.0], cum[k]])) / np.diff(np.concatenate([[0.0], d["t"]])) / units.MBPS
        first = lambda x: int(np.argmax(x)) if np.any(x) else None  # noqa: E731
        n_rate = first(rate >= SAT_REACH * link)
        n_good = first(good >= SAT_REACH * link)
        late = d["t"] > d["t"][-1] - 10.0
        plateau = float(np.median(rate[late]))
        n_plat = first(rate >= SAT_REACH * plateau)
        ramp = slice(0, max(n_plat or len(u), 1) + 1)  # from the first decision to 90 % of the plateau
        du = np.diff(u[ramp])
        seen = d["thr_max"][ramp] > 0  # a delivery rate measured
        ratio = rate[ramp][seen] / (d["thr_max"][ramp][seen] / units.MBPS)
        s = summary(r)
        s.update({"goal": [round(x, 6) for x in g], "decisions": int(len(u)),
                  "plateau_mbps": plateau, "decisions_to_plateau": n_plat,
                  "decisions_to_rate": n_rate, "t_rate_s": None if n_rate is None else float(d["t"][n_rate]),
                  "decisions_to_goodput": n_good, "t_goodput_s": None if n_good is None else float(d["t"][n_good]),
                  "du_median": float(np.median(du)) if du.size else 0.0,
                  "du_up_median": float(np.median(du[du > 0])) if np.any(du > 0) else 0.0,
                  "du_max": float(np.max(du)) if du.size else 0.0, "du_min": float(np.min(du)) if du.size else 0.0,
                  "rate_over_thr_max_ramp_median": float(np.median(ratio)) if ratio.size else None,
                  "u_end": float(u[-1]), "rate_end_mbps": float(rate[-1]),
                  "series": {"t": d["t"].tolist(), "u": u.tolist(), "rate_mbps": rate.tolist(),
                             "goodput_mbps": good.tolist(), "thr_max_mbps": (d["thr_max"] / units.MBPS).tolist()}})
        out.append(s)
    return out


# ----------------------------------------------------------------------------- tables and figures


def pct(x) -> str:
    return f"{100 * float(np.mean(x)):.1f} %" if np.size(x) else "–"


def reach_table(name: str, fixed: list[dict]) -> str:
    rows = [f"**{name}** (window goodput, p95 queueing delay, loss; the tuner's view: median interval mean "
            f"of (m2 − 1)·min RTT)", "",
            "| goal (thr, delay, loss) | Mbit/s | utilization | p95 qdelay ms | interval qdelay ms | loss % |",
            "|---|---:|---:|---:|---:|---:|"]
    for r in fixed:
        g = ", ".join(f"{x:.1f}" for x in r["goal"])
        rows.append(f"| ({g}) | {r['throughput_mbps']:.2f} | {r['utilization']:.2f} | {r['p95_qdelay_ms']:.1f} | "
                    f"{r['interval_qdelay_ms']:.1f} | {100 * r['loss']:.2f} |")
    return "\n".join(rows)


def frontier(fixed: list[dict]) -> list[dict]:
    """The lattice goals not dominated in (higher goodput, lower p95 queueing delay), by delay."""
    pts = sorted(fixed, key=lambda r: (r["p95_qdelay_ms"], -r["throughput_mbps"]))
    out, best = [], -1.0
    for r in pts:
        if r["throughput_mbps"] > best + 1e-9:
            out.append(r)
            best = r["throughput_mbps"]
    return out


def best_under(fixed: list[dict], delay_ms: float) -> dict | None:
    ok = [r for r in fixed if r["p95_qdelay_ms"] <= delay_ms]
    return max(ok, key=lambda r: r["throughput_mbps"]) if ok else None


def plot_reach(name: str, fixed: list[dict], cls: dict | None, targets, out_dir: str,
               lanes: list[dict] | None = None) -> list[str]:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from jaxcc import plots

    q = np.asarray([r["p95_qdelay_ms"] for r in fixed])
    thr = np.asarray([r["throughput_mbps"] for r in fixed])
    col = np.clip(np.asarray([r["goal"] for r in fixed]), 0, 1) * 0.85  # RGB = (thr, delay, loss) weights
    with plt.rc_context(plots.RC):
        fig, ax = plt.subplots(figsize=(plots.SINGLE_W, 3.2))
        handles, labels = [], []
        if cls is not None:
            t = np.asarray(targets)
            kinds = (("tuned", cls["tuned"], "o", "#117733", "met tuned"),
                     ("missed", cls["reachable"] & ~cls["tuned"], "x", "#E69F00", "reachable, missed tuned"),
                     ("unreach", ~cls["reachable"] & ~cls["tuned"], "+", "0.65", "no lattice goal meets it"))
            for gid, sel, mk, c, lab in kinds:
                ax.scatter(t[sel, 1], t[sel, 0], marker=mk, s=8, color=c, linewidths=0.6 if mk != "o" else 0,
                           zorder=2, gid=gid)
                handles.append(Line2D([], [], ls="none", marker=mk, color=c, markersize=3.5))
                labels.append(f"target {lab} ({int(np.sum(sel))})")
        if lanes:
            ax.scatter([x["p95_qdelay_ms"] for x in lanes], [x["throughput_mbps"] for x in lanes], marker=".", s=5,
                       color="#AA4499", alpha=0.6, linewidths=0, zorder=3, gid="tuned_runs")
            handles.append(Line2D([], [], ls="none", marker=".", color="#AA4499", markersize=4))
            labels.append("what a tuned run reached (one per target)")
        fr = frontier(fixed)
        xs = [r["p95_qdelay_ms"] for r in fr]
        ys = [r["throughput_mbps"] for r in fr]
        ax.step(xs + [max(xs[-1], q.max()) * 1.5 + 1], ys + [ys[-1]], where="post", color="k", lw=0.8, zorder=3)
        handles.append(Line2D([], [], color="k", lw=0.8))
        labels.append("reachable edge (fixed goals)")
        ax.scatter(q, thr, c=col, s=22, edgecolors="k", linewidths=0.4, zorder=4)
        handles.append(Line2D([], [], ls="none", marker="o", color="0.5", markeredgecolor="k", markersize=4.5))
        labels.append("fixed goal (RGB = thr, delay, loss weights)")
        xmax = max(float(np.max(np.asarray(targets)[:, 1])) if cls is not None else 0.0, float(q.max())) * 1.05 + 1
        ymax = max(float(np.max(np.asarray(targets)[:, 0])) if cls is not None else 0.0, float(thr.max()),
                   fixed[0]["capacity_mbps"]) * 1.05
        ax.set_xlim(0, xmax)
        ax.set_ylim(0, ymax)
        ax.set_xlabel("p95 queueing delay (ms)")
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title(name)
        ax.grid(True)
        fig.legend(handles, labels, loc="outside lower center", ncol=1)
    return plots.save(fig, os.path.join(out_dir, "plots", f"reach_{plots.slug(name, 'link')}"))


def plot_tuner(name: str, picks: list[int], lanes: list[dict], series: list[dict], window, out_dir: str) -> list[str]:
    import matplotlib.pyplot as plt

    from jaxcc import plots

    with plt.rc_context(plots.RC):
        n = len(picks)
        fig, axes = plt.subplots(2, n, figsize=(plots.DOUBLE_W, 3.6), squeeze=False, sharex=True)
        for c, i in enumerate(picks):
            s, ln = series[i], lanes[i]
            t = np.asarray(s["t"])
            g = np.asarray(s["goal"]).reshape(-1, 3)
            ax = axes[0, c]
            for k, (lab, colr, ls) in enumerate((("g1 throughput", "#D55E00", "--"), ("g2 delay", "#009E73", "-"),
                                                 ("g3 loss", "#0072B2", "-"))):
                ax.plot(t, g[:, k], color=colr, ls=ls, label=lab, drawstyle="steps-post", zorder=3 if k == 0 else 2)
            ax.axvspan(window[0], window[1], color="0.92", zorder=0)
            ax.set_ylim(0, 1)
            T = ln["target"]
            ax.set_title(f"target {T[0]:.2f} Mbit/s, {T[1]:.0f} ms, {100 * T[2]:.1f} %", fontsize=7)
            if c == 0:
                ax.set_ylabel("goal weight")
            ax.grid(True)
            ax = axes[1, c]
            ax.plot(t, s["tuner_qdelay_ms"], color="#332288", drawstyle="steps-post",
                    label="tuner's view: interval mean of (m2 − 1)·min RTT")
            ax.axhline(T[1], color="#E69F00", lw=0.9, label="target T2")
            ax.axhline(ln["p95_qdelay_ms"], color="k", ls="--", lw=0.8, label="p95 queueing delay in the window (TCR)")
            ax.axvspan(window[0], window[1], color="0.92", zorder=0)
            ax.set_xlabel("time (s)")
            if c == 0:
                ax.set_ylabel("queueing delay (ms)")
            ax.set_ylim(bottom=0)
            ax.grid(True)
        fig.suptitle(f"{name}: goal tuning on targets a fixed goal reaches and the tuner misses "
                     f"(grey: TCR window)")
        h0, l0 = axes[0, 0].get_legend_handles_labels()
        h1, l1 = axes[1, 0].get_legend_handles_labels()
        fig.legend(h0 + h1, l0 + l1, loc="outside lower center", ncol=3)
    return plots.save(fig, os.path.join(out_dir, "plots", f"tuner_{plots.slug(name.split('/')[-1], 'link')}"))


def plot_sat(rows: list[dict], link_mbps: float, window, out_dir: str) -> list[str]:
    import matplotlib.pyplot as plt

    from jaxcc import plots

    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(2, 1, figsize=(plots.SINGLE_W, 4.0), sharex=True)
        for k, r in enumerate(rows):
            s = r["series"]
            lab = "(" + ", ".join(f"{x:.2g}" for x in r["goal"]) + ")"
            c = plots.FLOW_COLORS[k % len(plots.FLOW_COLORS)]
            axes[0].plot(s["t"], s["rate_mbps"], color=c, label=lab, drawstyle="steps-post")
            axes[1].plot(s["t"], s["u"], color=c, drawstyle="steps-post")
        axes[0].axhline(link_mbps, color="0.4", ls="--", lw=0.8)
        axes[0].axvspan(window[0], window[1], color="0.92", zorder=0)
        axes[0].set_ylabel("sending rate (Mbit/s)")
        axes[0].set_yscale("log")
        axes[1].axhline(float(deepcc.rate_to_action(link_mbps * units.MBPS, deepcc.BOUND_MBPS, deepcc.LOW_MBPS)),
                        color="0.4", ls="--", lw=0.8)
        axes[1].set_ylabel("action u (log scale 0.1–100 Mbit/s)")
        axes[1].set_xlabel("time (s)")
        for ax in axes:
            ax.grid(True)
        axes[0].set_title("deepcc/satellite at fixed goals (dashed: the link)")
        h, lab = axes[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="outside lower center", ncol=2)
    return plots.save(fig, os.path.join(out_dir, "plots", "satellite_start"))


# ----------------------------------------------------------------------------- main


def _git_head() -> str:
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _check_records(path: str, label: str, name: str, lanes: list[dict]) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    rows = [r for r in doc.get("tcr", []) if r.get("scenario") == name and r.get("controller") == label]
    if not rows or len(rows[0]["measured"]) != len(lanes):
        return None
    d = [max(abs(a["throughput_mbps"] - b["throughput_mbps"]), abs(a["p95_qdelay_ms"] - b["p95_qdelay_ms"]),
             abs(a["loss"] - b["loss"])) for a, b in zip(rows[0]["measured"], lanes)]
    met = metrics.tcr_met(np.asarray([achieved(x) for x in lanes]), np.asarray(
        [x for ln in doc["links"] if ln["scenario"] == name for x in ln["targets"]]))
    return (f"{name}: tuned runs against {os.path.relpath(path, REPO)} ({label}): largest difference "
            f"{max(d):.3g} (Mbit/s, ms or loss), TCR {pct(met)} here, {100 * rows[0]['tcr']:.1f} % there")


def main(fv, argv: Sequence[str]) -> int:
    if not fv.out:
        raise ValueError("--out: give the output folder (results.json, plots/)")
    policy_path = os.path.abspath(fv.policy)
    if not os.path.isfile(policy_path):
        raise ValueError(f"--policy: no file {fv.policy}")
    from jaxcc.evaluation.tcr import policy_features

    if policy_features(policy_path) != tcr.DEEPCC_FEATURES:
        raise ValueError(f"--policy: {fv.policy} is not a DeepCC policy (features {tcr.DEEPCC_FEATURES} needed)")
    policy = f"policy:{policy_path}"
    if fv.tuner not in gt.TUNERS:
        raise ValueError(f"--tuner must be one of {', '.join(gt.TUNERS)}, got {fv.tuner!r}")
    os.makedirs(os.path.join(fv.out, "plots"), exist_ok=True)
    t_start = time.time()
    goals = goal_lattice(fv.grid)
    if not any(np.allclose(g, DEFAULT_GOAL) for g in goals):
        goals.append(DEFAULT_GOAL)  # the sender's default, exactly
    links = [(n, scenarios.get_scenario(n), fv.targets) for n in JUDGED]
    links += [(n, clean_scenario(n), fv.clean_targets) for n in CLEAN]
    wifi = scenarios.get_scenario("deepcc/wifi")
    links += [(f"deepcc/wifi@seed{fv.seed + k}", wifi, 0) for k in range(1, fv.wifi_draws + 1)]
    doc = {"meta": {"command": "python launch/deepcc_reach.py " + " ".join(argv), "commit": _git_head(),
                    "date": time.strftime("%Y-%m-%d"), "policy": os.path.relpath(policy_path, REPO),
                    "policy_sha256": _sha256(policy_path), "seed": fv.seed, "grid": fv.grid, "tuner": fv.tuner},
           "links": {}, "satellite_start": None}
    all_series = {}
    files = []
    checks = []
    for name, sc, n_targets in links:
        t0 = time.time()
        seed = int(name.split("@seed")[1]) if "@seed" in name else fv.seed
        ranges = tcr.link_ranges(sc, seed)
        window = tuple(ranges["window_s"])
        fixed = reach(sc, policy, goals, seed, window)
        entry = {"window_s": list(window), "ranges": ranges, "fixed": fixed}
        cls = None
        targets = None
        if n_targets:
            targets = tcr.link_targets(sc.name, ranges, n_targets, fv.seed)
            lanes, series = tuned(sc, policy, targets, fv.seed, window, fv.tuner)
            cls = classify(fixed, lanes, targets)
            all_series[name] = series
            entry.update({"targets": targets.tolist(), "tuned": lanes,
                          "met": {k: np.asarray(cls[k]).tolist()
                                  for k in ("tuned", "reachable", "path", "thr_path", "default")}})
            if fv.tcr_records:
                c = _check_records(fv.tcr_records, fv.tcr_controller, name, lanes)
                if c:
                    checks.append(c)
            low = targets[:, 1] < LOW_DELAY_MS
            missed = cls["reachable"] & ~cls["tuned"]
            picks = []
            if name == "deepcc/wifi" and fv.trace:
                cand = np.flatnonzero(missed & low)
                if cand.size:  # the lowest T2, the highest T1, then the T2 quantiles between
                    by_t2 = cand[np.argsort(targets[cand, 1])]
                    order = [by_t2[0], cand[np.argmax(targets[cand, 0])]]
                    order += [by_t2[int(round(x))] for x in np.linspace(0, by_t2.size - 1, fv.trace + 2)[1:-1]]
                    picks = list(dict.fromkeys(int(i) for i in order))[: fv.trace]
                    files += plot_tuner(name, picks, lanes, series, window, fv.out)
            entry["traced"] = [{"index": i, **series[i]} for i in picks]
        entry["wall_s"] = round(time.time() - t0, 1)
        doc["links"][name] = entry
        files += plot_reach(name, fixed, cls, targets, fv.out, entry.get("tuned"))
        print(f"{name}: {len(goals)} goals, {n_targets} tuned lanes, {entry['wall_s']} s", file=sys.stderr, flush=True)

    # 3. the satellite start
    sc = scenarios.get_scenario("deepcc/satellite")
    window = tuple(doc["links"]["deepcc/satellite"]["window_s"])
    best = max(doc["links"]["deepcc/satellite"]["fixed"], key=lambda r: r["throughput_mbps"])
    sgoals = list(SAT_GOALS) + ([tuple(best["goal"])] if tuple(best["goal"]) not in SAT_GOALS else [])
    sat = sat_start(sc, policy, sgoals, fv.seed, window)
    doc["satellite_start"] = {"goals": sat, "link_mbps": 42.0, "window_s": list(window),
                              "u_link": float(deepcc.rate_to_action(42.0 * units.MBPS, deepcc.BOUND_MBPS,
                                                                    deepcc.LOW_MBPS)),
                              "u_start": deepcc.INIT_ACTION}
    files += plot_sat(sat, 42.0, window, fv.out)
    doc["meta"]["wall_s"] = round(time.time() - t_start, 1)

    text = tables(doc, checks)
    print(text)
    with open(os.path.join(fv.out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(metrics.json_safe(doc), fh, indent=1)
    with open(os.path.join(fv.out, "tuner_series.json"), "w", encoding="utf-8") as fh:
        json.dump(metrics.json_safe(all_series), fh)
    with open(os.path.join(fv.out, "tables.md"), "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    print(f"wrote {os.path.join(fv.out, 'results.json')}, tuner_series.json, tables.md and {len(files)} figure files "
          f"({doc['meta']['wall_s']} s)", file=sys.stderr)
    return 0


def tables(doc: dict, checks: Sequence[str]) -> str:
    out = [f"commit {doc['meta']['commit']}, {doc['meta']['date']}, policy {doc['meta']['policy']} "
           f"(sha256 {doc['meta']['policy_sha256'][:12]}), seed {doc['meta']['seed']}, "
           f"{len(next(iter(doc['links'].values()))['fixed'])} fixed goals", ""]
    # 1. reach, per link: the best goodput under delay bounds
    out += ["### 1. Reachable set (fixed goals, TCR window)", "",
            "| link | goodput range Mbit/s | p95 qdelay range ms | best goodput with p95 ≤ 20 / 50 / 100 ms "
            "(goal) | default goal (⅓ each) |", "|---|---|---|---|---|"]
    for name, e in doc["links"].items():
        f = e["fixed"]
        thr = [r["throughput_mbps"] for r in f]
        q = [r["p95_qdelay_ms"] for r in f]
        cells = []
        for b in (20.0, 50.0, 100.0):
            r = best_under(f, b)
            cells.append("–" if r is None else
                         f"{r['throughput_mbps']:.2f} ({', '.join(f'{x:.1f}' for x in r['goal'])})")
        d = min(f, key=lambda r: float(np.abs(np.asarray(r["goal"]) - np.asarray(DEFAULT_GOAL)).sum()))
        out.append(f"| `{name}` (cap {f[0]['capacity_mbps']:.2f}) | {min(thr):.2f}–{max(thr):.2f} | "
                   f"{min(q):.1f}–{max(q):.1f} | {' / '.join(cells)} | {d['throughput_mbps']:.2f} Mbit/s, "
                   f"{d['p95_qdelay_ms']:.1f} ms, {100 * d['loss']:.2f} % |")
    out += ["", "Edge of the reachable set (goals no other goal beats in both goodput and p95 queueing delay):", ""]
    for name, e in doc["links"].items():
        fr = frontier(e["fixed"])
        pts = "; ".join(f"{r['p95_qdelay_ms']:.0f} ms {r['throughput_mbps']:.2f} Mbit/s "
                        f"({', '.join(f'{x:.1f}' for x in r['goal'])})" for r in fr)
        out.append(f"- `{name}`: {pts}")
    # 2. TCR decomposition
    out += ["", "### 2. Targets: tuned against fixed goals", "",
            "| link | targets | met tuned | met by the default goal | reachable (some lattice goal) | by a goal on "
            "g1 = g3 | by a goal on g2 = g3 | reachable, missed tuned | of those T2 < 100 ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in doc["links"].items():
        if "met" not in e:
            continue
        m = {k: np.asarray(v, bool) for k, v in e["met"].items()}
        t = np.asarray(e["targets"])
        miss = m["reachable"] & ~m["tuned"]
        out.append(f"| `{name}` | {len(t)} | {pct(m['tuned'])} | {pct(m['default'])} | {pct(m['reachable'])} | "
                   f"{pct(m['path'])} | {pct(m['thr_path'])} | {int(miss.sum())} | "
                   f"{int((miss & (t[:, 1] < LOW_DELAY_MS)).sum())} |")
    out += ["", "(g1 = g3: the goals the tuner reaches from ⅓ each by raising g2 alone, its move on an unmet delay; "
            "g2 = g3: by raising g1 alone, or g2 and g3 together.)", "", "Low-delay targets alone:", "",
            "| link | T2 below | targets | met tuned | reachable | by a goal on g1 = g3 | by a goal on g2 = g3 |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for name, e in doc["links"].items():
        if "met" not in e:
            continue
        m = {k: np.asarray(v, bool) for k, v in e["met"].items()}
        for bound in (LOW_DELAY_MS, LOW_DELAY_MS / 2):
            low = np.asarray(e["targets"])[:, 1] < bound
            out.append(f"| `{name}` | {bound:g} ms | {int(low.sum())} | {pct(m['tuned'][low])} | "
                       f"{pct(m['reachable'][low])} | {pct(m['path'][low])} | {pct(m['thr_path'][low])} |")
    out += ["", "The tuner on the targets it misses although a fixed goal meets them (medians over those lanes):", "",
            "| link | lanes | bound missed: thr / delay / loss | tuning steps (before window) | goal at end "
            "| largest g2 (any lane) | g3 raised above ⅓ | intervals with a jump: thr / delay | tuner's interval "
            "qdelay ms | p95 qdelay ms (TCR) | T2 ms | window intervals the tuner judged delay met |",
            "|---|---:|---|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for name, e in doc["links"].items():
        if "met" not in e:
            continue
        m = {k: np.asarray(v, bool) for k, v in e["met"].items()}
        idx = np.flatnonzero(m["reachable"] & ~m["tuned"])
        if not idx.size:
            out.append(f"| `{name}` | 0 |" + " |" * 10)
            continue
        L = [e["tuned"][i] for i in idx]
        T = np.asarray(e["targets"])[idx]
        fails = [np.mean([x["throughput_mbps"] < t[0] for x, t in zip(L, T)]),
                 np.mean([x["p95_qdelay_ms"] > t[1] for x, t in zip(L, T)]),
                 np.mean([x["loss"] > t[2] for x, t in zip(L, T)])]
        med = lambda k: float(np.nanmedian([x[k] for x in L]))  # noqa: E731
        g_end = np.median(np.asarray([x["goal_end"] for x in L]), 0)
        out.append(f"| `{name}` | {idx.size} | {' / '.join(f'{100 * f:.0f} %' for f in fails)} | "
                   f"{med('steps'):.0f} ({med('steps_before_window'):.0f}) | "
                   f"({', '.join(f'{x:.2f}' for x in g_end)}) | {max(x['g2_max'] for x in L):.2f} | "
                   f"{pct([x['g3_max'] > 1 / 3 + 1e-3 for x in L])} | {med('jump_thr_steps'):.0f} / "
                   f"{med('jump_delay_steps'):.0f} | {med('tuner_qdelay_ms_window'):.1f} | "
                   f"{med('p95_qdelay_ms'):.1f} | {float(np.median(T[:, 1])):.1f} | "
                   f"{100 * med('tuner_delay_met_frac'):.0f} % |")
    out += ["", "The delay the tuner sees against the one TCR judges, fixed goals (median over the lattice "
            "goals with an interval view above 0.5 ms): p95 queueing delay over the window against a tuning "
            "interval's mean (m2 − 1)·min RTT (median interval):", ""]
    for name, e in doc["links"].items():
        f = [r for r in e["fixed"] if r["interval_qdelay_ms"] > 0.5]
        if f:
            ratio = np.median([r["p95_qdelay_ms"] / r["interval_qdelay_ms"] for r in f])
            diff = np.median([r["p95_qdelay_ms"] - r["interval_qdelay_ms"] for r in f])
            out.append(f"- `{name}`: p95 = ×{ratio:.2f} the interval view (p95 − interval view: {diff:.1f} ms, "
                       f"{len(f)} goals)")
    if checks:
        out += ["", "Check against the jaxcc.tcr records:", ""] + [f"- {c}" for c in checks]
    # 3. satellite
    s = doc["satellite_start"]
    out += ["", f"### 3. Satellite start (42 Mbit/s, 800 ms; a decision every 400 ms; u from {s['u_start']:.3f} "
            f"(1 Mbit/s) to {s['u_link']:.3f} for the link, Δu = {s['u_link'] - s['u_start']:.3f}; a step Δu is a "
            f"rate factor 1000^Δu)", "",
            "| goal | median rate, last 10 s | decisions to 90 % of it | decisions (s) until rate ≥ 90 % of the link "
            "| until goodput ≥ 90 % | u at the first MI's end (0.4 s) | ramp (to 90 % of the plateau): median Δu "
            "(up steps) | "
            "largest Δu (×rate) | rate / max delivery rate | rate at 60 s | goodput 30–60 s | "
            "p95 qdelay ms | loss % |", "|---|---:|---:|---|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in s["goals"]:
        g = ", ".join(f"{x:.2f}" for x in r["goal"])
        n1 = "never" if r["decisions_to_rate"] is None else f"{r['decisions_to_rate']} ({r['t_rate_s']:.1f})"
        n2 = "never" if r["decisions_to_goodput"] is None else f"{r['decisions_to_goodput']} ({r['t_goodput_s']:.1f})"
        ratio = r["rate_over_thr_max_ramp_median"]
        out.append(f"| ({g}) | {r['plateau_mbps']:.1f} | {r['decisions_to_plateau']} | {n1} | {n2} | "
                   f"{r['series']['u'][0]:.2f} | {r['du_median']:.4f} ({r['du_up_median']:.4f}) | "
                   f"{r['du_max']:.3f} (×{1000 ** r['du_max']:.2f}) | {'–' if ratio is None else f'{ratio:.2f}'} | "
                   f"{r['rate_end_mbps']:.1f} | {r['throughput_mbps']:.2f} | {r['p95_qdelay_ms']:.1f} | "
                   f"{100 * r['loss']:.2f} |")
    return "\n".join(out)


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--out=DIR")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
