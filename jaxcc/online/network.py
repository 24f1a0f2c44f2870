"""Where online fine-tuning runs (Pareto §IV, Algorithm 4): one scenario on netns, Mahimahi or
the simulator, its policy senders streaming to a learner, started without blocking the caller.

    h = start("netns" | "mahimahi" | "sim", scenario, minutes=M, policy_path=P,
              learner="unix:/abs/path", sender_args=["--learner-timeout-s=5"], out_dir=D,
              learner_key=None)          # or a key file: every sender gets --learner-key=FILE
    ... the learner runs in the caller's process meanwhile ...
    run = h.wait()                        # the run result
    window_record(run, t0, t1)            # {throughput_mbps, utilization, p95_owd_ms, loss, jain}

* ``netns``: ``jaxcc.emulation.runner.Runner`` (a fresh three-namespace link) in a child process
  (``python -m jaxcc.online.network``: its deadlines never wait on the learner's GIL, and
  the senders outlive a learner killed with SIGKILL); every
  ``policy:*`` flow (the scenario's non-kernel flows, ``spec.assign_controllers``) runs
  ``policy_path`` with ``--learner=ADDR`` (unless ``sender_args`` already names it) and
  ``sender_args``; ``kernel:cubic`` / ``kernel:bbr``
  flows stay cross traffic (iperf3). A ``unix:`` address is a filesystem socket, so the senders
  in their namespace reach a learner in the root namespace. A ``tcp:`` address needs
  ``learner_key`` (the senders then authenticate, protocol 2; ``jaxcc.online.auth``).
* ``mahimahi``: ``launch/mahimahi_run.sh`` as a child process, the same arguments through its
  ``--sender-args-file``; refused with one line where Mahimahi is not installed.
* ``sim``: ``python -m jaxcc.online.simnet`` as a child process (the simulator behind the
  same socket protocol; ``speed`` simulated seconds per wall second).

The scenario lasts ``minutes`` (``spec.with_duration``: flows that ran to its end run to the new
end). ``window_record`` is the usual record over a time window (seconds since the scenario's
start) from the per-flow logs: the simulator's per-tick trace (``jaxcc.evaluation.metrics``' definitions)
or, in emulation, each jaxcc flow's per-packet receiver log (goodput of the bytes received in the
window, byte-weighted p95 one-way delay, loss from the sequence numbers sent in it; the packets'
clock is put on the scenario's by the run's start, or under Mahimahi by the flow's first packet)
and each iperf3 flow's 0.1 s intervals; Jain's index over the flows active for a quarter of the window
(``metrics.jain_of_active``).
"""
from __future__ import annotations

import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import signal
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from jaxcc import units
from jaxcc.evaluation import metrics
from jaxcc.emulation import results
from jaxcc.emulation import spec as emu_spec
from jaxcc.emulation.host import EmulationError
from jaxcc.scenarios import Scenario

EMULATORS = ("netns", "mahimahi", "sim")
REPO = Path(__file__).resolve().parents[2]


class Handle:
    """A started run (a child process): ``done()`` without blocking, ``wait()`` for the run
    result, ``stop()``, ``pid``. The network outlives a learner killed with SIGKILL."""

    def __init__(self, emulator: str, out_dir: Path, *, proc: subprocess.Popen, collect):
        self.emulator, self.out_dir = emulator, out_dir
        self._proc, self._collect = proc, collect
        self._result: dict[str, Any] | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def done(self) -> bool:
        return self._proc.poll() is not None

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """The run result (raises EmulationError when the run failed; TimeoutError on timeout)."""
        if self._result is not None:
            return self._result
        try:
            rc = self._proc.wait(timeout)
        except subprocess.TimeoutExpired as e:
            raise TimeoutError(f"{self.emulator} run still going after {timeout} s") from e
        if rc != 0:
            log = self.out_dir / "run.stderr"
            err = log.read_text()[-2000:].strip() if log.exists() else ""
            raise EmulationError(f"{self.emulator} run exited with status {rc}: {err}")
        self._result = self._collect()
        return self._result

    def stop(self) -> None:
        """Ends the run (SIGTERM: the netns harness removes its link; then SIGKILL)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def start(emulator: str, scenario: Scenario, *, minutes: float, policy_path: str, learner: str | None,
          sender_args: list[str] | tuple[str, ...] = (), out_dir: str | os.PathLike, prefix: str | None = None,
          speed: float = 1.0, verbose: bool = False, learner_key: str | None = None, seed: int = 0) -> Handle:
    """Starts ``scenario`` for ``minutes`` on ``emulator`` (module docstring); returns at once.

    ``learner_key``: a key file (``--learner-key=FILE`` for every sender, unless ``sender_args``
    already names one); required when the learner's address is ``tcp:``.
    ``seed``: the simulator's link seed (``sim`` only: random capacity forms and realism draws;
    the emulators draw the link with seed 0, ``jaxcc.emulation.spec.rate_schedule``).

    Raises:
      EmulationError: an unknown emulator, a bad duration, a policy file that cannot be read, a
        bad key file or a ``tcp:`` learner without one, or (mahimahi) Mahimahi not installed —
        one line naming it.
    """
    if emulator not in EMULATORS:
        raise EmulationError(f"--emulator={emulator}: expected one of {', '.join(EMULATORS)}")
    if not os.path.isfile(policy_path):
        raise EmulationError(f"--checkpoint policy {policy_path}: no such file")
    policy_path = os.path.abspath(policy_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sc = emu_spec.with_duration(emu_spec.as_scenario(scenario), float(minutes) * 60.0)
    scen_file = out / "scenario.json"
    scen_file.write_text(json.dumps(sc.to_dict(), indent=1))
    args = [str(a) for a in sender_args]
    given = [a.split("=", 1)[1] for a in args if a.startswith("--learner=")]
    if learner is not None and given and any(g != learner for g in given):
        raise EmulationError(f"sender_args: --learner={given[0]} differs from learner={learner}")
    if learner is not None and not given:
        args = [f"--learner={learner}"] + args
    keys = [a.split("=", 1)[1] for a in args if a.startswith("--learner-key=")]
    if learner_key is not None and not keys:
        keys = [os.path.abspath(learner_key)]
        args.append(f"--learner-key={keys[0]}")
    for k in keys[:1]:  # checked here, before anything starts (the senders check it again)
        from jaxcc.online import auth
        try:
            auth.load_key(k, "--learner-key")
        except ValueError as e:
            raise EmulationError(str(e)) from None
    addr = learner if learner is not None else (given[0] if given else None)
    if addr is not None and addr.startswith("tcp:") and not keys:
        raise EmulationError(f"learner {addr}: a tcp: learner link must be authenticated; give learner_key "
                             "(--learner-key=FILE for the senders)")
    if emulator == "sim":
        return _start_sim(sc, scen_file, policy_path, args, out, speed, seed)
    if emulator == "mahimahi":
        return _start_mahimahi(sc, scen_file, policy_path, args, out)
    return _start_netns(sc, scen_file, policy_path, args, out, prefix, verbose)


def _start_sim(sc, scen_file: Path, policy_path: str, args: list[str], out: Path, speed: float,
               seed: int) -> Handle:
    cmd = [sys.executable, "-m", "jaxcc.online.simnet", f"--scenario-file={scen_file}",
           f"--policy={policy_path}", f"--speed={speed:g}", f"--seed={int(seed)}", f"--out={out / 'sim'}", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(out / "run.stderr", "w"), env=_env())

    def collect():
        run = json.loads((out / "sim" / "simnet.json").read_text())
        return {**run, "out_dir": str(out)}

    return Handle("sim", out, proc=proc, collect=collect)


def _start_netns(sc, scen_file: Path, policy_path: str, args: list[str], out: Path, prefix: str | None,
                 verbose: bool) -> Handle:
    cmd = [sys.executable, "-m", "jaxcc.online.network", f"--scenario-file={scen_file}",
           f"--policy={policy_path}", f"--out={out / 'netns'}", *[f"--sender-arg={a}" for a in args]]
    if prefix:
        cmd.append(f"--prefix={prefix}")
    if verbose:
        cmd.append("--verbose")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(out / "run.stderr", "w"), env=_env())

    def collect():
        return json.loads((out / "netns" / "run.json").read_text())

    return Handle("netns", out, proc=proc, collect=collect)


def run_netns(sc: Scenario, policy_path: str, out: Path, sender_args: list[str], prefix: str | None = None,
              verbose: bool = False) -> dict[str, Any]:
    """One netns run (what ``start("netns")``'s child process does): the record of
    ``runner.Runner`` plus what window records need (the scenario's start on the packets' clock,
    the capacity schedule); OUT/results.json and OUT/run.json."""
    from jaxcc.emulation import runner   # needs the datapath only here

    ctrls = emu_spec.assign_controllers(sc, f"policy:{policy_path}")
    mono_to_wall = time.time() - time.monotonic()
    rec = runner.Runner(sc, ctrls, out, prefix=prefix, verbose=verbose, sender_args=sender_args).run()
    t0 = (results.read_json(out / "tbf_samples.json") or {}).get("t0")
    rec.update({"emulator": "netns", "duration_s": sc.duration_s, "out_dir": str(out),
                "capacity_schedule": emu_spec.rate_schedule(sc),
                "t0_wall_s": None if t0 is None else t0 + mono_to_wall})
    results.fill_ankh([rec])
    results.write_results(out, [rec])
    tmp = out / "run.json.tmp"
    tmp.write_text(json.dumps(metrics.json_safe(rec), default=str))
    os.replace(tmp, out / "run.json")
    return rec


def _env() -> dict[str, str]:
    """The environment of a child run: this checkout first on PYTHONPATH, and this interpreter as
    the launch scripts' ``JAXCC_PYTHON`` (launch/mahimahi_run.sh plans and collects with it)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "JAXCC_PYTHON": sys.executable}


def mahimahi_missing() -> str | None:
    """Why Mahimahi cannot run here (None when mm-link, mm-delay and mm-loss are installed)."""
    gone = [t for t in ("mm-link", "mm-delay", "mm-loss") if shutil.which(t) is None]
    return f"Mahimahi is not installed ({', '.join(gone)} not found; setup/install_mahimahi.sh)" if gone else None


def _start_mahimahi(sc, scen_file: Path, policy_path: str, args: list[str], out: Path) -> Handle:
    why = mahimahi_missing()
    if why:
        raise EmulationError(f"--emulator=mahimahi: {why}")
    args_file = out / "sender_args.txt"
    args_file.write_text("".join(a + "\n" for a in args))
    cmd = ["bash", str(REPO / "launch" / "mahimahi_run.sh"), f"--scenario-file={scen_file}",
           f"--controller=policy:{policy_path}", f"--out={out / 'mahimahi'}", f"--sender-args-file={args_file}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(out / "run.stderr", "w"), env=_env())

    def collect():
        doc = results.read_json(out / "mahimahi" / "results.json") or {}
        (rec,) = doc.get("results") or [None]
        if rec is None:
            raise EmulationError(f"{out / 'mahimahi'}/results.json missing (see {out}/run.stderr)")
        plan = json.loads((out / "mahimahi" / "plan.json").read_text())
        rec.update({"emulator": "mahimahi", "out_dir": str(out / "mahimahi"), "t0_wall_s": None,
                    "capacity_schedule": emu_spec.trace_schedule(plan["trace"], sc.duration_s, 0.1)})
        return rec

    return Handle("mahimahi", out, proc=proc, collect=collect)


# ----------------------------------------------------------------------------- window records

def window_record(run: dict[str, Any], t0: float, t1: float) -> dict[str, Any]:
    """{throughput_mbps, utilization, p95_owd_ms, loss, jain} over (t0, t1] s of a run result
    (``Handle.wait()``); see the module docstring for the definitions.

    Raises:
      ValueError: an empty window, or an emulation run without the logs it needs.
    """
    if not t1 > t0:
        raise ValueError(f"window: t1 ({t1}) must be after t0 ({t0})")
    if run.get("emulator") == "sim":
        from jaxcc.online import simnet
        return _sim_window(simnet.trace_of(run), (float(t0), float(t1)))
    return _emu_window(run, float(t0), float(t1))


def _sim_window(tr: metrics.Trace, window: tuple[float, float]) -> dict[str, Any]:
    lm = metrics.link_metrics(tr, window)
    jain = 1.0 if tr.num_flows == 1 else metrics.jain_over(tr, window)[0]
    return {"throughput_mbps": lm["throughput"] / units.MBPS, "utilization": lm["utilization"],
            "p95_owd_ms": lm["p95_owd"] * 1e3, "loss": lm["loss"], "jain": jain, "window_s": list(window)}


def _receiver_packets(path: Path, flow: int, wall0: float | None, start_s: float) -> dict[str, np.ndarray]:
    """``_read_receiver_packets``, each log read once (a first and a last minute read one file)."""
    return _read_receiver_packets(str(path), os.stat(path).st_mtime_ns, flow, wall0, start_s)


@functools.lru_cache(maxsize=16)
def _read_receiver_packets(path: str, mtime_ns: int, flow: int, wall0: float | None,
                           start_s: float) -> dict[str, np.ndarray]:
    """One jaxcc flow's receiver log: per packet seq, size, send and receive time (s since the
    scenario's start), one-way delay (s); duplicates left out. ``wall0``: the scenario's start in
    CLOCK_REALTIME seconds (the packets' clock); None (Mahimahi, where the harness does not see
    the start): the flow's first packet left at its ``start_s``."""
    seq, size, ts, tr, owd = [], [], [], [], []
    w0 = 0.0 if wall0 is None else wall0
    with open(path) as f:
        for row in csv.DictReader(f):
            if int(row["flow"]) != flow or int(row.get("dup") or 0):
                continue
            seq.append(int(row["seq"]))
            size.append(float(row["size"]))
            ts.append(int(row["send_ts_ns"]) * 1e-9 - w0)
            tr.append(int(row["recv_ts_ns"]) * 1e-9 - w0)
            owd.append(float(row["owd_ms"]) * 1e-3)
    out = {k: np.asarray(v) for k, v in (("seq", seq), ("size", size), ("sent", ts), ("recv", tr), ("owd", owd))}
    if wall0 is None and out["sent"].size:
        shift = float(np.min(out["sent"])) - start_s
        out["sent"], out["recv"] = out["sent"] - shift, out["recv"] - shift
    return out


def _emu_window(run: dict[str, Any], t0: float, t1: float) -> dict[str, Any]:
    wall0 = run.get("t0_wall_s")
    base = Path(run["out_dir"])
    tput, active, d_vals, d_w = [], [], [], []
    sent_pk = lost_pk = 0.0
    total_bytes = 0.0
    for f in run["per_flow"]:
        lo, hi = max(t0, f["start_s"]), min(t1, f["stop_s"])
        act = max(hi - lo, 0.0)
        fdir = base / f"flow{f['flow']}"
        if f.get("impl") == "iperf3":
            cj = results.read_json(fdir / "iperf3_client.json") or {}
            start = f["start_s"]
            byts = 0.0
            for iv in cj.get("intervals", []):
                s = iv.get("sum", {})
                b = start + s.get("end", 0.0)
                if b <= t0 or b > t1:
                    continue
                nb = s.get("bytes", 0.0)
                byts += nb
                sent_pk += nb / 1448.0
                lost_pk += s.get("retransmits", 0) or 0
                for st in iv.get("streams", []):
                    if st.get("rtt"):
                        d_vals.append(max(st["rtt"] / 1e6 - f["rtt_ms"] / 2e3, 0.0))
                        d_w.append(nb)
        else:
            log = fdir / "receiver.csv"
            if not log.exists():
                raise ValueError(f"{log}: missing (window records need the receiver's per-packet log)")
            p = _receiver_packets(log, int(f["flow"]), wall0, f["start_s"])
            got = (p["recv"] > t0) & (p["recv"] <= t1)
            byts = float(np.sum(p["size"][got]))
            d_vals += list(p["owd"][got])
            d_w += list(p["size"][got])
            sent_in = (p["sent"] > t0) & (p["sent"] <= t1)
            if np.any(sent_in):
                s = p["seq"][sent_in]
                n_sent = float(s.max() - s.min() + 1)
                sent_pk += n_sent
                lost_pk += n_sent - float(np.unique(s).size)
        total_bytes += byts
        tput.append(byts * 8 / 1e6 / act if act > 0 else 0.0)
        active.append(act)
    lo = max(t0, min(f["start_s"] for f in run["per_flow"]))
    hi = min(t1, max(f["stop_s"] for f in run["per_flow"]))
    span = max(hi - lo, 1e-9)
    thr = total_bytes * 8 / 1e6 / span
    cap = emu_spec.mean_capacity_mbps([tuple(x) for x in run["capacity_schedule"]], lo, hi)
    if len(run["per_flow"]) == 1:
        jain = 1.0
    else:
        jain = metrics.jain_of_active(tput, active, t1 - t0)[0]
    p95 = metrics.weighted_percentile(np.asarray(d_vals), np.asarray(d_w), 95) if d_vals else float("nan")
    return {"throughput_mbps": thr, "utilization": thr / cap if cap > 0 else float("nan"),
            "p95_owd_ms": p95 * 1e3, "loss": lost_pk / sent_pk if sent_pk > 0 else 0.0, "jain": jain,
            "window_s": [t0, t1]}


def _raise_on_term(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


NETNS_DOC = """``python -m jaxcc.online.network``: one netns run for ``start("netns")`` (its child process).

    python -m jaxcc.online.network --scenario-file=F --policy=FILE --out=DIR [--sender-arg=ARG ...] [--prefix=P]

An emulation error is one line and exit status 2; SIGINT, SIGTERM or SIGHUP remove the link and
exit with status 130.
"""


def define_flags(fv):
    from absl import flags

    from jaxcc.cli import dashed_aliases

    flags.DEFINE_string("scenario_file", None, "the scenario JSON file (start() writes OUT/scenario.json)",
                        flag_values=fv)
    flags.DEFINE_string("policy", None, "the policy file every policy flow runs", flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (run.json, results.json, the flows' logs)", flag_values=fv)
    flags.DEFINE_multi_string("sender_arg", [], "one jaxcc-sender argument (repeatable)", flag_values=fv)
    flags.DEFINE_string("prefix", None, "netns name prefix", flag_values=fv)
    flags.DEFINE_bool("verbose", False, "log the harness's commands", flag_values=fv)
    for name in ("scenario_file", "policy", "out"):
        flags.mark_flag_as_required(name, flag_values=fv)
    return dashed_aliases(fv)


def main(fv, argv: Sequence[str] = ()) -> int:
    """One netns run with parsed flags ``fv`` (``define_flags``); returns the exit status."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):   # the link is removed on the way out
        signal.signal(sig, _raise_on_term)
    try:
        sc = emu_spec.load(path=fv.scenario_file)
        run_netns(sc, os.path.abspath(fv.policy), Path(fv.out), fv.sender_arg, fv.prefix, fv.verbose)
    except KeyboardInterrupt:
        print("jaxcc.online.network: interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, NETNS_DOC, define_flags, main, "--scenario-file=F --policy=FILE --out=DIR",
                        uses_jax=False, user_errors=(EmulationError,))


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
