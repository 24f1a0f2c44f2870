"""launch/deepcc_ceiling.py: its clean links, the tail rate it reports, its refusals, and one
run of a DeepCC file that cannot exceed its link."""

from __future__ import annotations

from pathlib import Path

import pytest

import launch_script

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ceiling():
    return launch_script.load("deepcc_ceiling")


def test_links_are_clean_two_bdp_links_at_the_goal(ceiling):
    scs = ceiling.links([1.0, 0.0, 0.0])
    assert [sc.name for sc in scs] == [f"clean{c}_rtt{r}" for c in (5, 20, 50, 90) for r in (100, 400)]
    d = {sc.name: sc.to_dict() for sc in scs}["clean50_rtt100"]
    assert d["link"]["buffer_bytes"] == pytest.approx(2 * 50e6 / 8 * 0.1)  # 2 BDPs: 1.25 MB
    assert d["link"]["schedule"] == [[0.0, 50.0]] and d["link"]["loss"] == 0.0
    assert d["flows"][0]["goal"] == [1.0, 0.0, 0.0] and d["duration_s"] == 40.0


def test_tail_rate_is_the_median_of_the_last_ten_seconds(ceiling):
    t = [0.5 * i for i in range(81)]  # 0 .. 40 s
    thr = [[1.0] if x < 30.0 else [7.0 + (x == 35.0)] for x in t]
    assert ceiling.tail_rate({"t": t, "throughput_mbps": thr}) == 7.0


@pytest.mark.parametrize("arg, msg", [("--goal=1,0", "three weights"), ("--goal=0.5,0.6,0", "three weights"),
                                      ("--goal=a,b,c", "three weights"), ("--bogus=1", "unknown flag"),
                                      ("--goal=1,0,0", "x.safetensors: no such policy file")])
def test_bad_input_gets_one_line(ceiling, capsys, arg, msg):
    assert ceiling.main(["deepcc_ceiling.py", "x.safetensors", arg]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_the_shipped_file_never_exceeds_its_link(ceiling):
    """Delivery is bounded by the link: every tail rate is at most the capacity (share <= 1), and the
    shipped file fills the 5 Mbit/s links at a throughput-only goal (checkpoints/deepcc/README.md)."""
    f = str(REPO / "checkpoints" / "deepcc" / "deepcc.safetensors")
    res = ceiling.measure([f], [1.0, 0.0, 0.0])[f]
    assert len(res) == 8
    assert all(0.0 < r["share"] <= 1.0 + 1e-6 for r in res.values())
    assert res["clean5_rtt100"]["share"] > 0.8
