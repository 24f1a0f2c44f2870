"""MOCC's preference sweep in the simulator: one policy file, many preferences, beside the baselines.

    python -m jaxcc.preference_sweep --checkpoint=checkpoints/mocc/mocc.safetensors --suite=mocc --out=runs/sweep
    python -m jaxcc.preference_sweep --checkpoint=RUN0,RUN1,RUN2 --suite=mocc --out=runs/sweep3   # 3 seeds
    python -m jaxcc.preference_sweep --records=runs/sweep/sweep.json --out=runs/sweep   # re-make tables, plots, bars

What it measures and how: ``jaxcc.evaluation.preference_sweep``.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.controllers import policy_file
from jaxcc.evaluation import bars
from jaxcc.evaluation.preference_sweep import DEFAULT_BASELINES, load_sweep, parse_preferences, policy_entries, run_sweep, table_markdown, write_outputs
from jaxcc.evaluation.runs import resolve_scenarios, with_duration
from jaxcc.scenarios import SUITES


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run with parsed flags ``fv``; returns the exit code."""
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    if not fv.out:
        raise ValueError("--out: give the output folder (sweep.json, table.md, bars.md, plots/)")
    bar_set = (fv.bars or "").strip() or None
    if bar_set:
        bars.check(bar_set, [])  # an unknown bar set fails before any simulation
    if fv.records:
        if fv.checkpoint:
            raise ValueError("--records re-reports an earlier sweep; give it without --checkpoint")
        records, meta = load_sweep(fv.records)
        meta = {**meta, "reported_from": os.path.abspath(fv.records)}
    else:
        if not fv.checkpoint:
            raise ValueError("--checkpoint: give the policy file(s) to sweep (comma-separated), or --records=FILE")
        policies = policy_entries(fv.checkpoint)
        prefs = parse_preferences(fv.preferences)
        baselines = [b.strip() for b in (fv.baselines or "").split(",") if b.strip()]
        for b in baselines:
            if b not in bars.BASELINE_LABELS:
                raise ValueError(f"--baselines: {b!r} is not an in-sim baseline; allowed: {', '.join(bars.BASELINE_LABELS)}")
        if fv.ticks_per_rtt is not None and fv.ticks_per_rtt < 1:
            raise ValueError(f"--ticks_per_rtt must be >= 1, got {fv.ticks_per_rtt}")
        scenarios, source = resolve_scenarios(suite=fv.suite, scenario=fv.scenario, scenario_file=fv.scenario_file)
        if fv.duration is not None:
            scenarios = [with_duration(sc, fv.duration) for sc in scenarios]
        t0 = time.time()
        rep = run_sweep(scenarios, policies, prefs, baselines, progress=fv.progress, ticks_per_rtt=fv.ticks_per_rtt)
        records = rep["results"]
        meta = {"command": "python -m jaxcc.preference_sweep " + shlex.join(list(argv)), "source": source,
                "scenarios": [sc.name for sc in scenarios], "preferences": [list(p) for p in prefs],
                "objectives": ["throughput", "delay", "loss"], "baselines": baselines,
                "policies": {e.label: policy_file(e.name) for e in policies},
                "ticks_per_rtt": fv.ticks_per_rtt or "simulator default",
                "duration_s": fv.duration or "each scenario's own", "wall_s": round(time.time() - t0, 1),
                "wall_s_by_part": rep["wall_s"], "skipped": rep["skipped"]}
    print(table_markdown(records))
    out = write_outputs(records, fv.out, meta, bar_set=bar_set, plots=fv.plots)
    if out["bars_text"]:
        print(out["bars_text"])
    for f in out["files"]:
        print(f"wrote {f}")
    return 0


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("checkpoint", None, "comma-separated policy files (or folders / training runs), e.g. one per "
                        "training seed", flag_values=fv)
    flags.DEFINE_string("preferences", None, "semicolon-separated 'w_thr,w_delay,w_loss' (default: 11 points "
                        "w_thr = 1.0 ... 0.0 on the throughput-delay edge, and (0.5,0,0.5), (0.2,0.2,0.6))",
                        flag_values=fv)
    flags.DEFINE_string("baselines", ",".join(DEFAULT_BASELINES), "comma-separated in-sim baselines run beside "
                        "(empty: none)", flag_values=fv)
    flags.DEFINE_string("suite", None, f"a scenario suite or a comma-separated list: {', '.join(sorted(SUITES))}",
                        flag_values=fv)
    flags.DEFINE_string("scenario", None, "comma-separated named scenarios (e.g. mocc/12mbps)", flag_values=fv)
    flags.DEFINE_string("scenario_file", None, "comma-separated scenario spec JSON files", flag_values=fv)
    flags.DEFINE_alias("scenario-file", "scenario_file", flag_values=fv)
    flags.DEFINE_float("duration", None, "seconds per scenario instead of each scenario's own length", flag_values=fv)
    flags.DEFINE_integer("ticks_per_rtt", None, "simulator ticks per smallest flow RTT (default: the simulator's)",
                         flag_values=fv)
    flags.DEFINE_string("records", None, "re-make the tables, plots and bars from an earlier sweep.json "
                        "(no simulation)", flag_values=fv)
    flags.DEFINE_string("bars", "mocc", "bar set(s) of jaxcc.evaluation.bars to judge the policies on (empty: none)",
                        flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (sweep.json, table.md, bars.md, plots/)", flag_values=fv)
    flags.DEFINE_bool("plots", True, "write the frontier plots", flag_values=fv)
    flags.DEFINE_bool("progress", True, "show a progress bar", flag_values=fv)
    return fv


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--suite=mocc")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
