"""One self-contained ``report.html`` per evaluation (``--report`` on ``jaxcc.evaluate``,
``jaxcc.tcr``, ``jaxcc.emulate`` and ``jaxcc.sim2real``).

The file opens offline in any browser: no external URL, script, stylesheet or font; the style is
inline, every figure is embedded (per file stem the ``.svg`` inline when the figure function
wrote one, else the ``.png`` as a ``data:`` URI; ``.pdf`` is for papers and is left out).  It
holds, from the command's own ``results.json``:

* the command that made it, jaxcc's version (package version, git commit and a dirty flag when
  run from a checkout: ``version_info``) and the date;
* a table of contents;
* tables of every metric: every scalar field of every record (nested objects such as
  ``delay_check`` flattened to dotted columns), one table per scenario; per-flow tables; per-seed
  tables; skipped runs; bar verdicts; and what each command adds (TCR per controller × link,
  the sim-vs-emulation comparison);
* every figure, captioned with its file name;
* each scenario's full spec as JSON (the scenario-file format), folded in ``<details>``.

Every table is ``<table id=... class="metric-table">`` with a ``<caption>``, every figure a
``<figure class="fig">`` (an inline ``<svg>`` or an ``<img>`` with a ``data:image/png`` source),
so a test can count both.  A numeric cell keeps the exact value in ``data-value``; the text shows
four significant digits; a missing value (null, NaN) is "–".

Level 1 (README "Layout"): the standard library only; the commands give it plain dicts (their
results.json, figure paths, scenario spec dicts) and it writes HTML.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import math
import os
import re
import subprocess
from typing import Any, Callable, Iterable, Sequence

MISSING = "–"
REPORT_NAME = "report.html"
# the headline fields of a record (jaxcc.evaluate's text table), in the summary table
SUMMARY = ("scenario", "controller", "throughput_mbps", "utilization", "p95_owd_ms", "p95_qdelay_ms", "loss", "jain",
           "ankh")
# a list of scalars this long or shorter is one cell ("40, 80"); a longer one, or one of lists
# (a time series: the figures show it), is summarised as its length
SHORT_LIST = 12

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:1.5em auto;
max-width:1200px;padding:0 1em;color:#1a1a1a;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.3em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}
dl.provenance{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}
dl.provenance dt{font-weight:600}dl.provenance dd{margin:0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
nav#toc ol{padding-left:1.4em}nav#toc li{margin:.1em 0}
div.scroll{overflow-x:auto;margin:.6em 0 1.2em}
table.metric-table{border-collapse:collapse;font-size:.85em}
table.metric-table caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
table.metric-table th,table.metric-table td{border:1px solid #d0d0d0;padding:.2em .5em;vertical-align:top}
table.metric-table th{background:#f0f0f0;text-align:left}
table.metric-table td{max-width:36em;overflow-wrap:break-word}
table.metric-table td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.metric-table tr:nth-child(even) td{background:#fafafa}
td.bad{background:#fde2e1!important;color:#8a1010;font-weight:600}
td.good{color:#13631f}
figure.fig{margin:1em 0 2em;border:1px solid #e3e3e3;padding:.5em}
figure.fig svg,figure.fig img{max-width:100%;height:auto;display:block}
figure.fig figcaption{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em;color:#444;margin-top:.3em}
details{margin:.4em 0}summary{cursor:pointer}
p.note{color:#555;font-size:.9em}
"""


# ----------------------------------------------------------------------------- values


def fmt(v: Any) -> str:
    """A cell's text: four significant digits for a float, "–" for null/NaN, yes/no for a bool."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return MISSING
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e4:
            return f"{v:.0f}"
        if a < 1e-3:
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        if not v:
            return "(none)"
        if len(v) <= SHORT_LIST and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
            return ", ".join(fmt(x) for x in v)
        return f"({len(v)} items)"
    return json.dumps(v, sort_keys=True)


def flatten(record: dict, skip: Iterable[str] = ()) -> dict:
    """A record's fields as one flat dict: nested objects as dotted keys (``delay_check.valid``);
    lists of objects (per-flow detail, per-seed values) are left out (they get their own tables)."""
    out: dict[str, Any] = {}
    skip = set(skip)

    def walk(prefix: str, d: dict):
        for k, v in d.items():
            key = f"{prefix}{k}"
            if key in skip:
                continue
            if isinstance(v, dict):
                walk(key + ".", v)
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                continue
            else:
                out[key] = v

    walk("", record)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "x"


# ----------------------------------------------------------------------------- version


def version_info(where: str | None = None) -> dict:
    """jaxcc's package version, and when ``where`` (default: the package's folder) is in a git
    checkout its commit and whether the tracked files differ from it; None where unknown (no
    git, not a checkout): finding out never fails."""
    try:
        from importlib import metadata
        pkg = metadata.version("jaxcc")
    except Exception:  # not installed: run from a source tree
        pkg = None
    where = where or os.path.dirname(os.path.abspath(__file__))
    commit = dirty = None
    try:
        r = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            commit = r.stdout.strip()
            s = subprocess.run(["git", "--no-optional-locks", "-C", where, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=30)
            dirty = bool(s.stdout.strip()) if s.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"package": pkg, "commit": commit, "dirty": dirty}


def version_text(v: dict) -> str:
    s = f"jaxcc {v.get('package') or '(version unknown: not installed)'}"
    if v.get("commit"):
        s += f", git {v['commit']}" + (" (dirty: uncommitted changes)" if v.get("dirty") else
                                       "" if v.get("dirty") is False else " (dirty: unknown)")
    else:
        s += ", not run from a git checkout"
    return s


# ----------------------------------------------------------------------------- figures


_SVG_DROP = (re.compile(r"<\?xml.*?\?>", re.S), re.compile(r"<!DOCTYPE.*?>", re.S),
             re.compile(r"<metadata>.*?</metadata>", re.S),
             re.compile(r'\s+xmlns(:\w+)?="[^"]*"'))


def inline_svg(text: str, prefix: str) -> str:
    """An SVG file's markup for inlining in HTML: the XML prolog, DOCTYPE, metadata and namespace
    declarations dropped (HTML's parser knows SVG), and every id prefixed with ``prefix`` so two
    figures' ids (matplotlib numbers them per file) never collide."""
    for rx in _SVG_DROP:
        text = rx.sub("", text)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', text)
    return text.strip()


def figure_files(paths: Iterable[str]) -> list[str]:
    """One file per figure stem, in the order given: the ``.svg`` when the list has one, else the
    ``.png``; other files (``.pdf``, ``results.json``) are not figures of the report."""
    stems: dict[str, dict[str, str]] = {}
    for p in paths:
        stem, ext = os.path.splitext(str(p))
        if ext.lower() in (".svg", ".png"):
            stems.setdefault(stem, {})[ext.lower()] = str(p)
    return [d.get(".svg") or d[".png"] for d in stems.values()]


def figures_in(folder: str) -> list[str]:
    """The figure files (``.svg``, ``.png``) directly in ``folder`` and in ``folder/plots``, sorted:
    the figures another process wrote (``jaxcc.sim2real`` runs ``evaluate`` and ``emulate``)."""
    out = []
    for d in (folder, os.path.join(folder, "plots")):
        if os.path.isdir(d):
            out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.lower().endswith((".svg", ".png")))
    return out


# ----------------------------------------------------------------------------- the document


class Report:
    """An HTML report built section by section; ``html()`` is the whole self-contained file."""

    def __init__(self, title: str, command: str, version: dict | None = None, date: str | None = None):
        self.title = title
        self.command = command
        self.version = version if version is not None else version_info()
        self.date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        self.parts: list[str] = []
        self.toc: list[tuple[int, str, str]] = []  # (depth, id, title)
        self.ids: set[str] = set()

    def _id(self, base: str) -> str:
        base = _slug(base)
        i, out = 1, base
        while out in self.ids:
            i += 1
            out = f"{base}-{i}"
        self.ids.add(out)
        return out

    def section(self, title: str, depth: int = 2, note: str | None = None) -> str:
        """A heading (h2, or h3 for ``depth=3``) that the table of contents lists."""
        sid = self._id("sec-" + title)
        self.toc.append((depth, sid, title))
        self.parts.append(f'<h{depth} id="{sid}">{html.escape(title)}</h{depth}>')
        if note:
            self.note(note)
        return sid

    def note(self, text: str) -> None:
        self.parts.append(f'<p class="note">{html.escape(text)}</p>')

    def table(self, caption: str, rows: Sequence[dict], columns: Sequence[str] | None = None, *,
              id: str | None = None, cell_class: Callable[[str, Any], str | None] | None = None) -> str:
        """A ``metric-table`` of ``rows`` (dicts; ``columns`` default: every key, in order of
        first appearance); ``cell_class(column, value)`` may give a cell a CSS class
        (``bad``/``good``).  Returns the table's id."""
        if columns is None:
            columns = list(dict.fromkeys(k for r in rows for k in r))
        tid = self._id(id or "t-" + caption)
        out = [f'<div class="scroll"><table id="{tid}" class="metric-table">',
               f"<caption>{html.escape(caption)}</caption>",
               "<thead><tr>" + "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in columns)
               + "</tr></thead><tbody>"]
        for r in rows:
            cells = []
            for c in columns:
                v = r.get(c)
                cls = ["num"] if isinstance(v, (int, float)) and not isinstance(v, bool) else []
                extra = cell_class(c, v) if cell_class else None
                if extra:
                    cls.append(extra)
                attr = f' class="{" ".join(cls)}"' if cls else ""
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    attr += f' data-value="{v!r}"'
                cells.append(f"<td{attr}>{html.escape(fmt(v))}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        if not rows:
            out.append(f'<tr><td colspan="{max(1, len(columns))}">(none)</td></tr>')
        out.append("</tbody></table></div>")
        self.parts.append("\n".join(out))
        return tid

    def figures(self, paths: Iterable[str]) -> int:
        """Embed every figure of ``paths`` (``figure_files``); returns how many.

        Raises:
          ValueError: a figure file is missing or unreadable (named).
        """
        n = 0
        for p in figure_files(paths):
            name = os.path.basename(p)
            fid = self._id("fig-" + os.path.splitext(name)[0])
            try:
                if p.lower().endswith(".svg"):
                    with open(p, encoding="utf-8") as fh:
                        body = inline_svg(fh.read(), fid + "-")
                else:
                    with open(p, "rb") as fh:
                        body = (f'<img alt="{html.escape(name)}" src="data:image/png;base64,'
                                f'{base64.b64encode(fh.read()).decode("ascii")}">')
            except OSError as e:
                raise ValueError(f"{p}: cannot embed the figure in the report ({e.strerror or e})") from None
            self.parts.append(f'<figure class="fig" id="{fid}">{body}'
                              f"<figcaption>{html.escape(name)}</figcaption></figure>")
            n += 1
        return n

    def json_details(self, summary: str, obj: Any) -> None:
        """``obj`` as indented JSON, folded under ``summary``."""
        self.parts.append(f"<details><summary>{html.escape(summary)}</summary><pre>"
                          f"{html.escape(json.dumps(obj, indent=1, default=str))}</pre></details>")

    def specs(self, specs: Sequence[dict], missing: Sequence[str] = ()) -> None:
        """A section of scenario specs (the scenario-file format), one ``<details>`` each."""
        self.section("Scenario specs", note="Each scenario as a scenario file (python -m jaxcc.evaluate "
                     "--scenario-file=FILE runs it).")
        for sp in specs:
            self.json_details(str(sp.get("name", "scenario")), sp)
        if missing:
            self.note("No spec available for: " + ", ".join(missing)
                      + " (not a named scenario; see the scenario file that was given).")

    def html(self) -> str:
        toc, open_sub = ['<nav id="toc"><h2>Contents</h2><ol>'], False
        for d, sid, title in self.toc:
            if d > 2 and not open_sub:
                toc.append("<ol>")
                open_sub = True
            elif d == 2:
                toc.append("</ol></li>" if open_sub else ("</li>" if len(toc) > 1 else ""))
                open_sub = False
            link = f'<a href="#{sid}">{html.escape(title)}</a>'
            toc.append(f"<li>{link}</li>" if d > 2 else f"<li>{link}")
        toc.append(("</ol></li>" if open_sub else "</li>" if len(toc) > 1 else "") + "</ol></nav>")
        head = (f'<header><h1>{html.escape(self.title)}</h1><dl class="provenance">'
                f'<dt>command</dt><dd><code id="command">{html.escape(self.command)}</code></dd>'
                f'<dt>version</dt><dd id="version">{html.escape(version_text(self.version))}</dd>'
                f'<dt>date</dt><dd id="date">{html.escape(self.date)}</dd></dl></header>')
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head>\n<body>\n"
                + head + "\n" + "".join(toc) + "\n<main>\n" + "\n".join(self.parts) + "\n</main>\n</body></html>\n")

    def write(self, path: str) -> str:
        """Write the file (atomically); returns its path."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(self.html())
        os.replace(tmp, path)
        return path


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


def record_tables(rep: Report, records: Sequence[dict], *, prefix: str = "") -> None:
    """Per scenario: a table of every scalar field of its records (a row per field, a column per
    controller, headed by the record's ``controller``), a per-seed table when the records carry
    ``per_seed``, and one per-flow table per record with ``per_flow``."""
    for scen, recs in _by_scenario(records).items():
        rep.section(f"{prefix}{scen}", depth=3)
        flat = [flatten(r, skip=("scenario", "controller")) for r in recs]
        labels = [str(r.get("controller")) for r in recs]
        rows = [{"field": k, **{lab: f.get(k) for lab, f in zip(labels, flat)}}
                for k in dict.fromkeys(k for f in flat for k in f)]
        rep.table(f"{prefix}metrics: {scen}", rows, ["field"] + labels, id=f"t-{prefix}metrics-{scen}")
        seeds = [{"controller": r.get("controller"), **s} for r in recs for s in (r.get("per_seed") or [])]
        if seeds:
            rep.table(f"{prefix}per seed: {scen}", [flatten(s) for s in seeds], id=f"t-{prefix}per-seed-{scen}")
        for r in recs:
            if r.get("per_flow"):
                rep.table(f"{prefix}per flow: {scen} / {r.get('controller')}", [flatten(f) for f in r["per_flow"]],
                          id=f"t-{prefix}per-flow-{scen}-{r.get('controller')}", cell_class=_bad_valid)


def bars_rows(bars: dict | None) -> list[dict]:
    """``{"set", "verdicts": {policy: [{"bar", "value", "met"}]}}`` (``jaxcc.bars.as_json``) as rows."""
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
        rep.table(caption, [{"setting": k, "value": v} for k, v in flatten(meta).items()], id=id)


def _skipped(rep: Report, meta: dict | None) -> None:
    sk = (meta or {}).get("skipped") or []
    if sk:
        rep.table("skipped runs", sk, id="t-skipped")
    else:
        rep.note("No run was skipped.")


def _figures(rep: Report, title: str, paths: Iterable[str], none_note: str, note: str | None = None) -> None:
    rep.section(title, note=note)
    if not rep.figures(paths):
        rep.note(none_note)


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read results for the report ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object (a results.json)")
    return doc


# ----------------------------------------------------------------------------- per command


def evaluation(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
               out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.evaluate`` run (its ``results.json``); returns the path."""
    doc = _load(results_json)
    recs, meta = doc.get("results") or [], doc.get("meta") or {}
    rep = Report(f"jaxcc.evaluate: {meta.get('source', os.path.dirname(results_json))}", command, version)
    rep.section("Summary", note="Seeds averaged; every other field in Metrics below.")
    rep.table("summary: every scenario × controller", [{k: r.get(k) for k in SUMMARY if k in r} for r in recs],
              id="t-summary")
    _bars(rep, meta.get("bars") or doc.get("bars"))
    rep.section("Metrics", note="One table per scenario (a column per controller, a row per field of its "
                "record; seeds averaged), its per-seed values when the record has them, and one per-flow "
                "table per run.")
    record_tables(rep, recs)
    _figures(rep, "Figures", figures, "No figures: this run was made with --noplots.",
             note="The scatters mark each seed's run and the MEDIAN of the seeds (the tables give the mean); "
                  "time series are seed 0's.")
    rep.section("Run", note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    _skipped(rep, meta)
    rep.specs(specs)
    return rep.write(out or os.path.join(os.path.dirname(results_json), REPORT_NAME))


def tcr(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
        missing_specs: Sequence[str] = (), out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.tcr`` run: the TCR per controller × link, every controller's
    measured values, the links' target ranges, the bars, the TCR figures."""
    doc = _load(results_json)
    rows, links, meta = doc.get("tcr") or [], doc.get("links") or [], doc.get("meta") or {}
    rep = Report(f"jaxcc.tcr: {meta.get('source', os.path.dirname(results_json))}", command, version)
    rep.section("Target completion ratio", note="TCR = fraction of the link's targets met (throughput ≥ T1, "
                "p95 queueing delay ≤ T2, loss ≤ T3 over the link's window).")
    names = list(dict.fromkeys(r["scenario"] for r in rows))
    by = {(r["scenario"], r["controller"]): r for r in rows}
    pivot = []
    for c in dict.fromkeys(r["controller"] for r in rows):
        tuned = any(by[(n, c)].get("tuned") for n in names if (n, c) in by)
        pivot.append({"controller": c + (" (tuned per target)" if tuned else ""),
                      **{n: by[(n, c)]["tcr"] if (n, c) in by else None for n in names}})
    rep.table("TCR per controller × link (fraction of targets met)", pivot, id="t-tcr-pivot")
    detail = []
    for r in rows:
        m = r.get("measured")
        d = {k: r.get(k) for k in ("scenario", "controller", "tcr", "met_count", "targets", "tuned", "policy_file")}
        if isinstance(m, dict):
            d.update({f"measured.{k}": v for k, v in m.items()})
        elif isinstance(m, list):
            d["measured"] = f"one run per target ({len(m)})"
        detail.append(d)
    rep.table("TCR and measured values per controller and link", detail, id="t-tcr-rows")
    rep.section("Links and targets")
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
    rep.table("per-link target ranges", summ, id="t-links")
    _bars(rep, doc.get("bars"))
    _figures(rep, "Figures", figures, "No figures: this run was made with --noplots.")
    rep.section("Run", note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    rep.specs(specs, missing_specs)
    return rep.write(out or os.path.join(os.path.dirname(results_json), REPORT_NAME))


def _validity_rows(records: Sequence[dict]) -> list[dict]:
    out = []
    for r in records:
        dc = r.get("delay_check") if isinstance(r.get("delay_check"), dict) else {}
        out.append({"scenario": r.get("scenario"), "controller": r.get("controller"),
                    **flatten(dc, skip=("reasons",)), "reasons": "; ".join(map(str, dc.get("reasons") or []))})
    return out


def emulation(results_json: str, *, command: str, figures: Sequence[str] = (), specs: Sequence[dict] = (),
              out: str | None = None, version: dict | None = None) -> str:
    """``report.html`` of a ``jaxcc.emulate`` run: the records' metrics, each run's timing check
    (``delay_check``: valid or "invalid, re-run"), per-flow tables, the emulation figures."""
    doc = _load(results_json)
    recs, meta = doc.get("results") or [], doc.get("meta") or {}
    rep = Report(f"jaxcc.emulate: {', '.join(_by_scenario(recs)) or os.path.dirname(results_json)}", command,
                 version)
    rep.section("Summary")
    rep.table("summary: every scenario × controller", [{k: r.get(k) for k in SUMMARY if k in r} for r in recs],
              id="t-summary")
    rep.section("Timing checks", note="A run whose delay line or tbf did not keep time (valid: no) is not "
                "evidence: re-run it on a quiet machine; valid – means not self-checked (e.g. Mahimahi).")
    rep.table("delay_check per run", _validity_rows(recs), id="t-validity", cell_class=_bad_valid)
    rep.section("Metrics", note="One table per scenario (a column per controller, a row per field of its "
                "record) and one per-flow table per run.")
    record_tables(rep, recs)
    _figures(rep, "Figures", figures, "No figures: this run was made with --no-plots.")
    rep.section("Run", note=f"From {os.path.abspath(results_json)}.")
    _settings(rep, meta, "run settings", "t-settings")
    rep.specs(specs)
    return rep.write(out or os.path.join(os.path.dirname(results_json), REPORT_NAME))


def _diff_text(row: dict) -> str:
    d = row.get("difference")
    if d is None:
        return MISSING
    return f"{100 * d:+.1f} %" if row.get("kind") == "rel" else f"{100 * d:+.2f} pp"


def sim2real(*, command: str, rows: Sequence[dict], invalid: Sequence[dict], bounds: dict, delay_floor_ms: float,
             sim_json: str, emu_json: str, out: str, sim_figures: Sequence[str] = (),
             emu_figures: Sequence[str] = (), overlay_figures: Sequence[str] = (), specs: Sequence[dict] = (),
             missing_specs: Sequence[str] = (), version: dict | None = None) -> str:
    """``report.html`` of a sim-to-real comparison (``jaxcc.sim2real``, also ``--compare``): the
    comparison (differences, "over bound" flagged), the invalid emulated runs, the bounds, both
    sides' full metric tables and figures.  ``overlay_figures``: figures that draw the two sides
    together (a sim-vs-emulation overlay), shown first."""
    sim, emu = _load(sim_json), _load(emu_json)
    rep = Report("jaxcc.sim2real: simulator vs emulation", command, version)
    rep.section("Comparison", note=f"Simulator {os.path.abspath(sim_json)}; emulation {os.path.abspath(emu_json)}.")
    over = sum(1 for r in rows if r.get("over"))
    rep.note(f"{over} of {len(rows)} comparisons exceed the bounds.")
    table = [{"scenario": r["scenario"], "controller": r["controller"], "metric": r["metric"], "sim": r["sim"],
              "emulation": r["emulation"], "difference": r["difference"], "difference (text)": _diff_text(r),
              "bound": r.get("bound"), "kind": r.get("kind"),
              "verdict": "over bound" if r.get("over") else "within",
              "emulation checked": r.get("emu_checked")} for r in rows]
    rep.table("sim vs emulation per scenario, controller and metric", table, id="t-comparison",
              cell_class=lambda c, v: ("bad" if v == "over bound" else "good") if c == "verdict" else None)
    if invalid:
        rep.table("invalid emulated runs (not compared: re-run)",
                  [{**r, "reasons": "; ".join(map(str, r.get("reasons") or []))} for r in invalid], id="t-invalid")
    else:
        rep.note("Every emulated run kept time (no invalid run).")
    rep.table("bounds", [{"metric": m, "kind": k, "bound": b, "meaning": (
        f"|sim - emulation| / emulation > {b:g}" + (f" and > {delay_floor_ms:g} ms apart" if m.endswith("_ms") else "")
        if k == "rel" else f"|sim - emulation| > {b:g} (absolute)")} for m, (k, b) in bounds.items()], id="t-bounds")
    if overlay_figures:
        _figures(rep, "Simulator and emulation together", overlay_figures, "")
    rep.section("Simulator", note="jaxcc.evaluate's records.")
    _settings(rep, sim.get("meta"), "simulator run settings", "t-sim-settings")
    record_tables(rep, sim.get("results") or [], prefix="sim ")
    rep.section("Emulation", note="jaxcc.emulate's records.")
    _settings(rep, emu.get("meta"), "emulation run settings", "t-emu-settings")
    rep.table("emulation delay_check per run", _validity_rows(emu.get("results") or []), id="t-emu-validity",
              cell_class=_bad_valid)
    record_tables(rep, emu.get("results") or [], prefix="emulation ")
    _figures(rep, "Simulator figures", sim_figures, "No simulator figures found.")
    _figures(rep, "Emulation figures", emu_figures, "No emulation figures found.")
    rep.specs(specs, missing_specs)
    return rep.write(out)
