"""Aurora: PPO on the fluid network model (Jay et al., ICML 2019), in the PureJaxRL shape.

Read top to bottom: networks → GAE → clipped objective → ``make_train`` (collect with
``lax.scan`` over thousands of vmapped links, then epochs × minibatches of Adam).  Training,
export, evaluation and the benchmark are the shared commands::

    python -m jaxcc.train --config=aurora              # train (checkpoints, resume, export)
    python -m jaxcc.bench --train=aurora --sizes=64,1024  # env steps/s of the whole loop
    python -m jaxcc.evaluate --suite=aurora-bw,aurora-loss \
        --controller=cubic,policy:checkpoints/aurora/aurora.safetensors --out=runs/aurora  # §4.1 sweeps

From the paper (Aurora, ICML 2019: §2.2, §3.1, §3.3, §5, Table 1) and its code (PCC-RL
``stable_solve.py``: stable-baselines PPO1 with its defaults):

* policy and value: separate MLPs 32 → 16 with tanh (§3.1; ``net_arch=[{"pi": [32, 16],
  "vf": [32, 16]}]``); a Gaussian policy with a state-independent log-std (PPO1's
  ``DiagGaussianPdType``, initial log-std 0);
* input: k = 10 monitor intervals of (latency gradient, latency ratio, sending ratio) from the
  ``aurora`` environment (``jaxcc.envs``), which also applies x(1+αa) / x/(1−αa) with
  α = 0.025, the reward 10·thr − 1000·lat − 2000·loss (thr in packets/s, lat in s) and the
  Table 1 training links (MI = ½ RTT, initial rate 0.3–1.5 × bandwidth, 400-MI episodes);
* γ = 0.99 (§3.3, Fig. 5); PPO1 defaults: λ = 0.95, clip ε = 0.2, entropy 0.01, 4 epochs,
  Adam 1e-3 (ε 1e-5), constant schedule, value loss unclipped with weight 1, no gradient
  clipping; 8192 MIs per batch in 2048-MI minibatches (``timesteps_per_actorbatch=8192,
  optim_batchsize=2048``);
* rewards are scaled by 1e-3 before PPO (PCC-RL's ``REWARD_SCALE``).

Decided here: 1024 links × 64 MIs per batch (65,536 MIs; same 2048-MI minibatches, so 128
Adam steps per batch), 600 batches (the reward plateaus after ~250); the sampled action is
clipped to ``±action_clip`` (10: at most ×1.25 per MI) before the rate rule, and the exported
``gaussian_mean`` head clips the mean to the same range; advantages are normalised per
minibatch (PPO1 normalises per batch); a time-limit truncation bootstraps from ``V(final_obs)``
(the env keeps it in ``info``).  Not in the paper: ``config.env.params`` replaces fields of the
training distribution — ``configs/aurora.py`` starts 70 % of the episodes far below the
bandwidth, and says why.

The actor's forward pass *is* the policy file's (``jaxcc.policyfile.forward`` over the spec
``flatten → fc1 tanh → fc2 tanh → mean``), so an exported file reproduces training's actions.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable

import chex
import distrax
import jax
import jax.numpy as jnp
import optax

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.params import all_finite

ALGORITHM = "aurora"
ALPHA = 0.025  # §3.1 "we use α = 0.025"
LABEL = "Aurora"
LOG_2PI = math.log(2.0 * math.pi)
# The hyperparameters that are leaves of ``state["hp"]`` (float32; read by the update, never baked
# into the compiled program), so ``jaxcc.training.sweep`` can vmap runs that differ in them: config key ->
# path in the training state.  Everything else in ``config.ppo`` sets a shape or the program's
# structure (num_steps, num_minibatches, update_epochs, hidden, max_grad_norm, clip_value,
# action_clip: also the exported head) and is not sweepable.
HP_KEYS = ("lr", "clip_eps", "ent_coef", "vf_coef", "gamma", "gae_lambda", "reward_scale")
SWEEPABLE = {f"ppo.{k}": ("hp", k) for k in HP_KEYS}


# ----------------------------------------------------------------------------- networks


def actor_spec(history: int, obs_dim: int, hidden=(32, 16), *, action_clip: float = 10.0,
               features: dict | None = None, mi_rtts: float = 0.5) -> dict:
    """The actor (the Gaussian's mean) as a policy-file spec."""
    feats = {"name": "aurora_v1"}
    feats.update(features or {})
    feats["history"], feats["obs_dim"] = int(history), int(obs_dim)
    layers, n_in = [{"type": "flatten"}], history * obs_dim
    for i, n in enumerate(hidden):
        layers.append({"type": "dense", "name": f"fc{i + 1}", "in": int(n_in), "out": int(n), "activation": "tanh"})
        n_in = n
    layers.append({"type": "dense", "name": "mean", "in": int(n_in), "out": 1, "activation": "linear"})
    return {
        "format": policyfile.FORMAT, "version": policyfile.VERSION, "algorithm": ALGORITHM,
        "features": feats, "mi_rtts": float(mi_rtts), "goal_dim": 0, "layers": layers,
        "head": {"type": "gaussian_mean", "low": -float(action_clip), "high": float(action_clip)},
        "action": {"type": "aurora", "alpha": ALPHA, "min_mbps": policyfile.DEFAULT_MIN_MBPS,
                   "max_mbps": policyfile.DEFAULT_MAX_MBPS},
    }


def _dense(key, n_in, n_out, scale):
    return {"kernel": jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out), jnp.float32),
            "bias": jnp.zeros((n_out,), jnp.float32)}


def init_agent_params(key, in_dim: int, hidden=(32, 16), log_std_init: float = 0.0) -> dict:
    """PureJaxRL's initialisation: orthogonal √2 hidden layers, 0.01 policy head, 1.0 value head."""
    ks = jax.random.split(key, 2 * len(hidden) + 2)
    actor, critic, n = {}, {}, in_dim
    for i, h in enumerate(hidden):
        actor[f"fc{i + 1}"] = _dense(ks[2 * i], n, h, math.sqrt(2))
        critic[f"fc{i + 1}"] = _dense(ks[2 * i + 1], n, h, math.sqrt(2))
        n = h
    actor["mean"] = _dense(ks[-2], n, 1, 0.01)
    critic["out"] = _dense(ks[-1], n, 1, 1.0)
    return {"actor": actor, "critic": critic, "log_std": jnp.full((1,), log_std_init, jnp.float32)}


def actor_mean(spec: dict, actor: dict, window: jax.Array) -> jax.Array:
    """μ(s) for one window [T, D]: the policy file's forward pass (before the head's clip)."""
    return policyfile.forward(spec, pipeline.flat(actor), window)[0]


def critic_value(critic: dict, window: jax.Array) -> jax.Array:
    """V(s) for one window [T, D]: MLP 32 → 16 tanh → 1."""
    h = window.reshape(-1)
    names = sorted((k for k in critic if k.startswith("fc")), key=lambda k: int(k[2:]))
    for k in names:
        h = jnp.tanh(h @ critic[k]["kernel"] + critic[k]["bias"])
    return (h @ critic["out"]["kernel"] + critic["out"]["bias"])[0]


def gaussian(mean, log_std) -> distrax.Normal:
    """The policy π(·|s) = N(μ(s), σ²) with the state-independent σ = exp(log_std) (PPO1's
    ``DiagGaussianPdType``; one scalar action)."""
    return distrax.Normal(loc=mean, scale=jnp.exp(log_std))


# log π and the entropy are written in log σ on purpose: distrax's ``Normal.log_prob`` and
# ``entropy`` take log(exp(log σ)), which differs from log σ in the last bit.  That changed a
# seeded run (aurora_smoke: policy tensors off by up to 1e-5 after 16 updates, and growing), so
# the sampling goes through distrax (bit-identical) and these two stay in closed form.


def gaussian_log_prob(a, mean, log_std):
    """log N(a; μ, σ²) for a scalar action (equals ``gaussian(mean, log_std).log_prob(a)``)."""
    return -0.5 * jnp.square((a - mean) / jnp.exp(log_std)) - log_std - 0.5 * LOG_2PI


def gaussian_entropy(log_std):
    """H[N(μ, σ²)] = ½ log(2πe) + log σ (equals ``gaussian(μ, log_std).entropy()``)."""
    return log_std + 0.5 * (1.0 + LOG_2PI)


# ----------------------------------------------------------------------------- losses


def compute_gae(rewards, values, dones, last_value, gamma: float, lam: float, bootstrap=None):
    """Generalised advantage estimation (Schulman et al. 2016, eq. 16) over a [T, ...] rollout.

    δ_t = r_t + γ V(s_{t+1}) (1 − d_t) − V(s_t);  A_t = δ_t + γλ (1 − d_t) A_{t+1}, with
    ``d_t = 1`` when the episode ended after step t (``V(s_{t+1})`` then belongs to the next
    episode).  ``bootstrap`` ([T, ...], optional) is V(final obs) at truncated steps (0 elsewhere);
    γ·bootstrap is added to their δ.

    Returns:
      (advantages, returns = advantages + values), both [T, ...].
    """
    if bootstrap is None:
        bootstrap = jnp.zeros_like(rewards)

    def body(carry, xs):
        gae, next_value = carry
        r, v, d, b = xs
        delta = r + gamma * (next_value * (1.0 - d) + b) - v
        gae = delta + gamma * lam * (1.0 - d) * gae
        return (gae, v), gae

    _, adv = jax.lax.scan(body, (jnp.zeros_like(last_value), last_value), (rewards, values, dones, bootstrap),
                          reverse=True)
    return adv, adv + values


def clipped_surrogate(log_prob, old_log_prob, advantages, clip_eps: float):
    """PPO's clipped objective (Schulman et al. 2017, eq. 7) as a loss to minimise:
    −E[min(ρA, clip(ρ, 1−ε, 1+ε)A)], ρ = π(a|s)/π_old(a|s)."""
    ratio = jnp.exp(log_prob - old_log_prob)
    return -jnp.mean(jnp.minimum(ratio * advantages, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages))


def value_loss(value, old_value, returns, clip_eps: float, clip: bool):
    """½E[(V − R)²] (PPO1); with ``clip``, PPO2's pessimistic clipped variant."""
    if not clip:
        return 0.5 * jnp.mean(jnp.square(value - returns))
    v_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
    return 0.5 * jnp.mean(jnp.maximum(jnp.square(value - returns), jnp.square(v_clipped - returns)))


# ----------------------------------------------------------------------------- environment


def make_env(config):
    """``jaxcc.envs.make_env(config.env.name, **config.env.overrides)`` → (env, params), with
    the training distribution's fields named in ``config.env.params`` replaced (e.g.
    ``init_far_frac``; an unknown name is an error)."""
    from jaxcc import envs
    from jaxcc.envs import base as env_base

    env, params = envs.make_env(str(config.env.name), **dict(config.env.get("overrides", {}) or {}))
    if env.config.flow_clock and env.config.num_flows > 1:
        raise ValueError(f"config.env.overrides.flow_clock=True with num_flows={env.config.num_flows}: expected "
                         f"num_flows=1 (Aurora's PPO learns from every step of every flow, not from each flow's "
                         f"own MIs; the Pareto, MOCC and DeepCC trainers mask by info['active'])")
    return env, env_base.replace_params(params, config.env.get("params", {}))


def features_spec(config) -> dict:
    from jaxcc import envs

    return dict(envs.export_features_spec(str(config.env.name), **dict(config.env.get("overrides", {}) or {})))


# ----------------------------------------------------------------------------- training


Stage = pipeline.Stage


@dataclasses.dataclass
class Trainer(pipeline.Trainer):
    """Pure pieces of a run, driven by ``jaxcc.train`` (one stage)."""

    update: Callable  # state -> (state, metrics): one PPO iteration
    evaluate: Callable  # (agent params, key, num_envs, num_steps, deterministic) -> mean reward per MI
    env: Any = None
    env_params: Any = None


_strong = pipeline.strong


def make_train(config, mesh=None) -> Trainer:
    """Build the PPO trainer (see ``configs/aurora.py``).

    ``mesh``: the environment lanes (collect) and every PPO minibatch are split over its devices
    (``pipeline.data_sharding``), so each device steps its own links and computes its share of
    every minibatch's gradient (XLA all-reduces the sum); ``None`` or one device: no constraint.

    State (a dict, everything an exact resume needs): ``agent`` {actor, critic, log_std, opt},
    ``env`` {state, obs, ep_return} with a leading [num_envs] axis, ``key``, ``hp`` (``HP_KEYS``:
    float leaves, so runs that differ only in them share one program), ``counters``.
    """
    p = config.ppo
    env, env_params = make_env(config)
    obs_shape = jax.eval_shape(lambda k: env.reset(k, env_params), jax.random.PRNGKey(0))[0].shape
    n_agents, T, D = int(obs_shape[0]), int(obs_shape[-2]), int(obs_shape[-1])
    E, S = int(config.num_envs), int(p.num_steps)
    hidden = tuple(int(h) for h in p.hidden)
    clip_a = float(p.action_clip)
    n_mb, epochs = int(p.num_minibatches), int(p.update_epochs)
    batch = E * S * n_agents
    if batch % n_mb:
        raise ValueError(f"num_envs·num_steps·agents = {batch} must be a multiple of ppo.num_minibatches={n_mb}")
    chunk = int(config.chunk_updates)
    num_updates = int(config.num_updates)
    if num_updates % chunk:
        raise ValueError(f"config.num_updates={num_updates} must be a multiple of chunk_updates={chunk}")
    pipeline.require_multiple(mesh, {"config.num_envs": E,
                                     "the minibatch num_envs·ppo.num_steps·flows/config.ppo.num_minibatches": batch // n_mb})
    shard = pipeline.data_sharding(mesh)
    feats = features_spec(config)
    spec = actor_spec(T, D, hidden, action_clip=clip_a, features=feats, mi_rtts=float(feats.get("mi_rtts", 0.5)))
    # Adam's direction; the step ``p ← p − lr·u`` uses ``state["hp"]["lr"]`` (optax.adam's own
    # ``scale_by_learning_rate``, with the rate a state leaf instead of a constant).
    adam = optax.scale_by_adam(eps=float(p.adam_eps))
    tx = optax.chain(optax.clip_by_global_norm(float(p.max_grad_norm)), adam) if p.max_grad_norm > 0 else adam

    mean_b = jax.vmap(functools.partial(actor_mean, spec), in_axes=(None, 0))
    value_b = jax.vmap(critic_value, in_axes=(None, 0))

    def policy(params, obs):
        """(μ, log σ, V) for observations [..., T, D]."""
        lead = obs.shape[:-2]
        x = obs.reshape((-1, T, D))
        mu = mean_b(params["actor"], x).reshape(lead)
        v = value_b(params["critic"], x).reshape(lead)
        return mu, params["log_std"][0], v

    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    # ------------------------------------------------------------------ init
    def init(key):
        key = jnp.asarray(key)
        k_agent, k_env, k_run = jax.random.split(key, 3)
        params = init_agent_params(k_agent, T * D, hidden, float(p.log_std_init))
        obs, st = v_reset(jax.random.split(k_env, E), env_params)
        return _strong({
            "agent": {**params, "opt": tx.init(params)},
            "env": {"state": st, "obs": obs, "ep_return": jnp.zeros((E, n_agents), jnp.float32)},
            "key": k_run,
            "hp": {k: jnp.asarray(float(p[k]), jnp.float32) for k in HP_KEYS},
            "counters": {"update": jnp.zeros((), jnp.int32), "env_steps": jnp.zeros((), jnp.int32)},
        })

    # ------------------------------------------------------------------ collect
    def collect(params, env_s, key, hp):
        def one(carry, k):
            st, obs, ep_ret = shard(carry)  # [E, ...] lanes split over the devices
            k_a, k_e = jax.random.split(k)
            mu, log_std, v = policy(params, obs)  # [E, A]
            a = gaussian(mu, log_std).sample(seed=k_a)
            logp = gaussian_log_prob(a, mu, log_std)
            obs2, st, r, term, trunc, info = v_step(jax.random.split(k_e, E), st,
                                                    jnp.clip(a, -clip_a, clip_a)[..., None], env_params)
            r = jnp.broadcast_to(r, mu.shape).astype(jnp.float32)
            done = jnp.broadcast_to(term | trunc, mu.shape).astype(jnp.float32)
            # A time limit is not the end of the task: credit γ·V(final obs) at a truncation.
            _, _, v_final = policy(params, info["final_obs"])
            boot = jnp.broadcast_to(trunc, mu.shape).astype(jnp.float32) * jax.lax.stop_gradient(v_final)
            ep_ret = ep_ret + r
            tr = {"obs": obs, "action": a, "log_prob": logp, "value": v, "reward": r * hp["reward_scale"],
                  "done": done, "boot": boot}
            m = {"reward": r, "ep_return_sum": jnp.sum(ep_ret * done), "ep_count": jnp.sum(done)}
            return (st, obs2, ep_ret * (1.0 - done)), (tr, m)

        (st, obs, ep_ret), (traj, m) = jax.lax.scan(one, (env_s["state"], env_s["obs"], env_s["ep_return"]),
                                                    jax.random.split(key, S))
        return {"state": st, "obs": obs, "ep_return": ep_ret}, traj, m

    # ------------------------------------------------------------------ PPO update
    def loss_fn(params, mb, hp):
        mu, log_std, v = policy(params, mb["obs"])
        logp = gaussian_log_prob(mb["action"], mu, log_std)
        adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
        pg = clipped_surrogate(logp, mb["log_prob"], adv, hp["clip_eps"])
        vl = value_loss(v, mb["value"], mb["target"], hp["clip_eps"], bool(p.clip_value))
        ent = gaussian_entropy(log_std)
        total = pg + hp["vf_coef"] * vl - hp["ent_coef"] * ent
        return total, {"pg_loss": pg, "v_loss": vl, "entropy": ent, "approx_kl": jnp.mean(mb["log_prob"] - logp),
                       "clip_frac": jnp.mean(jnp.abs(jnp.exp(logp - mb["log_prob"]) - 1.0) > hp["clip_eps"])}

    def update(state):
        ag, hp = state["agent"], state["hp"]
        params = {k: ag[k] for k in ("actor", "critic", "log_std")}
        key, k_col, k_perm = jax.random.split(state["key"], 3)
        env_s, traj, cm = collect(params, state["env"], k_col, hp)
        _, _, last_v = policy(params, env_s["obs"])
        chex.assert_shape([traj["reward"], traj["value"], traj["done"], traj["boot"], traj["action"]],
                          (S, E, n_agents))
        adv, target = compute_gae(traj["reward"], traj["value"], traj["done"], last_v, hp["gamma"],
                                  hp["gae_lambda"], traj["boot"])
        data = {"obs": traj["obs"], "action": traj["action"], "log_prob": traj["log_prob"], "value": traj["value"],
                "adv": adv, "target": target}
        data = jax.tree.map(lambda x: x.reshape((batch,) + x.shape[3:]), data)  # [S, E, A, ...] → [B, ...]

        def epoch(carry, k):
            params, opt = carry
            perm = jax.random.permutation(k, batch)
            mbs = jax.tree.map(lambda x: x[perm].reshape((n_mb, -1) + x.shape[1:]), data)

            def minibatch(carry, mb):
                params, opt = carry
                mb = shard(mb)  # each device: its share of the minibatch's samples
                (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(params, mb, hp)
                upd, opt = tx.update(g, opt, params)
                upd = jax.tree.map(lambda u: -hp["lr"] * u, upd)
                return (optax.apply_updates(params, upd), opt), {"loss": loss, **aux}

            return jax.lax.scan(minibatch, (params, opt), mbs)

        (params, opt), lm = jax.lax.scan(epoch, (params, ag["opt"]), jax.random.split(k_perm, epochs))
        c = state["counters"]
        metrics = {
            "reward": jnp.mean(cm["reward"]),
            "ep_return_sum": jnp.sum(cm["ep_return_sum"]), "ep_count": jnp.sum(cm["ep_count"]),
            **{k: jnp.mean(v) for k, v in lm.items()},
            "critic_loss": jnp.mean(lm["v_loss"]), "expert_share": jnp.zeros((), jnp.float32),
            "log_std": params["log_std"][0],
            "params_finite": all_finite(params),
        }
        new = {"agent": {**params, "opt": opt}, "env": env_s, "key": key, "hp": hp,
               "counters": {"update": c["update"] + 1, "env_steps": c["env_steps"] + E * S}}
        return new, metrics

    def run_chunk(state, stage_idx: int = 0):
        return jax.lax.scan(lambda s, _: update(s), state, None, length=chunk)

    def template(stage_idx: int = 0):
        return jax.eval_shape(init, jax.random.PRNGKey(0))

    # ------------------------------------------------------------------ evaluation
    def evaluate(params, key, num_envs: int = 64, num_steps: int = 400, deterministic: bool = True):
        """Mean per-MI reward (paper units) of the policy on fresh training-distribution links."""
        k_reset, k_run = jax.random.split(key)
        obs, st = v_reset(jax.random.split(k_reset, num_envs), env_params)

        def one(carry, k):
            st, obs = carry
            k_a, k_e = jax.random.split(k)
            mu, log_std, _ = policy(params, obs)
            a = mu if deterministic else gaussian(mu, log_std).sample(seed=k_a)
            obs, st, r, *_ = v_step(jax.random.split(k_e, num_envs), st, jnp.clip(a, -clip_a, clip_a)[..., None],
                                    env_params)
            return (st, obs), jnp.mean(r)

        _, r = jax.lax.scan(one, (st, obs), jax.random.split(k_run, num_steps))
        return jnp.mean(r)

    stage = Stage(0, "aurora", LABEL, num_updates, num_updates // chunk)
    return Trainer(config=config, stages=[stage], chunk_updates=chunk, actor_spec=spec, init=init,
                   enter_stage=lambda s, i: s, run_chunk=run_chunk, template=template,
                   update=update, evaluate=evaluate, env=env,
                   env_params=env_params)
