"""Environment registry: ``make_env(name)`` → (env, default_params), and the feature specs that
go into an exported policy file (``export_features_spec(name)``).

Names: 'aurora', 'pareto' (bootstrap/advance stages, one flow; set ``params.stage``),
'pareto-fairness' (two flows, fairness stage), 'eagle', 'mocc', 'deepcc'.  Keyword arguments
override static ``EnvConfig`` fields (e.g. ``num_flows=2``, ``ticks_per_rtt=4``).
"""

from __future__ import annotations

from jaxcc.envs import aurora, deepcc, eagle, mocc, pareto

_MODULES = {
    "aurora": (aurora, aurora.AuroraEnv),
    "pareto": (pareto, pareto.ParetoEnv),
    "eagle": (eagle, eagle.EagleEnv),
    "mocc": (mocc, mocc.MoccEnv),
    "deepcc": (deepcc, deepcc.DeepccEnv),
}
ENV_NAMES = ("aurora", "pareto", "pareto-fairness", "eagle", "mocc", "deepcc")


def _resolve(name: str):
    if name == "pareto-fairness":
        return pareto, pareto.ParetoEnv, {"num_flows": 2}
    if name not in _MODULES:
        raise ValueError(f"unknown environment {name!r}; expected one of {', '.join(ENV_NAMES)}")
    mod, cls = _MODULES[name]
    return mod, cls, {}


def make_env(name: str, **config_overrides):
    """Returns ``(env, default_params)`` for a paper's training environment."""
    mod, cls, extra = _resolve(name)
    kw = dict(extra)
    kw.update(config_overrides)
    env = cls(mod.make_config(**kw))
    return env, env.default_params


def export_features_spec(name: str, **config_overrides) -> dict:
    """The ``features`` dict of an exported policy spec (name, history, obs_dim, scalings...),
    plus ``mi_rtts`` (also a top-level key of the spec)."""
    mod, _, extra = _resolve(name)
    kw = dict(extra)
    kw.update(config_overrides)
    return mod.export_features_spec(mod.make_config(**kw))
