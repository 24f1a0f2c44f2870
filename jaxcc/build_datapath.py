"""Build the C++ datapath (jaxcc-sender, jaxcc-receiver, jaxcc-bench) from the sources jaxcc
ships.  ``python -m jaxcc.build_datapath --out=DIR`` (``jaxcc build_datapath --out=DIR``).

CMake configures and builds ``datapath/`` (an installed package's copy, ``jaxcc/datapath``, or a
clone's top-level folder; ``jaxcc.shipped``) into ``DIR``, without the GoogleTest suite
(``-DJAXCC_TESTS=OFF``: its tests read the repository's test vectors; a clone runs them with
``bash datapath/build.sh``).  It needs cmake, a C++17 compiler, nlohmann-json and OpenSSL's
headers (Debian: ``apt-get install cmake g++ nlohmann-json3-dev libssl-dev``).  The programs land
in ``DIR``; ``JAXCC_DATAPATH_BUILD=DIR`` points ``jaxcc.emulate`` at them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Sequence

from jaxcc import shipped

PROGRAMS = ("jaxcc-sender", "jaxcc-receiver", "jaxcc-bench")
DEBIAN_PACKAGES = "cmake g++ nlohmann-json3-dev libssl-dev"


def cmake_commands(source: str, out: str, build_type: str, jobs: int) -> list[list[str]]:
    """The configure and build commands for ``source`` into ``out``."""
    return [["cmake", "-S", source, "-B", out, f"-DCMAKE_BUILD_TYPE={build_type}", "-DJAXCC_TESTS=OFF",
             "-DJAXCC_FUZZ=OFF"],
            ["cmake", "--build", out, f"-j{jobs}"]]


def build(out: str, build_type: str = "RelWithDebInfo", jobs: int = 2) -> list[str]:
    """Configure and build the shipped datapath into ``out``; returns the programs' paths.

    Raises:
      ValueError: no cmake, no datapath sources, or a step that failed (CMake's own output, on
        stderr before it, says why).
    """
    source = shipped.folder("datapath")
    if source is None or not os.path.isfile(os.path.join(source, "CMakeLists.txt")):
        raise ValueError("the datapath sources are missing from this jaxcc (jaxcc/datapath or a "
                         "clone's datapath/): reinstall jaxcc from its wheel or sdist")
    if shutil.which("cmake") is None:
        raise ValueError(f"cmake not found: the datapath needs cmake, a C++17 compiler, nlohmann-json "
                         f"and OpenSSL (Debian: apt-get install {DEBIAN_PACKAGES})")
    out = os.path.abspath(out)
    for cmd in cmake_commands(source, out, build_type, jobs):
        print("+ " + " ".join(cmd), flush=True)
        status = subprocess.run(cmd).returncode
        if status != 0:
            step = "configure" if "-S" in cmd else "build"
            raise ValueError(f"the datapath's CMake {step} failed (exit {status}; its messages are above); "
                             f"it needs cmake, a C++17 compiler, nlohmann-json and OpenSSL "
                             f"(Debian: apt-get install {DEBIAN_PACKAGES})")
    return [os.path.join(out, p) for p in PROGRAMS]


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("out", None, "build folder; the programs land in it (created if absent)", flag_values=fv)
    flags.DEFINE_enum("build_type", "RelWithDebInfo", ["Release", "RelWithDebInfo", "Debug"],
                      "CMAKE_BUILD_TYPE (the forward pass and the pacer are timing-critical: keep it optimised)",
                      flag_values=fv)
    flags.DEFINE_integer("jobs", 2, "parallel compile jobs", lower_bound=1, flag_values=fv)
    flags.mark_flags_as_required(["out"], flag_values=fv)
    return fv


def main(fv, argv=()) -> int:
    programs = build(fv.out, fv.build_type, fv.jobs)
    print("built: " + " ".join(programs))
    print(f"jaxcc.emulate finds them with JAXCC_DATAPATH_BUILD={os.path.abspath(fv.out)}")
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors are one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--out=datapath-build", uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
