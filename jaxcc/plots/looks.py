"""Every figure's looks: sizes and formats, one colour and marker per scheme (``style``), file
names (``slug``), writing a figure three times (``save``) and the axis decisions (``delay_axis``,
``throughput_top``)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

from jaxcc.controllers import is_raw_policy, policy_file



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
    """The name a legend shows: a ``policy:PATH`` controller by its file's stem (``raw-policy:PATH``:
    the stem and "(raw)"), else the label."""
    s = str(label)
    path = policy_file(s)
    if path is not None:
        base = os.path.basename(path)
        stem = base[: -len(".safetensors")] if base.endswith(".safetensors") else base
        return stem + (" (raw)" if is_raw_policy(s) else "")
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


def _by_scenario(records: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(r["scenario"], []).append(r)
    return out


def _capacity(recs: Sequence[dict]) -> float | None:
    caps = [_num(r.get("capacity_mbps")) for r in recs]
    caps = [c for c in caps if math.isfinite(c)]
    return float(np.mean(caps)) if caps else None
