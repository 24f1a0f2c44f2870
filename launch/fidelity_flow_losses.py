"""How a drop-tail queue splits its drops between window-based flows, in the reference and in the
model: from fidelity sweeps' ``fidelity.json`` (the reference's per-flow records and the
simulator's of the same cases).

    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --out=R/t8
    python -m jaxcc.fidelity --reference=ns3 --cases=14 --seed=0 --granular=drops --references=R/t8/fidelity.json --out=R/drops
    PYTHONPATH=. python3 launch/fidelity_flow_losses.py R/t8 R/drops

For every flow of the multi-flow cases without random loss (``--controllers``, default cubic and
reno): its share of the link's packets (times the number of flows: 1 is an equal share), its
loss rate relative to the link's (1 is the split in proportion to arrivals), and the
reference's retransmission timeouts where it reports them (ns-3 does).  Then, per sweep, how the
relative loss rate goes with the share: the median for the flows with less than half an equal
share and for the others, and how many flows lose at over twice the link's rate.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np


def flow_rows(doc: dict, controllers) -> list[dict]:
    """Per flow of the chosen cases: case, flow, share·n and relative loss for ref and sim, RTOs."""
    rows = []
    verdicts = {v["case"]: v for v in doc["verdicts"]}
    for rec in doc["records"]:
        v = verdicts[rec["case"]]
        ref = rec["reference"][0] if isinstance(rec["reference"], list) else rec["reference"]
        if v["controller"] not in controllers or len(ref["per_flow"]) < 2 or v["params"]["loss"] > 0 \
                or v["verdict"] == "invalid":
            continue
        sides = {}
        for side, r in (("ref", ref), ("sim", rec["sim"])):
            # packets sent ∝ delivered / (1 − loss): the same formula for both sides
            # (the time a flow runs: its active time where the record has it, else stop − start)
            sent = np.array([f["throughput_mbps"] * f.get("active_s", f["stop_s"] - f["start_s"])
                             / max(1.0 - (f.get("loss") or 0.0), 1e-9) for f in r["per_flow"]])
            loss = np.array([f.get("loss") or 0.0 for f in r["per_flow"]])
            link = float(np.sum(sent * loss) / max(np.sum(sent), 1e-12))
            sides[side] = (sent / max(np.sum(sent), 1e-12) * len(sent), loss / link if link > 0 else loss * np.nan)
        for i, f in enumerate(ref["per_flow"]):
            rows.append({"case": rec["case"], "flow": i, "ref_share": sides["ref"][0][i], "ref_rel": sides["ref"][1][i],
                         "sim_share": sides["sim"][0][i], "sim_rel": sides["sim"][1][i], "rto": f.get("rto")})
    return rows


def summary(rows: list[dict], side: str) -> str:
    share = np.array([r[f"{side}_share"] for r in rows])
    rel = np.array([r[f"{side}_rel"] for r in rows])
    ok = np.isfinite(rel)
    small, big = ok & (share < 0.5), ok & (share >= 0.5)
    med = lambda m: f"{np.median(rel[m]):.2f}" if m.any() else "-"  # noqa: E731
    out = (f"relative loss rate, median: flows under half an equal share {med(small)} ({int(small.sum())} flows), "
           f"the others {med(big)} ({int(big.sum())}); over twice the link's rate: {int(np.sum(rel[ok] > 2))} "
           f"of {int(ok.sum())}")
    if side == "ref" and all(r["rto"] is not None for r in rows):
        rto = np.array([r["rto"] for r in rows])
        for name, m in (("under half an equal share", share < 0.5), ("the others", share >= 0.5)):
            out += f"; {name}: {int(np.sum(rto[m] > 0))} of {int(m.sum())} flows timed out, {int(rto[m].sum())} RTOs"
    return out


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    controllers = ("cubic", "reno")
    docs = []
    for folder in argv[1:]:
        path = os.path.join(folder, "fidelity.json")
        with open(path, encoding="utf-8") as fh:
            docs.append((folder, json.load(fh)))
    first = flow_rows(docs[0][1], controllers)
    print(f"{'case':24s} flow  ref share·n  ref loss/link  RTOs  " + "  ".join(
        f"{os.path.basename(f.rstrip('/'))}: share·n loss/link" for f, _ in docs))
    others = [flow_rows(d, controllers) for _, d in docs]
    for k, r in enumerate(first):
        cells = "  ".join(f"{o[k]['sim_share']:8.2f} {o[k]['sim_rel']:9.2f}" for o in others)
        rto = "-" if r["rto"] is None else str(r["rto"])
        print(f"{r['case']:24s} {r['flow']:4d} {r['ref_share']:12.2f} {r['ref_rel']:14.2f} {rto:>5s}  {cells}")
    print()
    print(f"{len(first)} flows of {len({r['case'] for r in first})} cases")
    print(f"reference ({docs[0][1]['reference']}): {summary(first, 'ref')}")
    for (folder, _), rows in zip(docs, others):
        print(f"simulator ({folder}): {summary(rows, 'sim')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
