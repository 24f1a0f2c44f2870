"""MOCC's online stage: the preference-conditioned Q network fine-tuned on a live link toward one
application objective (a preference ω*), as pure functions.

MOCC's paper (Xia et al., IWQoS 2021) trains offline only; its §IV-D learner is the envelope
multi-objective Q-learning of Yang, Sun and Narasimhan (the paper's [16]), whose own §5 adapts a
trained envelope network to a new preference by continuing its updates.  This stage does that
from a sender's records, with the offline learner's pieces (``jaxcc.agents.mocc_envelope``):

* **Rewards** (``record_reward``): §IV-A's vector [L(thr / bandwidth), delay objective, −L(loss)]
  from one monitor interval's sums, through ``jaxcc.envs.mocc``'s own functions.  A sender
  cannot see the link's bandwidth; the throughput objective takes the flow's largest ACK rate so
  far (this MI's included) in its place, the same number its features divide by (feature 1 is
  ACK rate / max ACK rate, so r_thr = L(feature 1)).  Decided (ours); the offline reward divides
  by the link's capacity.
* **Replay** (``init_online``, ``add``): the online transitions go to a ring of their own; the
  offline buffer is kept, frozen, and each minibatch draws ``old_share`` of its transitions
  from it (the offline experience keeps the values of the states the live link does not visit;
  Pareto's Algorithm 4 line 1 keeps its old segments for the same reason).
* **Preferences** (``learn``): Algorithm 2 line 17's N_ω preferences are ω* and N_ω − 1 drawn
  from D_ω (uniform on the simplex), so every update trains the new objective and the envelope
  target still searches over others; λ (eq. 12) is 1, where the offline run ended.
* **Target network** θ_k: copied from θ every ``target_every`` online gradient steps (the
  offline config's, unless set).  Adam continues from the offline optimizer's moments at
  ``lr_scale`` times the offline learning rate.
* Online there is no episode end (``done = 0``) and no ε: the sender plays argmax_a ω*·Q(s, a, ω*).
  The decision whose action §IV-B's init-cwnd replaced is not stored (``jaxcc.online.tracks``),
  as offline.

Replicas: every leaf but the frozen offline buffer has a leading ``[K]`` axis (one agent per
sender or group of senders, ``--buffers=local``; ``K = 1`` shared), updated with one ``vmap``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from jaxcc.agents import mocc_envelope as moq
from jaxcc.agents.replay import replay_add, replay_init, replay_sample
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import mocc as menv
from jaxcc.online.pareto import mi_stats  # a RECORD's 16 MI sums as MIStats
from jaxcc.params import all_finite

GRAD_STEPS = 16  # envelope updates per learn batch unless --grad-steps is given (decided, not studied)
ONLINE_SIZE = 65536  # rows of the online ring unless --online-segment is given (~20 min of one flow at 20-ms MIs)


def check_preference(w) -> tuple[float, float, float]:
    """ω* as three floats >= 0 summing to 1 (within 1e-3), else ``ValueError`` in one line."""
    w = [float(x) for x in w]
    if len(w) != 3 or any(not x >= 0 for x in w) or abs(sum(w) - 1.0) > 1e-3:
        raise ValueError(f"--preference={','.join(f'{x:g}' for x in w)}: expected 3 numbers >= 0 (throughput, delay, "
                         f"loss) summing to 1")
    return tuple(w)


# ----------------------------------------------------------------------------- rewards from records


def record_reward(mi16: jax.Array, min_rtt: jax.Array, max_ack: jax.Array, p: menv.MoccParams):
    """§IV-A's vector reward of one MI from a sender's sums, and the features 0–2 the sender
    derives from the same MI (a check that both read the interval alike).

    Args:
      mi16: [..., 16] the RECORD's MI sums; min_rtt: [...] the sender's known min RTT (s);
      max_ack: [...] the flow's max ACK rate so far, this MI's included (B/s; the max of an EWMA
        of it when ``p.max_ack_ewma`` < 1, ``MoccTrack``).
      p: the ``mocc`` environment's parameters (timeout, delay objective, throughput floor).
    Returns:
      reward [..., 3] (throughput, delay, loss) and features [..., 3] (delay / timeout, ACK rate
      / max ACK rate, sending rate / max ACK rate), as ``MoccEnv.observe`` computes them.
    """
    m = mi_stats(mi16)
    min_rtt = jnp.asarray(min_rtt, jnp.float32)
    max_ack = jnp.asarray(max_ack, jnp.float32)
    tmo = menv.timeout(min_rtt, p)
    delay = jnp.where(mi_lib.has_rtt(m), mi_lib.rtt_mean(m), min_rtt)
    ack, snd = mi_lib.delivery_rate(m), mi_lib.send_rate(m)
    r = menv.reward_vector(ack, max_ack, mi_lib.loss_rate(m), delay, tmo,
                           menv.delay_objective(delay, min_rtt, tmo, p))
    r = menv.with_throughput_floor(r, p.thr_floor)
    ok = max_ack > 0
    feats = jnp.stack([delay / tmo, jnp.where(ok, ack / jnp.maximum(max_ack, 1e-9), 0.0),
                       jnp.where(ok, snd / jnp.maximum(max_ack, 1e-9), 0.0)], axis=-1)
    return r, feats


# ----------------------------------------------------------------------------- state


def init_online(offline: dict, *, replicas: int, online_size: int, seed: int, lr_scale: float = 1.0) -> dict:
    """The online learner's state from an offline MOCC state (``jaxcc.train``'s pytree).

    Returns ``{"agent": {actor, target, opt}, "buffer", "key", "gstep", "hp"}``, each but ``hp``
    with a leading ``[replicas]`` axis; ``buffer`` is the online ring (empty).  The frozen
    offline buffer is ``offline["buffer"]``, passed to ``learn`` as it is (not copied per
    replica, not checkpointed: a resumed learner reads it from the offline run again).
    """
    if int(replicas) < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    if int(online_size) <= 0:
        raise ValueError(f"online buffer size must be > 0, got {online_size}")
    if not lr_scale > 0:
        raise ValueError(f"lr_scale must be > 0, got {lr_scale}")
    k = int(replicas)
    agent = offline["agent"]
    obs_size = int(offline["buffer"]["obs"].shape[-1])
    m = int(offline["buffer"]["reward"].shape[-1])
    buf = replay_init(int(online_size), moq.replay_rows(obs_size, m))
    rep = lambda x: jnp.broadcast_to(jnp.asarray(x), (k,) + jnp.shape(x))  # noqa: E731
    return {"agent": jax.tree.map(rep, agent), "buffer": jax.tree.map(rep, buf),
            "key": jax.random.split(jax.random.PRNGKey(int(seed)), k),
            "gstep": jnp.zeros((k,), jnp.int32),
            "hp": {"lr_scale": jnp.asarray(float(lr_scale), jnp.float32)}}


def add(ostate: dict, batch: dict, valid: jax.Array) -> dict:
    """Appends transitions to every replica's online ring: ``batch`` leaves ``[K, M, ...]``
    (``obs``, ``action``, ``reward`` [.., 3], ``next_obs``, ``done``), ``valid`` ``[K, M]``."""
    buf = jax.vmap(replay_add)(ostate["buffer"], batch, valid)
    return {**ostate, "buffer": buf}


def online_count(ostate: dict) -> jax.Array:
    """Filled rows of every replica's online ring, ``[K]``."""
    return ostate["buffer"]["size"]


def actor_of(ostate: dict, replica: int) -> dict:
    """The Q network θ of one replica (``{layer: {tensor: array}}``)."""
    return jax.tree.map(lambda x: x[replica], ostate["agent"]["actor"])


# ----------------------------------------------------------------------------- learning


def learn_kwargs(moq_config, spec: dict, *, preference, old_share: float = 0.5, target_every: int | None = None) -> dict:
    """``learn``'s keyword arguments from the offline run's ``config.moq`` and policy spec."""
    if not 0.0 <= old_share < 1.0:
        raise ValueError(f"old_share must be in [0, 1), got {old_share}")
    c = moq_config
    te = int(target_every if target_every is not None else c.target_every)
    if te < 1:
        raise ValueError(f"target_every must be >= 1, got {te}")
    return dict(spec=spec, preference=tuple(check_preference(preference)), gamma=float(c.gamma),
                lr=float(c.lr), max_grad_norm=float(c.max_grad_norm), batch=int(c.batch_transitions),
                n_pref=int(c.batch_preferences), old_share=float(old_share), target_every=te,
                boot=bool(c.bootstrap_at_terminal))


def learn(ostate: dict, offline_buf: dict, active: jax.Array, *, n_steps: int, kw: dict) -> tuple[dict, dict]:
    """``n_steps`` envelope updates (Algorithm 2 lines 16–23, eq. 10–12 with λ = 1) on every
    replica whose ``active`` [K] is True (the others are returned unchanged); metrics ``[K]``."""
    spec = kw["spec"]
    T, D = int(spec["features"]["history"]), int(spec["features"]["obs_dim"])
    m = len(kw["preference"])
    nt = int(kw["batch"])
    n_old = int(round(kw["old_share"] * nt))
    w_star = jnp.asarray(kw["preference"], jnp.float32)[None]
    # The offline optimizer's moments carry over; its learning rate, scaled (the state's
    # structure does not depend on the rate).
    tx = optax.chain(optax.clip_by_global_norm(kw["max_grad_norm"]),
                     optax.adam(kw["lr"] * ostate["hp"]["lr_scale"]))
    q_one = functools.partial(moq.q_values, spec)

    def q_pairs(params, obs, W):  # [B, T, D], [K, m] -> [B, K, n, m]
        return jax.vmap(lambda o: jax.vmap(lambda w: q_one(params, o, w))(W))(obs)

    def step(agent, buf, key, gstep):
        k_new, k_old, k_w = jax.random.split(key, 3)
        b = replay_sample(buf, k_new, nt - n_old)
        if n_old:
            old = replay_sample(offline_buf, k_old, n_old)
            b = {k: jnp.concatenate([b[k], old[k].astype(b[k].dtype)]) for k in b}
        W = jnp.concatenate([w_star, moq.sample_preferences(k_w, int(kw["n_pref"]) - 1, m)])
        obs, nobs = b["obs"].reshape((nt, T, D)), b["next_obs"].reshape((nt, T, D))
        q_next = q_pairs(agent["target"], nobs, W)
        y = jax.vmap(lambda qn, r, d: moq.envelope_target(qn, W, r, d, kw["gamma"], kw["boot"]))(
            q_next, b["reward"], b["done"])

        def loss_fn(params):
            q = q_pairs(params, obs, W)
            q_sa = jnp.take_along_axis(q, b["action"][:, None, None, None], axis=2)[:, :, 0]
            return moq.envelope_loss(q_sa, y, W, 1.0)

        (loss, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(agent["actor"])
        upd, opt = tx.update(g, agent["opt"], agent["actor"])
        actor = optax.apply_updates(agent["actor"], upd)
        sync = (gstep + 1) % kw["target_every"] == 0
        target = jax.tree.map(lambda t, o: jnp.where(sync, o, t), agent["target"], actor)
        q_star = jnp.einsum("bam,m->ba", q_pairs(actor, obs[:8], w_star)[:, 0], w_star[0])
        return {"actor": actor, "target": target, "opt": opt}, {"loss": loss, **aux, "q": jnp.mean(jnp.max(q_star, -1))}

    def one(agent, buf, key, gstep, on):
        def body(c, _):
            agent, key, gstep = c
            key, k = jax.random.split(key)
            agent, met = step(agent, buf, k, gstep)
            return (agent, key, gstep + 1), met

        (a2, k2, g2), ms = jax.lax.scan(body, (agent, key, gstep), None, length=n_steps)
        keep = lambda new, old: jax.tree.map(lambda x, y: jnp.where(on, x, y), new, old)  # noqa: E731
        return keep(a2, agent), keep(k2, key), jnp.where(on, g2, gstep), {k: jnp.mean(v) for k, v in ms.items()}

    agent, key, gstep, met = jax.vmap(one)(ostate["agent"], ostate["buffer"], ostate["key"], ostate["gstep"], active)
    finite = jax.vmap(lambda a: all_finite(a["actor"]))(agent)
    return {**ostate, "agent": agent, "key": key, "gstep": gstep}, {**met, "params_finite": finite}


__all__ = ["check_preference", "record_reward", "init_online", "add", "online_count", "actor_of",
           "learn_kwargs", "learn"]
