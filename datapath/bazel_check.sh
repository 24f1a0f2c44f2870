#!/bin/bash
# Builds and tests the datapath with Bazel (Debian bazel-bootstrap 4.2, offline; the
# overrides live in the top-level .bazelrc). Exits nonzero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bazel >/dev/null || { echo "bazel_check: bazel not installed (apt-get install bazel-bootstrap bazel-rules-java)"; exit 1; }
# Tests tagged "timing" (pacing accuracy) need real-time priority that linux-sandbox denies;
# datapath/build.sh runs them under ctest.
# The Bazel server (a JVM) would otherwise stay up and load the CPUs during the real-time
# emulation tests that run after this; shut it down whatever the result.
trap 'bazel shutdown >/dev/null 2>&1 || true' EXIT
bazel test //... --test_tag_filters=-timing "$@"
