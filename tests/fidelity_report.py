"""Fluid model vs packet-level reference: a table per link and sender, and the worst errors.

    python tests/fidelity_report.py --links=30 --out=fidelity.json
    python tests/fidelity_report.py --links=10 --senders=bbr_like --variant=split_feedback

Uses the same random links as ``tests/test_fidelity.py`` (seed 2026 = its slow sweep).
``--variant`` runs the fluid side with an experimental patched ``core.step``
(``reference/core_variants.py``) to measure a proposed core fix; the default is the real core.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from reference import harness as H  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=int, default=30)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--senders", default=",".join(H.SENDERS))
    ap.add_argument("--max-mbps", type=float, default=200.0)
    ap.add_argument("--n-rtts", type=int, default=100)
    ap.add_argument("--loss-max", type=float, default=0.05)
    ap.add_argument("--variant", default="", help="patched core.step: split_feedback, cap_backlog or both (comma)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)

    import test_fidelity as T  # tolerances and the documented limitations

    if args.variant:
        from reference import core_variants
        core_variants.install(set(args.variant.split(",")))

    rows, worst = [], {}
    for sender in args.senders.split(","):
        cases = H.random_cases(args.links, sender, seed=args.seed, max_mbps=args.max_mbps, n_rtts=args.n_rtts,
                               loss_max=args.loss_max)
        t0 = time.time()
        fluid = H.run_fluid(cases)
        t_fluid = time.time() - t0
        t0 = time.time()
        print(f"\n== {sender}: {len(cases)} links (fluid {t_fluid:.1f} s incl. compile)")
        print(f"{'link':>4} {'flow':>4} {'Mbps':>7} {'rtt ms':>6} {'bufBDP':>6} {'loss%':>5} | "
              f"{'gp ref':>8} {'gp fl':>8} {'err%':>7} | {'owd ref':>8} {'owd fl':>8} {'err ms':>7} | "
              f"{'loss ref':>8} {'loss fl':>8} {'pp':>6} | limitations")
        errs = {"thr_rel": [], "owd_abs": [], "owd_rel": [], "loss_abs": [], "owd_excess": []}
        errs_clean = {k: [] for k in errs}
        for li, (c, fl) in enumerate(zip(cases, fluid)):
            rf, res = H.run_packet(c)
            e = H.errors(fl, rf)
            lims = T.limitations(c)
            for i in range(len(c.rtts)):
                flag = ("T" if e.thr_rel[i] > T.THR_REL_TOL else "-") + \
                       ("D" if e.owd_abs[i] > max(T.OWD_ABS_TOL, T.OWD_REL_TOL * rf.p95_owd[i]) else "-") + \
                       ("L" if e.loss_abs[i] > T.LOSS_ABS_TOL else "-")
                print(f"{li:>4} {i:>4} {c.capacity / H.MBPS:>7.2f} {c.rtts[i] * 1e3:>6.0f} "
                      f"{c.buffer / c.bdp:>6.2f} {c.loss * 100:>5.2f} | {rf.goodput[i] / H.MBPS:>8.3f} "
                      f"{fl.goodput[i] / H.MBPS:>8.3f} {(fl.goodput[i] / rf.goodput[i] - 1) * 100:>+7.2f} | "
                      f"{rf.p95_owd[i] * 1e3:>8.2f} {fl.p95_owd[i] * 1e3:>8.2f} "
                      f"{(fl.p95_owd[i] - rf.p95_owd[i]) * 1e3:>+7.2f} | {rf.loss[i] * 100:>8.3f} "
                      f"{fl.loss[i] * 100:>8.3f} {(fl.loss[i] - rf.loss[i]) * 100:>+6.2f} | {flag} {','.join(lims)}")
                excess = e.owd_abs[i] / max(T.OWD_ABS_TOL, T.OWD_REL_TOL * rf.p95_owd[i])
                vals = dict(thr_rel=e.thr_rel[i], owd_abs=e.owd_abs[i], owd_rel=e.owd_rel[i],
                            loss_abs=e.loss_abs[i], owd_excess=excess)
                for k, v in vals.items():
                    errs[k].append(float(v))
                    if not lims:
                        errs_clean[k].append(float(v))
                rows.append(dict(sender=sender, link=li, flow=i, capacity_mbps=c.capacity / H.MBPS,
                                 rtt_ms=c.rtts[i] * 1e3, buffer_bdp=c.buffer / c.bdp, buffer_bytes=c.buffer,
                                 loss_rate=c.loss, flows=len(c.rtts), duration_s=c.duration,
                                 replicates=len(res), limitations=lims,
                                 ref=dict(goodput_mbps=rf.goodput[i] / H.MBPS, p95_owd_ms=rf.p95_owd[i] * 1e3,
                                          loss=rf.loss[i]),
                                 fluid=dict(goodput_mbps=fl.goodput[i] / H.MBPS, p95_owd_ms=fl.p95_owd[i] * 1e3,
                                            loss=fl.loss[i]),
                                 errors={k: float(v) for k, v in vals.items()}, flags=flag))
        worst[sender] = {
            "all": {k: float(np.max(v)) for k, v in errs.items()},
            "outside_documented_limitations": {k: (float(np.max(v)) if v else None) for k, v in errs_clean.items()},
            "median": {k: float(np.median(v)) for k, v in errs.items()},
            "flows": len(errs["thr_rel"]), "flows_outside_limitations": len(errs_clean["thr_rel"]),
            "reference_s": time.time() - t0,
        }
    print("\n== worst-case errors (thr_rel: relative goodput; owd_abs: s; loss_abs: fraction; "
          "owd_excess: owd error / its tolerance)")
    for sender, w in worst.items():
        print(f"{sender:>9}  all flows ({w['flows']}): " +
              ", ".join(f"{k} {v:.4g}" for k, v in w["all"].items()))
        print(f"{'':>9}  outside limitations ({w['flows_outside_limitations']}): " +
              ", ".join(f"{k} {v:.4g}" if v is not None else f"{k} -" for k, v in
                        w["outside_documented_limitations"].items()))
        print(f"{'':>9}  median: " + ", ".join(f"{k} {v:.4g}" for k, v in w["median"].items()))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"tolerances": dict(thr_rel=T.THR_REL_TOL, owd_rel=T.OWD_REL_TOL, owd_abs_s=T.OWD_ABS_TOL,
                                          loss_abs=T.LOSS_ABS_TOL),
                       "variant": args.variant, "args": vars(args), "worst": worst, "rows": rows}, fh, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
