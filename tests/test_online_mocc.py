"""MOCC's online stage (``jaxcc.online.mocc``): §IV-A's vector reward from a sender's MI sums
against hand-computed values, records → transitions (the init-cwnd decision and gaps left out),
the envelope updates toward the new preference, and the learner on a mocc_smoke run: learn,
push a policy file the C++ sender's loader takes, resume, refuse another preference."""

import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.online import experience as X
from jaxcc.online import mocc as alg

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mi(dur, acked, rtt, n=10, sent=None, lost=0.0):
    sent = acked if sent is None else sent
    return [dur, dur, sent, acked, lost, rtt * acked, rtt, rtt, rtt, rtt, n, acked, 0.0, 0.0, rtt * acked, 0.0]


def _params(**kw):
    from jaxcc.envs import mocc as menv

    return menv.MoccParams(**{k: jnp.asarray(v, jnp.float32) for k, v in kw.items()}) if kw else menv.MoccParams()


def test_record_reward_matches_hand_computed_iv_a():
    # MI of 20 ms: 100 kB acked (5 MB/s), 110 kB sent, 10 kB lost, mean RTT 30 ms, min RTT 20 ms;
    # the flow's largest ACK rate 6 MB/s.  Timeout max(0.2 s, 2 × 20 ms) = 0.2 s.
    mi = _mi(0.02, 1e5, 0.03, sent=1.1e5, lost=1e4)
    p = _params(delay_objective=1.0, qdelay_scale=4.0, thr_floor=0.0)
    r, f = alg.record_reward(jnp.asarray([mi]), jnp.asarray([0.02]), jnp.asarray([6e6]), p)
    loss = 1e4 / 1.1e5
    want = [1 - 10 ** (-5 / 6), -math.log2(1 + 0.5) / 4.0, -(1 - 10 ** (-loss))]
    np.testing.assert_allclose(np.asarray(r[0]), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(f[0]), [0.03 / 0.2, 5 / 6, 5.5 / 6], rtol=1e-5)
    # §IV-A's own delay objective (mocc_paper): −L(delay / timeout); the floor adds ε·r_thr.
    p = _params(delay_objective=0.0, thr_floor=0.1)
    r, _ = alg.record_reward(jnp.asarray([mi]), jnp.asarray([0.02]), jnp.asarray([6e6]), p)
    thr = 1 - 10 ** (-5 / 6)
    np.testing.assert_allclose(np.asarray(r[0]), [thr, -(1 - 10 ** (-0.15)) + 0.1 * thr,
                                                  -(1 - 10 ** (-loss)) + 0.1 * thr], rtol=1e-5)
    # No RTT sample: the delay is the min RTT (no queue); nothing acked yet: features 1–2 are 0.
    r, f = alg.record_reward(jnp.asarray([_mi(0.02, 0.0, 0.0, n=0, sent=1e4)]), jnp.asarray([0.02]),
                             jnp.asarray([0.0]), _params(delay_objective=1.0))
    assert float(r[0, 1]) == 0.0 and np.asarray(f[0]).tolist()[1:] == [0.0, 0.0]


def test_check_preference_is_one_line():
    assert alg.check_preference([0.2, 0.7, 0.1]) == (0.2, 0.7, 0.1)
    for bad in ([0.5, 0.5], [0.5, 0.6, 0.1], [-0.1, 1.0, 0.1], [float("nan"), 0.5, 0.5]):
        with pytest.raises(ValueError, match="expected 3 numbers >= 0"):
            alg.check_preference(bad)


def _record(seq, mi, action, feats=None):
    fx = np.zeros(24)
    fx[X.F["seq"]], fx[X.F["t_s"]], fx[X.F["action"]] = seq, 0.02 * seq, action
    fx[X.F["min_rtt_s"]] = 0.02
    fx[X.MI_COLS] = mi
    return fx, (np.full(4, float(seq), np.float32) if feats is None else feats)


def test_mocc_track_skips_the_init_cwnd_decision_gaps_and_fallback():
    from jaxcc.online.tracks import MoccTrack

    p = _params(delay_objective=1.0)
    fn = jax.jit(lambda m, mr, mx: alg.record_reward(m, mr, mx, p))
    tr = MoccTrack(2, 4, [0.0] * 4, 7, 2, fn)
    # ACK rates 1, 2, 1.5, 1 MB/s: the reward of record k+1 divides by the largest so far.
    acked = [2e4, 4e4, 3e4, 2e4, 2e4]
    out = [tr.push(*_record(k, _mi(0.02, acked[k], 0.02), action=k + 1)) for k in range(5)]
    # Record 0 closes nothing; record 1 closes (window_0, a_0 = 1); record 1's decision is the one
    # the init-cwnd overrode (init_step 2), so record 2 closes nothing; record 3 closes record 2's.
    assert [o is None for o in out] == [True, False, True, False, False] and tr.skipped_override == 1
    t = out[1]
    assert t["obs"].tolist() == [0.0] * 4 + [0.0] * 4 and t["next_obs"].tolist() == [0.0] * 4 + [1.0] * 4
    assert int(t["action"]) == 1 and t["reward"].shape == (3,) and float(t["done"]) == 0.0
    assert math.isclose(float(t["reward"][0]), 1 - 10 ** -1.0, rel_tol=1e-5)  # 2 MB/s of a best 2 MB/s
    assert int(out[3]["action"]) == 3
    assert math.isclose(float(out[3]["reward"][0]), 1 - 10 ** -0.5, rel_tol=1e-5)  # 1 of 2 MB/s
    assert out[3]["obs"].tolist() == [1.0] * 4 + [2.0] * 4 and out[4]["obs"].tolist() == [2.0] * 4 + [3.0] * 4
    # A gap: nothing until the window holds 2 consecutive records again; a NaN action (the
    # fallback decided) or an index outside the table is not stored.
    res = [tr.push(*_record(k, _mi(0.02, 2e4, 0.02), action=a)) for k, a in ((7, 0), (8, float("nan")), (9, 7),
                                                                              (10, 0), (11, 6), (12, 2))]
    assert [r is None for r in res] == [True, True, True, True, False, False] and tr.gaps == 1
    assert int(res[4]["action"]) == 0 and int(res[5]["action"]) == 6


def test_mocc_track_keeps_the_max_ack_rate_over_the_senders_ewma():
    """With ``max_ack_ewma`` 0.25 the track's max ACK rate is the running max of the EWMA of the
    MI ACK rates 1, 2, 2 MB/s: 1, 1.25, 1.4375 (by hand); the throughput reward of the third
    record is L(2 / 1.4375)."""
    from jaxcc.online.tracks import MoccTrack

    p = _params(delay_objective=1.0)
    fn = jax.jit(lambda m, mr, mx: alg.record_reward(m, mr, mx, p))
    tr = MoccTrack(1, 4, [0.0] * 4, 7, 0, fn, max_ack_ewma=0.25)
    maxes, outs = [], []
    for k, acked in enumerate((2e4, 4e4, 4e4)):
        outs.append(tr.push(*_record(k, _mi(0.02, acked, 0.02), action=3)))
        maxes.append(tr.max_ack)
    np.testing.assert_allclose(maxes, [1e6, 1.25e6, 1.4375e6])
    assert math.isclose(float(outs[2]["reward"][0]), 1 - 10 ** -(2 / 1.4375), rel_tol=1e-5)


def _offline_state(seed=0):
    """An untrained mocc_smoke state with a filled offline buffer (random rows)."""
    from jaxcc.agents import mocc_envelope as moq
    from jaxcc.agents.replay import replay_add
    from jaxcc.training.configs import load_config

    cfg = load_config(os.path.join(REPO, "configs", "mocc_smoke.py"))
    tr = moq.make_train(cfg)
    st = tr.init(jax.random.PRNGKey(seed))
    n, d = 256, st["buffer"]["obs"].shape[-1]
    k = jax.random.split(jax.random.PRNGKey(seed + 1), 3)
    rows = {"obs": jax.random.uniform(k[0], (n, d)), "next_obs": jax.random.uniform(k[1], (n, d)),
            "reward": -jax.random.uniform(k[2], (n, 3)), "done": jnp.zeros((n,)),
            "action": jnp.arange(n, dtype=jnp.int32) % 7}
    return cfg, tr, {**st, "buffer": replay_add(st["buffer"], rows, jnp.ones((n,), bool))}


def _repeated_transition(replicas, d):
    """Eight copies per replica of one transition: obs 0.5, action 3, reward (0.9, -0.2, 0)."""
    return {"obs": np.full((replicas, 8, d), 0.5, np.float32), "next_obs": np.full((replicas, 8, d), 0.5, np.float32),
            "action": np.full((replicas, 8), 3, np.int32),
            "reward": np.tile(np.float32([0.9, -0.2, 0.0]), (replicas, 8, 1)),
            "done": np.zeros((replicas, 8), np.float32)}


def test_learn_moves_active_replicas_and_syncs_the_target():
    cfg, tr, off = _offline_state()
    w = (0.2, 0.7, 0.1)
    kw = alg.learn_kwargs(cfg.moq, tr.actor_spec, preference=w, old_share=0.5, target_every=4)
    os_ = alg.init_online(off, replicas=2, online_size=64, seed=0, lr_scale=1.0)
    assert alg.online_count(os_).tolist() == [0, 0]
    d = off["buffer"]["obs"].shape[-1]
    batch = _repeated_transition(2, d)
    os_ = alg.add(os_, batch, np.asarray([[True] * 8, [True] * 3 + [False] * 5]))
    assert alg.online_count(os_).tolist() == [8, 3]
    a0 = jax.tree.map(np.asarray, os_["agent"])
    learn = jax.jit(lambda s, ob, on: alg.learn(s, ob, on, n_steps=6, kw=kw))
    os2, m = learn(os_, off["buffer"], jnp.asarray([True, False]))
    assert m["params_finite"].tolist() == [True, True] and os2["gstep"].tolist() == [6, 0]
    # Replica 1 was inactive: every leaf as it was.
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x[1], y[1]), a0, jax.tree.map(np.asarray, os2["agent"]))
    moved = jax.tree.map(lambda x, y: bool(np.any(x[0] != y[0])), a0["actor"], jax.tree.map(np.asarray, os2["agent"]["actor"]))
    assert all(jax.tree.leaves(moved))
    # θ_k copied from θ after online gradient step 4 (target_every 4), not after 5 and 6.
    t = jax.tree.map(np.asarray, os2["agent"]["target"])
    assert not np.array_equal(t["q"]["kernel"][0], a0["target"]["q"]["kernel"][0])
    assert not np.array_equal(t["q"]["kernel"][0], np.asarray(os2["agent"]["actor"]["q"]["kernel"][0]))
    for bad in (dict(old_share=1.0), dict(old_share=-0.1), dict(target_every=0)):
        with pytest.raises(ValueError):
            alg.learn_kwargs(cfg.moq, tr.actor_spec, preference=w, **bad)


@pytest.mark.full  # a second program and 200 gradient steps; the 6-step wiring test above stays fast
def test_learn_fits_the_new_preference():
    """Online only (old_share 0) on one repeated transition: ω*·Q(s, a, ω*) moves toward ω*·y."""
    cfg, tr, off = _offline_state()
    w = (0.2, 0.7, 0.1)
    d = off["buffer"]["obs"].shape[-1]
    batch = _repeated_transition(1, d)
    kw0 = alg.learn_kwargs(cfg.moq, tr.actor_spec, preference=w, old_share=0.0, target_every=10_000)
    from jaxcc.agents import mocc_envelope as moq

    def gap(agent):
        o = jnp.full((1, d), 0.5)
        q = moq.q_values(tr.actor_spec, agent["actor"], o, jnp.asarray(w))
        qn = moq.q_values(tr.actor_spec, agent["target"], o, jnp.asarray(w))
        y = jnp.asarray([0.9, -0.2, 0.0]) + float(cfg.moq.gamma) * qn[jnp.argmax(qn @ jnp.asarray(w))]
        return float(jnp.abs(jnp.dot(jnp.asarray(w), y - q[3])))

    s1 = alg.init_online(off, replicas=1, online_size=64, seed=0, lr_scale=1.0)
    one = jax.tree.map(lambda x: x[0], s1["agent"])
    s1 = alg.add(s1, batch, np.ones((1, 8), bool))
    s2, _ = jax.jit(lambda s, ob, on: alg.learn(s, ob, on, n_steps=200, kw=kw0))(s1, off["buffer"], jnp.asarray([True]))
    assert gap(jax.tree.map(lambda x: x[0], s2["agent"])) < 0.5 * gap(one)


@pytest.fixture(scope="module")
def mocc_ckpt(tmp_path_factory):
    """A mocc_smoke run (60 updates, seconds)."""
    d = tmp_path_factory.mktemp("mocc") / "run"
    subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=mocc_smoke", f"--workdir={d}", "--no_progress"],
                   check=True, cwd=REPO, capture_output=True, timeout=600)
    return str(d)


def _feed(learner, n, fid=0, cid=0):
    evs = [("hello", cid, {"proto": 1, "flow_id": fid, "history": learner.T, "obs_dim": learner.D,
                           "weight_version": 0})]
    for k in range(n):
        fx, ft = _record(k, _mi(0.02, 2e4 * (1 + 0.3 * np.sin(k)), 0.02 + 0.002 * (k % 3)), action=k % 7,
                         feats=np.full(learner.D, 0.1 * (k % 5), np.float32))
        evs.append(("record", cid, (fx, ft)))
    learner.handle(evs)
    learner.flush()


def test_learner_fine_tunes_a_mocc_run_pushes_loadable_files_and_resumes(mocc_ckpt, tmp_path):
    from jaxcc import online, policyfile

    out = str(tmp_path / "o")
    kw = dict(replicas=1, updates_per_s=1e6, push_every=2, checkpoint_every_s=1e9, preference=[0.2, 0.7, 0.1])
    a = online.Learner(mocc_ckpt, out, **kw)
    assert a.family == "mocc" and not a.resumed and a.reward == "mocc"
    _feed(a, 200)
    assert a.counters["transitions"] == 198 and a.tracks[0].skipped_override == 1
    assert a._count(a.ostate).tolist() == [198]
    th0 = jax.tree.map(np.asarray, a.ostate["agent"]["actor"])
    assert a.learn_once() and a.learn_metrics[-1]["loss"] > 0
    assert not np.array_equal(th0["q"]["kernel"], np.asarray(a.ostate["agent"]["actor"]["q"]["kernel"]))
    # The pushed blob is a policy file the sender's loader takes, the spec as trained.
    path = tmp_path / "p.safetensors"
    path.write_bytes(a.actor_blob(0))
    spec, ten = policyfile.load(str(path))
    assert spec["head"]["type"] == "q_values" and spec["features"]["name"] == "mocc_v1"
    np.testing.assert_array_equal(ten["q.kernel"], np.asarray(a.ostate["agent"]["actor"]["q"]["kernel"][0]))
    # The mean objective of the window's transitions is ω*·r.
    rs = [r for _, r in a.rewards]
    assert len(rs) == 198 and all(-3.0 < r < 1.0 for r in rs)
    a.meta["version"] = 3
    a.checkpoint()
    before = jax.tree.map(np.asarray, a.ostate)
    a.close()
    b = online.Learner(mocc_ckpt, out, **kw)
    assert b.resumed and b.meta["version"] == 3 and b.meta["preference"] == [0.2, 0.7, 0.1]
    jax.tree.map(np.testing.assert_array_equal, before, jax.tree.map(np.asarray, b.ostate))
    b.close()
    with pytest.raises(ValueError, match="fine-tunes toward 0.2,0.7,0.1; use a new --out"):
        online.Learner(mocc_ckpt, out, **{**kw, "preference": [1.0, 0.0, 0.0]})
    with pytest.raises(ValueError, match="give --preference"):
        online.Learner(mocc_ckpt, str(tmp_path / "o2"), replicas=1)
    with pytest.raises(ValueError, match="--anchor=10.0: the anchor is Pareto's"):
        online.Learner(mocc_ckpt, str(tmp_path / "o3"), preference=[0.2, 0.7, 0.1], anchor_w=10.0)


def test_cli_refuses_a_bad_preference_in_one_line(mocc_ckpt, tmp_path):
    p = subprocess.run([sys.executable, "-m", "jaxcc.online", f"--checkpoint={mocc_ckpt}", "--emulator=flood",
                        "--minutes=0.05", f"--out={tmp_path / 'x'}", "--preference=0.5,0.6,0.1"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1] == ("error: --preference=0.5,0.6,0.1: expected 3 numbers >= 0 "
                                                 "(throughput, delay, loss) summing to 1")


# ----------------------------------------------------------------------------- over netns

from test_emulation_preference import _emulation_skip_reason  # noqa: E402  root, netns, the built datapath


# The full tier: about a minute of the real-time part alone (its mocc_smoke run and 20 s of link). The fast
# tier's netns runs of the online path are Pareto's (test_online_net.py, test_online_faults.py); MOCC's
# records, transitions and learner are held by this file's other tests, its C++ features by the
# parity vectors (tests/vectors/features_mocc_v1.json).
@pytest.mark.full
@pytest.mark.emulation
@pytest.mark.datapath
@pytest.mark.skipif(_emulation_skip_reason() is not None, reason=str(_emulation_skip_reason()))
def test_mocc_fine_tunes_over_netns_with_the_preference_it_learns(mocc_ckpt, tmp_path):
    """The C++ sender runs the MOCC file with ``--preference`` (the learner's ω*), streams its
    decisions, and applies the learner's Q networks; the learner re-derives the sender's features
    0–2 from the MI sums and counts every record the senders sent."""
    scen = tmp_path / "link.json"
    scen.write_text(json.dumps({"name": "online/mocc20", "duration_s": 20.0,
                                "link": {"bandwidth_mbps": 12.0, "buffer_bytes": 60000, "loss": 0.0},
                                "flows": [{"rtt_ms": 20.0, "start_s": 0.0, "stop_s": 20.0, "controller": "bbr"}]}))
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "jaxcc.online", f"--checkpoint={mocc_ckpt}", f"--scenario-file={scen}",
                        "--emulator=netns", "--minutes=0.33", f"--out={out}", "--preference=0.2,0.7,0.1",
                        "--push-every=16", "--prefix=jxmo" + os.urandom(2).hex(), "--old-envs="],
                       cwd=REPO, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads((out / "results.json").read_text())
    assert r["family"] == "mocc" and r["preference"] == [0.2, 0.7, 0.1]
    (s,) = r["senders"].values()
    bye = s["bye"]
    assert bye is not None and r["records"] == bye["records_sent"] > 200 and r["records_dropped"] == 0
    assert r["transitions"] == r["records"] - 2 and r["record_gaps"] == 0  # the first record and the init-cwnd one
    assert s["feature_err"] < 1e-3
    assert r["updates_applied"] == bye["weights_applied"] >= 1 and r["weights_rejected"] == 0
    assert r["grad_steps"] > 0 and 0 < r["max_decision_gap_s"] < 0.5
    # The sender ran the learner's preference (its own summary says so).
    net = json.loads((out / "net" / "netns" / "run.json").read_text())
    assert net["per_flow"][0]["sender_summary"]["preference"] == pytest.approx([0.2, 0.7, 0.1])
    assert set(r["operating_point"]) == {"target_throughput_mbps", "target_rtt_ms", "time_s", "first_time_s"}
