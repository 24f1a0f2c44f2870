"""Pareto's networks (§III): an LSTM actor and twin LSTM critics over a window of past steps.

The actor is written as a *policy-file spec* and evaluated with ``jaxcc.policyfile.apply``, the
same function that reads an exported file, so training and deployment run one code path and an
exported actor reproduces the training actions exactly.  Parameters are nested dicts
``{layer: {tensor: array}}`` whose names are the policy file's tensor names
(``lstm1.kernel_i``, ``fc1.kernel``, ...); export only flattens them (``pipeline.flat``).

Shapes: an observation window is ``[T, D]`` (oldest first).  "Each time a sample is fed to the
LSTM model, the past states in the sample are input first, and the last output of the last state
is our action for the actor network or estimation of action-value for the critic network" (§III).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.params import glorot_uniform

Params = dict[str, dict[str, jax.Array]]

A_LOW, A_HIGH = -0.7, 2.0  # §III: "The agent's output is continuous and can range from -0.7 to 2."
PAPER_RANGE = (A_LOW, A_HIGH)  # Pareto-Fair v2 narrows it (jaxcc.envs.pareto.FEATURE_SETS)


def hold_pre_tanh(a_range=PAPER_RANGE) -> float:
    """Pre-tanh output for a = 0 under the continuous head low + (tanh(z) + 1)/2 · (high − low)."""
    lo, hi = a_range
    return float(math.atanh(2.0 * (0.0 - lo) / (hi - lo) - 1.0))


HOLD_PRE_TANH = hold_pre_tanh()


def actor_spec(history: int, obs_dim: int, hidden: int, fc: int, *, mi_rtts: float = 2.0,
               features: dict | None = None, a_range=PAPER_RANGE) -> dict[str, Any]:
    """The actor as a policy-file spec (jaxcc-policy version 1); ``a_range`` is the head's range."""
    feats = {"name": "pareto_v1", "history": int(history), "obs_dim": int(obs_dim)}
    feats.update(features or {})
    feats["history"], feats["obs_dim"] = int(history), int(obs_dim)
    return {
        "format": policyfile.FORMAT, "version": policyfile.VERSION, "algorithm": "pareto",
        "features": feats, "mi_rtts": float(mi_rtts), "goal_dim": 0,
        "layers": [
            {"type": "lstm", "name": "lstm1", "in": int(obs_dim), "hidden": int(hidden)},
            {"type": "last_step"},
            {"type": "dense", "name": "fc1", "in": int(hidden), "out": int(fc), "activation": "relu"},
            {"type": "dense", "name": "out", "in": int(fc), "out": 1, "activation": "linear"},
        ],
        "head": {"type": "continuous", "low": float(a_range[0]), "high": float(a_range[1])},
        "action": {"type": "rate_multiplicative", "min_mbps": policyfile.DEFAULT_MIN_MBPS,
                   "max_mbps": policyfile.DEFAULT_MAX_MBPS},
    }


def _dense_init(key, n_in, n_out, gain=1.0):
    return {"kernel": glorot_uniform(key, (n_in, n_out), n_in, n_out, gain), "bias": jnp.zeros((n_out,), jnp.float32)}


def _lstm_init(key, n_in, h):
    k1, k2 = jax.random.split(key)
    bias = jnp.zeros((4 * h,), jnp.float32).at[h:2 * h].set(1.0)  # forget-gate bias 1
    return {"kernel_i": glorot_uniform(k1, (n_in, 4 * h), n_in, 4 * h),
            "kernel_h": glorot_uniform(k2, (h, 4 * h), h, 4 * h), "bias": bias}


def init_actor(key, obs_dim: int, hidden: int, fc: int, a_range=PAPER_RANGE) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    # A small last layer whose bias maps to a = 0 ("keep the rate"): the middle of [-0.7, 2]
    # would be a = 0.65, i.e. +65% per step, which floods every link before anything is learnt.
    out = _dense_init(k3, fc, 1, gain=0.1)
    out["bias"] = jnp.full((1,), hold_pre_tanh(a_range), jnp.float32)
    return {"lstm1": _lstm_init(k1, obs_dim, hidden), "fc1": _dense_init(k2, hidden, fc), "out": out}


def init_critic(key, obs_dim: int, hidden: int, fc: int) -> Params:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return {"lstm1": _lstm_init(k1, obs_dim, hidden), "fc1": _dense_init(k2, hidden + 1, fc),
            "fc2": _dense_init(k3, fc, fc), "q": _dense_init(k4, fc, 1)}


def actor_apply(spec: dict, params: Params, obs_window: jax.Array) -> jax.Array:
    """Action ``a`` in the spec's head range ([-0.7, 2] in §III) for one window ``[T, D]`` (vmap for batches)."""
    return policyfile.apply(spec, pipeline.flat(params), obs_window)[0]


def critic_apply(params: Params, obs_window: jax.Array, action: jax.Array, a_range=PAPER_RANGE) -> jax.Array:
    """Q(s, a) for one window ``[T, D]`` and a scalar action in ``a_range`` (vmap for batches)."""
    p = params["lstm1"]
    hs = policyfile.lstm_sequence(obs_window.astype(jnp.float32), p["kernel_i"], p["kernel_h"], p["bias"])
    # The action enters after the LSTM, scaled to about [-1, 1] like the features.
    lo, hi = a_range
    a = (jnp.reshape(action, (1,)) - 0.5 * (lo + hi)) / (0.5 * (hi - lo))
    x = jnp.concatenate([hs[-1], a])
    x = jax.nn.relu(x @ params["fc1"]["kernel"] + params["fc1"]["bias"])
    x = jax.nn.relu(x @ params["fc2"]["kernel"] + params["fc2"]["bias"])
    return (x @ params["q"]["kernel"] + params["q"]["bias"])[0]
