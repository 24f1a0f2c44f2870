"""The links DeepCC's "p95" goal tuner's constants were chosen on: none that TCR judges.

    python launch/deepcc_tuner_sweep.py --tuner=p95 --lr=0.2 --out=FILE.json [--policy=FILE] [--targets=100]
        [--links=six,outage]

Runs ``jaxcc.evaluation.tcr.run_tcr`` (``--targets`` targets per link, ``--seed`` 0, the policy
tuned once per target by ``--tuner``, ``jaxcc.senders.goal_tuning``) on the link sets of
``--links``, none of them ``deepcc/wifi``, ``deepcc/cellular``, ``deepcc/satellite`` (the links
whose TCR judges the tuner) or the held-out TCR link.  ``six`` (the default; the p95 tuner's
constants were chosen on it):

* ``clean/2.64mbps-176ms-130pkt`` and ``clean/12mbps-40ms-1bdp``: the constant links of
  ``launch/deepcc_reach.py`` (30 s);
* four draws from DeepCC's training link sampler ranges (``configs/deepcc.py``: Poisson capacity
  with a log-uniform 1–50 Mbit/s mean, min RTT 100–800 ms, half of the buffers 65–260 packets and
  half 0.5–4 BDP, random loss 0–1 %), from ``numpy.random.default_rng(20261129)``; 30–60 s
  (80 min RTTs).

``outage``: four cellular-like links with an outage, for a tuner that must ride out a dark link as
the cellular trace's 10-s and 3-s outages ask: each a 60-s slice of a shipped Verizon LTE trace
(the downlink or the uplink, from an offset drawn with ``numpy.random.default_rng(20261201)``) in
100-ms bins, dark (0.01 Mbit/s, as the ``outage/*`` scenarios) for 3–10 s from 15–35 s, with the min
RTT, random loss and buffer of a draw from the training ranges above (a BDP-relative buffer
against the slice's mean capacity).  Neither Verizon trace is a DeepCC TCR link.

``--lr`` overrides ``goal_tuning.LR_P95`` for this run (the learning rate was chosen with it).
Prints and writes per link: TCR, the share of targets missed on throughput, delay and loss, and
the median lane's throughput and p95 queueing delay.  With ``--reach``, also what no tuner can
beat: the policy run once at each goal of the simplex lattice with step 1/10 (66 fixed goals, no
tuning, the same link draw and window), and ``reachable``, the share of the targets some one of
them meets (``launch/deepcc_reach.py``'s measure, on these links).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Sequence

import numpy as np

REACH_GRID = 10  # --reach: the goal lattice's step is 1/REACH_GRID
SAMPLER_SEED = 20261129
SAMPLER_DRAWS = 4
OUTAGE_SEED = 20261201
OUTAGE_DRAWS = 4
OUTAGE_MBPS = 0.01  # as the outage/* scenarios: what the buffer holds waits, what arrives is dropped


LINK_SETS = ("six", "outage")


def links(sets=("six",)):
    """The scenarios of ``sets`` (module docstring); a one-line ValueError for an unknown or empty one."""
    from jaxcc import scenarios, units

    if not sets or any(x not in LINK_SETS for x in sets):
        raise ValueError(f"--links: allowed {', '.join(LINK_SETS)}; got {','.join(sets) or 'nothing'}")

    def sc(name, link, rtt_ms, dur):
        return scenarios.parse_scenario({"name": name, "duration_s": dur, "link": link, "flows": [
            {"rtt_ms": rtt_ms, "start_s": 0.0, "stop_s": dur, "controller": "bbr"}]}, source=name)

    out = []
    if "six" in sets:
        out += six_links(sc)
    if "outage" in sets:
        out += outage_links(sc)
    return out


def _draw(rng, mean=None):
    """One draw of DeepCC's training link ranges: (mean Mbit/s, min RTT s, buffer bytes, loss); with
    ``mean`` given, the rest drawn for that mean capacity."""
    from jaxcc import units

    if mean is None:
        mean = float(np.exp(rng.uniform(np.log(1.0), np.log(50.0))))
    rtt = float(rng.uniform(0.1, 0.8))
    if rng.uniform() < 0.5:
        buf = float(rng.uniform(65, 260)) * units.MSS
    else:
        buf = float(rng.uniform(0.5, 4.0)) * mean * units.MBPS * rtt
    loss = float(rng.uniform(0.0, 0.01))
    return mean, rtt, buf, loss


def outage_links(sc):
    """Four cellular-like links with an outage (module docstring): a 60-s slice of a shipped Verizon
    LTE trace (down or up, from a random offset) in 100-ms bins, dark (OUTAGE_MBPS) for 3–10 s
    starting at 15–35 s, with the min RTT, buffer (against the slice's mean) and random loss of a
    draw from DeepCC's training ranges."""
    from jaxcc import units
    from jaxcc.sim.trace import find_trace

    rng = np.random.default_rng(OUTAGE_SEED)
    out = []
    for i in range(OUTAGE_DRAWS):
        name = ("Verizon-LTE-short.down", "Verizon-LTE-short.up")[int(rng.integers(2))]
        ms = np.loadtxt(find_trace(name))  # one 1500-byte delivery opportunity per line (ms)
        bins = np.bincount((ms // 100).astype(int)) * 1500 * 8 / 0.1 / 1e6  # Mbit/s per 100 ms
        start = int(rng.integers(0, bins.size - 600))
        mbps = np.maximum(bins[start:start + 600], OUTAGE_MBPS)
        at, secs = float(rng.uniform(15.0, 35.0)), float(rng.uniform(3.0, 10.0))
        k0, k1 = int(round(at * 10)), int(round((at + secs) * 10))
        mbps[k0:k1] = OUTAGE_MBPS
        mean, rtt, buf, loss = _draw(rng, float(np.mean(mbps)))
        out.append(sc(f"lte-outage/{i}-{name.split('.')[-1]}@{start / 10:.1f}s-{mean:.1f}mbps-{rtt * 1e3:.0f}ms-"
                      f"{buf / units.MSS:.0f}pkt-loss{loss:.4f}-dark{at:.0f}+{secs:.1f}s",
                      {"buffer_bytes": buf, "loss": loss,
                       "schedule": [[round(k / 10, 1), float(x)] for k, x in enumerate(mbps)]}, rtt * 1e3, 60.0))
    return out


def six_links(sc):
    """The six links the p95 tuner's constants were chosen on (module docstring)."""
    from jaxcc import units

    out = [sc("clean/2.64mbps-176ms-130pkt", {"bandwidth_mbps": 2.64, "buffer_bytes": 130 * units.MSS, "loss": 0.0},
              176.0, 30.0),
           sc("clean/12mbps-40ms-1bdp", {"bandwidth_mbps": 12.0, "buffer_bytes": 12 * units.MBPS * 0.040, "loss": 0.0},
              40.0, 30.0)]
    rng = np.random.default_rng(SAMPLER_SEED)
    for i in range(SAMPLER_DRAWS):
        mean, rtt, buf, loss = _draw(rng)
        dur = float(min(60.0, max(30.0, 80 * rtt)))
        out.append(sc(f"train/{i}-{mean:.1f}mbps-{rtt * 1e3:.0f}ms-{buf / units.MSS:.0f}pkt-loss{loss:.4f}",
                      {"buffer_bytes": buf, "loss": loss, "poisson": {"mean_mbps": mean, "slot_ms": 10.0}},
                      rtt * 1e3, dur))
    return out


def lattice(n: int = REACH_GRID) -> list[tuple[float, float, float]]:
    """The goals (i, j, n - i - j) / n of the simplex, throughput weight first."""
    return [(i / n, j / n, (n - i - j) / n) for i in range(n + 1) for j in range(n + 1 - i)]


def reachable(sc, policy: str, targets: np.ndarray, seed: int, grid: int = REACH_GRID) -> np.ndarray:
    """[targets] bool: some fixed goal of the 1/``grid`` lattice meets the target (``--reach``)."""
    from jaxcc import scenarios
    from jaxcc.evaluation import metrics, tcr

    def with_goal(g):
        d = sc.to_dict()
        d["flows"][0]["controller"] = policy
        d["flows"][0]["goal"] = [float(x) for x in g]
        return scenarios.parse_scenario(d, source=sc.name)

    window = tuple(tcr.link_ranges(sc, seed)["window_s"])
    schedule = sc.link.capacity(seed=seed, duration_s=sc.duration_s)
    runs = tcr._simulate([with_goal(g) for g in lattice(grid)], schedule, seed, window, None)
    met = [metrics.tcr_met(np.asarray([tcr._achieved(m)] * len(targets), np.float64), targets) for m in runs]
    return np.any(np.asarray(met), axis=0)


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("tuner", "p95", "paper or p95 (jaxcc.senders.goal_tuning.TUNERS)", flag_values=fv)
    flags.DEFINE_float("lr", None, "the p95 tuner's Adam learning rate for this run (default: LR_P95)", flag_values=fv)
    flags.DEFINE_list("links", ["six"], "link sets: six (the p95 tuner's), outage (module docstring)",
                      flag_values=fv)
    flags.DEFINE_bool("reach", False, "also the share of targets some fixed lattice goal meets", flag_values=fv)
    flags.DEFINE_string("policy", "checkpoints/deepcc/deepcc.safetensors", "the DeepCC policy file", flag_values=fv)
    flags.DEFINE_integer("targets", 100, "targets per link", lower_bound=1, upper_bound=5000, flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the targets' draw (as jaxcc.tcr --seed)", lower_bound=0, flag_values=fv)
    flags.DEFINE_string("out", None, "the JSON file to write", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str]) -> int:
    from jaxcc.evaluation import tcr
    from jaxcc.senders import goal_tuning as gt

    if not fv.out:
        raise ValueError("--out: give the JSON file to write")
    if fv.lr is not None:
        gt.LR_P95 = float(fv.lr)  # read when the sender is traced, below
    t0 = time.time()
    scs = links(tuple(fv.links))
    rep = tcr.run_tcr(scs, tcr.controller_entries("policy:" + fv.policy), n_targets=fv.targets, seed=fv.seed,
                      tuner=fv.tuner)
    detail = {}
    for sc, r, ln in zip(scs, rep["tcr"], rep["links"]):  # one controller: one row per link, in order
        t = np.asarray(ln["targets"])
        m = np.asarray([[x["throughput_mbps"], x["p95_qdelay_ms"], x["loss"]] for x in r["measured"]])
        detail[r["scenario"]] = {"tcr": r["tcr"], "miss_thr": float(np.mean(m[:, 0] < t[:, 0])),
                                 "miss_delay": float(np.mean(m[:, 1] > t[:, 1])),
                                 "miss_loss": float(np.mean(m[:, 2] > t[:, 2])),
                                 "median_throughput_mbps": float(np.median(m[:, 0])),
                                 "median_p95_qdelay_ms": float(np.median(m[:, 1]))}
        if fv.reach:
            reach = reachable(sc, "policy:" + fv.policy, t, fv.seed)
            detail[r["scenario"]].update({"reachable": float(np.mean(reach)),
                                          "reachable_missed_tuned": float(np.mean(reach & ~np.asarray(r["met"])))})
    doc = {"tuner": fv.tuner, "lr_p95": gt.LR_P95, "link_sets": list(fv.links), "policy": fv.policy, "targets": fv.targets, "links": detail,
           "mean_tcr": float(np.mean([v["tcr"] for v in detail.values()])), "wall_s": round(time.time() - t0, 1)}
    with open(fv.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    for k, v in detail.items():
        print(f"{k}: " + " ".join(f"{a}={b:.3f}" for a, b in v.items()))
    print(f"mean TCR {doc['mean_tcr']:.3f}")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--out=FILE.json")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
