"""Finding and reading Mahimahi packet-delivery traces.

Format (Winstein et al., NSDI 2013; mm-link): one integer millisecond timestamp per line, each
line one opportunity to deliver a 1500-byte packet; a timestamp repeats when more packets fit
in that millisecond; timestamps never decrease; the file loops at its last timestamp.

Where a trace is found (``find_trace``; one rule for named scenarios, scenario files, the
simulator and emulation):

* an absolute path is used as is;
* a relative path is looked up, in this order, in ``$JAXCC_TRACES`` (one folder, when set), in
  the traces shipped with jaxcc (``SHIPPED_TRACES``, the ``jaxcc/traces`` package data: the
  cellular traces the named scenarios use), and in the spec's folder (``base_dir``: the folder
  of a scenario file; callers that have no file pass the current directory);
* a trace found nowhere is a one-line ``ValueError`` naming the field, the file and every
  folder searched.
"""

from __future__ import annotations

import os

import numpy as np

TRACES_ENV = "JAXCC_TRACES"
# How a trace is binned into capacity steps, in the simulator and on the emulated link alike
# (``jaxcc.sim.links.from_trace``; a scenario's ``trace_bin_ms``).  100 ms is the finest the
# netns link's tbf follows: every rate change refills tbf's bucket, so finer steps deliver more
# than the trace.  Measured with `python -m jaxcc.emulate --scenario=pareto/lte
# --controller=fixed:40 --trace-bin-ms=B` against the trace's 7.56 Mbit/s mean: 8.85 Mbit/s at
# 10 ms (+17 %), 8.28 at 20, 7.96 at 50, 7.82 at 100 (+3.4 %, of which ~1.6 % is the full
# queue draining after the sender stops).
TRACE_BIN_MS = 100.0
SHIPPED_TRACES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces")


def trace_folders(base_dir: str | None = None) -> list[tuple[str, str]]:
    """The folders a relative trace path is looked up in, in order, as ``(what, folder)``.

    Args:
      base_dir: the spec's folder (searched last); ``None`` for none.
    """
    out = []
    env = os.environ.get(TRACES_ENV, "")
    if env:
        out.append((f"${TRACES_ENV}", os.path.abspath(env)))
    out.append(("shipped", SHIPPED_TRACES))
    if base_dir is not None:
        out.append(("spec folder", os.path.abspath(base_dir)))
    return out


def find_trace(name: str, base_dir: str | None = None, *, field: str = "trace") -> str:
    """The absolute path of trace ``name`` (see the module docstring for the order).

    Args:
      name: an absolute path (used as is) or a path relative to one of the folders searched.
      base_dir: the spec's folder, searched after ``$JAXCC_TRACES`` and the shipped traces;
        ``None`` searches only those two.
      field: the spec field named in errors, e.g. ``"scenario.link.trace"``.

    Raises:
      ValueError: one line naming ``field``, the file and every folder searched.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"{field}: expected a trace file path, got {name!r}")
    if os.path.isabs(name):
        if os.path.isfile(name):
            return name
        raise ValueError(f"{field}: trace file {name!r} does not exist")
    folders = trace_folders(base_dir)
    for _, folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return os.path.normpath(path)
    env = "" if os.environ.get(TRACES_ENV) else f" (${TRACES_ENV} is not set)"
    searched = ", ".join(f"{folder} ({what})" for what, folder in folders)
    raise ValueError(f"{field}: trace file {name!r} not found; searched {searched}{env}")


def read_mahimahi(path: str) -> np.ndarray:
    """Timestamps (ms, int64) of a Mahimahi trace.

    Raises:
      ValueError: naming the file and line for a missing or empty file, a line that is not a
        non-negative integer, a decreasing timestamp, or a trace whose last timestamp is 0
        (it would have no period).
    """
    if not os.path.isfile(path):
        raise ValueError(f"trace file {path!r} does not exist")
    stamps: list[int] = []
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text:
                continue  # blank lines (e.g. a trailing newline) carry no opportunity
            try:
                value = int(text)
            except ValueError:
                raise ValueError(
                    f"{path}:{lineno}: expected an integer millisecond timestamp, got {text[:40]!r}"
                ) from None
            if value < 0:
                raise ValueError(f"{path}:{lineno}: timestamp {value} is negative")
            if stamps and value < stamps[-1]:
                raise ValueError(
                    f"{path}:{lineno}: timestamp {value} is smaller than the previous one ({stamps[-1]})"
                )
            stamps.append(value)
    if not stamps:
        raise ValueError(f"{path}: the trace is empty (no delivery opportunities)")
    if stamps[-1] == 0:
        raise ValueError(f"{path}:{len(stamps)}: the last timestamp must be > 0 (it is the trace's period)")
    return np.asarray(stamps, np.int64)
