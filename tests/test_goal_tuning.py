"""DeepCC's online goal tuner (jaxcc.senders.goal_tuning, §IV-C eq. 8–12): steps by hand, the
heuristics, and the committed C++ vectors (tests/vectors/goal_tuning.txt) are current."""

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import parity_vectors as pv
from jaxcc.senders import goal_tuning as gt

THIRD = [1 / 3, 1 / 3, 1 / 3]


def test_interval_and_target_hat():
    assert gt.interval_decisions(0.5) == 8 and gt.interval_decisions(1.0) == 4 and gt.interval_decisions(3.0) == 2
    # 8 Mbit/s of a 2e6 B/s max = 0.5; 50 ms over a 200 ms min RTT = 1.25; loss as given.
    np.testing.assert_allclose(gt.target_hat(jnp.array([8.0, 50.0, 0.02]), 2e6, 0.2), [0.5, 1.25, 0.02], rtol=1e-6)


def test_one_adam_step_by_hand():
    """T̂ = (1.25, 1.5, 0.01), m = (0.8, 1.1, 0): throughput short by 0.45 (relative 0.36: no jump).
    grad¹ = (0.8 − 1.25)·(+1 prior) = −0.45; Adam's first step: μ̂ = g, ν̂ = g², so
    −lr·g/(|g| + 1e-8) = +0.05; eq. 12 renormalises by 1.05."""
    s = gt.step(gt.init([20.0, 50.0, 0.01], THIRD), jnp.array([0.8, 1.1, 0.0]), 2e6, 0.1)
    np.testing.assert_allclose(s.goal, np.array([1 / 3 + 0.05, 1 / 3, 1 / 3]) / 1.05, rtol=1e-6)
    assert int(s.steps) == 1


def test_counts_steps_that_met_the_whole_target():
    """T̂ = (0.5, 1.25, 0.02) (8 Mbit/s of 2e6 B/s, 50 ms over 0.2 s): steps 3 and 5 meet all three
    (5 at the bounds), 1, 2 and 4 miss one each; the C++ twin's test has the same sequence."""
    s = gt.init([8.0, 50.0, 0.02], THIRD)
    for m in ([0.4, 1.1, 0.0], [0.6, 1.3, 0.0], [0.6, 1.2, 0.01], [0.6, 1.2, 0.03], [0.5, 1.25, 0.02]):
        s = gt.step(s, jnp.array(m), 2e6, 0.2)
        if int(s.steps) == 2:
            assert int(s.first_met) == 0
    assert (int(s.first_met), int(s.met_steps), int(s.steps)) == (3, 2, 5)


def test_second_step_uses_finite_difference_and_adam_moments():
    """Second step by hand: Δg¹ = g¹₁ − 1/3 = 0.0317 ≥ DG_EPS, Δm¹ = 0.9 − 0.8 = 0.1, so ∂m¹/∂g¹ = 3.15
    (the prior's sign: kept); ∂J/∂f¹ = mean(0.8 − 1.25, 0.9 − 1.25) = −0.4; grad¹ = −1.26.  Adam:
    μ = 0.9·0.1·(−0.45) + 0.1·grad, ν = 0.999·0.001·0.45² + 0.001·grad², bias-corrected by 1 − β^2."""
    s1 = gt.step(gt.init([20.0, 50.0, 0.01], THIRD), jnp.array([0.8, 1.1, 0.0]), 2e6, 0.1)
    s2 = gt.step(s1, jnp.array([0.9, 1.1, 0.0]), 2e6, 0.1)
    g1 = (1 / 3 + 0.05) / 1.05
    grad = -0.4 * (0.1 / (g1 - 1 / 3))
    mu = 0.9 * (0.1 * -0.45) + 0.1 * grad
    nu = 0.999 * (0.001 * 0.45 ** 2) + 0.001 * grad ** 2
    upd = -0.05 * (mu / (1 - 0.9 ** 2)) / (math.sqrt(nu / (1 - 0.999 ** 2)) + 1e-8)
    g = np.array([g1 + upd, (1 / 3) / 1.05, (1 / 3) / 1.05])
    np.testing.assert_allclose(s2.goal, g / g.sum(), rtol=2e-5)


def test_jump_out_and_prior_when_goal_does_not_move():
    """T̂¹ = 100/12 = 8.3 vs m¹ = 0.9: relative distance 0.89 > 0.5, so g¹ += 0.05 (Adam) + 0.1."""
    s = gt.step(gt.init([100.0, 1000.0, 1.0], THIRD), jnp.array([0.9, 1.2, 0.0]), 1.5e6, 0.1)
    np.testing.assert_allclose(s.goal, np.array([1 / 3 + 0.15, 1 / 3, 1 / 3]) / 1.15, rtol=1e-6)


def test_met_dims_and_loss_heuristics():
    # Everything met: the goal stays (no momentum drift).
    s = gt.init([1.0, 200.0, 0.05], [0.7, 0.2, 0.1])
    for _ in range(5):
        s = gt.step(s, jnp.array([0.9, 1.1, 0.0]), 2e6, 0.1)
    np.testing.assert_allclose(s.goal, [0.7, 0.2, 0.1], rtol=1e-6)
    # Throughput and delay met, loss 3 % over a 1 % target: non-congestion loss, nothing moves.
    s = gt.init([1.0, 200.0, 0.01], [0.5, 0.3, 0.2])
    for _ in range(5):
        s = gt.step(s, jnp.array([0.9, 1.2, 0.03]), 2e6, 0.1)
    np.testing.assert_allclose(s.goal, [0.5, 0.3, 0.2], rtol=1e-6)
    # Delay over (T̂² = 1.2, m² = 1.3: 8 % over, no jump) and loss over by 10 % (no jump): the loss
    # gradient is the delay gradient, so g² and g³ get the same Adam step (+0.05 each).
    s = gt.step(gt.init([1.0, 20.0, 0.01], [0.6, 0.2, 0.2]), jnp.array([0.95, 1.3, 0.011]), 2e6, 0.1)
    np.testing.assert_allclose(s.goal, np.array([0.6, 0.25, 0.25]) / 1.1, rtol=1e-6)
    # Loss over with delay met but throughput short: loss gradient = delay gradient = 0.
    s = gt.step(gt.init([20.0, 200.0, 0.01], THIRD), jnp.array([0.8, 1.1, 0.011]), 2e6, 0.1)
    np.testing.assert_allclose(s.goal, np.array([1 / 3 + 0.05, 1 / 3, 1 / 3]) / 1.05, rtol=1e-6)


def test_floor_and_simplex():
    s = gt.init([100.0, 1000.0, 1.0], [0.98, 0.01, 0.01])
    for _ in range(20):
        s = gt.step(s, jnp.array([0.5, 1.0, 0.0]), 1e6, 0.1)
    g = np.asarray(s.goal)
    assert abs(g.sum() - 1) < 1e-6 and g.min() >= gt.G_FLOOR / 1.5 and g[0] > 0.95


def test_vmapped_and_jitted_match_single():
    targets = jnp.array([[20.0, 50.0, 0.01], [1.0, 10.0, 0.05]])
    g0 = jnp.array([THIRD, [0.8, 0.1, 0.1]])
    ms = jnp.array([[0.8, 1.1, 0.0], [0.9, 1.8, 0.02]])
    sv = jax.jit(jax.vmap(gt.step, in_axes=(0, 0, None, None)))(jax.vmap(gt.init)(targets, g0), ms, 2e6, 0.1)
    for i in range(2):
        s = gt.step(gt.init(targets[i], g0[i]), ms[i], 2e6, 0.1)
        np.testing.assert_allclose(sv.goal[i], s.goal, rtol=1e-6)


def test_delay_tail_nearest_rank_by_hand():
    """r = ceil(0.95 n): the max for n <= 20; the 20th smallest of 21; the 19th of 20; only the first n count."""
    assert float(gt.delay_tail(jnp.array([1.3, 1.1, 1.9, 1.2]), 4)) == pytest.approx(1.9)
    v21 = jnp.arange(21, 0, -1, dtype=jnp.float32)  # 21 .. 1
    assert float(gt.delay_tail(v21, 21)) == 20.0
    assert float(gt.delay_tail(v21[1:], 20)) == 19.0
    # A buffer of 8 whose last 5 entries are stale: the tail of the first 3 (1.3, 1.1, 1.9).
    assert float(gt.delay_tail(jnp.array([1.3, 1.1, 1.9, 9.0, 9.0, 9.0, 9.0, 9.0]), 3)) == pytest.approx(1.9)


def test_p95_one_step_by_hand():
    """Target (1 Mbit/s, 20 ms, 1 %), min RTT 0.1 s: T̂² = 1.2.  The interval's mean delay ratio 1.15
    meets it, its tail 1.25 does not (0.05/0.2 = 25 % of T2 over: no jump).  The paper's tuner keeps
    the goal; "p95" gives g² and, following it, g³ Adam's first step +LR_P95 = +0.4 each:
    (0.7, 0.6, 0.5)/1.8.  With a tail of 1.4 (100 % of T2 over) both also jump by 0.1: (0.7, 0.7, 0.6)/2."""
    assert gt.LR_P95 == 0.4
    s0 = gt.init([1.0, 20.0, 0.01], [0.7, 0.2, 0.1])
    m = jnp.array([0.9, 1.15, 0.0])
    np.testing.assert_allclose(gt.step(s0, m, 2e6, 0.1).goal, [0.7, 0.2, 0.1], rtol=1e-5)
    np.testing.assert_allclose(gt.step(s0, m, 2e6, 0.1, True, 1.25).goal, np.array([0.7, 0.6, 0.5]) / 1.8, rtol=1e-5)
    np.testing.assert_allclose(gt.step(s0, m, 2e6, 0.1, True, 1.4).goal, np.array([0.7, 0.7, 0.6]) / 2.0, rtol=1e-5)
    # The paper's delay jump distance is relative to T̂² = 1.2 (with the min RTT): 1.5 is 25 % over,
    # no jump, +0.05 on g² alone; "p95" judges 0.3 over 0.2 of T2 (150 %): both jump.
    np.testing.assert_allclose(gt.step(s0, jnp.array([0.9, 1.5, 0.0]), 2e6, 0.1).goal,
                               np.array([0.7, 0.25, 0.1]) / 1.05, rtol=1e-5)
    np.testing.assert_allclose(gt.step(s0, m, 2e6, 0.1, True, 1.5).goal, np.array([0.7, 0.7, 0.6]) / 2.0, rtol=1e-5)


def test_p95_keeps_paper_loss_rules_and_met_goal():
    """"p95" with the delay met: everything met keeps the goal; loss over with throughput and delay met
    is non-congestion loss (no g³ move), as in the paper's tuner."""
    s = gt.init([1.0, 50.0, 0.01], [0.5, 0.3, 0.2])
    for _ in range(4):
        s = gt.step(s, jnp.array([0.9, 1.2, 0.0]), 2e6, 0.1, True, 1.4)  # T̂² = 1.5
    np.testing.assert_allclose(s.goal, [0.5, 0.3, 0.2], rtol=1e-6)
    for _ in range(4):
        s = gt.step(s, jnp.array([0.9, 1.2, 0.03]), 2e6, 0.1, True, 1.4)
    np.testing.assert_allclose(s.goal, [0.5, 0.3, 0.2], rtol=1e-6)


def test_tuner_names_and_codes():
    assert gt.TUNERS == ("paper", "p95") and gt.tuner_code("p95") == 2.0 and gt.tuner_code("paper") == 1.0
    with pytest.raises(ValueError, match="--tuner: unknown tuner 'P95'; allowed: paper, p95"):
        gt.tuner_code("P95", "--tuner")


def test_vectors_cover_branches_and_are_current(tmp_path):
    """Every heuristic branch appears in the vectors, and the committed file is what the code writes."""
    cases = pv.goal_tuning_cases(0)
    seen = set()
    for c in cases:
        n_before = 0
        for m, thr_max, min_rtt, *_ in c["steps"]:
            th = np.asarray(gt.target_hat(jnp.asarray(c["target"]), thr_max, min_rtt))
            met = np.asarray(gt.met(jnp.asarray(m), jnp.asarray(th)))
            seen.add("loss_met" if met[2] else ("thr_delay_met" if met[0] and met[1] else "loss_follows_delay"))
            if met.all():
                seen.add("all_met")
            if not met[0] and (th[0] - m[0]) / th[0] > gt.JUMP_THRESHOLD:
                seen.add("jump")
            if n_before == 0:
                seen.add("no_usable_dg")
            n_before += 1
    assert seen >= {"loss_met", "thr_delay_met", "loss_follows_delay", "all_met", "jump", "no_usable_dg"}
    p95 = [c for c in cases if c.get("tuner") == "p95"]
    assert len(p95) >= 5 and {len(st[3]) for c in p95 for st in c["steps"]} >= {8, 21}
    path = pv.write_goal_tuning_vectors(str(tmp_path / "g.txt"))
    fresh = open(path).read().split()
    committed = open(os.path.join(os.path.dirname(__file__), "vectors", "goal_tuning.txt")).read().split()
    assert len(fresh) == len(committed), "goal_tuning.txt: structure changed; python -m jaxcc.parity_vectors"
    for a, b in zip(fresh, committed):
        try:
            assert float(a) == pytest.approx(float(b), rel=1e-5, abs=1e-7)
        except ValueError:
            assert a == b
