"""Tests of the emulated-link harness (jaxcc/emulate.py).

The pure helpers (trace binning, schedules, tbf sizing, spec checks) run everywhere. The tests
marked ``emulation`` build real network namespaces and need root, iproute2, iptables, ethtool,
iperf3 and the nfq_delay tool (datapath/tools/build.sh, libnetfilter-queue-dev); they skip
with the reason when something is missing. Select or drop them with ``-m emulation`` /
``-m "not emulation"``. Wall time of the emulation tests: about a minute.

Reference link (as in ../shared/EMULATION.md): 12 Mbit/s, 20 ms each way, 375 KB buffer.
Expected physics, with 1500-byte IP packets (1472-byte UDP payloads):
  * fixed 6 Mbit/s: no queue, RTT = 40 ms (+~1 ms serialisation), goodput 6*1472/1500.
  * fixed 15 Mbit/s: the queue fills and stays full: RTT = 40 + 375000*8/12e6 = 290 ms;
    goodput = 12*1472/1500 = 11.78 Mbit/s (reported over the sending time T, so the 0.25 s
    queue drain after the stop adds (T+0.25)/T); over T seconds the loss is
    1 - (12*T + 0.375*8) / (15*T) (about 18% at T = 8 s, 20% in the long run).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxcc import emulate

REPO = Path(__file__).resolve().parent.parent

LINK = {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0}


def _spec(name, controller, duration=8.0, link=None, flows=None):
    return emulate.normalize_spec({
        "name": name, "duration_s": duration, "link": dict(link or LINK),
        "flows": flows or [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": duration,
                            "controller": controller}]})


# ----------------------------------------------------------------------------- pure helpers

def test_trace_to_schedule_bins_and_loops():
    # one opportunity per ms = 12 Mbit/s; the 10-ms trace loops
    ts = list(range(1, 11))
    sched = emulate.trace_to_schedule(ts, duration_s=0.5, bin_s=0.1)
    assert len(sched) == 5
    assert all(abs(r - 12.0) <= 0.12 for _, r in sched)  # the first ms of a lap is empty


def test_trace_step_schedule(tmp_path):
    ts = [t for t in range(2, 1001, 2)] + [t for t in range(1001, 2001) for _ in range(2)]
    p = tmp_path / "step.trace"
    p.write_text("\n".join(map(str, ts)) + "\n")
    sched = emulate.bandwidth_schedule({"trace": str(p)}, duration_s=2.0, trace_bin_s=0.1)
    assert sched[0] == (0.0, pytest.approx(6.0, rel=0.03))
    assert any(abs(t - 1.0) < 1e-9 and abs(r - 24.0) < 0.2 for t, r in sched)


def test_fine_schedule_is_averaged_per_bin():
    link = {"schedule": [[i * 0.01, 10.0 if i % 2 else 20.0] for i in range(100)]}
    sched = emulate.bandwidth_schedule(link, duration_s=1.0, trace_bin_s=0.1)
    assert sched == [(0.0, pytest.approx(15.0))]


def test_tbf_args_count_ethernet_frames():
    a = emulate.tbf_args(12.0, 375000)
    rate = int(a[a.index("rate") + 1].rstrip("bit"))
    limit = int(a[a.index("limit") + 1])
    assert rate == int(12e6 * 1514 / 1500)
    assert limit == int(375000 * 1514 / 1500)
    assert int(a[a.index("burst") + 1]) >= 2 * 1514


def test_spec_errors_are_clear():
    with pytest.raises(emulate.EmulationError, match="exactly one"):
        emulate.normalize_spec({"name": "x", "duration_s": 1, "link": {"buffer_bytes": 3000},
                                "flows": [{"rtt_ms": 10}]})
    with pytest.raises(emulate.EmulationError, match="start_s"):
        _spec("x", "fixed:1", duration=5, flows=[{"rtt_ms": 10, "start_s": 4, "stop_s": 2}])


def test_assign_controllers_keeps_kernel_cross_traffic():
    spec = _spec("x", "bbr", flows=[{"rtt_ms": 40, "controller": "bbr"},
                                    {"rtt_ms": 40, "controller": "kernel:cubic"}])
    assert emulate.assign_controllers(spec, "fixed:5") == ["fixed:5", "kernel:cubic"]
    assert emulate.assign_controllers(spec, None) == ["bbr", "kernel:cubic"]


# ----------------------------------------------------------------------------- real links

def _emulation_skip_reason() -> str | None:
    if sys.platform != "linux":
        return "emulation needs Linux network namespaces"
    if os.geteuid() != 0:
        return "emulation needs root (network namespaces, tc, iptables)"
    if not (emulate.TOOLS_BUILD / "nfq_delay").exists() and \
            Path("/usr/include/libnetfilter_queue/libnetfilter_queue.h").exists():
        subprocess.run([str(REPO / "datapath" / "tools" / "build.sh")], capture_output=True)
    problems = emulate.missing_requirements(need_iperf3=True)
    if not (emulate.TOOLS_BUILD / "udp_probe").exists():
        problems.append("udp_probe not built: run datapath/tools/build.sh")
    return "; ".join(problems) if problems else None


needs_emulation = [pytest.mark.emulation,
                   pytest.mark.skipif(_emulation_skip_reason() is not None,
                                      reason=str(_emulation_skip_reason()))]


def _apply(marks):
    def deco(f):
        for m in reversed(marks):
            f = m(f)
        return f
    return deco


@pytest.fixture(scope="module")
def prefix():
    p = "jxet" + os.urandom(2).hex()
    yield p
    emulate.cleanup_leftovers(p)


def _run(spec, tmp_path, prefix, impl="auto", tag="r"):
    ctrls = emulate.assign_controllers(spec, None)
    rec = emulate.Runner(spec, ctrls, tmp_path / tag, prefix=prefix, impl=impl).run()
    assert emulate.list_leftovers(prefix) == {"namespaces": [], "links": []}
    return rec


@_apply(needs_emulation)
def test_fixed_rate_below_and_above_capacity(tmp_path, prefix):
    T = 8.0
    lo = _run(_spec("fixed6", "fixed:6", T), tmp_path, prefix, impl="probe", tag="lo")
    f = lo["per_flow"][0]
    assert lo["idle_rtt_ms"]["avg_ms"] == pytest.approx(40.5, abs=3.0)
    assert f["throughput_mbps"] == pytest.approx(6 * 1472 / 1500, rel=0.03)
    assert f["p50_rtt_ms"] == pytest.approx(41.0, abs=3.0)
    assert f["loss"] < 0.005

    hi = _run(_spec("fixed15", "fixed:15", T), tmp_path, prefix, impl="probe", tag="hi")
    f = hi["per_flow"][0]
    # goodput = acked bytes / sending time; the full queue (0.25 s) drains after the stop
    assert f["throughput_mbps"] == pytest.approx(12 * 1472 / 1500 * (T + 0.25) / T, rel=0.04)
    assert f["p50_rtt_ms"] == pytest.approx(290.0, abs=15.0)
    expected_loss = 1 - (12 * T + 0.375 * 8) / (15 * T)
    assert f["loss"] == pytest.approx(expected_loss, abs=0.03)
    assert hi["utilization"] > 0.9


@_apply(needs_emulation)
def test_kernel_cubic_fills_the_link(tmp_path, prefix):
    rec = _run(_spec("cubic", "kernel:cubic", 8.0), tmp_path, prefix)
    f = rec["per_flow"][0]
    assert f["client_rc"] == 0, f
    # TCP payload on 1500-byte packets: 12*1448/1500 = 11.58 Mbit/s at most; slow start
    # and the first queue fill cost a little of 8 s.
    assert f["throughput_mbps"] > 0.8 * 11.58


@_apply(needs_emulation)
def test_exported_policy_runs_and_exits_cleanly(tmp_path, prefix):
    if emulate.sender_binary() is None or emulate.receiver_binary() is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    policyfile = pytest.importorskip("jaxcc.policyfile")
    spec_p, tensors = policyfile.make_random_policy("mlp", 0)   # Aurora-shaped MLP
    path = tmp_path / "random.safetensors"
    policyfile.save(path, spec_p, tensors)
    rec = _run(_spec("policy", f"policy:{path}", 10.0), tmp_path, prefix, tag="pol")
    f = rec["per_flow"][0]
    err = (tmp_path / "pol" / "flow0" / "sender.stderr").read_text()
    if f["client_rc"] == 2 and "not implemented in the datapath" in err:
        pytest.skip(f"datapath cannot run this policy yet: {err.strip()}")
    assert f["client_rc"] == 0 and f["server_rc"] == 0, (f, err)
    assert f["throughput_mbps"] > 0
    assert 0.0 <= f["loss"] <= 1.0


@pytest.mark.slow
@_apply(needs_emulation)
@pytest.mark.parametrize("policy,features", [("checkpoints/aurora/aurora.safetensors", "aurora_v1"),
                                             ("checkpoints/eagle/eagle.safetensors", "eagle_v1")])
def test_shipped_policy_runs_in_the_datapath(tmp_path, prefix, policy, features):
    """The shipped Aurora and Eagle policies drive a real flow on the reference link for a few
    seconds: the sender computes their features (no exit 2), decides every MI and reports sane
    figures (it may not fill the link this early: Eagle starts at 300 kbit/s)."""
    if emulate.sender_binary() is None or emulate.receiver_binary() is None:
        pytest.skip("datapath not built (datapath/build.sh)")
    T = 6.0
    rec = _run(_spec("shipped", f"policy:{REPO / policy}", T), tmp_path, prefix, tag=features)
    f = rec["per_flow"][0]
    err = (tmp_path / features / "flow0" / "sender.stderr").read_text()
    assert f["client_rc"] == 0 and f["server_rc"] == 0, (f, err)
    s = f["sender_summary"]
    assert s["policy"]["features"] == features
    # One decision per MI (Aurora: 1/2 RTT, Eagle: 3 RTTs of about 40 ms) over T seconds.
    mi_s = {"aurora_v1": 0.02, "eagle_v1": 0.12}[features]
    assert 0.5 * T / mi_s < s["decisions"] <= 1.2 * T / mi_s, s
    # Alive and below the link.  Not a quality bar: an Eagle flow whose first MI carries a spurious
    # delay sample can hold ~0.5 Mbit/s for good (checkpoints/eagle/README.md, "a known weakness").
    assert 0.2 < f["throughput_mbps"] <= 12.0 * 1.05, f
    assert 0.0 <= f["loss"] < 0.05, f
    # p95 one-way delay: the 20 ms propagation plus at most the 375 KB buffer (250 ms).
    assert 19.0 < f["p95_owd_ms"] < 20.0 + 250.0 + 10.0, f


@_apply(needs_emulation)
def test_sigterm_cleans_up(tmp_path):
    p = "jxek" + os.urandom(2).hex()
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({
        "name": "sigterm", "duration_s": 20,
        "link": {"bandwidth_mbps": 12, "buffer_bytes": 100000, "loss": 0.01},
        "flows": [{"rtt_ms": 40, "start_s": 0, "stop_s": 20, "controller": "kernel:cubic"}]}))
    proc = subprocess.Popen([sys.executable, "-m", "jaxcc.emulate", f"--scenario-file={spec}",
                             f"--out={tmp_path / 'o'}", f"--prefix={p}", "--no-ping",
                             "--no-plots"], cwd=REPO, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(emulate.list_leftovers(p)["namespaces"]) < 3:
        time.sleep(0.1)
    assert len(emulate.list_leftovers(p)["namespaces"]) == 3
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert emulate.list_leftovers(p) == {"namespaces": [], "links": []}
    # and nothing of ours still runs
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert p not in ps


@_apply(needs_emulation)
def test_cleanup_command_removes_leftovers():
    p = "jxec" + os.urandom(2).hex()
    subprocess.run(["ip", "netns", "add", f"{p}-snd"], check=True)
    out = subprocess.run([sys.executable, "-m", "jaxcc.emulate", "--cleanup", f"--prefix={p}"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert f"{p}-snd" in out
    assert emulate.list_leftovers(p)["namespaces"] == []


def test_missing_tool_is_named(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    problems = emulate.missing_requirements(need_iperf3=True)
    text = " ".join(problems)
    assert "apt-get install iptables" in text and "apt-get install iperf3" in text
