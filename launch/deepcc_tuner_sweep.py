"""The links DeepCC's "p95" goal tuner's constants were chosen on: none that TCR judges.

    python launch/deepcc_tuner_sweep.py --tuner=p95 --lr=0.2 --out=FILE.json [--policy=FILE] [--targets=100]

Runs ``jaxcc.evaluation.tcr.run_tcr`` (``--targets`` targets per link, ``--seed`` 0, the policy
tuned once per target by ``--tuner``, ``jaxcc.senders.goal_tuning``) on six links, none of them
``deepcc/wifi``, ``deepcc/cellular`` or ``deepcc/satellite`` (the links whose TCR judges the tuner):

* ``clean/2.64mbps-176ms-130pkt`` and ``clean/12mbps-40ms-1bdp``: the constant links of
  ``launch/deepcc_reach.py`` (30 s);
* four draws from DeepCC's training link sampler ranges (``configs/deepcc.py``: Poisson capacity
  with a log-uniform 1–50 Mbit/s mean, min RTT 100–800 ms, half of the buffers 65–260 packets and
  half 0.5–4 BDP, random loss 0–1 %), from ``numpy.random.default_rng(20261129)``; 30–60 s
  (80 min RTTs).

``--lr`` overrides ``goal_tuning.LR_P95`` for this run (the learning rate was chosen with it).
Prints and writes per link: TCR, the share of targets missed on throughput, delay and loss, and
the median lane's throughput and p95 queueing delay.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Sequence

import numpy as np

SAMPLER_SEED = 20261129
SAMPLER_DRAWS = 4


def links():
    """The six scenarios (module docstring)."""
    from jaxcc import scenarios, units

    def sc(name, link, rtt_ms, dur):
        return scenarios.parse_scenario({"name": name, "duration_s": dur, "link": link, "flows": [
            {"rtt_ms": rtt_ms, "start_s": 0.0, "stop_s": dur, "controller": "bbr"}]}, source=name)

    out = [sc("clean/2.64mbps-176ms-130pkt", {"bandwidth_mbps": 2.64, "buffer_bytes": 130 * units.MSS, "loss": 0.0},
              176.0, 30.0),
           sc("clean/12mbps-40ms-1bdp", {"bandwidth_mbps": 12.0, "buffer_bytes": 12 * units.MBPS * 0.040, "loss": 0.0},
              40.0, 30.0)]
    rng = np.random.default_rng(SAMPLER_SEED)
    for i in range(SAMPLER_DRAWS):
        mean = float(np.exp(rng.uniform(np.log(1.0), np.log(50.0))))
        rtt = float(rng.uniform(0.1, 0.8))
        if rng.uniform() < 0.5:
            buf = float(rng.uniform(65, 260)) * units.MSS
        else:
            buf = float(rng.uniform(0.5, 4.0)) * mean * units.MBPS * rtt
        loss = float(rng.uniform(0.0, 0.01))
        dur = float(min(60.0, max(30.0, 80 * rtt)))
        out.append(sc(f"train/{i}-{mean:.1f}mbps-{rtt * 1e3:.0f}ms-{buf / units.MSS:.0f}pkt-loss{loss:.4f}",
                      {"buffer_bytes": buf, "loss": loss, "poisson": {"mean_mbps": mean, "slot_ms": 10.0}},
                      rtt * 1e3, dur))
    return out


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("tuner", "p95", "paper or p95 (jaxcc.senders.goal_tuning.TUNERS)", flag_values=fv)
    flags.DEFINE_float("lr", None, "the p95 tuner's Adam learning rate for this run (default: LR_P95)", flag_values=fv)
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
    rep = tcr.run_tcr(links(), tcr.controller_entries("policy:" + fv.policy), n_targets=fv.targets, seed=fv.seed,
                      tuner=fv.tuner)
    detail = {}
    for r, ln in zip(rep["tcr"], rep["links"]):
        t = np.asarray(ln["targets"])
        m = np.asarray([[x["throughput_mbps"], x["p95_qdelay_ms"], x["loss"]] for x in r["measured"]])
        detail[r["scenario"]] = {"tcr": r["tcr"], "miss_thr": float(np.mean(m[:, 0] < t[:, 0])),
                                 "miss_delay": float(np.mean(m[:, 1] > t[:, 1])),
                                 "miss_loss": float(np.mean(m[:, 2] > t[:, 2])),
                                 "median_throughput_mbps": float(np.median(m[:, 0])),
                                 "median_p95_qdelay_ms": float(np.median(m[:, 1]))}
    doc = {"tuner": fv.tuner, "lr_p95": gt.LR_P95, "policy": fv.policy, "targets": fv.targets, "links": detail,
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
