"""The policy file's spec: its constants and validation (the format is described in
``jaxcc.policyfile``); every rule here is the twin of ``datapath/src/policy.cc``'s loader."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

FORMAT = "jaxcc-policy"
VERSION = 1
METADATA_KEY = "jaxcc"
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
