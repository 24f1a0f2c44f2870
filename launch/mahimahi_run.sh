#!/usr/bin/env bash
# Run a jaxcc scenario through Mahimahi (mm-delay / mm-loss / mm-link) instead of the netns+tc
# emulation of `python -m jaxcc.emulate`. Same scenario spec, same senders, same results.json.
#
#   launch/mahimahi_run.sh (--scenario=NAME | --scenario-file=spec.json) \
#       [--controller=policy:FILE|bbr|fixed:MBPS|kernel:cubic|kernel:bbr] --out=DIR \
#       [--user=USER] [--dry-run]
#
# How (see ../shared/EMULATION.md, "Mahimahi"):
#  * Everything runs inside a fresh network namespace (jxm<hex>) that this script creates and
#    deletes, so all traffic stays on this machine. The receivers (jaxcc-receiver, iperf3 -s)
#    listen there on 0.0.0.0; senders run inside the Mahimahi shells and send to the outer
#    end of the link ($MAHIMAHI_BASE of the mm-link shell).
#  * Mahimahi refuses to run as root and needs setuid-root binaries (its `make install`), so
#    the shells run as an unprivileged user (runuser; --user, default $SUDO_USER or nobody),
#    with net.ipv4.ip_forward=1. That user must be able to read the binaries and traces.
#  * Link: `mm-link TRACE TRACE` with *droptail byte buffers on both directions*: mm-link's
#    default queue is unbounded, which would hide every loss and inflate every delay.
#    Constant rates and schedules are written as traces (jaxcc.emulate --mahimahi-plan);
#    trace scenarios use their trace file directly (mm-link loops it, as the simulator does).
#  * Random loss: `mm-loss uplink L` inside mm-link (loss before the bottleneck queue, as in the
#    netns harness). Propagation delay: one `mm-delay RTT/2` per flow inside the shared link,
#    so flows with different RTTs share one bottleneck.
# Exit status: 0 ok, 2 bad usage, 3 Mahimahi (or another tool) missing, other: a run failed.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
SCEN_ARGS=()
CONTROLLER=""
OUT=""
MM_USER="${SUDO_USER:-nobody}"
DRY=0
for arg in "$@"; do
  case "$arg" in
    --scenario=*|--scenario-file=*) SCEN_ARGS+=("$arg") ;;
    --controller=*) CONTROLLER="${arg#*=}" ;;
    --out=*) OUT="${arg#*=}" ;;
    --user=*) MM_USER="${arg#*=}" ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "mahimahi_run.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [ ${#SCEN_ARGS[@]} -ne 1 ] || [ -z "$OUT" ]; then
  echo "usage: $0 (--scenario=NAME|--scenario-file=F) [--controller=C] --out=DIR [--user=U]" >&2
  exit 2
fi

# ---- what is needed, and where it comes from
missing=()
for t in mm-delay mm-link mm-loss; do
  command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "mahimahi_run.sh: Mahimahi is not installed (missing: ${missing[*]})." >&2
  echo "  It is not packaged in Debian 12: build it from https://github.com/ravinet/mahimahi" >&2
  echo "  (./autogen.sh && ./configure && make && sudo make install; the install makes the" >&2
  echo "  mm-* binaries setuid root, which they need). Or use: python -m jaxcc.emulate" >&2
  exit 3
fi
for t in ip runuser sysctl iperf3; do
  if ! command -v "$t" >/dev/null 2>&1; then
    pkg=$t; [ "$t" = ip ] && pkg=iproute2; [ "$t" = runuser ] && pkg=util-linux
    [ "$t" = sysctl ] && pkg=procps
    echo "mahimahi_run.sh: '$t' not found: apt-get install $pkg" >&2
    exit 3
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "mahimahi_run.sh: run as root (it creates a namespace and drops to --user for Mahimahi)" >&2
  exit 2
fi
if ! id "$MM_USER" >/dev/null 2>&1 || [ "$(id -u "$MM_USER")" -eq 0 ]; then
  echo "mahimahi_run.sh: --user=$MM_USER must be an existing non-root user (Mahimahi refuses root)" >&2
  exit 2
fi
SENDER="$REPO/datapath/build/jaxcc-sender"
RECEIVER="$REPO/datapath/build/jaxcc-receiver"

# ---- plan: trace file + per-flow parameters
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PLAN_ARGS=("${SCEN_ARGS[@]}")
[ -n "$CONTROLLER" ] && PLAN_ARGS+=("--controller=$CONTROLLER")
(cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-plan="$OUT" "${PLAN_ARGS[@]}") >/dev/null
# shellcheck disable=SC1091
source "$OUT/plan.sh"
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"
  if [[ "${!c}" != kernel:* ]] && { [ ! -x "$SENDER" ] || [ ! -x "$RECEIVER" ]; }; then
    echo "mahimahi_run.sh: ${!c} needs $SENDER and $RECEIVER: run datapath/build.sh" >&2
    exit 3
  fi
done

# Mahimahi runs the senders as $MM_USER, and an unprivileged socket may only pick a congestion
# control listed in net.ipv4.tcp_allowed_congestion_control (a host-wide setting we do not
# change behind the user's back).
ALLOWED=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null || echo "")
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"
  if [[ "${!c}" == kernel:* ]] && [[ " $ALLOWED " != *" ${!c#kernel:} "* ]]; then
    echo "mahimahi_run.sh: ${!c} as user $MM_USER needs '${!c#kernel:}' in" \
         "net.ipv4.tcp_allowed_congestion_control (now: $ALLOWED); e.g." \
         "sysctl -w net.ipv4.tcp_allowed_congestion_control='$ALLOWED ${!c#kernel:}'" >&2
    exit 2
  fi
done

NS="jxm$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PIDS=()
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { if [ "$DRY" = 1 ]; then echo "+ $*"; else "$@"; fi; }

run ip netns add "$NS"
run ip netns exec "$NS" ip link set lo up
run ip netns exec "$NS" sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.ipv4.ip_forward=1 >/dev/null || true   # Mahimahi checks the host value too

# the outputs and the trace must be readable/writable by the Mahimahi user
chmod a+rx "$OUT"
mkdir -p "$OUT/mm"; chmod a+rwx "$OUT/mm"      # mm-link's own packet log
chmod a+r "$TRACE" 2>/dev/null || true

# ---- receivers, outside the link, in our namespace
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"; s="FLOW${i}_START"; d="FLOW${i}_DUR"
  mkdir -p "$OUT/flow$i"; chmod a+rwx "$OUT/flow$i"
  if [[ "${!c}" == kernel:* ]]; then
    run ip netns exec "$NS" iperf3 -s -1 -p $((5201 + i)) -J --logfile "$OUT/flow$i/iperf3_server.json" &
  else
    rdur=$(awk "BEGIN{print ${!s} + ${!d} + 6}")
    run ip netns exec "$NS" "$RECEIVER" --port=$((9000 + i)) --bind=0.0.0.0 --duration="$rdur" \
      --log="$OUT/flow$i/receiver.csv" --summary="$OUT/flow$i/receiver.json" \
      2>"$OUT/flow$i/receiver.stderr" &
  fi
  PIDS+=($!)
done
sleep 0.5

# ---- one script run by the mm-link shell: a per-flow mm-delay shell for each sender
INNER="$OUT/inner.sh"
{
  echo '#!/bin/sh'
  echo '# generated by launch/mahimahi_run.sh; runs inside mm-link (and mm-loss)'
  echo 'DEST=${MAHIMAHI_BASE:?not inside a Mahimahi shell}'
  for ((i = 0; i < NFLOWS; i++)); do
    c="FLOW${i}_CTRL"; s="FLOW${i}_START"; d="FLOW${i}_DUR"; dl="FLOW${i}_DELAY_MS"
    delay=$(printf '%.0f' "${!dl}")   # mm-delay takes whole milliseconds
    f="$OUT/flow$i"
    if [[ "${!c}" == kernel:* ]]; then
      cmd="sleep ${!s}; iperf3 -c \$DEST -p $((5201 + i)) -t ${!d} -C ${!c#kernel:} -i 0.1 -J --logfile $f/iperf3_client.json"
    else
      cmd="$SENDER --controller='${!c}' --dest=\$DEST --port=$((9000 + i)) --flow-id=$i --duration=${!d} --start-delay=${!s} --drain=1.0 --log=$f/sender.csv --summary=$f/sender.json 2>$f/sender.stderr"
    fi
    echo "( mm-delay $delay sh -c \"$cmd\"; echo \$? > $f/client_rc ) &"
  done
  echo 'wait'
} >"$INNER"
chmod a+rx "$INNER"

LOSS_WRAP=()
if awk "BEGIN{exit !($LOSS > 0)}"; then LOSS_WRAP=(mm-loss uplink "$LOSS"); fi
QARGS=(--uplink-queue=droptail --uplink-queue-args="bytes=$BUFFER_BYTES"
       --downlink-queue=droptail --downlink-queue-args="bytes=$BUFFER_BYTES")
echo "mahimahi_run.sh: $NS: mm-link $TRACE (x2) buffer ${BUFFER_BYTES}B loss $LOSS, $NFLOWS flow(s)" >&2
run ip netns exec "$NS" runuser -u "$MM_USER" -- \
  mm-link "$TRACE" "$TRACE" "${QARGS[@]}" --uplink-log="$OUT/mm/uplink.log" -- \
  "${LOSS_WRAP[@]}" "$INNER"

# receivers stop on their own (iperf3 -s -1 after its test, jaxcc-receiver after --duration)
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()
[ "$DRY" = 1 ] && exit 0
(cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-collect="$OUT")
