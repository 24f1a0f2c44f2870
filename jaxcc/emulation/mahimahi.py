"""Mahimahi runs (``launch/mahimahi_run.sh``): the plan the script sources, and its results.

The script does the running (Mahimahi, receivers, senders); Python does what needs the scenario
parser and the results contract:

* ``plan``: ``OUT/plan.json`` + ``OUT/plan.sh`` (shell variables: the uplink trace, buffer,
  loss, duration, and per flow its one-way delay, start, duration and controller), writing a
  trace for constant and step links (``write_trace``); trace scenarios use their file as is;
* ``collect``: ``OUT/results.json`` from a finished run, refusing (``EmulationError``, nothing
  written) a run whose sender exited non-zero or whose flow delivered nothing;
* ``merge``: one ``results.json`` from the runs of a controller list (one Mahimahi run each),
  Ankh's number relative to the controllers compared, as ``python -m jaxcc.emulate`` does.
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from jaxcc.emulation import results
from jaxcc.emulation.host import EmulationError
from jaxcc.emulation.runner import FlowRun
from jaxcc.emulation.spec import assign_controllers, flow_goals, flow_preferences, rate_schedule, trace_schedule
from jaxcc.scenarios import Scenario
from jaxcc.units import PACKET_BYTES


def write_trace(sched: list[tuple[float, float]], duration_s: float,
                path: str | os.PathLike) -> None:
    """A Mahimahi trace for a rate schedule: evenly spread 1500-byte opportunities per ms.

    The file's last stamp is the duration in ms, so mm-link's loop period is the scenario.
    """
    total_ms = max(int(round(duration_s * 1000)), 1)
    lines, credit, seg = [], 0.0, 0
    for ms in range(total_ms):
        t = ms / 1000.0
        while seg + 1 < len(sched) and sched[seg + 1][0] <= t + 1e-9:
            seg += 1
        credit += sched[seg][1] * 1e6 / 8 / PACKET_BYTES / 1000.0   # packets this ms
        while credit >= 1.0:
            lines.append(ms + 1)
            credit -= 1.0
    if not lines or lines[-1] != total_ms:
        lines.append(total_ms)
    Path(path).write_text("\n".join(map(str, lines)) + "\n")


def plan(spec: Scenario, controller: str | None, out: Path, trace_bin_s: float | None = None) -> Path:
    """Writes out/plan.json + out/plan.sh (sourced by launch/mahimahi_run.sh) and a trace.

    ``controller`` is one controller (the script runs a list one controller at a time).
    """
    out.mkdir(parents=True, exist_ok=True)
    link = spec.link
    if link.trace is not None:
        trace = os.path.abspath(link.trace)   # used as is, like mm-link
    else:
        trace = str((out / "link.trace").resolve())
        write_trace(rate_schedule(spec, trace_bin_s), spec.duration_s, trace)
    ctrls = assign_controllers(spec, controller)
    for i, (pref, changes) in enumerate(flow_preferences(spec, ctrls)):
        if pref is not None or changes:
            raise EmulationError(f"{spec.name}.flows[{i}].preference: not passed under Mahimahi "
                                 "(launch/mahimahi_run.sh) yet; python -m jaxcc.emulate runs it")
    for i, (goal, target) in enumerate(flow_goals(spec, ctrls)):
        if goal is not None or target is not None:
            raise EmulationError(f"{spec.name}.flows[{i}].{'goal' if goal is not None else 'target'}: not passed "
                                 "under Mahimahi (launch/mahimahi_run.sh) yet; python -m jaxcc.emulate runs it")
    doc = {"spec": spec.to_dict(), "controllers": ctrls, "trace": trace}
    (out / "plan.json").write_text(json.dumps(doc, indent=1))
    sh = [f"TRACE={shlex.quote(trace)}", f"BUFFER_BYTES={int(link.buffer_bytes)}",
          f"LOSS={link.loss:.6f}", f"DURATION={spec.duration_s:.3f}",
          f"NFLOWS={len(spec.flows)}"]
    for i, (f, c) in enumerate(zip(spec.flows, ctrls)):
        sh += [f"FLOW{i}_DELAY_MS={f.rtt_ms / 2:.3f}", f"FLOW{i}_START={f.start_s:.3f}",
               f"FLOW{i}_DUR={f.stop_s - f.start_s:.3f}",
               f"FLOW{i}_CTRL={shlex.quote(c)}"]
    (out / "plan.sh").write_text("\n".join(sh) + "\n")
    return out / "plan.sh"


def _failure(fl: FlowRun) -> str | None:
    """Why a finished flow has no valid result (None if it has one)."""
    rc = fl.result.get("client_rc")
    if rc != 0:
        what = "iperf3" if fl.kind == "iperf3" else "the sender"
        return (f"flow {fl.index} ({fl.controller}): {what} exited with status "
                f"{'unknown (no client_rc)' if rc is None else rc}, see {fl.dir}/sender.stderr")
    if fl.result.get("error"):
        return f"flow {fl.index} ({fl.controller}): {fl.result['error']}"
    if not fl.result.get("throughput_mbps"):
        return f"flow {fl.index} ({fl.controller}): no data delivered (0 Mbit/s)"
    return None


def collect(out: Path) -> dict[str, Any]:
    """results.json for a finished launch/mahimahi_run.sh run (flow dirs out/flowN).

    Raises:
      EmulationError: a sender exited non-zero or a flow has no data; nothing is written.
    """
    doc = json.loads((out / "plan.json").read_text())
    spec, ctrls = doc["spec"], doc["controllers"]
    flows = []
    for i, (f, c) in enumerate(zip(spec["flows"], ctrls)):
        fl = FlowRun(i, c, f["rtt_ms"], f["start_s"], f["stop_s"], out / f"flow{i}",
                     kind="iperf3" if c.startswith("kernel:") else "jaxcc")
        fl.result.update(results.collect_flow(fl))
        rc = out / f"flow{i}" / "client_rc"
        if rc.exists():
            fl.result["client_rc"] = int(rc.read_text().strip() or -1)
        flows.append(fl)
    failed = [m for m in map(_failure, flows) if m]
    if failed:
        raise EmulationError("the Mahimahi run failed, no results written: " + "; ".join(failed))
    sched = trace_schedule(doc["trace"], spec["duration_s"], 0.1)
    rec = results.make_record(spec["name"], spec["duration_s"], ctrls, flows, sched, None, [],
                              emulator="mahimahi")
    rec["duration_s"] = spec["duration_s"]
    results.fill_ankh([rec])
    results.write_results(out, [rec])
    return rec


def merge(out: Path, run_dirs: list[Path]) -> list[dict[str, Any]]:
    """OUT/results.json holding the records of several collected runs (a controller list)."""
    records: list[dict[str, Any]] = []
    for d in run_dirs:
        got = results.read_json(Path(d) / "results.json")
        if not got or not isinstance(got.get("results"), list):
            raise EmulationError(f"{d}/results.json missing or not a results file (run failed?)")
        records += got["results"]
    for name in dict.fromkeys(r["scenario"] for r in records):
        results.fill_ankh([r for r in records if r["scenario"] == name])
    results.write_results(out, records)
    return records
