#!/usr/bin/env bash
# Clean-system proof that the README's test command works from Debian's packages alone:
#
#   setup/check_clean_system.sh [--quick] [--keep] [--no-cache] [REPO_DIR]
#
# Builds a fresh Debian 12 (bookworm) with `debootstrap --variant=minbase` from the mirror
# this machine's apt uses, copies a clean clone of REPO_DIR's HEAD into it (committed files
# only: untracked and uncommitted changes are NOT covered), installs only what the README
# says a user starts with (make, python3), and runs inside the chroot:
#   full (default)  `make test`  -- exactly the README's test command and .ci/run
#                   (Debian packages from setup/apt-packages.txt, pip from PyPI, CMake +
#                   GoogleTest, a short libFuzzer run, the fast pytest tier, as root)
#   --quick         `make deps datapath ns3 bazel fuzz`, then the fast tier's emulation tests
#                   (network namespaces, tc, kernel CUBIC/Reno/BBR, the first kernel CUBIC fidelity case),
#                   tests/test_train_cli.py and tests/test_ns3_dumbbell.py, and
#                   tests/test_report_browser.py (a report in headless Chromium): proves the
#                   package list for the C++ build, ns-3, Bazel, fuzzing, emulation and the
#                   browser in less time.
# The chroot runs in its own mount namespace (its root bind-mounted on itself so that / is a
# mount point, /proc, /sys, /dev with /dev/pts and /dev/shm, a tmpfs /run for /run/netns), so
# every mount goes away with it; the EXIT trap also unmounts
# anything left under the chroot and deletes it (unless --keep).  Needs root and debootstrap
# (`apt-get install debootstrap`; a tool for this check only, so not in apt-packages.txt).
#   --keep       keep the chroot afterwards (its path is printed; enter it with chroot)
#   --no-cache   do not reuse downloaded .deb files and pip wheels between runs (by default
#                they are kept in $JAXCC_CLEAN_CACHE, /var/cache/jaxcc-clean-system: the same
#                files the mirror and PyPI serve, only not downloaded twice)
# Environment: JAXCC_DEBIAN_MIRROR, JAXCC_DEBIAN_SECURITY_MIRROR override the mirrors;
# JAXCC_CLEAN_DIR the parent folder of the chroot (default /var/tmp).
# Exit status: 0 when every step passed, else the failing step's status (2: bad arguments).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
QUICK=0 KEEP=0 CACHE=1 REPO=""
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --no-cache) CACHE=0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "check_clean_system: unknown option '$a' (known: --quick, --keep, --no-cache, --help)" >&2; exit 2 ;;
    *) [ -z "$REPO" ] || { echo "check_clean_system: one REPO_DIR only (got '$REPO' and '$a')" >&2; exit 2; }
       REPO=$a ;;
  esac
done
REPO=$(cd "${REPO:-$(dirname "$0")/..}" && pwd)
[ "$(id -u)" = 0 ] || { echo "check_clean_system: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check_clean_system: debootstrap not installed (apt-get install debootstrap)" >&2; exit 2; }
command -v unshare >/dev/null || { echo "check_clean_system: unshare (util-linux) not installed" >&2; exit 2; }
git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || { echo "check_clean_system: $REPO is not a git checkout" >&2; exit 2; }

# The Debian mirror this machine's apt uses (first http(s) URI ending in /debian).
detect_mirror() {
  grep -hsE '^\s*(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    | grep -oE 'https?://[^ ]*/debian/?( |$)' | tr -d ' ' | sed 's:/$::' | head -n1 || true
}
MIRROR=${JAXCC_DEBIAN_MIRROR:-$(detect_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY=${JAXCC_DEBIAN_SECURITY_MIRROR:-${MIRROR}-security}
CACHE_DIR=${JAXCC_CLEAN_CACHE:-/var/cache/jaxcc-clean-system}

SHA=$(git -C "$REPO" rev-parse HEAD)
DIRTY=$(git -C "$REPO" status --porcelain --untracked-files=normal | wc -l)
mkdir -p "${JAXCC_CLEAN_DIR:-/var/tmp}"
ROOT=$(mktemp -d "${JAXCC_CLEAN_DIR:-/var/tmp}/jaxcc-clean.XXXXXX")
chmod 755 "$ROOT"  # a system's root folder (mktemp's 0700 would lock out apt's _apt user)
LOG=$ROOT.log
T0=$(date +%s)

INNER_PID=
cleanup() {
  local rc=$?
  if [ -n "$INNER_PID" ]; then  # interrupted: end the chroot's processes first
    kill -TERM -- "-$INNER_PID" 2>/dev/null || true
    sleep 2
    kill -KILL -- "-$INNER_PID" 2>/dev/null || true
    wait "$INNER_PID" 2>/dev/null || true
  fi
  # Mounts live in the unshared namespace and die with it; this is the belt to those braces.
  local m
  while IFS= read -r m; do  # /proc/mounts writes a space as \040
    umount -l "$(printf '%b' "$m")" 2>/dev/null || true
  done < <(awk -v r="$ROOT/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r)
  if [ "$KEEP" = 1 ]; then
    echo "check_clean_system: kept the chroot at $ROOT (enter: chroot $ROOT /bin/bash; remove: rm -rf --one-file-system $ROOT)"
  else
    rm -rf --one-file-system "$ROOT"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "[check_clean_system $(( $(date +%s) - T0 ))s] $*"; }
say "repo $REPO at $SHA$( [ "$DIRTY" = 0 ] || echo " ($DIRTY uncommitted/untracked paths NOT covered)")"
say "chroot $ROOT, mirror $MIRROR (+ ${SECURITY}), mode $([ $QUICK = 1 ] && echo quick || echo full), log $LOG"

DEBOOTSTRAP_CACHE=()
if [ "$CACHE" = 1 ]; then
  mkdir -p "$CACHE_DIR/debootstrap" "$CACHE_DIR/apt-archives/partial" "$CACHE_DIR/pip"
  DEBOOTSTRAP_CACHE=(--cache-dir="$CACHE_DIR/debootstrap")
fi
say "debootstrap --variant=minbase bookworm"
if ! debootstrap --variant=minbase "${DEBOOTSTRAP_CACHE[@]}" bookworm "$ROOT" "$MIRROR" >"$LOG" 2>&1; then
  tail -n 20 "$LOG"; say "FAILED: debootstrap (log $LOG)"; exit 1
fi
cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
echo jaxcc-clean >"$ROOT/etc/hostname"
# The chroot shares this machine's host name (no UTS namespace); a Debian install lists its own name
# in /etc/hosts, and multi-process JAX (gloo's TCP collectives, tests/test_multihost.py) resolves it.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" >"$ROOT/etc/hosts"

say "git clone of $SHA into /root/jaxcc"
git clone -q --no-hardlinks "$REPO" "$ROOT/root/jaxcc"
git -C "$ROOT/root/jaxcc" -c advice.detachedHead=false checkout -q --detach "$SHA"

# What runs inside: each step timed, a summary line per step in /root/check-summary.txt.
cat >"$ROOT/root/check.sh" <<'EOF'
#!/bin/bash
set -uo pipefail
cd /root/jaxcc
: >/root/check-summary.txt
step() {
  local name=$1 t=$SECONDS rc; shift
  echo "=== [$name] $*"
  "$@"; rc=$?
  local line; line=$(printf '%-34s %-6s %5ss' "$name" "$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")" $((SECONDS - t)))
  echo "=== $line"; echo "$line" >>/root/check-summary.txt
  [ $rc = 0 ] || exit $rc
}
export DEBIAN_FRONTEND=noninteractive
# The README's starting point: a Debian 12 with make and python3 (minbase has neither).
step "apt: make python3 (prerequisites)" bash -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make python3 >/dev/null'
if [ "${QUICK}" = 1 ]; then
  step "make deps datapath ns3 bazel fuzz" make deps datapath ns3 bazel fuzz
  step "pytest -m 'emulation and not full'" python3 -m pytest -q -p no:cacheprovider -m "emulation and not full" tests
  step "pytest train CLI, ns-3 dumbbell" python3 -m pytest -q -p no:cacheprovider tests/test_train_cli.py tests/test_ns3_dumbbell.py
  step "pytest report in headless chromium" python3 -m pytest -q -p no:cacheprovider tests/test_report_browser.py
else
  step "make test" make test
fi
EOF
chmod +x "$ROOT/root/check.sh"

if [ "$CACHE" = 1 ]; then
  mkdir -p "$ROOT/root/.cache/pip"
  rm -f "$ROOT/etc/apt/apt.conf.d/docker-clean"  # keep downloaded .debs in the (bound) cache
fi
# This machine's network plumbing, not the project's: proxies, and a CA bundle given to pip
# here (a TLS-intercepting proxy's certificate) travel into the chroot; on a plain network
# none is set and nothing is passed.
PASS_ENV=()
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  if [ -n "${!v:-}" ]; then PASS_ENV+=("$v=${!v}"); fi
done
for v in PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
  if [ -n "${!v:-}" ] && [ -f "${!v}" ]; then
    mkdir -p "$ROOT/etc/host-ca"
    cp -L "${!v}" "$ROOT/etc/host-ca/$v.crt"
    PASS_ENV+=("$v=/etc/host-ca/$v.crt")
    say "passing this machine's $v (${!v}) into the chroot"
  fi
done

say "running $([ $QUICK = 1 ] && echo 'the quick subset' || echo 'make test') inside the chroot (output: $LOG)"
# The inner script gets ROOT and the environment as arguments (quoted by the shell, not pasted
# into the command text), so a path or proxy URL with spaces or quotes cannot break it.
INNER='
  ROOT=$1; CACHE=$2; CACHE_DIR=$3; QUICK=$4; shift 4
  mount --bind "$ROOT" "$ROOT"  # the chroot'"'"'s / a mount point: ip netns exec runs mount --make-rslave /
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sysfs "$ROOT/sys"
  mount --rbind /dev "$ROOT/dev"
  mount -t tmpfs -o mode=755 tmpfs "$ROOT/run"
  mkdir -p "$ROOT/run/netns" "$ROOT/run/lock"
  if [ "$CACHE" = 1 ]; then
    mount --bind "$CACHE_DIR/apt-archives" "$ROOT/var/cache/apt/archives"
    mount --bind "$CACHE_DIR/pip" "$ROOT/root/.cache/pip"
  fi
  exec chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb QUICK="$QUICK" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" /root/check.sh
'
set +e
# In the background, so that a TERM/INT to this script reaches cleanup at once, which then
# ends the chroot's processes (their own process group) before removing the chroot.
setsid unshare --mount --propagation private -- bash -euc "$INNER" inner "$ROOT" "$CACHE" "$CACHE_DIR" "$QUICK" \
  ${PASS_ENV[@]+"${PASS_ENV[@]}"} > >(tee -a "$LOG") 2>&1 &
INNER_PID=$!
wait "$INNER_PID"
RC=$?
INNER_PID=
set -e

echo
echo "=== check_clean_system: $([ $RC = 0 ] && echo PASSED || echo "FAILED (status $RC)") in $(( $(date +%s) - T0 )) s"
echo "    Debian 12 minbase from $MIRROR; repo $SHA; mode $([ $QUICK = 1 ] && echo quick || echo full)"
echo "    covered (step, status, seconds):"
sed 's/^/      /' "$ROOT/root/check-summary.txt" 2>/dev/null || echo "      (no step finished)"
if [ $QUICK = 1 ]; then
  echo "    not covered in --quick: the rest of pytest (run without --quick for exactly \`make test\`)"
fi
exit $RC
