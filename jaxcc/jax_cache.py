"""JAX's persistent compilation cache, turned on by every jaxcc command.

A repeated command (the same scenario, the same training config) loads its compiled programs
from disk instead of compiling them again: ``python -m jaxcc.evaluate`` of one 30-s scenario
spends most of its wall time compiling, the simulation itself takes milliseconds.

Where: ``$JAXCC_COMPILATION_CACHE`` when set (``off`` or empty turns the cache off); else a
folder already given to JAX (``JAX_COMPILATION_CACHE_DIR``); else the per-user
``$XDG_CACHE_HOME/jaxcc/jax`` (``~/.cache/jaxcc/jax``).  Entries are keyed by JAX on the
program, its compile options, the devices and the jax/jaxlib versions, so a stale entry is never
used; delete the folder to reclaim the space.

Concurrent runs: JAX writes an entry in place (``LRUCache.put`` in ``jax/_src/lru_cache.py``,
jax 0.10), not by write-and-rename, so on its own a reader could see a half-written file.  With
a size bound (``jax_compilation_cache_max_size``) JAX takes an inter-process file lock
(``filelock``) around every read and write of the folder and evicts the least recently used
entries; that is why the bound is set here (``MAX_BYTES``).  The folder is trusted like code
(JAX's documentation): keep it private to the user, as the default is.

What is cached: every program that took ``MIN_COMPILE_SECS`` or more to compile, whatever its
size.  The bound has a price that grows with the folder: on every write JAX lists and stats
every entry while it holds the lock (``LRUCache._evict_if_needed``), measured here at about
56 µs an entry, 140 ms a write at 2,500 entries.  The programs below the threshold are the ones
that cost less to compile again than to write: op-by-op dispatches (``jit_add``,
``jit_broadcast_in_dim``, ...: most of the 2,500 entries one fast-tier test session wrote) and a
command's small helpers.  Measured on an evaluation of two scenarios with three controllers:
19 entries at a threshold of 0, 1 at 0.1 s, and the second run took 10.6 and 11.0 s.
"""

from __future__ import annotations

import os
import sys

ENV = "JAXCC_COMPILATION_CACHE"
MAX_BYTES = 4 << 30  # 4 GiB; a pareto_staged training run writes ~ tens of MB
MIN_COMPILE_SECS = 0.1  # programs compiled faster than this are not written (module docstring)


def cache_dir(environ: dict | None = None) -> str | None:
    """The cache folder the current environment asks for, or ``None`` when it is off.

    Args:
      environ: the environment to read (``os.environ`` by default).

    Returns:
      An absolute path, or ``None`` for ``JAXCC_COMPILATION_CACHE=off`` (or empty).
    """
    env = os.environ if environ is None else environ
    value = env.get(ENV)
    if value is not None:
        value = value.strip()
        if value == "" or value.lower() == "off":
            return None
        return os.path.abspath(os.path.expanduser(value))
    if env.get("JAX_COMPILATION_CACHE_DIR"):
        return os.path.abspath(os.path.expanduser(env["JAX_COMPILATION_CACHE_DIR"]))
    xdg = env.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxcc", "jax")


def enable_compilation_cache(environ: dict | None = None) -> str | None:
    """Point JAX's persistent compilation cache at ``cache_dir()``; call before the first jit.

    Every program that took ``MIN_COMPILE_SECS`` or more to compile is cached, however small
    (JAX's own threshold is 1 s).  A folder that cannot be created is reported in one line on
    stderr and the command runs uncached.

    Args:
      environ: the environment to read (``os.environ`` by default).

    Returns:
      The folder in use, or ``None`` when the cache is off.
    """
    path = cache_dir(environ)
    if path is None:
        return None
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        print(f"[jaxcc] compilation cache off: cannot create {path} ({e.strerror}); "
              f"set {ENV}=DIR or {ENV}=off", file=sys.stderr)
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECS)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return path
