"""``python -m jaxcc.fidelity``: run a sweep, print and write its tables (``jaxcc.fidelity``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxcc.cli import run_absl_cli
from jaxcc.emulation.host import EmulationError
from jaxcc.fidelity.cases import (MAX_LIMITED_FRACTION, NS3_NOT_CREDIBLE, available_controllers,
                                  draw_cases)
from jaxcc.fidelity.runs import check_feedback_slots, check_rto_min, run_sweep
from jaxcc.fidelity.tables import format_cases, format_pass_rates, markdown_pass_rates, write_record


# ----------------------------------------------------------------------------- CLI


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("reference", None, "kernel (netns, root) or ns3", flag_values=fv)
    flags.DEFINE_string("controllers", None,
                        f"comma-separated, from {','.join(available_controllers())} (default: all the reference "
                        "is credible for)", flag_values=fv)
    flags.DEFINE_integer("cases", 10, "random cases per controller", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the seed the cases are drawn from (>= 0)", flag_values=fv)
    flags.DEFINE_integer("repeats", 1, "reference runs per case; each metric is compared with their median (their "
                         "spread printed)", flag_values=fv)
    flags.DEFINE_integer("ticks_per_rtt", None, "the simulator's ticks per smallest flow RTT (default: the "
                         "simulator's, jaxcc.sim.links.DEFAULT_TICKS_PER_RTT)", flag_values=fv)
    flags.DEFINE_integer("feedback_slots", None, "the ring slots one tick's feedback is spread over (default: the "
                         "model's, jaxcc.sim.core.FEEDBACK_SLOTS; LinkParams.feedback_slots)", flag_values=fv)
    flags.DEFINE_float("rto_min", 0.0, "the simulator's cubic and reno flows with a retransmission timeout of this "
                       "floor in seconds (jaxcc.baselines.recovery.timeout; ns-3's MinRto is 1, Linux's 0.2; default 0: "
                       "none)", flag_values=fv)
    flags.DEFINE_list("granular", [], "the simulator's packet-granular effects, comma-separated from drops,loss,clocked "
                      "(jaxcc.sim.granular; drops or clocked, not both; default none: the bare model)", flag_values=fv)
    flags.DEFINE_bool("hystart", False, "the simulator's cubic with HyStart's delay detector on (jaxcc.baselines.cubic; "
                      "off in the simulator's cubic by default, on in Linux's and ns-3's)", flag_values=fv)
    flags.DEFINE_string("references", None, "take the reference runs from this earlier sweep's fidelity.json (the "
                        "same --reference, --controllers, --cases, --seed and --repeats) instead of running them",
                        flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (fidelity.json, runs/)", flag_values=fv)
    flags.DEFINE_string("prefix", None, "netns name prefix (default jxekf + random hex)", flag_values=fv)
    flags.DEFINE_string("record", None, "write the cases' misses into this record file (tests/fidelity_misses.json "
                        "holds the CI sweeps' record), replacing this reference's entry", flag_values=fv)
    flags.DEFINE_bool("record_merge", False, "with --record: add the misses to the recorded entry of the same sweep "
                      "(the kernel)", flag_values=fv)
    flags.DEFINE_alias("record-merge", "record_merge", flag_values=fv)
    flags.mark_flag_as_required("reference", flag_values=fv)
    flags.mark_flag_as_required("out", flag_values=fv)
    return fv


def write_pass_rate_table(report: dict, reference: str, out_dir: str | os.PathLike, command: str) -> Path:
    """Writes ``out_dir/fidelity.md``: the sweep's pass rates as ``docs/fidelity.md`` carries
    them, headed by ``command`` (what produced ``report``), this checkout's commit and today."""
    from jaxcc import report as html_report

    table = markdown_pass_rates(report["pass_rates"], reference, command=command,
                                version=html_report.version_info(), date=time.strftime("%Y-%m-%d"))
    path = Path(out_dir) / "fidelity.md"
    path.write_text(table, encoding="utf-8")
    return path


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run the sweep with parsed flags ``fv`` (``define_flags``); ``argv``: the command's arguments,
    recorded in fidelity.md."""
    if fv.controllers is None:
        controllers = [c for c in available_controllers() if fv.reference != "ns3" or c not in NS3_NOT_CREDIBLE]
    else:
        controllers = [c.strip() for c in fv.controllers.split(",") if c.strip()]
    try:
        if fv.seed < 0:
            raise ValueError(f"--seed: must be >= 0, got {fv.seed}")
        draw_cases(controllers, fv.cases, fv.seed, fv.reference)  # validates every argument first
        if fv.repeats < 1:
            raise ValueError(f"--repeats: must be >= 1, got {fv.repeats}")
        if fv.prefix is not None and (not fv.prefix.startswith("jxe") or len(fv.prefix) > 9):
            raise ValueError(f"--prefix: must start with 'jxe' and have at most 9 characters, got {fv.prefix!r}")
        if fv.ticks_per_rtt is not None and fv.ticks_per_rtt < 1:
            raise ValueError(f"--ticks_per_rtt: must be >= 1, got {fv.ticks_per_rtt}")
        check_feedback_slots(fv.feedback_slots)
        check_rto_min(fv.rto_min)
        from jaxcc.sim import granular as gr
        try:
            gr.check(fv.granular)
        except ValueError as e:
            raise ValueError(f"--granular: {e}") from None
        if fv.references is not None and not os.path.isfile(fv.references):
            raise ValueError(f"--references={fv.references}: no such file")
        if fv.reference == "kernel" and os.geteuid() != 0 and fv.references is None:
            raise ValueError("--reference=kernel: the netns harness needs root")
        if fv.reference == "ns3" and fv.references is None:
            from jaxcc.emulation import ns3
            if not ns3.available():
                raise ValueError("--reference=ns3: the ns-3 program is not built (make ns3)")
        from jaxcc import jax_cache
        jax_cache.enable_compilation_cache()
        report = run_sweep(fv.reference, controllers, fv.cases, fv.seed, fv.out, prefix=fv.prefix,
                           repeats=fv.repeats, ticks_per_rtt=fv.ticks_per_rtt, references=fv.references,
                           granular=tuple(fv.granular), hystart=fv.hystart, feedback_slots=fv.feedback_slots,
                           rto_min=fv.rto_min)
    except (ImportError, EmulationError) as e:
        raise ValueError(str(e)) from e
    print(format_cases(report["verdicts"], fv.reference))
    print()
    print(format_pass_rates(report["pass_rates"], fv.reference))
    print(f"known limitations cover {100 * report['limited_fraction']:.0f}% of cases "
          f"(at most {MAX_LIMITED_FRACTION:.0%}): {report['limitation_counts']}")
    late = [v["lateness"] for v in report["verdicts"] if v.get("lateness")]
    if late:
        print(f"delay tool lateness over {len(late)} runs: mean {np.median([x['mean_late_us'] for x in late]):.0f} us "
              f"(median of runs; worst run {max(x['mean_late_us'] for x in late):.0f} us), max "
              f"{max(x['max_late_us'] for x in late) / 1e3:.1f} ms; "
              f"re-runs for an invalid delay check {sum(v['reruns'] for v in report['verdicts'])}")
    command = "python -m jaxcc.fidelity " + " ".join(argv)
    write_pass_rate_table(report, fv.reference, fv.out, command)
    print(f"wrote {os.path.join(fv.out, 'fidelity.json')} and fidelity.md (the pass-rate table for docs/fidelity.md)")
    if fv.record:
        write_record(fv.record, fv.reference, report, merge=fv.record_merge)
        print(f"wrote the misses of {fv.reference} into {fv.record}")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2.
    JAX's compilation cache is turned on by ``main`` once the arguments are checked."""
    return run_absl_cli(argv, _doc(), define_flags, main, "--reference=ns3 --out=DIR", uses_jax=False)


def _doc() -> str:
    import jaxcc.fidelity

    return jaxcc.fidelity.__doc__ or __doc__


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
