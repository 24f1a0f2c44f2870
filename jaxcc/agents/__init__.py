"""Agents: one module per algorithm, ``jaxcc.agents.<config.algo>``.

Each module exposes ``make_train(config, mesh=None) -> Trainer`` (``init``, ``enter_stage``,
``run_chunk``, ``template``, ``stages``, ``actor_spec``; see ``pareto_td3.Trainer``) and may
expose ``export(state, spec, path)`` (default: ``jaxcc.export.export_state``).
"""

from __future__ import annotations

import importlib
import pkgutil


def list_algos() -> list[str]:
    import jaxcc.agents as pkg

    skip = {"networks", "replay", "env_adapter", "expert", "eval_hooks", "pipeline"}
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name not in skip and not m.name.startswith("_"))


def get_agent(name: str):
    if name not in list_algos():
        raise ValueError(f"unknown config.algo {name!r}; known: {', '.join(list_algos())}")
    mod = importlib.import_module(f"jaxcc.agents.{name}")
    if not hasattr(mod, "make_train"):
        raise ValueError(f"config.algo {name!r}: jaxcc.agents.{name} has no make_train(config)")
    return mod


def make_train(config, mesh=None):
    return get_agent(str(config.algo)).make_train(config, mesh=mesh)
