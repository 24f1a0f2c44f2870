"""MOCC as in the paper: §IV-A's delay objective, −L(delay / timeout) (a named variant of ``mocc``).

    python -m jaxcc.train --config=mocc_paper

Everything else is ``configs/mocc_mixed.py``'s (the queueing-delay default before its scale-free
action table, with the mixed table).  This is the recipe of the shipped
``checkpoints/mocc/mocc.safetensors`` (seed 0), of ``mocc_additive`` and of ``mocc_robust``;
``checkpoints/mocc/README.md`` has its per-seed bars (10 / 12 / 12 of 20) and why the preference
barely steers under it.
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc_mixed.py"))  # as measured
    c.env.params.delay_objective = 0.0  # §IV-A: −L(delay / timeout)
    c.wandb.group = "mocc-paper"
    return c
