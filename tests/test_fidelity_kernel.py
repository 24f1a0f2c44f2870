"""The simulator against the Linux kernel's TCP over the netns harness (issue 12), sized for CI.

``CI_CASES`` random links per controller (``jaxcc.fidelity.draw_cases``, seed ``SEED``): in-sim
``cubic``, ``reno``, ``bbr`` against ``kernel:cubic``, ``kernel:reno``, ``kernel:bbr`` (iperf3),
constant rates against ``udp_probe``.  Every case asserts every metric (link throughput 5%, p95
one-way delay 15% or 5 ms, loss 1 pp, Jain 0.05 with two or more flows) except what a counted
known limitation excuses; a run the emulator's self-check marks invalid is re-run once and, if
still invalid, skipped as invalid (neither pass nor fail).  ``test_pass_rates`` prints the table
and the pass rates per controller and metric and asserts the target: at least 90% of each
controller's valid cases within every tolerance.

About 25 s per case (20-25 s of link time plus setup): 12 cases (cubic, reno, bbr, fixed), about 5.5 minutes; the longer
command: ``python -m jaxcc.fidelity --reference=kernel --cases=20 --out=DIR``.
Needs root and network namespaces (skips, saying so, without them); the tools it needs
(iperf3, nfq_delay, udp_probe) are part of ``make test``'s setup, so their absence fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxcc import fidelity as F
from jaxcc.emulation import host

CI_CASES = 3
SEED = 0
CONTROLLERS = [c for c in F.CONTROLLERS if c in F.available_controllers()]


def _skip_reason() -> str | None:
    if sys.platform != "linux":
        return "the kernel reference needs Linux network namespaces"
    if os.geteuid() != 0:
        return "the kernel reference needs root (network namespaces, tc, iptables)"
    if shutil.which("ip") is None:
        return "no iproute2 'ip': network namespaces cannot be made here"
    probe = "jxekf" + os.urandom(2).hex()
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"network namespaces unavailable: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


SKIP = _skip_reason()
pytestmark = [pytest.mark.emulation, pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=str(SKIP))]
CASES = F.draw_cases(CONTROLLERS, CI_CASES, SEED, "kernel")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    if not (host.TOOLS_BUILD / "nfq_delay").exists() or not (host.TOOLS_BUILD / "udp_probe").exists():
        subprocess.run(["bash", str(host.REPO / "datapath" / "tools" / "build.sh")], check=True, capture_output=True)
    out = Path(os.environ.get("JAXCC_FIDELITY_OUT") or tmp_path_factory.mktemp("fidelity_kernel"))
    report = F.run_sweep("kernel", CONTROLLERS, CI_CASES, SEED, out)
    report["by_case"] = {v["case"]: v for v in report["verdicts"]}
    return report


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_the_kernel(sweep, name):
    v = sweep["by_case"][name]
    if v["verdict"] == "invalid":
        pytest.skip(f"{name}: the emulator's delay self-check marked the run and its re-run invalid "
                    f"(counted as invalid in test_pass_rates)")
    bad = [f"{m}: sim {F._fmt(m, c['sim'])} vs kernel {F._fmt(m, c['ref'])} ({F._fmt_diff(m, c)}, bound {c['bound']})"
           for m, c in v["checks"].items() if c["verdict"] == "fail"]
    assert not bad, f"{name} ({F.describe(v['params'])}):\n  " + "\n  ".join(bad)


def test_pass_rates(sweep, capsys):
    with capsys.disabled():
        print()
        print(F.format_cases(sweep["verdicts"], "kernel"))
        print(F.format_pass_rates(sweep["pass_rates"], "kernel"))
        print(f"known limitations: {sweep['limitation_counts']} ({100 * sweep['limited_fraction']:.0f}% of cases)")
    assert sweep["limited_fraction"] <= F.MAX_LIMITED_FRACTION
    short = []
    for c, r in sweep["pass_rates"].items():
        cs = r["cases"]
        if cs["valid"] * 2 < cs["drawn"]:
            short.append(f"{c}: only {cs['valid']} of {cs['drawn']} runs valid (the emulator could not keep time)")
        elif cs["rate"] < F.PASS_RATE_TARGET:
            per = ", ".join(f"{m} {100 * x['rate']:.0f}%" for m, x in r["metrics"].items() if x["pass"] + x["fail"])
            short.append(f"{c}: {cs['pass']}/{cs['valid']} cases within every tolerance "
                         f"({100 * cs['rate']:.0f}% < {100 * F.PASS_RATE_TARGET:.0f}%; {per})")
    assert not short, "\n".join(short)
