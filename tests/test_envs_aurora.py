"""Aurora environment: hand-computed features/reward, action, episodes, vmap, determinism, sanity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import aurora, make_env, export_features_spec
from jaxcc.envs import mi
from jaxcc.envs.rollout import rollout
from jaxcc.envs.testing import oracle_policy

STEPS = 40  # test episode length (the default is the gym's 400)
N = STEPS + 3
LANES = 64


def _mi():
    m = mi.mi_zero(1)
    for w, r, t in [(6000.0, 0.10, 0.0125), (6000.0, 0.11, 0.0375), (6000.0, 0.12, 0.0625), (6000.0, 0.13, 0.0875)]:
        m = mi.mi_add_sample(m, jnp.array([w]), jnp.array([r]), jnp.array([t]))
    return m.replace(duration=jnp.array([0.1]), sent=jnp.array([30000.0]), lost=jnp.array([1500.0]))


def test_features_by_hand():
    m = _mi()
    run = mi.RunningStats(min_rtt=jnp.array([0.09]), min_mean_rtt=jnp.array([0.1]), max_delivery=jnp.array([0.0]))
    run = mi.running_update(run, m)  # min mean stays 0.1 (this MI's mean is 0.115)
    f = np.asarray(aurora.features(m, run))[0]
    # latency gradient: RTT 0.10→0.13 over 0.075 s at a constant rate: 0.4 s/s
    # latency ratio: 0.115 / 0.1; sending ratio: 30000 / 24000.
    np.testing.assert_allclose(f, [0.4, 1.15, 1.25], rtol=1e-4)


def test_features_without_acks():
    m = mi.mi_zero(1).replace(duration=jnp.array([0.1]), sent=jnp.array([3000.0]))
    f = np.asarray(aurora.features(m, mi.running_update(mi.running_zero(1), m)))[0]
    np.testing.assert_allclose(f, aurora.EMPTY_FEATURES)


def test_reward_by_hand():
    r, lat = aurora.reward(_mi(), jnp.array([0.0]))
    # throughput 24000 B / 1500 / 0.1 s = 160 pkt/s; latency 0.115 s; loss 1500/25500.
    expected = 10 * 160 - 1000 * 0.115 - 2000 * (1500 / 25500)
    np.testing.assert_allclose(r, [expected], rtol=1e-5)
    np.testing.assert_allclose(lat, [0.115], rtol=1e-6)
    # no ACK: the last latency is carried, no throughput, no loss
    r0, lat0 = aurora.reward(mi.mi_zero(1).replace(duration=jnp.array([0.1])), jnp.array([0.2]))
    np.testing.assert_allclose(r0, [-200.0], rtol=1e-6)


def test_scale_free_reward_by_hand():
    """In the link's own units: 300 pkt/s × the acked share of the capacity, 0.55 s × RTT / base
    RTT; equal to §3.1's on a 300-packet/s, 550-ms link."""
    m = _mi()  # 24000 B acked in 0.1 s, mean RTT 0.115 s, loss 1500/25500
    loss = 1500 / 25500
    r, _ = aurora.reward(m, jnp.array([0.0]), cap_bytes=jnp.array(48000.0), base_rtt=jnp.array([0.1]))
    np.testing.assert_allclose(r, [10 * 300 * 0.5 - 1000 * 0.55 * 1.15 - 2000 * loss], rtol=1e-5)
    # a link whose capacity is 160 pkt/s and base RTT 0.55 s: §3.1's terms at 300 pkt/s
    r, _ = aurora.reward(m, jnp.array([0.0]), cap_bytes=jnp.array(24000.0), base_rtt=jnp.array([0.55]))
    np.testing.assert_allclose(r, [10 * 300 - 1000 * 0.115 - 2000 * loss], rtol=1e-5)
    # ACKs of data served before a capacity step down: the share is capped at 1
    r, _ = aurora.reward(m, jnp.array([0.0]), cap_bytes=jnp.array(2400.0), base_rtt=jnp.array([0.55]))
    np.testing.assert_allclose(r, [10 * 300 - 1000 * 0.115 - 2000 * loss], rtol=1e-5)
    # in the environment: off by default (§3.1), on with ``scale_free``
    env, p = make_env("aurora")
    assert float(p.scale_free) == 0.0


def test_action_mapping():
    x = jnp.array([1e6, 1e6, 1e6])
    out = aurora.apply_action(x, jnp.array([2.0, -2.0, 0.0]))
    np.testing.assert_allclose(out, [1.05e6, 1e6 / 1.05, 1e6], rtol=1e-6)


def test_spec_and_defaults():
    env, p = make_env("aurora")
    c = env.config
    assert (c.history, c.obs_dim, c.max_steps, c.mi_ticks) == (10, 3, 400, 4)
    spec = export_features_spec("aurora")
    assert spec["name"] == "aurora_v1" and spec["history"] == 10 and spec["mi_rtts"] == 0.5
    assert float(p.bw_pps_lo) == 100 and float(p.queue_pkts_hi) == 2981 and np.isclose(float(p.alpha), 0.025)


def test_initial_rate_paper_range_and_far_starts():
    """0.3–1.5 × bandwidth by default (§5.3); ``init_far_frac`` moves that share of the starts to
    log-uniform ``init_far_lo``–0.3 × bandwidth without changing the links drawn."""
    env, p = make_env("aurora")
    keys = jax.random.split(jax.random.PRNGKey(0), 512)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))

    def starts(params):
        _, st = reset(keys, params)
        bw = np.asarray(st.link.cap_bps[:, 0])
        return np.asarray(st.rate[:, 0]) / bw, bw

    x0, bw0 = starts(p)
    assert x0.min() >= 0.3 - 1e-5 and x0.max() <= 1.5 + 1e-5
    x1, bw1 = starts(p.replace(init_far_frac=jnp.float32(1.0), init_far_lo=jnp.float32(0.01)))
    np.testing.assert_array_equal(bw0, bw1)
    assert x1.min() >= 0.01 * (1 - 1e-5) and x1.max() <= 0.3 * (1 + 1e-5)
    assert 0.03 < np.median(x1) < 0.09  # log-uniform: median ≈ √(0.01·0.3) ≈ 0.055
    xh, _ = starts(p.replace(init_far_frac=jnp.float32(0.5)))
    far = xh < 0.3
    assert 0.4 < far.mean() < 0.6
    np.testing.assert_array_equal(xh[~far], x0[~far])  # the paper's draw where the start is not far


@pytest.fixture(scope="module")
def batch_run():
    """One rollout program for the tests below: a module fixture, so that xdist runs them on one
    worker and the program is compiled once (conftest.py)."""
    env, p = make_env("aurora", max_steps=STEPS)
    cfg = jnp.arange(LANES) // 2  # 32 link configurations, each run by a good and a bad policy
    bw = 100.0 + 400.0 * (cfg % 8) / 7.0
    lat = jnp.where(cfg < 16, 0.05, 0.2)
    q = jnp.where(cfg % 2 == 0, 50.0, 500.0)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (LANES,) + x.shape), p)
    params = params.replace(bw_pps_lo=bw, bw_pps_hi=bw, latency_lo_s=lat, latency_hi_s=lat, queue_pkts_lo=q,
                            queue_pkts_hi=q, loss_lo=jnp.zeros(LANES), loss_hi=jnp.zeros(LANES))
    mult = jnp.where(jnp.arange(LANES) % 2 == 0, 1.0, 3.0)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(7), i))(cfg)

    @jax.jit
    def run(params, keys, mult):
        return jax.vmap(lambda pp, k, m: rollout(env, pp, k, oracle_policy("aurora", m), N))(params, keys, mult)

    return env, params, keys, mult, run, run(params, keys, mult)


def test_batch_shapes_episode_and_autoreset(batch_run):
    env, params, keys, mult, run, (r, te, tr, info, (obs, st)) = batch_run
    assert r.shape == (LANES, N, 1) and te.shape == (LANES, N, 1) and obs.shape == (LANES, 1, 10, 3)
    assert not bool(te.any())
    np.testing.assert_array_equal(np.asarray(tr[:, :, 0]).any(axis=0), np.arange(N) == STEPS - 1)
    np.testing.assert_array_equal(np.asarray(st.step), N - STEPS)  # auto-reset restarted the count
    # the new episode's first observations are the empty-MI padding; the final obs is kept in info
    np.testing.assert_allclose(np.asarray(obs[:, 0, : 10 - (N - STEPS)]),
                               np.broadcast_to(aurora.EMPTY_FEATURES, (LANES, 10 - (N - STEPS), 3)))
    fin = np.asarray(info["final_obs"][:, STEPS - 1, 0, -1])
    assert np.all(np.isfinite(fin)) and np.any(fin != np.asarray(aurora.EMPTY_FEATURES))


def test_vmap_links_follow_params(batch_run):
    env, params, keys, mult, run, (r, te, tr, info, (obs, st)) = batch_run
    np.testing.assert_allclose(st.link.cap_bps[:, 0], params.bw_pps_lo * 1500.0, rtol=1e-5)
    np.testing.assert_allclose(st.link.rtt[:, 0], 2 * params.latency_lo_s, rtol=1e-6)
    np.testing.assert_allclose(st.link.buffer_bytes, params.queue_pkts_lo * 1500.0, rtol=1e-5)


def test_determinism_under_seed(batch_run):
    env, params, keys, mult, run, (r, *_rest) = batch_run
    r2 = run(params, keys, mult)[0]
    np.testing.assert_array_equal(np.asarray(r), np.asarray(r2))
    # the same seed in a different lane (and batch position) gives the same episode
    k = jax.random.PRNGKey(3)
    reset = jax.jit(env.reset)  # one program for the four resets, not op by op
    o1, s1 = reset(k, params_at(params, 0))
    o2, s2 = reset(k, params_at(params, 0))
    np.testing.assert_array_equal(np.asarray(s1.rate), np.asarray(s2.rate))
    o3, s3 = reset(jax.random.PRNGKey(4), env.default_params)
    o4, s4 = reset(jax.random.PRNGKey(5), env.default_params)
    assert float(s3.link.cap_bps[0]) != float(s4.link.cap_bps[0])


def params_at(params, i):
    return jax.tree.map(lambda x: x[i], params)


def test_hold_near_capacity_beats_three_times_capacity(batch_run):
    env, params, keys, mult, run, (r, *_rest) = batch_run
    ep = np.asarray(r[:, :STEPS, 0]).sum(axis=1)
    good, bad = ep[0::2], ep[1::2]
    assert np.all(good > bad), (good, bad)


def test_far_above_starts_and_capacity_steps():
    """Robust training (``configs/aurora.py``): ``init_above_frac`` starts that share at
    log-uniform 1.5–``init_above_hi`` × bandwidth; with ``num_segments=3`` and ``step_frac`` the
    capacity is ×/÷ 2–``step_max`` from t1 to t2 (fractions of the 400-MI episode) and back.
    Neither changes the link's bandwidth, latency or queue draw."""
    env1, p = make_env("aurora")
    env3, _ = make_env("aurora", num_segments=3)
    keys = jax.random.split(jax.random.PRNGKey(3), 1024)
    sample = lambda env, params: jax.jit(jax.vmap(env.sample_episode, in_axes=(0, None)))(keys, params)  # noqa: E731
    base_ep = sample(env1, p)
    bw = np.asarray(base_ep.link.cap_bps[:, 0])

    up = sample(env1, p.replace(init_above_frac=jnp.float32(1.0)))
    x = np.asarray(up.rate[:, 0]) / bw
    assert x.min() >= 1.5 * (1 - 1e-5) and x.max() <= 10.0 * (1 + 1e-5)
    assert 3.2 < np.median(x) < 4.6  # log-uniform: median √(1.5·10) ≈ 3.87
    np.testing.assert_array_equal(np.asarray(up.link.buffer_bytes), np.asarray(base_ep.link.buffer_bytes))
    mix = sample(env1, p.replace(init_far_frac=jnp.float32(0.5), init_above_frac=jnp.float32(0.2)))
    x = np.asarray(mix.rate[:, 0]) / bw
    assert 0.45 < (x < 0.3).mean() < 0.55 and 0.15 < (x > 1.5).mean() < 0.25

    flat = sample(env3, p)  # step_frac 0: three segments of one rate, the same link otherwise
    np.testing.assert_array_equal(np.asarray(flat.link.cap_bps), np.repeat(bw[:, None], 3, axis=1))
    np.testing.assert_array_equal(np.asarray(flat.rate), np.asarray(base_ep.rate))
    np.testing.assert_array_equal(np.asarray(flat.link.rtt), np.asarray(base_ep.link.rtt))

    st = sample(env3, p.replace(step_frac=jnp.float32(1.0)))
    t, c = np.asarray(st.link.cap_t), np.asarray(st.link.cap_bps)
    ep = 400 * 0.5 * np.asarray(st.link.rtt[:, 0])  # the episode's seconds: 400 MIs of ½ RTT
    f = c[:, 1] / bw
    np.testing.assert_allclose(c[:, 0], bw, rtol=1e-6)
    np.testing.assert_allclose(c[:, 2], bw, rtol=1e-6)
    mag = np.maximum(f, 1 / f)
    assert mag.min() >= 2.0 * (1 - 1e-5) and mag.max() <= 10.0 * (1 + 1e-5)
    assert 0.4 < (f > 1).mean() < 0.6  # up and down alike
    assert np.all(t[:, 1] >= 0.1 * ep * (1 - 1e-5)) and np.all(t[:, 1] <= 0.5 * ep * (1 + 1e-5))
    d = (t[:, 2] - t[:, 1]) / ep
    assert d.min() >= 0.15 - 1e-4 and d.max() <= 0.4 + 1e-4


def test_robust_config_resets_and_steps():
    """The default ``aurora`` config's env (realism, far starts, capacity steps) resets and steps
    under jit with finite observations and rewards."""
    from jaxcc.agents import aurora_ppo as ap
    from jaxcc.training.configs import load_config

    c = load_config("aurora")
    c.env.overrides.max_steps = 20
    env, p = ap.make_env(c)
    assert env.config.realism is not None and env.config.num_segments == 3
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    r, *_rest = jax.jit(jax.vmap(lambda k: rollout(env, p, k, oracle_policy("aurora", 1.0), 20)))(keys)
    assert np.isfinite(np.asarray(r)).all()


@pytest.mark.full  # compiles an environment rollout; the reward's arithmetic is in the fast tier (by hand)
def test_scale_free_reward_in_the_environment():
    """A sender at 0.9 × the capacity on Table 1's links (100–500 packets/s, 100–1000 ms RTT, no
    random loss): §3.1's reward per MI grows with the bandwidth (10 × 0.9 × 100–500 packets/s
    less the latency), the scale-free one is 10 × 300 × 0.9 − 1000 × 0.55 × RTT / base RTT on
    every link, the RTT being the base one with no queue."""
    env, p = make_env("aurora", max_steps=STEPS)
    p = p.replace(loss_hi=jnp.float32(0.0), init_rate_lo=jnp.float32(0.9), init_rate_hi=jnp.float32(0.9))
    keys = jax.random.split(jax.random.PRNGKey(3), 32)

    run_jit = jax.jit(jax.vmap(lambda pp, k: rollout(env, pp, k, oracle_policy("aurora", 0.9), STEPS), in_axes=(None, 0)))

    def run(params):  # one compilation for both reward forms: ``scale_free`` is an array
        return run_jit(params, keys)

    paper = np.asarray(run(p)[0])[:, 10:, 0].mean(axis=1)
    sf = np.asarray(run(p.replace(scale_free=jnp.float32(1.0)))[0])[:, 10:, 0].mean(axis=1)
    np.testing.assert_allclose(sf, 10 * 300 * 0.9 - 1000 * 0.55, rtol=0.01)
    assert paper.max() - paper.min() > 1500  # 10 × 0.9 × the bandwidth's spread, less latencies
