"""``eagle_v1``: the simulator sender of an exported Eagle policy (Emara, Li, Chen; INFOCOM 2020).

Twin of ``EagleFeatures`` in ``datapath/src/mi_features.cc``.  It reuses the ``eagle``
environment's own code for everything but the network: ``EagleEnv.observe`` for the five
features of §III-B "States" (delay flag, decreases − increases while delayed, EWMA queuing delay,
EWMA loss, ratio of the change in delivery rate) and ``EagleEnv.apply_action`` for the rate
(×2.89, ×1.25, hold, ÷1.25, ÷2.89) and the BDP-based cwnd.  So the sender behaves in a scenario
as in training: start at 300 kbit/s with 10 packets (§III-B "Startup"), act every 3 RTTs on the
last four feature vectors (argmax of the logits).

Every decision's rate, the first one on the empty window included, is clipped to the
simulator's [``MIN_RATE``, ``MAX_RATE``] — what the C++ twin does (the parity vectors pin it);
this is intended, although the environment's own first action at reset is not clipped.

The file's start, cwnd floor, delay threshold, EWMA gain and BDP window (``init_rate_mbps``,
``init_cwnd_pkts``, ``min_cwnd_pkts``, ``delay_thresh_ms``, ``ewma_gain``, ``bw_window_steps``)
replace the environment's defaults, as the datapath reads them.  A file without
``bw_window_steps`` predates the windowed BDP estimate: it gets the whole connection's maximum.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcc import envs, policyfile
from jaxcc.envs import eagle as eagle_env
from jaxcc.envs import base as env_base
from jaxcc.senders import common
from jaxcc.sim.controller import Action, Controller
from jaxcc.units import MBPS

NAME = "eagle_v1"
SPEC_PARAMS = ("init_rate_mbps", "init_cwnd_pkts", "min_cwnd_pkts", "delay_thresh_ms", "ewma_gain")


class Own(NamedTuple):
    rate: jax.Array  # [1] bytes/s
    cwnd: jax.Array  # [1] bytes
    paper: Any  # eagle.EagleFlow ([1] leaves)


def env_and_params(spec: dict):
    """The ``eagle`` environment (one flow, the file's history) and its parameters with the file's
    values.

    Raises:
      ValueError: ``bw_window_steps`` is not an integer in [0, eagle.MAX_BW_WINDOW].
    """
    feats = spec["features"]
    env, p = envs.make_env("eagle", history=int(feats["history"]), num_flows=1)
    p = p.replace(**{k: jnp.asarray(float(feats[k]), jnp.float32) for k in SPEC_PARAMS if k in feats})
    w = feats.get("bw_window_steps", 0)
    if not (isinstance(w, (int, float)) and float(w).is_integer() and 0 <= w <= eagle_env.MAX_BW_WINDOW):
        raise ValueError(f"policy features: 'bw_window_steps'={w!r} must be an integer in [0, {eagle_env.MAX_BW_WINDOW}]")
    return env, p.replace(bw_window_steps=jnp.asarray(int(w), jnp.int32))


def sender(spec: dict, tensors: dict) -> common.Sender:
    """The ``eagle_v1`` sender of a policy (see the module docstring)."""
    env, p = env_and_params(spec)
    ten = common.tensors_as_arrays(tensors)

    def start(rtt0):
        rate0 = jnp.full((1,), p.init_rate_mbps * MBPS, jnp.float32)
        cwnd0 = jnp.full((1,), p.init_cwnd_pkts * 1500.0, jnp.float32)
        return Own(rate=rate0, cwnd=cwnd0, paper=env.init_paper(None, p))

    def decide(own: Own, hist, run, rtt0):
        a = policyfile.apply(spec, ten, hist).reshape((1,))
        st = types.SimpleNamespace(rate=own.rate, run=run, paper=own.paper)
        rate, cwnd, paper = env.apply_action(st, a, p)
        rate = jnp.clip(rate, env_base.MIN_RATE, env_base.MAX_RATE)
        return Own(rate=rate.astype(jnp.float32), cwnd=cwnd.astype(jnp.float32), paper=paper)

    def observe(own: Own, m, run, rtt0):
        link = types.SimpleNamespace(rtt=jnp.full((1,), rtt0))
        out = env.observe(types.SimpleNamespace(link=link, cwnd=own.cwnd, rate=own.rate), own.paper, m, run, None, p)
        return out.features[0], own._replace(paper=out.paper)

    def act(own: Own):
        return Action(rate=own.rate[0], cwnd=own.cwnd[0])

    return common.Sender(start=start, decide=decide, observe=observe, act=act)


def controller(name: str, spec: dict, tensors: dict, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors), safe=safe)
