"""Segmented prioritized replay (Pareto §IV, eqs. 2, 6, 9)."""

import jax
import jax.numpy as jnp
import numpy as np

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
