"""Simulator senders: every controller name the simulator runs, and exported policies.

``resolve(name) -> (Controller, ControllerParams)`` turns a controller name (``jaxcc.controllers``: bbr,
cubic, reno, copa, oracle, fixed:MBPS, policy:FILE, raw-policy:FILE, FILE.py:NAME) into the in-simulator controller and its per-flow
parameter vector; the runner (``jaxcc.sim.runner.build_batches``) takes it from its caller.

``policy_controller(path)`` runs an exported policy file (``--controller=policy:FILE``): one
module per feature set, each the simulator twin of its section in
``datapath/src/mi_features.cc`` and built from its environment's own code (``jaxcc.envs``), so
a policy meets in a scenario the features, network and action rules it was trained with:

    aurora_v1  Aurora (PPO): latency gradient/ratio, sending ratio; x(1+αa) or x/(1−αa)
    aurora_v2  Aurora with a loss level: aurora_v1's three plus the MI's loss rate; the same action
    pareto_v1  Pareto (TD3 + LSTM): delay flag, dR, dD/dT, dL/dT, excess; rate·(1+a)
    pareto_v2  Pareto-Fair v2: pareto_v1's five plus the own standing queue; rate·(1+a)
    eagle_v1   Eagle (CEM + BBR teacher): five rate multipliers and a BDP-based cwnd
    mocc_v1    MOCC (preference-conditioned): cwnd deltas, init-cwnd, paced window
    deepcc_v1  DeepCC (goal-conditioned): an absolute rate in [0, bound]

A scenario flow's ``preference`` / ``preference_changes`` reach a preference-conditioned policy
(``mocc_v1``) through its ``SenderParams.preference`` (``jaxcc.sim.controller``); ``preference_refusals``
names the flows whose controller takes none, and those whose ``goal`` / ``target`` (DeepCC's
fixed goal and online-tuning target, ``jaxcc.sim.controller.TARGET``) reach no ``deepcc_v1`` policy.

The per-tick plumbing they share (MI accumulation, the feature window, the first decision) is
``jaxcc.senders.common``; the parity vectors (``tests/vectors/features_<set>.json``) hold each
module to the environments and to the C++ datapath (``tests/test_senders.py``).
"""

from __future__ import annotations

import importlib
import os

from jaxcc import policyfile
from jaxcc.controllers import load_user_controller, parse_controller, policy_name
from jaxcc.sim.controller import Controller, ControllerParams, refusal

# Feature set (a policy file's ``features.name``) -> its sender module, imported when a policy
# needs it (a baselines-only evaluation loads no environment or network code).
FEATURE_SETS = {name: f"jaxcc.senders.{name}" for name in ("aurora_v1", "aurora_v2", "pareto_v1", "pareto_v2",
                                                                   "eagle_v1", "mocc_v1", "deepcc_v1")}


def feature_set(name: str):
    """The sender module of feature set ``name`` (a key of ``FEATURE_SETS``), imported now."""
    return importlib.import_module(FEATURE_SETS[name])


def policy_controller(path: str, raw: bool = False) -> tuple[Controller, ControllerParams]:
    """A simulator controller that runs the exported policy ``path``, named ``policy:ABSPATH``:
    as deployed, with the sender's guard and monitor (``jaxcc.senders.safety``), or, ``raw``,
    without them, named ``raw-policy:ABSPATH``.

    Raises:
      ValueError: the file is not a valid policy, or its feature set has no sender here.
    """
    spec, tensors = policyfile.load(path)
    fname = spec["features"]["name"]
    if fname not in FEATURE_SETS:
        raise ValueError(f"policy {path!r}: feature set {fname!r} has no simulator sender "
                         f"(supported: {', '.join(sorted(FEATURE_SETS))})")
    ctrl = feature_set(fname).controller(policy_name(os.path.abspath(path), raw), spec, tensors, safe=not raw)
    return ctrl, ControllerParams.zeros()


def preference_refusals(scenario) -> list[str]:
    """One message per flow of ``scenario`` (``jaxcc.scenarios.Scenario``) with a ``preference``
    or ``preference_changes`` whose controller takes none (empty: runnable).  Only a
    preference-conditioned policy does (``policy:FILE`` whose sender has a preference:
    ``mocc_v1``, goal_dim 3).  Each message names ``<scenario>.flows[i].<field>``.

    Raises:
      ValueError: a ``policy:FILE`` that cannot be loaded.
    """
    out, ctrls = [], {}

    def ctrl(name):
        if name not in ctrls:
            ctrls[name] = resolve(name)[0] if parse_controller(name).kind in ("policy", "user") else None
        return ctrls[name]

    for i, field in list(scenario.preference_flows()) + list(getattr(scenario, "goal_flows", lambda: [])()):
        name = scenario.flows[i].controller
        why = refusal(ctrl(name), name, field)
        if why is not None:
            out.append(f"{scenario.name}.flows[{i}].{field}: {why} (drop the field or use one)")
    return out


def resolve(name: str) -> tuple[Controller, ControllerParams]:
    """The in-simulator ``Controller`` of a controller name and its ``ControllerParams`` (one flow's).

    Raises:
      ValueError: the name is not valid, or names a controller that runs only in emulation.
    """
    spec = parse_controller(name, allow_kernel=False)
    cp = ControllerParams.zeros()
    if spec.kind == "fixed":
        from jaxcc.baselines.simple import FIXED
        cp.fixed.mbps[...] = spec.fixed_mbps
        return FIXED, cp
    if spec.kind == "oracle":
        from jaxcc.baselines.simple import ORACLE
        return ORACLE, cp
    if spec.kind == "bbr":
        from jaxcc.baselines.bbr import BBR
        return BBR, cp
    if spec.kind == "cubic":
        from jaxcc.baselines.cubic import CUBIC
        return CUBIC, cp
    if spec.kind == "reno":
        from jaxcc.baselines.reno import RENO
        return RENO, cp
    if spec.kind == "copa":
        from jaxcc.baselines.copa import COPA
        return COPA, cp
    if spec.kind == "policy":
        return policy_controller(spec.arg, raw=spec.raw)
    if spec.kind == "user":  # a researcher's own Python controller (jaxcc.controllers, docs/controllers.md)
        return load_user_controller(spec.arg, spec.attr, text=name), cp
    raise ValueError(f"controller {name!r} cannot run in the simulator")


__all__ = ["FEATURE_SETS", "feature_set", "policy_controller", "preference_refusals", "resolve"]
