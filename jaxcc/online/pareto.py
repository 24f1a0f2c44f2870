"""Pareto's online training stage (§IV "Online training stage", Algorithm 4) as pure functions.

Algorithm 4 (Online Training of Each Model of Pareto on a Real-World Network)::

    INPUT: the replay buffer B after offline training, its sample distribution P, the
           parameters φ1,2, φ'1,2, θ, θ' after offline training
    1: Increase size of B and freeze old samples
    2: Run TD3 (B, N, P) in Algorithm 3
    3: Repeat Step 2 whenever a flow starts

* Line 1 is ``grow_buffer``: one more segment (``online_size`` slots) after the offline stages'
  segments; ``replay.add`` writes the online experience only there (``add``), the old segments
  keep their transitions *and their priorities* (the distribution P) and are still sampled.
* Line 2 is ``learn``: ``n`` steps of ``td3.learn_step`` (Algorithm 3 lines 6–13: prioritized
  sampling over every segment, the TD3 update, new priorities), β continuing from the offline
  gradient step count.
* "each sender has their experiences appended to their local prioritized replay buffer" (§IV):
  ``replicas = K`` gives every sender (or group of senders) its own agent and buffer, all
  starting from the same offline state, stacked on a leading ``[K]`` axis and updated with one
  ``vmap``; ``K = 1`` is the shared alternative (every sender's experience in one buffer, as
  the fairness stage does).
* Rewards: Algorithm 1 (``jaxcc.envs.pareto.reward``) on the sender's own monitor-interval sums
  (``record_reward``), through the same ``observe_features`` the simulator senders run, scaled by
  ``hp["reward_scale"]`` as in offline training.  Pareto-Fair v2's link-wide training terms
  (fairness over the link's flows, the link's utilization) need the whole link, which a sender
  cannot see.  Variant ``alg1`` uses Algorithm 1 alone (the paper's reward).  Variant ``local``
  (ours) adds the utilization term as the sender can estimate it (``local_util``), so that the
  online rewards are on the scale of the offline ones the critics learnt (with ``util_w = 10``
  the offline buffer's rewards carry up to +10 per step that Algorithm 1 alone never pays, and
  a critic fed both sees every online step as worse than any offline one); for a checkpoint
  trained without link terms (``util_w = 0``, ``configs/pareto_paper.py``) both are the same.
* Online there is no episode end (``done = 0``; "the episode size is determined by the length
  of a flow", §III) and no exploration noise or BBR expert inside the sender: the sender plays
  its current policy deterministically; a decision the sender's fallback BBR took (action NaN)
  is stored with the action its rate change implies, an expert demonstration in the paper's sense.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from jaxcc.agents.pareto import networks, replay, td3
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import pareto as penv
from jaxcc.params import all_finite

MI_FIELDS = tuple(f.name for f in dataclasses.fields(mi_lib.MIStats))  # a RECORD's 16 sums, in order


# ----------------------------------------------------------------------------- Algorithm 4, line 1


def grow_buffer(buf: replay.ReplayState, online_size: int) -> replay.ReplayState:
    """``buf`` with one more, empty segment of ``online_size`` slots (Algorithm 4 line 1).

    The old slots, priorities, cursors and ``max_priority`` are kept as they are; only
    ``add(..., segment=last)`` ever writes the new segment, so the old ones are frozen.
    """
    if int(online_size) <= 0:
        raise ValueError(f"online segment size must be > 0, got {online_size}")
    n_old = buf.priority.shape[0]
    data = jax.tree.map(lambda x: jnp.concatenate([x, jnp.zeros((online_size,) + x.shape[1:], x.dtype)]), buf.data)
    return buf.replace(
        data=data, priority=jnp.concatenate([buf.priority, jnp.zeros((online_size,), buf.priority.dtype)]),
        seg_start=jnp.concatenate([buf.seg_start, jnp.asarray([n_old], jnp.int32)]),
        seg_size=jnp.concatenate([buf.seg_size, jnp.asarray([online_size], jnp.int32)]),
        seg_pos=jnp.concatenate([buf.seg_pos, jnp.zeros((1,), jnp.int32)]),
        seg_count=jnp.concatenate([buf.seg_count, jnp.zeros((1,), jnp.int32)]))


def online_segment(buf: replay.ReplayState) -> int:
    """Index of the online segment (the last one)."""
    return int(buf.seg_size.shape[-1]) - 1


def init_online(offline: dict, *, replicas: int, online_size: int, seed: int, anchor_w: float = 0.0) -> dict:
    """The online learner's state from an offline Pareto state (``jaxcc.train``'s pytree).

    Returns ``{"agent", "buffer", "key", "gstep"}`` each with a leading ``[replicas]`` axis
    (every replica a copy of the offline agent and of the grown buffer, its own RNG key) and the
    offline ``"hp"`` (shared).  ``anchor_w > 0`` (variant ``anchor``, ours): the agent keeps the
    offline actor as ``actor_anchor`` and the actor's loss (eq. 5) adds
    ``anchor_w · ((π(s) − π_offline(s)) / half-range)²`` on every sampled state, old segments'
    included (``td3.td3_update``), so online steps move the policy where the new experience
    says and hold it where the old says nothing new; 0 is Algorithm 4 as the paper gives it.
    """
    if not anchor_w >= 0:
        raise ValueError(f"anchor_w must be >= 0, got {anchor_w}")
    if int(replicas) < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    k = int(replicas)
    agent = offline["agent"]
    buf = grow_buffer(offline["buffer"], int(online_size))
    rep = lambda x: jnp.broadcast_to(jnp.asarray(x), (k,) + jnp.shape(x))  # noqa: E731
    keys = jax.random.split(jax.random.PRNGKey(int(seed)), k)
    gstep = jnp.asarray(offline["counters"]["grad_step"], jnp.int32)
    hp = dict(offline["hp"])
    if anchor_w > 0:
        agent = {**agent, "actor_anchor": agent["actor"]}
        hp["anchor_w"] = jnp.asarray(float(anchor_w), jnp.float32)
    return {"agent": jax.tree.map(rep, agent), "buffer": jax.tree.map(rep, buf), "key": keys,
            "gstep": jnp.full((k,), gstep, jnp.int32), "hp": hp}


# ----------------------------------------------------------------------------- rewards from records


def mi_stats(mi16: jax.Array) -> mi_lib.MIStats:
    """``MIStats`` from the 16 sums of a RECORD (``[..., 16]`` in ``MI_FIELDS`` order)."""
    mi16 = jnp.asarray(mi16, jnp.float32)
    return mi_lib.MIStats(**{f: mi16[..., i] for i, f in enumerate(MI_FIELDS)})


def local_util(m: mi_lib.MIStats, delayed: jax.Array, max_rate: jax.Array) -> jax.Array:
    """The link's utilization as one sender can estimate it (variant ``local``, ours): 1 while the
    flow sees a queue (Algorithm 1's delay flag, d_t >= d_min: a bottleneck with a standing queue
    is busy), otherwise the MI's delivery rate over ``max_rate``, the largest delivery rate the
    flow measured lately (a BBR-style bottleneck estimate, B/s), at most 1."""
    rate = mi_lib.delivery_rate(m)
    return jnp.where(delayed, 1.0, jnp.minimum(rate / jnp.maximum(max_rate, 1.0), 1.0))


def queue_cost(sig: penv.ParetoSignals, min_rtt: jax.Array) -> jax.Array:
    """The standing queue's level in units of the path's RTT, ``clip(d / min RTT, 0, 1)`` (variant
    ``queue``, ours), with d Algorithm 1's queueing delay (the RTT's EWMA over the min RTT).

    Ankh's number charges a queue by its level (d95 / d_max, Pareto eq. 10); Algorithm 1 charges
    only its growth (X_t and dD/dT are 0 for a queue that neither grows nor shrinks), and the
    ``local`` utilization term pays a sender that sees a queue its full 1.  Measured
    (``checkpoints/pareto/online/README.md``, the third learner study): a learner that raises
    its own reward by those terms holds a longer queue, which Ankh's number counts against it."""
    return jnp.clip(sig.d_ms / jnp.maximum(min_rtt * 1000.0, 1e-3), 0.0, 1.0)


def record_reward(prev: penv.ParetoFlow, mi16: jax.Array, min_rtt: jax.Array, p: penv.ParetoParams,
                  feature_set: str = "pareto_v1", max_rate: jax.Array | None = None, queue: bool = False):
    """Algorithm 1's reward for one monitor interval of one or more flows, and the flows' new
    memory, from the sender's MI sums: ``(reward [F], features [F, D], new ParetoFlow)``.

    ``prev`` is the flows' memory before the MI (``jaxcc.envs.pareto.zero_flows`` before the
    first one); ``min_rtt`` [F] is the sender's known minimum RTT including this MI (s).  These are
    ``ParetoEnv.observe``'s own calls.  Pareto-Fair v2's link-wide terms need the whole link;
    with ``max_rate`` [F] (B/s) the utilization term is added as the sender can estimate it,
    ``p.util_w · local_util`` (variant ``local``); the fairness term is always left out (it needs
    the other flows' rates).  Without ``max_rate``: Algorithm 1 alone (variant ``alg1``).  With
    ``queue`` as well, the standing queue is charged at the utilization term's weight,
    ``− p.util_w · queue_cost`` (variant ``queue``): a queue of one min RTT costs as much as an idle link.
    """
    if queue and max_rate is None:
        raise ValueError("record_reward: queue=True (variant queue) needs max_rate: it is variant local's charge")
    m = mi_stats(mi16)
    min_rtt = jnp.asarray(min_rtt, jnp.float32)
    feats, new, sig = penv.observe_features(prev, m, min_rtt, p, feature_set)
    r = penv.reward(sig, prev.exp_delay, prev.prev_delayed, prev.dD, prev.d_ms, p)
    if max_rate is not None:
        r = r + p.util_w * local_util(m, sig.delayed, jnp.asarray(max_rate, jnp.float32))
        if queue:
            r = r - p.util_w * queue_cost(sig, min_rtt)
    return r, feats, new


# ----------------------------------------------------------------------------- Algorithm 4, line 2


def add(ostate: dict, batch: dict, valid: jax.Array, *, new_priority_max: bool = True) -> dict:
    """Appends transitions to every replica's online segment: ``batch`` leaves ``[K, M, ...]``
    (``obs``, ``action``, ``reward``, ``next_obs``, ``done``), ``valid`` ``[K, M]``."""
    seg = online_segment(ostate["buffer"])
    buf = jax.vmap(lambda b, x, v: replay.add(b, x, v, seg, new_priority_max=new_priority_max))(
        ostate["buffer"], batch, valid)
    return {**ostate, "buffer": buf}


def online_count(ostate: dict) -> jax.Array:
    """Filled slots of every replica's online segment, ``[K]``."""
    return ostate["buffer"].seg_count[:, -1]


def online_rows(batch_size: int, old_share: float) -> int:
    """Rows of a ``batch_size`` minibatch drawn from the online segment when ``old_share`` of it
    comes from the offline ones: ``round((1 − old_share) · batch_size)``, at least 1 and at most
    ``batch_size − 1`` (both parts sampled)."""
    if not 0.0 < float(old_share) < 1.0:
        raise ValueError(f"old_share must be in (0, 1), got {old_share}")
    return min(max(int(round((1.0 - float(old_share)) * int(batch_size))), 1), int(batch_size) - 1)


def online_sample_share(ostate: dict, old_share: float | None, batch_size: int) -> jax.Array:
    """The share of a minibatch drawn from the online segment, per replica ``[K]``: by priority
    alone (``old_share`` None) ``Σ_online p^α / Σ_all p^α`` at the buffer's current priorities,
    else the fixed ``online_rows / batch_size``."""
    buf = ostate["buffer"]
    if old_share is not None:
        return jnp.full(buf.priority.shape[:1], online_rows(batch_size, old_share) / int(batch_size), jnp.float32)
    seg = online_segment(buf)
    return jax.vmap(replay.segment_share, in_axes=(0, None, None))(buf, seg, ostate["hp"]["alpha"])


def learn_kwargs(td3_config, spec: dict, a_range, *, old_share: float | None = None,
                 segment: int | None = None) -> dict:
    """``td3.learn_step``'s keyword arguments for the actor of ``spec`` (the offline ones).

    ``old_share`` None: every minibatch is drawn over all segments by priority alone
    (Algorithm 3's sampling, as Algorithm 4 runs it).  A number (variant ``old-share``, ours):
    that share of each minibatch from the offline segments and the rest from the online one,
    ``segment`` (``replay.sample_split``).  By priority alone the online segment gets about its
    share of the filled slots: a few hundred of the offline stages' tens of thousands.
    """
    actor = functools.partial(networks.actor_apply, spec)
    sample = replay.sample
    if old_share is not None:
        if segment is None:
            raise ValueError("old_share needs the online segment's index")
        sample = functools.partial(replay.sample_split, segment=int(segment),
                                   n_segment=online_rows(int(td3_config.batch_size), old_share))
    return dict(batch_size=int(td3_config.batch_size), sample=sample, actor_b=jax.vmap(actor, in_axes=(None, 0)),
                critic_b=jax.vmap(functools.partial(networks.critic_apply, a_range=a_range), in_axes=(None, 0, 0)),
                opt=td3.optimizer(td3_config), policy_delay=int(td3_config.policy_delay), a_range=tuple(a_range))


def learn(ostate: dict, active: jax.Array, *, n_steps: int, kw: dict) -> tuple[dict, dict]:
    """``n_steps`` TD3 steps (Algorithm 3 lines 6–13) on every replica whose ``active`` [K] is
    True (the others are returned unchanged); metrics ``[K]`` (means over the steps)."""
    hp = ostate["hp"]

    def one(agent, buf, key, gstep, on):
        # The transitions are read-only here: only the priorities ride in the loop, so the
        # (large) data arrays are never copied.
        def body(c, _):
            agent, prio, maxp, key, gstep = c
            b = buf.replace(priority=prio, max_priority=maxp)
            agent, b, key, m = td3.learn_step(agent, b, key, hp, gstep, **kw)
            return (agent, b.priority, b.max_priority, key, gstep + 1), m

        (a2, p2, mp2, k2, g2), ms = jax.lax.scan(body, (agent, buf.priority, buf.max_priority, key, gstep), None,
                                                  length=n_steps)
        keep = lambda new, old: jax.tree.map(lambda x, y: jnp.where(on, x, y), new, old)  # noqa: E731
        m = {k: jnp.mean(v) for k, v in ms.items()}
        buf = buf.replace(priority=jnp.where(on, p2, buf.priority), max_priority=jnp.where(on, mp2, buf.max_priority))
        return keep(a2, agent), buf, keep(k2, key), jnp.where(on, g2, gstep), m

    agent, buf, key, gstep, m = jax.vmap(one)(ostate["agent"], ostate["buffer"], ostate["key"], ostate["gstep"],
                                              active)
    finite = jax.vmap(lambda a: all_finite((a["actor"], a["critic1"], a["critic2"])))(agent)
    return {**ostate, "agent": agent, "buffer": buf, "key": key, "gstep": gstep}, {**m, "params_finite": finite}


def actor_of(ostate: dict, replica: int) -> dict:
    """The actor parameters of one replica (``{layer: {tensor: array}}``)."""
    return jax.tree.map(lambda x: x[replica], ostate["agent"]["actor"])


__all__ = ["grow_buffer", "online_segment", "init_online", "mi_stats", "local_util", "queue_cost", "record_reward", "add", "online_count",
           "online_rows", "online_sample_share", "learn_kwargs", "learn", "actor_of"]
