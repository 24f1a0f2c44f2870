"""Evaluate controllers on scenarios in the simulator: a table, ``results.json`` and plots.

    python -m jaxcc.evaluate --controller=bbr,cubic,oracle,fixed:40 --suite=pareto --seeds=3 --out=runs/eval
    python -m jaxcc.evaluate --scenario=pareto/fixed50,pareto/shared2 --controller=bbr --out=runs/x --report
                                                    # + runs/x/report.html: every table and figure (jaxcc.report)
    python -m jaxcc.evaluate --scenario-file=my_link.json --out=runs/y     # the flows' own controllers
    python -m jaxcc.evaluate --trace=my.down,my.up --controller=bbr,cubic --out=runs/t   # your own traces
    python -m jaxcc.evaluate --checkpoint=RUN --controller=bbr,cubic --suite=pareto,pareto-fair,robust \\
        --bars=pareto --baseline_start=own --out=runs/z   # every Pareto bar (jaxcc/evaluation/bars.py)
    python -m jaxcc.evaluate --suite=aurora-bw,aurora-loss --duration=120 \\
        --controller=cubic,policy:checkpoints/aurora/aurora.safetensors --out=runs/aurora   # Aurora §4.1, 2 min

The code: ``jaxcc.evaluation.runs`` (the runs, their records and ``results.json``'s contract).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Sequence

from jaxcc.evaluation import metrics
from jaxcc.evaluation.runs import BASELINE_START, checkpoint_entries, controller_entries, format_table, resolve_scenarios, run_evaluation, scenario_specs, with_duration, write_results
from jaxcc.scenarios import SUITES


def main(flag_values=None, argv: Sequence[str] = ()) -> int:
    """Run the command with parsed absl flags (``flags.FLAGS`` by default); returns the exit code."""
    from absl import flags, logging

    logging.set_verbosity(logging.WARNING)
    FLAGS = flag_values if flag_values is not None else flags.FLAGS
    entries = controller_entries(FLAGS.controller) if (FLAGS.controller or not FLAGS.checkpoint) else []
    if FLAGS.checkpoint:
        entries += checkpoint_entries(FLAGS.checkpoint, taken=[e.label for e in entries])
    if FLAGS.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {FLAGS.seeds}")
    scenarios, source = resolve_scenarios(suite=FLAGS.suite, scenario=FLAGS.scenario,
                                          scenario_file=FLAGS.scenario_file, trace=FLAGS.trace)
    if FLAGS.duration is not None:
        scenarios = [with_duration(sc, FLAGS.duration) for sc in scenarios]
    if not FLAGS.out:
        raise ValueError("--out: give the output folder for results.json and plots")
    if FLAGS.bars:
        from jaxcc.evaluation import bars
        bars.check(FLAGS.bars, [])  # an unknown bar set fails here, before any simulation
    t0 = time.time()
    if FLAGS.ticks_per_rtt is not None and FLAGS.ticks_per_rtt < 1:
        raise ValueError(f"--ticks_per_rtt must be >= 1, got {FLAGS.ticks_per_rtt}")
    report = run_evaluation(scenarios, entries, seeds=FLAGS.seeds, progress=FLAGS.progress,
                            ticks_per_rtt=FLAGS.ticks_per_rtt, baseline_start=FLAGS.baseline_start)
    print(format_table(report["results"]))
    for sk in report["skipped"]:
        print(f"not run: {sk['controller']} on {sk['scenario']}: {sk['reason']}")
    meta = {"command": "python -m jaxcc.evaluate " + shlex.join(list(argv)),
            "source": source, "controllers": [e.label for e in entries], "seeds": FLAGS.seeds,
            "ticks_per_rtt": FLAGS.ticks_per_rtt or "simulator default",
            "duration_s": FLAGS.duration or "each scenario's own",
            "baseline_start": FLAGS.baseline_start,
            "wall_s": round(time.time() - t0, 1),
            "ankh": "((1 - R/C) + d95/d_max + loss)/3, d_max = max p95 one-way delay over this run's controllers per scenario",
            "jain": f"over the last {metrics.JAIN_LAST_S:g} s of multi-flow scenarios",
            "recovery": f"ramp_s, step_ramp_s, reclaim_s: s until >= {metrics.RAMP_FRACTION:g} of capacity in a "
                        f"{metrics.RAMP_BIN_S:g} s bin, held on average for {metrics.RAMP_HOLD_S:g} s from it "
                        f"(null: never); time_to_fair_s: s after each arrival or departure (fair_at_s) until "
                        f"Jain >= {metrics.FAIR_JAIN:g} in such a bin, held likewise; min_fair_share over Jain's window",
            "skipped": report["skipped"]}
    if FLAGS.bars:
        verdicts = bars.check(FLAGS.bars, report["results"])
        print(bars.format_verdicts(verdicts))
        meta["bars"] = {"set": FLAGS.bars, "verdicts": bars.as_json(verdicts)}
    path = write_results(report, FLAGS.out, meta)
    print(f"wrote {path}")
    if FLAGS.plots:
        from jaxcc import plots
        files = plots.figures_from_file(path, os.path.join(FLAGS.out, "plots"))  # exactly results.json's data
        print(f"wrote {len(files)} plots to {os.path.join(FLAGS.out, 'plots')}")
    if FLAGS.report:
        from jaxcc import report as html_report
        print("wrote " + html_report.evaluation(path, command=meta["command"], figures=files if FLAGS.plots else [],
                                                specs=scenario_specs([], scenarios)[0]))
    return 0


def define_flags(flag_values=None):
    """Define the command's flags on ``flag_values`` (``flags.FLAGS`` by default)."""
    from absl import flags

    fv = flag_values if flag_values is not None else flags.FLAGS
    flags.DEFINE_string("controller", None, "comma-separated controllers: bbr, cubic, reno, oracle, fixed:MBPS, policy:FILE, "
                        "FILE.py:NAME (your own Python controller, docs/controllers.md) (default: each flow's own "
                        "controller)", flag_values=fv)
    flags.DEFINE_string("suite", None, f"a scenario suite or a comma-separated list: {', '.join(sorted(SUITES))}",
                        flag_values=fv)
    flags.DEFINE_string("scenario", None, "comma-separated named scenarios (e.g. pareto/fixed50)", flag_values=fv)
    flags.DEFINE_string("scenario_file", None, "comma-separated scenario spec JSON files", flag_values=fv)
    flags.DEFINE_alias("scenario-file", "scenario_file", flag_values=fv)
    flags.DEFINE_string("trace", None, "comma-separated Mahimahi trace files, each a one-flow link trace/FILE: "
                        "40 ms RTT, 375 KB drop-tail buffer, 60 s (jaxcc.scenarios.trace_scenario)", flag_values=fv)
    flags.DEFINE_string("checkpoint", None, "a training run / stage checkpoint / folder of .safetensors policies: "
                        "adds one controller per exported policy (with or without --controller)", flag_values=fv)
    flags.DEFINE_integer("seeds", 1, "runs per scenario × controller (random links draw a new link per seed)",
                         flag_values=fv)
    flags.DEFINE_float("duration", None, "seconds per scenario instead of each scenario's own length (flows that "
                       "ran to the end still do; e.g. 120 for the Aurora paper's two-minute tests)", flag_values=fv)
    flags.DEFINE_enum("baseline_start", "skip", list(BASELINE_START), "a baseline given with --controller on a flow "
                      "with a start rate (init_rate_mbps, e.g. robust/start1pct), which only a learned sender takes: "
                      "skip = not run there; own = run from its own initial window/rate, its record says so",
                      flag_values=fv)
    flags.DEFINE_integer("ticks_per_rtt", None, "simulator ticks per smallest flow RTT (default: the simulator's, 8). "
                         "16 removes most tick-rounding artifacts of the classic baselines; exported policies "
                         "assume the resolution they were trained at", flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (results.json, plots/)", flag_values=fv)
    flags.DEFINE_bool("plots", True, "write plots", flag_values=fv)
    flags.DEFINE_bool("report", False, "also write OUT/report.html: every metric, every figure, the command, "
                      "version and scenario specs in one self-contained file (jaxcc.report)", flag_values=fv)
    from jaxcc.evaluation import bars

    flags.DEFINE_string("bars", None, "check every evaluated policy against sets of the project's quality bars "
                        "(jaxcc/evaluation/bars.py; a comma-separated list): " + ", ".join(sorted(bars.BAR_SETS))
                        + " (mocc: from jaxcc.preference_sweep's records; deepcc: from jaxcc.tcr's)", flag_values=fv)
    flags.DEFINE_bool("progress", True, "show a progress bar", flag_values=fv)
    return fv


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--suite=pareto")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
