"""Eagle environment: features, phase rewards (eq. 7, Algorithm 1, eq. 8), actions, episodes, sanity."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import eagle, export_features_spec, make_env, mi
from jaxcc.envs.base import LinkMI
from jaxcc.envs.rollout import rollout
from jaxcc.envs.testing import oracle_policy

LANES = 64
STEPS = 50
N = STEPS + 2
A = lambda *v: jnp.array(v, jnp.float32)  # noqa: E731


def test_reward_phases_by_hand():
    p = make_env("eagle")[1]
    T, F = jnp.array([True]), jnp.array([False])

    def R(ratio, q, prev_q, inc, dec, pinc, pdec, delayed, exp):
        return float(eagle.reward(A(ratio), A(q), A(prev_q), A(inc), A(dec), A(pinc), A(pdec), delayed, exp, p)[0])

    np.testing.assert_allclose(R(0.5, 0.0, 0.0, 1, 1, 1, 1, F, F), 2.5, rtol=1e-6)  # eq. 7: 5·ratioΔd
    np.testing.assert_allclose(R(0.2, 10.0, 0.0, 2.89, 1, 1, 1, T, F), 1.0 - 5.0, rtol=1e-6)  # first delay
    # draining, increases > decreases: gap 8.3521−1 → 8.3521−2.89: 5·(7.3521−5.4621)/7.3521
    np.testing.assert_allclose(R(0.0, 20.0, 25.0, 8.3521, 2.89, 8.3521, 1, T, T), 5 * 1.89 / 7.3521, rtol=1e-5)
    # draining, increases <= decreases: % decrease in delay (20 → 15 ms)
    np.testing.assert_allclose(R(0.0, 15.0, 20.0, 2.89, 2.89, 2.89, 1, T, T), 0.25, rtol=1e-6)
    np.testing.assert_allclose(R(0.1, 2.0, 3.0, 1, 1, 1, 1, F, T), 0.5 - 1.0, rtol=1e-6)  # eq. 8


def test_counters_and_actions():
    inc, dec = eagle.update_counters(A(1.0), A(1.0), jnp.array([0]), jnp.array([True]))
    inc, dec = eagle.update_counters(inc, dec, jnp.array([0]), jnp.array([True]))
    np.testing.assert_allclose([inc[0], dec[0]], [2.89 ** 2, 1.0], rtol=1e-6)  # the paper's 8.35
    inc, dec = eagle.update_counters(inc, dec, jnp.array([4]), jnp.array([True]))
    np.testing.assert_allclose([inc[0], dec[0]], [2.89 ** 2, 2.89], rtol=1e-6)
    inc, dec = eagle.update_counters(inc, dec, jnp.array([1]), jnp.array([False]))
    np.testing.assert_allclose([inc[0], dec[0]], [1.0, 1.0])  # queue drained: reset
    np.testing.assert_allclose(1e6 * eagle.rate_multiplier(jnp.arange(5)),
                               [2.89e6, 1.25e6, 1e6, 0.8e6, 1e6 / 2.89], rtol=1e-6)
    p = make_env("eagle")[1]
    bdp = 1.25e6 * 0.1  # 10 Mbps × 100 ms
    cw = eagle.cwnd_for(jnp.array([2, 0, 4, 1]), jnp.full((4,), 1.25e6), jnp.full((4,), 0.1), p)
    np.testing.assert_allclose(cw, [2 * bdp, 4 * bdp, bdp, 2.5 * bdp], rtol=1e-5)
    cw0 = eagle.cwnd_for(jnp.array([0]), A(0.0), A(1e30), p)
    np.testing.assert_allclose(cw0, [15000.0])  # 10 packets before a BDP estimate


def test_observe_by_hand():
    env, p = make_env("eagle")
    st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=A(0.1)), cwnd=A(15000.0))  # what observe reads
    prev = eagle.EagleFlow(started=jnp.array([True]), exp_delay=jnp.array([True]), inc=A(2.89), dec=A(1.0),
                           q=A(0.010), l=A(0.0), deliv=A(1e6), last_action=jnp.array([4]),
                           deliv_win=jnp.zeros((1, eagle.MAX_BW_WINDOW)).at[0, :3].set(jnp.array([1e6, 3e6, 2e6])))
    m = mi.mi_add_sample(mi.mi_zero(1), A(360000.0), A(0.13), A(0.1)).replace(duration=A(0.3), sent=A(360000.0))
    run = mi.RunningStats(min_rtt=A(0.1), min_mean_rtt=A(0.1), max_delivery=A(1.2e6))
    out = env.observe(st, prev, m, run, LinkMI(jnp.float32(0), jnp.float32(0)), p)
    # q = 0.8·(0.13−0.1) + 0.2·0.010 = 0.026 s (delayed); ÷2.89 makes dec = inc = 2.89, so the
    # reward is the % decrease of the delay: (10 − 26)/10; ratio Δd = (1.2e6 − 1e6)/1e6.
    np.testing.assert_allclose(out.features[0], [1.0, 0.0, 0.026, 0.0, 0.2], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.reward, [-1.6], rtol=1e-5)
    # The step's delivery rate (360000 B / 0.3 s) is pushed in front of the ring.
    np.testing.assert_allclose(out.paper.deliv_win[0, :4], [1.2e6, 1e6, 3e6, 2e6], rtol=1e-6)


def test_bdp_bandwidth_is_a_windowed_max():
    """§III-B's "highest delivery rate", BBR-style: the max of the last bw_window_steps steps."""
    env, p = make_env("eagle")
    assert int(p.bw_window_steps) == 4
    win = jnp.zeros((1, eagle.MAX_BW_WINDOW)).at[0, :6].set(jnp.array([1e6, 2e6, 1.5e6, 1e6, 9e6, 8e6]))
    np.testing.assert_allclose(eagle.windowed_max_delivery(win, A(9e6), p), [2e6])  # 9e6 is the 5th newest
    np.testing.assert_allclose(eagle.windowed_max_delivery(win, A(9e6), p.replace(bw_window_steps=5)), [9e6])
    # 0: the whole connection's max (what the first shipped policy used)
    np.testing.assert_allclose(eagle.windowed_max_delivery(win, A(9.5e6), p.replace(bw_window_steps=0)), [9.5e6])
    # The window sets the cwnd: hold = 2 × 2e6 B/s × 100 ms.
    st = types.SimpleNamespace(rate=A(1e6), run=mi.RunningStats(min_rtt=A(0.1), min_mean_rtt=A(0.1),
                                                                max_delivery=A(9e6)),
                               paper=env.init_paper(None, p).replace(deliv_win=win))
    _, cwnd, _ = env.apply_action(st, jnp.array([2]), p)
    np.testing.assert_allclose(cwnd, [2 * 2e6 * 0.1], rtol=1e-6)


def test_spec_and_config():
    env, p = make_env("eagle")
    assert (env.config.mi_ticks, env.config.max_steps, env.config.history) == (24, 50, 4)
    assert export_features_spec("eagle")["name"] == "eagle_v1"


@pytest.fixture(scope="module")
def batch_run():
    """One rollout program for the tests below: a module fixture, so that xdist runs them on one
    worker and the program is compiled once (conftest.py)."""
    env, p = make_env("eagle")
    lane = jnp.arange(LANES)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (LANES,) + x.shape), p)
    rtt = 0.02 + 0.01 * (lane // 2 % 16)
    params = params.replace(rtt_lo_s=rtt, rtt_hi_s=rtt)
    mult = jnp.where(lane % 2 == 0, 1.0, 3.0)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(5), i))(lane // 2)

    def policy(mult):
        # good: hold near capacity (oracle); bad: ×2.89 at every step (GOLD's failure mode, §III-A).
        # Note: holding at 3× capacity is *not* penalised by Algorithm 1 once the counters stop
        # changing (the gap and the delay stay constant, so both draining rewards are 0).
        hold = oracle_policy("eagle", 1.0)
        return lambda k, o, s, p: jnp.where(mult > 2.0, 0, hold(k, o, s, p)).astype(jnp.int32)

    @jax.jit
    def run(params, keys, mult):
        return jax.vmap(lambda pp, k, m: rollout(env, pp, k, policy(m), N))(params, keys, mult)

    return env, params, keys, mult, run, run(params, keys, mult)


def test_batch_episode_vmap_determinism(batch_run):
    env, params, keys, mult, run, (r, te, tr, info, (obs, st)) = batch_run
    assert r.shape == (LANES, N, 1) and obs.shape == (LANES, 1, 4, 5)
    np.testing.assert_array_equal(np.asarray(tr[:, :, 0]).any(axis=0), np.arange(N) == STEPS - 1)
    assert not bool(te.any())
    np.testing.assert_allclose(np.asarray(st.link.rtt[:, 0]), np.asarray(params.rtt_lo_s), rtol=1e-6)
    caps = np.asarray(st.link.cap_bps) / 125000.0
    assert caps.min() >= 20.0 - 1e-3 and caps.max() <= 120.0 + 1e-3
    np.testing.assert_array_equal(np.asarray(run(params, keys, mult)[0]), np.asarray(r))


def test_hold_near_capacity_beats_always_increasing(batch_run):
    env, params, keys, mult, run, (r, *_rest) = batch_run
    ep = np.asarray(r[:, :STEPS, 0]).sum(axis=1)
    assert np.all(ep[0::2] > ep[1::2]), (ep[0::2], ep[1::2])


def _rate_at(times, rates, t):
    """The piecewise-constant capacity at time ``t`` (by hand: the last segment started)."""
    return rates[np.searchsorted(times, t, side="right") - 1]


def test_start_rates_and_capacity_steps():
    """Robust training (``configs/eagle.py``): ``init_rel_frac`` starts that share at
    log-uniform ``init_rel_lo``–``init_rel_hi`` × the starting capacity instead of 300 Kbps;
    ``capacity_steps`` with ``step_frac`` multiplies the paper's schedule by f (|f| in 2–10) from
    t1 to t2 and leaves it unchanged elsewhere (checked on a time grid against the paper's draw)."""
    env0, p = make_env("eagle")
    env1, _ = make_env("eagle", capacity_steps=True)
    assert env1.config.num_segments == env0.config.num_segments + 2
    assert env1.config.ring_len > env0.config.ring_len  # sized for a 10x step down
    keys = jax.random.split(jax.random.PRNGKey(4), 256)
    sample = lambda env, params: jax.jit(jax.vmap(env.sample_episode, in_axes=(0, None)))(keys, params)  # noqa: E731
    paper = sample(env0, p)
    assert np.allclose(np.asarray(paper.rate) / 125000.0, 0.3)

    rel = sample(env0, p.replace(init_rel_frac=jnp.float32(1.0)))
    x = np.asarray(rel.rate[:, 0]) / np.asarray(paper.link.cap_bps[:, 0])
    assert x.min() >= 0.3 * (1 - 1e-5) and x.max() <= 4.0 * (1 + 1e-5)
    np.testing.assert_array_equal(np.asarray(rel.link.cap_bps), np.asarray(paper.link.cap_bps))

    for frac in (0.0, 1.0):
        st = sample(env1, p.replace(step_frac=jnp.float32(frac)))
        np.testing.assert_array_equal(np.asarray(st.link.buffer_bytes), np.asarray(paper.link.buffer_bytes))
        n_up = 0
        for i in range(0, 256, 8):
            t0, c0 = np.asarray(paper.link.cap_t[i]), np.asarray(paper.link.cap_bps[i])
            t1, c1 = np.asarray(st.link.cap_t[i]), np.asarray(st.link.cap_bps[i])
            grid = np.linspace(0.0, 60.0, 2401)
            ratio = np.array([_rate_at(t1, c1, g) / _rate_at(t0, c0, g) for g in grid])
            if frac == 0.0:
                np.testing.assert_allclose(ratio, 1.0, rtol=1e-6)
                continue
            changed = np.abs(ratio - 1.0) > 1e-5
            f = ratio[changed]
            assert changed.any() and np.allclose(f, f[0], rtol=1e-5)  # one factor, one interval
            assert 2.0 * (1 - 1e-5) <= max(f[0], 1 / f[0]) <= 10.0 * (1 + 1e-5)
            idx = np.flatnonzero(changed)
            assert np.all(np.diff(idx) == 1)
            ep = 50 * 3.0 * float(st.link.rtt[i, 0])
            start, length = grid[idx[0]], grid[idx[-1]] - grid[idx[0]]
            assert 0.15 * ep - 0.03 <= start <= 0.5 * ep + 0.03
            assert 0.2 * ep - 0.06 <= length <= 0.4 * ep + 0.03
            n_up += f[0] > 1
        if frac == 1.0:
            assert 6 <= n_up <= 26  # of 32: either direction
