"""Shared test setup: ``tests/reference`` importable as ``reference`` whatever pytest's import
mode (the fidelity tests and ``tests/fidelity_report.py`` use it), the compilation cache, and the
``realtime`` marker on every emulation test (docs/testing.md)."""

import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def pytest_configure(config):
    """Every test process keeps its compiled programs in jaxcc's compilation cache (the folder
    ``$JAXCC_COMPILATION_CACHE`` names, as every jaxcc command does; ``make test`` gives one per
    checkout), so a program that several tests, workers or CLI subprocesses compile is compiled
    once.  The cache is keyed by the program, so a hit runs exactly what a compile would."""
    from jaxcc import jax_cache

    jax_cache.enable_compilation_cache()


# The fast tier's longest files (``--durations``), started first so that the xdist workers do not
# end with one long file on one worker.  Order only: what runs is the markers' business.
LONGEST_FIRST = ("test_docs.py", "test_online_mocc.py", "test_online_net.py", "test_realism.py",
                 "test_preference_sweep.py", "test_granular.py", "test_envs_deepcc.py", "test_env_api.py",
                 "test_online_compare.py", "test_report.py", "test_evaluate.py", "test_senders.py")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: `-m "not realtime"` must see the marker
def pytest_collection_modifyitems(config, items):
    """Every emulation test measures wall-clock time (a delay line, tbf, pacing), so it is also a
    ``realtime`` test: the Makefile runs those alone, after the parallel part.

    For xdist's ``--dist=loadgroup`` (the Makefile's), the tests of a file that share a fixture
    wider than one test (a module-scoped sweep, a training run) form one group, run by one worker,
    so the fixture is built once; every other test goes to whichever worker is free.  The longest
    files go first (``LONGEST_FIRST``), each file's tests in their own order."""
    for item in items:
        if item.get_closest_marker("emulation") is not None:
            item.add_marker(pytest.mark.realtime)
        if _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def _shares_a_fixture(item) -> bool:
    """Whether the test uses a fixture of the test file (or tests/) wider than one test; pytest's
    own (``tmp_path_factory``, ...) do not count."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(fd.scope != "function" and fd.baseid != ""
               for defs in info.name2fixturedefs.values() for fd in defs)
