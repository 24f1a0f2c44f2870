#!/bin/bash
# The two known limits of ns-3.37 this project measured, on this dumbbell (prints two tables).
#   datapath/ns3/limits.sh cubic   TcpCubic vs TcpNewReno vs the Mathis rate under random loss
#                                  (50 Mbit/s, 440 kB, 60 s, 3 seeds per cell)
#   datapath/ns3/limits.sh bbr     TcpBbr: link throughput and timeouts, 1 vs 2 flows, buffers, loss
#                                  (50 Mbit/s, 90 ms, 30 s, 3 seeds per cell)
# Needs the built program (datapath/ns3/build.sh).  Output: one line per cell.
# JAXCC_PYTHON: the Python interpreter for the standard-library helper snippets (default python3).
set -euo pipefail
PYBIN="${JAXCC_PYTHON:-python3}"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${JAXCC_NS3_BUILD:-$HERE/build}/ns3-dumbbell
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
what=${1:-all}
if [ "$what" = cubic ] || [ "$what" = all ]; then
  for p in 0.01 0.002; do for rtt in 20 90 200; do
    for c in reno cubic; do for s in 0 1 2; do
      "$BIN" --duration=60 --rate_mbps=50 --buffer_bytes=440000 --loss=$p --flows="$c,$rtt,0,60" \
        --seed=$s --out="$TMP/c_${c}_$s.json"
    done; done
    "$PYBIN" - "$TMP" $p $rtt <<'PY'
import json, math, sys
tmp, p, rtt = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
g = {c: sum(json.load(open(f"{tmp}/c_{c}_{s}.json"))["flows"][0]["goodput_mbps"] for s in range(3)) / 3
     for c in ("reno", "cubic")}
mathis = min(1448 * 8 / (rtt / 1e3) * math.sqrt(1.5 / p) / 1e6, 50.0)   # Mathis et al. 1997, C = sqrt(3/2)
print(f"cubic loss={p:g} rtt={rtt:g}ms  goodput Mbit/s: newreno {g['reno']:.2f}  cubic {g['cubic']:.2f}  "
      f"mathis {mathis:.2f}  cubic/newreno {g['cubic'] / g['reno']:.2f}  cubic/mathis {g['cubic'] / mathis:.2f}")
PY
  done; done
fi
if [ "$what" = bbr ] || [ "$what" = all ]; then
  for cfg in "1 440000 0" "1 140000 0" "1 30000 0" "1 440000 0.01" "2 440000 0" "2 140000 0" "4 440000 0"; do
    set -- $cfg
    flows=$("$PYBIN" -c "print(';'.join(['bbr,90,0,30'] * $1))")
    for s in 0 1 2; do
      "$BIN" --duration=30 --rate_mbps=50 --buffer_bytes=$2 --loss=$3 --flows="$flows" --seed=$s --out="$TMP/b_$s.json"
    done
    "$PYBIN" - "$TMP" "$cfg" <<'PY'
import json, sys
tmp, cfg = sys.argv[1], sys.argv[2].split()
runs = [json.load(open(f"{tmp}/b_{s}.json")) for s in range(3)]
thr = [r["link"]["throughput_mbps"] for r in runs]
rto = [sum(f["rto"] for f in r["flows"]) for r in runs]
worst = min(f["throughput_mbps"] for r in runs for f in r["flows"])
print(f"bbr flows={cfg[0]} buffer={cfg[1]} loss={cfg[2]}  link Mbit/s per seed {[round(t, 2) for t in thr]}  "
      f"RTOs per seed {rto}  slowest flow {worst:.2f} Mbit/s")
PY
  done
fi
