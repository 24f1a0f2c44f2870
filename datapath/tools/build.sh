#!/usr/bin/env bash
# Build the emulation tools (nfq_delay, udp_probe) into datapath/tools/build/.
# Needs: build-essential, libnetfilter-queue-dev (apt-get install libnetfilter-queue-dev).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -f /usr/include/libnetfilter_queue/libnetfilter_queue.h ]; then
  echo "build.sh: libnetfilter_queue headers missing: apt-get install libnetfilter-queue-dev" >&2
  exit 3
fi
make -j2 BUILD="${BUILD:-build}" "$@"
