"""``pareto_staged`` on the shared robust link dynamics (``jaxcc.envs.samplers.ROBUST_DYNAMICS``)
less its step (the environment draws its own capacity steps in the advance stage,
``ParetoParams.dyn_*``): per episode each of two slots holds an outage (no delivery for 0.2–10 s,
at most 30 % of the episode) with probability 0.35, and 30 % of the episodes get a cellular random
walk with dropouts, in every stage.

    python -m jaxcc.train --config=pareto_robust

What it scored, per seed, beside the shipped file: ``checkpoints/pareto/README.md``, "Robust dynamics".
"""

import os

import ml_collections

from jaxcc.envs.samplers import ROBUST_DYNAMICS, dynamics_config
from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling
    c.env.overrides.dynamics = ml_collections.ConfigDict(dynamics_config(**dict(ROBUST_DYNAMICS, p_step=0.0)))
    return c
