"""``deepcc`` without the shared robust dynamics and with eq. 3 as written: the recipe of the
shipped ``checkpoints/deepcc/deepcc.safetensors`` (its seed 0) and the default until 2026-12-01.

    python -m jaxcc.train --config=deepcc_clean

Its links are ``deepcc``'s without outages, cellular walks or capacity steps, on which eq. 3's
unbounded delay and loss terms stay small (the bound changes no mean reward by more than 0.002
there); paced at the rate alone, with the actor's z² penalty at 0.1, as the file was trained.
What it scored, per seed, beside the default: ``checkpoints/deepcc/README.md``.
"""

import os

import ml_collections

from jaxcc.envs.samplers import dynamics_config
from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.env.overrides.dynamics = ml_collections.ConfigDict(dynamics_config())
    c.env.params.reward_bounded = 0.0
    c.env.params.cwnd_rtts = 0.0
    c.ddpg.actor_z_penalty = 0.1
    return c
