"""The fast tier's parallel part builds a file's shared fixture once.

``conftest.py`` marks the tests of a file that share a fixture wider than one test with an
``xdist_group``, and the Makefile runs pytest-xdist with ``--dist=loadgroup``, so those tests run
on one worker and an expensive module fixture (the ns-3 fast sweep, a training run) is built once.
Measured: pytest 9.2.0 with pytest-xdist 3.8.0 silently stopped honouring the groups (xdist names
a group by rewriting the test's node id, which pytest 9.2 no longer takes), so each worker built
the ns-3 fast sweep (74 s twice in one ``make test``); ``pyproject.toml`` keeps pytest below 9.2.
This runs a small session the Makefile's way and counts the fixture's setups.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")


def test_a_module_fixture_is_built_once_on_two_workers(tmp_path):
    # the project's grouping hook, loaded under another name (a conftest cannot import "conftest")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util
        _spec = importlib.util.spec_from_file_location("jaxcc_tests_conftest", {str(CONFTEST)!r})
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
        pytest_collection_modifyitems = _mod.pytest_collection_modifyitems
    """))
    (tmp_path / "test_shared.py").write_text(textwrap.dedent("""
        import os
        import time

        import pytest

        @pytest.fixture(scope="module")
        def built():
            with open(os.environ["SETUPS_FILE"], "a") as f:
                f.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
            return 1

        @pytest.mark.parametrize("i", range(6))
        def test_uses_the_fixture(built, i):
            time.sleep(0.1)

        @pytest.mark.parametrize("i", range(6))
        def test_free(i):
            time.sleep(0.1)
    """))
    setups = tmp_path / "setups.txt"
    env = {**os.environ, "SETUPS_FILE": str(setups)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                        "--dist=loadgroup", str(tmp_path / "test_shared.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "12 passed" in p.stdout, p.stdout[-2000:]
    workers = setups.read_text().split()
    assert len(workers) == 1, f"the module fixture was built {len(workers)} times (workers {workers})"
