"""Pareto staged training (``pareto_staged``) on links with realism: jitter, ACK aggregation,
RTT measurement noise and unresponsive cross traffic (``jaxcc.sim.realism``), none of which
the paper's training links have.

    python -m jaxcc.train --config=pareto_realism

Every episode turns each of the four effects on with probability ½ (independently), each
drawn uniformly up to its maximum: jitter up to 20 ms one way (about a Wi-Fi hop's retries),
ACKs aggregated up to every 20 ms (Wi-Fi block ACKs, cellular uplink grants), RTT-sample noise
up to 5 ms standard deviation, and cross traffic changing every 5 s to up to half of the link's
starting capacity.  Everything else is ``pareto_staged``; the evaluation scenarios take the same
effects as ``link`` fields (``jaxcc.scenarios``).
"""

import os

import ml_collections

from jaxcc.training.configs import load_config
from jaxcc.envs.base import realism_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling, not ./configs
    # 10.8-s episodes (60 steps of 2 × 90 ms): 3 cross-traffic segments of 5 s cover them.
    c.env.overrides.realism = ml_collections.ConfigDict(realism_config(
        p_each=0.5, jitter_ms_max=20.0, ack_agg_ms_max=20.0, rtt_noise_ms_max=5.0, cross_frac_max=0.5,
        cross_every_s=5.0, cross_segments=3))
    c.wandb.group = "pareto_realism"
    return c
