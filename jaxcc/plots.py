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
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import re
import sys
import textwrap
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

SINGLE_W = 3.5  # in: one column of a two-column paper
DOUBLE_W = 7.16  # in: both columns
DPI = 200
FORMATS = ("png", "pdf", "svg")
# The delay axis is logarithmic when its largest value is more than LOG_SPAN times its smallest
# (the data span more than a decade), else linear from 0.
LOG_SPAN = 10.0
THR_HEADROOM = 1.05  # throughput axis: 0 .. max(capacity, data) * THR_HEADROOM
LEGEND_WRAP = 28  # characters per legend line

RC = {
    "font.size": 7.5, "axes.titlesize": 8, "axes.labelsize": 7.5, "xtick.labelsize": 7, "ytick.labelsize": 7,
    "legend.fontsize": 7, "figure.titlesize": 8.5, "lines.linewidth": 1.0, "axes.linewidth": 0.6,
    "xtick.major.width": 0.6, "ytick.major.width": 0.6, "grid.linewidth": 0.4, "grid.alpha": 0.4,
    "legend.frameon": False, "legend.handlelength": 1.6, "legend.columnspacing": 1.0,
    "pdf.fonttype": 42, "svg.hashsalt": "jaxcc", "figure.constrained_layout.use": True,
}

# ----------------------------------------------------------------------------- scheme styles

# Okabe & Ito's colour-blind-safe palette for the fixed names; Tol's muted palette (its dark red for
# its pale grey) for the rest.
_FIXED = {
    "bbr": ("#0072B2", "s"), "cubic": ("#D55E00", "^"), "reno": ("#CC79A7", "v"), "copa": ("#009E73", "D"),
    "oracle": ("#000000", "*"),
    "kernel:bbr": ("#00446B", "p"), "kernel:cubic": ("#8A3D00", "<"), "kernel:reno": ("#8E4F74", ">"),
}
_FIXED_RATE_GREYS = ("#555555", "#808080", "#A8A8A8")
_FAMILIES = (("pareto", "o"), ("aurora", "H"), ("eagle", "h"), ("mocc", "X"), ("deepcc", "d"))
PALETTE = ("#332288", "#882255", "#AA4499", "#44AA99", "#DDCC77", "#999933", "#88CCEE", "#CC6677", "#661100")
_MARKERS = ("o", "P", "X", "h", "H", "d", "8", "p")
FLOW_COLORS = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#999933")


@dataclasses.dataclass(frozen=True)
class Style:
    """How a scheme looks in every figure."""

    name: str  # the short name shown (``display_name``)
    color: str
    marker: str


def display_name(label: str) -> str:
    """The name a legend shows: a ``policy:PATH`` controller by its file's stem, else the label."""
    s = str(label)
    if s.startswith("policy:"):
        base = os.path.basename(s[len("policy:"):])
        return base[: -len(".safetensors")] if base.endswith(".safetensors") else base
    return s


def _digest(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def style(label: str) -> Style:
    """The scheme's colour and marker (module docstring); the same for a label and its short name."""
    name = display_name(label)
    key = name.lower()
    if key in _FIXED:
        c, m = _FIXED[key]
        return Style(name, c, m)
    h = _digest(key)
    if key.startswith("fixed:"):
        return Style(name, _FIXED_RATE_GREYS[h % len(_FIXED_RATE_GREYS)], "P")
    for fam, marker in _FAMILIES:
        if fam in key:
            return Style(name, PALETTE[h % len(PALETTE)], marker)
    return Style(name, PALETTE[h % len(PALETTE)], _MARKERS[(h // len(PALETTE)) % len(_MARKERS)])


def styles_for(labels) -> dict[str, Style]:
    """The looks of a set of schemes drawn together (every figure of one results.json, one sweep,
    one TCR run), by short name: each its ``style``, except that when two hashed names of the set
    share a colour and marker, the later one in sorted order takes the next palette colour that
    no scheme of the set has.  So the schemes of a set are told apart (``mocc`` and ``mocc@s1``),
    and a look depends on the set only, never on the figure or the order."""
    names = sorted({display_name(lab) for lab in labels})
    out: dict[str, Style] = {}
    for n in names:  # fixed looks first: they never move
        if n.lower() in _FIXED:
            out[n] = style(n)
    used = {(st.color, st.marker) for st in out.values()}
    for n in names:
        if n in out:
            continue
        st = style(n)
        if (st.color, st.marker) in used and st.color in PALETTE:
            i0 = PALETTE.index(st.color)
            for k in range(1, len(PALETTE)):
                c = PALETTE[(i0 + k) % len(PALETTE)]
                if (c, st.marker) not in used:
                    st = Style(n, c, st.marker)
                    break
        out[n] = st
        used.add((st.color, st.marker))
    return out


def _look(styles: dict[str, Style] | None, label: str) -> Style:
    return (styles or {}).get(display_name(label)) or style(label)


def _wrap(text: str, width: int = LEGEND_WRAP) -> str:
    # a word longer than a line is cut only when it is much longer (a file stem, not a name)
    return "\n".join("\n".join(textwrap.wrap(part, width, break_on_hyphens=False,
                                             break_long_words=len(max(part.split() or [""], key=len)) > 1.5 * width))
                     or part for part in str(text).split("\n"))


def slug(name: str, fallback: str = "scenario") -> str:
    """``name`` (a scenario, a link) as a figure file's name fragment."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or fallback


def _num(x) -> float:
    """A JSON number (null = NaN) as a float."""
    return float("nan") if x is None else float(x)


def _arr(xs) -> np.ndarray:
    """A JSON list (nested; null = NaN) as a float array."""
    if xs is None:
        return np.zeros(0)
    return np.asarray([[_num(v) for v in x] if isinstance(x, (list, tuple)) else _num(x) for x in xs], np.float64)


def save(fig, stem: str) -> list[str]:
    """``fig`` as ``stem``.png (``DPI``), .pdf and .svg; closes it; returns the three paths."""
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    files = []
    for ext in FORMATS:
        path = f"{stem}.{ext}"
        kw = {"dpi": DPI} if ext == "png" else {"metadata": {"Date": None} if ext == "svg" else {"CreationDate": None}}
        with plt.rc_context(RC):
            fig.savefig(path, **kw)
        files.append(path)
    plt.close(fig)
    return files


def _fig_legend(fig, handles, labels, width_in: float | None = None):
    """A legend below all axes (constrained layout makes the room), in as many columns (up to
    6) as fit the figure's width, measured with the renderer."""
    if not handles:
        return None
    renderer = fig.canvas.get_renderer()
    for ncol in range(min(6, len(labels)), 0, -1):
        leg = fig.legend(handles, labels, loc="outside lower center", ncol=ncol)
        if ncol == 1 or leg.get_window_extent(renderer).width <= 0.98 * fig.bbox.width:
            return leg
        leg.remove()
    return None


def _legend_rows(labels: Sequence[str], width_in: float) -> int:
    """About how many rows the figure legend takes (for the figure's height)."""
    longest = max((max(len(x) for x in lab.split("\n")) for lab in labels), default=1)
    ncol = max(1, min(6, len(labels), int((width_in - 0.1) // (longest * 0.053 + 0.34))))
    return int(math.ceil(len(labels) / ncol)) + max((lab.count("\n") for lab in labels), default=0)


# ----------------------------------------------------------------------------- axis decisions


def delay_axis(values: Sequence[float]) -> tuple[str, float, float]:
    """``(scale, near, far)`` of a delay axis over ``values`` (ms; NaN ignored).

    Log when max/min > ``LOG_SPAN``: from a round floor below the smallest value (the largest
    1, 2 or 5 x 10^k at or below 0.87x it: a whole decade below would leave most of a decade
    empty) to 1.3x the largest; else linear from 0 to 1.08x the largest.  The caller reverses it
    (better = lower delay = right).
    """
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], np.float64)
    if v.size == 0:
        return "linear", 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    if lo > 0 and hi / lo > LOG_SPAN:
        return "log", round_floor(lo / 1.15), hi * 1.3
    return "linear", 0.0, hi * 1.08 if hi > 0 else 1.0


def round_floor(x: float) -> float:
    """The largest 1, 2 or 5 x 10^k at or below ``x`` (> 0)."""
    k = math.floor(math.log10(x))
    return max(m * 10.0 ** k for m in (1, 2, 5) if m * 10.0 ** k <= x * (1 + 1e-12))


def throughput_top(values: Sequence[float], capacity: float | None = None) -> float:
    """Top of a throughput axis that starts at 0: ``max(capacity, data) * THR_HEADROOM``."""
    v = [x for x in list(values) + [capacity] if x is not None and math.isfinite(x)]
    top = max(v, default=0.0)
    return top * THR_HEADROOM if top > 0 else 1.0


def _set_delay_axis(ax, values, label: str):
    scale, lo, hi = delay_axis(values)
    ax.set_xscale(scale)
    if scale == "log":  # plain numbers (1, 10, 100; 2 and 5 between when under two decades)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        if hi / lo < 100:
            ax.xaxis.set_minor_formatter(ticker.FuncFormatter(
                lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v) + 1e-9)) in (2, 5) else ""))
    ax.set_xlim(hi, lo)  # reversed: better (lower delay) to the right
    ax.set_xlabel(label)
    return scale


def _better_arrow(ax, points_axes: np.ndarray) -> None:
    """A "better" arrow (up and right) in the corner of the axes with the fewest data points."""
    boxes = [(0.04, 0.04), (0.04, 0.72), (0.62, 0.04), (0.33, 0.04), (0.33, 0.72), (0.62, 0.72)]  # lower left 1st

    def crowd(b):
        x0, y0 = b
        if points_axes.size == 0:
            return 0
        p = points_axes
        inx = (p[:, 0] > x0 - 0.03) & (p[:, 0] < x0 + 0.27)
        return int(np.sum(inx & (p[:, 1] > y0 - 0.03) & (p[:, 1] < y0 + 0.27)))

    x0, y0 = min(boxes, key=crowd)
    ax.annotate("better", xy=(x0 + 0.2, y0 + 0.22), xytext=(x0 + 0.06, y0 + 0.08), xycoords="axes fraction",
                textcoords="axes fraction", ha="center", va="top", fontsize=7, color="0.3",
                arrowprops={"arrowstyle": "-|>", "color": "0.3", "lw": 0.8, "shrinkA": 1, "shrinkB": 0},
                gid="better")


def _axes_fraction(ax, xs, ys) -> np.ndarray:
    if len(xs) == 0:
        return np.zeros((0, 2))
    pts = ax.transData.transform(np.column_stack([xs, ys]))
    return ax.transAxes.inverted().transform(pts)


def annotate_inside(ax, text: str, xy: tuple[float, float], **kw):
    """A label next to a data point, offset and aligned toward the centre of the axes so it
    stays inside them (call after the limits are set)."""
    fx, fy = _axes_fraction(ax, [xy[0]], [xy[1]])[0]
    right, top = fx > 0.5, fy > 0.5
    return ax.annotate(text, xy, textcoords="offset points", xytext=(-6 if right else 6, -6 if top else 6),
                       ha="right" if right else "left", va="top" if top else "bottom", **kw)


# ----------------------------------------------------------------------------- scatter


def scatter_points(records: Sequence[dict]) -> list[dict]:
    """Per record ``{"controller", "seeds": [(delay, thr)...], "median": (delay, thr)}``.

    ``seeds`` are the record's ``per_seed`` runs (p95 one-way delay ms, throughput Mbit/s) and
    ``median`` their medians (each coordinate on its own); a record without ``per_seed`` (one
    emulation run) is its own median with no seed points.
    """
    out = []
    for r in records:
        per = r.get("per_seed") or []
        seeds = [(_num(p.get("p95_owd_ms")), _num(p.get("throughput_mbps"))) for p in per]
        if seeds:
            d = np.asarray([s[0] for s in seeds])
            t = np.asarray([s[1] for s in seeds])
            med = (float(np.nanmedian(d)) if np.isfinite(d).any() else math.nan,
                   float(np.nanmedian(t)) if np.isfinite(t).any() else math.nan)
        else:
            med = (_num(r.get("p95_owd_ms")), _num(r.get("throughput_mbps")))
        out.append({"controller": r["controller"], "seeds": seeds, "median": med})
    return out


def _scheme_handle(st: Style, ms: float = 5.5):
    return Line2D([], [], ls="none", marker=st.marker, color=st.color, markeredgecolor="k", markeredgewidth=0.5,
                  markersize=ms)


def _scatter_frame(title: str, xy: Sequence[tuple[float, float]], capacity_mbps: float | None,
                   labels: list, handles: list, xlabel: str = "p95 one-way delay (ms)"):
    """The frame the throughput/delay scatters share, for the caller to draw its points on (call
    inside ``plt.rc_context(RC)``): a single-column figure with room for the legend below, the
    delay axis (``delay_axis``) and throughput from 0 over the points ``xy`` [(delay, thr)], the
    capacity dashed (and in the legend, after ``labels``), the title, the grid, the "better"
    arrow and the legend.  Returns ``(fig, ax)``."""
    cap = capacity_mbps if capacity_mbps is not None and math.isfinite(capacity_mbps) else None
    if cap is not None:
        labels, handles = labels + ["capacity"], handles + [Line2D([], [], color="0.45", ls="--", lw=0.8)]
    fig, ax = plt.subplots(figsize=(SINGLE_W, 2.55 + 0.15 * _legend_rows(labels, SINGLE_W)))
    _set_delay_axis(ax, [d for d, _ in xy], xlabel)
    ax.set_ylim(0.0, throughput_top([t for _, t in xy], cap))
    if cap is not None:
        ax.axhline(cap, color="0.45", ls="--", lw=0.8, zorder=1, gid="capacity")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(title)
    ax.grid(True, which="major")
    ok = [(d, t) for d, t in xy if math.isfinite(d) and math.isfinite(t)]
    _better_arrow(ax, _axes_fraction(ax, [d for d, _ in ok], [t for _, t in ok]))
    _fig_legend(fig, handles, labels, SINGLE_W)
    return fig, ax


def scatter_figure(scenario: str, points: Sequence[dict], capacity_mbps: float | None = None,
                   xlabel: str = "p95 one-way delay (ms)", looks: dict[str, Style] | None = None):
    """Throughput vs p95 one-way delay of one scenario (module docstring); ``points`` as
    ``scatter_points`` returns them; ``looks`` from ``styles_for`` (default: these points').
    Returns the figure (``save`` writes it)."""
    looks = looks or styles_for(p["controller"] for p in points)
    styles = [_look(looks, p["controller"]) for p in points]
    many = any(len(p["seeds"]) > 1 for p in points)
    # a scheme without a delay (or throughput: nothing delivered) cannot be placed: the legend says so
    labels = [_wrap(s.name if all(math.isfinite(v) for v in p["median"])
                    else f"{s.name} (not drawn: no delay measured)") for s, p in zip(styles, points)]
    handles = [_scheme_handle(s) for s in styles]
    if many:
        labels += ["one seed", "median of seeds"]
        handles += [Line2D([], [], ls="none", marker="o", color="0.55", markersize=2.6, alpha=0.6),
                    Line2D([], [], ls="none", marker="o", color="0.55", markeredgecolor="k", markeredgewidth=0.5,
                           markersize=5.5)]
    with plt.rc_context(RC):
        fig, ax = _scatter_frame(scenario, [xy for p in points for xy in p["seeds"] + [p["median"]]], capacity_mbps,
                                 labels, handles, xlabel)
        for j, (p, st) in enumerate(zip(points, styles)):
            top = 0.01 * (len(points) - j)  # the first controller (the command line's first: the subject) on top
            if len(p["seeds"]) > 1:
                sd = [(d, t) for d, t in p["seeds"] if math.isfinite(d) and math.isfinite(t)]
                ax.scatter([d for d, _ in sd], [t for _, t in sd], s=8, marker=st.marker, color=st.color, alpha=0.55,
                           linewidths=0, zorder=2 + top, gid=f"seeds:{p['controller']}")
            d, t = p["median"]
            if math.isfinite(d) and math.isfinite(t):
                # a little transparent: schemes at the same point stay visible (shared4: three at 115 ms)
                ax.scatter([d], [t], s=40, marker=st.marker, facecolors=[matplotlib.colors.to_rgba(st.color, 0.75)],
                           edgecolors="k", linewidths=0.5, zorder=3 + top, gid=f"median:{p['controller']}")
    return fig


def sim2real_figure(scenario: str, sim_records: Sequence[dict], emu_records: Sequence[dict],
                    looks: dict[str, Style] | None = None):
    """The simulator and the emulation of one scenario on one throughput/p95-delay scatter
    (``sim2real_<scenario>``): per controller the simulator's record (``throughput_mbps``,
    ``p95_owd_ms``: the seeds' mean, the values ``jaxcc.sim2real.compare`` compares) as a hollow
    marker, the emulated run as a filled one of the same look, joined by a thin line, so the gap
    ``jaxcc.sim2real`` tabulates is seen as a segment.  Controllers on one side only are drawn
    alone.  Axes as ``scatter_figure``'s (shared floors and log rule over both sides' points).
    Returns the figure."""
    sim = {r["controller"]: (_num(r.get("p95_owd_ms")), _num(r.get("throughput_mbps"))) for r in sim_records}
    emu = {r["controller"]: (_num(r.get("p95_owd_ms")), _num(r.get("throughput_mbps"))) for r in emu_records}
    names = list(dict.fromkeys(list(sim) + list(emu)))
    looks = looks or styles_for(names)
    styles = {c: _look(looks, c) for c in names}
    labels = [_wrap(styles[c].name) for c in names] + ["simulator", "emulation"]
    handles = [_scheme_handle(styles[c]) for c in names]
    handles += [Line2D([], [], ls="none", marker="o", markerfacecolor="none", markeredgecolor="0.3", markersize=5.5),
                Line2D([], [], ls="none", marker="o", color="0.3", markeredgecolor="k", markersize=5.5)]
    with plt.rc_context(RC):
        fig, ax = _scatter_frame(f"{scenario}: simulator vs emulation", list(sim.values()) + list(emu.values()),
                                 _capacity(list(sim_records) + list(emu_records)), labels, handles)
        for c in names:
            st = styles[c]
            a, b = sim.get(c), emu.get(c)
            a_ok, b_ok = (xy is not None and all(math.isfinite(v) for v in xy) for xy in (a, b))
            if a_ok and b_ok:
                ax.plot([a[0], b[0]], [a[1], b[1]], color=st.color, lw=0.8, zorder=2, gid=f"gap:{c}")
            if a_ok:
                ax.scatter([a[0]], [a[1]], s=40, marker=st.marker, facecolors="none", edgecolors=[st.color],
                           linewidths=1.2, zorder=3, gid=f"sim:{c}")
            if b_ok:
                ax.scatter([b[0]], [b[1]], s=40, marker=st.marker, facecolors=[st.color], edgecolors="k",
                           linewidths=0.5, zorder=3, gid=f"emu:{c}")
    return fig


def sim2real_figures(sim_doc: dict, emu_doc: dict, out_dir: str) -> list[str]:
    """``sim2real_<scenario>`` (``sim2real_figure``) for every scenario of the simulator's
    ``results.json`` document ``sim_doc`` that the emulation's ``emu_doc`` also ran, one look per
    scheme across both; returns the files written."""
    for name, doc in (("simulator", sim_doc), ("emulation", emu_doc)):
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
            raise ValueError(f"sim2real figure: the {name} results.json needs a 'results' list of records")
    sim, emu = _by_scenario(sim_doc["results"]), _by_scenario(emu_doc["results"])
    looks = styles_for(r["controller"] for r in sim_doc["results"] + emu_doc["results"])
    files = []
    for scen in [s for s in sim if s in emu]:
        files += save(sim2real_figure(scen, sim[scen], emu[scen], looks),
                      os.path.join(out_dir, f"sim2real_{slug(scen)}"))
    return files


# ----------------------------------------------------------------------------- time series


def evaluation_panels(series: dict, order: Sequence[str] = ()) -> list[dict]:
    """Time-series panels of one scenario from ``results.json``'s ``series[scenario]``
    (``{controller: {"t", "capacity_mbps", "throughput_mbps", "owd_ms"}}``), in ``order`` first."""
    names = [c for c in order if c in series] + [c for c in series if c not in order]
    panels = []
    for ctrl in names:
        s = series[ctrl]
        t = _arr(s["t"])
        thr = _arr(s["throughput_mbps"]).reshape(len(t), -1)
        owd = _arr(s.get("owd_ms"))
        owd = owd.reshape(len(t), -1) if owd.size else None
        flows = [{"flow": f, "t": t, "mbps": thr[:, f], "owd_t": None if owd is None else t,
                  "owd_ms": None if owd is None else owd[:, f]} for f in range(thr.shape[1])]
        cap = _arr(s["capacity_mbps"])
        half = float(t[0]) if len(t) and t[0] > 0 else 0.0  # bins are [k, k+1) * 2 * half, t their centres
        panels.append({"controller": ctrl, "capacity": (np.append(t - half, t[-1] + half) if len(t) else t,
                                                        np.append(cap, cap[-1]) if len(cap) else cap, "post"),
                       "flows": flows})
    return panels


EMU_BIN_S = 0.5  # emulation throughput redrawn in bins of the simulator's and owd_series' width


def rebin_rate(points: Sequence[Sequence[float]], bin_s: float = EMU_BIN_S) -> tuple[np.ndarray, np.ndarray]:
    """``(centres, Mbit/s)`` of a rate series ``points`` [(t, Mbit/s), ...] in which each point
    is the rate over the interval from the previous point's t (0 for the first) to its own, as
    the emulation's per-flow ``series`` are: per ``bin_s`` bin k, the megabits of the intervals'
    overlap with [k, k+1)·bin_s over the time they cover (NaN where none).  iperf3's 0.1 s
    intervals swing with the ACK clock; a bin of the simulator's width is what its figures show
    and keeps every bit (the bins' megabits sum to the series')."""
    t = _arr([a for a, _ in points])
    r = _arr([b for _, b in points])
    ok = np.isfinite(t) & np.isfinite(r)
    t, r = t[ok], r[ok]
    if t.size == 0:
        return t, r
    starts = np.concatenate([[0.0], t[:-1]])
    nb = max(1, int(math.ceil(float(t[-1]) / bin_s - 1e-9)))
    mbit, cover = np.zeros(nb), np.zeros(nb)
    for a, b, x in zip(starts, t, r):
        for k in range(int(a // bin_s), min(nb, int(math.ceil(b / bin_s - 1e-9)))):
            o = min(b, (k + 1) * bin_s) - max(a, k * bin_s)
            if o > 0:
                mbit[k] += x * o
                cover[k] += o
    centres = (np.arange(nb) + 0.5) * bin_s
    with np.errstate(invalid="ignore", divide="ignore"):
        return centres, np.where(cover > 0, mbit / cover, np.nan)


def emulation_panels(records: Sequence[dict]) -> list[dict]:
    """Time-series panels from emulation records: per flow ``series`` ([t_s, Mbit/s], each the
    rate over the interval ending at t; redrawn in ``EMU_BIN_S`` bins, ``rebin_rate``) and
    ``owd_series`` ([t_s, ms] at its bins' centres), t from the flow's ``start_s``; a delay that
    is an estimate from the RTT (``owd_is_estimate``: kernel TCP flows) is drawn dashed; a flow is
    named with its controller where the record mixes controllers; the capacity from the record's
    ``capacity_schedule`` ([t_s, Mbit/s] steps) up to the last flow's ``stop_s``."""
    panels = []
    for rec in records:
        flows = []
        per_flow = rec.get("per_flow") or []
        mixed = len({pf.get("controller") for pf in per_flow}) > 1
        for i, pf in enumerate(per_flow):
            st = _num(pf.get("start_s") or 0.0)
            tc, mbps = rebin_rate(pf.get("series") or [])
            o = pf.get("owd_series")
            fid = int(pf.get("flow", i))
            flows.append({"flow": fid, "t": st + tc, "mbps": mbps,
                          "owd_t": _arr([st + _num(a) for a, _ in o]) if o else None,
                          "owd_ms": _arr([b for _, b in o]) if o else None,
                          "owd_estimate": bool(pf.get("owd_is_estimate")),
                          "name": f"flow {fid} ({display_name(pf['controller'])})" if mixed and pf.get("controller")
                          else None})
        sched = rec.get("capacity_schedule") or []
        cap = None
        if sched:
            end = _finite_max([_arr([pf.get("stop_s") for pf in per_flow] + [sched[-1][0]])])
            cap = (_arr([a for a, _ in sched] + [end]), _arr([b for _, b in sched] + [sched[-1][1]]), "post")
        panels.append({"controller": rec["controller"], "capacity": cap, "flows": flows})
    return panels


def _finite_max(arrays) -> float:
    m = [float(np.nanmax(a)) for a in arrays if a is not None and np.size(a) and np.isfinite(a).any()]
    return max(m, default=0.0)


def timeseries_figure(scenario: str, panels: Sequence[dict], looks: dict[str, Style] | None = None):
    """Per controller a throughput panel (capacity shaded) over a one-way-delay panel, one time
    axis (module docstring); ``panels`` as ``evaluation_panels``/``emulation_panels`` make them."""
    looks = looks or styles_for(p["controller"] for p in panels)
    n = max(1, len(panels))
    ncols = 1 if n <= 2 else 2
    npair = int(math.ceil(n / ncols))
    width = SINGLE_W if ncols == 1 else DOUBLE_W
    multi = any(len(p["flows"]) > 1 for p in panels)
    flow_ids = sorted({f["flow"] for p in panels for f in p["flows"]})
    thr_top = throughput_top([_finite_max([f["mbps"] for p in panels for f in p["flows"]])],
                             _finite_max([p["capacity"][1] for p in panels if p["capacity"] is not None]) or None)
    # one delay scale for every panel (as the throughput's), so panels compare at a glance
    dmax = _finite_max([f["owd_ms"] for p in panels for f in p["flows"]])
    t_end = _finite_max([p["capacity"][0] for p in panels if p["capacity"] is not None]
                        + [f["t"] for p in panels for f in p["flows"]]
                        + [f["owd_t"] for p in panels for f in p["flows"]])
    with plt.rc_context(RC):
        fig = plt.figure(figsize=(width, 1.85 * npair + 0.55))
        gs = fig.add_gridspec(2 * npair, ncols, height_ratios=[1.25, 1.0] * npair)
        first = None
        lowest: dict[int, object] = {}
        for k, p in enumerate(panels):
            r, c = divmod(k, ncols)
            at = fig.add_subplot(gs[2 * r, c], sharex=first)
            first = first or at
            ad = fig.add_subplot(gs[2 * r + 1, c], sharex=first)
            lowest[c] = ad
            st = _look(looks, p["controller"])
            ctrl = p["controller"]
            if p["capacity"] is not None:
                ct, cv, where = p["capacity"]
                at.fill_between(ct, 0, cv, step=where, color="0.9", lw=0, zorder=1)
                at.step(ct, cv, where=where, color="0.45", lw=0.7, zorder=2, gid=f"capacity:{ctrl}")
            for fl in sorted(p["flows"], key=lambda f: f["flow"]):
                color = FLOW_COLORS[fl["flow"] % len(FLOW_COLORS)] if multi else st.color
                at.plot(fl["t"], fl["mbps"], color=color, lw=0.9, zorder=3, gid=f"thr:{ctrl}:{fl['flow']}")
                if fl["owd_ms"] is not None and np.size(fl["owd_ms"]):
                    ad.plot(fl["owd_t"], fl["owd_ms"], color=color, lw=0.9, zorder=3, gid=f"owd:{ctrl}:{fl['flow']}",
                            ls="--" if fl.get("owd_estimate") else "-")
            at.set_ylim(0.0, thr_top)
            at.set_ylabel("throughput\n(Mbit/s)")
            if _finite_max([f["owd_ms"] for f in p["flows"]]) > 0:
                ad.set_ylim(0.0, dmax * 1.08)
            else:
                ad.set_ylim(0.0, 1.0)
                ad.set_yticks([])
                ad.text(0.5, 0.5, "no one-way delay recorded", transform=ad.transAxes, ha="center", va="center",
                        color="0.4", fontsize=7)
            ad.set_ylabel("one-way\ndelay (ms)")
            for ax in (at, ad):
                ax.grid(True)
            at.tick_params(labelbottom=False)
            head = at.legend([_scheme_handle(st, 5)], [_wrap(st.name)], loc="lower left", bbox_to_anchor=(0.0, 1.0),
                             borderaxespad=0.15, borderpad=0.0, handletextpad=0.3, handlelength=1.0)
            head.set_gid(f"head:{ctrl}")
        for ax in fig.axes:
            if ax.get_ylabel().startswith("one-way") and ax not in lowest.values():
                ax.tick_params(labelbottom=False)
        for ax in lowest.values():
            ax.set_xlabel("time (s)")
        if first is not None:
            first.set_xlim(0.0, t_end if t_end > 0 else 1.0)
        handles = [plt.matplotlib.patches.Patch(facecolor="0.9", edgecolor="0.45", lw=0.7)]
        labels = ["capacity"]
        if multi:
            names = {}
            for p in panels:
                for f in p["flows"]:
                    names.setdefault(f["flow"], f.get("name") or f"flow {f['flow']}")
            handles += [Line2D([], [], color=FLOW_COLORS[f % len(FLOW_COLORS)], lw=1.2) for f in flow_ids]
            labels += [_wrap(names[f]) for f in flow_ids]
        if any(f.get("owd_estimate") for p in panels for f in p["flows"]):
            handles.append(Line2D([], [], color="0.3", lw=0.9, ls="--"))
            labels.append(_wrap("delay estimated from the RTT (kernel TCP)"))
        _fig_legend(fig, handles, labels, width)
        fig.suptitle(scenario)
    return fig


# ----------------------------------------------------------------------------- MOCC frontier


def frontier_panel(ax, link: str, curves: Sequence[dict], baselines: Sequence[dict],
                   capacity_mbps: float | None = None, *, label_all: bool = True,
                   looks: dict[str, Style] | None = None) -> list[tuple]:
    """One link of a preference sweep: each policy's edge points joined in preference order.

    ``curves``: ``[{"controller", "edge": [(delay_ms, thr, w_thr)...], "rest": [(delay_ms, thr,
    text)...]}]`` (edge points by falling w_thr; ``rest`` the loss-heavy preferences, hollow);
    ``baselines``: ``[{"controller", "points": [(delay_ms, thr)...]}]`` in their registry style.
    Returns the legend entries ``[(handle, label)]``.
    """
    ds = [d for c in curves for d, *_ in c["edge"] + c["rest"]] + [d for b in baselines for d, _ in b["points"]]
    ts = [t for c in curves for _, t, _ in c["edge"] + c["rest"]] + [t for b in baselines for _, t in b["points"]]
    _set_delay_axis(ax, ds, "p95 queueing delay (ms)")
    ax.set_ylim(0.0, throughput_top(ts, capacity_mbps))
    entries = []
    for c in curves:
        st = _look(looks, c["controller"])
        if c["edge"]:
            e = c["edge"]
            (line,) = ax.plot([d for d, _, _ in e], [t for _, t, _ in e], "-", marker=st.marker, color=st.color,
                              ms=4, lw=1.1, mec="k", mew=0.4, zorder=3, gid=f"frontier:{c['controller']}")
            entries.append((line, _wrap(f"{st.name} (w_thr\u00a0{e[0][2]:g}\u00a0→\u00a0{e[-1][2]:g})")))
            mid = min(range(len(e)), key=lambda i: abs(e[i][2] - 0.5))
            for i, (d, t, w) in enumerate(e):
                if i in (0, len(e) - 1) or (label_all and i == mid):
                    annotate_inside(ax, f"{w:g}", (d, t), fontsize=7, color="0.25", gid="label")
        if c["rest"]:
            h = ax.scatter([d for d, _, _ in c["rest"]], [t for _, t, _ in c["rest"]], marker=st.marker, s=30,
                           facecolors="none", edgecolors=st.color, linewidths=0.9, zorder=3,
                           gid=f"lossheavy:{c['controller']}")
            entries.append((h, _wrap(f"{st.name}, loss-heavy")))
            if label_all:
                for d, t, txt in c["rest"]:
                    annotate_inside(ax, txt, (d, t), fontsize=7, color="0.25", gid="label")
    for b in baselines:
        st = _look(looks, b["controller"])
        h = ax.scatter([d for d, _ in b["points"]], [t for _, t in b["points"]], marker=st.marker, s=36,
                       color=st.color, edgecolors="k", linewidths=0.5, zorder=4, gid=f"baseline:{b['controller']}")
        entries.append((h, _wrap(st.name)))
    if capacity_mbps is not None and math.isfinite(capacity_mbps):
        h = ax.axhline(capacity_mbps, color="0.45", ls="--", lw=0.8, zorder=1, gid="capacity")
        entries.append((h, "mean capacity"))
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(link)
    ax.grid(True)
    ok = [(d, t) for d, t in zip(ds, ts) if math.isfinite(d) and math.isfinite(t)]
    pts = [_axes_fraction(ax, [d for d, _ in ok], [t for _, t in ok])]
    for c in curves:  # the joining lines count as data too (sampled in the axes' frame)
        e = _axes_fraction(ax, [d for d, _, _ in c["edge"]], [t for _, t, _ in c["edge"]])
        for a, b in zip(e[:-1], e[1:]):
            pts.append(a + np.linspace(0.0, 1.0, 12)[:, None] * (b - a))
    _better_arrow(ax, np.concatenate(pts) if pts else np.zeros((0, 2)))
    return entries


def frontier_figure(links: Sequence[dict]):
    """A frontier figure: one panel (single column) or a panel per link (double column).
    ``links``: ``[{"link", "curves", "baselines", "capacity_mbps"}]`` (``frontier_panel``)."""
    n = max(1, len(links))
    cols = 1 if n == 1 else min(3, n)
    rows = int(math.ceil(n / cols))
    width = SINGLE_W if cols == 1 else DOUBLE_W
    looks = styles_for([c["controller"] for ln in links for c in ln["curves"]]
                       + [b["controller"] for ln in links for b in ln["baselines"]])
    with plt.rc_context(RC):
        fig, axes = plt.subplots(rows, cols, figsize=(width, 2.45 * rows + 0.7), squeeze=False)
        uniq: dict[str, object] = {}
        for ax, ln in zip(axes.flat, links):
            for h, lab in frontier_panel(ax, ln["link"], ln["curves"], ln["baselines"], ln.get("capacity_mbps"),
                                         label_all=(n == 1), looks=looks):
                uniq.setdefault(lab, h)
        for ax in list(axes.flat)[len(links):]:
            ax.axis("off")
        _fig_legend(fig, list(uniq.values()), list(uniq.keys()), width)
        fig.canvas.draw()  # the final layout, then drop the point labels that would overlap
        for ax in axes.flat:
            declutter(ax)
    return fig


def declutter(ax) -> int:
    """Remove the point labels (texts with gid "label") of ``ax`` that overlap an earlier one or
    the "better" cue; returns how many."""
    r = ax.figure.canvas.get_renderer()
    gone = 0
    kept = [t.get_window_extent(r) for t in ax.texts if t.get_gid() == "better"]
    for t in [t for t in ax.texts if t.get_gid() == "label"]:
        b = t.get_window_extent(r)
        if any(b.overlaps(k) for k in kept):
            t.remove()
            gone += 1
        else:
            kept.append(b)
    return gone


# ----------------------------------------------------------------------------- DeepCC TCR


def tcr_figure(link: dict, rows: Sequence[dict]):
    """DeepCC's targets on one link (``jaxcc.tcr``'s ``links`` entry and its ``tcr`` rows): a
    panel per controller, targets in the throughput-delay plane (T2 across, T1 up), met ones
    filled, missed ones grey crosses, an untuned controller's measured point in its registry
    style (on the edge, labelled, when it lies beyond the targets' ranges)."""
    mine = [r for r in rows if r["scenario"] == link["scenario"]]
    looks = styles_for(r["controller"] for r in rows)  # every link's rows: one look per scheme
    t = np.asarray(link["targets"], np.float64).reshape(-1, 3)
    cols = min(4 if len(mine) > 6 else 3, max(1, len(mine)))
    nrows = int(math.ceil(len(mine) / cols)) or 1
    width = SINGLE_W if cols == 1 else DOUBLE_W
    xmax, ymax = max(link["max_delay_ms"], 1e-9) * 1.05, max(link["max_throughput_mbps"], 1e-9) * 1.05
    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrows, cols, figsize=(width, 2.1 * nrows + 0.9), squeeze=False, sharex=True,
                                 sharey=True)
        for ax, r in zip(axes.flat, mine):
            st = _look(looks, r["controller"])
            met = np.asarray(r["met"], bool)
            ax.scatter(t[~met, 1], t[~met, 0], marker="x", s=9, color="0.7", linewidths=0.6, zorder=2,
                       gid=f"missed:{r['controller']}")
            ax.scatter(t[met, 1], t[met, 0], marker="o", s=9, color="#117733", linewidths=0, zorder=2,
                       gid=f"met:{r['controller']}")
            # (no-break spaces: a wrapped header never leaves "%" alone on a line)
            head = f"{st.name}: TCR\u00a0{100 * r['tcr']:.1f}\u00a0%" + ("\ntuned per target" if r["tuned"] else "")
            m = r["measured"]
            ax.set_xlim(0, xmax)
            ax.set_ylim(0, ymax)
            if not r["tuned"] and m["p95_qdelay_ms"] is not None and m["throughput_mbps"] is not None:
                x, y = min(m["p95_qdelay_ms"], xmax * 0.985), min(m["throughput_mbps"], ymax * 0.985)
                ax.scatter([x], [y], marker=st.marker, s=60, color=st.color, edgecolors="k", linewidths=0.6,
                           zorder=4, clip_on=False, gid=f"measured:{r['controller']}")
                if (x, y) != (m["p95_qdelay_ms"], m["throughput_mbps"]):
                    annotate_inside(ax, f"off scale:\n{m['p95_qdelay_ms']:.0f} ms, {m['throughput_mbps']:.2f} Mbit/s",
                                    (x, y), fontsize=7, color="0.2")
                head += f"\nloss {100 * (m['loss'] or 0):.2f}\u00a0%"
            lg = ax.legend([_scheme_handle(st, 5)], [_wrap(head, int(width / cols / 0.075))], loc="lower left",
                           bbox_to_anchor=(0.0, 1.0),
                           borderaxespad=0.15, borderpad=0.0, handletextpad=0.3, handlelength=1.0)
            lg.set_gid(f"head:{r['controller']}")
            ax.grid(True)
        for k, ax in enumerate(axes.flat[: len(mine)]):
            if k + cols >= len(mine):  # no panel below: its own time axis labels
                ax.xaxis.set_tick_params(labelbottom=True)
                ax.set_xlabel("T2: p95 queueing delay (ms)")
        for ax in axes[:, 0]:
            ax.set_ylabel("T1: throughput (Mbit/s)")
        for ax in list(axes.flat)[len(mine):]:
            ax.axis("off")
        w = link["window_s"]
        title = (f"{link['scenario']}: {len(t)} targets, window {w[0]:g}–{w[1]:g} s, mean capacity "
                 f"{link['mean_capacity_mbps']:.2f} Mbit/s, T3 ≤ {100 * link['max_loss']:g} %")
        fig.suptitle("\n".join(textwrap.wrap(title, int(width / 0.068))))
        handles = [Line2D([], [], ls="none", marker="o", color="#117733", markersize=3.5),
                   Line2D([], [], ls="none", marker="x", color="0.6", markersize=3.5),
                   Line2D([], [], ls="none", marker="o", color="0.55", markeredgecolor="k", markersize=5.5)]
        _fig_legend(fig, handles, ["target met", "target missed", "measured (untuned run)"], width)
    return fig


# ----------------------------------------------------------------------------- from results.json


def _by_scenario(records: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(r["scenario"], []).append(r)
    return out


def _capacity(recs: Sequence[dict]) -> float | None:
    caps = [_num(r.get("capacity_mbps")) for r in recs]
    caps = [c for c in caps if math.isfinite(c)]
    return float(np.mean(caps)) if caps else None


def figures(doc: dict, source: str = "results.json"):
    """``(stem name, figure)`` for every figure of a ``results.json`` document (evaluation's or
    emulation's), one at a time; the caller saves or closes each.  ``source``: the document's
    name in error messages."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ValueError(f"{source}: needs a 'results' list of records (jaxcc.evaluate / jaxcc.emulate)")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not isinstance(r.get("scenario"), str) or not isinstance(r.get("controller"), str):
            raise ValueError(f"{source}: results[{i}] needs 'scenario' and 'controller' strings")
    series = doc.get("series") or {}
    looks = styles_for(r["controller"] for r in doc["results"])
    for scen, recs in _by_scenario(doc["results"]).items():
        name = slug(scen)
        yield f"scatter_{name}", scatter_figure(scen, scatter_points(recs), _capacity(recs), looks=looks)
        if scen in series:
            panels = evaluation_panels(series[scen], [r["controller"] for r in recs])
        elif any(pf.get("series") for r in recs for pf in r.get("per_flow") or []):
            panels = emulation_panels(recs)
        else:
            panels = []
        if panels:
            yield f"timeseries_{name}", timeseries_figure(scen, panels, looks)


def write_all(doc: dict, out_dir: str, source: str = "results.json") -> list[str]:
    """Every figure of a ``results.json`` document into ``out_dir``; returns the files written."""
    files = []
    for name, fig in figures(doc, source):
        files += save(fig, os.path.join(out_dir, name))
    return files


def figures_from_file(results: str, out_dir: str) -> list[str]:
    """``write_all`` of the ``results.json`` at ``results``."""
    try:
        with open(results, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise FileNotFoundError(f"--results: cannot read {results!r} ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--results: {results} is not JSON ({e.msg}, line {e.lineno})") from None
    if isinstance(doc, dict) and isinstance(doc.get("tcr"), list):
        raise ValueError(f"--results: {results} is jaxcc.tcr's (its figures: python -m jaxcc.tcr --records={results} "
                         "--out=DIR)")
    return write_all(doc, out_dir, f"--results: {results}")


# ----------------------------------------------------------------------------- training curves


def read_metrics(run: str) -> dict[str, np.ndarray]:
    """Columns of a run's ``metrics.jsonl`` (``run`` is the run folder or the file itself).

    Rows are ordered by ``update``; when a resumed run logged an update twice the later row
    wins.  ``elapsed_s`` restarts at 0 on a resume, so each restarted segment is shifted to
    continue where the previous one stopped (``wall_s``).  Missing numbers are NaN.
    """
    path = os.path.join(run, "metrics.jsonl") if os.path.isdir(run) else run
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no metrics.jsonl at {path!r}")
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
    if not rows:
        raise ValueError(f"{path}: no rows")
    offset, last, walls = 0.0, None, []
    for r in rows:  # file order = time order
        e = r.get("elapsed_s")
        e = float(e) if isinstance(e, (int, float)) else math.nan
        if last is not None and math.isfinite(e) and e < last:
            offset += last
        if math.isfinite(e):
            last = e
        walls.append(offset + e)
    by_update: dict[int, tuple[dict, float]] = {}
    for i, r in enumerate(rows):
        by_update[int(r.get("update", i))] = (r, walls[i])
    keys = sorted(by_update)

    def col(name):
        out = []
        for k in keys:
            v = by_update[k][0].get(name)
            out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan)
        return np.asarray(out, np.float64)

    cols = {"update": np.asarray(keys, np.float64), "wall_s": np.asarray([by_update[k][1] for k in keys])}
    for name in ("env_steps", "episode_return", "reward", "elapsed_s"):
        cols[name] = col(name)
    return cols


def training_curve(runs: Sequence[str], path: str, labels: Sequence[str] | None = None,
                   title: str | None = None) -> str:
    """Mean episode return and mean per-step reward against environment steps and wall time."""
    labels = list(labels or [])
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4), squeeze=False)
    for j, run in enumerate(runs):
        m = read_metrics(run)
        lab = labels[j] if j < len(labels) else os.path.basename(os.path.normpath(run)) or run
        steps = m["env_steps"] if np.isfinite(m["env_steps"]).any() else m["update"]
        for row, key in enumerate(("episode_return", "reward")):
            y = m[key]
            ok = np.isfinite(y)
            for col, x in enumerate((steps, m["wall_s"] / 60.0)):
                good = ok & np.isfinite(x)
                if good.any():
                    axes[row, col].plot(x[good], y[good], lw=1.3, label=lab)
    xl = ("environment steps (MIs)" if any(np.isfinite(read_metrics(r)["env_steps"]).any() for r in runs)
          else "update", "wall time (min, incl. compilation)")
    yl = ("mean episode return", "mean reward per step")
    for row in range(2):
        for col in range(2):
            ax = axes[row, col]
            ax.set_xlabel(xl[col])
            ax.set_ylabel(yl[row])
            ax.grid(alpha=0.3)
            if len(runs) > 1 and row == 0 and col == 0:
                ax.legend(fontsize=8, loc="best")
    fig.suptitle(title or "training curve: " + ", ".join(labels or [os.path.basename(os.path.normpath(r)) for r in runs]),
                 fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxcc.plots", description="Figures of evaluations and training runs.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    fg = sub.add_parser("figures", help="every figure of a results.json (jaxcc.evaluate's or jaxcc.emulate's)")
    fg.add_argument("--results", required=True, help="results.json to draw from")
    fg.add_argument("--out", required=True, help="folder for the figures (.png, .pdf, .svg per figure)")
    tc = sub.add_parser("training-curve", help="episode return and per-step reward vs env steps and wall time "
                                               "from a run's metrics.jsonl")
    tc.add_argument("--run", action="append", required=True, help="run folder (or metrics.jsonl); repeatable")
    tc.add_argument("--label", action="append", default=[], help="legend label per --run")
    tc.add_argument("--title", default=None)
    tc.add_argument("--out", required=True, help="image file to write (.png, .pdf, .svg)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "figures":
            files = figures_from_file(a.results, a.out)
            if not files:
                raise ValueError(f"--results: {a.results} has no records ('results' is empty): no figure to draw")
            for f in files:
                print(f)
            return 0
        out = training_curve(a.run, a.out, a.label, a.title)
    except (OSError, ValueError, KeyError, TypeError) as e:  # OSError: also an --out that cannot be written
        print(f"jaxcc.plots: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
