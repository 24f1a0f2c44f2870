"""``aurora_v1``: the simulator sender of an exported Aurora policy (Jay et al., ICML 2019).

Twin of ``AuroraFeatures`` in ``datapath/src/mi_features.cc``.  It does what the ``aurora``
environment does (``jaxcc.envs.aurora``): every ``mi_rtts`` RTTs the three features (latency
gradient, latency ratio, sending ratio; §3.1) from ``aurora.features``, pushed into the [10, 3]
window; the network (``jaxcc.policyfile.apply``) and the action block x(1+αa) / x/(1−αa)
(``policyfile.map_action``, eq. 1).

Start: ``features.init_pkts_per_rtt`` packets per min RTT (10 when the file does not state it,
as the shipped files do not — what ``AuroraFeatures`` in ``mi_features.cc`` reads), with the
first action already applied (the environment acts on the empty window at reset).  The environment instead draws
0.3–1.5 × the bandwidth, which a real sender cannot know.  The min RTT is the link's, which the
simulator reveals with the first tick, so the first decision is taken at the end of the first
tick and nothing is sent during it.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxcc import policyfile
from jaxcc.envs import aurora as aurora_env
from jaxcc.envs import base as env_base
from jaxcc.senders import common
from jaxcc.sim.controller import Controller, rate_only

NAME = "aurora_v1"


class Own(NamedTuple):
    rate: jax.Array  # bytes/s, scalar


def sender(spec: dict, tensors: dict) -> common.Sender:
    """The ``aurora_v1`` sender of a policy (see the module docstring); an ``aurora_v2`` file's
    (``jaxcc.senders.aurora_v2``) also appends the MI's loss rate."""
    loss_level = spec["features"]["name"] == "aurora_v2"
    init_pkts = float(spec["features"].get("init_pkts_per_rtt", 10.0))
    ten = common.tensors_as_arrays(tensors)

    def start(rtt0):
        if rtt0 is None:  # no rate before the link's RTT is known (the first tick)
            return Own(rate=jnp.zeros((), jnp.float32))
        return Own(rate=jnp.clip(init_pkts * 1500.0 / rtt0, env_base.MIN_RATE, env_base.MAX_RATE))

    def decide(own: Own, hist, run, rtt0):
        out = policyfile.apply(spec, ten, hist)
        return Own(rate=policyfile.map_action(spec, out, own.rate, jnp.inf)[0].astype(jnp.float32))

    def observe(own: Own, m, run, rtt0):
        return aurora_env.features(m, run, loss_level)[0], own

    def act(own: Own):
        return rate_only(own.rate)

    return common.Sender(start=start, decide=decide, observe=observe, act=act, needs_rtt_to_start=True)


def controller(name: str, spec: dict, tensors: dict, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors),
                                  default_empty=aurora_env.EMPTY[spec["features"]["name"]], safe=safe)

