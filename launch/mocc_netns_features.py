"""Why a MOCC policy's window keeps moving over netns where the simulator holds it still: the
policy's four features at a steady preference, simulator against the emulated run's own log,
and the simulator's settle run again with the emulated run's max ACK rate.

    python -m jaxcc.emulate --scenario=emu/mocc_settle --controller=policy:FILE --out=DIR
    PYTHONPATH=. python3 launch/mocc_netns_features.py FILE DIR/runs/*/flow0 [--smooth=5]

Over netns the features are recomputed from the sender's log (``sender.csv``, one row per
decision), exactly as ``MoccFeatures`` computes them (``jaxcc.envs.mocc`` "State"): the row's
``throughput_mbps`` is the interval's delivery (ACK) rate and ``sent_mbps`` its send rate, the
max ACK rate is the running max of ``throughput_mbps`` (of its EWMA when the file states
``max_ack_ewma``), ``cwnd_bytes`` is the window in force during the interval, ``rtt_mean_ms``
and ``min_rtt_ms`` give delay / timeout.  In the simulator they are read from the sender's
feature window at each decision (``runner.run_batch``'s probe).  Both are summarised over the
last 5 s of each preference (10–15, 25–30 and 40–45 s of ``emu/mocc_settle``): mean and standard
deviation of each feature, and how often a decision moved the window.  The policy's greedy
action on the recomputed features (and the logged preference) is checked against the logged
action at every decision.  The max over the run of an EWMA of the logged ACK rate is printed
for a few weights (``MoccParams.max_ack_ewma``; weight 1 is the raw rate).

The replay: the simulator's sender with its max ACK rate raised, decision by decision, to the
running max the emulated run had measured by the same decision (the sender's ``observe``
wrapped; everything else as deployed).  Where it then lands on the emulated windows, the max
ACK rate accounts for the level; where it still settles and netns does not, the rest is the
interval-to-interval noise of the features.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import mocc_settle_sim
from jaxcc import policyfile
from jaxcc.emulation import settle
from jaxcc.emulation.spec import BUILTIN_SCENARIOS
from jaxcc.envs import mocc as menv
from jaxcc.senders import common, mocc_v1
from jaxcc.sim.controller import ControllerParams
from jaxcc.units import MBPS

NAMES = ("delay/timeout", "ack/max ack", "send/max ack", "cwnd/BDP")
WINDOWS_S = ((10.0, 15.0), (25.0, 30.0), (40.0, 45.0))  # the last 5 s of each preference
REPORT_S = (1.0, 5.0, 15.0, 30.0, 45.0)
EWMA_WEIGHTS = (1.0, 0.5, 0.25, 0.125)  # the max of an EWMA of the logged ACK rate (``max_ack_ewma``)


def netns_log(flow_dir: str, max_ack_ewma: float = 1.0) -> dict:
    """The emulated run's decisions: time (s), window (bytes), the four features, the max ACK
    rate (bytes/s: the running max of the ACK rate, of its EWMA with weight ``max_ack_ewma`` < 1
    as the file's sender keeps it), and the rates, RTTs, logged actions and preferences (the last
    two when the log has them)."""
    path = Path(flow_dir) / "sender.csv"
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path}: no decisions")
    col = {k: np.array([float(r[k]) for r in rows]) for k in
           ("t_s", "cwnd_bytes", "throughput_mbps", "sent_mbps", "rtt_mean_ms", "min_rtt_ms")}
    ack, snd = col["throughput_mbps"] * MBPS, col["sent_mbps"] * MBPS  # bytes/s
    max_ack = np.maximum.accumulate(ewma(ack, max_ack_ewma))
    out = {"t": col["t_s"], "cwnd": col["cwnd_bytes"], "max_ack": max_ack, "ack": ack, "snd": snd,
           "rtt": col["rtt_mean_ms"] / 1e3, "min_rtt": col["min_rtt_ms"] / 1e3,
           "feats": features(ack, snd, col["rtt_mean_ms"] / 1e3, col["min_rtt_ms"] / 1e3, col["cwnd_bytes"], max_ack)}
    if "action" in rows[0] and "goal" in rows[0]:
        out["action"] = np.array([int(float(r["action"])) for r in rows])
        out["goal"] = np.array([[float(x) for x in r["goal"].split(";")] for r in rows], np.float32)
    return out


def features(ack, snd, rtt, min_rtt, cwnd, max_ack) -> np.ndarray:
    """The four features of each row as ``MoccFeatures`` computes them (rates in bytes/s, times in s)."""
    p = menv.MoccParams()  # the env's timeout (``jaxcc.envs.mocc.timeout``), here in float64
    tmo = np.maximum(p.timeout_min_s, p.timeout_rtts * min_rtt)
    safe = np.maximum(max_ack, 1e-9)
    return np.stack([rtt / tmo, ack / safe, snd / safe, cwnd / np.maximum(safe * min_rtt, 1e-9)], axis=1)


def ewma(x: np.ndarray, alpha: float) -> np.ndarray:
    """y_0 = x_0, y_j = (1 − alpha) y_{j−1} + alpha x_j."""
    y = np.empty_like(x)
    y[0] = x[0]
    for j in range(1, len(x)):
        y[j] = (1.0 - alpha) * y[j - 1] + alpha * x[j]
    return y


def greedy_actions(path: str, net: dict) -> np.ndarray:
    """The policy's greedy action on each row's recomputed features and logged preference: where
    it is the logged action, the recomputation reads the interval as the sender did."""
    spec, tensors = policyfile.load(path)
    ten = common.tensors_as_arrays(tensors)
    greedy = jax.jit(jax.vmap(lambda f, g: policyfile.apply(spec, ten, f[None, :], g)))
    return np.asarray(greedy(jnp.asarray(net["feats"], jnp.float32), jnp.asarray(net["goal"])))


def sim_run(path: str) -> dict:
    """The simulator's run of ``emu/mocc_settle``: the same keys as ``netns_log``, at decisions."""

    def probe(cstates):
        s = cstates[0]
        return {"feats": s.hist[0, -1, :], "cwnd": s.own.cwnd[0, 0], "max_ack": s.own.paper.max_ack_rate[0, 0],
                "decided": s.tick[0] == 0}

    _, t, rec = mocc_settle_sim.run_decisions(path, probe)
    return {"t": t, "cwnd": rec["cwnd"], "feats": rec["feats"], "max_ack": rec["max_ack"]}


def replay_sender(s: common.Sender, max_ack_series) -> common.Sender:
    """The ``mocc_v1`` sender ``s`` with its max ACK rate raised, after its j-th interval (j from
    0), to at least ``max_ack_series[j]`` (bytes/s; the series' last value after its end)."""
    table = jnp.asarray(max_ack_series, jnp.float32)

    def observe(own, m, run, rtt0):
        j = jnp.clip(own.paper.steps.astype(jnp.int32), 0, table.shape[0] - 1)
        paper = own.paper.replace(max_ack_rate=jnp.maximum(own.paper.max_ack_rate, table[j]))
        return s.observe(own._replace(paper=paper), m, run, rtt0)

    return s._replace(observe=observe)


def replay_resolve(max_ack_series):
    """``senders.resolve`` for one MOCC ``policy:FILE`` whose sender is ``replay_sender``'s."""

    def resolve(name: str):
        spec, tensors = policyfile.load(name.split(":", 1)[1])
        if spec["features"]["name"] != mocc_v1.NAME:
            raise SystemExit(f"{name}: a {mocc_v1.NAME} policy expected, got {spec['features']['name']}")
        s = replay_sender(mocc_v1.sender(spec, tensors), max_ack_series)
        return common.make_controller(name, spec, s, safe=True), ControllerParams.zeros()

    return resolve


def summary(run: dict, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, float]:
    a = (run["t"] >= lo) & (run["t"] < hi)
    moved = np.abs(np.diff(np.log(run["cwnd"][a]))) > 1e-6
    return run["feats"][a].mean(axis=0), run["feats"][a].std(axis=0), float(moved.mean())


def settle_line(segs: list[dict]) -> str:
    out = []
    for s in segs:
        d = s["settle_decisions"]
        out.append(f"{s['preference']}: {s['previous_level']:.0f} -> {s['level']:.0f} B, "
                   + (f"settled in {s['settle_s']:.2f} s" if d is not None
                      else f"not settled ({100 * s['tail_in_band']:.0f} % of the tail in band)"))
    return "; ".join(out)


def main(argv: list[str]) -> None:
    smooth, args = 5, []
    for a in argv[1:]:
        if a.startswith("--smooth="):
            smooth = int(a.split("=", 1)[1])
        else:
            args.append(a)
    if len(args) != 2:
        raise SystemExit(__doc__)
    path, flow_dir = args
    spec, _ = policyfile.load(path)
    net, sim = netns_log(flow_dir, float(spec["features"].get("max_ack_ewma", 1.0))), sim_run(path)
    cap = float(BUILTIN_SCENARIOS[mocc_settle_sim.SCENARIO]["link"]["bandwidth_mbps"]) * MBPS
    print(f"{path} on {mocc_settle_sim.SCENARIO}; emulated run {flow_dir}")
    for lo, hi in WINDOWS_S:
        ms, ss, vs = summary(sim, lo, hi)
        mn, sn, vn = summary(net, lo, hi)
        print(f"  {lo:g}-{hi:g} s   simulator mean ± sd | netns mean ± sd")
        for i, n in enumerate(NAMES):
            print(f"    {n:14s} {ms[i]:.3f} ± {ss[i]:.3f} | {mn[i]:.3f} ± {sn[i]:.3f}")
        print(f"    {'window moved':14s} {100 * vs:.0f} % of decisions | {100 * vn:.0f} %")
    at = lambda run, t: run["max_ack"][min(int(np.searchsorted(run["t"], t)), len(run["t"]) - 1)] / cap
    print("  max ACK rate / link at " + ", ".join(f"{t:g} s" for t in REPORT_S) + ":")
    print("    simulator " + " ".join(f"{at(sim, t):.2f}" for t in REPORT_S)
          + " | netns " + " ".join(f"{at(net, t):.2f}" for t in REPORT_S))
    print("  the max over the run of an EWMA of the logged ACK rate / link, weight "
          + ", ".join(f"{a:g}: {ewma(net['ack'], a).max() / cap:.2f}" for a in EWMA_WEIGHTS))
    print(f"  settle (±10 % of a {smooth}-decision mean):")
    print("    simulator:                    " + settle_line(mocc_settle_sim.settle(path, smooth)))
    print("    netns:                        " + settle.summary_line(settle.analyse_run_dir(flow_dir, smooth=smooth)))
    print("    simulator, netns max ACK rate: " + settle_line(
        mocc_settle_sim.settle(path, smooth, resolve=replay_resolve(net["max_ack"]))))
    if "action" in net:
        print(f"  the greedy action on the recomputed features is the logged one at "
              f"{100 * np.mean(greedy_actions(path, net) == net['action']):.1f} % of {len(net['t'])} decisions")


if __name__ == "__main__":
    main(sys.argv)
