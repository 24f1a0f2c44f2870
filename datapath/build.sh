#!/bin/bash
# CI entry point: configure, build and test the datapath (CMake + ctest, -j2).
# Needs the Debian packages in setup/apt-packages.txt (cmake g++ nlohmann-json3-dev
# libgtest-dev googletest). Build output: datapath/build (what jaxcc.emulate looks for).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${JAXCC_BUILD_DIR:-$HERE/build}
cmake -S "$HERE" -B "$BUILD" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
cmake --build "$BUILD" -j2
# JAXCC_SKIP_TIMING=1 leaves out the loopback rate tests (label "timing") on hosts too busy
# to pace accurately; everything else always runs.
EXTRA=()
[ "${JAXCC_SKIP_TIMING:-0}" = 1 ] && EXTRA=(-LE timing)
ctest --test-dir "$BUILD" -j2 --output-on-failure "${EXTRA[@]}"
