"""Mahimahi trace reading and capacity schedules, against hand-computed values."""

import numpy as np
import pytest

from jaxcc import units
from jaxcc.sim import links
from jaxcc.sim.trace import find_trace, read_mahimahi


def write(tmp_path, text, name="t.trace"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_single_line_trace_is_12_mbps(tmp_path):
    # traces/README: a file holding only "1" is one 1500-byte packet per ms = 12 Mbit/s.
    sched = links.from_trace(write(tmp_path, "1\n"))
    assert sched.period == pytest.approx(0.001)
    np.testing.assert_allclose(sched.rates, [12e6 / 8])


def test_trace_bins_count_opportunities(tmp_path):
    # Period 20 ms; bin 10 ms.  Opportunities at 3, 3, 7 (bin 0) and 12 (bin 1); the final
    # timestamp 20 is time 0 of the next lap, so it counts in bin 0 as well: 4 packets in bin 0.
    sched = links.from_trace(write(tmp_path, "3\n3\n7\n12\n20\n"), bin_ms=10)
    np.testing.assert_allclose(sched.times, [0.0, 0.01])
    np.testing.assert_allclose(sched.rates, [4 * 1500 / 0.01, 1 * 1500 / 0.01])
    assert sched.period == pytest.approx(0.02)
    _, per = sched.cumulative()
    assert per == pytest.approx(5 * 1500)  # five opportunities per lap


@pytest.mark.parametrize("text,line,what", [
    ("1\n2\nabc\n", 3, "integer"),
    ("5\n4\n", 2, "smaller than the previous"),
    ("1\n-3\n", 2, "negative"),
    ("1.5\n", 1, "integer"),
])
def test_malformed_trace_names_file_and_line(tmp_path, text, line, what):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=rf"{path}:{line}: .*{what}"):
        read_mahimahi(path)


def test_empty_or_missing_trace(tmp_path):
    path = write(tmp_path, "\n\n")
    with pytest.raises(ValueError, match="empty"):
        read_mahimahi(path)
    with pytest.raises(ValueError, match="does not exist"):
        read_mahimahi(str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="period"):
        read_mahimahi(write(tmp_path, "0\n0\n", "zero"))


def test_alternating_and_steps():
    s = links.alternating(10, 30, 5, 30)
    np.testing.assert_allclose(s.times, [0, 5, 10, 15, 20, 25])
    np.testing.assert_allclose(s.rates / units.MBPS, [10, 30, 10, 30, 10, 30])
    assert s.mean_rate(30) / units.MBPS == pytest.approx(20, rel=1e-3)
    with pytest.raises(ValueError, match="start at 0"):
        links.steps([[1, 10]])
    with pytest.raises(ValueError, match="increasing"):
        links.steps([[0, 10], [0, 20]])


def test_ring_len_covers_rtt_plus_full_buffer():
    # 12 Mbit/s, 375 KB buffer: full-buffer wait 250 ms (+2 MSS); RTT 40 ms; dt = 5 ms.
    n = links.ring_len_for(links.constant(12), 375_000, [0.04], 0.005)
    need = (0.04 + (375_000 + 3000) / 1.5e6) / 0.005
    assert n >= need and n % 8 == 0 and n < need + 12
    assert links.ring_len_for(links.constant(1), 1e9, [0.04], 0.005, max_ring=512) == 512


@pytest.mark.parametrize("name,lines", [("Verizon-LTE-short.up", 69_367), ("Verizon-LTE-short.down", 58_655)])
def test_shipped_traces_keep_every_opportunity(name, lines):
    # jaxcc/traces: both files end at 140000 ms, so one lap is 140 s; binning must keep all of a
    # lap's opportunities (the last line is time 0 of the next lap, still in the lap's count).
    sched = links.from_trace(find_trace(name))
    assert sched.period == pytest.approx(140.0)
    _, per = sched.cumulative()
    assert per == pytest.approx(lines * 1500, rel=1e-12)
