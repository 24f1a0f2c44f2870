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
