#!/bin/bash
# Fuzz the policy loader and the packet parsers with libFuzzer (clang, ASan+UBSan).
#   datapath/fuzz/run.sh            CI-short: a few seconds per target
#   datapath/fuzz/run.sh RUNS       at least RUNS inputs per target (e.g. 1000000)
# Seeds: the policy files in tests/vectors and a few valid packets. Exits nonzero on a
# crash; the reproducer is left as datapath/fuzz/crash-*.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${JAXCC_FUZZ_BUILD:-$HERE/../build-fuzz}
RUNS=${1:-}
command -v clang++ >/dev/null || { echo "fuzz: clang++ not installed (apt-get install clang)"; exit 1; }
CXX=clang++ cmake -S "$HERE/.." -B "$BUILD" -DJAXCC_FUZZ=ON -DJAXCC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target fuzz_policy fuzz_packet >/dev/null

CORPUS=$(mktemp -d)
trap 'rm -rf "$CORPUS"' EXIT
mkdir -p "$CORPUS/policy" "$CORPUS/packet"
# Small policies (datapath/fuzz/seeds, made with jaxcc.policyfile.make_random_policy at
# history 3, obs 2, hidden 4) keep each input short, so the fuzzer runs ~100x faster than
# on the full-size test vectors while covering every layer, head and action type.
cp "$HERE"/seeds/* "$CORPUS/policy/"  # includes regress_*: past crashers
# Valid packets as seeds: one data header (size 32) and one ACK (64 bytes).
printf 'JXCD\x01\x01\x00\x00\x07\x00\x00\x00\x20\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08' > "$CORPUS/packet/data"
{ printf 'JXCA\x01\x02\x00\x00\x07\x00\x00\x00\x40\x00\x00\x00'; head -c 48 /dev/zero; } > "$CORPUS/packet/ack"

cd "$HERE"
for t in policy packet; do
  if [ -n "$RUNS" ]; then LIMIT=(-runs="$RUNS"); else LIMIT=(-max_total_time=5); fi
  # -max_len: the seed policies are under 2 KB (8 KB leaves room to grow); packets <= 64 KB.
  ML=$([ $t = policy ] && echo 8192 || echo 70000)
  "$BUILD/fuzz_$t" "${LIMIT[@]}" -max_len=$ML -rss_limit_mb=2048 -print_final_stats=1 \
    "$CORPUS/$t" 2>&1 | tee "$BUILD/fuzz_$t.log" | grep -E "^(stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
  if grep -q "ERROR\|SUMMARY: .*Sanitizer\|deadly signal" "$BUILD/fuzz_$t.log"; then
    echo "fuzz_$t: FAILED (see $BUILD/fuzz_$t.log)"
    exit 1
  fi
  echo "fuzz_$t: ok"
done
