"""Segmented prioritized replay (Pareto §IV, eqs. 2, 6, 9)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.agents.pareto import replay


def _ex():
    return {"x": jnp.zeros((2,), jnp.float32), "r": jnp.zeros((), jnp.float32)}


def _batch(n, v):
    return {"x": jnp.full((n, 2), v, jnp.float32), "r": jnp.full((n,), v, jnp.float32)}


def test_add_writes_only_its_segment_and_wraps():
    s = replay.init(_ex(), [4, 6])
    s = replay.add(s, _batch(3, 1.0), jnp.ones(3, bool), 0)
    s = replay.add(s, _batch(3, 2.0), jnp.ones(3, bool), 0)  # wraps inside segment 0
    np.testing.assert_array_equal(np.asarray(s.data["r"][:4]), [2, 2, 1, 2])
    assert np.all(np.asarray(s.data["r"][4:]) == 0) and np.all(np.asarray(s.priority[4:]) == 0)
    assert int(s.seg_count[0]) == 4 and int(s.seg_count[1]) == 0
    # Stage 2 adds to its own extension; stage 1's samples stay frozen.
    s = replay.add(s, _batch(5, 3.0), jnp.asarray([1, 0, 1, 1, 1], bool), 1)
    np.testing.assert_array_equal(np.asarray(s.data["r"][:4]), [2, 2, 1, 2])
    np.testing.assert_array_equal(np.asarray(s.data["r"][4:]), [3, 3, 3, 3, 0, 0])
    assert int(replay.size(s)) == 8


def test_sampling_follows_priorities_and_weights_eq6():
    s = replay.init(_ex(), [4, 4])
    s = replay.add(s, {"x": jnp.zeros((4, 2)), "r": jnp.arange(4.0)}, jnp.ones(4, bool), 0)
    s = replay.update_priorities(s, jnp.arange(4), jnp.asarray([1.0, 1.0, 1.0, 8.0]))
    alpha, beta = 0.6, 0.4
    counts = np.zeros(8)
    key = jax.random.PRNGKey(0)
    for i in range(200):
        _, idx, w, probs = replay.sample(s, jax.random.fold_in(key, i), 16, alpha, beta)
        np.add.at(counts, np.asarray(idx), 1)
    p = np.array([1, 1, 1, 8.0]) ** alpha
    p /= p.sum()
    np.testing.assert_allclose(counts[:4] / counts.sum(), p, atol=0.02)
    assert counts[4:].sum() == 0  # empty slots are never drawn
    # eq. (6) with Schaul's sign: w = (N·P)^-β / max w.
    _, idx, w, probs = replay.sample(s, key, 16, alpha, beta)
    expect = (4 * p[np.asarray(idx)]) ** -beta
    np.testing.assert_allclose(np.asarray(w), expect / expect.max(), rtol=1e-5)


def test_split_sampling_fixes_each_segments_rows_and_weights():
    # Segment 0: 6 filled slots (priorities 1, 1, 1, 1, 1, 32); segment 1: 2 (priority 1 each).
    s = replay.init(_ex(), [6, 4])
    s = replay.add(s, {"x": jnp.zeros((6, 2)), "r": jnp.arange(6.0)}, jnp.ones(6, bool), 0)
    s = replay.add(s, {"x": jnp.zeros((2, 2)), "r": jnp.asarray([10.0, 11.0])}, jnp.ones(2, bool), 1)
    s = replay.update_priorities(s, jnp.arange(8), jnp.asarray([1.0, 1, 1, 1, 1, 32, 1, 1]))
    alpha, beta = 0.5, 0.4
    counts = np.zeros(10)
    key = jax.random.PRNGKey(1)
    for i in range(100):
        b, idx, w, probs = replay.sample_split(s, jax.random.fold_in(key, i), 8, alpha, beta, segment=1, n_segment=2)
        idx = np.asarray(idx)
        assert np.all((idx[:2] >= 6) & (idx[:2] < 8)) and np.all(idx[2:] < 6)  # 2 rows from segment 1, 6 from 0
        np.testing.assert_array_equal(np.asarray(b["r"]), np.array([0, 1, 2, 3, 4, 5, 10, 11, 0, 0])[idx])
        np.add.at(counts, idx, 1)
    # Within segment 0, P ∝ p^α: sqrt(32) ≈ 5.66 against 1 for each of the other five.
    p0 = np.array([1, 1, 1, 1, 1, 32.0]) ** alpha
    np.testing.assert_allclose(counts[:6] / counts[:6].sum(), p0 / p0.sum(), atol=0.03)
    assert counts[6:8].sum() == 200 and counts[8:].sum() == 0
    # By hand: P(i) = (rows of its part / 8) · p_i^α / Σ_part, w = (N·P)^-β / max, N = 8 filled slots.
    _, idx, w, probs = replay.sample_split(s, key, 8, alpha, beta, segment=1, n_segment=2)
    idx = np.asarray(idx)
    pa = np.array([1, 1, 1, 1, 1, 32.0, 1, 1]) ** alpha
    expect_p = np.where(idx >= 6, (2 / 8) * pa[idx] / 2.0, (6 / 8) * pa[idx] / pa[:6].sum())
    np.testing.assert_allclose(np.asarray(probs), expect_p, rtol=1e-5)
    ew = (8 * expect_p) ** -beta
    np.testing.assert_allclose(np.asarray(w), ew / ew.max(), rtol=1e-5)
    for bad in (0, 8):
        with pytest.raises(ValueError, match="n_segment must be in"):
            replay.sample_split(s, key, 8, alpha, beta, segment=1, n_segment=bad)


def test_pareto_priority_eq2():
    p = replay.pareto_priority(jnp.asarray([0.0, 10.0, 1e6]), jnp.asarray([0.0, 0.0, 0.0]), 10.0, 1e-5)
    np.testing.assert_allclose(np.asarray(p), [1 + 1e-5, np.tanh(1.0) + 1 + 1e-5, 2 + 1e-5], rtol=1e-6)
    # ζ keeps P(i) > 0 when tanh saturates at −1.
    assert float(replay.pareto_priority(jnp.asarray(0.0), jnp.asarray(-100.0), 10.0, 1e-5)) > 0


def test_buffer_ops_jit_and_new_priority_max():
    s = replay.init(_ex(), [8])
    s = replay.update_priorities(replay.add(s, _batch(2, 1.0), jnp.ones(2, bool), 0), jnp.asarray([0]), jnp.asarray([1.7]))
    s = jax.jit(lambda s: replay.add(s, _batch(1, 5.0), jnp.ones(1, bool), 0))(s)
    assert float(s.priority[2]) == np.float32(1.7)
