"""DeepCC's online goal tuning vectors (``goal_tuning.txt``): measurements in, goals out."""

from __future__ import annotations


import numpy as np




GOAL_TUNING_VECTORS = "goal_tuning.txt"


def goal_tuning_cases(seed: int = 0) -> list[dict]:
    """Measurement sequences for the goal tuner's vectors: one hand-made case per heuristic
    branch of ``jaxcc.senders.goal_tuning`` (throughput short, jump-out, delay over, loss met,
    non-congestion loss with throughput and delay met, loss following delay, everything met,
    a goal that does not move: no usable Δg) and random ones drawn from ``seed``.  Each case:
    target (throughput_mbps, delay_ms, loss), g0, steps of (m [3], thr_max bytes/s, min_rtt s)."""
    rng = np.random.default_rng([seed, 15])

    def noisy(base, n, sd):
        return [[float(np.float32(b + rng.normal(0.0, s))) for b, s in zip(base, sd)] for _ in range(n)]

    def case(name, target, g0, ms, thr_max=2e6, min_rtt=0.1):
        return {"name": name, "target": list(target), "g0": list(g0),
                "steps": [(m, thr_max, min_rtt) for m in ms]}

    third = [1 / 3, 1 / 3, 1 / 3]
    cases = [
        # T̂ = (1.25, 1.5, 0.01): throughput short by < half, delay and loss met.
        case("thr_short", (20.0, 50.0, 0.01), third, noisy((0.85, 1.1, 0.0), 12, (0.05, 0.02, 0.0))),
        # T̂¹ = 100 Mbit/s / 12 Mbit/s = 8.3 > every m¹: the jump-out every interval.
        case("thr_far_jump", (100.0, 1000.0, 1.0), third, noisy((0.8, 1.2, 0.0), 10, (0.1, 0.05, 0.0)), thr_max=1.5e6),
        # T̂² = 1.1: delay 64 % over (jump), then 18 % over (no jump); loss met.
        case("delay_over", (1.0, 10.0, 0.05), [0.8, 0.1, 0.1], noisy((0.9, 1.8, 0.02), 6, (0.02, 0.05, 0.0))
             + noisy((0.9, 1.3, 0.02), 6, (0.02, 0.02, 0.0))),
        # Throughput and delay met, loss over: non-congestion loss, g³ never moves by a gradient.
        case("loss_noncongestion", (1.0, 200.0, 0.01), [0.5, 0.3, 0.2], noisy((0.9, 1.2, 0.03), 8, (0.02, 0.02, 0.005))),
        # Delay and loss over: the loss gradient := the delay gradient.
        case("loss_follows_delay", (1.0, 20.0, 0.01), [0.6, 0.2, 0.2], noisy((0.95, 1.5, 0.02), 10, (0.02, 0.05, 0.003))),
        # Everything met: the goal stays.
        case("all_met", (1.0, 200.0, 0.05), [0.7, 0.2, 0.1], noisy((0.9, 1.2, 0.0), 6, (0.02, 0.02, 0.0))),
        # One measurement repeated: the first Δg pairs exist but Δm = 0 (a zero quotient).
        case("constant_m", (20.0, 50.0, 0.01), third, [[0.8, 1.1, 0.0]] * 8),
    ]
    for r in range(3):
        g0 = [float(x) for x in rng.dirichlet(np.ones(3))]
        target = (float(rng.uniform(0.0, 12.0)), float(rng.uniform(0.0, 100.0)), float(rng.uniform(0.0, 0.05)))
        ms = [[float(np.float32(rng.uniform(0.2, 1.0))), float(np.float32(rng.uniform(1.0, 2.5))),
               float(np.float32(rng.choice([0.0, rng.uniform(0.0, 0.08)])))] for _ in range(16)]
        cases.append({"name": f"random{r}", "target": list(target), "g0": g0,
                      "steps": [(m, float(np.float32(rng.uniform(0.5e6, 1.5e6))), float(np.float32(rng.uniform(0.02, 0.3))))
                                for m in ms]})
    return cases


def write_goal_tuning_vectors(path: str, seed: int = 0) -> str:
    """``goal_tuning.txt``: ``goal_tuning_cases`` run through ``jaxcc.senders.goal_tuning``.

    Format (whitespace-separated, one record per line)::

        case NAME
        target THROUGHPUT_MBPS DELAY_MS LOSS
        goal0 G1 G2 G3
        step M1 M2 M3 THR_MAX_BYTES_PER_S MIN_RTT_S GOAL1 GOAL2 GOAL3    (the goal after the step)
        end
    """
    import jax

    from jaxcc.senders import goal_tuning as gt

    step = jax.jit(gt.step)
    lines = ["# jaxcc.senders.goal_tuning vectors (python -m jaxcc.parity_vectors); do not edit"]
    f = lambda x: f"{float(np.float32(x)):.9g}"  # noqa: E731
    for c in goal_tuning_cases(seed):
        lines += [f"case {c['name']}", "target " + " ".join(map(f, c["target"])), "goal0 " + " ".join(map(f, c["g0"]))]
        st = gt.init(np.float32(c["target"]), np.float32(c["g0"]))
        for m, thr_max, min_rtt in c["steps"]:
            st = step(st, np.float32(m), np.float32(thr_max), np.float32(min_rtt))
            lines.append("step " + " ".join(map(f, list(m) + [thr_max, min_rtt] + list(np.asarray(st.goal)))))
        lines.append("end")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path
