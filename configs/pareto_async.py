"""Pareto-Fair v2 with every flow on its own clock: ``pareto_staged`` whose environments step each
flow on mi_rtts of its own RTT (``EnvConfig.flow_clock``; ``jaxcc/envs/base.py``), as the datapath
sender and the simulator's senders decide, and whose shared links (the fairness stage) have mixed
RTTs in half their episodes: each flow's RTT up to 8 times the link's smallest
(``ParetoParams.p_mixed_rtt``, ``ParetoConfig.rtt_ratio_max``).  Everything else is
``configs/pareto_staged.py``'s; ``configs/pareto_paper.py`` keeps the paper's one clock.

``python -m jaxcc.train --config=pareto_async`` (what it scores beside ``pareto_staged``:
``checkpoints/pareto/README.md``, "Per-flow clocks").
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling
    c.env.overrides.flow_clock = True
    c.env.overrides.rtt_ratio_max = 8.0
    c.env.params.p_mixed_rtt = 0.5
    return c
