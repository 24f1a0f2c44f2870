"""What DeepCC's reward pays on its training links: eq. 3 as written and bounded, per goal.

    python launch/deepcc_reward_landscape.py [--config=deepcc] [--links=128] [--steps=800] [--seed=0]

Hand-written reference policies, not a learner, run on the training distribution of ``--config``
(its environment, its ``env.params``, its dynamics): each sends at a fraction (0.25, 0.5, 0.8, 1)
of the link's mean capacity (``thr_ref``, which the environment knows in training), cut to 5 % in an
interval that delivered nothing (m¹ < 0.05) and to half while the queue exceeds 0.3 min RTTs (s⁴).
Every policy runs twice on the same links and keys, once with ``reward_bounded`` = 0 (eq. 3
literally) and once with 1 (``jaxcc.envs.deepcc.bounded_measurement``); the reward does not change
the links or the flows, so the two runs differ only in what they pay.  Printed: the mean reward
per interval for goals that weigh throughput, delay or loss above 0.6, and over all goals.
A reward under which the throughput-heavy goal earns about as much at half the capacity as at all
of it teaches a goal-conditioned policy to send little whatever its goal.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc.agents import deepcc_ddpg
from jaxcc.cli import run_absl_cli
from jaxcc.envs import deepcc
from jaxcc.training.configs import load_config

FRACS = (0.25, 0.5, 0.8, 1.0)
GOALS = (("throughput-heavy", 0), ("delay-heavy", 1), ("loss-heavy", 2))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("config", "deepcc", "a DeepCC config in configs/ (its links and dynamics)", flag_values=fv)
    flags.DEFINE_integer("links", 128, "links (one flow each) per run", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer("steps", 800, "decision intervals per link (episodes restart inside)", lower_bound=1,
                         flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the links' and the rollout's key", flag_values=fv)
    return fv


def rollout(env, p, frac: float, n: int, steps: int, seed: int):
    """(rewards [T, n], goals [T, n, 3]) of the reference policy at ``frac`` of the mean capacity."""
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(seed), n), p)

    def body(carry, key):
        obs, state = carry
        last = obs[:, 0, -1]  # the newest [s, m] row of each link's history
        cut = jnp.where(last[:, 4] < 0.05, 0.05, jnp.where(last[:, 3] > 0.3, 0.5, 1.0))
        rate = state.paper.thr_ref[:, 0] * frac * cut
        u = deepcc.rate_to_action(rate, p.bound_mbps, p.low_mbps)[:, None]
        obs2, state2, r, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(key, n), state, u, p)
        return (obs2, state2), (r[:, 0], state.goal[:, 0])

    _, (r, g) = jax.jit(lambda c, k: jax.lax.scan(body, c, jax.random.split(k, steps)))(
        (obs, state), jax.random.key(seed + 1))
    return np.asarray(r), np.asarray(g)


def main(fv, _args) -> int:
    path = os.path.join(REPO, "configs", f"{fv.config}.py")
    if not os.path.isfile(path):
        raise ValueError(f"--config={fv.config}: no file {path}")
    env, params = deepcc_ddpg.make_env(load_config(path))
    head = " | ".join(f"{name} eq. 3 / bounded" for name, _ in GOALS)
    print(f"| fraction of mean capacity | {head} | all goals eq. 3 / bounded |")
    print("|---" * (len(GOALS) + 2) + "|")
    for frac in FRACS:
        cells = {}
        for bounded in (0.0, 1.0):
            r, g = rollout(env, params.replace(reward_bounded=jnp.float32(bounded)), frac, fv.links, fv.steps, fv.seed)
            cells[bounded] = [r[g[..., i] > 0.6].mean() for _, i in GOALS] + [r.mean()]
        row = " | ".join(f"{a:.3f} / {b:.3f}" for a, b in zip(cells[0.0], cells[1.0]))
        print(f"| {frac:g} | {row} |", flush=True)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--config=deepcc")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
