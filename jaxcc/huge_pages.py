"""Transparent huge pages for the model's large buffers (Linux with glibc ≥ 2.35).

The feedback ring is the model's largest state: ``[links, ring slots, flows, 3]`` floats, 0.2 GB
at 16,384 links and 1,024 slots, 0.5 GB in the Aurora environment (2,392 slots).  Each tick
every link reads and adds a few slots of its own ring, so one tick touches a different 4-KB page
per link: at 16,384 links the translation of those addresses, not the arithmetic, is what the
scatter waits on (measured in docs/fidelity.md, "Where the time goes": the same bench ran
2.6 M decisions/s with a 4,096-slot ring against 4.5 M with a 64-slot one).  2-MB pages hold
170 links' rings where a 4-KB page holds a third of one.

glibc backs ``malloc`` with transparent huge pages when its tunable ``glibc.malloc.hugetlb=1``
is set, and it reads tunables once, at process start.  So ``python -m jaxcc.bench`` starts
itself again with the tunable added to ``GLIBC_TUNABLES``, before its first buffer:
``reexec()``.  Nothing else changes: the same interpreter, arguments and process id
(``execve``), the same results bit for bit.  It is skipped where it cannot help (not Linux, not
glibc, glibc older than 2.35, the kernel's huge pages set to ``never``), where it is already set,
and when ``JAXCC_HUGE_PAGES=0``.  The training loops measured no difference (Aurora and Pareto at
4,096 links: their time is in the networks), so ``jaxcc.train`` starts as it is started; any
program can have the same by starting with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``.
"""

from __future__ import annotations

import os
import sys

TUNABLE = "glibc.malloc.hugetlb=1"
OPT_OUT = "JAXCC_HUGE_PAGES"  # "0": leave the process as it was started
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def glibc_version() -> tuple[int, int] | None:
    """glibc's (major, minor), or None when the C library is not glibc."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, ValueError, OSError):
        return None
    if name != "glibc":
        return None
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def kernel_allows(path: str = THP_ENABLED) -> bool:
    """Whether the kernel's transparent huge pages are ``always`` or ``madvise`` (the tunable
    asks by ``madvise``); False when the setting is ``never`` or cannot be read."""
    try:
        with open(path) as fh:
            setting = fh.read()
    except OSError:
        return False
    return "[never]" not in setting and "[" in setting


def active(environ=None) -> bool:
    """Whether this process was started with the tunable set."""
    env = os.environ if environ is None else environ
    return TUNABLE in env.get("GLIBC_TUNABLES", "").split(":")


def wanted(environ=None) -> bool:
    """Whether ``reexec`` would start the process again: not active yet, not opted out, and the
    platform can use it."""
    env = os.environ if environ is None else environ
    if active(env) or env.get(OPT_OUT, "1") == "0":
        return False
    if not sys.platform.startswith("linux"):
        return False
    version = glibc_version()
    return version is not None and version >= (2, 35) and kernel_allows()


def reexec() -> None:
    """Start this command again with huge pages (see the module docstring), or return when they
    are on already or not wanted.  Call it first thing in a command's ``__main__``."""
    if not wanted():
        return
    env = dict(os.environ)
    env["GLIBC_TUNABLES"] = ":".join(t for t in (env.get("GLIBC_TUNABLES", ""), TUNABLE) if t)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:  # no interpreter path to start again: run as started
        return
