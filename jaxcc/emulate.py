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
results and plots, Mahimahi) and ../shared/EMULATION.md for the measurements behind them.
Scenarios and controllers are those of ``jaxcc.scenarios`` and ``jaxcc.controllers`` (plus the
harness's own ``emu/*`` links); simulator-only controllers (cubic, reno, copa, oracle) are refused.

Results go to ``DIR/results.json`` in the shared contract (one record per scenario x
controller; Jain's index over the last 20 s as in the simulator), with per-flow detail, plus
plots. The ``--mahimahi-*`` options serve ``launch/mahimahi_run.sh``.

Each run's line on stdout is followed by its timing verdict (``timing_verdict``: the record's
``delay_check``, valid, INVALID with what failed, or not checked), for every run.

``--duration=SECONDS`` runs every scenario for that long instead of its own length, by the
simulator's rule (``jaxcc.evaluate.with_duration``, what ``python -m jaxcc.evaluate --duration``
does): flows that ran to the end still do, later stops are cut at the new end, preference
changes at or after it are dropped, and a flow that would start at or after it is refused (one
line naming the flow; exit 2).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import sys
from pathlib import Path

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
    ``jaxcc.evaluate.with_duration`` (the simulator's rule, module docstring), validated again
    for emulation.

    Raises:
      EmulationError: a flow of ``sc`` starts at or after the new end.
    """
    if duration_s is None:
        return sc
    from jaxcc.evaluate import with_duration as sim_with_duration

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxcc.emulate", description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--scenario", action="append", default=[],
                   help="named scenario (jaxcc.scenarios or emu/*); repeatable or comma list")
    g.add_argument("--scenario-file", action="append", default=[], help="scenario JSON file")
    g.add_argument("--suite", default=None, help="a jaxcc.scenarios suite, or a comma-separated list of them")
    ap.add_argument("--controller", default=None,
                    help="comma list: policy:FILE, bbr, fixed:MBPS, kernel:cubic, kernel:reno, kernel:bbr; "
                         "default: the scenario's own flow controllers")
    ap.add_argument("--out", default="emulate_out")
    ap.add_argument("--duration", default=None, metavar="SECONDS",
                    help="run every scenario for SECONDS (> 0) instead of its own length (flows that ran "
                         "to the end still do; as python -m jaxcc.evaluate --duration)")
    ap.add_argument("--trace-bin-ms", type=float, default=100.0,
                    help="bin width when converting a Mahimahi trace to a tbf rate schedule")
    ap.add_argument("--no-ping", action="store_true", help="skip the idle-RTT ping")
    ap.add_argument("--nice", type=int, default=-10,
                    help="nice value for senders/receivers (0: leave as is)")
    ap.add_argument("--tbf-burst-ms", type=float, default=1.0,
                    help="tbf bucket depth in ms of the current rate (min two frames)")
    ap.add_argument("--prefix", default=None, help="name prefix (default: jxe + random hex)")
    ap.add_argument("--cleanup", action="store_true",
                    help=f"remove leftover namespaces/links named {netns.PREFIX_BASE}* and exit")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--report", action="store_true",
                    help="also write OUT/report.html: every metric, the timing checks, every figure, the "
                         "command, version and scenario specs in one self-contained file (jaxcc.report)")
    ap.add_argument("--mahimahi-plan", metavar="DIR", default=None,
                    help="(for launch/mahimahi_run.sh) write DIR/plan.sh and a trace, exit")
    ap.add_argument("--mahimahi-collect", metavar="DIR", default=None,
                    help="(for launch/mahimahi_run.sh) write DIR/results.json, exit")
    ap.add_argument("--mahimahi-merge", metavar="DIR", nargs="+", default=None,
                    help="(for launch/mahimahi_run.sh) OUT RUN_DIR...: one OUT/results.json "
                         "from the runs of a controller list, exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    argv_used = list(sys.argv[1:] if argv is None else argv)
    try:
        duration_s = duration_arg(a.duration)
    except EmulationError as e:
        print(f"emulate: {e}", file=sys.stderr)
        return 2

    if a.cleanup:
        if os.geteuid() != 0:
            print("emulate: --cleanup must run as root", file=sys.stderr)
            return 2
        found = netns.cleanup_leftovers(a.prefix or netns.PREFIX_BASE)
        print(json.dumps({"removed": found}))
        return 0

    netns.TBF_BURST_S = a.tbf_burst_ms / 1000.0
    try:
        if a.mahimahi_collect:
            rec = mahimahi.collect(Path(a.mahimahi_collect))
            print(json.dumps({k: rec[k] for k in ("scenario", "controller", "throughput_mbps",
                                                  "p95_owd_ms", "loss")}))
            return 0
        if a.mahimahi_merge:
            if len(a.mahimahi_merge) < 2:
                ap.error("--mahimahi-merge OUT RUN_DIR [RUN_DIR ...]")
            recs = mahimahi.merge(Path(a.mahimahi_merge[0]), [Path(d) for d in a.mahimahi_merge[1:]])
            print(json.dumps([{k: r[k] for k in ("scenario", "controller", "throughput_mbps")}
                              for r in recs]))
            return 0
        if a.mahimahi_plan:
            if not (a.scenario_file or a.scenario):
                raise EmulationError("give --scenario or --scenario-file")
            if a.controller is not None and "," in a.controller:
                raise EmulationError(f"--controller={a.controller}: a plan takes one controller "
                                     "(launch/mahimahi_run.sh runs a list one at a time)")
            spec.validate_controller(a.controller)
            sc = with_duration(spec.load(path=a.scenario_file[0]) if a.scenario_file
                               else spec.load(name=a.scenario[0]), duration_s)
            print(mahimahi.plan(sc, a.controller, Path(a.mahimahi_plan), a.trace_bin_ms / 1000.0))
            return 0
    except EmulationError as e:
        print(f"emulate: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, _raise_on_term)   # also when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_on_term)
    signal.signal(signal.SIGHUP, _raise_on_term)
    try:
        specs = [spec.load(path=p) for p in a.scenario_file]
        for s in a.scenario:
            specs += [spec.load(name=n) for n in s.split(",") if n]
        if a.suite:
            specs += spec.load_suite(a.suite)
        if not specs:
            ap.error("give --scenario, --scenario-file or --suite")
        specs = [with_duration(sc, duration_s) for sc in specs]
        ctrls: list[str | None] = [c for c in a.controller.split(",")] if a.controller else [None]
        # (a policy path containing a comma cannot be given in this list)
        for c in ctrls:
            spec.validate_controller(c)
        check_requirements()
        out = Path(a.out)
        records = runner.run_experiments(specs, ctrls, out, trace_bin_s=a.trace_bin_ms / 1000.0,
                                         ping=not a.no_ping, verbose=a.verbose, prefix=a.prefix,
                                         nice=a.nice)
        figures = [] if a.no_plots else results.make_plots(records, out)
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
        if a.report:
            from jaxcc import report as html_report
            print("wrote " + html_report.emulation(str(out / "results.json"), figures=figures,
                                                   command="python -m jaxcc.emulate " + shlex.join(argv_used),
                                                   specs=[sc.to_dict() for sc in specs]))
        return 0
    except EmulationError as e:
        print(f"emulate: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emulate: interrupted; cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
