"""NewReno (``jaxcc.baselines.reno``): the RFC 5681/6582 rules by hand, and its sawtooth on a link."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import senders
from jaxcc.baselines import reno
from jaxcc.controllers import SIM_KINDS, ControllerSpec, parse_controller
from jaxcc.scenarios import parse_scenario
from jaxcc.sim import controller as sim_controller
from jaxcc.sim import core, runner
from jaxcc.sim.core import BIG
from jaxcc.units import MBPS, MSS


CP = sim_controller.ControllerParams.zeros()


def _obs(acked=0.0, lost=0.0, sent=0.0, inflight=0.0, now=1.0, dt=0.01):
    f = jnp.float32
    return sim_controller.TickObs(now=f(now), dt=f(dt), active=jnp.bool_(True), acked=f(acked), lost=f(lost),
                                  rtt_wsum=f(acked * 0.1), sent=f(sent), inflight=f(inflight), capacity=f(1e6),
                                  n_active=jnp.int32(1))


def _upd(s, **kw):
    return jax.jit(reno.reno_update)(s, _obs(**kw), CP)


def test_name_parses_and_resolves_everywhere():
    assert parse_controller("reno") == ControllerSpec("reno", "", "reno")
    assert "reno" in SIM_KINDS
    c, cp = senders.resolve("reno")
    assert c is reno.RENO and c.name == "reno" and not any(x.any() for x in jax.tree.leaves(cp))
    from jaxcc.evaluation import runs
    assert [e.label for e in runs.controller_entries("cubic,reno")] == ["cubic", "reno"]
    from jaxcc.emulation import spec  # no C++ NewReno: refused in emulation (kernel:reno is iperf3's)
    with pytest.raises(spec.EmulationError, match="only in the simulator"):
        spec.validate_controller("reno")


def test_constants_are_the_rfcs():
    assert (reno.BETA_RENO, reno.ALPHA_RENO) == (0.5, 1.0)
    assert reno.INIT_CWND == 10 * MSS and reno.MIN_CWND == 2 * MSS


def test_slow_start_doubles_per_loss_free_rtt():
    """cwnd += acked: a window of ACKs per RTT doubles it — 10, 20, 40, 80 packets."""
    s = reno.reno_init(CP)
    assert float(s.cwnd) == 10 * MSS and float(s.ssthresh) >= BIG
    a = reno.reno_act(s, CP)
    assert float(a.cwnd) == 10 * MSS and float(a.rate) >= BIG  # unpaced, window-limited
    for k in range(1, 4):
        s = _upd(s, acked=float(s.cwnd), sent=2 * float(s.cwnd), inflight=2 * float(s.cwnd))
        assert float(s.cwnd) == pytest.approx(10 * MSS * 2 ** k)


def test_one_decrease_per_window_of_losses_then_one_mss_per_rtt():
    s = reno.reno_init(CP)._replace(cwnd=jnp.float32(40 * MSS))
    # Loss notice: ssthresh = cwnd = 40/2 = 20 packets; recovery covers all 40 in flight (this
    # tick's sending included: inflight is after it).
    s = _upd(s, acked=10 * MSS, lost=MSS, sent=0.0, inflight=29 * MSS)
    assert float(s.cwnd) == pytest.approx(20 * MSS) and float(s.ssthresh) == pytest.approx(20 * MSS)
    assert bool(s.in_recovery) and float(s.recovery_left) == pytest.approx(29 * MSS)
    assert int(s.loss_events) == 1
    # More losses of data sent before the decrease: no second cut, no growth.
    s = _upd(s, acked=10 * MSS, lost=5 * MSS, inflight=14 * MSS)
    assert float(s.cwnd) == pytest.approx(20 * MSS) and int(s.loss_events) == 1 and bool(s.in_recovery)
    # The rest is ACKed: recovery ends (still no growth on the closing ACKs).
    s = _upd(s, acked=14 * MSS, inflight=20 * MSS)
    assert not bool(s.in_recovery) and float(s.cwnd) == pytest.approx(20 * MSS)
    # Congestion avoidance: a window of ACKs per RTT adds one MSS: 21, 22, ... packets.
    for k in range(1, 6):
        s = _upd(s, acked=float(s.cwnd), sent=float(s.cwnd), inflight=float(s.cwnd))
        assert float(s.cwnd) == pytest.approx((20 + k) * MSS, rel=1e-6)
    # A loss after recovery is a new event: 25 -> 12.5 packets.
    s = _upd(s, acked=MSS, lost=1.5 * MSS, inflight=20 * MSS)
    assert int(s.loss_events) == 2 and float(s.cwnd) == pytest.approx(12.5 * MSS)
    # Less than a packet of reported drops is not yet a loss event (fluid drops accumulate).
    s2 = _upd(reno.reno_init(CP), acked=MSS, lost=0.6 * MSS, inflight=5 * MSS)
    assert int(s2.loss_events) == 0 and float(s2.cwnd) == pytest.approx(11 * MSS)
    s2 = _upd(s2, acked=MSS, lost=0.6 * MSS, inflight=5 * MSS)
    assert int(s2.loss_events) == 1 and float(s2.cwnd) == pytest.approx(5.5 * MSS)
    # The floor: never below 2 packets.
    s3 = _upd(reno.reno_init(CP)._replace(cwnd=jnp.float32(3 * MSS)), lost=MSS, inflight=MSS)
    assert float(s3.cwnd) == pytest.approx(2 * MSS)


def test_slow_start_leftover_goes_to_congestion_avoidance():
    """tcp_reno_cong_avoid: ACKed bytes past ssthresh grow the window by MSS·leftover/cwnd."""
    s = reno.reno_init(CP)._replace(cwnd=jnp.float32(19 * MSS), ssthresh=jnp.float32(20 * MSS))
    s = _upd(s, acked=3 * MSS, inflight=19 * MSS)
    assert float(s.cwnd) == pytest.approx(20 * MSS + MSS * 2 * MSS / (20 * MSS), rel=1e-6)


def _scan(sc):
    b = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)[0]
    p = jax.tree.map(lambda x: jnp.asarray(x[0]), b.params)
    cps = jax.tree.map(jnp.asarray, sim_controller.ControllerParams.zeros((p.rtt.shape[0],)))
    init = jax.vmap(reno.reno_init)(cps)

    def body(carry, _):
        sim, cs = carry
        act = jax.vmap(reno.reno_act)(cs, cps)
        sim, out = core.step(p, sim, act.rate, act.cwnd)
        cs = jax.vmap(reno.reno_update)(cs, sim_controller.tick_obs(out, p.dt), cps)
        return (sim, cs), (out, cs)

    run = jax.jit(lambda: jax.lax.scan(body, (core.init_state(p, b.ring_len), init), None, length=b.num_ticks))
    return jax.device_get(run())


def test_sawtooth_period_on_a_link():
    """10 Mbit/s, 40 ms, 2-BDP buffer, 30 s: a steady sawtooth between W and W/2 with one
    decrease per overflow.  Hand-computed period: +1 MSS per RTT and, with a standing queue
    (W > BDP = 33.3 packets), RTT = W/c, so regrowing from W/2 to W takes Σ_{w=W/2}^{W-1} w/c
    seconds (≈ 4.9 s for W ≈ 104 packets: BDP + buffer + 1)."""
    c = 10 * MBPS
    sc = parse_scenario({"name": "reno10", "duration_s": 30.0,
                         "link": {"bandwidth_mbps": 10, "buffer_bytes": 2 * c * 0.04},
                         "flows": [{"rtt_ms": 40, "controller": "reno"}]})
    (sim, _), (out, st) = _scan(sc)
    t, cw = out.time, st.cwnd[:, 0]
    ev = np.nonzero(np.diff(st.loss_events[:, 0]) > 0)[0] + 1
    steady = ev[t[ev] > 2.0]
    assert len(steady) >= 4
    w_cut = cw[steady - 1] / MSS
    # The overflow window: BDP + buffer (100 packets) plus the growth during the notice's delay.
    assert np.all((w_cut > 100) & (w_cut < 110)), w_cut
    np.testing.assert_allclose(cw[steady] / MSS, w_cut / 2, rtol=1e-5)
    for a, b, w in zip(steady, steady[1:], w_cut):
        hand = sum(k * MSS / c for k in range(math.ceil(w / 2), math.ceil(w)))
        assert t[b] - t[a] == pytest.approx(hand, rel=0.05), (t[b] - t[a], hand)
    # Full link (the buffer is 2 BDP, so W/2 > BDP keeps the queue busy) and conservation.
    goodput = out.acked[:, 0].sum() / 30.0
    assert goodput == pytest.approx(c, rel=0.02)
    np.testing.assert_allclose(sim.sent_total, sim.acked_total + sim.lost_total + sim.inflight, rtol=1e-5, atol=64)
