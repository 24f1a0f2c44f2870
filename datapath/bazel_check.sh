#!/bin/bash
# Builds and tests the datapath with Bazel (Debian bazel-bootstrap 4.2, offline; the
# overrides live in the top-level .bazelrc). Exits nonzero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bazel >/dev/null || { echo "bazel_check: bazel not installed (apt-get install bazel-bootstrap bazel-rules-java)"; exit 1; }
# Tests tagged "timing" (pacing accuracy) need real-time priority that linux-sandbox denies;
# datapath/build.sh runs them under ctest.
bazel test //... --test_tag_filters=-timing "$@"
