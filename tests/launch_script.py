"""A ``launch/`` script imported by path, for its tests (``launch/`` is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def load(name: str) -> ModuleType:
    """``launch/<name>.py`` as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, REPO / "launch" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
