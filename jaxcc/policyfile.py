"""The exported policy file shared by the JAX side and the C++ datapath.

A policy file is a safetensors file: float32 little-endian tensors plus a
``__metadata__`` map whose key ``"jaxcc"`` holds a JSON string, the *spec*.
The spec says how to compute features, which layers to run, and how to turn
the network output into a sending rate or congestion window. The C++ loader in
``datapath/src/policy.cc`` implements exactly the same rules; the two are held
together by test vectors written by ``python -m jaxcc.parity_vectors --out
tests/vectors`` (``jaxcc.parity_vectors``).

Random policies (tests, and a file of any feature set for ``policy:FILE`` without a
trained one)::

    python -m jaxcc.policyfile --random=q_values --out=FILE   # a network of that kind
    python -m jaxcc.policyfile --random=mocc_v1 --out=FILE    # one that fits a feature set
    python -m jaxcc.policyfile --check=FILE                   # validate, print the spec

Spec (version 1)::

    {"format": "jaxcc-policy", "version": 1,
     "algorithm": "pareto|aurora|eagle|mocc|deepcc|random",
     "features": {"name": "pareto_v1", "history": T, "obs_dim": D, ...},
     "mi_rtts": k,            # monitor interval = k * min RTT
     "goal_dim": G,           # 0 when the policy takes no goal vector
     "layers": [...],         # see below
     "head": {...},           # see below
     "action": {...}}         # see below

Layers, applied in order to the observation window ``x`` of shape ``[T, D]``
(oldest first):

* ``dense`` (``in``, ``out``, ``activation``): ``act(x @ kernel + bias)`` on
  the last axis, so it works per time step on ``[T, in]`` or on a vector.
* ``lstm`` (``in``, ``hidden``): runs over the time axis from a zero state and
  returns the whole sequence ``[T, hidden]``. Gate order i, f, g, o.
* ``conv1d`` (``in``, ``out``, ``kernel``, ``activation``): VALID, stride 1,
  ``[T, in] -> [T-K+1, out]``; ``y[t] = b + sum_k x[t+k] @ W[k]``.
* ``last_step``: ``[T, X] -> [X]``.
* ``flatten``: any shape to a vector (row-major, time-major for ``[T, X]``).
* ``concat_goal``: vector ``[X]`` -> ``[X + G]`` (goal appended last); it may appear
  several times (DeepCC's goal reaches every merged layer).
* ``select`` (``start`` a, ``stop`` b): keeps features ``[a, b)`` of the last axis,
  ``[T, D] -> [T, b-a]`` or ``[D] -> [b-a]``; ``0 <= a < b <= D``.
* ``goal``: the output is the goal vector ``[G]`` (its input is dropped); needs
  ``goal_dim > 0``.
* ``branches`` (``branches``: a list of non-empty layer lists): each branch runs on a
  copy of the current input and must end in a vector; the outputs are concatenated in
  branch order.  A branch may hold any layer but ``branches`` (no nesting).  Layer
  (tensor) names are global: unique across all branches and the main list.

With ``goal_dim > 0`` some ``concat_goal`` or ``goal`` layer must read the goal.
DeepCC's actor (the DeepCC paper's §IV-B Fig. 4 and §V "Training": state, measurement
and goal each through their own network, the goal added to every merged layer;
``make_random_policy("conv1d_goal")``) is::

    branches: [[select 0:4, conv1d(4->32, k3, relu), flatten],           # 16 past states
               [last_step, select 4:7, dense 64 relu x3],                # measurement m_t
               [goal, dense 64 relu x3]]                                 # goal g
    concat_goal, dense(->64, relu), concat_goal, dense(->1, linear)

Heads take the final layer's output vector ``z`` (the last layer should be a
``linear`` dense):

* ``continuous`` (``low``, ``high``): ``low + (tanh(z) + 1) / 2 * (high - low)``.
* ``gaussian_mean`` (``low``, ``high``): ``clip(z, low, high)`` (the mean of the
  Gaussian used in training; deployment is deterministic).
* ``discrete`` (``n``): ``argmax(z)`` (first maximum).
* ``q_values`` (``n``, optional ``objectives`` M, an integer >= 1, default 1): with M = 1
  ``argmax(z)`` (first maximum), ``z`` has ``n`` values.  With M > 1 (a multi-objective Q
  network, MOCC's envelope Q-learning, Algorithm 2) the network outputs ``n * M`` values,
  action-major (``z[a*M + k]`` = Q_k(s, a, ω), objective k of action a), the spec's ``goal_dim``
  must be M (the goal is the preference ω), and the action is
  ``argmax_a sum_k goal[k] * z[a*M + k]`` (first maximum; the scalarised Q-value ω·Q(s, a, ω)).

Actions (``map_action``); rates are bytes/s, windows bytes; ``a`` is the first
element of a continuous head's output, ``i`` a discrete head's index:

* ``rate_multiplicative``: ``rate * (1 + a)`` (Pareto/Orca style).
* ``aurora`` (``alpha``): ``rate * (1 + alpha*a)`` if ``a >= 0`` else
  ``rate / (1 - alpha*a)`` (Aurora eq. 1).
* ``rate_table`` (``multipliers``): ``rate * multipliers[i]``.
* ``cwnd_table`` (``deltas``, bytes; optional ``multipliers``, default 1 each):
  ``cwnd * multipliers[i] + deltas[i]``, at least 2 MSS (MOCC's table mixes both).
* ``rate_absolute`` (``bound_mbps``; optional ``scale``: ``linear`` (default) or
  ``log``, and with ``log`` ``low_mbps``, ``0 < low < bound``): a continuous output is
  normalised to ``u = (a - low) / (high - low)``, a discrete index to
  ``u = i / (n - 1)``; ``rate = u * bound`` (linear) or ``rate = low * (bound / low) ** u``
  (log: one policy spans links from ``low`` to ``bound`` with the same relative step).

Every action then clamps the rate to ``[min_mbps, max_mbps]`` (optional keys of
the action block, defaults 0.01 and 100000 Mbit/s) so one bad output can never
stop or flood a flow. Rate-only actions leave the window untouched and
``cwnd_table`` leaves the rate untouched.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
from typing import Any, Mapping

import numpy as np

FORMAT = "jaxcc-policy"
VERSION = 1
METADATA_KEY = "jaxcc"
MSS = 1500
BYTES_PER_MBIT = 125000.0
DEFAULT_MIN_MBPS = 0.01
DEFAULT_MAX_MBPS = 100000.0

LAYER_TYPES = ("dense", "lstm", "conv1d", "last_step", "flatten", "concat_goal", "select", "goal", "branches")
ACTIVATIONS = ("relu", "tanh", "sigmoid", "linear")
HEAD_TYPES = ("continuous", "gaussian_mean", "discrete", "q_values")
ACTION_TYPES = ("rate_multiplicative", "aurora", "rate_table", "cwnd_table", "rate_absolute")
RATE_SCALES = ("linear", "log")
# A safetensors header larger than this is not a policy file; refusing it early
# keeps a corrupted length field from making us allocate gigabytes.
MAX_HEADER_BYTES = 16 * 1024 * 1024

__all__ = [
    "save", "load", "validate", "apply", "forward", "map_action", "make_random_policy",
    "make_feature_policy", "expected_tensor_shapes",
]


# --------------------------------------------------------------------------- validation


def _err(msg: str) -> ValueError:
    return ValueError(f"policy file: {msg}")


def _req(d: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(d, Mapping) or key not in d:
        raise _err(f"{where} is missing key '{key}'")
    return d[key]


def _pos_int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) <= 0:
        raise _err(f"{where} must be a positive integer, got {v!r}")
    return int(v)


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _err(f"{where} must be a number, got {v!r}")
    if not math.isfinite(float(v)):
        raise _err(f"{where} must be finite, got {v!r}")
    return float(v)


def _walk_layers(layers, cur: tuple[int, ...], G: int, shapes: dict[str, tuple[int, ...]], prefix: str,
                 in_branch: bool) -> tuple[tuple[int, ...], bool]:
    """Validates ``layers`` run on an input of shape ``cur``; adds their tensors to ``shapes``.

    ``prefix`` names where the list sits (``""`` for ``spec.layers``, ``"layer 2 (branches)
    branch 1 "`` inside a branch), so an error names the exact layer.  Returns the output shape
    and whether any layer reads the goal.
    """
    used_goal = False
    for idx, layer in enumerate(layers):
        where = f"{prefix}layer {idx}"
        if not isinstance(layer, Mapping):
            raise _err(f"{where} must be an object")
        ltype = layer.get("type")
        if ltype is None:
            raise _err(f"{where} is missing its 'type'")
        if ltype not in LAYER_TYPES:
            raise _err(f"{where} has unknown layer type {ltype!r} (known: {', '.join(LAYER_TYPES)})")
        where = f"{prefix}layer {idx} ({ltype})"
        if ltype in ("dense", "lstm", "conv1d"):
            lname = _req(layer, "name", where)
            if not isinstance(lname, str) or not lname:
                raise _err(f"{where} name must be a non-empty string")
            where = f"{prefix}layer {idx} ({ltype} '{lname}')"
            if any(k.rsplit(".", 1)[0] == lname for k in shapes):
                raise _err(f"{where}: duplicate layer name '{lname}'")
            n_in = _pos_int(_req(layer, "in", where), f"{where} 'in'")
            if cur[-1] != n_in:
                raise _err(f"{where} expects in={n_in} but its input has shape {list(cur)}")
            if ltype in ("dense", "conv1d"):
                act = layer.get("activation", "linear")
                if act not in ACTIVATIONS:
                    raise _err(f"{where} has unknown activation {act!r} (known: {', '.join(ACTIVATIONS)})")
        if ltype == "dense":
            n_out = _pos_int(_req(layer, "out", where), f"{where} 'out'")
            shapes[f"{lname}.kernel"] = (n_in, n_out)
            shapes[f"{lname}.bias"] = (n_out,)
            cur = cur[:-1] + (n_out,)
        elif ltype == "lstm":
            if len(cur) != 2:
                raise _err(f"{where} needs a [time, features] input, got shape {list(cur)}")
            H = _pos_int(_req(layer, "hidden", where), f"{where} 'hidden'")
            shapes[f"{lname}.kernel_i"] = (n_in, 4 * H)
            shapes[f"{lname}.kernel_h"] = (H, 4 * H)
            shapes[f"{lname}.bias"] = (4 * H,)
            cur = (cur[0], H)
        elif ltype == "conv1d":
            if len(cur) != 2:
                raise _err(f"{where} needs a [time, features] input, got shape {list(cur)}")
            K = _pos_int(_req(layer, "kernel", where), f"{where} 'kernel'")
            n_out = _pos_int(_req(layer, "out", where), f"{where} 'out'")
            if K > cur[0]:
                raise _err(f"{where} kernel {K} is longer than its input's {cur[0]} time steps")
            shapes[f"{lname}.kernel"] = (K, n_in, n_out)
            shapes[f"{lname}.bias"] = (n_out,)
            cur = (cur[0] - K + 1, n_out)
        elif ltype == "last_step":
            if len(cur) != 2:
                raise _err(f"{where} needs a [time, features] input, got shape {list(cur)}")
            cur = (cur[1],)
        elif ltype == "flatten":
            cur = (int(np.prod(cur)),)
        elif ltype == "concat_goal":
            if G <= 0:
                raise _err(f"{where} but spec.goal_dim is 0")
            if len(cur) != 1:
                raise _err(f"{where} needs a vector input (add flatten or last_step first), got shape {list(cur)}")
            used_goal = True
            cur = (cur[0] + G,)
        elif ltype == "select":
            n = cur[-1]
            a = _req(layer, "start", where)
            b = _req(layer, "stop", where)
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= int(a) < n:
                raise _err(f"{where} 'start' must be an integer in [0, {n - 1}] (its input has {n} features), "
                           f"got {a!r}")
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not int(a) < int(b) <= n:
                raise _err(f"{where} 'stop' must be an integer in [{int(a) + 1}, {n}] (start < stop <= its "
                           f"input's {n} features), got {b!r}")
            cur = cur[:-1] + (int(b) - int(a),)
        elif ltype == "goal":
            if G <= 0:
                raise _err(f"{where} but spec.goal_dim is 0")
            used_goal = True
            cur = (G,)
        elif ltype == "branches":
            if in_branch:
                raise _err(f"{where}: branches cannot be nested (a branch may not contain a branches layer)")
            branches = _req(layer, "branches", where)
            if not isinstance(branches, (list, tuple)) or not branches:
                raise _err(f"{where} 'branches' must be a non-empty list of layer lists")
            width = 0
            for bi, branch in enumerate(branches):
                bwhere = f"{where} branch {bi}"
                if not isinstance(branch, (list, tuple)) or not branch:
                    raise _err(f"{bwhere} must be a non-empty list of layers")
                out, used = _walk_layers(branch, cur, G, shapes, bwhere + " ", in_branch=True)
                if len(out) != 1:
                    raise _err(f"{bwhere} must end in a vector (add last_step or flatten), got shape {list(out)}")
                used_goal = used_goal or used
                width += out[0]
            cur = (width,)
    return cur, used_goal


def expected_tensor_shapes(spec: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Validates the spec and returns the tensor shapes it needs.

    Walks the layers with the shape of the running activation, so a layer
    whose ``in`` does not match what reaches it is reported by name.

    Raises:
        ValueError: naming the first problem found.
    """
    if not isinstance(spec, Mapping):
        raise _err("spec must be a JSON object")
    fmt = spec.get("format")
    if fmt != FORMAT:
        raise _err(f"wrong magic: format is {fmt!r}, expected {FORMAT!r}")
    version = spec.get("version")
    if version != VERSION:
        raise _err(f"unsupported version {version!r} (this reader understands version {VERSION})")
    feats = _req(spec, "features", "spec")
    if not isinstance(feats, Mapping):
        raise _err("spec.features must be an object")
    name = _req(feats, "name", "spec.features")
    if not isinstance(name, str) or not name:
        raise _err("spec.features.name must be a non-empty string")
    T = _pos_int(_req(feats, "history", "spec.features"), "spec.features.history")
    D = _pos_int(_req(feats, "obs_dim", "spec.features"), "spec.features.obs_dim")
    mi = _number(_req(spec, "mi_rtts", "spec"), "spec.mi_rtts")
    if mi <= 0:
        raise _err(f"spec.mi_rtts must be > 0, got {mi}")
    G = spec.get("goal_dim", 0)
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or G < 0:
        raise _err(f"spec.goal_dim must be an integer >= 0, got {G!r}")
    G = int(G)

    layers = _req(spec, "layers", "spec")
    if not isinstance(layers, (list, tuple)) or not layers:
        raise _err("spec.layers must be a non-empty list")
    shapes: dict[str, tuple[int, ...]] = {}
    cur, used_goal = _walk_layers(layers, (T, D), G, shapes, "", in_branch=False)
    if G > 0 and not used_goal:
        raise _err(f"spec.goal_dim is {G} but no concat_goal or goal layer uses the goal")
    if len(cur) != 1:
        raise _err(f"network output must be a vector, got shape {list(cur)} (add last_step or flatten)")
    out_dim = cur[0]

    head = _req(spec, "head", "spec")
    htype = head.get("type") if isinstance(head, Mapping) else None
    if htype not in HEAD_TYPES:
        raise _err(f"unknown head type {htype!r} (known: {', '.join(HEAD_TYPES)})")
    if htype in ("continuous", "gaussian_mean"):
        lo = _number(_req(head, "low", f"head ({htype})"), "head.low")
        hi = _number(_req(head, "high", f"head ({htype})"), "head.high")
        if not lo < hi:
            raise _err(f"head.low ({lo}) must be < head.high ({hi})")
    else:
        n = _pos_int(_req(head, "n", f"head ({htype})"), "head.n")
        n_obj = 1
        if htype == "q_values" and "objectives" in head:
            n_obj = head["objectives"]
            if isinstance(n_obj, bool) or not isinstance(n_obj, (int, np.integer)) or int(n_obj) < 1:
                raise _err(f"head.objectives must be an integer >= 1 (objectives per action), got {n_obj!r}")
            n_obj = int(n_obj)
        if htype == "discrete" and "objectives" in head:
            raise _err("head.objectives is only allowed on a q_values head, got a discrete head")
        if n * n_obj != out_dim:
            if n_obj > 1:
                raise _err(f"head (q_values) has n={n} and objectives={n_obj}: the final layer must output "
                           f"n*objectives={n * n_obj} values, got {out_dim}")
            raise _err(f"head ({htype}) has n={n} but the network outputs {out_dim} values")
        if n_obj > 1 and G != n_obj:
            raise _err(f"head.objectives is {n_obj} but spec.goal_dim is {G}: the goal (preference) must "
                       f"have one weight per objective")
        out_dim = n  # the head's output: one index among n actions

    action = _req(spec, "action", "spec")
    atype = action.get("type") if isinstance(action, Mapping) else None
    if atype not in ACTION_TYPES:
        raise _err(f"unknown action type {atype!r} (known: {', '.join(ACTION_TYPES)})")
    discrete = htype in ("discrete", "q_values")
    if atype in ("rate_multiplicative", "aurora") and discrete:
        raise _err(f"action {atype} needs a continuous head, got {htype}")
    if atype in ("rate_table", "cwnd_table") and not discrete:
        raise _err(f"action {atype} needs a discrete or q_values head, got {htype}")
    if atype == "aurora":
        _number(_req(action, "alpha", "action (aurora)"), "action.alpha")
    if atype in ("rate_table", "cwnd_table"):
        key = "multipliers" if atype == "rate_table" else "deltas"
        table = _req(action, key, f"action ({atype})")
        if not isinstance(table, (list, tuple)) or len(table) != out_dim:
            raise _err(f"action.{key} must be a list of {out_dim} numbers (one per head output)")
        for j, v in enumerate(table):
            _number(v, f"action.{key}[{j}]")
    if atype == "cwnd_table" and "multipliers" in action:
        mults = action["multipliers"]
        if not isinstance(mults, (list, tuple)) or len(mults) != out_dim:
            raise _err(f"action.multipliers must be a list of {out_dim} numbers > 0 (one per head output)")
        for j, v in enumerate(mults):
            if _number(v, f"action.multipliers[{j}]") <= 0:
                raise _err(f"action.multipliers[{j}] must be > 0, got {v}")
    if atype == "rate_absolute":
        b = _number(_req(action, "bound_mbps", "action (rate_absolute)"), "action.bound_mbps")
        if b <= 0:
            raise _err("action.bound_mbps must be > 0")
        if discrete and out_dim < 2:
            raise _err("action rate_absolute with a discrete head needs n >= 2")
        scale = action.get("scale", "linear")
        if scale not in RATE_SCALES:
            raise _err(f"action.scale must be one of {', '.join(RATE_SCALES)}, got {scale!r}")
        if scale == "log":
            low = _number(_req(action, "low_mbps", "action (rate_absolute, scale log)"), "action.low_mbps")
            if not 0 < low < b:
                raise _err(f"action.low_mbps must be in (0, bound_mbps={b}), got {low}")
        elif "low_mbps" in action:
            raise _err("action.low_mbps is only allowed with scale 'log' (a linear rate starts at 0)")
    elif "scale" in action or "low_mbps" in action:
        raise _err(f"action.scale and action.low_mbps are only allowed on rate_absolute, got {atype}")
    lo_m = _number(action.get("min_mbps", DEFAULT_MIN_MBPS), "action.min_mbps")
    hi_m = _number(action.get("max_mbps", DEFAULT_MAX_MBPS), "action.max_mbps")
    if not 0 < lo_m <= hi_m:
        raise _err(f"action needs 0 < min_mbps <= max_mbps, got {lo_m}, {hi_m}")
    return shapes


def validate(spec: Mapping[str, Any], tensors: Mapping[str, Any]) -> None:
    """Checks spec and tensors against each other.

    Raises:
        ValueError: missing/unknown tensor, shape mismatch (naming the tensor and
          the expected and actual shapes), non-float32 dtype, NaN or inf.
    """
    shapes = expected_tensor_shapes(spec)
    for name, shape in shapes.items():
        if name not in tensors:
            raise _err(f"missing tensor '{name}' (expected shape {list(shape)})")
        arr = np.asarray(tensors[name])
        if arr.dtype != np.float32:
            raise _err(f"tensor '{name}' has dtype {arr.dtype}, expected float32")
        if tuple(arr.shape) != shape:
            raise _err(f"tensor '{name}' has shape {list(arr.shape)}, expected {list(shape)}")
        if not np.all(np.isfinite(arr)):
            bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
            raise _err(f"tensor '{name}' contains {bad} NaN/inf value(s)")
    extra = sorted(set(tensors) - set(shapes))
    if extra:
        raise _err(f"unknown tensor(s) not used by any layer: {', '.join(extra)}")


# --------------------------------------------------------------------------- file I/O


def save(path: str | os.PathLike, spec: Mapping[str, Any], tensors: Mapping[str, Any]) -> None:
    """Validates and writes a policy file (atomically, via a temporary file)."""
    from safetensors.numpy import save_file

    tensors = {k: np.ascontiguousarray(np.asarray(v, dtype=np.float32)) for k, v in tensors.items()}
    validate(spec, tensors)
    meta = {METADATA_KEY: json.dumps(spec, sort_keys=True)}
    path = os.fspath(path)
    tmp = path + ".tmp"
    save_file(tensors, tmp, metadata=meta)
    os.chmod(tmp, 0o644)  # safetensors creates 0600 files; policies are meant to be shared
    os.replace(tmp, path)


def _check_container(path: str, blob: bytes) -> dict[str, Any]:
    """Checks the safetensors framing ourselves so errors say what is wrong."""
    if len(blob) < 8:
        raise _err(f"{path}: truncated file ({len(blob)} bytes, shorter than the 8-byte header length)")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen == 0 or hlen > MAX_HEADER_BYTES:
        raise _err(f"{path}: not a safetensors file (header length {hlen} is implausible)")
    if 8 + hlen > len(blob):
        raise _err(f"{path}: truncated file (header needs {hlen} bytes, only {len(blob) - 8} present)")
    try:
        header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _err(f"{path}: corrupted safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise _err(f"{path}: corrupted safetensors header (not a JSON object)")
    data_len = len(blob) - 8 - hlen
    end_max = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            b, e = info["data_offsets"]
            dtype = info["dtype"]
            shape = [int(s) for s in info["shape"]]
        except (KeyError, TypeError, ValueError):
            raise _err(f"{path}: corrupted entry for tensor '{name}'") from None
        if dtype != "F32":
            raise _err(f"tensor '{name}' has dtype {dtype}, expected F32")
        if not (isinstance(b, int) and isinstance(e, int) and 0 <= b <= e):
            raise _err(f"{path}: tensor '{name}' has bad data offsets {[b, e]}")
        if e - b != 4 * int(np.prod(shape, dtype=np.int64)):
            raise _err(f"{path}: tensor '{name}' has {e - b} data bytes, shape {shape} needs {4 * int(np.prod(shape))}")
        end_max = max(end_max, e)
    if end_max > data_len:
        raise _err(f"{path}: truncated file (tensors need {end_max} data bytes, only {data_len} present)")
    return header


def load(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads and validates a policy file.

    Returns:
        (spec, tensors) with tensors as float32 numpy arrays.

    Raises:
        ValueError: naming what is wrong with the file.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        blob = f.read()
    header = _check_container(path, blob)
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or METADATA_KEY not in meta:
        raise _err(f"{path}: no '{METADATA_KEY}' spec in the safetensors metadata (not a jaxcc policy)")
    try:
        spec = json.loads(meta[METADATA_KEY])
    except (TypeError, json.JSONDecodeError) as e:
        raise _err(f"{path}: the '{METADATA_KEY}' spec is not valid JSON ({e})") from None
    from safetensors.numpy import load as st_load

    try:
        tensors = {k: np.asarray(v, dtype=np.float32) for k, v in st_load(blob).items()}
    except Exception as e:  # safetensors raises its own error type
        raise _err(f"{path}: cannot decode tensors ({e})") from None
    validate(spec, tensors)
    return spec, tensors


# --------------------------------------------------------------------------- forward pass


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


def _lstm(x, wi, wh, b):
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
            x = _lstm(x, tensors[n + ".kernel_i"], tensors[n + ".kernel_h"], tensors[n + ".bias"])
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
        cwnd = jnp.maximum(cwnd * k + jnp.asarray(act["deltas"], jnp.float32)[idx], 2.0 * MSS)
    elif t == "rate_absolute":
        if discrete:
            u = idx.astype(jnp.float32) / float(head["n"] - 1)
        else:
            lo, hi = float(head["low"]), float(head["high"])
            u = (a - lo) / (hi - lo)
        bound = float(act["bound_mbps"])
        if act.get("scale", "linear") == "log":
            low = float(act["low_mbps"])
            rate = low * jnp.power(jnp.float32(bound / low), u) * BYTES_PER_MBIT
        else:
            rate = u * bound * BYTES_PER_MBIT
    lo_r = float(act.get("min_mbps", DEFAULT_MIN_MBPS)) * BYTES_PER_MBIT
    hi_r = float(act.get("max_mbps", DEFAULT_MAX_MBPS)) * BYTES_PER_MBIT
    rate = jnp.clip(rate, lo_r, hi_r)
    return rate, cwnd


# --------------------------------------------------------------------------- random policies


def _glorot(rng: np.random.Generator, shape, fan_in: int, fan_out: int, gain: float = 1.0) -> np.ndarray:
    lim = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-lim, lim, size=shape).astype(np.float32)


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
        tensors[name + ".kernel"] = _glorot(rng, (n_in, n_out), n_in, n_out, gain)
        tensors[name + ".bias"] = rng.uniform(-0.1, 0.1, size=(n_out,)).astype(np.float32)
        return {"type": "dense", "name": name, "in": n_in, "out": n_out, "activation": act}

    def lstm(name, n_in, h):
        tensors[name + ".kernel_i"] = _glorot(rng, (n_in, 4 * h), n_in, 4 * h)
        tensors[name + ".kernel_h"] = _glorot(rng, (h, 4 * h), h, 4 * h)
        b = rng.uniform(-0.1, 0.1, size=(4 * h,)).astype(np.float32)
        b[h:2 * h] += 1.0  # forget-gate bias 1, the usual LSTM initialisation
        tensors[name + ".bias"] = b
        return {"type": "lstm", "name": name, "in": n_in, "hidden": h}

    def conv(name, n_in, n_out, k, act):
        tensors[name + ".kernel"] = _glorot(rng, (k, n_in, n_out), k * n_in, n_out)
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
        deltas = ([float(x) * MSS for x in default_n] if n_act == len(default_n)
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
FEATURE_POLICIES = {"aurora_v1": ("aurora", "mlp"), "pareto_v1": ("pareto", "lstm"),
                    "pareto_v2": ("pareto", "lstm"),
                    "eagle_v1": ("eagle", "lstm2_discrete"), "mocc_v1": ("mocc", "q_values"),
                    "deepcc_v1": ("deepcc", "conv1d_goal")}
# Feature sets that are one configuration of their environment: its ``make_config`` keywords.
FEATURE_ENV_CONFIG = {"pareto_v2": {"feature_set": "pareto_v2"}}


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
        spec["action"] = dict(type="cwnd_table", deltas=[d * MSS for d in feats_spec["cwnd_deltas_pkts"]],
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxcc.policyfile", description=__doc__.split("\n")[0])
    p.add_argument("--random", metavar="KIND", help="write a random policy to --out: a network kind ("
                   "mlp, lstm, lstm2_discrete, conv1d_goal, q_values) or a feature set it must fit ("
                   + ", ".join(FEATURE_POLICIES) + ")")
    p.add_argument("--out", metavar="FILE", help="output file for --random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", metavar="FILE", help="load and validate FILE, print its spec")
    a = p.parse_args(argv)
    if a.random:
        if not a.out:
            p.error("--random needs --out")
        try:
            if a.random in FEATURE_POLICIES:
                spec, tensors = make_feature_policy(a.random, a.seed)
            else:
                spec, tensors = make_random_policy(a.random, a.seed)
        except ValueError as e:
            sets = "" if a.random in FEATURE_POLICIES else f", or a feature set ({', '.join(FEATURE_POLICIES)})"
            print(f"error: --random: {e}{sets}", file=sys.stderr)
            return 2
        save(a.out, spec, tensors)
        print(a.out)
    if a.check:
        try:
            spec, _ = load(a.check)
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(json.dumps(spec, indent=1, sort_keys=True))
    if not (a.random or a.check):
        p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
