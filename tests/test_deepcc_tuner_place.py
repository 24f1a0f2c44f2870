"""launch/deepcc_tuner_place.py: the tuner's window-mean goal, the nearest goal that meets a target,
its refusals, and (full tier) the three runs on a clean link where the answers are known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import launch_script

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def place():
    sys.path.insert(0, str(REPO / "launch"))  # it imports its sibling launch scripts, as `python launch/...` can
    try:
        yield launch_script.load("deepcc_tuner_place")
    finally:
        sys.path.remove(str(REPO / "launch"))


def test_window_mean_goal_averages_the_steps_inside_the_window(place):
    series = [{"t": [1.0, 5.0, 6.0, 9.0], "goal": [[1, 0, 0], [0.5, 0.5, 0], [0.3, 0.3, 0.4], [0, 0, 1]]},
              {"t": [1.0, 2.0], "goal": [[0.2, 0.4, 0.4], [0.6, 0.2, 0.2]]},  # no step inside: its last goal
              {"t": [], "goal": []}]  # no step at all: the default goal
    got = place.window_mean_goals(series, (4.0, 8.0))
    np.testing.assert_allclose(got, [[0.4, 0.4, 0.2], [0.6, 0.2, 0.2], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-12)


def test_nearest_meeting_goal_is_the_l1_nearest(place):
    goals = np.asarray([[1.0, 0.0, 0.0], [0.6, 0.0, 0.4], [0.3, 0.4, 0.3]])
    # L1 distances from (0.5, 0.1, 0.4): 1.0, 0.2, 0.6
    assert place.nearest(goals, np.asarray([0.5, 0.1, 0.4])).tolist() == [0.6, 0.0, 0.4]
    assert place.nearest(np.zeros((0, 3)), np.asarray([0.5, 0.1, 0.4])) is None


@pytest.mark.parametrize("args, msg", [(["--out=x.json"], "--policy: give the DeepCC policy file"),
                                       (["--out=x.json", "--policy=p", "--links=bogus"], "--links: allowed six, outage"),
                                       (["--out=x.json", "--policy=p", "--tuner=bogus"], "--tuner: unknown tuner 'bogus'"),
                                       (["--policy=p"], "--out: give the JSON file to write")])
def test_bad_input_gets_one_line(place, capsys, args, msg):
    assert place.run_cli(["deepcc_tuner_place.py", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and msg in err, err


@pytest.mark.full  # three simulator batches of the DeepCC policy: up to a minute on two cores
def test_on_a_clean_link_a_target_everything_meets_and_one_nothing_meets(place, monkeypatch):
    """On a clean 5 Mbit/s link: a zero-throughput target with any delay and loss is met tuned, held
    and by every lattice goal; a 6 Mbit/s one by none.  So nothing is reachable but missed."""
    from jaxcc import scenarios, units
    from jaxcc.evaluation import tcr

    sc = scenarios.parse_scenario({"name": "clean5", "duration_s": 10.0,
                                   "link": {"bandwidth_mbps": 5.0, "buffer_bytes": 5 * units.MBPS * 0.1, "loss": 0.0},
                                   "flows": [{"rtt_ms": 50.0, "start_s": 0.0, "stop_s": 10.0, "controller": "bbr"}]},
                                  source="clean5")
    monkeypatch.setattr(tcr, "link_targets", lambda *a, **k: np.asarray([[0.0, 1e4, 1.0], [6.0, 1e4, 1.0]]))
    f = str(REPO / "checkpoints" / "deepcc" / "deepcc.safetensors")
    r = place.place(sc, "policy:" + f, 2, 0, "p95")
    assert (r["tcr_tuned"], r["reachable"], r["tcr_held"], r["reachable_missed"]) == (0.5, 0.5, 0.5, 0)
    met, missed = r["targets"]
    assert met["nearest_meeting_goal"] is not None and missed["nearest_meeting_goal"] is None
    assert missed["missed"] == [True, False, False] and missed["held"][0] < 6.0
    assert np.isclose(sum(met["window_mean_goal"]), 1.0, atol=1e-3)
