#!/bin/bash
# End-to-end on loopback: receiver + sender (fixed rate, BBR), garbage datagrams, and the
# exit status for rejected input. Usage: cli_test.sh SENDER RECEIVER VECTORS_DIR
# JAXCC_PYTHON: the Python interpreter for the standard-library helper snippets (default python3).
set -u
PYBIN="${JAXCC_PYTHON:-python3}"
SND=$1 RCV=$2 VEC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PORT=$((20000 + RANDOM % 20000))

# Rejected input exits 2 with a message.
printf 'garbage' > "$T/bad.safetensors"
"$SND" --controller=policy:"$T/bad.safetensors" --duration=1 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "bad policy file: exit $rc, expected 2"
grep -q "truncated\|implausible" "$T/err" || fail "bad policy file: unclear message: $(cat "$T/err")"
"$SND" --controller=policy:"$T/bad.safetensors" --fallback=bbr --duration=0.2 --port=9 --summary="$T/fb.json" 2>/dev/null \
  || fail "--fallback=bbr should run BBR"
grep -q fallback_reason "$T/fb.json" || fail "fallback reason missing"
"$SND" --controller=warp:9 2>/dev/null; [ $? -eq 2 ] || fail "bad controller should exit 2"
"$SND" --controller=fixed:1 --bogus=1 2>/dev/null; [ $? -eq 2 ] || fail "unknown option should exit 2"
"$SND" --help | grep -q -- "--controller" || fail "--help"
# A policy whose feature set the datapath cannot compute: exit 2, naming the set.
"$PYBIN" - "$VEC/mlp.safetensors" "$T/unknown.safetensors" <<'PY' || fail "could not write the unknown-set policy"
import json, struct, sys
blob = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
h = json.loads(blob[8:8 + n])
spec = json.loads(h["__metadata__"]["jaxcc"])
spec["features"]["name"] = "vivace_v9"
h["__metadata__"]["jaxcc"] = json.dumps(spec)
hb = json.dumps(h).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + blob[8 + n:])
PY
"$SND" --controller=policy:"$T/unknown.safetensors" --duration=1 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown feature set: exit $rc, expected 2"
grep -q "vivace_v9.*not implemented in the datapath" "$T/err" || fail "unknown feature set: unclear message: $(cat "$T/err")"
"$RCV" --help | grep -q -- "--port" || fail "receiver --help"

# Fixed 20 Mbit/s for 1.5 s.
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --log="$T/r.csv" --summary="$T/r.json" &
RP=$!
sleep 0.3
# Garbage to the receiver must be counted, not crash it.
"$PYBIN" - "$PORT" <<'PY'
import socket, sys, os
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (0, 1, 31, 32, 64, 1472, 9000):
    s.sendto(os.urandom(n), ("127.0.0.1", int(sys.argv[1])))
PY
# --realtime: SCHED_FIFO for the pacer where permitted, so a busy CI host does not starve it.
"$SND" --controller=fixed:20 --dest=127.0.0.1 --port=$PORT --duration=1.5 --realtime --log="$T/s.csv" --summary="$T/s.json" \
  || fail "sender exit $?"
sleep 0.2
kill -TERM $RP  # the receiver writes its summary on SIGTERM
wait $RP || fail "receiver exit $?"
"$PYBIN" - "$T" <<'PY' || exit 1
import json, sys, csv
d = sys.argv[1]
s = json.load(open(d + "/s.json")); r = json.load(open(d + "/r.json"))
def check(c, m):
    if not c:
        print("FAIL:", m, json.dumps(s), json.dumps(r)); sys.exit(1)
for k in ("throughput_mbps", "p95_owd_ms", "p95_qdelay_ms", "loss", "p95_rtt_ms", "sent", "acked"):
    check(k in s and s[k] is not None, "sender summary lacks " + k)
# Functional check (pacer_test holds the tight accuracy bound): 10% leaves room for a
# busy CI host.
check(abs(s["throughput_mbps"] - 20) < 2.0, "fixed:20 throughput %s" % s["throughput_mbps"])
check(s["loss"] < 0.01, "loopback loss")
check(r["garbage_datagrams"] == 7, "receiver garbage count %s" % r["garbage_datagrams"])
check(abs(r["throughput_mbps"] - 20) < 2.0, "receiver throughput")
check(r["received"] == s["sent"], "receiver got %s of %s" % (r["received"], s["sent"]))
rows = list(csv.DictReader(open(d + "/s.csv")))
check(len(rows) > 5 and "throughput_mbps" in rows[0], "per-MI log")
rows = list(csv.DictReader(open(d + "/r.csv")))
check(len(rows) == r["received"], "per-packet log")
PY

# BBR on loopback: runs, measures, exits cleanly.
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r2.json" &
RP=$!
sleep 0.3
"$SND" --controller=bbr --port=$PORT --duration=1 --summary="$T/s2.json" || fail "bbr sender exit $?"
"$PYBIN" -c "import json,sys; s=json.load(open('$T/s2.json')); sys.exit(0 if s['throughput_mbps']>1 and s['bbr']['rounds']>3 else 1)" \
  || fail "bbr: $(cat "$T/s2.json")"
kill -TERM $RP 2>/dev/null; wait $RP
# A Pareto-feature policy (exported format, random weights) drives the flow.
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r3.json" &
RP=$!
sleep 0.3
"$SND" --controller=policy:"$VEC/features_pareto_v1.safetensors" --port=$PORT --duration=1 --init-mbps=5 \
  --log="$T/s3.csv" --summary="$T/s3.json" || fail "policy sender exit $?"
kill -TERM $RP 2>/dev/null; wait $RP
"$PYBIN" - "$T" <<'PY' || exit 1
import json, sys, csv
d = sys.argv[1]
s = json.load(open(d + "/s3.json"))
rows = list(csv.DictReader(open(d + "/s3.csv")))
ok = s["decisions"] > 10 and s["throughput_mbps"] > 0.5 and len(rows) == s["decisions"] \
    and all(r["action"] not in ("nan", "") for r in rows) and s["safety"]["enabled"] \
    and all(r["control"] in ("policy", "guard") for r in rows)
if not ok:
    print("FAIL: policy run", json.dumps(s)); sys.exit(1)
PY
# The same policy raw (--raw-policy): no safety net, said in the summary; a raw flag on a
# controller that is not a policy is bad input.
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r3raw.json" &
RP=$!
sleep 0.3
"$SND" --controller=policy:"$VEC/features_pareto_v1.safetensors" --raw-policy --port=$PORT --duration=0.5 \
  --init-mbps=5 --summary="$T/s3raw.json" || fail "raw policy sender exit $?"
kill -TERM $RP 2>/dev/null; wait $RP
"$PYBIN" -c "import json,sys; s=json.load(open('$T/s3raw.json'))
sys.exit(0 if s['safety'] == {'enabled': False} and 'bbr' not in s else 1)" \
  || fail "raw policy: $(cat "$T/s3raw.json")"
"$SND" --controller=bbr --raw-policy --port=$PORT --duration=0.1 2>/dev/null
[ $? -eq 2 ] || fail "--raw-policy with bbr must exit 2"
# Pareto-Fair v2 (six features, rate x (1 + a) over [-0.3, 0.5]), Eagle (rate table + BDP window),
# MOCC (window + preference goal) and DeepCC (absolute rate + goal) policies: run, decide every
# MI, (Eagle, MOCC) drive a finite window, (Pareto-Fair v2) act inside the file's range.
for SET in pareto_v2 eagle_v1 mocc_v1 deepcc_v1; do
  PORT=$((PORT + 1))
  "$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r_$SET.json" &
  RP=$!
  sleep 0.3
  "$SND" --controller=policy:"$VEC/features_$SET.safetensors" --port=$PORT --duration=1 \
    --log="$T/s_$SET.csv" --summary="$T/s_$SET.json" || fail "$SET policy sender exit $?"
  kill -TERM $RP 2>/dev/null; wait $RP
  "$PYBIN" - "$T" "$SET" <<'PY' || exit 1
import json, sys, csv, math
d, fs = sys.argv[1], sys.argv[2]
s = json.load(open(d + "/s_%s.json" % fs))
rows = list(csv.DictReader(open(d + "/s_%s.csv" % fs)))
# The policy's own decisions ("policy", "guard") carry its action.  On a loaded machine the safety
# monitor may hand the flow to BBR, whose decisions carry none ("bbr"): allowed only when the
# summary counts that fallback.
own = [r for r in rows if r["control"] in ("policy", "guard")]
fell_back = [r for r in rows if r["control"] == "bbr"]
ok = len(own) > 5 and s["throughput_mbps"] > 0 and len(rows) == s["decisions"] \
    and len(own) + len(fell_back) == len(rows) and (not fell_back or s["safety"]["fallbacks"] > 0) \
    and s["policy"]["features"] == fs and not math.isnan(s["initial_action"]) \
    and all(r["action"] not in ("nan", "") for r in own)
if fs in ("eagle_v1", "mocc_v1"):
    ok = ok and all(float(r["cwnd_bytes"]) > 0 for r in rows)
if fs == "pareto_v2":  # the file's head range, not pareto_v1's [-0.7, 2]
    ok = ok and all(-0.3 - 1e-6 <= float(r["action"]) <= 0.5 + 1e-6 for r in own)
if not ok:
    print("FAIL: %s policy run" % fs, json.dumps(s)); sys.exit(1)
PY
done

# MOCC preferences. A preference-taking file: the vectors' mocc_v1 policy made into a
# multi-objective Q network (objectives in the preference order, head.objectives 3, 7 x 3 outputs).
"$PYBIN" - "$VEC/features_mocc_v1.safetensors" "$T/moq.safetensors" "$T/moq_order.safetensors" <<'PY' || fail "could not write the MOQ policy"
import json, random, struct, sys
blob = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
h = json.loads(blob[8:8 + n])
data = blob[8 + n:]
spec = json.loads(h.pop("__metadata__")["jaxcc"])
spec["features"]["objectives"] = ["throughput", "delay", "loss"]
spec["head"] = {"type": "q_values", "n": 7, "objectives": 3}
last = spec["layers"][-1]
last["out"] = 21
rng = random.Random(0)
t = {k: (v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items()}
t[last["name"] + ".kernel"] = ([last["in"], 21], struct.pack("<%df" % (last["in"] * 21), *[rng.gauss(0, 0.2) for _ in range(last["in"] * 21)]))
t[last["name"] + ".bias"] = ([21], struct.pack("<21f", *[0.0] * 21))
hdr, raw = {"__metadata__": {"jaxcc": json.dumps(spec)}}, b""
for k, (shape, b) in t.items():
    hdr[k] = {"dtype": "F32", "shape": shape, "data_offsets": [len(raw), len(raw) + len(b)]}
    raw += b
hb = json.dumps(hdr).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + raw)
spec["features"]["objectives"] = ["throughput", "loss", "delay"]  # not the preference order
hdr["__metadata__"]["jaxcc"] = json.dumps(spec)
hb = json.dumps(hdr).encode()
open(sys.argv[3], "wb").write(struct.pack("<Q", len(hb)) + hb + raw)
PY
expect2() {  # expect2 NEEDLE ARGS...: exit 2 with a message containing NEEDLE
  local needle=$1; shift
  "$SND" "$@" --duration=1 2> "$T/err"; local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, expected 2"
  grep -qF -- "$needle" "$T/err" || fail "$*: message lacks '$needle': $(cat "$T/err")"
}
expect2 "sum 1.1" --controller=policy:"$T/moq.safetensors" --preference=0.5,0.6,0
expect2 "3 numbers" --controller=policy:"$T/moq.safetensors" --preference=0.5,0.5
expect2 "--preference or --goal" --controller=policy:"$T/moq.safetensors" --preference=1,0,0 --goal=1,0,0
expect2 "--preference needs a policy:FILE" --controller=bbr --preference=1,0,0
expect2 "--preference: the policy takes no 3-value preference" --controller=policy:"$VEC/features_pareto_v1.safetensors" --preference=1,0,0
expect2 "features.objectives" --controller=policy:"$T/moq_order.safetensors" --preference=1,0,0
# A runtime change on the control input: a bad line is reported and ignored, a good one is applied
# at the next decision and shows in the log's goal column and the summary.
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r_pref.json" &
RP=$!
sleep 0.3
( sleep 0.5; echo "preference 1,1,1"; echo "preference 0.1,0.8,0.1"; sleep 2 ) | \
  "$SND" --controller=policy:"$T/moq.safetensors" --port=$PORT --duration=1.2 --preference=0.8,0.1,0.1 --control-stdin \
    --log="$T/s_pref.csv" --summary="$T/s_pref.json" 2> "$T/err_pref" || fail "preference sender exit $?"
kill -TERM $RP 2>/dev/null; wait $RP
grep -q "control line 1 ignored: preference must be 3 numbers.*sum 3" "$T/err_pref" || fail "bad control line: $(cat "$T/err_pref")"
"$PYBIN" - "$T" <<'PY' || exit 1
import json, sys, csv
d = sys.argv[1]
s = json.load(open(d + "/s_pref.json"))
rows = list(csv.DictReader(open(d + "/s_pref.csv")))
ch = s.get("goal_changes", [])
ok = s["preference"] == [0.8, 0.1, 0.1] and len(ch) == 1 and ch[0]["goal"] == [0.1, 0.8, 0.1] and ch[0]["line"] == 2
if ok:
    k = ch[0]["decision"]
    # rows before the change decided with the old goal, the row of the change and after with the new;
    # the change is applied at the first decision after it was received
    ok = all(r["goal"] == "0.8;0.1;0.1" for r in rows[:k]) and all(r["goal"] == "0.1;0.8;0.1" for r in rows[k:]) \
        and (k == 0 or float(rows[k - 1]["t_s"]) <= ch[0]["received_s"]) and ch[0]["applied_s"] == float(rows[k]["t_s"])
if not ok:
    print("FAIL: runtime preference", json.dumps(s), [r["goal"] for r in rows][:3]); sys.exit(1)
PY

# DeepCC online goal tuning (--target, control lines goal/target): bad input exits 2 naming the
# field; a run tunes every ceil(4 / 0.5) = 8 decisions. Target 100 Mbit/s over the policy's 10
# Mbit/s bound (T1 = 100e6/8/thr_max >= 10 > m1: the jump-out every step, delay and loss met):
# the throughput weight rises at every tuning step; a goal line stops tuning at the next decision.
DCC="$VEC/features_deepcc_v1.safetensors"
expect2 "--target must be throughput_mbps,delay_ms,loss" --controller=policy:"$DCC" --target=1,2
expect2 "loss outside [0, 1]" --controller=policy:"$DCC" --target=1,2,3
expect2 "delay_ms < 0" --controller=policy:"$DCC" --target=1,-2,0
expect2 "--target needs a policy:FILE" --controller=bbr --target=1,2,0
expect2 "--target: goal tuning needs a DeepCC policy" --controller=policy:"$T/moq.safetensors" --target=1,2,0
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r_tune.json" &
RP=$!
sleep 0.3
( sleep 0.6; echo "target 1,2,3"; echo "goal 0.2,0.3,0.5"; sleep 2 ) | \
  "$SND" --controller=policy:"$DCC" --port=$PORT --duration=1.2 --target=100,1000,1 --control-stdin \
    --log="$T/s_tune.csv" --summary="$T/s_tune.json" 2> "$T/err_tune" || fail "tuning sender exit $?"
kill -TERM $RP 2>/dev/null; wait $RP
grep -q "control line 1 ignored: target must be throughput_mbps,delay_ms,loss.*loss outside" "$T/err_tune" \
  || fail "bad target line: $(cat "$T/err_tune")"
"$PYBIN" - "$T" <<'PY' || exit 1
import json, sys, csv
d = sys.argv[1]
s = json.load(open(d + "/s_tune.json"))
rows = list(csv.DictReader(open(d + "/s_tune.csv")))
ch = s.get("goal_changes", [])
ok = s["target"] == {"throughput_mbps": 100, "delay_ms": 1000, "loss": 1} and s["tuning_interval_decisions"] == 8 \
    and len(ch) == 1 and ch[0]["goal"] == [0.2, 0.3, 0.5] and s["goal_final"] == [0.2, 0.3, 0.5]
if ok:
    k = ch[0]["decision"]
    g = [[float(x) for x in r["goal"].split(";")] for r in rows]
    ok = k >= 16 and s["tuning_steps"] == k // 8 and all(r["goal"] == "0.2;0.3;0.5" for r in rows[k:])
    # before the goal line: 1/3 each, then g1 up at every step (the 8th, 16th, ... decision: rows
    # 7, 15, ...) and constant in between, g2 = g3, until g2, g3 reach the floor 0.01 (eq. 12's clip:
    # then the goal stays near its fixed point, g1 ~ 0.98)
    up = lambda a, b: b[0] > a[0] if a[1] > 0.01 else b[0] >= 0.98  # noqa: E731
    ok = ok and all(up(g[i - 1], g[i]) if i % 8 == 7 else g[i][0] == g[i - 1][0] for i in range(1, k)) \
        and all(abs(x[1] - x[2]) < 1e-6 for x in g[:k]) and all(abs(x - 1 / 3) < 1e-7 for x in g[0])
if not ok:
    print("FAIL: goal tuning", json.dumps(s)); sys.exit(1)
PY
# A target on the control input of a running sender without --target: tuning starts at the next
# decision from the goal in force (1/3 each), counting that decision as the interval's first.
PORT=$((PORT + 1))
"$RCV" --port=$PORT --bind=127.0.0.1 --duration=60 --summary="$T/r_tune2.json" &
RP=$!
sleep 0.3
( sleep 0.5; echo "target 100,1000,1"; sleep 2 ) | \
  "$SND" --controller=policy:"$DCC" --port=$PORT --duration=1.2 --control-stdin \
    --log="$T/s_tune2.csv" --summary="$T/s_tune2.json" 2> "$T/err_tune2" || fail "tuning sender 2 exit $?"
kill -TERM $RP 2>/dev/null; wait $RP
"$PYBIN" - "$T" <<'PY' || exit 1
import json, sys, csv
d = sys.argv[1]
s = json.load(open(d + "/s_tune2.json"))
rows = list(csv.DictReader(open(d + "/s_tune2.csv")))
ch = s.get("goal_changes", [])
ok = "target" not in s and len(ch) == 1 and ch[0]["target"] == [100, 1000, 1]
if ok:
    k = ch[0]["decision"]
    g = [[float(x) for x in r["goal"].split(";")] for r in rows]
    ok = k > 0 and s["tuning_steps"] == (len(rows) - k) // 8 >= 10 and g[k + 6] == g[0] and g[k + 7][0] > g[0][0] \
        and all(abs(x - 1 / 3) < 1e-7 for x in g[0]) and s["goal_final"][0] > 0.9
if not ok:
    print("FAIL: runtime target", json.dumps(s)); sys.exit(1)
PY
echo OK
