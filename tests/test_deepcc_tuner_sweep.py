"""launch/deepcc_tuner_sweep.py: its link sets (the six the p95 tuner was chosen on, and the
cellular-like outage links), built from the trace file independently here, and its refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import launch_script

REPO = Path(__file__).resolve().parent.parent
JUDGED = {"deepcc/wifi", "deepcc/cellular", "deepcc/satellite", "deepcc-heldout/sampler777"}


@pytest.fixture(scope="module")
def sweep():
    return launch_script.load("deepcc_tuner_sweep")


def test_six_links_are_the_ones_the_p95_tuner_was_chosen_on(sweep):
    names = [sc.name for sc in sweep.links()]
    assert names == ["clean/2.64mbps-176ms-130pkt", "clean/12mbps-40ms-1bdp",
                     "train/0-2.4mbps-212ms-231pkt-loss0.0070", "train/1-11.0mbps-421ms-1211pkt-loss0.0004",
                     "train/2-8.4mbps-603ms-254pkt-loss0.0011", "train/3-19.2mbps-164ms-207pkt-loss0.0049"]


def test_outage_links_are_verizon_slices_dark_for_three_to_ten_seconds(sweep):
    scs = sweep.links(("outage",))
    assert len(scs) == 4 and not {sc.name for sc in scs} & JUDGED
    traces = {}
    for name in ("down", "up"):
        ms = np.loadtxt(REPO / "jaxcc" / "traces" / f"Verizon-LTE-short.{name}")
        # 1500-byte opportunities counted per 100 ms, as Mbit/s
        traces[name] = np.histogram(ms, bins=np.arange(0, ms.max() + 200, 100))[0] * 1500 * 8 / 0.1 / 1e6
    for sc in scs:
        d = sc.to_dict()
        assert d["duration_s"] == 60.0 and len(d["flows"]) == 1
        assert 100.0 <= d["flows"][0]["rtt_ms"] <= 800.0 and 0.0 <= d["link"]["loss"] <= 0.01
        sched = np.asarray(d["link"]["schedule"], float)
        assert len(sched) == 600 and np.allclose(sched[:, 0], np.arange(600) / 10)
        # the outage: the longest stretch of dark bins (the trace has a few empty 100-ms bins of its own)
        dark = np.flatnonzero(sched[:, 1] == sweep.OUTAGE_MBPS)
        run = max(np.split(dark, np.flatnonzero(np.diff(dark) > 1) + 1), key=len)
        assert 15.0 <= run[0] / 10 <= 35.0 and 3.0 <= run.size / 10 <= 10.1
        kind, at = sc.name.split("-")[2].split("@")[0], round(float(sc.name.split("@")[1].split("s-")[0]) * 10)
        ref = np.maximum(traces[kind][at: at + 600], sweep.OUTAGE_MBPS)
        lit = np.ones(600, bool)
        lit[run[0]: run[-1] + 1] = False
        np.testing.assert_allclose(sched[lit, 1], ref[lit], rtol=1e-9)


@pytest.mark.parametrize("arg, msg", [("--links=six,bogus", "--links: allowed six, outage"),
                                      ("--bogus=1", "Unknown command line flag")])
def test_bad_input_gets_one_line(sweep, capsys, arg, msg):
    assert sweep.run_cli(["deepcc_tuner_sweep.py", "--out=x.json", arg]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_reach_lattice_is_the_tenth_simplex(sweep):
    goals = np.asarray(sweep.lattice())
    assert goals.shape == (66, 3) and np.allclose(goals.sum(1), 1.0) and goals.min() >= 0.0
    assert len({tuple(np.round(g, 6)) for g in goals}) == 66
    assert {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)} <= {tuple(g) for g in goals.tolist()}


def test_reachable_is_bounded_by_the_link(sweep):
    """On a clean 5 Mbit/s link: a target anything meets (0 Mbit/s, any delay, any loss) is
    reachable; one above the link's capacity is not, whatever the goal (the 1/2 lattice's six
    goals, corners included: the bound holds for any goal)."""
    from jaxcc import scenarios, units

    sc = scenarios.parse_scenario({"name": "clean5", "duration_s": 10.0,
                                   "link": {"bandwidth_mbps": 5.0, "buffer_bytes": 5 * units.MBPS * 0.1, "loss": 0.0},
                                   "flows": [{"rtt_ms": 50.0, "start_s": 0.0, "stop_s": 10.0, "controller": "bbr"}]},
                                  source="clean5")
    targets = np.asarray([[0.0, 1e4, 1.0], [6.0, 1e4, 1.0]])
    f = str(REPO / "checkpoints" / "deepcc" / "deepcc.safetensors")
    assert sweep.reachable(sc, "policy:" + f, targets, 0, grid=2).tolist() == [True, False]
