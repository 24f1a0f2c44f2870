#!/usr/bin/env bash
# Train on a multi-host TPU pod slice.  Run the same command on every host, e.g.
#   gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone="$ZONE" --worker=all \
#     --command="cd jaxcc && CONFIG=pareto_staged launch/train_tpu_pod.sh"
# Each host calls jax.distributed.initialize() (--distributed); the 1-D 'data' mesh spans every
# chip of the slice, envs and minibatches are sharded over it, parameters and the replay buffer
# are replicated.  Process 0 logs (wandb, metrics.jsonl); orbax writes the checkpoint from all
# hosts, so --workdir must be on storage every host sees (a gs:// bucket or a shared disk).
# Needs `pip install -e .[tpu]`.  num_envs must be a multiple of the global device count.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-pareto_staged}"
SEED="${SEED:-0}"
WORKDIR="${WORKDIR:?set WORKDIR to a directory every host can write (e.g. gs://bucket/runs/pareto)}"
exec python -m jaxcc.train --distributed --config="$CONFIG" --seed="$SEED" --workdir="$WORKDIR" --no_progress \
  --config.num_envs="${NUM_ENVS:-4096}" --config.td3.batch_size="${BATCH:-4096}" \
  --config.td3.grad_steps="${GRAD_STEPS:-32}" "$@"
