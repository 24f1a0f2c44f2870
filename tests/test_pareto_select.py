"""Pareto snapshot selection: the stage's policy is its best validated actor."""

import importlib.util
import os

import jax
import numpy as np
import pytest

from jaxcc.agents.pareto import td3 as pareto_td3

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def smoke_config():
    spec = importlib.util.spec_from_file_location("smoke", os.path.join(REPO, "configs", "pareto_smoke.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.select.every_chunks = 1
    return c


@pytest.mark.full  # a training stage with its selection
def test_selection_keeps_the_best_validated_actor_and_finish_stage_installs_it():
    tr = pareto_td3.make_train(smoke_config())
    state = jax.jit(tr.init)(jax.random.PRNGKey(0))
    run = jax.jit(tr.run_chunk, static_argnums=1)
    scores, actors = [], []
    for _ in range(3):
        state, m = run(state, 0)
        scores.append(float(np.asarray(m["val_score"])[-1]))
        actors.append(jax.tree.map(np.asarray, state["agent"]["actor"]))
    assert all(np.isfinite(s) and s >= 0 for s in scores)
    best = int(np.argmin(scores))
    assert float(state["select"]["score"]) == scores[best]
    assert int(state["select"]["update"]) == (best + 1) * tr.chunk_updates
    jax.tree.map(np.testing.assert_array_equal, jax.tree.map(np.asarray, state["select"]["actor"]), actors[best])
    done = jax.jit(tr.finish_stage)(state)
    for k in ("actor", "actor_t"):
        jax.tree.map(np.testing.assert_array_equal, jax.tree.map(np.asarray, done["agent"][k]), actors[best])
    # The critics and the rest of the state are untouched.
    jax.tree.map(np.testing.assert_array_equal, done["agent"]["critic1"], state["agent"]["critic1"])
    # A new stage starts a new selection.
    nxt = jax.jit(tr.enter_stage, static_argnums=1)(done, 1)
    assert not np.isfinite(float(nxt["select"]["score"])) and int(nxt["select"]["update"]) == -1
