"""``python -m jaxcc.sweep``: run a sweep's configurations in one program.  It is the command of a
sweep (``jaxcc.train --config=NAME --sweep=FILE`` hands it its command line) and of ``--bench=CONFIG [--k=4] [--updates=N] [--set key=value ...]``
(``jaxcc.training.sweep.bench_sweep``'s JSON).  The sweep itself: ``jaxcc.training.sweep``.
"""

from __future__ import annotations

import json
import os
import sys

from jaxcc import train as T
from jaxcc.cli import run_absl_cli
from jaxcc.training.configs import all_keys, config_name, load_config, resolve_config_path
from jaxcc.training.mesh import init_distributed
from jaxcc.training.sweep import bench_sweep, cli
from jaxcc.training.sweep_file import get_key


def _run_flags(argv) -> int:
    """After ``jaxcc.train.main`` parsed the command line: run ``--sweep`` with its flags."""
    from absl import flags

    from jaxcc import jax_cache

    FLAGS = flags.FLAGS
    jax_cache.enable_compilation_cache()
    try:  # as jaxcc.train's: the explicit --coordinator_address/--num_processes/--process_id too
        init_distributed(FLAGS.coordinator_address, FLAGS.num_processes, FLAGS.process_id,
                           auto=FLAGS.distributed or os.environ.get("JAXCC_DISTRIBUTED") == "1")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if FLAGS.stop_at_update is not None:
        print("error: --stop_at_update is not supported with --sweep (use --stop_after_chunks)", file=sys.stderr)
        return 2
    config = FLAGS.config
    name = config_name(FLAGS["config"].config_filename if hasattr(FLAGS["config"], "config_filename") else "run")
    if FLAGS.seed is not None:
        config.seed = FLAGS.seed
    if not FLAGS.sweep:
        print("error: --sweep=FILE is required (python -m jaxcc.train --config=NAME --sweep=FILE)", file=sys.stderr)
        return 2
    return cli(config, name, FLAGS.sweep, workdir=FLAGS.workdir, progress=not FLAGS.no_progress,
               stop_after_chunks=FLAGS.stop_after_chunks)


def define_bench_flags(fv):
    """``--bench``'s flags on ``fv`` (an ``absl.flags.FlagValues``)."""
    from absl import flags

    flags.DEFINE_string("bench", None, "config name or path (configs/NAME.py)", flag_values=fv)
    flags.mark_flag_as_required("bench", flag_values=fv)
    flags.DEFINE_integer("k", 4, "members", lower_bound=1, flag_values=fv)
    flags.DEFINE_integer("updates", 0, "updates per member (0: two chunks)", lower_bound=0, flag_values=fv)
    flags.DEFINE_multi_string("set", [], "config override KEY=VALUE, e.g. num_envs=256 (repeatable)", flag_values=fv)
    return fv


def bench(fv, argv=()) -> int:
    """``--bench``: print ``bench_sweep``'s JSON for the config ``fv.bench`` and its overrides."""
    config = load_config(resolve_config_path(fv.bench))
    known = set(all_keys(config))
    for kv in fv.set:
        key, _, v = kv.partition("=")
        if key not in known:
            raise ValueError(f"--set {key}: no such config field")
        parent, _, leaf = key.rpartition(".")
        node = get_key(config, parent) if parent else config
        node[leaf] = type(node[leaf])(json.loads(v)) if isinstance(node[leaf], (int, float)) else v
    updates = fv.updates or 2 * int(config.chunk_updates)
    print(json.dumps(bench_sweep(config, fv.k, updates), indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxcc.train --config=NAME --sweep=FILE [...]`` hands its command line to
    ``python -m jaxcc.sweep`` (the same flags).  ``python -m jaxcc.sweep --bench=CONFIG [--k=4]
    [--updates=N] [--set key=value ...]`` prints ``bench_sweep``'s JSON."""
    argv = list(sys.argv if argv is None else argv)
    if not any(a.startswith("--bench") for a in argv[1:]):
        return T.main(argv, run=_run_flags)
    return run_absl_cli(argv, main.__doc__, define_bench_flags, bench, "--bench=pareto_smoke --k=4")


if __name__ == "__main__":
    sys.exit(main())
