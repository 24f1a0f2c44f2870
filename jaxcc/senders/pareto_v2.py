"""``pareto_v2``: the simulator sender of a Pareto-Fair v2 policy (the default ``pareto_staged``).

Twin of ``ParetoV2Features`` in ``datapath/src/mi_features.cc``.  Everything is ``pareto_v1``'s
(``jaxcc.senders.pareto_v1``: the same signals, memory, start and action rule rate·(1 + a)) plus
the sixth feature, the flow's own standing queue log2(1 + R_t·d̂_t / MSS) / 8 with d̂_t the MI's
smallest RTT sample minus the min RTT (``jaxcc.envs.pareto``, "Pareto-Fair v2"); the action
range is the file's head ([−0.3, 0.5]).
"""

from __future__ import annotations

from jaxcc.senders import common, pareto_v1
from jaxcc.sim.controller import Controller

NAME = "pareto_v2"
SPEC_PARAMS = pareto_v1.SPEC_PARAMS


def sender(spec: dict, tensors: dict) -> common.Sender:
    """The ``pareto_v2`` sender of a policy (see the module docstring)."""
    return pareto_v1.sender(spec, tensors, feature_set=NAME)


def controller(name: str, spec: dict, tensors: dict) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``)."""
    return common.make_controller(name, spec, sender(spec, tensors))
