"""Aurora as in the paper (Jay et al., ICML 2019, §5 Table 1): starts at 30–150 % of the
bandwidth, constant links, no link realism.  For reproduction; the default ``aurora`` config
trains on a robust distribution instead (far starts, capacity steps, realism).

    python -m jaxcc.train --config=aurora_paper

This is the command of ``checkpoints/aurora/aurora_paper_init.safetensors``.  The policy shipped
before robust training (70 % of the starts at 0.1–30 %) is
``--config=aurora_paper --config.env.params.init_far_frac=0.7 --config.env.params.init_far_lo=0.001``.
"""

import os

import ml_collections

from jaxcc.training.configs import load_config
from jaxcc.envs.base import realism_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "aurora.py"))  # its sibling, not ./configs
    c.env.overrides = ml_collections.ConfigDict()
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # off
    c.env.params = ml_collections.ConfigDict()
    c.env.params.init_far_frac = 0.0
    c.wandb.group = "aurora_paper"
    return c
