"""The self-contained HTML document (``Report``): header, contents, sections, tables, folded raw
tables, embedded figures and the specs, with the inline style."""

from __future__ import annotations

import base64
import datetime
import html
import json
import math
import os
from typing import Any, Callable, Iterable, Sequence

from jaxcc.report.figures import figure_files, inline_svg
from jaxcc.report.provenance import (_relative_obj, relative_path, relative_text, version_info,
                                         version_text)
from jaxcc.report.values import Shown, _slug, fmt


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
