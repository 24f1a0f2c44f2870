#!/usr/bin/env bash
# Train on one or more GPUs of one host (envs and minibatches are sharded over all of them).
#   launch/train_gpu.sh                       # pareto_staged, scaled up
#   CONFIG=pareto_staged SEED=1 launch/train_gpu.sh --config.td3.lr_actor=1e-4
# Needs `pip install -e .[gpu]`.  num_envs must be a multiple of the GPU count.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-pareto_staged}"
SEED="${SEED:-0}"
NUM_ENVS="${NUM_ENVS:-1024}"
export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
python -c 'import jax; d = jax.devices(); print(f"[train_gpu] {len(d)} device(s): {d[0].device_kind}")'
exec python -m jaxcc.train --config="$CONFIG" --seed="$SEED" \
  --config.num_envs="$NUM_ENVS" --config.td3.batch_size="${BATCH:-1024}" --config.td3.grad_steps="${GRAD_STEPS:-32}" \
  "$@"
