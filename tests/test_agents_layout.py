"""The agent registry: every ``config.algo`` in configs/ names an agent module that trains and
exports.  (That agents import nothing above them is ``tests/test_layout.py``.)"""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    assert algos == {"aurora_ppo", "deepcc_ddpg", "eagle_cem", "mocc_envelope", "pareto_td3"} == set(agents.list_algos())
    for a in algos:
        mod = agents.get_agent(a)
        assert callable(mod.make_train)
    assert agents.get_agent("pareto_td3").__name__ == "jaxcc.agents.pareto.td3"
    with pytest.raises(ValueError, match="unknown config.algo 'ppo'; known: aurora_ppo, deepcc_ddpg, eagle_cem, mocc_envelope, pareto_td3"):
        agents.get_agent("ppo")
