"""One report per command: ``evaluation`` (``jaxcc.evaluate``), ``tcr`` (``jaxcc.tcr``),
``emulation`` (``jaxcc.emulate``) and ``sim2real`` (``jaxcc.sim2real``)."""

from __future__ import annotations

import os
from typing import Any, Sequence

from jaxcc.report.document import Report
from jaxcc.report.sections import (SUMMARY_NOTE, _bad_valid, _bars, _by_scenario, _figures,
                                       _full_record, _load, _settings, _skipped, _skipped_note,
                                       record_tables, summary_tables)
from jaxcc.report.values import MISSING, REPORT_NAME, SUMMARY_COLUMNS, Shown, fixed, flatten


# ----------------------------------------------------------------------------- per command


def evaluation(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
               out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.evaluate`` run (its ``results.json``); returns the path."""
    doc = _load(results_json)
    recs, meta = doc.get("results") or [], doc.get("meta") or {}
    out = out or os.path.join(os.path.dirname(results_json), REPORT_NAME)
    rep = Report(f"jaxcc.evaluate: {meta.get('source', os.path.dirname(os.path.abspath(results_json)))}", command,
                 version, folder=os.path.dirname(os.path.abspath(out)))
    rep.section("Summary", note=SUMMARY_NOTE + " Seeds averaged (the mean).")
    summary_tables(rep, recs)
    _skipped_note(rep, meta)
    _bars(rep, meta.get("bars") or doc.get("bars"))
    _figures(rep, "Figures", [(None, figures)], _by_scenario(recs), "No figures: this run was made with --noplots.",
             note="The scatters mark each seed's run and the MEDIAN of the seeds (the tables give the mean); "
                  "time series are seed 0's.")
    _full_record(rep)
    record_tables(rep, recs, prefix="")
    rep.section("Run", depth=3, note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    _skipped(rep, meta)
    rep.specs(specs, depth=3)
    return rep.write(out)


def tcr(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
        missing_specs: Sequence[str] = (), out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.tcr`` run: the TCR per controller × link, the bars, the TCR
    figures per link; folded: every controller's measured values, the links' target ranges, the
    settings, the specs."""
    doc = _load(results_json)
    rows, links, meta = doc.get("tcr") or [], doc.get("links") or [], doc.get("meta") or {}
    out = out or os.path.join(os.path.dirname(results_json), REPORT_NAME)
    rep = Report(f"jaxcc.tcr: {meta.get('source', os.path.dirname(os.path.abspath(results_json)))}", command,
                 version, folder=os.path.dirname(os.path.abspath(out)))
    rep.section("Target completion ratio", note="TCR = share of the link's targets met (throughput ≥ T1, "
                "p95 queueing delay ≤ T2, loss ≤ T3 over the link's window), in percent, one decimal, as "
                "python -m jaxcc.tcr prints it.")
    names = list(dict.fromkeys(r["scenario"] for r in rows))
    by = {(r["scenario"], r["controller"]): r for r in rows}
    pivot = []
    for c in dict.fromkeys(r["controller"] for r in rows):
        tuned = any(by[(n, c)].get("tuned") for n in names if (n, c) in by)
        cells = {}
        for n in names:
            v = by[(n, c)]["tcr"] if (n, c) in by else None
            cells[n] = Shown(v, fixed(v, 1, 100.0))
        pivot.append({"Controller": c + (" (tuned per target)" if tuned else ""), **cells})
    rep.table("TCR per controller × link (% of targets met)", pivot, ["Controller"] + names, id="t-tcr-pivot")
    _bars(rep, doc.get("bars"))
    _figures(rep, "Figures", [(None, figures)], names + [ln.get("scenario", "") for ln in links],
             "No figures: this run was made with --noplots.")
    _full_record(rep)
    detail = []
    for r in rows:
        m = r.get("measured")
        d = {k: r.get(k) for k in ("scenario", "controller", "tcr", "met_count", "targets", "tuned", "policy_file")}
        if isinstance(m, dict):
            d.update({f"measured.{k}": v for k, v in m.items()})
        elif isinstance(m, list):
            d["measured"] = f"one run per target ({len(m)})"
        detail.append(d)
    rep.section("TCR runs", depth=3)
    rep.table("TCR and measured values per controller and link", detail, id="t-tcr-rows", folded=True)
    rep.section("Links and targets", depth=3)
    summ = []
    for ln in links:
        t = ln.get("targets") or []
        d = {k: v for k, v in ln.items() if k != "targets"}
        d["targets drawn"] = len(t)
        for j, name in enumerate(("T1 Mbit/s", "T2 ms", "T3 loss")):
            col = [x[j] for x in t if isinstance(x, (list, tuple)) and len(x) == 3]
            if col:
                d[f"{name} min"], d[f"{name} max"] = min(col), max(col)
        summ.append(d)
    rep.table("per-link target ranges", summ, id="t-links", folded=True)
    rep.section("Run", depth=3, note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    rep.specs(specs, missing_specs, depth=3)
    return rep.write(out)


def _validity_rows(records: Sequence[dict]) -> list[dict]:
    out = []
    for r in records:
        dc = r.get("delay_check") if isinstance(r.get("delay_check"), dict) else {}
        out.append({"scenario": r.get("scenario"), "controller": r.get("controller"),
                    **flatten(dc, skip=("reasons",)), "reasons": "; ".join(map(str, dc.get("reasons") or []))})
    return out


def emulation(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
              out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.emulate`` run: the summary, each run's timing check
    (``delay_check``: valid or "invalid, re-run"), the emulation figures per scenario; folded:
    every field of the records, per-flow tables, the settings, the specs."""
    doc = _load(results_json)
    recs, meta = doc.get("results") or [], doc.get("meta") or {}
    out = out or os.path.join(os.path.dirname(results_json), REPORT_NAME)
    rep = Report(f"jaxcc.emulate: {', '.join(_by_scenario(recs)) or os.path.dirname(os.path.abspath(results_json))}",
                 command, version, folder=os.path.dirname(os.path.abspath(out)))
    rep.section("Summary", note=SUMMARY_NOTE + " A run whose timing check failed (below) is not evidence.")
    summary_tables(rep, recs)
    rep.section("Timing checks", note="A run whose delay line or tbf did not keep time (valid: no) is not "
                "evidence: re-run it on a quiet machine; valid – means not self-checked (e.g. Mahimahi).")
    rep.table("delay_check per run", _validity_rows(recs), id="t-validity", cell_class=_bad_valid)
    _figures(rep, "Figures", [(None, figures)], _by_scenario(recs), "No figures: this run was made with --no-plots.")
    _full_record(rep)
    record_tables(rep, recs)
    rep.section("Run", depth=3, note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    rep.specs(specs, depth=3)
    return rep.write(out)


# a metric's header and decimals in the comparison (those of the summary)
_METRICS = {k: (head, dec, scale) for k, head, dec, scale in SUMMARY_COLUMNS}


def _diff_text(row: dict) -> str:
    d = row.get("difference")
    if d is None:
        return MISSING
    return f"{100 * d:+.1f} %" if row.get("kind") == "rel" else f"{100 * d:+.2f} pp"


def _bound_text(kind: Any, bound: Any) -> str:
    if not isinstance(bound, (int, float)) or isinstance(bound, bool):
        return MISSING
    return f"{100 * bound:g} %" if kind == "rel" else f"{100 * bound:g} pp"


def comparison_row(r: dict) -> dict:
    """A sim-vs-emulation row as the summary shows it: the metric's header (with unit), both
    values with the summary's decimals (loss in %), the difference as % (relative bounds) or
    percentage points (absolute), the bound likewise, the verdict."""
    head, dec, scale = _METRICS.get(r.get("metric"), (r.get("metric"), 3, 1.0))
    return {"Controller": r.get("controller"), "Metric": head,
            "Simulator": Shown(r.get("sim"), fixed(r.get("sim"), dec, scale)),
            "Emulation": Shown(r.get("emulation"), fixed(r.get("emulation"), dec, scale)),
            "Difference": Shown(r.get("difference"), _diff_text(r)),
            "Bound": Shown(r.get("bound"), _bound_text(r.get("kind"), r.get("bound"))),
            "Verdict": "over bound" if r.get("over") else "within",
            "Emulation checked": r.get("emu_checked")}


def sim2real(*, command: str, rows: Sequence[dict], invalid: Sequence[dict], bounds: dict, delay_floor_ms: float,
             sim_json: str, emu_json: str, out: str, sim_figures: Sequence[str] = (),
             emu_figures: Sequence[str] = (), overlay_figures: Sequence[str] = (), specs: Sequence[dict] = (),
             missing_specs: Sequence[str] = (), version: dict | None = None) -> str:
    """``report.html`` of a sim-to-real comparison (``jaxcc.sim2real``, also ``--compare``): per
    scenario the comparison (differences, "over bound" flagged), the invalid emulated runs, the
    bounds, the figures per scenario (``overlay_figures``, figures that draw the two sides
    together, first; then the simulator's, then the emulation's); folded: both sides' full
    records."""
    sim, emu = _load(sim_json), _load(emu_json)
    rep = Report("jaxcc.sim2real: simulator vs emulation", command, version,
                 folder=os.path.dirname(os.path.abspath(out)))
    sim_recs, emu_recs = sim.get("results") or [], emu.get("results") or []
    rep.section("Comparison", note=f"Simulator {os.path.abspath(sim_json)}; emulation {os.path.abspath(emu_json)}. "
                "Values as python -m jaxcc.evaluate prints them (loss in %); the difference is relative (%) or "
                "absolute (percentage points), as its bound.")
    over = sum(1 for r in rows if r.get("over"))
    rep.note(f"{over} of {len(rows)} comparisons exceed the bounds.")
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(str(r.get("scenario")), []).append(r)
    for scen, rs in by.items():
        rep.table(f"sim vs emulation: {scen}", [comparison_row(r) for r in rs], id=f"t-comparison-{scen}",
                  cell_class=lambda c, v: ("bad" if v == "over bound" else "good") if c == "Verdict" else None)
    if not rows:
        rep.note("Nothing compared (no scenario × controller ran on both sides).")
    if invalid:
        rep.table("invalid emulated runs (not compared: re-run)",
                  [{**r, "reasons": "; ".join(map(str, r.get("reasons") or []))} for r in invalid], id="t-invalid")
    else:
        rep.note("Every emulated run kept time (no invalid run).")
    rep.table("bounds", [{"metric": _METRICS.get(m, (m,))[0], "kind": k, "bound": Shown(b, _bound_text(k, b)),
                          "meaning": (f"|sim - emulation| / emulation > {b:g}"
                                      + (f" and > {delay_floor_ms:g} ms apart" if m.endswith("_ms") else "")
                                      if k == "rel" else f"|sim - emulation| > {b:g} (absolute)")}
                         for m, (k, b) in bounds.items()], id="t-bounds")
    scens = list(by) + list(_by_scenario(sim_recs)) + list(_by_scenario(emu_recs))
    _figures(rep, "Figures", [("simulator and emulation", overlay_figures), ("simulator", sim_figures),
                              ("emulation", emu_figures)], scens, "No figures found.")
    _full_record(rep)
    rep.section("Simulator", depth=3, note=f"jaxcc.evaluate's records, from {os.path.abspath(sim_json)}.")
    _settings(rep, sim.get("meta"), "simulator run settings", "t-sim-settings")
    record_tables(rep, sim_recs, prefix="sim ", headings=False)
    rep.section("Emulation", depth=3, note=f"jaxcc.emulate's records, from {os.path.abspath(emu_json)}.")
    _settings(rep, emu.get("meta"), "emulation run settings", "t-emu-settings")
    rep.table("emulation delay_check per run", _validity_rows(emu_recs), id="t-emu-validity",
              cell_class=_bad_valid, folded=True)
    record_tables(rep, emu_recs, prefix="emulation ", headings=False)
    rep.specs(specs, missing_specs, depth=3)
    return rep.write(out)
