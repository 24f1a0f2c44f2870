"""``jaxcc COMMAND [FLAGS ...]`` (the console command; also ``python -m jaxcc``).

``jaxcc train --config=pareto_smoke`` is ``python -m jaxcc.train --config=pareto_smoke``: the
command's own module runs as the program, with the same flags, ``--help``, output and exit status.
The commands are read from the package, not listed by hand: every module ``jaxcc/NAME.py`` that
runs as a program (it has ``if __name__ == "__main__":``) and every subpackage with a
``__main__.py``.  ``jaxcc --help`` lists them; an unknown command is a one-line error, exit 2.
"""

from __future__ import annotations

import ast
import os
import runpy
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_MAIN_GUARD = ("if __name__ == \"__main__\":", "if __name__ == '__main__':")


def _program_file(name: str) -> str | None:
    """The file that runs as ``python -m jaxcc.NAME``, or None when ``NAME`` is not a command."""
    if name.startswith(("_", ".")) or os.sep in name:
        return None
    pkg_main = os.path.join(_PACKAGE, name, "__main__.py")
    if os.path.isfile(pkg_main):
        return pkg_main
    module = os.path.join(_PACKAGE, name + ".py")
    if os.path.isfile(module):
        with open(module, encoding="utf-8") as f:
            if any(line.rstrip() in _MAIN_GUARD for line in f):
                return module
    return None


def commands() -> list[str]:
    """Every ``jaxcc.NAME`` that ``python -m`` runs, sorted."""
    names = {e.removesuffix(".py") for e in os.listdir(_PACKAGE)}
    return sorted(n for n in names if _program_file(n))


def summary(name: str) -> str:
    """One line about a command: the first sentence of its module's docstring (a subpackage's:
    ``__init__.py``'s), without a leading ``python -m jaxcc.NAME ...:`` usage and markup."""
    f = _program_file(name)
    if f.endswith("__main__.py"):
        f = os.path.join(os.path.dirname(f), "__init__.py")
    with open(f, encoding="utf-8") as fh:
        doc = ast.get_docstring(ast.parse(fh.read())) or ""
    text = " ".join(doc.strip().split("\n\n")[0].split()).replace("``", "")
    usage, colon, rest = text.partition(": ")
    if usage.startswith(f"python -m jaxcc.{name}") and colon:
        text = rest
    text = text.removeprefix(f"python -m jaxcc.{name}").strip()
    end = text.find(". ")
    return (text[:end + 1] if end >= 0 else text).rstrip(":")


def usage() -> str:
    names = commands()
    width = max(map(len, names))
    rows = "\n".join(f"  {n:<{width}}  {summary(n)}" for n in names)
    return (f"usage: jaxcc COMMAND [FLAGS ...]   (the same as python -m jaxcc.COMMAND [FLAGS ...])\n\n"
            f"commands:\n{rows}\n\n`jaxcc COMMAND --help`: a command's flags.  docs/install.md")


def main(argv: list[str] | None = None) -> int:
    """Run ``argv[1]``'s module as ``python -m jaxcc.<argv[1]>`` with the flags after it."""
    from jaxcc.cli import HELP_FLAGS, error

    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2:
        return error(f"missing COMMAND; commands: {', '.join(commands())} (jaxcc --help)")
    name = argv[1]
    if name in HELP_FLAGS:
        print(usage())
        return 0
    if name == "--version":
        from importlib.metadata import PackageNotFoundError, version
        try:
            print(f"jaxcc {version('jaxcc')}")
        except PackageNotFoundError:
            print("jaxcc (not installed: a source tree)")
        return 0
    if _program_file(name) is None:
        return error(f"unknown command {name!r}; commands: {', '.join(commands())} (jaxcc --help)")
    saved, sys.argv = sys.argv, [f"jaxcc {name}", *argv[2:]]  # runpy puts the module's file first, as python -m does
    try:
        runpy.run_module(f"jaxcc.{name}", run_name="__main__", alter_sys=True)
    except SystemExit as e:  # the command's sys.exit(status); a message (sys.exit("...")) goes on up, as with python -m
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        raise
    finally:
        sys.argv = saved
    return 0

if __name__ == "__main__":
    sys.exit(main())
