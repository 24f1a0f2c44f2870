"""The one command-line convention of every ``python -m jaxcc.*`` tool (absl flags).

A command defines its flags on a fresh ``absl.flags.FlagValues`` (``define(fv) -> fv``), so two
commands can run in one process (the tests do) without sharing flag state; ``run_absl_cli``
parses ``argv`` into them and calls ``run(fv, argv[1:])``.  ``--help`` prints the command's
docstring and its flags.  Every error a user can cause — an unknown or malformed flag, a stray
argument, a ``ValueError`` raised by the command (a file, field or range it refuses) — is one
line on stderr, ``error: ...``, and exit status 2.
"""

from __future__ import annotations

import sys
from typing import Callable, Sequence

HELP_FLAGS = ("--help", "-h", "--helpfull", "-?")


def error(message: str) -> int:
    """Print ``message`` as the command's one-line error; returns exit status 2."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def run_absl_cli(argv: Sequence[str], doc: str, define: Callable, run: Callable, example: str, *,
                 uses_jax: bool = True) -> int:
    """One absl command: parse ``argv`` (program name first) into fresh flags from ``define``,
    then ``run(flags, argv[1:])``; ``--help`` prints ``doc`` and the flags, and every error is one
    line with exit status 2 (``example``: what a flag looks like, for stray arguments).
    ``uses_jax``: turn JAX's compilation cache on before ``run`` (``jaxcc.jax_cache``)."""
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
    if len(rest) > 1:
        return error(f"unexpected arguments {rest[1:]} (flags look like {example})")
    if uses_jax:
        from jaxcc import jax_cache
        jax_cache.enable_compilation_cache()  # before the first jit: a repeated command compiles nothing
    try:
        return run(fv, argv[1:])
    except ValueError as e:
        return error(e)
