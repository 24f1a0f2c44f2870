"""Pareto-Fair v2 trained beside a CUBIC flow: ``pareto_staged`` whose fairness stage gives half of
its shared links a kernel-like CUBIC flow in the last slot (``EnvConfig.competitor``;
``jaxcc/envs/base.py``), starting in the first 3 s and staying to the end, beside 1–3 learned
flows.  The CUBIC flow is part of the link, not an agent: it is never a transition, but
Pareto-Fair v2's link-wide reward terms see it (the fairness term pays each learned flow for
delivering as much as the link's mean flow, the CUBIC one included).  A policy that only ever
met responsive neighbours reads CUBIC's standing queue as its own congestion and yields
(``docs/results.md``, Coexistence); this is the distribution that shows it otherwise.
Snapshot selection adds three validation links with a CUBIC neighbour, disjoint from the
``coexist/*`` scenarios that judge it (``jaxcc.envs.pareto.COEXIST_VALIDATION_LINKS``).  Everything
else is ``configs/pareto_staged.py``'s.

``python -m jaxcc.train --config=pareto_coexist`` (what it scores beside ``pareto_staged``:
``checkpoints/pareto/README.md``, "Beside CUBIC").
"""

import os

import ml_collections

from jaxcc.training.configs import load_config


def get_config() -> ml_collections.ConfigDict:
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pareto_staged.py"))  # its sibling
    c.stages.fairness.env_overrides.competitor = "cubic"
    c.stages.fairness.env_overrides.p_competitor = 0.5
    c.stages.fairness.env_overrides.competitor_start_s = 3.0
    # Snapshot selection also plays three links with a CUBIC neighbour (jaxcc.envs.pareto.
    # COEXIST_VALIDATION_LINKS, disjoint from the coexist/* scenarios); every link weighs the same.
    c.select.coexist_links = True
    return c
