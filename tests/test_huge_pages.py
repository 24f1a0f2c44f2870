"""jaxcc.huge_pages: a command starts itself again once, with glibc's huge-page tunable, and the
kernel then backs its large buffers with 2-MB pages (read back from /proc, the kernel's own count)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jaxcc import huge_pages

# Prints its pid on every start, starts again with huge pages, then touches 64 MB and reports
# the kernel's count of anonymous huge pages in this process.
CHILD = """
import os, sys
print("start", os.getpid(), flush=True)
from jaxcc import huge_pages
huge_pages.reexec()
import numpy as np
a = np.ones(64 << 20, np.uint8)
kb = 0
with open("/proc/self/smaps_rollup") as fh:
    for line in fh:
        if line.startswith("AnonHugePages:"):
            kb = int(line.split()[1])
print("tunables", os.environ.get("GLIBC_TUNABLES", ""))
print("huge_kb", kb, int(a.sum() > 0))
"""


def _run(env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", huge_pages.OPT_OUT)}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60,
                         check=True).stdout.split("\n")
    starts = [line.split()[1] for line in out if line.startswith("start")]
    tunables = next(line for line in out if line.startswith("tunables")).split()[1:]
    huge_kb = int(next(line for line in out if line.startswith("huge_kb")).split()[1])
    return starts, tunables, huge_kb


def test_wanted_only_once_and_never_when_opted_out():
    assert not huge_pages.wanted({"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1"})
    assert not huge_pages.wanted({huge_pages.OPT_OUT: "0"})
    assert huge_pages.active({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
    assert not huge_pages.active({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})
    assert not huge_pages.active({})


@pytest.mark.parametrize("setting, allowed", [("always [madvise] never\n", True), ("[always] madvise never\n", True),
                                              ("always madvise [never]\n", False), ("", False)])
def test_kernel_setting_read(tmp_path, setting, allowed):
    f = tmp_path / "enabled"
    f.write_text(setting)
    assert huge_pages.kernel_allows(str(f)) is allowed
    assert huge_pages.kernel_allows(str(tmp_path / "missing")) is False


@pytest.mark.skipif(not huge_pages.wanted({}), reason="this platform cannot use glibc's huge-page tunable")
def test_reexec_once_same_process_and_the_kernel_uses_huge_pages():
    starts, tunables, huge_kb = _run({})
    assert len(starts) == 2 and starts[0] == starts[1]  # started again once, by execve (same pid)
    assert tunables == [huge_pages.TUNABLE]
    assert huge_kb >= 2048  # at least one 2-MB page behind the 64-MB buffer


def test_opted_out_runs_as_started():
    starts, tunables, _ = _run({huge_pages.OPT_OUT: "0"})
    assert len(starts) == 1 and tunables == []


def test_other_tunables_are_kept():
    starts, tunables, _ = _run({"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"})
    if huge_pages.wanted({}):
        assert len(starts) == 2 and tunables == [f"glibc.malloc.tcache_count=7:{huge_pages.TUNABLE}"]
    else:
        assert len(starts) == 1 and tunables == ["glibc.malloc.tcache_count=7"]
