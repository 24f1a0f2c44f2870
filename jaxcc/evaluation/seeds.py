"""Quality as a distribution: one policy's bars over several training seeds, and the median.

    python -m jaxcc.seeds --results=runs/ev-s0,runs/ev-s1,runs/ev-s2,runs/ev-s3 --controller=Pareto-Fair \\
        --bars=pareto --out=runs/seeds.md

Each ``--results`` entry is the ``--out`` directory (or its ``results.json``) of one
``jaxcc.evaluate`` run of one training seed, all on the same scenarios and baselines.  The output
has one row per bar: every seed's value and verdict, then the verdict of the **median seed**, the
bars judged on median records (``median_records``): every number of a (scenario, controller)
record is the median over the seeds (lists element by element; "never", stored as null, counts as
+inf), so a bar on one number is met by the median exactly when at least half the seeds (rounded
up, for an even count the mean of the middle two) meet it.  The baselines' records enter the same
way; they are the same in every seed's evaluation.  Last, how many seeds meet each bar.
"""

from __future__ import annotations

import json
import math
import os
from typing import Sequence

import numpy as np

from jaxcc.evaluation import bars


def load_records(path: str) -> list[dict]:
    """The records of one ``jaxcc.evaluate`` output (a directory or its ``results.json``).

    Raises:
      ValueError: the file is missing or is not an evaluation's results.
    """
    f = os.path.join(path, "results.json") if os.path.isdir(path) else path
    try:
        with open(f) as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"--results: {f}: cannot read an evaluation's results.json ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"--results: {f}: no 'results' list (not a jaxcc.evaluate output)")
    return data["results"]


def _num(x):
    return math.inf if x is None else x


def _median(values: list):
    """Median of numbers, lists of numbers (element-wise, equal lengths) or None (= +inf); None
    when the values are of another kind or do not line up."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) or v is None for v in values):
        m = float(np.median([_num(v) for v in values]))
        return None if math.isinf(m) and m > 0 else m
    if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
        cols = [_median([v[i] for v in values]) for i in range(len(values[0]))]
        return cols
    return None


def _median_flow(flows: Sequence[dict]) -> dict:
    """One flow's entry over the runs: its numeric fields the median, its other fields the first run's."""
    out = dict(flows[0])
    for k, v in flows[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = _median([f.get(k) for f in flows])
    return out


def median_records(runs: Sequence[Sequence[dict]]) -> list[dict]:
    """One record per (scenario, controller) present in every run: its numeric fields the
    median over the runs (per-flow fields flow by flow), its other fields the first run's.

    Raises:
      ValueError: fewer than one run.
    """
    if not runs:
        raise ValueError("median_records: no runs")
    index = [{(r["scenario"], r["controller"]): r for r in run} for run in runs]
    out = []
    for key, first in index[0].items():
        if not all(key in ix for ix in index[1:]):
            continue
        rec = dict(first)
        for field, v in first.items():
            if field in ("scenario", "controller") or isinstance(v, (str, bool, dict)):
                continue
            vals = [ix[key].get(field) for ix in index]
            if isinstance(v, list) and v and isinstance(v[0], dict):
                # per_flow: flow by flow, each numeric field the median over the runs (the
                # coexistence bars read flow 0's throughput and the neighbours' delays)
                if all(isinstance(x, list) and len(x) == len(v) for x in vals):
                    rec[field] = [_median_flow([x[i] for x in vals]) for i in range(len(v))]
                continue
            rec[field] = _median(vals)
        out.append(rec)
    return out


def table(runs: Sequence[Sequence[dict]], names: Sequence[str], controller: str, bar_sets: str) -> tuple[str, dict]:
    """A Markdown table (bar × seed, then the median) and the same as JSON."""
    per_seed = []
    for name, recs in zip(names, runs):
        v = bars.check(bar_sets, recs)
        if controller not in v:
            raise ValueError(f"--controller: {controller!r} is not in {name} (evaluated: {', '.join(v) or 'none'})")
        per_seed.append(v[controller])
    med = bars.check(bar_sets, median_records(runs))[controller]
    head = "| bar | " + " | ".join(names) + " | median | seeds meeting |"
    lines = [head, "|" + "---|" * (len(names) + 3)]
    for i, mv in enumerate(med):
        cells = [f"{s[i].value} {'✓' if s[i].met else '✗'}" for s in per_seed]
        k = sum(s[i].met for s in per_seed)
        lines.append(f"| {mv.bar} | " + " | ".join(cells) + f" | **{mv.value} {'✓' if mv.met else '✗'}** | "
                     f"{k} of {len(per_seed)} |")
    met = sum(v.met for v in med)
    lines.append("")
    lines.append(f"{controller}, median of {len(runs)} seeds: {met} of {len(med)} bars met")
    js = {"controller": controller, "bars": bar_sets, "runs": list(names),
          "per_seed": [bars.as_json({controller: s})[controller] for s in per_seed],
          "median": bars.as_json({controller: med})[controller], "median_met": met, "total": len(med)}
    return "\n".join(lines), js
