"""Devices and hosts of a training run: ``jax.distributed`` initialisation, the 1-D ``'data'``
mesh over every device, the state's shardings (environment lanes split, the rest replicated),
compilation with its wall time, and barriers between processes.

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
"""

from __future__ import annotations

import itertools
import os
import time

import numpy as np


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


def make_mesh():
    """The 1-D ``'data'`` mesh over ``jax.devices()`` (all processes')."""
    from jaxcc.agents import pipeline

    return pipeline.make_mesh()


def state_shardings(state, mesh):
    """``jaxcc.agents.pipeline.state_shardings``: the environment lanes split over 'data', the rest
    replicated."""
    from jaxcc.agents import pipeline

    return pipeline.state_shardings(state, mesh)


def placed(tmpl, shardings):
    """``tmpl``'s ShapeDtypeStructs with ``shardings`` (what a restore places each leaf on)."""
    import jax

    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tmpl, shardings)
