"""DeepCC smoke test: a few hundred env steps on a few links (tests; seconds of training).

    python -m jaxcc.train --config=deepcc_smoke
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.num_envs = 4
    c.num_updates = 60
    c.chunk_updates = 20
    c.checkpoint_every_chunks = 1
    c.ddpg.branch = 16
    c.ddpg.hidden = 16
    c.ddpg.conv_filters = 8
    c.ddpg.buffer_size = 1_000
    c.ddpg.learning_starts = 64
    c.ddpg.actor_starts = 64
    c.ddpg.updates_per_step = 1
    c.wandb.mode = "disabled"
    return c
