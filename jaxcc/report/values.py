"""A report's values as cells: numbers formatted as the terminal prints them (``fmt``, ``fixed``),
the summary's columns with units (``SUMMARY_COLUMNS``, ``summary_row``) and records flattened
into rows (``flatten``)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, NamedTuple, Sequence




MISSING = "–"
REPORT_NAME = "report.html"
# the summary's columns, as jaxcc.evaluate's text table (format_table) prints them:
# (record field, header, decimals, scale of the shown value)
SUMMARY_COLUMNS = (("throughput_mbps", "Throughput (Mbit/s)", 2, 1.0),
                   ("utilization", "Utilization (fraction of capacity)", 3, 1.0),
                   ("p95_owd_ms", "p95 one-way delay (ms)", 1, 1.0),
                   ("p95_qdelay_ms", "p95 queueing (ms)", 1, 1.0),
                   ("loss", "Loss (%)", 2, 100.0),
                   ("jain", "Jain index", 3, 1.0),
                   ("ankh", "Ankh", 3, 1.0))
# a list of scalars this long or shorter is one cell ("40, 80"); a longer one, or one of lists
# (a time series: the figures show it), is summarised as its length
SHORT_LIST = 12


# ----------------------------------------------------------------------------- values


class Shown(NamedTuple):
    """A cell whose text is not ``fmt(value)``: ``value`` goes to ``data-value`` (when a finite
    number), ``text`` is what the cell shows."""
    value: Any
    text: str


def fmt(v: Any) -> str:
    """A cell's text: four significant digits for a float, "–" for null/NaN, yes/no for a bool."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return MISSING
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e4:
            return f"{v:.0f}"
        if a < 1e-3:
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        if not v:
            return "(none)"
        if len(v) <= SHORT_LIST and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
            return ", ".join(fmt(x) for x in v)
        return f"({len(v)} items)"
    return json.dumps(v, sort_keys=True)


def fixed(v: Any, decimals: int, scale: float = 1.0) -> str:
    """A summary cell's text: ``v × scale`` with ``decimals`` decimals (never scientific; no "-0"),
    "–" for null/NaN or a value that is not a number, "∞" for infinity."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    s = f"{v * scale:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def summary_row(record: dict, columns: Sequence[tuple[str, str, int, float]] = SUMMARY_COLUMNS) -> dict:
    """A record's summary cells, keyed by header: ``Controller`` and one ``Shown`` per column."""
    return {"Controller": record.get("controller"),
            **{head: Shown(record.get(key), fixed(record.get(key), dec, scale)) for key, head, dec, scale in columns}}


def flatten(record: dict, skip: Iterable[str] = ()) -> dict:
    """A record's fields as one flat dict: nested objects as dotted keys (``delay_check.valid``);
    lists of objects (per-flow detail, per-seed values) are left out (they get their own tables)."""
    out: dict[str, Any] = {}
    skip = set(skip)

    def walk(prefix: str, d: dict):
        for k, v in d.items():
            key = f"{prefix}{k}"
            if key in skip:
                continue
            if isinstance(v, dict):
                walk(key + ".", v)
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                continue
            else:
                out[key] = v

    walk("", record)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "x"
