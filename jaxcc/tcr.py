"""DeepCC's target completion ratio (TCR, IEEE/ACM ToN 2022 §VI-B) in the simulator.

    python -m jaxcc.tcr --controller=policy:checkpoints/deepcc/deepcc.safetensors,bbr,cubic,copa \
        --suite=deepcc --targets=500 --seed=0 --out=runs/tcr
    python -m jaxcc.tcr --records=runs/tcr/results.json --out=runs/tcr   # re-make plots and bars only

What it measures and how: ``jaxcc.evaluation.tcr``.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.evaluation import bars
from jaxcc.evaluation.runs import resolve_scenarios, scenario_specs
from jaxcc.evaluation.tcr import DEFAULT_TARGETS, MAX_LOSS, MAX_TARGETS, TUNING_INTERVAL_RTTS, WARMUP_TUNING_INTERVALS, controller_entries, load_results, run_tcr, table_markdown, write_outputs
from jaxcc.scenarios import SUITES
from jaxcc.sim.controller import DEFAULT_TUNER, TUNER_CODES


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run with parsed flags ``fv``; returns the exit code."""
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    if not fv.out:
        raise ValueError("--out: give the output folder (results.json, plots/)")
    bar_set = (fv.bars or "").strip() or None
    if bar_set:
        bars.check(bar_set, [])  # an unknown bar set fails before any simulation
    if fv.records:
        if fv.controller or fv.suite or fv.scenario or fv.scenario_file:
            raise ValueError("--records re-reports an earlier run; give it without --controller and scenarios")
        doc = load_results(fv.records)
        doc["meta"] = {**doc.get("meta", {}), "reported_from": os.path.abspath(fv.records)}
    else:
        entries = controller_entries(fv.controller)
        if fv.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {fv.seed}")
        if fv.ticks_per_rtt is not None and fv.ticks_per_rtt < 1:
            raise ValueError(f"--ticks_per_rtt must be >= 1, got {fv.ticks_per_rtt}")
        if not 1 <= fv.targets <= MAX_TARGETS:
            raise ValueError(f"--targets must be in [1, {MAX_TARGETS}], got {fv.targets}")
        scenarios, source = resolve_scenarios(suite=fv.suite, scenario=fv.scenario, scenario_file=fv.scenario_file)
        t0 = time.time()
        if fv.tuner not in TUNER_CODES:
            raise ValueError(f"--tuner must be one of {', '.join(TUNER_CODES)}, got {fv.tuner!r}")
        rep = run_tcr(scenarios, entries, n_targets=fv.targets, seed=fv.seed, ticks_per_rtt=fv.ticks_per_rtt,
                      progress=fv.progress, tuner=fv.tuner)
        doc = {"tcr": rep["tcr"], "links": rep["links"], "meta": {
            "command": "python -m jaxcc.tcr " + shlex.join(list(argv)), "source": source, "seed": fv.seed,
            "targets": fv.targets, "objectives": ["throughput", "delay", "loss"],
            "met": "throughput_mbps >= T1 and p95_qdelay_ms <= T2 and loss <= T3, over each link's window_s",
            "ranges": f"T1 in [0, mean capacity over the window], T2 in [0, buffer / mean capacity], "
                      f"T3 in [0, {MAX_LOSS:g}], uniform",
            "window": f"from {WARMUP_TUNING_INTERVALS} tuning intervals of {TUNING_INTERVAL_RTTS} min RTTs "
                      f"(capped at half the run) to the end",
            "controllers": {e.label: e.name for e in entries},
            "tuned": [e.label for e in entries if e.tuned], "tuner": fv.tuner,
            "ticks_per_rtt": fv.ticks_per_rtt or "simulator default",
            "wall_s": round(time.time() - t0, 1), "wall_s_by_part": rep["wall_s"]}}
    print(table_markdown(doc["tcr"]))
    out = write_outputs(doc, fv.out, bar_set=bar_set, plots=fv.plots)
    if out["bars_text"]:
        print(out["bars_text"])
    for f in out["files"]:
        print(f"wrote {f}")
    if fv.report:
        from jaxcc import report as html_report
        specs, missing = scenario_specs([ln["scenario"] for ln in doc["links"]],
                                        None if fv.records else scenarios)
        print("wrote " + html_report.tcr(os.path.join(fv.out, "results.json"), figures=out["files"], specs=specs,
                                         command="python -m jaxcc.tcr " + shlex.join(list(argv)), missing_specs=missing))
    return 0


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("controller", None, "comma-separated controllers: bbr, cubic, reno, copa, oracle, fixed:MBPS, "
                        "policy:FILE (a deepcc_v1 policy runs once per target with online tuning)", flag_values=fv)
    flags.DEFINE_string("suite", None, f"a scenario suite or a comma-separated list: {', '.join(sorted(SUITES))}",
                        flag_values=fv)
    flags.DEFINE_string("scenario", None, "comma-separated named scenarios (e.g. deepcc/cellular)", flag_values=fv)
    flags.DEFINE_string("scenario_file", None, "comma-separated scenario spec JSON files (one flow each)",
                        flag_values=fv)
    flags.DEFINE_alias("scenario-file", "scenario_file", flag_values=fv)
    flags.DEFINE_string("tuner", DEFAULT_TUNER, "a DeepCC policy's online goal tuner (jaxcc.senders.goal_tuning): p95 "
                        "(delay judged by its tail, g3 follows g2; the default) or paper (§IV-C read literally)",
                        flag_values=fv)
    flags.DEFINE_integer("targets", DEFAULT_TARGETS, "targets per link (DeepCC §VI-B: 500)", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "draws the targets (with the link's name) and a random link's capacity",
                         flag_values=fv)
    flags.DEFINE_integer("ticks_per_rtt", None, "simulator ticks per flow RTT (default: the simulator's)",
                         flag_values=fv)
    flags.DEFINE_string("records", None, "re-make the plots and bars from an earlier results.json (no simulation)",
                        flag_values=fv)
    flags.DEFINE_string("bars", "deepcc", "bar set(s) of jaxcc.evaluation.bars to judge the policies on (empty: none)",
                        flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (results.json, plots/)", flag_values=fv)
    flags.DEFINE_bool("plots", True, "write the per-link target plots", flag_values=fv)
    flags.DEFINE_bool("progress", True, "print each TCR as it is measured", flag_values=fv)
    flags.DEFINE_bool("report", False, "also write OUT/report.html (TCR tables, targets, bars, figures, command, "
                      "version, scenario specs; jaxcc.report)", flag_values=fv)
    return fv


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--suite=deepcc")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
