"""The sections every report shares: per-scenario summary tables, the folded raw tables, bars,
settings, skipped runs, figures and the full record."""

from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

from jaxcc.report.document import Report
from jaxcc.report.figures import figures_by_scenario
from jaxcc.report.values import SUMMARY_COLUMNS, flatten, summary_row


# ----------------------------------------------------------------------------- record groups


def _by_scenario(records: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(str(r.get("scenario")), []).append(r)
    return out


def _bad_valid(column: str, value: Any) -> str | None:
    """A check's cell class: ``bad`` where it failed (``met``/``...valid`` false), ``good`` where it passed."""
    if column == "met" or column.endswith("valid"):
        return {True: "good", False: "bad"}.get(value) if isinstance(value, bool) else None
    return None


def summary_columns(records: Sequence[dict]) -> tuple[tuple[str, str, int, float], ...]:
    """``SUMMARY_COLUMNS`` that at least one of ``records`` has."""
    return tuple(c for c in SUMMARY_COLUMNS if any(c[0] in r for r in records))


def summary_tables(rep: Report, records: Sequence[dict], *, prefix: str = "") -> None:
    """Per scenario a readable table (``summary_row``): a row per controller, the headline metrics
    under headers with units, fixed decimals, the exact values in ``data-value``."""
    cols = summary_columns(records)
    for scen, recs in _by_scenario(records).items():
        rep.table(f"{prefix}summary: {scen}", [summary_row(r, cols) for r in recs],
                  ["Controller"] + [c[1] for c in cols], id=f"t-{prefix}summary-{scen}")


def record_tables(rep: Report, records: Sequence[dict], *, prefix: str = "", headings: bool = True) -> None:
    """Per scenario (under an h3 when ``headings``), folded: a table of every scalar field of its
    records (a row per field, a column per controller, headed by the record's ``controller``), a
    per-seed table when the records carry ``per_seed``, and one per-flow table per record with
    ``per_flow``."""
    for scen, recs in _by_scenario(records).items():
        if headings:
            rep.section(f"{prefix}{scen}", depth=3)
        flat = [flatten(r, skip=("scenario", "controller")) for r in recs]
        labels = [str(r.get("controller")) for r in recs]
        rows = [{"field": k, **{lab: f.get(k) for lab, f in zip(labels, flat)}}
                for k in dict.fromkeys(k for f in flat for k in f)]
        rep.table(f"{prefix}metrics: {scen}", rows, ["field"] + labels, id=f"t-{prefix}metrics-{scen}", folded=True)
        seeds = [{"controller": r.get("controller"), **s} for r in recs for s in (r.get("per_seed") or [])]
        if seeds:
            rep.table(f"{prefix}per seed: {scen}", [flatten(s) for s in seeds], id=f"t-{prefix}per-seed-{scen}",
                      folded=True)
        for r in recs:
            if r.get("per_flow"):
                rep.table(f"{prefix}per flow: {scen} / {r.get('controller')}", [flatten(f) for f in r["per_flow"]],
                          id=f"t-{prefix}per-flow-{scen}-{r.get('controller')}", cell_class=_bad_valid, folded=True)


def bars_rows(bars: dict | None) -> list[dict]:
    """``{"set", "verdicts": {policy: [{"bar", "value", "met"}]}}`` (``jaxcc.evaluation.bars.as_json``) as rows."""
    if not isinstance(bars, dict):
        return []
    return [{"policy": pol, "bar": v.get("bar"), "value": v.get("value"), "met": v.get("met")}
            for pol, vs in (bars.get("verdicts") or {}).items() for v in vs]


def _bars(rep: Report, bars: dict | None) -> None:
    rows = bars_rows(bars)
    if rows:
        n = sum(1 for r in rows if r["met"])
        rep.section(f"Bars ({bars.get('set')}): {n} of {len(rows)} met")
        rep.table(f"bar verdicts ({bars.get('set')})", rows, id="t-bars", cell_class=_bad_valid)


def _settings(rep: Report, meta: dict | None, caption: str, id: str) -> None:
    meta = {k: v for k, v in (meta or {}).items() if k not in ("skipped", "bars")}
    if meta:
        rep.table(caption, [{"setting": k, "value": v} for k, v in flatten(meta).items()], id=id, folded=True)


def _skipped(rep: Report, meta: dict | None) -> None:
    sk = (meta or {}).get("skipped") or []
    if sk:
        rep.table("skipped runs", sk, id="t-skipped", folded=True)
    else:
        rep.note("No run was skipped.")


def _skipped_note(rep: Report, meta: dict | None) -> None:
    sk = (meta or {}).get("skipped") or []
    if sk:
        rep.note(f"{len(sk)} scenario × controller pair{'s were' if len(sk) > 1 else ' was'} not run: "
                 + "; ".join(f"{s.get('controller')} on {s.get('scenario')}" for s in sk[:5])
                 + ("; …" if len(sk) > 5 else "") + " (skipped runs, in the full record, give the reasons).")


def _figures(rep: Report, title: str, groups: Sequence[tuple[str | None, Iterable[str]]], scenarios: Iterable[str],
             none_note: str, note: str | None = None) -> None:
    """A section of figures, an h3 per scenario (``figures_by_scenario``; those of no scenario
    last, under "Other figures"); ``groups``: (caption label or None, files), embedded in that
    order within each scenario."""
    rep.section(title, note=note)
    scenarios = list(dict.fromkeys(scenarios))
    by = [(label, figures_by_scenario(paths, scenarios)) for label, paths in groups]
    keys = [s for s in scenarios + [None] if any(s in g for _, g in by)]
    if not keys:
        rep.note(none_note)
    for s in keys:
        rep.section(s if s is not None else "Other figures", depth=3)
        for label, g in by:
            rep.figures(g.get(s, ()), label)


def _full_record(rep: Report) -> None:
    rep.section("Full record", note="Everything the run's results.json holds, table by table, each folded: "
                "open one by its caption.  Numbers show four significant digits; the exact value is in each "
                "cell's data-value.")


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read results for the report ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object (a results.json)")
    return doc


SUMMARY_NOTE = ("Per scenario, each controller's headline metrics as python -m jaxcc.evaluate prints them: "
                "utilization as a fraction of the capacity, loss in percent of the packets sent, one-way and "
                "queueing delay as the 95th percentile over packets; Jain's fairness index over the "
                "scenario's fairness window; Ankh's number (lower is better).")
