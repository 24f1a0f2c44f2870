"""``python -m jaxcc.train --config=NAME [--config.key=value ...] [--workdir=DIR] [--seed=N]``

``NAME`` is ``configs/NAME.py`` (a path to a config file also works); ``--config.a.b=v``
overrides any key.  The run lives in ``--workdir`` (default ``checkpoints/runs/<NAME>-<seed>``):
re-running the same command resumes from the last checkpoint and finishes with the same final
parameters as an uninterrupted run (the chunk sequence and every RNG key live in the state).
Re-running it on a finished run trains nothing: one line names the run's policies and how to
train again (a new ``--workdir``, or delete the old one), and the exit status is 0.

PureJaxRL shape: the agent's ``make_train(config)`` gives pure jitted functions whose bodies are
``lax.scan`` (collect, update); this file is the thin Python loop over chunks that logs
(``metrics.jsonl`` always, wandb when not disabled — offline unless credentials exist), saves
orbax checkpoints, guards against NaN/inf, and shows a tqdm bar with ETA and current returns.

Devices: one 1-D mesh, axis ``'data'``, over ``jax.devices()`` — every device of every process
(``make_mesh``).  The environment lanes are the state's ``env`` subtree (every agent keeps all
its per-lane arrays there, each with the lane axis leading); ``state_shardings`` splits them
over ``'data'`` and replicates the rest (parameters, optimiser state, replay buffers, keys,
counters).  Inside their updates all five agents constrain their batches with
``jaxcc.agents.pipeline.data_sharding(mesh)`` — the lanes they step, PPO's minibatches,
Eagle's episodes, the replay minibatches of Pareto, MOCC and DeepCC — so each device does its
share of the batch and XLA all-reduces the gradients (``tests/test_train_sharding.py`` checks
both on 8 forced CPU devices).  ``num_envs`` and each agent's batch must be multiples of the
device count (a one-line error names the config field).

Keys, Brax-style: every process runs the same SPMD program with the same seed.  ``init`` is one
jit with ``out_shardings``, so the per-lane keys are split from the one global key inside it
and each device ends up holding the keys (and states) of its own lanes; every later key is
split from the state's ``key`` by the same jitted program.  Arrays are global ``jax.Array``s
across hosts, so no per-host ``fold_in(process_index)`` is needed, and a run's numbers do not
depend on how many processes or devices execute it (up to the order of float reductions).

Hosts: ``--coordinator_address=HOST:PORT --num_processes=N --process_id=I`` call
``jax.distributed.initialize`` with those values (``launch/multihost_local.sh`` runs N such
processes on one machine with forced CPU devices; CPU collectives between processes go through
gloo, jax's default ``jax_cpu_collectives_implementation`` since 0.4.3x, recorded in ``run.json``);
``--distributed`` (or ``JAXCC_DISTRIBUTED=1``) calls ``jax.distributed.initialize()`` with no
arguments, which detects the topology itself on a TPU pod slice (and under SLURM/Open MPI).
Process 0 alone writes the run's files (``run.json``, ``config.json``, ``metrics.jsonl``, wandb,
``summary.json``, the stage JSON and exported policies); every process takes part in orbax's
collective checkpoint saves (each writes the shards it holds, once) and restores.

Workdirs: a local path or a URI (``gs://bucket/runs/x``); every file goes through ``etils.epath``
and only local paths are made absolute (``jaxcc.checkpointing.run_path``).  wandb keeps its own
files in a local temporary directory when the workdir is a URI.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import os
import sys
import time
from typing import Any

import numpy as np

from jaxcc.configs_path import list_configs, load_config, resolve_config_path  # noqa: F401  (list_configs: public here)


class TrainingDiverged(RuntimeError):
    """NaN/inf in a loss or a parameter; the last good checkpoint is left as it was."""


# ----------------------------------------------------------------------------- config names


def _rewrite_argv(argv: list[str]) -> list[str]:
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--config="):
            out.append("--config=" + resolve_config_path(a[len("--config="):]))
        elif a == "--config" and i + 1 < len(argv):
            out += ["--config", resolve_config_path(argv[i + 1])]
            i += 1
        else:
            out.append(a)
        i += 1
    return out


def config_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path.partition(":")[0]))[0]


def all_keys(cfg, prefix: str = "") -> list[str]:
    out = []
    for k, v in cfg.items():
        if hasattr(v, "items"):
            out += all_keys(v, f"{prefix}{k}.")
        else:
            out.append(prefix + k)
    return out


# ----------------------------------------------------------------------------- logging


def resolve_wandb_mode(mode: str) -> str:
    """'disabled' | 'offline' | 'online'.  WANDB_MODE wins; 'auto' is online only with credentials."""
    env = os.environ.get("WANDB_MODE", "").strip().lower()
    if env in ("disabled", "offline", "online", "dryrun", "run"):
        return {"dryrun": "offline", "run": "online"}.get(env, env)
    if mode in ("disabled", "offline", "online"):
        if mode == "online" and not _wandb_credentials():
            return "offline"
        return mode
    return "online" if _wandb_credentials() else "offline"


def _wandb_credentials() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = os.path.expanduser(os.environ.get("NETRC", "~/.netrc"))
    try:
        with open(netrc) as f:
            return "api.wandb.ai" in f.read()
    except OSError:
        return False


class Logger:
    """metrics.jsonl always; wandb when enabled (never blocks on the network when offline).

    ``workdir`` may be a URI: metrics.jsonl and wandb_id.txt go through ``etils.epath`` (an object
    store cannot append, so there the file is rewritten whole on every row: one row per chunk), and
    wandb's own directory is a local temporary one (kept, and named on stderr, when offline)."""

    def __init__(self, workdir: str, config, run_name: str, enabled: bool = True):
        from jaxcc import checkpointing

        self.enabled = enabled
        wd = checkpointing.run_path(workdir)
        self.path = wd / "metrics.jsonl"
        self.remote = checkpointing.is_uri(wd)
        self._lines: list[str] | None = None
        self._tmp_dir = None
        self.wandb = None
        if not enabled:
            return
        mode = resolve_wandb_mode(str(config.wandb.mode))
        if mode != "disabled":
            try:
                import wandb

                id_file = wd / "wandb_id.txt"
                if id_file.exists():
                    run_id = id_file.read_text().strip()
                else:
                    import uuid

                    run_id = uuid.uuid4().hex[:12]
                    checkpointing.write_text(id_file, run_id)
                if self.remote:
                    import tempfile

                    self._tmp_dir = tempfile.mkdtemp(prefix="jaxcc-wandb-")
                    self._keep_tmp = mode == "offline"  # an offline run is synced from there later
                os.environ.setdefault("WANDB_SILENT", "true")
                self.wandb = wandb.init(
                    project=str(config.wandb.project), entity=str(config.wandb.entity) or None,
                    group=str(config.wandb.group) or None, name=run_name, id=run_id, resume="allow",
                    dir=self._tmp_dir or os.fspath(wd), mode=mode, config=config.to_dict(),
                    settings=wandb.Settings(init_timeout=30, silent=True))
            except Exception as e:  # logging must never stop training
                print(f"[jaxcc.train] wandb unavailable ({type(e).__name__}: {e}); logging to {self.path} only",
                      file=sys.stderr)
                self.wandb = None

    def log(self, step: int, row: dict) -> None:
        if not self.enabled:
            return
        line = json.dumps({"update": step, **row}) + "\n"
        if self.remote:
            if self._lines is None:
                self._lines = [self.path.read_text()] if self.path.exists() else []
            self._lines.append(line)
            self.path.write_text("".join(self._lines))
        else:
            with self.path.open("a") as f:
                f.write(line)
        if self.wandb is not None:
            try:
                self.wandb.log(row, step=step)
            except Exception:
                pass

    def close(self):
        if self.wandb is not None:
            try:
                self.wandb.finish()
            except Exception:
                pass
            self.wandb = None
        if self._tmp_dir is not None:
            if self._keep_tmp:
                print(f"[jaxcc.train] wandb offline files (workdir {self.path.parent} is not local): {self._tmp_dir}; "
                      f"upload them with `wandb sync {self._tmp_dir}/wandb/offline-run-*`", file=sys.stderr)
            else:
                import shutil

                shutil.rmtree(self._tmp_dir, ignore_errors=True)
            self._tmp_dir = None


# ----------------------------------------------------------------------------- hosts


def init_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None, auto: bool = False) -> bool:
    """``jax.distributed.initialize``: explicitly (all three given, e.g. ``launch/multihost_local.sh``)
    or, with ``auto``, with no arguments (TPU pod slices, SLURM, Open MPI detect their topology).
    Must run before any other JAX call.  Returns whether it initialized."""
    import jax

    given = [v is not None for v in (coordinator_address, num_processes, process_id)]
    if any(given) and not all(given):
        raise ValueError("--coordinator_address, --num_processes and --process_id go together "
                         "(all three, or none and --distributed for auto-detection)")
    if all(given):
        if not 0 <= int(process_id) < int(num_processes):
            raise ValueError(f"--process_id={process_id}: must be in [0, {num_processes}) (--num_processes)")
        jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=int(num_processes),
                                   process_id=int(process_id))
        return True
    if auto:
        jax.distributed.initialize()
        return True
    return False


# Barrier names must be unique per coordination service; every process compiles the same
# programs in the same order (SPMD), so this per-process counter names them alike everywhere.
_BARRIER_IDS = itertools.count()


def compiled(fn, args: tuple, name: str, **jit_kwargs):
    """``jax.jit(fn, **jit_kwargs)`` compiled ahead of time for ``args``; call it with the
    non-static arguments.

    Multi-host: every process compiles on its own, and a busy host may take minutes longer than
    another; the first execution of a program whose collectives span processes opens gloo's TCP
    connections (CPU) with a fixed connect timeout (``Gloo context initialization failed: ...
    Connect timeout``, seen with 2 x 4 CPU processes on a loaded 2-core machine).  So the
    processes meet at a coordination-service barrier (orbax's ``get_barrier_sync_fn``: the
    ``jax.distributed`` client, no collectives) after compiling and before executing."""
    import jax

    exe = jax.jit(fn, **jit_kwargs).lower(*args).compile()
    barrier(f"compiled-{name}")
    return exe


def barrier(name: str) -> None:
    """Every process waits here for the others (no-op with one process); the coordination
    service's barrier, not a collective, with an hour's timeout (a host may compile slowly)."""
    import jax

    if jax.process_count() > 1:
        import orbax.checkpoint as ocp

        ocp.multihost.get_barrier_sync_fn()(key=f"jaxcc-{name}-{next(_BARRIER_IDS)}", timeout_ms=3_600_000)


def run_info(mesh, resumed_from: int | None) -> dict:
    """What ``run.json`` records: the processes and devices this run used (a collective: every
    process calls it; each contributes its pid and host name)."""
    import socket

    import jax
    import jaxlib
    from jax.experimental import multihost_utils

    host = np.frombuffer(socket.gethostname().encode()[:64].ljust(64, b"\0"), np.uint8)
    mine = np.concatenate([np.asarray([os.getpid()], np.int64), host.astype(np.int64)])
    barrier("run-info")  # the allgather's first gloo connection: see compiled()
    allp = np.asarray(multihost_utils.process_allgather(mine)).reshape(jax.process_count(), -1)
    procs = []
    for i in range(jax.process_count()):
        devs = [d for d in jax.devices() if d.process_index == i]
        procs.append({"process_index": i, "pid": int(allp[i, 0]),
                      "hostname": bytes(allp[i, 1:].astype(np.uint8)).rstrip(b"\0").decode(errors="replace"),
                      "local_device_count": len(devs), "device_ids": [int(d.id) for d in devs],
                      "device_kind": devs[0].device_kind if devs else None})
    return {"process_count": jax.process_count(), "device_count": jax.device_count(),
            "local_device_count": jax.local_device_count(), "backend": jax.default_backend(),
            "jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__,
            "cpu_collectives": str(jax.config.jax_cpu_collectives_implementation),
            "mesh": {"axis": "data", "size": int(mesh.devices.size)},
            "processes": procs, "written_by_process": jax.process_index(),
            "resumed_from_update": resumed_from, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


# ----------------------------------------------------------------------------- devices


# The mesh and the state's placement live with the agents' contract (``jaxcc.agents.pipeline``,
# so that ``jaxcc.bench`` below this module uses the same); named here for the loop and its users.


def make_mesh():
    """The 1-D ``'data'`` mesh over ``jax.devices()`` (all processes')."""
    from jaxcc.agents import pipeline

    return pipeline.make_mesh()


def state_shardings(state, mesh):
    """``jaxcc.agents.pipeline.state_shardings``: the environment lanes split over 'data', the rest
    replicated."""
    from jaxcc.agents import pipeline

    return pipeline.state_shardings(state, mesh)


# ----------------------------------------------------------------------------- resume


def placed(tmpl, shardings):
    """``tmpl``'s ShapeDtypeStructs with ``shardings`` (what a restore places each leaf on)."""
    import jax

    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tmpl, shardings)


def run_finished(meta: dict, num_stages: int) -> bool:
    """Whether a checkpoint's ``meta`` is the end of the run: its last stage done."""
    return int(meta["stage"]) >= num_stages - 1 and bool(meta.get("stage_done"))


def resume_point(meta: dict, trainer, step: int, workdir, who: str, is_main: bool) -> tuple[int, int, bool]:
    """(stage index, chunk index, whether to enter the stage first) after a checkpoint's ``meta``;
    process 0 says where the run resumes."""
    stage_idx, chunk_idx = int(meta["stage"]), int(meta["stage_chunk"])
    if is_main:
        print(f"[{who}] resuming {workdir} at update {step} (stage {trainer.stages[stage_idx].label}, "
              f"chunk {chunk_idx}/{trainer.stages[stage_idx].num_chunks})", file=sys.stderr)
    if meta.get("stage_done"):
        return stage_idx + 1, 0, True
    return stage_idx, chunk_idx, False


# ----------------------------------------------------------------------------- checks


def check_finite(metrics: dict, state, first_update: int, stage_name: str) -> None:
    """Raise ``TrainingDiverged`` naming the first update and quantity that is not finite."""
    import jax

    n = len(next(iter(metrics.values())))
    for i in range(n):
        for k in ("critic_loss", "actor_loss", "q", "priority", "reward", "loss", "policy_loss", "value_loss"):
            if k in metrics and np.ndim(metrics[k]) == 1 and not np.isfinite(metrics[k][i]):
                raise TrainingDiverged(f"non-finite {k} ({metrics[k][i]}) at update {first_update + i} "
                                       f"(stage {stage_name}); stopping, last good checkpoint kept")
        if "params_finite" in metrics and not bool(metrics["params_finite"][i]):
            bad = [jax.tree_util.keystr(p) for p, x in jax.tree_util.tree_flatten_with_path(state.get("agent", state))[0]
                   if np.issubdtype(np.asarray(x).dtype, np.floating) and not np.all(np.isfinite(np.asarray(x)))]
            raise TrainingDiverged(f"non-finite parameters {', '.join(bad[:4]) or '(agent)'} at update "
                                   f"{first_update + i} (stage {stage_name}); stopping, last good checkpoint kept")


# ----------------------------------------------------------------------------- the loop


# Metrics that only some chunks have (NaN otherwise), e.g. Pareto's validation score: a NaN is
# "no value", left out of the row so that metrics.jsonl stays valid JSON and a sweep never reads a
# stand-in number as a result.
OPTIONAL_METRICS = ("val_score", "val_best")


def _row(metrics: dict, i: int | None = None) -> dict:
    row = {}
    for k, v in metrics.items():
        v = np.asarray(v)
        row[k] = float(v.mean() if i is None else v[i]) if v.dtype != bool else bool(v.all())
        if k in OPTIONAL_METRICS and np.isnan(row[k]):
            del row[k]
    if "ep_count" in metrics:
        # A chunk in which no episode ended (ep_count 0, e.g. Pareto's long Fair episodes) has no
        # return: left out of the row like the optional metrics above, never a NaN stand-in.
        cnt = float(np.sum(metrics["ep_count"]))
        row.pop("episode_return", None)
        if cnt:
            row["episode_return"] = float(np.sum(metrics["ep_return_sum"]) / cnt)
        row.pop("ep_return_sum", None)
        row["ep_count"] = cnt
    return row


def progress_postfix(row: dict, last_return: float | None = None) -> tuple[dict[str, str], float | None]:
    """The progress bar's postfix for one chunk's metrics ``row`` (``_row``), and the return to
    carry to the next chunk.

    ``ret`` is the mean return of the episodes that ended in the chunk; a chunk in which none
    ended (no ``episode_return``, or a NaN one) shows ``last_return``, the last finite return of
    an earlier chunk, and nothing before the first one, so a long episode never reads as a
    diverged run.  ``rew`` (reward per step), ``expert`` (expert-action share) and ``closs``
    (critic loss) show when finite."""
    ret = row.get("episode_return")
    if isinstance(ret, (int, float)) and not isinstance(ret, bool) and math.isfinite(ret):
        last_return = float(ret)
    shown = {"ret": last_return, "rew": row.get("reward"), "expert": row.get("expert_share"),
             "closs": row.get("critic_loss")}
    post = {k: f"{v:.3g}" for k, v in shown.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    return post, last_return


def train(config, workdir: str, *, run_name: str = "run", progress: bool = True, log: bool = True,
          stop_after_chunks: int | None = None, stop_at_update: int | None = None) -> dict:
    """Run (or resume) a staged training run.  Returns a summary dict.

    A workdir whose last checkpoint ends the run (``run_finished``) is left as it is: nothing is
    restored, compiled or written, and the summary says ``finished`` (``next_steps`` words it).

    ``stop_after_chunks`` stops after that many chunks of this call; ``stop_at_update`` once the
    run's update counter reaches that value (the same on a resumed run, so re-running a killed
    command stops where the uninterrupted one would)."""
    import jax

    from jaxcc import agents, checkpointing

    checkpointing.check_workdir(workdir)
    wd = checkpointing.run_path(workdir)
    mesh = make_mesh()
    n_dev = mesh.devices.size
    if int(config.num_envs) % n_dev:
        raise ValueError(f"config.num_envs={config.num_envs} must be a multiple of the {n_dev} devices")
    trainer = agents.make_train(config, mesh=mesh)
    is_main = jax.process_index() == 0
    if is_main:
        wd.mkdir(parents=True, exist_ok=True)
    ckpts = checkpointing.RunCheckpoints(workdir, keep=int(config.keep_checkpoints))
    total_updates = sum(s.num_updates for s in trainer.stages)
    step = ckpts.latest()
    meta = ckpts.meta(step) if step is not None else None
    if meta is not None and run_finished(meta, len(trainer.stages)):
        # Nothing to do: no restore, no compile, and the run's files (run.json, config.json,
        # summary.json, metrics.jsonl, wandb) stay as the finished run left them.
        ckpts.close()
        return {"workdir": workdir, "resumed": True, "finished": True, "final_update": int(step),
                "total_updates": total_updates, **stage_outputs(workdir, [s.label for s in trainer.stages])}
    logger = Logger(workdir, config, run_name, enabled=log and is_main)
    info = run_info(mesh, step)  # collective: every process
    if is_main:
        checkpointing.write_text(wd / "config.json", config.to_json_best_effort(indent=1))
        checkpointing.write_text(wd / "run.json", json.dumps(info, indent=1))

    if step is None:
        stage_idx, chunk_idx, need_enter = 0, 0, False
        key0 = jax.random.PRNGKey(int(config.seed))
        sh0 = state_shardings(jax.eval_shape(trainer.init, key0), mesh)
        state = compiled(trainer.init, (key0,), "init", out_shardings=sh0)(key0)  # global arrays, also multi-host
        resumed = False
    else:
        tmpl = trainer.template(int(meta["stage"]))
        state = ckpts.restore(step, placed(tmpl, state_shardings(tmpl, mesh)))
        resumed = True
        stage_idx, chunk_idx, need_enter = resume_point(meta, trainer, step, workdir, "jaxcc.train", is_main)

    bar = None
    if progress and is_main:
        from tqdm import tqdm
        bar = tqdm(total=total_updates, initial=int(step or 0), unit="upd", dynamic_ncols=True,
                   desc=trainer.stages[min(stage_idx, len(trainer.stages) - 1)].label)
    t_start = time.time()
    summary: dict[str, Any] = {"workdir": workdir, "resumed": resumed, "stages": {}}
    try:
        if stop_at_update is not None and int(step or 0) >= stop_at_update:
            summary["stopped"] = True
            return summary
        hooks = OneRun(trainer, mesh, logger, workdir, config, is_main, t_start)
        state, stopped = run_stages(trainer, state, hooks, ckpts, config, stage_idx=stage_idx, chunk_idx=chunk_idx,
                                    need_enter=need_enter, bar=bar, stop_after_chunks=stop_after_chunks,
                                    stop_at_update=stop_at_update)
        if stopped:
            summary["stopped"] = True
            return summary
        summary.update(stage_outputs(workdir, [s.label for s in trainer.stages]))
        summary["final_update"] = int(state["counters"]["update"])
        summary["wall_s"] = time.time() - t_start
        if is_main:
            checkpointing.write_text(wd / "summary.json", json.dumps(summary, indent=1))
        return summary
    finally:
        if bar is not None:
            bar.close()
        logger.close()
        ckpts.close()


def run_stages(trainer, state, hooks, ckpts, config, *, stage_idx: int, chunk_idx: int, need_enter: bool,
               bar=None, stop_after_chunks: int | None = None, stop_at_update: int | None = None):
    """The training loop of one run (``train``) and of a vmapped sweep (``jaxcc.sweep``): from
    stage ``stage_idx``, chunk ``chunk_idx`` (entering the stage first when ``need_enter``), run
    every chunk, record its metrics, checkpoint every ``config.checkpoint_every_chunks`` chunks
    and at the end of a stage (after finishing it).  What differs between the two is ``hooks``
    (``OneRun``; ``jaxcc.sweep.Members``): how a stage is entered and a chunk compiled, how a
    chunk's metrics are checked and logged, how a stage is finished, what a checkpoint's meta
    adds.  Returns ``(state, stopped)``; ``stopped`` when ``stop_after_chunks`` chunks ran or the
    update counter reached ``stop_at_update``."""
    import jax

    chunk = trainer.chunk_updates
    chunks_run = 0
    for st in trainer.stages[stage_idx:]:
        if need_enter:
            chunk_idx = 0
            state = hooks.enter(state, st)
        if bar is not None and hooks.describe(st) is not None:
            bar.set_description(hooks.describe(st))
        run = hooks.compile_chunk(state, st)
        for c in range(chunk_idx, st.num_chunks):
            first = int(state["counters"]["update"])
            new_state, metrics = run(state)
            metrics = jax.device_get(metrics)
            upd = first + chunk
            post = hooks.record(first, upd, new_state, metrics, st)  # raises TrainingDiverged
            state = new_state
            done_stage = c + 1 == st.num_chunks
            if (c + 1) % int(config.checkpoint_every_chunks) == 0 or done_stage:
                if done_stage:
                    state = hooks.finish(state, st)
                ckpts.save(upd, state, {"stage": st.index, "stage_chunk": c + 1, "stage_done": done_stage,
                                        "update": upd, "stage_label": st.label, **hooks.meta()})
            if bar is not None:
                bar.update(chunk)
                if post is not None:
                    bar.set_postfix(post)
            chunks_run += 1
            if ((stop_after_chunks is not None and chunks_run >= stop_after_chunks)
                    or (stop_at_update is not None and upd >= stop_at_update)):
                return state, True
            if float(config.get("debug_chunk_sleep_s", 0.0)) > 0:  # tests: widen the SIGKILL window
                time.sleep(float(config.debug_chunk_sleep_s))
        chunk_idx, need_enter = 0, True
    return state, False


class OneRun:
    """``run_stages``' hooks for one training run (``train``)."""

    def __init__(self, trainer, mesh, logger, workdir: str, config, is_main: bool, t_start: float):
        self.trainer, self.mesh, self.logger, self.workdir = trainer, mesh, logger, workdir
        self.config, self.is_main, self.t_start = config, is_main, t_start
        self.last_return = None  # the progress bar's last finite episode return (progress_postfix)

    def describe(self, st) -> str:
        return st.label

    def enter(self, state, st):
        import jax

        sh_e = state_shardings(jax.eval_shape(lambda x: self.trainer.enter_stage(x, st.index), state), self.mesh)
        return compiled(self.trainer.enter_stage, (state, st.index), f"enter{st.index}", static_argnums=1,
                        out_shardings=sh_e)(state)

    def compile_chunk(self, state, st):
        sh = state_shardings(state, self.mesh)
        return compiled(self.trainer.run_chunk, (state, st.index), f"chunk{st.index}", static_argnums=1,
                        donate_argnums=0, out_shardings=(sh, None))

    def record(self, first: int, upd: int, state, metrics: dict, st) -> dict:
        check_finite(metrics, state, first, st.name)
        row = _row(metrics)
        row.update({"stage": st.index, "env_steps": int(state["counters"]["env_steps"]),
                    "elapsed_s": time.time() - self.t_start})
        self.logger.log(upd, row)
        post, self.last_return = progress_postfix(row, self.last_return)
        return post

    def finish(self, state, st):
        if self.trainer.finish_stage is not None:
            state = compiled(self.trainer.finish_stage, (state,), f"finish{st.index}",
                             out_shardings=state_shardings(state, self.mesh))(state)
        _finish_stage(self.trainer, st, state, self.workdir, self.config, self.is_main)
        return state

    def meta(self) -> dict:
        return {}


def stage_outputs(workdir: str, labels: list[str]) -> dict:
    """``stages``: every stage's checkpoint folder (also those finished before a resume), in stage
    order; ``policies``: the exported policy file of each stage that has one."""
    from jaxcc import checkpointing

    stages = {label: os.path.join(workdir, "stages", label) for label in labels}
    return {"stages": stages, "policies": {k: p + ".safetensors" for k, p in stages.items()
                                           if checkpointing.run_path(p + ".safetensors").is_file()}}


def _finish_stage(trainer, st, state, workdir, config, is_main):
    from jaxcc import checkpointing

    path = os.path.join(workdir, "stages", st.label)
    meta = {"stage": st.index, "stage_name": st.name, "label": st.label, "update": int(state["counters"]["update"]),
            "algo": str(config.algo)}
    checkpointing.save_stage(path, state, meta, trainer.actor_spec)
    if is_main and bool(config.get("export_stages", True)):
        from jaxcc import export
        export.export_state(state, trainer.actor_spec, path + ".safetensors", stage_label=st.label)


# ----------------------------------------------------------------------------- CLI

# What to evaluate a finished run on, by algorithm (``jaxcc.scenarios.SUITES``, ``jaxcc.bars``).  The
# ``robust`` suite's start-rate link is for the learned policies' ramp: the baselines beside them
# run it from their own start (``--baseline_start=own``; ``jaxcc.evaluate.from_own_start``).
EVAL_ARGS = {"pareto_td3": "--suite=pareto,pareto-fair,robust --bars=pareto --baseline_start=own",
             "aurora_ppo": "--suite=aurora-figs,robust --bars=aurora --baseline_start=own",
             "eagle_cem": "--suite=eagle,robust --bars=eagle --baseline_start=own",
             "mocc_envelope": "--suite=mocc", "deepcc_ddpg": "--suite=deepcc"}


def next_steps(summary: dict, algo: str, name: str) -> str:
    """The run's last words: where its policies are and the command that evaluates them (for a
    run that was already finished: one line, its policies and how to train again)."""
    workdir = summary["workdir"]
    if summary.get("finished"):  # a re-run of a finished run: one line, nothing trained
        policies = summary.get("policies") or {}
        its = ("its policies: " + ", ".join(f"{k} {p}" for k, p in policies.items()) if policies
               else f"its stage checkpoints: {workdir}/stages/")
        return (f"[jaxcc.train] {workdir} is finished (update {summary['final_update']} of "
                f"{summary['total_updates']}); {its}; to train again, use a new --workdir or delete {workdir}")
    if summary.get("stopped"):
        return (f"[jaxcc.train] stopped as asked (--stop_after_chunks/--stop_at_update); run directory {workdir}\n"
                f"resume: run the same command again")
    lines = [f"[jaxcc.train] done: update {summary['final_update']} in {summary['wall_s']:.0f} s; "
             f"run directory {workdir} (summary.json, metrics.jsonl, checkpoints/)"]
    policies = summary.get("policies", {})
    if policies:
        lines.append("exported policies (one per stage):")
        width = max(len(k) for k in policies)
        lines += [f"  {k:<{width}}  {p}" for k, p in policies.items()]
    else:
        lines.append(f"no exported policies (export_stages is off); stage checkpoints: {workdir}/stages/")
    out = os.path.join("results", os.path.basename(os.path.normpath(workdir)) or name)
    lines += ["next: evaluate them beside BBR and CUBIC:",
              f"  python3 -m jaxcc.evaluate --checkpoint={workdir} --controller=bbr,cubic "
              f"{EVAL_ARGS.get(algo, '--suite=pareto')} --out={out}"]
    return "\n".join(lines)


def _config_keys(cfg_path: str) -> list[str] | None:
    """Every leaf key of the config file (``a.b.c``), or ``None`` when it cannot be loaded here."""
    try:
        cfg = load_config(cfg_path)
    except Exception:
        return None
    return all_keys(cfg)


def config_arg(argv: list[str]) -> str | None:
    """The ``--config`` value of a command line, ``--config=X`` or ``--config X``."""
    for i, a in enumerate(argv):
        if a.startswith("--config="):
            return a.split("=", 1)[1]
        if a == "--config" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def unknown_override(argv: list[str], keys: list[str]) -> str | None:
    """The one-line error for the first ``--config.KEY`` override naming no config field, else None."""
    known = set(keys)
    for a in argv[1:]:
        pre = next((p for p in ("--config.", "--noconfig.") if a.startswith(p)), None)
        if pre is None:
            continue
        name = a[len(pre):].split("=", 1)[0]
        if "[" in name or name in known:  # list items: left to ml_collections
            continue
        close = difflib.get_close_matches(name, keys, n=1, cutoff=0.75)
        if close:
            return f"--config.{name}: no such config field; did you mean {close[0]}?"
        parent = name.rpartition(".")[0]
        near = [k for k in keys if parent and k.startswith(parent + ".")] or keys
        return f"--config.{name}: no such config field; valid fields: " + ", ".join("config." + k for k in near)
    return None


def _main(argv):
    from absl import flags

    import jax

    from jaxcc import jax_cache

    FLAGS = flags.FLAGS
    if FLAGS.sweep:  # the same command line, run by jaxcc.sweep (which imports this module, not back)
        os.execv(sys.executable, [sys.executable, "-m", "jaxcc.sweep", *argv[1:]])
    jax_cache.enable_compilation_cache()  # before the first jit: a repeated run compiles nothing
    try:
        init_distributed(FLAGS.coordinator_address, FLAGS.num_processes, FLAGS.process_id,
                         auto=FLAGS.distributed or os.environ.get("JAXCC_DISTRIBUTED") == "1")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    config = FLAGS.config
    name = config_name(FLAGS["config"].config_filename if hasattr(FLAGS["config"], "config_filename") else "run")
    if FLAGS.seed is not None:
        config.seed = FLAGS.seed
    workdir = FLAGS.workdir or os.path.join("checkpoints", "runs", f"{name}-{int(config.seed)}")
    from jaxcc import checkpointing

    try:
        checkpointing.check_workdir(workdir)
    except ValueError as e:
        print(f"error: --{e}", file=sys.stderr)
        return 2
    try:
        summary = train(config, workdir, run_name=f"{name}-{int(config.seed)}", progress=not FLAGS.no_progress,
                        stop_after_chunks=FLAGS.stop_after_chunks, stop_at_update=FLAGS.stop_at_update)
    except TrainingDiverged as e:
        print(f"[jaxcc.train] {e}", file=sys.stderr)
        return 3
    except ValueError as e:  # a config value the trainer or agent refuses, a checkpoint of another state tree
        print(f"error: {e}", file=sys.stderr)
        return 2
    if jax.process_index() == 0:
        print(next_steps(summary, str(config.algo), name))
    return 0


# The command's own flags, in the order --help lists them (absl's full help adds every library's).
CLI_FLAGS = ("config", "workdir", "seed", "no_progress", "sweep", "stop_after_chunks", "stop_at_update",
             "distributed", "coordinator_address", "num_processes", "process_id")


def usage(fv) -> str:
    """``--help``: the synopsis, the configs there are, and each flag of the command (absl's own
    ``--help`` would not get past the required ``--config``)."""
    lines = [__doc__.split("\n\n", 1)[0].strip("`"), "",
             "configs: " + ", ".join(list_configs()), "", "flags:"]
    for name in CLI_FLAGS:
        f = fv[name]
        default = "" if f.default in (None, False) or name == "config" else f" (default: {f.default})"
        lines.append(f"  --{name}: {f.help}{default}")
    lines.append("  --config.KEY=VALUE: overrides one key of the config (e.g. --config.num_envs=64)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, run=None) -> int:
    """Parse the command line (flags, ``--config`` and its overrides), then ``run(argv)``
    (default: train; ``jaxcc.sweep`` passes its own)."""
    from absl import flags
    from ml_collections import config_flags

    argv = list(sys.argv if argv is None else argv)
    try:
        argv = _rewrite_argv(argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if "config" not in flags.FLAGS:
        config_flags.DEFINE_config_file("config", None, "configs/NAME.py or NAME", lock_config=True)
        flags.DEFINE_string("workdir", None, "run directory (default checkpoints/runs/<config>-<seed>)")
        flags.DEFINE_integer("seed", None, "overrides config.seed")
        flags.DEFINE_bool("no_progress", False, "no tqdm bar")
        flags.DEFINE_bool("distributed", False, "call jax.distributed.initialize() with no arguments "
                          "(auto-detection: TPU pod slices, SLURM, Open MPI)")
        flags.DEFINE_string("coordinator_address", None, "multi-host: HOST:PORT of process 0's coordinator")
        flags.DEFINE_integer("num_processes", None, "multi-host: number of processes")
        flags.DEFINE_integer("process_id", None, "multi-host: this process's index in [0, num_processes)")
        flags.DEFINE_integer("stop_after_chunks", None, "stop after N chunks (tests; resume continues)")
        flags.DEFINE_integer("stop_at_update", None, "stop once the update counter reaches N "
                             "(a chunk boundary; also when resumed; resume continues)")
        flags.DEFINE_string("sweep", None, "a sweep file (launch/*.yaml): its members train vmapped in one program")
        flags.mark_flags_as_required(["config"])
    if any(a in ("--help", "-h", "--helpfull", "-?") for a in argv[1:]):
        print(usage(flags.FLAGS))
        return 0
    cfg_path = config_arg(argv)
    keys = _config_keys(cfg_path) if cfg_path else None
    bad = unknown_override(argv, keys) if keys else None
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    try:
        flags.FLAGS(argv)
    except (flags.Error, AttributeError, KeyError, ValueError, TypeError) as e:
        msg = " ".join(str(e).split())  # one line (ml_collections' messages span several)
        print(f"error: {msg if isinstance(e, flags.Error) else f'{type(e).__name__}: {msg}'}", file=sys.stderr)
        return 2
    return (run or _main)(argv)


if __name__ == "__main__":
    sys.exit(main())
