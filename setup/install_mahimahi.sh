#!/usr/bin/env bash
# Builds Mahimahi (https://github.com/ravinet/mahimahi) from its public source and installs it
# with its setuid-root mm-* tools, for launch/mahimahi_run.sh. Mahimahi is not packaged in
# Debian 12. Run as root on Debian/Ubuntu. Optional: CI and `make test` never need it (the
# Mahimahi test skips, saying why, where it is not installed).
#
#   setup/install_mahimahi.sh                          # git clone at the pinned commit
#   MAHIMAHI_SRC=/path/to/mahimahi setup/install_mahimahi.sh   # build this source tree instead
#   PREFIX=/opt/mahimahi setup/install_mahimahi.sh     # install elsewhere (default /usr/local)
#
# Tested on Debian 12 (GCC 12.2) at the commit below: builds without changes, and
# `runuser -u nobody -- mm-delay 20 mm-link <12 Mbit/s trace> ...` runs as documented.
set -euo pipefail
COMMIT=${MAHIMAHI_COMMIT:-ae477d437615b972217498ba52be07db17a15618}   # 2024-12-29 (master)
PREFIX=${PREFIX:-/usr/local}
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "install_mahimahi: needs root and apt-get (it installs build packages and setuid tools)" >&2
  exit 1
fi
# configure checks for every one of these (apache2/apxs/dnsmasq/ssl-cert are for mm-webrecord
# and mm-webreplay, which jaxcc does not use, but configure refuses to go on without them)
DEPS=(git ca-certificates g++ make autoconf automake libtool pkg-config protobuf-compiler
      libprotobuf-dev libssl-dev apache2-bin apache2-dev dnsmasq-base ssl-cert
      libxcb-present-dev libcairo2-dev libpango1.0-dev iptables iproute2)
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEPS[@]}" >/dev/null

WORK=$(mktemp -d /tmp/mahimahi-build.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${MAHIMAHI_SRC:-}" ]; then
  cp -a "$MAHIMAHI_SRC"/. "$WORK/src"
else
  git clone -q https://github.com/ravinet/mahimahi "$WORK/src"
  git -C "$WORK/src" checkout -q "$COMMIT"
fi
cd "$WORK/src"
# Build and install the tools (src; its install hook makes them setuid root), man pages and
# scripts, not the bundled traces: jaxcc reads traces from its scenarios, and partial copies
# of the source may lack some of them.
sed -i 's/^SUBDIRS = .*/SUBDIRS = src man scripts/' Makefile.am
./autogen.sh >/dev/null 2>&1
./configure -q --prefix="$PREFIX"
# -Werror is dropped from the project's warning flags: newer compilers add warnings (GCC 12
# builds it cleanly either way).
make -s -j2 PICKY_CXXFLAGS="-pedantic -Wall -Wextra -Weffc++"
make -s install

bad=()
for t in mm-delay mm-link mm-loss; do
  p="$PREFIX/bin/$t"
  [ -x "$p" ] && [ -u "$p" ] && [ "$(stat -c %u "$p")" = 0 ] || bad+=("$p")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "install_mahimahi: not installed setuid root: ${bad[*]}" >&2
  exit 1
fi
echo "install_mahimahi: installed mm-delay, mm-link, mm-loss (setuid root) in $PREFIX/bin"
case ":$PATH:" in *":$PREFIX/bin:"*) ;; *) echo "  add $PREFIX/bin to PATH" ;; esac
echo "  Mahimahi runs as an unprivileged user and needs net.ipv4.ip_forward=1;"
echo "  launch/mahimahi_run.sh (as root) takes care of both."
