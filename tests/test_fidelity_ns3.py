"""The simulator against ns-3 (issue 12): at least 40 random cases where ns-3 is credible.

ns-3.37's credible region (``jaxcc.fidelity.ns3_credible``): NewReno (``reno``) and constant-rate
senders anywhere in the target space, CUBIC only at large windows (its ``TcpCubic`` has no
Reno-friendly region, RFC 9438 §4.3); never BBR (its ``TcpBbr`` collapses after a
retransmission timeout; ``jaxcc.fidelity.NS3_NOT_CREDIBLE``), which the kernel sweep covers.
Every case asserts every metric except what a counted known limitation excuses;
``test_pass_rates`` prints the table and the pass rates per controller and metric and asserts at
least 90% of each controller's cases within every tolerance.

Skips only when the ns-3 dumbbell program is not built (``make ns3``).
The longer command:
``python -m jaxcc.fidelity --reference=ns3 --controllers=cubic,reno,fixed --cases=14 --out=DIR``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from jaxcc import fidelity as F

MIN_CASES = 40
SEED = 0
CONTROLLERS = [c for c in F.CONTROLLERS if c in F.available_controllers() and c not in F.NS3_NOT_CREDIBLE]
PER_CONTROLLER = math.ceil(MIN_CASES / len(CONTROLLERS))


def _skip_reason() -> str | None:
    try:
        from jaxcc.emulation import ns3
    except ImportError as e:
        return f"the ns-3 reference is not part of this checkout ({e})"
    if not ns3.available():
        return "the ns-3 dumbbell program is not built (make ns3)"
    return None


SKIP = _skip_reason()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=str(SKIP))]
CASES = F.draw_cases(CONTROLLERS, PER_CONTROLLER, SEED, "ns3")


def test_at_least_forty_cases():
    assert len(CASES) >= MIN_CASES


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = Path(os.environ.get("JAXCC_FIDELITY_OUT") or tmp_path_factory.mktemp("fidelity_ns3"))
    report = F.run_sweep("ns3", CONTROLLERS, PER_CONTROLLER, SEED, out)
    report["by_case"] = {v["case"]: v for v in report["verdicts"]}
    return report


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_ns3(sweep, name):
    v = sweep["by_case"][name]
    assert v["verdict"] != "invalid", f"{name}: ns-3 gave no usable record"
    bad = [f"{m}: sim {F._fmt(m, c['sim'])} vs ns-3 {F._fmt(m, c['ref'])} ({F._fmt_diff(m, c)}, bound {c['bound']})"
           for m, c in v["checks"].items() if c["verdict"] == "fail"]
    assert not bad, f"{name} ({F.describe(v['params'])}):\n  " + "\n  ".join(bad)


def test_pass_rates(sweep, capsys):
    with capsys.disabled():
        print()
        print(F.format_cases(sweep["verdicts"], "ns3"))
        print(F.format_pass_rates(sweep["pass_rates"], "ns3"))
        print(f"known limitations: {sweep['limitation_counts']} ({100 * sweep['limited_fraction']:.0f}% of cases)")
    assert sweep["limited_fraction"] <= F.MAX_LIMITED_FRACTION
    short = [f"{c}: {r['cases']['pass']}/{r['cases']['valid']} cases within every tolerance "
             f"({100 * r['cases']['rate']:.0f}% < {100 * F.PASS_RATE_TARGET:.0f}%)"
             for c, r in sweep["pass_rates"].items() if not r["cases"]["rate"] >= F.PASS_RATE_TARGET]
    assert not short, "\n".join(short)
