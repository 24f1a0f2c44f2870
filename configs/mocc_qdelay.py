"""MOCC with a queueing-delay objective (a named variant of ``mocc``).

    python -m jaxcc.train --config=mocc_qdelay

``configs/mocc.py`` rewards delay as §IV-A does, −L(delay / timeout) with a timeout of at least
200 ms, which on a 20-ms path moves by 0.086 per step between no queue and a 10-ms one: less than
the learned values' error there, so a delay-heavy preference holds the same window as a
throughput-heavy one (``launch/mocc_probe.py``, ``checkpoints/mocc/README.md``).  This variant
changes only the delay objective, to −log2(1 + queueing delay / min RTT) / 4 (the queue in the
path's own round trips on a log scale, ``jaxcc.envs.mocc.delay_objective``); features, actions,
episodes and the training links are ``mocc``'s, so the exported file runs on the same ``mocc_v1``
sender and C++ datapath.
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc.py"))  # its sibling
    c.env.params.delay_objective = 1.0
    c.wandb.group = "mocc-qdelay"
    return c
