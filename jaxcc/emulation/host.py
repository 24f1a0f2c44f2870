"""What the emulation needs from the host: root, tools, the built binaries; running commands.

Every other module of ``jaxcc.emulation`` raises ``EmulationError`` (defined here) for a
precondition that is not met, with the fix in the message (the Debian package, the build script).
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
TOOLS_BUILD = REPO / "datapath" / "tools" / "build"
# JAXCC_DATAPATH_BUILD names another build folder of jaxcc-sender / jaxcc-receiver (as for
# launch/mahimahi_run.sh), e.g. a shared build when this checkout has none.
DATAPATH_BUILD = Path(os.environ.get("JAXCC_DATAPATH_BUILD") or REPO / "datapath" / "build")

# tool -> Debian package, for the error message when it is missing
REQUIRED_TOOLS = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables",
                  "ethtool": "ethtool", "chrt": "util-linux", "stdbuf": "coreutils"}


class EmulationError(RuntimeError):
    """A precondition of the harness is not met (root, tools, binaries, scenario)."""


def missing_requirements(need_iperf3: bool = False) -> list[str]:
    """Returns human-readable reasons the harness cannot run here (empty if it can)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, tc, iptables)")
    tools = dict(REQUIRED_TOOLS)
    if need_iperf3:
        tools["iperf3"] = "iperf3"
    for tool, pkg in tools.items():
        if shutil.which(tool) is None:
            problems.append(f"'{tool}' not found: apt-get install {pkg}")
    if not (TOOLS_BUILD / "nfq_delay").exists():
        problems.append(f"{TOOLS_BUILD / 'nfq_delay'} not built: run datapath/tools/build.sh "
                        "(needs apt-get install libnetfilter-queue-dev)")
    return problems


def check_requirements(need_iperf3: bool = False) -> None:
    """Raises EmulationError listing every missing requirement."""
    problems = missing_requirements(need_iperf3)
    if problems:
        raise EmulationError("cannot run the emulation:\n  " + "\n  ".join(problems))


@functools.lru_cache(maxsize=None)
def realtime_allowed() -> bool:
    """Whether this host lets us run a command at SCHED_FIFO (``chrt -f 1 true``; root in a
    container without CAP_SYS_NICE may not). Checked once per process."""
    try:
        return subprocess.run(["chrt", "-f", "1", "true"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def sender_binary() -> Path | None:
    """datapath/build/jaxcc-sender, or None when the datapath is not built."""
    p = DATAPATH_BUILD / "jaxcc-sender"
    return p if p.exists() else None


def receiver_binary() -> Path | None:
    """datapath/build/jaxcc-receiver, or None when the datapath is not built."""
    p = DATAPATH_BUILD / "jaxcc-receiver"
    return p if p.exists() else None


def run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    """Runs cmd to completion (text output captured); EmulationError on failure when check."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise EmulationError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def terminate(p: subprocess.Popen, timeout: float = 3.0) -> None:
    """SIGTERM, then SIGKILL, to the process group of p (started with start_new_session)."""
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=timeout)


UDP_PORT_BASE = 9000          # flow i uses UDP port 9000+i (jaxcc-sender, udp_probe)
TCP_PORT_BASE = 5201          # flow i uses iperf3 port 5201+i (kernel:* flows)
