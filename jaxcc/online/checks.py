"""After online fine-tuning: the forgetting check on old environments (``old_env_check``), the
first and last minute's Ankh numbers (``ankh_pair``) and the run's timeline plot."""

from __future__ import annotations


# ----------------------------------------------------------------------------- forgetting check

# Neighbours of each old link the forgetting check averages over (``Scenario.neighbour``).
OLD_ENV_NEIGHBOURS = 16
_KEYS = ("throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain")  # and the pair's ankh, ankh_d_max_ms


def ankh_changes(start: str, actors: dict[str, str], names: list[str], *,
                 neighbours: int = OLD_ENV_NEIGHBOURS) -> dict:
    """Each actor against the start policy on the links ``names`` and on ``neighbours`` neighbours
    of each (``Scenario.neighbour``), in the simulator, all in one ``run_evaluation``.

    Ankh's number compares a pair (d_max is the larger of the two p95 delays, Pareto eq. 10), so
    every actor is scored against the start policy alone, run by run.  Per actor and link:

    * ``before``, ``after``: the link as named, one run each (records with ``ankh``);
    * ``change``: their Ankh change, (after − before) / before;
    * ``neighbourhood_change``: the change of the mean Ankh over the neighbours,
      mean(after) / mean(before) − 1 (None without neighbours);
    * ``neighbourhood_sd``: the spread of the per-neighbour changes (standard deviation).

    Returns ``{actor label: {link: {...}}}``."""
    import numpy as np

    from jaxcc.evaluation import metrics, runs

    if not names:
        return {lab: {} for lab in actors}
    if neighbours < 0:
        raise ValueError(f"neighbours must be >= 0, got {neighbours}")
    if "start" in actors:
        raise ValueError("an actor may not be labelled 'start' (the start policy's label)")
    scs, _ = runs.resolve_scenarios(scenario=",".join(names))
    nbs = {sc.name: [sc.neighbour(k) for k in range(neighbours)] for sc in scs}
    allsc = list(scs) + [n for sc in scs for n in nbs[sc.name]]
    entries = [runs.ControllerEntry("start", f"policy:{start}")]
    entries += [runs.ControllerEntry(lab, f"policy:{path}") for lab, path in actors.items()]
    rep = runs.run_evaluation(allsc, entries, progress=False, keep_series=False)
    raw = {(r["scenario"], r["controller"]): r for r in rep["results"]}

    def pair(scen: str, lab: str) -> tuple[dict, dict]:
        b, a = raw[(scen, "start")], raw[(scen, lab)]
        d_max = max(b["p95_owd_ms"], a["p95_owd_ms"])
        return tuple({**{k: r[k] for k in _KEYS}, "ankh_d_max_ms": d_max,
                      "ankh": metrics.ankh(r["throughput_mbps"], r["capacity_mbps"], r["p95_owd_ms"], d_max, r["loss"])}
                     for r in (b, a))

    res: dict = {}
    for lab in actors:
        res[lab] = {}
        for sc in scs:
            b, a = pair(sc.name, lab)
            nb = [pair(n.name, lab) for n in nbs[sc.name]]
            mb = float(np.mean([x["ankh"] for x, _ in nb])) if nb else None
            ma = float(np.mean([y["ankh"] for _, y in nb])) if nb else None
            res[lab][sc.name] = {
                "before": b, "after": a, "change": (a["ankh"] - b["ankh"]) / b["ankh"] if b["ankh"] else None,
                "neighbours": neighbours, "neighbourhood_ankh_before": mb, "neighbourhood_ankh_after": ma,
                "neighbourhood_change": (ma - mb) / mb if mb else None,
                "neighbourhood_sd": float(np.std([(y["ankh"] - x["ankh"]) / x["ankh"] for x, y in nb])) if nb else None,
            }
    return res


def old_env_check(before: str, after: str, names: list[str], *,
                  neighbours: int = OLD_ENV_NEIGHBOURS) -> dict:
    """The forgetting check: the start actor ``before`` against the end actor ``after`` on
    ``names`` and their neighbours (``ankh_changes``).  Returns ``{link: {...}}``."""
    return ankh_changes(before, {"after": after}, names, neighbours=neighbours)["after"]


def operating_point_time(bins: dict, *, bin_s: float, last_s: float = 60.0, tol: float = 0.1) -> dict:
    """When the run reached its operating point: the first bin from which every bin's throughput
    and mean RTT stay within ``tol`` (relative) of the last ``last_s`` seconds' means (``time_s``),
    and the first bin within it at all (``first_time_s``).

    ``bins``: ``Learner.timeline_bins(bin_s)`` (``t_s`` bin centres, ``throughput_mbps``, ``rtt_ms``).
    Returns ``{"target_throughput_mbps", "target_rtt_ms", "time_s", "first_time_s"}`` (times: the
    start of the bin, seconds of sender time; None without bins or RTTs)."""
    import numpy as np

    t = np.asarray(bins.get("t_s", []), np.float64)
    thr = np.asarray(bins.get("throughput_mbps", []), np.float64)
    rtt = np.asarray(bins.get("rtt_ms", []), np.float64)
    none = {"target_throughput_mbps": None, "target_rtt_ms": None, "time_s": None, "first_time_s": None}
    if t.size < 2:
        return none
    width = float(bin_s)
    last = t >= t[-1] + 0.5 * width - last_s
    if not np.all(np.isfinite(rtt[last])):
        return none
    thr0, rtt0 = float(np.mean(thr[last])), float(np.mean(rtt[last]))
    ok = (np.abs(thr - thr0) <= tol * thr0) & (np.abs(rtt - rtt0) <= tol * rtt0)
    bad = np.flatnonzero(~ok)
    first = 0 if bad.size == 0 else int(bad[-1]) + 1
    return {"target_throughput_mbps": thr0, "target_rtt_ms": rtt0,
            "time_s": float(t[first] - 0.5 * width) if first < t.size else None,
            "first_time_s": float(t[np.flatnonzero(ok)[0]] - 0.5 * width) if ok.any() else None}


def ankh_pair(first: dict, last: dict) -> None:
    """Adds ``ankh`` to both windows with d_max the larger of their p95 delays (Pareto eq. 10)."""
    from jaxcc.evaluation import metrics

    try:
        d_max = max(float(first["p95_owd_ms"]), float(last["p95_owd_ms"]))
        for w in (first, last):
            u = float(w["utilization"])
            w["ankh"] = metrics.ankh(u, 1.0, float(w["p95_owd_ms"]), d_max, float(w["loss"]))
            w["ankh_d_max_ms"] = d_max
    except (KeyError, TypeError, ValueError):
        for w in (first, last):
            w.setdefault("ankh", None)


def plot(path: str, tl: dict, pushes: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    ax[0].plot(tl["t_s"], tl["throughput_mbps"], lw=1)
    ax[0].set_ylabel("throughput (Mbit/s)")
    ax[1].plot(tl["t_s"], tl["rtt_ms"], lw=1, color="tab:orange")
    ax[1].set_ylabel("mean RTT (ms)")
    ax[2].step(tl["t_s"], tl["weight_version"], where="post", color="tab:green")
    ax[2].set_ylabel("weight version in force")
    ax[2].set_xlabel("sender time (s)")
    fig.suptitle(f"online fine-tuning ({len(pushes)} weight pushes)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
