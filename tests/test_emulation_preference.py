"""MOCC preferences in emulation: who gets a flow's preference, the settle analysis, and (marked
``emulation``: root, netns) a real run where the preference changes while the sender runs.

The settle definition is ``jaxcc.emulation.settle``'s docstring; the synthetic logs below are
built so that the answer can be counted by hand.
"""
from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

from jaxcc.emulation import host, netns, runner, settle, spec
from jaxcc.emulation.host import EmulationError

REPO = Path(__file__).resolve().parent.parent
LINK = {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0}
ORDER = ["throughput", "delay", "loss"]


def _mocc_policy(path: Path, objectives=ORDER, goal_dim: int | None = None) -> str:
    """A random MOCC-shaped policy file (jaxcc.policyfile's mocc_v1 network: 7 actions x 3
    objectives), its objectives named in ``objectives``."""
    from jaxcc import policyfile

    p_spec, tensors = policyfile.make_feature_policy("mocc_v1", 0)
    assert p_spec["head"] == {"type": "q_values", "n": 7, "objectives": 3}
    p_spec["features"]["objectives"] = list(objectives)
    if goal_dim is not None:
        p_spec["goal_dim"] = goal_dim
    policyfile.save(path, p_spec, tensors)
    return f"policy:{path}"


def _scenario(controller: str, duration: float = 6.0, pref=(0.8, 0.1, 0.1), changes=((3.0, (0.1, 0.8, 0.1)),)):
    fl = {"rtt_ms": 20.0, "start_s": 0.0, "stop_s": duration, "controller": controller}
    if pref is not None:
        fl["preference"] = list(pref)
    if changes:
        fl["preference_changes"] = [{"at_s": t, "preference": list(w)} for t, w in changes]
    return spec.as_scenario({"name": "pref", "duration_s": duration, "link": dict(LINK), "flows": [fl]})


# ----------------------------------------------------------------------------- who gets it

def test_policy_flow_gets_preference_and_changes(tmp_path):
    pol = _mocc_policy(tmp_path / "m.safetensors")
    sc = _scenario(pol)
    assert spec.flow_preferences(sc, [pol]) == [((0.8, 0.1, 0.1), ((3.0, (0.1, 0.8, 0.1)),))]
    assert spec.preference_arg((0.1, 0.8, 0.1)) == "0.1,0.8,0.1"


def test_baseline_in_place_of_the_policy_runs_without_it(tmp_path):
    pol = _mocc_policy(tmp_path / "m.safetensors")
    sc = _scenario(pol)
    for base in ("bbr", "kernel:cubic", "fixed:5"):
        assert spec.flow_preferences(sc, spec.assign_controllers(sc, base)) == [(None, ())]


def test_controllers_that_take_no_preference_are_refused(tmp_path):
    # written in the scenario: refused as the simulator refuses it
    with pytest.raises(EmulationError, match=r"pref\.flows\[0\]\.preference: bbr takes no preference"):
        spec.flow_preferences(_scenario("bbr"), ["bbr"])
    with pytest.raises(EmulationError, match=r"pref\.flows\[0\]\.preference_changes: bbr"):
        spec.flow_preferences(_scenario("bbr", pref=None), ["bbr"])
    # a policy with the objectives in another order, or no 3-value goal
    wrong = _mocc_policy(tmp_path / "w.safetensors", objectives=["throughput", "loss", "delay"])
    with pytest.raises(EmulationError, match=r"flows\[0\]\.preference: .*features\.objectives"):
        spec.flow_preferences(_scenario(wrong), [wrong])
    from jaxcc import policyfile

    p_spec, tensors = policyfile.make_random_policy("mlp", 0)
    policyfile.save(tmp_path / "a.safetensors", p_spec, tensors)
    aur = f"policy:{tmp_path / 'a.safetensors'}"
    with pytest.raises(EmulationError, match=r"flows\[0\]\.preference: .*goal_dim is 0"):
        spec.flow_preferences(_scenario(aur), [aur])
    # --controller=policy:FILE that takes none, in place of a MOCC flow: refused too
    pol = _mocc_policy(tmp_path / "m.safetensors")
    with pytest.raises(EmulationError, match="goal_dim is 0"):
        spec.flow_preferences(_scenario(pol), [aur])


def test_mahimahi_plan_refuses_preferences(tmp_path):
    from jaxcc.emulation import mahimahi

    pol = _mocc_policy(tmp_path / "m.safetensors")
    with pytest.raises(EmulationError, match=r"pref\.flows\[0\]\.preference: not passed under Mahimahi"):
        mahimahi.plan(_scenario(pol), pol, tmp_path / "plan")
    assert mahimahi.plan(_scenario(pol), "bbr", tmp_path / "plan2").exists()  # a baseline runs without it


def test_builtin_settle_scenario_needs_a_policy():
    sc = spec.load(name="emu/mocc_settle")
    assert sc.flows[0].preference == (0.8, 0.1, 0.1)
    assert [t for t, _ in sc.flows[0].preference_changes] == [15.0, 30.0]
    with pytest.raises(EmulationError, match=r"emu/mocc_settle\.flows\[0\]\.preference: bbr"):
        spec.flow_preferences(sc, spec.assign_controllers(sc, None))


# ----------------------------------------------------------------------------- settle analysis

def _write_run(d: Path, x: list[float], k: int, received_s: float, mi_s: float = 0.02, col: str = "cwnd_bytes"):
    """A sender.csv with signal ``x`` (one row per decision, t_s = (j+1)*mi_s) whose goal changes
    at decision k, and its sender.json."""
    d.mkdir(parents=True, exist_ok=True)
    fields = ["t_s", "mi_s", "rate_mbps", "cwnd_bytes", "throughput_mbps", "rtt_mean_ms", "action", "goal"]
    with open(d / "sender.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for j, v in enumerate(x):
            row = {"t_s": (j + 1) * mi_s, "mi_s": mi_s, "rate_mbps": 5.0, "cwnd_bytes": 30000.0,
                   "throughput_mbps": 5.0, "rtt_mean_ms": 20.0, "action": 3,
                   "goal": "0.8;0.1;0.1" if j < k else "0.1;0.8;0.1"}
            row[col] = v
            w.writerow(row)
    (d / "sender.json").write_text(json.dumps({"goal_changes": [
        {"line": 1, "goal": [0.1, 0.8, 0.1], "received_s": received_s, "applied_s": (k + 1) * mi_s,
         "decision": k}]}))


def test_settle_counts_decisions_to_the_band_for_good(tmp_path):
    # 50 rows at 100, then the change at row 50: 100, 80, 60, 52, then 50 except one 57 at row 70
    # (outside 50 +- 10%: the band is [45, 55]); 30 rows after it at 50. Level 50 (median of the
    # tail), last row outside the band is 70: D = 70 - 50 + 1 = 21 decisions.
    x = [100.0] * 50 + [100.0, 80.0, 60.0, 52.0] + [50.0] * 16 + [57.0] + [50.0] * 30
    assert len(x) == 101 and x[70] == 57.0
    _write_run(tmp_path / "a", x, k=50, received_s=50 * 0.02 + 0.005)
    res = settle.analyse_run_dir(tmp_path / "a")
    assert res["signal"] == "cwnd"
    c = res["changes"][0]
    assert c["level"] == 50.0 and c["previous_level"] == 100.0
    assert c["settle_decisions"] == 21
    assert c["settle_s"] == pytest.approx(20 * 0.02)
    assert c["applied_next_decision"] is True
    assert "settled in 21 decisions" in settle.summary_line(res)
    # without the 57 the band is reached for good at row 53 (52 is inside [45, 55]): D = 3
    x[70] = 50.0
    _write_run(tmp_path / "b", x, k=50, received_s=1.005)
    assert settle.analyse_run_dir(tmp_path / "b")["changes"][0]["settle_decisions"] == 3
    # already at the new level: D = 0
    _write_run(tmp_path / "c", [50.0] * 100, k=50, received_s=1.005)
    assert settle.analyse_run_dir(tmp_path / "c")["changes"][0]["settle_decisions"] == 0


def test_settle_reports_not_settled_and_late_application(tmp_path):
    # a row of the tail outside the band: not settled, whatever the rest did
    x = [100.0] * 50 + [50.0] * 49 + [70.0]
    _write_run(tmp_path / "a", x, k=50, received_s=1.005)
    c = settle.analyse_run_dir(tmp_path / "a")["changes"][0]
    assert c["settle_decisions"] is None and c["settle_s"] is None
    assert 0.9 < c["tail_in_band"] < 1.0
    assert "not settled" in settle.summary_line(settle.analyse_run_dir(tmp_path / "a"))
    # an oscillation 30 <-> 180 (a random policy's +10 / -50 packets): the median is 30, half
    # the tail is outside: not settled, even though the last row is inside the band
    x = [100.0] * 50 + [30.0, 180.0] * 25
    _write_run(tmp_path / "o", x, k=50, received_s=1.005)
    c = settle.analyse_run_dir(tmp_path / "o")["changes"][0]
    assert c["settle_decisions"] is None and c["tail_in_band"] == pytest.approx(0.5, abs=0.05)
    # received before row 48's decision but applied at row 50: not the next decision
    _write_run(tmp_path / "b", [100.0] * 100, k=50, received_s=48 * 0.02 + 0.001)
    c = settle.analyse_run_dir(tmp_path / "b")["changes"][0]
    assert c["applied_next_decision"] is False


def test_settle_smoothing(tmp_path):
    # 4 <-> 5 packets (+-11% around 4.5): never inside +-10% of the median row by row; the mean
    # of 2 rows is 4.5 from the segment's second row on (row k alone is 4): D = 1
    x = [100.0] * 50 + [4.0, 5.0] * 25
    _write_run(tmp_path / "a", x, k=50, received_s=1.005)
    assert settle.analyse_run_dir(tmp_path / "a")["changes"][0]["settle_decisions"] is None
    res = settle.analyse_run_dir(tmp_path / "a", smooth=2)
    c = res["changes"][0]
    assert res["smooth"] == 2 and c["level"] == 4.5 and c["settle_decisions"] == 1
    assert c["previous_level"] == 100.0


def test_settle_command(tmp_path, capsys):
    """``python -m jaxcc.emulation.settle FLOW_DIR [flags]``: the flow folder before, between or
    after the flags; every refusal one line on stderr with exit status 2."""
    x = [100.0] * 50 + [4.0, 5.0] * 25
    _write_run(tmp_path / "a", x, k=50, received_s=1.005)
    for args in ([str(tmp_path / "a"), "--smooth=2"], ["--smooth", "2", str(tmp_path / "a"), "--tail-s=5"]):
        assert settle.run_cli(["settle", *args]) == 0
        out = capsys.readouterr()
        res = json.loads(out.out)
        assert res["smooth"] == 2 and res["changes"][0]["settle_decisions"] == 1
        assert "settled in 1 decisions" in out.err
    for args, msg in (([], "missing FLOW_DIR"), ([str(tmp_path / "a"), "extra"], "unexpected arguments ['extra']"),
                      ([str(tmp_path / "a"), "--band=2"], "--band=2.0: must be in (0, 1)"),
                      ([str(tmp_path / "a"), "--smooth=0"], "--smooth=0: must be >= 1"),
                      ([str(tmp_path / "a"), "--window-s=-1"], "--window-s=-1.0: must be > 0"),
                      ([str(tmp_path / "nope")], "cannot read"), ([str(tmp_path / "a"), "--nope"], "nope")):
        assert settle.run_cli(["settle", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and msg in err[0], (args, err)
    assert settle.run_cli(["settle", "--help"]) == 0
    assert "--smooth" in capsys.readouterr().out


def test_settle_window(tmp_path):
    # the new level 50 holds for 40 rows (0.8 s), then a disturbance moves it to 80 for good:
    # over the whole segment the level is 80 (reached at row 90: D = 40); over the first 0.5 s
    # (rows 50..75) it is 50, reached at once (D = 0)
    x = [100.0] * 50 + [50.0] * 40 + [80.0] * 60
    _write_run(tmp_path / "a", x, k=50, received_s=1.005)
    c = settle.analyse_run_dir(tmp_path / "a")["changes"][0]
    assert c["level"] == 80.0 and c["settle_decisions"] == 40
    res = settle.analyse_run_dir(tmp_path / "a", window_s=0.5)
    c = res["changes"][0]
    assert res["window_s"] == 0.5 and c["rows"] == 26 and c["level"] == 50.0 and c["settle_decisions"] == 0


def test_settle_signal_choice(tmp_path):
    x = [5.0] * 100
    _write_run(tmp_path / "a", x, k=50, received_s=1.005, col="rate_mbps")
    rows = settle.read_log(tmp_path / "a" / "sender.csv")
    assert settle.pick_signal(rows) == "cwnd"
    for r in rows:
        r["cwnd_bytes"] = "-1"       # no window: the sender's rate is the signal
    assert settle.pick_signal(rows) == "rate"
    with pytest.raises(ValueError, match="--signal"):
        settle.pick_signal(rows, "goodput")


# ----------------------------------------------------------------------------- real link

def _emulation_skip_reason() -> str | None:
    if sys.platform != "linux":
        return "emulation needs Linux network namespaces"
    if os.geteuid() != 0:
        return "emulation needs root (network namespaces, tc, iptables)"
    problems = host.missing_requirements()
    if host.sender_binary() is None or host.receiver_binary() is None:
        problems.append("datapath not built (datapath/build.sh)")
    return "; ".join(problems) if problems else None


@pytest.fixture(scope="module")
def prefix():
    p = "jxpf" + os.urandom(2).hex()
    yield p
    netns.cleanup_leftovers(p)


@pytest.mark.emulation
@pytest.mark.datapath
@pytest.mark.skipif(_emulation_skip_reason() is not None, reason=str(_emulation_skip_reason()))
def test_runtime_preference_change_is_applied_at_the_next_decision(tmp_path, prefix):
    """A MOCC-shaped policy on the 12 Mbit/s / 20 ms link starts at (0.8, 0.1, 0.1); at 3 s the
    runner writes (0.1, 0.8, 0.1) to the running sender. From the sender's own log: the decisions
    before the change used the old goal, the first decision after the line arrived and every one
    after it the new one; the line arrived when the runner wrote it; the process was not
    restarted (one run, its decisions every interval throughout)."""
    pol = _mocc_policy(tmp_path / "m.safetensors")
    sc = _scenario(pol, duration=6.0)
    rec = runner.Runner(sc, [pol], tmp_path / "run", prefix=prefix).run()
    assert netns.list_leftovers(prefix) == {"namespaces": [], "links": []}
    f = rec["per_flow"][0]
    d = tmp_path / "run" / "flow0"
    err = (d / "sender.stderr").read_text()
    assert f["client_rc"] == 0, (f, err)
    snd = f["sender_summary"]
    assert snd["preference"] == [0.8, 0.1, 0.1]
    assert len(f["control_log"]) == 1 and "error" not in f["control_log"][0], f["control_log"]
    ch = snd["goal_changes"]
    assert len(ch) == 1 and ch[0]["goal"] == [0.1, 0.8, 0.1], ch
    rows = list(csv.DictReader(open(d / "sender.csv")))
    assert len(rows) == snd["decisions"]
    k = ch[0]["decision"]
    assert 0 < k < len(rows) - 10
    assert all(r["goal"] == "0.8;0.1;0.1" for r in rows[:k])
    assert all(r["goal"] == "0.1;0.8;0.1" for r in rows[k:])
    # applied within one decision: the decision before k came before the line arrived
    t = [float(r["t_s"]) for r in rows]
    assert t[k - 1] <= ch[0]["received_s"] and ch[0]["applied_s"] == t[k]
    assert t[k] - ch[0]["received_s"] <= float(rows[k]["mi_s"]) + 1e-6
    # the runner wrote it at 3 s on the scenario's clock (late by the harness's wake-up on a busy
    # host: 180 ms measured at load 11 on 2 cores; recorded, as for rate changes), and it
    # arrived then (both clocks are CLOCK_MONOTONIC; the sender's t = 0 is its start-up later)
    log = f["control_log"][0]
    assert log["at_s"] == pytest.approx(3.0) and 0.0 <= log["issued_late_ms"] < 1000.0, log
    got_mono = snd["start_mono_s"] + ch[0]["received_s"]
    assert 0.0 <= got_mono - log["mono_s"] < 0.1, (log, got_mono)
    # the settle analysis ran on this flow and agrees on where the change was applied
    st = f["settle"]
    assert st["changes"][0]["decision"] == k and st["changes"][0]["applied_next_decision"] is True
