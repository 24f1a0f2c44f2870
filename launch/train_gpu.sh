#!/usr/bin/env bash
# Train on the GPUs of one host (environments and minibatches are sharded over all of them).
#   launch/train_gpu.sh                                       # pareto_staged, scaled up
#   CONFIG=aurora SEED=1 WORKDIR=gs://bucket/runs/a launch/train_gpu.sh --config.ppo.lr=1e-4
# Several GPU hosts: run the same command on each with COORDINATOR_ADDRESS=host0:port,
# NUM_PROCESSES=N and PROCESS_ID=i (jax.distributed.initialize with these values), or with
# DISTRIBUTED=1 under SLURM / Open MPI (auto-detection); WORKDIR must then be storage every host
# sees (a gs:// bucket or a shared disk).  Needs `pip install -e '.[gpu]'` (gcsfs included for gs://).
# NUM_ENVS must be a multiple of the global GPU count.  BATCH and GRAD_STEPS apply to the Pareto
# configs (TD3: config.td3.batch_size, config.td3.grad_steps); other algorithms take their own
# --config.* overrides as extra arguments.
# JAXCC_PYTHON: the Python interpreter that runs jaxcc (default: python3 from PATH), e.g.
#   JAXCC_PYTHON=.venv/bin/python launch/train_gpu.sh   (a relative path is the caller's)
set -euo pipefail
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac  # before the cd below
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-pareto_staged}"
SEED="${SEED:-0}"
NUM_ENVS="${NUM_ENVS:-1024}"
export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
args=(--config="$CONFIG" --seed="$SEED" --config.num_envs="$NUM_ENVS")
case "$CONFIG" in
  pareto*) args+=(--config.td3.batch_size="${BATCH:-1024}" --config.td3.grad_steps="${GRAD_STEPS:-32}") ;;
esac
if [ -n "${WORKDIR:-}" ]; then args+=(--workdir="$WORKDIR"); fi
if [ -n "${COORDINATOR_ADDRESS:-}" ]; then
  args+=(--coordinator_address="$COORDINATOR_ADDRESS" --num_processes="${NUM_PROCESSES:?set NUM_PROCESSES}"
         --process_id="${PROCESS_ID:?set PROCESS_ID}" --no_progress)
elif [ "${DISTRIBUTED:-0}" = 1 ]; then
  args+=(--distributed --no_progress)
else
  "$PY" -c 'import jax; d = jax.devices(); print(f"[train_gpu] {len(d)} device(s): {d[0].platform} {d[0].device_kind}")'
fi
exec "$PY" -m jaxcc.train "${args[@]}" "$@"
