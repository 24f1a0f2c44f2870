"""The training loop (``train``): the Python loop over jitted chunks of an agent's
``make_train(config)`` — stages, resumption from orbax checkpoints, the NaN/inf guard, logging
and the stage outputs; ``run_stages`` is the one loop, run with the hooks of one run
(``OneRun``) or of a sweep's vmapped members (``jaxcc.training.sweep.Members``).

PureJaxRL shape: the agent's ``make_train(config)`` gives pure jitted functions whose bodies are
``lax.scan`` (collect, update); this module is the thin Python loop over chunks that logs
(``metrics.jsonl`` always, wandb when not disabled — offline unless credentials exist), saves
orbax checkpoints, guards against NaN/inf, and shows a tqdm bar with ETA and current returns.

Workdirs: a local path or a URI (``gs://bucket/runs/x``); every file goes through ``etils.epath``
and only local paths are made absolute (``jaxcc.training.checkpointing.run_path``).  wandb keeps its own
files in a local temporary directory when the workdir is a URI.

"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np

from jaxcc.training.mesh import compiled, make_mesh, placed, run_info, state_shardings
from jaxcc.training.runlog import Logger, metrics_row, progress_postfix


class TrainingDiverged(RuntimeError):
    """NaN/inf in a loss or a parameter; the last good checkpoint is left as it was."""


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


def train(config, workdir: str, *, run_name: str = "run", progress: bool = True, log: bool = True,
          stop_after_chunks: int | None = None, stop_at_update: int | None = None) -> dict:
    """Run (or resume) a staged training run.  Returns a summary dict.

    A workdir whose last checkpoint ends the run (``run_finished``) is left as it is: nothing is
    restored, compiled or written, and the summary says ``finished`` (``next_steps`` words it).

    ``stop_after_chunks`` stops after that many chunks of this call; ``stop_at_update`` once the
    run's update counter reaches that value (the same on a resumed run, so re-running a killed
    command stops where the uninterrupted one would)."""
    import jax

    from jaxcc import agents
    from jaxcc.training import checkpointing

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
    (``OneRun``; ``jaxcc.training.sweep.Members``): how a stage is entered and a chunk compiled, how a
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
        row = metrics_row(metrics)
        row.update({"stage": st.index, "env_steps": int(state["counters"]["env_steps"]),
                    "elapsed_s": time.time() - self.t_start})
        self.logger.log(upd, row)
        post, self.last_return = progress_postfix(row, self.last_return)
        return post

    def finish(self, state, st):
        if self.trainer.finish_stage is not None:
            state = compiled(self.trainer.finish_stage, (state,), f"finish{st.index}",
                             out_shardings=state_shardings(state, self.mesh))(state)
        finish_stage(self.trainer, st, state, self.workdir, self.config, self.is_main)
        return state

    def meta(self) -> dict:
        return {}


def stage_outputs(workdir: str, labels: list[str]) -> dict:
    """``stages``: every stage's checkpoint folder (also those finished before a resume), in stage
    order; ``policies``: the exported policy file of each stage that has one."""
    from jaxcc.training import checkpointing

    stages = {label: os.path.join(workdir, "stages", label) for label in labels}
    return {"stages": stages, "policies": {k: p + ".safetensors" for k, p in stages.items()
                                           if checkpointing.run_path(p + ".safetensors").is_file()}}


def finish_stage(trainer, st, state, workdir, config, is_main):
    from jaxcc.training import checkpointing

    path = os.path.join(workdir, "stages", st.label)
    meta = {"stage": st.index, "stage_name": st.name, "label": st.label, "update": int(state["counters"]["update"]),
            "algo": str(config.algo)}
    checkpointing.save_stage(path, state, meta, trainer.actor_spec)
    if is_main and bool(config.get("export_stages", True)):
        from jaxcc.training.export import export_state
        export_state(state, trainer.actor_spec, path + ".safetensors", stage_label=st.label)
