"""Online fine-tuning's learner side: the experience codec against hand-built bytes, the server, the
online segment of Algorithm 4 (old segments frozen), Algorithm 1 rewards from a sender's MI sums
against hand-computed values, records → transitions, the learner's restart from its online
checkpoint, and an end-to-end run over the simulator backend (``--emulator=sim``)."""

import json
import math
import os
import struct
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.online import pareto as alg
from jaxcc.agents.pareto import replay
from jaxcc.online import experience as X
from jaxcc.envs import pareto as penv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------- codec


def test_frames_match_hand_built_bytes():
    h = X.hello(flow_id=3, feature_set="pareto_v2", history=8, obs_dim=6, mi_rtts=2.0, policy_sha256="ab",
                weight_version=0, fallback="keep")
    body = b'{"proto":1,"flow_id":3,"feature_set":"pareto_v2","history":8,"obs_dim":6,"mi_rtts":2.0,' \
           b'"policy_sha256":"ab","weight_version":0,"fallback":"keep"}'
    assert h == struct.pack("<I", 1 + len(body)) + b"\x01" + body

    fixed = [float(i) * 1.5 for i in range(24)]
    feats = [0.25, -1.0, 3.0]
    want = struct.pack("<I", 1 + 4 + 8 * 27) + b"\x02" + struct.pack("<I", 3) + struct.pack("<27d", *fixed, *feats)
    assert X.record(fixed, feats) == want
    assert X.record(dict(zip(X.RECORD_FIELDS, fixed)), feats) == want
    fx, ft = X.decode_record(want[5:])
    assert fx.tolist() == fixed and ft.tolist() == feats

    assert X.weights(7, b"abc") == struct.pack("<I", 12) + b"\x03" + struct.pack("<Q", 7) + b"abc"
    assert X.decode_weights(X.weights(7, b"abc")[5:]) == (7, b"abc")
    assert X.ping() == b"\x01\x00\x00\x00\x06"
    assert len(X.RECORD_FIELDS) == 24 and X.RECORD_FIELDS[7] == "mi_duration"
    assert X.RECORD_FIELDS[23] == "records_dropped"


def test_frame_reader_splits_any_chunking_and_refuses_bad_lengths():
    stream = X.ping() + X.record(np.zeros(24), np.ones(2)) + X.frame(0x7F, b"xy")
    r = X.FrameReader()
    got = []
    for i in range(len(stream)):  # one byte at a time
        got += r.feed(stream[i:i + 1])
    assert [t for t, _ in got] == [X.PING, X.RECORD, 0x7F] and got[2][1] == b"xy"
    with pytest.raises(X.ProtocolError):
        X.FrameReader().feed(struct.pack("<I", X.MAX_LEN + 1) + b"\x02")
    with pytest.raises(X.ProtocolError):
        X.FrameReader().feed(struct.pack("<I", 0))
    with pytest.raises(X.ProtocolError):
        X.decode_record(struct.pack("<I", 2) + b"\x00" * 8)  # D=2 needs 4 + 8·26 bytes
    with pytest.raises(ValueError, match="tcp:HOST:PORT"):
        X.parse_address("tcp:nohost")
    with pytest.raises(ValueError, match="absolute"):
        X.parse_address("unix:rel.sock")


def test_server_events_pings_weights_and_protocol_errors(tmp_path):
    with X.Server("unix:" + str(tmp_path / "l.sock"), ping_s=0.2) as srv:
        s = X.connect(srv.address)
        s.sendall(X.hello(flow_id=5, feature_set="pareto_v1", history=8, obs_dim=5, mi_rtts=2.0, policy_sha256=""))
        s.sendall(X.record(np.arange(24.0), np.ones(5)) + X.frame(0x42, b"??"))
        assert X.wait_for(lambda: len(srv.events) >= 2 and srv.counters["unknown_frames"] == 1, 5)
        ev = srv.drain()
        assert ev[0][0] == "hello" and ev[0][2]["flow_id"] == 5
        assert ev[1][0] == "record" and ev[1][2][0][23] == 23.0 and ev[1][2][1].tolist() == [1.0] * 5
        r = X.FrameReader()
        s.settimeout(2.0)
        assert X.recv_frame(s, r)[0] == X.PING  # within the 1-s bound
        assert srv.send_weights(9, b"blob") == 1
        while True:
            t, p = X.recv_frame(s, r)
            if t == X.WEIGHTS:
                break
        assert X.decode_weights(p) == (9, b"blob")
        s.sendall(struct.pack("<I", X.MAX_LEN + 1) + b"\x02")
        assert X.wait_for(lambda: srv.counters["protocol_errors"] == 1, 5)
        while X.recv_frame(s, r) is not None:  # the learner closed the connection
            pass
        assert X.wait_for(lambda: srv.connected() == [], 5)


KEY = b"a pre-shared key for the tcp: tests"  # a tcp: learner needs one (jaxcc.online.auth)


def test_server_event_queue_is_bounded(tmp_path):
    with X.Server("tcp:127.0.0.1:0", max_events=50, key=KEY) as srv:
        s = X.Client(srv.address, KEY)
        s.send(*[X.record(np.zeros(24), np.zeros(2)) for _ in range(200)])
        assert X.wait_for(lambda: srv.counters["records"] == 200, 5)
        assert len(srv.events) == 50 and srv.counters["events_dropped"] == 150
        s.close()


def test_a_record_flood_never_drops_hello_or_bye(tmp_path):
    """HELLO, 200 records, BYE into a queue of 50: the 151 oldest *records* go, HELLO and BYE stay,
    and the newest 48 records are kept in order."""
    with X.Server("tcp:127.0.0.1:0", max_events=50, key=KEY) as srv:
        s = X.Client(srv.address, KEY)
        recs = []
        for k in range(200):
            fx = np.zeros(24)
            fx[X.F["seq"]] = k
            recs.append(X.record(fx, np.zeros(2)))
        s.send(X.hello(flow_id=7, feature_set="pareto_v2", history=8, obs_dim=2, mi_rtts=2.0, policy_sha256="",
                       proto=2), *recs, X.json_frame(X.BYE, {"records_sent": 200}))
        assert X.wait_for(lambda: srv.counters["records"] == 200 and any(e[0] == "bye" for e in srv.events), 5)
        evs = list(srv.events)
        assert len(evs) == 50 and srv.counters["events_dropped"] == 152
        assert evs[0][0] == "hello" and evs[0][2]["flow_id"] == 7 and evs[-1][0] == "bye"
        assert [int(e[2][0][X.F["seq"]]) for e in evs[1:-1]] == list(range(152, 200))
        s.close()


# ----------------------------------------------------------------------------- Algorithm 4 line 1


def _tr(v):
    return {"obs": jnp.full((2, 1), v), "action": jnp.asarray(v), "reward": jnp.asarray(v),
            "next_obs": jnp.full((2, 1), v), "done": jnp.asarray(0.0)}


def test_online_segment_freezes_old_segments():
    buf = replay.init(_tr(0.0), [3, 2])
    many = jax.tree.map(lambda *x: jnp.stack(x), *[_tr(float(i + 1)) for i in range(5)])
    buf = replay.add(buf, many, jnp.ones(5, bool), 0)  # stage 0: 5 into 3 slots (4, 5, 3)
    buf = replay.add(buf, jax.tree.map(lambda x: x[:2], many), jnp.ones(2, bool), 1)
    buf = replay.update_priorities(buf, jnp.arange(5), jnp.asarray([1.5, 2.0, 2.5, 1.2, 1.1]))
    g = alg.grow_buffer(buf, 4)
    assert g.priority.shape == (9,) and g.seg_start.tolist() == [0, 3, 5] and g.seg_size.tolist() == [3, 2, 4]
    assert alg.online_segment(g) == 2 and g.seg_count.tolist() == [3, 2, 0]
    new = jax.tree.map(lambda *x: jnp.stack(x), *[_tr(100.0 + i) for i in range(6)])
    o = {"buffer": jax.tree.map(lambda x: x[None], g)}
    o = alg.add(o, jax.tree.map(lambda x: x[None], new), jnp.ones((1, 6), bool))
    b = jax.tree.map(lambda x: x[0], o["buffer"])
    # The old segments: the same transitions and priorities as before the online stage.
    assert b.data["action"][:5].tolist() == buf.data["action"].tolist() == [4.0, 5.0, 3.0, 1.0, 2.0]
    assert b.priority[:5].tolist() == buf.priority.tolist()
    # The online segment: 6 writes into 4 slots, the oldest replaced first (104, 105, 102, 103).
    assert b.data["action"][5:].tolist() == [104.0, 105.0, 102.0, 103.0]
    assert b.seg_count.tolist() == [3, 2, 4] and int(alg.online_count(o)[0]) == 4
    assert b.priority[5:].tolist() == [2.5] * 4  # new samples at the largest priority seen


# ----------------------------------------------------------------------------- Algorithm 1 from records

MSS = 1500.0


def _mi(dur, acked, rtt, n=10, sent=None, lost=0.0):
    sent = acked if sent is None else sent
    return [dur, dur, sent, acked, lost, rtt * acked, rtt, rtt, rtt, rtt, n, acked, 0.0, 0.0, rtt * acked, 0.0]


def test_record_reward_matches_hand_computed_algorithm_1():
    p = penv.ParetoParams()
    mem = penv.zero_flows(1)
    # MI 1: 125000 B/s, RTT 50 ms = min RTT: startup, first step (ΔR = 0) -> r = 10·0 = 0.
    r, f, mem = alg.record_reward(mem, jnp.asarray([_mi(0.2, 25_000.0, 0.05)]), jnp.asarray([0.05]), p, "pareto_v2")
    assert float(r[0]) == 0.0 and np.allclose(f[0], 0.0)
    # MI 2: 250000 B/s.  R = 0.8·250000 + 0.2·125000 = 225000; ΔR = 100000/125000 = 0.8; d = 0.
    r, f, mem = alg.record_reward(mem, jnp.asarray([_mi(0.2, 50_000.0, 0.05)]), jnp.asarray([0.05]), p, "pareto_v2")
    assert math.isclose(float(r[0]), 8.0, rel_tol=1e-5)
    assert np.allclose(f[0], [0.0, 0.8 / 20, 0.0, 0.0, 0.0, 0.0], atol=1e-6)
    # MI 3: RTT 70 ms: EWMA 0.8·70 + 0.2·50 = 66 ms, d = 16 ms >= 4: the first delay ever,
    # r = −0.2·dD/dT + 10·ΔR, dD/dT = (16 − 0)/max(0, 0.01)/200 ms = 8, R = 245000,
    # ΔR = 20000/225000; X = (S − R)/R = (250000 − 245000)/245000.
    r, f, mem = alg.record_reward(mem, jnp.asarray([_mi(0.2, 50_000.0, 0.07)]), jnp.asarray([0.05]), p, "pareto_v2")
    dR = 20_000.0 / 225_000.0
    assert math.isclose(float(r[0]), -0.2 * 8.0 + 10.0 * dR, rel_tol=1e-4)
    q = 245_000.0 * 0.02 / MSS  # own standing queue: R · (rtt_min − min RTT) / MSS
    want = [1.0, dR / 20, 8.0 / 5, 0.0, 5_000.0 / 245_000.0, math.log2(1 + q) / 8]
    assert np.allclose(f[0], want, rtol=1e-4, atol=1e-6)


def test_local_reward_adds_the_utilization_a_sender_can_see():
    """--reward=local: Algorithm 1 + util_w · (1 while delayed, else rate / max rate, at most 1)."""
    p = penv.ParetoParams().replace(util_w=jnp.float32(10.0))
    mi1, mi2, mi3 = (_mi(0.2, 25_000.0, 0.05), _mi(0.2, 50_000.0, 0.05), _mi(0.2, 50_000.0, 0.07))
    m0 = penv.zero_flows(1)
    # MI 1 (125000 B/s, no queue) against a largest rate of 500000 B/s: 0 + 10 · 0.25.
    r, _, m1 = alg.record_reward(m0, jnp.asarray([mi1]), jnp.asarray([0.05]), p, "pareto_v2", jnp.asarray([5e5]))
    assert math.isclose(float(r[0]), 2.5, rel_tol=1e-6)
    # MI 2 (250000 B/s, no queue), the largest rate its own: 8 (as above) + 10 · 1.
    r, _, m2 = alg.record_reward(m1, jnp.asarray([mi2]), jnp.asarray([0.05]), p, "pareto_v2", jnp.asarray([2.5e5]))
    assert math.isclose(float(r[0]), 18.0, rel_tol=1e-5)
    # MI 3: delayed (d = 16 ms >= d_min): the link counts as busy whatever the rates, + 10.
    r_alg1, _, _ = alg.record_reward(m2, jnp.asarray([mi3]), jnp.asarray([0.05]), p, "pareto_v2")
    r, _, _ = alg.record_reward(m2, jnp.asarray([mi3]), jnp.asarray([0.05]), p, "pareto_v2", jnp.asarray([1e9]))
    assert math.isclose(float(r[0]) - float(r_alg1[0]), 10.0, rel_tol=1e-5)
    # util_w = 0 (a checkpoint trained on Algorithm 1 alone): local is alg1.
    r0, _, _ = alg.record_reward(m1, jnp.asarray([mi2]), jnp.asarray([0.05]), penv.ParetoParams(), "pareto_v2",
                                 jnp.asarray([1e9]))
    assert math.isclose(float(r0[0]), 8.0, rel_tol=1e-5)


def test_queue_reward_charges_the_standing_queue_by_its_level():
    """--reward=queue: local − util_w · clip(d / min RTT, 0, 1), d the RTT's EWMA over the min RTT."""
    p = penv.ParetoParams().replace(util_w=jnp.float32(10.0))
    mi1, mi2, mi3 = (_mi(0.2, 25_000.0, 0.05), _mi(0.2, 50_000.0, 0.05), _mi(0.2, 50_000.0, 0.07))
    m0 = penv.zero_flows(1)

    def both(m, mi, min_rtt=0.05):
        args = (m, jnp.asarray([mi]), jnp.asarray([min_rtt]), p, "pareto_v2", jnp.asarray([1e9]))
        (r_local, _, m_local), (r_queue, _, m_queue) = alg.record_reward(*args), alg.record_reward(*args, queue=True)
        assert np.array_equal(m_local.d_ms, m_queue.d_ms)  # the same memory either way
        return float(r_local[0]), float(r_queue[0]), m_queue

    # No queue (RTT = min RTT): nothing charged.
    r_local, r_queue, m1 = both(m0, mi1)
    assert r_queue == r_local
    _, _, m2 = both(m1, mi2)
    # RTT 70 ms: EWMA 66 ms, d = 16 ms over a 50-ms min RTT: 10 · 16/50 = 3.2 less.
    r_local, r_queue, _ = both(m2, mi3)
    assert math.isclose(r_local - r_queue, 3.2, rel_tol=1e-4)
    # The same queue over a 10-ms min RTT (d = 56 ms) is more than one min RTT: the charge stops at 10.
    r_local, r_queue, _ = both(m2, mi3, min_rtt=0.01)
    assert math.isclose(r_local - r_queue, 10.0, rel_tol=1e-5)
    with pytest.raises(ValueError, match="needs max_rate"):
        alg.record_reward(m2, jnp.asarray([mi3]), jnp.asarray([0.05]), p, "pareto_v2", queue=True)


def _record(seq, mi, action=0.1, feats=None, dropped=0.0):
    fx = np.zeros(24)
    fx[X.F["seq"]], fx[X.F["t_s"]], fx[X.F["action"]] = seq, 0.2 * seq, action
    fx[X.F["rate_before"]], fx[X.F["rate_after"]], fx[X.F["min_rtt_s"]] = 1e5, 1e5 * (1 + action), 0.05
    fx[X.MI_COLS] = mi
    fx[X.F["records_dropped"]] = dropped
    return fx, np.full(5, float(seq)) if feats is None else feats


def test_flow_track_transitions_and_gaps():
    from jaxcc import online

    p = penv.ParetoParams()
    fn = jax.jit(lambda m, mi, r: alg.record_reward(m, mi, r, p, "pareto_v1"))
    tr = online.FlowTrack(3, 5, [0.0] * 5, (-0.7, 2.0), fn)
    out = [tr.push(*_record(k, _mi(0.2, 25_000.0 * (1 + (k == 1)), 0.05), action=0.1 * k)) for k in range(3)]
    assert out[0] is None
    t1 = out[1]  # (window_0, a_0, r from MI 1, window_1); window_0 = [empty, empty, f0]
    assert t1["obs"][:, 0].tolist() == [0.0, 0.0, 0.0] and t1["next_obs"][:, 0].tolist() == [0.0, 0.0, 1.0]
    assert float(t1["action"]) == 0.0 and math.isclose(float(t1["reward"]), 8.0, rel_tol=1e-5)  # ΔR = 0.8
    assert out[2]["obs"][:, 0].tolist() == [0.0, 0.0, 1.0] and math.isclose(float(out[2]["action"]), 0.1, rel_tol=1e-6)
    # A gap (seq 3, 4 dropped): no transition until the window holds 3 consecutive records again.
    res = [tr.push(*_record(k, _mi(0.2, 25_000.0, 0.05), dropped=2.0)) for k in (5, 6, 7, 8)]
    assert [r is None for r in res] == [True, True, True, False] and tr.gaps == 1 and tr.dropped == 2.0
    assert res[3]["obs"][:, 0].tolist() == [5.0, 6.0, 7.0] and res[3]["next_obs"][:, 0].tolist() == [6.0, 7.0, 8.0]
    # The fallback (BBR) decided: action NaN, the action its rate change implies, clipped to the range.
    fx, ft = _record(9, _mi(0.2, 25_000.0, 0.05), action=float("nan"))
    fx[X.F["rate_after"]] = 5e5  # ×5: +4, clipped to 2
    tr.push(fx, ft)
    assert tr.pending[1] == 2.0


def test_records_window_sums_throughput_loss_and_the_transitions_reward_by_hand():
    """The learner's own window over [t0, t1) of sender time: records of two flows and the
    rewards of the transitions their records closed (hand-computed)."""
    import types
    from jaxcc import online

    # (flow, t_s, delivery B/s, rtt s, weight version, wall, lost, acked bytes, duration)
    tl = [(0, 0.5, 0, 0.05, 0, 0, 0.0, 1_000.0, 0.1), (1, 0.7, 0, 0.07, 0, 0, 100.0, 3_000.0, 0.1),
          (0, 1.5, 0, 0.06, 0, 0, 0.0, 9_000.0, 0.1)]  # the last record is outside [0, 1)
    obj = types.SimpleNamespace(timeline=tl, rewards=[(0.5, 2.0), (0.7, -1.0), (1.5, 40.0)])
    w = online.Learner.records_window(obj, 0.0, 1.0)
    assert w["records"] == 2 and w["transitions"] == 2 and w["reward_mean"] == 0.5
    assert math.isclose(w["throughput_mbps"], 4_000.0 * 8 / 1e6) and math.isclose(w["loss"], 100.0 / 4_100.0)
    assert math.isclose(w["jain"], 16e6 / (2 * 10e6))   # (1000 + 3000)² / (2 · (1000² + 3000²))
    empty = online.Learner.records_window(obj, 5.0, 6.0)
    assert empty["records"] == 0 and empty["transitions"] == 0 and empty["reward_mean"] is None


# ----------------------------------------------------------------------------- the learner


@pytest.fixture(scope="module")
def smoke_ckpt(tmp_path_factory):
    """A pareto_smoke run (three tiny stages, ~15 s)."""
    d = tmp_path_factory.mktemp("smoke") / "run"
    subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", f"--workdir={d}", "--no_progress"],
                   check=True, cwd=REPO, capture_output=True, timeout=600)
    return str(d)


def _feed(learner, n, fid=0, cid=0, start=0):
    rng = np.random.default_rng(fid)
    evs = [("hello", cid, {"proto": 1, "flow_id": fid, "history": learner.T, "obs_dim": learner.D,
                           "weight_version": 0})] if start == 0 else []
    for k in range(start, start + n):
        fx, _ = _record(k, _mi(0.05, 10_000.0 * (1 + 0.3 * np.sin(k)), 0.05 + 0.01 * (k % 3)))
        evs.append(("record", cid, (fx, rng.normal(size=learner.D) * 0.1)))
    learner.handle(evs)
    learner.flush()


@pytest.mark.full  # needs a pareto_smoke training (the smoke_ckpt fixture)
def test_restore_offline_has_every_stage_segment(smoke_ckpt):
    from jaxcc import online

    off = online.restore_offline(smoke_ckpt)
    assert off["label"] == "Pareto-Fair" and off["stage"] == 2
    buf = off["state"]["buffer"]
    assert buf.seg_size.tolist() == [512, 512, 512] and int(np.sum(buf.seg_count)) > 0
    st = online.restore_offline(os.path.join(smoke_ckpt, "stages", "Pareto-Advance"))
    assert st["label"] == "Pareto-Advance" and st["stage"] == 1
    with pytest.raises(ValueError, match="no such directory"):
        online.restore_offline(os.path.join(smoke_ckpt, "nope"))


@pytest.mark.full
def test_learner_learns_pushes_and_resumes_after_restart(smoke_ckpt, tmp_path):
    from jaxcc import online, policyfile

    out = str(tmp_path / "o")
    kw = dict(buffers="local", replicas=2, online_segment=256, updates_per_s=1e6, push_every=2, checkpoint_every_s=1e9)
    a = online.Learner(smoke_ckpt, out, **kw)
    assert not a.resumed and a.K == 2
    # The learn and add steps were compiled before any record (Learner._compile_ahead), on no-op
    # inputs: running that again leaves every leaf of the online state as it was.
    s0 = jax.tree.map(np.asarray, a.ostate)
    assert a.compile_s > 0 and a._compile_ahead() >= 0
    jax.tree.map(np.testing.assert_array_equal, s0, jax.tree.map(np.asarray, a.ostate))
    _feed(a, 60, fid=0, cid=0)
    _feed(a, 20, fid=1, cid=1)
    assert a._count(a.ostate).tolist() == [59, 19]
    assert a.learn_once()  # replica 0 has >= batch size (32) online transitions, replica 1 not yet
    assert a.ostate["gstep"].tolist()[0] == a.ostate["gstep"].tolist()[1] + a.grad_steps
    old = os.path.join(smoke_ckpt, "stages", "Pareto-Fair.safetensors")
    assert open(a.v0_path, "rb").read() != b"" and policyfile.load(a.v0_path)[0]["stage"] == "Pareto-Fair"
    np.testing.assert_array_equal(policyfile.load(a.v0_path)[1]["fc1.kernel"], policyfile.load(old)[1]["fc1.kernel"])
    # --critic-warmup: the critics learn, the actor holds still.
    a.critic_warmup = a.meta["grad_steps"] + a.grad_steps
    act0, c0 = (jax.tree.map(np.asarray, a.ostate["agent"][k]) for k in ("actor", "critic1"))
    assert a.learn_once()
    jax.tree.map(np.testing.assert_array_equal, act0, jax.tree.map(np.asarray, a.ostate["agent"]["actor"]))
    assert not np.array_equal(c0["q"]["kernel"][0], np.asarray(a.ostate["agent"]["critic1"]["q"]["kernel"][0]))
    assert float(a.ostate["hp"]["lr_actor"]) > 0
    a.meta["version"] = 4
    a.checkpoint()
    before = jax.tree.map(np.asarray, a.ostate)
    a.close()

    b = online.Learner(smoke_ckpt, out, **kw)
    assert b.resumed and b.meta["version"] == 4 and b.meta["grad_steps"] == 2 * a.grad_steps
    assert b.meta["replica_of"] == {"0": 0, "1": 1} and b.start_actor_path == b.latest_path
    jax.tree.map(np.testing.assert_array_equal, before, jax.tree.map(np.asarray, b.ostate))
    # The newest online actor is the one a restarted network starts with.
    np.testing.assert_array_equal(policyfile.load(b.latest_path)[1]["out.kernel"],
                                  before["agent"]["actor"]["out"]["kernel"][0])
    _feed(b, 10, fid=0, cid=0, start=60)  # the flow goes on where it was (no HELLO: the learner
    assert b._count(b.ostate).tolist() == [59, 19]  # restarted, records before a HELLO are not used)
    assert b.counters["records_before_hello"] == 10
    # The senders' WEIGHTS_ACKs: a blob replaced in the mailbox before any decision took it is
    # superseded, not rejected.
    b.handle([("ack", 0, {"version": 5, "ok": False, "reason": "superseded by version 6 before it was applied"}),
              ("ack", 0, {"version": 6, "ok": False, "reason": "spec: layers differ"}),
              ("ack", 0, {"version": 7, "ok": True, "decision": 3, "t_s": 1.0})])
    assert (b.counters["weights_superseded"], b.counters["weights_rejected"], b.counters["updates_applied"]) == (1, 1, 1)
    b.close()


def test_online_rows_by_hand():
    assert [alg.online_rows(32, x) for x in (0.5, 0.9, 0.99, 0.01)] == [16, 3, 1, 31]  # clamped to [1, 31]
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="old_share must be in"):
            alg.online_rows(32, bad)


@pytest.mark.full  # needs a pareto_smoke training (the smoke_ckpt fixture)
def test_old_share_splits_each_minibatch_and_reports_the_share(smoke_ckpt, tmp_path):
    from jaxcc import online

    kw = dict(buffers="local", replicas=1, online_segment=256, updates_per_s=1e6, push_every=1000,
              checkpoint_every_s=1e9)
    a = online.Learner(smoke_ckpt, str(tmp_path / "prio"), **kw)  # Algorithm 4's sampling: priority alone
    b = online.Learner(smoke_ckpt, str(tmp_path / "split"), old_share=0.25, **kw)
    changed = []
    for x in (a, b):
        _feed(x, 60)
        before = np.asarray(x.ostate["buffer"].priority)[0].copy()
        assert x.learn_once()
        # A sampled slot gets a new priority (eq. 9); one never sampled keeps the one it was added with.
        start = int(np.asarray(x.ostate["buffer"].seg_start)[0, -1])
        changed.append(int((np.asarray(x.ostate["buffer"].priority)[0, start:] != before[start:]).sum()))
    # By priority alone the online segment's share is its share of Σ p^α, by hand from the buffer.
    buf = jax.tree.map(lambda v: np.asarray(v)[0], a.ostate["buffer"])
    pa = np.where(buf.priority > 0, buf.priority.astype(np.float64) ** float(a.ostate["hp"]["alpha"]), 0.0)
    start = int(buf.seg_start[-1])
    np.testing.assert_allclose(a.online_sample_share(), [pa[start:].sum() / pa.sum()], rtol=1e-4)
    assert a.online_sample_share()[0] < 0.5  # the smoke run's offline segments are small
    # The split: 24 of each 32-row minibatch from the online segment, so more online slots are sampled.
    assert b.online_sample_share() == [0.75] and b.old_share == 0.25
    assert changed[1] > changed[0] and changed[1] >= 24
    with pytest.raises(ValueError, match=r"--old-share=0.0: Pareto's online stage .* must be in \(0, 1\)"):
        online.Learner(smoke_ckpt, str(tmp_path / "bad"), old_share=0.0, **kw)
    b.checkpoint()
    for x in (a, b):
        x.close()
    # A resume samples as the checkpoint was learnt, or is refused in one line.
    with pytest.raises(ValueError, match=r"--old-share=-1: .*/split/online_ckpt was learnt with 0.25; give that"):
        online.Learner(smoke_ckpt, str(tmp_path / "split"), **kw)
    c = online.Learner(smoke_ckpt, str(tmp_path / "split"), old_share=0.25, **kw)
    assert c.resumed and c.online_sample_share() == [0.75]
    c.close()


# ----------------------------------------------------------------------------- end to end over the simulator


@pytest.mark.full
def test_end_to_end_over_the_sim_backend(smoke_ckpt, tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "jaxcc.online", f"--checkpoint={smoke_ckpt}", "--scenario=pareto/shared2",
           "--emulator=sim", "--minutes=1", "--speed=4", f"--out={out}", "--old-envs=pareto/fixed50",
           "--old-env-neighbours=2", "--push-every=16"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads((out / "results.json").read_text())
    for k in ("first_minute", "last_minute"):
        assert set(r[k]) >= {"throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain"}
        assert 0 < r[k]["utilization"] <= 1.0 and 0 < r[k]["jain"] <= 1.0
    for k in ("updates_applied", "weights_rejected", "records_dropped", "max_decision_gap_s", "old_env_before",
              "old_env_after"):
        assert k in r
    byes = [s["bye"] for s in r["senders"].values()]
    assert len(byes) == 2 and all(b is not None for b in byes)
    # Counted on both sides of the socket: what the senders say they applied / sent.
    assert r["updates_applied"] == sum(b["weights_applied"] for b in byes) >= 2
    assert r["weights_rejected"] == 0 == sum(b["weights_rejected"] for b in byes)
    assert r["records"] == sum(b["records_sent"] for b in byes) and r["records_dropped"] == 0
    assert r["transitions"] == r["records"] - 2 and r["record_gaps"] == 0
    # The learner re-derives the sender's features from the MI sums (Algorithm 1's inputs).
    assert all(s["feature_err"] < 1e-3 for s in r["senders"].values())
    assert r["timeline"]["weight_version"][-1] >= 1 and r["grad_steps"] > 0
    assert 0 < r["max_decision_gap_s"] < 1.0
    assert set(r["old_env_before"]) == set(r["old_env_after"]) == {"pareto/fixed50"}
    assert r["old_env_neighbours"] == 2 and set(r["old_env_neighbourhood_change"]) == {"pareto/fixed50"}
    assert (out / "online.png").stat().st_size > 0


@pytest.mark.full
def test_kill9_learner_then_restart_resumes_and_senders_continue(smoke_ckpt, tmp_path):
    """The learner is killed with SIGKILL mid-run; the simulated senders (a child process that
    outlives it) keep their policy and reconnect; a learner started again on the same ``--out``
    and address resumes from its online checkpoint and its pushes continue the version count."""
    import signal
    import time

    out = tmp_path / "run"
    common = [sys.executable, "-m", "jaxcc.online", f"--checkpoint={smoke_ckpt}", f"--out={out}", "--old-envs=",
              "--push-every=8", "--checkpoint-every-s=2"]
    log1 = tmp_path / "first.stderr"
    first = subprocess.Popen(common + ["--scenario=pareto/shared2", "--emulator=sim", "--minutes=2.5", "--speed=1.5"],
                             cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(log1, "w"))
    net_pid = None
    try:
        ck = out / "online_ckpt"
        deadline = time.time() + 150
        # Kill only once a sender has acknowledged an applied update (not on a timer: under load
        # a push may take seconds to reach a sender's decision).
        while time.time() < deadline and not (ck.is_dir() and "(its first update applied)" in log1.read_text()):
            time.sleep(0.5)
        assert first.poll() is None, log1.read_text()[-2000:]
        assert "(its first update applied)" in log1.read_text(), log1.read_text()[-2000:]
        net_pid = int((out / "net.pid").read_text())
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = time.time()
        os.kill(net_pid, 0)  # the senders are still running
        # serves until both senders said BYE (the simulated run's end), at most 3 minutes
        second = subprocess.run(common + ["--emulator=external", "--minutes=3"], cwd=REPO, capture_output=True,
                                text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "resumed" in second.stderr
        r = json.loads((out / "results.json").read_text())
        assert r["resumed"] and r["sessions"] == 2
        hellos = [s["hello"] for s in r["senders"].values() if s["hello"]]
        # the senders kept the policy pushed before the kill (a flow that joined after the last
        # push still runs version 0)
        assert len(hellos) == 2 and max(h["weight_version"] for h in hellos) >= 1, hellos
        v_before = max(h["weight_version"] for h in hellos)
        assert r["weight_version"] > v_before and r["updates_applied"] >= 1
        byes = [s["bye"] for s in r["senders"].values() if s["bye"]]
        assert len(byes) == 2 and all(b["weight_version"] == r["weight_version"] for b in byes)
        assert all(b["weights_rejected"] == 0 for b in byes)
        assert time.time() - killed_at < 240
    finally:
        if first.poll() is None:
            first.kill()
        if net_pid is not None:
            try:
                os.kill(net_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_cli_refuses_bad_arguments_in_one_line(tmp_path, capsys, monkeypatch):
    from absl import flags

    from jaxcc import online

    def err(*extra):
        a = online.define_flags(flags.FlagValues())
        a(["online", "--checkpoint=/nope", "--emulator=sim", f"--out={tmp_path}", *extra])
        with pytest.raises(ValueError) as e:
            online.run(a)
        return str(e.value)

    assert "--minutes=0.0: must be > 0" in err("--minutes=0", "--scenario=pareto/lte")
    assert "exactly one of --scenario, --scenario-file" in err("--minutes=1")
    assert "--replay-ratio=-1.0" in err("--minutes=1", "--scenario=pareto/lte", "--replay-ratio=-1")
    assert "expected KEY=NUMBER" in err("--minutes=1", "--scenario=pareto/lte", "--hp=lr_actor")
    assert "--old-share=1.0: must be in [0, 1)" in err("--minutes=1", "--scenario=pareto/lte", "--old-share=1")
    assert "--explore=0.1: only the simulator backend's senders explore" in err(
        "--minutes=1", "--scenario=pareto/lte", "--explore=0.1", "--emulator=netns")
    assert "--explore=2.0: must be in [0, 1]" in err("--minutes=1", "--scenario=pareto/lte", "--explore=2")
    assert "no such directory" in err("--minutes=1", "--scenario=pareto/lte")
    # the key, checked before the checkpoint is read: a tcp: learner needs one; a short one is refused
    assert "a tcp: link must be authenticated; give --key=FILE" in err("--minutes=1", "--scenario=pareto/lte",
                                                                        "--learner=tcp:127.0.0.1:0")
    (tmp_path / "short.key").write_bytes(b"0123456789abcde\n")
    assert (f"--key={tmp_path / 'short.key'}: key file has 15 bytes; it must hold at least 16 bytes"
            in err("--minutes=1", "--scenario=pareto/lte", f"--key={tmp_path / 'short.key'}"))
    (tmp_path / "good.key").write_bytes(os.urandom(32))
    assert "no such directory" in err("--minutes=1", "--scenario=pareto/lte", "--learner=tcp:127.0.0.1:0",
                                      f"--key={tmp_path / 'good.key'}")
    # the command: one line on stderr, exit 2 (run_cli sets XLA_FLAGS when unset; keep this process's)
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    base = ["online", "--checkpoint=/nope", f"--out={tmp_path}"]
    capsys.readouterr()
    assert online.run_cli(base + ["--emulator=nope", "--minutes=1"]) == 2
    assert online.run_cli(base + ["--emulator=sim", "--scenario=pareto/lte"]) == 2  # --minutes is required
    assert online.run_cli(base + ["--emulator=sim", "--minutes=0", "--scenario-file=x.json"]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 3 and all(e.startswith("error: ") for e in err_lines)
    assert "--emulator=nope" in err_lines[0] and "--minutes" in err_lines[1] and "--minutes=0.0" in err_lines[2]


@pytest.mark.full
def test_flood_benchmark_counts_what_the_learner_took(smoke_ckpt, tmp_path):
    """--emulator=flood: 2 senders flood records for 6 s while the learner learns; no record is
    counted twice (taken + dropped by the learner's bounded queue <= sent; what is still queued
    or in the sockets at the end is neither), and the learner keeps learning under the flood
    (the transitions reach the online segment)."""
    out = tmp_path / "flood"
    cmd = [sys.executable, "-m", "jaxcc.online", f"--checkpoint={smoke_ckpt}", "--emulator=flood", "--replicas=2",
           "--minutes=0.1", f"--out={out}", "--old-envs="]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads((out / "results.json").read_text())
    fl = r["flood"]
    assert fl["flows"] == 2 and fl["records_sent"] >= 2 * 64
    assert r["records"] + r["learner_events_dropped"] <= fl["records_sent"], (r["records"], r["learner_events_dropped"])
    assert r["records_per_s"] > 0 and r["grad_steps"] > 0 and r["transitions"] > 0
    assert r["protocol_errors"] == 0 and len(r["senders"]) == 2
