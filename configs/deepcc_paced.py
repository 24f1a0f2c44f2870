"""``deepcc`` paced at the rate alone, with the actor's z² penalty at 0.1: the default until the
ACK-clocked window replaced it (2026-12-01).

    python -m jaxcc.train --config=deepcc_paced

The shared robust dynamics and the bounded reward, as ``deepcc``; no window (``cwnd_rtts`` 0),
so in an outage the sender keeps its rate until the safety net's BBR takes over.  What it scored
beside the default, per seed: ``checkpoints/deepcc/README.md``, "The default since 2026-12-01"
(its runs there were trained with ``--config=deepcc`` before the change) and "A rate ceiling
from the actor's penalty".
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.env.params.cwnd_rtts = 0.0
    c.ddpg.actor_z_penalty = 0.1
    return c
