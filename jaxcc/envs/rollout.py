"""A jittable rollout of a fixed policy (tests, baselines, quick evaluation).

``rollout(env, params, key, policy, num_steps)`` resets, then scans ``env.step`` with
``action = policy(key, obs, state, params)``; returns per-step rewards, terminated, truncated and
the ``info`` dicts stacked on a leading time axis.  vmap it over (params, key) for many links.
"""

from __future__ import annotations

import jax


def rollout(env, params, key, policy, num_steps: int):
    k_reset, k_run = jax.random.split(key)
    obs, state = env.reset(k_reset, params)

    def body(carry, k):
        obs, state = carry
        k_act, k_step = jax.random.split(k)
        action = policy(k_act, obs, state, params)
        obs, state, reward, term, trunc, info = env.step(k_step, state, action, params)
        return (obs, state), (reward, term, trunc, info)

    (obs, state), (rewards, term, trunc, info) = jax.lax.scan(body, (obs, state), jax.random.split(k_run, num_steps))
    return rewards, term, trunc, info, (obs, state)
