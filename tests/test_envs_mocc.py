"""MOCC environment: state, L(x) vector reward, cwnd actions, init-cwnd, Algorithm 1 termination."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import export_features_spec, make_env, mocc
from jaxcc.envs.rollout import rollout
from jaxcc.envs.testing import oracle_policy

LANES = 64
N = 210
A = lambda *v: jnp.array(v, jnp.float32)  # noqa: E731


def test_activation_and_reward_vector_by_hand():
    np.testing.assert_allclose(mocc.L(A(0.0, 0.5, 1.0)), [0.0, 1 - 10 ** -0.5, 0.9], rtol=1e-6)
    r = mocc.reward_vector(A(1.2e6), A(1.5e6), A(0.01), A(0.05), A(0.2))
    # (throughput, delay, loss): the order of a preference [w_thr, w_delay, w_loss]
    assert mocc.OBJECTIVES == ("throughput", "delay", "loss")
    np.testing.assert_allclose(r[0], [1 - 10 ** -0.8, -(1 - 10 ** -0.25), -(1 - 10 ** -0.01)], rtol=1e-5)


def test_delay_objectives_by_hand():
    p = mocc.MoccParams()
    # §IV-A (the default): a 30 ms RTT over a 200 ms timeout -> -L(0.15).
    np.testing.assert_allclose(mocc.delay_objective(A(0.03), A(0.02), A(0.2), p), [-(1 - 10 ** -0.15)], rtol=1e-6)
    # The queueing-delay objective: 10 ms of queue on a 20 ms path is half a round trip -> -log2(1.5)/4;
    # 300 and 900 ms of queue are 15 and 45 round trips -> -1.0 and -log2(46)/4.
    q = p.replace(delay_objective=jnp.float32(1.0))
    got = mocc.delay_objective(A(0.03, 0.02, 0.32, 0.92), A(0.02), A(0.2), q)
    np.testing.assert_allclose(got, [-np.log2(1.5) / 4, 0.0, -1.0, -np.log2(46.0) / 4], rtol=1e-5)
    r = mocc.reward_vector(A(1.2e6), A(1.5e6), A(0.0), A(0.03), A(0.2), got[:1])
    np.testing.assert_allclose(r[0, 1], -np.log2(1.5) / 4, rtol=1e-5)


def test_throughput_floor_by_hand():
    """ε·r_thr on the delay and loss objectives: under ω the scalarised weight on throughput is
    w_thr + ε (1 − w_thr); ε = 0 leaves the reward as it was."""
    r = A(0.9, -0.25, -0.1)[None]  # a full link, a round trip of queue (log2(2)/4), some loss
    np.testing.assert_allclose(mocc.with_throughput_floor(r, 0.0), r)
    got = mocc.with_throughput_floor(r, 0.1)
    np.testing.assert_allclose(got[0], [0.9, -0.25 + 0.09, -0.1 + 0.09], rtol=1e-6)
    for w in ([0.0, 1.0, 0.0], [0.3, 0.5, 0.2], [1.0, 0.0, 0.0]):
        want = (w[0] + 0.1 * (1 - w[0])) * 0.9 + w[1] * -0.25 + w[2] * -0.1
        np.testing.assert_allclose(float(jnp.dot(got[0], A(*w))), want, rtol=1e-6)


def test_actions_timeout_and_init_cwnd():
    cw = mocc.apply_delta(jnp.full((6,), 15000.0), jnp.array([1, 6, 0, 3, 5, 2]))
    # -50 pkts to the 2-pkt floor; +50 pkts; x0.5; hold; x2; -10 pkts to the floor
    np.testing.assert_allclose(cw, [3000.0, 90000.0, 7500.0, 15000.0, 30000.0, 3000.0])
    lit = mocc.apply_delta(jnp.full((2,), 15000.0), jnp.array([0, 5]), 2.0, mocc.LITERAL_DELTAS_PKTS, (1.0,) * 7)
    np.testing.assert_allclose(lit, [14250.0, 18000.0])  # the additive variant: -0.5 and +2 packets
    # doubling stops at the 10 000-packet cap (the receive window's stand-in)
    np.testing.assert_allclose(mocc.apply_delta(jnp.array([1.4e7]), jnp.array([5])), [1.5e7])
    p = make_env("mocc")[1]
    np.testing.assert_allclose(mocc.timeout(A(0.02, 0.15), p), [0.2, 0.3], rtol=1e-6)
    # 8 Mbps → 12 Mbps class → 30 packets; exactly 12 → 30; 150 → the top class (100) → 250
    ack = A(1.0e6, 1.5e6, 150 * 125000.0)
    np.testing.assert_allclose(mocc.init_cwnd(ack, p.bw_set_mbps, 2.5), [30.0, 30.0, 250.0])
    # Scaled by min RTT / init_ref_rtt_s: 48 Mbps → the 50 class → 125 packets by eq. 1 (15.6 BDPs
    # of a 2-ms, 50-Mbps path), 12.5 at 2 ms over a 20-ms reference, 125 at 20 ms, 375 at 60 ms.
    ack48 = jnp.full((3,), 48 * 125000.0)
    np.testing.assert_allclose(mocc.init_cwnd(ack48, p.bw_set_mbps, 2.5, A(0.002, 0.02, 0.06), 0.02),
                               [12.5, 125.0, 375.0], rtol=1e-6)
    np.testing.assert_allclose(mocc.init_cwnd(ack48, p.bw_set_mbps, 2.5, A(0.002, 0.02, 0.06), 0.0), [125.0] * 3)


def test_termination_algorithm1_by_hand():
    p = make_env("mocc")[1]
    bw, tmo = A(1e6), A(0.2)
    w, l, o = mocc.termination(jnp.array([49]), jnp.array([0]), jnp.array([60]), A(1e6), bw, A(0.05), tmo, p)
    assert (int(w[0]), int(l[0]), int(o[0])) == (50, 0, mocc.OUT_WIN)
    w, l, o = mocc.termination(jnp.array([10]), jnp.array([49]), jnp.array([60]), A(0.6e6), bw, A(0.15), tmo, p)
    assert (int(w[0]), int(l[0]), int(o[0])) == (0, 50, mocc.OUT_LOSE)
    w, l, o = mocc.termination(jnp.array([3]), jnp.array([3]), jnp.array([200]), A(0.8e6), bw, A(0.05), tmo, p)
    assert (int(w[0]), int(l[0]), int(o[0])) == (0, 0, mocc.OUT_TIE)
    w, l, o = mocc.termination(jnp.array([3]), jnp.array([3]), jnp.array([100]), A(1.05e6), bw, A(0.15), tmo, p)
    assert (int(w[0]), int(l[0]), int(o[0])) == (0, 0, mocc.OUT_NONE)  # fast but too slow (delay)


def test_spec_and_config():
    env, p = make_env("mocc")
    c = env.config
    assert (c.obs_dim, c.goal_dim, c.reward_dim, c.mi_ticks) == (4, 3, 3, 16)
    assert export_features_spec("mocc")["name"] == "mocc_v1"
    assert int(p.win_M) == 50 and int(p.lose_L) == 50 and int(p.max_T) == 200


@pytest.fixture(scope="module")
def batch_run():
    """One rollout program for the tests below: a module fixture, so that xdist runs them on one
    worker and the program is compiled once (conftest.py)."""
    env, p = make_env("mocc")
    lane = jnp.arange(LANES)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (LANES,) + x.shape), p)
    owd = 0.005 + 0.005 * (lane // 2 % 8)
    full = jnp.full((LANES,), 375e3)
    params = params.replace(owd_lo_s=owd, owd_hi_s=owd, buffer_lo_bytes=full, buffer_hi_bytes=full,
                            p_vary=jnp.zeros((LANES,)))  # a steady link: the wins below need it
    # "near capacity" for a window: 1.2 BDP keeps the link busy with a small standing queue
    mult = jnp.where(lane % 2 == 0, 1.2, 3.0)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(2), i))(lane // 2)

    @jax.jit
    def run(params, keys, mult):
        return jax.vmap(lambda pp, k, m: rollout(env, pp, k, oracle_policy("mocc", m), N))(params, keys, mult)

    return env, params, keys, mult, run, run(params, keys, mult)


def _first_episode(te, tr):
    done = np.asarray(te[:, :, 0] | tr[:, :, 0])
    return done.argmax(axis=1)  # index of the first episode's last step


def test_batch_termination_and_autoreset(batch_run):
    env, params, keys, mult, run, (r, te, tr, info, (obs, st)) = batch_run
    assert r.shape == (LANES, N, 1, 3) and obs.shape == (LANES, 1, 1, 4)
    end = _first_episode(te, tr)
    out = np.asarray(info["outcome"][:, :, 0])
    good = np.arange(LANES) % 2 == 0
    # near capacity with a small queue: 50 consecutive wins end the episode well before T
    won = out[good, end[good]] == mocc.OUT_WIN
    assert won.mean() >= 0.85, out[good, end[good]]
    assert np.all(end[good][won] < 199) and np.all(end[good][won] >= 49)
    assert np.all(np.asarray(te[np.arange(LANES), end, 0]))  # win, lose and tie are all terminals
    # every lane ends (win, lose or the T = 200 tie) by step 200
    assert np.all(end <= 199) and np.all(np.isin(out[np.arange(LANES), end], [1, 2, 3]))
    np.testing.assert_allclose(np.asarray(st.link.rtt[:, 0]), 2 * np.asarray(params.owd_lo_s), rtol=1e-6)
    g = np.asarray(st.goal)
    np.testing.assert_allclose(g.sum(-1), 1.0, rtol=1e-5)
    assert np.all(g >= 0), g
    np.testing.assert_array_equal(np.asarray(run(params, keys, mult)[0]), np.asarray(r))


def test_hold_near_capacity_beats_three_times_capacity(batch_run):
    env, params, keys, mult, run, (r, te, tr, *_rest) = batch_run
    end = _first_episode(te, tr)
    w = jnp.full((3,), 1.0 / 3.0)
    scal = np.asarray((r[:, :, 0, :] * w).sum(-1))
    mean = np.array([scal[i, : end[i] + 1].mean() for i in range(LANES)])
    assert np.all(mean[0::2] > mean[1::2]), (mean[0::2], mean[1::2])


def test_training_links_cover_the_papers_evaluation():
    """The per-episode draw (module docstring, "Training links"): ranges, the cellular-like
    share, and that 12/50 Mbps, 10 ms, 18-375 KB are inside it."""
    env, p = make_env("mocc")
    inits = jax.jit(jax.vmap(lambda k: env.sample_episode(k, p)))(jax.random.split(jax.random.PRNGKey(0), 2000))
    link = inits.link
    bw0 = np.asarray(link.cap_bps[:, 0]) / 125000.0
    owd = np.asarray(link.rtt[:, 0]) / 2
    buf = np.asarray(link.buffer_bytes)
    assert bw0.min() >= 6.0 - 1e-3 and bw0.max() <= 100.0 + 1e-3 and np.mean(bw0 < 12) > 0.2 and np.mean(bw0 > 50) > 0.15
    assert owd.min() >= 0.001 - 1e-7 and owd.max() <= 0.03 + 1e-7 and np.mean(owd < 0.01) > 0.5
    assert buf.min() >= 15e3 - 1 and buf.max() <= 375e3 + 1 and np.mean(buf < 90e3) > 0.4
    rel = np.asarray(link.cap_bps) / np.asarray(link.cap_bps[:, :1])
    varied = np.any(np.abs(rel - 1) > 1e-6, axis=1)
    assert 0.45 < varied.mean() < 0.55
    assert rel.min() >= 0.25 - 1e-6 and rel.max() <= 2.0 + 1e-6
    # segments of 12.5 min RTTs: 16 of them span the 200-step (200-RTT) episode
    np.testing.assert_allclose(np.asarray(link.cap_t[:, 1] - link.cap_t[:, 0]), 12.5 * 2 * owd, rtol=1e-4)
    g = np.asarray(inits.goal)
    assert g.shape == (2000, 1, 3) and np.allclose(g.sum(-1), 1.0, atol=1e-5)
