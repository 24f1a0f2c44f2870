"""Throughput against p95 one-way delay, Pantheon's convention (``scatter_figure``), and the
simulator beside the emulation (``sim2real_figure``)."""

from __future__ import annotations

import math
import os
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from jaxcc.plots.looks import (RC, SINGLE_W, Style, _axes_fraction, _better_arrow, _by_scenario,
                               _capacity, _fig_legend, _legend_rows, _look, _num, _set_delay_axis,
                               _wrap, save, slug, styles_for, throughput_top)


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
    ``p95_owd_ms``: the seeds' mean, the values ``jaxcc.evaluation.sim2real.compare`` compares) as a hollow
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
