"""MOCC with §IV-A's action list read as seven additive steps (a named variant of ``mocc_paper``,
§IV-A's delay objective, the one it was measured with).

    python -m jaxcc.train --config=mocc_additive

``configs/mocc.py`` reads {−0.5, −50, −10, +0, +10, +2, +50} as a mixed table (halve, −50, −10,
hold, +10, double, +50 packets; ``jaxcc.envs.mocc`` docstring, "Actions", says why).  This
variant keeps the literal reading: every entry is a number of packets added to the window.
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc_paper.py"))  # as measured
    c.env.params.cwnd_deltas_pkts = (-0.5, -50.0, -10.0, 0.0, 10.0, 2.0, 50.0)  # mocc.LITERAL_DELTAS_PKTS
    c.env.params.cwnd_mults = (1.0,) * 7
    c.wandb.group = "mocc-additive"
    return c
