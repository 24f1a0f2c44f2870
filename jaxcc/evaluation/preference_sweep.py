"""MOCC's preference sweep in the simulator: one policy file, many preferences, beside the baselines.

    python -m jaxcc.preference_sweep --checkpoint=checkpoints/mocc/mocc.safetensors --suite=mocc --out=runs/sweep
    python -m jaxcc.preference_sweep --checkpoint=RUN0,RUN1,RUN2 --suite=mocc --out=runs/sweep3   # 3 seeds
    python -m jaxcc.preference_sweep --records=runs/sweep/sweep.json --out=runs/sweep   # re-make tables, plots, bars

For each policy of ``--checkpoint`` (a comma-separated list; each entry a policy file, a folder of
``.safetensors`` files or a training run, as ``jaxcc.evaluate --checkpoint``) and each preference
of ``--preferences``, every scenario of the suite runs in the simulator with its flows driven by
``policy:FILE`` and carrying ``"preference": [w_thr, w_delay, w_loss]`` (the scenario spec's flow
field, honoured by ``jaxcc.evaluate``'s senders); the baselines (``--baselines``, default in-sim
BBR, CUBIC and Copa) run the same scenarios once.  Everything goes through
``jaxcc.evaluation.runs.run_evaluation`` (one call for the baselines, one per policy file: all of a
file's preferences and links share its compiled batches).

The default preferences (``DEFAULT_PREFERENCES``, the order of the objectives is (throughput,
delay, loss) everywhere): 11 points on the throughput-delay edge of the simplex, w_thr = 1.0,
0.9, ..., 0.0 with w_delay = 1 - w_thr and w_loss = 0, and two loss-heavy ones, (0.5, 0, 0.5) and
(0.2, 0.2, 0.6).  ``--preferences="1,0,0;0.5,0.5,0"`` replaces them (each: 3 numbers >= 0
summing to 1 within 1e-3).

Outputs in ``--out``:

* ``sweep.json`` — ``{"results": [record, ...], "meta": {...}, "bars": {...}}``: one record per
  (policy, link, preference) and per (baseline, link), ``jaxcc.evaluate``'s record fields
  (``throughput_mbps``, ``utilization``, ``p95_qdelay_ms``, ``p95_owd_ms``, ``loss``, ...) with
  ``scenario`` = the link's name, ``controller`` = the policy's label (its file name without
  ``.safetensors``; ``NAME@FOLDER`` when two files share a name) or the baseline's name, and
  ``preference`` (null for baselines) and ``policy_file``.  Ankh's number is left out (its
  ``d_max`` is a per-run choice of ``jaxcc.evaluate`` that means nothing across a sweep).
* ``table.md`` — a Table I-like table (MOCC paper, §V-C): rows are the baselines and each policy
  at each preference, columns per link throughput (Mbit/s), p95 queueing delay (ms) and loss (%);
  three links per table.
* ``plots/frontier_<link>`` per link and ``plots/frontier_all`` (a panel per link), each as .png,
  .pdf and .svg (``jaxcc.plots.frontier_figure``): throughput against p95 queueing delay, each
  policy's edge points joined in preference order (falling w_thr), w_thr written at both ends
  (and at 0.5 in the one-link figures), the loss-heavy points hollow (labelled with their
  preference in the one-link figures), the baselines in their ``jaxcc.plots.style`` colour and
  marker (as in every other figure).
* ``bars.md`` — the ``mocc`` bar set of ``jaxcc.evaluation.bars`` (``--bars``) for every policy, and with
  several policies (training seeds) one row per bar: each seed's value and verdict, how many seeds
  meet it, and the median over the seeds of the numbers it is judged on.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Sequence

import numpy as np

from jaxcc import shipped
from jaxcc.controllers import is_raw_policy, policy_file, policy_name
from jaxcc.evaluation import bars
from jaxcc.evaluation import metrics
from jaxcc.evaluation.runs import OWN, ControllerEntry, controller_entries, run_evaluation
from jaxcc.scenarios import Scenario, parse_scenario


EDGE_W_THR = tuple(round(1.0 - 0.1 * i, 10) for i in range(11))  # 1.0, 0.9, ..., 0.0


DEFAULT_PREFERENCES: tuple[tuple[float, float, float], ...] = (
    tuple((w, round(1.0 - w, 10), 0.0) for w in EDGE_W_THR) + ((0.5, 0.0, 0.5), (0.2, 0.2, 0.6)))


DEFAULT_BASELINES = ("bbr", "cubic", "copa")


PREF_SUM_TOL = 1e-3


TABLE_LINKS_PER_TABLE = 3


def check_preference(p, field: str = "--preferences") -> tuple[float, float, float]:
    """A preference as a tuple (w_thr, w_delay, w_loss).

    Raises:
      ValueError: naming ``field`` unless ``p`` is 3 finite numbers >= 0 summing to 1 within 1e-3.
    """
    try:
        vals = [float(v) for v in p]
    except (TypeError, ValueError):
        vals = None
    if (vals is None or len(vals) != 3 or not all(math.isfinite(v) and v >= 0 for v in vals)
            or abs(sum(vals) - 1.0) > PREF_SUM_TOL):
        raise ValueError(f"{field}: must be 3 numbers >= 0 summing to 1 (throughput, delay, loss), got {p!r}")
    return tuple(vals)


def parse_preferences(text: str | None) -> list[tuple[float, float, float]]:
    """``--preferences``: ``"w_thr,w_delay,w_loss;..."``; empty/None: ``DEFAULT_PREFERENCES``.

    Raises:
      ValueError: a malformed or repeated preference (one line naming it).
    """
    if text is None or not text.strip():
        return list(DEFAULT_PREFERENCES)
    out: list[tuple[float, float, float]] = []
    for i, part in enumerate(p for p in text.split(";") if p.strip()):
        field = f"--preferences[{i}]"
        try:
            nums = [float(x) for x in part.split(",")]
        except ValueError:
            raise ValueError(f"{field}: must be 3 numbers >= 0 summing to 1 (throughput, delay, loss), "
                             f"got {part.strip()!r}") from None
        p = check_preference(nums, field)
        if p in out:
            raise ValueError(f"{field}: {part.strip()!r} is given twice")
        out.append(p)
    if not out:
        raise ValueError("--preferences: no preference given (e.g. --preferences='1,0,0;0,1,0')")
    return out


def policy_entries(checkpoint: str) -> list[ControllerEntry]:
    """One ``policy:FILE`` entry per policy of each comma-separated ``--checkpoint`` entry (a file,
    a folder of files or a training run: ``jaxcc.training.export.checkpoint_policies``).

    A policy's label is its file name without ``.safetensors`` (a run's: its stage name).  When
    several policies share a name (one file per training seed), each gets ``@<folder>`` (the
    file's folder; for a run, the run's), then ``#2``, ``#3``... if still not unique; a
    baseline's name is never a label.

    Raises:
      ValueError: an entry that does not exist or holds no policy, or one file given twice.
    """
    from jaxcc.training.export import checkpoint_policies

    found: list[tuple[str, str, str]] = []  # (label, file, folder)
    for path in [shipped.policy_path(p.strip()) for p in checkpoint.split(",") if p.strip()]:  # checkpoints/<family>/F: shipped
        if not os.path.exists(path):
            raise ValueError(f"--checkpoint: {path!r} does not exist")
        for label, f in checkpoint_policies(path):
            if f in [x[1] for x in found]:
                raise ValueError(f"--checkpoint: the policy {f!r} is given twice")
            folder = os.path.dirname(f) if os.path.isfile(path) else os.path.normpath(os.path.abspath(path))
            found.append((label, f, os.path.basename(folder)))
    if not found:
        raise ValueError("--checkpoint: give at least one policy file (comma-separated for several seeds)")
    names = [x[0] for x in found]
    out: list[ControllerEntry] = []
    for label, f, folder in found:
        if names.count(label) > 1 or label in bars.BASELINE_LABELS:
            label = f"{label}@{folder}"
        base, k = label, 2
        while label in [x.label for x in out]:
            label, k = f"{base}#{k}", k + 1
        out.append(ControllerEntry(label, f"policy:{f}"))
    return out


def pref_text(p: Sequence[float]) -> str:
    return "/".join(f"{v:g}" for v in p)


def preference_scenario(sc: Scenario, policy_file: str, pref: Sequence[float], raw: bool = False) -> Scenario:
    """``sc`` with every flow driven by ``policy:policy_file`` (``raw``: ``raw-policy:``, without
    the sender's safety net) at the fixed preference ``pref`` (a ``preference_changes`` of the
    spec dropped), renamed ``<name>@<w_thr,w_delay,w_loss>`` (scenario names are unique within
    one evaluation)."""
    d = sc.to_dict()
    d["name"] = _variant_name(sc.name, pref)
    for f in d["flows"]:
        f.pop("preference_changes", None)
        f["controller"] = policy_name(policy_file, raw)
        f["preference"] = [float(v) for v in pref]
    return parse_scenario(d, source=sc.name, allow_kernel=False)


def _variant_name(name: str, pref: Sequence[float]) -> str:
    return f"{name}@{','.join(repr(float(v)) for v in pref)}"


def without_preferences(sc: Scenario) -> Scenario:
    """``sc`` with no flow carrying a preference (what a baseline runs: it takes none)."""
    d = sc.to_dict()
    for f in d["flows"]:
        f.pop("preference", None)
        f.pop("preference_changes", None)
    return parse_scenario(d, source=sc.name, allow_kernel=False)


_NUMBERS = ("throughput_mbps", "utilization", "p95_qdelay_ms", "p95_owd_ms", "loss", "capacity_mbps")


_DROP = ("ankh", "ankh_d_max_ms")  # Ankh's d_max is one evaluation's choice; meaningless across a sweep


def run_sweep(scenarios: Sequence[Scenario], policies: Sequence[ControllerEntry],
              preferences: Sequence[Sequence[float]], baselines: Sequence[str] = DEFAULT_BASELINES, *,
              progress: bool = True, ticks_per_rtt: int | None = None) -> dict:
    """Simulate every scenario for each baseline and for each policy at each preference.

    Returns ``{"results": [record, ...], "wall_s": {"baselines": s, label: s, ...}, "skipped": [...]}``
    (records: module docstring).
    """
    names = [sc.name for sc in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must be unique in one sweep, repeated: {sorted({n for n in names if names.count(n) > 1})}")
    prefs = [check_preference(p, f"preferences[{i}]") for i, p in enumerate(preferences)]
    records: list[dict] = []
    wall: dict[str, float] = {}
    skipped: list[dict] = []
    if baselines:
        t0 = time.time()
        rep = run_evaluation([without_preferences(sc) for sc in scenarios], controller_entries(list(baselines)),
                             progress=progress, keep_series=False, ticks_per_rtt=ticks_per_rtt)
        wall["baselines"] = round(time.time() - t0, 1)
        skipped += rep["skipped"]
        for r in rep["results"]:
            records.append({**{k: v for k, v in r.items() if k not in _DROP}, "preference": None, "policy_file": None})
    for e in policies:
        path = policy_file(e.name)
        variants = [preference_scenario(sc, path, p, raw=is_raw_policy(e.name)) for sc in scenarios for p in prefs]
        t0 = time.time()
        rep = run_evaluation(variants, [ControllerEntry(OWN, None)], progress=progress, keep_series=False,
                             ticks_per_rtt=ticks_per_rtt)
        wall[e.label] = round(time.time() - t0, 1)
        by_name = {r["scenario"]: r for r in rep["results"]}
        for sc in scenarios:  # link order, then preference order
            for p in prefs:
                r = by_name[_variant_name(sc.name, p)]
                rec = {k: v for k, v in r.items() if k not in _DROP}
                rec.update(scenario=sc.name, controller=e.label, preference=list(p), policy_file=os.path.abspath(path))
                records.append(rec)
    return {"results": records, "wall_s": wall, "skipped": skipped}


def policy_labels(records: Sequence[dict]) -> list[str]:
    """The policies' labels in the records (those with a preference), first-seen order."""
    out: list[str] = []
    for r in records:
        if r.get("preference") is not None and r["controller"] not in out:
            out.append(r["controller"])
    return out


def baseline_labels(records: Sequence[dict]) -> list[str]:
    out: list[str] = []
    for r in records:
        if r.get("preference") is None and r["controller"] not in out:
            out.append(r["controller"])
    return out


def links_of(records: Sequence[dict]) -> list[str]:
    out: list[str] = []
    for r in records:
        if r["scenario"] not in out:
            out.append(r["scenario"])
    return out


def _fmt(x, spec: str) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def table_markdown(records: Sequence[dict]) -> str:
    """The Table I-like tables (module docstring): per policy label, baselines first."""
    links = links_of(records)
    by = {(r["scenario"], r["controller"], None if r.get("preference") is None else tuple(r["preference"])): r
          for r in records}
    rows: list[tuple[str, str, tuple | None]] = [(b, b, None) for b in baseline_labels(records)]
    for lab in policy_labels(records):
        prefs = []
        for r in records:
            if r["controller"] == lab and r.get("preference") is not None and tuple(r["preference"]) not in prefs:
                prefs.append(tuple(r["preference"]))
        rows += [(f"{lab} ({pref_text(p)})", lab, p) for p in prefs]
    out = ["Throughput (Mbit/s), p95 queueing delay (ms) and loss (%) per link; a policy's rows are "
           "`label (w_thr/w_delay/w_loss)`.", ""]
    for start in range(0, len(links), TABLE_LINKS_PER_TABLE):
        chunk = links[start:start + TABLE_LINKS_PER_TABLE]
        out.append("| controller | " + " | ".join(f"{ln} thr | {ln} p95 q | {ln} loss %" for ln in chunk) + " |")
        out.append("|---|" + "---:|" * (3 * len(chunk)))
        for name, lab, p in rows:
            cells = []
            for ln in chunk:
                r = by.get((ln, lab, p))
                cells += ([_fmt(r["throughput_mbps"], ".2f"), _fmt(r["p95_qdelay_ms"], ".1f"),
                           _fmt(None if r["loss"] is None else 100 * r["loss"], ".2f")] if r else ["–"] * 3)
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def extremes_markdown(records: Sequence[dict]) -> str:
    """Bar (c)'s numbers on every link (the bar itself is judged on ``mocc/12mbps``)."""
    out = ["| policy | link | throughput-heavy: pref, util, p95 q ms | delay-heavy: pref, util, p95 q ms | q ratio |",
           "|---|---|---|---|---:|"]
    for lab in policy_labels(records):
        for ln in links_of(records):
            pts = bars.mocc_points(records, lab, ln)
            if not pts:
                continue
            x = bars.mocc_extremes(pts)
            t, d = x["throughput_heavy"], x["delay_heavy"]
            out.append(f"| {lab} | {ln} | ({pref_text(t['preference'])}) {t['utilization']:.3f}, "
                       f"{t['p95_qdelay_ms']:.1f} | ({pref_text(d['preference'])}) {d['utilization']:.3f}, "
                       f"{d['p95_qdelay_ms']:.1f} | {_fmt(x['qdelay_ratio'], '.2f')} |")
    return "\n".join(out)


def _median_text(nums: list[dict]) -> str:
    """The median over seeds of each number of one bar (NaN = not measured: left out, counted)."""
    parts = []
    for k in nums[0]:
        vals = [float(n[k]) for n in nums]
        ok = [v for v in vals if not math.isnan(v)]
        txt = f"{k} {np.median(ok):.3g}" if ok else f"{k} –"
        if len(ok) < len(vals):
            txt += f" ({len(vals) - len(ok)} undefined)"
        parts.append(txt)
    return ", ".join(parts)


def bars_report(records: Sequence[dict], bar_set: str = "mocc") -> tuple[str, dict]:
    """Every policy's verdicts; with several policies (seeds) a bar x seed table with the count of
    seeds meeting each bar and the median of its numbers (``mocc`` only)."""
    verdicts = bars.check(bar_set, records)
    labels = [lab for lab in policy_labels(records) if lab in verdicts] or list(verdicts)
    text = [bars.format_verdicts({lab: verdicts[lab] for lab in labels})]
    js: dict = {"set": bar_set, "verdicts": bars.as_json({lab: verdicts[lab] for lab in labels})}
    if len(labels) > 1 and bar_set.strip() == "mocc":
        nums = {lab: bars.mocc_numbers(records, lab) for lab in labels}
        head = "| bar | " + " | ".join(labels) + " | seeds meeting | median over seeds |"
        lines = ["", head, "|" + "---|" * (len(labels) + 3)]
        summary = []
        for i, v0 in enumerate(verdicts[labels[0]]):
            cells = [f"{verdicts[lab][i].value} {'✓' if verdicts[lab][i].met else '✗'}" for lab in labels]
            k = sum(verdicts[lab][i].met for lab in labels)
            med = _median_text([nums[lab][i][1] for lab in labels])
            lines.append(f"| {v0.bar} | " + " | ".join(cells) + f" | {k} of {len(labels)} | {med} |")
            summary.append({"bar": v0.bar, "seeds_meeting": k, "seeds": len(labels), "median": med})
        every = [lab for lab in labels if all(v.met for v in verdicts[lab])]
        lines.append("")
        lines.append(f"policies meeting every bar: {', '.join(every) or 'none'} ({len(every)} of {len(labels)})")
        text.append("\n".join(lines))
        js["seeds"] = summary
    return "\n".join(text), js


def frontier_data(records: Sequence[dict], link: str) -> dict:
    """One link's frontier as ``jaxcc.plots.frontier_panel`` draws it: each policy's edge points
    (``bars.edge_points``: by falling w_thr) and loss-heavy ones, the baselines' points, the
    mean capacity."""
    curves = []
    for lab in policy_labels(records):
        pts = bars.mocc_points(records, lab, link)
        edge = bars.edge_points(pts)
        curves.append({"controller": lab,
                       "edge": [(r["p95_qdelay_ms"], r["throughput_mbps"], r["preference"][0]) for r in edge],
                       "rest": [(r["p95_qdelay_ms"], r["throughput_mbps"], pref_text(r["preference"]))
                                for r in pts if r not in edge]})
    baselines = [{"controller": b, "points": [(r["p95_qdelay_ms"], r["throughput_mbps"]) for r in records
                                              if r["scenario"] == link and r["controller"] == b]}
                 for b in baseline_labels(records)]
    caps = [r["capacity_mbps"] for r in records if r["scenario"] == link and r.get("capacity_mbps") is not None]
    return {"link": link, "curves": curves, "baselines": [b for b in baselines if b["points"]],
            "capacity_mbps": float(np.mean(caps)) if caps else None}


def frontier_plots(records: Sequence[dict], out_dir: str) -> list[str]:
    """One frontier figure per link and one with a panel per link (module docstring), each as
    .png, .pdf and .svg (``jaxcc.plots.frontier_figure``); returns the files."""
    from jaxcc import plots

    pdir = os.path.join(out_dir, "plots")
    files = []
    data = [frontier_data(records, ln) for ln in links_of(records)]
    for d in data:
        stem = os.path.join(pdir, f"frontier_{plots.slug(d['link'], 'link')}")
        files += plots.save(plots.frontier_figure([d]), stem)
    if data:
        files += plots.save(plots.frontier_figure(data), os.path.join(pdir, "frontier_all"))
    return files


def write_outputs(records: Sequence[dict], out_dir: str, meta: dict, *, bar_set: str | None = "mocc",
                  plots: bool = True) -> dict:
    """Write ``sweep.json``, ``table.md``, ``bars.md`` and the plots; returns ``{"files", "bars_text"}``."""
    os.makedirs(out_dir, exist_ok=True)
    doc = {"results": metrics.json_safe(list(records)), "meta": metrics.json_safe(meta)}
    bars_text = ""
    files = []
    if bar_set:
        bars_text, bjs = bars_report(records, bar_set)
        doc["bars"] = metrics.json_safe(bjs)
        path = os.path.join(out_dir, "bars.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"# Bars `{bar_set}` (jaxcc.evaluation.bars)\n\n```\n{bars_text}\n```\n\n"
                     f"## Bar (c)'s numbers on every link\n\n{extremes_markdown(records)}\n")
        files.append(path)
    path = os.path.join(out_dir, "sweep.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    files.insert(0, path)
    path = os.path.join(out_dir, "table.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# Preference sweep (jaxcc.preference_sweep)\n\n" + table_markdown(records) + "\n")
    files.append(path)
    if plots:
        files += frontier_plots(records, out_dir)
    return {"files": files, "bars_text": bars_text}


def load_sweep(path: str) -> tuple[list[dict], dict]:
    """The records and meta of a ``sweep.json`` (or its folder).

    Raises:
      ValueError: the file is missing or is not a sweep's output.
    """
    f = os.path.join(path, "sweep.json") if os.path.isdir(path) else path
    try:
        with open(f, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"--records: {f}: cannot read a preference sweep's sweep.json ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"--records: {f}: no 'results' list (not a jaxcc.preference_sweep output)")
    for i, r in enumerate(data["results"]):
        if not isinstance(r, dict) or "scenario" not in r or "controller" not in r or "preference" not in r:
            raise ValueError(f"--records: {f}: results[{i}] lacks scenario/controller/preference")
        for k in _NUMBERS:  # json_safe wrote NaN (not measured) as null
            if k in r and r[k] is None:
                r[k] = float("nan")
    return data["results"], data.get("meta", {})
