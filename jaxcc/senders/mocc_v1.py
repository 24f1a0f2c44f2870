"""``mocc_v1``: the simulator sender of an exported MOCC policy (IWQoS 2021), preference-conditioned.

Twin of ``MoccFeatures`` in ``datapath/src/mi_features.cc``.  Every ``mi_rtts`` RTTs the state
of §IV-A, [Delay, ACK rate, sending rate, cwnd] normalised as the ``mocc`` environment does, from
``MoccEnv.observe`` (``jaxcc.envs.mocc``; the max ACK rate over an EWMA of the ACK rate when the
file states ``max_ack_ewma``); the network on the window and the preference
(``jaxcc.policyfile.apply``, the ``concat_goal`` layer; argmax of the Q-values); then §IV-A's
window action, cwnd · ``cwnd_mults[a]`` + ``cwnd_deltas_pkts[a]`` packets (at least ``min_cwnd_pkts``), overridden
at step ``init_step`` by §IV-B's init-cwnd b × F(mean ACK rate) packets, and paced at
``pacing_gain`` · cwnd / min RTT — ``MoccEnv.apply_action`` with the file's table and numbers.

Preference ω (throughput, delay, loss; ``jaxcc.envs.mocc.OBJECTIVES``): the policy's goal input
and the weights of its Q-values (a ``q_values`` head with ``objectives`` 3: the action is
argmax_a ω·Q(s, a, ω)).  A scenario flow's ``preference`` (and its ``preference_changes`` at
their times) when given (``jaxcc.senders.common``: the controller reads them from the flow's
``SenderParams``), else ``controller(..., goal=)``, else 1/3 each — what the datapath sender feeds without
``--preference``.

Start: a window of ``init_cwnd_pkts`` (10) packets, and the first decision on the empty window
(the environment acts at reset).  Its pacing needs the min RTT, which the simulator reveals with
the first tick, so that decision is taken at the end of the first tick; during it the flow
sends the initial window at the datapath sender's initial 1 Mbit/s.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcc import envs, policyfile
from jaxcc.envs import base as env_base
from jaxcc.envs import mocc
from jaxcc.senders import common
from jaxcc.sim.controller import Action, Controller

from jaxcc.units import MBPS, MSS, PACKET_BYTES

NAME = "mocc_v1"
SENDER_INIT_RATE = 1.0 * MBPS  # bytes/s before the first decision (jaxcc-sender --init-mbps 1)
SPEC_PARAMS = ("timeout_min_s", "timeout_rtts", "init_cwnd_pkts", "min_cwnd_pkts", "max_cwnd_pkts", "b", "pacing_gain",
               "init_ref_rtt_s", "max_ack_ewma")


class Own(NamedTuple):
    rate: jax.Array  # [1] bytes/s
    cwnd: jax.Array  # [1] bytes
    paper: Any  # mocc.MoccFlow ([1] leaves)


def env_and_params(spec: dict):
    """The ``mocc`` environment (one flow, the file's history) and its parameters with the file's
    numbers; checks that the policy's head, action table and goal fit the feature set.

    Raises:
      ValueError: naming the field that does not fit.
    """
    feats = spec["features"]
    # A file without the table takes MOCC's (``mocc.CWND_DELTAS_PKTS``, ``CWND_MULTS``); one with
    # deltas but no multipliers, multipliers 1 (the C++ sender's defaults too).
    deltas = [float(d) for d in feats.get("cwnd_deltas_pkts", mocc.CWND_DELTAS_PKTS)]
    mults = [float(k) for k in feats.get("cwnd_mults", mocc.CWND_MULTS if "cwnd_deltas_pkts" not in feats
                                         else [1.0] * len(deltas))]
    head, action = spec["head"], spec["action"]
    n_obj = len(feats.get("objectives", mocc.OBJECTIVES))
    if (head["type"] != "q_values" or int(head["n"]) != len(deltas)
            or int(head.get("objectives", 1)) != n_obj):
        raise ValueError(f"mocc_v1: head must be q_values over {len(deltas)} actions (features.cwnd_deltas_pkts) "
                         f"with objectives {n_obj} (features.objectives: {', '.join(feats.get('objectives', mocc.OBJECTIVES))}), "
                         f"got {head['type']} n={head.get('n')} objectives={head.get('objectives', 1)}")
    want = [d * PACKET_BYTES for d in deltas]
    got = [float(d) for d in action.get("deltas", [])] if action["type"] == "cwnd_table" else None
    if got is None or len(got) != len(want) or any(abs(a - b) > 1e-6 * max(abs(a), abs(b)) + 1e-9
                                                   for a, b in zip(got, want)):
        raise ValueError(f"mocc_v1: action must be cwnd_table with deltas {want} bytes (features.cwnd_deltas_pkts "
                         f"x 1500), got {action['type']} {got}")
    got_k = [float(k) for k in action.get("multipliers", [1.0] * len(got))]
    if len(mults) != len(deltas) or got_k != mults:
        raise ValueError(f"mocc_v1: action.multipliers must be {mults} (features.cwnd_mults), got {got_k}")
    if int(spec.get("goal_dim", 0)) != n_obj:
        raise ValueError(f"mocc_v1: goal_dim must be {n_obj} (one preference per objective), got {spec.get('goal_dim')}")
    bw_set = [float(x) for x in feats.get("bw_set_mbps", mocc.BW_SET_MBPS)]
    if any(b <= a for a, b in zip(bw_set, bw_set[1:])):
        raise ValueError(f"policy features: 'bw_set_mbps' must be increasing, got {bw_set}")
    init_step = feats.get("init_step", 2)
    if not (isinstance(init_step, (int, float)) and float(init_step).is_integer() and init_step >= 0):
        raise ValueError(f"policy features: 'init_step'={init_step!r} must be an integer >= 0")
    ref = feats.get("init_ref_rtt_s", 0.0)
    if not (isinstance(ref, (int, float)) and 0.0 <= ref <= mocc.INIT_REF_RTT_MAX_S):
        raise ValueError(f"policy features: 'init_ref_rtt_s'={ref!r} must be in [0, {mocc.INIT_REF_RTT_MAX_S:g}] s "
                         "(0: eq. 1 unscaled)")
    alpha = feats.get("max_ack_ewma", 1.0)
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha <= 1.0):
        raise ValueError(f"policy features: 'max_ack_ewma'={alpha!r} must be in (0, 1] "
                         "(1: the running max of the raw ACK rate)")
    env, p = envs.make_env("mocc", history=int(feats["history"]), num_flows=1)
    p = p.replace(**{k: jnp.asarray(float(feats[k]), jnp.float32) for k in SPEC_PARAMS if k in feats})
    p = p.replace(bw_set_mbps=jnp.asarray(bw_set, jnp.float32), init_step=jnp.asarray(int(init_step), jnp.int32),
                  cwnd_deltas_pkts=jnp.asarray(deltas, jnp.float32), cwnd_mults=jnp.asarray(mults, jnp.float32))
    return env, p


def sender(spec: dict, tensors: dict, goal=None) -> common.Sender:
    """The ``mocc_v1`` sender of a policy with preference ``goal`` (default 1/G each)."""
    env, p = env_and_params(spec)
    g = common.policy_goal(spec, goal)
    ten = common.tensors_as_arrays(tensors)

    def start(rtt0):
        return Own(rate=jnp.full((1,), SENDER_INIT_RATE, jnp.float32),
                   cwnd=jnp.full((1,), p.init_cwnd_pkts * MSS, jnp.float32), paper=env.init_paper(None, p))

    def decide(own: Own, hist, run, rtt0, preference=None):
        a = policyfile.apply(spec, ten, hist, g if preference is None else preference).reshape((1,))
        st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=jnp.full((1,), rtt0)), cwnd=own.cwnd, run=run,
                                   paper=own.paper)
        rate, cwnd, paper = env.apply_action(st, a, p)  # with the file's delta table (p.cwnd_deltas_pkts)
        rate = jnp.clip(rate, env_base.MIN_RATE, env_base.MAX_RATE)
        return Own(rate=rate.astype(jnp.float32), cwnd=cwnd.astype(jnp.float32), paper=paper)

    def observe(own: Own, m, run, rtt0):
        # The link's capacity feeds only MOCC's reward and Algorithm 1, never the features.
        st = types.SimpleNamespace(link=types.SimpleNamespace(rtt=jnp.full((1,), rtt0)), cwnd=own.cwnd, rate=own.rate)
        no_link = env_base.LinkMI(cap_bytes=jnp.zeros((), jnp.float32), queue_end=jnp.zeros((), jnp.float32))
        out = env.observe(st, own.paper, m, run, no_link, p)
        return out.features[0], own._replace(paper=out.paper)

    def act(own: Own):
        return Action(rate=own.rate[0], cwnd=own.cwnd[0])

    return common.Sender(start=start, decide=decide, observe=observe, act=act, needs_rtt_to_start=True,
                         preference=g)


def controller(name: str, spec: dict, tensors: dict, goal=None, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors, goal), safe=safe)
