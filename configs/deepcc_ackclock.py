"""The ACK-clocked window (cwnd = rate x min RTT) with the actor's z² penalty at 0.1: the first
window recipe measured, before ``deepcc`` took the window with the penalty at 0.01.

    python -m jaxcc.train --config=deepcc_ackclock

§V "DeepCC Implementation": "Once getting the sending rate, the sender can calculate the new
cwnd size and pace these packets in an ack-clock." Paced at the rate alone
(``configs/deepcc_paced.py``), a sender keeps sending into a dark link in an outage until the
safety net's BBR takes over, and the queue it leaves overflows the cellular link's 140-packet
buffer. Here every decision also sets a window of ``cwnd_rtts`` x rate x min RTT
(``jaxcc.envs.deepcc.ack_clock_cwnd``), in training and in the exported file's senders (the
features block's ``cwnd_rtts``). The paper gives no multiplier; 1 is the chosen rate's own
bandwidth-delay product. With the penalty at 0.1 its actors hold a rate ceiling of their own
(``launch/deepcc_ceiling.py``). What it scored beside the default:
``checkpoints/deepcc/README.md``, "The paper's ACK-clocked window" and "A rate ceiling from the
actor's penalty".
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepcc.py"))  # its sibling
    c.env.params.cwnd_rtts = 1.0
    c.ddpg.actor_z_penalty = 0.1
    return c
