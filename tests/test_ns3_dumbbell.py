"""The ns-3 dumbbell (datapath/ns3/dumbbell.cc) and jaxcc.emulation.ns3 against hand-computed values.

Units: a packet is a 1500-byte IP packet (1448 TCP / 1472 UDP payload bytes); a C Mbit/s
bottleneck serialises one in 1500*8/C us; a B-byte buffer holds floor(B/1500) packets behind the
one on the wire; each flow's propagation RTT is its rtt_ms.  Every expected value below follows
from those and the flows' rates, never from an earlier run.  Skipped only when the program is not
built (``make ns3``: Debian's ns3 + libns3-dev).
"""
import json
import math
import subprocess
from pathlib import Path

import pytest

from jaxcc import scenarios
from jaxcc.emulation import ns3

pytestmark = pytest.mark.skipif(
    not ns3.available(), reason=f"{ns3.build_dir() / ns3.BINARY_NAME} not built (make ns3; needs "
                                "the Debian packages ns3 libns3-dev)")

SER_MS = lambda mbps: 1500 * 8 / (mbps * 1e3)  # noqa: E731  one packet's serialisation, ms
ACCESS_MS = 2 * 1500 * 8 / 100e9 * 1e3  # two 100 Gbit/s access hops


def run(tmp_path: Path, *args: str, name: str = "out.json") -> dict:
    out = tmp_path / name
    proc = subprocess.run([str(ns3.binary()), *args, f"--out={out}"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_udp_below_capacity_gets_its_rate_and_the_idle_path_delay(tmp_path):
    d = run(tmp_path, "--duration=10", "--rate_mbps=12", "--buffer_bytes=150000", "--flows=fixed:6,40,0,10")
    f = d["flows"][0]
    assert f["sent_packets"] == 5000                       # 6 Mbit/s of 1500-byte packets for 10 s
    assert f["max_data_ip_bytes"] == 1500
    assert f["throughput_mbps"] == pytest.approx(6.0, rel=1e-3)
    assert f["goodput_mbps"] == pytest.approx(6.0 * 1472 / 1500, rel=1e-3)
    owd = 40 / 2 + SER_MS(12) + ACCESS_MS                 # propagation + one serialisation
    assert f["owd"]["p95_ms"] == pytest.approx(owd, abs=1e-3)
    assert f["owd"]["p50_ms"] == pytest.approx(owd, abs=1e-3)
    assert f["qdelay"]["p95_ms"] == 0.0
    assert f["loss"] == 0.0 and d["link"]["loss"] == 0.0


def test_udp_at_twice_capacity_halves_and_fills_the_buffer(tmp_path):
    c, rate, buf, t = 12.0, 24.0, 150_000, 10.0
    d = run(tmp_path, f"--duration={t}", f"--rate_mbps={c}", f"--buffer_bytes={buf}", f"--flows=fixed:{rate},40,0,{t}")
    f = d["flows"][0]
    # delivered: C for T plus the buffer drained after the sender stops; the rest is dropped
    pkts = lambda mbps: mbps * 1e6 * t / 8 / 1500  # noqa: E731
    loss = 1 - (pkts(c) + buf // 1500) / pkts(rate)
    assert loss == pytest.approx(0.495)
    assert f["loss"] == pytest.approx(loss, abs=1e-3)
    assert f["queue_drops"] == f["sent_packets"] - f["owd"]["n"]
    assert f["in_network_at_end"] == 0
    assert f["random_losses"] == 0
    assert f["throughput_mbps"] == pytest.approx(c, rel=2e-3)
    bc_ms = buf * 8 / (c * 1e3)                             # B/C = 100 ms
    assert bc_ms - SER_MS(c) <= f["qdelay"]["max_ms"] <= bc_ms
    assert d["max_queue_bytes"] == pytest.approx(buf // 1500 * 1500)
    assert f["owd"]["p95_ms"] == pytest.approx(20 + bc_ms + SER_MS(c), abs=SER_MS(c))


def test_random_loss_is_binomial_and_before_the_queue(tmp_path):
    p, n = 0.02, 5000
    d = run(tmp_path, "--duration=10", "--rate_mbps=12", "--buffer_bytes=150000", f"--loss={p}",
            "--flows=fixed:6,40,0,10", "--seed=3")
    f = d["flows"][0]
    assert f["sent_packets"] == n
    sd = math.sqrt(n * p * (1 - p))
    assert abs(f["random_losses"] - n * p) <= 4.5 * sd     # 4.5 sigma: a false alarm ~1e-5
    assert f["queue_drops"] == 0
    assert f["loss"] == pytest.approx(f["random_losses"] / n)
    assert f["owd"]["n"] == n - f["random_losses"]
    # what is lost never reaches the bottleneck: the delivered packets are the rest
    assert f["throughput_mbps"] == pytest.approx(6.0 * (1 - f["loss"]), rel=1e-3)


def test_same_seed_same_output_and_seed_changes_the_losses(tmp_path):
    args = ["--duration=5", "--rate_mbps=12", "--buffer_bytes=150000", "--loss=0.05", "--flows=fixed:6,40,0,5"]
    a = run(tmp_path, *args, "--seed=1", name="a.json")
    b = run(tmp_path, *args, "--seed=1", name="b.json")
    c = run(tmp_path, *args, "--seed=2", name="c.json")
    for x in (a, b, c):
        x.pop("wall_s")
    assert a == b
    assert a["flows"][0]["random_losses"] != c["flows"][0]["random_losses"]


def test_each_flow_has_its_own_rtt(tmp_path):
    d = run(tmp_path, "--duration=5", "--rate_mbps=12", "--buffer_bytes=150000",
            "--flows=fixed:1,20,0,5;fixed:1,160,1,5")
    for f, rtt, active in zip(d["flows"], (20, 160), (5.0, 4.0)):
        # the flows' packets meet at the bottleneck now and then (one waits a packet time), so
        # the median, not the tail, is the idle path
        assert f["owd"]["min_ms"] == pytest.approx(rtt / 2 + SER_MS(12) + ACCESS_MS, abs=1e-3)
        assert f["owd"]["p50_ms"] == pytest.approx(rtt / 2 + SER_MS(12) + ACCESS_MS, abs=1e-3)
        assert f["owd"]["max_ms"] <= rtt / 2 + 2 * SER_MS(12) + ACCESS_MS + 1e-6
        n = math.ceil(active * 1e6 / 8 / 1500)             # packets at k * 12 ms from start, k < n
        assert f["sent_packets"] == n
        assert f["throughput_mbps"] == pytest.approx(n * 1500 * 8 / active / 1e6, rel=1e-9)


def test_lone_newreno_fills_a_link_with_a_two_bdp_buffer(tmp_path):
    # 20 Mbit/s, 40 ms: BDP 100 kB; 200 kB buffer.  After slow start NewReno never lets the queue
    # empty (a halved window is still >= BDP), so the link is busy but for the start-up.
    c = 20.0
    d = run(tmp_path, "--duration=20", f"--rate_mbps={c}", "--buffer_bytes=200000", "--flows=reno,40,0,20")
    f = d["flows"][0]
    assert f["ns3_type"] == "TcpNewReno" and f["max_data_ip_bytes"] == 1500
    assert 0.96 * c <= f["throughput_mbps"] <= c * 1.001
    assert f["goodput_mbps"] == pytest.approx(f["throughput_mbps"] * 1448 / 1500)
    assert f["queue_drops"] > 0 and f["random_losses"] == 0  # the window grows until the buffer overflows
    assert f["qdelay"]["max_ms"] <= 200_000 * 8 / (c * 1e3)  # never more than B/C
    assert f["owd"]["min_ms"] >= 20 + SER_MS(c)


@pytest.mark.parametrize("args, field", [
    (["--rate_mbps=10", "--buffer_bytes=1e5", "--flows=reno,40,0,5"], "--duration"),
    (["--duration=5", "--buffer_bytes=1e5", "--flows=reno,40,0,5"], "--rate_mbps"),
    (["--duration=5", "--rate_mbps=10", "--buffer_bytes=100", "--flows=reno,40,0,5"], "--buffer_bytes"),
    (["--duration=5", "--rate_mbps=10", "--buffer_bytes=1e5", "--loss=1", "--flows=reno,40,0,5"], "--loss"),
    (["--duration=5", "--rate_mbps=10", "--buffer_bytes=1e5", "--flows=vegas,40,0,5"], "--flows[0].controller"),
    (["--duration=5", "--rate_mbps=10", "--buffer_bytes=1e5", "--flows=reno,40,3,2"], "--flows[0].stop_s"),
    (["--duration=5", "--schedule=1:10", "--buffer_bytes=1e5", "--flows=reno,40,0,5"], "--schedule[0].t_s"),
    (["--duration=5", "--rate_mbps=10", "--buffer_bytes=1e5", "--flows=reno,40,0,5", "--speed=3"], "--speed"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, field):
    proc = subprocess.run([str(ns3.binary()), *args, f"--out={tmp_path / 'x.json'}"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], proc.stderr


def _spec(link: dict, flows: list[dict], duration: float) -> scenarios.Scenario:
    return scenarios.parse_scenario({"name": "t", "duration_s": duration, "link": link, "flows": flows})


def test_run_scenario_record_schedule_and_jain(tmp_path):
    # Two UDP flows at 2 and 6 Mbit/s on a 20 Mbit/s link: Jain = 8^2 / (2 (2^2 + 6^2)) = 0.8.
    # Flow 1 starts 1 ms late: its packets then reach the bottleneck an odd number of ms away
    # from flow 0's (every 6 and 2 ms), more than one packet time (0.6 ms) apart: nobody queues.
    sc = _spec({"bandwidth_mbps": 20, "buffer_bytes": 100_000},
               [{"rtt_ms": 40, "controller": "fixed:2"},
                {"rtt_ms": 80, "start_s": 0.001, "controller": "fixed:6"}], 25.0)
    rec = ns3.run_scenario(sc, ["fixed:2", "fixed:6"], tmp_path / "a")
    assert rec["jain"] == pytest.approx(0.8, abs=1e-3)
    assert rec["jain_window_s"] == [5.0, 25.0]
    assert rec["throughput_mbps"] == pytest.approx(8.0, rel=2e-3)
    assert rec["utilization"] == pytest.approx(0.4, rel=2e-3)
    assert rec["controller"] == "fixed:2+fixed:6" and rec["emulator"] == "ns-3.37"
    assert rec["loss"] == 0.0 and rec["ankh"] is None
    assert [f["p95_owd_ms"] for f in rec["per_flow"]] == pytest.approx([20 + SER_MS(20), 40 + SER_MS(20)], abs=0.01)
    assert rec["p95_qdelay_ms"] == 0.0
    # the link's p95 over all packets: 3/4 of them are flow 1's, at 40 ms + serialisation
    assert rec["p95_owd_ms"] == pytest.approx(40 + SER_MS(20), abs=0.01)
    assert rec["p50_owd_ms"] == pytest.approx(40 + SER_MS(20), abs=0.01)
    assert (tmp_path / "a" / "ns3_raw.json").is_file() and (tmp_path / "a" / "record.json").is_file()

    # A step schedule 10 -> 20 Mbit/s at 5 s under a 30 Mbit/s UDP flow: each half gets its capacity.
    sc = _spec({"schedule": [[0, 10], [5, 20]], "buffer_bytes": 30_000}, [{"rtt_ms": 20, "controller": "fixed:30"}], 10.0)
    rec = ns3.run_scenario(sc, ["fixed:30"], tmp_path / "b")
    assert rec["capacity_mbps"] == pytest.approx(15.0)
    assert rec["throughput_mbps"] == pytest.approx(15.0, rel=5e-3)
    series = rec["per_flow"][0]["series"]
    assert [m for t, m in series if 1 < t <= 4.5] == pytest.approx([10.0] * 7, rel=1e-2)
    assert [m for t, m in series if 6 < t <= 10] == pytest.approx([20.0] * 8, rel=1e-2)
    assert rec["jain"] == 1.0 and rec["jain_note"] == "single flow"


def test_run_scenario_refuses_what_it_cannot_run(tmp_path):
    sc = _spec({"bandwidth_mbps": 10, "buffer_bytes": 50_000}, [{"rtt_ms": 40, "controller": "bbr"}], 5.0)
    with pytest.raises(ValueError, match=r"t.flows\[0\].controller: 'copa' has no ns-3 sender"):
        ns3.run_scenario(sc, ["copa"], tmp_path)
    with pytest.raises(ValueError, match="1 flows"):
        ns3.run_scenario(sc, ["reno", "reno"], tmp_path)
    pois = _spec({"poisson": {"mean_mbps": 10, "slot_ms": 10}, "buffer_bytes": 50_000},
                 [{"rtt_ms": 40, "controller": "bbr"}], 5.0)
    with pytest.raises(ValueError, match=r"t.link.poisson"):
        ns3.run_scenario(pois, ["reno"], tmp_path)
    jit = _spec({"bandwidth_mbps": 10, "buffer_bytes": 50_000, "jitter_ms": 5},
                [{"rtt_ms": 40, "controller": "reno"}], 5.0)
    with pytest.raises(ValueError, match=r"t.link.jitter_ms: not modelled by the ns-3 reference"):
        ns3.run_scenario(jit, ["reno"], tmp_path)


@pytest.mark.parametrize("ctrl, ns3_type", [("cubic", "TcpCubic"), ("bbr", "TcpBbr")])
def test_cubic_and_bbr_alone_fill_a_link_with_a_two_bdp_buffer(tmp_path, ctrl, ns3_type):
    # one flow, no random loss, buffer 2 BDP: the region where ns-3.37's CUBIC and BBR are credible
    c, buf = 20.0, 200_000
    d = run(tmp_path, "--duration=10", f"--rate_mbps={c}", f"--buffer_bytes={buf}", f"--flows={ctrl},40,0,10")
    f = d["flows"][0]
    assert f["ns3_type"] == ns3_type and f["max_data_ip_bytes"] == 1500
    assert 0.9 * c <= f["throughput_mbps"] <= c * 1.001
    assert f["qdelay"]["max_ms"] <= buf * 8 / (c * 1e3)
    # every data packet sent is delivered, dropped, or (sent while the socket drained after
    # stop_s) still in the network when the run ends
    assert f["sent_packets"] == f["owd"]["n"] + f["queue_drops"] + f["random_losses"] + f["in_network_at_end"]
    assert f["in_network_at_end"] <= (c * 1e6 / 8 * 0.04 + buf) / 1500   # at most BDP + buffer
