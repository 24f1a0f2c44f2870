"""``pareto_v1``: the simulator sender of an exported Pareto policy (TD3 + LSTM, staged).

Twin of ``ParetoFeatures`` in ``datapath/src/mi_features.cc``.  It does what the ``pareto``
environment does (``jaxcc.envs.pareto``): every ``mi_rtts`` RTTs the signals (EWMAs of RTT,
delivery rate and loss; queuing delay d) and the five features [delay flag, dR/20, (dD/dT)/5,
dL/dT, X], stateful across MIs, from ``pareto.observe_features`` (``ParetoEnv.observe``'s own
feature half; the memory starts as ``ParetoEnv.init_paper``'s, ``pareto.zero_flows``); the
network (``jaxcc.policyfile.apply``) and the action block rate·(1 + a)
(``policyfile.map_action``).  The scalings the file states (``scale_dR``, ``scale_dD``,
``d_min_ms``, ``ewma_gain``, ``d_floor_ms``, ``l_floor``) replace the environment's defaults.

Start: the environment's ``init_pkts_per_rtt`` packets per ``init_rtt_s`` (both in the file's
features), with the first action already applied (the environment acts on the empty window at
reset).  The next rate multiplies the rate in force, which is what was actually sent.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc import policyfile
from jaxcc.envs import base as env_base
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import pareto
from jaxcc.senders import common
from jaxcc.sim.controller import Controller, rate_only

NAME = "pareto_v1"
# The environment parameters a file may state (the datapath reads the same keys).
SPEC_PARAMS = ("scale_dR", "scale_dD", "d_min_ms", "ewma_gain", "d_floor_ms", "l_floor")


class Own(NamedTuple):
    rate: jax.Array  # bytes/s, scalar
    paper: pareto.ParetoFlow  # the environment's per-flow memory ([1] leaves)


def params(spec: dict) -> pareto.ParetoParams:
    """The environment's parameters with the file's scalings."""
    feats = spec["features"]
    p = env_base.params_as_arrays(pareto.ParetoParams(), ("stage",))
    over = {k: float(feats[k]) for k in SPEC_PARAMS if k in feats}
    return p.replace(**{k: jnp.asarray(v, jnp.float32) for k, v in over.items()})


def explored(spec: dict, out: jax.Array, noise) -> jax.Array:
    """The head's action ``out`` plus behaviour noise ``noise`` (``common.explore_noise``: σ·z in
    units of the action's half-range, as TD3's exploration offline), kept in the head's range
    [low, high]; ``out`` itself where ``noise`` is 0."""
    lo, hi = float(spec["head"]["low"]), float(spec["head"]["high"])
    return jnp.where(noise != 0, jnp.clip(out + noise * 0.5 * (hi - lo), lo, hi), out)


def sender(spec: dict, tensors: dict, feature_set: str = NAME, explore: bool = False) -> common.Sender:
    """The ``pareto_v1`` sender of a policy (see the module docstring); ``feature_set``
    ``pareto_v2`` is Pareto-Fair v2's (``jaxcc.senders.pareto_v2``).  ``explore``: its decisions
    take behaviour noise (``takes_noise``; off, the program has none of it, so a run without
    noise is the same bit for bit)."""
    feats = spec["features"]
    p = params(spec)
    init_rtt = float(feats.get("init_rtt_s", 0.09))
    init_rate = float(feats.get("init_pkts_per_rtt", 10.0)) * 1500.0 / init_rtt
    ten = common.tensors_as_arrays(tensors)

    def start(rtt0):
        return Own(rate=jnp.clip(jnp.float32(init_rate), env_base.MIN_RATE, env_base.MAX_RATE),
                   paper=pareto.zero_flows(1))

    def decide(own: Own, hist, run, rtt0, noise=None):
        out = policyfile.apply(spec, ten, hist)
        if noise is not None:
            out = explored(spec, out, noise)
        new_rate, _ = policyfile.map_action(spec, out, own.rate, jnp.inf)
        return own._replace(rate=new_rate.astype(jnp.float32))

    def observe(own: Own, m, run, rtt0):
        x, paper, _ = pareto.observe_features(own.paper, m, mi_lib.known_min_rtt(run, rtt0), p, feature_set)
        return x[0], own._replace(paper=paper)

    def act(own: Own):
        return rate_only(own.rate)

    return common.Sender(start=start, decide=decide, observe=observe, act=act, takes_noise=bool(explore))


def controller(name: str, spec: dict, tensors: dict, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors), safe=safe)
