"""jaxcc's environments behind Gymnasium's API (>= 1.0), for RL code that is not written in JAX
(Stable-Baselines3, CleanRL, RLlib...): numpy in, numpy out.

    env = jaxcc.envs.gymnasium_api.GymnasiumEnv("pareto", max_steps=60)         # gymnasium.Env
    envs = jaxcc.envs.gymnasium_api.GymnasiumVectorEnv("pareto", num_envs=64)   # gymnasium.vector.VectorEnv

Both run the single-agent view of ``jaxcc.envs.gymnax_api`` (one link with one flow is one
(sub-)environment; ``num_flows`` must be 1): ``obs`` [H, D] float32 (H past feature vectors; with
``goal_in_obs=True`` the goal appended, [H, D + G]), one action (``Discrete(n)`` or a Box of
shape (1,)), a float reward (MOCC's preference-scalarised, as in the gymnax view), and the step's
``info`` (numpy arrays; the gymnax view's ``step_env``'s).  Links with several flows are not
offered here: their flows share one episode and an inactive flow has no transition, which
Gymnasium's one-agent-per-environment API does not express; use the gymnax view's agent axis.

``GymnasiumEnv`` is one link: ``reset``/``step`` are each one jitted call.  It does not
auto-reset: after ``terminated or truncated`` the caller resets (``truncated`` is the time limit,
``terminated`` a true end such as MOCC's win or lose).  Instances of one configuration (the same
``env_id``, ``goal_in_obs`` and hashable overrides) share their jitted functions, so
``SyncVectorEnv`` over N of them compiles once, not N times (``_single_jitted``).

``GymnasiumVectorEnv`` is ``num_envs`` links stepped as one jitted, vmapped call, with
Gymnasium's default autoreset mode, ``AutoresetMode.NEXT_STEP`` (``metadata["autoreset_mode"]``):
the step at which a sub-environment's episode ends returns that episode's last observation with
``terminated``/``truncated``; the next ``step`` ignores that sub-environment's action, resets it
and returns the new episode's first observation with reward 0 and both flags False.  It gives
exactly what ``gymnasium.vector.SyncVectorEnv`` over ``GymnasiumEnv`` gives (same seeds, same
actions), in one call instead of ``num_envs``.  ``info`` holds each key's array over the
sub-environments with Gymnasium's ``_key`` mask (False where the step was a reset).

Randomness: every (sub-)environment holds a JAX key chain; each ``reset``/``step`` splits it once
and uses the new key.  ``reset(seed=s)`` starts the chain at ``jax.random.key(s)`` (sub-environment
``i`` of a vector env at ``s + i``, as ``SyncVectorEnv`` seeds its sub-environments; a list gives
one seed each); ``reset()`` continues the chain, or, before any seed, starts it from
``np_random``.  ``options`` are accepted and ignored.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnax.environments.spaces import gymnax_space_to_gym_space

from jaxcc.envs import gymnax_api

_SEED_HIGH = 2**32  # seeds drawn from np_random when none was given


def _single(env_id: str, goal_in_obs: bool, overrides: dict) -> tuple[gymnax_api.GymnaxEnv, Any]:
    return gymnax_api.make(env_id, single_agent=True, goal_in_obs=goal_in_obs, **overrides)


@functools.lru_cache(maxsize=32)
def _single_jitted(env_id: str, goal_in_obs: bool, overrides: tuple) -> tuple:
    """``_single``'s env and default params with its jitted ``reset_env``/``step_env``, one per
    configuration (``overrides``: the sorted items of a hashable overrides mapping).  The env
    and its functions are pure, so instances may share them."""
    gx, default = _single(env_id, goal_in_obs, dict(overrides))
    return gx, default, jax.jit(gx.reset_env), jax.jit(gx.step_env)


def _spaces(gx: gymnax_api.GymnaxEnv, params) -> tuple[gymnasium.Space, gymnasium.Space]:
    return gymnax_space_to_gym_space(gx.observation_space(params)), gymnax_space_to_gym_space(gx.action_space(params))


def _info_np(info: dict) -> dict:
    """The step's info as numpy arrays (new arrays: the caller may keep and change them)."""
    return {k: np.array(v) for k, v in info.items()}


def _key(seed: int) -> jax.Array:
    seed = int(seed)
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed: {seed} is outside [0, 2**63)")
    return jax.random.key(seed)


class GymnasiumEnv(gymnasium.Env):
    """One jaxcc link (one flow) as a ``gymnasium.Env``; see the module docstring.

    Args:
      env_id: one of ``jaxcc.envs.ENV_NAMES``.
      params: the environment's ``EnvParams`` (default: the paper's ``default_params``).
      goal_in_obs: append the episode's goal to ``obs`` (MOCC, DeepCC).
      **config_overrides: static ``EnvConfig`` fields (``jaxcc.envs.make_env``).
    """

    metadata = {"render_modes": []}

    def __init__(self, env_id: str, params=None, goal_in_obs: bool = False, **config_overrides: Any):
        items = tuple(sorted(config_overrides.items()))
        try:
            hash(items)
        except TypeError:  # an unhashable override (a mapping): this instance's own functions
            self.gymnax_env, default = _single(env_id, goal_in_obs, config_overrides)
            self._reset_fn, self._step_fn = jax.jit(self.gymnax_env.reset_env), jax.jit(self.gymnax_env.step_env)
        else:
            self.gymnax_env, default, self._reset_fn, self._step_fn = _single_jitted(env_id, bool(goal_in_obs), items)
        self.params = default if params is None else params
        self.observation_space, self.action_space = _spaces(self.gymnax_env, self.params)
        self._chain: jax.Array | None = None
        self._state = None

    def _next_key(self) -> jax.Array:
        self._chain, k = jax.random.split(self._chain)
        return k

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._chain = _key(seed)
        elif self._chain is None:
            self._chain = _key(self.np_random.integers(_SEED_HIGH))
        obs, self._state = self._reset_fn(self._next_key(), self.params)
        return np.array(obs), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("step: call reset() first")
        action = np.asarray(action, self.action_space.dtype)
        obs, self._state, reward, _, info = self._step_fn(self._next_key(), self._state, action, self.params)
        info = _info_np(info)
        return (np.array(obs), float(reward), bool(info["terminated"]), bool(info["truncated"]), info)


class GymnasiumVectorEnv(VectorEnv):
    """``num_envs`` jaxcc links (one flow each) as one ``gymnasium.vector.VectorEnv``, stepped by
    one jitted, vmapped call, with next-step autoreset; see the module docstring.

    Args:
      env_id: one of ``jaxcc.envs.ENV_NAMES``.
      num_envs: links (sub-environments).
      params: the ``EnvParams`` every link shares (default: the paper's ``default_params``).
      goal_in_obs: append the episode's goal to ``obs`` (MOCC, DeepCC).
      **config_overrides: static ``EnvConfig`` fields (``jaxcc.envs.make_env``).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, env_id: str, num_envs: int, params=None, goal_in_obs: bool = False, **config_overrides: Any):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs: {num_envs} must be >= 1")
        self.num_envs = int(num_envs)
        self.gymnax_env, default = _single(env_id, goal_in_obs, config_overrides)
        self.params = default if params is None else params
        self.single_observation_space, self.single_action_space = _spaces(self.gymnax_env, self.params)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        gx = self.gymnax_env

        def reset_one(chain, params):
            chain, k = jax.random.split(chain)
            obs, state = gx.reset_env(k, params)
            return chain, obs, state

        def step_one(chain, state, action, autoreset, params):
            # The same key split as GymnasiumEnv: one split per call, reset or step.
            chain, k = jax.random.split(chain)
            obs_st, state_st, reward, _, info = gx.step_env(k, state, action, params)
            obs_re, state_re = gx.reset_env(k, params)
            state = jax.tree.map(lambda r, s: jnp.where(autoreset, r, s), state_re, state_st)
            obs = jnp.where(autoreset, obs_re, obs_st)
            info = {k_: jnp.where(autoreset, jnp.zeros_like(v), v) for k_, v in info.items()}
            reward = jnp.where(autoreset, 0.0, reward)
            return chain, obs, state, reward, info

        self._reset_fn = jax.jit(jax.vmap(reset_one, in_axes=(0, None)))
        self._step_fn = jax.jit(jax.vmap(step_one, in_axes=(0, 0, 0, 0, None)))
        self._chains: jax.Array | None = None
        self._states = None
        self._autoreset = np.zeros((self.num_envs,), bool)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        super().reset(seed=int(seed) if isinstance(seed, (int, np.integer)) else None)
        if seed is None and self._chains is None:
            seed = int(self.np_random.integers(_SEED_HIGH))
        if isinstance(seed, (int, np.integer)):
            seed = [int(seed) + i for i in range(self.num_envs)]
        if seed is not None:
            if len(seed) != self.num_envs:
                raise ValueError(f"seed: a list of {len(seed)} seeds for num_envs={self.num_envs}")
            self._chains = jnp.stack([_key(s) for s in seed])
        self._chains, obs, self._states = self._reset_fn(self._chains, self.params)
        self._autoreset = np.zeros((self.num_envs,), bool)
        return np.array(obs), {}

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("step: call reset() first")
        actions = np.asarray(actions, self.single_action_space.dtype).reshape(
            (self.num_envs,) + self.single_action_space.shape)
        autoreset = self._autoreset
        self._chains, obs, self._states, reward, info = self._step_fn(self._chains, self._states, actions,
                                                                       autoreset, self.params)
        infos = {}  # as SyncVectorEnv's: a key (and its mask) only when a sub-environment stepped
        if not autoreset.all():
            for k, v in _info_np(info).items():
                infos[k], infos[f"_{k}"] = v, ~autoreset
        terminated, truncated = np.array(info["terminated"]), np.array(info["truncated"])
        self._autoreset = terminated | truncated
        return np.array(obs), np.array(reward), terminated, truncated, infos
