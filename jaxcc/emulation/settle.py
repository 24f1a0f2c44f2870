"""How many decisions a sender takes to settle after a runtime preference change (MOCC).

    python -m jaxcc.emulate --scenario=emu/mocc_settle --controller=policy:FILE --out=DIR
    python -m jaxcc.emulation.settle DIR/runs/emu_mocc_settle__*/flow0 [--signal=auto] [--band=0.1] [--tail-s=5] [--smooth=1] [--window-s=W]

The emulation run (``emu/mocc_settle``: 12 Mbit/s, 20 ms RTT, 375 KB, 45 s; preference
(0.8, 0.1, 0.1), switched to (0.1, 0.8, 0.1) at 15 s and back at 30 s) puts this analysis in
its record (``per_flow[i].settle``); the command reads it again from a flow's folder.

Inputs are the sender's own logs: ``sender.csv`` (``jaxcc-sender --log``: one row per decision,
``rate_mbps`` / ``cwnd_bytes`` in force during that monitor interval, ``goal`` the goal its
decision used) and ``sender.json`` (``goal_changes``: for each change its control line,
``received_s``, ``applied_s`` and ``decision``, the row index of the first decision that used it).

Definitions (rows j = 0, 1, ... of the log; x_j the signal in row j):

* signal: ``cwnd`` (``cwnd_bytes``) for a window policy (MOCC), else ``rate`` (``rate_mbps``);
  both are what the decisions set, in force during the row's interval. ``throughput``
  (``throughput_mbps``) and ``rtt`` (``rtt_mean_ms``) are per-interval measurements.
* a change applied at decision k owns the rows k .. e-1, e the next change's decision or the end
  of the log (its segment); with ``window_s`` W, only its rows within W seconds of row k (the
  first W seconds after the change, e.g. to leave out a later disturbance).
* its new steady level L: the median of x over the segment's tail, the rows whose time is within
  ``tail_s`` (5 s) of the segment's last row, at most its second half.
* settle: D = the smallest D >= 0 such that |x_j - L| <= band * L (band 0.1: +-10%) for every
  j in k+D .. e-1 — the number of decisions taken under the new preference before the signal is
  in the band for good (x_{k+D} is set by decision k+D-1; D = 0: it already was). ``settle_s``
  is the time from decision k to decision k+D-1. D is None (not settled) unless every tail row
  is inside the band, so a settled signal stayed in it for at least the tail; ``tail_in_band``
  says which fraction of the tail rows is inside it.
* ``smooth`` N > 1 replaces x_j by the mean of x over rows max(k, j-N+1) .. j (the same
  segment only) before all of the above: a policy whose smallest step is more than 10% of its
  window (MOCC's -0.5 packet at a few packets) can then settle.
* ``applied_next_decision``: the change was used by the first decision after the sender received
  it (no decision in between).
"""
from __future__ import annotations

import csv
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

SIGNALS = {"cwnd": "cwnd_bytes", "rate": "rate_mbps", "throughput": "throughput_mbps", "rtt": "rtt_mean_ms"}
BAND = 0.1
TAIL_S = 5.0


def read_log(path: str | Path) -> list[dict[str, str]]:
    """Rows of a ``jaxcc-sender --log`` CSV (ValueError when it has no ``goal`` column: an older
    sender, or not a policy run)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if rows and "goal" not in rows[0]:
        raise ValueError(f"{path}: no goal column (a jaxcc-sender --log from before --preference)")
    return rows


def pick_signal(rows: list[dict[str, str]], signal: str = "auto") -> str:
    """The signal's name: ``auto`` is ``cwnd`` when every row has a window (cwnd_bytes > 0),
    else ``rate``."""
    if signal != "auto":
        if signal not in SIGNALS:
            raise ValueError(f"--signal: must be auto or one of {sorted(SIGNALS)}, got {signal!r}")
        return signal
    return "cwnd" if rows and all(float(r["cwnd_bytes"]) > 0 for r in rows) else "rate"


def settle_segment(t: list[float], x: list[float], k: int, e: int, band: float = BAND,
                   tail_s: float = TAIL_S, smooth: int = 1) -> dict[str, Any]:
    """Settle of the segment k .. e-1 (module docstring) of times ``t`` and signal ``x``."""
    if not 0 <= k < e <= len(x):
        raise ValueError(f"segment {k}..{e} outside the log's {len(x)} rows")
    if smooth > 1:
        x = list(x)
        raw = x[k:e]
        for j in range(k, e):
            lo_j = max(k, j - smooth + 1)
            x[j] = sum(raw[lo_j - k:j - k + 1]) / (j - lo_j + 1)
    t_end = t[e - 1]
    start = max(t_end - tail_s, 0.5 * (t[k] + t_end))
    tail = [x[j] for j in range(k, e) if t[j] >= start]
    level = statistics.median(tail)
    lo, hi = level - band * abs(level), level + band * abs(level)
    inside = [lo <= x[j] <= hi for j in range(k, e)]
    tail_in = sum(lo <= v <= hi for v in tail) / len(tail)
    d = None
    if tail_in == 1.0:
        d = len(inside)
        while d > 0 and inside[d - 1]:
            d -= 1
    out = {"decision": k, "rows": e - k, "t_s": t[k], "level": level,
           "tail_rows": len(tail), "tail_in_band": tail_in,
           "settle_decisions": d,
           "settle_s": None if d is None else (t[k + d - 1] - t[k] if d > 0 else 0.0),
           "mean_mi_s": (t_end - t[k]) / max(e - 1 - k, 1)}
    return out


def analyse(csv_path: str | Path, summary_path: str | Path, signal: str = "auto", band: float = BAND,
            tail_s: float = TAIL_S, smooth: int = 1, window_s: float | None = None) -> dict[str, Any]:
    """Settle of every applied goal change of one sender run (module docstring)."""
    rows = read_log(csv_path)
    with open(summary_path) as f:
        summ = json.load(f)
    changes = summ.get("goal_changes")
    if changes is None:
        raise ValueError(f"{summary_path}: no goal_changes (the sender ran without --control-stdin)")
    name = pick_signal(rows, signal)
    col = SIGNALS[name]
    t = [float(r["t_s"]) for r in rows]
    x = [float(r[col]) for r in rows]
    bounds = [int(c["decision"]) for c in changes] + [len(rows)]
    out = []
    prev_start = 0
    for c, k, e in zip(changes, bounds, bounds[1:]):
        if k >= len(rows):
            out.append({"line": c.get("line"), "goal": c["goal"], "error": "applied after the last logged row"})
            continue
        if window_s is not None:
            e = k + sum(1 for j in range(k, e) if t[j] <= t[k] + window_s)
        seg = settle_segment(t, x, k, e, band, tail_s, smooth) if e > k else {"error": "empty segment"}
        before = settle_segment(t, x, prev_start, k, band, tail_s, smooth)["level"] if k > prev_start else None
        # Applied at the first decision after it was received: the decision before k was taken
        # before the receipt. (Row k's time is its interval's end, read just before the decision
        # looks for a change, so a line received in between is used by decision k with t[k]
        # a few microseconds before received_s.)
        seg.update({"line": c.get("line"), "goal": c["goal"], "received_s": c["received_s"],
                    "applied_s": c["applied_s"], "previous_level": before,
                    "applied_next_decision": k == 0 or t[k - 1] <= c["received_s"]})
        out.append(seg)
        prev_start = k
    return {"signal": name, "column": col, "band": band, "tail_s": tail_s, "smooth": smooth, "window_s": window_s,
            "changes": out}


def analyse_run_dir(flow_dir: str | Path, **kw) -> dict[str, Any]:
    """``analyse`` on a ``jaxcc.emulate`` flow folder (its sender.csv and sender.json)."""
    d = Path(flow_dir)
    return analyse(d / "sender.csv", d / "sender.json", **kw)


def summary_line(res: dict[str, Any]) -> str:
    """One line per change: settle decisions/seconds, level before -> after."""
    parts = []
    for c in res["changes"]:
        if "error" in c:
            parts.append(f"{c['goal']}: {c['error']}")
            continue
        d = c["settle_decisions"]
        before = "?" if c["previous_level"] is None else f"{c['previous_level']:.4g}"
        parts.append(f"{c['goal']} at {c['applied_s']:.2f} s: {res['signal']} {before} -> {c['level']:.4g}, "
                     + (f"settled in {d} decisions ({c['settle_s']:.2f} s)" if d is not None
                        else f"not settled (tail {100 * c['tail_in_band']:.0f}% in band)")
                     + ("" if c["applied_next_decision"] else " [NOT applied at the next decision]"))
    return "; ".join(parts)


def define_flags(fv):
    """The command's flags on ``fv`` (each also under its dashed name: ``--tail-s``)."""
    from absl import flags

    from jaxcc.cli import dashed_aliases

    flags.DEFINE_string("signal", "auto", f"auto or one of {sorted(SIGNALS)}", flag_values=fv)
    flags.DEFINE_float("band", BAND, "relative half-width of the band (0.1: +-10%), in (0, 1)", flag_values=fv)
    flags.DEFINE_float("tail_s", TAIL_S, "seconds at a segment's end that set its level (> 0)", flag_values=fv)
    flags.DEFINE_integer("smooth", 1, "trailing mean over this many decisions (1: none)", flag_values=fv)
    flags.DEFINE_float("window_s", None, "only the first WINDOW_S seconds after each change (default: up to the "
                       "next change)", flag_values=fv)
    return dashed_aliases(fv)


def main(fv, argv: Sequence[str] = (), positional: Sequence[str] = ()) -> int:
    """Analyse the flow folder ``positional[0]`` with parsed flags ``fv`` (``define_flags``): the
    result as JSON on stdout, its summary line on stderr."""
    (flow_dir,) = positional
    if not 0 < fv.band < 1:
        raise ValueError(f"--band={fv.band}: must be in (0, 1)")
    if not (fv.tail_s > 0 and math.isfinite(fv.tail_s)):
        raise ValueError(f"--tail-s={fv.tail_s}: must be > 0")
    if fv.smooth < 1:
        raise ValueError(f"--smooth={fv.smooth}: must be >= 1")
    if fv.window_s is not None and not (fv.window_s > 0 and math.isfinite(fv.window_s)):
        raise ValueError(f"--window-s={fv.window_s}: must be > 0")
    try:
        res = analyse_run_dir(flow_dir, signal=fv.signal, band=fv.band, tail_s=fv.tail_s, smooth=fv.smooth,
                              window_s=fv.window_s)
    except OSError as e:
        raise ValueError(f"{flow_dir}: cannot read {e.filename or 'the flow folder'} ({e.strerror or e})") from e
    except KeyError as e:
        raise ValueError(f"{flow_dir}: missing field {e.args[0]!r}" if e.args else f"{flow_dir}: {e}") from e
    print(json.dumps(res, indent=1))
    print(summary_line(res), file=sys.stderr)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first: FLOW_DIR and flags in any order) into fresh flags and
    run; errors print one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--smooth=5", uses_jax=False, positional=("FLOW_DIR",))


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
