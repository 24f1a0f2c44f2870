"""jaxcc.preference_sweep and the ``mocc`` bar set of jaxcc.evaluation.bars (MOCC's evaluation).

Spearman and domination against hand-computed values; every bar on synthetic sweep records (one
set that meets them all, then one change per bar that misses exactly that bar); the tables and
plots on the same records; and an end-to-end run of the command on a random MOCC policy.
"""

import json
import math
import os
import subprocess
import sys

import pytest

from jaxcc import evaluate
from jaxcc.evaluation import bars
from jaxcc import preference_sweep as ps
from jaxcc.evaluation import preference_sweep as evaluation_preference_sweep
from jaxcc.scenarios import SUITES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ----------------------------------------------------------------------------- Spearman, domination


def test_spearman_hand_computed_with_ties():
    # y ranks (average ranks for the tied 7s): 1, 2, 3.5, 5, 3.5; x ranks 1..5.
    # Pearson of the ranks: sum dx*dy = 8, sum dx^2 = 10, sum dy^2 = 9.5 -> 8 / sqrt(95).
    assert bars.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95), abs=1e-12)
    # ties in x: ranks 1.5, 1.5, 3, 4 (dx = -1, -1, 0.5, 1.5) against 1, 2, 3, 4 (dy = -1.5, -0.5,
    # 0.5, 1.5): sum dx*dy = 4.5, sum dx^2 = 4.5, sum dy^2 = 5 -> 4.5 / sqrt(4.5 * 5)
    assert bars.spearman([1, 1, 2, 3], [10, 20, 30, 40]) == pytest.approx(4.5 / math.sqrt(4.5 * 5), abs=1e-12)
    # no ties: 1 - 6 sum d^2 / (n (n^2 - 1)); d = (0, 1, -1, 0) -> 1 - 12 / 60 = 0.8
    assert bars.spearman([1, 2, 3, 4], [1.0, 3.0, 2.0, 4.0]) == pytest.approx(0.8, abs=1e-12)
    assert bars.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert bars.spearman([1, 2, 3], [1, 10, 100]) == pytest.approx(1.0)  # ranks, not values


def test_spearman_undefined_for_a_constant_series():
    assert math.isnan(bars.spearman([1, 2, 3], [5, 5, 5]))
    assert math.isnan(bars.spearman([1], [2]))
    assert math.isnan(bars.spearman([1, 2, 3], [1, float("nan"), 3]))
    with pytest.raises(ValueError, match="differ in length"):
        bars.spearman([1, 2], [1, 2, 3])


@pytest.mark.parametrize("a, b, want", [
    ((10, 5), (9, 6), True),  # better in both
    ((10, 5), (10, 6), True),  # equal throughput, strictly lower delay
    ((10, 5), (9, 5), True),  # strictly higher throughput, equal delay
    ((10, 5), (10, 5), False),  # equal: nothing strict
    ((10, 5), (11, 1), False),  # worse in both
    ((10, 6), (9, 5), False),  # a trade-off
    ((9, 5), (10, 6), False),
])
def test_dominates(a, b, want):
    assert bars.dominates(a, b) is want


# ----------------------------------------------------------------------------- synthetic sweeps

CAP = {link: 12.0 for link in SUITES["mocc"]}
CAP["mocc/50mbps"] = 50.0


def _rec(link, controller, thr, q, pref=None, loss=0.0):
    return {"scenario": link, "controller": controller, "throughput_mbps": thr, "utilization": thr / CAP[link],
            "capacity_mbps": CAP[link], "p95_qdelay_ms": q, "p95_owd_ms": q + 10.0, "loss": loss,
            "preference": None if pref is None else list(pref), "policy_file": None if pref is None else "/x.safetensors"}


def sweep_records(label="M", baselines=True):
    """A sweep that meets every mocc bar: on each link throughput = cap (0.5 + 0.45 w_thr) and p95
    queueing = 1 + 40 w_thr ms along the edge; the loss-heavy points in between; BBR, CUBIC and
    Copa each dominate some points but none all."""
    out = []
    for link in SUITES["mocc"]:
        for p in evaluation_preference_sweep.DEFAULT_PREFERENCES:
            w = p[0] if p[2] == 0 else 0.5
            out.append(_rec(link, label, CAP[link] * (0.5 + 0.45 * w), 1.0 + 40.0 * w, p))
        if baselines:
            out += [_rec(link, "bbr", 0.97 * CAP[link], 20.0), _rec(link, "cubic", 0.999 * CAP[link], 60.0),
                    _rec(link, "copa", 0.9 * CAP[link], 5.0)]
    return out


def _set(records, label, link, pref, **kw):
    for r in records:
        if r["controller"] == label and r["scenario"] == link and r["preference"] == list(pref):
            r.update(kw)
            return
    raise KeyError((label, link, pref))


def _verdicts(records, label="M"):
    return {v.bar: v for v in bars.check("mocc", records)[label]}


def _failed(records, label="M"):
    return sorted(b for b, v in _verdicts(records, label).items() if not v.met)


N_BARS = 2 * len(SUITES["mocc"]) + 2  # (a) and (d) per link, (b) and (c) once


def test_default_preferences_cover_the_edge_and_loss():
    edge = [p for p in evaluation_preference_sweep.DEFAULT_PREFERENCES if p[2] == 0]
    assert len(edge) >= 9 and [p[0] for p in edge] == sorted((p[0] for p in edge), reverse=True)
    assert edge[0] == (1.0, 0.0, 0.0) and edge[-1] == (0.0, 1.0, 0.0)
    assert len([p for p in evaluation_preference_sweep.DEFAULT_PREFERENCES if p[2] >= 0.5]) >= 2
    for p in evaluation_preference_sweep.DEFAULT_PREFERENCES:
        assert evaluation_preference_sweep.check_preference(p) == p


def test_mocc_links_are_the_suite_with_the_lte_traces():
    assert SUITES["mocc"] == ("mocc/12mbps", "mocc/50mbps", "mocc/buffer18kb", "mocc/buffer36kb", "mocc/buffer54kb",
                              "mocc/buffer72kb", "mocc/buffer90kb", "mocc/lte-up", "mocc/lte-down")
    assert bars.MOCC_LINKS == SUITES["mocc"]


def test_all_mocc_bars_met():
    v = bars.check("mocc", sweep_records())
    assert list(v) == ["M"]  # the baselines are not judged
    assert len(v["M"]) == N_BARS and all(x.met for x in v["M"]), bars.format_verdicts(v)
    a = _verdicts(sweep_records())[[b for b in _verdicts(sweep_records()) if b.startswith("mocc/12mbps: Spearman")][0]]
    assert a.value == "1.00 / 1.00 over 11 points"


def test_bar_a_misses_on_one_link_when_throughput_does_not_fall():
    recs = sweep_records()
    # swap two edge throughputs on lte-up: rho drops to 1 - 6*2*... < 0.8? make it clearly non-monotone
    for w in (1.0, 0.9, 0.8, 0.7, 0.6):
        _set(recs, "M", "mocc/lte-up", (w, round(1 - w, 10), 0.0), throughput_mbps=12.0 * (0.5 + 0.45 * (1 - w)))
    assert _failed(recs) == [b for b in _verdicts(recs) if b.startswith("mocc/lte-up: Spearman")]


def test_bar_a_misses_when_delay_is_constant():
    recs = sweep_records()
    for r in recs:
        if r["scenario"] == "mocc/buffer18kb" and r["controller"] == "M":
            r["p95_qdelay_ms"] = 12.0  # a full 18 KB buffer at every preference
    (bar,) = _failed(recs)
    assert bar.startswith("mocc/buffer18kb: Spearman")
    assert "undefined (constant)" in _verdicts(recs)[bar].value
    recs = sweep_records()
    _set(recs, "M", "mocc/buffer18kb", (0.0, 1.0, 0.0), p95_qdelay_ms=float("nan"))  # e.g. nothing sent
    (bar,) = _failed(recs)
    assert "undefined (not measured at some preference)" in _verdicts(recs)[bar].value


def test_bar_a_counts_a_delay_at_or_below_2_ms_as_flat():
    """A p95 queueing delay that stays <= 2 ms at every edge point is flat (met, if throughput
    steers); 2.01 ms at one point is not, and the delay's rank correlation decides again."""
    recs = sweep_records()
    noise = [1.0, 2.0, 0.5, 1.5, 0.2, 1.9, 0.9, 1.1, 0.3, 1.7, 0.4]  # no rank order in w_thr
    for k, w in enumerate((1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0)):
        _set(recs, "M", "mocc/50mbps", (w, round(1 - w, 10), 0.0), p95_qdelay_ms=noise[k])
    bar = [b for b in _verdicts(recs) if b.startswith("mocc/50mbps: Spearman")][0]
    assert _failed(recs) == []
    assert "delay flat: <= 2 ms at every point" in _verdicts(recs)[bar].value
    _set(recs, "M", "mocc/50mbps", (0.9, 0.1, 0.0), p95_qdelay_ms=2.01)
    assert _failed(recs) == [bar]


def test_bar_a_needs_nine_edge_points():
    recs = [r for r in sweep_records() if not (r["scenario"] == "mocc/50mbps" and r["preference"]
                                               and r["preference"][0] in (0.1, 0.3, 0.5) and r["preference"][2] == 0)]
    (bar,) = _failed(recs)
    assert bar.startswith("mocc/50mbps: Spearman") and "8 edge preferences, needs >= 9" in _verdicts(recs)[bar].value


def test_bar_b_at_and_below_the_threshold():
    recs = sweep_records()
    _set(recs, "M", "mocc/12mbps", (1.0, 0.0, 0.0), utilization=0.90)
    assert _failed(recs) == []
    _set(recs, "M", "mocc/12mbps", (1.0, 0.0, 0.0), utilization=0.8999)
    assert _failed(recs) == ["mocc/12mbps: most throughput-heavy preference util >= 0.9"]


def test_bar_c_delay_ratio_and_utilization():
    recs = sweep_records()  # throughput-heavy p95 q = 41 ms
    _set(recs, "M", "mocc/12mbps", (0.0, 1.0, 0.0), p95_qdelay_ms=0.25 * 41.0, utilization=0.5)
    assert _failed(recs) == []  # both exactly at the bar
    bar_c = [b for b in _verdicts(recs) if "most delay-heavy" in b][0]
    _set(recs, "M", "mocc/12mbps", (0.0, 1.0, 0.0), p95_qdelay_ms=0.26 * 41.0)
    assert _failed(recs) == [bar_c]
    _set(recs, "M", "mocc/12mbps", (0.0, 1.0, 0.0), p95_qdelay_ms=1.0, utilization=0.49)
    assert _failed(recs) == [bar_c]
    # only mocc/12mbps is judged: a low delay-heavy utilization elsewhere misses nothing
    recs = sweep_records()
    _set(recs, "M", "mocc/lte-down", (0.0, 1.0, 0.0), utilization=0.3)
    assert _failed(recs) == []


def test_bar_d_a_baseline_dominating_every_point():
    recs = sweep_records()
    for r in recs:
        if r["scenario"] == "mocc/buffer36kb" and r["controller"] == "copa":
            r.update(throughput_mbps=CAP["mocc/buffer36kb"], p95_qdelay_ms=0.5)  # full rate at 0.5 ms
    (bar,) = _failed(recs)
    assert bar.startswith("mocc/buffer36kb: no baseline") and _verdicts(recs)[bar].value == "dominated by copa"
    # dominating all edge points but not the loss-heavy ones is not dominating every point
    recs = sweep_records()
    for r in recs:
        if r["scenario"] == "mocc/12mbps" and r["controller"] == "M" and r["preference"][2] > 0:
            r.update(throughput_mbps=11.99, p95_qdelay_ms=0.1)
        if r["scenario"] == "mocc/12mbps" and r["controller"] == "bbr":
            r.update(throughput_mbps=11.0, p95_qdelay_ms=0.5)
    assert not [b for b in _failed(recs) if "no baseline" in b]


def test_bars_without_sweep_records_are_not_evaluated():
    recs = sweep_records()
    for r in recs:  # jaxcc.evaluate's records: no preference
        if r["controller"] == "M":
            del r["preference"]
    v = bars.check("mocc", recs)["M"]
    assert len(v) == N_BARS and not any(x.met for x in v)
    assert all(x.value.startswith("not evaluated") and "preference_sweep" in x.value for x in v)
    nob = [r for r in sweep_records() if r["controller"] != "cubic"]
    d = [x for x in bars.check("mocc", nob)["M"] if "no baseline" in x.bar]
    assert all(not x.met and "needs" in x.value and "bbr,cubic,copa" in x.value for x in d)


def test_multi_seed_report_counts_seeds_and_takes_medians():
    recs = sweep_records("s0") + sweep_records("s1", baselines=False) + sweep_records("s2", baselines=False)
    _set(recs, "s1", "mocc/12mbps", (1.0, 0.0, 0.0), utilization=0.80)
    _set(recs, "s2", "mocc/12mbps", (1.0, 0.0, 0.0), utilization=0.85)
    text, js = evaluation_preference_sweep.bars_report(recs)
    (row,) = [s for s in js["seeds"] if "most throughput-heavy" in s["bar"]]
    assert row["seeds_meeting"] == 1 and row["seeds"] == 3
    assert row["median"] == "utilization 0.85"  # of 0.95, 0.80, 0.85
    a = [s for s in js["seeds"] if s["bar"].startswith("mocc/12mbps: Spearman")][0]
    assert a["seeds_meeting"] == 3 and a["median"].startswith("rho_throughput 1, rho_p95_qdelay 1")
    assert "policies meeting every bar: s0 (1 of 3)" in text
    assert set(js["verdicts"]) == {"s0", "s1", "s2"}


# ----------------------------------------------------------------------------- inputs, table, plots


def test_parse_preferences():
    assert evaluation_preference_sweep.parse_preferences(None) == list(evaluation_preference_sweep.DEFAULT_PREFERENCES)
    assert evaluation_preference_sweep.parse_preferences("1,0,0; 0.3,0.7,0") == [(1.0, 0.0, 0.0), (0.3, 0.7, 0.0)]
    assert evaluation_preference_sweep.parse_preferences("0.3334,0.3333,0.3333") == [(0.3334, 0.3333, 0.3333)]
    for bad, msg in (("1,0", r"--preferences\[0\]: must be 3 numbers"), ("0.5,0.6,0", r"summing to 1"),
                     ("1,0,0;x,y,z", r"--preferences\[1\]"), ("1.5,-0.5,0", r">= 0"),
                     ("1,0,0;1,0,0", "given twice"), (";", "no preference")):
        with pytest.raises(ValueError, match=msg):
            evaluation_preference_sweep.parse_preferences(bad)


def test_policy_labels_one_per_seed(tmp_path):
    files = []
    for seed in ("s0", "s1", "s2"):
        (tmp_path / seed).mkdir()
        files.append(tmp_path / seed / "mocc.safetensors")
        files[-1].write_bytes(b"x")  # only the names matter here
    (tmp_path / "bbr.safetensors").write_bytes(b"x")
    es = evaluation_preference_sweep.policy_entries(",".join(map(str, files + [tmp_path / "bbr.safetensors"])))
    assert [e.label for e in es] == ["mocc@s0", "mocc@s1", "mocc@s2", f"bbr@{tmp_path.name}"]
    (tmp_path / "other" / "s0").mkdir(parents=True)
    twin = tmp_path / "other" / "s0" / "mocc.safetensors"
    twin.write_bytes(b"x")
    assert [e.label for e in evaluation_preference_sweep.policy_entries(f"{files[0]},{twin}")] == ["mocc@s0", "mocc@s0#2"]
    assert [e.label for e in evaluation_preference_sweep.policy_entries(str(files[0]))] == ["mocc"]
    assert [e.name for e in es] == [f"policy:{f}" for f in files + [tmp_path / "bbr.safetensors"]]
    with pytest.raises(ValueError, match="given twice"):
        evaluation_preference_sweep.policy_entries(f"{files[0]},{files[0]}")
    with pytest.raises(ValueError, match="does not exist"):
        evaluation_preference_sweep.policy_entries(str(tmp_path / "nope.safetensors"))


def test_preference_variants_of_a_scenario(tmp_path):
    from jaxcc.scenarios import parse_scenario

    pol = tmp_path / "p.safetensors"
    pol.write_bytes(b"x")  # parsing checks only that the file exists
    sc = parse_scenario({"name": "two", "duration_s": 10.0, "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},
                         "flows": [{"rtt_ms": 20.0, "controller": f"policy:{pol}", "preference": [0.2, 0.8, 0.0],
                                    "preference_changes": [{"at_s": 5.0, "preference": [1, 0, 0]}]},
                                   {"rtt_ms": 40.0, "start_s": 2.0, "controller": "cubic"}]})
    v = evaluation_preference_sweep.preference_scenario(sc, str(pol), (0.7, 0.3, 0.0))
    assert v.name == "two@0.7,0.3,0.0"
    assert [(f.controller, f.preference, f.preference_changes) for f in v.flows] == [
        (f"policy:{pol}", (0.7, 0.3, 0.0), ())] * 2
    assert [(f.rtt_ms, f.start_s) for f in v.flows] == [(20.0, 0.0), (40.0, 2.0)]
    b = evaluation_preference_sweep.without_preferences(sc)
    assert b.name == "two" and [(f.preference, f.preference_changes) for f in b.flows] == [(None, ())] * 2


def test_table_and_plots_from_records(tmp_path):
    recs = sweep_records("s0") + sweep_records("s1", baselines=False)
    md = evaluation_preference_sweep.table_markdown(recs)
    assert md.count("| controller |") == 3  # 9 links, three per table
    row = [ln for ln in md.splitlines() if ln.startswith("| s1 (0.9/0.1/0) |")][0]
    # mocc/12mbps, first table: thr 12 (0.5 + 0.45 * 0.9) = 10.86, q 1 + 36 = 37.0, loss 0.00
    assert row.split(" | ")[1:4] == ["10.86", "37.0", "0.00"]
    assert [ln.split(" |")[0] for ln in md.splitlines()[4:7]] == ["| bbr", "| cubic", "| copa"]
    meta = {"command": "test"}
    out = evaluation_preference_sweep.write_outputs(recs, str(tmp_path), meta)
    names = sorted(os.path.relpath(f, tmp_path) for f in out["files"])
    assert names == sorted(["sweep.json", "bars.md", "table.md"]
                           + [f"plots/frontier_{ln}.{e}" for ln in ["all"] + [n.replace('/', '_') for n in SUITES["mocc"]]
                              for e in ("png", "pdf", "svg")])
    for f in out["files"]:
        assert os.path.getsize(f) > 0
    back, meta2 = evaluation_preference_sweep.load_sweep(str(tmp_path))
    assert meta2 == meta and len(back) == len(recs)
    assert bars.as_json(bars.check("mocc", back)) == json.load(open(tmp_path / "sweep.json"))["bars"]["verdicts"]


def test_load_sweep_rejects_other_files(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"results": [{"scenario": "a", "controller": "b"}]}))
    with pytest.raises(ValueError, match=r"results\[0\] lacks scenario/controller/preference"):
        evaluation_preference_sweep.load_sweep(str(tmp_path / "r.json"))
    with pytest.raises(ValueError, match="cannot read"):
        evaluation_preference_sweep.load_sweep(str(tmp_path / "nope.json"))


# ----------------------------------------------------------------------------- end to end


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "jaxcc.preference_sweep", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_cli_errors_are_one_line(tmp_path):
    for args, msg in ((["--out=" + str(tmp_path)], "--checkpoint: give the policy file"),
                      (["--checkpoint=/nope.safetensors", "--suite=mocc", "--out=" + str(tmp_path)], "does not exist"),
                      (["--records=" + str(tmp_path / "x.json"), "--out=" + str(tmp_path)], "cannot read"),
                      (["--checkpoint=/nope", "--bars=nope", "--out=" + str(tmp_path)], "unknown bar set")):
        r = _cli(*args)
        assert r.returncode == 2 and r.stderr.strip().startswith("error:") and msg in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_end_to_end_on_a_random_mocc_policy(tmp_path):
    """The command on a random MOCC policy (2 preferences, one 2-s link, BBR beside): every file is
    written, the records carry their preferences, and each equals what ``jaxcc.evaluate`` gives
    for a scenario file with that preference on the flow."""
    pol = tmp_path / "mocc.safetensors"
    r = subprocess.run([sys.executable, "-m", "jaxcc.policyfile", "--random=mocc_v1", f"--out={pol}"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "sweep"
    prefs = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]
    rc = ps.run_cli(["prog", f"--checkpoint={pol}", "--scenario=mocc/12mbps", "--duration=2", "--baselines=bbr",
                     "--preferences=" + ";".join(",".join(f"{v:g}" for v in p) for p in prefs), f"--out={out}",
                     "--progress=false"])
    assert rc == 0
    for f in ("sweep.json", "table.md", "bars.md", "plots/frontier_mocc_12mbps.png", "plots/frontier_all.png"):
        assert (out / f).stat().st_size > 0, f
    doc = json.loads((out / "sweep.json").read_text())
    recs = doc["results"]
    assert [(x["scenario"], x["controller"], x["preference"]) for x in recs] == [
        ("mocc/12mbps", "bbr", None), ("mocc/12mbps", "mocc", [1.0, 0.0, 0.0]), ("mocc/12mbps", "mocc", [0.0, 1.0, 0.0])]
    assert doc["meta"]["preferences"] == [list(p) for p in prefs] and doc["meta"]["policies"] == {"mocc": str(pol)}
    assert all(x["duration_s"] == 2.0 and "ankh" not in x for x in recs)
    assert "mocc (1/0/0)" in (out / "table.md").read_text()
    assert set(doc["bars"]["verdicts"]) == {"mocc"}  # judged (not evaluated: one link, two preferences)
    # the same runs through jaxcc.evaluate, one scenario file per preference
    files = []
    for i, p in enumerate(prefs):
        spec = {"name": f"p{i}", "duration_s": 2.0, "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},
                "flows": [{"rtt_ms": 20.0, "controller": f"policy:{pol}", "preference": list(p)}]}
        files.append(tmp_path / f"p{i}.json")
        files[-1].write_text(json.dumps(spec))
    ev = tmp_path / "ev"
    assert evaluate.run_cli(["prog", "--scenario-file=" + ",".join(map(str, files)), f"--out={ev}", "--plots=false",
                             "--progress=false"]) == 0
    by = {x["scenario"]: x for x in json.loads((ev / "results.json").read_text())["results"]}
    for i, x in enumerate(recs[1:]):
        for k in ("throughput_mbps", "p95_qdelay_ms", "loss"):
            assert x[k] == by[f"p{i}"][k], (x["preference"], k)
