"""The simulator against the Linux kernel's TCP over the netns harness, sized for CI.

``CI_CASES`` random links per controller (``jaxcc.fidelity.draw_cases``, seed ``SEED``): in-sim
``cubic``, ``reno``, ``bbr`` against ``kernel:cubic``, ``kernel:reno``, ``kernel:bbr`` (iperf3),
constant rates against ``udp_probe``, each case run ``REPEATS`` times on the kernel.  Every case
asserts every metric (link throughput 5%, p95 one-way delay 15% or 5 ms, loss 1 pp, Jain 0.05
with two or more flows).  The kernel's TCP is not repeatable (the same case gave Jain 0.76 and
0.88, loss 1.6% and 2.1% in two runs), so a metric counts as a regression only when it misses
against every kernel run and no recorded run missed it: ``tests/fidelity_misses.json``, key
``kernel``, holds the misses of the recorded runs (``python -m jaxcc.fidelity --reference=kernel
--cases=3 --seed=0 --repeats=2 --out=DIR --record=tests/fidelity_misses.json --record-merge``);
a case with recorded misses is an expected failure that names them.  Two misses come from other
runs than that command: ``fid-kernel-reno-s0-0``'s loss (kernel 2.51% and 2.70% in CI
on 2026-11-24, sim 3.79%; 3.40-3.98% in four runs here, so the model is inside the kernel's
spread only part of the time) and ``fid-kernel-cubic-s0-0``'s Jain, from one run of that
case in a fresh-clone ``make test`` on 2026-11-28 (five CUBIC flows on 4.18 Mbit/s:
kernel 0.886, sim 0.960, where both recorded runs were within 0.05: the window-based flows'
shares, the model's known miss, inside the kernel's run-to-run spread).  A run the emulator's
self-check marks invalid is re-run once and, if still invalid, skipped as invalid (neither pass nor
fail).  ``test_pass_rates`` prints the table and the pass rates per controller and metric (against
the median of the runs), asserts that known limitations cover at most 10% of the cases and that
most runs were valid, and reports the 90% target as an expected failure, with the numbers, for
every controller that misses it.

About 25 s per run (20-25 s of link time plus setup): 12 cases x 2 runs, about 11 minutes, all
in ``make test-full``.  The fast tier (``make test``) checks only that the record belongs to this
sweep: a kernel case costs 25-30 s of its real-time part, which runs alone, and the kernel's
TCP runs there in hand-checked tests instead (CUBIC filling a link in ``tests/test_emulate.py``,
BBR as cross traffic in ``tests/test_online_net.py``).  The longer command: ``python -m jaxcc.fidelity
--reference=kernel --cases=20 --out=DIR``.
Needs root and network namespaces (skips, saying so, without them); the tools it needs
(iperf3, nfq_delay, udp_probe) are part of ``make test``'s setup, so their absence fails.
"""

from __future__ import annotations

import json
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
REPEATS = 2
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
pytestmark = [pytest.mark.emulation, pytest.mark.skipif(SKIP is not None, reason=str(SKIP))]
CASES = F.draw_cases(CONTROLLERS, CI_CASES, SEED, "kernel")
RECORD_FILE = Path(__file__).with_name("fidelity_misses.json")
RECORD = json.loads(RECORD_FILE.read_text())["kernel"]


def test_the_record_is_of_this_sweep():
    assert (RECORD["seed"], RECORD["cases_per_controller"], RECORD["controllers"]) == (SEED, CI_CASES, CONTROLLERS)
    assert set(RECORD["misses"]) <= {c.name for c in CASES}


def _sweep(n: int, repeats: int, out: Path, controllers=CONTROLLERS) -> dict:
    if not (host.TOOLS_BUILD / "nfq_delay").exists() or not (host.TOOLS_BUILD / "udp_probe").exists():
        subprocess.run(["bash", str(host.REPO / "datapath" / "tools" / "build.sh")], check=True, capture_output=True)
    report = F.run_sweep("kernel", controllers, n, SEED, out, repeats=repeats)
    report["by_case"] = {v["case"]: v for v in report["verdicts"]}
    return report


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    # JAXCC_FIDELITY_OUT=DIR keeps the sweep in DIR/kernel (fidelity.json, and fidelity.md: the table
    # docs/fidelity.md carries); the two sweeps of a make test-full run do not overwrite each other.
    keep = os.environ.get("JAXCC_FIDELITY_OUT")
    out = Path(keep) / "kernel" if keep else tmp_path_factory.mktemp("fidelity_kernel")
    report = _sweep(CI_CASES, REPEATS, out)
    if keep:
        F.write_pass_rate_table(report, "kernel", out, f"python3 -m jaxcc.fidelity --reference=kernel "
                                f"--cases={CI_CASES} --seed={SEED} --repeats={REPEATS}")
    return report


def _matches_the_record(v: dict, name: str) -> None:
    if v["verdict"] == "invalid":
        pytest.skip(f"{name}: the emulator's delay self-check marked the run and its re-run invalid "
                    f"(counted as invalid in test_pass_rates)")
    recorded = RECORD["misses"].get(name, {})
    robust = set.intersection(*F.per_run_misses(v))  # missed against every kernel run
    new = [f"{m}: sim {F.fmt_metric(m, c['sim'])} vs kernel {F.fmt_metric(m, c['ref'])} (runs "
           f"{', '.join(F.fmt_metric(m, x) for x in c.get('ref_runs', [c['ref']]))}; bound {c['bound']})"
           for m, c in v["checks"].items() if m in robust and m not in recorded]
    assert not new, f"{name} ({F.describe(v['params'])}): outside the tolerances, not recorded:\n  " + "\n  ".join(new)
    if recorded:
        pytest.xfail(f"{name}: model misses the kernel (recorded): " + "; ".join(
            f"{m} sim {F.fmt_metric(m, c['sim'])} vs kernel {F.fmt_metric(m, c['ref'])}" for m, c in recorded.items()))


@pytest.mark.full
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_the_kernel(sweep, name):
    _matches_the_record(sweep["by_case"][name], name)


@pytest.mark.full
def test_pass_rates(sweep, capsys):
    with capsys.disabled():
        print()
        print(F.format_cases(sweep["verdicts"], "kernel"))
        print(F.format_pass_rates(sweep["pass_rates"], "kernel"))
        print(f"known limitations: {sweep['limitation_counts']} ({100 * sweep['limited_fraction']:.0f}% of cases)")
    assert sweep["limited_fraction"] <= F.MAX_LIMITED_FRACTION
    too_few_valid, short = F.short_of_target(sweep["pass_rates"])
    assert not too_few_valid, "\n".join(too_few_valid)
    if short:
        pytest.xfail("the 90% target is missed (README, Fidelity):\n" + "\n".join(short))
