"""The window-based baselines' retransmission timeout (``jaxcc.baselines.recovery.timeout``,
``TimeoutParams.rto_min``): RFC 6298's estimates and the timer by hand, a lost retransmission
stopping a NewReno and a CUBIC flow until the timer fires, and nothing of it when it is off."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.baselines import cubic, recovery, reno
from jaxcc.sim import controller as sim_controller
from jaxcc.units import MSS

OFF = sim_controller.ControllerParams.zeros()
ON = OFF._replace(timeout=sim_controller.TimeoutParams(rto_min=np.float32(1.0)))
f32 = jnp.float32


def test_rfc6298_estimates_and_the_timer_by_hand():
    srtt, rttvar = recovery.rtt_estimates(f32(0.0), f32(0.0), f32(0.1), jnp.bool_(True))
    np.testing.assert_allclose([srtt, rttvar], [0.1, 0.05], rtol=1e-6)  # first sample: R, R/2
    srtt, rttvar = recovery.rtt_estimates(srtt, rttvar, f32(0.2), jnp.bool_(True))
    # rttvar = 3/4·0.05 + 1/4·|0.1 − 0.2|, srtt = 7/8·0.1 + 1/8·0.2
    np.testing.assert_allclose([srtt, rttvar], [0.1125, 0.0625], rtol=1e-6)
    same = recovery.rtt_estimates(srtt, rttvar, f32(5.0), jnp.bool_(False))
    np.testing.assert_allclose(same, [0.1125, 0.0625], rtol=1e-6)  # no sample, no change
    np.testing.assert_allclose(recovery.rto(f32(1.0), srtt, rttvar), 1.0)  # ns-3's floor
    np.testing.assert_allclose(recovery.rto(f32(0.2), srtt, rttvar), 0.3625, rtol=1e-6)  # srtt + 4·rttvar


@pytest.mark.parametrize("episode_lost, fires", [(8000.0, True), (4000.0, False)])
def test_a_lost_retransmission_by_hand(episode_lost, fires):
    """The tick that ends recovery: 10 kB were still owed before the recovery point and 12 kB of
    feedback arrive, 3 kB of it lost, so 2 kB are past the point, a quarter of them lost (500 B).
    The episode lost ``episode_lost`` bytes, each retransmitted then: 8 kB × 1/4 = 2 kB ≥ one
    packet times out, 4 kB × 1/4 = 1 kB does not."""
    args = dict(rto_min=f32(1.0), now=f32(5.0), srtt=f32(0.1125), rttvar=f32(0.0625), until=f32(-1.0),
                episode_lost=f32(episode_lost), in_recovery=jnp.bool_(True), still_recovering=jnp.bool_(False),
                recovery_left=f32(10000.0), loss_event=jnp.bool_(False), waiting=jnp.bool_(False), restarts=jnp.bool_(False),
                acked=f32(9000.0), lost=f32(3000.0))
    got, until, owed = recovery.timeout(**args)
    assert bool(got) is fires
    # armed when the retransmissions went out, one srtt ago: 5 − 0.1125 + 1
    np.testing.assert_allclose(until, 5.8875 if fires else -1.0, rtol=1e-6)
    assert float(owed) == 0.0  # the episode is over
    off, until_off, _ = recovery.timeout(**{**args, "rto_min": f32(0.0)})
    assert not bool(off) and float(until_off) == -1.0
    waiting, restarts = recovery.timer(f32(1.0), f32(5.5), f32(5.8875))
    assert bool(waiting) and not bool(restarts)
    waiting, restarts = recovery.timer(f32(1.0), f32(5.9), f32(5.8875))
    assert not bool(waiting) and bool(restarts)


def _obs(now, acked=0.0, lost=0.0, inflight=0.0):
    return sim_controller.TickObs(now=f32(now), dt=f32(0.01), active=jnp.bool_(True), acked=f32(acked), lost=f32(lost),
                                  rtt_wsum=f32(acked * 0.1), sent=f32(0.0), inflight=f32(inflight), capacity=f32(1e6),
                                  n_active=jnp.int32(1))


@pytest.mark.parametrize("ctl", [reno.RENO, cubic.CUBIC], ids=["reno", "cubic"])
def test_a_flow_waits_for_the_timer_then_starts_from_one_packet(ctl):
    """A flow at 100 packets loses 20 packets in one episode (a decrease and recovery), and a
    quarter of what it sent right after is lost too: its retransmissions.  With ``rto_min`` 1 s it
    sends nothing (window 0) until the timer fires one second after they went out, then restarts at
    one packet in slow start; with the timer off the losses past the recovery point are a second
    decrease and the flow never stops sending."""
    upd = jax.jit(ctl.update)

    def run(cp):
        s = ctl.init(cp)._replace(cwnd=f32(100 * MSS), ssthresh=f32(1e30))
        trace = []
        s = upd(s, _obs(1.0, acked=0.1 * MSS, inflight=100 * MSS), cp)  # an RTT sample of 0.1 s
        s = upd(s, _obs(1.1, acked=10 * MSS, lost=20 * MSS, inflight=90 * MSS), cp)  # the loss event
        assert int(s.loss_events) == 1 and bool(s.in_recovery)
        decreased = float(s.cwnd)
        # the rest of the episode's feedback, then the tick past the recovery point: 40 packets
        # of which 10 (a quarter) are lost, 30 of them past the point (7.5 lost)
        s = upd(s, _obs(1.2, acked=float(s.recovery_left) - 10 * MSS, inflight=40 * MSS), cp)
        s = upd(s, _obs(1.3, acked=30 * MSS, lost=10 * MSS, inflight=40 * MSS), cp)
        trace.append(float(s.cwnd))
        for t in (1.5, 2.15, 2.25):  # the timer fires at 1.3 − srtt (0.1 s) + 1 s
            s = upd(s, _obs(t, acked=MSS, inflight=10 * MSS), cp)
            trace.append(float(s.cwnd))
        return s, decreased, trace

    s, decreased, trace = run(ON)
    assert int(s.timeouts) == 1 and not bool(s.in_recovery)
    assert trace[:3] == [0.0, 0.0, 0.0]  # nothing sent while waiting (from 1.3 through 2.15)
    assert trace[3] == MSS and float(s.ssthresh) >= 2 * MSS and float(s.ssthresh) < decreased  # restarted
    s_off, _, trace_off = run(OFF)
    assert int(s_off.timeouts) == 0 and int(s_off.loss_events) == 2 and min(trace_off) > 0  # a second decrease
