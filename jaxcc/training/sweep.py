"""Sweeps in one program: ``python -m jaxcc.train --config=NAME --sweep=launch/SWEEP.yaml``.

K configurations that differ only in hyperparameters that are *leaves of the training state*
train as one jitted program (PureJaxRL's way): ``init`` runs under ``jax.vmap`` over K keys, so
every leaf gets a leading member axis, each member's hyperparameter leaves are set to its value,
and every chunk is ``jax.vmap(trainer.run_chunk)`` in one ``jit``.  A member computes exactly
what a separate ``python -m jaxcc.train`` run with its configuration computes (up to the order of
floating-point reductions that XLA picks for batched operations: ``tests/test_sweep.py`` states
the tolerance).

Devices: the member axis is replicated; inside a member everything is placed as in a single run
(``jaxcc.training.mesh.state_shardings`` on the member's slice: environment lanes sharded over ``'data'``,
now on axis 1), and the agents' own ``with_sharding_constraint`` calls keep their meaning under
``vmap`` (the batched axis is left unconstrained).  So a K-member sweep on N devices splits each
member's lanes and batches over the N devices exactly as one run would, with K times the work per
device; ``num_envs`` must be a multiple of the device count.  Sharding members instead (K a
multiple of the devices) would fight the agents' constraints on the lane axis.

Outputs in ``WORKDIR`` (default ``checkpoints/sweeps/<config>-<name>``): ``sweep.json`` (the
resolved members), ``checkpoints/`` (the stacked state: re-running the command resumes),
``members/mK/`` per member (``config.json``, ``metrics.jsonl``, its wandb run named
``<config>-<name>-mK`` in the sweep's group, ``stages/<Label>`` checkpoints and exported
``<Label>.safetensors``, ``summary.json``), ``sweep_results.csv`` and ``.md`` (one row per
member: its hyperparameters, final and best episode return, final and best of the sweep's
metric, its policy) and ``sweep.png`` (the metrics against the update, one line per member).

Command line: ``jaxcc.train --sweep=FILE`` hands its whole command line (the same flags, ``--config``
overrides applied to every member) to ``python -m jaxcc.sweep`` by ``os.execv`` (``jaxcc/sweep.py``:
the command; this module is the code it runs, on ``jaxcc.training.loop.run_stages`` with the
``Members`` hooks).  ``python -m jaxcc.sweep --bench=CONFIG`` runs ``bench_sweep``.

Cost: a ``lax.cond`` whose predicate differs per member becomes a ``select`` under ``vmap``, so
both branches run every time.  The counters every member shares are kept outside the vmap for
that reason (Pareto's validation stays a branch), but a predicate on a member's own data cannot
be: DeepCC redraws episodes on ``jnp.any(done)`` of its own links, so in a sweep the redraw runs
every step and a 4-member DeepCC sweep is slower than 4 separate runs (README, Measured).

A member whose loss or parameters become NaN/inf is reported and dropped from logging, export and
the ranking (it keeps being computed: its lane of the program cannot be removed without
recompiling, and it cannot affect the others); the sweep stops only when every member diverged.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from typing import Any

import numpy as np

from jaxcc.training import runlog
from jaxcc.training.loop import TrainingDiverged, check_finite, finish_stage, resume_point, run_stages, stage_outputs
from jaxcc.training.mesh import compiled, make_mesh, placed, state_shardings
from jaxcc.training.sweep_file import (Sweep, SweepError, key_at, load_sweep, member_config, member_values, set_key,
                                       sweepable)


# Counters every member shares (``state["counters"][name]``): the chunk sequence's, which never
# depend on a member's values.  They stay without a member axis, so that a ``lax.cond`` on them
# stays a branch: ``vmap`` turns a cond on a batched predicate into a select that computes both
# branches (Pareto's delayed actor update every ``policy_delay`` gradient steps, its validation
# every ``select.every_chunks`` chunks).  Other counters (MOCC's episode counts, ...) get the
# member axis.  Were a shared one to depend on a member's data, ``vmap`` would refuse the program
# (a batched output where ``out_axes`` is None) rather than compute something else.
SHARED_COUNTERS = ("update", "grad_step", "stage", "stage_update", "env_steps")


def state_axes(tree) -> dict:
    """The ``vmap`` axes of a (stacked) state, a prefix of its tree: 0 (the member axis) except
    for ``SHARED_COUNTERS`` (None)."""
    out = {k: 0 for k in tree}
    if "counters" in tree:
        out["counters"] = {c: None if c in SHARED_COUNTERS else 0 for c in tree["counters"]}
    return out


def _by_axis(fn, axes, tree):
    """``fn(axis, subtree)`` for each leaf of the prefix ``axes`` (0 or None) and its subtree."""
    import jax

    return jax.tree.map(fn, axes, tree, is_leaf=lambda a: a is None)


def vmapped(fn, axes, *, extra_out: bool = False):
    """``fn(state) -> state`` (or ``(state, metrics)`` with ``extra_out``) over the member axis."""
    import jax

    return jax.vmap(fn, in_axes=(axes,), out_axes=(axes, 0) if extra_out else axes)


def make_init(trainer, table: dict[str, tuple], keys: list[str]):
    """(seeds [K], {key: [K]}) -> the stacked state: ``trainer.init`` vmapped, each member's
    hyperparameter leaves set to its values (``SHARED_COUNTERS`` without a member axis)."""
    import jax
    import jax.numpy as jnp

    def one(seed, vals):
        state = trainer.init(jax.random.PRNGKey(seed))
        for k in keys:
            path = table[k]
            if path:
                leaf = key_at(state, path)
                state = set_key(state, path, jnp.asarray(vals[k], leaf.dtype).reshape(leaf.shape))
        return state

    axes = state_axes(jax.eval_shape(trainer.init, jax.random.PRNGKey(0)))
    return jax.vmap(one, out_axes=axes)


def member_shardings(stacked, mesh):
    """The stacked state's shardings: member axis replicated, each member placed as one run
    (``jaxcc.training.mesh.state_shardings`` on its slice, shifted one axis right)."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    axes = state_axes(stacked)
    single = _by_axis(lambda a, v: jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape if a is None else x.shape[1:], x.dtype), v), axes, stacked)
    one = state_shardings(single, mesh)
    return _by_axis(lambda a, v: v if a is None else jax.tree.map(
        lambda s: NamedSharding(mesh, P(None, *s.spec)), v, is_leaf=lambda s: isinstance(s, NamedSharding)),
        axes, one)


def _slice(state: dict, m: int) -> dict:
    """Member ``m``'s state (the shared counters as they are)."""
    import jax

    return _by_axis(lambda a, v: v if a is None else jax.tree.map(lambda x: x[m], v), state_axes(state), state)


class _MemberAgent:
    """What ``train.check_finite`` reads of a state (``.get("agent")``), for one member, lazily."""

    def __init__(self, state, m):
        self.state, self.m = state, m

    def get(self, key, default=None):
        import jax

        return jax.tree.map(lambda x: x[self.m], self.state[key]) if key in self.state else default


def run_sweep(config, sweep: Sweep, workdir: str, *, config_name: str = "run", progress: bool = True,
              log: bool = True, stop_after_chunks: int | None = None) -> dict:
    """Run (or resume) the sweep in ``workdir``.  Returns a summary (``members``: one dict each)."""
    import jax

    from jaxcc import agents
    from jaxcc.training import checkpointing

    K = len(sweep.members)
    if checkpointing.is_uri(workdir):  # the sweep's tables, plot and member files are local files
        raise SweepError(f"--workdir={workdir}: a sweep's workdir must be a local path (URIs: jaxcc.train without "
                         f"--sweep)")
    os.makedirs(workdir, exist_ok=True)
    mesh = make_mesh()
    n_dev = mesh.devices.size
    if int(config.num_envs) % n_dev:
        raise ValueError(f"config.num_envs={config.num_envs} must be a multiple of the {n_dev} devices")
    trainer = agents.make_train(config, mesh=mesh)
    table = sweepable(str(config.algo))
    is_main = jax.process_index() == 0
    cfgs = [member_config(config, sweep, m) for m in range(K)]
    names = [f"{config_name}-{sweep.name}-m{m}" for m in range(K)]
    mdirs = [os.path.join(workdir, "members", f"m{m}") for m in range(K)]
    desc = {"name": sweep.name, "group": sweep.group, "file": sweep.path, "metric": sweep.metric,
            "goal": sweep.goal, "keys": sweep.keys, "members": sweep.members, "runs": names}
    if is_main:
        for d, c in zip(mdirs, cfgs):
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(c.to_json_best_effort(indent=1))
        with open(os.path.join(workdir, "config.json"), "w") as f:
            f.write(config.to_json_best_effort(indent=1))
    ckpts = checkpointing.RunCheckpoints(workdir, keep=int(config.keep_checkpoints))
    step = ckpts.latest()
    diverged: dict[int, str] = {}
    if step is None:
        stage_idx, chunk_idx, need_enter = 0, 0, False
        vals = member_values(sweep)
        seeds = np.asarray([m["seed"] for m in sweep.members] if "seed" in sweep.keys else [int(config.seed)] * K,
                           np.int32)
        init = make_init(trainer, table, sweep.keys)
        sh0 = member_shardings(jax.eval_shape(init, seeds, vals), mesh)
        state = compiled(init, (seeds, vals), "sweep-init", out_shardings=sh0)(seeds, vals)
        resumed = False
    else:
        meta = ckpts.meta(step)
        if meta.get("sweep", {}).get("members") != sweep.members:
            ckpts.close()
            raise SweepError(f"--workdir={workdir} holds a different sweep ({meta.get('sweep', {}).get('file')}); "
                             f"its members differ from {sweep.path}'s: use another --workdir")
        diverged = {int(k): v for k, v in meta.get("diverged", {}).items()}
        one = trainer.template(int(meta["stage"]))
        stacked = _by_axis(lambda a, v: v if a is None else jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((K,) + tuple(x.shape), x.dtype), v), state_axes(one), one)
        state = ckpts.restore(step, placed(stacked, member_shardings(stacked, mesh)))
        resumed = True
        stage_idx, chunk_idx, need_enter = resume_point(meta, trainer, step, workdir, "jaxcc.sweep", is_main)
    if is_main:
        with open(os.path.join(workdir, "sweep.json"), "w") as f:
            json.dump(desc, f, indent=1)
    if log and is_main:
        _wandb_many_runs(config)
    loggers = [runlog.Logger(d, c, n, enabled=log and is_main) for d, c, n in zip(mdirs, cfgs, names)]
    total_updates = sum(s.num_updates for s in trainer.stages)
    bar = None
    if progress and is_main:
        from tqdm import tqdm
        bar = tqdm(total=total_updates, initial=int(step or 0), unit="upd", dynamic_ncols=True,
                   desc=f"{sweep.name} ×{K} " + trainer.stages[min(stage_idx, len(trainer.stages) - 1)].label)
    t_start = time.time()
    summary: dict[str, Any] = {"workdir": workdir, "resumed": resumed, "sweep": desc}
    try:
        hooks = Members(trainer, mesh, sweep, loggers, names, mdirs, cfgs, diverged, is_main, t_start)
        state, stopped = run_stages(trainer, state, hooks, ckpts, config, stage_idx=stage_idx, chunk_idx=chunk_idx,
                                      need_enter=need_enter, bar=bar, stop_after_chunks=stop_after_chunks)
        if stopped:
            summary["stopped"] = True
            return summary
        summary["final_update"] = int(state["counters"]["update"])
        summary["wall_s"] = time.time() - t_start
        labels = [s.label for s in trainer.stages]
        members = []
        for m in range(K):
            out = stage_outputs(mdirs[m], labels)
            ms = {"member": f"m{m}", "run": names[m], "workdir": mdirs[m], "values": sweep.members[m],
                  "diverged": diverged.get(m), **out}
            members.append(ms)
            if is_main:
                with open(os.path.join(mdirs[m], "summary.json"), "w") as f:
                    json.dump({**ms, "final_update": summary["final_update"]}, f, indent=1)
        summary["members"] = members
        if is_main:
            summary["table"] = write_results(workdir, sweep, members)
            summary["plot"] = plot_sweep(workdir, sweep, members)
            with open(os.path.join(workdir, "summary.json"), "w") as f:
                json.dump(summary, f, indent=1, default=str)
        return summary
    finally:
        if bar is not None:
            bar.close()
        for lg in loggers:
            lg.close()
        ckpts.close()


class Members:
    """``jaxcc.training.loop.run_stages``' hooks for K members in one vmapped program: each member's
    metrics are checked and logged on its own (a diverged member is reported and left out, the
    others go on; all diverged is an error), each finished stage is saved per member, and the
    checkpoint's meta names the sweep and the diverged members."""

    def __init__(self, trainer, mesh, sweep: Sweep, loggers, names, mdirs, cfgs, diverged: dict[int, str],
                 is_main: bool, t_start: float):
        self.trainer, self.mesh, self.sweep, self.loggers = trainer, mesh, sweep, loggers
        self.names, self.mdirs, self.cfgs, self.diverged = names, mdirs, cfgs, diverged
        self.is_main, self.t_start, self.K = is_main, t_start, len(sweep.members)

    def describe(self, st) -> None:
        return None  # the bar keeps the sweep's name and first stage

    def enter(self, state, st):
        import jax

        enter = vmapped(lambda s, i=st.index: self.trainer.enter_stage(s, i), state_axes(state))
        return compiled(enter, (state,), f"sweep-enter{st.index}",
                          out_shardings=member_shardings(jax.eval_shape(enter, state), self.mesh))(state)

    def compile_chunk(self, state, st):
        sh = member_shardings(state, self.mesh)
        return compiled(vmapped(lambda s, i=st.index: self.trainer.run_chunk(s, i), state_axes(state),
                                  extra_out=True),
                          (state,), f"sweep-chunk{st.index}", donate_argnums=0, out_shardings=(sh, None))

    def record(self, first: int, upd: int, state, metrics: dict, st) -> dict | None:
        env_steps = int(state["counters"]["env_steps"])  # per member (shared)
        rows = {}
        for m in range(self.K):
            if m in self.diverged:
                continue
            mm = {k: v[m] for k, v in metrics.items()}
            try:
                check_finite(mm, _MemberAgent(state, m), first, st.name)
            except TrainingDiverged as e:
                self.diverged[m] = str(e)
                if self.is_main:
                    print(f"[jaxcc.sweep] member m{m} ({self.names[m]}): {e}; the others go on", file=sys.stderr)
                continue
            row = runlog.metrics_row(mm)
            row.update({"stage": st.index, "env_steps": env_steps, "elapsed_s": time.time() - self.t_start})
            self.loggers[m].log(upd, row)
            rows[m] = row
        if len(self.diverged) == self.K:
            raise TrainingDiverged(f"every member of the sweep diverged (m0: {self.diverged[0]})")
        best = _pick([r.get(self.sweep.metric) for r in rows.values()], self.sweep.goal)
        return None if best is None else {self.sweep.metric: f"{best:.3g}"}

    def finish(self, state, st):
        if self.trainer.finish_stage is not None:
            fin = vmapped(self.trainer.finish_stage, state_axes(state))
            state = compiled(fin, (state,), f"sweep-finish{st.index}",
                               out_shardings=member_shardings(state, self.mesh))(state)
        for m in range(self.K):
            if m not in self.diverged:
                finish_stage(self.trainer, st, _slice(state, m), self.mdirs[m], self.cfgs[m], self.is_main)
        return state

    def meta(self) -> dict:
        return {"sweep": {"file": self.sweep.path, "members": self.sweep.members},
                "diverged": {str(k): v for k, v in self.diverged.items()}}


def _wandb_many_runs(config) -> None:
    """One process, K live wandb runs: ask wandb for a new run on every ``init`` (instead of
    finishing the previous one).  Nothing when wandb is disabled or missing."""
    if runlog.resolve_wandb_mode(str(config.wandb.mode)) == "disabled":
        return
    try:
        import wandb

        wandb.setup(settings=wandb.Settings(reinit="create_new"))
    except Exception as e:  # logging must never stop training
        print(f"[jaxcc.sweep] wandb setup failed ({type(e).__name__}: {e})", file=sys.stderr)


def _pick(xs, goal: str, default=None):
    xs = [float(x) for x in xs if isinstance(x, (int, float)) and math.isfinite(float(x))]
    if not xs:
        return default
    return min(xs) if goal == "minimize" else max(xs)


def read_rows(member_dir: str) -> list[dict]:
    """A member's ``metrics.jsonl`` rows by update (a row logged twice after a resume: the later)."""
    path = os.path.join(member_dir, "metrics.jsonl")
    by = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    by[int(r["update"])] = r
    return [by[k] for k in sorted(by)]


def _num(r: dict, k: str) -> float:
    v = r.get(k)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def results_table(sweep: Sweep, members: list[dict]) -> list[dict]:
    """One row per member: its values, final/best episode return (NaN until an episode ends),
    the last chunk's mean reward per step, final/best of the sweep's metric (best = ``goal`` over
    the logged updates), status, the last stage's policy."""
    out = []
    for ms in members:
        rows = read_rows(ms["workdir"])
        ret = [_num(r, "episode_return") for r in rows]
        met = [_num(r, sweep.metric) for r in rows]
        fin = [x for x in met if math.isfinite(x)]
        pol = list(ms.get("policies", {}).values())
        row = {"member": ms["member"], "run": ms["run"],
               **{"config." + k: ms["values"][k] for k in sweep.keys},
               "status": "diverged" if ms.get("diverged") else "ok",
               "final_update": int(rows[-1]["update"]) if rows else 0,
               "episode_return_final": next((x for x in reversed(ret) if math.isfinite(x)), math.nan),
               "episode_return_best": _pick(ret, "maximize", default=math.nan),
               "reward_final": _num(rows[-1], "reward") if rows else math.nan}
        if sweep.metric != "episode_return":
            row[f"{sweep.metric}_final"] = fin[-1] if fin else math.nan
            b = _pick(met, sweep.goal)
            row[f"{sweep.metric}_best"] = b if b is not None else math.nan
        row["policy"] = pol[-1] if pol and not ms.get("diverged") else ""  # the last stage's
        out.append(row)
    return out


def write_results(workdir: str, sweep: Sweep, members: list[dict]) -> dict:
    """``sweep_results.csv`` and ``sweep_results.md`` (the best member by the sweep's metric marked)."""
    rows = results_table(sweep, members)
    cols = list(rows[0])
    csv_path = os.path.join(workdir, "sweep_results.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    key = f"{sweep.metric}_best" if sweep.metric != "episode_return" else "episode_return_best"
    ok = [r for r in rows if r["status"] == "ok" and math.isfinite(r[key])]
    best = (min if sweep.goal == "minimize" else max)(ok, key=lambda r: r[key])["member"] if ok else None

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    md_path = os.path.join(workdir, "sweep_results.md")
    with open(md_path, "w") as f:
        f.write(f"# sweep {sweep.name} ({sweep.group}): {len(rows)} members, metric {sweep.metric} ({sweep.goal})\n\n")
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(fmt(r[c]) + (" **(best)**" if c == "member" and r["member"] == best else "")
                                      for c in cols) + " |\n")
    return {"csv": csv_path, "md": md_path, "best": best}


def plot_sweep(workdir: str, sweep: Sweep, members: list[dict]) -> str:
    """``sweep.png``: episode return (and the sweep's metric) against the update, one line per member."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["episode_return"] + ([sweep.metric] if sweep.metric != "episode_return" else [])
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 3.8), squeeze=False)
    for ms in members:
        rows = read_rows(ms["workdir"])
        x = np.asarray([r["update"] for r in rows], float)
        label = ms["member"] + " " + ", ".join(f"{k.rpartition('.')[2]}={ms['values'][k]:.3g}" for k in sweep.keys)
        for ax, k in zip(axes[0], keys):
            y = np.asarray([_num(r, k) for r in rows])
            ok = np.isfinite(y)
            if ok.any():
                ax.plot(x[ok], y[ok], marker="." if ok.sum() < 30 else None, lw=1.3, label=label)
    for ax, k in zip(axes[0], keys):
        ax.set_xlabel("update")
        ax.set_ylabel(k + (f" ({sweep.goal})" if k == sweep.metric else ""))
        ax.grid(alpha=0.3)
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
            break
    fig.suptitle(f"sweep {sweep.name} ({sweep.group}), {len(members)} members", fontsize=10)
    fig.tight_layout()
    path = os.path.join(workdir, "sweep.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cli(config, config_name: str, sweep_path: str, *, workdir: str | None, progress: bool,
        stop_after_chunks: int | None) -> int:
    """``jaxcc.train --sweep``: 0 done, 2 a bad sweep file, 3 every member diverged."""
    try:
        sweep = load_sweep(sweep_path, config, config_name)
    except SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    workdir = workdir or os.path.join("checkpoints", "sweeps", f"{config_name}-{sweep.name}")
    try:
        summary = run_sweep(config, sweep, workdir, config_name=config_name, progress=progress,
                            stop_after_chunks=stop_after_chunks)
    except ValueError as e:  # the sweep's, the config's (e.g. num_envs over the devices), a checkpoint's
        print(f"error: {e}", file=sys.stderr)
        return 2
    except TrainingDiverged as e:
        print(f"[jaxcc.sweep] {e}", file=sys.stderr)
        return 3
    if summary.get("stopped"):
        print(f"[jaxcc.sweep] stopped as asked (--stop_after_chunks); sweep directory {workdir}\n"
              f"resume: run the same command again")
        return 0
    print(f"[jaxcc.sweep] done: {len(sweep.members)} members, update {summary['final_update']} in "
          f"{summary['wall_s']:.0f} s; {workdir}/sweep_results.csv, sweep_results.md, sweep.png")
    if "table" in summary:  # process 0 writes the table (multi-host: the others have none)
        print(open(summary["table"]["md"]).read())
    return 0


def bench_sweep(config, k: int, updates: int) -> dict:
    """A K-member sweep (members differing in seed: the same program as any hyperparameter) vs
    K separate runs, on stage 0, on every device (``jaxcc.training.mesh.make_mesh``).

    Both are compiled before the clock starts (``jit(...).lower(...).compile()``) and initialised
    outside it; the clock covers ``ceil(updates / chunk_updates)`` chunks per member, each ended
    with ``block_until_ready``.  Returns env steps/s (sum over members of the state's
    ``env_steps`` counter) and updates/s (member-updates), and the sweep's speed-up."""
    import jax

    from jaxcc import agents

    mesh = make_mesh()
    trainer = agents.make_train(config, mesh=mesh)
    n_chunks = max(1, -(-int(updates) // trainer.chunk_updates))
    seeds = np.arange(int(config.seed), int(config.seed) + int(k), dtype=np.int32)

    def timed(run, state, n):
        state = jax.block_until_ready(state)
        e0 = int(state["counters"]["env_steps"])
        t0 = time.perf_counter()
        for _ in range(n):
            state, _m = run(state)
            jax.block_until_ready(state)
        dt = time.perf_counter() - t0
        e1 = int(state["counters"]["env_steps"])
        return dt, e1 - e0

    init_k = make_init(trainer, {"seed": ()}, [])
    sh_k = member_shardings(jax.eval_shape(init_k, seeds, {}), mesh)
    state = jax.jit(init_k, out_shardings=sh_k)(seeds, {})
    run_k = jax.jit(vmapped(lambda s: trainer.run_chunk(s, 0), state_axes(state), extra_out=True), donate_argnums=0,
                    out_shardings=(sh_k, None)).lower(state).compile()
    t_sweep, e_sweep = timed(run_k, state, n_chunks)
    e_sweep *= int(k)  # the counters are shared: env steps per member
    del state

    import jax.numpy as jnp
    sh_1 = state_shardings(jax.eval_shape(trainer.init, jax.random.PRNGKey(0)), mesh)
    init_1 = jax.jit(lambda s: trainer.init(jax.random.PRNGKey(s)), out_shardings=sh_1)
    s1 = init_1(jnp.int32(seeds[0]))
    run_1 = jax.jit(lambda s: trainer.run_chunk(s, 0), donate_argnums=0, out_shardings=(sh_1, None)).lower(s1).compile()
    t_sep, e_sep = 0.0, 0
    for i, sd in enumerate(seeds):
        s1 = s1 if i == 0 else init_1(jnp.int32(sd))
        dt, de = timed(run_1, s1, n_chunks)
        t_sep, e_sep = t_sep + dt, e_sep + de
        del s1
        s1 = None
    member_updates = int(k) * n_chunks * trainer.chunk_updates
    out = {"algo": str(config.algo), "k": int(k), "devices": int(mesh.devices.size), "num_envs": int(config.num_envs),
           "updates_per_member": n_chunks * trainer.chunk_updates,
           "sweep": {"wall_s": t_sweep, "env_steps_per_s": e_sweep / t_sweep,
                     "updates_per_s": member_updates / t_sweep},
           "separate": {"wall_s": t_sep, "env_steps_per_s": e_sep / t_sep, "updates_per_s": member_updates / t_sep}}
    out["speedup"] = out["sweep"]["updates_per_s"] / out["separate"]["updates_per_s"]
    return out
