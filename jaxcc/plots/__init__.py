"""Paper-ready figures of an evaluation (matplotlib, Agg backend: no display needed).

Every figure is drawn from what a ``results.json`` holds (``jaxcc.evaluate``'s or
``jaxcc.emulate``'s), so anyone can redraw it::

    python -m jaxcc.plots figures --results=runs/eval/results.json --out=runs/eval/plots

and written three times with one stem: ``STEM.png`` (200 dpi), ``STEM.pdf`` and ``STEM.svg``.
Every figure function returns the list of files it wrote.

* ``scatter_<scenario>``: throughput (up) against p95 one-way delay (across), Pantheon's
  convention: the delay axis reversed so that better is up and right (an arrow says so), on a
  log scale when the delays span more than ``LOG_SPAN`` (10x, one decade; ``delay_axis``),
  else linear from 0; throughput from 0 to ``max(capacity, data) * 1.05``.  Each seed's run is a
  small point, the median of the seeds (throughput and delay each) a large one.  Names are in a
  legend below the axes, never as labels next to the points.
* ``timeseries_<scenario>``: per controller a throughput panel (the link capacity shaded) over a
  one-way-delay panel, all on one time axis and one throughput and one delay scale (from 0);
  several flows coloured by their index, the same in every panel (a single flow in its scheme's
  colour); the legend (capacity first, then the flows by index) below all axes.
* ``frontier_<link>`` / ``frontier_all`` (``frontier_figure``, for ``jaxcc.preference_sweep``):
  a MOCC policy's points joined in preference order; ``tcr_<link>`` (``tcr_figure``, for
  ``jaxcc.tcr``): DeepCC's targets met and missed per controller.

Every scheme (controller label) has one colour and marker in every figure (``style``): a fixed
table for the baselines, the kernel's TCPs and ``fixed:*``, a marker per policy family
(aurora, eagle, pareto, mocc, deepcc; from the label or the policy file's name) and, for any
other name, a colour (and marker) from a SHA-256 of the name, so a scheme keeps its look from run
to run.  Colours are from the colour-blind-safe Okabe-Ito and Tol palettes.  Text is 7-8 pt at
single-column width (``SINGLE_W`` = 3.5 in); figures with several panels side by side are
double-column (``DOUBLE_W`` = 7.16 in).

And the training curve of a run (``training_curve``), from the ``metrics.jsonl`` that
``jaxcc.train`` writes::

    python -m jaxcc.plots training-curve --run=checkpoints/runs/aurora-0 --out=aurora_curve.png
    python -m jaxcc.plots training-curve --run=A --run=B --label=paper --label=ours --out=cmp.png

Mean episode return (``episode_return``: the return of the episodes that ended in a chunk of
updates, averaged) and mean reward per environment step (``reward``) against environment steps
and against wall time (``elapsed_s``, which includes compilation; a resumed run continues the
clock of the interrupted one).

Modules: ``looks`` (sizes, styles, saving, axis decisions), ``scatter``, ``timeseries``,
``papers`` (MOCC's frontier, DeepCC's TCR), ``results`` (every figure of a results.json),
``training`` (training curves), ``cli``.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere: figures need no display

from jaxcc.plots.cli import run_cli  # noqa: E402
from jaxcc.plots.looks import (DOUBLE_W, DPI, FLOW_COLORS, FORMATS, LEGEND_WRAP, LOG_SPAN, PALETTE, RC,  # noqa: E402
                               SINGLE_W, THR_HEADROOM, Style, annotate_inside, delay_axis, display_name,
                               round_floor, save, slug, style, styles_for, throughput_top)
from jaxcc.plots.papers import declutter, frontier_figure, frontier_panel, tcr_figure  # noqa: E402
from jaxcc.plots.results import figures, figures_from_file, write_all  # noqa: E402
from jaxcc.plots.scatter import scatter_figure, scatter_points, sim2real_figure, sim2real_figures  # noqa: E402
from jaxcc.plots.timeseries import (EMU_BIN_S, emulation_panels, evaluation_panels, rebin_rate,  # noqa: E402
                                    timeseries_figure)
from jaxcc.plots.training import read_metrics, training_curve  # noqa: E402

__all__ = [
    "run_cli", "DOUBLE_W", "DPI", "FLOW_COLORS", "FORMATS", "LEGEND_WRAP", "LOG_SPAN", "PALETTE", "RC", "SINGLE_W",
    "THR_HEADROOM", "Style", "annotate_inside", "delay_axis", "display_name", "round_floor", "save", "slug", "style",
    "styles_for", "throughput_top", "declutter", "frontier_figure", "frontier_panel", "tcr_figure", "figures",
    "figures_from_file", "write_all", "scatter_figure", "scatter_points", "sim2real_figure", "sim2real_figures",
    "EMU_BIN_S", "emulation_panels", "evaluation_panels", "rebin_rate", "timeseries_figure", "read_metrics",
    "training_curve",
]
