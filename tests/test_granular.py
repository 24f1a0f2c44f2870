"""Hand-computed checks of the packet-granular effects (``jaxcc.sim.granular``): which flows a
tick's drop-tail overflow hits, discrete random-loss events with the bare model's mean, and in
closed loop: conservation, determinism under the key, and the desynchronisation they exist for.

One MSS is 1500 B; a 10 Mbit/s link serves 1.25e6 B/s.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxcc import scenarios, senders
from jaxcc.sim import granular as gr
from jaxcc.sim import runner

MSS = 1500.0
ON = gr.params(("drops", "loss"))


def _admit(arriving, overflow, u_first, u, g=ON):
    return np.asarray(gr.drop_tail(g, np.float32(u_first), np.asarray(u, np.float32),
                                   np.asarray(arriving, np.float32), np.float32(overflow)))


# ----------------------------------------------------------------------------- drop-tail split


def test_one_packet_of_overflow_hits_exactly_one_flow():
    """Three flows with 2 MSS each overflow by one packet: D − 1 = 0 further packets, so only the
    first dropped packet's flow loses, and which one follows the cumulative shares 1/3, 2/3, 1."""
    arriving = [3000.0, 3000.0, 3000.0]
    for u_first, who in ((0.1, 0), (0.5, 1), (0.9, 2)):
        adm = _admit(arriving, MSS, u_first, [0.0, 0.0, 0.0])
        want = np.full(3, 3000.0)
        want[who] = 1500.0
        np.testing.assert_allclose(adm, want, rtol=1e-6)


def test_a_hit_flow_loses_at_most_its_arrivals_and_the_rest_goes_to_the_others():
    """Arrivals 1500 and 6000 B, overflow 3000 B (two packets).  u_first = 0.1 < 0.2 picks flow 0;
    flow 1's chance to be hit by the one other packet is 1 − (1 − 0.8)^1 = 0.8, and u = 0.99
    misses it.  Flow 0 loses its 1500 B; the other 1500 B come from flow 1."""
    np.testing.assert_allclose(_admit([1500.0, 6000.0], 3000.0, 0.1, [0.99, 0.99]), [0.0, 4500.0], atol=1e-3)
    # u = 0.5 < 0.8: flow 1 is hit too, and the two share the 3000 B in proportion (1:4).
    np.testing.assert_allclose(_admit([1500.0, 6000.0], 3000.0, 0.1, [0.99, 0.5]), [900.0, 3600.0], rtol=1e-5)


def test_many_packets_of_overflow_are_the_bare_split():
    """30 packets of overflow over two flows of 50 packets each: every flow is hit (1 − 0.5^29),
    so each loses 15 packets, the bare model's proportional split; so does any split with the
    drops effect off."""
    arriving = [75_000.0, 75_000.0]
    np.testing.assert_allclose(_admit(arriving, 45_000.0, 0.3, [0.999, 0.999]), [52_500.0, 52_500.0], rtol=1e-6)
    off = gr.params(())
    np.testing.assert_allclose(_admit([3000.0, 6000.0], MSS, 0.1, [0.0, 0.0], g=off), [2500.0, 5000.0], rtol=1e-6)


def test_no_overflow_admits_everything_and_idle_flows_are_never_hit():
    np.testing.assert_allclose(_admit([3000.0, 0.0, 6000.0], 0.0, 0.0, [0.0, 0.0, 0.0]), [3000.0, 0.0, 6000.0])
    adm = _admit([0.0, 3000.0, 0.0], 1000.0, 0.0, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(adm, [0.0, 2000.0, 0.0], rtol=1e-6)


def test_the_drop_total_is_the_overflow_for_random_splits():
    rng = np.random.default_rng(0)
    for _ in range(200):
        arriving = rng.uniform(0, 20_000, 5) * (rng.uniform(size=5) > 0.2)
        overflow = rng.uniform(0, 1) * arriving.sum()
        adm = _admit(arriving, overflow, rng.uniform(), rng.uniform(size=5))
        assert np.all(adm >= -1e-3) and np.all(adm <= arriving + 1e-3)
        np.testing.assert_allclose(arriving.sum() - adm.sum(), overflow, rtol=1e-4, atol=0.5)


# ----------------------------------------------------------------------------- random-loss events


def test_random_loss_event_sizes_by_hand():
    """2 packets sent at p = 1%: an event with probability h = 1 − 0.99² = 0.0199, losing
    p·sent / h = 30 / 0.0199 = 1507.5 B; under a packet sent (n = 1): h = p and the whole tick's
    sending is lost.  The mean over u is p·sent in both (integrated over a fine grid)."""
    p = np.float32(0.01)
    surv = lambda sent, u: np.asarray(gr.random_loss(ON, np.asarray(u, np.float32), np.asarray(sent, np.float32), p))  # noqa: E731
    np.testing.assert_allclose(surv([3000.0], [0.0199 - 1e-4]), [3000.0 - 1507.54], rtol=1e-4)
    np.testing.assert_allclose(surv([3000.0], [0.0199 + 1e-4]), [3000.0], rtol=1e-6)
    np.testing.assert_allclose(surv([600.0], [0.0099]), [0.0], atol=1e-3)
    np.testing.assert_allclose(surv([600.0], [0.0101]), [600.0], rtol=1e-6)
    u = (np.arange(200_000, dtype=np.float64) + 0.5) / 200_000
    for sent in (600.0, 3000.0, 150_000.0):
        lost = sent - surv(np.full(u.size, sent), u)
        np.testing.assert_allclose(lost.mean(), p * sent, rtol=2e-3)
    off = gr.params(("drops",))
    np.testing.assert_allclose(np.asarray(gr.random_loss(off, np.zeros(1, np.float32), np.float32([3000.0]), p)),
                               [2970.0], rtol=1e-6)


def test_params_rejects_an_unknown_effect_and_two_splits_of_one_overflow():
    with pytest.raises(ValueError, match=r"^unknown effect\(s\) burst; allowed drops,loss,clocked$"):
        gr.params(("drops", "burst"))
    with pytest.raises(ValueError, match=r"^drops and clocked both split the same overflow between the flows; name one of them$"):
        gr.check(("clocked", "loss", "drops"))


# ----------------------------------------------------------------------------- beyond the ACK clock first

CLOCKED = gr.params(("clocked",))


def _clocked(arriving, excess, overflow, g=CLOCKED):
    return np.asarray(gr.clocked_split(g, np.asarray(arriving, np.float32), np.asarray(excess, np.float32),
                                       np.float32(overflow)))


def test_clocked_split_by_hand():
    """A new flow's 2-packet burst (all excess) beside a clocked 4-packet stream: one packet of
    overflow is the burst's, three packets take the burst's two and one of the stream's; two
    flows with 1000 and 3000 B of excess share 2000 B of overflow 1:3 (500 and 1500 B)."""
    np.testing.assert_allclose(_clocked([3000.0, 6000.0], [3000.0, 0.0], 1500.0), [1500.0, 6000.0], rtol=1e-6)
    np.testing.assert_allclose(_clocked([3000.0, 6000.0], [3000.0, 0.0], 4500.0), [0.0, 4500.0], atol=1e-3)
    np.testing.assert_allclose(_clocked([3000.0, 3000.0], [1000.0, 3000.0], 2000.0), [2500.0, 1500.0], rtol=1e-6)
    # Off, or nobody beyond the clock: the bare model's proportional split.
    np.testing.assert_allclose(_clocked([3000.0, 6000.0], [3000.0, 0.0], 1500.0, g=gr.params(())), [2500.0, 5000.0],
                               rtol=1e-6)
    np.testing.assert_allclose(_clocked([3000.0, 6000.0], [0.0, 0.0], 1500.0), [2500.0, 5000.0], rtol=1e-6)


def test_clocked_drop_total_is_the_overflow_for_random_splits():
    rng = np.random.default_rng(1)
    for _ in range(200):
        arriving = rng.uniform(0, 20_000, 5) * (rng.uniform(size=5) > 0.2)
        excess = arriving * rng.uniform(size=5) * (rng.uniform(size=5) > 0.5)
        overflow = rng.uniform(0, 1) * arriving.sum()
        adm = _clocked(arriving, excess, overflow)
        assert np.all(adm >= -1e-3) and np.all(adm <= arriving + 1e-3)
        np.testing.assert_allclose(arriving.sum() - adm.sum(), overflow, rtol=1e-4, atol=0.5)


# ----------------------------------------------------------------------------- closed loop


def _run(sc, effects, seed=0):
    b = runner.build_batches([runner.Item(sc, 0)], resolve=senders.resolve)[0]
    if effects is not None:
        b = dataclasses.replace(b, params=b.params.replace(
            granular=gr.batch(effects, [seed])))
    sim, traj, _ = runner.run_batch(b)
    return jax.tree.map(lambda x: np.asarray(x)[0], sim), jax.tree.map(lambda x: np.asarray(x)[0], traj)


TWO_CUBIC = scenarios.parse_scenario({
    "name": "two-cubic", "duration_s": 20.0,
    "link": {"bandwidth_mbps": 10, "buffer_bytes": 60_000},
    "flows": [{"rtt_ms": 40, "controller": "cubic"}, {"rtt_ms": 40, "controller": "cubic"}]})


def test_identical_flows_desynchronise_only_with_granular_drops():
    """Two identical CUBIC flows on one link: the bare model splits every drop evenly, so the two
    stay identical byte for byte; with packet-granular drops a one-packet overflow hits one of
    them, their windows part and their loss counts differ.  The link's drops are the same
    mechanism's either way: total loss within a percentage point of the bare model's."""
    bare, _ = _run(TWO_CUBIC, None)
    np.testing.assert_array_equal(bare.lost_total[0], bare.lost_total[1])
    gran, _ = _run(TWO_CUBIC, ("drops",))
    assert abs(float(gran.lost_total[0] - gran.lost_total[1])) > 5 * MSS, gran.lost_total
    loss = lambda s: float(s.lost_total.sum() / s.sent_total.sum())  # noqa: E731
    assert abs(loss(gran) - loss(bare)) < 0.01, (loss(gran), loss(bare))


def test_closed_loop_conserves_and_is_deterministic_under_the_key():
    sc = scenarios.parse_scenario({
        "name": "lossy", "duration_s": 10.0, "link": {"bandwidth_mbps": 10, "buffer_bytes": 40_000, "loss": 0.01},
        "flows": [{"rtt_ms": 30, "controller": "reno"}, {"rtt_ms": 70, "start_s": 1, "controller": "cubic"}]})
    a, ta = _run(sc, ("drops", "loss"), seed=3)
    b, tb = _run(sc, ("drops", "loss"), seed=3)
    c, _ = _run(sc, ("drops", "loss"), seed=4)
    np.testing.assert_array_equal(ta.lost, tb.lost)
    assert not np.array_equal(a.lost_total, c.lost_total)
    np.testing.assert_allclose(a.sent_total, a.acked_total + a.lost_total + a.inflight, rtol=1e-4, atol=64)
    np.testing.assert_allclose(float(a.admitted_total - a.served_total), float(a.queue),
                               atol=5e-5 * float(a.admitted_total))


def test_loss_events_keep_a_constant_rate_flows_mean_loss():
    """A 6 Mbit/s constant-rate flow on a 10 Mbit/s link at p = 1% for 20 s sends 10,000 packets;
    its loss stays within 4 binomial standard deviations (0.4 pp) of 1%, as the bare model's is
    exactly 1%, though now in discrete events (most ticks lose nothing)."""
    sc = scenarios.parse_scenario({"name": "fixed-lossy", "duration_s": 20.0,
                                   "link": {"bandwidth_mbps": 10, "buffer_bytes": 150_000, "loss": 0.01},
                                   "flows": [{"rtt_ms": 40, "controller": "fixed:6"}]})
    s, traj = _run(sc, ("loss",))
    loss = float(s.lost_total[0] / s.sent_total[0])
    assert abs(loss - 0.01) < 0.004, loss
    sending = traj.sent[:, 0] > 0
    assert np.mean(traj.lost[sending, 0] > 0) < 0.3  # feedback ticks with a loss notice


def test_a_late_flows_burst_takes_the_drops_beyond_the_clock():
    """A NewReno flow joins a link that another keeps full (10 Mbit/s, 40 ms, a 20-packet
    buffer): its initial window arrives on a full queue.  Beyond the ACK clock first, the late
    flow loses a larger share of what it sends than the bare split gives it, and the first
    flow a smaller one; the link's loss stays within a percentage point."""
    sc = scenarios.parse_scenario({
        "name": "late-reno", "duration_s": 6.0, "link": {"bandwidth_mbps": 10, "buffer_bytes": 30_000},
        "flows": [{"rtt_ms": 40, "controller": "reno"}, {"rtt_ms": 40, "start_s": 2.0, "controller": "reno"}]})
    bare, _ = _run(sc, None)
    clk, _ = _run(sc, ("clocked",))
    rate = lambda s, i: float(s.lost_total[i] / s.sent_total[i])  # noqa: E731
    assert rate(clk, 1) > rate(bare, 1) and rate(clk, 0) < rate(bare, 0), (
        [rate(bare, i) for i in (0, 1)], [rate(clk, i) for i in (0, 1)])
    loss = lambda s: float(s.lost_total.sum() / s.sent_total.sum())  # noqa: E731
    assert abs(loss(clk) - loss(bare)) < 0.01, (loss(clk), loss(bare))


def test_one_tick_of_core_takes_the_overflow_beyond_the_ack_clock_by_hand():
    """One tick of ``core.step``: 8 Mbit/s (5,000 B per 5-ms tick), a full 15,000-B buffer, 10 %
    random loss.  Flow 0 got 3,000 B of ACKs and sends 6,000 (half beyond its clock); flow 1 got
    3,000 B of loss notices and sends 3,000 (all clocked).  Arrivals 5,400 and 2,700 B overflow
    the buffer by 3,100 B.  Flow 0's excess is 5,400 · (1 − 3,000/6,000) = 2,700 B, all dropped;
    the other 400 B fall on the clocked 2,700 + 2,700 B equally: both admit 2,500 B.  The bare
    split is in proportion to the arrivals: 3,333.3 and 1,666.7 B."""
    import jax.numpy as jnp

    from jaxcc.sim import core, links

    p = links.link_from_arrays(jnp.zeros((1,)), jnp.full((1,), 1e6), 15_000.0, 0.1, jnp.full((2,), 0.04),
                               jnp.zeros((2,)), jnp.full((2,), 1e9), 8)
    s = core.init_state(p, 64)
    s = s.replace(queue=jnp.float32(15_000.0), inflight=jnp.full((2,), 10_000.0, jnp.float32),
                  pending=jnp.asarray([[3000.0, 0.0, 120.0], [0.0, 3000.0, 0.0]], jnp.float32))
    rate, cwnd = jnp.full((2,), core.BIG), jnp.asarray([13_000.0, 10_000.0])
    _, bare = core.step(p, s, rate, cwnd)
    _, clk = core.step(p.replace(granular=jax.tree.map(jnp.asarray, CLOCKED)), s, rate, cwnd)
    np.testing.assert_allclose(np.asarray(bare.sent), [6000.0, 3000.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(bare.admitted), [3333.33, 1666.67], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(clk.admitted), [2500.0, 2500.0], rtol=1e-5)
    np.testing.assert_allclose(float(clk.queue), float(bare.queue), rtol=1e-6)  # the link's drops are the same
