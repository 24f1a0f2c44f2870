"""``mocc`` with the mixed action table: halve, −50, −10, hold, +10, double, +50 packets
(``jaxcc.envs.mocc`` "Actions"), the default until the scale-free table replaced it.

    python -m jaxcc.train --config=mocc_mixed

The queueing-delay objective and everything else are ``mocc``'s.  This is the recipe of
``mocc_paper`` (which adds §IV-A's delay objective), ``mocc_thrfloor`` and the runs measured as
"the default" before the scale-free table (``checkpoints/mocc/README.md``: 13 / 17 / 16 / 12 / 13 /
11 of 20 preference-sweep bars over six seeds; 2 of 23 held-out links steered at the median).
"""

import os

import ml_collections

from jaxcc.envs.base import realism_config
from jaxcc.envs.mocc import CWND_DELTAS_PKTS, CWND_MULTS
from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc.py"))  # its sibling
    c.env.params.cwnd_deltas_pkts = tuple(float(d) for d in CWND_DELTAS_PKTS)
    c.env.params.cwnd_mults = tuple(float(k) for k in CWND_MULTS)
    c.wandb.group = "mocc-mixed"
    c.moq.lambda_end = 1.0  # as measured: eq. 12's λ rises to 1 (the paper's)
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # as measured: no realism
    c.env.params.max_ack_ewma = 1.0  # as measured: the running max of the raw ACK rate
    return c
