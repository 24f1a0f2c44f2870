"""The policy file's network interpreter: ``forward`` runs the spec's layers, ``apply`` adds
the head, ``map_action`` turns the output into a rate or window (the format in
``jaxcc.policyfile``).  Training runs the same functions, so an exported actor acts as trained."""

from __future__ import annotations

from typing import Any, Mapping

from jaxcc.policyfile.spec import DEFAULT_MAX_MBPS, DEFAULT_MIN_MBPS, _err
from jaxcc.units import MBPS, PACKET_BYTES


def _activate(x, name: str):
    import jax.numpy as jnp
    import jax

    if name == "relu":
        return jnp.maximum(x, 0.0)
    if name == "tanh":
        return jnp.tanh(x)
    if name == "sigmoid":
        return jax.nn.sigmoid(x)
    return x


def lstm_sequence(x, wi, wh, b):
    """An LSTM over the time axis of ``x`` [T, in] from a zero state, gate order i, f, g, o: the
    hidden states [T, H] (the spec's ``lstm`` layer; Pareto's critics run it too)."""
    import jax
    import jax.numpy as jnp

    H = wh.shape[0]
    xw = x @ wi + b  # input projection for all steps at once

    def step(carry, z_in):
        h, c = carry
        z = z_in + h @ wh
        i = jax.nn.sigmoid(z[0:H])
        f = jax.nn.sigmoid(z[H:2 * H])
        g = jnp.tanh(z[2 * H:3 * H])
        o = jax.nn.sigmoid(z[3 * H:4 * H])
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((H,), x.dtype)
    _, hs = jax.lax.scan(step, (zeros, zeros), xw)
    return hs


def _run_layers(layers, tensors: Mapping[str, Any], x, goal):
    """Runs a layer list on ``x`` (``forward``'s loop; a ``branches`` layer recurses once)."""
    import jax.numpy as jnp

    for layer in layers:
        t = layer["type"]
        if t == "dense":
            n = layer["name"]
            x = _activate(x @ tensors[n + ".kernel"] + tensors[n + ".bias"], layer.get("activation", "linear"))
        elif t == "lstm":
            n = layer["name"]
            x = lstm_sequence(x, tensors[n + ".kernel_i"], tensors[n + ".kernel_h"], tensors[n + ".bias"])
        elif t == "conv1d":
            n = layer["name"]
            w = tensors[n + ".kernel"]
            K = w.shape[0]
            L = x.shape[0] - K + 1
            y = tensors[n + ".bias"]
            for k in range(K):
                y = y + x[k:k + L] @ w[k]
            x = _activate(y, layer.get("activation", "linear"))
        elif t == "last_step":
            x = x[-1]
        elif t == "flatten":
            x = x.reshape(-1)
        elif t == "concat_goal":
            if goal is None:
                raise ValueError("this policy needs a goal vector (spec.goal_dim > 0)")
            x = jnp.concatenate([x, jnp.asarray(goal, jnp.float32).reshape(-1)])
        elif t == "select":
            x = x[..., int(layer["start"]):int(layer["stop"])]
        elif t == "goal":
            if goal is None:
                raise ValueError("this policy needs a goal vector (spec.goal_dim > 0)")
            x = jnp.asarray(goal, jnp.float32).reshape(-1)
        elif t == "branches":
            x = jnp.concatenate([_run_layers(b, tensors, x, goal) for b in layer["branches"]])
        else:  # pragma: no cover - validate() rejects these
            raise _err(f"unknown layer type {t!r}")
    return x


def forward(spec: Mapping[str, Any], tensors: Mapping[str, Any], obs_window, goal=None):
    """Runs the layers only; returns the pre-head output vector (float32)."""
    import jax.numpy as jnp

    return _run_layers(spec["layers"], tensors, jnp.asarray(obs_window, jnp.float32), goal)


def apply(spec: Mapping[str, Any], tensors: Mapping[str, Any], obs_window, goal=None):
    """Policy output for one observation window.

    Pure jax.numpy: close over ``spec`` (it is static) and jit/vmap freely, e.g.
    ``jax.vmap(functools.partial(apply, spec, tensors))(obs_batch)``.

    Args:
        spec: the policy spec.
        tensors: name -> [..] float32 arrays.
        obs_window: [T, D] observations, oldest first.
        goal: [G] goal/preference vector, or None when goal_dim is 0.

    Returns:
        continuous/gaussian_mean heads: float32 array [A] in [low, high];
        discrete/q_values heads: int32 scalar index (argmax; for a q_values head with
        ``objectives`` M > 1 the argmax of the goal-weighted Q-values, see the module docstring).
    """
    import jax.numpy as jnp

    z = forward(spec, tensors, obs_window, goal)
    head = spec["head"]
    h = head["type"]
    if h == "continuous":
        lo, hi = float(head["low"]), float(head["high"])
        return lo + (jnp.tanh(z) + 1.0) * (0.5 * (hi - lo))
    if h == "gaussian_mean":
        return jnp.clip(z, float(head["low"]), float(head["high"]))
    m = q_objectives(spec)
    if m > 1:
        return jnp.argmax(scalarised_q(z, goal, int(head["n"]), m)).astype(jnp.int32)
    return jnp.argmax(z).astype(jnp.int32)


def q_objectives(spec: Mapping[str, Any]) -> int:
    """Objectives per action of a ``q_values`` head (``head.objectives``, default 1; 1 for any other head)."""
    head = spec["head"]
    return int(head.get("objectives", 1)) if head["type"] == "q_values" else 1


def scalarised_q(z, goal, n: int, m: int):
    """The ``[n]`` goal-weighted Q-values ``sum_k goal[k] * z[a*m + k]`` of a multi-objective
    ``q_values`` output ``z`` ``[n*m]`` (action-major); jnp, jittable."""
    import jax.numpy as jnp

    if goal is None:
        raise ValueError("this policy needs a goal vector (a q_values head with objectives > 1)")
    q = jnp.reshape(z, (n, m))
    return q @ jnp.asarray(goal, jnp.float32).reshape((m,))


def map_action(spec: Mapping[str, Any], raw_output, current_rate, current_cwnd):
    """Turns a head output into (rate bytes/s, cwnd bytes); jnp, jittable.

    Args:
        spec: the policy spec.
        raw_output: what ``apply`` returned (vector or index).
        current_rate: current pacing rate, bytes/s.
        current_cwnd: current congestion window, bytes (may be inf).
    """
    import jax.numpy as jnp

    act = spec["action"]
    head = spec["head"]
    t = act["type"]
    rate = jnp.asarray(current_rate, jnp.float32)
    cwnd = jnp.asarray(current_cwnd, jnp.float32)
    discrete = head["type"] in ("discrete", "q_values")
    if discrete:
        idx = jnp.asarray(raw_output, jnp.int32).reshape(())
    else:
        a = jnp.asarray(raw_output, jnp.float32).reshape(-1)[0]
    if t == "rate_multiplicative":
        rate = rate * (1.0 + a)
    elif t == "aurora":
        alpha = float(act["alpha"])
        rate = jnp.where(a >= 0, rate * (1.0 + alpha * a), rate / (1.0 - alpha * a))
    elif t == "rate_table":
        rate = rate * jnp.asarray(act["multipliers"], jnp.float32)[idx]
    elif t == "cwnd_table":
        k = jnp.asarray(act.get("multipliers", [1.0] * len(act["deltas"])), jnp.float32)[idx]
        cwnd = jnp.maximum(cwnd * k + jnp.asarray(act["deltas"], jnp.float32)[idx], 2.0 * PACKET_BYTES)
    elif t == "rate_absolute":
        if discrete:
            u = idx.astype(jnp.float32) / float(head["n"] - 1)
        else:
            lo, hi = float(head["low"]), float(head["high"])
            u = (a - lo) / (hi - lo)
        bound = float(act["bound_mbps"])
        if act.get("scale", "linear") == "log":
            low = float(act["low_mbps"])
            rate = low * jnp.power(jnp.float32(bound / low), u) * MBPS
        else:
            rate = u * bound * MBPS
    lo_r = float(act.get("min_mbps", DEFAULT_MIN_MBPS)) * MBPS
    hi_r = float(act.get("max_mbps", DEFAULT_MAX_MBPS)) * MBPS
    rate = jnp.clip(rate, lo_r, hi_r)
    return rate, cwnd
