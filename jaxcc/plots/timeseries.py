"""Per controller a throughput panel over a one-way-delay panel on one time axis
(``timeseries_figure``), from the simulator's series or an emulation's records."""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from jaxcc.plots.looks import (DOUBLE_W, FLOW_COLORS, RC, SINGLE_W, Style, _arr, _fig_legend, _look,
                               _num, _wrap, display_name, styles_for, throughput_top)
from jaxcc.plots.scatter import _scheme_handle


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
