"""The MOCC trainer (``jaxcc.agents.mocc_envelope``): the envelope target, the loss, the replay
ring and acting, against hand-computed values; and the smoke config end to end."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.agents import mocc_envelope as M
from jaxcc.envs import mi as mi_lib


def test_greedy_is_argmax_of_the_preference_weighted_q():
    # Q[a] for 3 actions, 2 objectives.  ω = (1, 0): action 2 (thr 3); ω = (0, 1): action 0
    # (delay -0.1); ω = (0.5, 0.5): 0.5·(1 − 0.1) = 0.45, 0.5·(2 − 1) = 0.5, 0.5·(3 − 3) = 0 -> 1.
    q = jnp.array([[1.0, -0.1], [2.0, -1.0], [3.0, -3.0]])
    assert int(M.greedy(q, jnp.array([1.0, 0.0]))) == 2
    assert int(M.greedy(q, jnp.array([0.0, 1.0]))) == 0
    assert int(M.greedy(q, jnp.array([0.5, 0.5]))) == 1


def test_envelope_target_searches_actions_and_preferences():
    # Two sampled preferences W, two actions, two objectives.
    W = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    q_next = jnp.array([
        [[1.0, -5.0], [0.0, 0.0]],  # Q(s', ·, ω'_0)
        [[4.0, -1.0], [0.5, -0.5]],  # Q(s', ·, ω'_1)
    ])
    r = jnp.array([0.1, -0.2])
    y = M.envelope_target(q_next, W, r, jnp.float32(0.0), 0.5)
    # ω_0 = (1, 0): the best of every (ω', a) by its first objective is (ω'_1, a_0) = (4, -1).
    # ω_1 = (0, 1): the best by its second objective is (ω'_0, a_1) = (0, 0).
    np.testing.assert_allclose(y, [[0.1 + 0.5 * 4.0, -0.2 - 0.5 * 1.0], [0.1, -0.2]], rtol=1e-6)
    # A terminal cuts the bootstrap; the variant keeps it.
    np.testing.assert_allclose(M.envelope_target(q_next, W, r, jnp.float32(1.0), 0.5), [r, r], rtol=1e-6)
    np.testing.assert_allclose(M.envelope_target(q_next, W, r, jnp.float32(1.0), 0.5, bootstrap_at_terminal=True), y,
                               rtol=1e-6)
    # Double Q-learning: (a*, ω*) chosen by other values, evaluated on q_next.
    sel = jnp.array([[[0.0, 0.0], [9.0, 9.0]], [[0.0, 0.0], [0.0, 0.0]]])  # picks (ω'_0, a_1) for both
    np.testing.assert_allclose(M.envelope_target(q_next, W, r, jnp.float32(0.0), 0.5, q_select=sel), [r, r], rtol=1e-6)


def test_envelope_loss_mixes_eq9_and_eq11():
    W = jnp.array([[0.25, 0.75]])
    q = jnp.array([[[1.0, 2.0]]])  # [B=1, K=1, m=2]
    y = jnp.array([[[2.0, 0.0]]])
    # L^S = (2-1)^2 + (0-2)^2 = 5; L^T = |0.25·1 + 0.75·(-2)| = 1.25.
    for lam in (0.0, 0.3, 1.0):
        loss, aux = M.envelope_loss(q, y, W, lam)
        assert float(aux["loss_s"]) == pytest.approx(5.0)
        assert float(aux["loss_t"]) == pytest.approx(1.25)
        assert float(loss) == pytest.approx((1 - lam) * 5.0 + lam * 1.25)


def test_replay_ring_keeps_the_valid_rows_and_wraps():
    buf = M.replay_init(4, M.replay_rows(2, 3))
    row = lambda i: {"obs": jnp.full((1, 2), i, jnp.float32), "next_obs": jnp.full((1, 2), i, jnp.float32),  # noqa: E731
                     "reward": jnp.full((1, 3), i, jnp.float32), "done": jnp.zeros((1,)), "action": jnp.array([i])}
    cat = lambda rows: {k: jnp.concatenate([r[k] for r in rows]) for k in rows[0]}  # noqa: E731
    buf = M.replay_add(buf, cat([row(1), row(2), row(3)]), jnp.array([True, False, True]))
    assert int(buf["size"]) == 2 and int(buf["ptr"]) == 2
    assert list(np.asarray(buf["action"][:2])) == [1, 3]
    buf = M.replay_add(buf, cat([row(4), row(5), row(6)]), jnp.array([True, True, True]))
    # 1, 3, 4, 5 then 6 overwrites slot 0.
    assert int(buf["size"]) == 4 and int(buf["ptr"]) == 1
    assert list(np.asarray(buf["action"])) == [6, 3, 4, 5]
    s = M.replay_sample(buf, jax.random.PRNGKey(0), 64)
    assert set(np.asarray(s["action"]).tolist()) <= {3, 4, 5, 6}
    np.testing.assert_array_equal(np.asarray(s["obs"][:, 0]), np.asarray(s["action"], np.float32))


def test_preferences_are_on_the_simplex():
    W = M.sample_preferences(jax.random.PRNGKey(3), 500, 3)
    assert bool(jnp.all(W >= 0)) and np.allclose(np.asarray(W.sum(-1)), 1.0, atol=1e-5)
    # Uniform on the simplex: each weight has mean 1/3 (sd of the mean about 0.01 here).
    np.testing.assert_allclose(np.asarray(W.mean(0)), [1 / 3] * 3, atol=0.05)


@pytest.mark.full  # two mocc_smoke trainings
def test_smoke_run_learns_a_finite_q_and_is_deterministic():
    from jaxcc.training.configs import load_config

    c = load_config("configs/mocc_smoke.py")
    tr = M.make_train(c)
    assert tr.actor_spec["head"] == {"type": "q_values", "n": 7, "objectives": 3}
    outs = []
    for _ in range(2):
        st = jax.jit(tr.init)(jax.random.PRNGKey(0))
        run = jax.jit(tr.run_chunk, static_argnums=1)
        for _ in range(tr.stages[0].num_chunks):
            st, met = run(st, 0)
        outs.append(st)
    assert int(outs[0]["counters"]["grad_steps"]) > 0
    assert bool(met["params_finite"].all())
    for a, b in zip(jax.tree.leaves(outs[0]["agent"]["actor"]), jax.tree.leaves(outs[1]["agent"]["actor"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The buffer never holds the init-cwnd step (Algorithm 2 lines 8–9 overrode its action):
    # 8 links x 60 steps minus one overridden step per episode.
    n = int(outs[0]["buffer"]["size"])
    assert 0 < n < 8 * 60


def test_lambda_end_stops_eq12s_homotopy_where_the_config_says():
    from jaxcc.training.configs import load_config

    assert float(load_config("configs/mocc.py").moq.lambda_end) == 0.5  # the default's variant
    assert float(load_config("configs/mocc_paper.py").moq.lambda_end) == 1.0  # the paper's: from 0 to 1
    c = load_config("configs/mocc_smoke.py")
    c.moq.lambda_end = 0.5
    tr = M.make_train(c)
    st = jax.jit(tr.init)(jax.random.PRNGKey(0))
    run = jax.jit(tr.run_chunk, static_argnums=1)
    for _ in range(tr.stages[0].num_chunks):
        st, met = run(st, 0)
    # The last chunk's updates are 40..59 of 60: λ = 0.5 · update / 60.
    np.testing.assert_allclose(np.asarray(met["lambda"]), 0.5 * np.arange(40, 60) / 60, rtol=1e-6)
    c.moq.lambda_end = 1.5
    with pytest.raises(ValueError, match=r"config.moq.lambda_end=1.5: .* \[0, 1\]"):
        M.make_train(c)


@pytest.mark.full  # a smoke training through jaxcc.train, as the other agents' pipeline tests
def test_pipeline_resumes_exactly_and_exports_what_it_trained(tmp_path):
    """mocc_smoke through jaxcc.train: stop after one chunk, resume, finish; the exported file
    holds the uninterrupted run's parameters and acts like the trainer's greedy rule."""
    import os

    from jaxcc import policyfile
    from jaxcc.training import loop
    from jaxcc.training.configs import load_config

    cfg = load_config("configs/mocc_smoke.py")
    work = str(tmp_path / "run")
    loop.train(cfg, work, progress=False, log=False, stop_after_chunks=1)
    summary = loop.train(cfg, work, progress=False, log=False)
    assert summary["resumed"] and summary["final_update"] == cfg.num_updates
    spec, tensors = policyfile.load(os.path.join(work, "stages", "MOCC.safetensors"))
    assert spec["algorithm"] == "mocc" and spec["head"]["objectives"] == 3 and spec["goal_dim"] == 3

    tr = M.make_train(cfg)
    st = jax.jit(tr.init)(jax.random.PRNGKey(int(cfg.seed)))
    run = jax.jit(tr.run_chunk, static_argnums=1)
    for _ in range(tr.stages[0].num_chunks):
        st, _ = run(st, 0)
    for k, v in M.pipeline.flat(st["agent"]["actor"]).items():
        np.testing.assert_array_equal(np.asarray(v), tensors[k])
    obs = jax.random.uniform(jax.random.PRNGKey(1), (1, 4), maxval=2.0)
    for w in ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.6]):
        w = jnp.asarray(w)
        want = int(M.greedy(M.q_values(spec, st["agent"]["actor"], obs, w), w))
        assert int(policyfile.apply(spec, tensors, obs, w)) == want


def test_default_trains_the_queueing_delay_objective_and_paper_keeps_iv_a():
    """``mocc`` rewards delay by the queueing-delay objective (``MoccParams.delay_objective`` 1);
    ``mocc_paper`` and the variants measured with §IV-A's objective (``mocc_additive``,
    ``mocc_robust``) keep −L(delay / timeout) (0).  Each env the configs build takes the value."""
    from jaxcc.agents import mocc_envelope
    from jaxcc.envs import make_env
    from jaxcc.training.configs import load_config

    want = {"mocc": 1.0, "mocc_smoke": 1.0, "mocc_mixed": 1.0, "mocc_paper": 0.0, "mocc_additive": 0.0,
            "mocc_robust": 0.0}
    for name, v in want.items():
        assert float(mocc_envelope.make_env(load_config(f"configs/{name}.py"))[1].delay_objective) == v, name
    assert float(make_env("mocc")[1].delay_objective) == 0.0  # the env's own default is the paper's
    # The throughput floor: only its variant sets it.
    for name in ("mocc", "mocc_paper", "mocc_thrfloor"):
        env_p = mocc_envelope.make_env(load_config(f"configs/{name}.py"))[1]
        assert float(env_p.thr_floor) == pytest.approx(0.1 if name == "mocc_thrfloor" else 0.0), name
        assert float(env_p.delay_objective) == (0.0 if name == "mocc_paper" else 1.0), name


def test_default_trains_with_measurement_realism_and_the_measured_variants_without():
    """``mocc`` (and its smoke config) put jitter, ACK aggregation and RTT-sample noise in the
    training links: each on in half the episodes, up to 5 ms, 5 ms and 2 ms, no cross traffic.
    ``mocc_mixed``, the configs built on it and ``mocc_initscaled`` train without, as measured.
    Each env the configs build takes it."""
    from jaxcc.training.configs import load_config

    for name in ("mocc", "mocc_smoke"):
        r = M.make_env(load_config(f"configs/{name}.py"))[0].config.realism
        assert r is not None, name
        assert (r.p_each, r.jitter_ms_max, r.ack_agg_ms_max, r.rtt_noise_ms_max, r.cross_frac_max) == \
            (0.5, 5.0, 5.0, 2.0, 0.0), name
    for name in ("mocc_mixed", "mocc_paper", "mocc_thrfloor", "mocc_additive", "mocc_robust", "mocc_initscaled"):
        assert M.make_env(load_config(f"configs/{name}.py"))[0].config.realism is None, name


def test_default_table_is_scale_free_and_travels_in_the_policy_file():
    """``mocc``: seven factors, no packet steps; the policy file's action block carries them, and
    the file's map_action moves a 20-packet window as the trainer's env does.  ``mocc_mixed`` and
    the variants measured with the mixed table keep it."""
    from jaxcc import policyfile
    from jaxcc.envs import mocc
    from jaxcc.training.configs import load_config

    for name in ("mocc_mixed", "mocc_paper", "mocc_thrfloor", "mocc_robust"):
        _, p = M.make_env(load_config(f"configs/{name}.py"))
        assert list(np.asarray(p.cwnd_mults)) == list(mocc.CWND_MULTS), name
        assert list(np.asarray(p.cwnd_deltas_pkts)) == list(mocc.CWND_DELTAS_PKTS), name
    cfg = load_config("configs/mocc.py")
    _, ep = M.make_env(cfg)
    feats = M.features_block(cfg, ep)
    want = [0.5, 1 / 1.5, 1 / 1.1, 1.0, 1.1, 2.0, 1.5]
    assert feats["cwnd_deltas_pkts"] == [0.0] * 7
    assert feats["cwnd_mults"] == pytest.approx(want)
    spec = M.policy_spec(1, 4, 7, 3, features=feats, deltas_pkts=feats["cwnd_deltas_pkts"],
                         mults=feats["cwnd_mults"])
    w = 20 * 1500.0
    by_hand = [10.0, 20 / 1.5, 20 / 1.1, 20.0, 22.0, 40.0, 30.0]  # packets
    env_next = mocc.apply_delta(jnp.full((7,), w), jnp.arange(7), ep.min_cwnd_pkts, ep.cwnd_deltas_pkts,
                                ep.cwnd_mults, ep.max_cwnd_pkts)
    np.testing.assert_allclose(np.asarray(env_next) / 1500.0, by_hand, rtol=1e-5)
    for a in range(7):
        np.testing.assert_allclose(float(policyfile.map_action(spec, a, 1e6, w)[1]) / 1500.0, by_hand[a], rtol=1e-5)


def test_initscaled_variant_states_its_init_in_the_file_and_the_sender_takes_it():
    """``mocc_initscaled`` sets ``init_ref_rtt_s`` 0.02 and its file states it, so the simulator's
    sender scales §IV-B's window by the min RTT; ``mocc``'s file does not (eq. 1).  The sender
    refuses a value outside [0, 1] s by name."""
    from jaxcc import policyfile
    from jaxcc.senders import mocc_v1
    from jaxcc.training.configs import load_config

    for name, want in (("mocc", None), ("mocc_initscaled", 0.02)):
        cfg = load_config(f"configs/{name}.py")
        feats = M.features_block(cfg, M.make_env(cfg)[1])
        assert feats.get("init_ref_rtt_s") == want, name
    spec, tensors = policyfile.make_feature_policy("mocc_v1", 0)
    _, p = mocc_v1.env_and_params(dict(spec, features=dict(spec["features"], init_ref_rtt_s=0.02)))
    assert float(p.init_ref_rtt_s) == pytest.approx(0.02)
    for bad in (-0.01, 1.5):
        with pytest.raises(ValueError, match=r"'init_ref_rtt_s'=.* must be in \[0, 1\] s"):
            mocc_v1.env_and_params(dict(spec, features=dict(spec["features"], init_ref_rtt_s=bad)))


def test_default_states_its_max_ack_ewma_in_the_file_and_the_sender_takes_it():
    """``mocc`` (and its smoke config) set ``max_ack_ewma`` 0.25 and the file states it; the
    variants measured before keep the raw max and their files do not state it.  The sender
    refuses a value outside (0, 1] by name."""
    from jaxcc import policyfile
    from jaxcc.senders import mocc_v1
    from jaxcc.training.configs import load_config

    for name, want in (("mocc", 0.25), ("mocc_smoke", 0.25), ("mocc_mixed", None), ("mocc_paper", None),
                       ("mocc_initscaled", None), ("mocc_robust", None)):
        cfg = load_config(f"configs/{name}.py")
        feats = M.features_block(cfg, M.make_env(cfg)[1])
        assert feats.get("max_ack_ewma") == want, name
    spec, tensors = policyfile.make_feature_policy("mocc_v1", 0)
    spec = dict(spec, features=dict(spec["features"], max_ack_ewma=0.25))
    _, p = mocc_v1.env_and_params(spec)
    assert float(p.max_ack_ewma) == pytest.approx(0.25)
    # ACK rates 1, 2, 2 MB/s: the EWMA is 1, 1.25, 1.4375 MB/s and the max follows it (by hand);
    # feature 1 is the interval's own rate over that max.
    s = mocc_v1.sender(spec, tensors)
    rtt0 = jnp.float32(0.02)
    own, run = s.start(rtt0), mi_lib.running_zero(1)
    for acked, want_max in ((2e4, 1e6), (4e4, 1.25e6), (4e4, 1.4375e6)):
        m = mi_lib.mi_zero(1).replace(duration=jnp.full((1,), 0.02), acked=jnp.full((1,), acked),
                                      sent=jnp.full((1,), acked), active=jnp.ones((1,)))
        f, own = s.observe(own, m, run, rtt0)
        assert float(own.paper.max_ack_rate[0]) == pytest.approx(want_max, rel=1e-6)
        assert float(f[1]) == pytest.approx(acked / 0.02 / want_max, rel=1e-6)
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"'max_ack_ewma'=.* must be in \(0, 1\]"):
            mocc_v1.env_and_params(dict(spec, features=dict(spec["features"], max_ack_ewma=bad)))
