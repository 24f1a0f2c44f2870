"""Experiment config names: ``NAME`` → ``configs/NAME.py`` and the loaded ``get_config()``.

One rule for every command that takes a config (``jaxcc.train --config``, ``jaxcc.bench
--train``): ``NAME`` is looked up in ``./configs`` then in the configs jaxcc ships (the
repository's top-level ``configs/``; in an installed wheel its copy inside the package,
``jaxcc.shipped``); a path to an existing file is used as is; ``NAME:ARG`` (ml_collections' form)
passes ``ARG`` to ``get_config``.
"""

from __future__ import annotations

import glob
import importlib.util
import os

from jaxcc import shipped

CONFIG_DIRS = (os.path.join(os.getcwd(), "configs"),) + tuple(filter(None, [shipped.folder("configs")]))


def list_configs() -> list[str]:
    names = set()
    for d in CONFIG_DIRS:
        for p in glob.glob(os.path.join(d, "*.py")):
            n = os.path.splitext(os.path.basename(p))[0]
            if not n.startswith("_"):
                names.add(n)
    return sorted(names)


def resolve_config_path(name: str) -> str:
    """``NAME`` -> ``configs/NAME.py``; a path to an existing file is returned as is.

    Raises:
      ValueError: no such config (the message lists the valid ones).
    """
    base, sep, rest = name.partition(":")  # ml_collections allows "file.py:arg"
    if os.path.isfile(base):
        return name
    for d in CONFIG_DIRS:
        p = os.path.join(d, base + ".py")
        if os.path.isfile(p):
            return p + sep + rest
    raise ValueError(f"unknown config {base!r}; valid configs: {', '.join(list_configs())} "
                     f"(or a path to a config .py file)")


def load_config(name: str):
    """The ``get_config()`` (``get_config(ARG)`` for ``NAME:ARG``) of a config name or path, as
    ml_collections' ``--config`` flag loads it.

    Raises:
      ValueError: no such config.
    """
    path, sep, arg = resolve_config_path(name).partition(":")
    spec = importlib.util.spec_from_file_location(f"_jaxcc_config_{os.path.basename(path)[:-3]}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config(arg) if sep else mod.get_config()


def config_name(path: str) -> str:
    """A config's name: ``configs/NAME.py[:ARG]`` -> ``NAME``."""
    return os.path.splitext(os.path.basename(path.partition(":")[0]))[0]


def all_keys(cfg, prefix: str = "") -> list[str]:
    """Every leaf key of a config, dotted (``agent.lr``)."""
    out = []
    for k, v in cfg.items():
        if hasattr(v, "items"):
            out += all_keys(v, f"{prefix}{k}.")
        else:
            out.append(prefix + k)
    return out
