"""Quality as a distribution: one policy's bars over several training seeds, and the median.

    python -m jaxcc.seeds --results=runs/ev-s0,runs/ev-s1,runs/ev-s2,runs/ev-s3 --controller=Pareto-Fair \\
        --bars=pareto --out=runs/seeds.md

What it measures and how: ``jaxcc.evaluation.seeds``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Sequence

from jaxcc.cli import run_absl_cli
from jaxcc.evaluation import bars
from jaxcc.evaluation.seeds import load_records, table


def define_flags(fv):
    """The command's flags on ``fv`` (an ``absl.flags.FlagValues``)."""
    from absl import flags

    flags.DEFINE_string("results", None, "comma-separated jaxcc.evaluate output directories, one per training seed",
                        flag_values=fv)
    flags.DEFINE_string("controller", None, "the policy's label in those results (e.g. Pareto-Fair)", flag_values=fv)
    flags.DEFINE_string("bars", None, f"bar set(s): {', '.join(sorted(bars.BAR_SETS))}", flag_values=fv)
    flags.DEFINE_string("out", None, "also write the table here (Markdown) and its JSON beside it", flag_values=fv)
    flags.mark_flags_as_required(["results", "controller", "bars"], flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """Print (and with ``--out`` write) the table of the bars over the seeds."""
    paths = [p for p in fv.results.split(",") if p]
    runs = [load_records(p) for p in paths]
    text, js = table(runs, [os.path.basename(os.path.normpath(p)) for p in paths], fv.controller, fv.bars)
    print(text)
    if fv.out:
        with open(fv.out, "w") as fh:
            fh.write(text + "\n")
        with open(os.path.splitext(fv.out)[0] + ".json", "w") as fh:
            json.dump(js, fh, indent=1)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors are one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--results=A,B --controller=LABEL --bars=SET",
                        uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
