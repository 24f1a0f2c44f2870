"""Eagle as in the paper (INFOCOM 2020, §IV-D): every episode starts at 300 Kbps, the links'
capacity is fixed or walks every second in 20–120 Mbps, no capacity steps, no link realism.
For reproduction (the policy shipped before robust training is ``--config=eagle_paper
--seed=1``); the default ``eagle`` config trains on a robust distribution instead.

    python -m jaxcc.train --config=eagle_paper
"""

import os

import ml_collections

from jaxcc.training.configs import load_config
from jaxcc.envs.base import realism_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "eagle.py"))  # its sibling, not ./configs
    c.env.overrides = ml_collections.ConfigDict()
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # off
    c.env.params = ml_collections.ConfigDict()
    c.wandb.group = "eagle_paper"
    return c
