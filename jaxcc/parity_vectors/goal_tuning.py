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
    return cases + p95_cases(rng)


def p95_cases(rng) -> list[dict]:
    """The "p95" tuner's cases (``tuner`` "p95"): each step carries its MIs' delay ratios
    (``samples``; m² is their mean, as the sender computes it) — the delay tail met by the mean but
    not by the tail (g³ follows g², both jump), a small excess (no jump), everything met, loss over
    with throughput and delay met, and random ones with 8 and 21 samples (the rank below the max)."""
    def noisy_steps(base, sd, n_steps, d_lo, d_hi, n_mi, spike=0.0, spike_p=0.0):
        steps = []
        for _ in range(n_steps):
            d = rng.uniform(d_lo, d_hi, n_mi) + np.where(rng.uniform(size=n_mi) < spike_p, spike, 0.0)
            d = [float(np.float32(x)) for x in d]
            m = [float(np.float32(base[0] + rng.normal(0.0, sd[0]))), float(np.float32(np.mean(d))),
                 float(np.float32(max(0.0, base[2] + rng.normal(0.0, sd[2]))))]
            steps.append((m, 2e6, 0.1, d))
        return steps

    def case(name, target, g0, steps):
        return {"name": name, "tuner": "p95", "target": list(target), "g0": list(g0), "steps": steps}

    third = [1 / 3, 1 / 3, 1 / 3]
    cases = [
        # T̂² = 1.2 (20 ms over 0.1 s): MIs at 1.05–1.15 with one in eight 0.5 higher: the mean about
        # meets it, the tail misses by > half of T2 (jump-out on g² and g³).
        case("p95_tail_over", (1.0, 20.0, 0.01), third, noisy_steps((0.9, 0, 0.0), (0.02, 0, 0.0), 10, 1.05, 1.15, 8,
                                                                       spike=0.5, spike_p=0.125)),
        # The tail 1.22–1.28 against T̂² = 1.2: 10–40 % of T2 over, no jump; Adam moves g² and g³.
        case("p95_small_excess", (1.0, 20.0, 0.01), [0.6, 0.2, 0.2],
             noisy_steps((0.9, 0, 0.0), (0.02, 0, 0.0), 8, 1.22, 1.28, 8)),
        case("p95_all_met", (1.0, 50.0, 0.05), [0.5, 0.3, 0.2], noisy_steps((0.9, 0, 0.0), (0.02, 0, 0.0), 6, 1.0, 1.4, 8)),
        # Throughput and delay met, loss over: non-congestion loss, as the paper's tuner.
        case("p95_loss_noncongestion", (1.0, 50.0, 0.01), [0.5, 0.3, 0.2],
             noisy_steps((0.9, 0, 0.03), (0.02, 0, 0.005), 6, 1.0, 1.4, 8)),
    ]
    for r, n_mi in enumerate((8, 21)):
        g0 = [float(x) for x in rng.dirichlet(np.ones(3))]
        target = (float(rng.uniform(0.0, 12.0)), float(rng.uniform(0.0, 100.0)), float(rng.uniform(0.0, 0.05)))
        steps = []
        for _ in range(16):
            d = [float(np.float32(x)) for x in rng.uniform(1.0, 2.5, n_mi)]
            m = [float(np.float32(rng.uniform(0.2, 1.0))), float(np.float32(np.mean(d))),
                 float(np.float32(rng.choice([0.0, rng.uniform(0.0, 0.08)])))]
            steps.append((m, float(np.float32(rng.uniform(0.5e6, 1.5e6))), float(np.float32(rng.uniform(0.02, 0.3))), d))
        cases.append(case(f"p95_random{r}", target, g0, steps))
    return cases


def write_goal_tuning_vectors(path: str, seed: int = 0) -> str:
    """``goal_tuning.txt``: ``goal_tuning_cases`` run through ``jaxcc.senders.goal_tuning``.

    Format (whitespace-separated, one record per line)::

        case NAME
        tuner p95                                                        (only for the "p95" tuner)
        target THROUGHPUT_MBPS DELAY_MS LOSS
        goal0 G1 G2 G3
        step M1 M2 M3 THR_MAX_BYTES_PER_S MIN_RTT_S GOAL1 GOAL2 GOAL3    (the goal after the step)
        pstep M1 M2 M3 THR_MAX_BYTES_PER_S MIN_RTT_S N S1 .. SN GOAL1 GOAL2 GOAL3
            ("p95": the interval's N MI delay ratios S, the tuner's delay_tail of them)
        end
    """
    import jax

    from jaxcc.senders import goal_tuning as gt

    step = jax.jit(gt.step)
    tail = jax.jit(gt.delay_tail)
    lines = ["# jaxcc.senders.goal_tuning vectors (python -m jaxcc.parity_vectors); do not edit"]
    f = lambda x: f"{float(np.float32(x)):.9g}"  # noqa: E731
    for c in goal_tuning_cases(seed):
        p95 = c.get("tuner", "paper") == "p95"
        lines += [f"case {c['name']}"] + (["tuner p95"] if p95 else []) + [
            "target " + " ".join(map(f, c["target"])), "goal0 " + " ".join(map(f, c["g0"]))]
        st = gt.init(np.float32(c["target"]), np.float32(c["g0"]))
        for m, thr_max, min_rtt, *d in c["steps"]:
            if p95:
                d = np.float32(d[0])
                st = step(st, np.float32(m), np.float32(thr_max), np.float32(min_rtt), True, tail(d, len(d)))
                lines.append("pstep " + " ".join(map(f, list(m) + [thr_max, min_rtt])) + f" {len(d)} "
                             + " ".join(map(f, list(d) + list(np.asarray(st.goal)))))
            else:
                st = step(st, np.float32(m), np.float32(thr_max), np.float32(min_rtt))
                lines.append("step " + " ".join(map(f, list(m) + [thr_max, min_rtt] + list(np.asarray(st.goal)))))
        lines.append("end")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path
