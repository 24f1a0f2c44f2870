"""A tiny Pareto run for tests and smoke checks: three short stages, a few links (~1 minute)."""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling, not ./configs
    c.num_envs = 8
    c.rollout_len = 2
    c.chunk_updates = 2
    c.checkpoint_every_chunks = 1
    for name in ("bootstrap", "advance", "fairness"):
        c.stages[name].num_updates = 4
        c.stages[name].buffer_segment = 512
    c.td3.hidden = 8
    c.td3.fc = 8
    c.td3.critic_hidden = 8
    c.td3.critic_fc = 16
    c.td3.batch_size = 32
    c.td3.grad_steps = 2
    c.select.links_per_stage = 1
    c.select.max_steps = 30
    c.stages.fairness.env_overrides.num_flows = 2
    c.stages.fairness.env_overrides.max_steps = 60
    c.wandb.mode = "disabled"
    return c
