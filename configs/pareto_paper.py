"""Pareto (IEEE TNSE 2022) as written: TD3 + LSTM, staged bootstrap → advance → fairness
(Algorithm 2), §III's five features and action range, Algorithm 1's reward alone, §V-A's training
links (two flows 2 s apart in the fairness stage, 60-step episodes), no realism or link dynamics.  For reproduction;
the project's default is Pareto-Fair v2 (``configs/pareto_staged.py``), whose every other setting
(network, TD3, replay, expert, snapshot selection on the disjoint validation links) this keeps.

``python -m jaxcc.train --config=pareto_paper`` — what its policy scored when it was the default:
``checkpoints/pareto/README.md``, "Pareto as written".
"""

import os

import ml_collections

from jaxcc.training.configs import load_config
from jaxcc.envs.base import realism_config
from jaxcc.envs.samplers import dynamics_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling, not ./configs
    c.env.overrides.feature_set = "pareto_v1"
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # off
    c.env.overrides.dynamics = ml_collections.ConfigDict(dynamics_config())  # off: no outages or cellular process
    c.env.params = ml_collections.ConfigDict({"robust": 0.0, "fair_w": 0.0, "util_w": 0.0})
    # The paper's fairness stage: two flows per link (--config.stages.fairness.env_overrides.num_flows=3
    # trains on three, starting 0/2/4 s).
    c.stages.fairness.env_overrides = ml_collections.ConfigDict({"max_steps": 60, "num_flows": 2})
    c.wandb.group = "pareto_paper"
    return c
