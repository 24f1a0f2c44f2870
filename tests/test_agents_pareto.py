"""Pareto agent pieces: networks, the MI-level BBR expert, one TD3 update chunk."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import policyfile
from jaxcc.agents import pipeline
from jaxcc.agents.pareto import expert, networks


def test_actor_is_a_valid_policy_and_in_range():
    spec = networks.actor_spec(8, 5, 16, 8)
    params = networks.init_actor(jax.random.PRNGKey(0), 5, 16, 8)
    policyfile.validate(spec, {k: np.asarray(v) for k, v in pipeline.flat(params).items()})
    obs = jax.random.normal(jax.random.PRNGKey(1), (32, 8, 5)) * 3
    a = jax.jit(jax.vmap(lambda o: networks.actor_apply(spec, params, o)))(obs)  # one program, not op by op
    assert a.shape == (32,) and float(a.min()) >= -0.7 and float(a.max()) <= 2.0
    c = networks.init_critic(jax.random.PRNGKey(2), 5, 16, 32)
    q = jax.jit(jax.vmap(networks.critic_apply, in_axes=(None, 0, 0)))(c, obs, a)
    assert q.shape == (32,) and bool(jnp.all(jnp.isfinite(q)))


def test_mi_bbr_expert_startup_then_probe():
    s = expert.init(1)
    rate = jnp.asarray([1e5])
    # No delivery yet: STARTUP's high gain.
    np.testing.assert_allclose(float(expert.action(s, rate)[0]), 2.0 / np.log(2) - 1, rtol=1e-5)
    # Delivery plateaus at 1 MB/s: after 3 MIs without 25% growth it drains, then probes.
    for _ in range(4):
        s = expert.update(s, jnp.asarray([1e6]), jnp.asarray([0.1]), jnp.asarray([True]))
    assert int(s.mode[0]) in (expert.DRAIN, expert.PROBE_BW)
    for _ in range(3):
        s = expert.update(s, jnp.asarray([1e6]), jnp.asarray([0.1]), jnp.asarray([True]))
    assert int(s.mode[0]) == expert.PROBE_BW
    a = float(expert.action(s, jnp.asarray([1e6]))[0])
    assert -0.3 < a < 0.3  # cruising near BtlBw (gains 0.75–1.25)
