"""Measures the levers of the netns delay line (nfq_delay) on a loaded and a quiet machine.

    sudo python launch/delay_levers.py --out=DIR [--reps=2] [--duration=12] [--load=pareto_smoke]

One paced 40 Mbit/s jaxcc flow (fixed:40) on pareto/fixed50 shortened to --duration seconds
(50 Mbit/s, 440 KB, 90 ms RTT: no queue, so every millisecond of one-way delay above 45 ms is the
emulator's), once per lever setting, the settings interleaved, --reps times quiet and then
--reps times with two trainings (python -m jaxcc.train --config=LOAD, restarted while the
measurement lasts) running beside it. Per run: nfq_delay's own hold error (p50/p95/max, ms;
verdict time - kernel receive stamp - 45 ms) and, independently, the receiver's p95 one-way
delay minus 45 ms, split by a replay of tbf fed with the packets' own send times into the tbf
queueing the sender's send times imply (bunched pacing on a busy machine) and what comes after
tbf (receiver wake-up). Lines of JSON to DIR/levers.jsonl, a table on stdout.
Needs the datapath (JAXCC_DATAPATH_BUILD or datapath/build) and datapath/tools/build.
"""
from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.emulation import delay, netns, runner, spec

LEVERS = {  # name -> (DelayOptions, nice of sender/receiver[, SCHED_FIFO of the receiver])
    "read,other": (delay.DelayOptions(rt=0, arrival="read"), -10),
    "read,fifo": (delay.DelayOptions(rt=10, arrival="read"), -10),      # the harness before
    "kernel,other": (delay.DelayOptions(rt=0, arrival="kernel"), -10),
    "kernel,fifo": (delay.DelayOptions(rt=10, arrival="kernel"), -10),  # the default now
    "kernel,fifo,cpu1": (delay.DelayOptions(rt=10, arrival="kernel", cpu=1), -10),
    "kernel,fifo,nice0": (delay.DelayOptions(rt=10, arrival="kernel"), 0),
    "kernel,fifo,rcvfifo": (delay.DelayOptions(rt=10, arrival="kernel"), -10, 5),
    "kernel,fifo,sndrt": (delay.DelayOptions(rt=10, arrival="kernel"), -10, 0, True),
    "kernel,fifo,sndrt,rcvfifo": (delay.DelayOptions(rt=10, arrival="kernel"), -10, 5, True),
}


def tbf_replay(log: Path, rate_mbps: float = 50.0, prop_ms: float = 45.0) -> dict:
    """Splits the receiver's one-way delay excess (above prop_ms) into the tbf queueing that
    the packets' own send times imply (a replay of tbf's token bucket, TBF_BURST_S deep, fed
    at send time + prop_ms) and what comes after tbf (receiver wake-up, softirq): p95s in ms."""
    import numpy as np
    with open(log) as fh:
        rows = list(csv.DictReader(fh))
    send = np.array([int(r["send_ts_ns"]) for r in rows], dtype=np.float64) * 1e-9
    recv = np.array([int(r["recv_ts_ns"]) for r in rows], dtype=np.float64) * 1e-9
    size = np.array([int(r["size"]) + 42 for r in rows], dtype=np.float64)  # UDP payload -> frame
    o = np.argsort(send)
    send, recv, size = send[o], recv[o], size[o]
    r = rate_mbps * 1e6 * netns.TBF_SCALE / 8
    bucket = max(2 * 1514, r * netns.TBF_BURST_S)
    tok, t_last, prev = bucket, 0.0, 0.0
    dep = np.empty_like(send)
    for i, (a, s) in enumerate(zip(send + prop_ms / 1e3, size)):
        t = max(a, prev)
        tok = min(bucket, tok + r * (t - t_last))
        t_last = t
        if tok < s:
            t += (s - tok) / r
            tok, t_last = s, t
        tok -= s
        dep[i] = prev = t
    p95 = lambda x: float(np.percentile(x, 95))
    return {"send_tbf_queue_p95": p95((dep - send) * 1e3 - prop_ms), "after_tbf_p95": p95((recv - dep) * 1e3)}


def one(name: str, cond: str, rep: int, out: Path, duration: float) -> dict:
    opts, nice, *more = LEVERS[name]
    more += [0, False][len(more):]
    sc = spec.as_scenario({"name": "pareto/fixed50-short", "duration_s": duration,
                           "link": {"bandwidth_mbps": 50.0, "buffer_bytes": 440_000, "loss": 0.0},
                           "flows": [{"rtt_ms": 90.0, "controller": "fixed:40"}]})
    d = out / f"{cond}-{rep}-{name.replace(',', '_')}"
    rec = runner.Runner(sc, ["fixed:40"], d, prefix="jxlv" + os.urandom(2).hex(), ping=False,
                        nice=nice or None, delay_opts=opts, rt_receiver=more[0], rt_sender=more[1]).run()
    dc, f = rec["delay_check"], rec["per_flow"][0]
    q1 = next(q for q in dc["per_queue"] if q["queue"] == 1)
    tq = tbf_replay(d / "flow0" / "receiver.csv")
    row = {"lever": name, "cond": cond, "rep": rep, "valid": dc["valid"], "sched": dc.get("sched"),
           "hold_p50": dc["hold_err_ms"]["p50"], "hold_p95": dc["hold_err_ms"]["p95"],
           "hold_max": dc["hold_err_ms"]["max"], "fwd_hold_p95": q1["hold_err_ms"]["p95"],
           "read_late_p95": (dc.get("read_late_ms") or {}).get("p95"),
           "rcv_p95_owd_minus_45": (f.get("p95_owd_ms") or float("nan")) - 45.0,
           "throughput_mbps": f.get("throughput_mbps"), "load1": os.getloadavg()[0], **tq}
    return row


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("out", None, "output folder (levers.jsonl, one folder per run)", flag_values=fv)
    flags.DEFINE_integer("reps", 2, "runs per lever setting, quiet and then loaded (>= 1)", flag_values=fv)
    flags.DEFINE_float("duration", 12.0, "seconds per run (> 0)", flag_values=fv)
    flags.DEFINE_string("load", "pareto_smoke", "the training config of the two loads (jaxcc.train --config)",
                        flag_values=fv)
    flags.DEFINE_string("levers", ";".join(LEVERS), "semicolon list of lever names: " + "; ".join(LEVERS),
                        flag_values=fv)
    flags.mark_flag_as_required("out", flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """The measurement with parsed flags ``fv`` (``define_flags``); returns the exit status."""
    names = fv.levers.split(";")
    unknown = [n for n in names if n not in LEVERS]
    if unknown:
        raise ValueError(f"--levers: {unknown} not known; choose from {'; '.join(LEVERS)}")
    if fv.reps < 1:
        raise ValueError(f"--reps={fv.reps}: must be >= 1")
    if not fv.duration > 0:
        raise ValueError(f"--duration={fv.duration}: must be > 0")
    out = Path(fv.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []

    def run_phase(cond):
        for rep in range(fv.reps):
            order = names if rep % 2 == 0 else names[::-1]
            for name in order:
                row = one(name, cond, rep, out, fv.duration)
                rows.append(row)
                with open(out / "levers.jsonl", "a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)

    run_phase("quiet")
    loads = []
    for i in range(2):
        py, wd = shlex.quote(sys.executable), shlex.quote(f"{out}/train{i}")  # this interpreter
        loop = (f"while true; do {py} -m jaxcc.train --config={shlex.quote(fv.load)} "
                f"--workdir={wd} --no_progress >/dev/null 2>&1; rm -rf {wd}; done")
        loads.append(subprocess.Popen(["bash", "-c", loop], start_new_session=True))
    try:
        time.sleep(20)   # the trainings are up (JAX compiling keeps both cores busy already)
        run_phase("loaded")
    finally:
        for p in loads:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
    print(f"{'lever':26s} {'cond':7s} {'hold p50':>8s} {'hold p95':>8s} {'hold max':>8s} "
          f"{'rcv p95-45':>10s} {'tbf q p95':>9s} {'after p95':>9s} {'valid':>6s}")
    for r in sorted(rows, key=lambda r: (r["lever"], r["cond"], r["rep"])):
        print(f"{r['lever']:26s} {r['cond']:7s} {r['hold_p50']:8.2f} {r['hold_p95']:8.2f} "
              f"{r['hold_max']:8.1f} {r['rcv_p95_owd_minus_45']:10.2f} {r['send_tbf_queue_p95']:9.2f} "
              f"{r['after_tbf_p95']:9.2f} {str(r['valid']):>6s}")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--out=DIR", uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
