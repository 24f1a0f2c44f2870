#!/usr/bin/env bash
# Run a jaxcc scenario through Mahimahi (mm-delay / mm-loss / mm-link) instead of the netns+tc
# emulation of `python -m jaxcc.emulate`. Same scenario spec, same senders, same results.json.
#
#   launch/mahimahi_run.sh (--scenario=NAME | --scenario-file=spec.json) \
#       [--controller=policy:FILE|bbr|fixed:MBPS|kernel:cubic|kernel:bbr[,...]] --out=DIR \
#       [--user=USER] [--downlink=ack|same|TRACE] [--nice=N] [--dry-run]
#
#   --controller a comma list, as jaxcc.evaluate and jaxcc.emulate take: one Mahimahi run per
#                controller (in DIR/runs/K, every one planned and checked before the first
#                starts), their records in one DIR/results.json. Default: the flows' own.
#   --user       the unprivileged user Mahimahi runs as (default $SUDO_USER, else nobody)
#   --downlink   the link's return direction (ACKs): "ack" (default) a fixed 10-packet-per-ms
#                trace (120 Mbit/s of 1500-byte packets, ~160k ACKs/s) so the ACK path is
#                never the bottleneck, as in jaxcc.emulate's netns link and in the simulator;
#                "same" the uplink trace (`mm-link T T`); or a trace file (e.g. the .down
#                companion of a cellular .up trace).
#   --nice       nice value of Mahimahi, senders and receivers (default -10, as jaxcc.emulate;
#                an unprivileged process keeps the value it inherits; 0 leaves it as is)
#   --dry-run    plan, check and print the Mahimahi command lines without running them
#   --sender-args-file F  extra jaxcc-sender arguments, one per line, for every policy:FILE flow
#                (fine-tuning: --learner=unix:/abs/path --learner-timeout-s=S --fallback=keep|bbr;
#                the Mahimahi user must be able to connect to that socket)
#
# JAXCC_PYTHON (environment): the Python interpreter that plans, collects and merges the runs
# (`$JAXCC_PYTHON -m jaxcc.emulate --mahimahi-*`); default: python3 from root's PATH. It runs as
# root only, never as --user (that user runs Mahimahi, jaxcc-sender and iperf3, no Python). sudo
# drops the caller's environment, so name a virtual environment's on the command line:
#   sudo JAXCC_PYTHON=.venv/bin/python launch/mahimahi_run.sh ...   (a relative path is the caller's)
#
# How (see README "Mahimahi", and setup/install_mahimahi.sh to build and install it):
#  * Everything runs inside a fresh network namespace (jxm<hex>) that this script creates and
#    deletes, so all traffic stays on this machine. The receivers (jaxcc-receiver, iperf3 -s)
#    listen there on 0.0.0.0; senders run inside the Mahimahi shells and send to the outer
#    end of the link ($MAHIMAHI_BASE, set by the outermost shell).
#  * Mahimahi refuses to run as root and needs setuid-root binaries (its `make install`), so
#    the shells run as an unprivileged user (runuser), with net.ipv4.ip_forward=1. That user
#    must be able to read the binaries, the policy file and the traces (checked up front).
#    JAXCC_DATAPATH_BUILD names the folder of jaxcc-sender and jaxcc-receiver (default
#    datapath/build), e.g. a copy that user can reach when the checkout itself is private.
#  * Link: `mm-link UP DOWN` with *droptail byte buffers on both directions*: mm-link's
#    default queue is unbounded, which would hide every loss and inflate every delay.
#    Constant rates and schedules are written as traces (jaxcc.emulate --mahimahi-plan);
#    trace scenarios use their trace file directly as UP (mm-link loops it, as the simulator
#    does).
#  * Random loss: `mm-loss uplink L` inside mm-link (loss before the bottleneck queue, as in the
#    netns harness). Propagation delay: one `mm-delay RTT/2` per flow inside the shared link,
#    so flows with different RTTs share one bottleneck. mm-delay takes whole milliseconds.
# Exit status: 0 ok, 2 bad usage, 3 Mahimahi (or another tool) missing or unusable,
# 4 a sender failed or a flow delivered nothing, 5 Mahimahi failed, other: the run failed.
# A run that failed writes no results.json (and a controller list stops at its first failure).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac
export JAXCC_PYTHON="$PY"   # the one-controller runs of a list (this script again) use it too
SCEN_ARGS=()
CONTROLLER=""
OUT=""
MM_USER="${SUDO_USER:-nobody}"
DOWNLINK=ack
DRY=0
SENDER_ARGS_FILE=""
SENDER_EXTRA=()
NICE=-10
ACK_TRACE_PER_MS=10
# a relative path given by the caller is relative to the caller's directory, not the repo's
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
for arg in "$@"; do
  case "$arg" in
    --scenario=*) SCEN_ARGS+=("$arg") ;;
    --scenario-file=*) SCEN_ARGS+=("--scenario-file=$(abspath "${arg#*=}")") ;;
    --controller=*) CONTROLLER="${arg#*=}" ;;
    --out=*) OUT="${arg#*=}" ;;
    --user=*) MM_USER="${arg#*=}" ;;
    --downlink=*) DOWNLINK="${arg#*=}" ;;
    --nice=*) NICE="${arg#*=}" ;;
    --dry-run) DRY=1 ;;
    --sender-args-file=*) SENDER_ARGS_FILE=$(abspath "${arg#*=}") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "mahimahi_run.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [ ${#SCEN_ARGS[@]} -ne 1 ] || [ -z "$OUT" ]; then
  echo "usage: $0 (--scenario=NAME|--scenario-file=F) [--controller=C] --out=DIR" \
       "[--user=U] [--downlink=ack|same|TRACE] [--nice=N] [--dry-run]" >&2
  exit 2
fi
if [ -n "$SENDER_ARGS_FILE" ]; then
  [ -r "$SENDER_ARGS_FILE" ] || { echo "mahimahi_run.sh: --sender-args-file=$SENDER_ARGS_FILE not readable" >&2; exit 2; }
  mapfile -t SENDER_EXTRA <"$SENDER_ARGS_FILE"
fi
if ! [[ "$NICE" =~ ^-?[0-9]+$ ]]; then
  echo "mahimahi_run.sh: --nice=$NICE is not an integer" >&2
  exit 2
fi
# the controller list; policy paths are relative to the caller's directory
CTRLS=()
if [ -n "$CONTROLLER" ]; then
  IFS=',' read -r -a _raw <<<"$CONTROLLER"
  for c in "${_raw[@]}"; do
    if [ -z "$c" ]; then
      echo "mahimahi_run.sh: --controller=$CONTROLLER has an empty entry" >&2
      exit 2
    fi
    case "$c" in policy:*) c="policy:$(abspath "${c#policy:}")" ;; esac
    CTRLS+=("$c")
  done
  [[ "$CONTROLLER" == *, ]] && { echo "mahimahi_run.sh: --controller=$CONTROLLER has an empty entry" >&2; exit 2; }
fi
case "$DOWNLINK" in
  ack|same) ;;
  *) DOWNLINK=$(abspath "$DOWNLINK")
     [ -r "$DOWNLINK" ] || { echo "mahimahi_run.sh: --downlink trace $DOWNLINK not readable" >&2; exit 2; } ;;
esac

# ---- what is needed, and where it comes from
HOW_TO_INSTALL="  Mahimahi is not packaged in Debian 12: build it from https://github.com/ravinet/mahimahi
  with setup/install_mahimahi.sh (as root; its 'make install' makes the mm-* tools setuid
  root, which they need). Or use the netns emulation instead: python -m jaxcc.emulate"
missing=()
for t in mm-delay mm-link mm-loss; do
  command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "mahimahi_run.sh: Mahimahi is not installed (not found in PATH: ${missing[*]})." >&2
  echo "$HOW_TO_INSTALL" >&2
  exit 3
fi
MM_DELAY=$(command -v mm-delay); MM_LINK=$(command -v mm-link); MM_LOSS=$(command -v mm-loss)
notsuid=()
for t in "$MM_DELAY" "$MM_LINK" "$MM_LOSS"; do
  # they must be owned by root with the setuid bit, or they cannot build their namespaces
  if [ ! -u "$t" ] || [ "$(stat -c %u "$t")" != 0 ]; then notsuid+=("$t"); fi
done
if [ ${#notsuid[@]} -gt 0 ]; then
  echo "mahimahi_run.sh: Mahimahi is installed but not setuid root: ${notsuid[*]}." >&2
  echo "  Fix: chown root:root ${notsuid[*]} && chmod 4755 ${notsuid[*]}" \
       "(what Mahimahi's 'make install' does as root)" >&2
  exit 3
fi
for t in ip runuser sysctl; do
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
DATAPATH_BUILD=${JAXCC_DATAPATH_BUILD:-$REPO/datapath/build}
SENDER="$DATAPATH_BUILD/jaxcc-sender"
RECEIVER="$DATAPATH_BUILD/jaxcc-receiver"

# ---- a controller list: one run of this script per controller, then one results.json
if [ ${#CTRLS[@]} -gt 1 ]; then
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  [ "$DRY" = 1 ] || rm -f "$OUT/results.json"
  RUN_DIRS=()
  for k in "${!CTRLS[@]}"; do   # plan (and so check) every controller before any run starts
    RUN_DIRS+=("$OUT/runs/$k")
    if ! (cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-plan="${RUN_DIRS[$k]}" "${SCEN_ARGS[@]}" \
            "--controller=${CTRLS[$k]}") >/dev/null; then
      echo "mahimahi_run.sh: could not plan controller ${CTRLS[$k]} (message above); nothing was run" >&2
      exit 2
    fi
  done
  CHILD_ARGS=(--user="$MM_USER" --downlink="$DOWNLINK" --nice="$NICE")
  [ "$DRY" = 1 ] && CHILD_ARGS+=(--dry-run)
  [ -n "$SENDER_ARGS_FILE" ] && CHILD_ARGS+=("--sender-args-file=$SENDER_ARGS_FILE")
  for k in "${!CTRLS[@]}"; do
    echo "mahimahi_run.sh: controller ${CTRLS[$k]} -> ${RUN_DIRS[$k]}" >&2
    rc=0
    bash "$REPO/launch/mahimahi_run.sh" "${SCEN_ARGS[@]}" "--controller=${CTRLS[$k]}" \
      --out="${RUN_DIRS[$k]}" "${CHILD_ARGS[@]}" || rc=$?
    if [ "$rc" != 0 ]; then
      echo "mahimahi_run.sh: the run of ${CTRLS[$k]} failed (status $rc); no $OUT/results.json" >&2
      exit "$rc"
    fi
  done
  [ "$DRY" = 1 ] && exit 0
  (cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-merge="$(IFS=,; echo "$OUT,${RUN_DIRS[*]}")")
  exit 0
fi

# ---- plan: trace file + per-flow parameters
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ "$DRY" = 1 ] || rm -f "$OUT/results.json"   # never leave an earlier run's results beside a failed one
PLAN_ARGS=("${SCEN_ARGS[@]}")
[ ${#CTRLS[@]} -eq 1 ] && PLAN_ARGS+=("--controller=${CTRLS[0]}")
if ! (cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-plan="$OUT" "${PLAN_ARGS[@]}") >/dev/null; then
  echo "mahimahi_run.sh: could not plan the run (message above)" >&2
  exit 2
fi
# shellcheck disable=SC1091
source "$OUT/plan.sh"
need_iperf3=0
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"
  if [[ "${!c}" == kernel:* ]]; then
    need_iperf3=1
  elif [ ! -x "$SENDER" ] || [ ! -x "$RECEIVER" ]; then
    echo "mahimahi_run.sh: ${!c} needs $SENDER and $RECEIVER: run datapath/build.sh" >&2
    exit 3
  fi
done
if [ "$need_iperf3" = 1 ] && ! command -v iperf3 >/dev/null 2>&1; then
  echo "mahimahi_run.sh: kernel:* flows need 'iperf3': apt-get install iperf3" >&2
  exit 3
fi

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

# ---- the ACK direction
case "$DOWNLINK" in
  ack) DOWN_TRACE="$OUT/ack.trace"; for ((k = 0; k < ACK_TRACE_PER_MS; k++)); do echo 1; done >"$DOWN_TRACE" ;;
  same) DOWN_TRACE="$TRACE" ;;
  *) DOWN_TRACE="$DOWNLINK" ;;
esac

# ---- the outputs and inputs must be writable/readable by the Mahimahi user
chmod a+rx "$OUT"
mkdir -p "$OUT/mm"; chmod a+rwx "$OUT/mm"      # mm-link's own packet log
chmod a+r "$OUT"/*.trace 2>/dev/null || true
for ((i = 0; i < NFLOWS; i++)); do mkdir -p "$OUT/flow$i"; chmod a+rwx "$OUT/flow$i"; done
as_user() { runuser -u "$MM_USER" -- "$@"; }
unreadable=()
for f in "$TRACE" "$DOWN_TRACE"; do as_user test -r "$f" || unreadable+=("$f (read)"); done
for t in "$MM_DELAY" "$MM_LINK" "$MM_LOSS"; do as_user test -x "$t" || unreadable+=("$t (run)"); done
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"
  as_user test -w "$OUT/flow$i" || unreadable+=("$OUT/flow$i (write)")
  [[ "${!c}" == kernel:* ]] && continue
  as_user test -x "$SENDER" || unreadable+=("$SENDER (run)")
  if [[ "${!c}" == policy:* ]]; then
    as_user test -r "${!c#policy:}" || unreadable+=("${!c#policy:} (read)")
  fi
done
if [ ${#unreadable[@]} -gt 0 ]; then
  echo "mahimahi_run.sh: user $MM_USER cannot use: ${unreadable[*]}" >&2
  echo "  (every folder above them needs o+x; or pick a --user that can, or move the files)" >&2
  exit 3
fi

NS="jxm$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PIDS=()
MM_PID=""
cleanup() {
  set +e
  # Mahimahi's shells live in namespaces of their own, below ours (`ip netns pids` does not
  # see them), but in the process group setsid gave mm-link: stop that whole group, first
  # gently (mm-link takes its shells down, senders write their summaries), then for good.
  if [ -n "$MM_PID" ] && kill -0 -- "-$MM_PID" 2>/dev/null; then
    kill -TERM -- "-$MM_PID" 2>/dev/null
    for _ in $(seq 30); do kill -0 -- "-$MM_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$MM_PID" 2>/dev/null
  fi
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run() { if [ "$DRY" = 1 ]; then echo "+ $*"; else "$@"; fi; }
# in the background, in this shell: $! is then the program itself (nice and ip netns exec exec)
run_bg() { if [ "$DRY" = 1 ]; then echo "+ $* &"; true & else "$@" & fi; }
NICE_CMD=(); [ "$NICE" != 0 ] && NICE_CMD=(nice -n "$NICE")

run ip netns add "$NS"
run ip netns exec "$NS" ip link set lo up
run ip netns exec "$NS" sysctl -qw net.ipv4.ip_forward=1
if [ "$DRY" = 0 ] && [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then
  # Mahimahi checks the value it sees (the host's); ours is set inside the namespace only
  if ! sysctl -qw net.ipv4.ip_forward=1 >/dev/null; then
    echo "mahimahi_run.sh: Mahimahi needs net.ipv4.ip_forward=1 and it could not be set" >&2
    exit 3
  fi
fi

# ---- receivers, outside the link, in our namespace
UDP_RECEIVERS=()
for ((i = 0; i < NFLOWS; i++)); do
  c="FLOW${i}_CTRL"; s="FLOW${i}_START"; d="FLOW${i}_DUR"
  if [[ "${!c}" == kernel:* ]]; then
    run_bg "${NICE_CMD[@]}" ip netns exec "$NS" iperf3 -s -1 -p $((5201 + i)) -J \
      --logfile "$OUT/flow$i/iperf3_server.json"
  else
    rdur=$(awk "BEGIN{print ${!s} + ${!d} + 6}")
    run_bg "${NICE_CMD[@]}" ip netns exec "$NS" "$RECEIVER" --port=$((9000 + i)) --bind=0.0.0.0 \
      --duration="$rdur" --log="$OUT/flow$i/receiver.csv" --summary="$OUT/flow$i/receiver.json" \
      2>"$OUT/flow$i/receiver.stderr"
  fi
  PIDS+=($!)
  [[ "${!c}" == kernel:* ]] || UDP_RECEIVERS+=($!)
done
sleep 0.5

# ---- per flow: a script run inside its own mm-delay shell (inside the shared link), and one
# script, run by the mm-link (+ mm-loss) shell, that starts them all. Every word is quoted with
# printf %q (bash scripts), so paths and controller strings with spaces survive.
INNER="$OUT/inner.sh"
{
  echo '#!/bin/bash'
  echo '# generated by launch/mahimahi_run.sh; runs inside mm-link (and mm-loss)'
  echo ': "${MAHIMAHI_BASE:?not inside a Mahimahi shell}"'
  for ((i = 0; i < NFLOWS; i++)); do
    c="FLOW${i}_CTRL"; s="FLOW${i}_START"; d="FLOW${i}_DUR"; dl="FLOW${i}_DELAY_MS"
    delay=$(printf '%.0f' "${!dl}")   # mm-delay takes whole milliseconds
    if [ "$(awk "BEGIN{print (${!dl} != $delay)}")" = 1 ]; then
      echo "mahimahi_run.sh: flow $i: one-way delay ${!dl} ms rounded to $delay ms (mm-delay)" >&2
    fi
    f="$OUT/flow$i"
    if [[ "${!c}" == kernel:* ]]; then
      cmd=(iperf3 -c '$DEST' -p $((5201 + i)) -t "${!d}" -C "${!c#kernel:}" -i 0.1 -J
           --logfile "$f/iperf3_client.json")
    else
      # as jaxcc.emulate runs it; --rtt-hint-ms: the path RTT (as mm-delay makes it) that a
      # policy assumes before its first sample, as the simulator's senders know the link's
      cmd=("$SENDER" "--controller=${!c}" '--dest=$DEST' --port=$((9000 + i)) --flow-id=$i
           --duration="${!d}" --start-delay="${!s}" --drain=1.0 --rtt-hint-ms=$((2 * delay))
           --log="$f/sender.csv" --summary="$f/sender.json")
      if [[ "${!c}" == policy:* ]]; then cmd+=("${SENDER_EXTRA[@]}"); fi
    fi
    {
      echo '#!/bin/bash'
      echo "# flow $i, run by mm-delay $delay inside the link; \$1: the receiver's address"
      echo 'DEST=$1'
      [[ "${!c}" == kernel:* ]] && echo "sleep ${!s}"
      line=$(printf '%q ' "${cmd[@]}")
      echo "${line//\\\$DEST/\"\$DEST\"} 2>$(printf '%q' "$f/sender.stderr")"
    } >"$f/client.sh"
    chmod a+rx "$f/client.sh"
    printf '( %q %q %q "$MAHIMAHI_BASE"; echo $? > %q ) &\n' \
      "$MM_DELAY" "$delay" "$f/client.sh" "$f/client_rc"
  done
  echo 'wait'
} >"$INNER"
chmod a+rx "$INNER"

LOSS_WRAP=()
if awk "BEGIN{exit !($LOSS > 0)}"; then LOSS_WRAP=("$MM_LOSS" uplink "$LOSS"); fi
QARGS=(--uplink-queue=droptail --uplink-queue-args="bytes=$BUFFER_BYTES"
       --downlink-queue=droptail --downlink-queue-args="bytes=$BUFFER_BYTES")
echo "mahimahi_run.sh: $NS: mm-link $TRACE (down: $DOWN_TRACE) buffer ${BUFFER_BYTES}B" \
     "loss $LOSS, $NFLOWS flow(s), as $MM_USER" >&2
[ "$DRY" = 1 ] && { echo "# $INNER:"; sed 's/^/#   /' "$INNER"; }
# in the background + wait, so that SIGINT/SIGTERM reach our trap (and the cleanup) at once;
# setsid: Mahimahi and everything it starts form one process group (for the cleanup)
run_bg setsid "${NICE_CMD[@]}" ip netns exec "$NS" runuser -u "$MM_USER" -- \
  "$MM_LINK" "$TRACE" "$DOWN_TRACE" "${QARGS[@]}" --uplink-log="$OUT/mm/uplink.log" -- \
  "${LOSS_WRAP[@]}" "$INNER"
MM_PID=$!
[ "$DRY" = 1 ] && MM_PID=""
mm_rc=0
wait "$!" || mm_rc=$?
if [ "$mm_rc" != 0 ]; then
  echo "mahimahi_run.sh: mm-link exited with status $mm_rc (its message is above)" >&2
  exit 5
fi

# The link is gone once every sender has finished (including its --drain for the last ACKs):
# stop the jaxcc receivers (they write their summary on SIGTERM; --duration is a backstop);
# iperf3 -s -1 stops after its test.
if [ "$DRY" = 0 ]; then
  sleep 0.5
  for p in "${UDP_RECEIVERS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
fi
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()
[ "$DRY" = 1 ] && exit 0
failed=()
for ((i = 0; i < NFLOWS; i++)); do
  rc=$(cat "$OUT/flow$i/client_rc" 2>/dev/null || echo none)
  [ "$rc" = 0 ] || failed+=("flow $i: exit $rc, see $OUT/flow$i/sender.stderr")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "mahimahi_run.sh: sender(s) failed: ${failed[*]}; no results.json written" >&2
  exit 4
fi
# collect refuses (and writes nothing for) a flow that delivered no data
if ! (cd "$REPO" && "$PY" -m jaxcc.emulate --mahimahi-collect="$OUT"); then
  echo "mahimahi_run.sh: no results.json written (message above)" >&2
  exit 4
fi
