"""DeepCC goals and targets in emulation: who gets ``--goal`` / ``--target``, the refusals, and
(marked ``emulation``: root, netns) a real run where the C++ sender tunes its goal."""
from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from jaxcc.emulation import netns, runner, spec
from jaxcc.emulation.host import EmulationError
from test_emulation_preference import _emulation_skip_reason  # root, netns, the built datapath

LINK = {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0}


def _deepcc_policy(path: Path) -> str:
    from jaxcc import policyfile

    p_spec, tensors = policyfile.make_feature_policy("deepcc_v1", 0)
    policyfile.save(path, p_spec, tensors)
    return f"policy:{path}"


def _scenario(controller: str, duration: float = 4.0, **flow):
    fl = {"rtt_ms": 20.0, "start_s": 0.0, "stop_s": duration, "controller": controller, **flow}
    return spec.as_scenario({"name": "dcc", "duration_s": duration, "link": dict(LINK), "flows": [fl]})


TARGET = {"throughput_mbps": 100.0, "delay_ms": 1000.0, "loss": 1.0}


def test_policy_flow_gets_goal_or_target(tmp_path):
    pol = _deepcc_policy(tmp_path / "d.safetensors")
    assert spec.flow_goals(_scenario(pol, target=TARGET), [pol]) == [(None, (100.0, 1000.0, 1.0))]
    assert spec.flow_goals(_scenario(pol, goal=[0.2, 0.3, 0.5]), [pol]) == [((0.2, 0.3, 0.5), None)]
    assert spec.flow_goals(_scenario(pol), [pol]) == [(None, None)]
    for base in ("bbr", "kernel:cubic", "fixed:5"):  # a baseline in place of the policy runs without it
        sc = _scenario(pol, target=TARGET)
        assert spec.flow_goals(sc, spec.assign_controllers(sc, base)) == [(None, None)]


def test_controllers_that_take_no_goal_are_refused(tmp_path):
    with pytest.raises(EmulationError, match=r"dcc\.flows\[0\]\.target: bbr takes no goal or target"):
        spec.flow_goals(_scenario("bbr", target=TARGET), ["bbr"])
    from jaxcc import policyfile

    p_spec, tensors = policyfile.make_feature_policy("mocc_v1", 0)
    policyfile.save(tmp_path / "m.safetensors", p_spec, tensors)
    mocc = f"policy:{tmp_path / 'm.safetensors'}"
    with pytest.raises(EmulationError, match=r"dcc\.flows\[0\]\.goal: .* is a mocc_v1 policy"):
        spec.flow_goals(_scenario(mocc, goal=[0.2, 0.3, 0.5]), [mocc])
    pol = _deepcc_policy(tmp_path / "d.safetensors")  # --controller=policy:FILE that takes none
    with pytest.raises(EmulationError, match="mocc_v1 policy"):
        spec.flow_goals(_scenario(pol, target=TARGET), [mocc])


def test_mahimahi_plan_refuses_targets(tmp_path):
    from jaxcc.emulation import mahimahi

    pol = _deepcc_policy(tmp_path / "d.safetensors")
    with pytest.raises(EmulationError, match=r"dcc\.flows\[0\]\.target: not passed under Mahimahi"):
        mahimahi.plan(_scenario(pol, target=TARGET), pol, tmp_path / "plan")


@pytest.fixture(scope="module")
def prefix():
    p = "jxgt" + os.urandom(2).hex()
    yield p
    netns.cleanup_leftovers(p)


@pytest.mark.emulation
@pytest.mark.datapath
@pytest.mark.skipif(_emulation_skip_reason() is not None, reason=str(_emulation_skip_reason()))
def test_sender_tunes_toward_target_on_a_real_link(tmp_path, prefix):
    """A random DeepCC policy on the 12 Mbit/s / 20 ms link with an unreachable throughput target
    (100 Mbit/s, over 8 times the 12 Mbit/s link): the runner passes --target, the sender tunes every 8
    decisions (½-RTT MIs: 4 RTT) and, the throughput dimension missing by > 50 % every interval
    (the jump-out) while delay and loss are met, g¹ rises at every step until g², g³ reach the floor."""
    pol = _deepcc_policy(tmp_path / "d.safetensors")
    rec = runner.Runner(_scenario(pol, target=TARGET), [pol], tmp_path / "run", prefix=prefix).run()
    assert netns.list_leftovers(prefix) == {"namespaces": [], "links": []}
    f = rec["per_flow"][0]
    snd = f["sender_summary"]
    assert f["client_rc"] == 0, (tmp_path / "run" / "flow0" / "sender.stderr").read_text()
    # The default tuner ("p95", jaxcc.sim.controller.DEFAULT_TUNER) is recorded and passed explicitly.
    assert f["target"] == {**TARGET, "tuner": "p95"} and snd["tuner"] == "p95"
    assert snd["target"] == {"throughput_mbps": 100, "delay_ms": 1000, "loss": 1}
    rows = list(csv.DictReader(open(tmp_path / "run" / "flow0" / "sender.csv")))
    # The safety net may hand the flow to BBR while the random policy overshoots: those MIs are
    # logged (control "bbr") and tuned on, but they are not the policy's decisions.
    by_bbr = sum(r["control"] == "bbr" for r in rows)
    assert len(rows) == snd["decisions"] + by_bbr and snd["tuning_steps"] == len(rows) // 8 >= 10
    g = [[float(x) for x in r["goal"].split(";")] for r in rows]
    for i in range(7, len(g), 8):
        a, b = g[i - 1], g[i]
        assert (b[0] > a[0] if a[1] > 0.01 else b[0] >= 0.98), (i, a, b)
