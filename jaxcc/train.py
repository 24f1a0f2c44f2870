"""``python -m jaxcc.train --config=NAME [--config.key=value ...] [--workdir=DIR] [--seed=N]``: train
a config's agents, resuming a run where it stopped.

``NAME`` is ``configs/NAME.py`` (a path to a config file also works); ``--config.a.b=v``
overrides any key.  The run lives in ``--workdir`` (default ``checkpoints/runs/<NAME>-<seed>``):
re-running the same command resumes from the last checkpoint and finishes with the same final
parameters as an uninterrupted run (the chunk sequence and every RNG key live in the state).
Re-running it on a finished run trains nothing: one line names the run's policies and how to
train again (a new ``--workdir``, or delete the old one), and the exit status is 0.

The loop (``jaxcc.training.loop``, PureJaxRL's shape: the agent's jitted ``lax.scan`` chunks under a
thin Python loop that logs, checkpoints and guards against NaN/inf); devices, keys and hosts
(``jaxcc.training.mesh``): ``--coordinator_address=HOST:PORT --num_processes=N --process_id=I`` or
``--distributed`` run one program over every device of every process.
"""

from __future__ import annotations

import difflib
import os
import sys

from jaxcc.training.configs import all_keys, config_name, list_configs, load_config, resolve_config_path
from jaxcc.training.loop import TrainingDiverged, train
from jaxcc.training.mesh import init_distributed


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


# What to evaluate a finished run on, by algorithm (``jaxcc.scenarios.SUITES``, ``jaxcc.evaluation.bars``).  The
# ``robust`` suite's start-rate link is for the learned policies' ramp: the baselines beside them
# run it from their own start (``--baseline_start=own``; ``jaxcc.evaluation.runs.from_own_start``).
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
    from jaxcc.training import checkpointing

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
