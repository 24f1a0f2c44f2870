"""Aurora smoke test: a few PPO updates on a few links (tests; well under a minute of training).

    python -m jaxcc.train --config=aurora_smoke
"""

import importlib.util
import os


def _base():
    spec = importlib.util.spec_from_file_location(
        "_aurora_base", os.path.join(os.path.dirname(os.path.abspath(__file__)), "aurora.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def get_config():
    c = _base().get_config()
    c.num_envs = 32
    c.num_updates = 16
    c.chunk_updates = 4
    c.checkpoint_every_chunks = 2
    c.ppo.num_steps = 64
    c.ppo.num_minibatches = 4
    c.ppo.lr = 3e-3  # a faster start for the few updates of a smoke run
    c.wandb.mode = "disabled"
    return c
