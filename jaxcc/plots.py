"""Pantheon-style plots of an evaluation (matplotlib, Agg backend — no display needed).

* ``scatter_<scenario>.png`` — throughput vs p95 one-way delay, one marker per run and a
  larger one for the seed average, delay axis reversed (better = up and right), as in
  Pareto Fig. 5 and Pantheon's summary plots;
* ``timeseries_<scenario>.png`` — per-flow throughput over time for each controller (seed 0),
  with the link capacity shaded, as in Pareto Fig. 8 and 10.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "scenario"


def scatter(scenario: str, records: Sequence[dict], runs: dict, path: str) -> str:
    """Throughput vs p95 one-way delay for the controllers of one scenario."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, r in enumerate(records):
        c = colors[j % len(colors)]
        per = runs.get((scenario, r["controller"]), [])
        if len(per) > 1:
            ax.scatter([p["p95_owd_ms"] for p in per], [p["throughput_mbps"] for p in per], color=c, s=14, alpha=0.5)
        ax.scatter([r["p95_owd_ms"]], [r["throughput_mbps"]], color=c, s=60, label=r["controller"], edgecolor="k")
        ax.annotate(r["controller"], (r["p95_owd_ms"], r["throughput_mbps"]), textcoords="offset points",
                    xytext=(5, 4), fontsize=8)
    ax.invert_xaxis()
    ax.set_xlabel("95th percentile one-way delay (ms)")
    ax.set_ylabel("average throughput (Mbit/s)")
    ax.set_title(scenario)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def timeseries(scenario: str, labels: Sequence[str], series: dict, path: str) -> str:
    """Per-flow throughput over time, one panel per controller, capacity shaded."""
    labels = [lab for lab in labels if (scenario, lab) in series]
    n = max(1, len(labels))
    fig, axes = plt.subplots(n, 1, figsize=(7, 2.2 * n + 0.6), sharex=True, squeeze=False)
    for ax, lab in zip(axes[:, 0], labels):
        s = series[(scenario, lab)]
        t, thr, cap = s["t"], s["throughput_mbps"], s["capacity_mbps"]
        ax.fill_between(t, 0, cap, step="mid", color="0.85", label="capacity")
        for f in range(thr.shape[1]):
            ax.plot(t, thr[:, f], lw=1.1, label=f"flow {f}")
        ax.set_ylabel("Mbit/s")
        ax.set_title(f"{scenario} — {lab}", fontsize=9)
        ax.set_ylim(0, max(float(np.nanmax(cap)) if cap.size else 1.0, float(np.nanmax(thr)) if np.isfinite(thr).any() else 1.0) * 1.1)
        ax.grid(alpha=0.3)
        if thr.shape[1] <= 6:
            ax.legend(fontsize=7, loc="upper right", ncol=min(thr.shape[1] + 1, 4))
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_all(report: dict, out_dir: str) -> list[str]:
    """Both plots for every scenario of an evaluation report; returns the files written."""
    pdir = os.path.join(out_dir, "plots")
    os.makedirs(pdir, exist_ok=True)
    by_scen: dict[str, list[dict]] = {}
    for r in report["results"]:
        by_scen.setdefault(r["scenario"], []).append(r)
    files = []
    for scen, recs in by_scen.items():
        slug = _slug(scen)
        files.append(scatter(scen, recs, report.get("runs", {}), os.path.join(pdir, f"scatter_{slug}.png")))
        if report.get("series"):
            files.append(timeseries(scen, [r["controller"] for r in recs], report["series"],
                                    os.path.join(pdir, f"timeseries_{slug}.png")))
    return files
