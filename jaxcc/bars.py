"""The project's quality bars as checks over ``jaxcc.evaluate`` records.

    python -m jaxcc.evaluate --checkpoint=RUN --controller=bbr,cubic --suite=pareto --bars=pareto --out=DIR

prints, after the usual table, each evaluated policy's verdict on every bar, and stores the same
verdicts in ``DIR/results.json`` (``"bars"``).  A bar is never relaxed here: the
thresholds are the ones the issue that introduced the algorithm states, and a missing record
(scenario not run, no ``bbr`` to compare with) is reported as unmet with the reason.

``pareto`` (issue 3, for Pareto-Fair in the simulator):

* ``pareto/fixed50`` (50 Mbit/s, 90 ms): utilization ≥ 0.85, p95 queueing delay ≤ 45 ms, loss ≤ 1 %;
* ``pareto/dyn10-30`` (10↔30 Mbit/s every 5 s): utilization ≥ 0.70;
* ``pareto/shared2``…``shared5``: Jain's index over the last 20 s ≥ 0.95 for every flow count;
* Ankh's number below in-sim BBR's on at least 4 of the 6 Fig. 5 scenarios (suite ``pareto-fig5``).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from jaxcc.scenarios import SUITES


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One bar for one controller: its name, the measured value (as text) and whether it is met."""

    bar: str
    value: str
    met: bool


def _index(records: Sequence[dict]) -> dict[tuple[str, str], dict]:
    return {(r["scenario"], r["controller"]): r for r in records}


def pareto(records: Sequence[dict], controller: str) -> list[Verdict]:
    """Issue 3's Pareto bars for ``controller`` (a label of ``records``); see the module docstring."""
    by = _index(records)
    out = []

    def rec(scenario):
        return by.get((scenario, controller))

    f = rec("pareto/fixed50")
    for name, key, fmt, ok in (("fixed50 util >= 0.85", "utilization", "{:.3f}", lambda x: x >= 0.85),
                               ("fixed50 p95 queueing <= 45 ms", "p95_qdelay_ms", "{:.1f} ms", lambda x: x <= 45.0),
                               ("fixed50 loss <= 1%", "loss", "{:.2%}", lambda x: x <= 0.01)):
        out.append(Verdict(name, "not evaluated", False) if f is None else Verdict(name, fmt.format(f[key]), ok(f[key])))
    d = rec("pareto/dyn10-30")
    out.append(Verdict("dyn10-30 util >= 0.70", "not evaluated" if d is None else f"{d['utilization']:.3f}",
                       d is not None and d["utilization"] >= 0.70))
    shared = [rec(f"pareto/shared{n}") for n in (2, 3, 4, 5)]
    if any(s is None for s in shared):
        out.append(Verdict("Jain >= 0.95 for 2-5 flows", "not evaluated (needs pareto/shared2..5)", False))
    else:
        j = [s["jain"] for s in shared]
        out.append(Verdict("Jain >= 0.95 for 2-5 flows", " / ".join(f"{x:.3f}" for x in j), min(j) >= 0.95))
    fig5 = SUITES["pareto-fig5"]
    pairs = [(rec(s), by.get((s, "bbr"))) for s in fig5]
    if any(a is None or b is None for a, b in pairs):
        out.append(Verdict("Ankh < BBR on >= 4 of 6 Fig. 5 scenarios",
                           "not evaluated (needs the pareto-fig5 scenarios and --controller=bbr)", False))
    else:
        wins = sum(a["ankh"] < b["ankh"] for a, b in pairs)
        out.append(Verdict("Ankh < BBR on >= 4 of 6 Fig. 5 scenarios", f"{wins} of 6", wins >= 4))
    return out


BAR_SETS = {"pareto": pareto}
BASELINE_LABELS = ("bbr", "cubic", "reno", "copa", "oracle")


def check(name: str, records: Sequence[dict]) -> dict[str, list[Verdict]]:
    """Verdicts of bar set ``name`` for every evaluated controller except the baselines."""
    if name not in BAR_SETS:
        raise ValueError(f"--bars: unknown bar set {name!r}; expected one of {', '.join(sorted(BAR_SETS))}")
    labels = []
    for r in records:
        lab = r["controller"]
        if lab not in labels and lab not in BASELINE_LABELS and not lab.startswith("fixed:"):
            labels.append(lab)
    return {lab: BAR_SETS[name](records, lab) for lab in labels}


def format_verdicts(verdicts: dict[str, list[Verdict]]) -> str:
    """One line per controller: every bar with its value and ✓/✗, then the count met."""
    lines = []
    for lab, vs in verdicts.items():
        parts = [f"{v.bar}: {v.value} {'✓' if v.met else '✗'}" for v in vs]
        lines.append(f"{lab}: {sum(v.met for v in vs)} of {len(vs)} bars met\n    " + "\n    ".join(parts))
    return "\n".join(lines)


def as_json(verdicts: dict[str, list[Verdict]]) -> dict:
    return {lab: [dataclasses.asdict(v) for v in vs] for lab, vs in verdicts.items()}
