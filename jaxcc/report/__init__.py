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

Modules: ``values`` (cells and units), ``provenance`` (relative paths, version), ``figures``
(embedding), ``document`` (the HTML ``Report``), ``sections`` (what every report shares),
``commands`` (one report per command).
"""

from __future__ import annotations

from jaxcc.report.commands import comparison_row, emulation, evaluation, sim2real, tcr
from jaxcc.report.document import STYLE, Report
from jaxcc.report.figures import figure_files, figures_by_scenario, figures_in, inline_svg, plot_slug
from jaxcc.report.provenance import relative_path, relative_text, version_info, version_text
from jaxcc.report.sections import SUMMARY_NOTE, bars_rows, record_tables, summary_columns, summary_tables
from jaxcc.report.values import (MISSING, REPORT_NAME, SHORT_LIST, SUMMARY_COLUMNS, fixed, flatten, fmt,
                                 Shown, summary_row)

__all__ = [
    "comparison_row", "emulation", "evaluation", "sim2real", "tcr", "STYLE", "Report",
    "figure_files", "figures_by_scenario", "figures_in", "inline_svg", "plot_slug", "relative_path",
    "relative_text", "version_info", "version_text", "SUMMARY_NOTE", "bars_rows", "record_tables",
    "summary_columns", "summary_tables", "MISSING", "REPORT_NAME", "SHORT_LIST", "SUMMARY_COLUMNS",
    "fixed", "flatten", "fmt", "Shown", "summary_row",
]
