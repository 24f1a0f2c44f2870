"""The DeepCC trainer (``jaxcc.agents.deepcc_ddpg``): the critic target of eq. 7 on a hand-set
network, the replay ring, the OU noise, the exported actor against the training actor, and the
smoke config end to end (determinism, exact resume)."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.agents import deepcc_ddpg as M
from jaxcc.training.configs import load_config

SMOKE = "configs/deepcc_smoke.py"


def _trainer(cfg=None):
    return M.make_train(cfg or load_config(SMOKE))


def test_critic_target_eq7_by_hand():
    # y = r + γ(1 − done)·q_next
    y = M.critic_target(jnp.array([0.5, -1.0]), jnp.array([0.0, 1.0]), jnp.array([2.0, 7.0]), 0.9)
    np.testing.assert_allclose(y, [0.5 + 0.9 * 2.0, -1.0], rtol=1e-6)


def test_bootstrap_target_uses_the_target_actor_and_the_goal():
    """Target networks set by hand: μ'(s', g) = (tanh b + 1)/2 (all actor kernels 0, output bias
    b); Q'(s', g, a) = 2a + w·g + c (the action passed through a_fc1..3 and fc1 on unit 0, the q
    layer reading that unit with weight 2 and the goal with w).  Then eq. 7 is
    y = r + γ(1 − done)(2·μ' + w·g + c)."""
    tr = _trainer()
    st = jax.eval_shape(tr.init, jax.random.PRNGKey(0))  # the shapes alone: every weight is set below
    zero = lambda t: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), t)  # noqa: E731
    b = 0.7
    actor = zero(st["agent"]["actor"])
    actor["out"]["bias"] = jnp.array([b])
    critic = zero(st["agent"]["critic"])
    B = critic["a_fc1"]["kernel"].shape[1]
    for n in ("a_fc1", "a_fc2", "a_fc3"):
        critic[n]["kernel"] = critic[n]["kernel"].at[0, 0].set(1.0)  # unit 0 carries a (a >= 0: ReLU passes it)
    n_in = critic["fc1"]["kernel"].shape[0]  # [s conv, m, g, a, goal]
    a_pos = n_in - 3 - B  # unit 0 of the action branch
    critic["fc1"]["kernel"] = critic["fc1"]["kernel"].at[a_pos, 0].set(1.0)
    w, c = jnp.array([1.5, -2.0, 0.25]), -0.3
    H = critic["q"]["kernel"].shape[0] - 3
    critic["q"]["kernel"] = critic["q"]["kernel"].at[0, 0].set(2.0).at[H:, 0].set(w)
    critic["q"]["bias"] = jnp.array([c])
    key = jax.random.PRNGKey(3)
    nobs = jax.random.uniform(key, (5, 16, 7), maxval=3.0)
    g = jax.random.dirichlet(key, jnp.ones(3), (5,))
    r = jnp.linspace(-1.0, 1.0, 5)
    done = jnp.array([0.0, 0.0, 1.0, 0.0, 0.0])
    y = jax.jit(lambda a, q: M.bootstrap_target(tr.actor_apply, tr.critic_apply, a, q, nobs, g, r, done, 0.9))(
        actor, critic)
    mu = (np.tanh(b) + 1.0) / 2.0
    want = np.asarray(r) + 0.9 * (1 - np.asarray(done)) * (2.0 * mu + np.asarray(g) @ np.asarray(w) + c)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)


def test_replay_ring_keeps_the_valid_rows_and_wraps():
    buf = M.replay_init(4, M.replay_rows(2, 3))
    row = lambda i: {"obs": jnp.full((1, 2), i, jnp.float32), "next_obs": jnp.full((1, 2), i, jnp.float32),  # noqa: E731
                     "goal": jnp.full((1, 3), i, jnp.float32), "action": jnp.array([i], jnp.float32),
                     "reward": jnp.array([i], jnp.float32), "done": jnp.zeros((1,))}
    cat = lambda rows: {k: jnp.concatenate([r[k] for r in rows]) for k in rows[0]}  # noqa: E731
    buf = M.replay_add(buf, cat([row(1), row(2), row(3)]), jnp.array([True, False, True]))
    assert int(buf["size"]) == 2 and int(buf["ptr"]) == 2
    buf = M.replay_add(buf, cat([row(4), row(5), row(6)]), jnp.array([True, True, True]))
    assert int(buf["size"]) == 4 and int(buf["ptr"]) == 1
    assert list(np.asarray(buf["action"])) == [6, 3, 4, 5]
    s = M.replay_sample(buf, jax.random.PRNGKey(0), 64)
    assert set(np.asarray(s["action"]).tolist()) <= {3, 4, 5, 6}
    np.testing.assert_array_equal(np.asarray(s["goal"][:, 1]), np.asarray(s["action"]))


def test_ou_noise_stationary_spread_and_gaussian_limit():
    # OU x ← (1 − θ)x + σε has stationary variance σ²/(1 − (1 − θ)²); θ = 1 is i.i.d. N(0, σ²).
    def run(theta, sigma, n=20000):
        def body(x, k):
            x = M.ou_step(x, k, theta, sigma)
            return x, x
        _, xs = jax.lax.scan(body, jnp.zeros((64,)), jax.random.split(jax.random.PRNGKey(1), n // 64 + 200))
        return np.asarray(xs[200:]).ravel()
    x = run(0.15, 0.1)
    np.testing.assert_allclose(x.std(), 0.1 / np.sqrt(1 - 0.85 ** 2), rtol=0.05)
    np.testing.assert_allclose(run(1.0, 0.1).std(), 0.1, rtol=0.05)


def test_exported_actor_equals_the_training_actor(tmp_path):
    """The policy file the trainer exports (``policyfile.apply``, the grammar's branches/select/
    goal/concat_goal) gives the training actor's u on random windows and goals, and its action block
    maps u to the environment's log-scale rate."""
    from jaxcc import policyfile
    from jaxcc.training import export as training_export
    from jaxcc.envs import deepcc

    cfg = load_config(SMOKE)
    cfg.ddpg.branch, cfg.ddpg.hidden, cfg.ddpg.conv_filters = 24, 40, 32  # distinct widths: catches a mix-up
    tr = _trainer(cfg)
    st = jax.eval_shape(tr.init, jax.random.PRNGKey(5))  # the shapes alone
    # random weights everywhere (the init's output bias is a constant)
    leaves, tdef = jax.tree.flatten(st["agent"]["actor"])
    keys = jax.random.split(jax.random.PRNGKey(6), len(leaves))
    actor = jax.tree.unflatten(tdef, [0.3 * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves)])
    path = training_export.export_state({"agent": {"actor": actor}}, tr.actor_spec, str(tmp_path / "a.safetensors"))
    spec, tensors = policyfile.load(path)
    obs = jax.random.uniform(jax.random.PRNGKey(7), (32, 16, 7), maxval=3.0)
    g = jax.random.dirichlet(jax.random.PRNGKey(8), jnp.ones(3), (32,))
    u_train, _ = jax.jit(tr.actor_apply)(actor, obs, g)
    u_file = jax.jit(jax.vmap(lambda o, gg: policyfile.apply(spec, tensors, o, gg)))(obs, g)[:, 0]
    np.testing.assert_allclose(np.asarray(u_file), np.asarray(u_train), rtol=1e-5, atol=1e-6)
    assert float(np.std(np.asarray(u_train))) > 0.01  # the inputs matter
    ep = tr.env_params
    for u in np.asarray(u_file[:4]):
        rate, _ = policyfile.map_action(spec, jnp.array([u]), 1e5, 1e30)
        np.testing.assert_allclose(float(rate), float(deepcc.action_to_rate(u, ep.bound_mbps, ep.low_mbps)), rtol=1e-5)
    # The smoke config has the default's ACK-clocked window, and its file states it, so the senders
    # set the same window; a run paced at the rate alone states none.
    assert spec["features"]["cwnd_rtts"] == 1.0
    cfg.env.params.cwnd_rtts = 0.0
    assert "cwnd_rtts" not in _trainer(cfg).actor_spec["features"]


@pytest.mark.parametrize("name, window", [("deepcc_clean", None), ("deepcc_paced", None), ("deepcc", 1.0)])
def test_each_recipe_exports_the_window_it_trains_with(name, window):
    """``deepcc_clean`` is the shipped file's recipe: it exports that file's features block exactly.
    ``deepcc_paced`` (the default before the window) paces at the rate alone like it; ``deepcc``
    states the window, and both keep the rest of the block."""
    from jaxcc import policyfile

    shipped, _ = policyfile.load(os.path.join(os.path.dirname(__file__), "..", "checkpoints", "deepcc",
                                              "deepcc.safetensors"))
    cfg = load_config(name)
    _, params = M.make_env(cfg)
    feats = M.features_block(cfg, params)
    assert feats.get("cwnd_rtts") == window
    assert {k: v for k, v in feats.items() if k != "cwnd_rtts"} == shipped["features"]


@pytest.mark.full  # two deepcc_smoke trainings
def test_smoke_run_is_finite_and_deterministic():
    tr = _trainer()
    outs = []
    for _ in range(2):
        st = jax.jit(tr.init)(jax.random.PRNGKey(0))
        run = jax.jit(tr.run_chunk, static_argnums=1)
        for _ in range(tr.stages[0].num_chunks):
            st, met = run(st, 0)
        outs.append(st)
    assert int(outs[0]["counters"]["grad_steps"]) > 0
    assert bool(met["params_finite"].all()) and np.all(np.isfinite(np.asarray(met["critic_loss"])))
    for a, b in zip(jax.tree.leaves(outs[0]["agent"]), jax.tree.leaves(outs[1]["agent"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # every env step of every link is stored (one flow per link, always active)
    assert int(outs[0]["buffer"]["size"]) == min(4 * 60, 1000)


@pytest.mark.full
def test_pipeline_resumes_exactly_and_exports_what_it_trained(tmp_path):
    """deepcc_smoke through jaxcc.train: stop after one chunk, resume, finish; the exported file
    holds the uninterrupted run's actor."""
    from jaxcc import policyfile
    from jaxcc.training import loop

    cfg = load_config(SMOKE)
    work = str(tmp_path / "run")
    loop.train(cfg, work, progress=False, log=False, stop_after_chunks=1)
    summary = loop.train(cfg, work, progress=False, log=False)
    assert summary["resumed"] and summary["final_update"] == cfg.num_updates
    spec, tensors = policyfile.load(os.path.join(work, "stages", "DeepCC.safetensors"))
    assert spec["algorithm"] == "deepcc" and spec["goal_dim"] == 3 and spec["action"]["scale"] == "log"
    tr = _trainer(cfg)
    st = jax.jit(tr.init)(jax.random.PRNGKey(int(cfg.seed)))
    run = jax.jit(tr.run_chunk, static_argnums=1)
    for _ in range(tr.stages[0].num_chunks):
        st, _ = run(st, 0)
    flat = M.pipeline.flat(st["agent"]["actor_target"])  # the shipped actor is μ' (export_target_actor)
    assert set(flat) == set(tensors)
    assert any(not np.array_equal(np.asarray(v), np.asarray(w)) for v, w in
               zip(jax.tree.leaves(st["agent"]["actor"]), jax.tree.leaves(st["agent"]["actor_target"])))
    for k, v in flat.items():
        np.testing.assert_array_equal(np.asarray(v), tensors[k])
