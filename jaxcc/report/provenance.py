"""Where a report comes from, written portably: paths relative to its folder, the working
directory or the shipped traces (``relative_path``, ``relative_text``), and jaxcc's version
(``version_info``: package version, git commit, dirty flag)."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any, Callable

from jaxcc.sim.trace import SHIPPED_TRACES



# ----------------------------------------------------------------------------- paths


# an absolute path: "/" (not "//") at the start or after whitespace, ":", "=", ",", "(", "[" or a
# quote, up to whitespace, ",", ";", ":", a quote, a bracket or an angle bracket
_ABS_PATH = re.compile(r"""(?<![^\s:=,(\['"])/(?!/)[^\s,;:'"()\[\]{}<>]+""")


def _inside(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` when it lies inside it (``.`` for the folder itself), else
    None; compared as written and with symbolic links resolved."""
    for p, f in ((os.path.normpath(path), os.path.normpath(folder)),
                 (os.path.realpath(path), os.path.realpath(folder))):
        if p == f or p.startswith(f.rstrip(os.sep) + os.sep):
            return os.path.relpath(p, f)
    return None


# the traces shipped with jaxcc (jaxcc.sim.trace looks a relative trace path up there)


def relative_path(path: str, folder: str | None = None, cwd: str | None = None) -> str:
    """An absolute ``path`` as the report shows it: a trace shipped with jaxcc relative to
    ``SHIPPED_TRACES`` (the name a scenario file gives it); else relative to ``folder`` (the
    report's) when inside it; else relative to ``cwd`` (default: the current directory) when
    inside it; else its base name.  A relative path is returned as is."""
    if not os.path.isabs(path):
        return path
    for base in (SHIPPED_TRACES, folder, cwd if cwd is not None else os.getcwd()):
        if base:
            rel = _inside(path, os.path.abspath(base))
            if rel is not None:
                return rel
    return os.path.basename(os.path.normpath(path)) or path


def relative_text(text: str, folder: str | None = None, cwd: str | None = None) -> str:
    """``text`` with every absolute path in it (module docstring) replaced by ``relative_path``'s."""
    if "/" not in text:
        return text
    return _ABS_PATH.sub(lambda m: relative_path(m.group(0), folder, cwd), text)


def _relative_obj(obj: Any, rel: Callable[[str], str]) -> Any:
    """``obj`` (JSON-like) with ``rel`` applied to every string value."""
    if isinstance(obj, str):
        return rel(obj)
    if isinstance(obj, dict):
        return {k: _relative_obj(v, rel) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_relative_obj(v, rel) for v in obj]
    return obj


# ----------------------------------------------------------------------------- version


def version_info(where: str | None = None) -> dict:
    """jaxcc's package version, and when ``where`` (default: the package's folder) is in a git
    checkout its commit and whether the tracked files differ from it; None where unknown (no
    git, not a checkout): finding out never fails."""
    try:
        from importlib import metadata
        pkg = metadata.version("jaxcc")
    except Exception:  # not installed: run from a source tree
        pkg = None
    where = where or os.path.dirname(os.path.abspath(__file__))
    commit = dirty = None
    try:
        r = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            commit = r.stdout.strip()
            s = subprocess.run(["git", "--no-optional-locks", "-C", where, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=30)
            dirty = bool(s.stdout.strip()) if s.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"package": pkg, "commit": commit, "dirty": dirty}


def version_text(v: dict) -> str:
    s = f"jaxcc {v.get('package') or '(version unknown: not installed)'}"
    if v.get("commit"):
        s += f", git {v['commit']}" + (" (dirty: uncommitted changes)" if v.get("dirty") else
                                       "" if v.get("dirty") is False else " (dirty: unknown)")
    else:
        s += ", not run from a git checkout"
    return s
