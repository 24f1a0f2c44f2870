"""After online fine-tuning: the forgetting check on old environments (``old_env_check``), the
first and last minute's Ankh numbers (``ankh_pair``) and the run's timeline plot."""

from __future__ import annotations





# ----------------------------------------------------------------------------- forgetting check


def old_env_check(before: str, after: str, names: list[str]) -> tuple[dict, dict]:
    """The start and end actors in the simulator on ``names`` (one ``run_evaluation`` for both, so
    their Ankh's numbers share d_max).  Returns (before, after): ``{scenario: record}``."""
    from jaxcc.evaluation import runs

    if not names:
        return {}, {}
    scs, _ = runs.resolve_scenarios(scenario=",".join(names))
    entries = [runs.ControllerEntry("before", f"policy:{before}"),
               runs.ControllerEntry("after", f"policy:{after}")]
    rep = runs.run_evaluation(scs, entries, progress=False, keep_series=False)
    keys = ("throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain", "ankh", "ankh_d_max_ms")
    out = {"before": {}, "after": {}}
    for r in rep["results"]:
        out[r["controller"]][r["scenario"]] = {k: r[k] for k in keys}
    return out["before"], out["after"]


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
