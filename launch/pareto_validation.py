"""Scores Pareto policy files on the snapshot-selection validation links, to choose between
training configs by the rule the trainer selects snapshots with (never by the scenarios that judge
them): the eight links of ``jaxcc.envs.pareto.VALIDATION_LINKS`` and the three with a CUBIC
neighbour of ``COEXIST_VALIDATION_LINKS``, each scored by ``jaxcc.agents.pareto.td3.score_episode``
(lower is better) with the realism and feature set of ``configs/pareto_staged.py``, 150-step
episodes, the keys of seed 0 (the same draws for every file).

    PYTHONPATH=. python3 launch/pareto_validation.py runs/a/stages/Pareto-Fair.safetensors ...

Prints one row per file: the mean over the eight links, over the three CUBIC links, and over all
eleven (every link weighs the same, as ``select.coexist_links`` weighs them).
"""

from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp

from jaxcc import policyfile
from jaxcc.agents.pareto import env_adapter, td3
from jaxcc.training.configs import load_config

SEED = 0


def make_scorer(spec: dict, env_over: dict, env_params: dict):
    """``score(tensors) -> (8 per-link scores, 3 per-link scores)`` for policies of ``spec``'s shape,
    compiled once for all of them."""
    keys = jax.random.split(jax.random.PRNGKey(SEED + 7919), 1)
    fns = []
    for coexist in (False, True):
        env, params = env_adapter.make_validation_env(overrides=env_over, params=env_params, max_steps=150,
                                                      coexist=coexist)

        def per_link(tensors, params, env=env):
            act = jax.vmap(lambda o: policyfile.apply(spec, tensors, o)[0])
            return jax.vmap(lambda pp: jnp.mean(jax.vmap(
                lambda k: td3.score_episode(act, env, pp, k, True))(keys)))(params)

        fns.append((jax.jit(per_link), params))

    def score(tensors):
        tensors = {k: jnp.asarray(v) for k, v in tensors.items()}
        return tuple([float(x) for x in fn(tensors, params)] for fn, params in fns)

    return score


def main(paths: list[str]) -> None:
    if not paths:
        sys.exit("usage: launch/pareto_validation.py POLICY.safetensors ...")
    cfg = load_config("configs/pareto_staged.py")
    env_over, env_params = dict(cfg.env.overrides), dict(cfg.env.params)
    print("| policy | 8 validation links | 3 CUBIC links | all 11 |")
    print("|---|---:|---:|---:|")
    scorers = {}
    for p in paths:
        spec, tensors = policyfile.load(p)
        key = json.dumps(spec, sort_keys=True)
        if key not in scorers:
            scorers[key] = make_scorer(spec, env_over, env_params)
        std, cx = scorers[key](tensors)
        print(f"| {p} | {sum(std) / len(std):.3f} | {sum(cx) / len(cx):.3f} | {(sum(std) + sum(cx)) / 11:.3f} |")

if __name__ == "__main__":
    main(sys.argv[1:])
