#!/bin/bash
# Builds the ns-3 dumbbell (datapath/ns3/dumbbell.cc) against Debian's ns-3 3.37
# (packages ns3 + libns3-dev, listed in setup/apt-packages.txt): headers in /usr/include/ns3,
# libraries libns3-<module>.so.  Plain g++: Debian's ns3-*.pc files carry a broken Cflags entry
# ("-I/usr;") and name libgsl.so, which libns3-dev does not install, so pkg-config is not used.
# Output: datapath/ns3/build/ns3-dumbbell (git-ignored; jaxcc.emulation.ns3 looks for it there,
# or in $JAXCC_NS3_BUILD).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${JAXCC_NS3_BUILD:-$HERE/build}
if [ ! -f /usr/include/ns3/core-module.h ]; then
  echo "datapath/ns3/build.sh: ns-3 headers missing (/usr/include/ns3); install: apt-get install ns3 libns3-dev" >&2
  exit 1
fi
mkdir -p "$BUILD"
"${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -o "$BUILD/ns3-dumbbell.tmp" "$HERE/dumbbell.cc" \
  -lns3-point-to-point -lns3-applications -lns3-internet -lns3-traffic-control -lns3-bridge \
  -lns3-network -lns3-stats -lns3-core
mv "$BUILD/ns3-dumbbell.tmp" "$BUILD/ns3-dumbbell"
echo "built $BUILD/ns3-dumbbell"
