"""``pareto_v2``: the simulator sender of a Pareto-Fair v2 policy (the default ``pareto_staged``).

Twin of ``ParetoV2Features`` in ``datapath/src/mi_features.cc``.  Everything is ``pareto_v1``'s
(``jaxcc.senders.pareto_v1``: the same signals, memory, start and action rule rate·(1 + a)) plus
the sixth feature, the flow's own standing queue log2(1 + R_t·d̂_t / MSS) / 8 with d̂_t the MI's
smallest RTT sample minus the min RTT (``jaxcc.envs.pareto``, "Pareto-Fair v2"); the action
range is the file's head ([−0.3, 0.5]).  A file that states its range (``features.action_low``
/ ``action_high``, as ``export_features_spec`` writes them) must have a continuous head over
exactly that range and a ``rate_multiplicative`` action; anything else is refused, as the C++
twin refuses it (a v2 network steered at §III's [−0.7, 2] would over-correct).
"""

from __future__ import annotations

from jaxcc.senders import common, pareto_v1
from jaxcc.sim.controller import Controller

explored = pareto_v1.explored  # the behaviour noise on the action, as pareto_v1's

NAME = "pareto_v2"
SPEC_PARAMS = pareto_v1.SPEC_PARAMS


def check(spec: dict) -> None:
    """Raises ValueError (one line, naming the field) when the file's action block or head does
    not fit the feature set (see the module docstring)."""
    act = spec.get("action", {}).get("type")
    if act != "rate_multiplicative":
        raise ValueError(f"{NAME}: action must be rate_multiplicative (rate·(1 + a)), got {act!r}")
    feats, head = spec["features"], spec.get("head", {})
    if "action_low" not in feats and "action_high" not in feats:
        return
    lo, hi = float(feats.get("action_low", -0.3)), float(feats.get("action_high", 0.5))
    tol = 1e-6 * (abs(lo) + abs(hi))
    if (head.get("type") != "continuous" or abs(float(head.get("low", float("nan"))) - lo) > tol
            or abs(float(head.get("high", float("nan"))) - hi) > tol):
        raise ValueError(f"{NAME}: head must be continuous over the feature set's action range [{lo}, {hi}] "
                         f"(features.action_low/high), got {head}")


def sender(spec: dict, tensors: dict, explore: bool = False) -> common.Sender:
    """The ``pareto_v2`` sender of a policy (see the module docstring); ``explore``: with
    behaviour noise (``pareto_v1.sender``)."""
    check(spec)
    return pareto_v1.sender(spec, tensors, feature_set=NAME, explore=explore)


def controller(name: str, spec: dict, tensors: dict, safe: bool = True) -> Controller:
    """The per-tick simulator ``Controller`` running the policy (``jaxcc.senders.common``); ``safe``:
    with the deployed sender's guard and monitor (``jaxcc.senders.safety``)."""
    return common.make_controller(name, spec, sender(spec, tensors), safe=safe)
