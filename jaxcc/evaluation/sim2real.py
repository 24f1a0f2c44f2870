"""Sim-to-real report: the same controllers on the same scenarios, in the simulator and in netns.

    python -m jaxcc.sim2real --controller=fixed:40,bbr[,policy:FILE] --suite=pareto --out=DIR
    python -m jaxcc.sim2real --compare SIM/results.json EMU/results.json   # only compare
    python -m jaxcc.sim2real --compare SIM/results.json EMU/results.json --out=DIR --report   # + DIR/report.html

Runs ``jaxcc.evaluate`` and ``jaxcc.emulate`` (root, network namespaces) with identical
arguments, writes both ``results.json`` files under ``DIR/sim`` and ``DIR/emulation``, and prints
per (scenario, controller) the two values and their difference for throughput, p95 one-way
delay, p95 queueing delay and loss, flagging what exceeds the agreed bounds: 5% throughput,
10% (or 2 ms) p95 delay, 1 percentage point loss.  ``DIR/sim2real.json`` keeps the comparison.

The two sides are compared through the shared results.json contract only, so either can be
re-run on its own and compared later with ``--compare``.  (Jain's index is not among the
compared metrics; both sides define it alike: over the last 20 s, ``jaxcc.evaluation.metrics.jain_window``.)

Only emulated runs that kept time count: a record whose ``delay_check.valid`` is false (the
delay line's p95 hold error over 2 ms, or tbf off its rate: ``jaxcc.emulation.delay.check``) is
listed as "invalid, re-run" and never counted as a pass or a failure; one without a check
(``valid`` null, e.g. Mahimahi) is compared and marked "unchecked".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


BOUNDS = {"throughput_mbps": ("rel", 0.05), "p95_owd_ms": ("rel", 0.10), "p95_qdelay_ms": ("rel", 0.10),
          "loss": ("abs", 0.01)}


# Delays within this many milliseconds agree whatever their ratio (as the fidelity tolerances):
# a near-empty queue (0.2 ms vs 3 ms) is not a 90% disagreement that matters.
DELAY_FLOOR_MS = 2.0


def _load(path: str) -> dict[tuple[str, str], dict]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read it: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"{path}: expected {{'results': [...]}} (the results.json contract)")
    return {(r["scenario"], r["controller"]): r for r in data["results"]}


INVALID = "invalid, re-run"


def emu_validity(record: dict) -> bool | None:
    """The emulated run's own verdict on its timing (``delay_check.valid``): True, False, or
    None when it was not self-checked."""
    check = record.get("delay_check")
    return check.get("valid") if isinstance(check, dict) else None


def invalid_runs(emu_path: str) -> list[dict]:
    """The emulated runs that did not keep time: (scenario, controller, reasons), to re-run."""
    return [{"scenario": k[0], "controller": k[1], "verdict": INVALID,
             "reasons": list((r.get("delay_check") or {}).get("reasons") or [])}
            for k, r in sorted(_load(emu_path).items()) if emu_validity(r) is False]


def compare(sim_path: str, emu_path: str) -> list[dict]:
    """Rows of (scenario, controller, metric, sim, emulation, difference, over_bound).

    Emulated runs marked invalid (``invalid_runs``) get no rows: they are neither passes nor
    failures. ``emu_checked`` is False on rows whose emulated run was not self-checked.
    """
    sim, emu = _load(sim_path), _load(emu_path)
    rows = []
    for key in sorted(set(sim) & set(emu)):
        valid = emu_validity(emu[key])
        if valid is False:
            continue
        for metric, (kind, bound) in BOUNDS.items():
            a, b = sim[key].get(metric), emu[key].get(metric)
            if a is None or b is None:
                continue
            if kind == "rel":
                diff = (a - b) / max(abs(b), 1e-9)
            else:
                diff = a - b
            over = abs(diff) > bound
            if metric.endswith("_ms") and abs(a - b) <= DELAY_FLOOR_MS:
                over = False
            rows.append({"scenario": key[0], "controller": key[1], "metric": metric, "sim": a, "emulation": b,
                         "difference": diff, "kind": kind, "bound": bound, "over": over,
                         "emu_checked": valid is True})
    missing = sorted(set(sim) ^ set(emu))
    if missing:
        print(f"sim2real: only on one side (not compared): {missing}", file=sys.stderr)
    return rows


def format_rows(rows: list[dict], invalid: list[dict] = ()) -> str:
    lines = [f"{'scenario':18s} {'controller':14s} {'metric':15s} {'sim':>10s} {'emulation':>10s} {'diff':>9s}"]
    for r in rows:
        d = f"{100 * r['difference']:+.1f}{'%' if r['kind'] == 'rel' else 'pp'}"
        note = ("  <-- over bound" if r["over"] else "") + \
            ("" if r.get("emu_checked", True) else "  (emulation unchecked)")
        lines.append(f"{r['scenario']:18s} {r['controller']:14s} {r['metric']:15s} {r['sim']:10.3f} "
                     f"{r['emulation']:10.3f} {d:>9s}{note}")
    for r in invalid:
        lines.append(f"{r['scenario']:18s} {r['controller']:14s} {INVALID}: {'; '.join(r['reasons'])}")
    over = sum(r["over"] for r in rows)
    lines.append(f"{over} of {len(rows)} comparisons exceed the bounds (5% throughput, 10% or 2 ms p95 delay, "
                 f"1 pp loss)")
    if invalid:
        lines.append(f"{len(invalid)} emulated run(s) invalid (the emulator did not keep time): not "
                     f"compared, re-run them on a quiet machine")
    return "\n".join(lines)


def rerun(todo: list[dict], controllers: list[str], which: list[str] | None, emu_json: str,
          out_dir: str, duration: list[str] = ()) -> None:
    """Runs the invalid emulated runs again and puts each new record in place of the old one.

    which: the original --scenario-file/--scenario selection (None: each by its scenario name);
    duration: the original ``--duration=S`` argument, if any.
    """
    with open(emu_json, encoding="utf-8") as fh:
        data = json.load(fh)
    for i, bad in enumerate(todo):
        ctrl = next((c for c in controllers if c == bad["controller"] or c in bad["controller"].split("+")),
                    None)
        if ctrl is None:
            continue
        sel = which or ["--scenario", bad["scenario"]]
        sub = os.path.join(out_dir, str(i))
        print(f"sim2real: re-running {bad['scenario']} x {bad['controller']} ({INVALID})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "jaxcc.emulate", f"--controller={ctrl}", f"{sel[0]}={sel[1]}",
                        f"--out={sub}", "--no-plots", *duration], check=True)
        new = _load(os.path.join(sub, "results.json")).get((bad["scenario"], bad["controller"]))
        if new is None:
            continue
        data["results"] = [new if (r["scenario"], r["controller"]) == (bad["scenario"], bad["controller"])
                           else r for r in data["results"]]
    tmp = emu_json + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, emu_json)


def overlay_figures(out: str, sim_json: str, emu_json: str) -> list[str]:
    """OUT/plots/sim2real_<scenario>.{png,pdf,svg} (``jaxcc.plots.sim2real_figure``: each
    controller's simulated and emulated point joined); returns the files written."""
    from jaxcc import plots

    docs = []
    for path in (sim_json, emu_json):
        with open(path, encoding="utf-8") as fh:  # _load (compare) has read and checked both
            docs.append(json.load(fh))
    # an emulated run that did not keep time is not compared (compare), so not drawn either
    docs[1] = {**docs[1], "results": [r for r in docs[1]["results"] if emu_validity(r) is not False]}
    files = plots.sim2real_figures(*docs, os.path.join(out, "plots"))
    if files:
        print(f"wrote {len(files)} sim-vs-emulation figure files to {os.path.join(out, 'plots')}")
    return files


def write_report(out: str, command: str, rows: list[dict], invalid: list[dict], sim_json: str, emu_json: str,
                 scenarios=None, overlay_figures: list[str] = ()) -> str:
    """OUT/report.html of a comparison (``jaxcc.report.sim2real``): the simulator's figures from
    the folder of SIM_JSON (``plots/``), the emulation's from the folder of EMU_JSON, the specs of
    ``scenarios`` (what ran) or else of the named scenarios compared.  ``overlay_figures``: figures
    that draw the simulator and emulation runs together, shown before either side's own."""
    from jaxcc import report
    from jaxcc.emulation.spec import BUILTIN_SCENARIOS
    from jaxcc.evaluation.runs import scenario_specs

    names = [k[0] for k in _load(sim_json)] + [k[0] for k in _load(emu_json)]
    specs, missing = scenario_specs(names, scenarios, builtin=BUILTIN_SCENARIOS)
    return report.sim2real(command=command, rows=rows, invalid=invalid, bounds=BOUNDS, delay_floor_ms=DELAY_FLOOR_MS,
                           sim_json=sim_json, emu_json=emu_json, out=os.path.join(out, report.REPORT_NAME),
                           sim_figures=report.figures_in(os.path.dirname(os.path.abspath(sim_json))),
                           emu_figures=report.figures_in(os.path.dirname(os.path.abspath(emu_json))),
                           overlay_figures=overlay_figures, specs=specs, missing_specs=missing)
