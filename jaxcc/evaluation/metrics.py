"""Evaluation metrics over the simulator's trajectories (pure NumPy, host side).

Definitions (units inside: bytes, seconds; Mbit/s and ms only in the reported dicts):

* **throughput** — goodput: bytes ACKed (by ACK time) over the flow's active time; with a
  window ``[t0, t1]``, ACKs inside the window over the active time inside it.  The aggregate
  throughput of a link is all flows' ACKed bytes over the time at least one flow is active.
* **utilization** — aggregate ACKed bytes over the bytes the link could serve while at least
  one flow was active (i.e. throughput over the mean capacity of that time).
* **p95 one-way delay / p95 queueing delay** — byte-weighted 95th percentiles over the bytes
  admitted to the queue (dropped bytes have no delay), by send time.
* **loss** — bytes dropped (random loss + drop-tail) over bytes sent, as a fraction.
* **Jain's index** — (Σx)² / (n·Σx²) over per-flow throughputs (Pareto §V-B, [36]), over the
  last ``JAIN_LAST_S`` = 20 s of a multi-flow run (``jain_window``), among the flows active for at
  least a quarter of that window (``jain_of_active``); a single flow reports 1.0.  The simulator
  (``evaluate_trace``) and the emulation (``jaxcc.emulation.results``) both use this one
  definition; the shipped Pareto numbers were measured with it.
* **power** — throughput over delay (Kleinrock; Pareto §V-B): Mbit/s per second of mean
  one-way delay.
* **Ankh's number** (Pareto eq. 10) — the printed equation is garbled (it writes the utilisation
  as (R−C)/C and the delay term as |(d_max − d95)/d_max|, neither of which reproduces Table II).
  The form that reproduces Table II (e.g. 45.91 Mbps, 101.06 ms, 0.79 % with d_max = 116 ms on
  50 Mbps → 0.320) is ``A = ((1 − R/C) + d95/d_max + loss) / 3`` with loss a fraction and
  ``d_max`` the largest p95 one-way delay among the schemes compared.  Lower is better.
* **TCR** — DeepCC's target completion ratio (§VI): the fraction of targets
  T = (throughput ≥ T1, queueing delay ≤ T2, loss ≤ T3) whose every component is met.

``Trace`` holds one simulation's per-tick arrays (trimmed to its real flows); ``from_batch``
cuts one out of ``runner.run_batch``'s output.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from jaxcc.units import MBPS

# Jain's index of a multi-flow run is taken over its last JAIN_LAST_S seconds (after the flows'
# start-up; Pareto §V-B measures fairness once the flows have converged), in the simulator and in
# the emulation alike.  The shipped Pareto results (checkpoints/pareto/README.md) use it.
JAIN_LAST_S = 20.0
JAIN_MIN_ACTIVE_FRAC = 0.25


@dataclasses.dataclass
class Trace:
    """Per-tick arrays of one simulated link.  Per-flow arrays are [T, F]; link arrays [T].

    ``time`` is the end of each tick; a tick covers ``(time − dt, time]``.
    """

    time: np.ndarray
    dt: float
    active: np.ndarray
    sent: np.ndarray
    acked: np.ndarray
    lost: np.ndarray
    admitted: np.ndarray
    owd: np.ndarray
    qdelay: np.ndarray
    capacity: np.ndarray
    queue: np.ndarray | None = None
    rate: np.ndarray | None = None  # [T, F] pacing rate the controller asked for (bytes/s)
    cross: np.ndarray | None = None  # [T] cross-traffic bytes admitted to the queue (jaxcc.sim.realism)

    @property
    def num_flows(self) -> int:
        return self.sent.shape[1]


def from_batch(traj, rates, batch, i: int) -> Trace:
    """Item ``i`` of a batch run (``runner.run_batch`` output), trimmed to its real flows."""
    f = batch.num_real_flows[i]
    g = lambda x: np.asarray(x[i], np.float64)  # noqa: E731
    per = lambda x: np.asarray(x[i, :, :f], np.float64)  # noqa: E731
    return Trace(
        time=g(traj.time), dt=float(np.asarray(batch.params.dt)[i]), active=np.asarray(traj.active[i, :, :f], bool),
        sent=per(traj.sent), acked=per(traj.acked), lost=per(traj.lost), admitted=per(traj.admitted),
        owd=per(traj.owd), qdelay=g(traj.qdelay), capacity=g(traj.capacity), queue=g(traj.queue),
        rate=None if rates is None else per(rates),
        cross=g(np.broadcast_to(np.asarray(traj.cross), np.shape(traj.time))))


# ----------------------------------------------------------------------------- building blocks


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` (0..100) percent of the total.

    Byte-weighted: every byte counts once.  NaN when the weights sum to zero.
    """
    v = np.asarray(values, np.float64).ravel()
    w = np.asarray(weights, np.float64).ravel()
    if v.shape != w.shape:
        raise ValueError(f"weighted_percentile: values {v.shape} and weights {w.shape} differ")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"weighted_percentile: q must be in [0, 100], got {q}")
    keep = w > 0
    v, w = v[keep], w[keep]
    if v.size == 0:
        return float("nan")
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    idx = int(np.searchsorted(cum, q / 100.0 * cum[-1] * (1 - 1e-12), side="left"))
    return float(v[order][min(idx, v.size - 1)])


def jain_index(x: Sequence[float]) -> float:
    """Jain's fairness index (Σx)²/(n·Σx²); 1 for a perfectly equal split, 1/n for one hog."""
    x = np.asarray(x, np.float64).ravel()
    if x.size == 0:
        raise ValueError("jain_index: needs at least one value")
    if np.any(x < 0):
        raise ValueError("jain_index: throughputs must be >= 0")
    sq = float(np.sum(x * x))
    if sq == 0.0:
        return 1.0  # nobody got anything: equally (un)served
    return float(np.sum(x) ** 2 / (x.size * sq))


def ankh(throughput: float, capacity: float, d95: float, d_max: float, loss: float) -> float:
    """Ankh's number ((1 − R/C) + d95/d_max + loss) / 3 (Pareto eq. 10 as Table II computes it).

    Args:
      throughput: average throughput R (any unit, the same as ``capacity``).
      capacity: average link capacity C.
      d95: the scheme's p95 one-way delay (any unit, the same as ``d_max``).
      d_max: the largest p95 one-way delay among the schemes compared.
      loss: loss rate as a fraction (0..1).
    Each term is clipped to [0, 1], as the paper states all of them are.
    """
    if capacity <= 0 or d_max <= 0:
        raise ValueError(f"ankh: capacity and d_max must be > 0 (got {capacity}, {d_max})")
    util_term = float(np.clip(1.0 - throughput / capacity, 0.0, 1.0))
    delay_term = float(np.clip(d95 / d_max, 0.0, 1.0))
    return (util_term + delay_term + float(np.clip(loss, 0.0, 1.0))) / 3.0


def power(throughput_mbps: float, delay_s: float) -> float:
    """Kleinrock's power: throughput (Mbit/s) over delay (s)."""
    return float(throughput_mbps / delay_s) if delay_s > 0 else float("inf")


def tcr_met(achieved: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Which targets a result meets (DeepCC §VI-B): throughput ≥ T1, delay ≤ T2 and loss ≤ T3.

    Args:
      achieved: [3] (throughput, queueing delay, loss) of a scheme run with its default
        objective, or [N, 3] one result per target (a goal-conditioned scheme tuned per target).
        A NaN component (not measured: the flow sent nothing) meets nothing.
      targets: [N, 3] targets T = (T1 throughput, T2 delay, T3 loss), in the same units.
    Returns:
      [N] bool.
    """
    t = np.asarray(targets, np.float64)
    a = np.asarray(achieved, np.float64)
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] == 0:
        raise ValueError(f"tcr: targets must be [N, 3], got {t.shape}")
    if a.shape not in ((3,), t.shape):
        raise ValueError(f"tcr: achieved must be [3] or {list(t.shape)}, got {list(a.shape)}")
    a = np.broadcast_to(a, t.shape)
    return (a[:, 0] >= t[:, 0]) & (a[:, 1] <= t[:, 1]) & (a[:, 2] <= t[:, 2])


def tcr(achieved: np.ndarray, targets: np.ndarray) -> float:
    """DeepCC's target completion ratio: the fraction of ``targets`` met (``tcr_met``)."""
    return float(np.mean(tcr_met(achieved, targets)))


def sample_tcr_targets(rng: np.random.Generator, n: int, max_throughput: float, max_delay: float,
                       max_loss: float = 0.10) -> np.ndarray:
    """DeepCC §VI's random targets: T1 ∈ [0, best throughput], T2 ∈ [0, worst delay], T3 ∈ [0, 10 %]."""
    return np.stack([rng.uniform(0, max_throughput, n), rng.uniform(0, max_delay, n), rng.uniform(0, max_loss, n)], 1)


# ----------------------------------------------------------------------------- per trace


def _window_mask(tr: Trace, window: tuple[float, float] | None) -> np.ndarray:
    if window is None:
        return np.ones(tr.time.shape, bool)
    t0, t1 = window
    return (tr.time > t0 + 1e-9) & (tr.time <= t1 + 1e-9)


def flow_throughput(tr: Trace, flow: int, window: tuple[float, float] | None = None) -> float:
    """Goodput of one flow in bytes/s: ACKed bytes over its active time (inside ``window``)."""
    m = _window_mask(tr, window)
    active_s = float(np.sum(tr.active[m, flow])) * tr.dt
    if active_s <= 0:
        return float("nan")
    return float(np.sum(tr.acked[m, flow])) / active_s


def flow_metrics(tr: Trace, flow: int, window: tuple[float, float] | None = None) -> dict:
    """Throughput, delays and loss of one flow (units: bytes/s, s, fraction)."""
    m = _window_mask(tr, window)
    sent = float(np.sum(tr.sent[m, flow]))
    adm = tr.admitted[m, flow]
    dropped = float(np.sum(tr.sent[m, flow] - adm))
    owd = tr.owd[m, flow]
    return {
        "throughput": flow_throughput(tr, flow, window),
        "p95_owd": weighted_percentile(owd, adm, 95),
        "p95_qdelay": weighted_percentile(tr.qdelay[m], adm, 95),
        "mean_owd": float(np.sum(owd * adm) / np.sum(adm)) if np.sum(adm) > 0 else float("nan"),
        "loss": dropped / sent if sent > 0 else 0.0,
        "sent_bytes": sent,
        "acked_bytes": float(np.sum(tr.acked[m, flow])),
        "active_s": float(np.sum(tr.active[m, flow])) * tr.dt,
    }


def link_metrics(tr: Trace, window: tuple[float, float] | None = None) -> dict:
    """Aggregate metrics of all flows on the link (units: bytes/s, s, fraction)."""
    m = _window_mask(tr, window)
    busy = m & np.any(tr.active, axis=1)  # ticks with at least one active flow
    busy_s = float(np.sum(busy)) * tr.dt
    acked = float(np.sum(tr.acked[m]))
    cap_bytes = float(np.sum(tr.capacity[busy])) * tr.dt
    sent = float(np.sum(tr.sent[m]))
    adm = tr.admitted[m]
    adm_link = np.sum(adm, axis=1)
    thr = acked / busy_s if busy_s > 0 else float("nan")
    return {
        "throughput": thr,
        "capacity": cap_bytes / busy_s if busy_s > 0 else float("nan"),
        "utilization": acked / cap_bytes if cap_bytes > 0 else float("nan"),
        "p95_owd": weighted_percentile(tr.owd[m], adm, 95),
        "p95_qdelay": weighted_percentile(tr.qdelay[m], adm_link, 95),
        "mean_owd": float(np.sum(tr.owd[m] * adm) / np.sum(adm)) if np.sum(adm) > 0 else float("nan"),
        "loss": float(np.sum(tr.sent[m] - adm)) / sent if sent > 0 else 0.0,
        "active_s": busy_s,
        # cross traffic carried (bytes/s admitted to the queue) over the whole window
        "cross": (float(np.sum(tr.cross[m])) / (float(np.sum(m)) * tr.dt)
                  if tr.cross is not None and np.any(m) else 0.0),
    }


def jain_window(end_s: float, last_s: float = JAIN_LAST_S) -> tuple[float, float]:
    """The window Jain's index is taken over: the last ``last_s`` seconds of a run ending at ``end_s``."""
    return (max(0.0, end_s - last_s), end_s)


def jain_of_active(throughputs: Sequence[float], active_s: Sequence[float], span_s: float,
                   min_active_frac: float = JAIN_MIN_ACTIVE_FRAC) -> tuple[float, list[int]]:
    """Jain's index over the flows active for at least ``min_active_frac`` of a window.

    Args:
      throughputs: each flow's goodput inside the window (any one unit).
      active_s: each flow's active time inside the window (s).
      span_s: the window's length (s).
      min_active_frac: a flow active for less of the window does not count: one that stops (or
        starts) at the window's edge would otherwise enter with a moment of activity and the
        ACKs of a whole window in flight — a meaningless rate.
    Returns:
      (index, the indices of the flows counted); (NaN, []) when none counts.
    """
    flows = [f for f, a in enumerate(active_s) if a >= min_active_frac * span_s]
    if not flows:
        return float("nan"), []
    return jain_index([throughputs[f] for f in flows]), flows


def jain_note(window: tuple[float, float], flows: list[int], last_s: float = JAIN_LAST_S) -> str:
    """The ``jain_note`` of a results record: which window and flows the index covers."""
    return f"Jain's index over the last {last_s:g} s ({window[0]:g}-{window[1]:g} s), flows active then: {flows}"


def jain_over(tr: Trace, window: tuple[float, float] | None = None, min_active_frac: float = JAIN_MIN_ACTIVE_FRAC
              ) -> tuple[float, list[int]]:
    """Jain's index over the flows active in ``window`` (each flow's goodput there); ``jain_of_active``
    chooses the flows."""
    m = _window_mask(tr, window)
    span = float(np.sum(m)) * tr.dt
    active = [float(np.sum(tr.active[m, f])) * tr.dt for f in range(tr.num_flows)]
    thr = [flow_throughput(tr, f, window) for f in range(tr.num_flows)]
    return jain_of_active(thr, active, span, min_active_frac)


def evaluate_trace(tr: Trace, *, window: tuple[float, float] | None = None, jain_last_s: float = JAIN_LAST_S) -> dict:
    """All report metrics of one run, in report units (Mbit/s, ms, fractions).

    Jain's index is taken over the last ``jain_last_s`` seconds of the run (``jain_window``; after
    the flows' start-up), over the flows active then (``jain_of_active``); a single-flow run
    reports 1.0.
    """
    lm = link_metrics(tr, window)
    end = float(tr.time[-1])
    jwin = jain_window(end, jain_last_s)
    if tr.num_flows > 1:
        jain, jflows = jain_over(tr, jwin)
        jnote = jain_note(jwin, jflows, jain_last_s)
    else:
        jain, jnote = 1.0, "single flow"
    per_flow = []
    for f in range(tr.num_flows):
        fm = flow_metrics(tr, f, window)
        per_flow.append({
            "flow": f,
            "throughput_mbps": fm["throughput"] / MBPS,
            "p95_owd_ms": fm["p95_owd"] * 1e3,
            "p95_qdelay_ms": fm["p95_qdelay"] * 1e3,
            "mean_owd_ms": fm["mean_owd"] * 1e3,
            "loss": fm["loss"],
            "active_s": fm["active_s"],
        })
    return {
        "throughput_mbps": lm["throughput"] / MBPS,
        "capacity_mbps": lm["capacity"] / MBPS,
        "utilization": lm["utilization"],
        "p95_owd_ms": lm["p95_owd"] * 1e3,
        "p95_qdelay_ms": lm["p95_qdelay"] * 1e3,
        "mean_owd_ms": lm["mean_owd"] * 1e3,
        "loss": lm["loss"],
        "cross_mbps": lm["cross"] / MBPS,
        "power": power(lm["throughput"] / MBPS, lm["mean_owd"]),
        "jain": jain,
        "jain_note": jnote,
        "jain_window_s": list(jwin) if tr.num_flows > 1 else None,
        "per_flow": per_flow,
    }


# The recovery measurements (``time_to_share``): the goodput must reach RAMP_FRACTION of
# the capacity in a whole bin of RAMP_BIN_S seconds (5 RTTs at 100 ms) and hold it, on average,
# for RAMP_HOLD_S seconds from that bin's start (20 RTTs at 100 ms).
RAMP_FRACTION = 0.8
RAMP_BIN_S = 0.5
RAMP_HOLD_S = 2.0


def _share(tr: Trace, acked: np.ndarray, window: tuple[float, float]) -> float:
    """Goodput of ``acked`` [T] over ``window`` divided by the window's mean capacity (NaN if the
    window is empty or the link is dark all through it: no share is reached there)."""
    m = _window_mask(tr, window)
    n = int(np.sum(m))
    cap = float(np.mean(tr.capacity[m])) if n else 0.0
    return float(np.sum(acked[m])) / (n * tr.dt) / cap if cap > 0 else float("nan")


def time_to_share(tr: Trace, t0: float, *, flows: Sequence[int] | None = None, frac: float = RAMP_FRACTION,
                  bin_s: float = RAMP_BIN_S, hold_s: float = RAMP_HOLD_S, t_end: float | None = None) -> float:
    """How long after ``t0`` the goodput of ``flows`` reaches ``frac`` of the link's capacity and holds it.

    Time from ``t0`` is cut into bins ``(t0 + k·bin_s, t0 + (k+1)·bin_s]`` (ticks by their end
    time, as every window here).  The answer is the end of the first whole bin, before ``t_end``
    (default: the run's end), in which the bytes ACKed to ``flows`` (all flows by default; by ACK
    time) per second are at least ``frac`` × the bin's mean capacity, and stay so on average over
    the ``hold_s`` seconds from the bin's start (cut at ``t_end``).  So a start-up overshoot that
    falls back within the hold does not count, and a brief dip inside it (BBR's 200 ms ProbeRTT)
    does not spoil it.  The resolution is ``bin_s``; the shortest answer is ``bin_s``.  ``inf``
    when no bin qualifies.

    The robust bars: started at 1 % of the capacity (``t0`` = the start) or after a capacity
    step up (``t0`` = the step), ≥ 80 % within 10 s or 5 s; after a flow leaves (``t0`` = its
    stop, ``flows`` = those still sending), the rest reach 80 % within 5 s.
    """
    if bin_s <= 0 or hold_s < bin_s or not frac > 0:
        raise ValueError(f"time_to_share: need bin_s > 0, hold_s >= bin_s, frac > 0; got {bin_s}, {hold_s}, {frac}")
    end = float(tr.time[-1]) if t_end is None else min(float(t_end), float(tr.time[-1]))
    cols = list(range(tr.num_flows)) if flows is None else list(flows)
    acked = np.sum(tr.acked[:, cols], axis=1) if cols else np.zeros_like(tr.time)
    return first_held_bin(lambda lo, hi: _share(tr, acked, (lo, hi)), t0, end, frac, bin_s, hold_s)


def first_held_bin(share, t0: float, end: float, frac: float = RAMP_FRACTION, bin_s: float = RAMP_BIN_S,
                   hold_s: float = RAMP_HOLD_S) -> float:
    """``time_to_share``'s scan over any goodput source: ``share(lo, hi)`` is the goodput over
    ``(lo, hi]`` as a fraction of the capacity there.  The end of the first whole bin from ``t0``
    (before ``end``) whose share, and whose mean share over ``hold_s`` from its start (cut at
    ``end``), reach ``frac``, counted from ``t0``; ``inf`` when none does."""
    k = 0
    while t0 + (k + 1) * bin_s <= end + 1e-9:
        lo = t0 + k * bin_s
        if share(lo, lo + bin_s) >= frac and share(lo, min(lo + hold_s, end)) >= frac:
            return (k + 1) * bin_s
        k += 1
    return float("inf")


# Time to fairness (``time_to_fairness``): Jain's index over the flows sending must reach
# FAIR_JAIN in a whole bin and hold it over the RAMP_HOLD_S from the bin's start; the bins and
# the hold are the recovery measurements' (RAMP_BIN_S, RAMP_HOLD_S).  0.9 is two flows at a 2:1 ratio
# (Jain(1, r) = 0.9 at r = 1/2 and r = 2).
FAIR_JAIN = 0.9


def time_to_fairness(tr: Trace, t0: float, flows: Sequence[int], *, threshold: float = FAIR_JAIN,
                     bin_s: float = RAMP_BIN_S, hold_s: float = RAMP_HOLD_S, t_end: float | None = None) -> float:
    """How long after ``t0`` (a flow's arrival or departure) Jain's index over ``flows`` (the flows
    sending after the event) reaches ``threshold`` and holds it.

    The scan is ``first_held_bin``'s: bins ``(t0 + k·bin_s, t0 + (k+1)·bin_s]``; the answer is the
    end of the first whole bin before ``t_end`` (default: the run's end; a caller passes the next
    arrival or departure) in which Jain's index of the ``flows``' goodputs (``flow_throughput``:
    ACKed bytes over each flow's active time in the bin) is at least ``threshold``, and over the
    ``hold_s`` seconds from the bin's start (cut at ``t_end``) too.  A window in which a flow has
    no active time, or no flow has any goodput (a dark link), does not count as fair (index 0).
    ``inf`` when no bin qualifies; needs two flows or more.
    """
    cols = list(flows)
    if len(cols) < 2:
        raise ValueError(f"time_to_fairness: needs two or more flows, got {cols}")
    if bin_s <= 0 or hold_s < bin_s or not 0 < threshold <= 1:
        raise ValueError(f"time_to_fairness: need bin_s > 0, hold_s >= bin_s, 0 < threshold <= 1; "
                         f"got {bin_s}, {hold_s}, {threshold}")
    end = float(tr.time[-1]) if t_end is None else min(float(t_end), float(tr.time[-1]))

    def jain(lo: float, hi: float) -> float:
        x = [flow_throughput(tr, f, (lo, hi)) for f in cols]
        return 0.0 if any(math.isnan(v) for v in x) or sum(x) <= 0 else jain_index(x)

    return first_held_bin(jain, t0, end, threshold, bin_s, hold_s)


def fair_share_fractions(tr: Trace, window: tuple[float, float]) -> list[float]:
    """Each flow's goodput in ``window`` over its fair share, the window's mean capacity divided by
    the number of flows counted (``jain_over``'s: active for at least a quarter of the window);
    NaN for a flow not counted.  The starvation bar: every counted flow ≥ ½."""
    _, counted = jain_over(tr, window)
    m = _window_mask(tr, window)
    if not counted or not np.any(m):
        return [float("nan")] * tr.num_flows
    share = float(np.mean(tr.capacity[m])) / len(counted)
    return [flow_throughput(tr, f, window) / share if f in counted else float("nan") for f in range(tr.num_flows)]


def time_series(tr: Trace, bin_s: float = 0.5) -> dict:
    """Per-flow goodput and one-way delay per time bin, and the link capacity, for plots.

    Returns a dict of ``t`` [N] (bin centres, s), ``throughput_mbps`` [N, F] (bytes ACKed in the
    bin, by ACK time, over the bin's width; NaN where the flow was not active at all in the bin),
    ``owd_ms`` [N, F] and ``capacity_mbps`` [N].

    ``owd_ms`` is, per flow and bin, the byte-weighted mean one-way delay of the flow's bytes that
    *reached the receiver* in the bin.  ``Trace.owd[k, f]`` is the one-way delay (queueing +
    half the path RTT, + jitter on a realism link) of the bytes ``Trace.admitted[k, f]`` that
    entered the queue in tick ``k``; they arrive at ``time[k] - dt/2 + owd[k, f]``, and each tick's
    admitted bytes weigh their delay into the bin of that arrival (dropped bytes have no delay;
    bytes arriving after the trace's end are left out).  NaN where none of the flow's bytes
    arrived.  It is the receiver's view, as the emulation's ``owd_series`` (the receiver's
    per-packet delays per bin); the ACKs that ``throughput_mbps`` counts come half an RTT later.
    """
    if bin_s <= 0:
        raise ValueError("time_series: bin_s must be > 0")
    nb = max(1, int(math.ceil(float(tr.time[-1]) / bin_s - 1e-6)))
    edges = np.arange(nb + 1) * bin_s
    idx = np.clip(np.searchsorted(edges, tr.time - 0.5 * tr.dt, side="right") - 1, 0, len(edges) - 2)
    nb = len(edges) - 1
    acked = np.zeros((nb, tr.num_flows))
    active = np.zeros((nb, tr.num_flows))
    np.add.at(acked, idx, tr.acked)
    np.add.at(active, idx, tr.active.astype(np.float64))
    cap = np.zeros(nb)
    cnt = np.zeros(nb)
    np.add.at(cap, idx, tr.capacity)
    np.add.at(cnt, idx, 1.0)
    width = cnt * tr.dt
    thr = np.where(active > 0, acked / np.maximum(width, 1e-12)[:, None], np.nan) / MBPS
    # one-way delay by arrival at the receiver, weighted by the bytes admitted
    arrive = (tr.time - 0.5 * tr.dt)[:, None] + tr.owd
    w = np.where(arrive < edges[-1], tr.admitted, 0.0)
    aidx = np.clip(np.searchsorted(edges, arrive, side="right") - 1, 0, nb - 1)
    fidx = np.broadcast_to(np.arange(tr.num_flows), arrive.shape)
    wsum = np.zeros((nb, tr.num_flows))
    dsum = np.zeros((nb, tr.num_flows))
    np.add.at(wsum, (aidx, fidx), w)
    np.add.at(dsum, (aidx, fidx), w * tr.owd)
    owd = np.where(wsum > 0, dsum / np.maximum(wsum, 1e-30), np.nan) * 1e3
    return {"t": 0.5 * (edges[:-1] + edges[1:]), "throughput_mbps": thr, "owd_ms": owd,
            "capacity_mbps": cap / np.maximum(cnt, 1) / MBPS}


def json_safe(x):
    """``x`` (records, meta) as strict JSON values: NumPy scalars as Python numbers, NaN and ±inf
    (a metric that does not exist for a run) as ``None``.  ``results.json`` of evaluation and of
    emulation both go through it."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, np.integer):
        return int(x)
    return x
