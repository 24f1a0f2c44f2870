#!/bin/bash
# Fuzz the policy loader, the packet parsers and the learner link's frame reader and
# authenticated-frame verifier with libFuzzer (clang, ASan+UBSan).
#   datapath/fuzz/run.sh              = --ci
#   datapath/fuzz/run.sh --ci         CI budget (`make fuzz`): --seconds=60 for each target
#   datapath/fuzz/run.sh --seconds=S  S seconds of fuzzing per target
#   datapath/fuzz/run.sh --runs=N     exactly N inputs per target (a bare N means the same)
# Fails (exit 1) on a crash, a sanitizer report or a leak -- the reproducer is left as
# datapath/fuzz/crash-* -- and when a target executed fewer inputs than its budget implies:
# N for --runs, and for a time budget S x the target's floor rate below.  A run that executes
# only its seeds (or nothing) is a broken check, not a pass.  Bad arguments: exit 2.
# A timed run that ends below its floor without a finding goes on, on its grown corpus, for the
# inputs it lacks, within TOP_UP_FACTOR x S more seconds; the floor is judged on both runs'
# inputs together.  So a busy machine (fuzz_policy once ran 9,576 inputs in 10 s in CI against
# a 17,000 floor, about 11x below its usual rate) is not read as a broken fuzzer, and a fuzzer
# that cannot reach its floor in (1 + TOP_UP_FACTOR) x S still fails.
#
# Why 60 s per target (`make fuzz`, in `make test-full`): on 2 shared cores fuzz_policy runs
# ~1.1e4 inputs/s and fuzz_packet ~1e6/s, so 60 s is ~6e5 and ~6e7 inputs -- past the
# >= 1e5-inputs mark with room for a slower machine.  `make test` runs 10 s per target
# (`make fuzz-short`: the build and ~6e4 and ~7e6 inputs, under a minute) with the same floors.
# The three targets run at the same time (measured: ~14 % fewer inputs each than one after the
# other, in a third of the time).
# The floor rates (1.7e3/s and 1.7e4/s, about 6x and 60x below those) turn "the fuzzer ran
# but hardly executed anything" into a failure: at 60 s, >= 1.02e5 and >= 1.02e6 inputs.
# Seeds: the policy files in datapath/fuzz/seeds, a few valid packets and link frames.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${JAXCC_FUZZ_BUILD:-$HERE/../build-fuzz}
CI_SECONDS=60
# fuzz_frame (the link's frame reader, handshake parser and HMAC-SHA256 verifier) ran ~1.1e4
# inputs/s here under `nice` beside another test run (load average 4.3); its floor, 1.8e3/s, is
# about 6x below that: >= 1.8e4 inputs in 10 s, >= 1.08e5 in 60 s.
declare -A FLOOR_RATE=([policy]=1700 [packet]=17000 [frame]=1800)  # inputs/s below which a timed run fails
TOP_UP_FACTOR=5

usage_error() {
  echo "fuzz/run.sh: $1 (known: --ci, --seconds=S, --runs=N, or N)" >&2
  exit 2
}
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
[ $# -le 1 ] || usage_error "one argument at most, got $#: $*"
ARG=${1:---ci}
case "$ARG" in
  --ci) SECONDS_BUDGET=$CI_SECONDS; RUNS= ;;
  --seconds=*) SECONDS_BUDGET=${ARG#--seconds=}; RUNS=
    is_count "$SECONDS_BUDGET" || usage_error "--seconds takes a positive whole number, got '$SECONDS_BUDGET'" ;;
  --runs=*) RUNS=${ARG#--runs=}; SECONDS_BUDGET=
    is_count "$RUNS" || usage_error "--runs takes a positive whole number, got '$RUNS'" ;;
  *) is_count "$ARG" || usage_error "unknown argument '$ARG'"
    RUNS=$ARG; SECONDS_BUDGET= ;;
esac

command -v clang++ >/dev/null || { echo "fuzz: clang++ not installed (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
CXX=clang++ cmake -S "$HERE/.." -B "$BUILD" -DJAXCC_FUZZ=ON -DJAXCC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target fuzz_policy fuzz_packet fuzz_frame >/dev/null

CORPUS=$(mktemp -d)
trap 'rm -rf "$CORPUS"' EXIT
mkdir -p "$CORPUS/policy" "$CORPUS/packet" "$CORPUS/frame"
# Small policies (datapath/fuzz/seeds, made with jaxcc.policyfile.make_random_policy at
# history 3, obs 2, hidden 4) keep each input short, so the fuzzer runs ~100x faster than
# on the full-size test vectors while covering every layer, head and action type.
cp "$HERE"/seeds/* "$CORPUS/policy/"  # includes regress_*: past crashers
# Valid packets as seeds: one data header (size 32) and one ACK (64 bytes).
printf 'JXCD\x01\x01\x00\x00\x07\x00\x00\x00\x20\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08' > "$CORPUS/packet/data"
{ printf 'JXCA\x01\x02\x00\x00\x07\x00\x00\x00\x40\x00\x00\x00'; head -c 48 /dev/zero; } > "$CORPUS/packet/ack"
# Link frames as seeds: a PING, a BYE, an AUTH (protocol 2, 32-byte nonce) and a frame the size
# of a sealed PING (type, seq, 32-byte tag), back to back in one stream.
{ printf '\x01\x00\x00\x00\x06\x03\x00\x00\x00\x05{}\x22\x00\x00\x00\x07\x02'; head -c 32 /dev/zero
  printf '\x29\x00\x00\x00\x06'; head -c 40 /dev/zero; } > "$CORPUS/frame/stream"
printf '\x22\x00\x00\x00\x07\x02abcdefghijklmnopqrstuvwxyz012345' > "$CORPUS/frame/auth"

cd "$HERE"
# The three targets fuzz at the same time (libFuzzer is single-threaded; on two cores each still
# runs at 2/3 of its rate alone or more, far above its floor), then each is checked in turn.
declare -A PID FLOOR BUDGET MAX_LEN
trap 'kill "${PID[@]}" 2>/dev/null || true; rm -rf "$CORPUS"' EXIT  # a killed run takes its fuzzers with it
for t in policy packet frame; do
  if [ -n "$RUNS" ]; then
    LIMIT=(-runs="$RUNS"); FLOOR[$t]=$RUNS; BUDGET[$t]="$RUNS inputs"
  else
    LIMIT=(-max_total_time="$SECONDS_BUDGET"); FLOOR[$t]=$((SECONDS_BUDGET * FLOOR_RATE[$t])); BUDGET[$t]="${SECONDS_BUDGET} s"
  fi
  # -max_len: the seed policies are under 2 KB (8 KB leaves room to grow); packets <= 64 KB;
  # link frames 4 KB (a few frames, each through the reader, the handshake parser and two
  # HMAC checks; longer inputs only cost hashing time).
  case $t in policy) ML=8192 ;; packet) ML=70000 ;; frame) ML=4096 ;; esac
  MAX_LEN[$t]=$ML
  "$BUILD/fuzz_$t" "${LIMIT[@]}" -max_len=$ML -rss_limit_mb=2048 -print_final_stats=1 "$CORPUS/$t" >"$BUILD/fuzz_$t.log" 2>&1 &
  PID[$t]=$!
done
units() { sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)$/\1/p' "$1" | tail -n1; }
found() { grep -q "ERROR\|SUMMARY: .*Sanitizer\|deadly signal" "$1"; }
FAILED=0
for t in policy packet frame; do
  LOG=$BUILD/fuzz_$t.log
  set +e
  wait "${PID[$t]}"
  RC=$?
  set -e
  UNITS=$(units "$LOG")
  if [ $RC -eq 0 ] && [ -z "$RUNS" ] && [ -n "$UNITS" ] && [ "$UNITS" -lt "${FLOOR[$t]}" ] && ! found "$LOG"; then
    echo "fuzz_$t: $UNITS inputs in ${BUDGET[$t]}, below the floor ${FLOOR[$t]}: going on for the rest (at most $((TOP_UP_FACTOR * SECONDS_BUDGET)) s more)"
    set +e
    "$BUILD/fuzz_$t" -runs=$((FLOOR[$t] - UNITS)) -max_total_time=$((TOP_UP_FACTOR * SECONDS_BUDGET)) -max_len=${MAX_LEN[$t]} \
      -rss_limit_mb=2048 -print_final_stats=1 "$CORPUS/$t" >"$LOG.more" 2>&1
    RC=$?
    set -e
    cat "$LOG.more" >>"$LOG"
    MORE=$(units "$LOG.more")
    UNITS=$((UNITS + ${MORE:-0}))
    BUDGET[$t]="${BUDGET[$t]} and $((TOP_UP_FACTOR * SECONDS_BUDGET)) s more"
  fi
  grep -E "^(==[0-9]+==ERROR|SUMMARY)" "$LOG" || true
  if [ $RC -ne 0 ] || found "$LOG"; then
    echo "fuzz_$t: FAILED, exit status $RC (see $LOG; reproducer: $HERE/crash-*)"
    FAILED=1
  elif [ -z "$UNITS" ]; then
    echo "fuzz_$t: FAILED, no stat::number_of_executed_units in $LOG"
    FAILED=1
  elif [ "$UNITS" -lt "${FLOOR[$t]}" ]; then
    echo "fuzz_$t: FAILED, executed $UNITS inputs, fewer than the ${FLOOR[$t]} its budget (${BUDGET[$t]}) implies (see $LOG)"
    FAILED=1
  else
    echo "fuzz_$t: ok, $UNITS inputs executed (budget ${BUDGET[$t]}, floor ${FLOOR[$t]})"
  fi
done
exit $FAILED
