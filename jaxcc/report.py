"""One self-contained ``report.html`` per evaluation (``--report`` on ``jaxcc.evaluate``,
``jaxcc.tcr``, ``jaxcc.emulate`` and ``jaxcc.sim2real``).

The file opens offline in any browser: no external URL, script, stylesheet or font; the style is
inline, every figure is embedded (per file stem the ``.svg`` inline when the figure function
wrote one, else the ``.png`` as a ``data:`` URI; ``.pdf`` is for papers and is left out).  It is
built from the command's own ``results.json`` and reads top-down, the summary first and the full
record last:

1. the header: the command that made it, jaxcc's version (package version, git commit and a dirty
   flag when run from a checkout: ``version_info``) and the date; then a table of contents;
2. the summary, not folded: per scenario a table of each controller's headline metrics under
   readable headers with units, rounded as ``python -m jaxcc.evaluate`` prints them in the
   terminal (``SUMMARY_COLUMNS``): Throughput (Mbit/s, 2 decimals), Utilization (fraction of
   capacity, 3), p95 one-way delay (ms, 1), p95 queueing (ms, 1), Loss (%, 2), Jain index (3),
   Ankh (3).  ``jaxcc.tcr``: the TCR per controller × link in %.  ``jaxcc.emulate``: then each
   run's timing check.  ``jaxcc.sim2real``: per scenario the simulator's and the emulation's value
   of each metric, their difference, its bound and the verdict; the invalid emulated runs; the
   bounds;
3. the bar verdicts, when the run judged bars (a summary too);
4. the figures, grouped per scenario: a figure belongs to the scenario whose file-name fragment
   (``jaxcc.plots.slug``, e.g. ``pareto_fixed50``) ends its file stem (``scatter_pareto_fixed50``;
   the longest such fragment wins), the others come last; each is captioned with its file path
   (``jaxcc.sim2real``: after the side it draws: "simulator", "emulation" or both);
5. the full record, every table folded in a closed ``<details>`` whose ``<summary>`` is the
   table's caption: every scalar field of every record (nested objects such as ``delay_check``
   flattened to dotted columns), one table per scenario with a column per controller; per-seed
   and per-flow tables; the run's settings and skipped runs; what each command adds (the TCR per
   run with its measured values and the links' target ranges; each side of a sim-vs-emulation
   comparison); each scenario's full spec as JSON (the scenario-file format).

Every table is ``<table id=... class="metric-table">`` with a ``<caption>``, every figure a
``<figure class="fig">`` (an inline ``<svg>`` or an ``<img>`` with a ``data:image/png`` source),
so a test can count both.  A numeric cell keeps the exact value, in the unit results.json holds it
(loss as a fraction), in ``data-value``; a summary cell shows it with its column's fixed decimals
(and unit scale: loss ×100), a full-record cell with four significant digits; a missing value
(null, NaN) is "–".

Paths: the report shows no absolute path, so its folder can be moved or shared.  Every absolute
path in any text it shows (table cells and headers, captions, headings, notes, figure captions,
the specs' JSON, the command, ids) is shown as ``relative_path`` gives it, by the first rule that
applies: a trace shipped with jaxcc relative to ``jaxcc/traces`` (the name a scenario file gives
it, so a spec shown runs anywhere); a path inside the report's folder relative to that folder
(``.`` for the folder itself); a path inside the current directory relative to it; any other its
base name.  So ``policy:/home/u/runs/x/p.safetensors`` reads ``policy:p.safetensors`` in a report
written to ``/home/u/runs/x``, and ``/home/u/jaxcc/checkpoints/p.safetensors`` reads
``checkpoints/p.safetensors`` in a report written elsewhere by a command run in ``/home/u/jaxcc``.
An absolute path is a ``/`` (not ``//``) at the start of a text or after whitespace, ``:``,
``=``, ``,``, ``(``, ``[`` or a quote, up to the next whitespace, ``,``, ``;``, ``:``, quote,
bracket, brace or angle bracket (``relative_text``); "Mbit/s" or "pareto/fixed50" are not paths.
The command shown follows the rule too; ``jaxcc.evaluate`` and ``jaxcc.tcr`` keep it as typed in
their results.json (``meta.command``).

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
from typing import Any, Callable, Iterable, NamedTuple, Sequence

MISSING = "–"
REPORT_NAME = "report.html"
# the summary's columns, as jaxcc.evaluate's text table (format_table) prints them:
# (record field, header, decimals, scale of the shown value)
SUMMARY_COLUMNS = (("throughput_mbps", "Throughput (Mbit/s)", 2, 1.0),
                   ("utilization", "Utilization (fraction of capacity)", 3, 1.0),
                   ("p95_owd_ms", "p95 one-way delay (ms)", 1, 1.0),
                   ("p95_qdelay_ms", "p95 queueing (ms)", 1, 1.0),
                   ("loss", "Loss (%)", 2, 100.0),
                   ("jain", "Jain index", 3, 1.0),
                   ("ankh", "Ankh", 3, 1.0))
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
details.record>summary{font-size:.9em;font-weight:600}
p.note{color:#555;font-size:.9em}
"""


# ----------------------------------------------------------------------------- values


class Shown(NamedTuple):
    """A cell whose text is not ``fmt(value)``: ``value`` goes to ``data-value`` (when a finite
    number), ``text`` is what the cell shows."""
    value: Any
    text: str


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


def fixed(v: Any, decimals: int, scale: float = 1.0) -> str:
    """A summary cell's text: ``v × scale`` with ``decimals`` decimals (never scientific; no "-0"),
    "–" for null/NaN or a value that is not a number, "∞" for infinity."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    s = f"{v * scale:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def summary_row(record: dict, columns: Sequence[tuple[str, str, int, float]] = SUMMARY_COLUMNS) -> dict:
    """A record's summary cells, keyed by header: ``Controller`` and one ``Shown`` per column."""
    return {"Controller": record.get("controller"),
            **{head: Shown(record.get(key), fixed(record.get(key), dec, scale)) for key, head, dec, scale in columns}}


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


# ----------------------------------------------------------------------------- paths


# an absolute path: "/" (not "//") at the start or after whitespace, ":", "=", ",", "(", "[" or a
# quote, up to whitespace, ",", ";", ":", a quote, a bracket or an angle bracket
_ABS_PATH = re.compile(r"""(?<![^\s:=,(\['"])/(?!/)[^\s,;:'"()\[\]{}<>]+""")


def _inside(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` when it lies inside it (``.`` for the folder itself), else
    None; compared as written and with symbolic links resolved."""
    for p, f in ((os.path.normpath(path), os.path.normpath(folder)),
                 (os.path.realpath(path), os.path.realpath(folder))):
        if p == f or p.startswith(f.rstrip(os.sep) + os.sep):
            return os.path.relpath(p, f)
    return None


# the traces shipped with jaxcc (jaxcc.sim.trace looks a relative trace path up there)
SHIPPED_TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traces")


def relative_path(path: str, folder: str | None = None, cwd: str | None = None) -> str:
    """An absolute ``path`` as the report shows it: a trace shipped with jaxcc relative to
    ``SHIPPED_TRACES`` (the name a scenario file gives it); else relative to ``folder`` (the
    report's) when inside it; else relative to ``cwd`` (default: the current directory) when
    inside it; else its base name.  A relative path is returned as is."""
    if not os.path.isabs(path):
        return path
    for base in (SHIPPED_TRACES, folder, cwd if cwd is not None else os.getcwd()):
        if base:
            rel = _inside(path, os.path.abspath(base))
            if rel is not None:
                return rel
    return os.path.basename(os.path.normpath(path)) or path


def relative_text(text: str, folder: str | None = None, cwd: str | None = None) -> str:
    """``text`` with every absolute path in it (module docstring) replaced by ``relative_path``'s."""
    if "/" not in text:
        return text
    return _ABS_PATH.sub(lambda m: relative_path(m.group(0), folder, cwd), text)


def _relative_obj(obj: Any, rel: Callable[[str], str]) -> Any:
    """``obj`` (JSON-like) with ``rel`` applied to every string value."""
    if isinstance(obj, str):
        return rel(obj)
    if isinstance(obj, dict):
        return {k: _relative_obj(v, rel) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_relative_obj(v, rel) for v in obj]
    return obj


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
             re.compile(r"<metadata>.*?</metadata>", re.S), re.compile(r"<!--.*?-->", re.S),
             re.compile(r'\s+xmlns(:\w+)?="[^"]*"'))


def inline_svg(text: str, prefix: str, rename: Callable[[str], str] | None = None) -> str:
    """An SVG file's markup for inlining in HTML: the XML prolog, DOCTYPE, metadata, comments and
    namespace declarations dropped (HTML's parser knows SVG), and every id prefixed with
    ``prefix`` so two figures' ids (matplotlib numbers them per file) never collide; ``rename``
    (e.g. ``relative_text``) is applied to every id and reference to one as well."""
    rename = rename or (lambda s: s)
    for rx in _SVG_DROP:
        text = rx.sub("", text)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{rename(m.group(1))}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{rename(m.group(1))})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{rename(m.group(1))}"', text)
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


def plot_slug(name: str, fallback: str = "scenario") -> str:
    """A scenario's file-name fragment in its figures' names (``jaxcc.plots.slug``, which this
    level-1 module cannot import)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or fallback


def figures_by_scenario(paths: Iterable[str], scenarios: Iterable[str]) -> dict[str | None, list[str]]:
    """``figure_files(paths)`` grouped by scenario, in the order of ``scenarios``: a figure whose
    file stem ends with ``_`` + a scenario's ``plot_slug`` (the longest that fits) is that
    scenario's; the rest are under None, last.  Scenarios without figures are left out."""
    scenarios = list(dict.fromkeys(scenarios))
    out: dict[str | None, list[str]] = {s: [] for s in scenarios}
    out[None] = []
    for p in figure_files(paths):
        stem = os.path.splitext(os.path.basename(p))[0]
        fits = [s for s in scenarios if stem.endswith("_" + plot_slug(s))]
        out[max(fits, key=lambda s: len(plot_slug(s))) if fits else None].append(p)
    return {k: v for k, v in out.items() if v}


# ----------------------------------------------------------------------------- the document


class Report:
    """An HTML report built section by section; ``html()`` is the whole self-contained file.

    ``folder``: the folder the report is written to; absolute paths in everything the report
    shows are shown relative to it, else to the current directory, else as base names (module
    docstring; ``relative_text``)."""

    def __init__(self, title: str, command: str, version: dict | None = None, date: str | None = None, *,
                 folder: str | None = None):
        self.folder = os.path.abspath(folder) if folder else None
        self.cwd = os.getcwd()
        self.title = self.rel(title)
        self.command = self.rel(command)
        self.version = version if version is not None else version_info()
        self.date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        self.parts: list[str] = []
        self.toc: list[tuple[int, str, str]] = []  # (depth, id, title)
        self.ids: set[str] = set()

    def rel(self, text: str) -> str:
        """``text`` with its absolute paths shown as the report shows them (``relative_text``)."""
        return relative_text(text, self.folder, self.cwd)

    def _id(self, base: str) -> str:
        base = _slug(self.rel(base))
        i, out = 1, base
        while out in self.ids:
            i += 1
            out = f"{base}-{i}"
        self.ids.add(out)
        return out

    def section(self, title: str, depth: int = 2, note: str | None = None) -> str:
        """A heading (h2, or h3 for ``depth=3``) that the table of contents lists."""
        title = self.rel(title)
        sid = self._id("sec-" + title)
        self.toc.append((depth, sid, title))
        self.parts.append(f'<h{depth} id="{sid}">{html.escape(title)}</h{depth}>')
        if note:
            self.note(note)
        return sid

    def note(self, text: str) -> None:
        self.parts.append(f'<p class="note">{html.escape(self.rel(text))}</p>')

    def table(self, caption: str, rows: Sequence[dict], columns: Sequence[str] | None = None, *,
              id: str | None = None, cell_class: Callable[[str, Any], str | None] | None = None,
              folded: bool = False) -> str:
        """A ``metric-table`` of ``rows`` (dicts; ``columns`` default: every key, in order of
        first appearance; a column's key is its header); ``cell_class(column, value)`` may give a
        cell a CSS class (``bad``/``good``).  A ``Shown`` value shows its text, any other ``fmt``'s.
        ``folded``: inside a closed ``<details>`` whose summary is the caption.  Returns the
        table's id."""
        if columns is None:
            columns = list(dict.fromkeys(k for r in rows for k in r))
        caption = self.rel(caption)
        tid = self._id(id or "t-" + caption)
        out = [f'<div class="scroll"><table id="{tid}" class="metric-table">',
               f"<caption>{html.escape(caption)}</caption>",
               "<thead><tr>" + "".join(f'<th scope="col">{html.escape(self.rel(str(c)))}</th>' for c in columns)
               + "</tr></thead><tbody>"]
        for r in rows:
            cells = []
            for c in columns:
                v = r.get(c)
                text = v.text if isinstance(v, Shown) else fmt(v)
                v = v.value if isinstance(v, Shown) else v
                number = isinstance(v, (int, float)) and not isinstance(v, bool)
                cls = ["num"] if number else []
                extra = cell_class(c, v) if cell_class else None
                if extra:
                    cls.append(extra)
                attr = f' class="{" ".join(cls)}"' if cls else ""
                if number and math.isfinite(v):
                    attr += f' data-value="{v!r}"'
                cells.append(f"<td{attr}>{html.escape(self.rel(text))}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        if not rows:
            out.append(f'<tr><td colspan="{max(1, len(columns))}">(none)</td></tr>')
        out.append("</tbody></table></div>")
        body = "\n".join(out)
        if folded:
            body = f'<details class="record"><summary>{html.escape(caption)}</summary>\n{body}\n</details>'
        self.parts.append(body)
        return tid

    def figures(self, paths: Iterable[str], label: str | None = None) -> int:
        """Embed every figure of ``paths`` (``figure_files``), captioned with its path as the
        report shows it (``rel``), after ``label: `` when given; returns how many.

        Raises:
          ValueError: a figure file is missing or unreadable (named).
        """
        n = 0
        for p in figure_files(paths):
            name = os.path.basename(p)
            fid = self._id("fig-" + (f"{label}-" if label else "") + os.path.splitext(name)[0])
            try:
                if p.lower().endswith(".svg"):
                    with open(p, encoding="utf-8") as fh:
                        body = inline_svg(fh.read(), fid + "-", self.rel)
                else:
                    with open(p, "rb") as fh:
                        body = (f'<img alt="{html.escape(name)}" src="data:image/png;base64,'
                                f'{base64.b64encode(fh.read()).decode("ascii")}">')
            except OSError as e:
                raise ValueError(f"{p}: cannot embed the figure in the report ({e.strerror or e})") from None
            shown = relative_path(os.path.abspath(p), self.folder, self.cwd)
            caption = f"{label}: {shown}" if label else shown
            self.parts.append(f'<figure class="fig" id="{fid}">{body}'
                              f"<figcaption>{html.escape(caption)}</figcaption></figure>")
            n += 1
        return n

    def json_details(self, summary: str, obj: Any) -> None:
        """``obj`` as indented JSON (its strings' paths as ``rel`` shows them), folded under ``summary``."""
        obj = _relative_obj(obj, self.rel)
        self.parts.append(f"<details><summary>{html.escape(self.rel(summary))}</summary><pre>"
                          f"{html.escape(json.dumps(obj, indent=1, default=str))}</pre></details>")

    def specs(self, specs: Sequence[dict], missing: Sequence[str] = (), depth: int = 2) -> None:
        """A section (h2, or h3 for ``depth=3``) of scenario specs (the scenario-file format), one
        ``<details>`` each."""
        self.section("Scenario specs", depth=depth, note="Each scenario as a scenario file (python -m jaxcc.evaluate "
                     "--scenario-file=FILE runs it; its relative paths are as this report shows paths).")
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
