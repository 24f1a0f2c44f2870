"""Pantheon-style plots of an evaluation (matplotlib, Agg backend — no display needed).

* ``scatter_<scenario>.png`` — throughput vs p95 one-way delay, one marker per run and a
  larger one for the seed average, delay axis reversed (better = up and right), as in
  Pareto Fig. 5 and Pantheon's summary plots;
* ``timeseries_<scenario>.png`` — per-flow throughput over time for each controller (seed 0),
  with the link capacity shaded, as in Pareto Fig. 8 and 10.

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
import json
import math
import os
import re
import sys
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
    ap = argparse.ArgumentParser(prog="python -m jaxcc.plots", description="Plots from training runs.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    tc = sub.add_parser("training-curve", help="episode return and per-step reward vs env steps and wall time "
                                               "from a run's metrics.jsonl")
    tc.add_argument("--run", action="append", required=True, help="run folder (or metrics.jsonl); repeatable")
    tc.add_argument("--label", action="append", default=[], help="legend label per --run")
    tc.add_argument("--title", default=None)
    tc.add_argument("--out", required=True, help="image file to write (.png, .pdf, .svg)")
    a = ap.parse_args(argv)
    try:
        out = training_curve(a.run, a.out, a.label, a.title)
    except (FileNotFoundError, ValueError) as e:
        print(f"jaxcc.plots: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
