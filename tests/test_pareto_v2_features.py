"""Pareto-Fair v2 (feature set ``pareto_v2``): the sixth feature by hand, the first five equal to
``pareto_v1``'s, the action range a file must state, and the exported file end to end.

The parity vector ``tests/vectors/features_pareto_v2.json`` holds the environment's numbers for the
simulator's sender (``tests/test_senders.py``) and the C++ twin (``datapath/tests/features_test.cc``,
which has the same hand test); its policy is built as the Pareto trainer exports an actor
(``jaxcc.agents.pareto.networks.actor_spec``), so both reading it is the export round trip.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import parity_vectors, policyfile, senders
from jaxcc.envs import mi as mi_lib
from jaxcc.senders import common, pareto_v1, pareto_v2

VECTORS = pathlib.Path(__file__).parent / "vectors"


def _mi(pkts: int, r_min: float, r_other: float, dtype) -> mi_lib.MIStats:
    """A 0.12 s MI whose ``pkts`` packets of 1500 bytes were ACKed, one with RTT ``r_min`` and
    the rest with ``r_other`` (two weighted samples, as the per-packet sums give)."""
    m = mi_lib.mi_zero(1, dtype)
    if pkts:
        for w, r, t in ((1500.0, r_min, 0.06), ((pkts - 1) * 1500.0, r_other, 0.03)):
            m = mi_lib.mi_add_sample(m, jnp.full((1,), w, dtype), jnp.full((1,), r, dtype), jnp.full((1,), t, dtype))
    d = jnp.full((1,), 0.12, dtype)
    return m.replace(duration=d, active=d, sent=jnp.full((1,), pkts * 1500.0, dtype))


# (packets, the MI's smallest RTT, its other RTTs, the sixth feature by hand).  R is the EWMA
# (gain 0.8) of the delivery rate pkts·1500 / 0.12 s; q = R·(MI min − min RTT) / 1500.
HAND = (
    (1000, 0.1, 0.1, 0.0),  # R = 12.5e6 B/s (100 Mbit/s); sets the min RTT: q = 0
    (1000, 0.1012, 0.103, math.log2(1 + 12.5e6 * 0.0012 / 1500) / 8),  # q = 10 packets -> log2(11)/8
    (0, 0.0, 0.0, 0.0),  # no RTT sample: q = 0 although R = 0.2·12.5e6 > 0
    (500, 0.1006, 0.104, math.log2(1 + (0.8 * 6.25e6 + 0.2 * 2.5e6) * 0.0006 / 1500) / 8),  # q = 2.2
    (500, 0.099, 0.1, 0.0),  # a new, lower min RTT: q = 0
)


@pytest.mark.parametrize("dtype,tol", [(jnp.float64, 1e-6), (jnp.float32, 1e-5)])
def test_own_queue_feature_by_hand(dtype, tol):
    """The sender's sixth feature (the environment's ``pareto.observe_features``) on MIs whose
    value is worked out by hand (12.5e6 · 0.0012 / 1500 = 10 packets → log2(11)/8 ≈ 0.4324),
    in float64 and in the simulator's float32."""
    assert HAND[1][3] == pytest.approx(math.log2(11) / 8) and HAND[3][3] == pytest.approx(math.log2(3.2) / 8)
    spec, tensors = policyfile.make_feature_policy("pareto_v2", 0)
    snd = pareto_v2.sender(spec, tensors)
    with jax.enable_x64(dtype == jnp.float64):
        own, run = snd.start(None), mi_lib.running_zero(1, dtype)
        own = own._replace(paper=jax.tree.map(
            lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, own.paper))
        for i, (pkts, r_min, r_other, want) in enumerate(HAND):
            m = _mi(pkts, r_min, r_other, dtype)
            run = mi_lib.running_update(run, m)
            x, own = snd.observe(own, m, run, 0.1)
            assert x.shape == (6,)
            assert abs(float(x[5]) - want) <= tol * abs(want) + 1e-7, (i, float(x[5]), want)


def test_first_five_features_are_pareto_v1s():
    """On the parity vector's events (queues, losses, MIs without samples) v2's first five features
    are exactly v1's and the sixth is 0 where the MI has no RTT sample, > 0 where a queue stood."""
    vec = json.loads((VECTORS / "features_pareto_v2.json").read_text())
    spec2, tensors = policyfile.load(VECTORS / vec["policy"])
    spec1 = dict(spec2, features=dict(spec2["features"], name="pareto_v1", obs_dim=5))
    s1, s2 = pareto_v1.sender(spec1, tensors), pareto_v2.sender(spec2, tensors)
    rtt0 = float(vec["rtt_guess"])
    sixth = []
    with jax.enable_x64(True):
        run = mi_lib.running_zero(1, jnp.float64)
        o1, o2 = s1.start(rtt0), s2.start(rtt0)
        add_sample = jax.jit(mi_lib.mi_add_sample)
        for rec in vec["mis"]:
            m = parity_vectors.event_mi(add_sample, rec)
            run = mi_lib.running_update(run, m)
            x1, o1 = s1.observe(o1, m, run, rtt0)
            x2, o2 = s2.observe(o2, m, run, rtt0)
            np.testing.assert_array_equal(np.asarray(x2)[:5], np.asarray(x1))
            sixth.append((bool(rec["samples"]), float(x2[5])))
    assert all(q == 0.0 for has, q in sixth if not has) and sum(not has for has, _ in sixth) >= 2
    assert sum(q > 0.1 for _, q in sixth) >= 4


def test_vector_policy_is_the_trainers_export():
    """The vector's file is what the Pareto trainer exports for v2: its actor spec, the
    environment's feature block (6 features, action_low/high) and a head over [−0.3, 0.5], whose
    actions in the vector take both signs (the head's range is exercised, not just its middle)."""
    from jaxcc.agents.pareto import networks
    from jaxcc.envs.registry import export_features_spec

    vec = json.loads((VECTORS / "features_pareto_v2.json").read_text())
    spec, tensors = policyfile.load(VECTORS / vec["policy"])
    feats = export_features_spec("pareto", feature_set="pareto_v2")
    assert spec["features"]["name"] == "pareto_v2" and spec["features"]["obs_dim"] == 6
    assert (feats["action_low"], feats["action_high"]) == (-0.3, 0.5)
    mi_rtts = feats.pop("mi_rtts")
    want = networks.actor_spec(feats["history"], 6, 32, 32, mi_rtts=mi_rtts, features=feats, a_range=(-0.3, 0.5))
    assert json.loads(json.dumps(want)) == spec
    acts = [m["output"][0] for m in vec["mis"]]
    assert max(acts) > 0.05 and min(acts) < -0.05


def test_file_must_fit_the_feature_set():
    """A v2 file whose head is §III's [−0.7, 2] or whose action is not rate·(1 + a) is refused in
    one line naming the field; the random ``--random=pareto_v2`` policy fits."""
    spec, tensors = policyfile.make_feature_policy("pareto_v2", 1)
    assert spec["head"] == {"type": "continuous", "low": -0.3, "high": 0.5}
    pareto_v2.sender(spec, tensors)
    with pytest.raises(ValueError, match=r"pareto_v2: head must be continuous over .*\[-0.3, 0.5\]") as e:
        pareto_v2.sender(dict(spec, head={"type": "continuous", "low": -0.7, "high": 2.0}), tensors)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="pareto_v2: action must be rate_multiplicative"):
        pareto_v2.sender(dict(spec, action={"type": "aurora", "alpha": 0.025}), tensors)


def test_policy_controller_matches_env_rollout(tmp_path):
    """``policy:FILE`` of an exported v2 actor takes, in the simulator, the actions the actor takes
    in the v2 training environment (its six features and its [−0.3, 0.5] range), on a 2 Mbit/s
    link where it first raises its rate (≈ +10% per step) and then, as the queue builds, lowers it."""
    from jaxcc import scenarios
    from jaxcc.agents import pipeline
    from jaxcc.agents.pareto import env_adapter, networks
    from jaxcc.envs.rollout import rollout
    from jaxcc.sim import runner

    se = env_adapter.make_stage_env("bootstrap", overrides={"feature_set": "pareto_v2"})
    assert se.obs_dim == 6 and tuple(se.a_range) == (-0.3, 0.5)
    spec = networks.actor_spec(se.history, se.obs_dim, 16, 16, mi_rtts=se.mi_rtts, features=se.feature_info,
                               a_range=se.a_range)
    params = networks.init_actor(jax.random.PRNGKey(7), se.obs_dim, 16, 16, se.a_range)
    params["out"]["kernel"] = params["out"]["kernel"] * 60.0
    params["out"]["bias"] = params["out"]["bias"] * 0.0  # the middle of the range: a = +0.1
    path = str(tmp_path / "p.safetensors")
    policyfile.save(path, spec, {k: np.asarray(v) for k, v in pipeline.flat(params).items()})

    n = 24
    p = se.params.replace(boot_mbps=jnp.asarray([2.0]))
    pol = lambda k, obs, st, pp: jax.vmap(lambda o: networks.actor_apply(spec, params, o))(obs)  # noqa: E731
    _, _, _, info, _ = jax.jit(lambda k: rollout(se.env, p, k, pol, n))(jax.random.PRNGKey(0))
    env_rates = np.asarray(info["rate"][:, 0])

    ctrl, _ = senders.resolve(f"policy:{path}")
    assert ctrl.name == f"policy:{os.path.abspath(path)}"
    sc = scenarios.get_scenario("pareto/fixed50")
    sc = dataclasses.replace(sc, duration_s=n * 0.18 + 0.01, link=dataclasses.replace(sc.link, bandwidth_mbps=2.0))
    sc = sc.with_controller(f"policy:{path}")
    _, _, rates = runner.run_batch(runner.build_batches([runner.Item(sc)], resolve=senders.resolve)[0])
    mi_ticks = int(round(spec["mi_rtts"] * spec["features"]["ticks_per_rtt"]))
    sim_rates = rates[0, ::mi_ticks, 0][:n]
    np.testing.assert_allclose(sim_rates, env_rates, rtol=1e-5)
    steps = np.diff(np.log(env_rates))
    assert steps.max() > 0.05 and steps.min() < -0.05  # it raised and lowered its rate
    assert np.all(steps <= np.log1p(0.5) + 1e-6) and np.all(steps >= np.log1p(-0.3) - 1e-6)


def _replay_mi(row: dict) -> mi_lib.MIStats:
    """The MI statistics pareto_v2 reads (duration, sent, acked, lost, RTT mean and min), float64,
    from one row of ``jaxcc-sender --log`` (rates in Mbit/s, RTTs in ms)."""
    f64 = jnp.float64
    dur = float(row["mi_s"])
    acked = float(row["throughput_mbps"]) * 125_000.0 * dur
    loss = float(row["loss"])
    lost = loss * acked / (1.0 - loss) if loss < 1.0 else 1500.0
    has = acked > 0
    m = mi_lib.mi_zero(1, f64)
    one = lambda x: jnp.full((1,), x, f64)  # noqa: E731
    return m.replace(duration=one(dur), active=one(dur), sent=one(float(row["sent_mbps"]) * 125_000.0 * dur),
                     acked=one(acked), lost=one(lost), rtt_wsum=one(float(row["rtt_mean_ms"]) * 1e-3 * acked),
                     rtt_min=one(float(row["rtt_min_ms"]) * 1e-3 if has else mi_lib.BIG),
                     n_samples=one(1.0 if has else 0.0))


def test_sender_binary_run_replays_in_the_python_sender(tmp_path):
    """The C++ sender (``jaxcc-sender``) drives a real flow on loopback with the v2 vector's file;
    its per-MI log, fed through the Python sender, gives the same action after every MI and the
    same rate in force during the next (the C++ binary's whole loop: MI statistics on real
    packets, the six features, the window, the network, rate·(1 + a))."""
    import csv
    import socket
    import subprocess
    import time

    from jaxcc.emulation import host

    snd_bin, rcv_bin = host.sender_binary(), host.receiver_binary()
    if snd_bin is None or rcv_bin is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "s.csv"
    rcv = subprocess.Popen([str(rcv_bin), f"--port={port}", "--bind=127.0.0.1", "--duration=30"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        pol = VECTORS / "features_pareto_v2.safetensors"
        subprocess.run([str(snd_bin), f"--controller=policy:{pol}", f"--port={port}", "--duration=2",
                        "--min-mi-ms=20", f"--log={log}"], check=True, timeout=30, capture_output=True)
    finally:
        rcv.terminate()
        rcv.wait(timeout=10)
    rows = list(csv.DictReader(log.open()))
    assert len(rows) > 20

    spec, tensors = policyfile.load(pol)
    snd = pareto_v2.sender(spec, tensors)
    ten = {k: jnp.asarray(v) for k, v in tensors.items()}
    rate_of = lambda row: float(row["rate_mbps"]) * 125_000.0  # noqa: E731

    @jax.jit
    def step(own, hist, run, m, rate_in):
        """One MI of the Python sender: features, window, the action, the next rate."""
        run = mi_lib.running_update(run, m)
        x, own = snd.observe(own, m, run, 0.1)
        hist = common.push(hist, x.astype(jnp.float32))
        a = jnp.reshape(policyfile.apply(spec, ten, hist), (-1,))[0]
        own = snd.decide(own._replace(rate=rate_in), hist, run, 0.1)
        return own, hist, run, a

    with jax.enable_x64(True):
        hist = common.empty_window(spec, None)
        run = mi_lib.running_zero(1, jnp.float64)
        own = snd.decide(snd.start(0.1), hist, run, 0.1)
        assert float(own.rate) == pytest.approx(rate_of(rows[0]), rel=1e-5)
        acts = []
        for i, row in enumerate(rows):
            # The rate in force during the MI as the C++ logged it (Python's own is checked below).
            own, hist, run, a = step(own, hist, run, _replay_mi(row), jnp.float32(rate_of(row)))
            assert float(a) == pytest.approx(float(row["action"]), rel=1e-5, abs=1e-6), f"MI {i}: action"
            if i + 1 < len(rows):
                assert float(own.rate) == pytest.approx(rate_of(rows[i + 1]), rel=1e-5), f"MI {i}: rate"
            acts.append(float(a))
    assert min(acts) >= -0.3 - 1e-6 and max(acts) <= 0.5 + 1e-6
    assert len(set(np.round(acts, 4))) > 3  # the policy reacted to what it saw
