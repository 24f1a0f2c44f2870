"""Aurora with a scale-free reward: ``configs/aurora.py`` with §3.1's reward charged in the
link's own units (``jaxcc.envs.aurora.reward``: throughput as a share of the capacity, latency
as a multiple of the base RTT, both scaled so that the reward is §3.1's on a 300-packet/s,
550-ms link, Table 1's middle).  §2's features are kept.  Not in the paper; ``aurora_paper``
keeps §3.1's reward.

    python -m jaxcc.train --config=aurora_scalefree

Why, and what it scores: ``checkpoints/aurora/README.md``, "A scale-free reward".
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "aurora.py"))  # its sibling
    c.env.params.scale_free = 1.0
    return c
