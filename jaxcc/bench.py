"""Simulator throughput: agent decisions/s and flow-ticks/s against the number of parallel links.

    python -m jaxcc.bench --out=bench.json [--sizes=1,16,256,1024,4096,16384] [--decisions=100]

Workload: Aurora's Table 1 link distribution (100–500 packets/s, 50–500 ms one-way latency,
2–2981-packet queue drawn log-uniformly, 0–5% loss), one sender per link starting at 0.3–1.5×
the bandwidth, acting every monitor interval (½ RTT, Aurora's reference simulator) with random
actions through Aurora's rate rule x(1+αa) / x/(1−αa).  With ``--mode=env`` (the default when
``jaxcc.envs`` provides it) each decision goes through the Aurora environment's ``step``
(features and reward included); ``--mode=sim`` drives the bare network model.

Also measured: the same workload on 1 Mbit/s and on 1 Gbit/s links — a fluid model's cost must
not depend on the link rate.  Timings exclude compilation (one warm-up call per size).

    python -m jaxcc.bench --train=aurora --sizes=1,64,1024,4096 --out=bench_cpu.json

``--train=CONFIG`` times the whole training loop of ``configs/CONFIG.py`` instead: environment
steps per second of ``--updates`` updates per call (for PPO: collect, GAE and the epochs), with
``num_envs`` set to each size (default: the config's).  ``CONFIG`` is what ``jaxcc.train
--config`` takes (``jaxcc.configs_path``: a name, ``NAME:ARG`` or a path); a config that does not
exist or whose agent the benchmark does not support is one ``error:`` line, exit status 2.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
from absl import app, flags

from jaxcc import configs_path
from jaxcc.sim import core, links

FLAGS = flags.FLAGS
flags.DEFINE_string("out", "bench.json", "Where to write the JSON results.")
flags.DEFINE_list("sizes", ["1", "16", "256", "1024", "4096", "16384"], "Numbers of parallel links.")
flags.DEFINE_integer("decisions", 100, "Decisions per link per timed call.")
flags.DEFINE_integer("repeats", 3, "Timed calls per size (the best is reported).")
flags.DEFINE_enum("mode", "auto", ["auto", "env", "sim"], "Drive the Aurora env or the bare simulator.")
flags.DEFINE_string("train", None, "time the training loop of configs/NAME.py (e.g. aurora) instead of the simulator")
flags.DEFINE_integer("updates", 2, "--train: updates per timed call")

TICKS_PER_RTT = links.DEFAULT_TICKS_PER_RTT
MI_TICKS = TICKS_PER_RTT // 2  # Aurora: one decision every ½ RTT
RING = 1024  # covers Table 1's deepest queues except the far tail (see links.ring_len_for)
ALPHA = 0.025


def _table1_link(key, fixed_mbps=None):
    kb, kl, kq, kloss = jax.random.split(key, 4)
    bw = jax.random.uniform(kb, (), minval=100.0, maxval=500.0) * core.MSS  # bytes/s
    if fixed_mbps is not None:
        bw = jnp.float32(fixed_mbps * links.MBPS)
    latency = jax.random.uniform(kl, (), minval=0.05, maxval=0.5)
    queue = jnp.exp(jax.random.uniform(kq, (), minval=jnp.log(2.0), maxval=jnp.log(2981.0))) * core.MSS
    if fixed_mbps is not None:  # keep the queue the same number of milliseconds deep
        queue = queue * bw / (300.0 * core.MSS)
    loss = jax.random.uniform(kloss, (), maxval=0.05)
    p = links.link_from_arrays(jnp.zeros((1,)), bw[None], queue, loss, jnp.array([2.0 * latency]),
                               jnp.zeros((1,)), jnp.full((1,), 1e9), TICKS_PER_RTT)
    return p, bw


def make_sim_rollout(n, num_decisions, fixed_mbps=None):
    """``n`` links driven by random Aurora actions every MI on the bare model (PureJaxRL layout:
    a ``lax.scan`` over decisions whose body steps the vmapped batch)."""

    def rollout(key):
        p, bw = jax.vmap(lambda k: _table1_link(k, fixed_mbps))(jax.random.split(key, n))
        rate = (bw * jax.random.uniform(jax.random.fold_in(key, 7), (n,), minval=0.3, maxval=1.5))[:, None]
        cwnd = jnp.full((n, 1), core.BIG)
        state = jax.vmap(lambda q: core.init_state(q, RING))(p)

        def decide(carry, k):
            s, rate = carry

            def tick(s, _):
                s, out = jax.vmap(core.step)(p, s, rate, cwnd)
                return s, jnp.sum(out.acked + out.lost + out.rtt_wsum)

            s, fb = jax.lax.scan(tick, s, None, length=MI_TICKS)
            a = jax.random.uniform(k, (n, 1), minval=-1.0, maxval=1.0)
            rate = jnp.where(a >= 0, rate * (1 + ALPHA * a), rate / (1 - ALPHA * a))
            return (s, rate), jnp.sum(fb)

        _, y = jax.lax.scan(decide, (state, rate), jax.random.split(key, num_decisions))
        return jnp.sum(y)

    return rollout


def make_env_rollout(n, num_decisions):
    """``n`` Aurora environments (features and reward included) stepped with random actions."""
    from jaxcc.envs import make_env  # the env layer is optional for this benchmark

    env, params = make_env("aurora")

    def rollout(key):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        num_flows = obs.shape[1]

        def decide(state, k):
            ka, ks = jax.random.split(k)
            action = jax.random.uniform(ka, (n, num_flows), minval=-1.0, maxval=1.0)
            _, state, reward, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, n), state, action, params)
            return state, jnp.sum(reward)

        _, y = jax.lax.scan(decide, state, jax.random.split(key, num_decisions))
        return jnp.sum(y)

    return rollout


def _time(fn, repeats):
    f = jax.jit(fn)
    jax.block_until_ready(f(jax.random.PRNGKey(0)))  # compile + warm up
    best = float("inf")
    for r in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(jax.random.PRNGKey(r + 1)))
        best = min(best, time.perf_counter() - t)
    return best


def bench_training(config, updates: int = 2, sizes=None, repeats: int = 2) -> list[dict]:
    """Environment steps (MIs) per second of the agent's whole training loop (``run_chunk`` of
    ``updates`` updates), compilation excluded (one warm-up call per size).  Also per CPU-second
    of this process (all its threads), which is the fairer figure on a shared machine.

    ``config.num_envs`` is set to each size; a PPO config's ``ppo.num_minibatches`` shrinks to
    keep minibatches of at least 256 samples (and a divisor of the batch).  The agent's trainer
    must say how many env steps an update takes (``env_steps_per_update``: Aurora, Eagle).
    """
    from jaxcc import agents

    rows = []
    for n in sizes or [int(config.num_envs)]:
        cfg = config.copy_and_resolve_references()
        with cfg.unlocked():
            cfg.num_envs = int(n)
            cfg.chunk_updates = int(updates)
            cfg.num_updates = int(updates)
            if "ppo" in cfg:
                per = n * cfg.ppo.num_steps
                cfg.ppo.num_minibatches = max(1, min(int(config.ppo.num_minibatches), per // 256))
                while per % cfg.ppo.num_minibatches:
                    cfg.ppo.num_minibatches -= 1
        tr = agents.make_train(cfg)
        if not hasattr(tr, "env_steps_per_update"):
            raise ValueError(f"config.algo={cfg.algo!r} does not report env_steps_per_update "
                             f"(the training benchmark supports Aurora and Eagle)")
        state = jax.jit(tr.init)(jax.random.PRNGKey(0))
        run = jax.jit(tr.run_chunk, static_argnums=1)
        t0 = time.perf_counter()
        state, _ = jax.block_until_ready(run(state, 0))
        t_first = time.perf_counter() - t0
        best, best_cpu = float("inf"), float("inf")
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            state, m = jax.block_until_ready(run(state, 0))
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        steps = updates * tr.env_steps_per_update
        rows.append({"num_envs": n, "num_steps": int(cfg.ppo.num_steps) if "ppo" in cfg else None,
                     "updates": updates, "seconds": best, "env_steps_per_s": steps / best, "cpu_seconds": best_cpu,
                     "env_steps_per_cpu_s": steps / max(best_cpu, 1e-9), "first_call_s": t_first})
        print(f"links={n:6d}  MIs/update={tr.env_steps_per_update:8d}  env-steps/s={steps / best:12,.0f}  "
              f"per CPU-second={steps / max(best_cpu, 1e-9):12,.0f}  (first call incl. compile {t_first:.1f} s)",
              flush=True)
    return rows


def main_train(name: str):
    """The training-loop benchmark of config ``name``; a bad config is one ``error:`` line, exit 2."""
    sizes = [int(s) for s in FLAGS.sizes] if FLAGS["sizes"].present else None
    try:
        rows = bench_training(configs_path.load_config(name), FLAGS.updates, sizes)
    except ValueError as e:
        print(f"error: --train={name}: {e}", file=sys.stderr)
        return 2
    result = {"config": name, "rows": rows, "reference_sb3_ppo_packet_sim_1core_steps_per_s": 650,
              "device": str(jax.devices()[0]), "cpu_count": os.cpu_count(), "machine": platform.machine(),
              "jax": jax.__version__}
    with open(FLAGS.out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {FLAGS.out}")


def main(argv):
    del argv
    from jaxcc import jax_cache
    jax_cache.enable_compilation_cache()  # before the first jit (the benchmark times warm runs only)
    if FLAGS.train:
        return main_train(FLAGS.train)
    mode, nd = FLAGS.mode, FLAGS.decisions
    make = lambda n: make_sim_rollout(n, nd)  # noqa: E731
    if mode in ("auto", "env"):
        try:
            make_env_rollout(1, 1)(jax.random.PRNGKey(0))
            make = lambda n: make_env_rollout(n, nd)  # noqa: E731
            mode = "env"
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            if mode == "env":
                raise
            print(f"Aurora env not usable here ({type(e).__name__}: {e}); timing the bare simulator")
            mode = "sim"
    rows = []
    for n in [int(s) for s in FLAGS.sizes]:
        secs = _time(make(n), FLAGS.repeats)
        dec = n * nd / secs
        rows.append({"num_envs": n, "decisions_per_s": dec, "flow_ticks_per_s": dec * MI_TICKS, "seconds": secs})
        print(f"links={n:6d}  decisions/s={dec:12,.0f}  flow-ticks/s={dec * MI_TICKS:14,.0f}", flush=True)
    best_n = max(rows, key=lambda r: r["decisions_per_s"])["num_envs"]
    rate = {"num_envs": best_n}
    for mbps, key in ((1.0, "decisions_per_s_1mbps"), (1000.0, "decisions_per_s_1gbps")):
        rate[key] = best_n * nd / _time(make_sim_rollout(best_n, nd, mbps), FLAGS.repeats)
    rate["ratio_1gbps_over_1mbps"] = rate["decisions_per_s_1gbps"] / rate["decisions_per_s_1mbps"]
    print(f"rate independence at {best_n} links (bare model): 1 Mbit/s {rate['decisions_per_s_1mbps']:,.0f}/s, "
          f"1 Gbit/s {rate['decisions_per_s_1gbps']:,.0f}/s")
    result = {
        "sim": rows, "rate_independence": rate, "mode": mode, "decisions_per_call": nd, "mi_ticks": MI_TICKS,
        "ring_len": RING, "device": str(jax.devices()[0]), "backend": jax.default_backend(),
        "cpu_count": os.cpu_count(), "machine": platform.machine(), "jax": jax.__version__,
    }
    with open(FLAGS.out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {FLAGS.out}")


if __name__ == "__main__":
    app.run(main)
