"""Hand-computed checks of ``jaxcc.sim.core``: capacity integrals, one tick by hand, feedback
timing, and rate independence.  Everything runs in float64 (``jax.enable_x64``) so that the
expected numbers can be compared tightly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import senders, units
from jaxcc.scenarios import parse_scenario
from jaxcc.sim import core, links, runner

X64 = dict(rtol=1e-12, atol=1e-9)
_step = jax.jit(core.step)  # tick-by-tick tests: one program per shape, not op by op


def link64(schedule, buffer=1e9, loss=0.0, rtts=(0.08,), starts=None, stops=None, dt=None):
    """A ``LinkParams`` with float64 leaves (what ``links.make_link`` builds, without its float32)."""
    n = len(rtts)
    cum, per = schedule.cumulative()
    a = lambda x: jnp.asarray(np.asarray(x, np.float64))  # noqa: E731
    return core.LinkParams(
        dt=a(min(rtts) / 8 if dt is None else dt), cap_t=a(schedule.times), cap_bps=a(schedule.rates),
        cap_cum=a(cum), cap_period=a(schedule.period), cap_period_bytes=a(per), buffer_bytes=a(buffer),
        loss=a(loss), rtt=a(rtts), start=a(starts or [0.0] * n), stop=a(stops or [1e9] * n))


def f(fn, p, *args):
    return float(fn(p, *(jnp.asarray(a, jnp.float64) for a in args)))


# ----------------------------------------------------------------------------- capacity


def test_constant_capacity():
    with jax.enable_x64(True):
        p = link64(links.constant(8.0))  # 8 Mbit/s = 1e6 B/s
        assert f(core.capacity_at, p, 7.3) == 1e6
        np.testing.assert_allclose(f(core.bytes_servable, p, 0.25, 2.25), 2e6, **X64)
        np.testing.assert_allclose(f(core.time_to_serve, p, 3.0, 62500.0), 0.0625, **X64)
        np.testing.assert_allclose(f(core.time_to_serve, p, 3.0, 0.0), 0.0, **X64)


STEP_OUTAGE = links.Schedule(np.array([0.0, 1.0, 2.0]), np.array([1e6, 0.0, 5e5]))  # 1 s on, 1 s off, then half


def test_steps_with_outage():
    with jax.enable_x64(True):
        p = link64(STEP_OUTAGE)
        assert [f(core.capacity_at, p, t) for t in (0.0, 0.5, 1.0, 1.5, 2.0, 9.0)] == [1e6, 1e6, 0.0, 0.0, 5e5, 5e5]
        np.testing.assert_allclose(f(core.bytes_servable, p, 0.5, 2.5), 0.5e6 + 0.0 + 0.25e6, **X64)
        np.testing.assert_allclose(f(core.bytes_servable, p, 1.2, 1.8), 0.0, **X64)
        np.testing.assert_allclose(f(core.bytes_servable, p, 2.0, 4.0), 1e6, **X64)
        # 0.25 MB from 0.5 s: done at 0.75 s.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 0.25e6), 0.25, **X64)
        # 0.75 MB from 0.5 s: 0.5 MB by 1 s, nothing during the outage, 0.25 MB at 5e5 B/s: 2.5 s.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 0.75e6), 2.0, **X64)
        # Starting inside the outage: wait for its end, then 0.25 MB at 5e5 B/s.
        np.testing.assert_allclose(f(core.time_to_serve, p, 1.5, 0.25e6), 1.0, **X64)
        # Just short of the end of the first segment.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 0.5e6 - 1.0), 0.5 - 1e-6, **X64)


def test_bytes_finishing_exactly_at_outage_start():
    """Regression (found by this test, fixed in core): searchsorted(side='right') on cap_cum
    dated bytes that finish exactly when an outage begins to the outage's END."""
    with jax.enable_x64(True):
        p = link64(STEP_OUTAGE)
        # 0.5 MB from 0.5 s at 1e6 B/s are served at exactly 1.0 s (the outage starts then); one
        # byte more waits for the outage to end.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 0.5e6), 0.5, **X64)
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 0.5e6 + 1.0), 1.5 + 1.0 / 5e5, **X64)


ON_OFF = links.Schedule(np.array([0.0, 1.0]), np.array([1e6, 0.0]), period=2.0)  # looping: 1 s on, 1 s off


def test_looping_schedule():
    with jax.enable_x64(True):
        p = link64(ON_OFF)
        assert float(p.cap_period_bytes) == 1e6
        assert [f(core.capacity_at, p, t) for t in (0.5, 1.5, 2.5, 3.5, 100.25)] == [1e6, 0.0, 1e6, 0.0, 1e6]
        np.testing.assert_allclose(f(core.bytes_servable, p, 0.5, 2.5), 1e6, **X64)  # wraps once
        np.testing.assert_allclose(f(core.bytes_servable, p, 1.5, 3.5), 1e6, **X64)
        np.testing.assert_allclose(f(core.bytes_servable, p, 10.25, 10.75), 0.5e6, **X64)  # a later lap
        # 1.25 MB from 0.5 s: 0.5 MB by 1 s, off until 2 s, 0.75 MB by 2.75 s.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 1.25e6), 2.25, **X64)
        # 2.5 MB from 1.5 s (inside an off period): laps [2,3], [4,5], half of [6,7].
        np.testing.assert_allclose(f(core.time_to_serve, p, 1.5, 2.5e6), 6.5 - 1.5, **X64)
        # A later lap works the same as the first.
        np.testing.assert_allclose(f(core.time_to_serve, p, 20.5, 1.25e6), 2.25, **X64)


def test_looping_exact_lap_multiple():
    """Regression (found by this test, fixed in core): laps counted with floor(x / lap bytes)
    dated a total that is an exact multiple of a lap to the start of the NEXT lap."""
    with jax.enable_x64(True):
        p = link64(ON_OFF)
        # 1.5 MB from 0.5 s: 0.5 MB by 1 s, then 1 MB during [2, 3]: done at 3.0 s, i.e. 2.5 s.
        np.testing.assert_allclose(f(core.time_to_serve, p, 0.5, 1.5e6), 2.5, **X64)


# ----------------------------------------------------------------------------- one tick by hand


def test_single_tick_by_hand():
    """1e6 B/s, dt 10 ms, 12 kB buffer, 10 % loss, two flows (RTT 80 and 120 ms) sending 20 kB and
    10 kB in the first tick."""
    with jax.enable_x64(True):
        p = link64(links.constant(8.0), buffer=12000.0, loss=0.1, rtts=(0.08, 0.12), dt=0.01)
        s = core.init_state(p, 32)
        s1, out = _step(p, s, jnp.array([2e6, 1e6]), jnp.array([core.BIG, core.BIG]))
        # Random loss first: 18000 + 9000 arrive.  The link serves 10000 in the tick, so the
        # backlog would be 17000 > 12000: 5000 overflow, shared in proportion to arrivals.
        keep = 22000.0 / 27000.0
        admitted = np.array([18000.0 * keep, 9000.0 * keep])
        np.testing.assert_allclose(out.sent, [20000.0, 10000.0], **X64)
        np.testing.assert_allclose(out.admitted, admitted, **X64)
        np.testing.assert_allclose(float(out.queue), 12000.0, **X64)
        np.testing.assert_allclose(float(out.served), 10000.0, **X64)
        np.testing.assert_allclose(float(out.capacity), 1e6, **X64)
        # Bytes wait behind the mean backlog (0 + 12000)/2 plus their own MSS: 7.5 ms.
        np.testing.assert_allclose(float(out.qdelay), 0.0075, **X64)
        np.testing.assert_allclose(out.owd, [0.0075 + 0.04, 0.0075 + 0.06], **X64)
        # Nothing is fed back yet; everything sent is in flight.
        np.testing.assert_allclose(out.acked, [0.0, 0.0], **X64)
        np.testing.assert_allclose(out.inflight, [20000.0, 10000.0], **X64)
        # Feedback, clocked by the link: the 22 kB admitted leave the FIFO one after another from
        # 1.5 ms (the first packet's serialisation) to 23.5 ms (22 kB + one MSS at 1e6 B/s), so
        # byte fraction x of the tick (sent at 10x ms) arrives back at 81.5 + 22x ms (flow 0) and
        # 121.5 + 22x ms (flow 1): RTT 81.5 + 12x (121.5 + 12x) ms.  Feedback credited to tick j
        # is usable from its start, so tick j collects arrivals in [(j - 1/2)·10, (j + 1/2)·10) ms:
        # flow 0 ticks 8, 9, 10 get x in [0, 3.5/22), [3.5/22, 13.5/22), [13.5/22, 1]; flow 1 the
        # same in ticks 12, 13, 14.
        ring = np.array(s1.ring)
        lost = np.array([20000.0, 10000.0]) - admitted
        edges = np.array([0.0, 3.5 / 22, 13.5 / 22, 1.0])
        for f, (first, base_ms) in enumerate([(8, 81.5), (12, 121.5)]):
            for j in range(3):
                x1, x2 = edges[j], edges[j + 1]
                rtt_mean = (base_ms + 12.0 * 0.5 * (x1 + x2)) / 1e3  # RTT is linear in x
                want = np.array([admitted[f], lost[f], admitted[f] * rtt_mean]) * (x2 - x1)
                np.testing.assert_allclose(ring[first + j, f], want, **X64)
                ring[first + j, f] = 0.0
        assert not ring.any() and not np.asarray(s1.pending).any()

        # Quiet ticks: the queue drains at 10 kB per tick; the feedback arrives in ticks 8-10, 12-14.
        s, zero = s1, jnp.zeros(2)
        acked = []
        for k in range(1, 16):
            s, o = _step(p, s, zero, zero)
            acked.append(np.asarray(o.acked))
            if k == 1:
                np.testing.assert_allclose(float(o.queue), 2000.0, **X64)
            if k == 2:
                np.testing.assert_allclose(float(o.queue), 0.0, **X64)
            if k == 9:
                np.testing.assert_allclose(o.lost[0], 10.0 / 22 * lost[0], **X64)
                np.testing.assert_allclose(float(o.rtt_wsum[0] / o.acked[0]), (81.5 + 6.0 * 17.0 / 22) / 1e3, **X64)
        acked = np.array(acked)
        assert np.nonzero(acked[:, 0])[0].tolist() == [7, 8, 9]  # k = 8, 9, 10
        assert np.nonzero(acked[:, 1])[0].tolist() == [11, 12, 13]  # k = 12, 13, 14
        np.testing.assert_allclose(acked[7:10, 0], np.diff(edges) * admitted[0], **X64)
        np.testing.assert_allclose(s.inflight, [0.0, 0.0], atol=1e-9)


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_fewer_feedback_slots_compress_the_departure_interval(slots):
    """The tick of ``test_single_tick_by_hand`` with its feedback spread over fewer ring slots
    (``LinkParams.feedback_slots``).  Flow 0's arrival interval is [8.65, 10.85) in ticks (1.5 to
    23.5 ms of departures, plus 80 ms, plus the half-tick shift, over 10-ms ticks): three slots
    hold it whole, as four do; two compress it into ticks 8 and 9, where tick 8 keeps its
    0.35 ticks, now of 1.35; one puts it all in tick 8.  Nothing is lost or made either way."""
    with jax.enable_x64(True):
        p = link64(links.constant(8.0), buffer=12000.0, loss=0.1, rtts=(0.08, 0.12), dt=0.01)
        rate, cwnd = jnp.array([2e6, 1e6]), jnp.array([core.BIG, core.BIG])
        s4, out4 = _step(p, core.init_state(p, 32), rate, cwnd)
        s, out = _step(p.replace(feedback_slots=slots), core.init_state(p, 32), rate, cwnd)
        ring, ring4 = np.array(s.ring), np.array(s4.ring)
        admitted = np.asarray(out.admitted)
        np.testing.assert_allclose(admitted, out4.admitted, **X64)
        np.testing.assert_allclose(ring.sum(axis=0)[:, :2], ring4.sum(axis=0)[:, :2], **X64)  # bytes conserved
        share = {3: [3.5 / 22, 10 / 22, 8.5 / 22], 2: [0.35 / 1.35, 1 / 1.35], 1: [1.0]}[slots]
        for f, first in enumerate([8, 12]):
            np.testing.assert_allclose(ring[first:first + slots, f, 0], admitted[f] * np.array(share), **X64)
            assert not ring[:first, f].any() and not ring[first + slots:, f].any()
        if slots == 3:  # the interval fits: the same ring as four slots give
            np.testing.assert_allclose(ring, ring4, **X64)


def test_window_limits_sending():
    with jax.enable_x64(True):
        p = link64(links.constant(8.0), rtts=(0.08,), dt=0.01)
        s = core.init_state(p, 32)
        s, out = _step(p, s, jnp.array([core.BIG]), jnp.array([15000.0]))
        np.testing.assert_allclose(out.sent, [15000.0], **X64)
        s, out = _step(p, s, jnp.array([core.BIG]), jnp.array([15000.0]))
        np.testing.assert_allclose(out.sent, [0.0], **X64)  # window full until feedback arrives


def test_inactive_flows_send_nothing():
    with jax.enable_x64(True):
        p = link64(links.constant(8.0), rtts=(0.08, 0.08), starts=[0.0, 0.05], stops=[0.02, 1.0], dt=0.01)
        s = core.init_state(p, 32)
        sent = []
        for _ in range(8):
            s, out = _step(p, s, jnp.array([1e6, 1e6]), jnp.array([core.BIG, core.BIG]))
            sent.append(np.asarray(out.sent))
        sent = np.array(sent)
        np.testing.assert_allclose(sent[:, 0], [1e4, 1e4, 0, 0, 0, 0, 0, 0], **X64)
        np.testing.assert_allclose(sent[:, 1], [0, 0, 0, 0, 0, 1e4, 1e4, 1e4], **X64)


# ----------------------------------------------------------------------------- rate independence


RI_RTT = 0.5  # long enough that the 1 Mbit/s buffer (0.5 BDP) holds ~21 packets


def _packet_terms(queue, buffer, capacity):
    """The packet-sized parts of the model's queueing delay: one MSS of serialisation, and the
    cap of the backlog an admitted packet waits behind at ``buffer − MSS``."""
    backlog = 0.5 * (np.concatenate([[0.0], queue[:-1]]) + queue)
    return (units.MSS + np.minimum(backlog, buffer - units.MSS) - backlog) / capacity


def _normalised_run(mbps: float):
    """Two constant-rate flows (60 % and 70 % of the nominal rate) on a link that steps from the
    nominal rate to half of it and back, buffer 0.5 BDP, 1 % loss; everything in bytes scales with
    the rate.  Returns trajectories normalised by the nominal bytes per tick / buffer."""
    c = mbps * units.MBPS
    rtt, dt = RI_RTT, RI_RTT / 8
    sched = links.Schedule(np.array([0.0, 10 * rtt, 20 * rtt]), np.array([c, 0.5 * c, c]))
    p = link64(sched, buffer=0.5 * c * rtt, loss=0.01, rtts=(rtt, 1.6 * rtt), dt=dt)
    rates = jnp.array([0.6 * c, 0.7 * c])
    big = jnp.full((2,), core.BIG)

    def body(s, _):
        s, o = core.step(p, s, rates, big)
        return s, o

    _, o = jax.lax.scan(body, core.init_state(p, 64), None, length=320)
    per_tick = c * dt
    return {
        "sent": np.asarray(o.sent) / per_tick,
        "admitted": np.asarray(o.admitted) / per_tick,
        # (Feedback timing is not compared: it includes one packet's serialisation, MSS / c —
        # 12 ms at 1 Mbit/s, 12 us at 1 Gbit/s — the model's one absolute scale.)
        "queue": np.asarray(o.queue) / (0.5 * c * rtt),
        "served": np.asarray(o.served) / per_tick,
        # The model's only absolute size is the packet: remove its serialisation (MSS / c(t))
        # and the cap on the backlog an admitted packet waits behind (buffer − MSS).
        "qdelay_minus_mss": np.asarray(o.qdelay) - _packet_terms(np.asarray(o.queue), 0.5 * c * rtt,
                                                                np.asarray(o.capacity)),
    }


def test_rate_independence_1mbps_vs_1gbps():
    with jax.enable_x64(True):
        a, b = _normalised_run(1.0), _normalised_run(1000.0)
    assert a["queue"].max() > 0.99  # the scenario does fill the buffer (and drains it again)
    qa, qb = a.pop("qdelay_minus_mss"), b.pop("qdelay_minus_mss")
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-9, atol=1e-9, err_msg=k)
    # Subtracting MSS / c(t) is exact unless the bytes' service crosses a capacity step (then the
    # packet is serialised at the new rate): compare the ticks whose service ends before a step.
    t_mid = (np.arange(qa.size) + 0.5) * (RI_RTT / 8)
    end = t_mid + np.maximum(qa, qb) + 2 * 1500 / (0.5 * units.MBPS)
    clean = ~np.any([(t_mid < step) & (end >= step) for step in (10 * RI_RTT, 20 * RI_RTT)], axis=0)
    assert clean.sum() > 250
    np.testing.assert_allclose(qa[clean], qb[clean], rtol=1e-9, atol=1e-9)


def _compiled_run(mbps: float, ticks_per_rtt: int = links.DEFAULT_TICKS_PER_RTT):
    """A 2-s scenario at ``mbps`` built through the normal path (spec -> ``runner.build_batches``
    -> ``runner.make_run``, as ``jaxcc.evaluate`` does): its scan length, ring length, the
    lowered program's text and the compiled program's cost analysis."""
    rtt_ms = 40.0
    bdp = mbps * units.MBPS * rtt_ms / 1e3
    sc = parse_scenario({"name": f"rate{mbps:g}", "duration_s": 2.0,
                         "link": {"bandwidth_mbps": mbps, "buffer_bytes": 2 * bdp, "loss": 0.01},
                         "flows": [{"rtt_ms": rtt_ms, "controller": "bbr"},
                                   {"rtt_ms": 2 * rtt_ms, "start_s": 0.5, "controller": "cubic"}]})
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve, ticks_per_rtt=ticks_per_rtt)
    run = jax.jit(jax.vmap(runner.make_run(batch.controllers, batch.num_ticks, batch.ring_len)))
    lowered = run.lower(jax.tree.map(jnp.asarray, batch.params), jnp.asarray(batch.ctrl_ids),
                        jax.tree.map(jnp.asarray, batch.cparams))
    cost = lowered.compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return {"ticks": batch.num_ticks, "ring": batch.ring_len, "program": lowered.as_text(),
            "flops": cost["flops"], "bytes accessed": cost["bytes accessed"]}


def test_cost_is_independent_of_rate():
    """A 1 Gbit/s link costs what a 1 Mbit/s link costs: the fluid model's point (DESIGN §sim).

    The work of a run is fixed on the host, before anything is traced: the scan length
    (duration / tick, the tick = min RTT / 8), the feedback ring (largest RTT + a full buffer's
    wait, in ticks) and the padded shapes.  So the property is checked where a rate dependence
    would enter: the same scenario at 1 Mbit/s and 1 Gbit/s, built through the normal path,
    must give the same scan and ring lengths, the same lowered program and the same compiled
    cost.  (The buffer is 2 BDP at both rates, i.e. the same queueing delay in seconds: the ring
    must hold a full buffer's wait, so the cost follows delays in seconds, never bytes per
    second.  The ring's slack of two packets' wait, 24 ms at 1 Mbit/s and 24 us at 1 Gbit/s, is
    the model's one absolute size; here both rings round up to the same 40 slots.)

    The earlier version lowered ``core.step`` alone with the link as traced arguments, which is
    the same program for any link by construction and so could not fail.  This one can: the
    same comparison on a packet-granular variant of the same path (one tick per packet
    serialisation time, as a packet-level simulator such as ``tests/reference/packet_sim.py``
    does one event per packet) must, and does, find the two rates' programs different.
    """
    low, high = _compiled_run(1.0), _compiled_run(1000.0)
    assert (low["ticks"], low["ring"]) == (high["ticks"], high["ring"]) == (400, 40)
    assert low["program"] == high["program"]
    assert (low["flops"], low["bytes accessed"]) == (high["flops"], high["bytes accessed"])
    assert low["flops"] > 0

    def packet_ticks(mbps):  # ticks per RTT at one tick per 1500-byte packet (at least 8)
        return max(links.DEFAULT_TICKS_PER_RTT, round(mbps * units.MBPS * 0.040 / units.MSS))

    p_low, p_high = _compiled_run(1.0, packet_ticks(1.0)), _compiled_run(1000.0, packet_ticks(1000.0))
    assert p_low["ticks"] == 400 and p_high["ticks"] == 166_650  # 2 s at 12 us per tick
    assert p_low["program"] != p_high["program"]


def test_no_float32_drift_at_300_s():
    """float32, as training runs: 200 Mbit/s, 10 ms RTT (dt = 1.25 ms), a flow at twice the
    capacity for 300 s (240 000 ticks).  By hand: the link serves c·dt = 31 250 bytes every tick,
    a full 1 MB buffer delays a packet by (B − MSS + MSS)/c = 40 ms, and the reported capacity is
    c.  Late in the run the times (ulp of 300 s: 30 us) and the cumulative byte counts (7.5e9 B:
    ulp 512 B) are coarse; before the per-segment forms, a tick's servable bytes were off by up
    to 1.6 % and a queueing delay by up to 14 %."""
    mbps, rtt, dur, buf = 200.0, 0.01, 300.0, 1e6
    sched = links.constant(mbps)
    p = jax.tree.map(jnp.asarray, links.make_link(sched, buf, 0.0, [rtt], [0.0], [dur]))
    assert p.dt.dtype == jnp.float32
    n = int(round(dur / float(p.dt)))
    ring = links.ring_len_for(sched, buf, [rtt], float(p.dt))
    c = mbps * units.MBPS

    def body(s, _):
        s, out = core.step(p, s, jnp.array([2 * c], jnp.float32), jnp.array([core.BIG], jnp.float32))
        return s, (out.served, out.qdelay, out.capacity)

    _, (served, qdelay, cap) = jax.jit(lambda: jax.lax.scan(body, core.init_state(p, ring), None, length=n))()
    served, qdelay, cap = (np.asarray(x, np.float64) for x in (served, qdelay, cap))
    late = slice(n - 8000, n)  # the last 10 s
    np.testing.assert_allclose(served[late], c * float(p.dt), rtol=1e-6)
    np.testing.assert_allclose(qdelay[late], buf / c, rtol=1e-5)
    np.testing.assert_allclose(cap[late], c, rtol=1e-6)
    assert served.sum() == pytest.approx(c * n * float(p.dt), rel=1e-5)


def test_probe_records_sender_state_every_tick_and_changes_nothing():
    """``make_run``'s ``probe`` records a function of the controllers' states after every tick
    ([B, T, ...]) and leaves the run as it was: the same trajectory and rates bit for bit; its
    last record is the final state ``keep_states`` returns."""
    sc = parse_scenario({"name": "probe", "duration_s": 1.0, "link": {"bandwidth_mbps": 10, "buffer_bytes": 60000},
                         "flows": [{"rtt_ms": 40.0, "controller": "fixed:4"},
                                   {"rtt_ms": 40.0, "start_s": 0.5, "controller": "fixed:2"}]})
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    _, traj, rates = runner.run_batch(batch)
    _, traj_p, rates_p, rec = runner.run_batch(batch, probe=lambda cs: {"n": jnp.asarray(len(cs))})
    for a, b in zip(jax.tree.leaves(traj), jax.tree.leaves(traj_p)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rates, rates_p)
    assert rec["n"].shape == (1, batch.num_ticks) and np.all(rec["n"] == len(batch.controllers))
    _, _, _, states, rec2 = runner.run_batch(batch, keep_states=True, probe=lambda cs: cs)
    for a, b in zip(jax.tree.leaves(states), jax.tree.leaves(rec2)):  # the last tick's record is the final state
        np.testing.assert_array_equal(a, np.asarray(b)[:, -1])
