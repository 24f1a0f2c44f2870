"""A classic controller in the environment's last flow slot (``EnvConfig.competitor``,
``jaxcc.envs.base``): it is part of the link, never an agent, and its flow is the one the
simulator's runner gives the same controller on the same link (``jaxcc.sim.runner``, a separate
loop over the controller protocol)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.baselines.cubic import CUBIC
from jaxcc.baselines.simple import FIXED
from jaxcc.envs import base, make_env
from jaxcc.sim import controller as ctl
from jaxcc.sim import core, links, runner
from jaxcc.units import MBPS

STEPS = 60


def _env(**kw):
    return make_env("pareto", num_flows=2, feature_set="pareto_v2", competitor="cubic", **kw)


def _on_fixed_link(env, state, start_cubic_s: float):
    """``state`` on a 20 Mbit/s, 40 ms, 1-BDP link: the agent from 0 s at 5 Mbit/s, CUBIC from
    ``start_cubic_s``."""
    c = env.config
    times, rates = base.constant_schedule(c.num_segments, 20 * MBPS)
    link = links.link_from_arrays(times, rates, 100_000.0, 0.0, jnp.full((2,), 0.04), jnp.asarray([0.0, start_cubic_s]),
                                  jnp.full((2,), 1e9), ticks_per_rtt=c.ticks_per_rtt)
    return state.replace(link=link, sim=core.init_state(link, c.ring_len), rate=jnp.full((2,), 5 * MBPS),
                         comp=state.comp.replace(on=jnp.asarray(True), cstate=CUBIC.init(env._competitor_params())))


def test_competitor_flow_is_the_runners_cubic_flow_and_never_an_agent():
    env, p = _env(p_competitor=1.0)
    _, st = jax.jit(env.reset)(jax.random.PRNGKey(0), p)
    st = _on_fixed_link(env, st, 0.5)
    step = jax.jit(lambda s: env.step_env(jax.random.PRNGKey(1), s, jnp.zeros(2), p))  # action 0: 5 Mbit/s held
    acked = np.zeros(2)
    for _ in range(STEPS):
        _, st, r, _, _, info = step(st)
        assert np.asarray(info["agent"]).tolist() == [True, False]
        assert not bool(info["active"][1]) and float(r[1]) == 0.0
        acked += np.asarray(st.last_mi.acked)
    # The same link in the runner: flow 0 at a fixed 5 Mbit/s, flow 1 CUBIC.
    ticks = STEPS * env.config.mi_ticks
    run = jax.jit(runner.make_run((FIXED, CUBIC), ticks, env.config.ring_len))
    cp = ctl.ControllerParams.zeros((2,))
    cp.fixed.mbps[0] = 5.0
    _, traj, _ = run(st.link, jnp.asarray([0, 1]), jax.tree.map(jnp.asarray, cp))
    want = np.asarray(traj.acked).sum(axis=0)
    assert want[1] > 10 * MBPS / 8  # CUBIC moved more than 10 Mbit in the 4.8 s
    np.testing.assert_allclose(acked, want, rtol=1e-4)


def test_off_by_default_and_bit_identical():
    env0, p0 = make_env("pareto", num_flows=2, feature_set="pareto_v2")
    env1, p1 = _env(p_competitor=0.0)
    assert env0.config.competitor == "" and env1.config.competitor == "cubic"
    o0, s0 = jax.jit(env0.reset)(jax.random.PRNGKey(3), p0)
    o1, s1 = jax.jit(env1.reset)(jax.random.PRNGKey(3), p1)
    assert s0.comp is None and not bool(s1.comp.on)
    step0, step1 = jax.jit(env0.step), jax.jit(env1.step)  # one program each, not op by op
    for i in range(5):
        a = jnp.asarray([0.1, -0.05])
        o0, s0, r0, *_ = step0(jax.random.PRNGKey(10 + i), s0, a, p0)
        o1, s1, r1, *_ = step1(jax.random.PRNGKey(10 + i), s1, a, p1)
        np.testing.assert_array_equal(np.asarray(o0), np.asarray(o1))
        np.testing.assert_array_equal(np.asarray(r0), np.asarray(r1))


def test_share_of_episodes_and_agents_beside_the_competitor():
    env, p = make_env("pareto", num_flows=4, feature_set="pareto_v2", competitor="cubic", p_competitor=0.5,
                      competitor_start_s=3.0)
    p = p.replace(robust=jnp.float32(1.0))
    keys = jax.random.split(jax.random.PRNGKey(7), 2000)
    _, st = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, p)
    on = np.asarray(st.comp.on)
    assert 0.46 < on.mean() < 0.54  # Binomial(2000, 0.5): 4.5 sigma
    start, stop = np.asarray(st.link.start)[on], np.asarray(st.link.stop)[on]
    assert (start[:, 3] >= 0).all() and (start[:, 3] <= 3.0).all() and (stop[:, 3] == 1e9).all()
    agents = ((stop[:, :3] > start[:, :3])).sum(axis=1)  # the sampler's flows, 1..3 of them kept
    assert set(agents.tolist()) == {1, 2, 3}
    assert (stop[:, 0] > start[:, 0]).all()  # the first agent is always there


@pytest.mark.parametrize("kw, msg", [
    ({"competitor": "vegas"}, "competitor: unknown controller 'vegas'"),
    ({"competitor": "cubic", "num_flows": 1}, "num_flows is 1, expected >= 2"),
    ({"competitor": "cubic", "p_competitor": 1.5}, "p_competitor: 1.5 is outside [0, 1]"),
])
def test_bad_competitor_settings_are_refused_in_one_line(kw, msg):
    kw = {"num_flows": 2, **kw}
    with pytest.raises(ValueError) as e:
        make_env("pareto", feature_set="pareto_v2", **kw)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_coexist_validation_links_hold_one_learned_flow_and_cubic_from_the_first_seconds():
    from jaxcc.agents.pareto import env_adapter
    from jaxcc.envs import pareto

    env, params = env_adapter.make_validation_env(overrides={"feature_set": "pareto_v2"}, max_steps=150, coexist=True)
    _, st = jax.jit(jax.vmap(env.reset, in_axes=(None, 0)))(jax.random.PRNGKey(0), params)
    assert np.asarray(st.comp.on).all()
    start, stop = np.asarray(st.link.start), np.asarray(st.link.stop)
    assert (start[:, 0] == 0).all() and (stop[:, 0] > 1e3).all()  # the learned flow, from 0 s to the end
    assert (start[:, 1] <= pareto.COEXIST_VALIDATION_START_S).all() and (stop[:, 1] == 1e9).all()
    bw = [v[0] for v in pareto.COEXIST_VALIDATION_LINKS]
    np.testing.assert_allclose(np.asarray(st.link.cap_bps)[:, 0] / MBPS, bw, rtol=1e-5)
