"""The two sides of a case: the simulator (all cases of one controller in one compiled batch,
``simulate``) and the reference (the kernel's TCP over netns, or ns-3; ``run_reference``), and
the whole sweep (``run_sweep``)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import secrets
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxcc.evaluation import metrics
from jaxcc.fidelity.cases import (Case, KNOWN_LIMITATIONS, Limitation, PASS_RATE_TARGET, TOLERANCES,
                                  draw_cases, sim_controller)
from jaxcc.fidelity.compare import compare_case, limitation_counts, limited_fraction, pass_rates


# ----------------------------------------------------------------------------- the two sides

def _trim(tr: metrics.Trace, n: int) -> metrics.Trace:
    """The first ``n`` ticks of a trace (what a run of that length gives: the scan is causal)."""
    kw = {f.name: (getattr(tr, f.name)[:n] if isinstance(getattr(tr, f.name), np.ndarray) else getattr(tr, f.name))
          for f in dataclasses.fields(tr)}
    return metrics.Trace(**kw)


def simulate(cases: Sequence[Case], *, ticks_per_rtt: int | None = None, granular: Sequence[str] = (),
             hystart: bool = False, feedback_slots: int | None = None, rto_min: float = 0.0) -> dict[str, dict]:
    """Every case in the simulator, one compiled batch per controller; case name -> record
    (the results.json record's fields, as ``jaxcc.evaluate`` writes them for one seed).
    ``granular`` names the packet-granular effects (``jaxcc.sim.granular.EFFECTS``) the links
    get; none by default (the bare model).  Each link's draws are keyed by its place in the batch.
    ``hystart`` turns on the ``cubic`` flows' HyStart delay detector (``CubicParams.hystart``,
    ``jaxcc.baselines.cubic``; off in the simulator's ``cubic``, on by default in Linux's and
    ns-3's CUBIC).  ``feedback_slots``: the ring slots a tick's feedback is spread over
    (``LinkParams.feedback_slots``; default the model's).  ``rto_min`` > 0 gives the ``cubic`` and
    ``reno`` flows a retransmission timeout with that floor in seconds (``TimeoutParams``,
    ``jaxcc.baselines.recovery.timeout``; 0, the default: none).

    The runner compiles one program per tick count; a case of ``n`` ticks is run for the group's
    longest tick count (its flows still stop at the case's end) and its trace cut back to ``n``
    ticks, which is exactly the run of ``n`` ticks.
    """
    from jaxcc import senders
    from jaxcc.sim import granular as gr
    from jaxcc.sim import links, runner

    tpr = links.DEFAULT_TICKS_PER_RTT if ticks_per_rtt is None else int(ticks_per_rtt)
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[c.controller].append(c)
    out = {}
    for ctrl, group in groups.items():
        dts = [min(f.rtt_ms for f in c.scenario.flows) / 1e3 / tpr for c in group]
        ticks = [int(math.ceil(c.scenario.duration_s / dt)) for c, dt in zip(group, dts)]
        longest = max(ticks)
        items = [runner.Item(dataclasses.replace(c.scenario, duration_s=(longest - 0.5) * dt), 0, c.name)
                 for c, dt in zip(group, dts)]
        batches = runner.build_batches(items, resolve=senders.resolve, ticks_per_rtt=tpr)
        if len(batches) != 1:  # pragma: no cover - the padding above makes every tick count equal
            raise RuntimeError(f"{ctrl}: {len(batches)} batches, expected one")
        b = batches[0]
        if feedback_slots is not None:
            b = dataclasses.replace(b, params=b.params.replace(feedback_slots=int(feedback_slots)))
        if granular:
            b = dataclasses.replace(b, params=b.params.replace(granular=gr.batch(granular, range(len(b.items)))))
        if rto_min > 0:
            b = with_timeouts(b, rto_min)
        if hystart:
            b = dataclasses.replace(b, cparams=b.cparams._replace(
                cubic=b.cparams.cubic._replace(hystart=np.ones_like(b.cparams.cubic.hystart))))
        _, traj, rates = runner.run_batch(b)
        own = {c.name: (c, n) for c, n in zip(group, ticks)}
        for i, it in enumerate(b.items):
            case, n = own[it.label]
            tr = _trim(metrics.from_batch(traj, rates, b, i), n)
            m = metrics.evaluate_trace(tr)
            for pf, fl in zip(m["per_flow"], case.scenario.flows):
                pf.update(controller=fl.controller, rtt_ms=fl.rtt_ms, start_s=fl.start_s, stop_s=fl.stop_s,
                          impl="sim")
            out[case.name] = {"scenario": case.name, "controller": sim_controller(case.controller, case.params),
                              "duration_s": case.scenario.duration_s, **m}
    return out


def with_timeouts(batch, rto_min: float):
    """``batch`` (a ``jaxcc.sim.runner.Batch``) with every flow's retransmission timer floor set to
    ``rto_min`` seconds (``TimeoutParams``; only ``cubic`` and ``reno`` read it)."""
    t = batch.cparams.timeout
    return dataclasses.replace(batch, cparams=batch.cparams._replace(
        timeout=t._replace(rto_min=np.full_like(t.rto_min, rto_min))))


KERNEL_NAMES = {"cubic": "kernel:cubic", "reno": "kernel:reno", "bbr": "kernel:bbr"}


def reference_controller(case: Case, reference: str) -> str:
    """The reference's name of a case's controller (the kernel's TCP for cubic/reno/bbr)."""
    name = sim_controller(case.controller, case.params)
    return KERNEL_NAMES.get(name, name) if reference == "kernel" else name


def delay_valid(rec: dict) -> bool:
    """The emulator's own verdict on its delay line: only ``delay_check.valid`` False is invalid
    (absent or None, not measured, counts as valid)."""
    return (rec.get("delay_check") or {}).get("valid") is not False


def _run_kernel(case: Case, out_dir: Path, prefix: str | None) -> dict:
    from jaxcc.emulation.runner import Runner

    ctrl = reference_controller(case, "kernel")
    spec = case.scenario.with_controller(ctrl)
    rec = Runner(spec, [ctrl] * case.num_flows, out_dir, prefix=prefix, ping=False, impl="probe").run()
    for f in rec["per_flow"]:
        if f.get("impl") == "iperf3":
            try:
                with open(out_dir / f"flow{f['flow']}" / "iperf3_client.json") as fh:
                    f["mss_bytes"] = json.load(fh)["start"]["tcp_mss_default"]
            except (OSError, ValueError, KeyError):
                pass
    return rec


def _run_ns3(case: Case, out_dir: Path, seed: int) -> dict:
    from jaxcc.emulation import ns3

    return ns3.run_scenario(case.scenario, [reference_controller(case, "ns3")] * case.num_flows, out_dir, seed=seed)


def run_reference(case: Case, reference: str, out_dir: Path, *, prefix: str | None = None, seed: int = 0) -> dict:
    """The case on the reference; an emulated run its self-check marks invalid is re-run once.

    Returns the record with ``attempts`` and ``valid`` added (the last run's)."""
    for attempt in (1, 2):
        d = out_dir / f"try{attempt}"
        rec = _run_kernel(case, d, prefix) if reference == "kernel" else _run_ns3(case, d, seed)
        rec["attempts"], rec["valid"] = attempt, delay_valid(rec)
        if rec["valid"] or reference != "kernel":
            return rec
    return rec


def lateness(rec: dict) -> dict | None:
    """The delay tool's lateness over all its queues (``rec["delay_tool"]``): packets, the
    packet-weighted mean and the largest mean and max lateness (µs); with the emulator's
    self-check, also its p95 and max hold error (ms) and reasons (``rec["delay_check"]``)."""
    qs = [q for q in ((rec.get("delay_tool") or {}).get("queues") or []) if q.get("packets")]
    if not qs:
        return None
    n = sum(q["packets"] for q in qs)
    out = {"packets": n, "mean_late_us": sum(q["packets"] * q.get("mean_late_us", 0.0) for q in qs) / n,
           "worst_queue_mean_late_us": max(q.get("mean_late_us", 0.0) for q in qs),
           "max_late_us": max(q.get("max_late_us", 0.0) for q in qs),
           "dropped_full": sum(q.get("dropped_full", 0) for q in qs)}
    check = rec.get("delay_check") or {}
    hold = check.get("hold_err_ms") or {}
    if hold:
        out.update(hold_err_p95_ms=hold.get("p95"), hold_err_max_ms=hold.get("max"), valid=check.get("valid"),
                   reasons=check.get("reasons"))
    return out


def _strip_series(rec: dict) -> dict:
    r = dict(rec)
    drop = ("series", "owd_series", "sender_summary", "receiver_summary")
    r["per_flow"] = [{k: v for k, v in f.items() if k not in drop} for f in rec.get("per_flow", [])]
    return r


def stored_references(path: str | os.PathLike, reference: str, cases: Sequence[Case], repeats: int) -> dict:
    """The reference runs of an earlier sweep's ``fidelity.json`` (``--references``), case name ->
    list of records, for exactly ``cases``: the same reference, each case present with the same
    scenario and ``repeats`` runs (a reference run does not depend on the simulator's settings, so
    a sweep that only changes those, e.g. ``--ticks_per_rtt``, can reuse them)."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if doc.get("reference") != reference:
        raise ValueError(f"--references={path}: a sweep against {doc.get('reference')!r}, not {reference!r}")
    stored = {r["case"]: r for r in doc.get("records", [])}
    out = {}
    for case in cases:
        r = stored.get(case.name)
        if r is None:
            raise ValueError(f"--references={path}: no case {case.name} (draw it with the same "
                             f"--controllers, --cases and --seed)")
        if r["scenario"] != metrics.json_safe(case.scenario.to_dict()):
            raise ValueError(f"--references={path}: case {case.name} was drawn with another scenario")
        runs = r["reference"] if isinstance(r["reference"], list) else [r["reference"]]
        if len(runs) != repeats:
            raise ValueError(f"--references={path}: case {case.name} has {len(runs)} reference runs, "
                             f"--repeats={repeats}")
        out[case.name] = runs
    return out


def check_feedback_slots(n: int | None) -> None:
    """``--feedback_slots`` is None (the model's) or in ``core.FEEDBACK_SLOTS_RANGE``; else a ValueError."""
    from jaxcc.sim import core

    lo, hi = core.FEEDBACK_SLOTS_RANGE
    if n is not None and not lo <= n <= hi:
        raise ValueError(f"--feedback_slots={n}: must be in [{lo}, {hi}] (ring slots a tick's feedback is spread over)")


RTO_MIN_RANGE = (0.0, 10.0)  # --rto_min, seconds


def check_rto_min(x: float) -> None:
    """``--rto_min`` is in ``RTO_MIN_RANGE`` (0: no timeouts); else a ValueError."""
    lo, hi = RTO_MIN_RANGE
    if not lo <= x <= hi:
        raise ValueError(f"--rto_min={x:g}: must be in [{lo:g}, {hi:g}] s (0: no retransmission timeouts)")


def run_sweep(reference: str, controllers: Sequence[str], n: int, seed: int, out_dir: str | os.PathLike, *,
              prefix: str | None = None, log=sys.stderr, table: dict[str, Limitation] | None = None,
              repeats: int = 1, ticks_per_rtt: int | None = None, references: str | None = None,
              granular: Sequence[str] = (), hystart: bool = False, feedback_slots: int | None = None,
              rto_min: float = 0.0) -> dict:
    """Draw, simulate (at ``ticks_per_rtt``, default the simulator's; with the ``granular``
    effects, default none; ``hystart``: CUBIC's HyStart on; ``feedback_slots``: default the
    model's; ``rto_min``: the window-based flows' retransmission timeout, 0 none; ``simulate``),
    run the reference
    (``repeats`` times per case; compared with the median of the valid runs) or take its runs from
    an earlier sweep's ``fidelity.json`` (``references``: ``stored_references``), compare; writes
    ``out_dir/fidelity.json``; returns the report."""
    from jaxcc.sim import core, links

    if repeats < 1:
        raise ValueError(f"--repeats: must be >= 1, got {repeats}")
    if ticks_per_rtt is not None and ticks_per_rtt < 1:
        raise ValueError(f"--ticks_per_rtt: must be >= 1, got {ticks_per_rtt}")
    check_feedback_slots(feedback_slots)
    check_rto_min(rto_min)
    out = Path(out_dir)
    cases = draw_cases(controllers, n, seed, reference)
    stored = stored_references(references, reference, cases, repeats) if references else None
    t0 = time.time()
    sim = simulate(cases, ticks_per_rtt=ticks_per_rtt, granular=granular, hystart=hystart,
                   feedback_slots=feedback_slots, rto_min=rto_min)
    print(f"[fidelity] simulated {len(cases)} cases in {time.time() - t0:.1f} s", file=log)
    prefix = prefix or "jxekf" + secrets.token_hex(2)
    verdicts, records = [], []
    for k, case in enumerate(cases):
        t1 = time.time()
        runs = stored[case.name] if stored else [
            run_reference(case, reference, out / "runs" / case.name / (f"r{r}" if repeats > 1 else ""),
                          prefix=prefix, seed=seed + r)
            for r in range(repeats)]
        ok = [x for x in runs if x["valid"]]
        v = compare_case(case, sim[case.name], ok, reference, valid=bool(ok), table=table)
        v["attempts"] = sum(x.get("attempts", 1) for x in runs)     # reference runs, re-runs included
        v["reruns"] = sum(x.get("attempts", 1) - 1 for x in runs)   # runs repeated for an invalid delay check
        v["lateness"] = lateness(runs[-1])
        verdicts.append(v)
        records.append({"case": case.name, "scenario": case.scenario.to_dict(), "sim": _strip_series(sim[case.name]),
                        "reference": _strip_series(runs[0]) if repeats == 1 else [_strip_series(x) for x in runs]})
        print(f"[fidelity] {k + 1}/{len(cases)} {case.name}: {v['verdict']} ({time.time() - t1:.0f} s)", file=log)
    report = {"reference": reference, "controllers": list(controllers), "cases_per_controller": n, "seed": seed,
              "repeats": repeats,
              "ticks_per_rtt": links.DEFAULT_TICKS_PER_RTT if ticks_per_rtt is None else int(ticks_per_rtt),
              "granular": list(granular), "hystart": bool(hystart),
              "feedback_slots": core.FEEDBACK_SLOTS if feedback_slots is None else int(feedback_slots),
              "rto_min": float(rto_min),
              "references_from": os.path.abspath(references) if references else None,
              "tolerances": TOLERANCES, "pass_rate_target": PASS_RATE_TARGET,
              "limitations": {name: {"metrics": lim.metrics, "controllers": lim.controllers, "why": lim.why,
                                     "references": lim.references}
                              for name, lim in (KNOWN_LIMITATIONS if table is None else table).items()},
              "limitation_counts": limitation_counts(verdicts, table), "limited_fraction": limited_fraction(verdicts),
              "pass_rates": pass_rates(verdicts), "verdicts": verdicts, "records": records,
              "wall_s": round(time.time() - t0, 1)}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "fidelity.json", "w", encoding="utf-8") as fh:
        json.dump(metrics.json_safe(report), fh, indent=1)
    return report
