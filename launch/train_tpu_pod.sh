#!/usr/bin/env bash
# Train on a multi-host TPU pod slice.  Run the same command on every host, e.g.
#   gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone="$ZONE" --worker=all \
#     --command="cd jaxcc && CONFIG=pareto_staged WORKDIR=gs://BUCKET/runs/pareto launch/train_tpu_pod.sh"
# Each host calls jax.distributed.initialize() with no arguments (--distributed: the TPU runtime
# supplies the coordinator, process count and index); the 1-D 'data' mesh spans every chip of the
# slice, environments and minibatches are sharded over it, parameters (and Pareto's replay buffer)
# are replicated.  Process 0 writes the run's files (run.json, config.json, metrics.jsonl, wandb,
# summary.json, exported policies); every host takes part in orbax's checkpoint saves (each writes
# the shards it holds) and restores, so WORKDIR must be storage every host sees: a gs:// bucket
# (used as is, through etils.epath/gcsfs and tensorstore's gcs driver) or a shared disk.  Running
# the same command again resumes from the last checkpoint.  The same code path runs on one machine
# with launch/multihost_local.sh (tests/test_multihost.py).
# Needs `pip install -e '.[tpu]'` (gcsfs included).  NUM_ENVS must be a multiple of the global chip
# count.  BATCH and GRAD_STEPS apply to the Pareto configs (config.td3.*); other algorithms take
# their own --config.* overrides as extra arguments.
# JAXCC_PYTHON: the Python interpreter that runs jaxcc (default: python3 from PATH), e.g.
#   JAXCC_PYTHON=.venv/bin/python launch/train_tpu_pod.sh   (a relative path is the caller's)
set -euo pipefail
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac  # before the cd below
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-pareto_staged}"
SEED="${SEED:-0}"
WORKDIR="${WORKDIR:?set WORKDIR to storage every host can write (e.g. gs://bucket/runs/pareto)}"
args=(--distributed --config="$CONFIG" --seed="$SEED" --workdir="$WORKDIR" --no_progress
      --config.num_envs="${NUM_ENVS:-4096}")
case "$CONFIG" in
  pareto*) args+=(--config.td3.batch_size="${BATCH:-4096}" --config.td3.grad_steps="${GRAD_STEPS:-32}") ;;
esac
exec "$PY" -m jaxcc.train "${args[@]}" "$@"
