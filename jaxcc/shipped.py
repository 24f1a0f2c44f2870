"""The repository's folders that travel with the package: ``configs/``, ``checkpoints/`` (the
shipped policies and their READMEs) and ``datapath/`` (the C++ sources).

A clone keeps them at its top level, beside ``jaxcc/``; an installed wheel or sdist carries them
inside the package, as ``jaxcc/configs``, ``jaxcc/checkpoints`` and ``jaxcc/datapath`` (setup.py
maps them there; docs/install.md).  ``folder(name)`` is the one place either layout is found, and
``policy_path`` lets the documented ``policy:checkpoints/<family>/<file>.safetensors`` names work
from any directory.
"""

from __future__ import annotations

import os

NAMES = ("configs", "checkpoints", "datapath")
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def folder(name: str) -> str | None:
    """The folder ``name`` (one of ``NAMES``): the installed package's copy when there is one,
    else the source tree's top-level folder; None when neither exists.

    Raises:
      ValueError: ``name`` is not one of ``NAMES``.
    """
    if name not in NAMES:
        raise ValueError(f"shipped folder {name!r}: expected one of {', '.join(NAMES)}")
    for d in (os.path.join(_PACKAGE, name), os.path.join(os.path.dirname(_PACKAGE), name)):
        if os.path.isdir(d):
            return d
    return None


def policy_path(path: str) -> str:
    """A policy file's path: ``path`` itself when it exists; else, for a shipped policy's name,
    ``checkpoints/<family>/<file>.safetensors`` (relative, exactly that depth), the shipped file
    (the installed package's copy, or a clone's from any working directory); else ``path``
    unchanged (its caller reports the missing file)."""
    if not path or os.path.isabs(path) or os.path.exists(path):
        return path
    parts = os.path.normpath(path).split(os.sep)
    shipped = folder("checkpoints")
    if len(parts) != 3 or parts[0] != "checkpoints" or not parts[2].endswith(".safetensors") or shipped is None:
        return path
    candidate = os.path.join(shipped, *parts[1:])
    return candidate if os.path.isfile(candidate) else path
