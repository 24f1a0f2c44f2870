"""Safety-net vectors: the guard and the runtime monitor (``jaxcc.senders.safety``) MI by MI, for
``datapath/tests/vectors_test.cc`` (``src/safety.h``)."""

from __future__ import annotations

import json

import numpy as np

SAFETY_VECTORS = "safety.json"
# The MI lengths of the shipped feature sets (aurora_v1 and deepcc_v1 0.5 RTT, mocc_v1 1,
# pareto 2, eagle_v1 3).
MI_RTTS = (0.5, 1.0, 2.0, 3.0)


def _regimes(rng: np.random.Generator, n: int) -> list[str]:
    """A sequence of MI kinds in runs of 1-8: clean, dark (no ACK), lossy (>= 0.5 lost), in
    between (0.2-0.5 lost), and edges exactly at the thresholds."""
    out = []
    while len(out) < n:
        kind = rng.choice(["clean", "clean", "dark", "lossy", "between", "edge"])
        out += [str(kind)] * int(rng.integers(1, 9))
    return out[:n]


def safety_cases(seed: int = 0, n_mi: int = 80) -> list[dict]:
    """One case per MI length: the MIs' (acked, lost, n_samples), the rate/window in force and the
    policy's, and after each MI the guarded rate/window and the monitor's state."""
    import jax
    import jax.numpy as jnp

    from jaxcc.senders import safety

    rng = np.random.default_rng([seed, 7])
    cases = []
    for mi_rtts in MI_RTTS:
        enter, leave = safety.mis_for(safety.ENTER_RTTS, mi_rtts), safety.mis_for(safety.EXIT_RTTS, mi_rtts)
        step = jax.jit(lambda s, a, lo, n, d, ans, enter=enter, leave=leave:
                       safety.monitor_step(s, a, lo, n, d, ans, enter, leave))
        guard = jax.jit(safety.guard)
        mis = []
        answered = False  # each case starts with dark MIs before the path's first answer
        with jax.enable_x64(True):
            s = safety.monitor_zero(jnp.float64)
            for kind in ["dark"] * 4 + _regimes(rng, n_mi):
                # an edge MI: 10-50 packets, so 0.2 and 0.5 of them are whole
                pkts = int(rng.integers(1, 6)) * 10 if kind == "edge" else int(rng.integers(1, 60))
                if kind == "dark":
                    acked, lost, n = 0.0, float(rng.choice([0, pkts * 1500])), 0.0
                else:
                    frac = {"clean": rng.uniform(0, 0.2), "lossy": rng.uniform(0.5, 1.0),
                            "between": rng.uniform(0.2, 0.5), "edge": rng.choice([0.2, 0.5])}[kind]
                    n = float(pkts)
                    lost_pkts = round(frac * pkts) if kind == "edge" else frac * pkts
                    acked, lost = (pkts - lost_pkts) * 1500.0, lost_pkts * 1500.0
                    if acked <= 0:  # everything lost: no ACK, no sample
                        n = 0.0
                # 20-100 ms MIs: the 0.2 s floor decides some entries, the MI count others
                duration = float(rng.uniform(0.02, 0.1))
                rate_in, cwnd_in = float(rng.uniform(0.1, 50.0) * 125000), float(rng.uniform(4, 400) * 1500)
                rate_pol = rate_in * float(rng.uniform(0.5, 1.5))
                cwnd_pol = cwnd_in * float(rng.uniform(0.5, 1.5))
                answered = answered or n > 0
                dark = bool(safety.no_feedback(jnp.float64(acked), jnp.float64(n))) and answered
                rate, cwnd = guard(jnp.float64(rate_pol), jnp.float64(cwnd_pol), jnp.float64(rate_in),
                                   jnp.float64(cwnd_in), jnp.bool_(dark))
                s = step(s, jnp.float64(acked), jnp.float64(lost), jnp.float64(n), jnp.float64(duration),
                         jnp.bool_(answered))
                mis.append({"acked": acked, "lost": lost, "n_samples": n, "duration": duration, "answered": answered,
                            "rate_in": rate_in, "cwnd_in": cwnd_in, "rate_policy": rate_pol, "cwnd_policy": cwnd_pol,
                            "guarded": dark, "rate": float(rate), "cwnd": float(cwnd),
                            "fallback": bool(s.fallback), "bad_run": int(s.bad_run), "bad_s": float(s.bad_s),
                            "good_run": int(s.good_run), "entries": int(s.entries),
                            "fallback_mis": int(s.fallback_mis)})
        cases.append({"mi_rtts": mi_rtts, "enter_mis": enter, "exit_mis": leave, "mis": mis})
    return cases


def write_safety_vectors(path: str, seed: int = 0) -> str:
    """Writes ``safety_cases`` to ``path`` (JSON); checks that every case enters and leaves the
    fallback, so the vector exercises both switches."""
    cases = safety_cases(seed)
    for c in cases:
        fb = [m["fallback"] for m in c["mis"]]
        if not (any(fb) and any(a and not b for a, b in zip(fb, fb[1:]))):
            raise AssertionError(f"safety vectors: mi_rtts {c['mi_rtts']} never enters and leaves the fallback")
    with open(path, "w") as f:
        json.dump({"constants": _constants(), "cases": cases}, f, indent=1)
    return path


def _constants() -> dict:
    from jaxcc.senders import safety
    return {"loss_enter": safety.LOSS_ENTER, "loss_exit": safety.LOSS_EXIT, "enter_rtts": safety.ENTER_RTTS,
            "min_enter_s": safety.MIN_ENTER_S, "time_slack_s": safety.TIME_SLACK_S, "exit_rtts": safety.EXIT_RTTS}


__all__ = ["SAFETY_VECTORS", "safety_cases", "write_safety_vectors"]
