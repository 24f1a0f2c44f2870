"""Per-flow decision clocks (``jaxcc.envs.base``, ``EnvConfig.flow_clock``; the simulator's
senders, ``SenderParams.mi_scale``): on a 20 ms / 80 ms link each flow decides on mi_rtts of its
own RTT, as the datapath sender does, and the MI a slow flow accumulates over its steps is the
one the single-clock environment measures step by step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import base, make_env
from jaxcc.sim import core, links
from jaxcc.units import MBPS

RTTS = (0.02, 0.08)  # k = round(80 / 20) = 4 steps of 2 x 20 ms = 160 ms = 2 x 80 ms


def _env(flow_clock: bool):
    env, p = make_env("pareto", num_flows=2, feature_set="pareto_v2", flow_clock=flow_clock)
    return env, p


def _on_fixed_link(env, state):
    """``state`` moved onto a fixed 20 Mbit/s link with the two RTTs above, both flows from 0 s."""
    c = env.config
    times, rates = base.constant_schedule(c.num_segments, 20 * MBPS)
    link = links.link_from_arrays(times, rates, 100_000.0, 0.0, jnp.asarray(RTTS, jnp.float32), jnp.zeros(2),
                                  jnp.full((2,), 1e9), ticks_per_rtt=c.ticks_per_rtt)
    st = state.replace(link=link, sim=core.init_state(link, c.ring_len), rate=jnp.full((2,), 5 * MBPS))
    if st.clock is not None:
        st = st.replace(clock=st.clock.replace(k=base.clock_steps(link.rtt)))
    return st


def _run(flow_clock: bool, actions):
    env, p = _env(flow_clock)
    _, st = jax.jit(env.reset)(jax.random.PRNGKey(0), p)  # one program each, not op by op
    st = jax.jit(lambda s: _on_fixed_link(env, s))(st)
    step = jax.jit(lambda s, a: env.step_env(jax.random.PRNGKey(1), s, a, p))
    out = []
    for a in actions:
        _, st, r, _, _, info = step(st, jnp.asarray(a, jnp.float32))
        out.append((st, r, info))
    return env, out


def test_clock_steps_round_each_rtt_to_whole_steps_of_the_smallest():
    got = base.clock_steps(jnp.asarray([0.03, 0.12, 0.07, 0.044, 0.03]))
    assert got.tolist() == [1, 4, 2, 1, 1]  # 4.0, 2.33, 1.47 by hand


def test_slow_flow_acts_once_per_own_mi_and_holds_its_action():
    acts = [[0.05 * (t % 3), 0.02 * (t + 1)] for t in range(8)]
    env, out = _run(True, acts)
    assert env.config.mi_ticks * float(out[0][0].link.dt) == pytest.approx(0.04, rel=1e-6)
    active = np.array([np.asarray(info["active"]) for _, _, info in out])
    due = np.array([np.asarray(info["due"]) for _, _, info in out])
    held = np.array([np.asarray(info["action"]) for _, _, info in out])
    assert active[:, 0].all() and due[:, 0].all()
    assert active[:, 1].tolist() == [False, False, False, True] * 2
    assert due[:, 1].tolist() == [False, False, False, True] * 2  # the next step opens an MI
    np.testing.assert_allclose(held[:, 0], [a[0] for a in acts], rtol=1e-7)
    np.testing.assert_allclose(held[:, 1], [acts[0][1]] * 4 + [acts[4][1]] * 4, rtol=1e-7)
    rate1 = np.array([float(st.rate[1]) for st, _, _ in out])
    assert len(set(rate1[:4].tolist())) == 1 and len(set(rate1[4:].tolist())) == 1 and rate1[3] != rate1[4]
    rewards1 = np.array([float(r[1]) for _, r, _ in out])
    assert (rewards1[~active[:, 1]] == 0).all()
    # Each closed MI is mi_rtts (2) of the flow's own RTT: 40 ms and 160 ms.
    st3 = out[3][0]
    assert float(st3.last_mi.duration[0]) == pytest.approx(0.04, rel=1e-5)
    assert float(st3.last_mi.duration[1]) == pytest.approx(0.16, rel=1e-5)


def test_accumulated_mi_is_the_single_clocks_steps_combined():
    """Held actions of 0 keep both runs on the same rates, so the link runs the same ticks: the
    slow flow's MI closed at step 4 combines the four MIs the single clock measured."""
    zeros = [[0.0, 0.0]] * 4
    _, slow = _run(True, zeros)
    _, one = _run(False, zeros)
    per_step = [st.last_mi for st, _, _ in one]
    got = slow[3][0].last_mi
    tot = lambda f: float(sum(getattr(m, f)[1] for m in per_step))  # noqa: E731
    for f in ("duration", "active", "sent", "acked", "lost", "rtt_wsum", "n_samples"):
        assert float(getattr(got, f)[1]) == pytest.approx(tot(f), rel=1e-5, abs=1e-3), f
    assert float(got.rtt_min[1]) == pytest.approx(min(float(m.rtt_min[1]) for m in per_step), rel=1e-6)
    assert float(got.rtt_max[1]) == pytest.approx(max(float(m.rtt_max[1]) for m in per_step), rel=1e-6)
    # The fast flow's MI is the step: the same statistics on both clocks.
    for f in ("acked", "sent", "duration"):
        assert float(getattr(slow[3][0].last_mi, f)[0]) == pytest.approx(float(getattr(per_step[3], f)[0]), rel=1e-6)
    # The utilization term sees the link over each flow's own MI: the same capacity per second.
    assert float(slow[3][2]["capacity"][0]) == pytest.approx(20 * MBPS, rel=1e-5)


def test_single_clock_reports_the_steps_action_and_every_flow_due():
    acts = [[0.1, -0.1], [0.0, 0.2]]
    _, out = _run(False, acts)
    for a, (_, _, info) in zip(acts, out):
        np.testing.assert_allclose(np.asarray(info["action"]), a, rtol=1e-7)
        assert np.asarray(info["due"]).all() and np.asarray(info["active"]).all()


def test_mixed_rtt_draws_put_the_smallest_at_the_drawn_rtt():
    env, p = make_env("pareto", num_flows=4, feature_set="pareto_v2", flow_clock=True, rtt_ratio_max=4.0)
    p = p.replace(robust=jnp.float32(1.0), p_mixed_rtt=jnp.float32(1.0), flows_lo=jnp.float32(4.0))
    ks = jax.random.split(jax.random.PRNGKey(3), 64)
    st = jax.jit(jax.vmap(lambda k: env.reset(k, p)[1]))(ks)
    rtt = np.asarray(st.link.rtt)
    ratio = rtt / rtt.min(axis=1, keepdims=True)
    assert (ratio <= 4.0 + 1e-5).all() and ratio.max() > 2.5
    assert np.allclose(rtt.min(axis=1), rtt_base := rtt.min(axis=1)) and (rtt_base >= 0.03 - 1e-6).all()
    np.testing.assert_array_equal(np.asarray(st.clock.k), np.maximum(np.round(ratio), 1))
    # With p_mixed_rtt 0 (the default) every flow of a link has one RTT.
    st0 = jax.jit(jax.vmap(lambda k: env.reset(k, p.replace(p_mixed_rtt=jnp.float32(0.0)))[1]))(ks)
    assert (np.ptp(np.asarray(st0.link.rtt), axis=1) == 0).all()


# ----------------------------------------------------------------------------- the simulator's senders


def test_runner_gives_each_flow_its_rtts_clock():
    from jaxcc import scenarios, senders
    from jaxcc.sim import runner

    sc = scenarios.parse_scenario({"name": "clock", "duration_s": 1.0,
                                   "link": {"bandwidth_mbps": 20, "buffer_bytes": 100_000, "loss": 0.0},
                                   "flows": [{"rtt_ms": 30.0, "controller": "bbr"}, {"rtt_ms": 120.0, "controller": "bbr"},
                                             {"rtt_ms": 50.0, "controller": "bbr"}]})
    (b,) = runner.build_batches([runner.Item(scenario=sc, seed=0)], resolve=senders.resolve)
    assert np.asarray(b.cparams.sender.mi_scale)[0].tolist() == [1.0, 4.0, 2.0]


def test_sender_closes_its_mi_after_its_own_rtts_ticks(tmp_path):
    from jaxcc import policyfile, senders
    from jaxcc.sim.controller import TickObs

    path = str(tmp_path / "p.safetensors")
    assert policyfile.run_cli(["policyfile", "--random", "pareto_v2", "--seed", "1", "--out", path]) == 0
    ctrl, cp = senders.resolve(f"raw-policy:{path}")
    spec, _ = policyfile.load(path)
    mi_ticks = int(round(float(spec["mi_rtts"]) * int(spec["features"].get("ticks_per_rtt", 8))))
    f = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731

    def ticks_to_first_boundary(scale):
        c = cp._replace(sender=cp.sender._replace(mi_scale=np.float32(scale)))
        s = ctrl.init(c)
        upd = jax.jit(lambda s, i: ctrl.update(s, TickObs(
            now=f(i * 0.0025), dt=f(0.0025), active=jnp.bool_(True), acked=f(1500.0), lost=f(0.0),
            rtt_wsum=f(1500.0 * 0.03), sent=f(1500.0), inflight=f(15000.0), capacity=f(2.5e6), n_active=f(1.0)), c))
        for i in range(1, 10 * mi_ticks):
            s = upd(s, i)
            if int(s.tick) == 0:
                return i
        return None

    assert ticks_to_first_boundary(0.0) == mi_ticks
    assert ticks_to_first_boundary(4.0) == 4 * mi_ticks


@pytest.mark.parametrize("module,config", [("aurora_ppo", "aurora_smoke"), ("eagle_cem", "eagle_smoke")])
def test_trainers_without_masks_refuse_per_flow_clocks_on_shared_links(module, config):
    """Aurora's PPO and Eagle's CEM learn from every step of every flow; with per-flow clocks a
    slow flow's held steps are no transitions, so several flows with the clock on are refused in
    one line (one flow is its own clock, so that stays allowed)."""
    import importlib

    from jaxcc.training.configs import load_config

    trainer = importlib.import_module(f"jaxcc.agents.{module}")
    import os

    c = load_config(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", f"{config}.py"))
    c.env.overrides.flow_clock = True
    env, _ = trainer.make_env(c)  # one flow per link: allowed
    assert env.config.flow_clock and env.config.num_flows == 1
    c.env.overrides.num_flows = 2
    with pytest.raises(ValueError, match=r"^config\.env\.overrides\.flow_clock=True with num_flows=2: expected num_flows=1 \("):
        trainer.make_env(c)
