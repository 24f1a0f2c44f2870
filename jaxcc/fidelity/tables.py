"""A sweep's tables (per case, pass rates; Markdown for the docs) and the recorded misses that
the fast tests hold the model to (``tests/fidelity_misses.json``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxcc.evaluation import metrics
from jaxcc.fidelity.cases import METRICS, PASS_RATE_TARGET, TOLERANCES
from jaxcc.fidelity.compare import check_metric


# ----------------------------------------------------------------------------- tables

def abs_error(check: dict, metric: str) -> float:
    """A check's absolute error in the unit the error tables use: throughput in % of the
    reference, p95 one-way delay in ms, loss in percentage points, Jain's index as is (nan when
    either side has no value)."""
    sim, ref = check.get("sim"), check.get("ref")
    if sim is None or ref is None or not (math.isfinite(sim) and math.isfinite(ref)):
        return float("nan")
    if metric == "throughput_mbps":
        return 100.0 * abs(sim - ref) / max(abs(ref), 1e-9)
    if metric == "loss":
        return 100.0 * abs(sim - ref)
    return abs(sim - ref)


def error_summary(report: dict) -> dict:
    """A sweep's report (``fidelity.json``) per controller: ``"pass"``, the cases within every
    tolerance as "p/n"; ``"pass_<metric>"``, the cases within that metric's tolerance as "p/n";
    and per metric its median absolute error over the cases (``abs_error``)."""
    out = {}
    for c, pr in report["pass_rates"].items():
        row = {"pass": f"{pr['cases']['pass']}/{pr['cases']['valid']}"}
        vs = [v for v in report["verdicts"] if v["controller"] == c]
        for m in METRICS:
            checks = [v["checks"][m] for v in vs if m in v["checks"] and v["checks"][m].get("ok") is not None]
            row[f"pass_{m}"] = f"{sum(bool(x['ok']) for x in checks)}/{len(checks)}"
            xs = [abs_error(v["checks"][m], m) for v in vs if m in v["checks"]]
            xs = [x for x in xs if math.isfinite(x)]
            row[m] = float(np.median(xs)) if xs else float("nan")
        out[c] = row
    return out


def error_cells(row: dict) -> str:
    """An ``error_summary`` row's median errors as the docs' tables print them:
    "throughput % / p95 ms / loss pp / Jain" ("–" where a metric has none)."""
    return " / ".join("–" if math.isnan(row[m]) else f"{row[m]:.{3 if m == 'jain' else 1}f}" for m in METRICS)


def fmt_metric(metric: str, x: float) -> str:
    """One metric as the tables print it: loss in %, Jain to 3 decimals, the rest to 2; NaN as "nan"."""
    if x is None or not math.isfinite(x):
        return "nan"
    return f"{100 * x:.2f}%" if metric == "loss" else f"{x:.3f}" if metric == "jain" else f"{x:.2f}"


def _fmt_diff(metric: str, c: dict) -> str:
    d = c.get("diff")
    if d is None or not math.isfinite(d):
        return ""
    return {"throughput_mbps": f"{100 * d:+.1f}%", "p95_owd_ms": f"{d:+.1f} ms", "loss": f"{100 * d:+.2f} pp",
            "jain": f"{d:+.3f}"}[metric]


def describe(params: dict) -> str:
    """A case's parameters on one line."""
    rtts = "/".join(f"{r:g}" for r in params["rtt_ms"])
    starts = "/".join(f"{s:g}" for s in params["start_s"])
    extra = (f", fixed {params['fixed_mbps']:g} Mbit/s per flow ({params['fixed_regime']})"
             if "fixed_mbps" in params else "")
    return (f"{params['flows']} flow(s), {params['bandwidth_mbps']:g} Mbit/s, RTT {rtts} ms, start {starts} s, "
            f"buffer {params['buffer_bdp']:g} BDP ({params['buffer_bytes']} B), loss {100 * params['loss']:g}%, "
            f"{params['duration_s']:g} s{extra}")


def format_cases(verdicts: Sequence[dict], reference: str) -> str:
    """The per-case table: parameters, then sim vs reference per metric."""
    lines = []
    for v in verdicts:
        late = v.get("lateness")
        late_s = (f"; delay tool late mean {late['mean_late_us']:.0f} us, max {late['max_late_us'] / 1e3:.1f} ms"
                  if late else "")
        if late and late.get("hold_err_p95_ms") is not None:
            late_s += f", hold error p95 {late['hold_err_p95_ms']:.2f} ms"
        if v.get("attempts", 1) > 1:
            late_s += f"; reference runs {v['attempts']}"
        lim = f"; limitations: {', '.join(v['limitations'])}" if v["limitations"] else ""
        lines.append(f"{v['case']} [{v['verdict'].upper()}] {describe(v['params'])}{lim}{late_s}")
        if v["verdict"] == "invalid":
            lines.append("    invalid run (emulator's delay self-check, after a re-run): not compared")
            continue
        lines.append(f"    {'metric':16s} {'sim':>10s} {reference:>10s} {'diff':>11s}  verdict")
        for m in METRICS:
            c = v["checks"][m]
            spread = (f"  ({reference} runs {fmt_metric(m, min(c['ref_runs']))}..{fmt_metric(m, max(c['ref_runs']))})"
                      if c.get("ref_runs") else "")
            lines.append(f"    {m:16s} {fmt_metric(m, c['sim']):>10s} {fmt_metric(m, c['ref']):>10s} {_fmt_diff(m, c):>11s}  "
                         f"{c['verdict']}{spread}")
    return "\n".join(lines)


def _rate_cells(r: dict, *, percent: bool, missing: str) -> list[str]:
    """One controller's pass-rate cells (``pass_rates``): per metric, then whole cases,
    "passes/compared", with the rate in % when ``percent``; ``missing`` where none compared."""
    def cell(passed: int, n: int, rate) -> str:
        return missing if not n else f"{passed}/{n} ({100 * rate:.0f}%)" if percent else f"{passed}/{n}"

    pms = [r["metrics"][m] for m in METRICS]
    cs = r["cases"]
    return ([cell(pm["pass"], pm["pass"] + pm["fail"], pm.get("rate")) for pm in pms]
            + [cell(cs["pass"], cs["valid"], cs.get("rate"))])


def format_pass_rates(rates: dict, reference: str) -> str:
    """Pass rates per controller and metric (and of whole cases, against the target)."""
    head = f"{'controller':10s} " + " ".join(f"{m:>16s}" for m in METRICS) + f" {'all metrics':>16s}  invalid limited"
    lines = [f"pass rates against {reference} (tolerances: " + "; ".join(f"{m} {t}" for m, t in TOLERANCES.items())
             + f"; target {PASS_RATE_TARGET:.0%} of cases per controller)", head]
    for c, r in rates.items():
        cells, cs = _rate_cells(r, percent=True, missing="-"), r["cases"]
        lines.append(f"{c:10s} " + " ".join(f"{x:>16s}" for x in cells) + f"  {cs['invalid']:7d} {cs['limited']:7d}")
    return "\n".join(lines)


def markdown_pass_rates(rates: dict, reference: str, *, command: str, version: dict, date: str) -> str:
    """The pass rates as the Markdown table ``docs/fidelity.md`` carries, headed by the command,
    the commit and the date that produced them (``OUT/fidelity.md``).  A cell is "passes/compared"
    (cases within the metric's tolerance over the valid cases that compared it)."""
    commit = (version.get("commit") or "unknown")[:12] + (" (dirty)" if version.get("dirty") else "")
    names = {"throughput_mbps": "throughput", "p95_owd_ms": "p95 one-way delay", "loss": "loss", "jain": "Jain"}
    lines = [f"`{command}` (commit {commit}, {date}); cases within the tolerance / cases compared:", "",
             "| controller | " + " | ".join(names.get(m, m) for m in METRICS) + " | all metrics | invalid |",
             "|---|" + "---|" * (len(METRICS) + 2)]
    for c, r in rates.items():
        cells = _rate_cells(r, percent=False, missing="–")
        lines.append(f"| `{c}` | " + " | ".join(cells) + f" | {r['cases']['invalid']} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the recorded misses
#
# Where the model misses the tolerances today, the CI sweeps hold it to what was recorded
# (``tests/fidelity_misses.json``, written by ``--record``): a metric outside its tolerance that is
# not in the record is a regression and fails; a recorded miss that is now within tolerance fails
# too (for ns-3, whose runs are deterministic), so the record has to be re-written and an
# improvement shows up in the diff.  The record never excuses anything from the pass rates.

def misses(verdict: dict) -> dict[str, dict]:
    """{metric: {"sim": x, "ref": y}} for the metrics of one case outside their tolerance."""
    return {m: {"sim": c["sim"], "ref": c["ref"]} for m, c in verdict["checks"].items() if c["verdict"] == "fail"}


def per_run_misses(verdict: dict) -> list[set[str]]:
    """The metrics outside their tolerance against each reference run of a case, one set per run
    (one run: the verdict's own misses)."""
    runs = max((len(c.get("ref_runs", [])) for c in verdict["checks"].values()), default=0)
    if runs <= 1:
        return [set(misses(verdict))]
    return [{m for m, c in verdict["checks"].items() if c["verdict"] in ("pass", "fail")
             and not check_metric(m, c["sim"], c["ref_runs"][k])["ok"]} for k in range(runs)]


def record_misses(report: dict) -> dict:
    """The misses of one sweep, per case, with the sweep's arguments (one reference's entry).
    With several reference runs per case a metric is recorded when it missed against any run."""
    out = {}
    for v in report["verdicts"]:
        if v["verdict"] == "invalid":
            continue
        seen = set().union(*per_run_misses(v))
        if seen:
            out[v["case"]] = {m: {"sim": v["checks"][m]["sim"], "ref": v["checks"][m]["ref"]} for m in sorted(seen)}
    return {"seed": report["seed"], "cases_per_controller": report["cases_per_controller"],
            "controllers": report["controllers"], "runs": report.get("repeats", 1), "misses": out}


def against_record(verdict: dict, recorded: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(new misses, recorded misses now within tolerance) of one case, as readable lines."""
    now = misses(verdict)
    new = [f"{m}: sim {fmt_metric(m, c['sim'])} vs reference {fmt_metric(m, c['ref'])} (bound {verdict['checks'][m]['bound']})"
           for m, c in now.items() if m not in recorded]
    healed = [f"{m}: sim {fmt_metric(m, verdict['checks'][m]['sim'])} vs reference {fmt_metric(m, verdict['checks'][m]['ref'])} "
              f"(recorded: {fmt_metric(m, c['sim'])} vs {fmt_metric(m, c['ref'])})" for m, c in recorded.items() if m not in now]
    return new, healed


def write_record(path: str | os.PathLike, reference: str, report: dict, *, merge: bool = False) -> None:
    """Replaces ``reference``'s entry of the record file (other references' entries are kept).
    ``merge``: add this sweep's misses to an entry of the same sweep instead (a reference that is not
    repeatable, the kernel: a metric recorded when it missed in any recorded run)."""
    path = Path(path)
    data = {}
    if path.exists():
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    entry = metrics.json_safe(record_misses(report))
    old = data.get(reference)
    if merge and old is not None:
        if [old[k] for k in ("seed", "cases_per_controller", "controllers")] != \
                [entry[k] for k in ("seed", "cases_per_controller", "controllers")]:
            raise ValueError(f"{path}: the recorded {reference} sweep has other arguments; re-record it without merging")
        for case, ms in entry["misses"].items():
            old["misses"].setdefault(case, {}).update({m: x for m, x in ms.items() if m not in old["misses"][case]})
        old["runs"] = old.get("runs", 1) + entry["runs"]
        entry = old
    data[reference] = entry
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
