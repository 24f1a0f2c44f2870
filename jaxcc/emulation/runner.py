"""Running one scenario on a fresh netns link: servers, clients, rate changes, per-flow stats.

Each flow runs as one of three kinds (``flow_kind``): the datapath's ``jaxcc-sender`` /
``jaxcc-receiver`` (bbr, fixed:MBPS, policy:FILE), ``iperf3 -C cubic|bbr`` (kernel:*;
the real baselines and cross traffic), or ``udp_probe`` (fixed rates only: the harness's self
test, or when the datapath is not built). Rate changes and flow starts fire against absolute
deadlines from one start time, never chained sleeps, and the lateness of every change is
recorded (``schedule_changes`` in the record).

A flow's DeepCC ``goal`` / ``target`` goes to its sender as ``--goal`` / ``--target``
(``spec.flow_goals``). A flow's MOCC ``preference`` goes to its sender as ``--preference``; its ``preference_changes``
go to the running sender as control lines on its stdin (``jaxcc-sender --control-stdin``), fired
at their absolute deadlines like the rate changes; who gets them is ``spec.flow_preferences``.
Each flow with changes gets its settle measurement (``jaxcc.emulation.settle``) in its record.

Every run checks its own timing (``delay_check`` in the record, ``jaxcc.emulation.delay.check``):
the delay line's per-packet hold error and tbf's rate against the schedule; a run that did not
keep time is marked ``valid: false`` and warned about on stderr.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jaxcc.controllers import is_raw_policy, parse_controller, policy_file
from jaxcc.emulation import delay, results, settle
from jaxcc.emulation.delay import health_warnings
from jaxcc.emulation.host import (DATAPATH_BUILD, TCP_PORT_BASE, TOOLS_BUILD, UDP_PORT_BASE,
                                  EmulationError, check_requirements, realtime_allowed,
                                  receiver_binary, sender_binary, terminate)
from jaxcc.emulation.netns import ETH_HEADER, RCV_IP, TBF_SCALE, EmulatedLink, softnet_drops, tbf_rate_error
from jaxcc.emulation.spec import (assign_controllers, flow_goals, flow_preferences, preference_arg, rate_schedule,
                                  refuse_sim_only)
from jaxcc.scenarios import Scenario
from jaxcc.sim.controller import DEFAULT_TUNER
from jaxcc.units import PACKET_BYTES


@dataclasses.dataclass
class FlowRun:
    index: int
    controller: str
    rtt_ms: float
    start_s: float
    stop_s: float
    dir: Path
    kind: str = ""                     # "jaxcc" | "probe" | "iperf3"
    procs: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    started_at: float | None = None    # monotonic time the client was launched
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    preference: tuple[float, float, float] | None = None          # --preference
    preference_changes: tuple = ()     # ((at_s, weights), ...): control lines at t0 + at_s
    goal: tuple[float, float, float] | None = None    # --goal (DeepCC fixed goal)
    target: tuple[float, float, float] | None = None  # --target (DeepCC online goal tuning)
    tuner: str = DEFAULT_TUNER  # --tuner (the target's tuner, jaxcc.senders.goal_tuning.TUNERS)
    control_log: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def flow_kind(controller: str, impl: str = "auto") -> str:
    """How a flow runs: "iperf3" (kernel:*), "jaxcc" (datapath binaries) or "probe"
    (udp_probe, fixed rates only: the harness self-test, or when the datapath is not built).
    impl="probe" forces the probe for fixed:* flows."""
    refuse_sim_only(controller, f"controller {controller}")
    if controller.startswith("kernel:"):
        try:
            parse_controller(controller)
        except ValueError as e:
            raise EmulationError(str(e)) from e
        return "iperf3"
    if impl == "probe" and controller.startswith("fixed:"):
        return "probe"
    if sender_binary() is not None and receiver_binary() is not None:
        return "jaxcc"
    if controller.startswith("fixed:") and impl != "jaxcc":
        # The real datapath is not built: the self-test probe can do a fixed rate.
        return "probe"
    raise EmulationError(f"controller {controller} needs {DATAPATH_BUILD}/jaxcc-sender and "
                         "jaxcc-receiver: build them with datapath/build.sh")


class Runner:
    """Runs one scenario with one controller assignment on a fresh EmulatedLink."""

    def __init__(self, spec: Scenario, controllers: list[str], out_dir: Path,
                 prefix: str | None = None, trace_bin_s: float | None = None, ping: bool = True,
                 verbose: bool = False, lead_s: float = 0.5, impl: str = "auto",
                 nice: int | None = -10, delay_opts: delay.DelayOptions | None = None,
                 rt_receiver: int = 5, rt_sender: bool = True, sender_args: list[str] | None = None):
        self.spec = spec
        self.controllers = controllers        # one per flow
        self.out_dir = out_dir
        self.prefix = prefix
        self.trace_bin_s = trace_bin_s
        self.do_ping = ping
        self.verbose = verbose
        self.lead_s = lead_s
        self.impl = impl
        # Senders and receivers run at nice -10 so that, on a small machine shared with
        # other jobs, they (and the packet processing done in their context) keep up.
        self.nice = nice
        self.delay_opts = delay_opts
        # SCHED_FIFO priority of the UDP receivers (jaxcc-receiver, udp_probe recv; 0: none).
        # jaxcc-receiver stamps each packet's one-way delay when it reads it, so its wake-up
        # latency on a busy machine is added to every delay it reports (udp_probe ends a delay
        # at the kernel's receive stamp and reports its read lateness apart). They block in poll(), so
        # real-time priority cannot starve the machine. Measured (launch/delay_levers.py, a
        # paced 40 Mbit/s flow on pareto/fixed50 beside two trainings): with only nfq_delay
        # at SCHED_FIFO the receivers' p95 one-way delay was 3.9-4.3 ms above the 45 ms
        # configured; with this and rt_sender as well, 0.10-0.13 ms.
        self.rt_receiver = rt_receiver
        # jaxcc-sender --realtime (its pacing thread at SCHED_FIFO 1; udp_probe send under
        # chrt -f 1), so a busy machine does not bunch a sender's packets into catch-up bursts
        # that queue at the bottleneck (jaxcc-sender: up to --max-lag-ms, 10 ms).
        self.rt_sender = rt_sender
        # extra jaxcc-sender arguments for every policy:FILE flow (e.g. online fine-tuning's
        # --learner=ADDR --learner-timeout-s=S --fallback=keep|bbr; jaxcc.online.network)
        self.sender_args = [str(a) for a in (sender_args or [])]

    def run(self) -> dict[str, Any]:
        spec, link_spec = self.spec, self.spec.link
        dur = spec.duration_s
        sched = rate_schedule(spec, self.trace_bin_s)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        flows = [FlowRun(i, c, f.rtt_ms, f.start_s, f.stop_s, self.out_dir / f"flow{i}")
                 for i, (f, c) in enumerate(zip(spec.flows, self.controllers))]
        for fl, (pref, changes) in zip(flows, flow_preferences(spec, self.controllers)):
            fl.kind = flow_kind(fl.controller, self.impl)
            fl.dir.mkdir(parents=True, exist_ok=True)
            fl.preference, fl.preference_changes = pref, changes
        for fl, f, (goal, target) in zip(flows, spec.flows, flow_goals(spec, self.controllers)):
            fl.goal, fl.target, fl.tuner = goal, target, getattr(f, "tuner", DEFAULT_TUNER)
        check_requirements(need_iperf3=any(f.kind == "iperf3" for f in flows))

        with EmulatedLink(self.prefix, self.out_dir, self.verbose) as link:
            link.setup([f.rtt_ms for f in spec.flows], sched[0][1], int(link_spec.buffer_bytes),
                       link_spec.loss, self.delay_opts)
            self._first_rate = sched[0][1]
            idle = link.ping() if self.do_ping else None
            for fl in flows:
                self._start_server(link, fl, dur)
            sampler = link.start_tbf_sampler()
            softnet0 = softnet_drops()
            t0 = time.monotonic() + self.lead_s
            events: list[tuple[float, str, Any]] = [(t0 + t, "rate", r) for t, r in sched[1:]]
            events += [(t0 + fl.start_s, "flow", fl) for fl in flows]
            events += [(t0 + at, "preference", (fl, w)) for fl in flows for at, w in fl.preference_changes]
            order = {"rate": 0, "flow": 1, "preference": 2}
            events.sort(key=lambda e: (e[0], order[e[1]]))
            self._run_events(link, events, t0)
            for fl in flows:   # every change was written: EOF on the senders' control input
                p = fl.procs.get("client")
                if p is not None and p.stdin is not None:
                    with contextlib.suppress(OSError):
                        p.stdin.close()
            # wait for the clients (with a margin), then for the servers: iperf3 and
            # jaxcc-receiver stop on their own; udp_probe writes its summary on SIGTERM.
            end = t0 + dur + 15.0
            for fl in flows:
                p = fl.procs.get("client")
                if p is not None:
                    try:
                        p.wait(timeout=max(end - time.monotonic(), 0.1))
                    except subprocess.TimeoutExpired:
                        terminate(p)
                    fl.result["client_rc"] = p.returncode
            for fl in flows:
                p = fl.procs.get("server")
                if p is None:
                    continue
                grace = 0.3 if fl.kind == "probe" else max(end - time.monotonic(), 0.1)
                try:
                    p.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    terminate(p)
                fl.result["server_rc"] = p.returncode
            samples = sampler.stop()
            qstats = link.qdisc_stats()
            if_drops = link.interface_drops()
            neighbours = link.neighbour_states()
            softnet1 = softnet_drops()
        (self.out_dir / "qdisc_stats.txt").write_text(qstats)
        (self.out_dir / "tbf_samples.json").write_text(json.dumps(
            {"t0": t0, "fields": ["t", "bytes", "packets", "drops", "backlog"], "samples": samples}))
        # "while the backlog stays non-empty": a backlog of 10% of the buffer (at least four
        # frames) at both ends of a 0.1 s interval
        min_backlog = max(4 * (PACKET_BYTES + ETH_HEADER), int(0.1 * link_spec.buffer_bytes * TBF_SCALE))
        tbf = tbf_rate_error(samples, sched, t0, min_backlog)
        if sampler.error:
            tbf["error"] = sampler.error
        for fl in flows:
            fl.result.update(results.collect_flow(fl))
            if fl.preference is not None or fl.preference_changes:
                fl.result["preference"] = list(fl.preference) if fl.preference is not None else None
                fl.result["preference_changes"] = [{"at_s": t, "preference": list(w)}
                                                   for t, w in fl.preference_changes]
            if fl.goal is not None:
                fl.result["goal"] = list(fl.goal)
            if fl.target is not None:
                fl.result["target"] = {**dict(zip(("throughput_mbps", "delay_ms", "loss"), fl.target)),
                                       "tuner": fl.tuner}
            if fl.preference_changes:
                fl.result["control_log"] = fl.control_log
                try:
                    fl.result["settle"] = settle.analyse_run_dir(fl.dir)
                except (OSError, ValueError) as e:
                    fl.result["settle"] = {"error": str(e)}
        stats = results.read_json(self.out_dir / "nfq_delay_stats.json")
        check = delay.check(stats, tbf)
        # Drops outside tbf and the loss rule (recorded, not judged): a veth that dropped, or the
        # host's receive backlog overflowing, loses packets the emulated link never saw.
        check["drops_outside_link"] = {
            "interfaces": {d: c for d, c in if_drops.items() if c["rx_dropped"] or c["tx_dropped"]},
            "softnet_dropped": softnet1["dropped"] - softnet0["dropped"],
            "softnet_time_squeeze": softnet1["time_squeeze"] - softnet0["time_squeeze"]}
        # the static neighbour entries of both hops at the end (no ARP crossed the link)
        check["neighbours"] = neighbours
        rec = results.make_record(spec.name, dur, self.controllers, flows, sched, idle,
                                  link.schedule_log, delay_check=check)
        if spec.link.schedule:  # recovery after each step up, as the simulator's records have it
            rec.update(results.step_recovery(rec["per_flow"], sched, spec.link.schedule, dur))
        rec["delay_tool"] = stats
        rt = realtime_allowed()
        check["endpoints_realtime"] = {"receivers_fifo": self.rt_receiver if rt else 0,
                                       "senders": bool(self.rt_sender and rt)}
        if check["valid"] is False:
            print(f"[emulate] INVALID RUN {spec.name} x {'+'.join(self.controllers)}: the emulator "
                  f"did not keep time ({'; '.join(check['reasons'])}); re-run it on a quieter "
                  f"machine (sim-to-real leaves it out)", file=sys.stderr)
        warn = health_warnings(stats)
        if warn:
            rec["warnings"] = warn
            print(f"[emulate] warning: {'; '.join(warn)}", file=sys.stderr)
        return rec

    def _start_server(self, link: EmulatedLink, fl: FlowRun, dur: float) -> None:
        if fl.kind == "iperf3":
            port = TCP_PORT_BASE + fl.index
            p = link.spawn(link.ns_rcv, ["iperf3", "-s", "-1", "-p", port, "-B", RCV_IP, "-J",
                                         "--logfile", fl.dir / "iperf3_server.json"],
                           nice=self.nice)
            fl.procs["server"] = p
            _wait_listening(link, port, "tcp")
            return
        port = UDP_PORT_BASE + fl.index
        # the receiver stops on its own a little after the flow's last packet can arrive
        rdur = fl.stop_s + self.lead_s + 2 * fl.rtt_ms / 1000 + 1.5
        if fl.kind == "jaxcc":
            cmd = [receiver_binary(), f"--port={port}", f"--bind={RCV_IP}",
                   f"--duration={rdur:.3f}", f"--log={fl.dir / 'receiver.csv'}",
                   f"--summary={fl.dir / 'receiver.json'}"]
        else:
            cmd = [TOOLS_BUILD / "udp_probe", "recv", f"--port={port}", f"--bind={RCV_IP}",
                   f"--duration={rdur:.3f}", f"--summary={fl.dir / 'receiver.json'}"]
        if self.rt_receiver and realtime_allowed():
            cmd = ["chrt", "-f", str(int(self.rt_receiver))] + cmd
        fl.procs["server"] = link.spawn(link.ns_rcv, cmd, nice=self.nice,
                                        stderr=fl.dir / "receiver.stderr")
        _wait_listening(link, port, "udp")

    def _start_client(self, link: EmulatedLink, fl: FlowRun) -> None:
        dur = fl.stop_s - fl.start_s
        if fl.kind == "iperf3":
            cmd = ["iperf3", "-c", RCV_IP, "-p", TCP_PORT_BASE + fl.index, "-t", f"{dur:.3f}",
                   "-C", fl.controller.split(":", 1)[1], "-i", "0.1", "-J",
                   "--logfile", fl.dir / "iperf3_client.json"]
        elif fl.kind == "jaxcc":
            # --rtt-hint-ms: the path RTT a policy assumes before its first sample, as the
            # simulator's policy senders know the link's (e.g. aurora_v1's 10-packet start).
            path = policy_file(fl.controller)
            ctrl = fl.controller if path is None else f"policy:{path}"
            cmd = [sender_binary(), f"--controller={ctrl}", f"--dest={RCV_IP}",
                   f"--port={UDP_PORT_BASE + fl.index}", f"--duration={dur:.3f}",
                   f"--flow-id={fl.index}", "--drain=1.0", f"--rtt-hint-ms={fl.rtt_ms:g}",
                   f"--log={fl.dir / 'sender.csv'}", f"--summary={fl.dir / 'sender.json'}"]
            if self.rt_sender:
                cmd.append("--realtime")
            if fl.preference is not None:
                cmd.append(f"--preference={preference_arg(fl.preference)}")
            if fl.preference_changes:
                cmd.append("--control-stdin")
            if fl.goal is not None:
                cmd.append(f"--goal={preference_arg(fl.goal)}")
            if fl.target is not None:
                cmd += [f"--target={preference_arg(fl.target)}", f"--tuner={fl.tuner}"]
            if path is not None:
                cmd += self.sender_args + (["--raw-policy"] if is_raw_policy(fl.controller) else [])
        else:
            rate = float(fl.controller.split(":", 1)[1])
            cmd = [TOOLS_BUILD / "udp_probe", "send", f"--dest={RCV_IP}",
                   f"--port={UDP_PORT_BASE + fl.index}", f"--rate={rate}",
                   f"--duration={dur:.3f}", f"--log={fl.dir / 'sender.csv'}",
                   f"--summary={fl.dir / 'sender.json'}"]
            if self.rt_sender and realtime_allowed():   # it sleeps in ppoll: never spins
                cmd = ["chrt", "-f", "1"] + cmd
        fl.started_at = time.monotonic()
        extra = {"stdin": subprocess.PIPE} if fl.kind == "jaxcc" and fl.preference_changes else {}
        fl.procs["client"] = link.spawn(link.ns_snd, cmd, nice=self.nice,
                                        stderr=fl.dir / "sender.stderr", **extra)

    def _run_events(self, link: EmulatedLink, events, t0: float) -> None:
        """Fires rate changes and flow starts at absolute deadlines (no drift from sleeps)."""
        if any(kind == "rate" for _, kind, _ in events):
            link.set_rate(self._first_rate)   # starts the tc batch process before t0
        for deadline, kind, arg in events:
            _sleep_until(deadline)
            if kind == "rate":
                a = time.monotonic()
                wall = time.time()
                link.set_rate(arg)
                b = time.monotonic()
                link.schedule_log.append({"t_s": deadline - t0, "mbps": arg,
                                          "issued_late_ms": (a - deadline) * 1e3,
                                          "done_late_ms": (b - deadline) * 1e3,
                                          "wall_deadline_s": wall - (a - deadline)})
            elif kind == "preference":
                self._send_preference(*arg, deadline=deadline, t0=t0)
            else:
                self._start_client(link, arg)

    @staticmethod
    def _send_preference(fl: FlowRun, w, deadline: float, t0: float) -> None:
        """One ``preference a,b,c`` line to a running sender's stdin (``--control-stdin``); the
        sender applies it at its next decision and logs it (``goal_changes`` in its summary)."""
        line = f"preference {preference_arg(w)}\n"
        p = fl.procs.get("client")
        a = time.monotonic()
        entry = {"at_s": deadline - t0, "preference": list(w), "issued_late_ms": (a - deadline) * 1e3,
                 "mono_s": a}
        if p is None or p.stdin is None or p.poll() is not None:
            entry["error"] = "the sender was not running"
        else:
            try:
                p.stdin.write(line.encode())
                p.stdin.flush()
            except OSError as e:   # BrokenPipeError: it exited meanwhile
                entry["error"] = f"could not write to the sender: {e}"
        fl.control_log.append(entry)


def _sleep_until(t: float) -> None:
    while True:
        d = t - time.monotonic()
        if d <= 0:
            return
        time.sleep(min(d, 0.5) if d > 0.002 else d)


def _wait_listening(link: EmulatedLink, port: int, proto: str, timeout: float = 5.0) -> None:
    flag = "-ltn" if proto == "tcp" else "-lun"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = link.sh(link.ns_rcv, ["ss", "-H", flag, f"sport = :{port}"], check=False).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise EmulationError(f"server on {proto} port {port} did not start (see its stderr)")


def run_experiments(specs: list[Scenario], controllers: list[str | None], out: Path,
                    **kw) -> list[dict[str, Any]]:
    """Every scenario x controller on its own fresh link; OUT/results.json after each run."""
    records = []
    for spec in specs:
        for ctrl in controllers:
            flows_ctrl = assign_controllers(spec, ctrl)
            sub = out / "runs" / f"{results.safe_name(spec.name)}__{results.safe_name(ctrl or 'spec')}"
            print(f"[emulate] {spec.name} x {ctrl or 'scenario controllers'} -> {sub}",
                  file=sys.stderr)
            rec = Runner(spec, flows_ctrl, sub, **kw).run()
            rec["duration_s"] = spec.duration_s
            rec["capacity_schedule"] = rate_schedule(spec, kw.get("trace_bin_s"))
            records.append(rec)
            results.fill_ankh([r for r in records if r["scenario"] == spec.name])
            results.write_results(out, records)
    return records
