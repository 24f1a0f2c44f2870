"""The Pareto TD3 step against values computed by hand (NumPy, float64), independently of the code.

``td3.td3_update`` and ``td3.learn_step`` are generic in the networks, so the tests use linear
ones whose gradients are written out below:

    actor   π_θ(s)    = s·θw + θb
    critic  Q_φ(s, a) = s·φs + φa·a + φb

and the identity optimiser (``p ← p − lr·g``), so every parameter after the step shows the
gradient itself, weights included.  Covered: target policy smoothing (noise clipped to
±noise_clip, the action to [−0.7, 2]), the min of the twin target critics and the ``done``
mask (eq. 3); the importance-weighted critic loss and its gradient (eqs. 4, 6, 7); the delayed
actor update through the *updated* first critic (eq. 5) and the soft target updates (eq. 8);
stratified prioritized sampling with ``w_i = (N·P(i))^−β / max w``, β's schedule, and the new
priorities ``tanh(δ_i / c + J_i) + 1 + ζ`` (eq. 9).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxcc.agents.pareto import replay, td3

LO, HI = -0.7, 2.0  # Pareto's action range (§III)
HALF = 0.5 * (HI - LO)

HP = {"gamma": 0.9, "tau": 0.05, "lr_actor": 0.1, "lr_critic": 0.2, "policy_noise": 0.2, "noise_clip": 0.5,
      "alpha": 0.6, "beta0": 0.4, "beta_inc": 0.1, "prio_c": 10.0, "prio_zeta": 1e-5}

ACTOR = {"w": [0.4, -0.3], "b": 0.1}
ACTOR_T = {"w": [0.9, 0.5], "b": 0.3}
C1 = {"ws": [0.5, -0.2], "wa": 0.7, "b": 0.1}
C2 = {"ws": [0.3, 0.4], "wa": -0.2, "b": 0.0}
C1_T = {"ws": [0.2, 0.1], "wa": 0.5, "b": 0.05}
C2_T = {"ws": [0.6, -0.3], "wa": 0.1, "b": -0.1}

BATCH = {
    "obs": [[0.5, -1.0], [1.0, 0.2], [-0.4, 0.8], [2.0, 1.5]],
    "next_obs": [[0.3, 0.1], [-1.0, 0.5], [0.6, -0.2], [1.2, 2.0]],
    "action": [0.1, -0.5, 1.2, 0.4],
    "reward": [1.0, -0.5, 0.3, 2.0],
    "done": [0.0, 0.0, 1.0, 0.0],
}
W = [1.0, 0.25, 0.6, 0.8]
NOISE = [3.0, -0.3, -4.0, 0.1]  # standard-normal draws: 3 and −4 are beyond the clip (±2.5)


# ----------------------------------------------------------------------------- the code under test's inputs


def actor_b(p, obs):
    return obs[:, -1, :] @ p["w"] + p["b"]


def critic_b(p, obs, a):
    return obs[:, -1, :] @ p["ws"] + p["wa"] * a + p["b"]


def _j(params):
    return {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}


def _agent(opt):
    a, c1, c2 = _j(ACTOR), _j(C1), _j(C2)
    return {"actor": a, "critic1": c1, "critic2": c2, "actor_t": _j(ACTOR_T), "critic1_t": _j(C1_T),
            "critic2_t": _j(C2_T), "opt_actor": opt.init(a), "opt_critic": opt.init((c1, c2))}


def _batch(b):
    out = {k: jnp.asarray(v, jnp.float32) for k, v in b.items()}
    out["obs"], out["next_obs"] = out["obs"][:, None, :], out["next_obs"][:, None, :]  # windows [B, T=1, D]
    return out


def _hp():
    return {k: jnp.asarray(v, jnp.float32) for k, v in HP.items()}


KW = dict(actor_b=actor_b, critic_b=critic_b, opt=optax.identity())


# ----------------------------------------------------------------------------- by hand


def _np(tree):
    return {k: np.asarray(v, np.float64) for k, v in tree.items()}


def hand_step(batch, w, noise, do_actor: bool):
    """Everything td3_update should do, in float64 NumPy, from the formulas in the paper."""
    s, s2 = np.asarray(batch["obs"], np.float64), np.asarray(batch["next_obs"], np.float64)
    a, r, d = (np.asarray(batch[k], np.float64) for k in ("action", "reward", "done"))
    w, n = np.asarray(w, np.float64), np.asarray(noise, np.float64)
    th, th_t, c1, c2, c1t, c2t = (_np(x) for x in (ACTOR, ACTOR_T, C1, C2, C1_T, C2_T))
    q = lambda c, x, act: x @ c["ws"] + c["wa"] * act + c["b"]  # noqa: E731
    # eq. (3): clipped noise, clipped action, min of the twin targets, no bootstrap after done.
    eps = np.clip(HP["policy_noise"] * HALF * n, -HP["noise_clip"] * HALF, HP["noise_clip"] * HALF)
    a2 = np.clip(s2 @ th_t["w"] + th_t["b"] + eps, LO, HI)
    q1t, q2t = q(c1t, s2, a2), q(c2t, s2, a2)
    y = r + HP["gamma"] * (1.0 - d) * np.minimum(q1t, q2t)
    # eqs. (4), (6), (7): L = mean_i w_i · ½[(Q1 − y)² + (Q2 − y)²]; dL/dφ_k = mean_i w_i (Q_k − y) ∂Q_k/∂φ_k.
    q1, q2 = q(c1, s, a), q(c2, s, a)
    delta = 0.5 * ((q1 - y) ** 2 + (q2 - y) ** 2)
    new_c = []
    for c, qk in ((c1, q1), (c2, q2)):
        e = w * (qk - y)
        g = {"ws": (e[:, None] * s).mean(0), "wa": (e * a).mean(), "b": e.mean()}
        new_c.append({k: c[k] - HP["lr_critic"] * g[k] for k in c})
    c1n, c2n = new_c
    # eq. (5) through the updated first critic: J_i = −Q1'(s_i, π(s_i)); dJ/dθ = −φa' · (s_i, 1).
    pi = s @ th["w"] + th["b"]
    J = -q(c1n, s, pi)
    g_th = {"w": (w[:, None] * -c1n["wa"] * s).mean(0), "b": (w * -c1n["wa"]).mean()}
    out = {"critic1": c1n, "critic2": c2n, "actor": th, "actor_t": th_t, "critic1_t": c1t, "critic2_t": c2t}
    if do_actor:  # eq. (8): θ' ← τθ + (1 − τ)θ' after the actor's step
        thn = {k: th[k] - HP["lr_actor"] * g_th[k] for k in th}
        soft = lambda tgt, src: {k: HP["tau"] * src[k] + (1 - HP["tau"]) * tgt[k] for k in tgt}  # noqa: E731
        out.update(actor=thn, actor_t=soft(th_t, thn), critic1_t=soft(c1t, c1n), critic2_t=soft(c2t, c2n))
    info = {"eps": eps, "a2": a2, "q1t": q1t, "q2t": q2t, "y": y, "delta": delta, "J": J,
            "critic_loss": np.mean(w * delta), "actor_loss": np.mean(w * J), "q": np.mean(q1)}
    return out, info


def assert_tree_close(got, want, what):
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k], np.float64), want[k], rtol=1e-5, atol=1e-6, err_msg=f"{what}.{k}")


# ----------------------------------------------------------------------------- td3_update


def test_hand_example_exercises_every_branch():
    """The hand example reaches what it is meant to test (else a test below could pass vacuously)."""
    _, h = hand_step(BATCH, W, NOISE, True)
    raw = HP["policy_noise"] * HALF * np.asarray(NOISE)
    assert np.sum(np.abs(raw) > HP["noise_clip"] * HALF) == 2  # the noise clip bites on two samples
    assert np.any(h["a2"] == HI)  # the action clip bites on one
    assert np.any(h["q1t"] < h["q2t"]) and np.any(h["q2t"] < h["q1t"])  # each target critic is the min somewhere


@pytest.mark.parametrize("gstep,delay,actor_steps", [(0, 2, True), (1, 2, False), (4, 2, True), (5, 3, False),
                                                      (6, 3, True)])
def test_td3_update_matches_hand_computation(gstep, delay, actor_steps):
    agent = _agent(optax.identity())
    new, c_per, a_per, m = jax.jit(lambda ag, b, w, n, hp, g: td3.td3_update(ag, b, w, n, hp, g, policy_delay=delay,
                                                                             **KW))(
        agent, _batch(BATCH), jnp.asarray(W, jnp.float32), jnp.asarray(NOISE, jnp.float32), _hp(), jnp.int32(gstep))
    want, h = hand_step(BATCH, W, NOISE, actor_steps)
    # Target smoothing, twin-min target and done mask enter through δ (critic per-sample loss).
    np.testing.assert_allclose(np.asarray(c_per), h["delta"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(m["critic_loss"]), h["critic_loss"], rtol=1e-5)
    np.testing.assert_allclose(float(m["q"]), h["q"], rtol=1e-5)
    # Weighted critic gradients (identity optimiser: the step is −lr·gradient).
    assert_tree_close(new["critic1"], want["critic1"], "critic1")
    assert_tree_close(new["critic2"], want["critic2"], "critic2")
    # Actor loss through the updated first critic, on every step.
    np.testing.assert_allclose(np.asarray(a_per), h["J"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(m["actor_loss"]), h["actor_loss"], rtol=1e-5)
    # Delayed actor update and soft targets only when gstep % policy_delay == 0.
    for k in ("actor", "actor_t", "critic1_t", "critic2_t"):
        assert_tree_close(new[k], want[k], k)
    moved = not np.allclose(np.asarray(new["actor"]["w"]), ACTOR["w"])
    assert moved == actor_steps


def test_importance_weights_scale_the_gradient():
    """With w = 0 for a sample its data leaves the gradients (but not δ, which is per sample)."""
    agent = _agent(optax.identity())
    w0 = [1.0, 0.0, 0.0, 0.0]
    only_first = {k: v[:1] for k, v in BATCH.items()}
    new, c_per, _, _ = td3.td3_update(agent, _batch(BATCH), jnp.asarray(w0, jnp.float32),
                                      jnp.asarray(NOISE, jnp.float32), _hp(), jnp.int32(0), policy_delay=1, **KW)
    want, h = hand_step(BATCH, w0, NOISE, True)
    assert_tree_close(new["critic1"], want["critic1"], "critic1")
    assert_tree_close(new["actor"], want["actor"], "actor")
    # The gradient of sample 0 alone, averaged over B = 4: a quarter of its one-sample gradient.
    want1, _ = hand_step(only_first, [1.0], NOISE[:1], True)
    for k in C1:
        step4 = np.asarray(C1[k], np.float64) - np.asarray(new["critic1"][k], np.float64)
        step1 = np.asarray(C1[k], np.float64) - want1["critic1"][k]
        np.testing.assert_allclose(step4, step1 / 4, rtol=1e-5, atol=1e-7)
    assert np.all(np.asarray(c_per) > 0) and h["delta"][1] > 0


# ----------------------------------------------------------------------------- learn_step: sampling, weights, priorities


def _buffer():
    rng = np.random.default_rng(0)
    n = 6
    data = {"obs": rng.normal(size=(n, 1, 2)), "next_obs": rng.normal(size=(n, 1, 2)),
            "action": rng.uniform(LO, HI, size=n), "reward": rng.normal(size=n),
            "done": np.asarray([0, 1, 0, 0, 0, 0], np.float64)}
    ex = {k: jnp.zeros(v.shape[1:], jnp.float32) for k, v in data.items()}
    buf = replay.init(ex, [n])
    buf = replay.add(buf, {k: jnp.asarray(v, jnp.float32) for k, v in data.items()}, jnp.ones((n,), bool), 0)
    prio = np.asarray([0.5, 2.0, 1.0, 0.1, 3.0, 1.5])
    return buf.replace(priority=jnp.asarray(prio, jnp.float32)), data, prio


def test_learn_step_samples_weights_and_reprioritises_by_hand():
    buf, data, prio = _buffer()
    agent = _agent(optax.identity())
    key, gstep, B = jax.random.PRNGKey(5), 2, 4
    new, nbuf, nkey, m = jax.jit(lambda ag, bf, k, hp, g: td3.learn_step(ag, bf, k, hp, g, batch_size=B,
                                                                          policy_delay=2, **KW))(
        agent, buf, key, _hp(), jnp.int32(gstep))
    # The step's randomness (inputs, not results): the key split, the stratified uniforms, the noise.
    k_next, k_s, k_n = jax.random.split(key, 3)
    u = (np.arange(B) + np.asarray(jax.random.uniform(k_s, (B,)), np.float64)) / B
    noise = np.asarray(jax.random.normal(k_n, (B,)), np.float64)
    # Stratified sampling with P(i) = p_i^α / Σ p^α, and eq. (6) with β = min(1, β0 + β_inc·gstep).
    pa = prio ** HP["alpha"]
    cdf = np.cumsum(pa)
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    assert len(set(idx)) == B  # distinct slots, so the priority write below is unambiguous
    beta = min(1.0, HP["beta0"] + HP["beta_inc"] * gstep)
    w = (len(prio) * pa[idx] / cdf[-1]) ** -beta
    w = w / w.max()
    assert not np.allclose(w, 1.0)  # the weights are not trivial here
    batch = {k: v[idx] for k, v in data.items()}
    batch["obs"], batch["next_obs"] = batch["obs"][:, 0], batch["next_obs"][:, 0]
    want, h = hand_step(batch, w, noise, do_actor=True)  # gstep 2, delay 2: the actor steps
    np.testing.assert_array_equal(np.asarray(nkey), np.asarray(k_next))
    np.testing.assert_allclose(float(m["beta"]), beta, rtol=1e-6)
    np.testing.assert_allclose(float(m["is_weight"]), w.mean(), rtol=1e-5)
    for k in ("critic1", "critic2", "actor", "actor_t", "critic1_t", "critic2_t"):
        assert_tree_close(new[k], want[k], k)
    # eq. (9) at the sampled slots; the others keep theirs; new samples will start at the max.
    new_p = np.tanh(h["delta"] / HP["prio_c"] + h["J"]) + 1.0 + HP["prio_zeta"]
    expect = prio.copy()
    expect[idx] = new_p
    np.testing.assert_allclose(np.asarray(nbuf.priority, np.float64), expect, rtol=1e-5)
    np.testing.assert_allclose(float(nbuf.max_priority), max(1.0, new_p.max()), rtol=1e-5)
    np.testing.assert_allclose(float(m["priority"]), new_p.mean(), rtol=1e-5)


def test_beta_reaches_one_and_stays():
    buf, _, _ = _buffer()
    agent = _agent(optax.identity())
    for gstep, want in ((0, 0.4), (3, 0.7), (6, 1.0), (50, 1.0)):
        _, _, _, m = td3.learn_step(agent, buf, jax.random.PRNGKey(0), _hp(), jnp.int32(gstep), batch_size=4,
                                    policy_delay=2, **KW)
        np.testing.assert_allclose(float(m["beta"]), want, rtol=1e-6)


def test_anchor_adds_its_penalty_and_its_gradient_by_hand():
    """The online variant ``anchor``: with ``actor_anchor`` = the actor with its bias 0.3 higher,
    every a − a0 = −0.3, so each per-sample actor loss gains λ·(0.3/HALF)² and the actor's step
    (identity optimiser) gains −lr·mean_i w_i·2λ(a_i − a0_i)/HALF²·[x_i, 1]."""
    lam, half = 4.0, 0.5 * (td3.networks.PAPER_RANGE[1] - td3.networks.PAPER_RANGE[0])
    agent = _agent(optax.identity())
    anchored = {**agent, "actor_anchor": {**agent["actor"], "b": agent["actor"]["b"] + 0.3}}
    hp = {**_hp(), "anchor_w": jnp.float32(lam)}
    run = lambda ag: td3.td3_update(ag, _batch(BATCH), jnp.asarray(W, jnp.float32),  # noqa: E731
                                    jnp.asarray(NOISE, jnp.float32), hp, jnp.int32(0), policy_delay=2, **KW)
    plain, _, a_plain, _ = run(agent)
    new, _, a_anch, _ = run(anchored)
    np.testing.assert_allclose(np.asarray(a_anch) - np.asarray(a_plain), [lam * (0.3 / half) ** 2] * 4, rtol=1e-5)
    x = np.asarray(BATCH["obs"], np.float64)
    wts = np.asarray(W, np.float64)
    g = 2.0 * lam * (-0.3) / half ** 2 * wts  # d penalty / d a_i, weighted
    lr = HP["lr_actor"]
    np.testing.assert_allclose(np.asarray(new["actor"]["w"]) - np.asarray(plain["actor"]["w"]),
                               -lr * (g[:, None] * x).mean(axis=0), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.asarray(new["actor"]["b"]) - np.asarray(plain["actor"]["b"]), -lr * g.mean(),
                               rtol=1e-4, atol=1e-7)
    # The critics never see the anchor.
    assert_tree_close(new["critic1"], plain["critic1"], "critic1")
