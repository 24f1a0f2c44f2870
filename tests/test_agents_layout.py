"""The agents package holds algorithms only: it never imports the layers above it."""

import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENTS = os.path.join(REPO, "jaxcc", "agents")
# Evaluation, export, the training loop, scenarios, the simulator's senders and emulation sit
# above the agents (README "Layout"); an agent that imports one of them is a cycle in waiting.
ABOVE = ("jaxcc.evaluate", "jaxcc.train", "jaxcc.scenarios", "jaxcc.policy", "jaxcc.senders", "jaxcc.emulate",
         "jaxcc.emulation", "jaxcc.export", "jaxcc.bench", "jaxcc.sim2real", "jaxcc.bars", "jaxcc.plots")


def imports_of(path: str) -> set[str]:
    """Every jaxcc module a file imports, at any depth (function-local imports included)."""
    out = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("jaxcc")}


def above(modules) -> list[str]:
    return sorted(m for m in modules if any(m == a or m.startswith(a + ".") for a in ABOVE))


def agent_files():
    for root, _, files in os.walk(AGENTS):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.relpath(os.path.join(root, f), REPO)


def test_imports_of_sees_both_forms(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from jaxcc import evaluate as ev\n\ndef f():\n    import jaxcc.train\n")
    assert {"jaxcc.evaluate", "jaxcc.train"} <= imports_of(str(p))
    assert above(imports_of(str(p))) == ["jaxcc.evaluate", "jaxcc.train"]
    assert above({"jaxcc.policyfile", "jaxcc.sim.runner"}) == []  # module names, not prefixes


def test_no_agent_imports_a_layer_above():
    bad = {f: above(imports_of(os.path.join(REPO, f))) for f in agent_files()}
    assert not {f: m for f, m in bad.items() if m}


def test_registry_maps_every_config_algo_to_an_agent():
    """configs/ name agents by ``config.algo`` (also stored in runs' config.json and meta.json)."""
    import importlib.util

    from jaxcc import agents

    algos = set()
    for name in os.listdir(os.path.join(REPO, "configs")):
        if name.endswith(".py") and not name.startswith("_"):
            spec = importlib.util.spec_from_file_location(f"_cfg_{name[:-3]}", os.path.join(REPO, "configs", name))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            algos.add(str(mod.get_config().algo))
    assert algos == {"aurora_ppo", "eagle_cem", "pareto_td3"} == set(agents.list_algos())
    for a in algos:
        mod = agents.get_agent(a)
        assert callable(mod.make_train) and callable(mod.actor_tensors)
    assert agents.get_agent("pareto_td3").__name__ == "jaxcc.agents.pareto.td3"
    with pytest.raises(ValueError, match="unknown config.algo 'ppo'; known: aurora_ppo, eagle_cem, pareto_td3"):
        agents.get_agent("ppo")
