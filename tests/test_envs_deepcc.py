"""DeepCC environment: measurement (eq. 1), reward (eq. 3), goal, action, 60 s episodes, sanity."""

import types
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import deepcc, export_features_spec, make_env, mi
from jaxcc.envs.base import LinkMI
from jaxcc.envs.rollout import rollout
from jaxcc.envs.testing import oracle_policy

LANES = 64
EP_S = 3.0  # a short time limit for the batch test (the default is 60 s)
A = lambda *v: jnp.array(v, jnp.float32)  # noqa: E731


def test_measurement_and_reward_by_hand():
    m = deepcc.measurement(A(1e6), A(2e6), A(0.3), A(0.2), A(0.02))
    np.testing.assert_allclose(m[0], [0.5, 1.5, 0.02], rtol=1e-6)
    r = deepcc.reward(A(0.5, 0.3, 0.2)[None], m, 0.01)
    np.testing.assert_allclose(r, [0.5 * 0.5 - 0.3 * 1.5 - 0.2 * 0.02 / 0.01], rtol=1e-5)  # −0.6


def test_action_mapping():
    # log scale 0.1–100 Mbit/s: u = 0.5 → 0.1·1000^0.5 = 3.1623 Mbit/s; clipped at both ends
    r = deepcc.action_to_rate(A(0.5, 1.5, -0.2, 1.0 / 3.0), 100.0, 0.1)
    np.testing.assert_allclose(r, [0.1 * 1000 ** 0.5 * 125000, 100 * 125000, 0.1 * 125000, 125000], rtol=1e-5)
    np.testing.assert_allclose(deepcc.rate_to_action(r, 100.0, 0.1), [0.5, 1.0, 0.0, 1.0 / 3.0], atol=1e-6)
    p = deepcc.params_from_features(make_env("deepcc")[1], {"bound_mbps": 50.0, "low_mbps": 0.5})
    assert (float(p.bound_mbps), float(p.low_mbps)) == (50.0, 0.5)
    for bad in ({"low_mbps": 0.0}, {"low_mbps": 200.0}, {"scale": "linear"}):
        with pytest.raises(ValueError, match="low_mbps|scale"):
            deepcc.params_from_features(p, bad)


def test_ack_clocked_window_by_hand():
    """cwnd_rtts: cwnd = cwnd_rtts x rate x min RTT (the measured one, else the link's), at least
    two packets; none on the first decision (before any MI) and none with cwnd_rtts 0."""
    from jaxcc.sim.core import BIG

    env, p = make_env("deepcc")
    u = A(0.5)  # 0.1 x 1000^0.5 = 3.1623 Mbit/s = 395 284.7 B/s
    rate = 0.1 * 1000 ** 0.5 * 125000

    def cwnd(p, started, min_rtt=None, u=u):
        run = mi.running_zero(1) if min_rtt is None else mi.RunningStats(min_rtt=A(min_rtt), min_mean_rtt=A(min_rtt),
                                                                           max_delivery=A(0.0))
        paper = env.init_paper(None, p).replace(started=jnp.array([started]))
        st = types.SimpleNamespace(cwnd=A(BIG), run=run, link=types.SimpleNamespace(rtt=A(0.2)), paper=paper)
        return float(env.apply_action(st, u, p)[1][0])

    assert cwnd(p, True, 0.15) == float(A(BIG)[0])  # the default: paced at the rate alone (the window in force)
    w = p.replace(cwnd_rtts=jnp.float32(1.5))
    assert cwnd(w, False, 0.15) == float(A(BIG)[0])  # the first decision
    np.testing.assert_allclose(cwnd(w, True, 0.15), 1.5 * rate * 0.15, rtol=1e-5)  # 88 939 B
    np.testing.assert_allclose(cwnd(w, True), 1.5 * rate * 0.2, rtol=1e-5)  # no sample yet: the link's RTT
    np.testing.assert_allclose(cwnd(w, True, 0.001, A(0.0)), 3000.0, rtol=1e-6)  # 0.1 Mbit/s x 1 ms: two packets
    f = deepcc.params_from_features(p, {"cwnd_rtts": 2.0})
    assert float(f.cwnd_rtts) == 2.0 and float(deepcc.params_from_features(p, {}).cwnd_rtts) == 0.0
    for bad in (-1.0, 101.0):
        with pytest.raises(ValueError, match=r"'cwnd_rtts'=.* must be in \[0, 100\]"):
            deepcc.params_from_features(p, {"cwnd_rtts": bad})


def test_observe_by_hand():
    env, p = make_env("deepcc")
    st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=A(0.16)), goal=A(0.6, 0.3, 0.1)[None])
    prev = deepcc.DeepccFlow(started=jnp.array([True]), last_action=A(0.4), rtt=A(0.2), thr_max=A(6e5), thr_ref=A(0.0),
                             m2_max=A(0.0), m2=A(1.0))
    m = mi.mi_zero(1)
    m = mi.mi_add_sample(m, A(30000.0), A(0.20), A(0.02))
    m = mi.mi_add_sample(m, A(30000.0), A(0.24), A(0.06))
    m = m.replace(duration=A(0.1), sent=A(50000.0), lost=A(600.0))
    run = mi.RunningStats(min_rtt=A(0.16), min_mean_rtt=A(0.2), max_delivery=A(6e5))
    out = env.observe(st, prev, m, run, LinkMI(jnp.float32(0), jnp.float32(0)), p)
    # thr 6e5 = max → m¹ 1; p95 RTT = max sample 0.24 / 0.16; loss 600/60600
    meas = [1.0, 0.24 / 0.16, 600 / 60600]
    # EWMA RTT 0.8·0.22 + 0.2·0.2 = 0.216; send 5e5 B/s / thr_max 6e5; queueing (0.22 − 0.16)/0.16
    s = [0.4, 0.216 / 0.16, 5e5 / 6e5, 0.06 / 0.16]
    np.testing.assert_allclose(out.features[0], s + meas, rtol=1e-5)
    np.testing.assert_allclose(out.reward, [0.6 * 1.0 - 0.3 * 1.5 - 0.1 * (600 / 60600) / 0.01], rtol=1e-5)
    # With the link's mean capacity known (training), the reward's m¹ is thr / that (6e5 / 1.2e6);
    # the observation's m¹ stays thr / running max.
    out2 = env.observe(st, prev.replace(thr_ref=A(1.2e6)), m, run, LinkMI(jnp.float32(0), jnp.float32(0)), p)
    np.testing.assert_allclose(out2.features[0], s + meas, rtol=1e-5)
    np.testing.assert_allclose(out2.reward, [0.6 * 0.5 - 0.3 * 1.5 - 0.1 * (600 / 60600) / 0.01], rtol=1e-5)


def test_bounded_reward_by_hand():
    """reward_bounded: m² ≤ 1 + B/(C̄·RTT), m³ ≤ 10 %, in the reward only, and only where the link is known."""
    # B = 150 kB, C̄ = 1e6 B/s, RTT 0.1 s: a full buffer is 0.15 s of queue → m² ≤ 2.5
    np.testing.assert_allclose(deepcc.m2_bound(A(1e6), 150e3, A(0.1)), [2.5], rtol=1e-6)
    m = A(0.5, 40.0, 0.3)[None]
    np.testing.assert_allclose(deepcc.bounded_measurement(m, A(2.5)), [[0.5, 2.5, 0.1]], rtol=1e-6)
    np.testing.assert_allclose(deepcc.bounded_measurement(A(0.5, 1.2, 0.05)[None], A(2.5)),
                               [[0.5, 1.2, 0.05]], rtol=1e-6)  # below both bounds: unchanged
    np.testing.assert_allclose(deepcc.bounded_measurement(m, A(0.0)), m, rtol=1e-6)  # the link unknown
    env, p = make_env("deepcc")
    p = p.replace(reward_bounded=jnp.float32(1.0))
    st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=A(0.1)), goal=A(0.6, 0.3, 0.1)[None])
    m2_max = 1 + 150e3 / (1.2e6 * 0.1)  # 2.25
    prev = deepcc.DeepccFlow(started=jnp.array([True]), last_action=A(0.4), rtt=A(0.2), thr_max=A(6e5), thr_ref=A(1.2e6),
                             m2_max=A(m2_max), m2=A(1.0))
    m = mi.mi_zero(1)
    m = mi.mi_add_sample(m, A(30000.0), A(3.1), A(3.1))  # a packet that waited out a 3-s outage: m² = 31
    m = m.replace(duration=A(0.1), sent=A(50000.0), lost=A(20000.0))
    run = mi.RunningStats(min_rtt=A(0.1), min_mean_rtt=A(0.1), max_delivery=A(6e5))
    out = env.observe(st, prev, m, run, LinkMI(jnp.float32(0), jnp.float32(0)), p)
    loss = float(mi.loss_rate(m)[0])
    assert loss > 0.1
    # the observation is eq. 1's: 3e5 B/s delivered / the running max 6e5, RTT 3.1 / 0.1
    np.testing.assert_allclose(out.features[0, 4:], [0.5, 31.0, loss], rtol=1e-5)
    np.testing.assert_allclose(out.reward, [0.6 * 3e5 / 1.2e6 - 0.3 * m2_max - 0.1 * 0.1 / 0.01], rtol=1e-5)
    # the environment derives the cap from the episode's link: 1 + buffer / (mean capacity x RTT)
    env2, p2 = make_env("deepcc")
    _, state = jax.jit(env2.reset)(jax.random.key(3), p2)  # one program, not op by op
    mean = float(jnp.mean(state.link.cap_bps))
    want = 1 + float(state.link.buffer_bytes) / (mean * float(state.link.rtt[0]))
    np.testing.assert_allclose(state.paper.m2_max, [want], rtol=1e-4)
    assert float(env2.init_paper(None, p2).m2_max[0]) == 0.0  # a sender's: unknown, no bound


def test_spec_and_config():
    env, p = make_env("deepcc")
    c = env.config
    assert (c.history, c.obs_dim, c.goal_dim, c.mi_ticks) == (16, 7, 3, 4)
    assert float(p.max_time_s) == 60.0 and c.max_steps == 1200
    assert export_features_spec("deepcc")["name"] == "deepcc_v1"


@pytest.fixture(scope="module")
def batch_run():
    """One rollout program for the tests below: a module fixture, so that xdist runs them on one
    worker and the program is compiled once (conftest.py)."""
    env, p = make_env("deepcc")
    lane = jnp.arange(LANES)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (LANES,) + x.shape), p)
    rtt = 0.11 + 0.02 * (lane // 2 % 8)
    mean = 1.0 + 0.5 * (lane // 16)
    params = params.replace(rtt_lo_s=rtt, rtt_hi_s=rtt, mean_lo_mbps=mean, mean_hi_mbps=mean,
                            max_time_s=jnp.full((LANES,), EP_S))
    mult = jnp.where(lane % 2 == 0, 1.0, 3.0)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(9), i))(lane // 2)
    n = int(math.ceil(EP_S / (0.5 * 0.11))) + 3

    @jax.jit
    def run(params, keys, mult):
        return jax.vmap(lambda pp, k, m: rollout(env, pp, k, oracle_policy("deepcc", m), n))(params, keys, mult)

    return env, params, keys, mult, run, run(params, keys, mult), n


def test_batch_time_limit_goal_and_vmap(batch_run):
    env, params, keys, mult, run, (r, te, tr, info, (obs, st)), n = batch_run
    assert r.shape == (LANES, n, 1) and obs.shape == (LANES, 1, 16, 7)
    assert not bool(te.any())
    first = np.asarray(tr[:, :, 0]).argmax(axis=1)
    # truncated at the first step whose end time reaches 3 s: k·½RTT >= 3
    expect = np.ceil(EP_S / (0.5 * np.asarray(params.rtt_lo_s)) - 1e-4) - 1
    np.testing.assert_array_equal(first, expect)
    np.testing.assert_allclose(np.asarray(st.link.rtt[:, 0]), np.asarray(params.rtt_lo_s), rtol=1e-6)
    g = np.asarray(st.goal[:, 0])
    np.testing.assert_allclose(g.sum(-1), 1.0, rtol=1e-5)
    assert np.all(g >= 0) and np.std(g[:, 0]) > 0.05  # goals differ across lanes
    np.testing.assert_array_equal(np.asarray(run(params, keys, mult)[0]), np.asarray(r))


def test_hold_near_capacity_beats_three_times_capacity(batch_run):
    env, params, keys, mult, run, (r, te, tr, *_rest), n = batch_run
    first = np.asarray(tr[:, :, 0]).argmax(axis=1)
    ep = np.array([np.asarray(r[i, : first[i] + 1, 0]).sum() for i in range(LANES)])
    assert np.all(ep[0::2] > ep[1::2]), (ep[0::2], ep[1::2])


def test_poisson_schedule_matches_the_poisson_law():
    # counts per slot: mean λ and variance λ (Poisson), λ = mean·slot/MSS; 0 probability e^-λ
    for mbps in (0.9, 3.0, 40.0):
        t, r = deepcc.poisson_schedule(jax.random.PRNGKey(int(mbps * 10)), 20000, 0.01, mbps)
        counts = np.asarray(r) * 0.01 / 1500
        lam = mbps * 125000 * 0.01 / 1500
        np.testing.assert_allclose(counts, np.round(counts), atol=1e-3)
        np.testing.assert_allclose(counts.mean(), lam, rtol=4 * np.sqrt(lam / 20000) / lam)
        np.testing.assert_allclose(counts.var(), lam, rtol=0.06)
        np.testing.assert_allclose((counts == 0).mean(), np.exp(-lam), atol=4 * np.sqrt(np.exp(-lam) / 20000) + 1e-4)
        np.testing.assert_allclose(np.asarray(t[:3]), [0.0, 0.01, 0.02], atol=1e-7)
    with pytest.raises(ValueError, match="mean_hi_mbps"):
        deepcc.required_shape(deepcc.DeepccParams(mean_hi_mbps=500.0), 8)
