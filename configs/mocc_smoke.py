"""MOCC smoke test: a few hundred env steps on a few links (tests; seconds of training).

    python -m jaxcc.train --config=mocc_smoke
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc.py"))  # its sibling
    c.num_envs = 8
    c.num_updates = 60
    c.chunk_updates = 20
    c.checkpoint_every_chunks = 1
    c.moq.hidden = 16
    c.moq.buffer_size = 2_000
    c.moq.learning_starts = 100
    c.moq.target_every = 20
    c.moq.updates_per_step = 1
    c.wandb.mode = "disabled"
    return c
