"""The shared link samplers (``jaxcc.envs.samplers``): hand-computed schedules, the draws' ranges,
and every environment with the dynamics on (outages seen, feedback never clamped) and off
(bit-identical to no dynamics)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.envs import make_env, samplers
from jaxcc.sim import links
from jaxcc.units import MBPS


def test_overlay_merges_and_multiplies_by_hand():
    t, r = jnp.array([0.0, 5.0]), jnp.array([10.0, 20.0])
    tt, rr = samplers.overlay(t, r, jnp.array([2.0, 7.0]), jnp.array([0.5, 1.0]))
    np.testing.assert_allclose(tt, [0.0, 2.0, 5.0, 7.0])
    np.testing.assert_allclose(rr, [10.0, 5.0, 10.0, 20.0])  # ×0.5 from 2 s to 7 s
    # A multiplier that starts before the schedule only moves to its start.
    tt, rr = samplers.overlay(t, r, jnp.array([-1.0, 3.0]), jnp.array([0.0, 1.0]))
    np.testing.assert_allclose(tt, [0.0, 0.0, 3.0, 5.0])
    np.testing.assert_allclose(rr[2:], [10.0, 20.0])
    cap_t, cap_cum = links.schedule_arrays(tt, rr)
    np.testing.assert_allclose(cap_cum, [0.0, 0.0, 0.0, 20.0])  # dark for 3 s, then 10 B/s for 2 s


def _draw(fn, n=2000, seed=0):
    return jax.jit(jax.vmap(fn))(jax.random.split(jax.random.key(seed), n))  # one program, not op by op


def test_outage_length_start_and_darkness():
    t, r = jnp.array([0.0]), jnp.array([8.0 * MBPS])
    h = 40.0

    def one(k):
        tt, rr, d = samplers.outage(k, t, r, 1.0, 0.2, 10.0, h, 0.3, 0.0)
        return tt, rr, d

    tt, rr, d = _draw(one)
    d = np.asarray(d)
    assert d.min() >= 0.2 - 1e-6 and d.max() <= 10.0 + 1e-5
    # log-uniform: the median is the geometric mean, sqrt(0.2 · 10) = 1.41 s
    assert abs(np.median(d) - np.sqrt(2.0)) < 0.15
    tt, rr = np.asarray(tt), np.asarray(rr)
    np.testing.assert_allclose(tt[:, 2] - tt[:, 1], d, rtol=1e-5)
    assert (tt[:, 1] >= 0.1 * h - 1e-5).all() and (tt[:, 2] <= h + 1e-4).all()
    assert (rr[:, 1] == 0.0).all() and (rr[:, 2] == 8.0 * MBPS).all()
    # Capped at max_frac of a short episode; p_on = 0 leaves the capacity alone.
    _, _, d_short = samplers.outage(jax.random.key(3), t, r, 1.0, 5.0, 10.0, 4.0, 0.3)
    assert float(d_short) == pytest.approx(1.2, rel=1e-5)
    _, r_off, d_off = samplers.outage(jax.random.key(3), t, r, 0.0, 0.2, 10.0, h, 0.3)
    assert float(d_off) == 0.0 and (np.asarray(r_off) == 8.0 * MBPS).all()


def test_capacity_step_factor_and_window():
    t, r = jnp.array([0.0]), jnp.array([5.0 * MBPS])

    def one(k):
        return samplers.capacity_step(k, t, r, 1.0, 10.0, 10.0, 12.0, 5.0, 8.0)

    tt, rr, f = (np.asarray(x) for x in _draw(one, 1000))
    mag = np.maximum(f, 1.0 / f)
    assert (mag >= 2.0 - 1e-5).all() and (mag <= 10.0 + 1e-4).all()
    assert 0.4 < np.mean(f > 1.0) < 0.6  # up and down alike
    np.testing.assert_allclose(rr[:, 1], 5.0 * MBPS * f, rtol=1e-5)
    np.testing.assert_allclose(rr[:, 2], 5.0 * MBPS)
    assert (tt[:, 1] >= 10.0).all() and (tt[:, 1] <= 12.0).all()
    assert ((tt[:, 2] - tt[:, 1]) >= 5.0 - 1e-5).all() and ((tt[:, 2] - tt[:, 1]) <= 8.0 + 1e-5).all()


def test_cellular_walk_range_dropouts_and_first_segment():
    t, r = jnp.array([0.0]), jnp.array([10.0 * MBPS])

    def one(k):
        return samplers.cellular_walk(k, t, r, 1.0, 32, 30.0, 0.35, 0.1, 3.0, 0.05)

    tt, rr, m = (np.asarray(x) for x in _draw(one, 1000))
    assert (m[:, 0] == 1.0).all()
    dark = m[:, 1:] == 0.0
    assert abs(dark.mean() - 0.05) < 0.01
    lit = m[:, 1:][~dark]
    assert lit.min() >= 0.1 - 1e-6 and lit.max() <= 3.0 + 1e-5
    assert np.std(np.log(lit)) > 0.5  # it moves
    # segments cover about the episode: 32 segments of 30/32 · U[0.5, 1.5] s
    ends = tt[:, -1]
    assert (ends > 0.5 * 30.0).all() and (ends < 1.5 * 30.0).all()
    _, r_off, _ = samplers.cellular_walk(jax.random.key(1), t, r, 0.0, 32, 30.0, 0.35, 0.1, 3.0, 0.05)
    assert (np.asarray(r_off) == 10.0 * MBPS).all()


def test_arrivals_counts_gaps_and_departures():
    def one(k):
        a, b, c = jax.random.split(k, 3)
        return samplers.arrivals(a, b, c, 4, 2.0, 4.0, 0.5, 3.0, 0.5, 20.0)

    n, start, stop = (np.asarray(x) for x in _draw(one, 1000))
    assert set(np.unique(n)) == {2.0, 3.0, 4.0}
    assert (start[:, 0] == 0.0).all()
    gaps = np.diff(start, axis=1)
    assert gaps.min() >= 0.5 - 1e-6 and gaps.max() <= 3.0 + 1e-6
    idx = np.arange(4)[None, :]
    assert (stop[idx >= n[:, None]] == 0.0).all()  # unused slots never start
    assert (stop[:, 0] == 1e9).all()  # the first flow stays
    used = (idx < n[:, None]) & (idx > 0)
    left = used & (stop < 1e9)
    assert 0.4 < left.sum() / used.sum() < 0.6
    assert (stop[left] >= start[left]).all() and (stop[left] <= 20.0).all()


@pytest.mark.parametrize("field,value,msg", [
    ("p_outage", 1.5, "dynamics.p_outage: must be in [0, 1]"),
    ("outage_slots", 2.5, "dynamics.outage_slots: must be an integer"),
    ("cell_lo", 0.0, "dynamics.cell_lo: must be in [0.001, 1]"),
    ("outage_lo_s", 20.0, "dynamics.outage_lo_s: must be <= dynamics.outage_hi_s"),
    ("p_step", "x", "dynamics.p_step: expected a number"),
])
def test_dynamics_errors_name_the_field(field, value, msg):
    with pytest.raises(ValueError, match="^" + msg.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        samplers.LinkDynamics(**{field: value})


def test_dynamics_config_rejects_unknown_fields():
    with pytest.raises(ValueError, match=r"^dynamics: unknown field\(s\) \['outages'\]"):
        samplers.dynamics_config(outages=3)
    assert samplers.as_dynamics(samplers.dynamics_config()) is None  # all off
    assert samplers.as_dynamics(samplers.dynamics_config(**samplers.ROBUST_DYNAMICS)).enabled


def test_a_second_step_over_an_environments_own_is_refused():
    step = samplers.dynamics_config(p_step=0.3)
    with pytest.raises(ValueError, match=r"^dynamics\.p_step: aurora draws its own capacity step"):
        make_env("aurora", num_segments=3, dynamics=step)
    with pytest.raises(ValueError, match=r"^dynamics\.p_step: eagle draws its own capacity step"):
        make_env("eagle", capacity_steps=True, dynamics=step)
    assert make_env("aurora", dynamics=step)[0].config.dynamics.steps  # without its own: fine


ENVS = ("aurora", "eagle", "mocc", "deepcc", "pareto")


def tiered(fast: tuple[str, ...]) -> list:
    """``ENVS`` with those outside ``fast`` in ``make test-full`` only: every environment draws
    its dynamics through ``jaxcc.envs.base``, so the fast tier holds Pareto and, where a test
    acts differently per environment, DeepCC (its own time average under dynamics; the
    discrete-action branch, Eagle's and MOCC's, runs in the full tier); each
    compile costs 3-8 s on two cores."""
    assert set(fast) <= set(ENVS), fast
    return [n if n in fast else pytest.param(n, marks=pytest.mark.full) for n in ENVS]


@pytest.mark.parametrize("name", tiered(("pareto",)))
def test_dynamics_off_is_bit_identical(name):
    env0, p = make_env(name)
    env1, _ = make_env(name, dynamics=samplers.dynamics_config())
    assert env1.config.dynamics is None
    _, s0 = env0.reset(jax.random.key(5), p)
    _, s1 = env1.reset(jax.random.key(5), p)
    for a, b in zip(jax.tree.leaves(s0), jax.tree.leaves(s1)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", tiered(("pareto", "deepcc")))
def test_every_env_meets_an_outage_with_its_feedback_intact(name):
    """Two sure outages of at least 1 s (capped at 30 % of the episode) in every episode: the
    link is dark in them, the flow's ACKs stop, and no feedback is clamped to the ring."""
    dyn = samplers.dynamics_config(outage_slots=2, p_outage=1.0, outage_lo_s=1.0, outage_hi_s=10.0)
    env, p = make_env(name, dynamics=dyn)
    base_env, _ = make_env(name)
    assert env.config.ring_len >= base_env.config.ring_len
    n = 4
    keys = jax.random.split(jax.random.key(11), n)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, p)
    cap = np.asarray(state.link.cap_bps)
    assert (cap == 0.0).any(axis=1).all()  # every link goes dark
    base_len = base_env.reset(jax.random.key(0), p)[1].link.cap_t.shape[0]
    assert state.link.cap_t.shape[1] == base_len + 1 + 2 * 2  # the multiplier's start, two switches per outage
    spec = env.action_spec()
    f = env.config.num_flows
    act = jnp.zeros((n, f), jnp.int32) + 3 if spec["kind"] == "discrete" else jnp.zeros((n, f))
    if name == "deepcc":
        act = jnp.full((n, f), 0.5)

    def body(s, k):
        ks = jax.random.split(k, n)
        _, s2, _, _, _, info = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(ks, s, act, p)
        return s2, (info["delivery_rate"][:, 0], info["capacity"][:, 0], s2.sim.clamped)

    steps = env.config.max_steps
    state, (deliv, capacity, clamped) = jax.lax.scan(body, state, jax.random.split(jax.random.key(2), steps))
    assert int(np.asarray(clamped).max()) == 0
    dark = np.asarray(capacity) == 0.0
    deliv = np.asarray(deliv)
    assert dark.any() and np.isfinite(deliv).all()
    # ACKs stop in the dark (after the feedback already on its way: one RTT and the queue)
    assert (deliv[dark] == 0.0).mean() > 0.5


ROBUST = ("pareto_robust", "aurora_robust", "eagle_robust", "mocc_robust", "deepcc", "deepcc_ackclock", "deepcc_paced")
OFF = ("pareto_staged", "aurora", "eagle", "mocc", "deepcc_clean", "pareto_paper", "aurora_paper", "eagle_paper")


@pytest.mark.parametrize("name", ROBUST + OFF)
def test_robust_configs_train_on_the_shared_dynamics_and_the_others_do_not(name):
    """The ``*_robust`` configs and DeepCC's default build their environment with ``ROBUST_DYNAMICS``
    (less the step where the environment draws its own: Pareto, Aurora, Eagle); the other defaults
    (the shipped files' recipes), ``deepcc_clean`` (the shipped DeepCC file's) and the ``*_paper``
    configs with none.  DeepCC's bounded reward goes with the dynamics."""
    from jaxcc.training.configs import load_config

    c = load_config(name)
    dyn = samplers.as_dynamics(dict(c.env.overrides).get("dynamics"))
    if name.startswith("deepcc"):
        assert float(c.env.params.reward_bounded) == (1.0 if name in ROBUST else 0.0)
    if name in OFF:
        assert dyn is None
        return
    own_step = name in ("pareto_robust", "aurora_robust", "eagle_robust")
    assert dyn == samplers.LinkDynamics(**dict(samplers.ROBUST_DYNAMICS, p_step=0.0 if own_step else 0.3))
    env, _ = make_env(c.env.name, **{k: v for k, v in dict(c.env.overrides).items()})
    assert env.config.dynamics == dyn and env.config.dynamics.outages and env.config.dynamics.cellular
