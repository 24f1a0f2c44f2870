"""``deepcc_v1``: the simulator sender of an exported DeepCC policy (IEEE/ACM ToN 2022), goal-conditioned.

Twin of ``DeepccFeatures`` in ``datapath/src/mi_features.cc``.  Every ``mi_rtts`` (½) RTT the
state s_t of §IV-B and the measurement m_t of eq. 1 ([last action, EWMA RTT / min RTT, sending
rate / bound, queuing delay / min RTT, throughput / max, delay_t / min RTT, loss]) from
``DeepccEnv.observe`` (``jaxcc.envs.deepcc``); the network on the 16-step window and the goal
(``jaxcc.policyfile.apply``, the ``concat_goal`` layer); the head's output normalised to
u ∈ [0, 1] and sent at u · ``bound_mbps`` (``DeepccEnv.apply_action``, the action block's
``rate_absolute``).  A file whose features state ``cwnd_rtts`` > 0 also gets the window the paper's
sender ACK-clocks, cwnd_rtts × rate × min RTT, from the second decision on
(``deepcc.ack_clock_cwnd``).  delay_t is the MI's largest per-tick RTT sample, the nearest-rank 95th
percentile of its at most 20 samples, as in training.

Goal g (throughput, delay, loss weights): the policy's goal input, 1/3 each unless given
(``controller(..., goal=)``) — what the datapath sender feeds without ``--goal``.  A flow's fixed
``goal`` (scenario field; ``SenderParams.preference``, ``jaxcc.sim.controller.preference_at``)
replaces it.

Online goal tuning (§IV-C; ``jaxcc.senders.goal_tuning``, whose docstring holds the readings):
when the flow has a ``target`` (``SenderParams.target``, ``target_on`` set) the sender keeps a
``TunerState`` and an interval accumulator in ``Own``: every decision after an MI adds that MI's
measurement m (eq. 1, ``DeepccEnv.observe``'s ``info["measurement"]``) to the accumulator;
at every ``interval_decisions(mi_rtts)``-th (8 at ½ RTT: 4 RTT) the tuner steps on their mean
against the target in eq.-1 units (the flow's current max throughput and min RTT), and the
decision uses the tuned goal (``Own.goal`` is the goal each decision used).  The tuner starts
from the sender's default goal (1/3 each), as ``jaxcc-sender --target`` without ``--goal``.
``target_on`` picks the tuner (``gt.TUNER_CODES``: 1 the paper's, 2 "p95", whose delay view is
``gt.delay_tail`` of the interval's MI delay ratios, kept in ``Own.d_buf``).
Like the C++ sender, a decision counts toward the interval only when an MI preceded it (the
first decision, before any feedback, does not).  Deterministic: no randomness anywhere.

Start: the first decision on the empty window (the environment acts at reset), before any tick.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcc import envs, policyfile
from jaxcc.envs import base as env_base
from jaxcc.envs import deepcc
from jaxcc.envs import mi as mi_lib
from jaxcc.senders import common
from jaxcc.senders import goal_tuning as gt
from jaxcc.sim.controller import Action, Controller
from jaxcc.sim.core import BIG
from jaxcc.units import MBPS

NAME = "deepcc_v1"
SENDER_INIT_RATE = 1.0 * MBPS  # bytes/s before the first decision (jaxcc-sender --init-mbps 1)


class Own(NamedTuple):
    rate: jax.Array  # [1] bytes/s
    paper: Any  # deepcc.DeepccFlow ([1] leaves)
    tuner: gt.TunerState  # online goal tuning (used when the flow has a target)
    acc: jax.Array  # [3] sum of the measurements of this tuning interval's decisions
    acc_n: jax.Array  # int32: decisions counted in this interval
    d_buf: jax.Array  # [interval_decisions] their MIs' delay ratios m² (the "p95" tuner's samples)
    last_m: jax.Array  # [3] the last MI's measurement (eq. 1)
    have_m: jax.Array  # bool: an MI was observed since the last decision
    goal: jax.Array  # [3] the goal the last decision used
    cwnd: jax.Array  # [1] bytes: the ACK-clocked window (features.cwnd_rtts; BIG without one)


def env_and_params(spec: dict):
    """The ``deepcc`` environment (one flow, the file's history) and its parameters with the file's
    numbers (``deepcc.params_from_features``: bound, low, EWMA gain, start action); checks that the policy's head, action block and goal fit the feature set.

    Raises:
      ValueError: naming the field that does not fit.
    """
    feats = spec["features"]
    bound = float(feats.get("bound_mbps", deepcc.BOUND_MBPS))
    if not bound > 0:
        raise ValueError(f"policy features: 'bound_mbps'={bound} must be > 0")
    head, action = spec["head"], spec["action"]
    if head["type"] not in ("continuous", "gaussian_mean"):
        raise ValueError(f"deepcc_v1: head must be continuous or gaussian_mean (a rate in [0, bound]), got {head['type']}")
    low = float(feats.get("low_mbps", deepcc.LOW_MBPS))
    if (action["type"] != "rate_absolute" or abs(float(action.get("bound_mbps", 0.0)) - bound) > 1e-6 * bound
            or action.get("scale") != "log" or abs(float(action.get("low_mbps", 0.0)) - low) > 1e-6 * low):
        raise ValueError(f"deepcc_v1: action must be rate_absolute, scale log, low_mbps {low} and bound_mbps {bound} "
                         f"(features.low_mbps, features.bound_mbps: what the simulator sender maps with), got "
                         f"{action['type']} scale {action.get('scale')} low {action.get('low_mbps')} "
                         f"bound {action.get('bound_mbps')}")
    goal = feats.get("goal")
    n_goal = len(goal) if isinstance(goal, list) else 3
    if int(spec.get("goal_dim", 0)) != n_goal:
        raise ValueError(f"deepcc_v1: goal_dim must be {n_goal} (one weight per objective), got {spec.get('goal_dim')}")
    env, p = envs.make_env("deepcc", history=int(feats["history"]), num_flows=1)
    return env, deepcc.params_from_features(p, feats)


def sender(spec: dict, tensors: dict, goal=None) -> common.Sender:
    """The ``deepcc_v1`` sender of a policy with goal ``goal`` (default 1/G each), tuned online
    toward a flow's target when it has one (module docstring)."""
    env, p = env_and_params(spec)
    g = common.policy_goal(spec, goal)
    ten = common.tensors_as_arrays(tensors)
    lo, hi = float(spec["head"]["low"]), float(spec["head"]["high"])
    n_tune = gt.interval_decisions(float(spec["mi_rtts"]))
    tunable = g.shape[0] == gt.DIM  # goal tuning and the PREFERENCE slots need (throughput, delay, loss)

    def start(rtt0):
        z = jnp.zeros((gt.DIM,), jnp.float32)
        return Own(rate=jnp.full((1,), SENDER_INIT_RATE, jnp.float32), paper=env.init_paper(None, p),
                   tuner=gt.init(z, g if tunable else z), acc=z, acc_n=jnp.zeros((), jnp.int32),
                   d_buf=jnp.zeros((n_tune,), jnp.float32), last_m=z,
                   have_m=jnp.zeros((), bool), goal=g, cwnd=jnp.full((1,), BIG, jnp.float32))

    def tune(own: Own, run, rtt0, target):
        """The tuner after this decision's measurement (a step at the end of an interval)."""
        on = target[gt.DIM] > 0
        p95 = target[gt.DIM] > 0.5 * (gt.TUNER_CODES["paper"] + gt.TUNER_CODES["p95"])
        acc = own.acc + jnp.where(own.have_m, own.last_m, 0.0)
        d_buf = jnp.where(own.have_m & (jnp.arange(n_tune) == own.acc_n), own.last_m[1], own.d_buf)
        n = own.acc_n + own.have_m.astype(jnp.int32)
        due = n >= n_tune
        tuner = gt.set_target(own.tuner, target[:gt.DIM])
        if rtt0 is not None:  # the first decision (rtt0 None) has no measurement: never due
            min_rtt = mi_lib.known_min_rtt(run, rtt0)[0]
            stepped = gt.step(tuner, acc / jnp.maximum(n, 1).astype(jnp.float32), own.paper.thr_max[0], min_rtt,
                              p95, gt.delay_tail(d_buf, n))
            tuner = jax.tree.map(lambda a, b: jnp.where(due & on, a, b), stepped, tuner)
        acc = jnp.where(due, 0.0, acc)
        n = jnp.where(due, 0, n)
        return own._replace(tuner=tuner, acc=acc, acc_n=n, d_buf=d_buf, have_m=jnp.zeros((), bool)), on

    def decide(own: Own, hist, run, rtt0, preference=None, target=None):
        fixed = g if preference is None else preference
        goal_now = fixed
        if target is not None:
            own, on = tune(own, run, rtt0, target)
            goal_now = jnp.where(on, own.tuner.goal, fixed)
        u = (policyfile.apply(spec, ten, hist, goal_now).reshape(-1)[:1] - lo) / (hi - lo)  # the env's a in [0, 1]
        # The window (features.cwnd_rtts) from the known min RTT, the link's RTT before a sample
        # (none on the first decision, before any MI: rtt0 None there).
        link = types.SimpleNamespace(rtt=jnp.full((1,), BIG if rtt0 is None else rtt0, jnp.float32))
        st = types.SimpleNamespace(cwnd=own.cwnd, paper=own.paper, run=run, link=link)
        rate, cwnd, paper = env.apply_action(st, u, p)
        rate = jnp.clip(rate, env_base.MIN_RATE, env_base.MAX_RATE)
        return own._replace(rate=rate.astype(jnp.float32), paper=paper, goal=goal_now.astype(jnp.float32),
                            cwnd=cwnd.astype(jnp.float32))

    def observe(own: Own, m, run, rtt0):
        st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=jnp.full((1,), rtt0)), goal=own.goal[None],
                                   rate=own.rate)
        out = env.observe(st, own.paper, m, run, None, p)
        return out.features[0], own._replace(paper=out.paper, last_m=out.info["measurement"][0].astype(jnp.float32),
                                             have_m=jnp.ones((), bool))

    def act(own: Own):
        return Action(rate=own.rate[0], cwnd=own.cwnd[0])

    return common.Sender(start=start, decide=decide, observe=observe, act=act, preference=g if tunable else None,
                         takes_target=tunable)


def controller(name: str, spec: dict, tensors: dict, goal=None, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors, goal), safe=safe)
