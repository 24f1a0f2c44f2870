"""``python -m jaxcc.fidelity``: run a sweep, print and write its tables (``jaxcc.fidelity``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxcc.emulation.host import EmulationError
from jaxcc.fidelity.cases import (MAX_LIMITED_FRACTION, NS3_NOT_CREDIBLE, available_controllers,
                                  draw_cases)
from jaxcc.fidelity.runs import run_sweep
from jaxcc.fidelity.tables import format_cases, format_pass_rates, markdown_pass_rates, write_record


# ----------------------------------------------------------------------------- CLI

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        print(f"error: {message} (python -m jaxcc.fidelity --help)", file=sys.stderr)
        raise SystemExit(2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = _Parser(prog="python -m jaxcc.fidelity", description=__doc__.split("\n")[0])
    ap.add_argument("--reference", required=True, help="kernel (netns, root) or ns3")
    ap.add_argument("--controllers", default=None,
                    help=f"comma-separated, from {','.join(available_controllers())} (default: all the reference "
                         "is credible for)")
    ap.add_argument("--cases", type=int, default=10, help="random cases per controller")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1,
                    help="reference runs per case; each metric is compared with their median (their spread printed)")
    ap.add_argument("--out", required=True, help="output folder (fidelity.json, runs/)")
    ap.add_argument("--prefix", default=None, help="netns name prefix (default jxekf + random hex)")
    ap.add_argument("--record", default=None,
                    help="write the cases' misses into this record file (tests/fidelity_misses.json holds the CI "
                         "sweeps' record), replacing this reference's entry")
    ap.add_argument("--record-merge", action="store_true",
                    help="with --record: add the misses to the recorded entry of the same sweep (the kernel)")
    return ap.parse_args(argv)


def write_pass_rate_table(report: dict, reference: str, out_dir: str | os.PathLike, command: str) -> Path:
    """Writes ``out_dir/fidelity.md``: the sweep's pass rates as ``docs/fidelity.md`` carries
    them, headed by ``command`` (what produced ``report``), this checkout's commit and today."""
    from jaxcc import report as html_report

    table = markdown_pass_rates(report["pass_rates"], reference, command=command,
                                version=html_report.version_info(), date=time.strftime("%Y-%m-%d"))
    path = Path(out_dir) / "fidelity.md"
    path.write_text(table, encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    try:
        a = parse_args(argv)
    except SystemExit as e:  # argparse printed its one-line usage error
        return int(e.code or 0)
    if a.controllers is None:
        controllers = [c for c in available_controllers() if a.reference != "ns3" or c not in NS3_NOT_CREDIBLE]
    else:
        controllers = [c.strip() for c in a.controllers.split(",") if c.strip()]
    try:
        if a.seed < 0:
            raise ValueError(f"--seed: must be >= 0, got {a.seed}")
        draw_cases(controllers, a.cases, a.seed, a.reference)  # validates every argument first
        if a.repeats < 1:
            raise ValueError(f"--repeats: must be >= 1, got {a.repeats}")
        if a.prefix is not None and (not a.prefix.startswith("jxe") or len(a.prefix) > 9):
            raise ValueError(f"--prefix: must start with 'jxe' and have at most 9 characters, got {a.prefix!r}")
        if a.reference == "kernel" and os.geteuid() != 0:
            raise ValueError("--reference=kernel: the netns harness needs root")
        if a.reference == "ns3":
            from jaxcc.emulation import ns3
            if not ns3.available():
                raise ValueError("--reference=ns3: the ns-3 program is not built (make ns3)")
        from jaxcc import jax_cache
        jax_cache.enable_compilation_cache()
        report = run_sweep(a.reference, controllers, a.cases, a.seed, a.out, prefix=a.prefix, repeats=a.repeats)
    except (ValueError, ImportError, EmulationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_cases(report["verdicts"], a.reference))
    print()
    print(format_pass_rates(report["pass_rates"], a.reference))
    print(f"known limitations cover {100 * report['limited_fraction']:.0f}% of cases "
          f"(at most {MAX_LIMITED_FRACTION:.0%}): {report['limitation_counts']}")
    late = [v["lateness"] for v in report["verdicts"] if v.get("lateness")]
    if late:
        print(f"delay tool lateness over {len(late)} runs: mean {np.median([x['mean_late_us'] for x in late]):.0f} us "
              f"(median of runs; worst run {max(x['mean_late_us'] for x in late):.0f} us), max "
              f"{max(x['max_late_us'] for x in late) / 1e3:.1f} ms; "
              f"re-runs for an invalid delay check {sum(v['reruns'] for v in report['verdicts'])}")
    command = "python -m jaxcc.fidelity " + " ".join(sys.argv[1:] if argv is None else list(argv))
    write_pass_rate_table(report, a.reference, a.out, command)
    print(f"wrote {os.path.join(a.out, 'fidelity.json')} and fidelity.md (the pass-rate table for docs/fidelity.md)")
    if a.record:
        write_record(a.record, a.reference, report, merge=a.record_merge)
        print(f"wrote the misses of {a.reference} into {a.record}")
    return 0
