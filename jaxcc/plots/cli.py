"""``python -m jaxcc.plots``: ``figures`` of a results.json, or a ``training-curve``.

    python -m jaxcc.plots figures --results=runs/eval/results.json --out=runs/eval/plots
    python -m jaxcc.plots training-curve --run=A [--run=B] [--label=a --label=b] [--title=T] --out=curve.png

``python -m jaxcc.plots SUBCOMMAND --help`` lists a subcommand's flags.
"""

from __future__ import annotations

import sys
from typing import Sequence

from jaxcc.cli import HELP_FLAGS, error, run_absl_cli
from jaxcc.plots.results import figures_from_file
from jaxcc.plots.training import training_curve

FIGURES_DOC = """``python -m jaxcc.plots figures --results=R --out=DIR``: every figure of a results.json
(jaxcc.evaluate's or jaxcc.emulate's), each as .png, .pdf and .svg in DIR; prints the files."""

TRAINING_CURVE_DOC = """``python -m jaxcc.plots training-curve --run=RUN [--run=RUN2 ...] --out=FILE``: episode return
and per-step reward vs env steps and wall time from a run's metrics.jsonl; prints the file."""


def _as_value_error(e: Exception, source: str) -> ValueError:
    """A file the command cannot read or write (its own message), or a record of ``source`` it
    cannot use, as the one-line error."""
    if isinstance(e, OSError):
        return ValueError(str(e))
    if isinstance(e, KeyError) and e.args:
        return ValueError(f"{source}: missing field {e.args[0]!r}")
    return ValueError(f"{source}: {e}")


def define_figures_flags(fv):
    from absl import flags

    flags.DEFINE_string("results", None, "results.json to draw from", flag_values=fv)
    flags.DEFINE_string("out", None, "folder for the figures (.png, .pdf, .svg per figure)", flag_values=fv)
    flags.mark_flag_as_required("results", flag_values=fv)
    flags.mark_flag_as_required("out", flag_values=fv)
    return fv


def figures_main(fv, argv: Sequence[str] = ()) -> int:
    try:
        files = figures_from_file(fv.results, fv.out)
    except (OSError, KeyError, TypeError) as e:  # OSError: also an --out that cannot be written
        raise _as_value_error(e, f"--results {fv.results}") from e
    if not files:
        raise ValueError(f"--results: {fv.results} has no records ('results' is empty): no figure to draw")
    for f in files:
        print(f)
    return 0


def define_training_curve_flags(fv):
    from absl import flags

    flags.DEFINE_multi_string("run", None, "run folder (or metrics.jsonl); repeatable", flag_values=fv)
    flags.DEFINE_multi_string("label", [], "legend label per --run; repeatable", flag_values=fv)
    flags.DEFINE_string("title", None, "figure title", flag_values=fv)
    flags.DEFINE_string("out", None, "image file to write (.png, .pdf, .svg)", flag_values=fv)
    flags.mark_flag_as_required("run", flag_values=fv)
    flags.mark_flag_as_required("out", flag_values=fv)
    return fv


def training_curve_main(fv, argv: Sequence[str] = ()) -> int:
    try:
        out = training_curve(fv.run, fv.out, fv.label, fv.title)
    except (OSError, KeyError, TypeError) as e:
        raise _as_value_error(e, f"--run {','.join(fv.run)}") from e
    print(out)
    return 0


SUBCOMMANDS = {  # name -> (doc, define, run, what its flags look like)
    "figures": (FIGURES_DOC, define_figures_flags, figures_main, "--results=R --out=DIR"),
    "training-curve": (TRAINING_CURVE_DOC, define_training_curve_flags, training_curve_main, "--run=RUN --out=FILE"),
}


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first, then the subcommand) into the subcommand's fresh flags
    and run it; errors print one line, exit 2."""
    argv = list(argv)
    cmd = argv[1] if len(argv) > 1 else None
    if cmd in SUBCOMMANDS:
        doc, define, run, example = SUBCOMMANDS[cmd]
        return run_absl_cli([argv[0], *argv[2:]], doc, define, run, example, uses_jax=False)
    if cmd in HELP_FLAGS:
        print(__doc__)
        return 0
    if cmd is None:
        return error(f"give a subcommand: {' or '.join(SUBCOMMANDS)} (python -m jaxcc.plots --help)")
    return error(f"unknown subcommand {cmd!r}: {' or '.join(SUBCOMMANDS)} (python -m jaxcc.plots --help)")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
