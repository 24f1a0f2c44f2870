#!/usr/bin/env bash
# Run a scenario suite (or named scenarios) through the netns emulated link for one or more
# controllers, e.g. an exported policy against the kernel baselines:
#
#   sudo launch/emulate_suite.sh SUITE_OR_SCENARIOS CONTROLLERS OUT_DIR [extra jaxcc.emulate flags]
#   sudo launch/emulate_suite.sh pareto policy:checkpoints/pareto.safetensors,kernel:cubic,kernel:bbr out/emu
#   sudo launch/emulate_suite.sh mocc/12mbps,pareto/lte bbr,fixed:10 out/emu2
#
# The first argument is a jaxcc.scenarios suite name when one exists, else a comma list of
# scenario names. Builds the tools if needed, removes leftovers of killed runs first, and
# writes OUT_DIR/results.json + plots. Needs root (namespaces, tc, iptables).
#
# JAXCC_PYTHON: the Python interpreter that runs jaxcc (default: python3 from root's PATH). sudo
# drops the caller's environment, so name a virtual environment's on the command line:
#   sudo JAXCC_PYTHON=.venv/bin/python launch/emulate_suite.sh ...   (a relative path is the caller's)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac  # before the cd below
if [ $# -lt 3 ]; then sed -n '2,16p' "$0"; exit 2; fi
WHAT=$1; CTRLS=$2; OUT=$3; shift 3
if [ "$(id -u)" -ne 0 ]; then echo "emulate_suite.sh: run as root" >&2; exit 2; fi
[ -x "$REPO/datapath/tools/build/nfq_delay" ] || "$REPO/datapath/tools/build.sh"
if [[ "$CTRLS" == *policy:* || "$CTRLS" == *bbr* || "$CTRLS" == *fixed:* ]] && \
   [ ! -x "$REPO/datapath/build/jaxcc-sender" ]; then
  "$REPO/datapath/build.sh"
fi
cd "$REPO"
"$PY" -m jaxcc.emulate --cleanup >/dev/null
if "$PY" -c 'import sys, jaxcc.scenarios as s; sys.exit(0 if sys.argv[1] in s.SUITES else 1)' "$WHAT" 2>/dev/null; then
  exec "$PY" -m jaxcc.emulate --suite="$WHAT" --controller="$CTRLS" --out="$OUT" "$@"
fi
exec "$PY" -m jaxcc.emulate --scenario="$WHAT" --controller="$CTRLS" --out="$OUT" "$@"
