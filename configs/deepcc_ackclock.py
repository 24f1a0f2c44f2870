"""``deepcc`` with the window the paper's sender ACK-clocks: cwnd = rate x min RTT.

    python -m jaxcc.train --config=deepcc_ackclock

§V "DeepCC Implementation": "Once getting the sending rate, the sender can calculate the new
cwnd size and pace these packets in an ack-clock."  ``deepcc`` paces at the rate alone, so in an
outage it keeps sending into the dark link until the safety net's BBR takes over, and the queue it
leaves overflows the cellular link's 140-packet buffer.  Here every decision also sets a window of
``cwnd_rtts`` x rate x min RTT (``jaxcc.envs.deepcc.ack_clock_cwnd``), in training and in the
exported file's senders (the features block's ``cwnd_rtts``).  The paper gives no multiplier; 1
is the chosen rate's own bandwidth-delay product.  What it scored beside the default:
``checkpoints/deepcc/README.md``.
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.env.params.cwnd_rtts = 1.0
    return c
