"""The environments behind gymnax's API (``jaxcc.envs.gymnax_api``) and Gymnasium's
(``jaxcc.envs.gymnasium_api``), held to the libraries' own contracts: gymnax's spaces and
wrappers, Gymnasium's ``check_env`` and ``SyncVectorEnv`` (the reference for the vector env's
autoreset and seeding).

Episodes are ``max_steps = 3`` steps long, so every episode is truncated at a known step."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# The test extra installs gymnax and Gymnasium (pyproject.toml's gym extra): absent, this file fails.
import gymnasium
import gymnax
from gymnasium.utils.env_checker import check_env
from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper

from jaxcc.envs import ENV_NAMES, gymnax_api
from jaxcc.envs.gymnasium_api import GymnasiumEnv, GymnasiumVectorEnv

STEPS = 3  # max_steps: every episode ends (truncated) at its 3rd step
LANES = 1024
# DeepCC draws a 10-ms Poisson capacity slot per segment for its 60-s episodes (6002); 64 cover
# these tests' episodes (4 steps of ½ RTT ≤ 125 ms: 0.5 s, 50 slots; the last segment holds).
SHORT = {"deepcc": {"num_segments": 64}}


def _rollout(env, params, num_steps):
    """reset + ``num_steps`` steps with actions sampled from the action space, and what an
    independent ``reset_env`` with gymnax's reset key of the episode's last step gives (the
    auto-reset's reference)."""
    obs_space, act_space = env.observation_space(params), env.action_space(params)

    def run(key):
        k0, k_run = jax.random.split(key)
        obs, state = env.reset(k0, params)

        def body(carry, k):
            obs, state = carry
            k_act, k_step = jax.random.split(k)
            action = act_space.sample(k_act)
            obs2, state2, reward, terminated, truncated, info = env.step(k_step, state, action, params)
            done = terminated | truncated
            out = dict(obs=obs2, reward=reward, done=done, info=info, action=action, step=state2.step,
                       obs_in=obs_space.contains(obs2), act_in=act_space.contains(action))
            return (obs2, state2), out

        ks = jax.random.split(k_run, num_steps)
        _, out = jax.lax.scan(body, (obs, state), ks)
        k_step = jax.random.split(ks[STEPS - 1])[1]
        out["ref_obs"] = env.reset_env(jax.random.split(k_step)[1], params)[0]  # gymnax's reset key
        return obs, obs_space.contains(obs), out

    return jax.jit(jax.vmap(run))


# The fast tier holds Pareto's (the discrete-action MOCC env meets Gymnasium's checker there too);
# make test-full holds every one (each compile costs 6-20 s on two cores).
@pytest.mark.parametrize("name", [n if n == "pareto" else pytest.param(n, marks=pytest.mark.full)
                                  for n in ENV_NAMES])
def test_gymnax_contract_every_env(name):
    """Jitted and vmapped over 1,024 links: shapes and dtypes match the spaces, observations and
    sampled actions lie in them, the episode ends at its 3rd step (truncated: discount 1) and
    the next step starts a fresh one (gymnax's auto-reset: the reset key's observation, step 1),
    inactive flows get no reward, and the same keys give the same run (other keys, other links)."""
    env, params = gymnax_api.make(name, max_steps=STEPS, **SHORT.get(name, {}))
    assert isinstance(env, gymnax.environments.environment.Environment) and env.name == name
    f = env.env.config.num_flows
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    c = env.env.config
    assert obs_space.shape == (f, c.history, c.obs_dim) and act_space.shape == (f,)
    run = _rollout(env, params, STEPS + 1)
    keys = jax.random.split(jax.random.key(0), LANES)
    obs0, in0, out = run(keys)

    assert obs0.shape == (LANES,) + obs_space.shape and obs0.dtype == obs_space.dtype
    assert out["obs"].shape == (LANES, STEPS + 1) + obs_space.shape and out["obs"].dtype == jnp.float32
    assert bool(jnp.all(in0)) and bool(jnp.all(out["obs_in"])) and bool(jnp.all(out["act_in"]))
    assert out["action"].shape == (LANES, STEPS + 1, f)
    assert out["action"].dtype == (jnp.int32 if isinstance(act_space, gymnax.environments.spaces.Discrete)
                                   else jnp.float32)
    assert out["reward"].shape == (LANES, STEPS + 1, f) and out["reward"].dtype == jnp.float32
    assert out["done"].shape == (LANES, STEPS + 1) and out["done"].dtype == jnp.bool_
    info = out["info"]
    assert info["active"].shape == (LANES, STEPS + 1, f) and info["agent"].shape == (LANES, STEPS + 1, f)
    assert bool(jnp.all(jnp.isfinite(out["reward"])))

    # The episode is truncated at its 3rd step and nowhere else in these 4 steps.
    want_done = np.array([t + 1 == STEPS for t in range(STEPS + 1)])
    np.testing.assert_array_equal(np.asarray(out["done"]), np.broadcast_to(want_done, (LANES, STEPS + 1)))
    np.testing.assert_array_equal(np.asarray(info["truncated"]), np.asarray(out["done"]))
    assert not bool(jnp.any(info["terminated"])) and bool(jnp.all(info["discount"] == 1.0))
    # Auto-reset: the done step's obs is the fresh episode's (gymnax's reset key), its state at step 0.
    np.testing.assert_array_equal(np.asarray(out["obs"][:, STEPS - 1]), np.asarray(out["ref_obs"]))
    np.testing.assert_array_equal(np.asarray(out["step"]), np.broadcast_to([1, 2, 0, 1], (LANES, STEPS + 1)))
    # ... and the finished episode's last observation is in info["final_observation"] (gymnax's).
    assert not np.array_equal(np.asarray(info["final_observation"][:, STEPS - 1]),
                              np.asarray(out["obs"][:, STEPS - 1]))
    np.testing.assert_array_equal(np.asarray(info["final_observation"][:, 0]), np.asarray(out["obs"][:, 0]))
    # A flow without a transition (not started, finished, a competitor) gets no reward.
    assert bool(jnp.all(jnp.where(info["active"], 0.0, out["reward"]) == 0.0))
    if name == "pareto-fairness":  # the second flow starts after the first: inactive at first
        assert bool(jnp.all(info["active"][:, 0, 0])) and not bool(jnp.any(info["active"][:, 0, 1]))

    again = run(keys)
    for a, b in zip(jax.tree.leaves((obs0, in0, out)), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len(np.unique(np.asarray(info["capacity"][:, 0, 0]))) > 1  # the lanes' keys draw different links


@pytest.mark.full
def test_step_is_jaxccs_step():
    """The adapter's step (gymnax's auto-reset) gives what jaxcc's own ``MultiFlowEnv.step``
    gives for the same key, across an episode's end."""
    env, params = gymnax_api.make("pareto-fairness", max_steps=2)
    base = env.env
    key = jax.random.key(3)
    obs_a, st_a = env.reset(key, params)
    obs_b, st_b = base.reset(key, params)
    np.testing.assert_array_equal(np.asarray(obs_a), np.asarray(obs_b))
    step_b = jax.jit(base.step)
    for t in range(3):
        k = jax.random.key(10 + t)
        a = jnp.full((2,), 0.1 * t)
        obs_a, st_a, r_a, term_a, trunc_a, info_a = env.step(k, st_a, a, params)
        obs_b, st_b, r_b, term, trunc, info_b = step_b(k, st_b, a, params)
        np.testing.assert_array_equal(np.asarray(obs_a), np.asarray(obs_b))
        np.testing.assert_array_equal(np.asarray(r_a), np.asarray(r_b))
        assert (bool(term_a), bool(trunc_a)) == (bool(term[0]), bool(trunc[0])) == (False, t == 1)
        np.testing.assert_array_equal(np.asarray(info_a["final_observation"]), np.asarray(info_b["final_obs"]))


def test_single_agent_view_and_errors():
    """The single-agent view drops the agent axis (shapes by tracing only), and asking for it on
    a two-flow link or for an unknown name is a one-line error."""
    env, params = gymnax_api.make("pareto", single_agent=True, max_steps=STEPS)
    c = env.env.config
    assert env.observation_space(params).shape == (c.history, c.obs_dim)
    space = env.action_space(params)
    assert space.shape == (1,) and (space.low, space.high) == (-0.7, 2.0)  # Pareto's action range
    assert env.num_actions == 1
    key = jax.random.key(0)
    obs, state = jax.eval_shape(env.reset, key, params)
    assert obs.shape == (c.history, c.obs_dim)
    out = jax.eval_shape(env.step, key, state, jnp.zeros((1,)), params)
    obs, _, reward, terminated, truncated, info = out
    assert obs.shape == (c.history, c.obs_dim) and reward.shape == () and terminated.shape == truncated.shape == ()
    assert info["active"].shape == () and info["final_observation"].shape == obs.shape

    with pytest.raises(ValueError, match=r"^single_agent: 'pareto-fairness' has num_flows=2") as err:
        gymnax_api.make("pareto-fairness", single_agent=True)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"^env_id: unknown jaxcc environment 'cartpole'; expected one of aurora"):
        gymnax_api.make("cartpole")
    assert gymnax_api.make("aurora", single_agent=True)[0].action_space(None).high == 10.0  # the trainer's clip
    multi = gymnax_api.make("mocc", num_flows=2)[0].action_space(None)
    assert isinstance(multi, gymnax_api.AgentsDiscrete) and multi.shape == (2,)
    assert bool(multi.contains(jnp.array([0, 6]))) and not bool(multi.contains(jnp.array([0, 7])))
    assert multi.sample(key).shape == (2,)


def test_gymnax_wrappers_run_on_a_jaxcc_env():
    """gymnax's LogWrapper over its FlattenObservationWrapper on the single-agent view: episode
    returns are the sums of the episode's rewards, lengths are 3, the flattened observation is
    H·D long, and an action above the space is clipped to it (Pareto's 2.0)."""
    env, params = gymnax_api.make("pareto", single_agent=True, max_steps=STEPS)
    wrapped = LogWrapper(FlattenObservationWrapper(env))
    c = env.env.config

    def run(key):
        obs, state = wrapped.reset(key, params)

        def body(carry, k):
            state = carry
            obs, state, reward, terminated, truncated, info = wrapped.step(k, state, jnp.array([5.0]), params)
            return state, (obs, reward, terminated | truncated, info["returned_episode_returns"], info["returned_episode_lengths"],
                           info["action"])

        return jax.lax.scan(body, state, jax.random.split(key, 2 * STEPS))[1]

    obs, reward, done, ret, length, action = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(2), 8))
    assert obs.shape == (8, 2 * STEPS, c.history * c.obs_dim) and reward.shape == (8, 2 * STEPS)
    np.testing.assert_array_equal(np.asarray(done[0]), [False, False, True] * 2)
    np.testing.assert_allclose(np.asarray(ret[:, 2]), np.asarray(reward[:, :3].sum(1)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ret[:, 5]), np.asarray(reward[:, 3:].sum(1)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(length[:, [2, 5]]), STEPS)
    np.testing.assert_array_equal(np.asarray(action), 2.0)


# Gymnasium's checker warns of these by design: the features are not bounded, Pareto's actions
# are not in [-1, 1], and an environment made without gymnasium.make has no spec.
EXPECTED_WARNINGS = ("observation space minimum value is -infinity", "observation space maximum value is infinity",
                     "symmetric and normalized space", "not having a spec")


def _check(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    unexpected = [str(w.message) for w in caught
                  if "gymnasium" in w.filename and not any(e in str(w.message) for e in EXPECTED_WARNINGS)]
    assert not unexpected, unexpected


def test_gymnasium_check_env_box():
    """Gymnasium's own checker on the single env with a Box action (Pareto)."""
    _check(GymnasiumEnv("pareto", max_steps=STEPS))


def test_gymnasium_check_env_discrete_goal():
    """Gymnasium's own checker on MOCC (a Discrete action) with its preference in the
    observation: the preference is on the simplex, and the reward is ω·r of the objectives."""
    env = GymnasiumEnv("mocc", goal_in_obs=True, max_steps=STEPS)
    assert env.observation_space.shape == (1, 4 + 3) and env.action_space == gymnasium.spaces.Discrete(7)
    _check(env)
    obs, _ = env.reset(seed=1)
    w = obs[0, 4:]
    assert (w >= 0).all() and abs(w.sum() - 1.0) < 1e-5
    obs, reward, term, trunc, info = env.step(4)
    np.testing.assert_array_equal(info["goal"], w)
    assert info["reward_vector"].shape == (3,) and isinstance(reward, float)
    np.testing.assert_allclose(reward, float(np.dot(w, info["reward_vector"])), rtol=1e-5)


@pytest.mark.full
@pytest.mark.parametrize("name", ["aurora", "eagle", "deepcc"])
def test_gymnasium_check_env_full(name):
    _check(GymnasiumEnv(name, max_steps=STEPS, **SHORT.get(name, {})))


def _same_step(got, ref):
    obs, rew, term, trunc, info = got
    r_obs, r_rew, r_term, r_trunc, r_info = ref
    # vmapped: float32 rounding may differ.  atol: Pareto's (dD/dT)/5 cancels near an empty queue
    # as d_ms does (below): one float32 ulp of a 90-ms RTT is 7.5e-6 ms of d, ~8e-6 of the feature
    # over an MI of two RTTs
    np.testing.assert_allclose(obs, r_obs, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(rew, r_rew, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(term, r_term)
    np.testing.assert_array_equal(trunc, r_trunc)
    assert sorted(info) == sorted(r_info)
    for k in r_info:
        if k.startswith("_"):
            np.testing.assert_array_equal(info[k], r_info[k])
        else:  # where the mask is False, SyncVectorEnv leaves zeros, as the vector env does
            # atol: d_ms = (rtt − min_rtt)·1000 cancels near an empty queue, where one float32 ulp
            # of a 90-ms RTT (7.5e-9 s) is 7.5e-6 ms, whatever the relative tolerance
            np.testing.assert_allclose(info[k], r_info[k], rtol=1e-5, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("name", ["pareto"] + [pytest.param(n, marks=pytest.mark.full) for n in ("mocc", "eagle")])
def test_vector_env_is_sync_vector_env(name):
    """One jitted vmapped call gives what Gymnasium's SyncVectorEnv (next-step autoreset) gives
    over the single env: same seeds (s + i), same actions, across two episode ends."""
    n = 4
    vec = GymnasiumVectorEnv(name, n, max_steps=STEPS)
    ref = gymnasium.vector.SyncVectorEnv([lambda: GymnasiumEnv(name, max_steps=STEPS) for _ in range(n)])
    assert vec.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP
    assert vec.single_observation_space == ref.single_observation_space
    assert vec.single_action_space == ref.single_action_space
    assert vec.observation_space == ref.observation_space and vec.action_space == ref.action_space
    obs, _ = vec.reset(seed=11)
    r_obs, _ = ref.reset(seed=11)
    np.testing.assert_array_equal(obs, r_obs)
    assert obs in vec.observation_space
    vec.action_space.seed(5)
    for t in range(2 * STEPS + 2):
        actions = vec.action_space.sample()
        got = vec.step(actions)
        _same_step(got, ref.step(actions))
        assert got[0] in vec.observation_space and got[0].dtype == np.float32
        assert bool(got[3].all()) == (t % (STEPS + 1) == STEPS - 1)  # truncated at each 3rd step
    vec.reset()  # reset() continues each sub-environment's key chain, as the sub-envs do
    ref.reset()
    actions = vec.action_space.sample()
    _same_step(vec.step(actions), ref.step(actions))


def test_vector_env_autoreset_and_seeds():
    """Next-step autoreset: the step after an end ignores the action and gives reward 0, no flags,
    the new episode's first observation and no info; ``reset(seed=s)`` is deterministic, a list
    of seeds is the same as s, s+1, ..., and Gymnasium's RecordEpisodeStatistics counts 3-step
    episodes on it."""
    n = 4
    a, b = GymnasiumVectorEnv("pareto", n, max_steps=STEPS), GymnasiumVectorEnv("pareto", n, max_steps=STEPS)
    caps = []
    for seed in (42, 7):  # another seed, other links (the first observations are all empty histories)
        a.reset(seed=seed)
        caps.append(a.step(np.zeros((n, 1), np.float32))[4]["capacity"])
    assert not np.array_equal(*caps)
    o_a, _ = a.reset(seed=42)  # a reset with a seed starts over: nothing of the steps above remains
    o_b, _ = b.reset(seed=[42, 43, 44, 45])
    np.testing.assert_array_equal(o_a, o_b)
    first = []
    for t in range(STEPS):
        act = np.full((n, 1), 0.1, np.float32)
        r_a, r_b = a.step(act), b.step(act)
        np.testing.assert_array_equal(r_a[0], r_b[0])
        first.append(r_a)
    final_obs, _, term, trunc, _ = first[-1]
    assert trunc.all() and not term.any()
    obs_a, rew_a, term_a, trunc_a, info_a = a.step(np.full((n, 1), -0.5, np.float32))
    obs_b, *_ = b.step(np.full((n, 1), 1.5, np.float32))  # a different action: ignored
    np.testing.assert_array_equal(obs_a, obs_b)
    assert (rew_a == 0).all() and not term_a.any() and not trunc_a.any() and info_a == {}
    assert not np.array_equal(obs_a, final_obs)
    single = GymnasiumEnv("pareto", max_steps=STEPS)  # the new episode is the sub-env's own next reset
    single.reset(seed=42)
    for _ in range(STEPS):
        single.step(np.array([0.1], np.float32))
    np.testing.assert_array_equal(obs_a[0], single.reset()[0])

    stats = gymnasium.wrappers.vector.RecordEpisodeStatistics(b)
    stats.reset(seed=0)
    for t in range(STEPS):
        *_, info = stats.step(np.zeros((n, 1), np.float32))
    assert info["_episode"].all() and (info["episode"]["l"] == STEPS).all()


def test_gymnasium_errors():
    with pytest.raises(ValueError, match=r"^single_agent: 'pareto-fairness' has num_flows=2"):
        GymnasiumEnv("pareto-fairness")
    with pytest.raises(ValueError, match=r"^num_envs: 0 must be >= 1"):
        GymnasiumVectorEnv("pareto", 0)
    with pytest.raises(ValueError, match=r"^seed: a list of 2 seeds for num_envs=3"):
        GymnasiumVectorEnv("pareto", 3, max_steps=STEPS).reset(seed=[1, 2])
