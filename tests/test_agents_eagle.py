"""Eagle (cross-entropy method + synthesized BBR teacher): elite selection, the CE loss, the
teacher's state machine, Algorithm 2's schedule, export/reload, and a smoke training run."""

from __future__ import annotations

import importlib.util
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile
from jaxcc.training import export as training_export
from jaxcc.agents import eagle_cem as ec

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UP2, UP, HOLD, DOWN, DOWN2 = range(5)  # the env's order: ×2.89, ×1.25, hold, ÷1.25, ÷2.89


def _config(name: str):
    spec = importlib.util.spec_from_file_location(f"_cfg_{name}", os.path.join(REPO, "configs", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


# ----------------------------------------------------------------------------- cross-entropy


def test_elites_are_the_best_three_of_five():
    returns = jnp.array([[5.0, 1.0, 3.0, 2.0, 4.0],
                         [0.0, 0.0, 0.0, -1.0, 0.0],  # ties: the lower index wins
                         [-9.0, -1.0, -3.0, -2.0, -4.0]])
    m = np.asarray(ec.elite_mask(returns, 3))
    np.testing.assert_array_equal(m, [[1, 0, 1, 0, 1], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0]])
    assert m.sum() == 9


def test_elites_per_agent_slot():
    returns = jnp.stack([jnp.array([[5.0, 1.0, 3.0, 2.0, 4.0]]), jnp.array([[1.0, 2.0, 3.0, 4.0, 5.0]])], -1)
    m = np.asarray(ec.elite_mask(returns, 3))  # [G=1, E=5, A=2]
    np.testing.assert_array_equal(m[0, :, 0], [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(m[0, :, 1], [0, 0, 1, 1, 1])


def test_ce_loss_by_hand():
    logits = jnp.array([[math.log(1.0), math.log(3.0), 0.0 - 1e9],  # p = (0.25, 0.75, 0)
                        [0.0, 0.0, 0.0]])
    actions = jnp.array([1, 2])
    # only the first (elite) sample counts: −log 0.75
    assert float(ec.ce_loss(logits, actions, jnp.array([1.0, 0.0]))) == pytest.approx(-math.log(0.75), rel=1e-6)
    both = (-math.log(0.75) - math.log(1 / 3)) / 2
    assert float(ec.ce_loss(logits, actions, jnp.array([1.0, 1.0]))) == pytest.approx(both, rel=1e-6)


def test_ce_step_moves_the_policy_to_the_elite_actions():
    spec = ec.policy_spec(4, 5, hidden=8)
    params = ec.init_params(jax.random.PRNGKey(0), 5, 8)
    obs = jax.random.normal(jax.random.PRNGKey(1), (32, 4, 5))
    acts = jnp.full((32,), UP)
    w = jnp.ones((32,))
    logits = lambda p: jax.vmap(lambda o: ec.logits_fn(spec, p, o))(obs)  # noqa: E731
    loss = jax.jit(lambda p: ec.ce_loss(logits(p), acts, w))  # one program each, not op by op
    before = float(loss(params))
    g = jax.jit(jax.grad(lambda p: ec.ce_loss(logits(p), acts, w)))(params)
    params = jax.tree.map(lambda x, d: x - 0.5 * d, params, g)
    assert float(loss(params)) < before
    assert before == pytest.approx(math.log(5), abs=0.05)  # the untrained policy is ~uniform


# ----------------------------------------------------------------------------- the teacher


def _obs(rate, deliv, rtt):
    f = lambda x: jnp.array([x], jnp.float32)  # noqa: E731
    return ec.TeacherObs(rate=f(rate), delivery=f(deliv), rtt=f(rtt))


def test_synthesized_bbr_startup_drain_probe():
    mb = 1e6 / 8
    s = ec.teacher_init((1,))
    o = ec.TeacherObs(*(jnp.zeros((1,)),) * 3)
    assert int(ec.teacher_action(s, o)[0]) == UP2  # STARTUP before any sample
    # STARTUP: the delivery rate keeps growing ×2.89, no queue.
    for r in (0.3, 0.87, 2.5):
        o = _obs(r * mb, r * mb, 0.1)
        s = ec.teacher_update(s, o)
        assert int(s.mode[0]) == ec.STARTUP and int(ec.teacher_action(s, o)[0]) == UP2
    # Sending 9 on a 5 Mbit/s link: the queue shows (RTT 0.2 > 1.25 × 0.1) → DRAIN, far above BtlBw → ÷2.89.
    o = _obs(9.0 * mb, 5 * mb, 0.2)
    s = ec.teacher_update(s, o)
    assert int(s.mode[0]) == ec.DRAIN and int(ec.teacher_action(s, o)[0]) == DOWN2
    # Queue still there, rate now ≈ BtlBw → ÷1.25.
    o = _obs(5.0 * mb, 5 * mb, 0.15)
    s = ec.teacher_update(s, o)
    assert int(s.mode[0]) == ec.DRAIN and int(ec.teacher_action(s, o)[0]) == DOWN
    # Queue gone → PROBE_BW; cruising at BtlBw holds, then once per cycle probes ×1.25.
    acts = []
    for _ in range(ec.CYCLE_STEPS):
        o = _obs(4.9 * mb, 5 * mb, 0.1)
        s = ec.teacher_update(s, o)
        assert int(s.mode[0]) == ec.PROBE_BW
        acts.append(int(ec.teacher_action(s, o)[0]))
    assert sorted(acts) == [UP] + [HOLD] * (ec.CYCLE_STEPS - 1)
    # A standing queue in PROBE_BW → ÷1.25; deplorable delay (> 2 × RTprop) → ÷2.89.
    o = _obs(6.0 * mb, 5 * mb, 0.13)
    assert int(ec.teacher_action(ec.teacher_update(s, o), o)[0]) == DOWN
    o = _obs(6.0 * mb, 5 * mb, 0.3)
    assert int(ec.teacher_action(ec.teacher_update(s, o), o)[0]) == DOWN2
    assert bool(ec.emergency(ec.teacher_update(s, o), o, 2.0)[0])


def test_teacher_tracks_rtprop_and_btlbw():
    s = ec.teacher_init((1,))
    for rate, rtt in ((1.0, 0.12), (2.0, 0.10), (1.5, 0.11)):
        s = ec.teacher_update(s, _obs(rate, rate, rtt))
    assert float(s.rtprop[0]) == pytest.approx(0.10)
    assert float(jnp.max(s.bw)) == pytest.approx(2.0)


# ----------------------------------------------------------------------------- Algorithm 2


def test_schedule_algorithm2():
    c = _config("eagle").cem
    s = ec.schedule_init(c)
    assert float(s["teacher_episodes"]) == 2.0 and float(s["p_teacher"]) == pytest.approx(0.5)
    low = jnp.float32(c.reward_threshold - 1.0)
    for _ in range(100):
        s = ec.schedule_update(s, low, c)
    assert float(s["teacher_episodes"]) == 1.0  # 2 of 5 → 1 of 5
    assert int(s["ignore"]) == c.emergencies_to_ignore and not bool(s["passed"])
    s = ec.schedule_init(c)
    s = ec.schedule_update(s, jnp.float32(c.reward_threshold + 1.0), c)  # lines 17–19
    assert int(s["ignore"]) == c.emergencies_to_ignore + 1
    assert float(s["p_teacher"]) == pytest.approx(0.05) and bool(s["passed"])
    for _ in range(10):
        s = ec.schedule_update(s, jnp.float32(c.reward_threshold + 1.0), c)
    assert int(s["ignore"]) == c.max_emergencies_to_ignore


# ----------------------------------------------------------------------------- export


def test_export_reload_gives_identical_actions(tmp_path):
    spec = ec.policy_spec(4, 5, hidden=64, features={"name": "eagle_v1"})
    params = ec.init_params(jax.random.PRNGKey(2), 5, 64)
    params["logits"]["kernel"] = params["logits"]["kernel"] * 300.0  # spread the argmax over actions
    path = str(tmp_path / "eagle.safetensors")
    training_export.export_state({"agent": {"actor": params}}, spec, path)
    spec2, tensors = policyfile.load(path)
    assert [l["type"] for l in spec2["layers"]] == ["lstm", "lstm", "last_step", "dense"]
    assert spec2["head"] == {"type": "discrete", "n": 5}
    assert spec2["action"]["multipliers"] == pytest.approx([2.89, 1.25, 1.0, 0.8, 1 / 2.89])
    obs = jax.random.normal(jax.random.PRNGKey(5), (128, 4, 5))
    train_a = jax.jit(jax.vmap(lambda w: jnp.argmax(ec.logits_fn(spec, params, w))))(obs)  # not op by op
    jt = {k: jnp.asarray(v) for k, v in tensors.items()}
    file_a = jax.jit(jax.vmap(lambda w: policyfile.apply(spec2, jt, w)))(obs)
    np.testing.assert_array_equal(np.asarray(train_a), np.asarray(file_a))
    assert len(np.unique(np.asarray(file_a))) > 1


def test_config_matches_the_paper():
    c = _config("eagle")
    assert c.algo == "eagle_cem" and c.env.name == "eagle"
    assert c.cem.hidden == 64 and c.cem.episode_steps == 50
    assert c.num_envs % ec.GROUP == 0 and ec.N_ELITE == 3
    assert c.cem.teacher_episodes_start == 2 and c.cem.teacher_episodes_end == 1
    assert c.cem.p_teacher_after_threshold == 0.05
    # The robust training distribution (explained in the config); eagle_paper keeps §IV-D.
    p = c.env.params
    assert (p.init_rel_frac, p.init_rel_lo, p.init_rel_hi, p.step_frac, p.step_max) == (0.3, 0.3, 4.0, 0.4, 10.0)
    assert c.env.overrides.capacity_steps is True
    cp = _config("eagle_paper")
    _, pp = ec.make_env(cp)
    assert float(pp.init_rel_frac) == 0.0 and float(pp.step_frac) == 0.0 and set(cp.env.overrides) == {"realism"}
    with pytest.raises(ValueError, match=r"^config.env.params: unknown field\(s\) \['nope'\] of EagleParams; allowed: "):
        c.env.params.nope = 1.0
        ec.make_env(c)


# ----------------------------------------------------------------------------- training


@pytest.mark.full
def test_smoke_training_improves_over_random_policy_and_resumes_exactly(tmp_path):
    """eagle_smoke through the shared pipeline: train, checkpoint, resume, export; the trained
    policy (sampled, no teacher) beats the untrained, near-uniform random policy."""
    from jaxcc.training import loop

    cfg = _config("eagle_smoke")
    work = str(tmp_path / "run")
    loop.train(cfg, work, progress=False, log=False, stop_after_chunks=1)
    summary = loop.train(cfg, work, progress=False, log=False)
    assert summary["resumed"] and summary["final_update"] == cfg.num_updates
    exported = os.path.join(work, "stages", "Eagle.safetensors")
    spec, tensors = policyfile.load(exported)
    assert spec["algorithm"] == "eagle" and spec["features"]["name"] == "eagle_v1"

    tr = ec.make_train(cfg)
    init = jax.jit(tr.init)(jax.random.PRNGKey(int(cfg.seed)))
    run = jax.jit(tr.run_chunk)
    state = init
    for _ in range(cfg.num_updates // cfg.chunk_updates):
        state, _ = run(state)
    np.testing.assert_array_equal(np.asarray(state["agent"]["actor"]["lstm1"]["kernel_i"]),
                                  tensors["lstm1.kernel_i"])

    roll = jax.jit(lambda a, k: tr.rollout(a, state["sched"], k, "policy")["reward"].sum(0).mean())
    keys = jax.random.split(jax.random.PRNGKey(7), 3)
    random_policy = np.mean([float(roll(init["agent"]["actor"], k)) for k in keys])
    trained = np.mean([float(roll(state["agent"]["actor"], k)) for k in keys])
    assert trained > random_policy, (trained, random_policy)
