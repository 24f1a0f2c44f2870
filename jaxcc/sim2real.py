"""Sim-to-real report: the same controllers on the same scenarios, in the simulator and in netns.

    python -m jaxcc.sim2real --controller=fixed:40,bbr[,policy:FILE] --suite=pareto --out=DIR
    python -m jaxcc.sim2real --compare SIM/results.json EMU/results.json   # only compare
    python -m jaxcc.sim2real --compare SIM/results.json EMU/results.json --out=DIR --report   # + DIR/report.html

What it measures and how: ``jaxcc.evaluation.sim2real``.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from typing import Sequence

from jaxcc.cli import dashed_aliases, run_absl_cli
from jaxcc.evaluation.sim2real import BOUNDS, compare, format_rows, invalid_runs, overlay_figures, rerun, write_report


def define_flags(fv):
    """The command's flags on ``fv`` (an ``absl.flags.FlagValues``); dashed spellings too."""
    from absl import flags

    flags.DEFINE_string("controller", None, "comma-separated controllers (fixed:MBPS, bbr, policy:FILE)", flag_values=fv)
    flags.DEFINE_string("suite", None, "a scenario suite", flag_values=fv)
    flags.DEFINE_string("scenario", None, "a named scenario", flag_values=fv)
    flags.DEFINE_string("scenario_file", None, "a scenario spec JSON file", flag_values=fv)
    flags.mark_flags_as_mutual_exclusive(["suite", "scenario", "scenario_file"], flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (default results/sim2real; with --compare only for --report)",
                        flag_values=fv)
    flags.DEFINE_bool("report", False, "also write OUT/report.html: the comparison, both sides' metrics and figures, "
                      "the bounds, command, version and scenario specs in one self-contained file (jaxcc.report)",
                      flag_values=fv)
    flags.DEFINE_integer("rerun_invalid", 0, "re-run emulated runs marked invalid up to N times each", lower_bound=0,
                         flag_values=fv)
    flags.DEFINE_bool("compare", False, "only compare two results.json: --compare SIM_JSON EMU_JSON", flag_values=fv)
    flags.DEFINE_float("duration", None, "seconds per scenario on both sides instead of each scenario's own length "
                       "(jaxcc.evaluate's and jaxcc.emulate's --duration)", flag_values=fv)
    return dashed_aliases(fv)


def main(fv, argv: Sequence[str] = (), files: Sequence[str] = ()) -> int:
    """Run both sides and compare them, or (``--compare``) compare the two results.json ``files``."""
    if fv.duration is not None and not (math.isfinite(fv.duration) and fv.duration > 0):
        raise ValueError(f"--duration: must be > 0 seconds, got {fv.duration:g}")
    command = "python -m jaxcc.sim2real " + shlex.join(argv)
    if fv.compare:
        if fv.report and not fv.out:
            raise ValueError("--report with --compare needs --out=DIR (the folder for report.html)")
        rows = compare(*files)
        invalid = invalid_runs(files[1])
        print(format_rows(rows, invalid))
        overlay = overlay_figures(fv.out, *files) if fv.out else []
        if fv.report:
            print("wrote " + write_report(fv.out, command, rows, invalid, *files, overlay_figures=overlay))
        return 0
    out = fv.out or "results/sim2real"
    if not fv.controller or not (fv.suite or fv.scenario or fv.scenario_file):
        raise ValueError("--controller and one of --suite/--scenario/--scenario-file are required (or --compare)")
    which = (["--suite", fv.suite] if fv.suite else ["--scenario", fv.scenario] if fv.scenario
             else ["--scenario-file", fv.scenario_file])
    sim_dir, emu_dir = os.path.join(out, "sim"), os.path.join(out, "emulation")
    py = sys.executable
    duration = [] if fv.duration is None else [f"--duration={fv.duration:g}"]
    subprocess.run([py, "-m", "jaxcc.evaluate", f"--controller={fv.controller}", f"{which[0]}={which[1]}",
                    f"--out={sim_dir}", *duration], check=True)
    subprocess.run([py, "-m", "jaxcc.emulate", f"--controller={fv.controller}", f"{which[0]}={which[1]}",
                    f"--out={emu_dir}", *duration], check=True)
    emu_json = os.path.join(emu_dir, "results.json")
    for attempt in range(fv.rerun_invalid):
        todo = invalid_runs(emu_json)
        if not todo:
            break
        rerun(todo, fv.controller.split(","), which if not fv.suite else None, emu_json,
              os.path.join(emu_dir, f"rerun{attempt + 1}"), duration)
    rows = compare(os.path.join(sim_dir, "results.json"), emu_json)
    invalid = invalid_runs(emu_json)
    print(format_rows(rows, invalid))
    with open(os.path.join(out, "sim2real.json"), "w", encoding="utf-8") as fh:
        json.dump({"bounds": BOUNDS, "rows": rows, "invalid": invalid}, fh, indent=2)
    overlay = overlay_figures(out, os.path.join(sim_dir, "results.json"), emu_json)
    if fv.report:
        from jaxcc.evaluation.runs import resolve_scenarios
        scs = resolve_scenarios(**{which[0].lstrip("-").replace("-", "_"): which[1]})[0]
        print("wrote " + write_report(out, command, rows, invalid, os.path.join(sim_dir, "results.json"),
                                      emu_json, scenarios=scs, overlay_figures=overlay))
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors are one line, exit 2.
    ``--compare`` takes the two results.json files as its arguments."""
    compare_mode = any(a in ("--compare", "--compare=true", "--compare=True") for a in argv[1:])
    return run_absl_cli(argv, __doc__, define_flags, main, "--controller=bbr --suite=pareto", uses_jax=False,
                        positional=("SIM_JSON", "EMU_JSON") if compare_mode else ())


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
