"""RL environments over the fluid network model: per-paper features, actions and rewards.

``make_env(name)`` → (env, default_params) for 'aurora', 'pareto', 'pareto-fairness', 'eagle',
'mocc', 'deepcc'; ``export_features_spec(name)`` for the exported policy file.
"""

from jaxcc.envs.registry import ENV_NAMES, export_features_spec, make_env

__all__ = ["ENV_NAMES", "export_features_spec", "make_env"]
