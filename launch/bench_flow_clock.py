"""What per-flow decision clocks cost: Pareto's shared-link environment stepped with random
actions, ``flow_clock`` off and on, on the same links (4 flow slots, the robust fairness stage
with every link's RTTs mixed up to 8×, ``configs/pareto_async.py``'s distribution).

    PYTHONPATH=. python3 launch/bench_flow_clock.py [--links=1024] [--steps=100] [--repeats=3]

Prints environment steps per second and flow-decisions per second (steps × 4 flows; a flow on
its own clock decides on fewer of them) for each setting, the best of ``--repeats`` timed calls,
compilation excluded.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from jaxcc.envs import make_env, pareto


def _rate(flow_clock: bool, links: int, steps: int, repeats: int) -> float:
    env, p = make_env("pareto", num_flows=4, feature_set="pareto_v2", flow_clock=flow_clock, rtt_ratio_max=8.0,
                      max_steps=150)
    p = p.replace(robust=jnp.float32(1.0), stage=jnp.asarray(pareto.STAGE_FAIRNESS, jnp.int32),
                  p_mixed_rtt=jnp.float32(1.0))
    lo, hi = env.a_range

    def run(key):
        k0, k1 = jax.random.split(key)
        _, st = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k0, links), p)

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = jax.random.uniform(ka, (links, 4), minval=lo, maxval=hi)
            _, s, r, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(ks, links), s, a, p)
            return s, jnp.sum(r)

        return jax.lax.scan(body, st, jax.random.split(k1, steps))[1]

    f = jax.jit(run)
    f(jax.random.PRNGKey(0)).block_until_ready()  # compile
    best = 0.0
    for i in range(repeats):
        t = time.perf_counter()
        f(jax.random.PRNGKey(i + 1)).block_until_ready()
        best = max(best, links * steps / (time.perf_counter() - t))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.links < 1 or a.steps < 1 or a.repeats < 1:
        ap.error("--links, --steps and --repeats must be >= 1")
    for on in (False, True):
        r = _rate(on, a.links, a.steps, a.repeats)
        print(f"flow_clock={'on ' if on else 'off'}  links={a.links}  env steps/s={r:,.0f}  "
              f"flow-steps/s={4 * r:,.0f}")


if __name__ == "__main__":
    main()
