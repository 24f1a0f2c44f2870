"""The project's quality bars as checks over ``jaxcc.evaluate`` records.

    python -m jaxcc.evaluate --suite=pareto,pareto-fair,robust --controller=bbr,cubic,policy:FILE --bars=pareto --out=DIR
    python -m jaxcc.evaluate --suite=aurora-figs,robust --controller=cubic,policy:FILE --bars=aurora --out=DIR
    python -m jaxcc.evaluate --suite=eagle,robust --controller=bbr,policy:FILE --bars=eagle --out=DIR
    (or --checkpoint=RUN instead of policy:FILE: every exported stage of a training run)

prints, after the usual table, each evaluated policy's verdict on every bar, and stores the same
verdicts in ``DIR/results.json`` (``"bars"``).  A bar is never relaxed here: the
thresholds are the project's bars for each paper, written below, and a missing record
(scenario not run, no ``bbr`` to compare with) is reported as unmet with the reason.

``pareto`` (Pareto's six §V bars, for Pareto-Fair in the simulator):

* ``pareto/fixed50`` (50 Mbit/s, 90 ms): utilization ≥ 0.85, p95 queueing delay ≤ 45 ms, loss ≤ 1 %;
* ``pareto/dyn10-30`` (10↔30 Mbit/s every 5 s): utilization ≥ 0.70;
* ``pareto/shared2``…``shared5``: Jain's index over the last 20 s ≥ 0.95 for every flow count;
* Ankh's number below in-sim BBR's on at least 4 of the 6 Fig. 5 scenarios (suite ``pareto-fig5``);

and the fairness bars of robust training (suites ``pareto-fair`` and ``pareto``; every value
from ``jaxcc.evaluate``'s records, measured there by ``recovery_metrics``):

* ``pareto/shared8``: Jain's index over the last 20 s ≥ 0.95 with 8 flows;
* ``pareto/rtt30-120`` and ``pareto/rtt20-160``: Jain's index ≥ in-sim CUBIC's on the same link
  (needs ``cubic``);
* ``pareto/depart4``: after each departure (30, 40, 50 s) the flows still sending carry ≥ 80 %
  of the capacity within 5 s (``reclaim_s`` ≤ 5 for every departure);
* ``pareto/jitter4`` (± 5 ms non-congestive jitter): every flow ≥ ½ its fair share over the last
  20 s (``min_fair_share`` ≥ 0.5);
* time to fairness, on ``pareto/shared2``–``shared5``, ``shared8`` and ``depart4``: after every
  arrival and departure, Jain's index over the flows sending ≥ 0.9 within 5 s (``time_to_fair_s``,
  ``jaxcc.evaluation.metrics.time_to_fairness``: a 0.5 s bin whose next 2 s hold it).  An event
  followed by the next one within 5 s (the arrivals 2 s apart) is judged only if the flows were
  fair before it; otherwise it is counted as not judged, not as missed;
* the ``robust`` bars below.

``robust`` (robust training, every shipped policy; suite ``robust``; "reach" = a 0.5 s bin at
≥ 80 % whose next 2 s hold it on average, ``jaxcc.evaluation.metrics.time_to_share``, also for ``depart4``
above):

* ``robust/start1pct`` (50 Mbit/s, started at 0.5 Mbit/s): ≥ 80 % utilization within 10 s of the
  start (``ramp_s`` ≤ 10);
* ``robust/step5-50`` (5 → 50 Mbit/s at 10 s): ≥ 80 % within 5 s of the step (``step_ramp_s`` ≤ 5).

``outage`` (every family; suite ``outage``: 10, 20 and 50 Mbit/s links dark for 1-8 s, then back):
on each link the loss over the run ≤ 3 % and ≥ 80 % of the capacity within 3 s of the link's
return (``step_ramp_s`` of the return ≤ 3).  BBR and CUBIC stop sending when no ACK comes back
(their windows fill); a rate-based policy that keeps its rate loses what it sends into the dark.

``coexist`` (every family; suite ``coexist``, run with ``--controller=cubic,bbr,...``; share
and harm as ``jaxcc.evaluation.coexist`` defines them): on every ``coexist/cubic*`` link (1–4
CUBIC flows at 40 ms, and a 20/80 ms pair both ways) the evaluated flow takes between 0.5× and
2× its fair share, and harms the CUBIC flows no more than BBR does in its place (throughput
harm and delay harm each ≤ BBR's).  The ``coexist/bbr*`` links are reported, not judged.

``aurora`` (robust training): on ``aurora/fig2`` (30 Mbit/s, 1 % random loss, 10-packet queue) the
policy's loss below in-sim CUBIC's (needs ``cubic``); and the ``robust`` bars.

``eagle`` (Eagle §V, kept by robust training): on each of ``eagle/10mbps-bdp1``, ``-bdp2``,
``-bdp4`` and ``eagle/lte``, ≥ 90 % of in-sim BBR's throughput at a ≥ 2× lower p95 one-way delay
(needs ``bbr``); and the ``robust`` bars.  (Robust training asks for these on 3 of 4 training
seeds: one evaluation judges one policy file; run it once per seed.)

``mocc`` (MOCC's preference sweep, over the records of ``python -m jaxcc.preference_sweep
--suite=mocc``, which carry each MOCC run's ``preference`` = (w_thr, w_delay, w_loss); an
evaluation without preferences leaves every bar "not evaluated"):

* (a) on **each** of the ``mocc`` suite's links (``MOCC_LINKS``: 12 and 50 Mbit/s, the 18–90 KB
  buffers, LTE up and down — "MOCC's links"; one verdict per link, so a policy meets (a) when all
  nine are met): over the throughput–delay edge of the sweep (w_loss = 0, ≥ 9 points, ordered by
  falling w_thr), Spearman's rank correlation between w_thr and throughput ≥ 0.8 and between
  w_thr and p95 queueing delay ≥ 0.8 (both fall as the throughput weight falls).  A delay that
  stays ≤ 2 ms at every edge point (``MOCC_FLAT_QDELAY_MS``) counts as flat, not as a miss: there
  is no queue for the preference to trade, and its delay test is met.  Otherwise a constant series
  has no rank correlation (undefined: unmet);
* (b) on ``mocc/12mbps``: the most throughput-heavy preference (largest w_thr) reaches ≥ 90 %
  utilization;
* (c) on ``mocc/12mbps``: the most delay-heavy preference (largest w_delay) has a p95 queueing
  delay ≤ 25 % of the throughput-heavy one's while holding ≥ 50 % utilization (the sweep's
  report gives the same numbers on every link, ``mocc_extremes``);
* (d) on each link: none of in-sim BBR, CUBIC and Copa dominates every MOCC point of the sweep
  (all preferences, the loss-heavy ones included); dominates = throughput ≥ and p95 queueing
  delay ≤, at least one strictly (``dominates``).

``deepcc`` (DeepCC's TCR bars, over the ``tcr`` rows of ``python -m jaxcc.tcr --suite=deepcc``:
each row a link, a controller and its target completion ratio; judged for every DeepCC policy,
i.e. every controller whose rows are ``tuned`` — run once per target with online tuning; the
other controllers get no verdicts of their own):

* ``deepcc/cellular`` (the untrained AT&T LTE link): TCR ≥ 67.4 % (the paper's untrained-link
  figure, §VI-B);
* ``deepcc/wifi`` (the trained Wi-Fi-like link): TCR ≥ 80 %;
* on each link of the ``deepcc`` suite (``DEEPCC_LINKS``: Wi-Fi, cellular, satellite): TCR strictly
  above every other controller's on that link (all untuned rows there: BBR, CUBIC, Copa, Aurora,
  Eagle, Pareto, MOCC — whatever the run judged; other DeepCC policies, e.g. other training
  seeds, are not "other controllers").  Unmet with the reason when the link or any other
  controller is missing.

``--bars`` takes a comma-separated list; a bar named by two sets is judged once.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from jaxcc.evaluation import coexist
from jaxcc.scenarios import SUITES


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One bar for one controller: its name, the measured value (as text) and whether it is met."""

    bar: str
    value: str
    met: bool


def _index(records: Sequence[dict]) -> dict[tuple[str, str], dict]:
    return {(r["scenario"], r["controller"]): r for r in records}


def pareto(records: Sequence[dict], controller: str) -> list[Verdict]:
    """Pareto's §V bars for ``controller`` (a label of ``records``); see the module docstring."""
    by = _index(records)
    out = []

    def rec(scenario):
        return by.get((scenario, controller))

    f = rec("pareto/fixed50")
    for name, key, fmt, ok in (("fixed50 util >= 0.85", "utilization", "{:.3f}", lambda x: x >= 0.85),
                               ("fixed50 p95 queueing <= 45 ms", "p95_qdelay_ms", "{:.1f} ms", lambda x: x <= 45.0),
                               ("fixed50 loss <= 1%", "loss", "{:.2%}", lambda x: x <= 0.01)):
        out.append(Verdict(name, "not evaluated", False) if f is None else Verdict(name, fmt.format(f[key]), ok(f[key])))
    d = rec("pareto/dyn10-30")
    out.append(Verdict("dyn10-30 util >= 0.70", "not evaluated" if d is None else f"{d['utilization']:.3f}",
                       d is not None and d["utilization"] >= 0.70))
    shared = [rec(f"pareto/shared{n}") for n in (2, 3, 4, 5)]
    if any(s is None for s in shared):
        out.append(Verdict("Jain >= 0.95 for 2-5 flows", "not evaluated (needs pareto/shared2..5)", False))
    else:
        j = [s["jain"] for s in shared]
        out.append(Verdict("Jain >= 0.95 for 2-5 flows", " / ".join(f"{x:.3f}" for x in j), min(j) >= 0.95))
    fig5 = SUITES["pareto-fig5"]
    pairs = [(rec(s), by.get((s, "bbr"))) for s in fig5]
    if any(a is None or b is None for a, b in pairs):
        out.append(Verdict("Ankh < BBR on >= 4 of 6 Fig. 5 scenarios",
                           "not evaluated (needs the pareto-fig5 scenarios and --controller=bbr)", False))
    else:
        wins = sum(a["ankh"] < b["ankh"] for a, b in pairs)
        out.append(Verdict("Ankh < BBR on >= 4 of 6 Fig. 5 scenarios", f"{wins} of 6", wins >= 4))
    return out + pareto_fair(records, controller) + robust(records, controller)


NOT_EVALUATED = "not evaluated"
NOT_MEASURED = "not measured (a record without the recovery measurements: re-run jaxcc.evaluate)"


def _never(x) -> bool:
    """A recovery time that never happened (``inf`` in memory, ``null`` in results.json)."""
    return x is None or (isinstance(x, float) and math.isinf(x))


def _secs(x) -> str:
    return "never" if _never(x) else f"{x:.1f} s"


def _within(x, limit: float) -> bool:
    return not _never(x) and not math.isnan(x) and x <= limit


def pareto_fair(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The Pareto fairness bars of robust training for ``controller`` (module docstring)."""
    by = _index(records)
    out = []
    s8 = by.get(("pareto/shared8", controller))
    bar = "Jain >= 0.95 for 8 flows"
    out.append(Verdict(bar, f"{NOT_EVALUATED} (needs pareto/shared8)", False) if s8 is None
               else Verdict(bar, f"{s8['jain']:.3f}", s8["jain"] >= 0.95))
    for link in ("rtt30-120", "rtt20-160"):
        r, c = by.get((f"pareto/{link}", controller)), by.get((f"pareto/{link}", "cubic"))
        bar = f"{link} Jain >= in-sim CUBIC's"
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs pareto/{link} and --controller=cubic)", False)
                   if r is None or c is None else
                   Verdict(bar, f"{r['jain']:.3f} vs CUBIC {c['jain']:.3f}", r["jain"] >= c["jain"]))
    d = by.get(("pareto/depart4", controller))
    bar = "depart4: the rest reach >= 80% within 5 s of each departure"
    if d is None:
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs pareto/depart4)", False))
    elif "reclaim_s" not in d:
        out.append(Verdict(bar, NOT_MEASURED, False))
    elif not d["reclaim_s"]:
        out.append(Verdict(bar, "no departure measured", False))
    else:
        v = " / ".join(f"{_secs(x)} after {t:g} s" for t, x in zip(d["depart_at_s"], d["reclaim_s"]))
        out.append(Verdict(bar, v, all(_within(x, 5.0) for x in d["reclaim_s"])))
    j = by.get(("pareto/jitter4", controller))
    bar = "jitter4 (+-5 ms): every flow >= 1/2 its fair share"
    if j is None:
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs pareto/jitter4)", False))
    else:
        x = j.get("min_fair_share")
        ok = x is not None and not math.isnan(x) and x >= 0.5
        out.append(Verdict(bar, "not measured" if x is None or math.isnan(x) else f"smallest {x:.2f} of fair share", ok))
    out.append(_time_to_fairness(by, controller))
    return out


FAIRNESS_EVENT_LINKS = ("pareto/shared2", "pareto/shared3", "pareto/shared4", "pareto/shared5", "pareto/shared8",
                        "pareto/depart4")
FAIR_WITHIN_S = 5.0


def _time_to_fairness(by: dict, controller: str) -> Verdict:
    """Jain ≥ 0.9 within 5 s of every arrival and departure on ``FAIRNESS_EVENT_LINKS``."""
    bar = "Jain >= 0.9 within 5 s of every arrival and departure"
    recs = [by.get((s, controller)) for s in FAIRNESS_EVENT_LINKS]
    if any(r is None for r in recs):
        return Verdict(bar, f"{NOT_EVALUATED} (needs {', '.join(FAIRNESS_EVENT_LINKS)})", False)
    if any("time_to_fair_s" not in r for r in recs):
        return Verdict(bar, NOT_MEASURED, False)
    judged, late, skipped = 0, [], 0
    for s, r in zip(FAIRNESS_EVENT_LINKS, recs):
        for t, until, x in zip(r["fair_at_s"], r["fair_until_s"], r["time_to_fair_s"]):
            if until - t < FAIR_WITHIN_S and not _within(x, FAIR_WITHIN_S):
                skipped += 1  # the next event came first: not judged
                continue
            judged += 1
            if not _within(x, FAIR_WITHIN_S):
                late.append(f"{s.split('/')[-1]} {_secs(x)} after {t:g} s")
    note = f"; {skipped} not judged (next event within {FAIR_WITHIN_S:g} s)" if skipped else ""
    if not judged:
        return Verdict(bar, f"no event judged{note}", False)
    value = f"{judged - len(late)} of {judged} events" + (": " + ", ".join(late) if late else "") + note
    return Verdict(bar, value, not late)


def robust(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The robust start-rate and capacity-step bars for ``controller`` (module docstring)."""
    by = _index(records)
    out = []
    s = by.get(("robust/start1pct", controller))
    bar = "start at 1%: >= 80% util within 10 s"
    if s is None:
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs robust/start1pct)", False))
    elif "ramp_s" not in s:
        out.append(Verdict(bar, NOT_MEASURED, False))
    else:
        out.append(Verdict(bar, _secs(s["ramp_s"]), _within(s["ramp_s"], 10.0)))
    t = by.get(("robust/step5-50", controller))
    bar = "5 -> 50 Mbit/s: >= 80% util within 5 s"
    if t is None:
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs robust/step5-50)", False))
    elif "step_ramp_s" not in t:
        out.append(Verdict(bar, NOT_MEASURED, False))
    elif not t["step_ramp_s"]:
        out.append(Verdict(bar, "no step up measured", False))
    else:
        x = t["step_ramp_s"][0]
        out.append(Verdict(bar, _secs(x), _within(x, 5.0)))
    return out


OUTAGE_MAX_LOSS, OUTAGE_RETURN_S = 0.03, 3.0


def outage(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The outage bars for ``controller`` on every link of the ``outage`` suite (module docstring):
    loss over the run ≤ 3 % and ≥ 80 % of the capacity within 3 s of the link's return."""
    by = _index(records)
    out = []
    for scen in SUITES["outage"]:
        r = by.get((scen, controller))
        bar_loss, bar_back = f"{scen}: loss <= 3%", f"{scen}: >= 80% util within 3 s of the return"
        if r is None:
            out += [Verdict(bar_loss, f"{NOT_EVALUATED} (needs {scen})", False),
                    Verdict(bar_back, f"{NOT_EVALUATED} (needs {scen})", False)]
            continue
        loss = r.get("loss")
        out.append(Verdict(bar_loss, NOT_MEASURED if loss is None else f"{100 * loss:.2f}%",
                           loss is not None and loss <= OUTAGE_MAX_LOSS))
        back = r.get("step_ramp_s") or []
        if not back:
            out.append(Verdict(bar_back, NOT_MEASURED, False))
        else:
            out.append(Verdict(bar_back, _secs(back[-1]), _within(back[-1], OUTAGE_RETURN_S)))
    return out


def aurora(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The robust-training Aurora bars for ``controller`` (module docstring)."""
    by = _index(records)
    a, c = by.get(("aurora/fig2", controller)), by.get(("aurora/fig2", "cubic"))
    bar = "aurora/fig2 loss < in-sim CUBIC's"
    v = (Verdict(bar, f"{NOT_EVALUATED} (needs aurora/fig2 and --controller=cubic)", False) if a is None or c is None
         else Verdict(bar, f"{a['loss']:.2%} vs CUBIC {c['loss']:.2%}", a["loss"] < c["loss"]))
    return [v] + robust(records, controller)


EAGLE_LINKS = ("eagle/10mbps-bdp1", "eagle/10mbps-bdp2", "eagle/10mbps-bdp4", "eagle/lte")


def eagle(records: Sequence[dict], controller: str) -> list[Verdict]:
    """Eagle's §V bar on each of its links, and the robust bars (module docstring)."""
    by = _index(records)
    out = []
    for link in EAGLE_LINKS:
        e, b = by.get((link, controller)), by.get((link, "bbr"))
        bar = f"{link}: >= 90% of BBR's throughput at >= 2x lower p95 delay"
        if e is None or b is None:
            out.append(Verdict(bar, f"{NOT_EVALUATED} (needs {link} and --controller=bbr)", False))
            continue
        thr = e["throughput_mbps"] / b["throughput_mbps"]
        lower = b["p95_owd_ms"] / e["p95_owd_ms"]
        out.append(Verdict(bar, f"{thr:.0%} of BBR, {lower:.2f}x lower",
                           e["throughput_mbps"] >= 0.9 * b["throughput_mbps"] and 2.0 * e["p95_owd_ms"] <= b["p95_owd_ms"]))
    return out + robust(records, controller)


def pareto_links(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The robust fixed-link bars on both links of suite ``pareto-links`` (in the simulator or
    from ``jaxcc.emulate``/``sim2real`` records): utilization ≥ 0.85, p95 queueing ≤ 45 ms,
    loss ≤ 1 % on ``pareto/fixed50`` and on ``pareto/link12`` (12 Mbit/s, 40 ms, 375 KB)."""
    by = _index(records)
    out = []
    for scen in SUITES["pareto-links"]:
        f = by.get((scen, controller))
        short = scen.split("/")[1]
        for name, key, fmt, ok in ((f"{short} util >= 0.85", "utilization", "{:.3f}", lambda x: x >= 0.85),
                                   (f"{short} p95 queueing <= 45 ms", "p95_qdelay_ms", "{:.1f} ms", lambda x: x <= 45.0),
                                   (f"{short} loss <= 1%", "loss", "{:.2%}", lambda x: x <= 0.01)):
            out.append(Verdict(name, f"{NOT_EVALUATED} (needs {scen})", False) if f is None
                       else Verdict(name, fmt.format(f[key]), ok(f[key])))
    return out


# ---------------------------------------------------------------------- MOCC (preference sweep)

MOCC_LINKS = SUITES["mocc"]  # the links the per-link bars are judged on (module docstring)
MOCC_LINK12 = "mocc/12mbps"  # the 12 Mbit/s / 20 ms RTT / 375 KB link of bars (b) and (c)
MOCC_BASELINES = ("bbr", "cubic", "copa")  # bar (d)'s in-sim baselines
MOCC_SPEARMAN_MIN = 0.8
MOCC_MIN_EDGE_POINTS = 9  # the sweep's >= 9 points on the throughput-delay edge
MOCC_FLAT_QDELAY_MS = 2.0  # (a) a p95 queueing delay <= this at every edge point is flat, not a miss
MOCC_UTIL_THR_MIN = 0.90  # (b) the most throughput-heavy preference on mocc/12mbps
MOCC_DELAY_RATIO_MAX = 0.25  # (c) its p95 queueing delay over the throughput-heavy one's, at most
MOCC_UTIL_DELAY_MIN = 0.50  # (c) ... while holding this utilization
EDGE_TOL = 1e-6  # a preference is on the throughput-delay edge when its loss weight is below this


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (``scipy.stats.spearmanr``: Pearson's r of
    the average ranks, so ties share their mean rank); NaN when either is constant (undefined),
    shorter than 2 or holds a NaN (a metric not measured)."""
    import warnings

    from scipy import stats

    x, y = [float(v) for v in x], [float(v) for v in y]
    if len(x) != len(y):
        raise ValueError(f"spearman: x and y differ in length ({len(x)} vs {len(y)})")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2 or any(math.isnan(v) for v in x + y):
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(x, y).statistic)


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether point ``a`` = (throughput, p95 queueing delay) dominates ``b``: throughput >= and
    delay <=, at least one of them strictly (exact comparisons, no tolerance)."""
    (ta, qa), (tb, qb) = a, b
    return ta >= tb and qa <= qb and (ta > tb or qa < qb)


def _pref(r: dict) -> tuple[float, float, float] | None:
    p = r.get("preference")
    if not isinstance(p, (list, tuple)) or len(p) != 3:
        return None
    return tuple(float(v) for v in p)


def mocc_points(records: Sequence[dict], controller: str, scenario: str) -> list[dict]:
    """``controller``'s preference-sweep records on ``scenario`` (those with a ``preference``)."""
    return [r for r in records if r["controller"] == controller and r["scenario"] == scenario and _pref(r) is not None]


def edge_points(points: Sequence[dict]) -> list[dict]:
    """The points on the throughput-delay edge (loss weight 0), by falling throughput weight."""
    return sorted((r for r in points if _pref(r)[2] < EDGE_TOL), key=lambda r: -_pref(r)[0])


def _pref_text(p) -> str:
    return "(" + ", ".join(f"{v:g}" for v in p) + ")"


_NEEDS_SWEEP = "needs the preference sweep's records: python -m jaxcc.preference_sweep --suite=mocc"


def mocc_steering(records: Sequence[dict], controller: str, link: str) -> tuple[list[dict], float, float, bool]:
    """Bar (a)'s test on one link: ``controller``'s throughput–delay edge there (``edge_points``),
    Spearman(w_thr, throughput), Spearman(w_thr, p95 queueing), and whether the preference steers
    (≥ ``MOCC_MIN_EDGE_POINTS`` edge points, the throughput one ≥ ``MOCC_SPEARMAN_MIN`` and the
    delay one too unless the delay is flat, ``flat_qdelay``; NaN, undefined, fails).
    Used on MOCC's links by bar (a) and on held-out links by ``launch/mocc_heldout.py``."""
    edge = edge_points(mocc_points(records, controller, link))
    if len(edge) < MOCC_MIN_EDGE_POINTS:
        return edge, float("nan"), float("nan"), False
    w = [_pref(r)[0] for r in edge]
    rt = spearman(w, [r["throughput_mbps"] for r in edge])
    rq = spearman(w, [r["p95_qdelay_ms"] for r in edge])
    return edge, rt, rq, rt >= MOCC_SPEARMAN_MIN and (rq >= MOCC_SPEARMAN_MIN or flat_qdelay(edge))


def flat_qdelay(edge: Sequence[dict]) -> bool:
    """Whether the p95 queueing delay stays ≤ ``MOCC_FLAT_QDELAY_MS`` at every point of ``edge``
    (bar (a): a flat delay, not a miss; a NaN is not flat)."""
    return bool(edge) and all(float(r["p95_qdelay_ms"]) <= MOCC_FLAT_QDELAY_MS for r in edge)


def _mocc(records: Sequence[dict], controller: str) -> list[tuple[Verdict, dict]]:
    """Each MOCC bar's verdict with the numbers it was judged on (NaN: not measured)."""
    nan = float("nan")
    out: list[tuple[Verdict, dict]] = []
    # (a) per link: Spearman(w_thr, throughput) and Spearman(w_thr, p95 queueing) over the edge sweep
    for link in MOCC_LINKS:
        bar = (f"{link}: Spearman(w_thr, throughput) >= {MOCC_SPEARMAN_MIN:g} and "
               f"Spearman(w_thr, p95 queueing) >= {MOCC_SPEARMAN_MIN:g}")
        edge, rt, rq, ok = mocc_steering(records, controller, link)
        nums = {"rho_throughput": rt, "rho_p95_qdelay": rq, "edge_points": len(edge)}
        if len(edge) < MOCC_MIN_EDGE_POINTS:
            why = _NEEDS_SWEEP if not edge else f"{len(edge)} edge preferences, needs >= {MOCC_MIN_EDGE_POINTS}"
            out.append((Verdict(bar, f"{NOT_EVALUATED} ({why})", False), nums))
            continue
        def rho_text(rho, ys):
            if not math.isnan(rho):
                return f"{rho:.2f}"
            return "undefined (not measured at some preference)" if any(math.isnan(v) for v in ys) else "undefined (constant)"

        txt = " / ".join(rho_text(rho, [float(r[k]) for r in edge])
                         for rho, k in ((rt, "throughput_mbps"), (rq, "p95_qdelay_ms")))
        if flat_qdelay(edge):
            txt += f" (delay flat: <= {MOCC_FLAT_QDELAY_MS:g} ms at every point)"
        out.append((Verdict(bar, f"{txt} over {len(edge)} points", ok),
                    nums))
    # (b), (c) on the 12 Mbit/s link
    pts = mocc_points(records, controller, MOCC_LINK12)
    bar_b = f"{MOCC_LINK12}: most throughput-heavy preference util >= {MOCC_UTIL_THR_MIN:g}"
    bar_c = (f"{MOCC_LINK12}: most delay-heavy preference p95 queueing <= {MOCC_DELAY_RATIO_MAX:g} x the "
             f"throughput-heavy one's at util >= {MOCC_UTIL_DELAY_MIN:g}")
    if not pts:
        out.append((Verdict(bar_b, f"{NOT_EVALUATED} ({_NEEDS_SWEEP})", False), {"utilization": nan}))
        out.append((Verdict(bar_c, f"{NOT_EVALUATED} ({_NEEDS_SWEEP})", False),
                    {"qdelay_ratio": nan, "utilization": nan}))
        return out + _mocc_dominance(records, controller)
    th = mocc_extremes(pts)
    t, d = th["throughput_heavy"], th["delay_heavy"]
    out.append((Verdict(bar_b, f"{t['utilization']:.3f} at {_pref_text(_pref(t))}", t["utilization"] >= MOCC_UTIL_THR_MIN),
                {"utilization": t["utilization"]}))
    ratio = th["qdelay_ratio"]
    ok = d["p95_qdelay_ms"] <= MOCC_DELAY_RATIO_MAX * t["p95_qdelay_ms"] and d["utilization"] >= MOCC_UTIL_DELAY_MIN
    out.append((Verdict(bar_c, f"{d['p95_qdelay_ms']:.1f} vs {t['p95_qdelay_ms']:.1f} ms "
                               f"({'ratio undefined' if math.isnan(ratio) else f'{ratio:.2f}x'}), util "
                               f"{d['utilization']:.3f} at {_pref_text(_pref(d))}", ok),
                {"qdelay_ratio": ratio, "utilization": d["utilization"]}))
    return out + _mocc_dominance(records, controller)


def mocc_extremes(points: Sequence[dict]) -> dict:
    """The most throughput-heavy point (largest w_thr; ties: smallest w_loss) and the most
    delay-heavy one (largest w_delay; ties: smallest w_loss) of one link's sweep, and the ratio
    of their p95 queueing delays (NaN when the throughput-heavy one's is 0)."""
    t = min(points, key=lambda r: (-_pref(r)[0], _pref(r)[2]))
    d = min(points, key=lambda r: (-_pref(r)[1], _pref(r)[2]))
    q = t["p95_qdelay_ms"]
    return {"throughput_heavy": t, "delay_heavy": d, "qdelay_ratio": d["p95_qdelay_ms"] / q if q > 0 else float("nan")}


def dominating_baselines(records: Sequence[dict], controller: str, link: str) -> list[str] | None:
    """The baselines of ``MOCC_BASELINES`` that dominate every one of ``controller``'s sweep points
    on ``link`` (throughput and p95 queueing delay); None when the points or a baseline are missing."""
    pts = mocc_points(records, controller, link)
    base = {r["controller"]: r for r in records if r["scenario"] == link and r["controller"] in MOCC_BASELINES}
    if not pts or any(b not in base for b in MOCC_BASELINES):
        return None
    return [b for b in MOCC_BASELINES
            if all(dominates((base[b]["throughput_mbps"], base[b]["p95_qdelay_ms"]),
                             (r["throughput_mbps"], r["p95_qdelay_ms"])) for r in pts)]


def _mocc_dominance(records: Sequence[dict], controller: str) -> list[tuple[Verdict, dict]]:
    out = []
    for link in MOCC_LINKS:
        bar = f"{link}: no baseline ({', '.join(MOCC_BASELINES)}) dominates every MOCC point"
        dom = dominating_baselines(records, controller, link)
        if dom is None:
            why = (_NEEDS_SWEEP if not mocc_points(records, controller, link)
                   else f"needs {link} with --baselines={','.join(MOCC_BASELINES)}")
            out.append((Verdict(bar, f"{NOT_EVALUATED} ({why})", False), {"dominating": float("nan")}))
            continue
        n = len(mocc_points(records, controller, link))
        out.append((Verdict(bar, f"dominated by {', '.join(dom)}" if dom else f"none dominates all {n} points", not dom),
                    {"dominating": float(len(dom))}))
    return out


def mocc(records: Sequence[dict], controller: str) -> list[Verdict]:
    """MOCC's bars for ``controller`` over ``jaxcc.preference_sweep`` records (module docstring)."""
    return [v for v, _ in _mocc(records, controller)]


def mocc_numbers(records: Sequence[dict], controller: str) -> list[tuple[str, dict]]:
    """The numbers behind each of ``mocc``'s verdicts, in the same order: (bar, {name: value})."""
    return [(v.bar, nums) for v, nums in _mocc(records, controller)]


DEEPCC_LINKS = SUITES["deepcc"]  # the links of the "above every other controller" bar
DEEPCC_TCR_MIN = {"deepcc/cellular": 0.674, "deepcc/wifi": 0.80}  # DeepCC's TCR floors per link


def deepcc(records: Sequence[dict], controller: str) -> list[Verdict]:
    """DeepCC's TCR bars for ``controller`` over ``jaxcc.tcr`` rows (module docstring);
    ``[]`` for a controller that was not tuned per target (not a DeepCC policy)."""
    mine = {r["scenario"]: r for r in records if r["controller"] == controller and "tcr" in r}
    if not any(r.get("tuned") for r in mine.values()):
        return []
    out = []
    for link, floor in DEEPCC_TCR_MIN.items():
        bar = f"{link} TCR >= {100 * floor:g}%"
        r = mine.get(link)
        out.append(Verdict(bar, f"{NOT_EVALUATED} (needs {link} in python -m jaxcc.tcr)", False) if r is None
                   else Verdict(bar, f"{100 * r['tcr']:.1f}% ({r.get('met_count', '?')} of {r.get('targets', '?')})",
                                r["tcr"] >= floor))
    for link in DEEPCC_LINKS:
        bar = f"{link}: TCR above every other controller's"
        r = mine.get(link)
        others = [o for o in records if o["scenario"] == link and "tcr" in o and not o.get("tuned")]
        if r is None or not others:
            why = f"needs {link} in python -m jaxcc.tcr" if r is None else "no other controller judged there"
            out.append(Verdict(bar, f"{NOT_EVALUATED} ({why})", False))
            continue
        best = max(others, key=lambda o: o["tcr"])
        out.append(Verdict(bar, f"{100 * r['tcr']:.1f}% vs best other {100 * best['tcr']:.1f}% ({best['controller']}; "
                                f"{len(others)} others: {', '.join(o['controller'] for o in others)})",
                           r["tcr"] > best["tcr"]))
    return out


COEXIST_CUBIC_LINKS = tuple(s for s in SUITES["coexist"] if coexist.neighbour_kind(s) == "cubic")
COEXIST_SHARE = (0.5, 2.0)


def coexist_bars(records: Sequence[dict], controller: str) -> list[Verdict]:
    """The coexistence bars for ``controller`` on the ``coexist/cubic*`` links (module docstring)."""
    got = {r["scenario"]: r for r in coexist.rows(records, controller)}
    missing = [s for s in COEXIST_CUBIC_LINKS if s not in got or "bbr_harm" not in got[s]]
    lo, hi = COEXIST_SHARE
    names = (f"share beside CUBIC in [{lo:g}, {hi:g}]x fair on every coexist/cubic link",
             "harm to CUBIC (throughput and delay) <= BBR's on every coexist/cubic link")
    if missing:
        why = f"{NOT_EVALUATED} (needs {', '.join(missing)} with --controller=cubic,bbr)"
        return [Verdict(b, why, False) for b in names]
    rows = [got[s] for s in COEXIST_CUBIC_LINKS]
    short = [r["scenario"].split("/")[-1] for r in rows]
    shares = [r["share"] for r in rows]
    out = [Verdict(names[0], ", ".join(f"{n} {x:.2f}" for n, x in zip(short, shares)),
                   all(lo <= x <= hi for x in shares))]
    worse = [n for n, r in zip(short, rows)
             if not (r["harm"]["throughput"] <= r["bbr_harm"]["throughput"] and r["harm"]["delay"] <= r["bbr_harm"]["delay"])]
    value = ", ".join(f"{n} {coexist.fmt(r['harm']['throughput'])}/{coexist.fmt(r['harm']['delay'])} "
                      f"(BBR {coexist.fmt(r['bbr_harm']['throughput'])}/{coexist.fmt(r['bbr_harm']['delay'])})"
                      for n, r in zip(short, rows))
    out.append(Verdict(names[1], value, not worse))
    return out


BAR_SETS = {"pareto": pareto, "robust": robust, "aurora": aurora, "eagle": eagle, "pareto-links": pareto_links,
            "mocc": mocc, "deepcc": deepcc, "outage": outage, "coexist": coexist_bars}
BASELINE_LABELS = ("bbr", "cubic", "reno", "copa", "oracle")


def check(name: str, records: Sequence[dict]) -> dict[str, list[Verdict]]:
    """Verdicts of bar set ``name`` (or a comma-separated list of sets) for every evaluated
    controller except the baselines; a bar in two of the sets is judged once.  A controller none
    of the sets judges (``deepcc``'s untuned controllers) is left out."""
    names = [n.strip() for n in name.split(",") if n.strip()]
    bad = [n for n in names if n not in BAR_SETS]
    if bad or not names:
        raise ValueError(f"--bars: unknown bar set {(bad or [name])[0]!r}; expected one of {', '.join(sorted(BAR_SETS))}")
    labels = []
    for r in records:
        lab = r["controller"]
        if lab not in labels and lab not in BASELINE_LABELS and not lab.startswith("fixed:"):
            labels.append(lab)
    out = {}
    for lab in labels:
        vs: list[Verdict] = []
        for n in names:
            vs += [v for v in BAR_SETS[n](records, lab) if v.bar not in {w.bar for w in vs}]
        if vs:
            out[lab] = vs
    return out


def format_verdicts(verdicts: dict[str, list[Verdict]]) -> str:
    """One line per controller: every bar with its value and ✓/✗, then the count met."""
    lines = []
    for lab, vs in verdicts.items():
        parts = [f"{v.bar}: {v.value} {'✓' if v.met else '✗'}" for v in vs]
        lines.append(f"{lab}: {sum(v.met for v in vs)} of {len(vs)} bars met\n    " + "\n    ".join(parts))
    return "\n".join(lines)


def as_json(verdicts: dict[str, list[Verdict]]) -> dict:
    return {lab: [dataclasses.asdict(v) for v in vs] for lab, vs in verdicts.items()}
