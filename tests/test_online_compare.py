"""Online fine-tuning against its frozen control (``python -m jaxcc.online --control=frozen``,
``jaxcc.online.compare``): the interleaved run order and folder layout, the report's arithmetic
against hand-computed numbers, the refused flag combinations, the simulator's link seed reaching
the simulated link, the forgetting check of an unchanged actor, and (full tier) a short run over the simulator backend in which the frozen
arm applies no weights."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jaxcc.online import cli, compare

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors")


# ----------------------------------------------------------------------------- order and layout


def test_plan_interleaves_the_arms_and_alternates_which_runs_first(tmp_path):
    assert compare.plan([0, 1, 2]) == [(0, "learning"), (0, "frozen"), (1, "frozen"), (1, "learning"),
                                       (2, "learning"), (2, "frozen")]
    assert compare.plan([7]) == [(7, "learning"), (7, "frozen")]
    assert compare.arm_dir(str(tmp_path), 3, "frozen") == os.path.join(str(tmp_path), "seed3", "frozen")
    with pytest.raises(ValueError, match="arm 'online': expected one of learning, frozen"):
        compare.arm_dir(str(tmp_path), 0, "online")


def test_parse_seeds():
    assert compare.parse_seeds("0, 1,2") == [0, 1, 2]
    for text, msg in (("", "empty"), (",", "empty"), (None, "empty"), ("0,x", "'x' is not an integer >= 0"),
                      ("-1", "'-1' is not an integer >= 0"), ("0,1,0", "seed 0 is given twice")):
        with pytest.raises(ValueError, match=msg):
            compare.parse_seeds(text)


# ----------------------------------------------------------------------------- the report's arithmetic


def _w(u, p95, loss=0.0, jain=1.0, own_ankh=0.999):
    # own_ankh: the arm's own results.json number (d_max over its own two minutes); the report
    # must not use it
    return {"throughput_mbps": 50 * u, "utilization": u, "p95_owd_ms": p95, "loss": loss, "jain": jain,
            "ankh": own_ankh}


def _arm(first, last, pushes=0, steps=0):
    return {"first_minute": first, "last_minute": last, "weight_pushes": pushes, "updates_applied": pushes,
            "grad_steps": steps, "weight_version": pushes, "records": 100, "transitions": 99}


# Every seed's d_max is 100 ms (the frozen arm's first minute), so Ankh = ((1 - u) + p95/100 + loss) / 3.
# The frozen arm's last minute: u 0.8, p95 50 -> 0.7/3.  The learning arm's last minute per seed:
#   seed 0: u 0.9, p95 40          -> 0.5/3, difference -0.2/3
#   seed 1: u 0.9, p95 50          -> 0.6/3, difference -0.1/3
#   seed 2: u 0.8, p95 50          -> 0.7/3, difference  0
#   seed 3: u 0.7, p95 50, loss .2 -> 1.0/3, difference +0.3/3
# Differences (x 1/3): -0.2, -0.1, 0, 0.3: median -0.05, min -0.2, max 0.3; quartiles by linear
# interpolation at positions 0.75 and 2.25: -0.2 + 0.75 * 0.1 = -0.125 and 0 + 0.25 * 0.3 = 0.075,
# IQR 0.2.  Relative to the frozen arm's 0.7/3: -0.2/0.7, -0.1/0.7, 0, 0.3/0.7.
LEARN_LAST = {0: _w(0.9, 40), 1: _w(0.9, 50), 2: _w(0.8, 50), 3: _w(0.7, 50, loss=0.2)}


def _fake(seeds):
    return {s: {"learning": _arm(_w(0.8, 50), LEARN_LAST[s], pushes=5, steps=80),
                "frozen": _arm(_w(0.8, 100), _w(0.8, 50))} for s in seeds}


def test_compare_against_hand_computed_numbers():
    doc = compare.compare(_fake([0, 1, 2, 3]), order=compare.plan([0, 1, 2, 3]), meta={"scenario": "x"})
    rows = {r["seed"]: r for r in doc["rows"]}
    for s, d in ((0, -0.2), (1, -0.1), (2, 0.0), (3, 0.3)):
        r = rows[s]
        assert r["ankh_d_max_ms"] == 100.0
        assert r["frozen"]["last"]["ankh"] == pytest.approx(0.7 / 3)
        assert r["frozen"]["first"]["ankh"] == pytest.approx((0.2 + 1.0) / 3)
        assert r["learning"]["first"]["ankh"] == pytest.approx(0.7 / 3)
        assert r["last_ankh_diff"] == pytest.approx(d / 3, abs=1e-12)
        assert r["last_ankh_rel"] == pytest.approx(d / 0.7, abs=1e-12)
        assert r["first_ankh_diff"] == pytest.approx(-0.5 / 3)
        assert (r["learning"]["weight_pushes"], r["frozen"]["weight_pushes"]) == (5, 0)
    s = doc["summary"]["last_ankh_diff"]
    assert s["n"] == 4
    assert s["median"] == pytest.approx(-0.05 / 3) and s["min"] == pytest.approx(-0.2 / 3)
    assert s["max"] == pytest.approx(0.1)
    assert s["q25"] == pytest.approx(-0.125 / 3) and s["q75"] == pytest.approx(0.025)
    assert s["iqr"] == pytest.approx(0.2 / 3)
    rel = doc["summary"]["last_ankh_rel"]
    assert rel["median"] == pytest.approx(-0.05 / 0.7) and rel["iqr"] == pytest.approx(0.2 / 0.7)
    assert doc["order"][:3] == [[0, "learning"], [0, "frozen"], [1, "frozen"]] and doc["scenario"] == "x"
    md = compare.markdown(doc)
    assert "| 3 | 0.333 | 0.233 | +0.1000 | +42.9 % | 100.0 |" in md
    assert "median -0.0167, min–max -0.0667 … +0.1000, IQR 0.0667" in md
    assert ("relative to frozen over 4 seed(s): median -7.1 %, min–max -28.6 % … +42.9 %, "
            "IQR 28.6 % (-17.9 % … +10.7 %)") in md


def test_spread_of_three_seeds_has_no_iqr_and_missing_values_are_left_out():
    doc = compare.compare(_fake([0, 1, 3]))
    s = doc["summary"]["last_ankh_diff"]
    assert s["n"] == 3 and s["median"] == pytest.approx(-0.1 / 3) and s["iqr"] is None and s["q25"] is None
    assert compare.spread([None, 2.0, None, 1.0]) == {"n": 2, "median": 1.5, "min": 1.0, "max": 2.0, "q25": None,
                                                      "q75": None, "iqr": None}
    # an arm without a delay in a window (e.g. no packet delivered): no Ankh, no difference
    arms = _fake([0])
    arms[0]["learning"]["last_minute"]["p95_owd_ms"] = float("nan")
    row = compare.seed_row(0, arms[0])
    assert row["learning"]["last"]["ankh"] is None and row["last_ankh_diff"] is None
    assert compare.spread([row["last_ankh_diff"]])["n"] == 0


# ----------------------------------------------------------------------------- the command's control


def _flags(tmp_path, *extra):
    from absl import flags

    a = cli.define_flags(flags.FlagValues())
    a(["online", "--checkpoint=/nope", f"--out={tmp_path}", "--minutes=1", *extra])
    return a


def test_control_runs_the_arms_in_order_in_their_folders_and_writes_the_report(tmp_path, monkeypatch):
    calls = []

    def fake_arm(a, log, *, out, seed, learn, net_seed):
        calls.append((seed, learn, net_seed, out))
        os.makedirs(out, exist_ok=True)
        arm = _fake([seed])[seed]["learning" if learn else "frozen"]
        return {**arm, "scenario": a.scenario, "net_seed": net_seed}

    monkeypatch.setattr(cli, "_run_arm", fake_arm)
    a = _flags(tmp_path, "--emulator=sim", "--scenario=pareto/fixed50", "--control=frozen", "--learner-seeds=2,0,1")
    doc = cli.run(a, log=lambda s: None)
    assert [(s, lrn) for s, lrn, _, _ in calls] == [(2, True), (2, False), (0, False), (0, True), (1, True),
                                                   (1, False)]
    # the network's seed: the pair's learner seed, the same for both arms of a seed
    assert [n for _, _, n, _ in calls] == [2, 2, 0, 0, 1, 1]
    assert [o for *_, o in calls] == [os.path.join(str(tmp_path), f"seed{s}", "learning" if lrn else "frozen")
                                      for s, lrn, _, _ in calls]
    on_disk = json.loads((tmp_path / "compare.json").read_text())
    assert on_disk["order"] == [[2, "learning"], [2, "frozen"], [0, "frozen"], [0, "learning"], [1, "learning"],
                                [1, "frozen"]]
    assert on_disk["learner_seeds"] == [2, 0, 1] and on_disk["scenario"] == "pareto/fixed50"
    assert [r["seed"] for r in on_disk["rows"]] == [2, 0, 1] == [r["seed"] for r in doc["rows"]]
    assert on_disk["rows"][0]["last_ankh_diff"] == pytest.approx(0.0, abs=1e-12)
    assert "--control=frozen" in on_disk["command"] and "--learner-seeds=2,0,1" in on_disk["command"]
    assert "learning − frozen" in (tmp_path / "compare.md").read_text()

    # --net-seed holds the link fixed across seeds; without --learner-seeds the one --seed
    calls.clear()
    cli.run(_flags(tmp_path / "b", "--emulator=sim", "--scenario=pareto/fixed50", "--control=frozen",
                   "--learner-seeds=0,1", "--net-seed=5"), log=lambda s: None)
    assert [n for _, _, n, _ in calls] == [5, 5, 5, 5]
    calls.clear()
    cli.run(_flags(tmp_path / "c", "--emulator=sim", "--scenario=pareto/fixed50", "--control=frozen", "--seed=3"),
            log=lambda s: None)
    assert [(s, lrn, n) for s, lrn, n, _ in calls] == [(3, True, 3), (3, False, 3)]
    # an arm folder that already holds an online run is refused (no resumed arms)
    os.makedirs(tmp_path / "c" / "seed3" / "frozen" / "online_ckpt")
    with pytest.raises(ValueError, match="already holds an online run"):
        cli.run(_flags(tmp_path / "c", "--emulator=sim", "--scenario=pareto/fixed50", "--control=frozen",
                       "--seed=3"), log=lambda s: None)


def test_bad_control_flags_are_one_line(tmp_path, capsys, monkeypatch):
    def err(*extra):
        with pytest.raises(ValueError) as e:
            cli.run(_flags(tmp_path, *extra))
        return str(e.value)

    sim = ("--emulator=sim", "--scenario=pareto/fixed50")
    assert "--control=frozen: needs a network this command starts" in err("--emulator=external", "--control=frozen")
    assert "not --emulator=flood" in err("--emulator=flood", "--control=frozen")
    assert "--learner-seeds='': empty" in err(*sim, "--control=frozen", "--learner-seeds=")
    assert "--learner-seeds=0,1,0: seed 0 is given twice" in err(*sim, "--control=frozen", "--learner-seeds=0,1,0")
    assert "--learner-seeds=1,a: 'a' is not an integer" in err(*sim, "--control=frozen", "--learner-seeds=1,a")
    assert "--learner-seeds=0,1: needs --control=frozen" in err(*sim, "--learner-seeds=0,1")
    assert "--seed=2 and --learner-seeds=0,1: give one of them" in err(*sim, "--control=frozen", "--seed=2",
                                                                       "--learner-seeds=0,1")
    assert "--net-seed=-2: must be >= 0" in err(*sim, "--net-seed=-2")
    assert "--net-seed=1: only --emulator=sim" in err("--emulator=netns", "--scenario=pareto/fixed50", "--net-seed=1")
    assert "--old-env-neighbours=-1: must be in [0, 256]" in err(*sim, "--old-env-neighbours=-1")
    # the command: one line on stderr, exit 2
    from jaxcc import online

    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    capsys.readouterr()
    base = ["online", "--checkpoint=/nope", f"--out={tmp_path}", "--minutes=1"]
    assert online.run_cli(base + ["--emulator=flood", "--control=frozen"]) == 2
    assert online.run_cli(base + [*sim, "--control=frozen", "--learner-seeds=3,3"]) == 2
    assert online.run_cli(base + [*sim, "--control=thawed"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(x.startswith("error: ") for x in lines), lines
    assert "--control=frozen" in lines[0] and "--learner-seeds=3,3" in lines[1] and "control" in lines[2]


# ----------------------------------------------------------------------------- the network's seed


def test_the_sim_link_seed_reaches_the_simulated_link(tmp_path):
    """``network.start(seed=S)``: the simulated link's capacity is the scenario's random draw with
    seed S (``LinkSpec.capacity``), not seed 0's."""
    from jaxcc import units
    from jaxcc.emulation import spec as es
    from jaxcc.online import network, simnet

    sc = es.load(name="aurora/random16-32")
    run = network.start("sim", sc, minutes=0.25, policy_path=POLICY, learner=None, out_dir=tmp_path, speed=0,
                        seed=3).wait(timeout=300)
    tr = simnet.trace_of(run)
    got = tr.capacity[(tr.time > 1.0) & (tr.time < 4.0)] / units.MBPS
    want3 = sc.link.capacity(seed=3, duration_s=15.0).rates[0] / units.MBPS
    want0 = sc.link.capacity(seed=0, duration_s=15.0).rates[0] / units.MBPS
    assert abs(want3 - want0) > 0.5  # the two draws differ, so the check can fail
    np.testing.assert_allclose(got, want3, rtol=1e-5)


# ----------------------------------------------------------------------------- a short run (full tier)


from test_online_learner import smoke_ckpt  # noqa: E402,F401  the learner tests' pareto_smoke run (a fixture)


@pytest.mark.full  # a training and four short simulated runs (~1.5 min)
def test_frozen_arm_applies_no_weights_over_the_sim_backend(smoke_ckpt, tmp_path):
    out = tmp_path / "ctl"
    cmd = [sys.executable, "-m", "jaxcc.online", f"--checkpoint={smoke_ckpt}", "--scenario=aurora/random16-32",
           "--emulator=sim", "--minutes=0.4", "--speed=4", f"--out={out}", "--old-envs=", "--control=frozen",
           "--learner-seeds=0,1", "--push-every=4", "--min-online=16", "--updates-per-s=400"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads((out / "compare.json").read_text())
    assert doc["order"] == [[0, "learning"], [0, "frozen"], [1, "frozen"], [1, "learning"]]
    res = {(s, a): json.loads((out / f"seed{s}" / a / "results.json").read_text()) for s in (0, 1)
           for a in compare.ARMS}
    for s in (0, 1):
        fr, lr = res[(s, "frozen")], res[(s, "learning")]
        assert not fr["learning"] and lr["learning"]
        # the frozen arm took the records and made transitions, and nothing else
        assert fr["records"] > 50 and fr["transitions"] > 50
        assert (fr["grad_steps"], fr["weight_pushes"], fr["updates_applied"], fr["weight_version"]) == (0, 0, 0, 0)
        byes = [x["bye"] for x in fr["senders"].values()]
        assert byes and all(b["weight_version"] == 0 and b["weights_received"] == 0 for b in byes)
        assert set(fr["timeline"]["weight_version"]) == {0}
        # the learning arm learned and its senders ran what it pushed
        assert lr["grad_steps"] > 0 and lr["weight_pushes"] >= 1 and lr["updates_applied"] >= 1
        assert max(lr["timeline"]["weight_version"]) >= 1
    # both arms of a seed ran on the same simulated link; the seeds' links differ
    cap = {k: np.load(out / f"seed{k[0]}" / k[1] / "net" / "sim" / "trace.npz")["capacity"] for k in res}
    for s in (0, 1):
        np.testing.assert_array_equal(cap[(s, "learning")], cap[(s, "frozen")])
    assert not np.array_equal(cap[(0, "frozen")], cap[(1, "frozen")])
    assert [r["seed"] for r in doc["rows"]] == [0, 1] and doc["summary"]["last_ankh_diff"]["n"] == 2
    assert (out / "compare.md").read_text().startswith("# Online fine-tuning against the frozen policy")


def test_objective_and_operating_point_times_by_hand():
    """The learner's objective per window (records_*_minute.reward_mean) and each arm's
    operating-point time (results.json operating_point) go into the rows and the spread."""
    arms = _fake([0, 1, 2])
    for s, (lrn, frz, t) in enumerate(((0.30, 0.20, 35.0), (0.25, 0.24, 0.0), (0.10, 0.15, None))):
        for a, v in (("learning", lrn), ("frozen", frz)):
            arms[s][a]["records_first_minute"] = {"reward_mean": 0.0}
            arms[s][a]["records_last_minute"] = {"reward_mean": v}
            arms[s][a]["operating_point"] = {"time_s": t if a == "learning" else 5.0, "first_time_s": 0.0}
    doc = compare.compare(arms)
    diffs = [r["last_objective_diff"] for r in doc["rows"]]
    assert diffs == pytest.approx([0.10, 0.01, -0.05])
    s = doc["summary"]["last_objective_diff"]
    assert (s["median"], s["min"], s["max"]) == pytest.approx((0.01, -0.05, 0.10))
    t = doc["summary"]["learning_op_time_s"]
    assert (t["n"], t["median"], t["max"]) == (2, 17.5, 35.0)  # the seed that never settled is left out
    md = compare.markdown(doc)
    assert "| 0 | learning | 0.0000 | 0.3000 | 0 | 35 |" in md and "| 2 | learning | 0.0000 | 0.1000 | 0 | – |" in md
    assert "last-minute objective over 3 seed(s): median +0.0100, min–max -0.0500 … +0.1000" in md
    assert "frozen arm, operating point held from over 3 seed(s): median 5 s, min–max 5 s … 5 s" in md


def test_operating_point_time_by_hand():
    from jaxcc.online.checks import operating_point_time

    # 5-s bins over 90 s; the last minute (bins from 30 s) at 10 Mbit/s / 20 ms.  The bin at
    # 40–45 s is 12 % off in throughput, so the point is reached at 45 s; without it, at 15 s (the
    # bins before are 20 % and 15 % off in RTT).
    t = [2.5 + 5 * i for i in range(18)]
    thr = [10.0] * 18
    rtt = [24.0, 23.0, 23.0] + [20.0] * 15
    thr_bad = list(thr)
    thr_bad[8] = 8.8
    rtt_bad = list(rtt)
    got = operating_point_time({"t_s": t, "throughput_mbps": thr_bad, "rtt_ms": rtt_bad}, bin_s=5.0)
    assert got["time_s"] == 45.0 and got["first_time_s"] == 15.0
    assert got["target_rtt_ms"] == 20.0
    assert got["target_throughput_mbps"] == pytest.approx((8.8 + 11 * 10.0) / 12)
    assert operating_point_time({"t_s": t, "throughput_mbps": thr, "rtt_ms": rtt}, bin_s=5.0)["time_s"] == 15.0
    assert operating_point_time({"t_s": [], "throughput_mbps": [], "rtt_ms": []}, bin_s=5.0)["time_s"] is None


def test_forgetting_check_of_an_unchanged_actor_is_zero_on_the_link_and_its_neighbours():
    """The start policy against itself: every run is the same simulation, so each pair's d_max is its
    own p95 delay (delay term 1, Pareto eq. 10) and every change is exactly 0."""
    from jaxcc.online.checks import ankh_changes

    pol = POLICY
    res = ankh_changes(pol, {"same": pol}, ["pareto/fixed50"], neighbours=2)["same"]["pareto/fixed50"]
    assert res["change"] == 0.0 and res["neighbourhood_change"] == 0.0 and res["neighbourhood_sd"] == 0.0
    b = res["before"]
    assert b["ankh"] == pytest.approx(((1.0 - b["utilization"]) + 1.0 + b["loss"]) / 3.0, rel=1e-6)
    # The neighbours are other runs than the link as named (RTTs within 3 %, later starts).
    assert res["neighbourhood_ankh_before"] != b["ankh"] and res["neighbours"] == 2
    with pytest.raises(ValueError, match="'start'"):
        ankh_changes(pol, {"start": pol}, ["pareto/fixed50"])


def test_forgetting_in_the_report_reads_the_neighbourhood_where_measured():
    """Per seed the learning arm's worst old link: the neighbourhood's change where the check ran
    neighbours, else the one run's (an arm run with ``--old-env-neighbours=0``)."""
    arms = _fake([0, 1, 2])
    arms[0]["learning"].update(old_env_ankh_change={"a": 0.20, "b": 0.01},
                               old_env_neighbourhood_change={"a": 0.02, "b": 0.03})
    arms[1]["learning"].update(old_env_ankh_change={"a": -0.10, "b": 0.04},
                               old_env_neighbourhood_change={"a": None, "b": None})
    doc = compare.compare(arms)
    rows = {r["seed"]: r["learning"] for r in doc["rows"]}
    assert (rows[0]["old_worst_change"], rows[0]["old_worst_link"]) == (0.03, "b")
    assert (rows[1]["old_worst_change"], rows[1]["old_worst_link"]) == (0.04, "b")
    assert rows[2]["old_worst_change"] is None  # no forgetting check ran
    s = doc["summary"]["learning_old_worst_change"]
    assert s["n"] == 2 and s["median"] == pytest.approx(0.035)
    assert ("forgetting (the learning arm's worst old link, Ankh change) over 2 seed(s): median +3.5 %, "
            "min–max +3.0 % … +4.0 %") in compare.markdown(doc)
