"""The one command-line convention of every ``python -m jaxcc.*`` tool (absl flags).

A command defines its flags on a fresh ``absl.flags.FlagValues`` (``define(fv) -> fv``), so two
commands can run in one process (the tests do) without sharing flag state; ``run_absl_cli``
parses ``argv`` into them and calls ``run(fv, argv[1:])``.  ``--help`` prints the command's
docstring and its flags.  Every error a user can cause — an unknown or malformed flag, a stray
argument, a ``ValueError`` raised by the command (a file, field or range it refuses) or one of
the command's own ``user_errors`` (an emulation precondition) — is one line on stderr,
``error: ...``, and exit status 2.

A command with positional arguments names them (``positional=("FLOW_DIR",)``): exactly those
are then taken from what the flags leave (absl parses flags before, between and after them) and
given to ``run`` as a third argument.  A command with subcommands (``python -m jaxcc.plots
figures ...``) reads the subcommand from ``argv[1]`` and runs that subcommand's own flags
through ``run_absl_cli``.
"""

from __future__ import annotations

import sys
from typing import Callable, Sequence

HELP_FLAGS = ("--help", "-h", "--helpfull", "-?")


def error(message: str) -> int:
    """Print ``message`` as the command's one-line error; returns exit status 2."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def dashed_aliases(fv):
    """Define ``--a-b`` as an alias of every flag ``--a_b`` of ``fv`` that has no such spelling yet
    (commands that took dashed names keep taking them); returns ``fv``."""
    from absl import flags

    for name in list(fv):
        dashed = name.replace("_", "-")
        if dashed != name and dashed not in fv:
            flags.DEFINE_alias(dashed, name, flag_values=fv)
    return fv


def run_absl_cli(argv: Sequence[str], doc: str, define: Callable, run: Callable, example: str, *,
                 uses_jax: bool = True, positional: Sequence[str] = (),
                 user_errors: tuple[type[Exception], ...] = ()) -> int:
    """One absl command: parse ``argv`` (program name first) into fresh flags from ``define``,
    then ``run(flags, argv[1:])``; ``--help`` prints ``doc`` and the flags, and every error is one
    line with exit status 2 (``example``: what a flag looks like, for stray arguments).
    ``uses_jax``: turn JAX's compilation cache on before ``run`` (``jaxcc.jax_cache``).
    ``positional``: the names of the positional arguments the command requires, in order; then
    ``run(flags, argv[1:], values)`` with their values (a list as long as ``positional``).
    ``user_errors``: exception types besides ``ValueError`` that are the user's to mend."""
    from absl import flags

    argv = list(argv)
    fv = define(flags.FlagValues())
    if any(a in HELP_FLAGS for a in argv[1:]):
        print(doc)
        print(fv.get_help())
        return 0
    try:
        rest = fv(argv)
    except flags.Error as e:
        return error(e)
    positional = tuple(positional)
    if len(rest) > 1 + len(positional):
        extra = rest[1 + len(positional):]
        return error(f"unexpected arguments {extra} (flags look like {example})")
    if len(rest) < 1 + len(positional):
        missing = " ".join(positional[len(rest) - 1:])
        return error(f"missing {missing} (give {' '.join(positional)} and flags like {example})")
    if uses_jax:
        from jaxcc import jax_cache
        jax_cache.enable_compilation_cache()  # before the first jit: a repeated command compiles nothing
    try:
        if positional:
            return run(fv, argv[1:], list(rest[1:]))
        return run(fv, argv[1:])
    except (ValueError, *user_errors) as e:
        return error(e)
