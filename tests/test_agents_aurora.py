"""Aurora (PPO): loss functions on hand-computed values, export/reload, and a smoke training run."""

from __future__ import annotations

import importlib.util
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile
from jaxcc.training import export as training_export
from jaxcc.agents import aurora_ppo as ap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config(name: str):
    spec = importlib.util.spec_from_file_location(f"_cfg_{name}", os.path.join(REPO, "configs", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


# ----------------------------------------------------------------------------- GAE


def test_gae_three_steps_by_hand():
    # r = [1, 2, 3], V = [0.5, 1.0, 1.5], the episode ends after step 1, V(s_3) = 2, γ = 0.9, λ = 0.8.
    #   t=2: δ = 3 + 0.9·2.0 − 1.5 = 3.3;               A = 3.3
    #   t=1: δ = 2 + 0 − 1.0 = 1.0 (done: no bootstrap); A = 1.0 (the trace is cut)
    #   t=0: δ = 1 + 0.9·1.0 − 0.5 = 1.4;               A = 1.4 + 0.9·0.8·1.0 = 2.12
    adv, ret = ap.compute_gae(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.0, 1.5]), jnp.array([0.0, 1.0, 0.0]),
                              jnp.array(2.0), gamma=0.9, lam=0.8)
    np.testing.assert_allclose(adv, [2.12, 1.0, 3.3], rtol=1e-6)
    np.testing.assert_allclose(ret, [2.62, 2.0, 4.8], rtol=1e-6)


def test_gae_lambda_one_is_discounted_return_and_zero_is_td():
    r = jnp.array([1.0, 0.0, 2.0])
    v = jnp.array([0.3, 0.2, 0.1])
    d = jnp.zeros(3)
    _, ret1 = ap.compute_gae(r, v, d, jnp.array(5.0), gamma=0.5, lam=1.0)
    # λ = 1: Monte-Carlo return bootstrapped at the end: 1 + 0.5·0 + 0.25·2 + 0.125·5.
    assert float(ret1[0]) == pytest.approx(1 + 0.5 + 0.625)
    adv0, _ = ap.compute_gae(r, v, d, jnp.array(5.0), gamma=0.5, lam=0.0)
    np.testing.assert_allclose(adv0, [1 + 0.5 * 0.2 - 0.3, 0 + 0.5 * 0.1 - 0.2, 2 + 0.5 * 5 - 0.1], rtol=1e-6)


def test_gae_truncation_bootstraps_from_final_value():
    # A time limit after step 0: done cuts the trace, and γ·V(final obs) = 0.9·4 is credited.
    adv, _ = ap.compute_gae(jnp.array([1.0, 1.0]), jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]),
                            jnp.array(0.0), gamma=0.9, lam=0.95, bootstrap=jnp.array([4.0, 0.0]))
    assert float(adv[0]) == pytest.approx(1.0 + 3.6)


def test_gae_batched_axes():
    r = jnp.ones((4, 3, 2))
    adv, ret = ap.compute_gae(r, jnp.zeros((4, 3, 2)), jnp.zeros((4, 3, 2)), jnp.zeros((3, 2)), 0.99, 0.95)
    assert adv.shape == (4, 3, 2) and ret.shape == (4, 3, 2)
    assert np.all(np.diff(np.asarray(adv[:, 0, 0])) < 0)  # earlier steps see more future reward


# ----------------------------------------------------------------------------- clipped objective


def test_clipped_surrogate_by_hand():
    # ρ = [1.5, 0.5, 1.0], A = [1, −1, −2], ε = 0.2:
    #   min(1.5·1, 1.2·1) = 1.2;  min(0.5·−1, 0.8·−1) = −0.8;  min(−2, −2) = −2  → mean −1.6/3.
    old = jnp.zeros(3)
    new = jnp.log(jnp.array([1.5, 0.5, 1.0]))
    loss = ap.clipped_surrogate(new, old, jnp.array([1.0, -1.0, -2.0]), 0.2)
    assert float(loss) == pytest.approx(1.6 / 3, rel=1e-6)


def test_clipped_surrogate_has_no_gradient_beyond_the_clip():
    g = jax.grad(lambda lp: ap.clipped_surrogate(lp, jnp.zeros(1), jnp.ones(1), 0.2))(jnp.log(jnp.array([1.5])))
    assert float(g[0]) == 0.0  # ρ > 1 + ε with A > 0: clipped, no push further
    g = jax.grad(lambda lp: ap.clipped_surrogate(lp, jnp.zeros(1), jnp.ones(1), 0.2))(jnp.log(jnp.array([1.1])))
    assert float(g[0]) == pytest.approx(-1.1)  # inside the clip: −ρ·A


def test_value_losses():
    v, old, ret = jnp.array([1.0, 3.0]), jnp.array([0.0, 2.9]), jnp.array([2.0, 3.0])
    assert float(ap.value_loss(v, old, ret, 0.2, clip=False)) == pytest.approx(0.5 * (1.0 + 0.0) / 2)
    # clipped: first sample's V moves 1.0 > 0.2 from V_old: max((1−2)², (0.2−2)²) = 3.24.
    assert float(ap.value_loss(v, old, ret, 0.2, clip=True)) == pytest.approx(0.5 * (3.24 + 0.0) / 2)


def test_gaussian_log_prob_and_entropy():
    lp = ap.gaussian_log_prob(jnp.array(1.0), jnp.array(0.0), jnp.array(math.log(2.0)))
    assert float(lp) == pytest.approx(-0.125 - math.log(2.0) - 0.5 * math.log(2 * math.pi), rel=1e-6)
    assert float(ap.gaussian_entropy(jnp.array(0.0))) == pytest.approx(0.5 * math.log(2 * math.pi * math.e))
    # The closed forms are distrax's Normal (to float rounding: see the comment above them).
    mu, log_std = jnp.array([0.3, -1.2, 4.0]), jnp.array(-0.7)
    a = jnp.array([0.1, -0.2, 5.5])
    pi = ap.gaussian(mu, log_std)
    np.testing.assert_allclose(ap.gaussian_log_prob(a, mu, log_std), pi.log_prob(a), rtol=1e-6)
    np.testing.assert_allclose(ap.gaussian_entropy(log_std), pi.entropy(), rtol=1e-6)
    # Sampling is μ + σ·n with n the key's standard normals, bit for bit (what training always drew).
    key = jax.random.PRNGKey(9)
    np.testing.assert_array_equal(pi.sample(seed=key), mu + jnp.exp(log_std) * jax.random.normal(key, mu.shape))


# ----------------------------------------------------------------------------- export


def test_export_reload_gives_identical_actions(tmp_path):
    spec = ap.actor_spec(10, 3, (32, 16), action_clip=10.0, features={"name": "aurora_v1"})
    params = ap.init_agent_params(jax.random.PRNGKey(3), 30)
    # Make the mean head non-trivial so clipping and the sign of the action both matter.
    params["actor"]["mean"]["kernel"] = params["actor"]["mean"]["kernel"] * 2000.0
    path = str(tmp_path / "aurora.safetensors")
    training_export.export_state({"agent": params}, spec, path, stage_label="Aurora")
    spec2, tensors = policyfile.load(path)
    assert spec2["algorithm"] == "aurora" and spec2["head"]["type"] == "gaussian_mean" and spec2["stage"] == "Aurora"
    assert spec2["action"] == {"type": "aurora", "alpha": 0.025, "min_mbps": 0.01, "max_mbps": 100000.0}
    obs = jax.random.normal(jax.random.PRNGKey(4), (64, 10, 3)) * jnp.array([0.05, 0.5, 1.0]) + jnp.array([0, 1, 1])
    train_a = jnp.clip(jax.vmap(lambda w: ap.actor_mean(spec, params["actor"], w))(obs), -10, 10)
    file_a = jax.vmap(lambda w: policyfile.apply(spec2, {k: jnp.asarray(v) for k, v in tensors.items()}, w)[0])(obs)
    np.testing.assert_array_equal(np.asarray(train_a), np.asarray(file_a))
    assert np.any(np.asarray(file_a) > 0) and np.any(np.asarray(file_a) < 0)
    rate, _ = policyfile.map_action(spec2, file_a[0], 1e6, 1e30)
    a = float(file_a[0])
    expect = 1e6 * (1 + 0.025 * a) if a >= 0 else 1e6 / (1 - 0.025 * a)
    assert float(rate) == pytest.approx(expect, rel=1e-6)


def test_config_matches_the_paper():
    c = _config("aurora")
    assert c.algo == "aurora_ppo" and c.env.name == "aurora"
    assert tuple(c.ppo.hidden) == (32, 16) and c.ppo.gamma == 0.99
    assert c.ppo.clip_eps == 0.2 and c.ppo.update_epochs == 4 and c.ppo.ent_coef == 0.01
    assert c.num_envs * c.ppo.num_steps // c.ppo.num_minibatches == 2048  # PPO1 optim_batchsize
    # The deviations from the paper's training distribution (far starts; robust training: far-above
    # starts, capacity steps, realism) are set and explained in the config.
    p = c.env.params
    assert (p.init_far_frac, p.init_far_lo, p.init_above_frac, p.init_above_hi) == (0.5, 0.001, 0.15, 10.0)
    assert (p.step_frac, p.step_max, c.env.overrides.num_segments) == (0.4, 10.0, 3)
    with open(os.path.join(REPO, "configs", "aurora.py")) as f:
        text = f.read()
        assert "Deviation from the paper" in text and "Robust training" in text
    # aurora_paper keeps Table 1: the paper's starts, constant links, no realism.
    cp = _config("aurora_paper")
    _, pp = ap.make_env(cp)
    assert float(pp.init_far_frac) == 0.0 and float(pp.init_above_frac) == 0.0 and float(pp.step_frac) == 0.0
    assert set(cp.env.overrides) == {"realism"}  # one segment: constant links
    assert not any(v for k, v in cp.env.overrides.realism.items() if k.endswith("_max"))


def test_env_params_from_config():
    c = _config("aurora_smoke")
    env, p = ap.make_env(c)
    assert float(p.init_far_frac) == pytest.approx(c.env.params.init_far_frac)
    with c.unlocked():
        c.env.params.init_far_frac = 0.25
        c.env.params.init_far_lo = 0.02
    _, p = ap.make_env(c)
    assert float(p.init_far_frac) == 0.25 and float(p.init_far_lo) == pytest.approx(0.02)
    assert float(p.init_rate_lo) == pytest.approx(0.3)  # the paper's range is kept
    with c.unlocked():
        c.env.params.no_such_field = 1.0
    with pytest.raises(ValueError, match="no_such_field"):
        ap.make_env(c)


# ----------------------------------------------------------------------------- training


@pytest.mark.full
def test_smoke_training_improves_over_random_policy_and_resumes_exactly(tmp_path):
    """aurora_smoke through the shared pipeline: train, checkpoint, resume, export; the trained
    policy (its mean) beats the untrained random Gaussian policy on the same links."""
    from jaxcc.training import loop

    cfg = _config("aurora_smoke")
    work = str(tmp_path / "run")
    loop.train(cfg, work, progress=False, log=False, stop_after_chunks=2)  # killed half-way ...
    summary = loop.train(cfg, work, progress=False, log=False)  # ... and resumed
    assert summary["resumed"] and summary["final_update"] == cfg.num_updates
    exported = os.path.join(work, "stages", "Aurora.safetensors")
    spec, tensors = policyfile.load(exported)
    assert spec["algorithm"] == "aurora" and spec["features"]["name"] == "aurora_v1" and spec["stage"] == "Aurora"

    tr = ap.make_train(cfg)
    init = jax.jit(tr.init)(jax.random.PRNGKey(int(cfg.seed)))
    # Exact resume: an uninterrupted run from the same seed ends with the same parameters.
    run = jax.jit(tr.run_chunk)
    state = init
    for _ in range(cfg.num_updates // cfg.chunk_updates):
        state, _ = run(state)
    restored = policyfile.load(exported)[1]
    np.testing.assert_array_equal(np.asarray(state["agent"]["actor"]["fc1"]["kernel"]), restored["fc1.kernel"])

    ev = jax.jit(tr.evaluate, static_argnums=(2, 3, 4))
    key = jax.random.PRNGKey(123)
    params = lambda s: {k: s["agent"][k] for k in ("actor", "critic", "log_std")}  # noqa: E731
    random_policy = float(ev(params(init), key, 32, 200, False))
    trained = float(ev(params(state), key, 32, 200, True))
    assert trained > random_policy * 1.05, (trained, random_policy)


def test_shipped_policy_in_the_simulator():
    """The shipped policy runs as ``policy:FILE`` in scenarios (the ``aurora_v1`` sender) and keeps
    its §4.1 behaviour: most of the link with a short queue, and robust to 2 % random loss."""
    path = os.path.join(REPO, "checkpoints", "aurora", "aurora.safetensors")
    if not os.path.exists(path):
        pytest.skip("no shipped Aurora policy")
    from jaxcc.evaluation import runs as evaluation_runs
    from jaxcc.scenarios import get_scenario

    rep = evaluation_runs.run_evaluation([get_scenario("aurora/bw8"), get_scenario("aurora/loss2")],
                            evaluation_runs.controller_entries(["cubic", f"policy:{path}"]), progress=False, keep_series=False)
    r = {(x["scenario"], x["controller"].split(":")[0]): x for x in rep["results"]}
    assert r[("aurora/bw8", "policy")]["utilization"] > 0.85
    assert r[("aurora/bw8", "policy")]["p95_qdelay_ms"] < 0.1 * r[("aurora/bw8", "cubic")]["p95_qdelay_ms"]
    assert r[("aurora/loss2", "policy")]["throughput_mbps"] > 5 * r[("aurora/loss2", "cubic")]["throughput_mbps"]
