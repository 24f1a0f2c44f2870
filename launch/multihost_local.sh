#!/usr/bin/env bash
# Multi-host training on one machine: the real jax.distributed code path, with forced CPU devices.
#   launch/multihost_local.sh CONFIG PROCESSES DEVICES_PER_PROCESS WORKDIR [extra jaxcc.train flags]
#   launch/multihost_local.sh pareto_smoke 2 4 /tmp/run --config.debug_chunk_sleep_s=1
# Starts PROCESSES `$JAXCC_PYTHON -m jaxcc.train` processes on localhost, process 0's coordinator on
# a free local port, each with DEVICES_PER_PROCESS CPU devices (XLA_FLAGS=
# --xla_force_host_platform_device_count) and --coordinator_address/--num_processes/--process_id, so
# every process calls jax.distributed.initialize(...) and the 1-D 'data' mesh spans PROCESSES x
# DEVICES_PER_PROCESS devices (cross-process CPU collectives: gloo).  WORKDIR may be a URI (gs://...).
# Running the same command again resumes from the last checkpoint.
# Waits for all processes; when one fails (or is killed) the others are stopped (SIGTERM, then SIGKILL
# after $GRACE_S s) and the script exits with the first failure's status (128+signal for a signal).
# SIGINT/SIGTERM to the script are forwarded to every process.  Each process's pid is printed to stderr
# as "[multihost_local] process I pid N".
# JAXCC_PYTHON: the Python interpreter that runs jaxcc (default: python3 from PATH), e.g.
#   JAXCC_PYTHON=.venv/bin/python launch/multihost_local.sh ...   (a relative path is the caller's)
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 CONFIG PROCESSES DEVICES_PER_PROCESS WORKDIR [extra jaxcc.train flags]" >&2
  exit 2
fi
CONFIG="$1"; NPROC="$2"; NDEV="$3"; WORKDIR="$4"; shift 4
if ! [[ "$NPROC" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: PROCESSES=$NPROC: must be a positive integer" >&2; exit 2
fi
if ! [[ "$NDEV" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: DEVICES_PER_PROCESS=$NDEV: must be a positive integer" >&2; exit 2
fi
GRACE_S="${GRACE_S:-10}"
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac  # before the cd below
case "$WORKDIR" in  # a relative WORKDIR is the caller's, not the repository's (the cd below)
  *://* | /*) ;;
  *) WORKDIR="$PWD/$WORKDIR" ;;
esac
cd "$(dirname "$0")/.."
PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

pids=()
killer=""
stop_all() {  # $1: signal
  for p in "${pids[@]}"; do kill "-$1" "$p" 2>/dev/null || true; done
}
# SIGTERM (or $1), then SIGKILL after GRACE_S: jax.distributed catches SIGTERM (its preemption
# notifier logs "SIGTERM caught" and the process goes on), and a process whose peer died is stuck in
# a collective, so only SIGKILL is sure to end it.
stop_with_grace() {
  stop_all "$1"
  if [ -z "$killer" ]; then
    ( sleep "$GRACE_S"; stop_all KILL ) </dev/null >/dev/null 2>&1 &
    killer=$!
  fi
}
on_signal() {
  echo "[multihost_local] SIG$1: forwarding to every process" >&2
  stop_with_grace "$1"
  wait "${pids[@]}" 2>/dev/null || true
  if [ -n "$killer" ]; then kill "$killer" 2>/dev/null || true; fi
  exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT

for ((i = 0; i < NPROC; i++)); do
  JAX_PLATFORMS=cpu XLA_FLAGS="--xla_force_host_platform_device_count=$NDEV ${XLA_FLAGS:-}" \
    "$PY" -m jaxcc.train --config="$CONFIG" --workdir="$WORKDIR" --no_progress \
      --coordinator_address="127.0.0.1:$PORT" --num_processes="$NPROC" --process_id="$i" "$@" &
  pids+=($!)
  echo "[multihost_local] process $i pid $! (coordinator 127.0.0.1:$PORT)" >&2
done

status=0
running=("${pids[@]}")
while ((${#running[@]} > 0)); do
  done_pid=""
  set +e
  wait -n -p done_pid "${running[@]}" 2>/dev/null
  rc=$?
  set -e
  if [ -z "${done_pid:-}" ]; then break; fi  # the rest were already reaped (killed together)
  left=()
  for p in "${running[@]}"; do [ "$p" = "$done_pid" ] || left+=("$p"); done
  running=("${left[@]}")
  if ((rc != 0)) && ((status == 0)); then
    status=$rc
    echo "[multihost_local] pid $done_pid exited with status $rc; stopping the other processes" >&2
    stop_with_grace TERM
  fi
done
if [ -n "$killer" ]; then kill "$killer" 2>/dev/null || true; fi
exit "$status"
