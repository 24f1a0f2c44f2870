"""Reading Mahimahi packet-delivery traces.

Format (Winstein et al., NSDI 2013; mm-link): one integer millisecond timestamp per line, each
line one opportunity to deliver a 1500-byte packet; a timestamp repeats when more packets fit
in that millisecond; timestamps never decrease; the file loops at its last timestamp.
"""

from __future__ import annotations

import os

import numpy as np


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
