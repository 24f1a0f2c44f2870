"""DeepCC's target completion ratio (``jaxcc.tcr``, ``jaxcc.evaluation.metrics.tcr_met``, bar set ``deepcc``).

Every expected value here is computed by hand from the link (capacities, buffer, window) or from
the sampled targets and a fixed-rate sender's known steady state, never from the code under test.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from jaxcc import scenarios, tcr
from jaxcc.evaluation import tcr as evaluation_tcr
from jaxcc.evaluation import bars
from jaxcc.evaluation import metrics
from jaxcc.sim import links
from jaxcc.sim.trace import SHIPPED_TRACES

MBPS = 125_000.0


def _spec(tmp_path, link, *, rtt_ms=40.0, duration=4.0, flows=1, name="s.json"):
    spec = {"name": name.split(".")[0], "duration_s": duration, "link": link,
            "flows": [{"rtt_ms": rtt_ms, "controller": "bbr"} for _ in range(flows)]}
    p = tmp_path / name
    p.write_text(json.dumps(spec))
    return str(p)


# ----------------------------------------------------------------------------- the cellular link


def test_deepcc_cellular_is_the_papers_link():
    """§VI-A: the AT&T driving trace of [8] (Sprout's, downlink), 200 ms min RTT, 140 packets."""
    sc = scenarios.get_scenario("deepcc/cellular")
    assert "deepcc/cellular" in scenarios.SUITES["deepcc"]
    assert sc.link.trace == os.path.join(SHIPPED_TRACES, "ATT-LTE-driving.down")
    assert sc.link.buffer_bytes == 140 * 1500
    assert [f.rtt_ms for f in sc.flows] == [200.0] and sc.duration_s == 60.0 and sc.link.loss == 0.0
    # window: 10 tuning intervals of 4 x 200 ms = 8 s, to the end (60 s)
    assert evaluation_tcr.measurement_window(sc) == pytest.approx((8.0, 60.0))
    # mean capacity by hand from the trace lines: one 1500-byte opportunity per line; the 10-ms
    # bins align with 8 s and 60 s, so it is the lines stamped in [8000, 60000) ms
    ts = np.array([int(x) for x in open(sc.link.trace)])
    hand = np.count_nonzero((ts >= 8000) & (ts < 60000)) * 1500 / 52.0 / MBPS
    r = evaluation_tcr.link_ranges(sc, seed=0)
    assert r["mean_capacity_mbps"] == pytest.approx(hand, rel=1e-12)
    assert r["max_delay_ms"] == pytest.approx(140 * 1500 / (hand * MBPS) * 1e3, rel=1e-12)
    assert r["max_loss"] == 0.10


# ----------------------------------------------------------------------------- ranges and targets


def test_target_ranges_on_a_hand_computed_link(tmp_path):
    # 4 Mbit/s for 2 s, then 12 Mbit/s; 25 ms RTT -> window from 40 x 25 ms = 1 s to 6 s:
    # (4 x 1 s + 12 x 4 s) / 5 s = 10.4 Mbit/s; 130 kB at 10.4 Mbit/s = 100 ms.
    sc = scenarios.load_scenario(_spec(tmp_path, {"schedule": [[0, 4], [2, 12]], "buffer_bytes": 130_000},
                                       rtt_ms=25.0, duration=6.0))
    r = evaluation_tcr.link_ranges(sc, seed=0)
    assert r["window_s"] == pytest.approx([1.0, 6.0])
    assert r["mean_capacity_mbps"] == pytest.approx(10.4, rel=1e-12)
    assert r["max_throughput_mbps"] == pytest.approx(10.4, rel=1e-12)
    assert r["max_delay_ms"] == pytest.approx(100.0, rel=1e-12)
    t = evaluation_tcr.link_targets(sc.name, r, 4000, seed=7)
    assert t.shape == (4000, 3)
    for col, hi in ((0, 10.4), (1, 100.0), (2, 0.10)):
        assert t[:, col].min() >= 0 and t[:, col].max() <= hi
        assert t[:, col].max() > 0.99 * hi and t[:, col].min() < 0.01 * hi  # spans the range
        assert t[:, col].mean() == pytest.approx(hi / 2, rel=0.05)  # uniform
    # fixed by the link and the seed alone: the same again, another seed or link name differs
    assert np.array_equal(t, evaluation_tcr.link_targets(sc.name, r, 4000, seed=7))
    assert not np.allclose(t, evaluation_tcr.link_targets(sc.name, r, 4000, seed=8))
    assert not np.allclose(t, evaluation_tcr.link_targets("other", r, 4000, seed=7))


def test_window_is_capped_at_half_the_run(tmp_path):
    # 100 ms RTT: 40 RTTs = 4 s > half of 6 s -> window 3-6 s, all at 12 Mbit/s
    sc = scenarios.load_scenario(_spec(tmp_path, {"schedule": [[0, 4], [2, 12]], "buffer_bytes": 150_000},
                                       rtt_ms=100.0, duration=6.0))
    r = evaluation_tcr.link_ranges(sc, seed=0)
    assert r["window_s"] == pytest.approx([3.0, 6.0])
    assert r["mean_capacity_mbps"] == pytest.approx(12.0, rel=1e-12)
    assert r["max_delay_ms"] == pytest.approx(100.0, rel=1e-12)  # 150 kB at 12 Mbit/s


def test_mean_capacity_of_a_looping_schedule_by_hand():
    a, b = 3.0, 7.0  # a on [0, 1), b on [1, 2), repeating every 2 s
    s = links.Schedule(np.array([0.0, 1.0]), np.array([a, b]), period=2.0)
    # [1.5, 4.5]: b x 0.5 + a x 1 + b x 1 + a x 0.5 = 1.5 (a + b) over 3 s
    assert evaluation_tcr.mean_capacity(s, (1.5, 4.5)) == pytest.approx((a + b) / 2)
    assert evaluation_tcr.mean_capacity(s, (0.0, 0.5)) == pytest.approx(a)
    assert evaluation_tcr.served_bytes(s, 5.0) == pytest.approx(2 * (a + b) + a)


# ----------------------------------------------------------------------------- the met criterion


def test_met_criterion_against_hand_made_metrics():
    targets = np.array([[5.0, 50.0, 0.01],   # met: 6 >= 5, 40 <= 50, 0 <= 0.01
                        [6.0, 40.0, 0.0],    # met at every boundary (>=, <=, <=)
                        [6.1, 50.0, 0.05],   # throughput short
                        [1.0, 39.9, 0.05],   # delay over
                        [1.0, 90.0, -0.1]])  # loss over
    got = metrics.tcr_met([6.0, 40.0, 0.0], targets)
    assert got.tolist() == [True, True, False, False, False]
    assert metrics.tcr([6.0, 40.0, 0.0], targets) == pytest.approx(2 / 5)
    # one result per target (a tuned scheme): row i judged on target i only
    per = np.array([[5.0, 50.0, 0.01], [5.0, 50.0, 0.01], [7.0, 1.0, 0.0], [0.5, 1.0, 0.0], [2.0, 80.0, 0.0]])
    assert metrics.tcr_met(per, targets).tolist() == [True, False, True, False, False]
    # not measured (NaN) meets nothing
    assert not metrics.tcr_met([float("nan"), 1.0, 0.0], targets).any()
    with pytest.raises(ValueError, match=r"achieved must be \[3\] or \[5, 3\]"):
        metrics.tcr_met(np.zeros((4, 3)), targets)


# ----------------------------------------------------------------------------- end to end


def test_fixed_rate_senders_end_to_end(tmp_path, capsys):
    """10 Mbit/s, 40 ms, 100 kB, 4 s (window 1.6-4 s).  In steady state a fixed rate r < 10 Mbit/s
    gets r, a one-packet queue (1500 B at 10 Mbit/s = 1.2 ms) and no loss; r = 11 Mbit/s fills the
    buffer (100 kB at 10 Mbit/s = 80 ms) and loses 1/11 of what it sends."""
    spec = _spec(tmp_path, {"bandwidth_mbps": 10, "buffer_bytes": 100_000})
    out = tmp_path / "out"
    rc = tcr.run_cli(["tcr", "--controller=fixed:5,fixed:9,fixed:11,bbr", f"--scenario-file={spec}",
                      "--targets=60", "--seed=3", f"--out={out}", "--noprogress"])
    assert rc == 0, capsys.readouterr().err
    doc = json.load(open(out / "results.json"))
    (link,) = doc["links"]
    assert link["window_s"] == pytest.approx([1.6, 4.0])
    assert link["mean_capacity_mbps"] == pytest.approx(10.0) and link["max_delay_ms"] == pytest.approx(80.0)
    targets = np.array(link["targets"])
    assert targets.shape == (60, 3)
    assert np.array_equal(targets, evaluation_tcr.link_targets("s", evaluation_tcr.link_ranges(
        scenarios.load_scenario(spec), 3), 60, 3))  # the link's own targets
    rows = {r["controller"]: r for r in doc["tcr"]}
    assert list(rows) == ["fixed:5", "fixed:9", "fixed:11", "bbr"]
    hand = {"fixed:5": (5.0, 1.2, 0.0), "fixed:9": (9.0, 1.2, 0.0), "fixed:11": (10.0, 80.0, 1 / 11)}
    for name, (thr, q, loss) in hand.items():
        m = rows[name]["measured"]
        assert m["throughput_mbps"] == pytest.approx(thr, rel=1e-4)
        assert m["p95_qdelay_ms"] == pytest.approx(q, rel=1e-3)
        assert m["loss"] == pytest.approx(loss, abs=1e-3)
        # no target within the tolerance of a boundary, so the hand values decide every flag
        assert np.all(np.abs(targets[:, 0] - thr) > 1e-3) and np.all(np.abs(targets[:, 1] - q) > 0.1)
        want = (targets[:, 0] <= thr) & (targets[:, 1] >= q) & (targets[:, 2] >= loss)
        assert rows[name]["met"] == want.tolist(), name
        assert rows[name]["tcr"] == pytest.approx(want.mean()) and rows[name]["met_count"] == int(want.sum())
        assert rows[name]["targets"] == 60 and rows[name]["tuned"] is False
    assert 0.3 < rows["fixed:5"]["tcr"] < rows["fixed:9"]["tcr"]  # a sanity check on the draw
    assert rows["fixed:11"]["tcr"] == 0.0  # a full buffer is the top of T2's range
    # every row's flags follow from its measured metrics and the targets (anyone can recompute)
    for r in doc["tcr"]:
        m = r["measured"]
        assert r["met"] == metrics.tcr_met([m["throughput_mbps"], m["p95_qdelay_ms"], m["loss"]], targets).tolist()
    assert doc["meta"]["seed"] == 3 and doc["meta"]["targets"] == 60
    assert all(os.path.getsize(out / "plots" / f"tcr_s.{e}") > 10_000 for e in ("png", "pdf", "svg"))
    # --records re-judges without simulating and keeps the rows
    out2 = tmp_path / "again"
    assert tcr.run_cli(["tcr", f"--records={out / 'results.json'}", f"--out={out2}", "--noplots"]) == 0
    assert json.load(open(out2 / "results.json"))["tcr"] == doc["tcr"]


def test_tuned_policy_runs_one_lane_per_target_in_one_batch(tmp_path, monkeypatch):
    """A deepcc_v1 policy runs once per target, all lanes in one run_batch call, and lane i is judged
    on target i: the lanes tune towards different targets, so they do not all measure the same."""
    from jaxcc import policyfile
    from jaxcc.sim import runner

    pol = tmp_path / "dcc.safetensors"
    policyfile.save(pol, *policyfile.make_feature_policy("deepcc_v1", 0))
    (e,) = evaluation_tcr.controller_entries(f"policy:{pol}")
    assert e.tuned and e.label == "dcc"
    assert not evaluation_tcr.controller_entries("bbr")[0].tuned
    # raw-policy:FILE keeps its name (no safety net in its lanes) and says so in its label
    (raw,) = evaluation_tcr.controller_entries(f"raw-policy:{pol}")
    assert raw.tuned and raw.label == "raw:dcc" and raw.name == f"raw-policy:{pol}"

    calls = []
    real = runner.run_batch

    def spy(b):
        calls.append(len(b.items))
        return real(b)

    monkeypatch.setattr(runner, "run_batch", spy)
    sc = scenarios.load_scenario(_spec(tmp_path, {"bandwidth_mbps": 4, "buffer_bytes": 60_000}, rtt_ms=40.0,
                                       duration=2.0))
    rep = evaluation_tcr.run_tcr([sc], [e], n_targets=5, seed=1, progress=False)
    assert calls == [5]
    (row,) = rep["tcr"]
    targets = np.array(rep["links"][0]["targets"])
    per = np.array([[m["throughput_mbps"], m["p95_qdelay_ms"], m["loss"]] for m in row["measured"]])
    assert per.shape == (5, 3)
    assert row["met"] == metrics.tcr_met(per, targets).tolist()
    assert not np.allclose(per, per[0], equal_nan=True)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args, message", [
    (["--suite=deepcc", "--out=O"], "--controller: give the controllers"),
    (["--controller=bbr", "--out=O"], "give exactly one of --suite, --scenario, --scenario-file"),
    (["--controller=bbr", "--suite=deepcc", "--scenario=deepcc/wifi", "--out=O"], "give exactly one of"),
    (["--controller=bbr", "--suite=deepcc", "--targets=0", "--out=O"], "--targets must be in [1, 100000], got 0"),
    (["--controller=bbr", "--suite=deepcc", "--seed=-1", "--out=O"], "--seed must be >= 0"),
    (["--controller=bbr,nope", "--suite=deepcc", "--out=O"], "--controller: unknown controller 'nope'"),
    (["--controller=bbr,bbr", "--suite=deepcc", "--out=O"], "--controller: 'bbr' is given twice"),
    (["--controller=policy:/no/such.safetensors", "--suite=deepcc", "--out=O"], "does not exist"),
    (["--controller=kernel:cubic", "--suite=deepcc", "--out=O"], "runs only in emulation"),
    (["--controller=bbr", "--suite=nope", "--out=O"], "unknown suite 'nope'"),
    (["--controller=bbr", "--suite=deepcc"], "--out: give the output folder"),
    (["--controller=bbr", "--suite=deepcc", "--bars=nope", "--out=O"], "--bars: unknown bar set 'nope'"),
    (["--records=/no/such/results.json", "--out=O"], "--records: /no/such/results.json: cannot read"),
    (["--controller=bbr", "--suite=deepcc", "--tuner=fast", "--out=O"], "--tuner must be one of paper, p95, got 'fast'"),
])
def test_bad_input_is_one_line(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tcr.run_cli(["tcr"] + args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: ") and message in err, err


def test_multi_flow_scenario_is_refused(tmp_path, capsys):
    spec = _spec(tmp_path, {"bandwidth_mbps": 10, "buffer_bytes": 100_000}, flows=2, name="two.json")
    assert tcr.run_cli(["tcr", "--controller=bbr", f"--scenario-file={spec}", f"--out={tmp_path}/o"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: two: TCR judges one flow against each target; the scenario has 2 flows (give a single-flow scenario)"


def test_a_pair_the_simulator_refuses_fails_before_any_link_runs(tmp_path, capsys, monkeypatch):
    """A flow with a start rate (``robust/start1pct``) runs only a learned sender: with BBR in the
    list the run stops in one line naming the link and controller, before the first link (here a
    runnable one, listed first) is simulated."""
    spec = _spec(tmp_path, {"bandwidth_mbps": 10, "buffer_bytes": 100_000}, name="ok.json")
    sims = []
    monkeypatch.setattr(evaluation_tcr, "_simulate", lambda *a, **k: sims.append(a) or [])
    scs = [scenarios.load_scenario(spec), scenarios.get_scenario("robust/start1pct")]
    with pytest.raises(ValueError) as e:
        evaluation_tcr.run_tcr(scs, evaluation_tcr.controller_entries("bbr"), n_targets=5, progress=False)
    assert str(e.value).startswith("robust/start1pct with bbr: flows[0].init_rate_mbps: only a learned sender")
    assert sims == []


def test_records_that_are_not_a_tcr_output(tmp_path, capsys):
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"results": []}))
    assert tcr.run_cli(["tcr", f"--records={p}", f"--out={tmp_path}/o"]) == 2
    assert "no 'tcr' and 'links' lists (not a jaxcc.tcr output)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- bar set deepcc


def _rows(dcc, others, tuned="dcc"):
    out = []
    for link, v in dcc.items():
        out.append({"scenario": link, "controller": tuned, "tcr": v, "targets": 500, "met_count": round(500 * v),
                    "tuned": True})
    for (link, name), v in others.items():
        out.append({"scenario": link, "controller": name, "tcr": v, "targets": 500, "tuned": False})
    return out


LINKS = ("deepcc/wifi", "deepcc/cellular", "deepcc/satellite")


def test_deepcc_bars_at_their_thresholds():
    dcc = {"deepcc/wifi": 0.80, "deepcc/cellular": 0.674, "deepcc/satellite": 0.30}
    others = {(ln, n): 0.29 for ln in LINKS for n in ("bbr", "cubic", "aurora")}
    v = bars.check("deepcc", _rows(dcc, others))
    assert list(v) == ["dcc"]  # the untuned policy (aurora) gets no verdicts of its own
    assert [x.bar for x in v["dcc"]] == ["deepcc/cellular TCR >= 67.4%", "deepcc/wifi TCR >= 80%"] + [
        f"{ln}: TCR above every other controller's" for ln in LINKS]
    assert all(x.met for x in v["dcc"]), bars.format_verdicts(v)
    # just below a floor, and a tie with the best other controller, are misses
    v = bars.check("deepcc", _rows({**dcc, "deepcc/cellular": 0.672, "deepcc/satellite": 0.29}, others))
    assert [x.met for x in v["dcc"]] == [False, True, True, True, False]
    assert "29.0% vs best other 29.0%" in v["dcc"][4].value


def test_deepcc_bars_missing_links_or_others_are_unmet_with_the_reason():
    v = bars.check("deepcc", _rows({"deepcc/wifi": 0.9}, {("deepcc/wifi", "bbr"): 0.1}))["dcc"]
    assert [x.met for x in v] == [False, True, True, False, False]
    assert v[0].value.startswith("not evaluated (needs deepcc/cellular")
    assert v[3].value.startswith("not evaluated (needs deepcc/cellular")
    v = bars.check("deepcc", _rows({ln: 0.9 for ln in LINKS}, {}))["dcc"]
    assert v[2].value == "not evaluated (no other controller judged there)" and not v[2].met
    # a second DeepCC policy (another training seed) is not an "other controller"
    rows = _rows({ln: 0.9 for ln in LINKS}, {(ln, "bbr"): 0.2 for ln in LINKS})
    rows += [dict(r, controller="dcc2", tcr=0.95) for r in rows if r["controller"] == "dcc"]
    v = bars.check("deepcc", rows)
    assert all(x.met for x in v["dcc"]) and all(x.met for x in v["dcc2"])


def test_a_flows_own_objective_is_dropped_for_the_untuned_runs(tmp_path):
    """A scenario file's MOCC preference would refuse bbr; TCR runs every untuned controller at its
    default objective, so bbr runs (and fixed:2 on 4 Mbit/s gets 2 Mbit/s)."""
    p = tmp_path / "pref.json"
    p.write_text(json.dumps({"name": "pref", "duration_s": 2.0, "link": {"bandwidth_mbps": 4, "buffer_bytes": 60_000},
                             "flows": [{"rtt_ms": 40.0, "controller": "bbr", "preference": [1, 0, 0]}]}))
    sc = scenarios.load_scenario(str(p))
    assert evaluation_tcr.untuned(sc, "bbr").flows[0].preference is None
    rep = evaluation_tcr.run_tcr([sc], evaluation_tcr.controller_entries("bbr,fixed:2"), n_targets=3, seed=0, progress=False)
    assert [r["controller"] for r in rep["tcr"]] == ["bbr", "fixed:2"]
    assert rep["tcr"][1]["measured"]["throughput_mbps"] == pytest.approx(2.0, rel=1e-4)


def test_tuner_reaches_the_tuned_lanes(tmp_path):
    """``--tuner`` (``run_tcr(tuner=)``) becomes each tuned lane's target field ``"tuner"``; "p95" is
    the default."""
    sc = scenarios.load_scenario(_spec(tmp_path, {"bandwidth_mbps": 4, "buffer_bytes": 60_000}, rtt_ms=40.0,
                                       duration=2.0))
    assert evaluation_tcr.target_field([1, 2, 0.01]) == {"throughput_mbps": 1.0, "delay_ms": 2.0, "loss": 0.01,
                                                         "tuner": "p95"}
    assert evaluation_tcr.target_field([1, 2, 0.01], "paper")["tuner"] == "paper"
    assert evaluation_tcr.with_target(sc, "bbr", [1, 2, 0.01], "paper").flows[0].tuner == "paper"
    assert evaluation_tcr.with_target(sc, "bbr", [1, 2, 0.01]).flows[0].tuner == "p95"
    with pytest.raises(ValueError, match="--tuner must be one of paper, p95, got 'x'"):
        evaluation_tcr.run_tcr([sc], evaluation_tcr.controller_entries("bbr"), n_targets=1, tuner="x")
