"""How many tuning intervals DeepCC's online goal tuning takes to reach a target, in the simulator
and beside a ``jaxcc.emulate`` run of the same scenario.

    python -m jaxcc.goal_reach --scenario-file=F [--emulation=EMU/results.json] --out=DIR

What it measures and how: ``jaxcc.evaluation.goal_reach``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Sequence

from jaxcc import scenarios
from jaxcc.evaluation.goal_reach import from_emulation, simulate


def _line(r: dict) -> str:
    frac = r["met_fraction_after"]
    return (f"{r['side']:<10} flow {r['flow']}: first met at tuning interval {r['first_met_step']} of "
            f"{r['tuning_steps']}, met {r['met_steps']}" + (f" ({frac:.0%} of those after)" if frac is not None else "")
            + f"; {r['throughput_mbps']:.2f} Mbit/s, p95 qdelay {r['p95_qdelay_ms']:.1f} ms, loss {r['loss']:.4f}")


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("scenario_file", None, "a scenario JSON file with a DeepCC flow that has a target", flag_values=fv)
    flags.DEFINE_alias("scenario-file", "scenario_file", flag_values=fv)
    flags.DEFINE_string("scenario", None, "a named scenario instead of --scenario-file", flag_values=fv)
    flags.DEFINE_string("emulation", None, "a jaxcc.emulate results.json of the same scenario", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the simulator's link seed", flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (goal_reach.json)", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    if bool(fv.scenario_file) == bool(fv.scenario):
        raise ValueError("give one of --scenario-file or --scenario")
    if not fv.out:
        raise ValueError("--out is required")
    sc = scenarios.load_scenario(fv.scenario_file) if fv.scenario_file else scenarios.get_scenario(fv.scenario)
    rows = simulate(sc, fv.seed)
    if fv.emulation:
        rows += from_emulation(fv.emulation, sc.name)
    os.makedirs(fv.out, exist_ok=True)
    with open(os.path.join(fv.out, "goal_reach.json"), "w", encoding="utf-8") as fh:
        json.dump({"scenario": sc.name, "seed": fv.seed, "flows": rows}, fh, indent=1)
    for r in rows:
        print(_line(r))
    return 0


def run_cli(argv: Sequence[str]) -> int:
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--scenario-file=F")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
