"""``python -m jaxcc.plots``: ``figures`` of a results.json, or a ``training-curve``."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence


from jaxcc.plots.results import figures_from_file
from jaxcc.plots.training import training_curve


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxcc.plots", description="Figures of evaluations and training runs.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    fg = sub.add_parser("figures", help="every figure of a results.json (jaxcc.evaluate's or jaxcc.emulate's)")
    fg.add_argument("--results", required=True, help="results.json to draw from")
    fg.add_argument("--out", required=True, help="folder for the figures (.png, .pdf, .svg per figure)")
    tc = sub.add_parser("training-curve", help="episode return and per-step reward vs env steps and wall time "
                                               "from a run's metrics.jsonl")
    tc.add_argument("--run", action="append", required=True, help="run folder (or metrics.jsonl); repeatable")
    tc.add_argument("--label", action="append", default=[], help="legend label per --run")
    tc.add_argument("--title", default=None)
    tc.add_argument("--out", required=True, help="image file to write (.png, .pdf, .svg)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "figures":
            files = figures_from_file(a.results, a.out)
            if not files:
                raise ValueError(f"--results: {a.results} has no records ('results' is empty): no figure to draw")
            for f in files:
                print(f)
            return 0
        out = training_curve(a.run, a.out, a.label, a.title)
    except (OSError, ValueError, KeyError, TypeError) as e:  # OSError: also an --out that cannot be written
        print(f"jaxcc.plots: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0
