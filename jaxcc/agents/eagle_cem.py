"""Eagle: the cross-entropy method with a synthesized BBR teacher (Emara, Li, Chen; INFOCOM 2020).

Read top to bottom: network (a policy-file spec, so export is exact) → the cross-entropy pieces
(elite selection, loss) → the synthesized BBR teacher → Algorithm 2's schedule → ``make_train``.
Training, export and evaluation are the shared commands::

    python -m jaxcc.train --config=eagle
    python -m jaxcc.evaluate --suite=eagle --controller=bbr,cubic,policy:checkpoints/eagle/eagle.safetensors \
        --out=runs/eagle   # §V: 10 Mbit/s, 100 ms at 1, 2, 4 BDP buffers and the Verizon LTE trace

From the paper (Eagle, INFOCOM 2020, §IV-B to §IV-D):

* a 2-layer LSTM with 64 hidden units (§IV-B "Neural Network Model") over a state that is "a
  summary of the past four observation steps" (§IV-B "States"): the LSTMs run over the 4-step
  window from a zero state and the last output gives the logits — exactly the policy file's
  ``lstm, lstm, last_step, dense`` layers, evaluated by ``jaxcc.policyfile.forward``;
* five discrete rate actions ×2.89, ×1.25, hold, ÷1.25, ÷2.89 (BBR's gains, §IV-B "Actions");
  one step lasts 3 RTTs and an episode 50 steps (§IV-D); features, the phase rewards (eq. 7–8,
  Algorithm 1) and the training links come from the ``eagle`` environment (``jaxcc.envs``);
* the cross-entropy method (§IV-D): play batches of 5 episodes, keep the elite 3 of 5 by total
  reward and label the actions taken in them as the desired actions — a cross-entropy
  (behaviour-cloning) loss on the elites' (state, action) pairs;
* Algorithm 2: the teacher plays a decreasing share of the batch (2 of 5 episodes, down to 1);
  in the other episodes it plays a decaying share of the actions; in an *emergency* (high
  delay) lasting more than "emergencies to ignore" steps it takes over; once the mean episode
  reward passes the threshold, "emergencies to ignore" grows by one and the teacher's share of
  actions drops to 5 %.  Teacher-played episodes compete for the elite places like any other,
  which is how the teacher teaches.

The teacher is a *synthesized* BBR (§IV-C: "a synthesized BBR algorithm that imitates its
behaviour, rather than directly using BBR's real-world implementation", because BBR's state
machine assumes its own past actions).  It keeps BBR's path model — BtlBw a windowed max of
delivery rates, RTprop the min RTT — and its STARTUP → DRAIN → PROBE_BW machine with
``tcp_bbr.c``'s constants (imported from ``jaxcc.baselines.bbr``), and plays BBR's pacing gains
with Eagle's five actions.  It also handles what real BBR never meets (§IV-C "deplorable
network conditions"): when the RTT exceeds twice RTprop it drains hard.

Decided here (the paper gives no numbers): ``num_envs / 5`` groups of 5 episodes run in
parallel, each ranked on its own; Adam 1e-3, ``train_epochs`` full-batch steps on the elites
per batch; the teacher's action share starts at 50 % and decays ×0.97 per batch to 5 %;
the emergency is RTT > 2 × RTprop; ``reward_threshold`` is in the env's reward units.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple

import chex
import distrax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.baselines.bbr import FULL_BW_THRESH, HIGH_GAIN
from jaxcc.params import all_finite, glorot_uniform

ALGORITHM = "eagle"
LABEL = "Eagle"
GROUP = 5  # episodes per CEM batch (§IV-D "3 out of 5 in a batch")
N_ELITE = 3
# §IV-B: "increase or decrease its sending rate by a factor of 2.89 or 1.25 or do nothing"
# (the env's table is used when it has one; this is the fallback and the teacher's default).
MULTIPLIERS = (2.89, 1.25, 1.0, 1.0 / 1.25, 1.0 / 2.89)


# ----------------------------------------------------------------------------- network


def policy_spec(history: int, obs_dim: int, hidden: int = 64, n_actions: int = 5, *, features: dict | None = None,
                mi_rtts: float = 3.0, multipliers=MULTIPLIERS) -> dict:
    """The policy as a policy-file spec: LSTM(64) → LSTM(64) → last step → logits (discrete)."""
    feats = {"name": "eagle_v1"}
    feats.update(features or {})
    feats["history"], feats["obs_dim"] = int(history), int(obs_dim)
    return {
        "format": policyfile.FORMAT, "version": policyfile.VERSION, "algorithm": ALGORITHM,
        "features": feats, "mi_rtts": float(mi_rtts), "goal_dim": 0,
        "layers": [
            {"type": "lstm", "name": "lstm1", "in": int(obs_dim), "hidden": int(hidden)},
            {"type": "lstm", "name": "lstm2", "in": int(hidden), "hidden": int(hidden)},
            {"type": "last_step"},
            {"type": "dense", "name": "logits", "in": int(hidden), "out": int(n_actions), "activation": "linear"},
        ],
        "head": {"type": "discrete", "n": int(n_actions)},
        "action": {"type": "rate_table", "multipliers": [float(m) for m in multipliers],
                   "min_mbps": policyfile.DEFAULT_MIN_MBPS, "max_mbps": policyfile.DEFAULT_MAX_MBPS},
    }


def init_params(key, obs_dim: int, hidden: int = 64, n_actions: int = 5) -> dict:
    """``{layer: {tensor: x}}`` with the policy file's names; Glorot, forget-gate bias 1, a
    small logits layer (the untrained policy is close to uniform: a random policy)."""
    ks = jax.random.split(key, 5)
    fb = jnp.zeros((4 * hidden,), jnp.float32).at[hidden:2 * hidden].set(1.0)
    return {
        "lstm1": {"kernel_i": glorot_uniform(ks[0], (obs_dim, 4 * hidden)),
                  "kernel_h": glorot_uniform(ks[1], (hidden, 4 * hidden)), "bias": fb},
        "lstm2": {"kernel_i": glorot_uniform(ks[2], (hidden, 4 * hidden)),
                  "kernel_h": glorot_uniform(ks[3], (hidden, 4 * hidden)), "bias": fb},
        "logits": {"kernel": 0.01 * glorot_uniform(ks[4], (hidden, n_actions)),
                   "bias": jnp.zeros((n_actions,), jnp.float32)},
    }




def logits_fn(spec: dict, params: dict, window):
    """Logits for one window [T, D] (vmap for batches): the exported file's own forward pass."""
    return policyfile.forward(spec, pipeline.flat(params), window)


# ----------------------------------------------------------------------------- cross-entropy


def elite_mask(returns: jax.Array, n_elite: int = N_ELITE) -> jax.Array:
    """Top-``n_elite`` episodes of each group by total reward.

    Args:
      returns: [G, E, ...] episode returns, E episodes per group (E = 5 in the paper); trailing
        axes (agents) are ranked separately.
    Returns:
      bool [G, E, ...]; ties go to the lower episode index (stable sort).
    """
    order = jnp.argsort(-returns, axis=1, stable=True)  # best first
    rank = jnp.argsort(order, axis=1, stable=True)
    return rank < n_elite


def policy(logits: jax.Array) -> distrax.Categorical:
    """π(·|s): the categorical distribution over the five rate actions."""
    return distrax.Categorical(logits=logits)


def ce_loss(logits: jax.Array, actions: jax.Array, weights: jax.Array) -> jax.Array:
    """Cross-entropy of the policy against the elite actions: −Σ w·log π(a|s) / Σ w."""
    lp = policy(logits).log_prob(actions.astype(jnp.int32))
    w = weights.astype(lp.dtype)
    return -jnp.sum(w * lp) / jnp.maximum(jnp.sum(w), 1.0)


# ----------------------------------------------------------------------------- synthesized BBR


class TeacherObs(NamedTuple):
    """What the teacher reads after each step (per flow; bytes/s and s), from the env's info."""

    rate: jax.Array  # the current sending rate, which the next action multiplies
    delivery: jax.Array  # delivery rate measured over the step
    rtt: jax.Array  # mean RTT over the step (0 when no sample)


class TeacherState(NamedTuple):
    mode: jax.Array  # int32: STARTUP, DRAIN, PROBE_BW
    bw: jax.Array  # [W] delivery-rate samples of the last W steps (BtlBw = their max)
    rtprop: jax.Array  # min RTT sample so far (RTprop; NO_RTT before the first)
    full_bw: jax.Array
    full_cnt: jax.Array
    cycle: jax.Array


STARTUP, DRAIN, PROBE_BW = 0, 1, 2
NO_RTT = 1e9
BW_WINDOW_STEPS = 4  # ≥ 10 RTTs at 3 RTTs a step, as tcp_bbr.c's 10-round BtlBw window
# tcp_bbr.c leaves STARTUP after 3 rounds without 25 % growth; one 3-RTT step is 3 rounds.
FULL_BW_STEPS = 1
# BBR probes for one RTprop in every 8; a step is 3 RTprops, so one probing step in 4 keeps
# the probe's share of time (and of queue) close to BBR's.
CYCLE_STEPS = 4
QUEUE_RATIO = 1.25  # "a queue": the step's RTT more than 25 % above RTprop (inflight > BDP)
DEPLORABLE_RATIO = 2.0  # RTT above 2 × RTprop: conditions real BBR never reaches
BELOW_BW = 0.85  # cruising more than 15 % under BtlBw: catch up (what BBR's 1.0 gain restores)


def teacher_init(shape=()) -> TeacherState:
    z = jnp.zeros(shape, jnp.float32)
    return TeacherState(mode=jnp.zeros(shape, jnp.int32), bw=jnp.zeros(shape + (BW_WINDOW_STEPS,), jnp.float32),
                        rtprop=jnp.full(shape, NO_RTT, jnp.float32), full_bw=z,
                        full_cnt=jnp.zeros(shape, jnp.int32), cycle=jnp.zeros(shape, jnp.int32))


def rtt_ratio(s: TeacherState, o: TeacherObs):
    """(known, RTT / RTprop) — 1 when either is unknown."""
    ok = (s.rtprop < NO_RTT) & (o.rtt > 0)
    return ok, jnp.where(ok, o.rtt / jnp.where(ok, s.rtprop, 1.0), 1.0)


def teacher_update(s: TeacherState, o: TeacherObs) -> TeacherState:
    """BBR's path model and state machine, one Eagle step (3 RTTs) at a time."""
    bw = jnp.concatenate([s.bw[..., 1:], o.delivery[..., None]], axis=-1)
    btlbw = jnp.max(bw, axis=-1)  # BtlBw: windowed max of delivery rates
    rtprop = jnp.where(o.rtt > 0, jnp.minimum(s.rtprop, o.rtt), s.rtprop)  # RTprop: min RTT
    s = s._replace(rtprop=rtprop)
    ok, ratio = rtt_ratio(s, o)
    # STARTUP: bbr_check_full_bw_reached — 25 % growth resets the count.
    grew = btlbw >= FULL_BW_THRESH * s.full_bw
    full_bw = jnp.where(grew, btlbw, s.full_bw)
    full_cnt = jnp.where(grew, 0, s.full_cnt + 1)
    # A standing queue also ends STARTUP: at 3 RTTs a step, waiting for the bandwidth plateau
    # alone would overshoot by 2.89² before the plateau is seen.
    leave_startup = (full_cnt >= FULL_BW_STEPS) | (ok & (ratio > QUEUE_RATIO))
    mode = jnp.where((s.mode == STARTUP) & leave_startup, DRAIN, s.mode)
    # DRAIN → PROBE_BW when the queue is gone (bbr_check_drain: inflight ≤ BDP).
    enter_probe = (s.mode == DRAIN) & ((~ok) | (ratio <= QUEUE_RATIO))
    mode = jnp.where(enter_probe, PROBE_BW, mode)
    # Gain cycling; the probe comes CYCLE_STEPS − 1 steps after entering PROBE_BW.
    cycle = jnp.where(mode == PROBE_BW, jnp.where(enter_probe, 1, (s.cycle + 1) % CYCLE_STEPS), 0)
    return TeacherState(mode=mode, bw=bw, rtprop=rtprop, full_bw=full_bw, full_cnt=full_cnt, cycle=cycle)


def _index_of(factor: float, multipliers) -> int:
    logs = np.log(np.asarray(multipliers, np.float64))
    return int(np.argmin(np.abs(logs - math.log(factor))))


def teacher_action(s: TeacherState, o: TeacherObs, multipliers=MULTIPLIERS) -> jax.Array:
    """BBR's pacing gains, played with Eagle's five rate actions.

    STARTUP ×2.89 (high_gain); DRAIN ÷2.89 (drain_gain) while far above BtlBw or in deplorable
    delay, then ÷1.25 until the queue is gone; PROBE_BW: ×1.25 once per cycle (the 1.25 probe),
    ÷1.25 while a queue stands (the 0.75 phase), ×1.25 when far below BtlBw, else hold (gain 1).
    """
    up2, up, hold, down, down2 = (_index_of(f, multipliers) for f in (HIGH_GAIN, 1.25, 1.0, 1 / 1.25, 1 / HIGH_GAIN))
    btlbw = jnp.max(s.bw, axis=-1)
    ok, ratio = rtt_ratio(s, o)
    queued = ok & (ratio > QUEUE_RATIO)
    deplorable = ok & (ratio > DEPLORABLE_RATIO)
    rel = jnp.where(btlbw > 0, o.rate / jnp.maximum(btlbw, 1e-9), 1.0)
    drain = jnp.where(deplorable | (rel > 1.5), down2, down)
    probe = jnp.where(deplorable, down2, jnp.where(queued, down, jnp.where(
        s.cycle == 0, up, jnp.where(rel < BELOW_BW, up, hold))))
    a = jnp.where(s.mode == STARTUP, up2, jnp.where(s.mode == DRAIN, drain, probe))
    return a.astype(jnp.int32)


def emergency(s: TeacherState, o: TeacherObs, ratio_threshold: float) -> jax.Array:
    """High delay: the step's mean RTT is more than ``ratio_threshold`` × RTprop."""
    ok, ratio = rtt_ratio(s, o)
    return ok & (ratio > ratio_threshold)


# ----------------------------------------------------------------------------- Algorithm 2


def schedule_init(c) -> dict:
    """Algorithm 2's knobs (c = config.cem): teacher episodes per 5, teacher action share,
    emergencies to ignore, whether the reward threshold was ever passed."""
    return {"teacher_episodes": jnp.float32(c.teacher_episodes_start), "p_teacher": jnp.float32(c.p_teacher_start),
            "ignore": jnp.int32(c.emergencies_to_ignore), "passed": jnp.bool_(False)}


def schedule_update(s: dict, mean_reward: jax.Array, c) -> dict:
    """Algorithm 2 lines 5 and 16–19, after a batch."""
    te = jnp.maximum(s["teacher_episodes"] - c.teacher_episodes_decay, c.teacher_episodes_end)
    p = jnp.maximum(s["p_teacher"] * c.p_teacher_decay, c.p_teacher_min)  # line 16
    hit = mean_reward > c.reward_threshold  # line 17
    ignore = jnp.where(hit, jnp.minimum(s["ignore"] + 1, c.max_emergencies_to_ignore), s["ignore"])  # line 18
    p = jnp.where(hit, jnp.minimum(p, c.p_teacher_after_threshold), p)  # line 19
    return {"teacher_episodes": te.astype(jnp.float32), "p_teacher": p.astype(jnp.float32),
            "ignore": ignore.astype(jnp.int32), "passed": s["passed"] | hit}


# ----------------------------------------------------------------------------- environment


def make_env(config):
    """``jaxcc.envs.make_env(config.env.name, **config.env.overrides)`` → (env, params), with
    the training distribution's fields named in ``config.env.params`` replaced (e.g.
    ``step_frac``; an unknown name is an error)."""
    from jaxcc import envs
    from jaxcc.envs import base as env_base

    env, params = envs.make_env(str(config.env.name), **dict(config.env.get("overrides", {}) or {}))
    if env.config.flow_clock and env.config.num_flows > 1:
        raise ValueError(f"config.env.overrides.flow_clock=True with num_flows={env.config.num_flows}: expected "
                         f"num_flows=1 (Eagle's CEM learns from every step of every flow, not from each flow's "
                         f"own MIs; the Pareto, MOCC and DeepCC trainers mask by info['active'])")
    return env, env_base.replace_params(params, config.env.get("params", {}))


def env_contract(config) -> tuple[tuple[float, ...], dict]:
    """The env's action multipliers and the policy file's feature block."""
    import importlib

    from jaxcc import envs

    name = str(config.env.name)
    over = dict(config.env.get("overrides", {}) or {})
    try:
        mults = tuple(float(m) for m in importlib.import_module(f"jaxcc.envs.{name}").MULTIPLIERS)
    except (ImportError, AttributeError):
        mults = MULTIPLIERS
    return mults, dict(envs.export_features_spec(name, **over))


def teacher_obs(info: dict, shape) -> TeacherObs:
    """The teacher's inputs from the env's ``info``: the rate now in force (``rate``), the step's
    ``delivery_rate`` and mean RTT (``rtt_mean``)."""
    g = lambda k: jnp.broadcast_to(jnp.asarray(info[k], jnp.float32), shape)  # noqa: E731
    return TeacherObs(rate=g("rate"), delivery=g("delivery_rate"), rtt=g("rtt_mean"))


# ----------------------------------------------------------------------------- training


Stage = pipeline.Stage


@dataclasses.dataclass
class Trainer(pipeline.Trainer):
    """Pure pieces of a run, driven by ``jaxcc.train`` (one stage)."""

    update: Callable  # state -> (state, metrics): one CEM batch
    rollout: Callable  # (actor, sched, key, mode) -> trajectories; mode: train | teacher | policy | greedy
    env: Any = None
    env_params: Any = None


_strong = pipeline.strong


def make_train(config, mesh=None) -> Trainer:
    """Build the CEM trainer (see ``configs/eagle.py``).

    ``mesh``: the episodes (environment lanes) of a batch and the cross-entropy loss over their
    steps are split over its devices (``pipeline.data_sharding``; XLA all-reduces the
    gradient); ``None`` or one device: no constraint.

    State: ``agent`` {actor, opt}, ``sched`` (Algorithm 2's knobs), ``env`` (per-lane
    bookkeeping; every batch starts fresh episodes), ``key``, ``counters``.
    """
    c = config.cem
    env, env_params = make_env(config)
    E = int(config.num_envs)
    if E % GROUP:
        raise ValueError(f"config.num_envs={E} must be a multiple of {GROUP} (CEM batches of 5 episodes)")
    G = E // GROUP
    pipeline.require_multiple(mesh, {"config.num_envs": E})
    shard = pipeline.data_sharding(mesh)  # lanes: the leading axis
    shard_steps = pipeline.data_sharding(mesh, axis=1)  # trajectories [S, E, ...]: their lane axis
    S = int(c.episode_steps)
    multipliers, feats = env_contract(config)
    obs_shape = tuple(jax.eval_shape(lambda k: env.reset(k, env_params), jax.random.PRNGKey(0))[0].shape)
    A, T, D = obs_shape[0], obs_shape[-2], obs_shape[-1]
    H = int(c.hidden)
    spec = policy_spec(T, D, H, len(multipliers), features=feats, mi_rtts=float(feats.get("mi_rtts", 3.0)),
                       multipliers=multipliers)
    tx = optax.chain(optax.clip_by_global_norm(float(c.max_grad_norm)), optax.adam(float(c.lr)))
    chunk = int(config.chunk_updates)
    num_updates = int(config.num_updates)
    if num_updates % chunk:
        raise ValueError(f"config.num_updates={num_updates} must be a multiple of chunk_updates={chunk}")

    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    logits_b = jax.vmap(functools.partial(logits_fn, spec), in_axes=(None, 0))

    def logits_of(actor, obs):  # obs [..., T, D] -> [..., n]
        return logits_b(actor, obs.reshape((-1, T, D))).reshape(obs.shape[:-2] + (-1,))

    def init(key):
        key = jnp.asarray(key)
        k_p, k_r = jax.random.split(key)
        actor = init_params(k_p, D, H, len(multipliers))
        return _strong({"agent": {"actor": actor, "opt": tx.init(actor)}, "sched": schedule_init(c),
                        "env": {"last_return": jnp.zeros((E, A), jnp.float32)}, "key": k_r,
                        "counters": {"update": jnp.zeros((), jnp.int32), "env_steps": jnp.zeros((), jnp.int32)}})

    def rollout(actor, sched, key, mode: str = "train"):
        """One batch of E episodes of S steps (Algorithm 2 lines 5–14).  ``mode``: 'train' (the
        teacher schedule), 'teacher' (teacher only), 'policy' (sampled, no teacher), 'greedy'."""
        ep = env_params
        k_reset, k_run = jax.random.split(key)
        obs, st = v_reset(jax.random.split(k_reset, E), ep)
        shape = (E, A)
        # Line 5: the first round(teacher_episodes) episodes of every group of 5 are the teacher's.
        t_ep = jnp.broadcast_to(((jnp.arange(E) % GROUP) < jnp.round(sched["teacher_episodes"]))[:, None], shape)
        z = jnp.zeros(shape, jnp.float32)

        def one(carry, k):
            st, obs, ts, to, emerg = shard(carry)
            k_a, k_u, k_e = jax.random.split(k, 3)
            logits = logits_of(actor, obs)
            # Sampled from the raw logits, as always: distrax's Categorical samples from the
            # log-softmax-normalised logits, the same distribution but not the same bits.
            pol = jnp.argmax(logits, -1) if mode == "greedy" else jax.random.categorical(k_a, logits)
            t_a = teacher_action(ts, to, multipliers)
            emerg = jnp.where(emergency(ts, to, float(c.emergency_rtt_ratio)), emerg + 1, 0)  # lines 7–9
            if mode == "train":
                take_over = emerg > sched["ignore"]  # lines 10–11
                timed = jax.random.uniform(k_u, shape) < sched["p_teacher"]  # lines 12–13
                use_t = t_ep | take_over | timed
            else:
                use_t = jnp.full(shape, mode == "teacher")
            a = jnp.where(use_t, t_a, pol).astype(jnp.int32)
            obs2, st, r, term, trunc, info = v_step(jax.random.split(k_e, E), st, a, ep)
            to = teacher_obs(info, shape)
            ts = teacher_update(ts, to)
            out = {"obs": obs, "action": a, "reward": jnp.broadcast_to(r, shape).astype(jnp.float32),
                   "teacher": use_t, "emergency": emerg > 0, "rate": to.rate, "delivery": to.delivery,
                   "rtt": to.rtt}
            return (st, obs2, ts, to, emerg), out

        carry = (st, obs, teacher_init(shape), TeacherObs(z, z, z), jnp.zeros(shape, jnp.int32))
        _, traj = jax.lax.scan(one, carry, jax.random.split(k_run, S))
        traj["teacher_episode"] = t_ep
        return traj

    def update(state):
        key, k_roll = jax.random.split(state["key"])
        sched = state["sched"]
        traj = shard_steps(rollout(state["agent"]["actor"], sched, k_roll))
        chex.assert_shape([traj["reward"], traj["action"], traj["teacher"]], (S, E, A))
        returns = jnp.sum(traj["reward"], axis=0)  # [E, A]
        # Line 15: the elites are the best 3 of each group of 5 episodes.
        elite = elite_mask(returns.reshape((G, GROUP, A))).reshape((E, A))
        w = jnp.broadcast_to(elite[None], traj["action"].shape)

        def loss(actor):
            # vmapped over the S steps, so that each step's [E, ...] keeps its lanes split over the
            # devices (flattening [S, E] into one axis would gather the whole batch on each device)
            return ce_loss(jax.vmap(lambda o: logits_of(actor, o))(traj["obs"]), traj["action"], w)

        def grad_step(carry, _):
            actor, opt = carry
            l, g = jax.value_and_grad(loss)(actor)
            upd, opt = tx.update(g, opt, actor)
            return (optax.apply_updates(actor, upd), opt), l

        (actor, opt), losses = jax.lax.scan(grad_step, (state["agent"]["actor"], state["agent"]["opt"]), None,
                                            length=int(c.train_epochs))
        t_ep = traj["teacher_episode"]
        agent_ep = ~t_ep
        mean_agent = jnp.sum(jnp.where(agent_ep, returns, 0.0)) / jnp.maximum(jnp.sum(agent_ep), 1)
        new_sched = schedule_update(sched, mean_agent, c)  # lines 16–19 on the agent's episodes
        cn = state["counters"]
        metrics = {
            "episode_return": jnp.mean(returns), "agent_return": mean_agent,
            "teacher_return": jnp.sum(jnp.where(t_ep, returns, 0.0)) / jnp.maximum(jnp.sum(t_ep), 1),
            "elite_return": jnp.sum(jnp.where(elite, returns, 0.0)) / jnp.maximum(jnp.sum(elite), 1),
            "reward": jnp.mean(traj["reward"]), "expert_share": jnp.mean(traj["teacher"]),
            "emergency_share": jnp.mean(traj["emergency"]), "critic_loss": losses[-1], "ce_loss": losses[-1],
            "ce_loss_first": losses[0], "p_teacher": new_sched["p_teacher"],
            "teacher_episodes": new_sched["teacher_episodes"], "emergencies_to_ignore": new_sched["ignore"],
            "params_finite": all_finite(actor),
        }
        new = {"agent": {"actor": actor, "opt": opt}, "sched": new_sched, "env": {"last_return": returns},
               "key": key, "counters": {"update": cn["update"] + 1, "env_steps": cn["env_steps"] + E * S}}
        return new, metrics

    def run_chunk(state, stage_idx: int = 0):
        return jax.lax.scan(lambda s, _: update(s), state, None, length=chunk)

    def template(stage_idx: int = 0):
        return jax.eval_shape(init, jax.random.PRNGKey(0))

    stage = Stage(0, "eagle", LABEL, num_updates, num_updates // chunk)
    return Trainer(config=config, stages=[stage], chunk_updates=chunk, actor_spec=spec, init=init,
                   enter_stage=lambda s, i: s, run_chunk=run_chunk, template=template,
                   update=update, rollout=rollout, env=env, env_params=env_params)
