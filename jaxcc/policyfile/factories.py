"""Random policies: a network of a paper's shape (``make_random_policy``) or one that fits a
feature set as its environment exports it (``make_feature_policy``), for tests, parity vectors
and ``policy:FILE`` runs without a trained policy; and a policy from an MLP trained outside
jaxcc's trainers (``mlp_policy``; ``docs/examples/ppo_gymnax.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxcc.params import glorot_uniform_np
from jaxcc.policyfile.spec import DEFAULT_MAX_MBPS, DEFAULT_MIN_MBPS, FORMAT, VERSION, _pos_int, validate
from jaxcc.units import PACKET_BYTES


def make_random_policy(kind: str, key, *, history: int | None = None, obs_dim: int | None = None,
                       goal_dim: int | None = None, hidden: int | None = None,
                       features: str | None = None, n_actions: int | None = None,
                       objectives: int | None = None, measurement_dim: int | None = None,
                       filters: int | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Builds a valid random policy (spec, tensors) shaped like a paper's network.

    Args:
        kind: ``mlp`` (Aurora: 10x3 window -> 32 -> 16 tanh, gaussian_mean head),
          ``lstm`` (Pareto: LSTM 64 over a 10x5 window, dense, continuous head
          [-0.7, 2]), ``lstm2_discrete`` (Eagle: two LSTM(64), 5-way discrete),
          ``conv1d_goal`` (DeepCC's actor, §V "Training": 16 × 7 window = 4 state + 3 measurement
          features and a 3-weight goal; ``branches`` [the state features through Conv1D(32, kernel
          3, relu) + flatten | the last step's measurement through 3 dense(hidden, relu) | the goal
          through 3 dense(hidden, relu)], ``concat_goal``, dense(hidden, relu), ``concat_goal``,
          dense(1); continuous head [0, 1]; ``rate_absolute`` on a log scale 0.1–100 Mbit/s),
          ``q_values`` (MOCC, the shape of its exported policy: history 1 × 4 features and a
          3-weight preference -> 64 -> 64 ReLU -> 7 actions × 3 objectives, ``q_values`` head with
          ``objectives`` 3, ``cwnd_table`` with ``jaxcc.envs.mocc.CWND_DELTAS_PKTS`` × 1500 bytes).
        key: a ``jax.random`` key or an int seed.
        history, obs_dim, goal_dim, hidden: override the kind's defaults.
        features: feature-set name to record in the spec.
        n_actions: outputs of a discrete kind (default 5; ``q_values``: 7); the action table is
          then spread evenly (``lstm2_discrete``: multipliers 0.5..2 geometrically, ``q_values``:
          deltas -2..+2 packets) unless n is the default, which keeps the tables below.
        objectives: ``q_values`` only: objectives per action (default 3, MOCC's throughput, delay,
          loss; 1: a single-objective Q network, argmax of n values); goal_dim defaults to it.
        measurement_dim: ``conv1d_goal`` only: how many of the last features are the measurement
          (default ``min(3, obs_dim - 1)``); the ones before it are the state.
        filters: ``conv1d_goal`` only: Conv1D filters (default 32, the paper's).

    Returns:
        (spec, tensors); tensors are float32 numpy arrays.
    """
    if isinstance(key, (int, np.integer)):
        seed = int(key)
    else:
        import jax

        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    defaults = {
        "mlp": dict(history=10, obs_dim=3, goal_dim=0, hidden=32, features="aurora_v1", algorithm="aurora"),
        "lstm": dict(history=10, obs_dim=5, goal_dim=0, hidden=64, features="pareto_v1", algorithm="pareto"),
        "lstm2_discrete": dict(history=10, obs_dim=5, goal_dim=0, hidden=64, features="eagle_v1", algorithm="eagle"),
        "conv1d_goal": dict(history=16, obs_dim=7, goal_dim=3, hidden=64, features="deepcc_v1", algorithm="deepcc"),
        "q_values": dict(history=1, obs_dim=4, goal_dim=3, hidden=64, features="mocc_v1", algorithm="mocc"),
    }
    if kind not in defaults:
        raise ValueError(f"unknown random policy kind {kind!r} (known: {', '.join(defaults)})")
    d = dict(defaults[kind])
    for k, v in (("history", history), ("obs_dim", obs_dim), ("goal_dim", goal_dim), ("hidden", hidden),
                 ("features", features)):
        if v is not None:
            d[k] = v
    if kind != "q_values" and objectives is not None:
        raise ValueError(f"objectives applies to the q_values kind only, got kind {kind!r}")
    if kind != "conv1d_goal" and (measurement_dim is not None or filters is not None):
        raise ValueError(f"measurement_dim and filters apply to the conv1d_goal kind only, got kind {kind!r}")
    n_obj = 1
    if kind == "q_values":
        n_obj = 3 if objectives is None else _pos_int(objectives, "objectives")
        if goal_dim is None and n_obj > 1:
            d["goal_dim"] = n_obj
    T, D, G, H = d["history"], d["obs_dim"], d["goal_dim"], d["hidden"]
    default_n = _mocc_deltas_pkts() if kind == "q_values" else None
    n_act = (len(default_n) if default_n else 5) if n_actions is None else _pos_int(n_actions, "n_actions")
    if n_act < 2 and kind in ("lstm2_discrete", "q_values"):
        raise ValueError(f"{kind} needs n_actions >= 2, got {n_act}")
    tensors: dict[str, np.ndarray] = {}

    def dense(name, n_in, n_out, act, gain=1.0):
        tensors[name + ".kernel"] = glorot_uniform_np(rng, (n_in, n_out), n_in, n_out, gain)
        tensors[name + ".bias"] = rng.uniform(-0.1, 0.1, size=(n_out,)).astype(np.float32)
        return {"type": "dense", "name": name, "in": n_in, "out": n_out, "activation": act}

    def lstm(name, n_in, h):
        tensors[name + ".kernel_i"] = glorot_uniform_np(rng, (n_in, 4 * h), n_in, 4 * h)
        tensors[name + ".kernel_h"] = glorot_uniform_np(rng, (h, 4 * h), h, 4 * h)
        b = rng.uniform(-0.1, 0.1, size=(4 * h,)).astype(np.float32)
        b[h:2 * h] += 1.0  # forget-gate bias 1, the usual LSTM initialisation
        tensors[name + ".bias"] = b
        return {"type": "lstm", "name": name, "in": n_in, "hidden": h}

    def conv(name, n_in, n_out, k, act):
        tensors[name + ".kernel"] = glorot_uniform_np(rng, (k, n_in, n_out), k * n_in, n_out)
        tensors[name + ".bias"] = rng.uniform(-0.1, 0.1, size=(n_out,)).astype(np.float32)
        return {"type": "conv1d", "name": name, "in": n_in, "out": n_out, "kernel": k, "activation": act}

    if kind == "mlp":
        layers = [{"type": "flatten"}, dense("fc1", T * D, H, "tanh"), dense("fc2", H, H // 2, "tanh"),
                  dense("mean", H // 2, 1, "linear")]
        head = {"type": "gaussian_mean", "low": -2.0, "high": 2.0}
        action = {"type": "aurora", "alpha": 0.025}
    elif kind == "lstm":
        layers = [lstm("lstm1", D, H), {"type": "last_step"}, dense("fc1", H, 32, "relu"),
                  dense("out", 32, 1, "linear")]
        head = {"type": "continuous", "low": -0.7, "high": 2.0}
        action = {"type": "rate_multiplicative"}
    elif kind == "lstm2_discrete":
        layers = [lstm("lstm1", D, H), lstm("lstm2", H, H), {"type": "last_step"},
                  dense("logits", H, n_act, "linear")]
        head = {"type": "discrete", "n": n_act}
        mult = [0.5, 0.8, 1.0, 1.25, 2.0] if n_act == 5 else np.geomspace(0.5, 2.0, n_act).tolist()
        action = {"type": "rate_table", "multipliers": mult}
    elif kind == "conv1d_goal":
        if G <= 0:
            raise ValueError("conv1d_goal needs goal_dim > 0")
        M = min(3, D - 1) if measurement_dim is None else int(measurement_dim)
        if not 1 <= M < D:
            raise ValueError(f"conv1d_goal: measurement_dim must be in [1, {D - 1}] (obs_dim {D} = state + "
                             f"measurement features), got {M}")
        if T < 3:
            raise ValueError(f"conv1d_goal: history must be >= 3 (the Conv1D kernel), got {T}")
        S, F = D - M, 32 if filters is None else _pos_int(filters, "filters")
        state = [{"type": "select", "start": 0, "stop": S}, conv("state_conv", S, F, 3, "relu"),
                 {"type": "flatten"}]
        meas = [{"type": "last_step"}, {"type": "select", "start": S, "stop": D}, dense("meas1", M, H, "relu"),
                dense("meas2", H, H, "relu"), dense("meas3", H, H, "relu")]
        goal_net = [{"type": "goal"}, dense("goal1", G, H, "relu"), dense("goal2", H, H, "relu"),
                    dense("goal3", H, H, "relu")]
        merged = (T - 2) * F + 2 * H
        layers = [{"type": "branches", "branches": [state, meas, goal_net]}, {"type": "concat_goal"},
                  dense("merge1", merged + G, H, "relu"), {"type": "concat_goal"},
                  dense("out", H + G, 1, "linear")]
        head = {"type": "continuous", "low": 0.0, "high": 1.0}
        action = {"type": "rate_absolute", "bound_mbps": 100.0, "scale": "log", "low_mbps": 0.1}
    else:  # q_values
        if G <= 0:
            raise ValueError("q_values needs goal_dim > 0")
        layers = [{"type": "flatten"}, {"type": "concat_goal"}, dense("fc1", T * D + G, H, "relu"),
                  dense("fc2", H, H, "relu"), dense("q", H, n_act * n_obj, "linear")]
        head = {"type": "q_values", "n": n_act, **({"objectives": n_obj} if n_obj > 1 else {})}
        deltas = ([float(x) * PACKET_BYTES for x in default_n] if n_act == len(default_n)
                  else np.linspace(-3000.0, 3000.0, n_act).tolist())
        action = {"type": "cwnd_table", "deltas": deltas}
        if n_act == len(default_n):
            action["multipliers"] = list(_mocc_mults())
    action.setdefault("min_mbps", DEFAULT_MIN_MBPS)
    action.setdefault("max_mbps", DEFAULT_MAX_MBPS)
    spec = {
        "format": FORMAT, "version": VERSION, "algorithm": "random", "like": d["algorithm"],
        "features": {"name": d["features"], "history": T, "obs_dim": D},
        "mi_rtts": 1.0, "goal_dim": G, "layers": layers, "head": head, "action": action,
    }
    validate(spec, tensors)
    return spec, tensors


def _mocc_mults() -> tuple[float, ...]:
    """MOCC's action multipliers (``jaxcc.envs.mocc.CWND_MULTS``)."""
    from jaxcc.envs import mocc

    return tuple(float(x) for x in mocc.CWND_MULTS)


def _mocc_deltas_pkts() -> tuple[float, ...]:
    """MOCC's action table (``jaxcc.envs.mocc.CWND_DELTAS_PKTS``, packets)."""
    from jaxcc.envs import mocc

    return tuple(float(x) for x in mocc.CWND_DELTAS_PKTS)


# Feature set -> (its environment, the random network kind shaped like its paper's).
FEATURE_POLICIES = {"aurora_v1": ("aurora", "mlp"), "aurora_v2": ("aurora", "mlp"), "pareto_v1": ("pareto", "lstm"),
                    "pareto_v2": ("pareto", "lstm"),
                    "eagle_v1": ("eagle", "lstm2_discrete"), "mocc_v1": ("mocc", "q_values"),
                    "deepcc_v1": ("deepcc", "conv1d_goal")}
# Feature sets that are one configuration of their environment: its ``make_config`` keywords.
FEATURE_ENV_CONFIG = {"pareto_v2": {"feature_set": "pareto_v2"}, "aurora_v2": {"feature_set": "aurora_v2"}}


def make_feature_policy(name: str, key) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A random policy that fits feature set ``name`` as its environment exports it.

    The spec's ``features`` block and ``mi_rtts`` are the environment's
    (``jaxcc.envs.export_features_spec``), the network is ``FEATURE_POLICIES[name]``'s kind with
    the environment's history, observation size, goal size and number of actions, and the
    action block is the one the feature set needs (Eagle: its rate multipliers; MOCC: its cwnd
    deltas in bytes; DeepCC: an absolute rate up to its bound, with the set's ``scale`` and
    ``low_mbps`` when it states them, and the actor's measurement branch selecting the trailing
    ``m_*`` features of ``feature_names``; Aurora and Pareto: the kind's),
    and a continuous head spans the set's ``action_low``/``action_high`` where the environment
    states them (Pareto-Fair v2: [−0.3, 0.5]).
    So every sender accepts it: ``jaxcc.senders`` in the simulator and the C++ datapath.

    Args:
      name: one of ``FEATURE_POLICIES``.
      key: a ``jax.random`` key or an int seed.

    Raises:
      ValueError: ``name`` is not a known feature set.
    """
    if name not in FEATURE_POLICIES:
        raise ValueError(f"unknown feature set {name!r} (known: {', '.join(FEATURE_POLICIES)})")
    from jaxcc.envs.registry import export_features_spec, make_env

    env_name, kind = FEATURE_POLICIES[name]
    env_config = FEATURE_ENV_CONFIG.get(name, {})
    feats_spec = export_features_spec(env_name, **env_config)
    mi_rtts = float(feats_spec.pop("mi_rtts"))
    T, D = int(feats_spec["history"]), int(feats_spec["obs_dim"])
    env, _ = make_env(env_name, num_flows=1, **env_config)
    G = int(env.config.goal_dim)
    n_obj = len(feats_spec["objectives"]) if kind == "q_values" else None  # MOCC: one Q per objective
    extra = {}
    if kind == "conv1d_goal":  # DeepCC: the measurement m_t (eq. 1) is the trailing m_* features
        names = list(feats_spec.get("feature_names", []))
        n_meas = sum(1 for f in names if f.startswith("m_"))
        if len(names) != D or n_meas == 0 or any(not f.startswith("m_") for f in names[D - n_meas:]):
            raise ValueError(f"{name}: features.feature_names must list {D} names ending in the measurement "
                             f"(m_*), got {names}")
        extra["measurement_dim"] = n_meas
    spec, tensors = make_random_policy(kind, key, history=T, obs_dim=D, goal_dim=G, features=name,
                                       n_actions=int(env.action_spec().get("n", 5)), objectives=n_obj, **extra)
    bounds = {"min_mbps": DEFAULT_MIN_MBPS, "max_mbps": DEFAULT_MAX_MBPS}
    if name == "eagle_v1":
        spec["action"] = dict(type="rate_table", multipliers=list(feats_spec["multipliers"]), **bounds)
    elif name == "mocc_v1":
        spec["action"] = dict(type="cwnd_table", deltas=[d * PACKET_BYTES for d in feats_spec["cwnd_deltas_pkts"]],
                              multipliers=[float(k) for k in feats_spec["cwnd_mults"]], **bounds)
    elif name == "deepcc_v1":
        spec["action"] = dict(type="rate_absolute", bound_mbps=float(feats_spec["bound_mbps"]), **bounds)
        if "scale" in feats_spec:  # the env's rate scale (linear, or log from low_mbps)
            spec["action"]["scale"] = str(feats_spec["scale"])
        if "low_mbps" in feats_spec:
            spec["action"]["low_mbps"] = float(feats_spec["low_mbps"])
    if spec["head"]["type"] == "continuous" and "action_low" in feats_spec:
        spec["head"] = dict(spec["head"], low=float(feats_spec["action_low"]), high=float(feats_spec["action_high"]))
    spec["features"] = dict(feats_spec)
    spec["mi_rtts"] = mi_rtts
    spec["algorithm"] = "random"
    validate(spec, tensors)
    return spec, tensors


def mlp_policy(dense, *, activation: str, features: dict[str, Any], head: dict[str, Any], action: dict[str, Any],
               algorithm: str = "custom") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A trained MLP as a policy file's (spec, tensors), for agents trained outside jaxcc's trainers.

    The network: ``flatten`` of the ``[T, D]`` window, then the dense layers in order, each but
    the last followed by ``activation`` (the last is linear and feeds ``head``).  Save it with
    ``jaxcc.policyfile.save(path, spec, tensors)``.

    Args:
      dense: the layers, first to last, each a mapping with ``kernel`` [in, out] and ``bias``
        [out] (a flax ``nn.Dense``'s params) or a ``(kernel, bias)`` pair.
      activation: the hidden layers' activation, one of ``ACTIVATIONS``.
      features: the environment's feature spec (``jaxcc.envs.export_features_spec(name)``); its
        ``history``/``obs_dim`` are the window and its ``mi_rtts`` the spec's monitor interval.
      head: the spec's head block, e.g. ``{"type": "gaussian_mean", "low": -10, "high": 10}``.
      action: the spec's action block, e.g. ``{"type": "aurora", "alpha": 0.025}`` (``min_mbps``
        and ``max_mbps`` default to ``DEFAULT_MIN_MBPS``/``DEFAULT_MAX_MBPS``).
      algorithm: the spec's ``algorithm`` label.

    Returns:
      (spec, tensors), validated; the layers are named ``fc1`` ... ``fcN`` and ``out``.

    Raises:
      ValueError: no layers, features without ``mi_rtts``, or a spec that does not validate
        (an unknown activation, shapes that do not chain, non-finite weights).
    """
    if not dense:
        raise ValueError("mlp_policy: dense must list at least one layer")
    if "mi_rtts" not in features:
        raise ValueError("mlp_policy: features has no 'mi_rtts' (pass jaxcc.envs.export_features_spec(name))")
    layers, tensors = [{"type": "flatten"}], {}
    for i, layer in enumerate(dense):
        kernel, bias = (layer["kernel"], layer["bias"]) if hasattr(layer, "keys") else layer
        kernel, bias = np.asarray(kernel, np.float32), np.asarray(bias, np.float32)
        last = i == len(dense) - 1
        name = "out" if last else f"fc{i + 1}"
        tensors[name + ".kernel"], tensors[name + ".bias"] = kernel, bias
        layers.append({"type": "dense", "name": name, "in": int(kernel.shape[0]), "out": int(kernel.shape[-1]),
                       "activation": "linear" if last else activation})
    feats = dict(features)
    spec = {"format": FORMAT, "version": VERSION, "algorithm": str(algorithm), "features": feats,
            "mi_rtts": float(feats["mi_rtts"]), "goal_dim": 0, "layers": layers, "head": dict(head),
            "action": {"min_mbps": DEFAULT_MIN_MBPS, "max_mbps": DEFAULT_MAX_MBPS, **action}}
    validate(spec, tensors)
    return spec, tensors
