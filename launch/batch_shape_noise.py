"""How much a lane's result depends on the size of the batch it runs in (float32 rounding).

    PYTHONPATH=. python3 launch/batch_shape_noise.py [--scenario=deepcc/cellular]
        [--controller=policy:checkpoints/deepcc/deepcc.safetensors] [--tuned] [--sizes=1,2,8,64]
        [--targets=0 --chunk=100]

A simulator batch is ``jax.vmap`` over independent lanes, so a lane's arithmetic is the same
whatever else runs beside it, but not always the same float32 rounding: XLA compiles another
program for another batch size, and a learned sender's layers (matrix products, transcendental
functions) may sum in another order.  This runs lane 0 of ``--scenario`` (with ``--tuned``: the
first of the link's TCR targets, as ``jaxcc.tcr`` draws them at seed 0, with the sender's online
tuning) in batches of each ``--sizes``, the other lanes its following targets (or copies), and
prints for each size lane 0's goodput and p95 queueing delay over the TCR window and, against
the batch of one, the first tick at which each recorded quantity differs and by how much.  The
last line runs ``max(--sizes)`` copies of lane 0: a lane that depended on its neighbours'
contents would differ from the mixed batch of that size.

With ``--tuned --targets=N``: N TCR targets of the link (``jaxcc.tcr --targets=N --seed=0``'s draw) once in one batch of N and
once in batches of ``--chunk``, the TCR of each layout and how many targets change verdict: the
noise floor of a TCR figure from float rounding alone.
"""

import argparse
import dataclasses

import jax
import numpy as np

from jaxcc import senders
from jaxcc.evaluation import metrics, tcr
from jaxcc.evaluation.runs import resolve_scenarios
from jaxcc.sim import runner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="deepcc/cellular")
    ap.add_argument("--controller", default="policy:checkpoints/deepcc/deepcc.safetensors")
    ap.add_argument("--tuned", action="store_true", help="each lane tuned toward one TCR target (DeepCC)")
    ap.add_argument("--sizes", default="1,2,8,64")
    ap.add_argument("--targets", type=int, default=0, help="with --tuned: also judge this many targets in two layouts")
    ap.add_argument("--chunk", type=int, default=100, help="the second layout's batch size")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    sc = resolve_scenarios(suite=None, scenario=a.scenario, scenario_file=None)[0][0]
    sched = sc.link.capacity(seed=0, duration_s=sc.duration_s)
    window = tcr.measurement_window(sc)
    if a.tuned:
        targets = tcr.link_targets(sc.name, tcr.link_ranges(sc, 0), max(sizes + [a.targets]), 0)
        lanes = [tcr.with_target(sc, a.controller, t) for t in targets]
    else:
        lanes = [tcr.untuned(sc, a.controller)] * max(sizes)

    def run(scs):
        items = [runner.Item(dataclasses.replace(s, link=tcr._DrawnLink(s.link, sched)), 0) for s in scs]
        (b,) = runner.build_batches(items, resolve=senders.resolve)
        _, traj, rates = runner.run_batch(b)
        return traj, tcr._measure(traj, rates, b, window)

    def lane0(traj):
        return {jax.tree_util.keystr(p): np.asarray(x)[0] for p, x in jax.tree_util.tree_leaves_with_path(traj)}

    print(f"{sc.name}, {a.controller}{' tuned' if a.tuned else ''}; lane 0 over the window {window} s")
    ref = None
    for n in sizes:
        traj, m = run(lanes[:n])
        got = lane0(traj)
        line = f"batch {n:4d}: {m[0]['throughput_mbps']:.4f} Mbit/s, p95 queueing {m[0]['p95_qdelay_ms']:.1f} ms"
        if ref is None:
            ref = got
        else:
            firsts = []
            for k, x in got.items():
                d = np.abs(x.astype(np.float64) - ref[k].astype(np.float64))
                if d.max() > 0:
                    t = int(np.argwhere(d > 0)[0][0])
                    rel = float(np.max(d[t]) / max(np.max(np.abs(ref[k][t])), 1e-30))
                    firsts.append((t, k, rel))
            if firsts:
                t, k, rel = min(firsts)
                line += f"; first differs from the batch of one at tick {t} ({k}, relative {rel:.1e})"
            else:
                line += "; bit-identical to the batch of one"
        print(line, flush=True)
    n = max(sizes)
    _, m = run([lanes[0]] * n)
    print(f"{n} copies of lane 0: {m[0]['throughput_mbps']:.4f} Mbit/s, p95 queueing {m[0]['p95_qdelay_ms']:.1f} ms; "
          f"copies identical: {len({(x['throughput_mbps'], x['p95_qdelay_ms']) for x in m}) == 1}")
    if a.tuned and a.targets:
        n, c = a.targets, a.chunk
        whole = run(lanes[:n])[1]
        parts = [x for i in range(0, n, c) for x in run(lanes[i:i + c])[1]]
        met = [metrics.tcr_met(np.array([tcr._achieved(x) for x in r]), targets[:n]) for r in (whole, parts)]
        print(f"TCR of {n} targets: {100 * met[0].mean():.1f} % in one batch, {100 * met[1].mean():.1f} % in batches "
              f"of {c}; {int(np.sum(met[0] != met[1]))} targets change verdict")


if __name__ == "__main__":
    main()
