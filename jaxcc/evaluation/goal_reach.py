"""How many tuning intervals DeepCC's online goal tuning takes to reach a target, in the simulator
and beside a ``jaxcc.emulate`` run of the same scenario.

    python -m jaxcc.goal_reach --scenario-file=F [--emulation=EMU/results.json] --out=DIR

Every flow of the scenario that has a ``"target"`` (a ``policy:FILE`` of a DeepCC policy, feature set
``deepcc_v1``) is run in the simulator (``jaxcc.sim.runner``: the ``deepcc_v1`` sender with its
tuner, ``jaxcc.senders.goal_tuning``); with ``--emulation``, the same flows' counters are read from
the C++ sender's summaries in a ``jaxcc.emulate`` results file of the same scenario.

Definitions (the tuner's own judgement, identical on both sides: ``goal_tuning.TunerState`` and
``GoalTuner`` in ``datapath/src/goal_tuning.h``): a tuning interval is ceil(4 / mi_rtts) decisions
(4 RTT, §V); it *meets* the target when its mean eq.-1 measurement meets all three bounds
(throughput >= x, p95 RTT / min RTT <= 1 + y / min RTT, loss <= z).  Per flow:

* ``tuning_steps`` — intervals tuned;
* ``first_met_step`` — the first interval that met the whole target (1-based; 0: never): how many
  tuning intervals the sender took to reach it;
* ``met_steps`` — how many intervals met it (``met_fraction_after`` = met_steps over the
  intervals from the first met one to the end: whether it held);
* ``goal_final`` and the whole-run ``throughput_mbps``, ``p95_qdelay_ms``, ``loss``
  (``jaxcc.evaluation.metrics.flow_metrics`` in the simulator; the emulation record's own figures).

Writes ``DIR/goal_reach.json`` and prints one line per flow and side.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jaxcc import scenarios, units
from jaxcc.evaluation import metrics


def _met_fraction(steps: int, first: int, met: int) -> float | None:
    return None if first <= 0 else met / max(steps - first + 1, 1)


def simulate(sc: scenarios.Scenario, seed: int = 0) -> list[dict[str, Any]]:
    """The tuner's counters and the whole-run metrics of each flow of ``sc`` that has a target."""
    from jaxcc import senders
    from jaxcc.sim import runner

    tuned = [j for j, fl in enumerate(sc.flows) if getattr(fl, "target", None) is not None]
    if not tuned:
        raise ValueError(f"scenario {sc.name!r}: no flow has a 'target' (DeepCC online goal tuning)")
    (batch,) = runner.build_batches([runner.Item(sc, seed)], resolve=senders.resolve)
    _, traj, rates, cstates = runner.run_batch(batch, keep_states=True)
    tr = metrics.from_batch(traj, rates, batch, 0)
    out = []
    for j in tuned:
        cs = cstates[int(batch.ctrl_ids[0, j])]
        tuner = cs.own.tuner
        steps, first, met = (int(np.asarray(x)[0, j]) for x in (tuner.steps, tuner.first_met, tuner.met_steps))
        fm = metrics.flow_metrics(tr, j, (0.0, sc.duration_s))
        fl = sc.flows[j]
        out.append({"side": "simulator", "flow": j, "controller": fl.controller,
                    "target": dict(zip(scenarios.TARGET_FIELDS, map(float, fl.target))),
                    "tuning_steps": steps, "first_met_step": first, "met_steps": met,
                    "met_fraction_after": _met_fraction(steps, first, met),
                    "goal_final": [float(x) for x in np.asarray(tuner.goal)[0, j]],
                    "throughput_mbps": fm["throughput"] / units.MBPS, "p95_qdelay_ms": fm["p95_qdelay"] * 1e3,
                    "loss": fm["loss"]})
    return out


def from_emulation(path: str, scenario_name: str) -> list[dict[str, Any]]:
    """The same counters from a ``jaxcc.emulate`` results file (the C++ sender's summaries)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError(f"--emulation {path}: cannot read a jaxcc.emulate results.json ({e})") from None
    out = []
    for rec in data.get("results", []) if isinstance(data, dict) else []:
        if rec.get("scenario") != scenario_name:
            continue
        for j, fl in enumerate(rec.get("per_flow", [])):
            snd = fl.get("sender_summary") or {}
            if "tuning_steps" not in snd:
                continue
            steps, first, met = (int(snd.get(k, 0)) for k in ("tuning_steps", "tuning_first_met_step",
                                                               "tuning_met_steps"))
            out.append({"side": "emulation", "flow": j, "controller": rec.get("controller"),
                        "target": snd.get("target"), "tuning_steps": steps, "first_met_step": first,
                        "met_steps": met, "met_fraction_after": _met_fraction(steps, first, met),
                        "goal_final": snd.get("goal_final"), "throughput_mbps": fl.get("throughput_mbps"),
                        "p95_qdelay_ms": fl.get("p95_qdelay_ms"), "loss": fl.get("loss"),
                        "valid": (rec.get("delay_check") or {}).get("valid")})
    if not out:
        raise ValueError(f"--emulation {path}: no record of scenario {scenario_name!r} with a tuned flow "
                         f"(a sender summary with tuning_steps)")
    return out
