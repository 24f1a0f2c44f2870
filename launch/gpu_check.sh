#!/usr/bin/env bash
# One command that measures jaxcc on an accelerator and writes the tables as JSON, in about
# 8 minutes on one GPU:
#   launch/gpu_check.sh [OUT_DIR]        # default results/gpu_check
# Writes OUT_DIR/device.json (what JAX sees), bench_sim.json (the bare network model),
# bench_env.json (the Aurora environment's step, features and reward included; both from
# 1 to 1,048,576 links, with the 1 Mbit/s and 1 Gbit/s rows that show the cost flat in the link
# rate), bench_train.json (the five algorithms' training loops at 1,024 and 16,384 links;
# train_CONFIG.json each) and summary.json (each step's exit status and seconds).  Each step has its
# own time limit (below), so one slow or failing step costs only its own table, and a step stopped
# at its limit keeps the sizes it finished ("complete": false); the exit status is 0 only when
# every step finished.  Every training size compiles afresh (14-31 s each on an H200), so the
# training limit is sized for two sizes.
# Overrides: SIM_SIZES, ENV_SIZES, TRAIN_SIZES (comma-separated link counts), DECISIONS (per
# timed call), LIMIT_SIM_S, LIMIT_ENV_S (80, 100) and LIMIT_TRAIN_S (70, per algorithm) seconds, JAXCC_PYTHON (the
# interpreter; default python3).  jaxcc must be importable by it (installed, or PYTHONPATH=.).
set -uo pipefail
PY="${JAXCC_PYTHON:-python3}"
case "$PY" in */*) [[ "$PY" == /* ]] || PY="$PWD/$PY" ;; esac  # before the cd below
OUT="${1:-results/gpu_check}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
SIM_SIZES="${SIM_SIZES:-1,256,4096,65536,262144,1048576}"
ENV_SIZES="${ENV_SIZES:-1,256,4096,16384,65536,262144,1048576}"
TRAIN_SIZES="${TRAIN_SIZES:-1024,16384}"
DECISIONS="${DECISIONS:-100}"
export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"

"$PY" - "$OUT/device.json" <<'EOF' || exit 2
import json, platform, sys
import jax
d = jax.devices()
info = {"platform": d[0].platform, "device_kind": d[0].device_kind, "device_count": len(d),
        "jax": jax.__version__, "python": platform.python_version(), "host": platform.node()}
json.dump(info, open(sys.argv[1], "w"), indent=1)
print("[gpu_check]", json.dumps(info))
EOF

declare -A RC SECS
step() {  # step NAME LIMIT_S ARGS...: one jaxcc.bench run under its own time limit
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "[gpu_check] $name (limit ${limit} s): $PY -m jaxcc.bench $*"
  timeout --kill-after=10 "$limit" "$PY" -m jaxcc.bench "$@" > "$OUT/$name.log" 2>&1
  RC[$name]=$?
  SECS[$name]=$((SECONDS - t0))
  tail -n 15 "$OUT/$name.log"
  echo "[gpu_check] $name: exit ${RC[$name]} after ${SECS[$name]} s"
}
step bench_sim "${LIMIT_SIM_S:-80}" --mode=sim --sizes="$SIM_SIZES" --decisions="$DECISIONS" --out="$OUT/bench_sim.json"
step bench_env "${LIMIT_ENV_S:-100}" --mode=env --sizes="$ENV_SIZES" --decisions="$DECISIONS" --out="$OUT/bench_env.json"
TRAIN=(aurora_smoke eagle_smoke pareto_smoke mocc_smoke deepcc_smoke)  # jaxcc.bench's --train=all
for c in "${TRAIN[@]}"; do
  sizes="$TRAIN_SIZES"
  if [ "$c" = eagle_smoke ]; then  # CEM takes its episodes in batches of 5: each size rounded up to a multiple
    sizes=$(IFS=,; for n in $TRAIN_SIZES; do printf '%s,' $(( (n + 4) / 5 * 5 )); done); sizes=${sizes%,}
  fi
  step "train_$c" "${LIMIT_TRAIN_S:-70}" --train="$c" --sizes="$sizes" --out="$OUT/train_$c.json"
done

# The training rows of every algorithm in one table, and summary.json: per step, its exit status
# (124: stopped at its limit), its seconds and whether its JSON was written (a simulator table
# stopped at its limit keeps the sizes it finished, with "complete": false).
STEPS=(bench_sim bench_env); for c in "${TRAIN[@]}"; do STEPS+=("train_$c"); done
for n in "${STEPS[@]}"; do echo "$n ${RC[$n]} ${SECS[$n]}"; done > "$OUT/steps.txt"
"$PY" - "$OUT" "${TRAIN[@]}" <<'EOF'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
rows, meta = [], {}
for n in names:
    p = os.path.join(out, f"train_{n}.json")
    if os.path.exists(p):
        d = json.load(open(p))
        rows += d["rows"]
        meta = {k: d[k] for k in ("device", "backend", "jax", "updates")}
json.dump({"rows": rows, **meta}, open(os.path.join(out, "bench_train.json"), "w"), indent=1)
summary, ok = {}, True
for line in open(os.path.join(out, "steps.txt")):
    name, rc, secs = line.split()
    p = os.path.join(out, f"{name}.json")
    written = os.path.exists(p) and os.path.getsize(p) > 0
    complete = written and json.load(open(p)).get("complete", True)  # False: stopped with some sizes kept
    summary[name] = {"exit": int(rc), "seconds": int(secs), "written": written, "complete": complete}
    ok = ok and complete and rc == "0"
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(json.dumps(summary, indent=1))
sys.exit(0 if ok else 1)
EOF
