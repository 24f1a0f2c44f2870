"""One case compared on link level (``link_view``, ``compare_case``) against the tolerances, and
the pass rates of a sweep (``pass_rates``)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from jaxcc.fidelity.cases import (Case, DELAY_ABS_MS, DELAY_REL, JAIN_ABS, KNOWN_LIMITATIONS,
                                  LOSS_ABS, Limitation, METRICS, PASS_RATE_TARGET, TCP_HEADERS,
                                  THROUGHPUT_REL, UDP_HEADERS, UDP_PROBE_PAYLOAD, limitations_for)
from jaxcc.units import PACKET_BYTES


# ----------------------------------------------------------------------------- comparison

def ip_factor(flow: dict) -> float:
    """IP bytes per byte of goodput a per-flow record reports (see ``TCP_HEADERS``)."""
    impl = flow.get("impl")
    if impl == "iperf3":
        mss = flow.get("mss_bytes") or (PACKET_BYTES - TCP_HEADERS)
        return (mss + TCP_HEADERS) / mss
    if impl == "probe":
        return (UDP_PROBE_PAYLOAD + UDP_HEADERS) / UDP_PROBE_PAYLOAD
    # The simulator and jaxcc-sender count IP bytes themselves; ns-3 counts 1500-byte packets
    # (jaxcc.emulation.ns3).
    return 1.0


def link_view(rec: dict, case: Case) -> dict:
    """The compared link-level metrics of a record, computed from its per-flow entries alike for
    every side (as ``jaxcc.emulation.results.make_record`` does): throughput = all flows' goodput
    (IP bytes) over the time any flow runs; p95 one-way delay = the per-flow values weighted by
    each flow's delivered volume; loss = all lost over all sent (each flow's loss weighted by what
    it sent, delivered / (1 - loss)); Jain's index as the record has it."""
    flows = case.scenario.flows
    per = rec["per_flow"]
    if len(per) != len(flows):
        raise ValueError(f"{case.name}: record has {len(per)} flows, the case {len(flows)}")
    vol = []
    for f, fl in zip(per, flows):
        thr = f.get("throughput_mbps")
        if thr is None or not math.isfinite(thr):
            raise ValueError(f"{case.name}: flow {f.get('flow')} has no throughput ({f.get('error', 'no result')})")
        vol.append(thr * ip_factor(f) * (fl.stop_s - fl.start_s))
    span = max(fl.stop_s for fl in flows) - min(fl.start_s for fl in flows)

    def weighted(key: str, weights: Sequence[float]) -> float:
        pairs = [(w, f.get(key)) for w, f in zip(weights, per) if f.get(key) is not None]
        if not pairs:
            return float("nan")
        total = sum(w for w, _ in pairs)
        return sum(w * x for w, x in pairs) / total if total > 0 else float(np.mean([x for _, x in pairs]))

    # loss is lost over sent, so each flow's loss weighs with what it sent: delivered / (1 - loss)
    sent = [v / max(1.0 - (f.get("loss") or 0.0), 1e-9) for v, f in zip(vol, per)]
    return {"throughput_mbps": sum(vol) / span, "p95_owd_ms": weighted("p95_owd_ms", vol),
            "loss": weighted("loss", sent), "jain": float(rec["jain"]) if rec.get("jain") is not None else float("nan")}


def check_metric(metric: str, sim: float, ref: float) -> dict:
    """One metric against its tolerance: {sim, ref, diff, bound, ok} (diff relative for throughput,
    in ms for delay, absolute otherwise)."""
    if not (math.isfinite(sim) and math.isfinite(ref)):
        return {"sim": sim, "ref": ref, "diff": float("nan"), "bound": None, "ok": False}
    if metric == "throughput_mbps":
        diff = (sim - ref) / max(abs(ref), 1e-9)
        return {"sim": sim, "ref": ref, "diff": diff, "bound": f"±{THROUGHPUT_REL:.0%}",
                "ok": abs(diff) <= THROUGHPUT_REL + 1e-12}
    if metric == "p95_owd_ms":
        diff = sim - ref
        ok = abs(diff) <= max(DELAY_ABS_MS, DELAY_REL * abs(ref)) + 1e-9
        return {"sim": sim, "ref": ref, "diff": diff, "bound": f"±max({DELAY_ABS_MS:g} ms, {DELAY_REL:.0%})", "ok": ok}
    if metric == "loss":
        diff = sim - ref
        return {"sim": sim, "ref": ref, "diff": diff, "bound": f"±{100 * LOSS_ABS:g} pp",
                "ok": abs(diff) <= LOSS_ABS + 1e-12}
    if metric == "jain":
        diff = sim - ref
        return {"sim": sim, "ref": ref, "diff": diff, "bound": f"±{JAIN_ABS}", "ok": abs(diff) <= JAIN_ABS + 1e-12}
    raise ValueError(f"unknown metric {metric!r}; metrics: {METRICS}")


def compare_case(case: Case, sim_rec: dict, ref_rec: dict | Sequence[dict] | None, reference: str, *,
                 valid: bool = True, table: dict[str, Limitation] | None = None) -> dict:
    """The verdict of one case: per metric pass / fail / excused (a known limitation) / n/a
    (Jain with one flow); the case passes when no metric fails.  ``valid=False`` (the emulator's
    self-check) makes the whole case ``invalid``.  Several reference runs of the case (a list):
    each metric is compared with their median, and their values are kept (``ref_runs``) to show
    the reference's own spread."""
    lims = limitations_for(case, reference, table)
    out = {"case": case.name, "controller": case.controller, "params": case.params,
           "limitations": sorted(lims), "checks": {}}
    refs = [] if ref_rec is None else [ref_rec] if isinstance(ref_rec, dict) else list(ref_rec)
    if not valid or not refs:
        out["verdict"] = "invalid"
        return out
    s = link_view(sim_rec, case)
    views = [link_view(x, case) for x in refs]
    r = {m: float(np.median([v[m] for v in views])) for m in METRICS}
    excused = {m for ms in lims.values() for m in ms}
    failed = False
    for m in METRICS:
        if m == "jain" and case.num_flows < 2:
            out["checks"][m] = {"sim": s[m], "ref": r[m], "verdict": "n/a"}
            continue
        c = check_metric(m, s[m], r[m])
        if len(views) > 1:
            c["ref_runs"] = [v[m] for v in views]
        c["verdict"] = "pass" if c["ok"] else ("excused" if m in excused else "fail")
        failed |= c["verdict"] == "fail"
        out["checks"][m] = c
    out["verdict"] = "fail" if failed else "pass"
    return out


def pass_rates(verdicts: Sequence[dict]) -> dict:
    """Per controller: per metric {pass, fail, excused, rate}, and per case {valid, invalid,
    pass, rate, limited}; rate = passes over the cases compared (excused and invalid left out of
    the metric's count; a case passes when no metric fails)."""
    out: dict[str, Any] = {}
    by = defaultdict(list)
    for v in verdicts:
        by[v["controller"]].append(v)
    for c, vs in by.items():
        valid = [v for v in vs if v["verdict"] != "invalid"]
        per_metric = {}
        for m in METRICS:
            got = [v["checks"][m]["verdict"] for v in valid if m in v["checks"]]
            n_pass, n_fail, n_exc = got.count("pass"), got.count("fail"), got.count("excused")
            per_metric[m] = {"pass": n_pass, "fail": n_fail, "excused": n_exc,
                             "rate": n_pass / (n_pass + n_fail) if n_pass + n_fail else float("nan")}
        n_ok = sum(v["verdict"] == "pass" for v in valid)
        out[c] = {"metrics": per_metric,
                  "cases": {"drawn": len(vs), "valid": len(valid), "invalid": len(vs) - len(valid), "pass": n_ok,
                            "rate": n_ok / len(valid) if valid else float("nan"),
                            "limited": sum(bool(v["limitations"]) for v in vs)}}
    return out


def short_of_target(rates: dict) -> tuple[list[str], list[str]]:
    """(controllers with fewer than half their runs valid, controllers under ``PASS_RATE_TARGET``),
    one readable line each, from ``pass_rates``."""
    too_few, short = [], []
    for c, r in rates.items():
        cs = r["cases"]
        if cs["valid"] * 2 < cs["drawn"]:
            too_few.append(f"{c}: only {cs['valid']} of {cs['drawn']} runs valid (the emulator could not keep time)")
        elif not cs["rate"] >= PASS_RATE_TARGET:
            per = ", ".join(f"{m} {100 * x['rate']:.0f}%" for m, x in r["metrics"].items() if x["pass"] + x["fail"])
            short.append(f"{c}: {cs['pass']}/{cs['valid']} cases within every tolerance "
                         f"({100 * cs['rate']:.0f}% < {100 * PASS_RATE_TARGET:.0f}%; {per})")
    return too_few, short


def limited_fraction(verdicts: Sequence[dict]) -> float:
    """The share of cases that any known limitation covers."""
    return sum(bool(v["limitations"]) for v in verdicts) / max(len(verdicts), 1)


def limitation_counts(verdicts: Sequence[dict], table: dict[str, Limitation] | None = None) -> dict[str, int]:
    table = KNOWN_LIMITATIONS if table is None else table
    return {name: sum(name in v["limitations"] for v in verdicts) for name in table}
