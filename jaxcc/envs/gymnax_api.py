"""jaxcc's environments behind gymnax's API, for JAX RL code written against gymnax (PureJaxRL,
gymnax's own wrappers).

    env, env_params = jaxcc.envs.gymnax_api.make("pareto", single_agent=True, max_steps=60)
    obs, state = env.reset(key, env_params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, env_params)

``make`` mirrors ``gymnax.make``: it returns the environment and its default ``EnvParams`` (the
paper's ``flax.struct`` params pytree: the training distribution and knobs, every leaf an array,
so ``jax.vmap`` can give each lane its own).  Keyword arguments other than the adapter's own are
the static ``EnvConfig`` overrides of ``jaxcc.envs.make_env`` (``max_steps``, ``num_flows``,
``ticks_per_rtt``, ...).  The environment subclasses ``gymnax.environments.environment.Environment``:
its ``step`` and ``reset`` are gymnax's own (gymnax ≥ 1.0: ``step`` returns ``terminated`` and
``truncated``, the time limit from ``is_truncated``), so auto-reset is gymnax's (the step's key is
split into a step key and a reset key; when ``terminated | truncated``, ``obs`` and ``state`` are
the fresh episode's and ``info["final_observation"]`` is the ended episode's last),
and gymnax's wrappers (``gymnax.wrappers.purerl.LogWrapper``, ``FlattenObservationWrapper``)
run on it.  jaxcc's ``MultiFlowEnv.step`` splits the key the same way, so both give the same
episode for the same key.

The multi-agent mapping (one link = one environment; its flows are the agents, sharing the
parameters, with no communication):

* the agent axis stays the leading axis: ``obs`` [F, H, D] (the paper's history of H feature
  vectors), ``action`` [F] (``action_space``: a Box of shape (F,) or a ``Discrete`` of shape
  (F,)), ``reward`` [F];
* ``terminated`` (a true end: MOCC's win or lose) and ``truncated`` (the time limit) are scalars:
  the link's episode, the same for every flow of a link (both may hold at one step, as in
  gymnax's own environments);
* ``info`` carries jaxcc's per-agent arrays ([F] leaves): ``active`` (the flow's MI closed at this
  step: it has a transition; a flow that has not started or has finished is inactive and gets
  reward 0), ``agent`` (False for a competitor's slot, which the policy does not control),
  ``action`` (the action in force) and the paper's diagnostics; and the link's scalars
  ``terminated``, ``truncated``, ``discount`` (0 only at a true end, so a time limit still
  bootstraps) and, from gymnax's ``step``, ``final_observation`` (the step's observation before
  an auto-reset replaced it);
* ``single_agent=True`` (only with ``num_flows == 1``) drops the agent axis: ``obs`` [H, D],
  ``action`` a scalar ``Discrete`` or a Box of shape (1,) (as gymnax's Pendulum), ``reward`` a
  scalar, every per-agent ``info`` leaf unbatched; unmodified single-agent gymnax/PureJaxRL
  code runs on it.

Two papers are conditioned on a per-episode goal (MOCC's preference ω, DeepCC's target).  The
goal is in ``info["goal"]`` ([F, G]) and ``env.goal(state)``; ``goal_in_obs=True`` appends it to
every history row (``obs`` [F, H, D + G]) so that a policy that sees only ``obs`` sees it.
MOCC's reward is a vector [F, 3] (throughput, delay, loss); here ``reward`` is its linear
scalarisation by the episode's preference, ω·r (as MOCC's envelope Q-learning scalarises it),
and the vector is ``info["reward_vector"]``.

Continuous actions outside the space are clipped to it (as gymnax's Pendulum clips its torque).
Aurora's rate rule takes any real; its space is [-10, 10], the range the Aurora trainer
(``jaxcc.agents.aurora_ppo``'s ``action_clip``) and its exported policies clip to, so that the
space is bounded and can be sampled.  ``is_terminal``/``discount(state, params)`` are not
offered: MOCC's end is decided inside the step; use ``info["terminated"]``/``info["discount"]``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

from jaxcc.envs import registry
from jaxcc.envs.base import EnvState, MultiFlowEnv

# Aurora's action bound: the range jaxcc.agents.aurora_ppo clips its sampled actions and its
# exported head to (``action_clip``, 10: at most ×1.25 or ÷1.25 per MI at α = 0.025).
AURORA_ACTION_BOUND = 10.0


class AgentsDiscrete(spaces.Discrete):
    """One categorical action per agent: ``shape`` (F,), each in [0, n).  gymnax's ``Discrete``
    is scalar-only; ``sample`` draws every agent's independently and ``contains`` holds all."""

    def __init__(self, num_categories: int, num_agents: int):
        super().__init__(num_categories)
        self.shape = (num_agents,)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        return (x.shape == self.shape) & jnp.all((x >= 0) & (x < self.n))


class GymnaxEnv(environment.Environment):
    """A jaxcc environment (``MultiFlowEnv``) with gymnax's API; see the module docstring.

    Attributes:
      env: the wrapped jaxcc environment (``env.config`` its static shape).
      single_agent: the agent axis is dropped (``num_flows == 1`` only).
      goal_in_obs: the episode's goal is appended to every history row of ``obs``.
    """

    def __init__(self, env_id: str, env: MultiFlowEnv, single_agent: bool = False, goal_in_obs: bool = False):
        super().__init__()
        self._id = env_id
        self.env = env
        self.single_agent = bool(single_agent)
        self.goal_in_obs = bool(goal_in_obs) and env.config.goal_dim > 0
        self._spec = env.action_spec()

    # -- gymnax surface -----------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._id

    @property
    def default_params(self):
        return self.env.default_params

    @property
    def num_agents(self) -> int:
        return self.env.config.num_flows

    @property
    def num_actions(self) -> int:
        """Per agent: the number of choices (discrete) or 1 (one continuous action)."""
        return int(self._spec["n"]) if self._spec["kind"] == "discrete" else 1

    def observation_space(self, params=None) -> spaces.Box:
        c = self.env.config
        shape = (c.history, c.obs_dim + (c.goal_dim if self.goal_in_obs else 0))
        if not self.single_agent:
            shape = (c.num_flows,) + shape
        return spaces.Box(-jnp.inf, jnp.inf, shape, jnp.float32)

    def action_space(self, params=None) -> spaces.Space:
        f = 1 if self.single_agent else self.env.config.num_flows
        if self._spec["kind"] == "discrete":
            n = int(self._spec["n"])
            return spaces.Discrete(n) if self.single_agent else AgentsDiscrete(n, f)
        lo, hi = self._bounds()
        return spaces.Box(lo, hi, (f,), jnp.float32)

    def get_obs(self, state: EnvState, params=None, key=None) -> jax.Array:
        return self._view(self._obs(state.hist, state))

    def goal(self, state: EnvState) -> jax.Array:
        """The episode's goal / preference: [F, G] ([G] single-agent; G may be 0)."""
        return self._view(self.env.goal(state))

    def reset_env(self, key: jax.Array, params) -> tuple[jax.Array, EnvState]:
        hist, state = self.env.reset_env(key, params)
        return self._view(self._obs(hist, state)), state

    def step_env(self, key: jax.Array, state: EnvState, action, params):
        if self._spec["kind"] == "continuous":
            lo, hi = self._bounds()
            action = jnp.clip(jnp.asarray(action, jnp.float32), lo, hi)
        hist, new, reward, terminated, _, info = self.env.step_env(key, state, action, params)
        info = dict(info)
        goal = self.env.goal(new)
        if reward.ndim == 2:  # a vector reward [F, R]: scalarised by the episode's preference
            info["reward_vector"] = reward
            reward = jnp.sum(reward * goal, axis=-1)
        if self.env.config.goal_dim > 0:
            info["goal"] = goal
        obs = self._obs(hist, new)
        if self.single_agent:
            info = jax.tree.map(lambda x: x[0], info)
            obs, reward = obs[0], reward[0]
        info.update(terminated=terminated, truncated=self.is_truncated(new, params),
                    discount=1.0 - terminated.astype(jnp.float32))
        return obs, new, reward, terminated, info

    def is_truncated(self, state: EnvState, params) -> jax.Array:
        """The time limit (gymnax's truncation, read from the state after the step): the
        environment's ``max_steps`` decisions or ``params.max_time_s`` of link time."""
        time = state.sim.tick.astype(jnp.float32) * state.link.dt
        return self.env.time_limit_reached(state.step, time, params)

    # -- helpers --------------------------------------------------------------------------

    def _bounds(self) -> tuple[float, float]:
        if self._id.split("-")[0] == "aurora":
            return -AURORA_ACTION_BOUND, AURORA_ACTION_BOUND
        return float(self._spec["low"]), float(self._spec["high"])

    def _obs(self, hist: jax.Array, state: EnvState) -> jax.Array:
        if not self.goal_in_obs:
            return hist
        goal = jnp.broadcast_to(self.env.goal(state)[:, None, :], hist.shape[:2] + (self.env.config.goal_dim,))
        return jnp.concatenate([hist, goal.astype(hist.dtype)], axis=-1)

    def _view(self, x: jax.Array) -> jax.Array:
        return x[0] if self.single_agent else x

    def __repr__(self) -> str:
        return (f"GymnaxEnv({self._id!r}, num_flows={self.env.config.num_flows}, "
                f"single_agent={self.single_agent}, goal_in_obs={self.goal_in_obs})")


def make(env_id: str, single_agent: bool = False, goal_in_obs: bool = False, **config_overrides: Any):
    """``(env, env_params)`` for a jaxcc environment, as ``gymnax.make(env_id)`` returns them.

    Args:
      env_id: one of ``jaxcc.envs.ENV_NAMES``.
      single_agent: drop the agent axis (needs ``num_flows == 1``).
      goal_in_obs: append the episode's goal to ``obs`` (MOCC, DeepCC; no effect elsewhere).
      **config_overrides: static ``EnvConfig`` fields (``jaxcc.envs.make_env``).

    Raises:
      ValueError: an unknown ``env_id``, or ``single_agent`` with more than one flow.
    """
    if env_id not in registry.ENV_NAMES:
        raise ValueError(f"env_id: unknown jaxcc environment {env_id!r}; "
                         f"expected one of {', '.join(registry.ENV_NAMES)}")
    env, params = registry.make_env(env_id, **config_overrides)
    if single_agent and env.config.num_flows != 1:
        raise ValueError(f"single_agent: {env_id!r} has num_flows={env.config.num_flows}; the single-agent view needs "
                         f"num_flows=1 (or keep the agent axis with single_agent=False)")
    return GymnaxEnv(env_id, env, single_agent=single_agent, goal_in_obs=goal_in_obs), params
