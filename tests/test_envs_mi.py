"""Monitor-interval statistics: hand-computed sums, means, slope, and tick accumulation."""

import jax.numpy as jnp
import numpy as np

from jaxcc.envs import mi
from jaxcc.sim import core


def _mi(samples, duration=0.1, sent=30000.0, lost=1500.0):
    m = mi.mi_zero(1)
    for w, r, t in samples:
        m = mi.mi_add_sample(m, jnp.array([w]), jnp.array([r]), jnp.array([t]))
    return m.replace(duration=jnp.array([duration]), sent=jnp.array([sent]), lost=jnp.array([lost]))


SAMPLES = [(6000.0, 0.10, 0.0125), (6000.0, 0.11, 0.0375), (6000.0, 0.12, 0.0625), (6000.0, 0.13, 0.0875)]


def test_sums_and_derived_values():
    m = _mi(SAMPLES)
    np.testing.assert_allclose(m.acked, [24000.0])
    np.testing.assert_allclose(mi.rtt_mean(m), [0.115], rtol=1e-6)  # (0.10+0.11+0.12+0.13)/4
    np.testing.assert_allclose(m.rtt_min, [0.10]); np.testing.assert_allclose(m.rtt_max, [0.13])
    np.testing.assert_allclose(m.rtt_first, [0.10]); np.testing.assert_allclose(m.rtt_last, [0.13])
    np.testing.assert_allclose(m.n_samples, [4.0])
    # RTT rises 0.01 s every 0.025 s: slope 0.4 s/s.
    np.testing.assert_allclose(mi.rtt_slope(m), [0.4], rtol=1e-4)
    np.testing.assert_allclose(mi.send_rate(m), [300000.0], rtol=1e-6)  # 30000 B / 0.1 s
    np.testing.assert_allclose(mi.delivery_rate(m), [240000.0], rtol=1e-6)
    np.testing.assert_allclose(mi.loss_rate(m), [1500.0 / 25500.0], rtol=1e-6)


def test_weighted_slope_and_empty():
    # Two samples, weights 1:3: the slope is just (r2 − r1)/(t2 − t1) = (0.2 − 0.1)/0.5.
    m = _mi([(1500.0, 0.1, 0.0), (4500.0, 0.2, 0.5)])
    np.testing.assert_allclose(mi.rtt_slope(m), [0.2], rtol=1e-5)
    np.testing.assert_allclose(mi.rtt_mean(m), [(0.1 * 1 + 0.2 * 3) / 4], rtol=1e-6)
    e = mi.mi_zero(2)
    assert float(mi.rtt_mean(e)[0]) == 0.0 and float(mi.rtt_slope(e)[0]) == 0.0
    assert float(mi.loss_rate(e)[0]) == 0.0 and float(e.rtt_min[0]) == float(np.float32(core.BIG))
    one = _mi([(1500.0, 0.1, 0.0)])
    assert float(mi.rtt_slope(one)[0]) == 0.0  # a single sample time: no slope


def test_running_stats():
    run = mi.running_zero(1)
    run = mi.running_update(run, _mi(SAMPLES))
    np.testing.assert_allclose(run.min_rtt, [0.10]); np.testing.assert_allclose(run.min_mean_rtt, [0.115], rtol=1e-6)
    np.testing.assert_allclose(run.max_delivery, [240000.0], rtol=1e-6)
    run = mi.running_update(run, mi.mi_zero(1).replace(duration=jnp.array([0.1])))  # no samples: unchanged
    np.testing.assert_allclose(run.min_mean_rtt, [0.115], rtol=1e-6)


def test_tick_accumulation_matches_per_sample():
    dt = jnp.float32(0.01)
    z = jnp.zeros((1,))
    m = mi.mi_zero(1)
    for k, (acked, rtt) in enumerate([(0.0, 0.0), (3000.0, 0.05), (1500.0, 0.07)]):
        out = core.TickOut(time=dt * (k + 1), active=jnp.array([True]), sent=jnp.array([1000.0]),
                           acked=jnp.array([acked]), lost=jnp.array([10.0]), rtt_wsum=jnp.array([acked * rtt]),
                           inflight=z, admitted=z, owd=z, qdelay=0.0, capacity=0.0, queue=0.0, served=0.0)
        m = mi.mi_add_tick(m, out, dt)
    np.testing.assert_allclose(m.duration, [0.03], rtol=1e-6)
    np.testing.assert_allclose(m.sent, [3000.0]); np.testing.assert_allclose(m.lost, [30.0])
    np.testing.assert_allclose(mi.rtt_mean(m), [(3000 * 0.05 + 1500 * 0.07) / 4500], rtol=1e-6)
    # samples at tick mid-points 0.015 and 0.025 s: slope (0.07 − 0.05)/0.01 = 2.
    np.testing.assert_allclose(mi.rtt_slope(m), [2.0], rtol=1e-3)
    np.testing.assert_allclose(m.rtt_first, [0.05]); np.testing.assert_allclose(m.n_samples, [2.0])
