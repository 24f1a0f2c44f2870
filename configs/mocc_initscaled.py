"""The default ``mocc`` with §IV-B's init-cwnd scaled by the path's min RTT: a named variant.

    python -m jaxcc.train --config=mocc_initscaled

Eq. 1 sets the window at step ``init_step`` to b × F(ACK rate) packets, F in Mbit/s.  Packets per
Mbit/s is a fixed number of bandwidth-delay products only at one RTT: with b = 2.5 it is 1.5 BDPs
of F at 20 ms, the link the paper chose b on (§V-A: 12 Mbps, 20 ms), and 15 BDPs at 2 ms, the
``mocc/50mbps`` link's RTT and the shortest the training links draw.  Measured on the default's
seed 2 there: from eq. 1's 125 packets (the BDP is 8.3) at (0.5, 0.5, 0) the policy multiplies
its window by 1.5 at every decision, reaches the 10 000-packet ceiling within 52 ms and holds it,
97.4 % loss; started from a window scaled to the RTT (14 packets) it settles at 9.3
(``checkpoints/mocc/README.md``, "A start 15 BDPs over").

Here eq. 1's window is scaled by min RTT / 20 ms (``MoccParams.init_ref_rtt_s``,
``jaxcc.envs.mocc.init_cwnd``): the paper's value on the paper's link, 1.5 BDPs of F on every
other.  The file states ``features.init_ref_rtt_s``, which the simulator's ``mocc_v1`` and its C++
twin read.  Everything else is ``mocc``'s.
"""

import os

import ml_collections

from jaxcc.envs.base import realism_config
from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc.py"))
    c.env.params.init_ref_rtt_s = 0.02  # the paper's link's RTT, where eq. 1 is 1.5 BDPs of F
    c.wandb.group = "mocc_initscaled"
    c.moq.lambda_end = 1.0  # as measured: eq. 12's λ rises to 1 (the paper's)
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config())  # as measured: no realism
    c.env.params.max_ack_ewma = 1.0  # as measured: the running max of the raw ACK rate
    return c
