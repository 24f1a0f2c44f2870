"""Property tests of the fluid model's bookkeeping (hypothesis), for any valid link and any
sequence of rate / window actions.

In float64 (``jax.enable_x64``), per tick and per flow:
  sent = acked + lost + inflight                (cumulative, relative error <= F64_REL)
  inflight = what the feedback ring + pending slot still hold
  admitted - served = queue, 0 <= queue <= buffer
  every output finite; the same inputs give bitwise the same outputs.
In float32 (what training runs use) the same identities hold within F32_REL of the flow's
cumulative bytes (T = 64 ticks of rounding), and 0 <= queue <= buffer holds exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxcc import units
from jaxcc.sim import core, links

F = 3  # flow slots
K = 4  # capacity segments
T = 64  # ticks per run
RING = 32  # shorter than some delays on purpose: clamped feedback must conserve bytes too
F64_REL, F64_ABS = 1e-9, 1e-6  # bytes
F32_REL, F32_ABS = 2e-5, 1e-2  # bytes

MSS = units.MSS


@st.composite
def scenarios(draw):
    base_rtt = draw(st.floats(0.005, 0.2))
    rtts = [base_rtt] + [base_rtt * draw(st.floats(1.0, 8.0)) for _ in range(F - 1)]
    dt = base_rtt / 8
    horizon = T * dt
    gaps = [draw(st.floats(0.05, 1.0)) for _ in range(K - 1)]
    times = np.concatenate([[0.0], np.cumsum(gaps) * horizon / 2])
    rates = np.array([draw(st.one_of(st.just(0.0), st.floats(1e4, 1e9))) for _ in range(K)])
    looping = draw(st.booleans())
    if not looping:
        rates[-1] = max(rates[-1], 1e4)  # a permanent outage at the end is a different test
    if not rates.any():
        rates[0] = 1e5
    period = float(times[-1] + draw(st.floats(0.01, 1.0)) * horizon) if looping else 0.0
    sched = links.Schedule(times, rates, period)
    starts = [draw(st.floats(0.0, horizon)) for _ in range(F)]
    stops = [s + draw(st.floats(0.0, horizon)) for s in starts]
    link = dict(sched=sched, buffer=draw(st.floats(1.0, 1e7)), loss=draw(st.floats(0.0, 0.9)),
                rtts=rtts, starts=starts, stops=stops, dt=dt)

    def actions():
        big = st.just(core.BIG)
        return [[draw(st.one_of(big, st.just(0.0), st.floats(0.0, 1e9))) for _ in range(F)]]

    seq_len = draw(st.integers(1, 4))  # a few distinct actions, repeated over the run
    rate = np.array([actions()[0] for _ in range(seq_len)])
    cwnd = np.array([[draw(st.one_of(st.just(core.BIG), st.floats(0.0, 1e7))) for _ in range(F)]
                     for _ in range(seq_len)])
    idx = np.arange(T) % seq_len
    return link, rate[idx], cwnd[idx]


def params(link, dtype) -> core.LinkParams:
    cum, per = link["sched"].cumulative()
    a = lambda x: jnp.asarray(np.asarray(x, np.float64), dtype)  # noqa: E731
    s = link["sched"]
    return core.LinkParams(
        dt=a(link["dt"]), cap_t=a(s.times), cap_bps=a(s.rates), cap_cum=a(cum), cap_period=a(s.period),
        cap_period_bytes=a(per), buffer_bytes=a(link["buffer"]), loss=a(link["loss"]), rtt=a(link["rtts"]),
        start=a(link["starts"]), stop=a(link["stops"]))


@jax.jit
def simulate(p: core.LinkParams, rate, cwnd):
    def body(s, act):
        s, out = core.step(p, s, act[0], act[1])
        return s, out

    return jax.lax.scan(body, core.init_state(p, RING), (rate, cwnd))


def check_invariants(p, sim, out, rel, abs_):
    sim, out = jax.device_get((sim, out))
    fin = lambda x: np.all(np.isfinite(np.asarray(x, np.float64)))  # noqa: E731
    assert all(fin(x) for x in jax.tree.leaves(out)), "non-finite output"
    assert all(fin(x) for x in jax.tree.leaves(sim)), "non-finite state"
    f64 = lambda x: np.asarray(x, np.float64)  # noqa: E731
    sent, acked, lost = (np.cumsum(f64(x), axis=0) for x in (out.sent, out.acked, out.lost))
    scale = sent + abs_ / rel
    # sent = acked + lost + inflight, every tick and flow.
    np.testing.assert_array_less(np.abs(sent - acked - lost - f64(out.inflight)), rel * scale)
    # ... and inflight is exactly what the ring and the pending slot still hold.
    held = f64(sim.ring)[:, :, :2].sum(axis=(0, 2)) + f64(sim.pending)[:, :2].sum(axis=1)
    np.testing.assert_array_less(np.abs(held - f64(sim.inflight)), rel * scale[-1])
    np.testing.assert_array_less(np.abs(f64(sim.sent_total) - sent[-1]), rel * scale[-1])
    # The link: admitted - served = queue, 0 <= queue <= buffer.
    adm = np.cumsum(f64(out.admitted).sum(axis=1))
    srv = np.cumsum(f64(out.served))
    q = f64(out.queue)
    np.testing.assert_array_less(np.abs(adm - srv - q), rel * (adm + abs_ / rel))
    assert np.all(q >= 0.0)
    assert np.all(out.queue <= np.asarray(p.buffer_bytes))
    # What enters the queue never exceeds what was sent; feedback is never negative.
    assert np.all(f64(out.admitted) <= f64(out.sent) * (1 + rel) + abs_)
    assert np.all(f64(out.acked) >= -abs_) and np.all(f64(out.lost) >= -abs_)


SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(scenarios())
def test_conservation_float64(case):
    link, rate, cwnd = case
    with jax.enable_x64(True):
        p = params(link, jnp.float64)
        sim, out = simulate(p, jnp.asarray(rate), jnp.asarray(cwnd))
        check_invariants(p, sim, out, F64_REL, F64_ABS)
        # Deterministic: the same inputs give bitwise the same outputs.
        sim2, out2 = simulate(p, jnp.asarray(rate), jnp.asarray(cwnd))
        for a, b in zip(jax.tree.leaves((sim, out)), jax.tree.leaves((sim2, out2))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@SETTINGS
@given(scenarios())
def test_conservation_float32(case):
    link, rate, cwnd = case
    p = params(link, jnp.float32)
    sim, out = simulate(p, jnp.asarray(rate, jnp.float32), jnp.asarray(cwnd, jnp.float32))
    check_invariants(p, sim, out, F32_REL, F32_ABS)


def test_permanent_outage_stays_finite():
    """A non-looping schedule that ends in an outage: bytes then never leave the queue; their
    delay is ``BIG`` (finite) and their feedback is clamped to the ring's end, not wrapped."""
    with jax.enable_x64(True):
        sched = links.Schedule(np.array([0.0, 0.05]), np.array([1e6, 0.0]))
        link = dict(sched=sched, buffer=1e5, loss=0.0, rtts=[0.04, 0.04, 0.04], starts=[0.0] * 3,
                    stops=[1.0] * 3, dt=0.005)
        p = params(link, jnp.float64)
        rate = jnp.full((T, F), 1e6)
        sim, out = simulate(p, rate, jnp.full((T, F), core.BIG))
        check_invariants(p, sim, out, F64_REL, F64_ABS)
        assert int(sim.clamped) > 0
