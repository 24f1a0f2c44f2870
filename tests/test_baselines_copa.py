"""Copa (Arun & Balakrishnan, NSDI 2018), default mode, in the fluid simulator.

Expectations are computed by hand from the paper's formulas (target rate λ_t = 1/(δ·d_q),
window step ±v/(δ·cwnd) per ACK, velocity doubling after three RTTs in one direction) and from
its equilibrium: each flow keeps about 1/δ = 2 packets queued and the queue oscillates between
0 and about 2.5/δ = 5 packets, so n flows share a queue of about n/δ packets.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_baselines import (
    _scan,  # one controller's per-tick trace (tests/test_baselines.py)
)

from jaxcc.evaluation import metrics
from jaxcc import senders
from jaxcc.baselines import copa
from jaxcc.sim import controller as sim_controller
from jaxcc.controllers import SIM_KINDS, ControllerSpec, parse_controller
from jaxcc.scenarios import parse_scenario
from jaxcc.sim import runner
from jaxcc.units import MBPS, MSS


DELTA = 0.5  # the paper's default δ, restated here so the tests do not trust the module
LINK_MBPS, RTT_MS, BUFFER, DURATION = 12.0, 40.0, 240_000, 15.0
PKT_S = MSS / (LINK_MBPS * MBPS)  # one packet's serialisation at 12 Mbit/s: 1 ms
STEADY_S = 5.0  # metrics of the steady state are taken after this time


def _scenario(name, controller, n=1, gap=0.0, loss=0.0, buffer_bytes=BUFFER):
    return parse_scenario({
        "name": name, "duration_s": DURATION,
        "link": {"bandwidth_mbps": LINK_MBPS, "buffer_bytes": buffer_bytes, "loss": loss},
        "flows": [{"rtt_ms": RTT_MS, "start_s": i * gap, "controller": controller} for i in range(n)]})


def _obs(now, acked_pkts, rtt, *, inflight_pkts=100.0, sent_pkts=0.0, lost_pkts=0.0, dt=0.005):
    f = jnp.float32
    acked = acked_pkts * MSS
    return sim_controller.TickObs(now=f(now), dt=f(dt), active=jnp.bool_(True), acked=f(acked), lost=f(lost_pkts * MSS),
                        rtt_wsum=f(acked * rtt), sent=f(sent_pkts * MSS), inflight=f(inflight_pkts * MSS),
                        capacity=f(1.5e6), n_active=jnp.int32(1))


def _feed(s, steps):
    cp = sim_controller.ControllerParams.zeros()
    out = []
    for o in steps:
        s = copa.copa_update(s, o, cp)
        out.append(s)
    return out


# ----------------------------------------------------------------------------- names


def test_name_parses_and_resolves_everywhere():
    assert parse_controller("copa") == ControllerSpec("copa", "", "copa")
    assert "copa" in SIM_KINDS
    with pytest.raises(ValueError, match="copa"):  # the list of allowed names mentions it
        parse_controller("copa2")
    c, cp = senders.resolve("copa")
    assert c is copa.COPA and c.name == "copa"
    assert not any(x.any() for x in jax.tree.leaves(cp))
    sc = _scenario("named", "copa")
    assert [f.controller for f in sc.flows] == ["copa"]
    from jaxcc.evaluation import runs as evaluation_runs
    assert [e.label for e in evaluation_runs.controller_entries("bbr,copa")] == ["bbr", "copa"]
    # Emulation has no Copa sender: refused up front, with the reason.
    from jaxcc.emulation import runner, spec
    with pytest.raises(spec.EmulationError, match="only in the simulator"):
        spec.validate_controller("copa")
    with pytest.raises(spec.EmulationError, match="only in the simulator"):
        runner.flow_kind("copa")


def test_constants_are_the_papers():
    assert copa.DELTA == DELTA
    assert copa.PACING_GAIN == 2.0  # pacing at 2·cwnd/RTTstanding
    assert copa.MIN_RTT_WINDOW_S == 10.0
    assert copa.VELOCITY_SAME_RTTS == 3
    assert (copa.INIT_CWND, copa.MIN_CWND) == (10 * MSS, 2 * MSS)


# ----------------------------------------------------------------------------- formulas by hand


def test_windowed_min_follows_win_minmax():
    """Linux lib/win_minmax.c traced by hand with a 10-s window."""
    t, v = jnp.full((3,), copa.NEVER), jnp.full((3,), copa.NO_RTT)
    got = []
    for tt, x in [(0.0, 50.0), (1.0, 60.0), (4.0, 55.0), (9.0, 70.0), (10.5, 65.0), (15.0, 80.0), (16.0, 40.0)]:
        t, v = copa.windowed_min(t, v, jnp.float32(10.0), jnp.float32(tt), jnp.float32(x))
        got.append(float(v[0]))
    # 50 holds for 10 s; at 10.5 s the best sample left is 55 (t=4), at 15 s it is 65 (t=10.5),
    # and a new minimum replaces everything.
    assert got == [50.0, 50.0, 50.0, 50.0, 55.0, 65.0, 40.0]


def test_update_rule_target_rate_and_standing_rtt():
    s0 = copa.copa_init(sim_controller.ControllerParams.zeros())._replace(slow_start=jnp.bool_(False), cwnd=jnp.float32(20 * MSS))
    s1, s2, s3, s4 = _feed(s0, [
        _obs(0.10, 4, 0.040),  # first sample: d_q = 0, the target is infinite -> increase
        _obs(0.20, 4, 0.050),  # 0.1 s later (> srtt/2): RTTstanding = 50 ms, d_q = 10 ms
        _obs(0.21, 4, 0.055),  # 10 ms later (< srtt/2 ≈ 21 ms): the 50-ms sample still counts
        _obs(0.26, 4, 0.042),  # 50 ms later: only 42 ms is recent; d_q = 2 ms
    ])
    def pkt(s):
        return float(s.cwnd) / MSS

    # Each ACK moves cwnd by v/(δ·cwnd) packets; over 4 ACKs, cwnd² changes by 2·v·4/δ = 16.
    assert bool(s1.increase) and pkt(s1) == pytest.approx(math.sqrt(20**2 + 16), rel=1e-5)
    assert pkt(s1) == pytest.approx(20 + 4 / (DELTA * 20), abs=0.01)  # the per-ACK rule, to first order
    # λ_t = 1/(δ·d_q) = 1/(0.5·0.01) = 200 pkt/s < λ = 20.4/0.05 = 408 pkt/s -> decrease.
    assert float(s2.rtt_min) == pytest.approx(0.040) and float(s2.rtt_standing) == pytest.approx(0.050)
    assert float(s2.d_q) == pytest.approx(0.010, abs=1e-6)
    assert not bool(s2.increase) and pkt(s2) == pytest.approx(20.0, rel=1e-5)
    assert float(s3.rtt_standing) == pytest.approx(0.050) and not bool(s3.increase)
    assert pkt(s3) == pytest.approx(math.sqrt(400 - 16), rel=1e-5)
    # λ_t = 1/(0.5·0.002) = 1000 pkt/s > λ = 19.6/0.042 ≈ 467 pkt/s -> increase.
    assert float(s4.rtt_standing) == pytest.approx(0.042) and float(s4.d_q) == pytest.approx(0.002, abs=1e-6)
    assert bool(s4.increase) and pkt(s4) == pytest.approx(20.0, rel=1e-5)
    # Pacing at 2·cwnd/RTTstanding, window-limited by cwnd.
    a = copa.copa_act(s4, sim_controller.ControllerParams.zeros())
    assert float(a.rate) == pytest.approx(2 * float(s4.cwnd) / 0.042, rel=1e-5)
    assert float(a.cwnd) == float(s4.cwnd)
    # Before any RTT sample: unpaced, 10 packets.
    a0 = copa.copa_act(copa.copa_init(sim_controller.ControllerParams.zeros()), sim_controller.ControllerParams.zeros())
    assert float(a0.rate) >= 1e29 and float(a0.cwnd) == 10 * MSS


def test_slow_start_doubles_then_exits_once():
    s0 = copa.copa_init(sim_controller.ControllerParams.zeros())
    s1, s2, s3 = _feed(s0, [_obs(0.10, 10, 0.040), _obs(0.20, 10, 0.060), _obs(0.30, 10, 0.040)])
    assert bool(s1.slow_start) and float(s1.cwnd) == pytest.approx(20 * MSS)  # cwnd += acked
    # d_q = 20 ms: λ_t = 100 pkt/s < λ = 20/0.06 = 333 pkt/s -> slow start ends, cwnd decreases.
    assert not bool(s2.slow_start) and float(s2.ss_exit_time) == pytest.approx(0.20)
    assert float(s2.cwnd) / MSS == pytest.approx(math.sqrt(400 - 2 * 10 / DELTA), rel=1e-5)
    # It does not come back when the queue empties: the ordinary increase follows.
    assert not bool(s3.slow_start) and float(s3.cwnd) / MSS == pytest.approx(math.sqrt(360 + 40), rel=1e-5)


def test_velocity_doubles_after_three_rtts_and_resets_on_a_turn():
    # inflight == sent: every tick with ACKs ends a window (round).
    s = copa.copa_init(sim_controller.ControllerParams.zeros())._replace(slow_start=jnp.bool_(False), cwnd=jnp.float32(100 * MSS))
    up = [_obs(0.05 * (i + 1), 5, 0.040, inflight_pkts=5, sent_pkts=5) for i in range(5)]
    down = [_obs(0.30 + 0.05 * i, 5, 0.080, inflight_pkts=5, sent_pkts=5) for i in range(5)]
    states = _feed(s, up + down)
    v = [float(x.velocity) for x in states]
    # Up, up: v = 1; from the third window in the same direction v doubles each window.
    assert v[:5] == [1, 1, 2, 4, 8]
    # Turning down resets v to 1; it doubles again only after three windows down.
    assert v[5:] == [1, 1, 1, 2, 4]
    assert [int(x.direction) for x in states] == [copa.UP] * 5 + [copa.DOWN] * 5
    # cwnd² moves by 2·v·5/δ = 20·v per window with the v of that window (v = 8 for the turn).
    w2 = [float(x.cwnd / MSS) ** 2 for x in states]
    steps = np.diff([100.0**2] + w2)
    np.testing.assert_allclose(steps, [20, 20, 20, 40, 80, -160, -20, -20, -20, -40], rtol=2e-3)


def test_velocity_bound_from_the_authors_code():
    # genericCC halves v while v > δ·cwnd (packets): one ACK moves the window by <= 1 packet.
    assert float(copa.velocity_cap(jnp.float32(64.0), jnp.float32(20 * MSS))) == 8.0
    assert float(copa.velocity_cap(jnp.float32(64.0), jnp.float32(2 * MSS))) == 1.0
    assert float(copa.velocity_cap(jnp.float32(4.0), jnp.float32(100 * MSS))) == 4.0


def test_jit_vmap_matches_per_flow():
    n = 3
    obs = sim_controller.TickObs(now=jnp.full((n,), 0.1), dt=jnp.full((n,), 0.005), active=jnp.ones((n,), bool),
                       acked=jnp.array([3000.0, 0.0, 9000.0]), lost=jnp.array([0.0, 1500.0, 0.0]),
                       rtt_wsum=jnp.array([3000.0 * 0.04, 0.0, 9000.0 * 0.06]), sent=jnp.full((n,), 1500.0),
                       inflight=jnp.full((n,), 9000.0), capacity=jnp.full((n,), 1.5e6), n_active=jnp.full((n,), 3))
    cps = jax.tree.map(jnp.asarray, sim_controller.ControllerParams.zeros((n,)))
    s = jax.vmap(copa.copa_init)(cps)
    s = jax.jit(jax.vmap(copa.copa_update))(s, obs, cps)
    s = jax.jit(jax.vmap(copa.copa_update))(s, obs._replace(now=obs.now + 0.1, rtt_wsum=obs.acked * 0.08), cps)
    a = jax.jit(jax.vmap(copa.copa_act))(s, cps)
    assert a.rate.shape == (n,) and bool(jnp.all(a.rate > 0)) and bool(jnp.all(a.cwnd >= 2 * MSS))
    for i in range(n):
        si = copa.copa_init(jax.tree.map(lambda x: x[i], cps))
        oi = jax.tree.map(lambda x, i=i: x[i], obs)
        si = copa.copa_update(si, oi, jax.tree.map(lambda x: x[i], cps))
        si = copa.copa_update(si, oi._replace(now=oi.now + 0.1, rtt_wsum=oi.acked * 0.08), jax.tree.map(lambda x: x[i], cps))
        for got, want in zip(jax.tree.leaves(jax.tree.map(lambda x, i=i: x[i], s)), jax.tree.leaves(si)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# ----------------------------------------------------------------------------- on a link


@pytest.fixture(scope="module")
def link_runs():
    """One compiled batch (all runs 15 s at 40 ms RTT): Copa alone, CUBIC alone, two Copa flows
    (the second joins at 3 s), Copa with 2 % random loss and a 10-packet buffer."""
    items = [runner.Item(_scenario("one", "copa"), 0, "copa"),
             runner.Item(_scenario("one", "cubic"), 0, "cubic"),
             runner.Item(_scenario("two", "copa", n=2, gap=3.0), 0, "copa2"),
             runner.Item(_scenario("lossy", "copa", loss=0.02, buffer_bytes=10 * 1500), 0, "lossy")]
    (b,) = runner.build_batches(items, resolve=senders.resolve)
    _, traj, rates = runner.run_batch(b)
    out = {}
    for i, it in enumerate(b.items):
        tr = metrics.from_batch(traj, rates, b, i)
        out[it.label] = (tr, metrics.evaluate_trace(tr, jain_last_s=5.0),
                         metrics.evaluate_trace(tr, window=(STEADY_S, DURATION), jain_last_s=5.0))
    return out


def test_one_flow_full_link_small_standing_queue(link_runs):
    tr, full, steady = link_runs["copa"]
    assert full["utilization"] >= 0.9 and steady["utilization"] >= 0.97
    assert full["loss"] == 0.0
    q = tr.queue[tr.time > STEADY_S] / MSS  # packets
    # Equilibrium: d_q = 1/(δ·λ), i.e. 1/δ = 2 packets queued, oscillating over ~0 … 2.5/δ.
    assert 0.5 / DELTA <= q.mean() <= 1.75 / DELTA, q.mean()
    assert q.max() <= 2.5 / DELTA + 1.0, q.max()
    assert q.min() <= 0.1  # the queue empties every cycle: RTTmin stays exact
    # Queueing delay of the bytes (the metric includes their own packet's serialisation).
    qd = tr.qdelay[tr.time > STEADY_S]
    assert qd.mean() <= (1.75 / DELTA + 1.0) * PKT_S
    assert steady["p95_qdelay_ms"] <= (2.5 / DELTA + 1.0) * PKT_S * 1e3
    _, cub, _ = link_runs["cubic"]
    assert cub["p95_qdelay_ms"] > 0.8 * BUFFER / (LINK_MBPS * MBPS) * 1e3


@pytest.mark.xfail(strict=True, reason=(
    "Copa start-up at 8 ticks/RTT on 12 Mbit/s / 40 ms: since the model's link-clocked ACKs the "
    "fluid Copa settles after 2.7 s (whole-run p95 queueing 14.5 ms) where per-ACK Copa on the "
    "packet reference settles by 0.74 s (5 packets); at 16-32 ticks/RTT the fluid one settles in "
    "0.7-1.2 s like the reference: the tick resolution, see copa.py 'Start-up transient'"))
def test_one_flow_start_up_included_far_below_cubic(link_runs):
    """CUBIC on the same link fills the 160-ms buffer, more than 20× Copa's bound of 6 packets
    (6 ms) — start-up included."""
    _, full, _ = link_runs["copa"]
    _, cub, _ = link_runs["cubic"]
    assert full["p95_qdelay_ms"] < cub["p95_qdelay_ms"] / 20.0


def test_two_flows_share_fairly(link_runs):
    tr, full, steady = link_runs["copa2"]
    assert full["jain"] >= 0.95, full["jain_note"]
    assert steady["utilization"] >= 0.95
    # Two flows with the same d_q target the same rate; together they keep ~2/δ = 4 packets.
    q = tr.queue[tr.time > STEADY_S] / MSS
    assert 1.0 / DELTA <= q.mean() <= 3.5 / DELTA, q.mean()
    assert q.min() <= 0.1
    thr = [pf["throughput_mbps"] for pf in steady["per_flow"]]
    assert thr == pytest.approx([LINK_MBPS / 2] * 2, rel=0.1)


def test_random_loss_is_not_a_signal(link_runs):
    # 2 % random loss and a 10-packet buffer (> Copa's ~5-packet peak): Copa keeps the link full
    # and loses about the random 2 %, nothing to overflow.
    tr, _, steady = link_runs["lossy"]
    assert steady["utilization"] >= 0.95
    assert 0.018 <= steady["loss"] <= 0.025
    # The same delay equilibrium as without loss: the queue stays within ~0 … 2.5/δ packets.
    q = tr.queue[tr.time > STEADY_S] / MSS
    assert q.max() <= 2.5 / DELTA + 1.0 and q.min() <= 0.1


def test_estimators_on_two_flows_and_determinism():
    sc = _scenario("two", "copa", n=2, gap=3.0)
    out, st, _ = _scan("copa", sc)
    t = np.asarray(out.time)
    late = t > STEADY_S
    base_rtt = RTT_MS / 1e3 + PKT_S  # propagation + the packet's own serialisation
    # RTTmin is the true base RTT for both flows, also for the one that joined a standing queue.
    np.testing.assert_allclose(st.rtt_min[late], base_rtt, atol=0.2e-3)
    # Slow start ends within the first second; v stays 1 in the steady-state oscillation.
    assert 0 < st.ss_exit_time[-1, 0] < 1.0 and 3.0 < st.ss_exit_time[-1, 1] < 4.0
    assert np.all(st.velocity[late] == 1.0)
    # The queueing-delay estimate tracks the real queue: mean d_q ≈ mean queue / capacity.
    q_s = np.asarray(out.queue)[late] / (LINK_MBPS * MBPS)
    assert np.mean(st.d_q[late]) == pytest.approx(np.mean(q_s), abs=1.5 * PKT_S)
    # Deterministic: the same run again gives the same bits.
    out2, st2, _ = _scan("copa", sc)
    for a, b in zip(jax.tree.leaves((out, st)), jax.tree.leaves((out2, st2))):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- per-ACK Copa on packets


class _PacketCopa:
    """Copa's default mode per ACK, written from the paper's text (§2, §2.1) for the packet
    oracle ``tests/reference/packet_sim.py`` — independent of ``jaxcc.baselines.copa`` (no
    ticks, no fluid): exact windowed mins over ACKs (RTTmin over 10 s, RTTstanding over srtt/2),
    srtt per ACK (RFC 6298 gain 1/8), slow start +1 packet per ACK until λ > λ_t, then
    cwnd ± v/(δ·cwnd) per ACK; once per window (the ACK of the first packet sent after the
    window began) the direction is cwnd now vs cwnd then, and v doubles once it has stayed the
    same for three windows, else resets to 1; genericCC's bound v ≤ max(δ·cwnd, 1) (packets);
    pacing 2·cwnd/RTTstanding (unpaced before the first sample); cwnd ≥ 2 packets."""

    def __init__(self):
        self.cwnd, self.srtt, self.rtt_standing = 10 * MSS, None, None
        self.min_q, self.standing_q = [], []  # (t, rtt), increasing rtt: exact windowed mins
        self.slow_start, self.v, self.direction, self.same = True, 1.0, 1, 0
        self.round_start, self.round_cwnd = None, self.cwnd

    @property
    def pacing_rate(self):
        return math.inf if self.rtt_standing is None else 2.0 * self.cwnd / self.rtt_standing

    @staticmethod
    def _windowed_min(q, now, rtt, win):
        while q and q[-1][1] >= rtt:
            q.pop()
        q.append((now, rtt))
        while q[0][0] < now - win:
            q.pop(0)
        return q[0][1]

    def on_ack(self, now, nbytes, rtt, inflight):
        self.srtt = rtt if self.srtt is None else 0.875 * self.srtt + 0.125 * rtt
        rtt_min = self._windowed_min(self.min_q, now, rtt, 10.0)
        self.rtt_standing = self._windowed_min(self.standing_q, now, rtt, self.srtt / 2)
        d_q = self.rtt_standing - rtt_min
        increase = d_q <= 0 or self.cwnd / MSS <= self.rtt_standing / (DELTA * d_q)  # λ ≤ λ_t
        if self.round_start is None:
            self.round_start = now
        if self.slow_start and increase:
            self.cwnd += nbytes
        else:
            self.slow_start = False
            self.v = max(self.v / 2 ** math.ceil(math.log2(max(self.v / max(DELTA * self.cwnd / MSS, 1.0), 1.0))), 1.0)
            step = self.v * MSS * MSS / (DELTA * self.cwnd)
            self.cwnd = max(self.cwnd + (step if increase else -step), 2 * MSS)
        if now - rtt >= self.round_start:  # this packet was sent after the window began
            new_dir = 1 if (self.slow_start or self.cwnd > self.round_cwnd) else -1
            self.same = self.same + 1 if new_dir == self.direction and not self.slow_start else 0
            self.v = 2 * self.v if self.same >= 3 else (self.v if new_dir == self.direction else 1.0)
            self.direction, self.round_start, self.round_cwnd = new_dir, now, self.cwnd

    def on_loss(self, now, nbytes, inflight, sent_at):
        pass  # loss is not a signal in the default mode


def test_steady_state_matches_per_ack_copa_on_packets(link_runs):
    """The fluid Copa's equilibrium against the paper's per-ACK rules on the packet oracle, same
    link: both keep the link full with a queue that averages about 1/δ packets and empties every
    cycle.  (The start-up before STEADY_S is not compared: how long it lasts depends on where
    the windows fall relative to the turns, on either simulator; see ``copa.py``, start-up.)"""
    from reference import packet_sim

    cap = LINK_MBPS * MBPS
    res = packet_sim.simulate(cap, BUFFER, 0.0, [packet_sim.Flow(RTT_MS / 1e3, 0.0, DURATION, _PacketCopa())], DURATION)
    p = res.packets
    ok = (p["fate"] == packet_sim.DELIVERED) & (p["t_send"] > STEADY_S)
    wait = (p["owd"][ok] - RTT_MS / 2e3) / PKT_S - 1.0  # packets queued ahead (own serialisation out)
    acked = np.sum((p["t_ack"] >= STEADY_S) & (p["t_ack"] < DURATION)) * MSS
    assert acked / (cap * (DURATION - STEADY_S)) >= 0.97 and wait.min() <= 0.1
    tr, _, steady = link_runs["copa"]
    q = tr.queue[tr.time > STEADY_S] / MSS
    assert steady["utilization"] >= 0.97 and q.min() <= 0.1
    assert q.mean() == pytest.approx(wait.mean(), abs=0.5), (q.mean(), wait.mean())
    assert q.max() == pytest.approx(wait.max(), abs=1.0), (q.max(), wait.max())
