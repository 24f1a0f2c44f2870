"""The scenario file format: the JSON users write, and its validation (``parse_scenario``).

The spec (every command accepts it as ``--scenario-file``)::

    {"name": str, "duration_s": float,
     "link": {"bandwidth_mbps": float            # one of these three capacity forms,
              | "schedule": [[t_s, mbps], ...]    #   or "random_steps" / "poisson" below
              | "trace": path,                     # a Mahimahi trace (loops like mm-link)
              "buffer_bytes": int, "loss": float},
     "flows": [{"rtt_ms": float, "start_s": float, "stop_s": float, "controller": str,
                "init_rate_mbps": float,                # optional, learned senders only (below)
                "preference": [w_thr, w_delay, w_loss],  # optional, MOCC policies only (below)
                "preference_changes": [{"at_s": float, "preference": [w_thr, w_delay, w_loss]}, ...],
                "goal": [g_thr, g_delay, g_loss],                       # optional, DeepCC policies only
                "target": {"throughput_mbps": x, "delay_ms": y, "loss": z},  # (below)
                "keep_controller": bool}]}                              # optional (below)

Extensions: ``"random_steps": {"low_mbps", "high_mbps", "every_s"}`` (a new uniform rate every
``every_s``; Aurora Fig. 7), ``"poisson": {"mean_mbps", "slot_ms"}`` (Wi-Fi-like, DeepCC §VI-A),
``"trace_bin_ms"`` (default ``jaxcc.sim.trace.TRACE_BIN_MS``, 100: the finest the emulated link
follows, so a trace is the same link in the simulator and in emulation) for traces.  Random forms are drawn from the evaluation seed.
``stop_s`` defaults to ``duration_s`` and ``start_s`` to 0.

``flows[i].init_rate_mbps`` (optional, ``INIT_RATE_MBPS_MIN``–``INIT_RATE_MBPS_MAX``, the
environments' rate clip ``jaxcc.envs.base.MIN_RATE``/``MAX_RATE``): the rate a learned sender
(``policy:FILE``, every feature set) starts from instead of its feature set's own start (e.g.
Pareto's 10 packets per 90 ms).  It is the rate in force before the policy's first decision,
which the policy then acts on as in training (the environments draw a start rate and act once
at reset) — ``jaxcc-sender --init-mbps`` does the same in the datapath.  So a policy whose
first action is "hold" sends its first monitor interval at exactly this rate; a sender that
takes its first decision at the end of the first tick (``aurora_v1``, ``mocc_v1``) sends at it
during that tick.  The classic baselines and the reference senders (``bbr``, ``cubic``,
``reno``, ``copa``, ``fixed:MBPS``, ``oracle``) refuse it: they start from their own initial
window or rate, which a start rate does not translate into without changing the algorithm.
The emulation refuses it too (not emulated yet; the C++ sender's ``--init-mbps`` would carry it).

``flows[i].preference`` (optional): the preference ω = (throughput, delay, loss) weights of a
preference-conditioned policy (``policy:FILE`` of a MOCC policy: goal_dim 3, a ``q_values`` head
with ``objectives`` 3), 3 numbers >= 0 summing to 1 (within ``PREFERENCE_SUM_TOL``); without it
the policy runs at 1/3 each.  ``flows[i].preference_changes`` (optional, at most
``MAX_PREFERENCE_CHANGES``): the preference switches to each entry's at ``at_s`` (seconds since the
scenario began, after the flow's ``start_s``, before ``duration_s``, increasing) — the next
decision uses it, without a restart.  ``jaxcc.evaluate`` (the simulator) and ``jaxcc.emulate``
(the C++ sender's ``--preference``) honour both.  The parser cannot tell what a policy file
takes: a flow whose controller takes no preference is refused where the controller is resolved
(``jaxcc.senders.preference_refusal``; ``jaxcc.sim.runner``), naming the field.

``flows[i].goal`` / ``flows[i].target`` (optional, one of the two, DeepCC §IV-C/§V "Interface"):
for a goal-tuned policy (``policy:FILE`` of a DeepCC policy: features ``deepcc_v1``, goal_dim 3).
``goal`` is a fixed goal (3 numbers >= 0 summing to 1 within ``PREFERENCE_SUM_TOL``, the
throughput, delay and loss weights; no tuning); ``target`` turns online goal tuning on
(``jaxcc.senders.goal_tuning``) toward throughput >= ``throughput_mbps`` (>= 0), 95th-percentile
queueing delay (RTT − min RTT) <= ``delay_ms`` (>= 0) and loss rate <= ``loss`` (in [0, 1]); all
three are required; an optional ``"tuner"`` picks the tuner (``"p95"``, the default, or ``"paper"``, §IV-C as written;
``jaxcc.senders.goal_tuning``).  Neither goes with ``preference`` / ``preference_changes``.  As for the
preference, a flow whose controller is not a DeepCC policy is refused where the controller is
resolved (``jaxcc.senders.preference_refusals``; ``jaxcc.sim.runner``), naming the field.
``jaxcc.emulate`` passes them to the C++ sender as ``--goal=`` / ``--target=``.

``flows[i].keep_controller`` (optional, default false): ``--controller`` does not replace this
flow's controller (``Scenario.with_controller``), so a named link can put the evaluated
controller beside a fixed neighbour, e.g. one learned flow beside CUBIC flows (the ``coexist``
suite).  At least one flow of a scenario run with ``--controller`` must not keep its own.  The
emulation runs a kept ``cubic`` or ``reno`` as the kernel's (``kernel:cubic``, ``kernel:reno``:
it has no other), and a kept ``bbr`` as ``kernel:bbr``
(``jaxcc.emulation.spec.assign_controllers``).

Realism (optional ``link`` fields, all off by default; the model is in ``jaxcc.sim.realism``;
random draws come from the evaluation seed; the emulation refuses them, "not emulated yet"):

* ``"jitter_ms"`` (0–1000): non-congestive one-way delay variation, a FIFO extra delay
  ``U[0, jitter_ms]`` drawn per tick after the bottleneck; added to the one-way delay, the RTT
  samples and the feedback's arrival, not to the queueing delay.
* ``"ack_agg_ms"`` (0–1000): ACK aggregation period; ACKs (and loss notices) are held to the
  next multiple of it (Wi-Fi, cellular); data is not delayed.
* ``"rtt_noise_ms"`` (0–1000): standard deviation of noise on the RTT samples the senders see
  (normal, truncated at ±3σ); the physics is unchanged.
* ``"cross_traffic": [[t_s, mbps], ...]`` (first at 0, times increasing, 0–100000 Mbit/s, at
  most ``MAX_CROSS_SEGMENTS`` entries): an unresponsive stream entering the bottleneck queue,
  piecewise constant; it shares drop-tail drops with the flows in proportion to arrivals and
  shows in the queue, the flows' delay and loss, and the results' ``cross_mbps``.

Paths inside a spec (``find_trace``, ``parse_scenario``):

* ``link.trace``: an absolute path is used as is; a relative one is looked up in
  ``$JAXCC_TRACES``, then in the traces shipped with jaxcc (``jaxcc/traces``: the Verizon LTE
  traces ``pareto/lte`` and ``eagle/lte`` use, and the AT&T one of ``deepcc/cellular``), then in the spec's folder (the folder of the
  scenario file; the current directory for a spec given as a dict).  A trace found nowhere is
  one error naming the field, the file and every folder searched.  The named scenarios use the
  same rule (without a spec folder), so they work on a fresh clone.
* ``flows[i].controller`` = ``policy:FILE`` or ``FILE.py:NAME`` (a Python controller,
  ``jaxcc.controllers``): an absolute path is used as is; a relative one is relative to the
  spec's folder (for a scenario file; relative to the current directory for a dict), like the
  spec's trace paths.  The parsed scenario holds the resolved path.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Callable

import numpy as np

from jaxcc import units
from jaxcc.controllers import parse_controller, policy_file, user_file, user_name, with_policy_file
from jaxcc.sim import links
from jaxcc.sim.controller import DEFAULT_TUNER, MAX_PREFERENCE_CHANGES, TUNER_CODES
from jaxcc.sim.trace import TRACE_BIN_MS, find_trace
from jaxcc.units import PACKET_BYTES

KB = 1000  # the papers' buffer sizes (375 KB, 440 KB) are decimal kilobytes
MAX_CROSS_SEGMENTS = 256  # cross-traffic entries per spec (the model costs O(segments) per tick)
REALISM_MS_MAX = 1000.0  # jitter_ms, ack_agg_ms, rtt_noise_ms are in [0, 1000]
CROSS_MBPS_MAX = 100_000.0
REALISM_FIELDS = ("jitter_ms", "ack_agg_ms", "rtt_noise_ms", "cross_traffic")
# flows[i].init_rate_mbps: the environments' rate clip (jaxcc.envs.base.MIN_RATE, MAX_RATE) in Mbit/s
INIT_RATE_MBPS_MIN, INIT_RATE_MBPS_MAX = 0.01, 100_000.0
PREFERENCE_SUM_TOL = 1e-3  # flows[i].preference: the weights sum to 1 within this
# A scenario's neighbours (``Scenario.neighbour``): each flow's RTT scaled by 1 + U(−NEIGHBOUR_RTT_REL,
# +NEIGHBOUR_RTT_REL) and its start moved later by U(0, NEIGHBOUR_START_S) seconds.
NEIGHBOUR_RTT_REL, NEIGHBOUR_START_S = 0.03, 0.25


@dataclasses.dataclass(frozen=True)
class FlowSpec:
    rtt_ms: float
    start_s: float
    stop_s: float
    controller: str
    init_rate_mbps: float | None = None  # a learned sender's start rate (module docstring); None: its own
    preference: tuple[float, float, float] | None = None  # (throughput, delay, loss) weights; None: the policy's default
    preference_changes: tuple[tuple[float, tuple[float, float, float]], ...] = ()  # ((at_s, weights), ...)
    goal: tuple[float, float, float] | None = None  # a DeepCC policy's fixed goal (throughput, delay, loss)
    target: tuple[float, float, float] | None = None  # DeepCC tuning target (throughput_mbps, delay_ms, loss)
    keep_controller: bool = False  # --controller does not replace this flow's (a fixed neighbour)
    tuner: str = DEFAULT_TUNER  # the target's tuner (jaxcc.senders.goal_tuning.TUNERS)


def init_rate_refusal(controller: str, where: str) -> str | None:
    """Why ``controller`` cannot take ``init_rate_mbps`` (module docstring), or None if it can.

    ``where`` names the field in the message (``<scenario>.flows[i].init_rate_mbps``).
    """
    if parse_controller(controller).kind == "policy":
        return None
    return (f"{where}: only a learned sender (policy:FILE) takes a start rate; {controller!r} starts "
            f"from its own initial window/rate (drop the field or use policy:FILE)")


@dataclasses.dataclass(frozen=True)
class LinkSpec:
    buffer_bytes: float
    loss: float = 0.0
    bandwidth_mbps: float | None = None
    schedule: tuple[tuple[float, float], ...] | None = None
    trace: str | None = None
    trace_bin_ms: float = TRACE_BIN_MS
    random_steps: dict | None = None
    poisson: dict | None = None
    jitter_ms: float = 0.0
    ack_agg_ms: float = 0.0
    rtt_noise_ms: float = 0.0
    cross_traffic: tuple[tuple[float, float], ...] | None = None

    @property
    def has_realism(self) -> bool:
        """Whether any realism field is on (``jitter_ms``, ``ack_agg_ms``, ``rtt_noise_ms``,
        ``cross_traffic``)."""
        return bool(self.jitter_ms or self.ack_agg_ms or self.rtt_noise_ms
                    or any(m > 0 for _, m in self.cross_traffic or ()))

    def realism(self, *, seed: int = 0):
        """The link's ``jaxcc.sim.realism.Realism`` (per-tick draws keyed by ``seed``), or None
        when every realism field is off (0): then the model runs exactly as without them."""
        if not self.has_realism:
            return None
        return links.realism_params(seed=seed, jitter_s=self.jitter_ms / 1e3, ack_agg_s=self.ack_agg_ms / 1e3,
                                    rtt_noise_s=self.rtt_noise_ms / 1e3, cross=self.cross_traffic)

    def capacity(self, seed: int = 0, duration_s: float = 60.0) -> links.Schedule:
        """The capacity schedule (random forms drawn from ``seed``)."""
        if self.bandwidth_mbps is not None:
            return links.constant(self.bandwidth_mbps)
        if self.schedule is not None:
            return links.steps(self.schedule)
        if self.trace is not None:
            return links.from_trace(self.trace, self.trace_bin_ms)
        rng = np.random.default_rng(seed)
        if self.random_steps is not None:
            rs = self.random_steps
            n = max(1, int(math.ceil(duration_s / rs["every_s"])))
            mbps = rng.uniform(rs["low_mbps"], rs["high_mbps"], n)
            return links.Schedule(np.arange(n) * rs["every_s"], mbps * units.MBPS)
        ps = self.poisson
        slot = ps["slot_ms"] / 1e3
        n = max(1, int(math.ceil(duration_s / slot)))
        counts = rng.poisson(ps["mean_mbps"] * units.MBPS * slot / PACKET_BYTES, n)
        if counts.sum() == 0:
            counts[0] = 1
        return links.Schedule(np.arange(n) * slot, counts * PACKET_BYTES / slot)


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    link: LinkSpec
    flows: tuple[FlowSpec, ...]

    def with_controller(self, controller: str) -> "Scenario":
        """The same scenario with every flow driven by ``controller`` (start rates kept), except
        the flows that keep their own (``keep_controller``)."""
        parse_controller(controller)
        if all(f.keep_controller for f in self.flows):
            raise ValueError(f"{self.name}: every flow keeps its controller (keep_controller); "
                             f"--controller={controller} would run none")
        return dataclasses.replace(
            self, flows=tuple(f if f.keep_controller else dataclasses.replace(f, controller=controller)
                              for f in self.flows)
        )

    def neighbour(self, k: int) -> "Scenario":
        """The scenario's ``k``-th neighbour, named ``<name>~k``: the same link, each flow's RTT
        scaled by 1 + U(−3 %, +3 %) and its start (with its preference changes) moved later by
        U(0, 0.25 s), drawn flow by flow from ``numpy.random.default_rng(k)`` (``NEIGHBOUR_*``).

        A measurement averaged over neighbours answers for the scenario's region rather than for
        one trajectory: when several flows share a queue, which one leads is decided by the
        phase of their first RTTs, and one run's Ankh's number moves by several percent for a
        0.1 % change of an actor's weights.  Validated as a user's file is."""
        if k < 0:
            raise ValueError(f"{self.name}: neighbour index must be >= 0, got {k}")
        rng = np.random.default_rng(k)
        d = self.to_dict()
        d["name"] = f"{self.name}~{k}"
        for fl in d["flows"]:
            fl["rtt_ms"] = fl["rtt_ms"] * (1.0 + rng.uniform(-NEIGHBOUR_RTT_REL, NEIGHBOUR_RTT_REL))
            shift = rng.uniform(0.0, NEIGHBOUR_START_S)
            fl["start_s"] = fl["start_s"] + shift
            for ch in fl.get("preference_changes", ()):
                ch["at_s"] = ch["at_s"] + shift
        return parse_scenario(d, source=d["name"])

    def init_rate_refusals(self) -> list[str]:
        """One message per flow whose ``init_rate_mbps`` its controller cannot take (empty: runnable).

        The parser accepts the field with any controller (a named scenario's flows carry a
        placeholder controller that ``--controller`` replaces); running such a flow is refused
        (``jaxcc.evaluate`` skips the pair with this message; ``jaxcc.sim.runner`` raises).
        """
        out = []
        for i, f in enumerate(self.flows):
            if f.init_rate_mbps is not None:
                why = init_rate_refusal(f.controller, f"{self.name}.flows[{i}].init_rate_mbps")
                if why:
                    out.append(why)
        return out

    def preference_flows(self) -> list[tuple[int, str]]:
        """(flow index, field) of each flow with a ``preference`` or ``preference_changes``; only a
        preference-conditioned policy takes them (``jaxcc.senders.preference_refusal``)."""
        return [(i, "preference" if f.preference is not None else "preference_changes")
                for i, f in enumerate(self.flows) if f.preference is not None or f.preference_changes]

    def goal_flows(self) -> list[tuple[int, str]]:
        """(flow index, field) of each flow with a ``goal`` or ``target``; only a goal-tuned policy
        (DeepCC, ``deepcc_v1``) takes them (``jaxcc.senders.preference_refusals``)."""
        return [(i, "goal" if f.goal is not None else "target")
                for i, f in enumerate(self.flows) if f.goal is not None or f.target is not None]

    def to_dict(self) -> dict:
        link = {k: v for k, v in dataclasses.asdict(self.link).items() if v is not None}
        if link.get("trace_bin_ms") == TRACE_BIN_MS:
            link.pop("trace_bin_ms")
        for k in ("jitter_ms", "ack_agg_ms", "rtt_noise_ms"):
            if link.get(k) == 0.0:
                link.pop(k)
        for k in ("schedule", "cross_traffic"):
            if k in link:
                link[k] = [list(p) for p in link[k]]
        return {
            "name": self.name,
            "duration_s": self.duration_s,
            "link": link,
            "flows": [_flow_dict(f) for f in self.flows],
        }


def _flow_dict(f: FlowSpec) -> dict:
    """A flow as its spec JSON (optional fields only when set)."""
    d = {"rtt_ms": f.rtt_ms, "start_s": f.start_s, "stop_s": f.stop_s, "controller": f.controller}
    if f.init_rate_mbps is not None:
        d["init_rate_mbps"] = f.init_rate_mbps
    if f.preference is not None:
        d["preference"] = list(f.preference)
    if f.preference_changes:
        d["preference_changes"] = [{"at_s": t, "preference": list(w)} for t, w in f.preference_changes]
    if f.goal is not None:
        d["goal"] = list(f.goal)
    if f.target is not None:
        d["target"] = dict(zip(TARGET_FIELDS, f.target))
        if f.tuner != DEFAULT_TUNER:
            d["target"]["tuner"] = f.tuner
    if f.keep_controller:
        d["keep_controller"] = True
    return d


# ----------------------------------------------------------------------------- validation


def _number(obj: dict, key: str, where: str, *, positive=False, nonneg=False, default=None) -> float:
    if key not in obj:
        if default is not None:
            return float(default)
        raise ValueError(f"{where}.{key}: missing (required)")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}.{key}: expected a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{where}.{key}: must be > 0, got {v!r}")
    if nonneg and v < 0:
        raise ValueError(f"{where}.{key}: must be >= 0, got {v!r}")
    return float(v)


def _check_keys(obj: dict, allowed: set[str], where: str) -> None:
    unknown = set(obj) - allowed
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _in_range(obj: dict, key: str, where: str, hi: float) -> float:
    v = _number(obj, key, where, default=0.0)
    if not 0.0 <= v <= hi:
        raise ValueError(f"{where}.{key}: must be in [0, {hi:g}], got {obj[key]!r}")
    return v


def _rate_steps(v: Any, w: str, what: str, rate: Callable[[dict, str], float],
                max_len: int | None = None) -> tuple[tuple[float, float], ...]:
    """A piecewise-constant rate ``[[t_s, mbps], ...]`` at field ``w`` (a capacity schedule, the
    cross traffic): a non-empty list of at most ``max_len`` pairs, times from 0 and increasing;
    ``rate(obj, where)`` reads and checks each ``{"mbps": x}``."""
    if not isinstance(v, list) or not v:
        raise ValueError(f"{w}: expected a non-empty list of [t_s, mbps] pairs")
    if max_len is not None and len(v) > max_len:
        raise ValueError(f"{w}: at most {max_len} [t_s, mbps] pairs, got {len(v)}")
    pairs: list[tuple[float, float]] = []
    for i, pair in enumerate(v):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"{w}[{i}]: expected [t_s, mbps], got {pair!r}")
        t = _number({"t_s": pair[0]}, "t_s", f"{w}[{i}]", nonneg=True)
        m = rate({"mbps": pair[1]}, f"{w}[{i}]")
        if pairs and t <= pairs[-1][0]:
            raise ValueError(f"{w}[{i}].t_s: times must increase ({t} after {pairs[-1][0]})")
        pairs.append((t, m))
    if pairs[0][0] != 0.0:
        raise ValueError(f"{w}[0].t_s: the {what} must start at 0, got {pairs[0][0]}")
    return tuple(pairs)


def _parse_realism(link: dict, where: str) -> dict[str, Any]:
    """The realism fields of a spec's link (module docstring), validated; absent ones omitted."""
    kw: dict[str, Any] = {}
    for key in ("jitter_ms", "ack_agg_ms", "rtt_noise_ms"):
        if key in link:
            kw[key] = _in_range(link, key, where, REALISM_MS_MAX)
    if "cross_traffic" in link:
        kw["cross_traffic"] = _rate_steps(
            link["cross_traffic"], f"{where}.cross_traffic", "cross traffic",
            lambda d, w: _in_range(d, "mbps", w, CROSS_MBPS_MAX), max_len=MAX_CROSS_SEGMENTS)
    return kw


def _preference(v: Any, where: str) -> tuple[float, float, float]:
    """A preference ``[w_thr, w_delay, w_loss]`` (each >= 0, sum 1 within ``PREFERENCE_SUM_TOL``)."""
    ok = (isinstance(v, (list, tuple)) and len(v) == 3
          and all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in v)
          and abs(sum(v) - 1.0) <= PREFERENCE_SUM_TOL)
    if not ok:
        raise ValueError(f"{where}: must be 3 numbers >= 0 summing to 1 (throughput, delay, loss), got {v!r}")
    return tuple(float(x) for x in v)


TARGET_FIELDS = ("throughput_mbps", "delay_ms", "loss")


def _target(v: Any, where: str) -> tuple[float, float, float]:
    """``{"throughput_mbps": x >= 0, "delay_ms": y >= 0, "loss": 0 <= z <= 1}``, all three required."""
    if not isinstance(v, dict):
        raise ValueError(f"{where}: expected {{\"throughput_mbps\": x, \"delay_ms\": y, \"loss\": z}}, got {v!r}")
    _check_keys(v, set(TARGET_FIELDS) | {"tuner"}, where)
    x = _number(v, "throughput_mbps", where, nonneg=True)
    y = _number(v, "delay_ms", where, nonneg=True)
    z = _number(v, "loss", where, nonneg=True)
    if z > 1.0:
        raise ValueError(f"{where}.loss: must be in [0, 1], got {v['loss']!r}")
    return (x, y, z)


def _tuner(v: dict, where: str) -> str:
    """A target's optional ``"tuner"``: a key of ``TUNER_CODES`` (``jaxcc.senders.goal_tuning``;
    default ``DEFAULT_TUNER``)."""
    t = v.get("tuner", DEFAULT_TUNER)
    if t not in TUNER_CODES:
        raise ValueError(f"{where}.tuner: must be one of {', '.join(TUNER_CODES)}, got {t!r}")
    return t


def _preference_changes(v: Any, where: str, start_s: float, duration: float):
    """``[{"at_s", "preference"}, ...]``: at most ``MAX_PREFERENCE_CHANGES``, start_s < at_s < duration_s, increasing."""
    if not isinstance(v, list) or not v:
        raise ValueError(f"{where}: expected a non-empty list of {{\"at_s\": seconds, \"preference\": [w_thr, w_delay, "
                         f"w_loss]}}, got {v!r}")
    if len(v) > MAX_PREFERENCE_CHANGES:
        raise ValueError(f"{where}: at most {MAX_PREFERENCE_CHANGES} changes, got {len(v)}")
    out: list[tuple[float, tuple[float, float, float]]] = []
    for k, ch in enumerate(v):
        w = f"{where}[{k}]"
        if not isinstance(ch, dict):
            raise ValueError(f"{w}: expected {{\"at_s\": seconds, \"preference\": [w_thr, w_delay, w_loss]}}, got {ch!r}")
        _check_keys(ch, {"at_s", "preference"}, w)
        t = _number(ch, "at_s", w)
        if not start_s < t < duration:
            raise ValueError(f"{w}.at_s: must be after the flow's start_s ({start_s:g}) and before duration_s "
                             f"({duration:g}), got {ch['at_s']!r}")
        if out and t <= out[-1][0]:
            raise ValueError(f"{w}.at_s: times must increase ({t:g} after {out[-1][0]:g})")
        if "preference" not in ch:
            raise ValueError(f"{w}.preference: missing (required)")
        out.append((t, _preference(ch["preference"], f"{w}.preference")))
    return tuple(out)


def parse_scenario(spec: dict, *, source: str = "scenario", base_dir: str | None = None,
                   allow_kernel: bool = True) -> Scenario:
    """Validate a spec dict; every error names the field (``source.link.loss`` ...).

    Args:
      spec: the JSON object (see the module docstring).
      source: the name errors start with (the file path for a scenario file).
      base_dir: the spec's folder: searched last for a relative ``link.trace`` (after
        ``$JAXCC_TRACES`` and the shipped traces) and the folder a relative ``policy:FILE`` or
        ``FILE.py:NAME`` is relative to.  ``None`` (a spec that is not a file) means the current directory.
      allow_kernel: whether ``kernel:*`` controllers (emulation only) are accepted.
    """
    if not isinstance(spec, dict):
        raise ValueError(f"{source}: a scenario must be a JSON object, got {type(spec).__name__}")
    _check_keys(spec, {"name", "duration_s", "link", "flows"}, source)
    name = spec.get("name", "custom")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{source}.name: expected a non-empty string, got {name!r}")
    duration = _number(spec, "duration_s", source, positive=True)
    link = spec.get("link")
    if not isinstance(link, dict):
        raise ValueError(f"{source}.link: missing or not an object")
    where = f"{source}.link"
    _check_keys(link, {"bandwidth_mbps", "schedule", "trace", "trace_bin_ms", "random_steps", "poisson",
                       "buffer_bytes", "loss", *REALISM_FIELDS}, where)
    forms = [k for k in ("bandwidth_mbps", "schedule", "trace", "random_steps", "poisson") if k in link]
    if len(forms) != 1:
        raise ValueError(f"{where}: give exactly one of bandwidth_mbps, schedule, trace, random_steps, poisson "
                         f"(got {forms or 'none'})")
    buffer_bytes = _number(link, "buffer_bytes", where, positive=True)
    loss = _number(link, "loss", where, nonneg=True, default=0.0)
    if not loss < 1.0:
        raise ValueError(f"{where}.loss: must be in [0, 1), got {loss!r}")
    kw: dict[str, Any] = _parse_realism(link, where)
    if "bandwidth_mbps" in link:
        kw["bandwidth_mbps"] = _number(link, "bandwidth_mbps", where, positive=True)
    elif "schedule" in link:
        kw["schedule"] = _rate_steps(link["schedule"], f"{where}.schedule", "schedule",
                                     lambda d, w: _number(d, "mbps", w, positive=True))
    elif "trace" in link:
        kw["trace"] = find_trace(link["trace"], os.getcwd() if base_dir is None else base_dir,
                                 field=f"{where}.trace")
        kw["trace_bin_ms"] = _number(link, "trace_bin_ms", where, positive=True, default=TRACE_BIN_MS)
    elif "random_steps" in link:
        rs = link["random_steps"]
        w = f"{where}.random_steps"
        if not isinstance(rs, dict):
            raise ValueError(f"{w}: expected an object with low_mbps, high_mbps, every_s")
        _check_keys(rs, {"low_mbps", "high_mbps", "every_s"}, w)
        lo = _number(rs, "low_mbps", w, positive=True)
        hi = _number(rs, "high_mbps", w, positive=True)
        if hi < lo:
            raise ValueError(f"{w}.high_mbps: must be >= low_mbps ({hi} < {lo})")
        kw["random_steps"] = {"low_mbps": lo, "high_mbps": hi, "every_s": _number(rs, "every_s", w, positive=True)}
    else:
        ps = link["poisson"]
        w = f"{where}.poisson"
        if not isinstance(ps, dict):
            raise ValueError(f"{w}: expected an object with mean_mbps, slot_ms")
        _check_keys(ps, {"mean_mbps", "slot_ms"}, w)
        kw["poisson"] = {"mean_mbps": _number(ps, "mean_mbps", w, positive=True),
                         "slot_ms": _number(ps, "slot_ms", w, positive=True, default=10.0)}
    flows = spec.get("flows")
    if not isinstance(flows, list) or not flows:
        raise ValueError(f"{source}.flows: expected a non-empty list of flows")
    parsed = []
    for i, fl in enumerate(flows):
        w = f"{source}.flows[{i}]"
        if not isinstance(fl, dict):
            raise ValueError(f"{w}: expected an object")
        _check_keys(fl, {"rtt_ms", "start_s", "stop_s", "controller", "init_rate_mbps", "preference",
                         "preference_changes", "goal", "target", "keep_controller"}, w)
        rtt = _number(fl, "rtt_ms", w, positive=True)
        start = _number(fl, "start_s", w, nonneg=True, default=0.0)
        stop = _number(fl, "stop_s", w, positive=True, default=duration)
        if stop <= start:
            raise ValueError(f"{w}.stop_s: must be > start_s ({stop} <= {start})")
        if start >= duration:
            raise ValueError(f"{w}.start_s: must be < duration_s ({start} >= {duration})")
        ctrl = fl.get("controller", "bbr")
        pol = policy_file(ctrl, resolve=False) if base_dir is not None and isinstance(ctrl, str) else None
        if pol and not os.path.isabs(pol):
            ctrl = with_policy_file(ctrl, os.path.normpath(os.path.join(base_dir, pol)))
        usr = user_file(ctrl) if base_dir is not None and isinstance(ctrl, str) else None
        if usr and not os.path.isabs(usr[0]):  # FILE.py:NAME, relative to the spec's folder like policy:FILE
            ctrl = user_name(os.path.normpath(os.path.join(base_dir, usr[0])), usr[1])
        parse_controller(ctrl, field=f"{w}.controller", allow_kernel=allow_kernel)
        init_rate = None
        if "init_rate_mbps" in fl:
            init_rate = _number(fl, "init_rate_mbps", w)
            if not INIT_RATE_MBPS_MIN <= init_rate <= INIT_RATE_MBPS_MAX:
                raise ValueError(f"{w}.init_rate_mbps: must be in [{INIT_RATE_MBPS_MIN:g}, {INIT_RATE_MBPS_MAX:g}] "
                                 f"Mbit/s, got {fl['init_rate_mbps']!r}")
        pref = _preference(fl["preference"], f"{w}.preference") if "preference" in fl else None
        changes = (_preference_changes(fl["preference_changes"], f"{w}.preference_changes", start, duration)
                   if "preference_changes" in fl else ())
        if "goal" in fl and "target" in fl:
            raise ValueError(f"{w}.target: give a goal (fixed) or a target (tuned goal), not both")
        for k in ("goal", "target"):
            if k in fl and (pref is not None or changes):
                raise ValueError(f"{w}.{k}: a DeepCC {k} does not go with a preference or preference_changes "
                                 f"(give one)")
        goal = _preference(fl["goal"], f"{w}.goal") if "goal" in fl else None
        target = _target(fl["target"], f"{w}.target") if "target" in fl else None
        tuner = _tuner(fl["target"], f"{w}.target") if "target" in fl else DEFAULT_TUNER
        keep = fl.get("keep_controller", False)
        if not isinstance(keep, bool):
            raise ValueError(f"{w}.keep_controller: expected true or false, got {keep!r}")
        parsed.append(FlowSpec(rtt, start, min(stop, duration), ctrl, init_rate, pref, changes, goal, target, keep,
                               tuner))
    rtts = [f.rtt_ms for f in parsed]
    if max(rtts) > 8 * min(rtts):
        raise ValueError(f"{source}.flows: RTTs on one link may differ by at most 8x "
                         f"(got {min(rtts)} and {max(rtts)} ms); the tick is a fraction of the smallest")
    return Scenario(name, duration, LinkSpec(buffer_bytes=buffer_bytes, loss=loss, **kw), tuple(parsed))
