"""``deepcc`` on the shared robust link dynamics (``jaxcc.envs.samplers.ROBUST_DYNAMICS``):
per episode each of two slots holds an outage (no delivery for 0.2–10 s, at most 30 % of the
episode) with probability 0.35 and 30 % of the episodes get a cellular random walk with dropouts;
and eq. 3 with its delay and loss terms bounded at the largest a target asks for
(``reward_bounded``, ``jaxcc.envs.deepcc.bounded_measurement``).  Without the bound, two seeds
collapsed to 1.2–1.8 Mbit/s on every link: after an outage the delay ratio m² of the packets
that waited reaches 50–150 and the loss term 10 × g³, and eq. 3 then pays a throughput-heavy goal
almost the same at half the link's rate as at all of it (measured in the README below).

    python -m jaxcc.train --config=deepcc_robust

What it scored, per seed, beside the shipped file: ``checkpoints/deepcc/README.md``, "Robust dynamics".
"""

import os

import ml_collections

from jaxcc.envs.samplers import ROBUST_DYNAMICS, dynamics_config
from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.env.overrides.dynamics = ml_collections.ConfigDict(dynamics_config(**ROBUST_DYNAMICS))
    c.env.params.reward_bounded = 1.0
    return c
