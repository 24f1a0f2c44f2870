"""Agents: the training algorithms, one module per ``config.algo`` (``ALGOS``).

An agent module holds its algorithm and nothing else: networks, losses, the update and
``make_train``.  It never imports ``evaluate``, ``train``, ``scenarios``, ``senders`` or
``emulation``; evaluation, export and the training loop live above it and call it.

What an agent module provides:

* ``make_train(config, mesh=None) -> pipeline.Trainer`` — the pure pieces of a staged run
  (``init``, ``enter_stage``, ``run_chunk``, ``template``, ``stages``, ``actor_spec``, ...) that
  ``jaxcc.train`` drives.

Every agent keeps its actor in the training state as ``state["agent"]["actor"]``, ``{layer:
{tensor: array}}`` named after the policy file's layers, so one function turns any agent's
state into the file's tensors (``pipeline.actor_tensors``); ``jaxcc.training.export.export_state`` writes
them with ``trainer.actor_spec`` and the stage's label: the one export path for every algorithm.
"""

from __future__ import annotations

import importlib

# config.algo -> module.  The names are stored in every run's config.json and stage meta.json,
# so a renamed module keeps its old name here.
ALGOS = {
    "aurora_ppo": "jaxcc.agents.aurora_ppo",
    "deepcc_ddpg": "jaxcc.agents.deepcc_ddpg",
    "eagle_cem": "jaxcc.agents.eagle_cem",
    "mocc_envelope": "jaxcc.agents.mocc_envelope",
    "pareto_td3": "jaxcc.agents.pareto.td3",
}


def list_algos() -> list[str]:
    return sorted(ALGOS)


def get_agent(name: str):
    """The module of ``config.algo`` ``name`` (see the module docstring for what it provides)."""
    if name not in ALGOS:
        raise ValueError(f"unknown config.algo {name!r}; known: {', '.join(list_algos())}")
    return importlib.import_module(ALGOS[name])


def make_train(config, mesh=None):
    return get_agent(str(config.algo)).make_train(config, mesh=mesh)
