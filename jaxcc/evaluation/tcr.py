"""DeepCC's target completion ratio (TCR, IEEE/ACM ToN 2022 §VI-B) in the simulator.

    python -m jaxcc.tcr --controller=policy:checkpoints/deepcc/deepcc.safetensors,bbr,cubic,copa \
        --suite=deepcc --targets=500 --seed=0 --out=runs/tcr
    python -m jaxcc.tcr --records=runs/tcr/results.json --out=runs/tcr   # re-make plots and bars only

For every link (scenario) ``--targets`` application targets T = (T1 throughput ≥, T2 p95
queueing delay ≤, T3 loss ≤) are drawn, and every controller is judged on each: a run *meets*
T when its throughput ≥ T1, its p95 queueing delay ≤ T2 and its loss ≤ T3 (``jaxcc.evaluation.metrics.tcr_met``);
the TCR is the fraction of targets met.

Who runs how often (§VI-B: "we test each scheme with its default objective ... For DeepCC, we
test it with different targets and leave the agent unchanged"):

* a DeepCC policy (``policy:FILE`` whose feature set is ``deepcc_v1``) runs **once per target**
  with online goal tuning (§IV-C; ``--tuner``: the "p95" variant of ``jaxcc.senders.goal_tuning``,
  the default, or "paper", the paper's tuner as written): target i is the scenario flow field ``"target":
  {"throughput_mbps", "delay_ms", "loss"}`` of lane i, and all the targets of a link are the lanes
  of one jitted simulator run (``jaxcc.sim.runner``: one batch), each lane judged on its own target;
* every other controller (``bbr``, ``cubic``, ``copa``, ``fixed:MBPS``, ``policy:FILE`` of Aurora,
  Eagle, Pareto, or MOCC at its default preference) runs **once**, and that one run is judged
  against every target.

Target ranges, fixed per link from the link alone (so a controller's TCR does not depend on
which controllers were evaluated beside it), all uniform:

* T1 (throughput, Mbit/s) ∈ [0, C̄], C̄ = the link's mean capacity over the measurement window;
* T2 (p95 queueing delay, ms) ∈ [0, B / C̄], B = the buffer: the delay of a full drop-tail queue
  drained at the mean capacity;
* T3 (loss) ∈ [0, 10 %] (``MAX_LOSS``, as the paper).

The paper draws T1 up to "the achievable maximum throughput of all learning-based schemes on the
corresponding link" and T2 up to "the achieved maximum queueing delay of all schemes": ranges
that move with the schemes evaluated.  Here they are their link-only upper bounds: no scheme's
goodput exceeds C̄ over the window (up to the bytes in flight at its edges), and a queue that
never exceeds B holds at most B / C̄ of delay at the mean rate (a trace's capacity dips can make
the measured delay exceed it; such a run meets fewer targets).  So the ranges here are at least
as wide as the paper's for throughput (C̄ ≥ the best scheme's throughput), and for delay as
wide as the deepest-queue scheme's in the paper (a loss-based scheme fills the buffer); a
target above what any scheme reaches is still drawn, as in the paper ("some of them cannot be
achieved by any one of the existing schemes").

Measurement window (the same for every controller and target of a link): from
``WARMUP_TUNING_INTERVALS`` (10) online-tuning intervals of 4 min RTTs (§V: the tuner acts every
4 RTT), i.e. 40 × the flow's min RTT, capped at half the run, to the end of the run.  DeepCC's
tuner needs those intervals to move the goal from its start, and the classic schemes their start
up; the start-up transient would otherwise decide most targets.  On the ``deepcc`` suite:
Wi-Fi (176 ms, 30 s) 7.04–30 s, cellular (200 ms, 60 s) 8–60 s, satellite (800 ms, 60 s) 30–60 s.
Throughput is goodput (bytes ACKed in the window over the flow's active time there), the p95
queueing delay is byte-weighted over the bytes the flow got into the queue in the window, loss is
dropped over sent bytes in the window (``jaxcc.evaluation.metrics.flow_metrics``).

Targets are drawn from ``numpy.random.default_rng([seed, crc32(link name)])`` (``link_targets``),
so a link's targets depend on ``--seed`` and the link only.  A random link (``deepcc/wifi``'s
Poisson capacity) is drawn once from ``--seed`` and every lane and controller of it sees that
same capacity.  TCR is a single-flow measure: a scenario with several flows is refused.

Outputs in ``--out``:

* ``results.json`` — ``{"tcr": [{"scenario", "controller", "tcr", "targets", "met", "met_count",
  "tuned", "measured", "policy_file"}], "links": [{"scenario", "window_s", "mean_capacity_mbps",
  "buffer_bytes", "ranges", "seed", "targets"}], "meta": {...}, "bars": {...}}``: ``targets`` is how
  many targets were judged; ``met`` one flag per target (in the order of the link's ``targets``,
  each ``[T1 Mbit/s, T2 ms, T3 fraction]``); ``measured`` the run's
  ``{"throughput_mbps", "p95_qdelay_ms", "loss"}`` over the window (one dict; for a tuned
  DeepCC policy a list, one per target), so anyone can recompute every flag;
* ``plots/tcr_<link>`` (.png, .pdf, .svg; ``jaxcc.plots.tcr_figure``) — per link, a panel per
  controller: the targets in the throughput–delay plane (T2 across, T1 up), met ones as filled
  dots, missed ones as grey crosses, and an untuned controller's measured point in its
  ``jaxcc.plots.style`` marker and colour (on the edge, labelled, when it lies beyond the
  targets' ranges);
* the ``deepcc`` bar set of ``jaxcc.evaluation.bars`` (``--bars``) printed and stored in ``results.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
import time
import zlib
from typing import Any, Sequence

import numpy as np

from jaxcc import units
from jaxcc.controllers import parse_controller, policy_name
from jaxcc.envs.deepcc import TARGET_MAX_LOSS
from jaxcc.evaluation import bars
from jaxcc.evaluation import metrics
from jaxcc.scenarios import Scenario, parse_scenario
from jaxcc.sim.controller import DEFAULT_TUNER, TUNER_CODES


MAX_LOSS = TARGET_MAX_LOSS  # T3's range, DeepCC §VI-B: "ranges from 0 to 10%" (the bounded reward's too)


WARMUP_TUNING_INTERVALS = 10  # the window starts after this many online-tuning intervals ...


TUNING_INTERVAL_RTTS = 4  # ... of 4 min RTTs each (DeepCC §V: goal tuning every 4 RTT)


DEFAULT_TARGETS = 500  # DeepCC §VI-B: "we randomly sample 500 target values"


MAX_TARGETS = 100_000


DEEPCC_FEATURES = "deepcc_v1"  # a policy file with these features is tuned per target


def measurement_window(sc: Scenario) -> tuple[float, float]:
    """The window (t0, t1) in seconds every run of ``sc`` is measured over (module docstring)."""
    min_rtt = min(f.rtt_ms for f in sc.flows) / 1e3
    warm = WARMUP_TUNING_INTERVALS * TUNING_INTERVAL_RTTS * min_rtt
    return (min(warm, sc.duration_s / 2.0), float(sc.duration_s))


def served_bytes(schedule, t: float) -> float:
    """Bytes a capacity schedule (``jaxcc.sim.links.Schedule``) can serve over [0, t], exactly
    (piecewise constant, looping with its period)."""
    cum, per = schedule.cumulative()
    laps = 0
    if schedule.period > 0:
        laps = math.floor(t / schedule.period)
        t = t - laps * schedule.period
    k = int(np.clip(np.searchsorted(schedule.times, t, side="right") - 1, 0, schedule.times.size - 1))
    return laps * per + float(cum[k] + schedule.rates[k] * (t - schedule.times[k]))


def mean_capacity(schedule, window: tuple[float, float]) -> float:
    """Mean capacity (bytes/s) of ``schedule`` over ``window``."""
    t0, t1 = window
    if not t1 > t0:
        raise ValueError(f"mean_capacity: empty window {window}")
    return (served_bytes(schedule, t1) - served_bytes(schedule, t0)) / (t1 - t0)


def link_ranges(sc: Scenario, seed: int) -> dict:
    """The link's target ranges (module docstring): ``{"window_s", "mean_capacity_mbps",
    "max_throughput_mbps", "max_delay_ms", "max_loss"}``; the capacity drawn from ``seed``."""
    window = measurement_window(sc)
    cap = mean_capacity(sc.link.capacity(seed=seed, duration_s=sc.duration_s), window)  # bytes/s
    if not cap > 0:
        raise ValueError(f"{sc.name}: the link has no capacity in the measurement window {window} s")
    return {"window_s": list(window), "mean_capacity_mbps": cap / units.MBPS,
            "max_throughput_mbps": cap / units.MBPS, "max_delay_ms": sc.link.buffer_bytes / cap * 1e3,
            "max_loss": MAX_LOSS}


def link_targets(name: str, ranges: dict, n: int, seed: int) -> np.ndarray:
    """[n, 3] targets (T1 Mbit/s, T2 ms, T3 fraction), uniform in ``ranges`` (``link_ranges``),
    from ``default_rng([seed, crc32(name)])``: the same for a link whatever else is evaluated."""
    rng = np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8"))])
    return metrics.sample_tcr_targets(rng, n, ranges["max_throughput_mbps"], ranges["max_delay_ms"],
                                      ranges["max_loss"])


@dataclasses.dataclass(frozen=True)
class Entry:
    label: str
    name: str  # the controller name the simulator resolves
    tuned: bool  # a DeepCC policy: one run per target with online tuning
    policy_file: str | None = None


def policy_features(path: str) -> str:
    """The feature set (``features.name``) of the policy file ``path``."""
    from jaxcc import policyfile

    spec, _ = policyfile.load(path)
    return str(spec["features"]["name"])


def controller_entries(text: str | None) -> list[Entry]:
    """``--controller``: comma-separated names; a ``policy:FILE`` is labelled by its file name
    (without ``.safetensors``; ``NAME@FOLDER`` when two share a name; ``raw:NAME`` for a
    ``raw-policy:FILE``, which runs without the sender's safety net) and tuned when its features
    are ``deepcc_v1``.

    Raises:
      ValueError: a missing, empty, repeated or invalid name (one line naming it).
    """
    names = [n.strip() for n in (text or "").split(",")]
    if not text or not any(names):
        raise ValueError("--controller: give the controllers to judge, e.g. "
                         "--controller=policy:checkpoints/deepcc/deepcc.safetensors,bbr,cubic,copa")
    out: list[Entry] = []
    for n in names:
        if not n:
            raise ValueError("--controller: empty name in the list (use e.g. --controller=bbr,cubic)")
        spec = parse_controller(n, field="--controller", allow_kernel=False)
        if n in [e.name for e in out]:
            raise ValueError(f"--controller: {n!r} is given twice")
        if spec.kind == "policy":
            path = os.path.abspath(spec.arg)
            try:
                feats = policy_features(path)
            except ValueError as e:
                raise ValueError(f"--controller: {n!r}: {e}") from None
            label = ("raw:" if spec.raw else "") + re.sub(r"\.safetensors$", "", os.path.basename(path))
            out.append(Entry(label, policy_name(path, raw=spec.raw), feats == DEEPCC_FEATURES, path))
        else:
            out.append(Entry(n, n, False))
    labels = [e.label for e in out]
    fixed = []
    for e in out:
        if labels.count(e.label) > 1 or (e.policy_file and e.label in bars.BASELINE_LABELS):
            e = dataclasses.replace(e, label=f"{e.label}@{os.path.basename(os.path.dirname(e.policy_file))}")
        while e.label in [x.label for x in fixed]:
            e = dataclasses.replace(e, label=e.label + "'")
        fixed.append(e)
    return fixed


class _DrawnLink:
    """A scenario link whose capacity schedule is drawn once: every lane and controller of a link
    sees the same capacity (and a trace is read once, not once per lane)."""

    def __init__(self, spec, schedule):
        self._spec = spec
        self._schedule = schedule

    def __getattr__(self, k):
        return getattr(self._spec, k)

    def capacity(self, seed: int = 0, duration_s: float = 60.0):
        return self._schedule


def target_field(t: Sequence[float], tuner: str = DEFAULT_TUNER) -> dict:
    """A target row [T1, T2, T3] as the scenario flow field ``"target"``, naming its ``"tuner"``."""
    return {"throughput_mbps": float(t[0]), "delay_ms": float(t[1]), "loss": float(t[2]), "tuner": tuner}


# A scenario file's per-flow objective fields: TCR sets its own (a target per lane, or none).
_OBJECTIVE_FIELDS = ("preference", "preference_changes", "target", "goal")


def _with_flows(sc: Scenario, controller: str, target: Sequence[float] | None, tuner: str = DEFAULT_TUNER) -> Scenario:
    d = sc.to_dict()
    for f in d["flows"]:
        for k in _OBJECTIVE_FIELDS:
            f.pop(k, None)
        f["controller"] = controller
        if target is not None:
            f["target"] = target_field(target, tuner)
    return parse_scenario(d, source=sc.name, allow_kernel=False)


def with_target(sc: Scenario, controller: str, target: Sequence[float], tuner: str = DEFAULT_TUNER) -> Scenario:
    """``sc`` with its flow driven by ``controller`` and carrying ``"target"`` (online tuning with
    ``tuner``, ``jaxcc.senders.goal_tuning.TUNERS``)."""
    return _with_flows(sc, controller, target, tuner)


def untuned(sc: Scenario, controller: str) -> Scenario:
    """``sc`` with its flow driven by ``controller`` at its default objective (no preference, goal
    or target: MOCC at its default preference, DeepCC never here)."""
    return _with_flows(sc, controller, None)


def _measure(traj, rates, batch, window) -> list[dict]:
    out = []
    for i in range(len(batch.items)):
        tr = metrics.from_batch(traj, rates, batch, i)
        fm = metrics.flow_metrics(tr, 0, window)
        out.append({"throughput_mbps": fm["throughput"] / units.MBPS, "p95_qdelay_ms": fm["p95_qdelay"] * 1e3,
                    "loss": fm["loss"]})
    return out


def _simulate(scs: Sequence[Scenario], schedule, seed: int, window, ticks_per_rtt: int | None) -> list[dict]:
    """Simulate ``scs`` (one link, its capacity ``schedule``) in as few batches as the runner makes;
    each one's measured (throughput, p95 queueing delay, loss) over ``window``, in order."""
    from jaxcc import senders
    from jaxcc.sim import runner

    items = [runner.Item(dataclasses.replace(sc, link=_DrawnLink(sc.link, schedule)), seed) for sc in scs]
    kw = {} if ticks_per_rtt is None else {"ticks_per_rtt": int(ticks_per_rtt)}
    found: dict[int, dict] = {}
    for b in runner.build_batches(items, resolve=senders.resolve, **kw):
        _, traj, rates = runner.run_batch(b)
        for it, m in zip(b.items, _measure(traj, rates, b, window)):
            found[id(it)] = m
    return [found[id(it)] for it in items]


def _achieved(m: dict) -> list[float]:
    return [m["throughput_mbps"], m["p95_qdelay_ms"], m["loss"]]


def _check_pairs(scenarios: Sequence[Scenario], entries: Sequence[Entry], seed: int, tuner: str) -> None:
    """Builds every (link, controller) run once, unsimulated, so that a pair the simulator refuses
    (a start rate for a controller that takes none, ...) fails before minutes of other links."""
    from jaxcc import senders
    from jaxcc.sim import runner

    for sc in scenarios:
        for e in entries:
            lane = with_target(sc, e.name, (0.0, 0.0, 0.0), tuner) if e.tuned else untuned(sc, e.name)
            try:
                runner.build_batches([runner.Item(lane, seed)], resolve=senders.resolve)
            except ValueError as err:
                raise ValueError(f"{sc.name} with {e.name}: {err}") from None


def run_tcr(scenarios: Sequence[Scenario], entries: Sequence[Entry], *, n_targets: int = DEFAULT_TARGETS,
            seed: int = 0, ticks_per_rtt: int | None = None, progress: bool = True, tuner: str = DEFAULT_TUNER) -> dict:
    """Draw each link's targets and judge every controller on them (module docstring); a DeepCC
    policy is tuned by ``tuner`` (``jaxcc.senders.goal_tuning.TUNERS``: "p95", the default, or "paper").

    Returns ``{"tcr": [row, ...], "links": [link, ...], "wall_s": {...}}`` (``results.json``'s).
    """
    names = [sc.name for sc in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names must be unique in one TCR run, repeated: "
                         f"{sorted({n for n in names if names.count(n) > 1})}")
    for sc in scenarios:
        if len(sc.flows) != 1:
            raise ValueError(f"{sc.name}: TCR judges one flow against each target; the scenario has "
                             f"{len(sc.flows)} flows (give a single-flow scenario)")
    if not 1 <= n_targets <= MAX_TARGETS:
        raise ValueError(f"--targets must be in [1, {MAX_TARGETS}], got {n_targets}")
    if tuner not in TUNER_CODES:
        raise ValueError(f"--tuner must be one of {', '.join(TUNER_CODES)}, got {tuner!r}")
    _check_pairs(scenarios, entries, seed, tuner)
    rows, link_rows, wall = [], [], {}
    for sc in scenarios:
        ranges = link_ranges(sc, seed)
        window = tuple(ranges["window_s"])
        targets = link_targets(sc.name, ranges, n_targets, seed)
        schedule = sc.link.capacity(seed=seed, duration_s=sc.duration_s)
        link_rows.append({"scenario": sc.name, "seed": seed, "buffer_bytes": sc.link.buffer_bytes,
                          "duration_s": sc.duration_s, **ranges, "targets": targets.tolist()})
        plain = [e for e in entries if not e.tuned]
        t0 = time.time()
        measured: dict[str, Any] = {}
        if plain:
            ms = _simulate([untuned(sc, e.name) for e in plain], schedule, seed, window, ticks_per_rtt)
            measured.update({e.label: m for e, m in zip(plain, ms)})
        wall[f"{sc.name} untuned"] = round(time.time() - t0, 1)
        for e in entries:
            if not e.tuned:
                continue
            t0 = time.time()
            measured[e.label] = _simulate([with_target(sc, e.name, t, tuner) for t in targets], schedule, seed, window,
                                          ticks_per_rtt)
            wall[f"{sc.name} {e.label}"] = round(time.time() - t0, 1)
        for e in entries:
            m = measured[e.label]
            achieved = [_achieved(x) for x in m] if e.tuned else _achieved(m)
            met = metrics.tcr_met(np.asarray(achieved, np.float64), targets)
            rows.append({"scenario": sc.name, "controller": e.label, "tcr": float(np.mean(met)),
                         "targets": int(n_targets), "met_count": int(np.sum(met)), "met": met.tolist(),
                         "tuned": e.tuned, "measured": m, "policy_file": e.policy_file})
            if progress:
                print(f"{sc.name}: {e.label}: TCR {np.mean(met):.1%} ({int(np.sum(met))} of {n_targets})",
                      file=sys.stderr)
    return {"tcr": rows, "links": link_rows, "wall_s": wall}


def table_markdown(rows: Sequence[dict]) -> str:
    """TCR per controller (rows) and link (columns), in percent."""
    links = list(dict.fromkeys(r["scenario"] for r in rows))
    ctrls = list(dict.fromkeys(r["controller"] for r in rows))
    by = {(r["scenario"], r["controller"]): r for r in rows}
    out = ["| controller | " + " | ".join(links) + " |", "|---|" + "---:|" * len(links)]
    for c in ctrls:
        cells = [f"{100 * by[(ln, c)]['tcr']:.1f} %" if (ln, c) in by else "–" for ln in links]
        tuned = any(by[(ln, c)]["tuned"] for ln in links if (ln, c) in by)
        out.append(f"| {c}{' (tuned per target)' if tuned else ''} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot_link(rows: Sequence[dict], link: dict, out_dir: str) -> list[str]:
    """``plots/tcr_<link>`` (.png, .pdf, .svg): a panel per controller (module docstring;
    ``jaxcc.plots.tcr_figure``); returns the files."""
    from jaxcc import plots

    stem = os.path.join(out_dir, "plots", f"tcr_{plots.slug(link['scenario'], 'link')}")
    return plots.save(plots.tcr_figure(link, rows), stem)


def write_outputs(doc: dict, out_dir: str, *, bar_set: str | None = "deepcc", plots: bool = True) -> dict:
    """Judge ``bar_set``, write ``results.json`` and the plots; returns ``{"files", "bars_text"}``."""
    os.makedirs(out_dir, exist_ok=True)
    doc = dict(doc)
    bars_text = ""
    if bar_set:
        verdicts = bars.check(bar_set, doc["tcr"])
        bars_text = bars.format_verdicts(verdicts)
        doc["bars"] = {"set": bar_set, "verdicts": bars.as_json(verdicts)}
    path = os.path.join(out_dir, "results.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(metrics.json_safe(doc), fh, indent=1)
    files = [path]
    if plots:
        for link in doc["links"]:
            files += plot_link(metrics.json_safe(doc["tcr"]), link, out_dir)
    return {"files": files, "bars_text": bars_text}


def load_results(path: str) -> dict:
    """A ``results.json`` of this command (or its folder).

    Raises:
      ValueError: the file is missing or is not this command's output.
    """
    f = os.path.join(path, "results.json") if os.path.isdir(path) else path
    try:
        with open(f, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"--records: {f}: cannot read a TCR results.json ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("tcr"), list) or not isinstance(data.get("links"), list):
        raise ValueError(f"--records: {f}: no 'tcr' and 'links' lists (not a jaxcc.tcr output)")
    for i, r in enumerate(data["tcr"]):
        missing = [k for k in ("scenario", "controller", "tcr", "targets", "met", "tuned", "measured")
                   if not isinstance(r, dict) or k not in r]
        if missing:
            raise ValueError(f"--records: {f}: tcr[{i}] lacks {', '.join(missing)}")
    return data
