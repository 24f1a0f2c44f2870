"""Eagle smoke test: a few CEM batches on a few links (tests; well under a minute of training).

    python -m jaxcc.train --config=eagle_smoke
"""

import importlib.util
import os


def _base():
    spec = importlib.util.spec_from_file_location(
        "_eagle_base", os.path.join(os.path.dirname(os.path.abspath(__file__)), "eagle.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def get_config():
    c = _base().get_config()
    c.num_envs = 40
    c.num_updates = 8
    c.chunk_updates = 4
    c.checkpoint_every_chunks = 1
    c.cem.hidden = 16
    c.wandb.mode = "disabled"
    return c
