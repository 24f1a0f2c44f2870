"""Online fine-tuning against its frozen control: the run plan and the report (``compare.json``,
``compare.md``) of ``python -m jaxcc.online --control=frozen``.

Does online learning beat running the offline policy as it is?  With ``--control=frozen`` the
command runs, for each learner seed of ``--learner-seeds``, two arms on the same scenario:

* ``learning``: the usual run (Algorithm 4: records in, TD3 steps, weights pushed);
* ``frozen``: the same command, learner and network with learning off (``Learner(learn=False)``):
  the senders stream their records, the learner takes them and turns them into transitions, and
  no gradient step runs, so no weights are pushed and every sender keeps weight version 0.  The
  sender, the link and the records are the same in kind as the learning arm's.

**Order.**  The arms run one after the other, interleaved, and the order alternates per seed
(``plan``: seed 0 learning then frozen, seed 1 frozen then learning, ...; ABBA
counterbalancing).  Two runs of a pair share the machine's state of the moment (the load of
other processes, the JAX compilation cache, the page cache), so interleaving keeps any drift over
the whole experiment from falling on one arm, and alternating keeps the first slot of a pair
(the colder caches, the first compile) from always being the same arm's.

**What is held equal** within a seed: the scenario, the starting policy, every flag, and the
network's randomness.  In the simulator (``--emulator=sim``) that randomness is the link seed
of ``jaxcc.online.simnet`` (``--net-seed``; by default each pair's learner seed, so it can differ
across seeds): random capacity forms (``random_steps``, ``poisson``) and the realism draws
(jitter, RTT noise) come from it; traces always start at their first line (no random offset)
and random loss is the fluid model's expected fraction, so neither draws anything.  The
simulated link is deterministic, so the frozen arm of a seed repeats bit for bit; the learning
arm does not, since when a pushed weight file reaches a decision depends on wall-clock timing.
Over ``netns`` and ``mahimahi`` the link's schedule is seed 0's draw for every arm
(``jaxcc.emulation.spec.rate_schedule``), random loss is the kernel's (iptables ``statistic``,
not seedable), and the kernel's timing (scheduling, pacing, queueing of real packets) is not
repeatable: two arms of one seed see the same link description, not the same packets, and
different machine load when other work runs beside them.

**The report.**  Per seed and arm: the first and last minute's throughput, utilization, p95
one-way delay, loss and Jain's index (each arm's ``results.json``), and Ankh's number
recomputed with one d_max per seed, the largest p95 delay of the seed's four windows (both arms,
both minutes), so the two arms' numbers are on one scale (each arm's own ``results.json`` takes
d_max over its own two minutes only).  Per seed: the last minute's Ankh difference learning −
frozen (lower Ankh is better: a negative difference favours learning) and its value relative to
the frozen arm's.  Over seeds: the median, min–max and, with >= 4 seeds, the interquartile range
(quartiles by linear interpolation, ``numpy.percentile``'s default).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Sequence

import numpy as np

ARMS = ("learning", "frozen")
WINDOW_KEYS = ("throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain")
ARM_COUNTS = ("weight_pushes", "updates_applied", "grad_steps", "weight_version", "records", "transitions")


def plan(seeds: Sequence[int]) -> list[tuple[int, str]]:
    """The runs in order: (seed, arm), the pairs interleaved and alternating which arm runs first
    (index 0: learning first; 1: frozen first; ...)."""
    out = []
    for i, s in enumerate(seeds):
        out += [(int(s), a) for a in (ARMS if i % 2 == 0 else ARMS[::-1])]
    return out


def arm_dir(out: str, seed: int, arm: str) -> str:
    """An arm's own ``--out``: ``OUT/seed<S>/<arm>``."""
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: expected one of {', '.join(ARMS)}")
    return os.path.join(out, f"seed{int(seed)}", arm)


def parse_seeds(text: str | None, flag: str = "--learner-seeds") -> list[int]:
    """``"0,1,2"`` -> [0, 1, 2].

    Raises:
      ValueError: empty, not integers >= 0, or a seed given twice (one line naming ``flag``).
    """
    items = [x.strip() for x in (text or "").split(",")]
    if not any(items):
        raise ValueError(f"{flag}={text!r}: empty; expected comma-separated integers >= 0, e.g. 0,1,2")
    seeds = []
    for x in items:
        if not x.isdigit():
            raise ValueError(f"{flag}={text}: {x!r} is not an integer >= 0; expected e.g. 0,1,2")
        if int(x) in seeds:
            raise ValueError(f"{flag}={text}: seed {int(x)} is given twice")
        seeds.append(int(x))
    return seeds


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def ankh(w: dict, d_max: float | None) -> float | None:
    """Ankh's number of one window (``jaxcc.evaluation.metrics.ankh``: utilization against a
    capacity of 1) at ``d_max``; None when a value it needs is missing."""
    from jaxcc.evaluation import metrics

    u, d, loss = _num(w.get("utilization")), _num(w.get("p95_owd_ms")), _num(w.get("loss"))
    if None in (u, d, loss, d_max) or not d_max > 0:
        return None
    return metrics.ankh(u, 1.0, d, d_max, loss)


def spread(values: Sequence[float | None]) -> dict[str, Any]:
    """Median, min, max and (>= 4 values) the quartiles and interquartile range of the values
    that are not None; ``n`` counts them."""
    v = np.asarray([x for x in values if x is not None], np.float64)
    out: dict[str, Any] = {"n": int(v.size), "median": None, "min": None, "max": None, "q25": None, "q75": None,
                           "iqr": None}
    if v.size:
        out.update(median=float(np.median(v)), min=float(v.min()), max=float(v.max()))
    if v.size >= 4:
        q25, q75 = np.percentile(v, [25, 75])
        out.update(q25=float(q25), q75=float(q75), iqr=float(q75 - q25))
    return out


def old_changes(res: dict) -> dict[str, float]:
    """A learning arm's forgetting figures per old link (``results.json``): the change of the
    mean Ankh over the link's neighbours where the check ran them
    (``old_env_neighbourhood_change``), else of the link's one run (``old_env_ankh_change``)."""
    nb = {k: v for k, v in (res.get("old_env_neighbourhood_change") or {}).items() if v is not None}
    return nb or {k: v for k, v in (res.get("old_env_ankh_change") or {}).items() if v is not None}


def seed_row(seed: int, arms: dict[str, dict]) -> dict[str, Any]:
    """One seed's comparison from its arms' results (``{"learning": res, "frozen": res}``, each
    a ``results.json`` of ``jaxcc.online``)."""
    wins = {a: {m: {k: arms[a][f"{m}_minute"].get(k) for k in WINDOW_KEYS} for m in ("first", "last")}
            for a in ARMS}
    p95s = [_num(wins[a][m]["p95_owd_ms"]) for a in ARMS for m in ("first", "last")]
    p95s = [p for p in p95s if p is not None]
    d_max = max(p95s) if p95s else None
    for a in ARMS:
        for m in ("first", "last"):
            wins[a][m]["ankh"] = ankh(wins[a][m], d_max)
    row: dict[str, Any] = {"seed": int(seed), "ankh_d_max_ms": d_max}
    for a in ARMS:
        row[a] = {**wins[a], **{k: arms[a].get(k) for k in ARM_COUNTS},
                  "net_seed": arms[a].get("net_seed"), "out": arms[a].get("out"),
                  "started_utc": arms[a].get("started_utc"), "wall_s": arms[a].get("wall_s")}
    lrn, frz = row["learning"]["last"]["ankh"], row["frozen"]["last"]["ankh"]
    diff = None if None in (lrn, frz) else lrn - frz
    row["last_ankh_diff"] = diff
    row["last_ankh_rel"] = None if diff is None or not frz else diff / frz
    fl, ff = row["learning"]["first"]["ankh"], row["frozen"]["first"]["ankh"]
    row["first_ankh_diff"] = None if None in (fl, ff) else fl - ff
    # The learner's own objective (the mean reward of the window's transitions: MOCC's ω*·r,
    # Pareto's --reward) and when each arm reached its operating point (``checks.operating_point_time``).
    for a in ARMS:
        for m in ("first", "last"):
            row[a][f"objective_{m}"] = _num((arms[a].get(f"records_{m}_minute") or {}).get("reward_mean"))
        op = arms[a].get("operating_point") or {}
        row[a]["op_time_s"], row[a]["op_first_time_s"] = _num(op.get("time_s")), _num(op.get("first_time_s"))
    ol, of = row["learning"]["objective_last"], row["frozen"]["objective_last"]
    row["last_objective_diff"] = None if None in (ol, of) else ol - of
    # forgetting: the worst old link's Ankh change, start -> final actor (the frozen arm has none)
    old = old_changes(arms["learning"])
    row["learning"]["old_worst_change"] = max(old.values()) if old else None
    row["learning"]["old_worst_link"] = max(old, key=old.get) if old else None
    return row


def compare(per_seed: dict[int, dict[str, dict]], *, order: Sequence[tuple[int, str]] = (),
            meta: dict | None = None) -> dict[str, Any]:
    """The report: ``rows`` (``seed_row`` per seed, in seed order of ``per_seed``) and
    ``summary`` (``spread`` over seeds of the last minute's Ankh difference, its relative value
    and each arm's last-minute Ankh)."""
    rows = [seed_row(s, arms) for s, arms in per_seed.items()]
    summary = {"last_ankh_diff": spread([r["last_ankh_diff"] for r in rows]),
               "last_ankh_rel": spread([r["last_ankh_rel"] for r in rows]),
               "learning_last_ankh": spread([r["learning"]["last"]["ankh"] for r in rows]),
               "frozen_last_ankh": spread([r["frozen"]["last"]["ankh"] for r in rows]),
               "last_objective_diff": spread([r["last_objective_diff"] for r in rows]),
               "learning_op_time_s": spread([r["learning"]["op_time_s"] for r in rows]),
               "frozen_op_time_s": spread([r["frozen"]["op_time_s"] for r in rows]),
               "learning_old_worst_change": spread([r["learning"]["old_worst_change"] for r in rows])}
    return {**(meta or {}), "order": [[int(s), a] for s, a in order], "rows": rows, "summary": summary}


def _f(x, fmt: str = ".3f") -> str:
    return "–" if x is None else format(x, fmt)


def _window(w: dict) -> str:
    return (f"{_f(w['utilization'])} / {_f(w['p95_owd_ms'], '.1f')} / {_f(w['loss'], '.4f')} / "
            f"{_f(w['jain'])} / **{_f(w['ankh'])}**")


def markdown(doc: dict) -> str:
    """``compare.md``: the arms' windows per seed, the per-seed differences and the spread."""
    lines = [f"# Online fine-tuning against the frozen policy: {doc.get('scenario')}, "
             f"{doc.get('emulator')}, {_f(doc.get('minutes'), 'g')} min", ""]
    if doc.get("command"):
        lines += ["    " + doc["command"], ""]
    if doc.get("order"):
        lines += ["Run order (interleaved, the first arm alternating per seed): "
                  + ", ".join(f"{a} s{s}" for s, a in doc["order"]) + ".", ""]
    lines += ["Each window: utilization / p95 one-way delay (ms) / loss / Jain / **Ankh** (lower is better; "
              "d_max = the largest p95 delay of the seed's four windows).", "",
              "| seed | arm | net seed | first minute | last minute | weight pushes | gradient steps |",
              "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        for a in ARMS:
            x = r[a]
            lines.append(f"| {r['seed']} | {a} | {_f(x.get('net_seed'), 'd')}"
                         f" | {_window(x['first'])} | {_window(x['last'])} | {_f(x.get('weight_pushes'), 'd')}"
                         f" | {_f(x.get('grad_steps'), 'd')} |")
    lines += ["", "| seed | last-minute Ankh, learning | frozen | learning − frozen | relative | d_max (ms) |",
              "|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        rel = None if r["last_ankh_rel"] is None else 100 * r["last_ankh_rel"]
        lines.append(f"| {r['seed']} | {_f(r['learning']['last']['ankh'])} | {_f(r['frozen']['last']['ankh'])} | "
                     f"{_f(r['last_ankh_diff'], '+.4f')} | {_f(rel, '+.1f')} % | {_f(r['ankh_d_max_ms'], '.1f')} |")
    lines += ["", "The learner's objective (the mean reward of the transitions a window's records closed; higher is "
              "better) and when the flows' 5-s throughput and mean RTT entered, and stayed within 10 % of, the "
              "last minute's (sender time):", "",
              "| seed | arm | objective, first minute | last minute | operating point first reached at (s) | "
              "and held from (s) |",
              "|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        for a in ARMS:
            x = r[a]
            lines.append(f"| {r['seed']} | {a} | {_f(x.get('objective_first'), '.4f')} | "
                         f"{_f(x.get('objective_last'), '.4f')} | {_f(x.get('op_first_time_s'), '.0f')} | "
                         f"{_f(x.get('op_time_s'), '.0f')} |")
    lines.append("")
    # (summary key, label, scale, format, unit, signed: a difference)
    for key, label, scale, fmt, unit, signed in (
            ("last_ankh_diff", "learning − frozen, last-minute Ankh", 1.0, ".4f", "", True),
            ("last_ankh_rel", "relative to frozen", 100.0, ".1f", " %", True),
            ("last_objective_diff", "learning − frozen, last-minute objective", 1.0, ".4f", "", True),
            ("learning_op_time_s", "learning arm, operating point held from", 1.0, ".0f", " s", False),
            ("frozen_op_time_s", "frozen arm, operating point held from", 1.0, ".0f", " s", False),
            ("learning_old_worst_change", "forgetting (the learning arm's worst old link, Ankh change)", 100.0,
             ".1f", " %", True)):
        s = doc["summary"][key]
        sc = (lambda v: None if v is None else scale * v)
        sf = ("+" if signed else "") + fmt
        txt = (f"- {label} over {s['n']} seed(s): median {_f(sc(s['median']), sf)}{unit}, "
               f"min–max {_f(sc(s['min']), sf)}{unit} … {_f(sc(s['max']), sf)}{unit}")
        if s["iqr"] is not None:
            txt += (f", IQR {_f(sc(s['iqr']), fmt)}{unit} ({_f(sc(s['q25']), sf)}{unit} … "
                    f"{_f(sc(s['q75']), sf)}{unit})")
        lines.append(txt)
    if doc.get("held_equal"):
        lines += ["", "Held equal within a seed: " + doc["held_equal"]]
    return "\n".join(lines) + "\n"


def write(out: str, doc: dict) -> tuple[str, str]:
    """``OUT/compare.json`` and ``OUT/compare.md``; returns their paths."""
    os.makedirs(out, exist_ok=True)
    pj, pm = os.path.join(out, "compare.json"), os.path.join(out, "compare.md")
    with open(pj, "w") as f:
        json.dump(doc, f, indent=1, default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
    with open(pm, "w") as f:
        f.write(markdown(doc))
    return pj, pm


def held_equal(emulator: str) -> str:
    """What the two arms of a seed share, in words (the module docstring's summary)."""
    if emulator == "sim":
        return ("scenario, starting policy, flags and the simulator's link seed (random capacity forms, realism "
                "draws; traces start at their first line, random loss is the fluid model's expected fraction). "
                "The simulated link is deterministic: the frozen arm repeats bit for bit; the learning arm's "
                "pushes land at wall-clock-dependent decisions.")
    return ("scenario, starting policy, flags and the link's description (its schedule is seed 0's draw for every "
            "arm). Not held equal: the kernel's random loss (iptables statistic) and timing, and the machine's "
            "load: real packets do not repeat.")
