"""The training curve of runs, from the ``metrics.jsonl`` that ``jaxcc.train`` writes
(``read_metrics``, ``training_curve``)."""

from __future__ import annotations

import json
import math
import os
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np



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
