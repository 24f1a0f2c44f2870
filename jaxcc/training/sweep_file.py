"""A sweep file: its format, its validation against the agent's sweepable keys, and each
member's configuration and hyperparameter values.

Sweep file (YAML)::

    name: lr                      # optional; default: the file's stem
    group: pareto-lr              # optional; the wandb group; default: <config>-<name>
    description: ...              # optional, free text
    metric: {name: val_best, goal: minimize}   # optional; the table's "best" column and ranking
    members:                      # a list of members, each {config key: value}
      - {config.td3.lr_actor: 1.0e-4}
      - {config.td3.lr_actor: 3.0e-4, config.seed: 1}
    parameters:                   # and/or a grid: the cartesian product of the values
      config.seed: {values: [0, 1]}

With both, every member is combined with every grid point (K = members × grid points).  Keys may
be written with or without the ``config.`` prefix.  A key must be in the agent's ``SWEEPABLE``
(config key → path of its leaf in the state; ``jaxcc.agents.*``), or ``seed`` (every algorithm:
it seeds ``init``'s PRNG key).  A key that sets a shape or the program (``num_envs``,
``td3.batch_size``, network sizes, buffer sizes, ...) is refused with a one-line error that lists
the sweepable keys.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import os
from typing import Any

import numpy as np

from jaxcc.training.configs import all_keys


ALLOWED_TOP = ("name", "group", "description", "metric", "members", "parameters")


ALLOWED_PARAM = ("values", "value")


class SweepError(ValueError):
    """A sweep file that cannot be run; the message is one line naming the file (and line)."""


@dataclasses.dataclass
class Sweep:
    path: str
    name: str
    group: str
    metric: str
    goal: str  # minimize | maximize
    keys: list[str]  # the swept config keys, canonical (no "config." prefix), in file order
    members: list[dict[str, Any]]  # one {key: value} per member (every key of ``keys``)


def sweepable(algo: str) -> dict[str, tuple[str, ...]]:
    """Config key -> path of its leaf in the training state, for ``config.algo`` ``algo``.

    ``seed`` is always there (it seeds ``init``'s key; its path is ``()`` unless the agent also
    keeps the seed as a state leaf)."""
    from jaxcc import agents

    table = dict(getattr(agents.get_agent(algo), "SWEEPABLE", {}))
    table.setdefault("seed", ())
    return table


def _lines(text: str) -> dict[tuple, int]:
    """1-based line of every node of the YAML document, by path (keys and list indices)."""
    import yaml

    out: dict[tuple, int] = {}

    def walk(node, path):
        out[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value
                walk(v, path + (key,))
                out[path + (key,)] = k.start_mark.line + 1  # the key's line, not its value's
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, path + (i,))

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return out
    if root is not None:
        walk(root, ())
    return out


def load_sweep(path: str, config, config_name: str = "run") -> Sweep:
    """Read and check a sweep file against ``config`` (its ``algo`` decides what is sweepable)."""
    import yaml

    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise SweepError(f"--sweep={path}: cannot read ({e.strerror})") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        raise SweepError(f"{where}: not valid YAML ({what})") from None
    lines = _lines(text)

    def err(loc: tuple, msg: str):
        ln = next((lines[loc[:i]] for i in range(len(loc), -1, -1) if loc[:i] in lines), None)
        return SweepError(f"{path}{f':{ln}' if ln else ''}: {msg}")

    if not isinstance(doc, dict):
        raise err((), f"a sweep file is a mapping with keys {', '.join(ALLOWED_TOP)}")
    for k in doc:
        if k not in ALLOWED_TOP:
            raise err((k,), f"unknown key {k!r}; allowed: {', '.join(ALLOWED_TOP)}")
    algo = str(config.algo)
    table = sweepable(algo)
    allowed = ", ".join("config." + k for k in sorted(table))
    known = set(all_keys(config))

    def key_of(raw, loc) -> str:
        if not isinstance(raw, str):
            raise err(loc, f"{raw!r}: a config key is a string such as config.seed; sweepable: {allowed}")
        k = raw[len("config."):] if raw.startswith("config.") else raw
        if k not in known:
            raise err(loc, f"config.{k}: no such config field; sweepable for {algo}: {allowed}")
        if k not in table:
            raise err(loc, f"config.{k} is not sweepable for {algo} (not a leaf of the training state: it sets "
                           f"a shape or the compiled program); sweepable: {allowed}")
        return k

    def value_of(k, v, loc):
        if isinstance(v, str):  # YAML 1.1 (PyYAML) reads 1e-4 and 1.0e30 as strings: numbers here
            try:
                v = int(v) if v.strip().lstrip("+-").isdigit() else float(v)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise err(loc, f"config.{k}: {v!r} is not a number")
        if k == "seed":
            if float(v) != int(v) or int(v) < 0 or int(v) >= 2 ** 31:
                raise err(loc, f"config.seed: {v!r}; expected an integer in [0, 2^31)")
            return int(v)
        if not math.isfinite(float(v)):
            raise err(loc, f"config.{k}: {v!r} is not finite")
        return float(v)

    listed: list[dict] = []
    if "members" in doc:
        ms = doc["members"]
        if not isinstance(ms, list) or not ms:
            raise err(("members",), "members: a non-empty list of {config key: value} mappings")
        for i, m in enumerate(ms):
            if not isinstance(m, dict) or not m:
                raise err(("members", i), f"members[{i}]: a mapping {{config key: value}}, got {m!r}")
            one = {}
            for raw, v in m.items():
                k = key_of(raw, ("members", i, raw))
                one[k] = value_of(k, v, ("members", i, raw))
            listed.append(one)
    grid: list[tuple[str, list]] = []
    if "parameters" in doc:
        ps = doc["parameters"]
        if not isinstance(ps, dict) or not ps:
            raise err(("parameters",), "parameters: a mapping {config key: {values: [...]}}")
        for raw, spec in ps.items():
            loc = ("parameters", raw)
            k = key_of(raw, loc)
            if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ALLOWED_PARAM:
                raise err(loc, f"parameters.{raw}: expected {{values: [...]}} or {{value: x}} (a grid; wandb's "
                               f"distributions are for `wandb sweep`)")
            if "value" in spec:
                vals = [spec["value"]]
            else:
                vals = spec["values"]
                if not isinstance(vals, list) or not vals:
                    raise err(loc, f"parameters.{raw}.values: a non-empty list")
            grid.append((k, [value_of(k, v, loc) for v in vals]))
    if not listed and not grid:
        raise err((), "no members: give members: [...] and/or parameters: {...}")
    points = [dict(zip([k for k, _ in grid], combo)) for combo in itertools.product(*[v for _, v in grid])]
    members = []
    for m in listed or [{}]:
        for g in points:
            both = sorted(set(m) & set(g))
            if both:
                raise err(("parameters", both[0]), f"config.{both[0]} is set both in members and in parameters")
            members.append({**m, **g})
    keys = list(dict.fromkeys(k for m in members for k in m))
    for m in members:  # a key a member leaves out keeps the base config's value
        for k in keys:
            m.setdefault(k, int(config.seed) if k == "seed" else float(get_key(config, k)))
    name = str(doc.get("name") or os.path.splitext(os.path.basename(path))[0])
    group = str(doc.get("group") or f"{config_name}-{name}")
    metric = doc.get("metric") or {}
    if not isinstance(metric, dict) or set(metric) - {"name", "goal"}:
        raise err(("metric",), "metric: {name: <logged metric>, goal: minimize|maximize}")
    default = ("val_best", "minimize") if algo == "pareto_td3" else ("episode_return", "maximize")
    mname, goal = str(metric.get("name", default[0])), str(metric.get("goal", default[1]))
    if goal not in ("minimize", "maximize"):
        raise err(("metric", "goal"), f"metric.goal: {goal!r}; expected minimize or maximize")
    return Sweep(path=path, name=name, group=group, metric=mname, goal=goal, keys=keys, members=members)


def get_key(config, key: str):
    """The value of a dotted config key (``td3.lr_actor``)."""
    node = config
    for part in key.split("."):
        node = node[part]
    return node


def member_config(config, sweep: Sweep, m: int):
    """The configuration a separate run of member ``m`` would use (base config + its values)."""
    cfg = copy.deepcopy(config)
    for k, v in sweep.members[m].items():
        parent, _, leaf = k.rpartition(".")
        node = get_key(cfg, parent) if parent else cfg
        node[leaf] = type(node[leaf])(v) if isinstance(node[leaf], (int, float)) else v
    if "wandb" in cfg:
        cfg.wandb.group = sweep.group
    return cfg


def set_key(tree: dict, path: tuple[str, ...], value):
    """A copy of the nested dict ``tree`` with the leaf at ``path`` set to ``value``."""
    if len(path) == 1:
        return {**tree, path[0]: value}
    return {**tree, path[0]: set_key(tree[path[0]], path[1:], value)}


def key_at(tree, path):
    """The leaf of the nested dict ``tree`` at ``path``."""
    for p in path:
        tree = tree[p]
    return tree


def member_values(sweep: Sweep) -> dict[str, np.ndarray]:
    """The swept values as [K] arrays (seed as int32, the rest float32), by config key."""
    return {k: np.asarray([m[k] for m in sweep.members], np.int32 if k == "seed" else np.float32)
            for k in sweep.keys}
