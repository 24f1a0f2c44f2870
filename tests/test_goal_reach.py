"""jaxcc.goal_reach: the tuner's own counters of tuning intervals that met a target, in the simulator
and read from a jaxcc.emulate results file."""

import json

import pytest

from jaxcc import policyfile, scenarios
from jaxcc.evaluation import goal_reach as evaluation_goal_reach


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("dcc") / "dcc.safetensors"
    policyfile.save(path, *policyfile.make_feature_policy("deepcc_v1", 1))
    return str(path)


def _sc(policy, target):
    return scenarios.parse_scenario({"name": "reach", "duration_s": 3.0, "link": {"bandwidth_mbps": 12, "buffer_bytes": 90000},
                                     "flows": [{"rtt_ms": 60.0, "controller": f"policy:{policy}", "target": target}]})


def test_always_met_and_never_met_targets(policy):
    """0 Mbit/s, 10 s of queueing, 100 % loss: every interval meets it, so the first is interval 1 and
    all count; 100 Mbit/s on a 12 Mbit/s link: none does.  Intervals: 8 decisions of 30 ms (½ RTT)
    = 240 ms, so at most 3 s / 0.24 s = 12 in the run (the first MI waits for an RTT sample)."""
    (easy,) = evaluation_goal_reach.simulate(_sc(policy, {"throughput_mbps": 0, "delay_ms": 10000, "loss": 1.0}))
    assert 9 <= easy["tuning_steps"] <= 12
    assert easy["first_met_step"] == 1 and easy["met_steps"] == easy["tuning_steps"]
    assert easy["met_fraction_after"] == 1.0
    (hard,) = evaluation_goal_reach.simulate(_sc(policy, {"throughput_mbps": 100, "delay_ms": 10000, "loss": 1.0}))
    assert hard["first_met_step"] == 0 and hard["met_steps"] == 0 and hard["met_fraction_after"] is None
    assert hard["throughput_mbps"] <= 12.0


def test_reads_emulation_summaries(tmp_path):
    rec = {"scenario": "reach", "controller": "policy:x", "delay_check": {"valid": True},
           "per_flow": [{"throughput_mbps": 9.0, "p95_qdelay_ms": 12.0, "loss": 0.0,
                         "sender_summary": {"tuning_steps": 40, "tuning_first_met_step": 11, "tuning_met_steps": 27,
                                            "goal_final": [0.5, 0.3, 0.2], "target": {"throughput_mbps": 8}}}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": [rec]}))
    (row,) = evaluation_goal_reach.from_emulation(str(path), "reach")
    assert (row["first_met_step"], row["met_steps"], row["valid"]) == (11, 27, True)
    assert row["met_fraction_after"] == pytest.approx(27 / 30)
    with pytest.raises(ValueError, match="no record of scenario 'other'"):
        evaluation_goal_reach.from_emulation(str(path), "other")
