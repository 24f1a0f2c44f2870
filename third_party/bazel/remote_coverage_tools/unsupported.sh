#!/bin/sh
echo "bazel coverage is not supported offline (third_party/bazel/remote_coverage_tools is a stub)" >&2
exit 1
