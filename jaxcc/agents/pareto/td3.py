"""Pareto: TD3 with LSTM actor/critics, segmented prioritized replay, BBR expert, staged training.

Reads top to bottom like PureJaxRL: the pure TD3 step (``td3_update``; ``learn_step`` adds the
prioritized sampling around it), then ``make_train(config)``, which returns a ``Trainer`` of pure
functions, in the order the code defines them (init → stage entry → collect → learn →
snapshot selection → update → chunk); ``jaxcc.train`` drives them from a thin Python loop
(logging, checkpoints, progress).

* Algorithm 3 (TD3 for a prioritized buffer).  One *update* plays ``rollout_len`` steps on every
  link in parallel (each step is one monitor interval of ``mi_rtts`` RTTs for every flow), stores
  the transitions, then runs ``grad_steps`` TD3 steps:
  target ``y = r + γ min_i Q_φ'_i(s', π_θ'(s') + ε)`` with clipped noise ε (eq. 3, target policy
  smoothing), twin critic losses (eq. 4), the deterministic policy gradient (eq. 5) every
  ``policy_delay`` steps, importance weights (eq. 6) on every per-sample loss (eq. 7), soft
  target updates with τ (eq. 8) on the delayed steps, and new priorities (eq. 9).  β starts at
  0.4 and grows by 0.001 per gradient step to 1.
* Expert demonstrations (Algorithm 3 lines 3–4): when a flow's previous step earned an
  Algorithm 1 reward below ``expert_threshold`` (Pareto-Fair v2's link-wide terms left out), its
  next action is BBR's (the MI-level BBR of ``expert``, run
  beside every flow by ``env_adapter``); the share of expert actions is logged.
* Algorithm 2 (staged): bootstrap → advance → fairness.  Each stage owns one fixed-size segment
  of the shared buffer (``replay.add`` writes only there; older segments are frozen and still
  sampled).  The fairness stage runs two flows per link with one shared policy and one shared
  buffer: every flow of every link acts with the same parameters and all their transitions go to
  the same buffer, so an update learns from all of them ("communication-free" fairness).

* Snapshot selection (ours; the paper does not say which iterate of a stage it keeps).  TD3's
  iterates differ a lot from one update to the next on this task (e.g. one holds a full buffer,
  the next a steady rate far below capacity, with similar returns: Algorithm 1 charges changes
  in delay and loss, not their level).  With ``config.select.enabled``, every
  ``select.every_chunks`` chunks the current actor plays fixed validation episodes
  (deterministic: no noise, no expert; keys from the seed) and the best actor of the stage is
  kept in ``state["select"]``.  ``select.validation = "disjoint"`` (both shipped configs): the
  links of ``jaxcc.envs.pareto.VALIDATION_LINKS``, chosen to differ from every evaluation
  scenario and bar, ``links_per_stage`` realism draws of each, scored by (1 − utilization) +
  ½·p95 queue/buffer + 2·loss + (1 − Jain) (``score_episode``); ``select.coexist_links`` adds
  the three links with a CUBIC neighbour of ``COEXIST_VALIDATION_LINKS``, scored alike, every
  link weighing the same (``configs/pareto_coexist.py``).  ``"training"`` (the earlier
  behaviour): ``links_per_stage`` episodes drawn from every training stage so far, which by the
  paper's design contain the test links, scored by ((1 − utilization) + p95 queue/buffer +
  loss)/3 + (1 − Jain).  At the stage's end it becomes the stage's policy (actor and target
  actor) before the stage checkpoint and export.  Training itself is unchanged.

All hyperparameters that a sweep varies are leaves of ``state["hp"]`` (floats), so they can be
changed (or vmapped) without recompiling; shapes (batch size, network sizes, buffer segment
sizes, number of links) are static.
"""

from __future__ import annotations

import functools
from typing import Callable

import chex
import jax
import jax.numpy as jnp
import optax

from jaxcc.agents import pipeline
from jaxcc.agents.pareto import env_adapter, networks, replay
from jaxcc.params import all_finite

STAGE_LABELS = {"bootstrap": "Pareto-Bootstrap", "advance": "Pareto-Advance", "fairness": "Pareto-Fair"}
HP_KEYS = ("gamma", "tau", "lr_actor", "lr_critic", "policy_noise", "noise_clip", "expl_noise", "alpha",
           "beta0", "beta_inc", "prio_c", "prio_zeta", "expert_threshold", "reward_scale")
# What ``jaxcc.training.sweep`` may vmap: config key -> path of its leaf in the training state.  The seed
# also seeds ``init``'s key; its leaf ``state["seed"]`` keys the snapshot selection's validation
# links.  Every other key sets a shape or the program's structure.
SWEEPABLE = {**{f"td3.{k}": ("hp", k) for k in HP_KEYS}, "seed": ("seed",)}


Stage, Trainer, _strong = pipeline.Stage, pipeline.Trainer, pipeline.strong


def optimizer(td3_config) -> optax.GradientTransformation:
    """The update direction of every TD3 step: global-norm clip, then Adam's scaling (the learning
    rates are ``hp`` leaves applied in ``td3_update``).  Shared with the online stage."""
    return optax.chain(optax.clip_by_global_norm(float(td3_config.max_grad_norm)), optax.scale_by_adam())


def _hp(config) -> dict:
    t = config.td3
    return {k: jnp.asarray(float(t[k]), jnp.float32) for k in HP_KEYS}


# ----------------------------------------------------------------------------- the TD3 step (Algorithm 3, lines 6–13)

# The action range is the stage environments' (§III's [-0.7, 2]; Pareto-Fair v2's [-0.3, 0.5]);
# noise scales (``policy_noise``, ``noise_clip``, ``expl_noise``) are in units of its half-width.


def td3_update(agent: dict, batch: dict, w: jax.Array, noise: jax.Array, hp: dict, gstep: jax.Array, *,
               actor_b: Callable, critic_b: Callable, opt: optax.GradientTransformation, policy_delay: int,
               a_range: tuple[float, float] = networks.PAPER_RANGE, nan_step: int | None = None):
    """One TD3 gradient step on a sampled batch (Algorithm 3 lines 8–12, eqs. 3–8).

    * eq. (3), target policy smoothing: ``ã = clip(π_θ'(s') + clip(σ·n, −c, c), low, high)``
      with ``n = noise`` (standard normal, [B]), ``σ = policy_noise·HALF``, ``c = noise_clip·HALF``
      (``HALF``: half the width of ``a_range``, whose ends are ``low``, ``high``);
      ``y = r + γ (1 − done) min(Q_φ'1(s', ã), Q_φ'2(s', ã))`` (no gradient).
    * eq. (4) weighted as eq. (7): the critics minimise ``mean_i w_i · ½[(Q1 − y)² + (Q2 − y)²]``.
    * eq. (5), every ``policy_delay`` steps (``gstep % policy_delay == 0``): the actor minimises
      ``mean_i w_i · (−Q_1(s, π_θ(s)))`` through the *updated* first critic, and the targets move
      by eq. (8), ``θ' ← τθ + (1 − τ)θ'`` (all three target networks).  On the other steps the
      actor and the targets are unchanged.
    * Parameters step by ``p ← p − lr · u``, ``u`` the optimiser's direction (``opt``: global-norm
      clip then Adam's scaling; the learning rates are ``hp`` leaves so a sweep needs no recompile).

    Args:
      agent: ``actor``, ``critic1``, ``critic2``, their targets ``*_t``, ``opt_actor``, ``opt_critic``.
      batch: ``obs`` [B, T, D], ``action`` [B], ``reward`` [B], ``next_obs`` [B, T, D], ``done`` [B].
      w: importance weights [B] (eq. 6, from ``replay.sample``).
      noise: standard-normal draws [B] for the target smoothing.
      hp: ``state["hp"]`` (``gamma``, ``tau``, ``lr_actor``, ``lr_critic``, ``policy_noise``, ``noise_clip``).
      gstep: the gradient step's index (int32), which decides the delayed actor update.
      actor_b, critic_b: the batched networks, ``actor_b(params, obs) -> [B]`` and
        ``critic_b(params, obs, action) -> [B]``.
      nan_step: test hook — at this ``gstep`` the critic loss and ``critic1`` become NaN.

    Returns:
      (agent, per-sample critic loss δ_i [B], per-sample actor loss J_i [B], metrics) — δ and J
      feed the new priorities (eq. 9, ``replay.pareto_priority``).
    """
    chex.assert_rank(batch["obs"], 3)
    chex.assert_shape([batch["action"], batch["reward"], batch["done"], w, noise], (batch["obs"].shape[0],))
    # eq. (3): target with clipped smoothing noise ε ~ N(0, σ).
    LO, HI = a_range
    HALF = 0.5 * (HI - LO)
    eps = jnp.clip(noise * hp["policy_noise"] * HALF, -hp["noise_clip"] * HALF, hp["noise_clip"] * HALF)
    a2 = jnp.clip(actor_b(agent["actor_t"], batch["next_obs"]) + eps, LO, HI)
    q_t = jnp.minimum(critic_b(agent["critic1_t"], batch["next_obs"], a2),
                      critic_b(agent["critic2_t"], batch["next_obs"], a2))
    y = jax.lax.stop_gradient(batch["reward"] + hp["gamma"] * (1.0 - batch["done"]) * q_t)

    # eq. (4) weighted by eq. (6) as in eq. (7).
    def critic_loss(cs):
        q1 = critic_b(cs[0], batch["obs"], batch["action"])
        q2 = critic_b(cs[1], batch["obs"], batch["action"])
        per = 0.5 * (jnp.square(q1 - y) + jnp.square(q2 - y))
        return jnp.mean(w * per), (per, q1)

    (c_loss, (c_per, q1)), c_grads = jax.value_and_grad(critic_loss, has_aux=True)(
        (agent["critic1"], agent["critic2"]))
    if nan_step is not None:  # test hook: poison the loss at one update to exercise the NaN guard
        c_loss = c_loss + jnp.where(gstep == nan_step, jnp.nan, 0.0)
    upd, opt_c = opt.update(c_grads, agent["opt_critic"])
    c1, c2 = jax.tree.map(lambda p, u: p - hp["lr_critic"] * u, (agent["critic1"], agent["critic2"]), upd)
    if nan_step is not None:
        c1 = jax.tree.map(lambda p: p + jnp.where(gstep == nan_step, jnp.nan, 0.0), c1)
    agent = {**agent, "critic1": c1, "critic2": c2, "opt_critic": opt_c}

    # eq. (5): deterministic policy gradient through Q1, every `policy_delay` steps.  With an
    # ``actor_anchor`` in ``agent`` (the online stage's variant ``anchor``, not the paper's:
    # ``jaxcc.online.pareto``) the loss adds ``anchor_w · ((π_θ(s) − π_anchor(s)) / HALF)²``.
    def actor_loss(ap):
        a = actor_b(ap, batch["obs"])
        per = -critic_b(agent["critic1"], batch["obs"], a)
        if "actor_anchor" in agent:
            a0 = jax.lax.stop_gradient(actor_b(agent["actor_anchor"], batch["obs"]))
            per = per + hp["anchor_w"] * jnp.square((a - a0) / HALF)
        return jnp.mean(w * per), per

    def do_actor(agent):
        (a_loss, a_per), g = jax.value_and_grad(actor_loss, has_aux=True)(agent["actor"])
        u, opt_a = opt.update(g, agent["opt_actor"])
        ap = jax.tree.map(lambda p, uu: p - hp["lr_actor"] * uu, agent["actor"], u)
        tau = hp["tau"]
        soft = lambda tp, p: jax.tree.map(lambda x, y: tau * y + (1.0 - tau) * x, tp, p)  # noqa: E731  eq. (8)
        agent = {**agent, "actor": ap, "opt_actor": opt_a, "actor_t": soft(agent["actor_t"], ap),
                 "critic1_t": soft(agent["critic1_t"], agent["critic1"]),
                 "critic2_t": soft(agent["critic2_t"], agent["critic2"])}
        return agent, a_loss, a_per

    def skip_actor(agent):
        a_loss, a_per = actor_loss(agent["actor"])
        return agent, a_loss, a_per

    agent, a_loss, a_per = jax.lax.cond(jnp.mod(gstep, policy_delay) == 0, do_actor, skip_actor, agent)
    return agent, c_per, a_per, {"critic_loss": c_loss, "actor_loss": a_loss, "q": jnp.mean(q1)}


def learn_step(agent: dict, buf: replay.ReplayState, key: jax.Array, hp: dict, gstep: jax.Array, *,
               batch_size: int, shard: Callable = lambda x: x, sample: Callable = replay.sample, **update_kw):
    """Sample, update, re-prioritise: one gradient step of Algorithm 3 (lines 6–13).

    β = min(1, beta0 + beta_inc · gstep); a stratified batch with ``P(i) ∝ p_i^α`` and
    importance weights ``w_i = (N·P(i))^{−β} / max_j w_j`` (eq. 6, ``replay.sample``);
    ``td3_update`` (``update_kw``: its keyword arguments); then the sampled slots get the new
    priorities ``tanh(δ_i / c + J_i) + 1 + ζ`` (eq. 9, ``replay.pareto_priority``).  ``sample``
    draws the batch (``replay.sample``, or ``replay.sample_split`` with its split bound).

    Returns:
      (agent, buffer, key, metrics).
    """
    key, k_s, k_n = jax.random.split(key, 3)
    beta = jnp.minimum(1.0, hp["beta0"] + hp["beta_inc"] * gstep.astype(jnp.float32))
    b, idx, w, _ = sample(buf, k_s, batch_size, hp["alpha"], beta)
    b = jax.tree.map(shard, b)
    w = shard(w)
    noise = jax.random.normal(k_n, (batch_size,))
    agent, c_per, a_per, m = td3_update(agent, b, w, noise, hp, gstep, **update_kw)
    # eq. (9): p_i <- tanh(δ_i / c + J_i) + 1 + ζ.
    prio = replay.pareto_priority(c_per, a_per, hp["prio_c"], hp["prio_zeta"])
    buf = replay.update_priorities(buf, idx, prio)
    m = {**m, "beta": beta, "priority": jnp.mean(prio), "is_weight": jnp.mean(w)}
    return agent, buf, key, m


def score_episode(act: Callable, env, params, key, disjoint: bool):
    """One deterministic episode (no noise, no expert) of ``env`` under ``params`` with the batched
    actor ``act(obs [F, T, D]) -> [F]``; lower is better.  ``disjoint=False`` (the
    training-distribution links): ((1 − utilization) + p95 queue/buffer + loss)/3 + (1 − Jain), the
    Pareto paper's evaluation quantities (Ankh's number, §V, and Jain's index over the second half
    of the episode).  ``disjoint=True`` (Pareto-Fair v2's validation links): (1 − utilization) +
    ½·p95 queue/buffer + 2·loss + (1 − Jain), weighted toward the bars (utilization and fairness)
    over the queue.  Jain's index is taken over the flows active in the second half, a competitor
    (``jaxcc.envs.base``, ``info["agent"]`` False) among them while it delivers."""
    n_steps = int(env.config.max_steps)
    obs, st = env.reset(key, params)
    buffer = st.link.buffer_bytes

    def body(c, k):
        obs, st = c
        a = act(obs.astype(jnp.float32))
        obs, st, _, _, _, info = env.step(k, st, a, params)
        flowing = info["active"] | (~info["agent"] & (info["delivery_rate"] > 0))
        return (obs, st), (info["delivery_rate"], info["capacity"][0], info["queue"][0], info["send_rate"],
                           info["loss_rate"], flowing)

    _, (dr, cap, q, sr, lr, act_) = jax.lax.scan(body, (obs, st), jax.random.split(key, n_steps))
    util = jnp.minimum(jnp.sum(dr) / jnp.maximum(jnp.sum(cap), 1.0), 1.0)
    q95 = jnp.quantile(q / buffer, 0.95)
    loss = jnp.sum(sr * lr) / jnp.maximum(jnp.sum(sr), 1.0)
    on = jnp.any(act_[n_steps // 2:], axis=0)
    x = jnp.where(on, jnp.sum(dr[n_steps // 2:], axis=0), 0.0)
    jain = jnp.square(jnp.sum(x)) / jnp.maximum(jnp.sum(on) * jnp.sum(x * x), 1e-12)
    if disjoint:
        return (1.0 - util) + 0.5 * q95 + 2.0 * loss + (1.0 - jain)
    return ((1.0 - util) + q95 + loss) / 3.0 + (1.0 - jain)


# ----------------------------------------------------------------------------- make_train


def make_train(config, mesh=None) -> Trainer:
    """Build the staged Pareto trainer from a config (see ``configs/pareto_staged.py``)."""
    t = config.td3
    stage_names = [n.strip() for n in str(config.stage_order).split(",") if n.strip()]
    for n in stage_names:
        if n not in STAGE_LABELS:
            raise ValueError(f"config.stage_order: unknown stage {n!r}; expected some of {sorted(STAGE_LABELS)}")
        if n not in config.stages:
            raise ValueError(f"config.stages.{n} is missing (num_updates, buffer_segment)")
    stage_cfgs = [config.stages[n] for n in stage_names]
    env_over = dict(config.env.overrides) if "overrides" in config.env else {}
    # A stage may override static env fields of its own (``stages.fairness.env_overrides.max_steps``).
    env_params = dict(config.env.params) if "params" in config.env else {}
    senvs = [env_adapter.make_stage_env(n, overrides={**env_over, **dict(s.get("env_overrides", {}))},
                                        params=env_params)
             for n, s in zip(stage_names, stage_cfgs)]
    T, D = senvs[0].history, senvs[0].obs_dim
    for se in senvs:
        if (se.history, se.obs_dim, se.a_range) != (T, D, senvs[0].a_range):
            raise ValueError("every stage must share one observation window shape [T, D] and one action range")
    a_range = senvs[0].a_range
    LO, HI = a_range
    HALF = 0.5 * (HI - LO)
    E = int(config.num_envs)
    B = int(t.batch_size)
    chunk = int(config.chunk_updates)
    stages = []
    for i, s in enumerate(stage_cfgs):
        nu = int(s.num_updates)
        if nu % chunk:
            raise ValueError(f"config.stages.{stage_names[i]}.num_updates={nu} must be a multiple of "
                             f"chunk_updates={chunk}")
        stages.append(Stage(i, stage_names[i], STAGE_LABELS[stage_names[i]], nu, nu // chunk))
    spec = networks.actor_spec(T, D, int(t.hidden), int(t.fc), mi_rtts=senvs[0].mi_rtts,
                               features=senvs[0].feature_info, a_range=a_range)
    segment_sizes = [int(s.buffer_segment) for s in stage_cfgs]
    opt = optimizer(t)
    rollout = int(config.rollout_len)
    grad_steps = int(t.grad_steps)
    delay = int(t.policy_delay)
    use_expert = bool(config.expert.enabled)
    sel = config.get("select", None)
    select_on = sel is not None and bool(sel.enabled)
    if select_on:
        val_links, val_every = int(sel.links_per_stage), int(sel.every_chunks)
        if val_links < 1 or val_every < 1:
            raise ValueError(f"config.select: links_per_stage={val_links} and every_chunks={val_every} must be >= 1")
        val_mode = str(sel.get("validation", "training"))
        if val_mode not in ("training", "disjoint"):
            raise ValueError(f"config.select.validation: {val_mode!r}; expected 'training' or 'disjoint'")
    nan_at = int(config.get("debug_nan_at_update", -1))

    # Lanes and TD3 minibatches are split over the devices (the replay buffer is replicated).
    pipeline.require_multiple(mesh, {"config.num_envs": E, "config.td3.batch_size": B})
    data_sharded = pipeline.data_sharding(mesh)

    actor = functools.partial(networks.actor_apply, spec)
    actor_b = jax.vmap(actor, in_axes=(None, 0))
    critic_b = jax.vmap(functools.partial(networks.critic_apply, a_range=a_range), in_axes=(None, 0, 0))

    # ------------------------------------------------------------------ init
    def init_agent(key):
        ka, k1, k2 = jax.random.split(key, 3)
        a = networks.init_actor(ka, D, int(t.hidden), int(t.fc), a_range)
        c1 = networks.init_critic(k1, D, int(t.critic_hidden), int(t.critic_fc))
        c2 = networks.init_critic(k2, D, int(t.critic_hidden), int(t.critic_fc))
        return {"actor": a, "critic1": c1, "critic2": c2, "actor_t": a, "critic1_t": c1, "critic2_t": c2,
                "opt_actor": opt.init(a), "opt_critic": opt.init((c1, c2))}

    def example_transition():
        z = jnp.zeros((T, D), jnp.float32)
        return {"obs": z, "action": jnp.zeros((), jnp.float32), "reward": jnp.zeros((), jnp.float32),
                "next_obs": z, "done": jnp.zeros((), jnp.float32)}

    def init_env(stage_idx: int, key):
        reset, _ = env_adapter.stage_fns(senvs[stage_idx])
        keys = jax.random.split(key, E)
        obs, st = jax.vmap(reset)(keys)
        f = senvs[stage_idx].num_flows
        return {"state": st, "obs": obs, "prev_reward": jnp.zeros((E, f), jnp.float32),
                "has_prev": jnp.zeros((E, f), bool), "expert": jnp.zeros((E, f), jnp.float32),
                "ep_return": jnp.zeros((E, f), jnp.float32)}

    def _select_reset(actor):
        """``state["select"]``: the stage's best validated actor so far (snapshot selection, below)."""
        return {"actor": actor, "score": jnp.asarray(jnp.inf, jnp.float32), "update": jnp.asarray(-1, jnp.int32)}

    def init(key):
        key = jnp.asarray(key)
        k_agent, k_env, k_run = jax.random.split(key, 3)
        agent = init_agent(k_agent)
        state = {
            "agent": agent,
            "buffer": replay.init(example_transition(), segment_sizes),
            "env": init_env(0, k_env),
            "key": k_run,
            "hp": _hp(config),
            "seed": jnp.asarray(int(config.seed), jnp.int32),  # the validation links' keys (a leaf: sweepable)
            "select": _select_reset(agent["actor"]),
            "counters": {"update": jnp.zeros((), jnp.int32), "grad_step": jnp.zeros((), jnp.int32),
                         "env_steps": jnp.zeros((), jnp.int32), "stage": jnp.zeros((), jnp.int32),
                         "stage_update": jnp.zeros((), jnp.int32)},
        }
        return _strong(state)

    def enter_stage(state, stage_idx: int):
        key, k_env = jax.random.split(state["key"])
        c = dict(state["counters"])
        c["stage"] = jnp.asarray(stage_idx, jnp.int32)
        c["stage_update"] = jnp.zeros((), jnp.int32)
        return _strong({**state, "env": init_env(stage_idx, k_env), "key": key, "counters": c,
                        "select": _select_reset(state["agent"]["actor"])})

    # ------------------------------------------------------------------ collect (play, store)
    def make_collect(stage_idx: int):
        _, step = env_adapter.stage_fns(senvs[stage_idx])
        f = senvs[stage_idx].num_flows

        def env_step(carry, _):
            agent, buf, env, key, hp = carry
            key, k_noise, k_step = jax.random.split(key, 3)
            obs = data_sharded(env["obs"])
            a_pi = actor_b(agent["actor"], obs.reshape(E * f, T, D)).reshape(E, f)
            noise = jax.random.normal(k_noise, (E, f)) * hp["expl_noise"] * HALF
            a = jnp.clip(a_pi + noise, LO, HI)
            use_exp = env["has_prev"] & (env["prev_reward"] < hp["expert_threshold"]) & use_expert
            a = jnp.where(use_exp, env["expert"], a)
            keys = jax.random.split(k_step, E)
            nobs, nst, r, term, trunc, valid, final, expert, r_alg1, a_held = jax.vmap(step)(keys, env["state"], a)
            done = term | trunc
            # The action in force over the transition's MI (a flow on its own clock holds the one
            # taken when its MI opened; with one clock it is ``a``).
            tr = {"obs": obs, "action": a_held, "reward": r * hp["reward_scale"], "next_obs": final,
                  "done": term.astype(jnp.float32)}
            tr = jax.tree.map(lambda x: x.reshape((E * f,) + x.shape[2:]), tr)
            buf = replay.add(buf, tr, valid.reshape(-1), stage_idx, new_priority_max=bool(config.replay.new_priority_max))
            ep_ret = env["ep_return"] + jnp.where(valid, r, 0.0)
            fin = done & valid
            m = {"reward": jnp.sum(jnp.where(valid, r, 0.0)), "valid": jnp.sum(valid),
                 "expert": jnp.sum(use_exp & valid), "ep_return_sum": jnp.sum(jnp.where(fin, ep_ret, 0.0)),
                 "ep_count": jnp.sum(fin)}
            env = {"state": nst, "obs": nobs, "prev_reward": r_alg1, "has_prev": valid & ~done,
                   "expert": expert, "ep_return": jnp.where(done, 0.0, ep_ret)}
            return (agent, buf, env, key, hp), m

        return env_step

    # ------------------------------------------------------------------ learn (Algorithm 3, lines 6–13)
    learn_kw = dict(batch_size=B, shard=data_sharded, actor_b=actor_b, critic_b=critic_b, opt=opt,
                    policy_delay=delay, a_range=a_range, nan_step=nan_at * grad_steps if nan_at >= 0 else None)

    def td3_step(carry, _):
        agent, buf, key, hp, gstep = carry
        agent, buf, key, m = learn_step(agent, buf, key, hp, gstep, **learn_kw)
        return (agent, buf, key, hp, gstep + 1), m

    # ------------------------------------------------------------------ snapshot selection (see module docstring)
    def episode_score(actor_params, env, params, key, disjoint: bool):
        return score_episode(lambda obs: actor_b(actor_params, obs), env, params, key, disjoint)

    if select_on and val_mode == "disjoint":
        v_env, v_params = env_adapter.make_validation_env(overrides=env_over, params=env_params,
                                                          max_steps=int(sel.get("max_steps", 60)))
        # Links with a CUBIC neighbour (``jaxcc.envs.pareto.COEXIST_VALIDATION_LINKS``), scored alike.
        x_env = x_params = None
        if bool(sel.get("coexist_links", False)):
            x_env, x_params = env_adapter.make_validation_env(overrides=env_over, params=env_params,
                                                              max_steps=int(sel.get("max_steps", 60)), coexist=True)

    def validate(actor_params, stage_idx: int, seed):
        """Mean score over fixed validation links (keys from the seed only): ``select.validation
        = "training"``, ``links_per_stage`` draws of each training stage 0..stage_idx; "disjoint",
        every link of ``jaxcc.envs.pareto.VALIDATION_LINKS`` (``links_per_stage`` draws of each
        link's realism), the same links for every stage."""
        if val_mode == "disjoint":
            keys = jax.random.split(jax.random.PRNGKey(seed + 7919), val_links)

            def per_link(env, params):
                return jax.vmap(lambda pp: jnp.mean(jax.vmap(
                    lambda k: episode_score(actor_params, env, pp, k, True))(keys)))(params)

            scores = per_link(v_env, v_params)
            if x_env is not None:  # every link weighs the same
                scores = jnp.concatenate([scores, per_link(x_env, x_params)])
            return jnp.mean(scores)
        scores = []
        for j in range(stage_idx + 1):
            keys = jax.random.split(jax.random.PRNGKey(seed + 7919 * (j + 1)), val_links)
            se = senvs[j]
            scores.append(jnp.mean(jax.vmap(lambda k: episode_score(actor_params, se.env, se.params, k, False))(keys)))
        return jnp.mean(jnp.stack(scores))

    def select_step(state, stage_idx: int):
        """Every ``every_chunks`` chunks: validate the actor and keep it if it beats the stage's best."""
        k = state["counters"]["update"] // chunk
        actor = state["agent"]["actor"]
        score = jax.lax.cond(jnp.mod(k, val_every) == 0, lambda a: validate(a, stage_idx, state["seed"]),
                             lambda a: jnp.asarray(jnp.inf, jnp.float32), actor)
        best = state["select"]
        better = score < best["score"]
        new = {"actor": jax.tree.map(lambda x, y: jnp.where(better, x, y), actor, best["actor"]),
               "score": jnp.where(better, score, best["score"]),
               "update": jnp.where(better, state["counters"]["update"], best["update"])}
        return {**state, "select": new}, score

    def finish_stage(state):
        """At a stage's end its policy becomes the selected snapshot (actor and target actor)."""
        if not select_on:
            return state
        best = state["select"]["actor"]
        return _strong({**state, "agent": {**state["agent"], "actor": best, "actor_t": best}})

    # ------------------------------------------------------------------ one update, one chunk
    def make_update(stage_idx: int):
        collect = make_collect(stage_idx)

        def update(state, _):
            agent, buf, env, key, hp = state["agent"], state["buffer"], state["env"], state["key"], state["hp"]
            (agent, buf, env, key, hp), cm = jax.lax.scan(collect, (agent, buf, env, key, hp), None, length=rollout)
            c = state["counters"]
            (agent, buf, key, hp, gstep), lm = jax.lax.scan(td3_step, (agent, buf, key, hp, c["grad_step"]), None,
                                                            length=grad_steps)
            valid = jnp.maximum(jnp.sum(cm["valid"]), 1)
            metrics = {
                "reward": jnp.sum(cm["reward"]) / valid,
                "expert_share": jnp.sum(cm["expert"]) / valid,
                "ep_return_sum": jnp.sum(cm["ep_return_sum"]), "ep_count": jnp.sum(cm["ep_count"]),
                "critic_loss": jnp.mean(lm["critic_loss"]), "actor_loss": jnp.mean(lm["actor_loss"]),
                "q": jnp.mean(lm["q"]), "beta": lm["beta"][-1], "priority": jnp.mean(lm["priority"]),
                "buffer_size": replay.size(buf),
                "params_finite": all_finite((agent["actor"], agent["critic1"], agent["critic2"])),
            }
            counters = {"update": c["update"] + 1, "grad_step": gstep,
                        "env_steps": c["env_steps"] + rollout * E, "stage": c["stage"],
                        "stage_update": c["stage_update"] + 1}
            new = {**state, "agent": agent, "buffer": buf, "env": env, "key": key, "hp": hp, "counters": counters}
            return new, metrics

        return update

    updates = [make_update(i) for i in range(len(stages))]

    def run_chunk(state, stage_idx: int):
        state, metrics = jax.lax.scan(updates[stage_idx], state, None, length=chunk)
        if select_on:
            state, score = select_step(state, stage_idx)
            # NaN when this chunk did not validate / nothing is validated yet in this stage: the
            # training loop leaves such values out of metrics.jsonl and wandb (train.OPTIONAL_METRICS).
            metrics["val_score"] = jnp.full((chunk,), jnp.where(jnp.isfinite(score), score, jnp.nan))
            best = state["select"]["score"]
            metrics["val_best"] = jnp.full((chunk,), jnp.where(jnp.isfinite(best), best, jnp.nan))
        return state, metrics

    def template(stage_idx: int):
        def build(key):
            s = init(key)
            return enter_stage(s, stage_idx) if stage_idx else s
        return jax.eval_shape(build, jax.random.PRNGKey(0))

    return Trainer(config=config, stages=stages, chunk_updates=chunk, actor_spec=spec, init=init,
                   enter_stage=enter_stage, run_chunk=run_chunk, template=template,
                   finish_stage=finish_stage)

