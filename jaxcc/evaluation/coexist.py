"""Coexistence: what one evaluated flow takes from, and does to, the CUBIC or BBR flows beside it.

Over the records of ``python -m jaxcc.evaluate --suite=coexist --controller=cubic,bbr,X`` (the
``coexist/*`` links: flow 0 runs the evaluated controller, the others keep CUBIC or BBR):

* **share** — flow 0's goodput over its fair share (the link's mean capacity over the number
  of flows), over the whole run: 1 is fair, 0.06 starved, 2 twice its share;
* **harm** (Ware et al., "Beyond Jain's Fairness Index: Setting the Bar for the Deployment of
  Congestion Control Algorithms", HotNets 2019) — how much worse the neighbours do beside the
  evaluated flow than beside one more flow of their own protocol (the run where
  ``--controller`` is the neighbours' protocol: every flow CUBIC, or every flow BBR).  For the
  neighbours' total throughput, a quantity where more is better, ``(ref − with) / ref``; for
  their p95 one-way delay (the mean over the neighbours), where less is better,
  ``(with − ref) / with``.  0 is no harm, 1 the most; negative: the neighbours did better.
"""

from __future__ import annotations

import math
from typing import Sequence

# The links' neighbour protocol is the word after "coexist/" up to the flow count.
KINDS = ("cubic", "bbr")


def neighbour_kind(scenario: str) -> str | None:
    """``cubic`` or ``bbr`` for a ``coexist/*`` scenario name, else None."""
    if not scenario.startswith("coexist/"):
        return None
    rest = scenario.split("/", 1)[1]
    return next((k for k in KINDS if rest.startswith(k)), None)


def share(record: dict) -> float:
    """Flow 0's goodput over its fair share (``capacity_mbps`` / number of flows)."""
    flows = record["per_flow"]
    return flows[0]["throughput_mbps"] / (record["capacity_mbps"] / len(flows))


def _neighbours(record: dict) -> tuple[float, float]:
    """(total goodput Mbit/s, mean p95 one-way delay ms) of flows 1..n."""
    rest = record["per_flow"][1:]
    if not rest:
        raise ValueError(f"{record['scenario']}: a coexistence record needs neighbours (flows 1..n)")
    return sum(f["throughput_mbps"] for f in rest), sum(f["p95_owd_ms"] for f in rest) / len(rest)


def throughput_harm(ref: float, with_: float) -> float:
    """Ware et al.'s harm for a more-is-better quantity: (ref − with) / ref."""
    return (ref - with_) / ref if ref > 0 else float("nan")


def delay_harm(ref: float, with_: float) -> float:
    """Ware et al.'s harm for a less-is-better quantity: (with − ref) / with."""
    return (with_ - ref) / with_ if with_ > 0 else float("nan")


def harm(record: dict, reference: dict) -> dict:
    """The harm ``record``'s flow 0 does to its neighbours, against ``reference`` (the same link
    with flow 0 running the neighbours' own protocol)."""
    if record["scenario"] != reference["scenario"]:
        raise ValueError(f"harm: {record['scenario']} against a reference on {reference['scenario']}")
    t_with, d_with = _neighbours(record)
    t_ref, d_ref = _neighbours(reference)
    return {"throughput": throughput_harm(t_ref, t_with), "delay": delay_harm(d_ref, d_with)}


def evaluated(record: dict) -> str:
    """The controller flow 0 ran, as the run names it: an emulated record's label joins its flows'
    controllers (``policy:F+kernel:cubic``), and then it is flow 0's; otherwise it is the record's
    own label (``bbr``, ``policy:F``, or a checkpoint's stage name such as ``Pareto-Fair``)."""
    flows = [f.get("controller") or "" for f in record["per_flow"]]
    return flows[0] if record["controller"] == "+".join(flows) else record["controller"]


def rows(records: Sequence[dict], controller: str) -> list[dict]:
    """Per ``coexist/*`` link that has both ``controller``'s record (flow 0 ran it) and its
    reference (flow 0 ran the neighbours' protocol: ``cubic`` in the simulator, ``kernel:cubic``
    over netns): the share, the harm, and BBR's harm on the same link (when ``bbr`` ran there and
    the link is not BBR's own)."""
    by = {(r["scenario"], evaluated(r)): r for r in records}
    out = []
    for (sc, ctrl), rec in by.items():
        kind = neighbour_kind(sc)
        ref = next((by[(sc, k)] for k in (kind, f"kernel:{kind}") if (sc, k) in by), None) if kind else None
        if ctrl != controller or ref is None:
            continue
        row = {"scenario": sc, "kind": kind, "share": share(rec), "harm": harm(rec, ref)}
        if kind != "bbr" and (sc, "bbr") in by:
            row["bbr_harm"] = harm(by[(sc, "bbr")], ref)
        out.append(row)
    return sorted(out, key=lambda r: r["scenario"])


def fmt(x: float) -> str:
    """A harm as the tables print it: signed, two decimals."""
    return "nan" if math.isnan(x) else f"{x:+.2f}"
