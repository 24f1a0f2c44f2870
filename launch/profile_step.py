"""Where one tick of the model spends its time: the XLA operations of a warm ``jaxcc.bench``
rollout, from a JAX profiler trace (Perfetto JSON), summed per operation.

    PYTHONPATH=. python3 launch/profile_step.py --mode=sim --links=16384 --decisions=20

Runs the bench's rollout as ``jaxcc.bench`` runs it (with huge pages, ``jaxcc.huge_pages``;
``JAXCC_HUGE_PAGES=0``: without) once to compile, once more under ``jax.profiler.trace`` and prints each
XLA operation (fusion, scatter, gather, copy; the names XLA gives them) with its total time, its
share of all operations' time and its time per tick.  Container events (the ``while`` loops of the
scans, the executor's own spans) and Python-side spans are left out, so the shares add up to the
time the operations themselves ran.  ``--hlo=FILE`` also writes the optimized HLO, to look up
what each fusion computes.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time

from absl import app, flags

flags.DEFINE_enum("mode", "sim", ["sim", "env"], "the bare model or the full Aurora environment (jaxcc.bench)")
flags.DEFINE_integer("links", 16384, "parallel links")
flags.DEFINE_integer("decisions", 20, "decisions per link in the profiled call")
flags.DEFINE_integer("top", 20, "operations to print")
flags.DEFINE_string("hlo", None, "write the optimized HLO text here")
FLAGS = flags.FLAGS

# Spans that contain operations rather than being one.
CONTAINERS = re.compile(r"^(ThunkExecutor|while\.|PjitFunction|CommonPjRt|\$|TfrtCpu|PjRt)")


def op_times(trace_path: str) -> tuple[collections.Counter, collections.Counter]:
    """Total microseconds and count per operation name in a Perfetto JSON trace."""
    with gzip.open(trace_path) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and not CONTAINERS.match(e.get("name", "")):
            total[e["name"]] += e.get("dur", 0)
            count[e["name"]] += 1
    return total, count


def main(argv):
    import jax

    from jaxcc import bench

    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if FLAGS.links < 1 or FLAGS.decisions < 1:
        raise app.UsageError("--links and --decisions: must be >= 1")
    n, nd = FLAGS.links, FLAGS.decisions
    fn = bench.make_sim_rollout(n, nd) if FLAGS.mode == "sim" else bench.make_env_rollout(n, nd)
    f = jax.jit(fn)
    if FLAGS.hlo:
        with open(FLAGS.hlo, "w", encoding="utf-8") as fh:
            fh.write(f.lower(jax.random.PRNGKey(0)).compile().as_text())
    jax.block_until_ready(f(jax.random.PRNGKey(0)))
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        with jax.profiler.trace(d, create_perfetto_trace=True):
            jax.block_until_ready(f(jax.random.PRNGKey(1)))
        wall = time.perf_counter() - t
        paths = glob.glob(os.path.join(d, "**", "perfetto_trace.json.gz"), recursive=True)
        if not paths:
            raise SystemExit(f"no perfetto_trace.json.gz under the profiler's folder {d}")
        total, count = op_times(paths[0])
    ticks = nd * bench.mi_ticks_for(bench.TICKS_PER_RTT)
    all_us = sum(total.values())
    print(f"{FLAGS.mode}: {n} links x {nd} decisions ({ticks} ticks), {jax.default_backend()}, "
          f"{wall:.3f} s under the profiler; operations {all_us / 1e3:.1f} ms in all, "
          f"{all_us / ticks:.0f} us per tick, {all_us / ticks / n * 1e3:.1f} ns per link-tick")
    print(f"{'operation':40s} {'ms':>9s} {'share':>7s} {'us/tick':>9s} {'calls':>7s}")
    for name, us in total.most_common(FLAGS.top):
        print(f"{name[:40]:40s} {us / 1e3:9.1f} {100 * us / all_us:6.1f}% {us / ticks:9.1f} {count[name]:7d}")
    return 0


if __name__ == "__main__":
    from jaxcc import huge_pages

    huge_pages.reexec()  # as jaxcc.bench runs (JAXCC_HUGE_PAGES=0: without)
    sys.exit(app.run(main))
