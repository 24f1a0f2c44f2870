"""DeepCC: multi-objective DDPG (Hu et al., IEEE/ACM ToN 2022, §IV-A/B, §V "Training").

Read top to bottom: networks (plain parameter dicts, as every agent's) → the policy-file spec
of the actor (exported exactly) → replay → the critic target (eq. 7) and the two losses (eq. 5, 6) → exploration → ``make_train``::

    python -m jaxcc.train --config=deepcc --config.wandb.mode=offline

What the paper fixes and how we read it:

* **Inputs** (§IV-A/B, Table II): the state s (4 values, 16 past decisions), the measurement m
  (eq. 1) and the goal g (eq. 2, on the simplex); the environment ``jaxcc.envs.deepcc`` gives
  the window ``[16, 7]`` = [s, m] per decision and the episode's goal.
* **Actor μ(s, m, g)** (§V "Training", Fig. 4): the 16 past states through a Conv1D (32
  filters, kernel 3, stride 1, ReLU) and flattened; the newest measurement m_t and the goal g
  each through three dense layers (``branch`` units, ReLU); the three merged (concatenated);
  "the goal vector is added to each layer" (§IV-B): g is concatenated to the merged vector and
  again before the output layer; ``tanh`` output z mapped to u = (tanh z + 1)/2 ∈ [0, 1], the
  env's log-scale rate position (``jaxcc.envs.deepcc.action_to_rate``).  Exported as the policy
  file with a branches spec (``actor_spec``: ``branches`` of ``select``/``conv1d``/``flatten``,
  ``last_step``/``select``/``dense``×3, ``goal``/``dense``×3; ``concat_goal`` before each merged
  layer; head ``continuous`` [0, 1]; action ``rate_absolute`` ``scale: log``).
* **Critic Q(s, g, a)** (§V: "takes the state, goal and action as inputs and uses the same
  architecture as the actor network to conduct feature extraction. The extracted features of
  action are also processed by three fully connected layers, which is then fed to the last
  layer"; "the final output of critic network is a linear neuron"): the actor's three
  extractors (the measurement is part of the state window the actor sees, so the critic gets it
  too — decided), the action u through three dense layers, merged with g concatenated, one
  hidden layer with g concatenated again, a linear output.
* **Target networks** μ', Q' with soft updates θ' ← τθ + (1 − τ)θ' after every gradient step
  (§IV-B, τ ≪ 1).
* **Critic loss** (eq. 6, 7): L = mean (y − Q(s, g, a))², y = r + γ · Q'(s', g', μ'(s', g')).
  g' = g (the goal is fixed for an episode).  Episodes end only at the 60-s time limit (a
  truncation, not a terminal), so y always bootstraps from the step's own next window
  (``final_obs``); ``done`` is kept in the replay for an environment with true terminals.
* **Actor update** (eq. 5): ascend mean_batch Q(s, g, μ(s, m, g)) (the deterministic policy
  gradient ∇_a Q · ∇_θ μ by autodiff).
* Batch N = 64 (§V); goals Dirichlet(1, 1, 1) per link and episode, 60-s episodes, a decision
  every ½ min RTT — the environment's.
* **Exploration** (decided; the paper names none): Ornstein–Uhlenbeck noise on u,
  x ← x − θx + σε, per link, reset at each episode start, σ decaying linearly from
  ``noise_sigma`` to ``noise_sigma_end`` over ``noise_decay_frac`` of the run.  Why OU and not
  i.i.d. Gaussian: an action lasts ½ RTT and the queue integrates the rate, so an independent
  deviation for one step barely moves the next measurement, whereas a deviation held for a few
  RTTs (θ = 0.15: correlation time ≈ 7 decisions ≈ 3.5 RTT) fills or drains the queue and
  shows the critic what a different rate level does.  θ = 1 gives i.i.d. Gaussian noise (the
  TD3 choice), a config switch.
* Decided (none given): γ, learning rates, τ, widths, buffer size, gradient steps per
  environment step, warm-up with uniform random u (``learning_starts`` transitions).
* Keeping the actor out of tanh saturation (decided; measured on 3 k-update runs of
  ``configs/deepcc_clean.py``): with DDPG's actor learning rate 1e-4, an untrained critic's ∂Q/∂a sent the
  actor to u = 1 (100 Mbit/s, ~50 % loss) or u = 0 within ~1 k gradient steps, where |z| > 7
  left no gradient and the noise could not bring it back (it stayed at 0.1 Mbit/s).  So: the
  actor starts at u = ``init_u`` (the output bias; 1 Mbit/s, below every training link's mean
  capacity), is updated only after ``actor_starts`` transitions (the critic learns alone
  first), with learning rate 3e-5, and its loss adds ``actor_z_penalty``·mean(z²).  The penalty
  pulls u toward ½ (3.2 Mbit/s); at 0.1, actors trained with the ACK-clocked window held 11–29
  Mbit/s at a throughput-only goal whatever the link above that, and at 0.01 (``configs/deepcc.py``)
  they fill 50 Mbit/s (``launch/deepcc_ceiling.py``; ``checkpoints/deepcc/README.md``).
* The exported actor is the target actor μ' (``export_target_actor``, decided; measured): the
  online actor at the last update carries its last few hundred gradient steps' wobble, μ' is
  their Polyak average.  On 64 held-out links per sampler (``goal_probe``, 4 goals, mean eq. 3
  reward) μ' beat θ^μ on all 3 seeds of ``configs/deepcc_clean.py`` on both the training sampler's
  links (−0.299/−0.321/−0.399 vs −0.305/−0.339/−0.540) and the env's Wi-Fi-like default
  sampler's (−0.096/−0.092/−0.105 vs −0.101/−0.096/−0.205).
* The reward's throughput term is normalised by the link's mean capacity in training
  (``jaxcc.envs.deepcc`` module docstring: eq. 1's running maximum makes idling optimal).

One update of the run = one vectorized environment step (``num_envs`` links, each its own
episode clock; a finished link is redrawn) and ``updates_per_step`` gradient steps (each: the
critic, then the actor, then the soft target update) once the buffer holds
``learning_starts`` transitions.  Links are reset by one batched ``lax.cond`` only on the steps
where some link finished (``jaxcc.envs.base.MultiFlowEnv.step`` draws a new link for every lane
on every step and selects; drawing 6000 Poisson slots per lane costs ~50× the step itself).

Libraries: optax (Adam, gradient clipping, ``incremental_update``
for the soft target update).  The replay is a plain ring of arrays (``jaxcc.agents.replay``,
shared with MOCC): no jittable buffer is installed (flashbax is not).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.agents.replay import replay_add, replay_init, replay_sample

ALGORITHM = "deepcc"
LABEL = "DeepCC"
S_DIM = 4  # s¹..s⁴ (features 0..3 of the window)
M_DIM = 3  # m¹..m³ (features 4..6)


# ----------------------------------------------------------------------------- networks


# flax.linen's Dense/Conv default (LeCun normal kernels, zero biases): the initialisation these
# networks were first written with, kept for their plain parameter dicts.
_LECUN = jax.nn.initializers.lecun_normal()
EXTRACT_LAYERS = ("s_conv",) + tuple(f"m_fc{i}" for i in (1, 2, 3)) + tuple(f"g_fc{i}" for i in (1, 2, 3))


def _dense_init(key, n_in: int, n_out: int) -> dict:
    return {"kernel": _LECUN(key, (n_in, n_out), jnp.float32), "bias": jnp.zeros((n_out,), jnp.float32)}


def _dense(p: dict, x):
    return x @ p["kernel"] + p["bias"]


def _conv1d(p: dict, x):
    """A VALID 1-D convolution over the window axis of ``x [..., T, C]`` (kernel ``[K, C, F]``)."""
    lead = x.shape[:-2]
    y = jax.lax.conv_general_dilated(x.reshape((-1,) + x.shape[-2:]), p["kernel"], (1,), "VALID",
                                     dimension_numbers=("NWC", "WIO", "NWC"))
    return (y + p["bias"]).reshape(lead + y.shape[-2:])


def extract_init(key, goal_dim: int, conv_filters: int = 32, kernel: int = 3, branch: int = 64) -> dict:
    """The three feature extractors' layers (``EXTRACT_LAYERS``, the policy file's names)."""
    ks = jax.random.split(key, 7)
    return {"s_conv": {"kernel": _LECUN(ks[0], (kernel, S_DIM, conv_filters), jnp.float32),
                       "bias": jnp.zeros((conv_filters,), jnp.float32)},
            "m_fc1": _dense_init(ks[1], M_DIM, branch), "m_fc2": _dense_init(ks[2], branch, branch),
            "m_fc3": _dense_init(ks[3], branch, branch),
            "g_fc1": _dense_init(ks[4], goal_dim, branch), "g_fc2": _dense_init(ks[5], branch, branch),
            "g_fc3": _dense_init(ks[6], branch, branch)}


def extract(p: dict, obs, goal):
    """The three feature extractors of §V: state history → Conv1D, measurement → 3 dense,
    goal → 3 dense; returns (xs, xm, xg).  ``obs [..., T, D]``, ``goal [..., G]``."""
    xs = jax.nn.relu(_conv1d(p["s_conv"], obs[..., :, 0:S_DIM]))
    xs = xs.reshape(xs.shape[:-2] + (-1,))
    xm = obs[..., -1, S_DIM:S_DIM + M_DIM]
    for i in (1, 2, 3):
        xm = jax.nn.relu(_dense(p[f"m_fc{i}"], xm))
    xg = goal
    for i in (1, 2, 3):
        xg = jax.nn.relu(_dense(p[f"g_fc{i}"], xg))
    return xs, xm, xg


def _merged(history: int, conv_filters: int, kernel: int, branch: int) -> int:
    """Width of the extractors' concatenation: the flattened convolution, m's and g's branches."""
    return (history - kernel + 1) * conv_filters + branch + branch


def init_actor(key, history: int, goal_dim: int, conv_filters: int = 32, kernel: int = 3, branch: int = 64,
               hidden: int = 64) -> dict:
    """μ's layers, named as in the policy file (``actor_spec``)."""
    k_e, k_1, k_o = jax.random.split(key, 3)
    m = _merged(history, conv_filters, kernel, branch)
    return {**extract_init(k_e, goal_dim, conv_filters, kernel, branch),
            "fc1": _dense_init(k_1, m + goal_dim, hidden), "out": _dense_init(k_o, hidden + goal_dim, 1)}


def actor_apply(layers: dict, obs, goal):
    """μ(s, m, g) → (u ∈ [0, 1], the pre-tanh output z, the policy file's net output)."""
    xs, xm, xg = extract(layers, obs, goal)
    x = jax.nn.relu(_dense(layers["fc1"], jnp.concatenate([xs, xm, xg, goal], axis=-1)))
    z = _dense(layers["out"], jnp.concatenate([x, goal], axis=-1))[..., 0]
    return 0.5 * (jnp.tanh(z) + 1.0), z


def init_critic(key, history: int, goal_dim: int, conv_filters: int = 32, kernel: int = 3, branch: int = 64,
                hidden: int = 64) -> dict:
    """Q's layers: its own extractors, the action branch ``a_fc1..3``, ``fc1`` and ``q``."""
    ks = jax.random.split(key, 6)
    m = _merged(history, conv_filters, kernel, branch)
    return {**extract_init(ks[0], goal_dim, conv_filters, kernel, branch),
            "a_fc1": _dense_init(ks[1], 1, branch), "a_fc2": _dense_init(ks[2], branch, branch),
            "a_fc3": _dense_init(ks[3], branch, branch),
            "fc1": _dense_init(ks[4], m + branch + goal_dim, hidden), "q": _dense_init(ks[5], hidden + goal_dim, 1)}


def critic_apply(params: dict, obs, goal, action):
    """Q(s, g, a): the actor's extractors (its own weights), the action through three dense
    layers, merged with g, one hidden layer with g again, linear output."""
    xs, xm, xg = extract(params, obs, goal)
    xa = action[..., None]
    for i in (1, 2, 3):
        xa = jax.nn.relu(_dense(params[f"a_fc{i}"], xa))
    x = jax.nn.relu(_dense(params["fc1"], jnp.concatenate([xs, xm, xg, xa, goal], axis=-1)))
    return _dense(params["q"], jnp.concatenate([x, goal], axis=-1))[..., 0]


def actor_spec(history: int, obs_dim: int, goal_dim: int, *, features: dict, mi_rtts: float, conv_filters: int = 32,
               kernel: int = 3, branch: int = 64, hidden: int = 64) -> dict:
    """The actor as a policy file (a branches spec): what ``policyfile.apply`` runs equals
    ``Actor`` (tested)."""
    T, D, G, B, H, C, K = int(history), int(obs_dim), int(goal_dim), int(branch), int(hidden), int(conv_filters), int(kernel)
    if D != S_DIM + M_DIM:
        raise ValueError(f"deepcc actor: obs_dim must be {S_DIM + M_DIM} (s and m), got {D}")
    dense = lambda name, i, o, act: {"type": "dense", "name": name, "in": i, "out": o, "activation": act}  # noqa: E731
    merged = (T - K + 1) * C + B + B
    return {
        "format": policyfile.FORMAT, "version": policyfile.VERSION, "algorithm": ALGORITHM,
        "features": dict(features), "mi_rtts": float(mi_rtts), "goal_dim": G,
        "layers": [
            {"type": "branches", "branches": [
                [{"type": "select", "start": 0, "stop": S_DIM},
                 {"type": "conv1d", "name": "s_conv", "in": S_DIM, "out": C, "kernel": K, "activation": "relu"},
                 {"type": "flatten"}],
                [{"type": "last_step"}, {"type": "select", "start": S_DIM, "stop": S_DIM + M_DIM},
                 dense("m_fc1", M_DIM, B, "relu"), dense("m_fc2", B, B, "relu"), dense("m_fc3", B, B, "relu")],
                [{"type": "goal"}, dense("g_fc1", G, B, "relu"), dense("g_fc2", B, B, "relu"),
                 dense("g_fc3", B, B, "relu")],
            ]},
            {"type": "concat_goal"}, dense("fc1", merged + G, H, "relu"),
            {"type": "concat_goal"}, dense("out", H + G, 1, "linear"),
        ],
        "head": {"type": "continuous", "low": 0.0, "high": 1.0},
        "action": {"type": "rate_absolute", "scale": "log", "low_mbps": float(features["low_mbps"]),
                   "bound_mbps": float(features["bound_mbps"]), "min_mbps": policyfile.DEFAULT_MIN_MBPS,
                   "max_mbps": policyfile.DEFAULT_MAX_MBPS},
    }


# ----------------------------------------------------------------------------- replay


def replay_rows(obs_size: int, goal_dim: int) -> dict:
    """The fields of a replay row (``replay_init``): s, s', the episode's goal g, the
    action, the reward and done."""
    f = jnp.float32
    return {"obs": ((obs_size,), f), "next_obs": ((obs_size,), f), "goal": ((goal_dim,), f), "action": ((), f),
            "reward": ((), f), "done": ((), f)}


# ----------------------------------------------------------------------------- eq. 5–7


def critic_target(reward, done, q_next, gamma: float):
    """Eq. 7: y = r + γ · Q'(s', g', μ'(s', g')) (``q_next``), cut where ``done`` (a terminal)."""
    return reward + gamma * (1.0 - done) * q_next


def bootstrap_target(actor_apply, critic_apply, actor_t, critic_t, next_obs, goal, reward, done, gamma: float):
    """Eq. 7 on a batch: y = r + γ(1 − done) · Q'(s', g, μ'(s', g)) with the target networks
    (``actor_t`` θ^μ', ``critic_t`` θ^Q'); the goal of s' is the episode's, g."""
    u_next, _ = actor_apply(actor_t, next_obs, goal)
    return critic_target(reward, done, critic_apply(critic_t, next_obs, goal, u_next), gamma)


def critic_loss(q, y):
    """Eq. 6: L = (1/N) Σ (y − Q(s, g, a))²; y is a constant (stop_gradient)."""
    return jnp.mean(jnp.square(jax.lax.stop_gradient(y) - q))


def ou_step(x, key, theta, sigma):
    """Ornstein–Uhlenbeck noise, one step (unit time): x − θx + σ·N(0, 1); θ = 1: i.i.d. N(0, σ²)."""
    return x - theta * x + sigma * jax.random.normal(key, x.shape)


def linear(frac, start, end):
    return start + (end - start) * jnp.clip(frac, 0.0, 1.0)


# ----------------------------------------------------------------------------- environment


def make_env(config):
    """``jaxcc.envs.make_env(config.env.name, **config.env.overrides)`` → (env, params) with the
    fields named in ``config.env.params`` replaced (an unknown name is an error) and the env's
    static ring length and step cap sized for that distribution (``deepcc.required_shape``)
    unless the overrides fix them."""
    from jaxcc import envs
    from jaxcc.envs import base as env_base
    from jaxcc.envs import deepcc

    over = dict(config.env.get("overrides", {}) or {})
    env, params = envs.make_env(str(config.env.name), **over)
    params = env_base.replace_params(params, config.env.get("params", {}))
    need = {k: v for k, v in deepcc.required_shape(params, env.config.ticks_per_rtt).items() if k not in over}
    if any(getattr(env.config, k) != v for k, v in need.items()):
        env, _ = envs.make_env(str(config.env.name), **{**over, **need})
    return env, params


def features_block(config, params) -> dict:
    """The policy file's ``features`` block: the env's export spec with this run's bound and low."""
    from jaxcc import envs

    feats = dict(envs.export_features_spec(str(config.env.name), **dict(config.env.get("overrides", {}) or {})))
    f32 = lambda x: float(f"{float(np.asarray(x)):.7g}")  # noqa: E731  (float32 params: 0.1, not 0.10000000149)
    for k in ("bound_mbps", "low_mbps", "init_action", "loss_threshold", "ewma_gain"):
        feats[k] = f32(getattr(params, k))
    if float(np.asarray(params.cwnd_rtts)) > 0:  # the ACK-clocked window (files without it pace at the rate alone)
        feats["cwnd_rtts"] = f32(params.cwnd_rtts)
    return feats


def batched_env_fns(env, ep, E: int):
    """``reset(keys)`` and ``step(key, state, action)`` over ``E`` links with ``env.step``'s
    auto-reset semantics (a finished link's next observation and state are a fresh episode's,
    drawn with its own reset key; ``info["final_obs"]`` the finished episode's last window), but
    the fresh episodes are drawn only on steps where some link finished (one ``lax.cond``)."""
    v_reset = jax.vmap(env.reset_env, in_axes=(0, None))
    v_step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))

    def reset(keys):
        return v_reset(keys, ep)

    def step(key, state, action):
        keys = jax.vmap(jax.random.split)(jax.random.split(key, E))  # [E, 2]: (step, reset) as env.step
        obs_st, st_st, r, te, tr, info = v_step(keys[:, 0], state, action, ep)
        te = jnp.broadcast_to(te.reshape((E, -1)), r.shape[:2])  # step_env gives one flag per link
        tr = jnp.broadcast_to(tr.reshape((E, -1)), r.shape[:2])
        done = (te | tr)[:, 0]

        def redraw(_):
            obs_re, st_re = v_reset(keys[:, 1], ep)
            sel = lambda a, b: jnp.where(done.reshape((E,) + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
            return sel(obs_re, obs_st), jax.tree.map(sel, st_re, st_st)

        obs, st = jax.lax.cond(jnp.any(done), redraw, lambda _: (obs_st, st_st), None)
        info = dict(info)
        info["final_obs"] = obs_st
        return obs, st, r, te, tr, info

    return reset, step


# ----------------------------------------------------------------------------- training


@dataclasses.dataclass
class Trainer(pipeline.Trainer):
    update: Callable  # state -> (state, metrics): one env step + the gradient steps
    actor_apply: Callable = None  # (actor layers, obs [..., T, D], goal [..., G]) -> (u, z)
    critic_apply: Callable = None  # (critic params, obs, goal, u) -> Q
    env: Any = None
    env_params: Any = None


def make_train(config, mesh=None) -> Trainer:
    """Build the multi-objective DDPG trainer (``configs/deepcc.py``).  One stage.

    State: ``agent`` {actor (θ^μ, policy-file layer names), critic (θ^Q), actor_target (θ^μ'),
    critic_target (θ^Q'), actor_opt, critic_opt}, ``buffer`` (replay), ``env`` {state, obs,
    noise, ret}, ``key``, ``counters``.  ``mesh``: the lanes and every replay minibatch are split
    over its devices (``pipeline.data_sharding``; the buffer is replicated, XLA all-reduces the
    gradients); ``None`` or one device: no constraint.
    """
    c = config.ddpg
    env, ep = make_env(config)
    E = int(config.num_envs)
    A, T, D = env.obs_shape()
    G = int(env.config.goal_dim)
    if A != 1:
        raise ValueError(f"deepcc_ddpg: one flow per link (config.env.overrides.num_flows), got {A}")
    if G != 3:
        raise ValueError(f"deepcc_ddpg: env {config.env.name!r} must give a 3-value goal (goal_dim {G})")
    feats = features_block(config, ep)
    arch = dict(conv_filters=int(c.conv_filters), kernel=int(c.kernel), branch=int(c.branch), hidden=int(c.hidden))
    spec = actor_spec(T, D, G, features=feats, mi_rtts=float(env.config.mi_rtts), **arch)

    clip = optax.clip_by_global_norm(float(c.max_grad_norm))
    tx_a = optax.chain(clip, optax.adam(float(c.actor_lr)))
    tx_c = optax.chain(clip, optax.adam(float(c.critic_lr)))
    chunk = int(config.chunk_updates)
    num_updates = int(config.num_updates)
    if num_updates % chunk:
        raise ValueError(f"config.num_updates={num_updates} must be a multiple of chunk_updates={chunk}")
    N, gamma, tau = int(c.batch_size), float(c.gamma), float(c.tau)
    K = int(c.updates_per_step)
    # Lanes and replay minibatches are split over the devices (the replay buffer is replicated).
    pipeline.require_multiple(mesh, {"config.num_envs": E, "config.ddpg.batch_size": N})
    shard = pipeline.data_sharding(mesh)
    zpen = float(c.actor_z_penalty)
    b_reset, b_step = batched_env_fns(env, ep, E)

    def init(key):
        key = jnp.asarray(key)
        k_a, k_c, k_e, k_r = jax.random.split(key, 4)
        actor = init_actor(k_a, T, G, **arch)
        # the output bias starts the actor at u = init_u (below every training link's capacity)
        actor["out"]["bias"] = jnp.full_like(actor["out"]["bias"], jnp.arctanh(2.0 * float(c.init_u) - 1.0))
        critic = init_critic(k_c, T, G, **arch)
        obs, st = b_reset(jax.random.split(k_e, E))
        return pipeline.strong({
            "agent": {"actor": actor, "critic": critic, "actor_target": actor, "critic_target": critic,
                      "actor_opt": tx_a.init(actor), "critic_opt": tx_c.init(critic)},
            "buffer": replay_init(int(c.buffer_size), replay_rows(T * D, G)),
            "env": {"state": st, "obs": obs, "noise": jnp.zeros((E,), jnp.float32), "ret": jnp.zeros((E,), jnp.float32)},
            "key": k_r,
            "counters": {"update": jnp.zeros((), jnp.int32), "env_steps": jnp.zeros((), jnp.int32),
                         "grad_steps": jnp.zeros((), jnp.int32), "episodes": jnp.zeros((), jnp.int32),
                         "ret_sum": jnp.zeros((), jnp.float32)}})

    def learn(agent, buf, key, actor_on):
        b = shard(replay_sample(buf, key, N))
        obs, nobs = b["obs"].reshape((N, T, D)), b["next_obs"].reshape((N, T, D))
        g = b["goal"]
        y = bootstrap_target(actor_apply, critic_apply, agent["actor_target"], agent["critic_target"], nobs, g,
                             b["reward"], b["done"], gamma)

        def c_loss(cp):
            q = critic_apply(cp, obs, g, b["action"])
            return critic_loss(q, y), q

        (lc, q), gc = jax.value_and_grad(c_loss, has_aux=True)(agent["critic"])
        upd, c_opt = tx_c.update(gc, agent["critic_opt"], agent["critic"])
        critic = optax.apply_updates(agent["critic"], upd)

        def a_loss(ap):  # eq. 5: ascend Q(s, g, μ(s, m, g)); + a small pull of z towards 0 (tanh not saturated)
            u, z = actor_apply(ap, obs, g)
            return -jnp.mean(critic_apply(critic, obs, g, u)) + zpen * jnp.mean(jnp.square(z)), jnp.mean(jnp.abs(z))

        (la, zabs), ga = jax.value_and_grad(a_loss, has_aux=True)(agent["actor"])
        upd, a_opt = tx_a.update(ga, agent["actor_opt"], agent["actor"])
        actor = jax.tree.map(lambda new, old: jnp.where(actor_on, new, old), optax.apply_updates(agent["actor"], upd),
                             agent["actor"])
        a_opt = jax.tree.map(lambda new, old: jnp.where(actor_on, new, old), a_opt, agent["actor_opt"])
        agent = {"actor": actor, "critic": critic, "actor_opt": a_opt, "critic_opt": c_opt,
                 "actor_target": optax.incremental_update(actor, agent["actor_target"], tau),
                 "critic_target": optax.incremental_update(critic, agent["critic_target"], tau)}
        return agent, {"critic_loss": lc, "actor_loss": la, "q": jnp.mean(q), "y": jnp.mean(y), "z_abs": zabs}

    zero_learn = {k: jnp.zeros((), jnp.float32) for k in ("critic_loss", "actor_loss", "q", "y", "z_abs")}

    def update(state):
        key, k_noise, k_warm, k_env, k_learn = jax.random.split(state["key"], 5)
        agent, buf, envs_ = state["agent"], state["buffer"], state["env"]
        cn = state["counters"]
        frac = cn["update"].astype(jnp.float32) / num_updates
        st, obs = shard((envs_["state"], envs_["obs"]))
        goal = st.goal[:, 0]  # [E, G]
        mu, _ = actor_apply(agent["actor"], obs[:, 0], goal)  # [E]
        sigma = linear(frac / float(c.noise_decay_frac), float(c.noise_sigma), float(c.noise_sigma_end))
        noise = ou_step(envs_["noise"], k_noise, float(c.noise_theta), sigma)
        warm = buf["size"] < int(c.learning_starts)
        u = jnp.where(warm, jax.random.uniform(k_warm, (E,)), jnp.clip(mu + noise, 0.0, 1.0))
        obs2, st2, r, te, tr, info = b_step(k_env, st, u[:, None])
        valid = info["active"][:, 0]
        tr_ = {"obs": obs[:, 0].reshape((E, T * D)), "next_obs": info["final_obs"][:, 0].reshape((E, T * D)),
               "goal": goal, "action": u, "reward": r[:, 0], "done": te[:, 0].astype(jnp.float32)}
        buf = replay_add(buf, tr_, valid)
        done = (te | tr)[:, 0]
        ret = envs_["ret"] + r[:, 0]
        cn = {**cn, "episodes": cn["episodes"] + jnp.sum(done.astype(jnp.int32)),
              "ret_sum": cn["ret_sum"] + jnp.sum(jnp.where(done, ret, 0.0))}
        ret = jnp.where(done, 0.0, ret)
        noise = jnp.where(done, 0.0, noise)  # a fresh episode starts its noise at 0
        ready = buf["size"] >= int(c.learning_starts)
        actor_on = cn["env_steps"] >= int(c.actor_starts)  # the critic alone first (decided)

        def do_learn(args):
            ag, k = args

            def one(carry, kk):
                a2, _ = carry
                return learn(a2, buf, kk, actor_on), None

            (ag, met), _ = jax.lax.scan(one, (ag, zero_learn), jax.random.split(k, K))
            return ag, met

        agent, met = jax.lax.cond(ready, do_learn, lambda a: (a[0], zero_learn), (agent, k_learn))
        cn = {**cn, "update": cn["update"] + 1, "env_steps": cn["env_steps"] + E,
              "grad_steps": cn["grad_steps"] + jnp.where(ready, K, 0)}
        cap = jnp.maximum(info["capacity"][:, 0], 1.0)
        metrics = {
            **met, "sigma": sigma, "reward": jnp.mean(r), "u_mean": jnp.mean(u), "mu_mean": jnp.mean(mu),
            "utilization": jnp.sum(info["delivery_rate"][:, 0]) / jnp.sum(cap),
            "delay_ratio": jnp.mean(info["measurement"][:, 0, 1]), "loss": jnp.mean(info["loss_rate"][:, 0]),
            "buffer_size": buf["size"],
            "params_finite": jnp.all(jnp.asarray([jnp.all(jnp.isfinite(x)) for x in
                                                  jax.tree.leaves((agent["actor"], agent["critic"]))])),
        }
        new = {"agent": agent, "buffer": buf, "env": {"state": st2, "obs": obs2, "noise": noise, "ret": ret},
               "key": key, "counters": cn}
        return new, metrics

    def run_chunk(state, stage_idx: int = 0):
        c0 = state["counters"]
        state, met = jax.lax.scan(lambda s, _: update(s), state, None, length=chunk)
        c1 = state["counters"]
        eps_n = c1["episodes"] - c0["episodes"]
        per = lambda x: jnp.full((chunk,), x, jnp.float32)  # noqa: E731
        met = {**met, "ep_count": per(eps_n) / chunk, "ep_return_sum": per(c1["ret_sum"] - c0["ret_sum"]) / chunk}
        return state, met

    def template(stage_idx: int = 0):
        return jax.eval_shape(init, jax.random.PRNGKey(0))

    def finish_stage(state):
        """The shipped policy is the target actor μ' (the Polyak average of θ^μ): swapped into
        ``agent.actor`` before the stage checkpoint and export (``export_target_actor``)."""
        if not bool(c.export_target_actor):
            return state
        return {**state, "agent": {**state["agent"], "actor": state["agent"]["actor_target"]}}

    stage = pipeline.Stage(0, "ddpg", LABEL, num_updates, num_updates // chunk)
    return Trainer(config=config, stages=[stage], chunk_updates=chunk, actor_spec=spec, init=init,
                   enter_stage=lambda s, i: s, run_chunk=run_chunk, template=template, update=update,
                   finish_stage=finish_stage, actor_apply=actor_apply, critic_apply=critic_apply, env=env,
                   env_params=ep)


# ----------------------------------------------------------------------------- goal probe


def goal_probe(env, ep, actor_apply, actor, goals, key, n_links: int, policy=None) -> dict:
    """The deterministic actor on ``n_links`` links drawn from the training sampler with ``key``
    (a held-out seed), one whole episode per link and goal (the same links for every goal).

    Returns per goal (arrays [len(goals)]): ``utilization`` (Σ delivered / Σ capacity over the
    episode, per link then averaged), ``qdelay_ms`` (mean of the MI mean RTT − the link's
    propagation RTT), ``loss`` (mean MI loss rate), ``reward`` (mean eq. 3 reward under that
    goal), ``rate_over_cap`` (mean sending rate / the link's mean capacity).  What
    ``configs/deepcc_clean.py``'s recipe was judged on (never the evaluation scenarios).
    ``policy(state, obs, goal) -> u [1]`` replaces the actor (e.g. a fixed fraction of capacity).
    """
    goals = jnp.asarray(goals, jnp.float32)
    keys = jax.random.split(key, n_links)
    steps = int(env.config.max_steps)

    def one(k, g):
        obs, st = env.reset_env(k, ep)
        st = st.replace(goal=jnp.broadcast_to(g, st.goal.shape))

        def body(carry, kk):
            obs, st, alive = carry
            u = actor_apply(actor, obs[0], g)[0][None] if policy is None else policy(st, obs, g)
            obs2, st2, r, te, tr, info = env.step_env(kk, st, u, ep)
            a = alive.astype(jnp.float32)
            row = jnp.stack([a * info["delivery_rate"][0], a * info["capacity"][0],
                             a * jnp.where(info["rtt_mean"][0] > 0, info["rtt_mean"][0] - st.link.rtt[0], 0.0),
                             a * info["loss_rate"][0], a * r[0], a * info["send_rate"][0], a])
            return (obs2, st2, alive & ~(te | tr)), row

        (_, st_end, _), rows = jax.lax.scan(body, (obs, st, jnp.ones((), bool)), jax.random.split(k, steps))
        tot = rows.sum(0)
        n = jnp.maximum(tot[6], 1.0)
        cap_mean = jnp.mean(st_end.link.cap_bps)
        return jnp.stack([tot[0] / jnp.maximum(tot[1], 1.0), 1e3 * tot[2] / n, tot[3] / n, tot[4] / n,
                          tot[5] / n / jnp.maximum(cap_mean, 1.0)])

    out = jax.jit(jax.vmap(jax.vmap(one, in_axes=(0, None)), in_axes=(None, 0)))(keys, goals)  # [G, L, 5]
    m = np.asarray(out).mean(axis=1)
    return {k: m[:, i] for i, k in enumerate(("utilization", "qdelay_ms", "loss", "reward", "rate_over_cap"))}
