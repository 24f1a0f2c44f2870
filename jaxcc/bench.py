"""Simulator throughput: agent decisions/s and flow-ticks/s against the number of parallel links.

    python -m jaxcc.bench --out=bench.json [--sizes=1,16,256,1024,4096,16384] [--decisions=100]

Workload: Aurora's Table 1 link distribution (100–500 packets/s, 50–500 ms one-way latency,
2–2981-packet queue drawn log-uniformly, 0–5% loss), one sender per link starting at 0.3–1.5×
the bandwidth, acting every monitor interval (½ RTT, Aurora's reference simulator) with random
actions through Aurora's rate rule x(1+αa) / x/(1−αa).  With ``--mode=env`` (the default when
``jaxcc.envs`` provides it) each decision goes through the Aurora environment's ``step``
(features and reward included); ``--mode=sim`` drives the bare network model.

The command starts itself again with the kernel's 2-MB pages behind its buffers
(``jaxcc.huge_pages``; ``JAXCC_HUGE_PAGES=0`` runs it without), and the JSON says whether they
were on (``huge_pages``).

Also measured: the same workload on 1 Mbit/s and on 1 Gbit/s links — a fluid model's cost must
not depend on the link rate.  Timings exclude compilation (one warm-up call per size).
``--ticks_per_rtt`` sets the model's resolution (ticks per RTT; default the simulator's), for the
trade-off of speed against the error ``jaxcc.fidelity --ticks_per_rtt`` measures.

    python -m jaxcc.bench --train=aurora --sizes=1,64,1024,4096 --out=bench_cpu.json
    python -m jaxcc.bench --train=all --devices=1,8 --out=bench_train.json   # + bench_train.md

``--train=CONFIG[,CONFIG...]`` times the whole training loop of ``configs/CONFIG.py`` instead
(``all``: the five smoke configs, one per algorithm): per row, environment steps per second and
updates per second of ``--updates`` updates per call (an update is one ``config.num_updates``
step of the algorithm: for PPO collect, GAE and the epochs; for CEM one batch of episodes; for
TD3 ``rollout_len`` steps and ``grad_steps`` gradient steps; for MOCC and DeepCC one step of
every link and ``updates_per_step`` gradient steps), with ``num_envs`` set to each size
(default: the config's, rounded up to a multiple of every device count asked for).  Environment
steps are what the agent's ``counters.env_steps`` counts (link-steps; MOCC counts flow-steps).
The off-policy agents start learning at once (``learning_starts`` 0) so that every timed update
has its gradient steps.  Runs are placed as ``jaxcc.train`` places them: the lanes split over a
1-D ``'data'`` mesh of the devices, each agent splitting its batches inside its update.

``--devices=1,8`` runs the benchmark once per device count, each in a subprocess: on the CPU with
``--xla_force_host_platform_device_count=N`` (N host devices sharing this machine's cores, so
more devices is not faster here: it measures the cost of the split program), on a GPU/TPU host
on the first N real devices (more than there are is an error).  Without ``--devices`` every
device of this process is used.  The JSON (``--out``) and a markdown table (``--md``, default
``--out`` with ``.md``) list: algorithm, config, devices, num_envs, env steps/s, updates/s.
``CONFIG`` is what ``jaxcc.train --config`` takes (``jaxcc.training.configs``: a name, ``NAME:ARG``
or a path); a config that does not exist, a size that cannot be split over the devices, or more
devices than there are is one ``error:`` line, exit status 2.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
from absl import flags

from jaxcc import huge_pages, units
from jaxcc.cli import run_absl_cli
from jaxcc.training import configs
from jaxcc.sim import core, links
from jaxcc.sim import granular as gr

# --train=all: one smoke config per algorithm (config.algo).
TRAIN_ALL = ("aurora_smoke", "eagle_smoke", "pareto_smoke", "mocc_smoke", "deepcc_smoke")
CHILD_ENV = "JAXCC_BENCH_DEVICES"  # set in a --devices subprocess: the device count it measures at

TICKS_PER_RTT = links.DEFAULT_TICKS_PER_RTT
RING = 1024  # covers Table 1's deepest queues except the far tail (see links.ring_len_for)
RING_RANGE = (8, 65536)  # --ring_len
ALPHA = 0.025


def mi_ticks_for(ticks_per_rtt: int) -> int:
    """Ticks per Aurora monitor interval (½ RTT) at ``ticks_per_rtt``."""
    return max(1, int(ticks_per_rtt) // 2)


def _table1_link(key, fixed_mbps=None, ticks_per_rtt=TICKS_PER_RTT):
    kb, kl, kq, kloss = jax.random.split(key, 4)
    bw = jax.random.uniform(kb, (), minval=100.0, maxval=500.0) * units.MSS  # bytes/s
    if fixed_mbps is not None:
        bw = jnp.float32(fixed_mbps * units.MBPS)
    latency = jax.random.uniform(kl, (), minval=0.05, maxval=0.5)
    queue = jnp.exp(jax.random.uniform(kq, (), minval=jnp.log(2.0), maxval=jnp.log(2981.0))) * units.MSS
    if fixed_mbps is not None:  # keep the queue the same number of milliseconds deep
        queue = queue * bw / (300.0 * units.MSS)
    loss = jax.random.uniform(kloss, (), maxval=0.05)
    p = links.link_from_arrays(jnp.zeros((1,)), bw[None], queue, loss, jnp.array([2.0 * latency]),
                               jnp.zeros((1,)), jnp.full((1,), 1e9), ticks_per_rtt)
    return p, bw


def make_sim_rollout(n, num_decisions, fixed_mbps=None, ticks_per_rtt=TICKS_PER_RTT, granular=(), ring_len=RING,
                     feedback_slots=core.FEEDBACK_SLOTS):
    """``n`` links driven by random Aurora actions every MI (½ RTT: ``ticks_per_rtt // 2`` ticks) on
    the bare model (PureJaxRL layout: a ``lax.scan`` over decisions whose body steps the vmapped
    batch); with the ``granular`` effects (``jaxcc.sim.granular``) on every link when named,
    ``ring_len`` feedback slots per link, and each tick's feedback spread over ``feedback_slots``
    of them (``LinkParams.feedback_slots``)."""
    mi_ticks = mi_ticks_for(ticks_per_rtt)
    g = gr.params(granular)

    def rollout(key):
        p, bw = jax.vmap(lambda k: _table1_link(k, fixed_mbps, ticks_per_rtt))(jax.random.split(key, n))
        p = p.replace(feedback_slots=feedback_slots)
        if granular:
            p = p.replace(granular=gr.Granular(key=jax.random.split(jax.random.fold_in(key, 11), n),
                                               drops=jnp.full((n,), g.drops), loss=jnp.full((n,), g.loss),
                                               clocked=jnp.full((n,), g.clocked)))
        rate = (bw * jax.random.uniform(jax.random.fold_in(key, 7), (n,), minval=0.3, maxval=1.5))[:, None]
        cwnd = jnp.full((n, 1), core.BIG)
        state = jax.vmap(lambda q: core.init_state(q, ring_len))(p)

        # The feedback is added up per flow as it arrives and summed once at the end, which keeps
        # XLA from dropping it; a sum over the links every tick cost a tenth of the tick.
        def decide(carry, k):
            s, rate, fb = carry

            def tick(c, _):
                s, fb = c
                s, out = jax.vmap(core.step)(p, s, rate, cwnd)
                return (s, fb + out.acked + out.lost + out.rtt_wsum), None

            (s, fb), _ = jax.lax.scan(tick, (s, fb), None, length=mi_ticks)
            a = jax.random.uniform(k, (n, 1), minval=-1.0, maxval=1.0)
            rate = jnp.where(a >= 0, rate * (1 + ALPHA * a), rate / (1 - ALPHA * a))
            return (s, rate, fb), None

        (_, _, fb), _ = jax.lax.scan(decide, (state, rate, jnp.zeros_like(rate)), jax.random.split(key, num_decisions))
        return jnp.sum(fb)

    return rollout


def make_env_rollout(n, num_decisions, ticks_per_rtt=TICKS_PER_RTT):
    """``n`` Aurora environments (features and reward included) stepped with random actions."""
    from jaxcc.envs import make_env  # the env layer is optional for this benchmark

    env, params = make_env("aurora", ticks_per_rtt=ticks_per_rtt)

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


def bench_config(config, updates: int, n: int, devices: int | None = None) -> dict:
    """``config`` ready to time: ``num_envs = n``, one chunk of ``updates`` updates (every stage of
    a staged config), off-policy learning from the first update."""
    cfg = config.copy_and_resolve_references()
    with cfg.unlocked():
        cfg.num_envs = int(n)
        cfg.chunk_updates = int(updates)
        cfg.num_updates = int(updates)
        if "stages" in cfg:
            for st in cfg.stages.values():
                st.num_updates = int(updates)
        if "ppo" in cfg:
            per = n * cfg.ppo.num_steps
            cfg.ppo.num_minibatches = max(1, min(int(config.ppo.num_minibatches), per // 256))
            while per % cfg.ppo.num_minibatches or (devices and (per // cfg.ppo.num_minibatches) % devices):
                cfg.ppo.num_minibatches -= 1
        for block, keys in (("moq", ("learning_starts",)), ("ddpg", ("learning_starts", "actor_starts"))):
            if block in cfg:
                for k in keys:
                    cfg[block][k] = 0
    return cfg


def bench_training(config, updates: int = 2, sizes=None, repeats: int = 2, devices=None) -> list[dict]:
    """Environment steps and updates per second of the agent's whole training loop (``run_chunk``
    of ``updates`` updates), compilation excluded (one warm-up call per size).  Also per
    CPU-second of this process (all its threads), which is the fairer figure on a shared machine.

    ``config.num_envs`` is set to each size; a PPO config's ``ppo.num_minibatches`` shrinks to
    keep minibatches of at least 256 samples (and a divisor of the batch that splits over the
    devices).  ``devices``: the mesh (default every device); the state is placed as
    ``jaxcc.train`` places it and the agent gets the mesh.
    """
    from jaxcc import agents
    from jaxcc.agents import pipeline

    devs = list(jax.devices() if devices is None else devices)
    mesh = pipeline.make_mesh(devs)
    rows = []
    for n in sizes or [int(config.num_envs)]:
        if int(n) % len(devs):  # before bench_config, whose minibatch search assumes it
            raise ValueError(f"num_envs={n} must be a multiple of the {len(devs)} devices (--sizes)")
        cfg = bench_config(config, updates, n, len(devs))
        tr = agents.make_train(cfg, mesh=mesh)
        key = jax.random.PRNGKey(0)
        sh = pipeline.state_shardings(jax.eval_shape(tr.init, key), mesh)
        state = jax.jit(tr.init, out_shardings=sh)(key)
        run = jax.jit(tr.run_chunk, static_argnums=1, out_shardings=(sh, None))
        t0 = time.perf_counter()
        state, _ = jax.block_until_ready(run(state, 0))
        t_first = time.perf_counter() - t0
        best, best_cpu, steps = float("inf"), float("inf"), None
        for _ in range(repeats):
            before = int(state["counters"]["env_steps"])
            t0, c0 = time.perf_counter(), time.process_time()
            state, m = jax.block_until_ready(run(state, 0))
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
            steps = int(state["counters"]["env_steps"]) - before
        rows.append({"config_algo": str(cfg.algo), "devices": int(mesh.devices.size),
                     "process_devices": jax.device_count(), "num_envs": int(n),
                     "num_steps": int(cfg.ppo.num_steps) if "ppo" in cfg else None, "updates": updates,
                     "env_steps": steps, "seconds": best, "env_steps_per_s": steps / best,
                     "updates_per_s": updates / best, "cpu_seconds": best_cpu,
                     "env_steps_per_cpu_s": steps / max(best_cpu, 1e-9), "first_call_s": t_first})
        print(f"{cfg.algo:14s} devices={len(devs)}  links={n:6d}  env-steps/s={steps / best:12,.0f}  "
              f"updates/s={updates / best:9.2f}  (first call incl. compile {t_first:.1f} s)", flush=True)
    return rows


def train_names(arg: str) -> list[str]:
    return list(TRAIN_ALL) if arg.strip() == "all" else [a.strip() for a in arg.split(",") if a.strip()]


def default_size(config, device_counts) -> int:
    """The config's ``num_envs`` rounded up to a multiple of every device count."""
    step = math.lcm(*[int(d) for d in device_counts]) if device_counts else 1
    return -(-int(config.num_envs) // step) * step


def markdown(result: dict) -> str:
    """The table of a ``--train`` result (and of its sweep rows when measured)."""
    lines = ["| algorithm | config | devices | num_envs | env steps/s | updates/s |", "|---|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['algorithm']} | {r['config']} | {r['devices']} | {r['num_envs']} | "
                     f"{r['env_steps_per_s']:,.0f} | {r['updates_per_s']:.2f} |")
    lines.append("")
    lines.append(f"{result['backend']} ({result['device']}; {result['cpu_count']} CPUs), {result['updates']} updates "
                 f"per timed call, best of {result['repeats']}, compilation excluded.")
    # K-member sweep (one jitted program) against K separate runs (``jaxcc.training.sweep.bench_sweep``).
    if result.get("sweep"):
        lines += ["", "K-member sweep in one program vs K separate runs (one process, compilation excluded):", "",
                  "| config | K | devices | num_envs | updates/member | sweep env steps/s | separate env steps/s "
                  "| sweep updates/s | separate updates/s | speed-up |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in result["sweep"]:
            sw, sep = r["sweep"], r["separate"]
            lines.append(f"| {r['config']} | {r['k']} | {r['devices']} | {r['num_envs']} | {r['updates_per_member']} | "
                         f"{sw['env_steps_per_s']:,.0f} | {sep['env_steps_per_s']:,.0f} | {sw['updates_per_s']:.2f} | "
                         f"{sep['updates_per_s']:.2f} | {r['speedup']:.2f}x |")
    return "\n".join(lines) + "\n"


def _train_rows(fv, names, device_counts, sizes, on_row=None) -> list[dict]:
    """This process's rows: every config at this process's device count (``CHILD_ENV`` or all);
    ``on_row(rows)`` with the rows so far after each one."""
    want = int(os.environ.get(CHILD_ENV, "0")) or None
    devs = jax.devices()
    if want is not None:
        if len(devs) < want:
            raise ValueError(f"--devices={want}: only {len(devs)} {jax.default_backend()} device(s) here")
        devs = devs[:want]
    rows = []
    for name in names:
        cfg = configs.load_config(name)
        for n in sizes or [default_size(cfg, device_counts or [len(devs)])]:  # one size at a time: on_row
            (r,) = bench_training(cfg, fv.updates, [n], fv.repeats if fv["repeats"].present else 2, devs)
            rows.append({"algorithm": r.pop("config_algo"), "config": name, **r})
            if on_row is not None:
                on_row(rows)
    return rows


def _sweep_row(name: str, k: int, updates: int, sizes) -> dict:
    """``python -m jaxcc.sweep --bench=NAME`` (``jaxcc.training.sweep.bench_sweep``) in a subprocess: the
    sweep is a level above this module (it drives ``jaxcc.train``'s loop), so it is run, not imported."""
    import subprocess

    cmd = [sys.executable, "-m", "jaxcc.sweep", f"--bench={name}", f"--k={int(k)}", f"--updates={int(updates)}"]
    if sizes:
        cmd.append(f"--set=num_envs={int(sizes[0])}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stderr)
        raise ChildFailed(r.returncode)
    return json.loads(r.stdout)


def _spawn(fv, device_counts) -> list[dict]:
    """One subprocess per device count (the forced host-device flag must precede JAX's start)."""
    import re
    import subprocess
    import tempfile

    rows = []
    for d in device_counts:
        env = dict(os.environ)
        flags_ = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", ""))
        env["XLA_FLAGS"] = f"{flags_} --xla_force_host_platform_device_count={d}".strip()
        env[CHILD_ENV] = str(d)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rows.json")
            argv = [f"--train={fv.train}", f"--updates={fv.updates}", f"--devices={','.join(map(str, device_counts))}",
                    f"--out={out}"]  # every count: the default size is a multiple of all of them
            argv += [f"--sizes={','.join(fv.sizes)}"] if fv["sizes"].present else []
            argv += [f"--repeats={fv.repeats}"] if fv["repeats"].present else []
            r = subprocess.run([sys.executable, "-m", "jaxcc.bench", *argv], env=env)
            if r.returncode != 0:
                raise ChildFailed(r.returncode)
            with open(out) as fh:
                rows += json.load(fh)["rows"]
    return rows


def define_flags(fv):
    """The command's flags on ``fv`` (an ``absl.flags.FlagValues``)."""
    flags.DEFINE_string("out", "bench.json", "Where to write the JSON results.", flag_values=fv)
    flags.DEFINE_list("sizes", ["1", "16", "256", "1024", "4096", "16384"], "Numbers of parallel links.",
                      flag_values=fv)
    flags.DEFINE_integer("decisions", 100, "Decisions per link per timed call.", flag_values=fv)
    flags.DEFINE_integer("ticks_per_rtt", TICKS_PER_RTT, "The model's resolution: ticks per RTT (a decision every "
                         "½ RTT).", flag_values=fv)
    flags.DEFINE_list("granular", [], "--mode=sim: the packet-granular effects on every link, comma-separated from "
                      "drops,loss,clocked (jaxcc.sim.granular; drops or clocked, not both; default none)", flag_values=fv)
    flags.DEFINE_integer("ring_len", RING, "--mode=sim: feedback ring slots per link (the memory each link's "
                         "feedback occupies; feedback due later is clamped to the ring's end and counted)",
                         flag_values=fv)
    flags.DEFINE_integer("feedback_slots", None, "--mode=sim: ring slots one tick's feedback is spread over "
                         "(default: the model's, jaxcc.sim.core.FEEDBACK_SLOTS)", flag_values=fv)
    flags.DEFINE_integer("repeats", 3, "Timed calls per size (the best is reported).", flag_values=fv)
    flags.DEFINE_enum("mode", "auto", ["auto", "env", "sim"], "Drive the Aurora env or the bare simulator.",
                      flag_values=fv)
    flags.DEFINE_string("train", None, "time the training loop of configs/NAME.py (e.g. aurora; several comma-separated; "
                        "'all': the five smoke configs) instead of the simulator", flag_values=fv)
    flags.DEFINE_integer("updates", 2, "--train: updates per timed call", flag_values=fv)
    flags.DEFINE_list("devices", None, "--train: device counts to measure at, each in a subprocess (e.g. 1,8)",
                      flag_values=fv)
    flags.DEFINE_string("md", None, "--train: the markdown table (default: --out with .md)", flag_values=fv)
    flags.DEFINE_integer("sweep_k", 0, "--train: also time a K-member sweep against K separate runs per config "
                         "(jaxcc.training.sweep.bench_sweep); 0: not measured", flag_values=fv)
    return fv


class ChildFailed(RuntimeError):
    pass


def main_train(fv, arg: str):
    """The training-loop benchmark; a bad config or size is one ``error:`` line, exit 2.  ``--out``
    is rewritten as each size is measured, with ``"complete": false`` until the last one (so a
    run stopped at a time limit keeps the rows it finished)."""
    names = train_names(arg)

    def write(rows, sweep, complete):
        result = {"config": arg, "configs": names, "rows": rows, "sweep": sweep, "updates": fv.updates,
                  "repeats": fv.repeats if fv["repeats"].present else 2, "complete": complete,
                  "reference_sb3_ppo_packet_sim_1core_steps_per_s": 650, "device": str(jax.devices()[0]),
                  "backend": jax.default_backend(), "cpu_count": os.cpu_count(), "machine": platform.machine(),
                  "jax": jax.__version__}
        tmp = f"{fv.out}.part"  # replaced whole: a run killed while writing leaves the last table
        with open(tmp, "w") as fh:
            json.dump(result, fh, indent=2)
        os.replace(tmp, fv.out)
        return result

    sizes = [int(s) for s in fv.sizes] if fv["sizes"].present else None
    counts = [int(d) for d in fv.devices] if fv.devices else None
    try:
        if counts and any(d < 1 for d in counts):
            raise ValueError(f"--devices={','.join(fv.devices)}: device counts must be >= 1")
        if counts and sizes and any(s % d for s in sizes for d in counts):
            raise ValueError(f"--sizes={','.join(fv.sizes)} must be multiples of every device count "
                             f"(--devices={','.join(fv.devices)})")
        for name in names:
            configs.load_config(name)  # an unknown name: one line, before any subprocess
        if counts and not os.environ.get(CHILD_ENV):
            rows = _spawn(fv, counts)
        else:
            rows = _train_rows(fv, names, counts, sizes, on_row=lambda so_far: write(so_far, [], False))
        sweep = []
        if fv.sweep_k and not os.environ.get(CHILD_ENV):
            for name in names:  # K members in one jitted program vs K separate runs
                sweep.append({"config": name, **_sweep_row(name, fv.sweep_k, fv.updates, sizes)})
    except ChildFailed as e:
        return int(e.args[0])  # the subprocess printed its own error line
    except ValueError as e:
        print(f"error: --train={arg}: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    result = write(rows, sweep, True)
    if not os.environ.get(CHILD_ENV):
        md = fv.md or os.path.splitext(fv.out)[0] + ".md"
        with open(md, "w") as fh:
            fh.write(markdown(result))
        print(markdown(result))
        print(f"wrote {fv.out} and {md}")
    return 0


def main(fv, argv=()) -> int:
    """Run the benchmark with parsed flags ``fv`` (JAX's compilation cache is on: the benchmark
    times warm runs only)."""
    if not all(s.isdigit() and int(s) > 0 for s in fv.sizes):
        raise ValueError(f"--sizes={','.join(fv.sizes)}: give positive integers (numbers of links)")
    # The output folders exist before minutes of timing, not after (``--out=results/bench.json``
    # on a fresh clone); one that cannot be made is one error line.
    for flag, path in (("--out", fv.out), ("--md", fv.md)):
        folder = os.path.dirname(path or "")
        try:
            if folder:
                os.makedirs(folder, exist_ok=True)
        except OSError as e:
            print(f"error: {flag}={path}: cannot make its folder ({e.strerror})", file=sys.stderr)
            return 2
    if fv.train:
        return main_train(fv, fv.train)
    mode, nd, tpr, granular, ring = fv.mode, fv.decisions, fv.ticks_per_rtt, tuple(fv.granular), fv.ring_len
    slots = core.FEEDBACK_SLOTS if fv.feedback_slots is None else fv.feedback_slots
    try:
        gr.check(granular)
    except ValueError as e:
        raise ValueError(f"--granular: {e}") from None
    if tpr < 2:
        raise ValueError(f"--ticks_per_rtt={tpr}: must be >= 2 (a decision every ½ RTT)")
    mi_ticks = mi_ticks_for(tpr)
    make = lambda n: make_sim_rollout(n, nd, ticks_per_rtt=tpr, granular=granular, ring_len=ring,  # noqa: E731
                                      feedback_slots=slots)
    if granular and mode != "sim":
        raise ValueError(f"--granular={','.join(granular)}: only with --mode=sim (the bare model)")
    if not RING_RANGE[0] <= ring <= RING_RANGE[1]:
        raise ValueError(f"--ring_len={ring}: must be in [{RING_RANGE[0]}, {RING_RANGE[1]}] (feedback slots per link)")
    if fv.feedback_slots is not None and mode != "sim":
        raise ValueError(f"--feedback_slots={fv.feedback_slots}: only with --mode=sim (the bare model)")
    lo, hi = core.FEEDBACK_SLOTS_RANGE
    if not lo <= slots <= hi:
        raise ValueError(f"--feedback_slots={slots}: must be in [{lo}, {hi}] (ring slots a tick's feedback is spread over)")
    if ring != RING and mode != "sim":
        raise ValueError(f"--ring_len={ring}: only with --mode=sim (the environment sizes its own ring)")
    if mode in ("auto", "env"):
        try:
            make_env_rollout(1, 1, tpr)(jax.random.PRNGKey(0))
            make = lambda n: make_env_rollout(n, nd, tpr)  # noqa: E731
            mode = "env"
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            if mode == "env":
                raise
            print(f"Aurora env not usable here ({type(e).__name__}: {e}); timing the bare simulator")
            mode = "sim"
    rows, rate = [], None

    def write(complete: bool) -> None:
        # After every size, so that a run stopped by a time limit keeps the sizes it finished
        # ("complete": false until the rate-independence rows are in).
        result = {
            "sim": rows, "rate_independence": rate, "complete": complete, "mode": mode, "decisions_per_call": nd,
            "ticks_per_rtt": tpr, "granular": list(granular), "mi_ticks": mi_ticks, "ring_len": ring,
            "feedback_slots": slots, "huge_pages": huge_pages.active(), "device": str(jax.devices()[0]),
            "backend": jax.default_backend(),
            "cpu_count": os.cpu_count(), "machine": platform.machine(), "jax": jax.__version__,
        }
        with open(fv.out, "w") as fh:
            json.dump(result, fh, indent=2)

    for n in [int(s) for s in fv.sizes]:
        secs = _time(make(n), fv.repeats)
        dec = n * nd / secs
        rows.append({"num_envs": n, "decisions_per_s": dec, "flow_ticks_per_s": dec * mi_ticks, "seconds": secs})
        print(f"links={n:6d}  decisions/s={dec:12,.0f}  flow-ticks/s={dec * mi_ticks:14,.0f}", flush=True)
        write(False)
    best_n = max(rows, key=lambda r: r["decisions_per_s"])["num_envs"]
    rate = {"num_envs": best_n}
    for mbps, key in ((1.0, "decisions_per_s_1mbps"), (1000.0, "decisions_per_s_1gbps")):
        rate[key] = best_n * nd / _time(make_sim_rollout(best_n, nd, mbps, tpr, granular, ring, slots), fv.repeats)
    rate["ratio_1gbps_over_1mbps"] = rate["decisions_per_s_1gbps"] / rate["decisions_per_s_1mbps"]
    print(f"rate independence at {best_n} links (bare model): 1 Mbit/s {rate['decisions_per_s_1mbps']:,.0f}/s, "
          f"1 Gbit/s {rate['decisions_per_s_1gbps']:,.0f}/s")
    write(True)
    print(f"wrote {fv.out}")
    return 0


def run_cli(argv) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors are one line, exit 2."""
    return run_absl_cli(argv, __doc__, define_flags, main, "--sizes=1,16 --out=bench.json")


if __name__ == "__main__":
    huge_pages.reexec()  # before the first buffer: the feedback rings on 2-MB pages
    sys.exit(run_cli(sys.argv))
