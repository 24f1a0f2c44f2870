"""Runs of controllers on scenarios in the simulator (the code of ``python -m jaxcc.evaluate``):
records, their table and ``results.json``.

Every controller runs on every scenario; ``--controller`` replaces the flows' own controllers
(``Scenario.with_controller``), without it each flow keeps its own, so mixed links work.  All
runs go through ``runner.build_batches``, which groups them into as few compiled batches as
possible (one per distinct tick count).

``results.json`` follows the shared contract — one record per scenario × controller, seeds
averaged (the metrics of each run are averaged, as the Pareto paper averages its three runs)::

    {"results": [{"scenario", "controller", "throughput_mbps", "utilization", "p95_owd_ms",
                  "p95_qdelay_ms", "loss", "jain", "ankh", "per_flow": [...], "per_seed": [{"seed",
                  "throughput_mbps", "p95_owd_ms", "p95_qdelay_ms", "loss", "utilization"}...], ...}],
     "series": {scenario: {controller: {"t", "capacity_mbps", "throughput_mbps", "owd_ms"}}},
     "meta": {...}}

``series`` is seed 0's per-flow goodput and one-way delay per 0.5 s bin (``metrics.time_series``;
``[[per flow] per bin]``, null where a flow had none).  ``--plots`` draws every figure from the
written ``results.json`` (``jaxcc.plots.figures_from_file``, the same as ``python -m jaxcc.plots
figures --results=OUT/results.json --out=OUT/plots``), so the figures show exactly its numbers.

Ankh's number uses, per scenario, ``d_max`` = the largest p95 one-way delay among the
controllers of that scenario in this run (``ankh_d_max_ms`` in each record).  Jain's index of a
multi-flow scenario is taken over its last 20 s (``jain_note``); a single flow reports 1.0.

``--suite`` takes one suite or a comma-separated list; ``--duration=S`` runs every scenario for
S seconds instead of its own length (``with_duration``; e.g. the Aurora paper's two-minute tests).

A flow's ``preference`` (a MOCC policy's (throughput, delay, loss) weights, and its
``preference_changes``; ``jaxcc.scenarios``) is what that flow's policy decides with; each
record's ``per_flow`` entries carry their flow's ``preference`` (null: the policy's default) and
the record a ``preference`` when all its flows share one (so a preference sweep groups by it).
A controller that takes no preference on such a flow (``--controller=bbr``) is not run there
("not run: ...").

Records also carry the recovery measurements (``recovery_metrics``: ``ramp_s``,
``step_ramp_s``, ``reclaim_s``, ``time_to_fair_s``, ``min_fair_share``), which ``--bars`` (``jaxcc.evaluation.bars``; a
comma-separated list of sets) judges.  A baseline given with ``--controller`` on a link whose flow
has a start rate (``init_rate_mbps``, e.g. ``robust/start1pct``) cannot take that rate
(``Scenario.init_rate_refusals``); ``--baseline_start`` says what happens there (``from_own_start``):
``skip`` (the default) does not run it ("not run: ...", ``meta.skipped``); ``own`` runs it from its
own initial window or rate, as on every other link, and its record says so (``start_rate_note``,
and each flow's ``init_rate_mbps``: the start rate it ran from, null for its controller's own).
The bars judge only the learned policies, which always run from the scenario's start rate, so a
baseline there is a reference beside them, never a run that pretends to start at the rate.

Controllers are *labels* mapped to controller names by ``controller_entries``;
``--checkpoint=DIR`` adds one entry per exported policy (``policy:FILE``) of a training run
(``jaxcc.training.export.checkpoint_policies``), labelled with its stage name.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections import defaultdict
from typing import Sequence

import numpy as np

from jaxcc.controllers import parse_controller
from jaxcc.evaluation import metrics
from jaxcc.scenarios import (SUITES, Scenario, get_scenario, get_suite, init_rate_refusal, list_scenarios, load_scenario,
                             parse_scenario, trace_scenario)


OWN = "own"  # label of runs that keep each flow's own controller


PER_SEED_KEYS = ("seed", "throughput_mbps", "p95_owd_ms", "p95_qdelay_ms", "loss", "utilization")


@dataclasses.dataclass(frozen=True)
class ControllerEntry:
    """One controller column of an evaluation: its report label and the name the sim resolves."""

    label: str
    name: str | None  # None: keep each flow's own controller


def controller_entries(spec: str | Sequence[str] | None) -> list[ControllerEntry]:
    """Parse ``--controller`` (comma-separated names) into entries; errors list the valid forms.

    Returns ``[ControllerEntry(OWN, None)]`` when no controller is given.  (A checkpoint
    directory will append ``policy:FILE`` entries here.)
    """
    if spec is None or spec == "" or spec == []:
        return [ControllerEntry(OWN, None)]
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    out: list[ControllerEntry] = []
    for n in names:
        if not n:
            raise ValueError("--controller: empty name in the list (use e.g. --controller=bbr,cubic)")
        parse_controller(n, field="--controller", allow_kernel=False)
        if n not in [e.label for e in out]:
            out.append(ControllerEntry(n, n))
    return out


def checkpoint_entries(path: str, taken: Sequence[str] = ()) -> list[ControllerEntry]:
    """One ``policy:FILE`` entry per exported policy of a training checkpoint (``--checkpoint``)."""
    from jaxcc.training.export import checkpoint_policies

    out = []
    for label, f in checkpoint_policies(path):
        if label in taken:
            label = f"{label}@{os.path.basename(os.path.normpath(path))}"
        out.append(ControllerEntry(label, f"policy:{f}"))
    return out


def resolve_scenarios(*, suite: str | None = None, scenario: str | None = None,
                      scenario_file: str | Sequence[str] | None = None,
                      trace: str | None = None) -> tuple[list[Scenario], str]:
    """Exactly one of ``suite``, ``scenario`` (comma-separated names each), ``scenario_file`` or
    ``trace`` (comma-separated Mahimahi trace files, each a ``trace_scenario``).

    Returns the scenarios and a short description of the source.
    """
    given = [k for k, v in (("--suite", suite), ("--scenario", scenario), ("--scenario-file", scenario_file),
                            ("--trace", trace)) if v]
    if len(given) != 1:
        raise ValueError(f"give exactly one of --suite, --scenario, --scenario-file, --trace (got {given or 'none'}); "
                         f"suites: {', '.join(sorted(SUITES))}")
    if trace:
        paths = [t.strip() for t in trace.split(",") if t.strip()]
        return [trace_scenario(t) for t in paths], f"traces {','.join(paths)}"
    if suite:
        names = [n.strip() for n in suite.split(",") if n.strip()]
        out, seen = [], set()
        for sc in (sc for n in names for sc in get_suite(n)):  # a scenario in two suites runs once
            if sc.name not in seen:
                seen.add(sc.name)
                out.append(sc)
        return out, f"suite {','.join(names)}"
    if scenario:
        names = [n.strip() for n in scenario.split(",") if n.strip()]
        unknown = [n for n in names if n not in list_scenarios()]
        if unknown:
            raise ValueError(f"--scenario: unknown scenario(s) {unknown}; named scenarios: {', '.join(list_scenarios())}")
        return [get_scenario(n) for n in names], f"scenarios {','.join(names)}"
    files = [f.strip() for f in (scenario_file.split(",") if isinstance(scenario_file, str) else scenario_file)]
    scs = []
    for f in files:
        if not os.path.isfile(f):
            raise ValueError(f"--scenario-file: {f!r} does not exist")
        scs.append(load_scenario(f, allow_kernel=False))
    return scs, f"files {','.join(files)}"


def with_duration(sc: Scenario, duration_s: float) -> Scenario:
    """The scenario run for ``duration_s`` seconds instead (``--duration``).

    Flows that ran to the end still do; flows that stop earlier keep their stop time (capped at
    the new length); preference changes at or after the new end are dropped (they never come);
    random capacity forms draw their segments for the new length.  A flow that starts at or after
    the new end is refused (one line naming it and the shortest length that keeps it), not dropped:
    the scenario would be another one.
    """
    if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"--duration must be > 0 seconds (a finite number), got {duration_s}")
    late = [(i, f.start_s) for i, f in enumerate(sc.flows) if f.start_s >= duration_s]
    if late:
        i, start = late[0]
        raise ValueError(f"--duration={duration_s:g}: {sc.name}.flows[{i}] starts at {start:g} s, not before the "
                         f"new end; give --duration > {max(t for _, t in late):g}")
    d = sc.to_dict()
    old = float(d["duration_s"])
    d["duration_s"] = float(duration_s)
    for f in d["flows"]:
        if f["stop_s"] >= old:
            f["stop_s"] = float(duration_s)
        f["stop_s"] = min(f["stop_s"], float(duration_s))
        if "preference_changes" in f:
            f["preference_changes"] = [c for c in f["preference_changes"] if c["at_s"] < float(duration_s)]
            if not f["preference_changes"]:
                del f["preference_changes"]
    return parse_scenario(d, source=sc.name)


BASELINE_START = ("skip", "own")  # --baseline_start: what a baseline does on a flow with a start rate


def from_own_start(sc: Scenario) -> tuple[Scenario, str | None]:
    """``sc`` with each start rate (``init_rate_mbps``) that its flow's controller cannot take
    removed, so that controller starts from its own initial window or rate (``--baseline_start=own``),
    and the note for the run's record (None when nothing was removed).

    A start rate belongs to the learned senders (``jaxcc.scenarios``: a baseline's algorithm has
    no start rate to set without changing it); a baseline beside them on such a link is a reference
    from its normal start, and the note says which rate it did not take."""
    flows, dropped = [], []
    for i, f in enumerate(sc.flows):
        where = f"{sc.name}.flows[{i}].init_rate_mbps"
        if f.init_rate_mbps is not None and init_rate_refusal(f.controller, where) is not None:
            dropped.append(f"{where} ({f.init_rate_mbps:g} Mbit/s)")
            f = dataclasses.replace(f, init_rate_mbps=None)
        flows.append(f)
    if not dropped:
        return sc, None
    return (dataclasses.replace(sc, flows=tuple(flows)),
            f"ran from its own initial window/rate (--baseline_start=own), not from {', '.join(dropped)}: "
            f"a start rate is a learned sender's")


def scenario_specs(names: Sequence[str], scenarios: Sequence[Scenario] | None = None,
                   builtin: dict[str, dict] | None = None) -> tuple[list[dict], list[str]]:
    """The scenarios' specs in the scenario-file format (``Scenario.to_dict``), for a report:
    those of ``scenarios`` when given (what ran), else of the named scenarios among ``names``
    (``builtin``: more names -> spec dicts, e.g. the emulation harness's ``emu/*``).  Returns the
    specs and the names that have none (a scenario file's, when only its name is known)."""
    if scenarios is not None:
        return [sc.to_dict() for sc in scenarios], []
    known, specs, missing = set(list_scenarios()), [], []
    for n in dict.fromkeys(names):
        if builtin and n in builtin:
            specs.append(dict(builtin[n]))
        elif n in known:
            specs.append(get_scenario(n).to_dict())
        else:
            missing.append(n)
    return specs, missing


def _is_random(sc: Scenario) -> bool:
    """Whether the scenario's link depends on the seed (else every seed gives the same run)."""
    return (sc.link.random_steps is not None or sc.link.poisson is not None
            or bool(sc.link.jitter_ms or sc.link.rtt_noise_ms))  # realism's per-tick draws


def _own_label(sc: Scenario) -> str:
    ctrls = list(dict.fromkeys(f.controller for f in sc.flows))
    return ctrls[0] if len(ctrls) == 1 else "+".join(ctrls)


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(xs)) if xs else float("nan")


def recovery_metrics(tr: metrics.Trace, sc: Scenario) -> dict:
    """The recovery and starvation measurements of one run of ``sc`` (``metrics.time_to_share``,
    ``metrics.fair_share_fractions``); the events come from the scenario, not from the trace.

    * ``ramp_s``: from the first flow's start until all flows together carry ≥ 80 % of the capacity
      (and hold it: ``metrics.time_to_share``);
    * ``step_up_at_s`` / ``step_ramp_s``: each upward step of a ``schedule`` link, and how long
      after it the flows carry ≥ 80 % of the new capacity (judged until the next step);
    * ``depart_at_s`` / ``reclaim_s``: each flow that stops before the end while others still
      send, and how long after its stop the flows still sending carry ≥ 80 % (judged until the
      next stop or start);
    * ``fair_at_s`` / ``fair_until_s`` / ``time_to_fair_s``: each arrival or departure after which
      two flows or more send (flows starting together are one event), the end of the time it is
      judged over (the next arrival or departure, or the run's end), and how long after it Jain's
      index over those flows reaches ``metrics.FAIR_JAIN`` and holds it (``metrics.time_to_fairness``);
    * ``min_fair_share``: multi-flow runs: the smallest goodput over the fair share (capacity / n)
      among the flows of Jain's window (the last ``metrics.JAIN_LAST_S`` s).

    ``inf`` means never (within the judged time).
    """
    flows = sc.flows
    out: dict = {"ramp_s": metrics.time_to_share(tr, min(f.start_s for f in flows))}
    steps = []
    sched = sc.link.schedule or ()
    for i in range(1, len(sched)):
        if sched[i][1] > sched[i - 1][1]:
            t_end = sched[i + 1][0] if i + 1 < len(sched) else sc.duration_s
            steps.append((sched[i][0], metrics.time_to_share(tr, sched[i][0], t_end=t_end)))
    out["step_up_at_s"] = [t for t, _ in steps]
    out["step_ramp_s"] = [r for _, r in steps]
    # Arrivals and departures; each is judged until the next one (or the run's end).
    events = sorted({f.start_s for f in flows} | {f.stop_s for f in flows if f.stop_s < sc.duration_s - 1e-9})

    def next_event(t: float) -> float:
        return min((e for e in events if e > t), default=sc.duration_s)

    def sending(t: float) -> list[int]:
        return [j for j, g in enumerate(flows) if g.start_s <= t < g.stop_s]

    deps = []
    for f in flows:
        rest = sending(f.stop_s)
        if f.stop_s >= sc.duration_s - 1e-9 or not rest:
            continue
        deps.append((f.stop_s, metrics.time_to_share(tr, f.stop_s, flows=rest, t_end=next_event(f.stop_s))))
    deps.sort()
    out["depart_at_s"] = [t for t, _ in deps]
    out["reclaim_s"] = [r for _, r in deps]
    fair = []
    for t in events:
        on, until = sending(t), next_event(t)
        if len(on) >= 2:
            fair.append((t, until, metrics.time_to_fairness(tr, t, on, t_end=until)))
    out["fair_at_s"] = [t for t, _, _ in fair]
    out["fair_until_s"] = [u for _, u, _ in fair]
    out["time_to_fair_s"] = [r for _, _, r in fair]
    out["min_fair_share"] = float("nan")
    if len(flows) > 1:
        fr = [x for x in metrics.fair_share_fractions(tr, metrics.jain_window(float(tr.time[-1]))) if not math.isnan(x)]
        out["min_fair_share"] = min(fr) if fr else float("nan")
    return out


def _mean_lists(lists: list[list[float]]) -> list[float]:
    """Element-wise mean of equally long lists (one per run); inf stays inf."""
    return [float(np.mean(col)) for col in zip(*lists)]


def _average_runs(runs: list[dict]) -> dict:
    """Average the per-run metric dicts (per-flow entries flow by flow; lists element by element)."""
    keys = ["throughput_mbps", "capacity_mbps", "utilization", "p95_owd_ms", "p95_qdelay_ms", "mean_owd_ms", "loss",
            "power", "jain", "cross_mbps", "ramp_s", "min_fair_share"]
    out = {k: _mean([r[k] for r in runs]) for k in keys}
    for k in ("step_ramp_s", "reclaim_s", "time_to_fair_s"):
        out[k] = _mean_lists([r[k] for r in runs])
    for k in ("step_up_at_s", "depart_at_s", "fair_at_s", "fair_until_s"):
        out[k] = runs[0][k]
    out["jain_note"] = runs[0]["jain_note"]
    out["jain_window_s"] = runs[0]["jain_window_s"]
    flows = []
    for f in range(len(runs[0]["per_flow"])):
        pf = [r["per_flow"][f] for r in runs]
        d = {"flow": f}
        for k, v in pf[0].items():
            if k != "flow":
                d[k] = _mean([p[k] for p in pf]) if isinstance(v, (int, float, np.floating)) else v
        flows.append(d)
    out["per_flow"] = flows
    return out


def _common_preference(per_flow: list[dict]) -> list[float] | None:
    prefs = [pf.get("preference") for pf in per_flow]
    return prefs[0] if prefs and all(p == prefs[0] for p in prefs) else None


def run_evaluation(scenarios: Sequence[Scenario], entries: Sequence[ControllerEntry], *, seeds: int = 1,
                   progress: bool = True, keep_series: bool = True, series_bin_s: float = 0.5,
                   ticks_per_rtt: int | None = None, baseline_start: str = "skip") -> dict:
    """Simulate every scenario × controller × seed and compute the report.

    A controller that cannot run a scenario as given (``Scenario.init_rate_refusals``: a start
    rate for a baseline, e.g. ``--controller=cubic`` on ``robust/start1pct``; a preference it does
    not take) gets no record; the pair and the reason are in ``"skipped"``.  With
    ``baseline_start="own"`` a baseline refused only a start rate runs from its own start instead
    (``from_own_start``; its record carries ``start_rate_note``).  A flow's own controller that
    cannot is an error.

    Returns ``{"results": [record, ...], "series": {(scenario, label): time_series of seed 0},
    "runs": {(scenario, label): [per-run metrics]}, "skipped": [{"scenario", "controller", "reason"}]}``.
    """
    from jaxcc import senders  # jax is imported only when something is simulated
    from jaxcc.sim import runner

    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if baseline_start not in BASELINE_START:
        raise ValueError(f"--baseline_start must be one of {', '.join(BASELINE_START)}, got {baseline_start!r}")
    names = [sc.name for sc in scenarios]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"scenario names must be unique in one evaluation, repeated: {dup}")
    items, keys, skipped = [], [], []
    own_start: dict[tuple[str, str], str] = {}  # (scenario, label) -> its record's start_rate_note
    for sc in scenarios:
        for e in entries:
            run_sc = sc if e.name is None else sc.with_controller(e.name)
            label = _own_label(sc) if e.name is None else e.label
            if e.name is not None and baseline_start == "own":
                run_sc, note = from_own_start(run_sc)
                if note:
                    own_start[(sc.name, label)] = note
            init_refused = run_sc.init_rate_refusals()
            refused = init_refused + senders.preference_refusals(run_sc)
            if refused and e.name is None:
                raise ValueError(refused[0])
            if refused:  # e.g. --controller=cubic on robust/start1pct: no record, the reason kept
                hint = "; --baseline_start=own runs it from its own start" if init_refused else ""
                skipped.append({"scenario": sc.name, "controller": label, "reason": refused[0] + hint})
                continue
            for seed in range(seeds if _is_random(sc) else 1):
                items.append(runner.Item(run_sc, seed, label))
                keys.append((sc.name, label, seed))
    kw = {} if ticks_per_rtt is None else {"ticks_per_rtt": int(ticks_per_rtt)}
    batches = runner.build_batches(items, resolve=senders.resolve, **kw)
    key_of = {id(it): k for it, k in zip(items, keys)}
    per_run: dict[tuple[str, str], list[dict]] = defaultdict(list)
    series: dict[tuple[str, str], dict] = {}
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=len(items), desc="simulating", unit="run", file=sys.stderr)
        except ImportError:  # pragma: no cover - tqdm is a dependency
            bar = None
    for b in batches:
        _, traj, rates = runner.run_batch(b)
        for i, it in enumerate(b.items):
            scen, label, seed = key_of[id(it)]
            tr = metrics.from_batch(traj, rates, b, i)
            m = metrics.evaluate_trace(tr, jain_last_s=metrics.JAIN_LAST_S)
            m.update(recovery_metrics(tr, it.scenario))
            m["seed"] = seed
            starts = (scen, label) in own_start or any(f.init_rate_mbps is not None for f in it.scenario.flows)
            for pf, fl in zip(m["per_flow"], it.scenario.flows):
                pf["controller"] = fl.controller
                if starts:  # the start rate the flow ran from (None: its controller's own start)
                    pf["init_rate_mbps"] = fl.init_rate_mbps
                pf["preference"] = None if fl.preference is None else list(fl.preference)
                if fl.preference_changes:
                    pf["preference_changes"] = [{"at_s": t, "preference": list(w)} for t, w in fl.preference_changes]
            per_run[(scen, label)].append(m)
            if keep_series and seed == 0:
                series[(scen, label)] = metrics.time_series(tr, series_bin_s)
        if bar is not None:
            bar.update(len(b.items))
    if bar is not None:
        bar.close()

    records = []
    for sc in scenarios:
        labels = [(_own_label(sc) if e.name is None else e.label) for e in entries]
        labels = [lab for lab in labels if (sc.name, lab) in per_run]
        avg = {lab: _average_runs(per_run[(sc.name, lab)]) for lab in labels}
        d_max = max((a["p95_owd_ms"] for a in avg.values() if not math.isnan(a["p95_owd_ms"])), default=float("nan"))
        for lab in labels:
            a = avg[lab]
            ank = (metrics.ankh(a["throughput_mbps"], a["capacity_mbps"], a["p95_owd_ms"], d_max, a["loss"])
                   if d_max > 0 and not math.isnan(a["p95_owd_ms"]) else float("nan"))
            rec = {
                "scenario": sc.name,
                "controller": lab,
                # the flows' preference when they share one (else None; each flow's is in per_flow)
                "preference": _common_preference(a["per_flow"]),
                "throughput_mbps": a["throughput_mbps"],
                "utilization": a["utilization"],
                "p95_owd_ms": a["p95_owd_ms"],
                "p95_qdelay_ms": a["p95_qdelay_ms"],
                "loss": a["loss"],
                "jain": a["jain"],
                "ankh": ank,
                "per_flow": a["per_flow"],
                "capacity_mbps": a["capacity_mbps"],
                "mean_owd_ms": a["mean_owd_ms"],
                "power": a["power"],
                "ankh_d_max_ms": d_max,
                "jain_note": a["jain_note"],
                "jain_window_s": a["jain_window_s"],
                "seeds": seeds,
                "runs": len(per_run[(sc.name, lab)]),
                "runs_note": None if _is_random(sc) else "deterministic link: one run stands for every seed",
                "duration_s": sc.duration_s,
                # the recovery and starvation measurements (recovery_metrics)
                "ramp_s": a["ramp_s"],
                "step_up_at_s": a["step_up_at_s"],
                "step_ramp_s": a["step_ramp_s"],
                "depart_at_s": a["depart_at_s"],
                "reclaim_s": a["reclaim_s"],
                "fair_at_s": a["fair_at_s"],
                "fair_until_s": a["fair_until_s"],
                "time_to_fair_s": a["time_to_fair_s"],
                "min_fair_share": a["min_fair_share"],
                # each run's headline numbers (the figures show each seed and their median)
                "per_seed": [{k: m[k] for k in PER_SEED_KEYS} for m in per_run[(sc.name, lab)]],
            }
            if sc.link.cross_traffic:  # realism: the unresponsive cross traffic the link carried
                rec["cross_mbps"] = a["cross_mbps"]
            if (sc.name, lab) in own_start:  # a baseline that did not take the scenario's start rate
                rec["start_rate_note"] = own_start[(sc.name, lab)]
            records.append(rec)
    return {"results": records, "series": series, "runs": dict(per_run), "skipped": skipped}


def format_table(records: Sequence[dict]) -> str:
    """A plain-text table of the records (one line per scenario × controller)."""
    head = ("scenario", "controller", "thr Mbps", "util", "p95 owd ms", "p95 q ms", "loss %", "Jain", "Ankh")
    rows = [head]
    for r in records:
        rows.append((r["scenario"], r["controller"], f"{r['throughput_mbps']:.2f}", f"{r['utilization']:.3f}",
                     f"{r['p95_owd_ms']:.1f}", f"{r['p95_qdelay_ms']:.1f}", f"{100 * r['loss']:.2f}",
                     f"{r['jain']:.3f}", f"{r['ankh']:.3f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def series_json(series: dict) -> dict:
    """``run_evaluation``'s ``series`` as results.json holds it: ``{scenario: {controller: {"t",
    "capacity_mbps", "throughput_mbps" [[per flow] per bin], "owd_ms" [[per flow] per bin]}}}``
    (seed 0; ``metrics.time_series``; NaN as null)."""
    out: dict[str, dict] = {}
    for (scen, label), ts in series.items():
        out.setdefault(scen, {})[label] = metrics.json_safe(
            {k: np.asarray(ts[k]).tolist() for k in ("t", "capacity_mbps", "throughput_mbps", "owd_ms")})
    return out


def write_results(report: dict, out_dir: str, meta: dict | None = None) -> str:
    """Write ``out_dir/results.json`` (the contract's records, ``series`` and ``meta``); returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.json")
    doc = {"results": metrics.json_safe(report["results"])}
    if report.get("series"):
        doc["series"] = series_json(report["series"])
    if meta:
        doc["meta"] = metrics.json_safe(meta)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return path
