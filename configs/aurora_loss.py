"""Aurora whose features see a loss level: ``configs/aurora.py`` with the feature set
``aurora_v2`` (§2's three statistics and the MI's loss rate; ``jaxcc/envs/aurora.py``, "Feature
sets"), so that a sender overdriving a short queue no longer reads like one climbing loss-free.
Everything else (the robust starts, capacity steps and realism, PPO) is ``aurora``'s;
``aurora_paper`` keeps §2's features literally.

    python -m jaxcc.train --config=aurora_loss

What it scores on Fig. 2's 10-packet queue and with random loss: ``checkpoints/aurora/README.md``,
"A loss level in the features".
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "aurora.py"))  # its sibling
    c.env.overrides.feature_set = "aurora_v2"
    return c
