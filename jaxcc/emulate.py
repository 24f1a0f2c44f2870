"""Emulated-link harness: run jaxcc controllers on real packets across a Linux emulated link.

    python -m jaxcc.emulate --scenario=NAME | --scenario-file=spec.json \\
        --controller=policy:FILE|bbr|fixed:MBPS|kernel:cubic|kernel:reno|kernel:bbr[,...] --out=DIR
    python -m jaxcc.emulate --suite=pareto --controller=policy:F,kernel:cubic --out=DIR
    python -m jaxcc.emulate --cleanup          # remove leftovers of killed runs
    python -m jaxcc.emulate --scenario=emu/mocc_settle --controller=policy:MOCC_FILE --out=DIR
                                               # settle after runtime preference changes

A flow's ``preference`` reaches a MOCC policy's sender as ``--preference``, its
``preference_changes`` as control lines on the running sender's stdin at their times
(``jaxcc.emulation.spec.flow_preferences``, ``jaxcc.emulation.settle``).

Each scenario x controller runs on a fresh link of three network namespaces (sender, router,
receiver): a tbf bottleneck (rate + byte-limited drop-tail buffer) on the router's egress,
random loss by iptables, and propagation delay from the NFQUEUE tool ``nfq_delay`` (the kernel
has no netem); see ``jaxcc.emulation`` for the parts (namespaces and tc, delay tool, runner,
results and plots, Mahimahi) and docs/emulation.md for the measurements behind them.
Scenarios and controllers are those of ``jaxcc.scenarios`` and ``jaxcc.controllers`` (plus the
harness's own ``emu/*`` links); simulator-only controllers (cubic, reno, copa, oracle) are refused.

Results go to ``DIR/results.json`` in the shared contract (one record per scenario x
controller; Jain's index over the last 20 s as in the simulator), with per-flow detail, plus
plots. The ``--mahimahi-*`` options serve ``launch/mahimahi_run.sh``.

Each run's line on stdout is followed by its timing verdict (``timing_verdict``: the record's
``delay_check``, valid, INVALID with what failed, or not checked), for every run.

``--duration=SECONDS`` runs every scenario for that long instead of its own length, by the
simulator's rule (``jaxcc.evaluation.runs.with_duration``, what ``python -m jaxcc.evaluate --duration``
does): flows that ran to the end still do, later stops are cut at the new end, preference
changes at or after it are dropped, and a flow that would start at or after it is refused (one
line naming the flow; exit 2).
"""
from __future__ import annotations

import json
import math
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Sequence

from jaxcc.cli import dashed_aliases, run_absl_cli
from jaxcc.emulation import mahimahi, netns, results, runner, settle, spec
from jaxcc.emulation.host import EmulationError, check_requirements


def _raise_on_term(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def duration_arg(text: str | None) -> float | None:
    """``--duration``'s value in seconds (None: each scenario's own length).

    Raises:
      EmulationError: one line naming the flag and its range, for anything but a finite number > 0.
    """
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise EmulationError(f"--duration must be a finite number of seconds > 0, got {text!r}")
    return value


def with_duration(sc, duration_s: float | None):
    """``sc`` run for ``duration_s`` seconds (``--duration``; None: as it is), by
    ``jaxcc.evaluation.runs.with_duration`` (the simulator's rule, module docstring), validated again
    for emulation.

    Raises:
      EmulationError: a flow of ``sc`` starts at or after the new end.
    """
    if duration_s is None:
        return sc
    from jaxcc.evaluation.runs import with_duration as sim_with_duration

    try:
        return spec.as_scenario(sim_with_duration(sc, duration_s))
    except ValueError as e:
        raise EmulationError(str(e)) from e


def timing_verdict(check: dict | None) -> str:
    """One line: a run's own timing check (its record's ``delay_check``, ``jaxcc.emulation.delay.check``).

    ``timing: valid`` or ``timing: INVALID`` with the measured p95 hold error of the delay line
    against its limit and tbf's rate error against the schedule (when measured), then, for an
    invalid run, every check that failed; ``timing: not checked (valid: null)`` with the reason
    when the run could not check itself (no hold-error statistics, or Mahimahi's own delay)."""
    check = check or {}
    valid = check.get("valid")
    reasons = [str(r) for r in check.get("reasons") or []]
    if valid is None:
        return "timing: not checked (valid: null)" + (f": {'; '.join(reasons)}" if reasons else "")
    thr = check.get("thresholds") or {}
    hold = check.get("hold_err_ms") or {}
    parts = []
    if hold.get("p95") is not None:
        lim = thr.get("p95_hold_err_ms")
        parts.append(f"p95 hold error {hold['p95']:.2f} ms" + (f" (limit {lim:g} ms)" if lim is not None else ""))
    tbf = check.get("tbf_rate") or {}
    if tbf.get("rel_err") is not None:
        lim = thr.get("tbf_rate_rel_err")
        parts.append(f"tbf rate {100 * tbf['rel_err']:+.1f}% off the schedule"
                     + (f" (limit {100 * lim:g}%)" if lim is not None else ""))
    line = "timing: " + ("valid" if valid else "INVALID") + (f", {', '.join(parts)}" if parts else "")
    if not valid:
        line += "; failed: " + ("; ".join(reasons) or "(no reason recorded)")
    return line


def define_flags(fv):
    """The command's flags on ``fv`` (an ``absl.flags.FlagValues``); dashed spellings too."""
    from absl import flags

    flags.DEFINE_multi_string("scenario", None, "named scenario (jaxcc.scenarios or emu/*); repeatable or comma list",
                              flag_values=fv)
    flags.DEFINE_multi_string("scenario_file", None, "scenario JSON file (repeatable)", flag_values=fv)
    flags.DEFINE_string("suite", None, "a jaxcc.scenarios suite, or a comma-separated list of them", flag_values=fv)
    flags.mark_flags_as_mutual_exclusive(["scenario", "scenario_file", "suite"], flag_values=fv)
    flags.DEFINE_string("controller", None, "comma list: policy:FILE, bbr, fixed:MBPS, kernel:cubic, kernel:reno, "
                        "kernel:bbr; default: the scenario's own flow controllers", flag_values=fv)
    flags.DEFINE_string("out", "emulate_out", "output folder", flag_values=fv)
    flags.DEFINE_string("duration", None, "run every scenario for SECONDS (> 0) instead of its own length (flows "
                        "that ran to the end still do; as python -m jaxcc.evaluate --duration)", flag_values=fv)
    flags.DEFINE_float("trace_bin_ms", None, "bin width of a Mahimahi trace's tbf rate schedule (default: the "
                       "scenario's trace_bin_ms, the simulator's binning of the same trace)", flag_values=fv)
    flags.DEFINE_bool("no_ping", False, "skip the idle-RTT ping", flag_values=fv)
    flags.DEFINE_integer("nice", -10, "nice value for senders/receivers (0: leave as is)", flag_values=fv)
    flags.DEFINE_float("tbf_burst_ms", 1.0, "tbf bucket depth in ms of the current rate (min two frames)",
                       flag_values=fv)
    flags.DEFINE_string("prefix", None, "name prefix (default: jxe + random hex)", flag_values=fv)
    flags.DEFINE_bool("cleanup", False, f"remove leftover namespaces/links named {netns.PREFIX_BASE}* and exit",
                      flag_values=fv)
    flags.DEFINE_bool("no_plots", False, "no plots", flag_values=fv)
    flags.DEFINE_bool("report", False, "also write OUT/report.html: every metric, the timing checks, every figure, "
                      "the command, version and scenario specs in one self-contained file (jaxcc.report)",
                      flag_values=fv)
    flags.DEFINE_string("mahimahi_plan", None, "(for launch/mahimahi_run.sh) write DIR/plan.sh and a trace, exit",
                        flag_values=fv)
    flags.DEFINE_string("mahimahi_collect", None, "(for launch/mahimahi_run.sh) write DIR/results.json, exit",
                        flag_values=fv)
    flags.DEFINE_list("mahimahi_merge", None, "(for launch/mahimahi_run.sh) OUT,RUN_DIR,...: one OUT/results.json "
                      "from the runs of a controller list, exit", flag_values=fv)
    flags.DEFINE_bool("verbose", False, "log every step", short_name="v", flag_values=fv)
    return dashed_aliases(fv)


def main(fv, argv: Sequence[str] = ()) -> int:
    """Run the command with parsed flags ``fv``; a harness precondition that fails (``EmulationError``)
    is one line, exit 2; an interrupt cleans up and exits 130."""
    duration_s = duration_arg(fv.duration)
    if fv.cleanup:
        if os.geteuid() != 0:
            raise EmulationError("--cleanup must run as root")
        found = netns.cleanup_leftovers(fv.prefix or netns.PREFIX_BASE)
        print(json.dumps({"removed": found}))
        return 0

    netns.TBF_BURST_S = fv.tbf_burst_ms / 1000.0
    scenario, scenario_file = fv.scenario or [], fv.scenario_file or []
    if fv.mahimahi_collect:
        rec = mahimahi.collect(Path(fv.mahimahi_collect))
        print(json.dumps({k: rec[k] for k in ("scenario", "controller", "throughput_mbps", "p95_owd_ms", "loss")}))
        return 0
    if fv.mahimahi_merge:
        if len(fv.mahimahi_merge) < 2:
            raise EmulationError("--mahimahi-merge=OUT,RUN_DIR[,RUN_DIR...]: give the output and at least one run")
        recs = mahimahi.merge(Path(fv.mahimahi_merge[0]), [Path(d) for d in fv.mahimahi_merge[1:]])
        print(json.dumps([{k: r[k] for k in ("scenario", "controller", "throughput_mbps")} for r in recs]))
        return 0
    if fv.mahimahi_plan:
        if not (scenario_file or scenario):
            raise EmulationError("give --scenario or --scenario-file")
        if fv.controller is not None and "," in fv.controller:
            raise EmulationError(f"--controller={fv.controller}: a plan takes one controller "
                                 "(launch/mahimahi_run.sh runs a list one at a time)")
        spec.validate_controller(fv.controller)
        sc = with_duration(spec.load(path=scenario_file[0]) if scenario_file else spec.load(name=scenario[0]),
                           duration_s)
        print(mahimahi.plan(sc, fv.controller, Path(fv.mahimahi_plan),
                            None if fv.trace_bin_ms is None else fv.trace_bin_ms / 1000.0))
        return 0
    signal.signal(signal.SIGINT, _raise_on_term)   # also when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_on_term)
    signal.signal(signal.SIGHUP, _raise_on_term)
    try:
        specs = [spec.load(path=p) for p in scenario_file]
        for s in scenario:
            specs += [spec.load(name=n) for n in s.split(",") if n]
        if fv.suite:
            specs += spec.load_suite(fv.suite)
        if not specs:
            raise EmulationError("give --scenario, --scenario-file or --suite")
        specs = [with_duration(sc, duration_s) for sc in specs]
        ctrls: list[str | None] = [c for c in fv.controller.split(",")] if fv.controller else [None]
        # (a policy path containing a comma cannot be given in this list)
        for c in ctrls:
            spec.validate_controller(c)
        check_requirements()
        out = Path(fv.out)
        bin_s = None if fv.trace_bin_ms is None else fv.trace_bin_ms / 1000.0
        records = runner.run_experiments(specs, ctrls, out, trace_bin_s=bin_s,
                                         ping=not fv.no_ping, verbose=fv.verbose, prefix=fv.prefix,
                                         nice=fv.nice)
        figures = [] if fv.no_plots else results.make_plots(records, out)
        for r in records:
            print(f"{r['scenario']:24s} {r['controller']:28s} "
                  f"tput {r['throughput_mbps']:.2f} Mbit/s  util {r['utilization'] or 0:.2f}  "
                  f"p95 owd {r['p95_owd_ms'] if r['p95_owd_ms'] is not None else float('nan'):.1f} ms  "
                  f"loss {r['loss'] if r['loss'] is not None else float('nan'):.3f}")
            print("  " + timing_verdict(r.get("delay_check")))
            for f in r["per_flow"]:
                st = f.get("settle")
                if st is not None:
                    print(f"  flow {f['flow']} preference changes: "
                          + (st["error"] if "error" in st else settle.summary_line(st)))
        if fv.report:
            from jaxcc import report as html_report
            print("wrote " + html_report.emulation(str(out / "results.json"), figures=figures,
                                                   command="python -m jaxcc.emulate " + shlex.join(argv),
                                                   specs=[sc.to_dict() for sc in specs]))
        return 0
    except KeyboardInterrupt:
        print("jaxcc.emulate: interrupted; cleaned up", file=sys.stderr)
        return 130


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors are one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--scenario=emu/fixed12 --controller=bbr",
                        uses_jax=False, user_errors=(EmulationError,))


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
