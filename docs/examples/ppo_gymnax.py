"""PPO on jaxcc's Aurora environment through the gymnax API, PureJaxRL style, exported as a policy file.

1. Environment: ``gymnax_api.make("aurora", single_agent=True)``: one flow on one link; ``obs``
   is the last 10 monitor intervals of Aurora's (latency gradient, latency ratio, sending ratio),
   [10, 3]; the action, one real in [-10, 10], changes the rate by Aurora's rule (x(1 + αa) or
   x/(1 - αa), α = 0.025).  ``env_params`` is the training distribution (the paper's Table 1
   links); here its rewards are scaled by 1e-3 and half the episodes start at 0.1-30 % of the
   link's bandwidth (as ``configs/aurora.py`` does: a deployed sender starts far below the link).
   gymnax's ``LogWrapper`` keeps the episode returns.
2. Network (flax.linen): separate actor and critic MLPs, 64 -> 64 -> 64 tanh on the flattened
   window (the Aurora trainer's: 32 -> 16), a Gaussian policy with a learned log-std.  Not ReLU:
   the latency and sending ratios reach the hundreds on a filling queue, and ReLU networks
   collapsed there (measured: reward per MI fell below the untrained network's).
3. ``train(key)``, one jitted function: ``lax.scan`` over updates; each update collects
   NUM_STEPS steps of ``--num-envs`` vmapped links (``lax.scan``), computes GAE (an episode's
   time limit bootstraps from V of its last observation), then runs EPOCHS x MINIBATCHES steps
   of the clipped PPO loss with optax's Adam (PPO1's settings, as PCC-RL trained Aurora).
4. Export: the actor's mean, clipped to the action space, as a ``jaxcc-policy`` file
   (``jaxcc.policyfile.mlp_policy`` + ``save``) carrying the environment's feature spec, so the
   simulator (``policy:FILE``) and the C++ sender run it.
5. Evaluation: the printed ``python3 -m jaxcc.evaluate`` command runs it beside BBR on the
   Aurora paper's bandwidth sweep (``--suite=aurora-bw``).

    python3 docs/examples/ppo_gymnax.py --total-steps=4000000 --out=results/ppo_gymnax.safetensors
"""
import argparse
import os
import time
from typing import NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState
from gymnax.wrappers.purerl import LogWrapper

from jaxcc import envs, policyfile
from jaxcc.envs import gymnax_api

ENV, HIDDEN, ACTIVATION = "aurora", (64, 64, 64), "tanh"
NUM_STEPS, EPOCHS, MINIBATCHES = 64, 4, 8
LR, GAMMA, LAMBDA, CLIP_EPS, ENT_COEF, VF_COEF = 1e-3, 0.99, 0.95, 0.2, 0.01, 1.0


class MLP(nn.Module):
    """The flattened [T, D] window through HIDDEN tanh layers (fc1, fc2, ...) to a linear ``out``."""
    out_scale: float

    @nn.compact
    def __call__(self, obs):
        x = obs.reshape(obs.shape[:-2] + (-1,))
        for i, width in enumerate(HIDDEN):
            x = nn.tanh(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)), name=f"fc{i + 1}")(x))
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(self.out_scale), name="out")(x)


class ActorCritic(nn.Module):
    @nn.compact
    def __call__(self, obs):
        mean = MLP(0.01, name="actor")(obs)
        value = MLP(1.0, name="critic")(obs)[..., 0]
        log_std = self.param("log_std", nn.initializers.zeros, (1,))
        return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std)), value


class Transition(NamedTuple):  # one step of every link: leaves [num_envs, ...]
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


def make_env():
    env, params = gymnax_api.make(ENV, single_agent=True)
    return LogWrapper(env), params.replace(reward_scale=1e-3, init_far_frac=0.5, init_far_lo=0.001)


def make_train(total_steps: int, num_envs: int):
    env, env_params = make_env()
    num_updates = total_steps // (num_envs * NUM_STEPS)
    net = ActorCritic()
    v_reset, v_step = jax.vmap(env.reset, (0, None)), jax.vmap(env.step, (0, 0, 0, None))

    def env_step(carry, key):
        params, env_state, obs = carry
        k_act, k_env = jax.random.split(key)
        pi, value = net.apply(params, obs)
        action = pi.sample(seed=k_act)
        next_obs, env_state, reward, terminated, truncated, info = v_step(
            jax.random.split(k_env, num_envs), env_state, action, env_params)
        done = terminated | truncated
        _, final_value = net.apply(params, info["final_observation"])  # a time limit is no true end: bootstrap
        reward = reward + GAMMA * final_value * truncated * (1.0 - terminated)
        step = Transition(obs, action, pi.log_prob(action), value, reward, done.astype(jnp.float32))
        return (params, env_state, next_obs), (step, info["returned_episode_returns"])

    def gae(traj: Transition, last_value):
        def back(carry, t):
            adv, next_value = carry
            delta = t.reward + GAMMA * next_value * (1.0 - t.done) - t.value
            adv = delta + GAMMA * LAMBDA * (1.0 - t.done) * adv
            return (adv, t.value), adv
        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
        return adv, adv + traj.value

    def loss(params, t: Transition, adv, target):
        pi, value = net.apply(params, t.obs)
        ratio = jnp.exp(pi.log_prob(t.action) - t.log_prob)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        actor = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - CLIP_EPS, 1 + CLIP_EPS) * adv).mean()
        critic = jnp.mean((value - target) ** 2)  # unclipped: returns are in the hundreds
        return actor + VF_COEF * critic - ENT_COEF * pi.entropy().mean()

    def update(carry, key):
        state, env_state, obs = carry
        k_roll, k_epochs = jax.random.split(key)
        (_, env_state, obs), (traj, returns) = jax.lax.scan(
            env_step, (state.params, env_state, obs), jax.random.split(k_roll, NUM_STEPS))
        adv, target = gae(traj, net.apply(state.params, obs)[1])
        batch = jax.tree.map(lambda x: x.reshape((NUM_STEPS * num_envs,) + x.shape[2:]), (traj, adv, target))

        def epoch(state, key):
            perm = jax.random.permutation(key, NUM_STEPS * num_envs)
            minibatches = jax.tree.map(lambda x: x[perm].reshape((MINIBATCHES, -1) + x.shape[1:]), batch)

            def step(state, mb):
                return state.apply_gradients(grads=jax.grad(loss)(state.params, *mb)), None
            return jax.lax.scan(step, state, minibatches)[0], None
        state = jax.lax.scan(epoch, state, jax.random.split(k_epochs, EPOCHS))[0]
        return (state, env_state, obs), returns[-1].mean()  # the links' last finished episodes

    def train(key):
        k_init, k_reset, k_run = jax.random.split(key, 3)
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)
        state = TrainState.create(apply_fn=net.apply, params=net.init(k_init, obs), tx=optax.adam(LR, eps=1e-5))
        (state, _, _), returns = jax.lax.scan(update, (state, env_state, obs), jax.random.split(k_run, num_updates))
        return state.params, returns

    return train, env, env_params


def export(params, out: str, env, env_params) -> None:
    """The actor's deterministic action (its mean, clipped to the action space) as a policy file."""
    actor = params["params"]["actor"]
    space = env.action_space(env_params)
    features = envs.export_features_spec(ENV)
    spec, tensors = policyfile.mlp_policy(
        [actor[f"fc{i + 1}"] for i in range(len(HIDDEN))] + [actor["out"]], activation=ACTIVATION,
        features=features, head={"type": "gaussian_mean", "low": float(space.low), "high": float(space.high)},
        action={"type": "aurora", "alpha": float(features["alpha"])}, algorithm="ppo_gymnax")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    policyfile.save(out, spec, tensors)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-steps", type=int, default=4_000_000, help="environment steps (MIs) in all")
    p.add_argument("--num-envs", type=int, default=256, help="links stepped in parallel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/ppo_gymnax.safetensors", help="the policy file to write")
    a = p.parse_args()
    if a.num_envs <= 0 or a.total_steps < 0:
        p.error(f"--num-envs must be > 0 and --total-steps >= 0, got {a.num_envs} and {a.total_steps}")
    train, env, env_params = make_train(a.total_steps, a.num_envs)
    t0 = time.time()
    params, returns = jax.block_until_ready(jax.jit(train)(jax.random.key(a.seed)))
    print(f"{len(returns)} updates, {len(returns) * a.num_envs * NUM_STEPS} steps in {time.time() - t0:.1f} s")
    ended = np.asarray(returns)[np.asarray(returns) != 0]  # 0 until the links' first episodes end
    if len(ended):
        print(f"episode return (mean over links): first episodes {ended[0]:.1f}, last {ended[-1]:.1f}")
    export(params, a.out, env, env_params)
    print(f"wrote {a.out}\nevaluate beside BBR:\n  python3 -m jaxcc.evaluate --controller=policy:{a.out},bbr "
          f"--suite=aurora-bw --out={os.path.splitext(a.out)[0]}")


if __name__ == "__main__":
    main()
