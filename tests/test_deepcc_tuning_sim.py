"""DeepCC's online goal tuning inside the simulator sender (``deepcc_v1``): scenario ``target`` /
``goal`` fields reach the sender's parameters, the tuner steps every 4 RTT and moves g the way the
target asks, a fixed goal stays fixed, and the fields are refused for any other controller."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile, scenarios, senders
from jaxcc.senders import goal_tuning as gt
from jaxcc.sim import controller as ctl
from jaxcc.sim import core, runner

RTT_MS, DURATION_S = 40.0, 4.0


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("deepcc") / "deepcc_random.safetensors"
    spec, tensors = policyfile.make_feature_policy("deepcc_v1", 3)
    policyfile.save(path, spec, tensors)
    return str(path)


def _scenario(policy, **flow):
    return scenarios.parse_scenario({"name": "tune", "duration_s": DURATION_S,
                                     "link": {"bandwidth_mbps": 12, "buffer_bytes": 60000},
                                     "flows": [{"rtt_ms": RTT_MS, "controller": f"policy:{policy}", **flow}]})


def _run(sc):
    """Per tick: the goal the flow's last decision used, its tuning steps, and the flow's ``SenderParams``."""
    (batch,) = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    (c,) = batch.controllers
    p = jax.tree.map(lambda x: jnp.asarray(x[0]), batch.params)
    cparams = jax.tree.map(lambda x: jnp.asarray(x[0]), batch.cparams)

    @jax.jit
    def run():
        def body(carry, _):
            sim, cs = carry
            a = jax.vmap(c.act)(cs, cparams)
            sim, out = core.step(p, sim, a.rate, a.cwnd)
            cs = jax.vmap(c.update)(cs, ctl.tick_obs(out, p.dt), cparams)
            return (sim, cs), (cs.own.goal[0], cs.own.tuner.steps[0])
        init = (core.init_state(p, batch.ring_len), jax.vmap(c.init)(cparams))
        return jax.lax.scan(body, init, None, length=batch.num_ticks)[1]

    goals, steps = jax.device_get(run())
    return np.asarray(goals), np.asarray(steps), jax.tree.map(lambda x: x[0, 0], batch.cparams.sender)


def test_unreachable_throughput_target_raises_g1_every_interval(policy):
    """Target 100 Mbit/s on a 12 Mbit/s link (the policy's bound is 10): T̂¹ = 100/thr_max >= 8.3 > 1 >= m¹,
    relative distance > 0.88 > JUMP_THRESHOLD, while delay (1 s) and loss (100 %) are met.  So at every
    tuning step g¹ gets the jump (+0.1) plus an Adam step of the prior's sign (the sign guard keeps
    ∂m¹/∂g¹ > 0 and ∂J/∂f¹ < 0: +), g², g³ only the renormalisation: g¹ rises at every step, g²:g³
    stays 1:1 (until g², g³ reach the floor 0.01), and after k steps g¹ >= 1 − (2/3)/1.1^k.  Steps: one per 8 decisions (½-RTT MIs of
    20 ms: 160 ms), so DURATION_S / 0.16 = 25 at most (the first MI waits for the first RTT sample)."""
    goals, steps, cp = _run(_scenario(policy, target={"throughput_mbps": 100, "delay_ms": 1000, "loss": 1.0,
                                                      "tuner": "paper"}))  # the bound below is the paper's lr 0.05
    np.testing.assert_allclose([*cp.target, cp.target_on], [100, 1000, 1, 1])
    n = int(steps[-1])
    assert DURATION_S / 0.16 - 3 <= n <= DURATION_S / 0.16, n
    at_step = [goals[np.argmax(steps >= k)] for k in range(1, n + 1)]  # the goal right after step k
    for a, b in zip(at_step, at_step[1:]):  # until g², g³ reach eq. 12's floor (then near a fixed point, g¹ ~ 0.98)
        assert b[0] > a[0] if a[1] > gt.G_FLOOR else b[0] >= 0.98, at_step
    for k, g in enumerate(at_step, start=1):
        assert g[0] >= 1 - (2 / 3) / 1.1 ** k - 1e-6
        assert g[1] == pytest.approx(g[2], rel=1e-5)
        assert sum(g) == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(goals[np.argmax(steps >= 1) - 1], 1 / 3)  # before the first step: the default goal


def test_met_target_keeps_goal_and_fixed_goal_is_used(policy):
    """A target every measurement meets (0 Mbit/s, 10 s of queueing, 100 % loss) never moves g;
    a fixed ``goal`` is what every decision uses, and it never tunes."""
    goals, steps, _ = _run(_scenario(policy, target={"throughput_mbps": 0, "delay_ms": 10000, "loss": 1.0}))
    assert steps[-1] >= 20
    np.testing.assert_allclose(goals, 1 / 3, rtol=1e-6)
    goals, steps, cp = _run(_scenario(policy, goal=[0.2, 0.3, 0.5]))
    assert steps[-1] == 0 and cp.target_on == 0
    np.testing.assert_allclose(goals, np.broadcast_to([0.2, 0.3, 0.5], goals.shape), rtol=1e-6)


def test_deterministic(policy):
    sc = _scenario(policy, target={"throughput_mbps": 6, "delay_ms": 5, "loss": 0.0})
    a, b = _run(sc), _run(sc)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1][-1] > 0


def test_fields_refused_for_other_controllers(policy):
    sc = _scenario(policy, target={"throughput_mbps": 6, "delay_ms": 5, "loss": 0.0}).with_controller("bbr")
    (msg,) = senders.preference_refusals(sc)
    assert msg.startswith("tune.flows[0].target: only a goal-tuned policy")
    with pytest.raises(ValueError, match=r"flows\[0\]\.target: only a goal-tuned policy"):
        runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    assert senders.preference_refusals(_scenario(policy, goal=[0.2, 0.3, 0.5])) == []


def test_scenario_field_errors():
    base = {"name": "x", "duration_s": 1, "link": {"bandwidth_mbps": 12, "buffer_bytes": 1e5}}
    cases = [({"target": {"throughput_mbps": 1, "delay_ms": -1, "loss": 0}}, r"x\.flows\[0\]\.target\.delay_ms"),
             ({"target": {"throughput_mbps": 1, "delay_ms": 1, "loss": 1.5}}, r"x\.flows\[0\]\.target\.loss"),
             ({"target": {"delay_ms": 1, "loss": 0}}, r"x\.flows\[0\]\.target\.throughput_mbps: missing"),
             ({"goal": [0.5, 0.6, 0.0]}, r"x\.flows\[0\]\.goal: must be 3 numbers"),
             ({"goal": [0.5, 0.5, 0.0], "target": {"throughput_mbps": 1, "delay_ms": 1, "loss": 0}},
              r"x\.flows\[0\]\.target: give a goal \(fixed\) or a target"),
             ({"goal": [0.5, 0.5, 0.0], "preference": [0.5, 0.5, 0.0]}, r"x\.flows\[0\]\.goal: .*preference")]
    for extra, pat in cases:
        with pytest.raises(ValueError, match=pat):
            scenarios.parse_scenario({**base, "flows": [{"rtt_ms": 40, **extra}]}, source="x")


def test_tuner_field_reaches_sender_and_p95_moves_g3_with_g2(policy):
    """A target's ``"tuner"`` reaches ``SenderParams.target_on`` (1 paper, 2 p95; none named: p95) and
    survives the spec round trip.  Target (0 Mbit/s, 0 ms, 100 %) on a 1 Mbit/s link: throughput and loss always
    met, the delay unmet whenever a queue forms.  The paper's tuner then raises g² alone (g³ only
    shrinks by eq. 12); "p95" gives g³ the delay's gradient, so from ⅓ each g² and g³ stay equal."""
    target = {"throughput_mbps": 0.0, "delay_ms": 0.0, "loss": 1.0}

    def sc(**t):
        return scenarios.parse_scenario({"name": "tune", "duration_s": DURATION_S,
                                         "link": {"bandwidth_mbps": 1, "buffer_bytes": 60000},
                                         "flows": [{"rtt_ms": RTT_MS, "controller": f"policy:{policy}",
                                                    "target": {**target, **t}}]})

    p95, paper = sc(tuner="p95"), sc(tuner="paper")
    assert sc().flows[0].tuner == "p95" and "tuner" not in p95.to_dict()["flows"][0]["target"]
    assert paper.flows[0].tuner == "paper" and paper.to_dict()["flows"][0]["target"]["tuner"] == "paper"
    assert scenarios.parse_scenario(paper.to_dict()).flows[0].tuner == "paper"
    g_paper, steps, sp = _run(paper)
    assert float(sp.target_on) == 1.0 and steps[-1] >= 10
    g_p95, _, sp = _run(p95)
    assert float(sp.target_on) == 2.0
    assert g_paper[-1, 1] > 0.5 and g_paper[-1, 2] < 1 / 3
    np.testing.assert_array_equal(g_p95[:, 1], g_p95[:, 2])
    assert g_p95[-1, 1] > 0.4 and g_p95[-1, 0] < 0.2


def test_tuner_field_errors():
    base = {"name": "x", "duration_s": 1, "link": {"bandwidth_mbps": 12, "buffer_bytes": 1e5}}
    with pytest.raises(ValueError, match=r"x\.flows\[0\]\.target\.tuner: must be one of paper, p95, got 'fast'"):
        scenarios.parse_scenario({**base, "flows": [{"rtt_ms": 40, "target": {"throughput_mbps": 1, "delay_ms": 1,
                                                                                "loss": 0, "tuner": "fast"}}]}, source="x")
