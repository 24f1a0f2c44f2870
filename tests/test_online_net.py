"""Where online fine-tuning runs: the simulator behind the learner protocol
(``jaxcc.online.simnet``), the netns start/wait path, and window records
(``jaxcc.online.network``).

The learner here is a stub written with ``socket`` / ``struct`` only, from the protocol table
(independent of simnet's encoder and of the learner's codec). The records are checked against
``jaxcc.senders``' own sender replayed on the records' MI sums, and the simulated link against
``jaxcc.sim.runner`` running the same policy file; window records against hand-computed numbers.
"""
from __future__ import annotations

import copy
import json
import math
import os
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from jaxcc import policyfile
from jaxcc.evaluation import metrics
from jaxcc.online import network, simnet
from jaxcc.emulation import spec as es
from jaxcc.emulation.host import EmulationError

REPO = Path(__file__).resolve().parents[1]
POLICY = str(REPO / "checkpoints" / "pareto" / "pareto_fair.safetensors")


# ----------------------------------------------------------------------------- a stub learner

class StubLearner:
    """Listens on a unix socket; per connection a reader thread keeps every frame (type, payload);
    ``on_record(conn, n_records)`` may answer with frames."""

    def __init__(self, path: str, on_record=None, ping_s: float | None = None):
        self.path = path
        self.socks: list[socket.socket] = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(8)
        self.conns: list[list[tuple[int, bytes]]] = []
        self.on_record = on_record
        self.threads = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()
        if ping_s is not None:   # a live learner: PING (type 6, empty) on every connection
            threading.Thread(target=self._ping, args=(ping_s,), daemon=True).start()

    def _ping(self, every_s):
        while not self.closed:
            for c in list(self.socks):
                try:
                    c.sendall(struct.pack("<IB", 1, 6))
                except OSError:
                    pass
            time.sleep(every_s)

    def _accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            frames: list[tuple[int, bytes]] = []
            self.conns.append(frames)
            self.socks.append(c)
            t = threading.Thread(target=self._read, args=(c, frames), daemon=True)
            t.start()
            self.threads.append(t)

    @staticmethod
    def _exact(c, n):
        buf = b""
        while len(buf) < n:
            got = c.recv(n - len(buf))
            if not got:
                raise EOFError
            buf += got
        return buf

    def _read(self, c, frames):
        try:
            while True:
                (length,) = struct.unpack("<I", self._exact(c, 4))
                body = self._exact(c, length)
                frames.append((body[0], body[1:]))
                if body[0] == 2 and self.on_record is not None:
                    for fr in self.on_record(sum(1 for t, _ in frames if t == 2)):
                        c.sendall(fr)
                if body[0] == 5:   # BYE
                    break
        except (EOFError, OSError):
            pass
        c.close()

    def kill(self):
        """Gone at once, as after kill -9: the listening socket and every connection closed."""
        self.closed = True
        self.srv.close()
        for c in self.socks:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        os.unlink(self.path)

    def close(self):
        self.closed = True
        self.srv.close()
        for t in self.threads:
            t.join(5)


def weights_frame(version: int, blob: bytes) -> bytes:
    payload = struct.pack("<Q", version) + blob
    return struct.pack("<IB", 1 + len(payload), 3) + payload


def parse_record(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    (d,) = struct.unpack_from("<I", payload)
    vals = np.frombuffer(payload, "<f8", offset=4)
    assert vals.size == 24 + d
    return vals[:24], vals[24:]


def frames_of(conn, ftype):
    return [p for t, p in conn if t == ftype]


def policy_blob(tmp_path, name, spec, tensors) -> bytes:
    p = tmp_path / name
    policyfile.save(p, spec, tensors)
    return p.read_bytes()


# ----------------------------------------------------------------------------- the sim backend

def test_sim_records_match_the_senders_own(tmp_path):
    """Every decision reaches the learner as one RECORD; replaying jaxcc.senders' pareto_v2 sender
    on the records' MI sums gives the records' features, rates, min RTT and actions; the simulated
    link is jaxcc.sim.runner's with the same policy."""
    from jaxcc import senders
    from jaxcc.envs import mi as mi_lib
    from jaxcc.senders import common, pareto_v2
    from jaxcc.sim import runner as sim_runner
    import dataclasses
    import jax
    import jax.numpy as jnp

    sock = str(tmp_path / "l.sock")
    stub = StubLearner(sock)
    sc = es.with_duration(es.load(name="pareto/fixed50"), 6.0)
    net = simnet.SimNet(sc, POLICY, f"unix:{sock}", speed=0)
    run = net.run()
    stub.close()
    assert len(stub.conns) == 1
    conn = stub.conns[0]
    assert conn[0][0] == 1
    hello = json.loads(conn[0][1])
    spec, tensors = policyfile.load(POLICY)
    assert hello == {"proto": 1, "flow_id": 0, "feature_set": "pareto_v2", "history": 8, "obs_dim": 6,
                     "mi_rtts": 2.0, "policy_sha256": net.policy_sha256, "weight_version": 0, "fallback": "keep"}
    recs = [parse_record(p) for p in frames_of(conn, 2)]
    bye = json.loads(frames_of(conn, 5)[0])
    n = run["decisions"][0]
    # 6 s of a 90 ms-RTT flow with 2-RTT intervals: 33 decisions after the first (on the empty window)
    assert n == len(recs) == bye["records_sent"] == 33 and bye["records_dropped"] == 0
    assert [int(v[0]) for v, _ in recs] == list(range(n))

    # replay: the sender's own functions on the records' MI sums
    snd = pareto_v2.sender(spec, tensors)
    rtt0 = net.dt * common.ticks_per_rtt(spec)
    own = snd.start(None)
    hist = common.empty_window(spec)
    run_stats = mi_lib.running_zero(1)
    own = snd.decide(own, hist, run_stats, None)
    prev_t = 0.0
    # one program per step of the sender's loop, not op by op
    running_update, observe, push = jax.jit(mi_lib.running_update), jax.jit(snd.observe), jax.jit(common.push)
    decide, apply = jax.jit(snd.decide), jax.jit(lambda h: policyfile.apply(spec, tensors, h))
    for vals, feats in recs:
        m = mi_lib.MIStats(**{f: jnp.asarray([vals[7 + k]], jnp.float32) for k, f in enumerate(simnet.MI_FIELDS)})
        assert vals[7] == pytest.approx(2 * 0.09, rel=1e-5)   # the interval lasts 2 RTTs
        assert vals[1] == pytest.approx(prev_t + 0.18, abs=1e-4)
        prev_t = vals[1]
        run_stats = running_update(run_stats, m)
        assert vals[4] == pytest.approx(float(own.rate), rel=1e-5)
        own = own._replace(rate=jnp.float32(vals[4]))   # each step checked on its own (ulps of reassociation)
        x, own = observe(own, m, run_stats, rtt0)
        # atol: the dD feature divides a difference of two delays by max(d, 0.01 ms)·dt·5, so at
        # an empty queue one float32 ulp of the 90-ms RTT (7.5e-6 ms) moves it by 8.3e-7
        np.testing.assert_allclose(feats, np.asarray(x), rtol=1e-5, atol=1e-5)
        hist = push(hist, x)
        a = float(np.asarray(apply(hist))[0])
        assert vals[3] == pytest.approx(a, abs=1e-5)
        own = decide(own, hist, run_stats, rtt0)
        assert vals[5] == pytest.approx(float(own.rate), rel=1e-5)
        assert vals[5] == pytest.approx(min(vals[4] * (1 + a), 1e5 * 125000), rel=1e-5)
        assert vals[6] == pytest.approx(float(mi_lib.known_min_rtt(run_stats, 0.0)[0]), rel=1e-6)
        assert vals[2] == 0 and vals[23] == 0

    # the link: jaxcc.sim.runner with the same policy file (float32 reassociation only)
    name = f"policy:{os.path.abspath(POLICY)}"
    sc2 = dataclasses.replace(sc, flows=tuple(dataclasses.replace(f, controller=name) for f in sc.flows))
    (b,) = sim_runner.build_batches([sim_runner.Item(sc2, 0)], resolve=senders.resolve)
    _, traj, rates = sim_runner.run_batch(b)
    ref = metrics.from_batch(traj, rates, b, 0)
    mine = simnet.trace_of(run)
    assert mine.rate.shape == ref.rate.shape
    np.testing.assert_allclose(mine.rate, ref.rate, rtol=1e-3)
    np.testing.assert_allclose(np.cumsum(mine.acked), np.cumsum(ref.acked), rtol=1e-3)


def test_sim_explore_records_the_noisy_action_it_took(tmp_path):
    """--explore: each decision's action is the head's plus N(0, σ²) half-ranges, clipped to the
    head's range; the record carries the action the rate change applied; the noise repeats under
    its seed and changes with it."""
    import jax
    import jax.numpy as jnp

    from jaxcc.senders import common

    spec, tensors = policyfile.load(POLICY)
    lo, hi = float(spec["head"]["low"]), float(spec["head"]["high"])
    sc = es.with_duration(es.load(name="pareto/fixed50"), 6.0)
    apply = jax.jit(lambda h: policyfile.apply(spec, tensors, h))

    runs = []

    def records(seed, sigma=0.1):
        runs.append(seed)
        sock = str(tmp_path / f"l{len(runs)}.sock")
        stub = StubLearner(sock)
        run = simnet.SimNet(sc, POLICY, f"unix:{sock}", speed=0, explore=sigma, explore_seed=seed).run()
        stub.close()
        assert run["explore"] == sigma
        return [parse_record(p) for p in frames_of(stub.conns[0], 2)]

    recs = records(3)
    hist = common.empty_window(spec)
    z = []
    for vals, feats in recs:
        hist = common.push(hist, jnp.asarray(feats))
        a_head = float(np.asarray(apply(hist))[0])
        a = vals[3]
        assert lo <= a <= hi
        # the rate after the decision is rate·(1 + a) with the recorded, noisy a
        assert vals[5] == pytest.approx(min(vals[4] * (1 + a), 1e5 * 125000), rel=1e-5)
        if lo < a < hi:
            z.append((a - a_head) / (0.5 * (hi - lo)))
    z = np.asarray(z)
    assert len(z) >= 25 and np.all(z != 0)
    assert 0.05 < np.std(z) < 0.2 and abs(np.mean(z)) < 0.06  # σ = 0.1 over ~33 draws
    again, other = records(3), records(4)
    assert [v[3] for v, _ in again] == [v[3] for v, _ in recs]
    assert [v[3] for v, _ in other] != [v[3] for v, _ in recs]


def test_sim_weight_swap_rejects_bad_blobs_and_changes_actions(tmp_path):
    """A corrupted and a mis-shaped blob are rejected (ACK ok=false, counted, the policy in force
    keeps deciding); a good one is swapped in between two decisions: from the decision its ACK
    names on, every record carries its version and its action (a constant head: hand-computed).
    The raw policy: the constant head raises the rate every MI, which the deployed sender's
    safety monitor would soon hand to BBR."""
    spec, tensors = policyfile.load(POLICY)
    good = dict(tensors)
    good["out.kernel"] = np.zeros_like(tensors["out.kernel"])
    good["out.bias"] = np.full_like(tensors["out.bias"], 3.0)
    a_good = -0.3 + (math.tanh(3.0) + 1.0) * 0.5 * (0.5 - (-0.3))       # 0.498022...
    blob_good = policy_blob(tmp_path, "good.safetensors", spec, good)
    corrupted = bytearray(blob_good)
    corrupted[:8] = struct.pack("<Q", len(blob_good) * 4)               # header length past the end
    spec2 = copy.deepcopy(spec)
    spec2["layers"][2]["out"] = 16
    spec2["layers"][3]["in"] = 16
    mis = dict(tensors, **{"fc1.kernel": tensors["fc1.kernel"][:, :16], "fc1.bias": tensors["fc1.bias"][:16],
                           "out.kernel": tensors["out.kernel"][:16]})
    blob_mis = policy_blob(tmp_path, "mis.safetensors", spec2, mis)

    def answer(n):
        if n == 3:
            return [weights_frame(1, bytes(corrupted))]
        if n == 5:
            return [weights_frame(2, blob_mis)]
        if n == 7:
            return [weights_frame(3, blob_good)]
        return []

    sock = str(tmp_path / "l.sock")
    stub = StubLearner(sock, on_record=answer)
    sc = es.with_duration(es.load(name="pareto/fixed50"), 8.0)
    net = simnet.SimNet(sc, POLICY, f"unix:{sock}", speed=4.0, raw_policy=True)
    net.run()
    stub.close()
    conn = stub.conns[0]
    acks = [json.loads(p) for p in frames_of(conn, 4)]
    assert [(a["version"], a["ok"]) for a in acks] == [(1, False), (2, False), (3, True)]
    assert "truncated" in acks[0]["reason"] and "spec differs" in acks[1]["reason"]
    recs = [parse_record(p)[0] for p in frames_of(conn, 2)]
    first = acks[2]["decision"]
    assert 7 <= first < len(recs) - 5
    for v in recs:
        if v[0] < first:
            assert v[2] == 0 and abs(v[3] - a_good) > 1e-3      # the shipped policy kept deciding
        else:
            assert v[2] == 3 and v[3] == pytest.approx(a_good, abs=1e-5)
            assert v[5] == pytest.approx(min(v[4] * (1 + a_good), 1e5 * 125000), rel=1e-5)
    bye = json.loads(frames_of(conn, 5)[0])
    assert (bye["weights_received"], bye["weights_rejected"], bye["weights_applied"], bye["weight_version"]) == \
        (3, 2, 1, 3)
    assert [r["version"] for r in bye["rejections"]] == [1, 2]
    assert bye["versions"] == [{"version": 3, "decision": first, "t_s": acks[2]["t_s"]}]


def test_sim_learner_gone_keeps_the_policy(tmp_path):
    """No learner at the address: the flow keeps deciding with its policy, records wait in the
    bounded queue (the oldest dropped, counted), and the learner is logged as gone."""
    sc = es.with_duration(es.load(name="pareto/fixed50"), 3.0)
    net = simnet.SimNet(sc, POLICY, f"unix:{tmp_path}/nobody.sock", speed=0, record_queue=4,
                        learner_timeout_s=0.0)
    run = net.run()
    c = run["online"]["0"]
    n = run["decisions"][0]
    assert n == 16 and c["records_sent"] == 0 and c["records_dropped"] == n - 4
    assert c["learner_gone"] and c["learner_gone"][0]["back_t_s"] is None
    assert c["connects"] == 0


def test_sim_reconnects_to_a_restarted_learner(tmp_path):
    """The learner dies mid-run (its sockets closed) and a new one listens at the same address:
    the flow kept deciding, logs the learner as gone and back, says HELLO again and streams on
    (sequence numbers continue; what was in flight at the death is lost)."""
    sock = str(tmp_path / "l.sock")
    first = StubLearner(sock, ping_s=0.05)
    sc = es.with_duration(es.load(name="pareto/fixed50"), 8.0)
    net = simnet.SimNet(sc, POLICY, f"unix:{sock}", speed=4.0, learner_timeout_s=0.3)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("run", net.run()), daemon=True)
    t.start()
    while sum(1 for tp, _ in (first.conns[0] if first.conns else []) if tp == 2) < 5:
        time.sleep(0.01)
    first.kill()
    time.sleep(0.8)
    second = StubLearner(sock, ping_s=0.05)
    t.join(60)
    second.close()
    run = box["run"]
    a = [int(parse_record(p)[0][0]) for p in frames_of(first.conns[0], 2)]
    (conn,) = second.conns
    assert conn[0][0] == 1 and json.loads(conn[0][1])["weight_version"] == 0
    b = [int(parse_record(p)[0][0]) for p in frames_of(conn, 2)]
    assert b and b[0] > a[-1] and b == list(range(b[0], run["decisions"][0]))
    c = json.loads(frames_of(conn, 5)[0])
    assert c["connects"] == 2 and c["learner_gone"] and all(g["back_t_s"] is not None for g in c["learner_gone"])
    assert run["max_decision_gap_s"][0] == pytest.approx(0.18, abs=1e-4)


def test_flow_link_queue_drops_the_oldest():
    lk = simnet.FlowLink(0, "unix:/nonexistent", {}, queue_len=3)
    for k in range(5):
        lk.push(bytes([k]))
    assert list(lk.queue) == [b"\x02", b"\x03", b"\x04"] and lk.counters["records_dropped"] == 2


@pytest.mark.parametrize("addr", ["unix:", "tcp:localhost", "tcp:h:0", "tcp:h:99999", "http://x", "/tmp/s"])
def test_bad_learner_address_is_one_line(addr):
    with pytest.raises(ValueError, match=r"--learner=.*expected unix:/abs/path or tcp:HOST:PORT"):
        simnet.parse_address(addr)


def test_simnet_keeps_a_kept_neighbour():
    """``coexist/cubic1``'s second flow keeps its CUBIC (``keep_controller``): the simulator backend
    runs it as CUBIC beside the policy flow, as ``jaxcc.evaluate`` does, and only flow 0 is a
    policy flow (the only one to connect to a learner and to take policy decisions)."""
    sc = es.with_duration(es.load(name="coexist/cubic1"), 2.0)
    assert [f.keep_controller for f in sc.flows] == [False, True]
    net = simnet.SimNet(sc, POLICY, None, speed=0)
    assert net.controllers[1] == "cubic" and net.controllers[0] != "cubic"
    assert net.policy_flows == [0]
    run = net.run()
    assert run["controllers"] == net.controllers
    assert run["decisions"][0] > 0 and run["decisions"][1] == 0  # decisions per flow: CUBIC takes none


def test_simnet_refuses_bbr_fallback_and_bad_speed():
    sc = es.load(name="pareto/fixed50")
    with pytest.raises(ValueError, match="--fallback=bbr"):
        simnet.SimNet(sc, POLICY, None, fallback="bbr")
    with pytest.raises(ValueError, match="--speed=-1"):
        simnet.SimNet(sc, POLICY, None, speed=-1)


# ----------------------------------------------------------------------------- start / wait

def test_start_sim_runs_in_a_child_and_does_not_block(tmp_path):
    sc = es.load(name="pareto/shared3")
    t = time.monotonic()
    h = network.start("sim", sc, minutes=0.1, policy_path=POLICY, learner=None, out_dir=tmp_path, speed=0)
    assert time.monotonic() - t < 2.0 and h.pid is not None
    run = h.wait(timeout=300)
    assert h.done()
    assert run["duration_s"] == pytest.approx(6.0, abs=0.1)
    assert [f["stop_s"] for f in run["flows"]] == [6.0, 6.0, 6.0] and [f["start_s"] for f in run["flows"]] == [0, 2, 4]
    assert json.loads((tmp_path / "scenario.json").read_text())["duration_s"] == 6.0
    w = network.window_record(run, 0.0, 6.0)
    assert set(w) >= {"throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain"}
    assert 0 < w["utilization"] <= 1.0


def test_start_refusals(tmp_path):
    sc = es.load(name="pareto/fixed50")
    with pytest.raises(EmulationError, match="--emulator=ns3: expected one of netns, mahimahi, sim"):
        network.start("ns3", sc, minutes=1, policy_path=POLICY, learner=None, out_dir=tmp_path)
    with pytest.raises(EmulationError, match="duration_s: the override must be"):
        network.start("sim", sc, minutes=0, policy_path=POLICY, learner=None, out_dir=tmp_path)
    with pytest.raises(EmulationError, match="flows\\[2\\].start_s: 4 s is not before"):
        es.with_duration(es.load(name="pareto/shared3"), 3.0)
    if network.mahimahi_missing():
        with pytest.raises(EmulationError, match="--emulator=mahimahi: Mahimahi is not installed"):
            network.start("mahimahi", sc, minutes=1, policy_path=POLICY, learner=None, out_dir=tmp_path)


def test_with_duration_extends_flows_that_ran_to_the_end():
    sc = es.load(name="pareto/shared3")
    long = es.with_duration(sc, 300.0)
    assert long.duration_s == 300.0 and [f.stop_s for f in long.flows] == [300.0] * 3
    assert [f.start_s for f in long.flows] == [0.0, 2.0, 4.0]


# ----------------------------------------------------------------------------- window records

def test_window_record_sim_by_hand():
    """Two flows, ticks of 0.5 s; window (1, 3] holds ticks 2..5 (times 1.5..3.0)."""
    T = 8
    t = 0.5 * np.arange(1, T + 1)
    acked = np.zeros((T, 2))
    acked[:, 0] = 125000.0 * 0.5 * 10      # 10 Mbit/s
    acked[:, 1] = 125000.0 * 0.5 * 30      # 30 Mbit/s
    sent = acked * 1.25                     # loss 20% of what is sent
    owd = np.tile(np.array([[0.010], [0.020], [0.030], [0.040], [0.050], [0.060], [0.070], [0.080]]), (1, 2))
    run = {"emulator": "sim", "dt": 0.5,
           "trace": {"time": t, "active": np.ones((T, 2), bool), "sent": sent, "acked": acked, "lost": sent - acked,
                     "admitted": acked, "owd": owd, "qdelay": owd[:, 0], "capacity": np.full(T, 125000.0 * 50),
                     "queue": np.zeros(T), "rate": sent / 0.5}}
    w = network.window_record(run, 1.0, 3.0)
    assert w["throughput_mbps"] == pytest.approx(40.0)
    assert w["utilization"] == pytest.approx(0.8)
    assert w["loss"] == pytest.approx(0.2)
    # admitted bytes per tick are equal, so the byte-weighted p95 of owd over ticks 2..5
    # (30, 40, 50, 60 ms, x2 flows): the cumulative 95% is reached at the last value
    assert w["p95_owd_ms"] == pytest.approx(60.0)
    assert w["jain"] == pytest.approx((10 + 30) ** 2 / (2 * (10 ** 2 + 30 ** 2)))


def test_window_record_netns_by_hand(tmp_path):
    """Receiver logs of two jaxcc flows on the scenario clock (t0_wall_s = 1000 s)."""
    wall0 = 1000.0
    base = tmp_path / "run"
    rows = {0: [], 1: []}
    # flow 0: one 1500-byte packet every 10 ms from t=0..10 s, one-way delay 20 ms, seq 3 and
    # every packet whose seq % 50 == 7 lost; flow 1 starts at 5 s: 1000-byte packets every 20 ms, 40 ms
    for k in range(1000):
        if k % 50 != 7:
            rows[0].append((k, 1500, k * 0.01, 0.020))
    for k in range(250):
        rows[1].append((k, 1000, 5.0 + k * 0.02, 0.040))
    rows[1].append((10, 1000, 5.0 + 10 * 0.02, 0.040, 1))   # a duplicate: left out
    for f, rr in rows.items():
        d = base / f"flow{f}"
        d.mkdir(parents=True)
        with open(d / "receiver.csv", "w") as fh:
            fh.write("flow,seq,size,send_ts_ns,recv_ts_ns,owd_ms,dup\n")
            for r in rr:
                seq, size, ts, owd = r[:4]
                dup = r[4] if len(r) > 4 else 0
                s_ns = int(round((wall0 + ts) * 1e9))
                fh.write(f"{f},{seq},{size},{s_ns},{s_ns + int(round(owd * 1e9))},{owd * 1e3},{dup}\n")
    run = {"emulator": "netns", "out_dir": str(base), "t0_wall_s": wall0, "capacity_schedule": [[0.0, 2.0]],
           "per_flow": [{"flow": 0, "impl": "jaxcc", "start_s": 0.0, "stop_s": 10.0, "rtt_ms": 40.0},
                        {"flow": 1, "impl": "jaxcc", "start_s": 5.0, "stop_s": 10.0, "rtt_ms": 80.0}]}
    w = network.window_record(run, 6.005, 8.005)   # no packet on an edge
    # received in (6.005, 8.005]: flow 0 packets sent at (5.985, 7.985] -> k = 599..798 (200), less
    # k%50==7 (607, 657, 707, 757: 4) -> 196 x 1500 B; flow 1 sent at 5 + (0.965, 2.965] -> k = 49..148
    # (100) x 1000 B
    b0, b1 = 196 * 1500, 100 * 1000
    assert w["throughput_mbps"] == pytest.approx((b0 + b1) * 8 / 1e6 / 2.0)
    assert w["utilization"] == pytest.approx((b0 + b1) * 8 / 1e6 / 2.0 / 2.0)
    # sent in (6.005, 8.005]: flow 0 k = 601..800 -> seq range of the received 601..800, 4 lost (607..757);
    # flow 1 k = 51..150 (100, none lost)
    assert w["loss"] == pytest.approx(4 / 300)
    # byte-weighted: 294000 B at 20 ms, 100000 B at 40 ms: 95% lies in the 40 ms bytes
    assert w["p95_owd_ms"] == pytest.approx(40.0)
    j0, j1 = b0 * 8 / 1e6 / 2, b1 * 8 / 1e6 / 2
    assert w["jain"] == pytest.approx((j0 + j1) ** 2 / (2 * (j0 ** 2 + j1 ** 2)))
    # without the run's start (Mahimahi): each flow's first packet left at its start_s, as here
    w2 = network.window_record(dict(run, t0_wall_s=None), 6.005, 8.005)
    for k in ("throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain"):
        assert w2[k] == pytest.approx(w[k], rel=1e-9), k


# ----------------------------------------------------------------------------- netns (real packets)

from test_emulation_preference import _emulation_skip_reason  # noqa: E402  root, netns, the built datapath


@pytest.fixture(scope="module")
def prefix():
    from jaxcc.emulation import netns
    p = "jxon" + os.urandom(2).hex()
    yield p
    netns.cleanup_leftovers(p)


def _short_link(name="online/fixed20"):
    return es.as_scenario({"name": name, "duration_s": 6.0,
                           "link": {"bandwidth_mbps": 20.0, "buffer_bytes": 150000, "loss": 0.0},
                           "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 6.0, "controller": "bbr"}]})


@pytest.mark.emulation
@pytest.mark.datapath
@pytest.mark.skipif(_emulation_skip_reason() is not None, reason=str(_emulation_skip_reason()))
def test_netns_start_does_not_block_and_window_matches_the_datapath(tmp_path, prefix):
    """start() returns at once (the scenario runs in a thread); the whole flow's window record
    agrees with the datapath's own summaries (sender goodput, receiver p95 one-way delay).

    The sender runs its 6 s from its own start, which a loaded machine delays by a few hundred
    ms after the scenario's; a window that ends at the nominal stop would then miss that
    many ms of packets. The window here ends 1 s after it, so both sides count the same
    packets over the flow's 6 s."""
    t = time.monotonic()
    h = network.start("netns", _short_link(), minutes=0.1, policy_path=POLICY, learner=None,
                         out_dir=tmp_path, prefix=prefix + "a")
    assert time.monotonic() - t < 3.0 and not h.done()
    run = h.wait(timeout=120)
    (f,) = run["per_flow"]
    assert f["controller"] == f"policy:{POLICY}" and f["stop_s"] == 6.0
    w = network.window_record(run, 0.0, 7.0)
    snd, rcv = f["sender_summary"], f["receiver_summary"]
    assert w["throughput_mbps"] == pytest.approx(snd["throughput_mbps"], rel=0.05)
    assert w["p95_owd_ms"] == pytest.approx(rcv["p95_owd_ms"], abs=1.0)
    assert w["utilization"] == pytest.approx(w["throughput_mbps"] / 20.0, rel=1e-9)
    assert w["jain"] == 1.0 and 0.0 <= w["loss"] < 0.5


@pytest.mark.emulation
@pytest.mark.datapath
@pytest.mark.skipif(_emulation_skip_reason() is not None, reason=str(_emulation_skip_reason()))
def test_netns_policy_flows_stream_to_the_learner_beside_kernel_cross_traffic(tmp_path, prefix):
    """Every policy flow runs with --learner and the extra arguments, connects from its
    namespace to a unix socket in the root namespace, says HELLO and streams its decisions; a
    kernel:bbr flow stays cross traffic (iperf3)."""
    sock = str(tmp_path / "l.sock")
    stub = StubLearner(sock, ping_s=0.5)
    sc = es.as_scenario({"name": "online/two", "duration_s": 6.0,
                         "link": {"bandwidth_mbps": 20.0, "buffer_bytes": 150000, "loss": 0.0},
                         "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 6.0, "controller": "bbr"},
                                   {"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 6.0, "controller": "kernel:bbr"}]})
    h = network.start("netns", sc, minutes=0.1, policy_path=POLICY, learner=f"unix:{sock}",
                         sender_args=["--learner-timeout-s=3"], out_dir=tmp_path / "out", prefix=prefix + "b")
    run = h.wait(timeout=120)
    stub.close()
    assert [f["impl"] for f in run["per_flow"]] == ["jaxcc", "iperf3"]
    assert len(stub.conns) >= 1
    conn = stub.conns[0]
    hello = json.loads(conn[0][1])
    assert conn[0][0] == 1 and hello["flow_id"] == 0 and hello["obs_dim"] == 6
    recs = [parse_record(p) for p in frames_of(conn, 2)]
    online = run["per_flow"][0]["sender_summary"]["online"]
    assert online["learner"] == f"unix:{sock}" and online["records_dropped"] == 0
    assert len(recs) == online["records_sent"] > 10
    assert [int(v[0]) for v, _ in recs] == list(range(len(recs)))
    assert all(fe.size == 6 for _, fe in recs)


# ----------------------------------------------------------------------------- Mahimahi (faked where absent)

from test_mahimahi import SENDER, _fake_skip_reason, _script_in, fake_mm, shared_dir  # noqa: E402,F401  fixtures


@pytest.mark.datapath
@pytest.mark.realtime
@pytest.mark.skipif(_fake_skip_reason() is not None, reason=str(_fake_skip_reason()))
@pytest.mark.skipif(not SENDER.exists(), reason="datapath not built (datapath/build.sh)")
def test_mahimahi_sender_args_reach_policy_flows_only(shared_dir, fake_mm):  # noqa: F811
    """launch/mahimahi_run.sh --sender-args-file: each line one argument of every policy:FILE
    flow's jaxcc-sender (as network.start("mahimahi") writes it); kernel flows get none."""
    spec = shared_dir / "s.json"
    spec.write_text(json.dumps({"name": "mm_online", "duration_s": 2.0,
                                "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},
                                "flows": [{"rtt_ms": 40.0, "controller": "bbr"},
                                          {"rtt_ms": 40.0, "controller": "kernel:bbr"}]}))
    pol = shared_dir / "p.safetensors"
    pol.write_bytes(Path(POLICY).read_bytes())
    pol.chmod(0o644)
    args = shared_dir / "args.txt"
    args.write_text("--learner=unix:/tmp/a b.sock\n--learner-timeout-s=3\n")
    out = shared_dir / "dry"
    r = _script_in(fake_mm, [f"--scenario-file={spec}", f"--out={out}", f"--controller=policy:{pol}",
                             f"--sender-args-file={args}", "--dry-run"])
    assert r.returncode == 0, r
    c0 = (out / "flow0" / "client.sh").read_text()
    c1 = (out / "flow1" / "client.sh").read_text()
    assert "--learner=unix:/tmp/a\\ b.sock --learner-timeout-s=3" in c0
    assert "--learner" not in c1 and "iperf3" in c1
    r = _script_in(fake_mm, [f"--scenario-file={spec}", f"--out={out}", "--sender-args-file=/nonexistent"])
    assert r.returncode == 2 and "--sender-args-file=/nonexistent not readable" in r.stderr


# ----------------------------------------------------------------------------- with the learner's own codec

def _pushing_learner(server, blob: bytes, events: list) -> threading.Thread:
    """A learner thread on ``server``: collects every event into ``events``, pushes ``blob`` as
    version 1 after the 4th record, and returns at the first BYE or close."""
    def learner():
        sent = False
        while True:
            evs = server.drain(timeout=0.05)
            events.extend(evs)
            if not sent and sum(e[0] == "record" for e in events) >= 4:
                server.send_weights(1, blob)
                sent = True
            if any(e[0] in ("bye", "closed") for e in evs):
                return

    t = threading.Thread(target=learner, daemon=True)
    t.start()
    return t


def test_sim_speaks_to_the_learner_server(tmp_path):
    """The learner's server (jaxcc.online.experience, written apart from simnet's encoder)
    decodes the sim backend's HELLO / RECORD / BYE, and weights it sends are swapped in."""
    from jaxcc.online import experience
    spec, tensors = policyfile.load(POLICY)
    good = dict(tensors, **{"out.kernel": np.zeros_like(tensors["out.kernel"]),
                            "out.bias": np.full_like(tensors["out.bias"], -3.0)})
    blob = policy_blob(tmp_path, "g.safetensors", spec, good)
    a_good = -0.3 + (math.tanh(-3.0) + 1.0) * 0.4
    server = experience.Server(f"unix:{tmp_path}/l.sock")
    events: list = []
    t = _pushing_learner(server, blob, events)
    sc = es.with_duration(es.load(name="pareto/fixed50"), 6.0)
    run = simnet.SimNet(sc, POLICY, server.address, speed=4.0).run()
    t.join(10)
    server.close()
    kinds = [e[0] for e in events]
    assert kinds[0] == "hello" and events[0][2]["feature_set"] == "pareto_v2" and "bye" in kinds
    recs = [e[2] for e in events if e[0] == "record"]
    assert len(recs) == run["decisions"][0] == 33
    (ack,) = [e[2] for e in events if e[0] == "ack"]
    assert ack["ok"] and ack["version"] == 1
    for fixed, feats in recs:
        assert feats.shape == (6,)
        if fixed[0] >= ack["decision"]:
            assert fixed[2] == 1 and fixed[3] == pytest.approx(a_good, abs=1e-5)
        else:
            assert fixed[2] == 0


def test_sim_speaks_protocol_2_to_a_keyed_learner_and_a_wrong_key_gets_nothing_in(tmp_path):
    """With a key on both ends over tcp: the sim backend's handshake, sealed HELLO / RECORD / BYE and
    the learner's sealed WEIGHTS are accepted; a sim backend with another key gets no record in
    (each of its connections is refused and counted by the learner)."""
    from jaxcc.online import experience
    key = os.urandom(32)
    spec, tensors = policyfile.load(POLICY)
    blob = policy_blob(tmp_path, "g.safetensors", spec, dict(tensors, **{"out.bias": tensors["out.bias"] - 0.5}))
    server = experience.Server("tcp:127.0.0.1:0", key=key)
    events: list = []
    t = _pushing_learner(server, blob, events)
    sc = es.with_duration(es.load(name="pareto/fixed50"), 4.0)
    run = simnet.SimNet(sc, POLICY, server.address, speed=4.0, learner_key=key).run()
    t.join(10)
    kinds = [e[0] for e in events]
    assert kinds[0] == "hello" and events[0][2]["proto"] == 2 and "bye" in kinds
    assert sum(k == "record" for k in kinds) == run["decisions"][0] > 10
    (ack,) = [e[2] for e in events if e[0] == "ack"]
    c = run["online"]["0"]
    assert ack["ok"] and c["weight_version"] == 1 and c["auth"] == "psk-hmac-sha256" and c["auth_refused"] == 0
    assert server.counters["auth_refused"] == 0
    # another key: nothing gets in; each connection is refused by whichever end checks a tag first
    # (the learner on the sender's HELLO, or the sender on the learner's PING) and counted there
    records = server.counters["records"]
    wrong = simnet.SimNet(es.with_duration(sc, 1.5), POLICY, server.address, speed=2.0, learner_key=os.urandom(32))
    w = wrong.run()["online"]["0"]
    server.close()
    assert server.counters["records"] == records and w["weights_received"] == 0 and w["pings"] == 0
    assert server.counters["auth_refused"] + w["auth_refused"] >= 1, (server.counters, w)
    assert set(server.auth_refusals) | {r["reason"] for r in w["auth_refusals"]} == {"bad tag"}


def test_tcp_learner_without_a_key_is_refused_before_anything_starts(tmp_path):
    sc = es.load(name="pareto/fixed50")
    with pytest.raises(ValueError, match="a tcp: learner link must be authenticated; give --learner-key=FILE"):
        simnet.SimNet(sc, POLICY, "tcp:127.0.0.1:9")
    with pytest.raises(EmulationError, match="a tcp: learner link must be authenticated"):
        network.start("sim", sc, minutes=0.1, policy_path=POLICY, learner="tcp:127.0.0.1:9", out_dir=tmp_path)
    short = tmp_path / "short.key"
    short.write_bytes(b"tooshort\n")
    with pytest.raises(EmulationError, match=r"--learner-key=.*short.key: key file has 8 bytes; it must hold at least 16"):
        network.start("sim", sc, minutes=0.1, policy_path=POLICY, learner="tcp:127.0.0.1:9", out_dir=tmp_path,
                      learner_key=str(short))


@pytest.mark.realtime
def test_sim_speed_paces_the_wall_clock():
    """--speed=1: three simulated seconds take three wall seconds (compilation before the clock)."""
    sc = es.with_duration(es.load(name="pareto/fixed50"), 3.0)
    run = simnet.SimNet(sc, POLICY, None, speed=1.0).run()
    assert run["duration_s"] == pytest.approx(3.0, abs=0.01)
    assert 3.0 - 0.02 <= run["wall_s"] <= 3.5


def test_simnet_cli_bad_input_is_one_line(tmp_path):
    r = subprocess.run([os.sys.executable, "-m", "jaxcc.online.simnet", "--scenario=pareto/fixed50",
                        f"--policy={POLICY}", "--learner=http://x", f"--out={tmp_path}"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: --learner='http://x': expected unix:/abs/path or tcp:HOST:PORT"
    r = subprocess.run([os.sys.executable, "-m", "jaxcc.online.simnet", "--scenario=pareto/fixed50",
                        "--scenario-file=x.json", f"--policy={POLICY}", f"--out={tmp_path}"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: give exactly one of --scenario, --scenario-file"


def test_network_cli_errors_and_interrupt(tmp_path, monkeypatch, capsys):
    """``python -m jaxcc.online.network``: a refused flag or an emulation error is one line and
    exit status 2; an interrupted run (SIGINT/SIGTERM/SIGHUP) cleans up and exits with 130."""
    import signal

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    base = ["network", f"--scenario-file={tmp_path / 'sc.json'}", f"--policy={POLICY}", f"--out={tmp_path}"]
    try:
        assert network.run_cli(base[:1] + base[2:]) == 2  # --scenario-file is required
        assert network.run_cli(base) == 2  # no such scenario file
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and all(e.startswith("error: ") for e in err) and "scenario_file" in err[0], err

        def interrupted(*a, **kw):
            raise KeyboardInterrupt("signal 15")

        monkeypatch.setattr(network.emu_spec, "load", lambda path: None)
        monkeypatch.setattr(network, "run_netns", interrupted)
        assert network.run_cli(base + ["--sender-arg=--fallback=bbr", "--verbose"]) == 130
        assert "interrupted; cleaned up" in capsys.readouterr().err
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


def test_window_record_iperf3_cross_traffic_by_hand(tmp_path):
    """A kernel flow's window from iperf3's 0.1 s intervals: bytes, retransmits, RTT samples
    (microseconds; the one-way estimate is RTT minus half the path's propagation RTT)."""
    d = tmp_path / "flow0"
    d.mkdir()
    ivs = [{"sum": {"start": 0.1 * k, "end": 0.1 * (k + 1), "bytes": 12500,
                    "retransmits": 1 if (k + 1) % 10 == 0 else 0},
            "streams": [{"rtt": 50000}]} for k in range(100)]
    (d / "iperf3_client.json").write_text(json.dumps({"intervals": ivs}))
    run = {"emulator": "netns", "out_dir": str(tmp_path), "t0_wall_s": 0.0, "capacity_schedule": [[0.0, 2.0]],
           "per_flow": [{"flow": 0, "impl": "iperf3", "start_s": 0.0, "stop_s": 10.0, "rtt_ms": 40.0}]}
    w = network.window_record(run, 2.05, 4.05)
    # intervals ending at 2.1 .. 4.0: 20 x 12500 B over 2 s, retransmits at the ends 3.0 and 4.0
    assert w["throughput_mbps"] == pytest.approx(20 * 12500 * 8 / 1e6 / 2.0)
    assert w["utilization"] == pytest.approx(0.5)
    assert w["loss"] == pytest.approx(2 / (20 * 12500 / 1448))
    assert w["p95_owd_ms"] == pytest.approx(50.0 - 20.0)
    assert w["jain"] == 1.0


def test_sim_kernel_flows_are_cross_traffic(tmp_path):
    """kernel:cubic runs as the simulator's CUBIC beside the policy flow: no connection, no records."""
    sock = str(tmp_path / "l.sock")
    stub = StubLearner(sock)
    sc = es.as_scenario({"name": "x", "duration_s": 3.0, "link": {"bandwidth_mbps": 20, "buffer_bytes": 150000},
                         "flows": [{"rtt_ms": 40, "controller": "bbr"}, {"rtt_ms": 40, "controller": "kernel:cubic"}]})
    run = simnet.SimNet(sc, POLICY, f"unix:{sock}", speed=0).run()
    stub.close()
    assert run["controllers"] == [f"policy:{os.path.abspath(POLICY)}", "cubic"]
    assert run["decisions"][1] == 0 and list(run["online"]) == ["0"]
    (conn,) = stub.conns
    assert json.loads(conn[0][1])["flow_id"] == 0 and len(frames_of(conn, 2)) == run["decisions"][0] > 0
    tr = simnet.trace_of(run)
    assert tr.acked[:, 1].sum() > 0      # the cross traffic carried data
