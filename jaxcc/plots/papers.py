"""The papers' own figures: MOCC's throughput-delay frontier over preferences
(``frontier_figure``, for ``jaxcc.preference_sweep``) and DeepCC's targets met and missed
(``tcr_figure``, for ``jaxcc.tcr``)."""

from __future__ import annotations

import math
import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from jaxcc.plots.looks import (DOUBLE_W, RC, SINGLE_W, Style, _axes_fraction, _better_arrow,
                               _fig_legend, _look, _set_delay_axis, _wrap, annotate_inside,
                               styles_for, throughput_top)
from jaxcc.plots.scatter import _scheme_handle


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
