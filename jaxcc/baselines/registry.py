"""From a controller name (``jaxcc.controllers``) to an in-simulator ``Controller`` and its cparam."""

from __future__ import annotations

import numpy as np

from jaxcc.baselines import base
from jaxcc.controllers import parse_controller


def resolve(name: str) -> tuple[base.Controller, np.ndarray]:
    spec = parse_controller(name, allow_kernel=False)
    cparam = np.zeros((base.CPARAM_DIM,), np.float32)
    if spec.kind == "fixed":
        from jaxcc.baselines.simple import FIXED
        cparam[0] = spec.fixed_mbps
        return FIXED, cparam
    if spec.kind == "oracle":
        from jaxcc.baselines.simple import ORACLE
        return ORACLE, cparam
    if spec.kind == "bbr":
        from jaxcc.baselines.bbr import BBR
        return BBR, cparam
    if spec.kind == "cubic":
        from jaxcc.baselines.cubic import CUBIC
        return CUBIC, cparam
    if spec.kind == "copa":
        from jaxcc.baselines.copa import COPA
        return COPA, cparam
    if spec.kind == "policy":
        from jaxcc.policy import policy_controller  # added with the training pipeline
        return policy_controller(spec.arg)
    raise ValueError(f"controller {name!r} cannot run in the simulator")
