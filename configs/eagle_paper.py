"""Eagle as in the paper (INFOCOM 2020, §IV-D): every episode starts at 300 Kbps, the links'
capacity is fixed or walks every second in 20–120 Mbps, no capacity steps, no link realism.
For reproduction (the policy shipped before issue 13 is ``--config=eagle_paper --seed=1``); the
default ``eagle`` config trains on a robust distribution instead.

    python -m jaxcc.train --config=eagle_paper
"""

import importlib.util
import os

import ml_collections

from jaxcc.envs.base import realism_config


def get_config() -> ml_collections.ConfigDict:
    spec = importlib.util.spec_from_file_location(
        "_eagle_base", os.path.join(os.path.dirname(os.path.abspath(__file__)), "eagle.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.env.overrides = ml_collections.ConfigDict()
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # off
    c.env.params = ml_collections.ConfigDict()
    c.wandb.group = "eagle_paper"
    return c
