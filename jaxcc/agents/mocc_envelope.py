"""MOCC: envelope multi-objective Q-learning over preferences (Xia et al., IWQoS 2021).

Paper: MOCC (IWQoS 2021) §IV-D (eq. 5–12) and Algorithm 2; the envelope operator is Yang, Sun and
Narasimhan (NeurIPS 2019, the paper's [16]), whose algorithm §IV-D restates.  Read top to
bottom: network (a policy-file spec, so export is exact) → replay → the envelope target and
loss → acting → ``make_train``::

    python -m jaxcc.train --config=mocc
    python -m jaxcc.preference_sweep --checkpoint=checkpoints/mocc/mocc.safetensors --out=runs/mocc-sweep

What the paper fixes and how we read it:

* **Q network** Q(s, a, ω; θ) (§IV-D "value space Q ⊆ (Ω → R^m)^{S×A}"): the state of §IV-A and
  the preference ω in, an m-vector per discrete action out (m = 3 objectives, 7 actions).  An
  MLP on [s, ω] (the paper gives no architecture; decided: two layers of ``hidden``, the first
  ``fc1_activation`` — tanh in ``configs/mocc.py``, because the cwnd/BDP and send-rate features
  have long tails (up to a few hundred) that made ReLU Q-values diverge — the second ReLU) whose
  last layer has 7·3 outputs, action-major — the policy file's ``q_values`` head with
  ``objectives: 3``, so the exported file acts exactly as trained: argmax_a ω·Q(s, a, ω).
* **Acting** (Algorithm 2 line 13): ε-greedy on argmax_a ω^T Q(s, a, ω).  The paper uses ε
  both for this and for eq. 12's weight; we call the exploration rate ε and eq. 12's weight λ
  (our name, to keep the two apart; eq. 12 prints L^A, L^B and the text calls its weight ε).  ε decays
  linearly from ``eps_start`` to ``eps_end`` over ``eps_decay_frac`` of the run (decided).
* **Replay with hindsight preferences** (lines 16–19): transitions (s, a, r, s', done) are stored
  without their preference; every update samples N_τ transitions and N_ω preferences W from
  D_ω (uniform on the simplex, as the episodes' ω) and trains every (transition, ω_i) pair.
  The steps where Algorithm 2 lines 8–9 override the action (the init-cwnd step) are not stored:
  their action was not the one applied.
* **Envelope target** (eq. 10, line 21): y_ij = r_j + γ · Q(s_{j+1}, a*, ω*; θ_k) with
  (a*, ω*) = argmax over a ∈ A and ω' ∈ W of ω_i^T Q(s_{j+1}, a, ω'; θ_k); θ_k is a target
  network, copied from θ every ``target_every`` gradient steps (decided; the paper says θ_k;
  ``tau`` > 0 makes it a soft update and ``double_q`` lets θ pick (a*, ω*) — options that
  diverged in our runs, see ``checkpoints/mocc/README.md``).  The
  bootstrap is cut at Algorithm 1's terminals (win, lose, and the tie at T = 200), which the
  paper calls the end of "sending the data"; ``bootstrap_at_terminal`` keeps it (the terminals
  then only reset the link) — a named variant, off by default.
* **Loss** (eq. 9, 11, 12; line 23): (1 − λ)·L^S + λ·L^T with L^S = ‖y − Q(s, a, ω)‖²
  (mean over pairs) and L^T = |ω^T y − ω^T Q(s, a, ω)|; λ rises linearly from 0 to 1 over the
  run (Yang et al.'s homotopy; the paper: "we raise the value ... from 0 to 1").  ``lambda_end``
  < 1 ends the rise there instead (the default ``configs/mocc.py``: 0.5, where steering held up
  on held-out links; run configs written before it existed read 1).
* Eq. 5 (a tabular update without a learning rate or discount) is the naive per-objective
  Q-learning the paper contrasts with eq. 6–8; it is not used.
* Decided (none given): γ = ``gamma``, Adam, N_τ, N_ω, buffer size, ``updates_per_step``.

One update of the run = one vectorized env step (``num_envs`` links, each with its own episode
clock; an episode ends on Algorithm 1's outcome and the link is redrawn, ``jaxcc.envs.base``
auto-reset) followed by ``updates_per_step`` gradient steps once the buffer holds
``learning_starts`` transitions.

The replay (``replay_rows`` here, ``jaxcc.agents.replay`` for the ring) is a plain ring of arrays (uniform
sampling): the Pareto agent's segmented prioritized replay is not what §IV-D uses, and no listed
library offers a jittable buffer.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.agents.replay import replay_add, replay_init, replay_sample
from jaxcc.params import all_finite, glorot_uniform
from jaxcc.units import PACKET_BYTES

ALGORITHM = "mocc"
LABEL = "MOCC"


# ----------------------------------------------------------------------------- network


def policy_spec(history: int, obs_dim: int, n_actions: int, n_obj: int, hidden: int = 64, *,
                features: dict | None = None, deltas_pkts=(), mults=None, mi_rtts: float = 1.0,
                fc1_activation: str = "relu") -> dict:
    """The Q network as a policy-file spec: flatten → [s, ω] → fc1 (``fc1_activation``) → ReLU → n·m linear,
    head ``q_values`` with ``objectives`` m (argmax_a ω·Q), action ``cwnd_table``."""
    feats = {"name": "mocc_v1"}
    feats.update(features or {})
    feats["history"], feats["obs_dim"] = int(history), int(obs_dim)
    x = int(history) * int(obs_dim) + int(n_obj)
    H = int(hidden)
    return {
        "format": policyfile.FORMAT, "version": policyfile.VERSION, "algorithm": ALGORITHM,
        "features": feats, "mi_rtts": float(mi_rtts), "goal_dim": int(n_obj),
        "layers": [
            {"type": "flatten"}, {"type": "concat_goal"},
            {"type": "dense", "name": "fc1", "in": x, "out": H, "activation": fc1_activation},
            {"type": "dense", "name": "fc2", "in": H, "out": H, "activation": "relu"},
            {"type": "dense", "name": "q", "in": H, "out": int(n_actions) * int(n_obj), "activation": "linear"},
        ],
        "head": {"type": "q_values", "n": int(n_actions), "objectives": int(n_obj)},
        "action": {"type": "cwnd_table", "deltas": [float(d) * PACKET_BYTES for d in deltas_pkts],
                   "multipliers": [float(k) for k in (mults if mults is not None else [1.0] * len(deltas_pkts))],
                   "min_mbps": policyfile.DEFAULT_MIN_MBPS, "max_mbps": policyfile.DEFAULT_MAX_MBPS},
    }


def init_params(key, in_dim: int, hidden: int, n_out: int) -> dict:
    """``{layer: {tensor}}`` with the policy file's names (Glorot uniform, zero biases; the
    output layer scaled by 0.1 so the first Q-values are small)."""
    k1, k2, k3 = jax.random.split(key, 3)
    z = lambda n: jnp.zeros((n,), jnp.float32)  # noqa: E731
    return {"fc1": {"kernel": glorot_uniform(k1, (in_dim, hidden)), "bias": z(hidden)},
            "fc2": {"kernel": glorot_uniform(k2, (hidden, hidden)), "bias": z(hidden)},
            "q": {"kernel": glorot_uniform(k3, (hidden, n_out), gain=0.1), "bias": z(n_out)}}


def q_values(spec: dict, params: dict, obs, goal) -> jax.Array:
    """Q(s, ·, ω) as [n, m] for one window ``obs`` [T, D] and preference ``goal`` [m]: the
    exported file's own forward pass, reshaped action-major."""
    z = policyfile.forward(spec, pipeline.flat(params), obs, goal)
    return z.reshape((int(spec["head"]["n"]), int(spec["head"]["objectives"])))


def greedy(q: jax.Array, w: jax.Array) -> jax.Array:
    """argmax_a ω^T Q(s, a, ω) (Algorithm 2 line 13); ``q`` [..., n, m], ``w`` [..., m]."""
    return jnp.argmax(jnp.einsum("...am,...m->...a", q, w), axis=-1).astype(jnp.int32)


# ----------------------------------------------------------------------------- replay


def replay_rows(obs_size: int, m: int) -> dict:
    """The fields of a replay row (``replay_init``): s, s', the reward vector r (m
    objectives), done and the action's index."""
    f = jnp.float32
    return {"obs": ((obs_size,), f), "next_obs": ((obs_size,), f), "reward": ((m,), f), "done": ((), f),
            "action": ((), jnp.int32)}


# ----------------------------------------------------------------------------- envelope target, loss


def sample_preferences(key, n: int, m: int) -> jax.Array:
    """N_ω preferences from D_ω: uniform on the simplex (Dirichlet(1), as the episodes' ω)."""
    return jax.random.dirichlet(key, jnp.ones((m,)), (n,))


def envelope_target(q_next: jax.Array, W: jax.Array, reward: jax.Array, done: jax.Array, gamma: float,
                    bootstrap_at_terminal: bool = False, q_select: jax.Array | None = None) -> jax.Array:
    """Eq. 10 / Algorithm 2 line 21 for one transition.

    Args:
      q_next: [K, n, m] Q(s', a, ω'_k; θ_k) for every ω'_k ∈ W.
      W: [K, m] the sampled preferences (both the ω_i being trained and the ω' searched over).
      reward: [m]; done: scalar (Algorithm 1 terminal).
      q_select: [K, n, m] the values that choose (a*, ω*) (double Q-learning: the online
        network's), or None to choose with ``q_next`` as eq. 10 does.
    Returns:
      y [K, m]: y_i = r + γ · Q(s', a*, ω*) with (a*, ω*) = argmax_{a, ω'} ω_i^T Q(s', a, ω').
    """
    K, n, m = q_next.shape
    flat = q_next.reshape((K * n, m))  # every (ω', a) pair
    sel = flat if q_select is None else q_select.reshape((K * n, m))
    best = jnp.argmax(W @ sel.T, axis=-1)  # [K]: for each ω_i
    keep = 1.0 if bootstrap_at_terminal else 1.0 - done
    return reward[None, :] + gamma * keep * flat[best]


def envelope_loss(q_sa: jax.Array, y: jax.Array, W: jax.Array, lam) -> tuple[jax.Array, dict]:
    """Eq. 12: (1 − λ)·L^S + λ·L^T over the (transition, ω) pairs.

    q_sa, y: [B, K, m] (Q(s_j, a_j, ω_i) and its target); W: [K, m].
    L^S (eq. 9) = mean ‖y − Q‖²;  L^T (eq. 11) = mean |ω^T y − ω^T Q|.
    """
    y = jax.lax.stop_gradient(y)
    ls = jnp.mean(jnp.sum(jnp.square(y - q_sa), axis=-1))
    lt = jnp.mean(jnp.abs(jnp.einsum("bkm,km->bk", y - q_sa, W)))
    return (1.0 - lam) * ls + lam * lt, {"loss_s": ls, "loss_t": lt}


def linear(frac, start, end):
    return start + (end - start) * jnp.clip(frac, 0.0, 1.0)


# ----------------------------------------------------------------------------- environment


def make_env(config):
    """``jaxcc.envs.make_env(config.env.name, **config.env.overrides)`` → (env, params) with the
    fields named in ``config.env.params`` replaced (an unknown name is an error)."""
    from jaxcc import envs
    from jaxcc.envs import base as env_base

    env, params = envs.make_env(str(config.env.name), **dict(config.env.get("overrides", {}) or {}))
    return env, env_base.replace_params(params, config.env.get("params", {}))


def features_block(config, params) -> dict:
    """The policy file's ``features`` block: the env's export spec with this run's action table."""
    from jaxcc import envs

    feats = dict(envs.export_features_spec(str(config.env.name), **dict(config.env.get("overrides", {}) or {})))
    feats["cwnd_deltas_pkts"] = [float(d) for d in np.asarray(params.cwnd_deltas_pkts)]
    feats["cwnd_mults"] = [float(k) for k in np.asarray(params.cwnd_mults)]
    if float(np.asarray(params.init_ref_rtt_s)) > 0:  # eq. 1 scaled by the min RTT (files without it: eq. 1)
        feats["init_ref_rtt_s"] = float(f"{float(np.asarray(params.init_ref_rtt_s)):.7g}")  # 0.02, not 0.0199999996
    if float(np.asarray(params.max_ack_ewma)) != 1.0:  # the max ACK rate over an EWMA (files without it: the raw max)
        feats["max_ack_ewma"] = float(f"{float(np.asarray(params.max_ack_ewma)):.7g}")
    return feats


# ----------------------------------------------------------------------------- training


@dataclasses.dataclass
class Trainer(pipeline.Trainer):
    update: Callable  # state -> (state, metrics): one env step + the gradient steps
    env: Any = None
    env_params: Any = None


def make_train(config, mesh=None) -> Trainer:
    """Build the envelope-MOQ trainer (``configs/mocc.py``).  One stage.

    State: ``agent`` {actor (θ), target (θ_k), opt}, ``buffer`` (replay), ``env`` {state, obs}
    (per-link lanes, sharded by ``jaxcc.train``), ``key``, ``counters``.  ``mesh``: the lanes and
    every replay minibatch are split over its devices (``pipeline.data_sharding``; the buffer is
    replicated, XLA all-reduces the gradient); ``None`` or one device: no constraint.
    """
    c = config.moq
    env, ep = make_env(config)
    E = int(config.num_envs)
    obs_shape = tuple(jax.eval_shape(lambda k: env.reset(k, ep), jax.random.PRNGKey(0))[0].shape)
    A, T, D = obs_shape
    m = int(env.config.reward_dim)
    n = int(ep.cwnd_deltas_pkts.shape[-1])
    if int(env.config.goal_dim) != m or m < 2:
        raise ValueError(f"env {config.env.name!r}: MOCC needs a vector reward and a preference of the same size "
                         f"(reward_dim {m}, goal_dim {env.config.goal_dim})")
    feats = features_block(config, ep)
    spec = policy_spec(T, D, n, m, int(c.hidden), features=feats, deltas_pkts=feats["cwnd_deltas_pkts"],
                       mults=feats["cwnd_mults"],
                       mi_rtts=float(feats.get("mi_rtts", 1.0)), fc1_activation=str(c.fc1_activation))
    tx = optax.chain(optax.clip_by_global_norm(float(c.max_grad_norm)), optax.adam(float(c.lr)))
    chunk = int(config.chunk_updates)
    num_updates = int(config.num_updates)
    if num_updates % chunk:
        raise ValueError(f"config.num_updates={num_updates} must be a multiple of chunk_updates={chunk}")
    NT, NW = int(c.batch_transitions), int(c.batch_preferences)
    # Lanes and replay minibatches are split over the devices (the replay buffer is replicated).
    pipeline.require_multiple(mesh, {"config.num_envs": E, "config.moq.batch_transitions": NT})
    shard = pipeline.data_sharding(mesh)
    gamma, boot, double = float(c.gamma), bool(c.bootstrap_at_terminal), bool(c.double_q)
    lambda_end = float(c.get("lambda_end", 1.0))
    if not 0.0 <= lambda_end <= 1.0:
        raise ValueError(f"config.moq.lambda_end={lambda_end}: eq. 12's weight λ ends in [0, 1]")
    init_step = int(np.asarray(ep.init_step))

    q_one = functools.partial(q_values, spec)
    q_b = jax.vmap(q_one, in_axes=(None, 0, 0))  # [B, T, D], [B, m] -> [B, n, m]

    def q_pairs(params, obs, W):  # obs [B, T, D], W [K, m] -> [B, K, n, m]
        return jax.vmap(lambda o: jax.vmap(lambda w: q_one(params, o, w))(W))(obs)

    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key):
        key = jnp.asarray(key)
        k_p, k_e, k_r = jax.random.split(key, 3)
        actor = init_params(k_p, T * D + m, int(c.hidden), n * m)
        obs, st = v_reset(jax.random.split(k_e, E), ep)
        return pipeline.strong({
            "agent": {"actor": actor, "target": actor, "opt": tx.init(actor)},
            "buffer": replay_init(int(c.buffer_size), replay_rows(T * D, m)),
            "env": {"state": st, "obs": obs, "ret": jnp.zeros((E, A, m), jnp.float32)},
            "key": k_r,
            "counters": {"update": jnp.zeros((), jnp.int32), "env_steps": jnp.zeros((), jnp.int32),
                         "grad_steps": jnp.zeros((), jnp.int32), "episodes": jnp.zeros((), jnp.int32),
                         "ret_sum": jnp.zeros((m,), jnp.float32), "wins": jnp.zeros((), jnp.int32),
                         "losses": jnp.zeros((), jnp.int32)}})

    def learn(agent, buf, key, lam):
        k_b, k_w = jax.random.split(key)
        b = shard(replay_sample(buf, k_b, NT))
        W = sample_preferences(k_w, NW, m)
        obs = b["obs"].reshape((NT, T, D))
        nobs = b["next_obs"].reshape((NT, T, D))
        q_next = q_pairs(agent["target"], nobs, W)  # [B, K, n, m]
        if double:
            q_sel = q_pairs(agent["actor"], nobs, W)
            y = jax.vmap(lambda qn, qs, r, d: envelope_target(qn, W, r, d, gamma, boot, qs))(
                q_next, q_sel, b["reward"], b["done"])
        else:
            y = jax.vmap(lambda qn, r, d: envelope_target(qn, W, r, d, gamma, boot))(q_next, b["reward"], b["done"])

        def loss_fn(params):
            q = q_pairs(params, obs, W)  # [B, K, n, m]
            q_sa = jnp.take_along_axis(q, b["action"][:, None, None, None], axis=2)[:, :, 0]
            return envelope_loss(q_sa, y, W, lam)

        (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(agent["actor"])
        upd, opt = tx.update(g, agent["opt"], agent["actor"])
        actor = optax.apply_updates(agent["actor"], upd)
        return {**agent, "actor": actor, "opt": opt}, {"loss": loss, "lambda": lam, **aux}

    def update(state):
        key, k_act, k_eps, k_env, k_learn = jax.random.split(state["key"], 5)
        agent, buf, envs_ = state["agent"], state["buffer"], state["env"]
        cn = state["counters"]
        frac = cn["update"].astype(jnp.float32) / num_updates
        lam = linear(frac, 0.0, lambda_end)  # eq. 12's weight at this update
        st, obs = shard((envs_["state"], envs_["obs"]))
        # Algorithm 2 lines 12–13: ε-greedy on ω^T Q(s, a, ω), per flow (A agents per link).
        w = jax.vmap(env.goal)(st)  # [E, A, m]
        q = q_b(agent["actor"], obs.reshape((E * A, T, D)), w.reshape((E * A, m)))
        eps = linear(frac / float(c.eps_decay_frac), float(c.eps_start), float(c.eps_end))
        rand = jax.random.randint(k_act, (E * A,), 0, n)
        explore = jax.random.uniform(k_eps, (E * A,)) < eps
        a = jnp.where(explore, rand, greedy(q, w.reshape((E * A, m)))).reshape((E, A))
        overridden = st.paper.steps == init_step  # lines 8–9 replace this step's action
        obs2, st2, r, term, trunc, info = v_step(jax.random.split(k_env, E), st, a, ep)
        # Lines 15–16: store (s, a, r, s') — s' is the step's own observation also when the
        # link was redrawn (info["final_obs"]); ``done`` is Algorithm 1's terminal.
        active = info["active"]
        valid = (active & ~overridden).reshape(-1)
        tr = {"obs": obs.reshape((E * A, T * D)), "next_obs": info["final_obs"].reshape((E * A, T * D)),
              "reward": r.reshape((E * A, m)), "done": term.reshape(-1).astype(jnp.float32),
              "action": info["action"].reshape(-1)}  # in force over the MI (a flow's own clock holds it)
        buf = replay_add(buf, tr, valid)
        ret = envs_["ret"] + r
        done = (term | trunc)  # [E, A]
        ended = done[:, 0]
        outcome = info["outcome"]
        cn = {**cn,
              "episodes": cn["episodes"] + jnp.sum(ended.astype(jnp.int32)),
              "ret_sum": cn["ret_sum"] + jnp.sum(jnp.where(done[..., None], ret, 0.0), axis=(0, 1)),
              "wins": cn["wins"] + jnp.sum((ended & jnp.any(outcome == 1, axis=-1)).astype(jnp.int32)),
              "losses": cn["losses"] + jnp.sum((ended & jnp.any(outcome == 2, axis=-1)).astype(jnp.int32))}
        ret = jnp.where(done[..., None], 0.0, ret)

        ready = buf["size"] >= int(c.learning_starts)

        def do_learn(args):
            agent, key = args

            def one(carry, k):
                ag, _ = carry
                ag, met = learn(ag, buf, k, lam)
                return (ag, met), None

            z = {"loss": jnp.zeros(()), "lambda": jnp.zeros(()), "loss_s": jnp.zeros(()), "loss_t": jnp.zeros(())}
            (agent, met), _ = jax.lax.scan(one, (agent, z), jax.random.split(key, int(c.updates_per_step)))
            return agent, met

        def skip(args):
            agent, _ = args
            z = jnp.zeros(())
            return agent, {"loss": z, "lambda": lam, "loss_s": z, "loss_t": z}

        agent, met = jax.lax.cond(ready, do_learn, skip, (agent, k_learn))
        gsteps = cn["grad_steps"] + jnp.where(ready, int(c.updates_per_step), 0)
        # Target network θ_k: a copy of θ every ``target_every`` gradient steps, or (tau > 0)
        # θ_k ← (1 − τ)^u θ_k + (1 − (1 − τ)^u) θ after the u gradient steps of this update.
        if float(c.tau) > 0:
            mix = jnp.where(ready, 1.0 - (1.0 - float(c.tau)) ** int(c.updates_per_step), 0.0)
            agent = {**agent, "target": jax.tree.map(lambda t, o: t + mix * (o - t), agent["target"], agent["actor"])}
        else:
            sync = ready & ((gsteps // int(c.target_every)) > (cn["grad_steps"] // int(c.target_every)))
            agent = {**agent, "target": jax.tree.map(lambda t, o: jnp.where(sync, o, t), agent["target"], agent["actor"])}
        cn = {**cn, "update": cn["update"] + 1, "env_steps": cn["env_steps"] + E * A, "grad_steps": gsteps}
        metrics = {
            **met, "epsilon": eps, "reward_thr": jnp.mean(r[..., 0]), "reward_delay": jnp.mean(r[..., 1]),
            "reward_loss": jnp.mean(r[..., 2]), "buffer_size": buf["size"],
            "reward": jnp.mean(jnp.sum(r * w, axis=-1)),
            "q_greedy": jnp.mean(jnp.max(jnp.einsum("bam,bm->ba", q, w.reshape((E * A, m))), axis=-1)),
            "utilization": jnp.mean(info["delivery_rate"] / jnp.maximum(info["capacity"], 1.0)),
            "params_finite": all_finite(agent["actor"]),
        }
        new = {"agent": agent, "buffer": buf, "env": {"state": st2, "obs": obs2, "ret": ret}, "key": key, "counters": cn}
        return new, metrics

    def run_chunk(state, stage_idx: int = 0):
        c0 = state["counters"]
        state, met = jax.lax.scan(lambda s, _: update(s), state, None, length=chunk)
        c1 = state["counters"]
        eps_n = c1["episodes"] - c0["episodes"]
        per = lambda x: jnp.full((chunk,), x, jnp.float32)  # noqa: E731
        ret = (c1["ret_sum"] - c0["ret_sum"]) / jnp.maximum(eps_n, 1)
        met = {**met, "episodes": per(eps_n), "episode_return_thr": per(ret[0]), "episode_return_delay": per(ret[1]),
               "episode_return_loss": per(ret[2]),
               "win_share": per((c1["wins"] - c0["wins"]) / jnp.maximum(eps_n, 1)),
               "lose_share": per((c1["losses"] - c0["losses"]) / jnp.maximum(eps_n, 1))}
        return state, met

    def template(stage_idx: int = 0):
        return jax.eval_shape(init, jax.random.PRNGKey(0))

    stage = pipeline.Stage(0, "mocc", LABEL, num_updates, num_updates // chunk)
    return Trainer(config=config, stages=[stage], chunk_updates=chunk, actor_spec=spec, init=init,
                   enter_stage=lambda s, i: s, run_chunk=run_chunk, template=template, update=update,
                   env=env, env_params=ep)
