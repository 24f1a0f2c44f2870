"""Scenarios, controllers and link-rate schedules as the emulation needs them.

Scenarios are parsed and validated by ``jaxcc.scenarios`` (the one spec parser; its traces are
found as it finds them) and controller names by ``jaxcc.controllers``; this module adds only what
is particular to emulation:

* ``BUILTIN_SCENARIOS``: three small links for the harness itself (``emu/*``);
* the refusal of simulator-only controllers (``cubic``, ``reno``, ``copa``, ``oracle``: the C++ sender
  has none of them; a Python ``FILE.py:NAME``: it runs no Python), of buffers below one packet,
  and of the simulator's realism fields (``jitter_ms``, ``ack_agg_ms``, ``rtt_noise_ms``,
  ``cross_traffic``) and of a flow's start rate (``init_rate_mbps``): "not emulated yet";
* ``rate_schedule``: the link's capacity as the ``tc qdisc change`` steps of the tbf
  bottleneck, coarser than the simulator's (see its docstring);
* ``flow_preferences``: which flows get their ``preference`` / ``preference_changes``
  (``jaxcc-sender --preference`` and control lines on its stdin; see its docstring);
* ``flow_goals``: which flows get their DeepCC ``goal`` / ``target`` (``jaxcc-sender --goal`` /
  ``--target``, online goal tuning in the sender).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from jaxcc import policyfile, scenarios
from jaxcc.controllers import parse_controller, policy_file, user_file
from jaxcc.emulation.host import EmulationError
from jaxcc.sim import links
from jaxcc.units import PACKET_BYTES

MIN_RATE_MBPS = 0.01          # tbf cannot do 0; trace gaps get this
SIM_ONLY_KINDS = ("cubic", "reno", "copa", "oracle")  # jaxcc.controllers kinds with no C++ sender

# Small built-in scenarios for the harness itself (used when jaxcc.scenarios does not know the
# name), in the scenario spec of jaxcc.scenarios.
BUILTIN_SCENARIOS: dict[str, dict[str, Any]] = {
    "emu/fixed12": {"name": "emu/fixed12", "duration_s": 20.0,
                    "link": {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0},
                    "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 20.0,
                               "controller": "bbr"}]},
    "emu/step": {"name": "emu/step", "duration_s": 20.0,
                 "link": {"schedule": [[0, 12.0], [5, 6.0], [10, 24.0], [15, 12.0]],
                          "buffer_bytes": 150000, "loss": 0.0},
                 "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 20.0,
                            "controller": "bbr"}]},
    # The settle measurement of a runtime preference change (jaxcc.emulation.settle): MOCC's
    # 12 Mbit/s / 20 ms RTT emulation link, throughput-heavy -> delay-heavy at 15 s and back at
    # 30 s. Its controller stands for the MOCC policy to give with --controller=policy:FILE
    # (bbr takes no preference: without --controller the run is refused, naming the field).
    "emu/mocc_settle": {"name": "emu/mocc_settle", "duration_s": 45.0,
                        "link": {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0},
                        "flows": [{"rtt_ms": 20.0, "start_s": 0.0, "stop_s": 45.0, "controller": "bbr",
                                   "preference": [0.8, 0.1, 0.1],
                                   "preference_changes": [{"at_s": 15.0, "preference": [0.1, 0.8, 0.1]},
                                                          {"at_s": 30.0, "preference": [0.8, 0.1, 0.1]}]}]},
    "emu/two_flows": {"name": "emu/two_flows", "duration_s": 30.0,
                      "link": {"bandwidth_mbps": 24.0, "buffer_bytes": 300000, "loss": 0.0},
                      "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 30.0,
                                 "controller": "bbr"},
                                {"rtt_ms": 80.0, "start_s": 10.0, "stop_s": 30.0,
                                 "controller": "kernel:cubic"}]},
}


def as_scenario(spec: scenarios.Scenario | dict[str, Any]) -> scenarios.Scenario:
    """A validated scenario for emulation from a Scenario or a spec dict.

    Raises:
      EmulationError: the jaxcc.scenarios message for an invalid spec, or a buffer below one
        packet (tbf drops every frame larger than its limit).
    """
    if not isinstance(spec, scenarios.Scenario):
        try:
            spec = scenarios.parse_scenario(spec, source=str(spec.get("name", "scenario"))
                                            if isinstance(spec, dict) else "scenario")
        except ValueError as e:
            raise EmulationError(str(e)) from e
    on = [k for k in scenarios.REALISM_FIELDS if getattr(spec.link, k)]
    if on:  # realism (jaxcc.sim.realism) exists only in the simulator so far
        raise EmulationError(f"{spec.name}.link.{on[0]}: not emulated yet (simulator only: python -m jaxcc.evaluate)")
    starts = [i for i, f in enumerate(spec.flows) if f.init_rate_mbps is not None]
    if starts:  # jaxcc-sender --init-mbps has the simulator's meaning, but the runner does not pass it yet
        raise EmulationError(f"{spec.name}.flows[{starts[0]}].init_rate_mbps: not emulated yet "
                             f"(simulator only: python -m jaxcc.evaluate)")
    if spec.link.buffer_bytes < PACKET_BYTES:
        raise EmulationError(f"{spec.name}.link.buffer_bytes: must be >= {PACKET_BYTES} (one packet) in "
                             f"emulation, got {spec.link.buffer_bytes:g}")
    return spec


def with_duration(sc: scenarios.Scenario, duration_s: float) -> scenarios.Scenario:
    """``sc`` lasting ``duration_s`` (online runs last minutes): flows that ran to its end run to
    the new end, others keep their times cut at the new end; the link's schedule is the
    scenario's own for the new duration (a trace loops, as mm-link replays it).

    Raises:
      EmulationError: duration not a finite number > 0, or a flow starting at or after it.
    """
    if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and duration_s > 0):
        raise EmulationError(f"{sc.name}.duration_s: the override must be a finite number of seconds > 0, "
                             f"got {duration_s!r}")
    flows = []
    for i, f in enumerate(sc.flows):
        if f.start_s >= duration_s:
            raise EmulationError(f"{sc.name}.flows[{i}].start_s: {f.start_s:g} s is not before the "
                                 f"overridden duration {duration_s:g} s")
        stop = duration_s if abs(f.stop_s - sc.duration_s) < 1e-9 else min(f.stop_s, duration_s)
        flows.append(dataclasses.replace(f, stop_s=float(stop)))
    return dataclasses.replace(sc, duration_s=float(duration_s), flows=tuple(flows))


def load(name: str | None = None, path: str | None = None) -> scenarios.Scenario:
    """A named scenario (jaxcc.scenarios or emu/*) or a scenario file, validated."""
    try:
        if path is not None:
            return as_scenario(scenarios.load_scenario(path))
        if name in BUILTIN_SCENARIOS:
            return as_scenario(BUILTIN_SCENARIOS[name])
        return as_scenario(scenarios.get_scenario(str(name)))
    except (ValueError, OSError) as e:
        unknown = path is None and name not in scenarios.list_scenarios()
        extra = f" (emulation built-ins: {sorted(BUILTIN_SCENARIOS)})" if unknown else ""
        raise EmulationError(f"{e}{extra}") from e


def load_suite(names: str) -> list[scenarios.Scenario]:
    """The scenarios of one jaxcc.scenarios suite or a comma-separated list (as ``evaluate``
    takes), validated for emulation."""
    try:
        return [as_scenario(s) for n in names.split(",") if n.strip() for s in scenarios.get_suite(n.strip())]
    except ValueError as e:
        raise EmulationError(str(e)) from e


def is_kernel(controller: str) -> bool:
    """True for kernel:* controllers (Linux TCP through iperf3; cross traffic in a spec)."""
    return controller.strip().startswith("kernel:")


def refuse_sim_only(controller: str, label: str) -> None:
    """EmulationError naming ``label`` when ``controller`` exists only in the simulator (a
    ``FILE.py:NAME`` Python controller too: the C++ sender that paces real packets runs no Python)."""
    if user_file(controller) is not None:
        raise EmulationError(f"{label}: a Python controller (FILE.py:NAME) runs only in the simulator "
                             "(python -m jaxcc.evaluate): the C++ sender that paces real packets cannot run Python; "
                             "in emulation use kernel:cubic (iperf3), bbr, fixed:MBPS or policy:FILE")
    if controller.strip() in SIM_ONLY_KINDS:
        raise EmulationError(f"{label} runs only in the simulator (python -m jaxcc.evaluate); "
                             "in emulation use kernel:cubic (iperf3), bbr, fixed:MBPS or policy:FILE")


def validate_controller(c: str | None) -> None:
    """Checks a --controller entry (jaxcc.controllers names) and refuses simulator-only ones."""
    if c is None:
        return
    try:
        parse_controller(c, field="--controller")
    except ValueError as e:
        raise EmulationError(str(e)) from e
    refuse_sim_only(c, f"--controller={c}")


# A kept neighbour (``keep_controller``) runs as the kernel's TCP: the emulation has no CUBIC or
# NewReno of its own, and the kernel's BBR is the reference the simulator's model is checked on.
KEPT_AS_KERNEL = {"cubic": "kernel:cubic", "reno": "kernel:reno", "bbr": "kernel:bbr"}


def assign_controllers(spec: scenarios.Scenario, controller: str | None) -> list[str]:
    """Controllers per flow. A given controller replaces every flow's, except flows whose own
    controller is kernel:* (those are cross traffic and stay as written) and flows that keep
    their own (``keep_controller``: a kept cubic, reno or bbr runs as the kernel's,
    ``KEPT_AS_KERNEL``)."""
    own = [KEPT_AS_KERNEL.get(f.controller, f.controller) if f.keep_controller else f.controller
           for f in spec.flows]
    if controller is None:
        return own
    return [c if f.keep_controller or (is_kernel(c) and len(own) > 1) else controller
            for f, c in zip(spec.flows, own)]


# ----------------------------------------------------------------------------- rate schedules

# Segments shorter than this are averaged per bin of it (see rate_schedule).
SCHEDULE_BIN_S = 0.1


def rate_schedule(spec: scenarios.Scenario, trace_bin_s: float | None = None) -> list[tuple[float, float]]:
    """The link's capacity as tbf steps [(t_s, mbps), ...] from t=0, merged where equal.

    Constant, step and random links come from ``LinkSpec.capacity`` (random forms drawn with
    seed 0, as the evaluator's first seed, so every controller sees the same link).  A trace
    is the simulator's own schedule (``LinkSpec.capacity``: ``jaxcc.sim.links.from_trace`` at
    the scenario's ``trace_bin_ms``), so an outage in the trace looks the same in both;
    ``trace_bin_s`` overrides the bin (``jaxcc.emulate --trace-bin-ms``).  Every
    ``tc qdisc change`` refills tbf's bucket, so very frequent changes would add up to one
    bucket (>= 2 packets) of extra capacity per change: other schedules with segments shorter
    than ``SCHEDULE_BIN_S`` (Poisson's 10 ms slots) are averaged per bin of it.  Rates below
    MIN_RATE_MBPS (tbf cannot do 0) are raised to it.

    Raises:
      EmulationError: the trace file cannot be read.
    """
    link, duration_s = spec.link, spec.duration_s
    if link.trace is not None:
        bin_s = link.trace_bin_ms / 1000.0 if trace_bin_s is None else trace_bin_s
        return trace_schedule(link.trace, duration_s, bin_s)
    cap = link.capacity(seed=0, duration_s=duration_s)
    sched = [(float(t), float(r) * 8 / 1e6) for t, r in zip(cap.times, cap.rates)]
    if link.random_steps is not None or link.poisson is not None:
        sched = [(t, r) for t, r in sched if t < duration_s]
    return coarsen(sched, duration_s, SCHEDULE_BIN_S if trace_bin_s is None else trace_bin_s)


def trace_schedule(path: str, duration_s: float, bin_s: float) -> list[tuple[float, float]]:
    """The tbf rate schedule (s, Mbit/s) of a Mahimahi trace file binned at ``bin_s``: the
    simulator's schedule of the trace (``jaxcc.sim.links.from_trace``), laps unrolled up to
    ``duration_s``, floored at MIN_RATE_MBPS and merged where equal."""
    try:
        cap = links.from_trace(path, bin_s * 1000.0)
    except (OSError, ValueError) as e:
        raise EmulationError(str(e)) from e
    out: list[tuple[float, float]] = []
    for lap in range(int(math.ceil(duration_s / cap.period))):
        for t, r in zip(cap.times, cap.rates):
            t = lap * cap.period + float(t)
            if t >= duration_s:
                break
            r = max(float(r) * 8 / 1e6, MIN_RATE_MBPS)
            if not out or abs(out[-1][1] - r) >= 1e-9:
                out.append((t, r))
    return out


def coarsen(sched: list[tuple[float, float]], duration_s: float,
            bin_s: float) -> list[tuple[float, float]]:
    """Averages a schedule with segments shorter than bin_s per bin; floors and merges rates."""
    seg = [b[0] - a[0] for a, b in zip(sched, sched[1:]) if b[0] < duration_s]
    if seg and min(seg) < bin_s - 1e-9:   # e.g. Poisson 10 ms slots: average per bin
        sched = [(i * bin_s, mean_capacity_mbps(sched, i * bin_s, (i + 1) * bin_s))
                 for i in range(int(math.ceil(duration_s / bin_s)))]
    out: list[tuple[float, float]] = []
    for t, r in sched:
        r = max(r, MIN_RATE_MBPS)
        if t >= duration_s and out:
            break
        if out and abs(out[-1][1] - r) < 1e-9:
            continue
        out.append((t, r))
    return out


def mean_capacity_mbps(sched: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Mean rate of a step schedule over [t0, t1] (the last step lasts for ever)."""
    total = 0.0
    for i, (t, r) in enumerate(sched):
        end = sched[i + 1][0] if i + 1 < len(sched) else math.inf
        lo, hi = max(t, t0), min(end, t1)
        if hi > lo:
            total += r * (hi - lo)
    return total / max(t1 - t0, 1e-9)


# The order of a preference (jaxcc.scenarios flows[i].preference; MOCC's objectives): what the
# C++ sender checks against a policy's features.objectives (mocc_v1) or features.goal (deepcc_v1).
PREFERENCE_ORDER = ("throughput", "delay", "loss")

Preference = tuple[float, float, float]


def preference_refusal(controller: str) -> str | None:
    """Why ``controller`` cannot take a preference, or None if it can: the C++ sender's rule
    (``datapath/src/preference.cc`` PreferenceMismatch) — a ``policy:FILE`` with goal_dim 3
    whose features name their objectives (``objectives``, else ``goal``) in the order
    (throughput, delay, loss), or do not name them.

    Raises:
      EmulationError: the policy file cannot be read or is invalid (names the problem).
    """
    c = controller.strip()
    if policy_file(c) is None:
        return f"{c} takes no preference (only a preference-conditioned policy:FILE does)"
    try:
        pspec, _ = policyfile.load(policy_file(c))
    except (OSError, ValueError) as e:
        raise EmulationError(f"{c}: {e}") from e
    if int(pspec.get("goal_dim", 0)) != 3:
        return f"{c} takes no 3-value preference (its goal_dim is {pspec.get('goal_dim', 0)})"
    feats = pspec.get("features") or {}
    for key in ("objectives", "goal"):
        names = feats.get(key)
        if isinstance(names, list):
            if tuple(names) != PREFERENCE_ORDER:
                return (f"{c}: its objectives (features.{key}) are {names}, a preference is "
                        f"{list(PREFERENCE_ORDER)}")
            break
    return None


def flow_preferences(spec: scenarios.Scenario, controllers: list[str]
                     ) -> list[tuple[Preference | None, tuple[tuple[float, Preference], ...]]]:
    """Per flow, the (preference, preference_changes) the emulation gives its sender.

    A flow's ``preference`` configures its controller when that is a preference-conditioned
    ``policy:FILE`` (``preference_refusal``): the sender starts with ``--preference`` and gets
    each change (at ``at_s`` seconds after the scenario's start) as a control line on its stdin.
    A flow whose controller as written in the scenario takes no preference is refused, as the
    simulator refuses it; a baseline that ``--controller`` puts in place of the scenario's
    controller (``bbr``, ``fixed:MBPS``, ``kernel:*``) runs without it, so one scenario file
    compares a MOCC policy with the baselines. A ``--controller`` policy that takes none is
    refused.

    Raises:
      EmulationError: naming ``<scenario>.flows[i].preference`` (or ``preference_changes``).
    """
    out = []
    for i, (f, c) in enumerate(zip(spec.flows, controllers)):
        pref = getattr(f, "preference", None)
        changes = tuple(getattr(f, "preference_changes", ()) or ())
        if pref is None and not changes:
            out.append((None, ()))
            continue
        field = f"{spec.name}.flows[{i}].{'preference' if pref is not None else 'preference_changes'}"
        replaced = c.strip() != f.controller.strip()
        if replaced and policy_file(c) is None:
            out.append((None, ()))   # a baseline in place of the scenario's controller
            continue
        why = preference_refusal(c)
        if why is not None:
            raise EmulationError(f"{field}: {why}")
        out.append((tuple(float(x) for x in pref) if pref is not None else None,
                    tuple((float(t), tuple(float(x) for x in w)) for t, w in changes)))
    return out


def preference_arg(w) -> str:
    """``a,b,c`` for ``jaxcc-sender --preference`` and its control lines (shortest repr)."""
    return ",".join(repr(float(x)) for x in w)


def goal_refusal(controller: str) -> str | None:
    """Why ``controller`` cannot take a DeepCC ``goal`` / ``target``, or None if it can: the C++
    sender's ``--target`` rule — a ``policy:FILE`` whose features are ``deepcc_v1`` with goal_dim 3.

    Raises:
      EmulationError: the policy file cannot be read or is invalid (names the problem).
    """
    c = controller.strip()
    if policy_file(c) is None:
        return f"{c} takes no goal or target (only a DeepCC policy:FILE, features deepcc_v1, does)"
    try:
        pspec, _ = policyfile.load(policy_file(c))
    except (OSError, ValueError) as e:
        raise EmulationError(f"{c}: {e}") from e
    name = (pspec.get("features") or {}).get("name")
    if name != "deepcc_v1" or int(pspec.get("goal_dim", 0)) != 3:
        return f"{c} is a {name} policy with goal_dim {pspec.get('goal_dim', 0)}; a goal or target needs deepcc_v1, 3"
    return None


def flow_goals(spec: scenarios.Scenario, controllers: list[str]
               ) -> list[tuple[Preference | None, tuple[float, float, float] | None]]:
    """Per flow, the (goal, target) the emulation gives its sender (``--goal`` / ``--target``),
    by ``flow_preferences``' rules: a flow whose scenario controller takes none is refused; a
    baseline that ``--controller`` puts in its place runs without; a ``--controller`` policy
    that takes none is refused.

    Raises:
      EmulationError: naming ``<scenario>.flows[i].goal`` (or ``target``).
    """
    out = []
    for i, (f, c) in enumerate(zip(spec.flows, controllers)):
        goal, target = getattr(f, "goal", None), getattr(f, "target", None)
        if goal is None and target is None:
            out.append((None, None))
            continue
        field = f"{spec.name}.flows[{i}].{'goal' if goal is not None else 'target'}"
        if c.strip() != f.controller.strip() and policy_file(c) is None:
            out.append((None, None))   # a baseline in place of the scenario's controller
            continue
        why = goal_refusal(c)
        if why is not None:
            raise EmulationError(f"{field}: {why}")
        out.append((tuple(float(x) for x in goal) if goal is not None else None,
                    tuple(float(x) for x in target) if target is not None else None))
    return out
