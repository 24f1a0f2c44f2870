"""The evaluation command: argument validation, the results.json contract, plots, the CLI."""

import json
import os
import subprocess
import sys

import pytest

from jaxcc import evaluate
from jaxcc.evaluation import runs as evaluation_runs
from jaxcc.scenarios import SUITES, load_scenario

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY = {
    "name": "tiny", "duration_s": 3.0,
    "link": {"bandwidth_mbps": 12, "buffer_bytes": 60000},
    "flows": [{"rtt_ms": 40, "controller": "cubic"}, {"rtt_ms": 40, "start_s": 1.0, "controller": "bbr"}],
}
CONTRACT_KEYS = {"scenario", "controller", "throughput_mbps", "utilization", "p95_owd_ms", "p95_qdelay_ms", "loss",
                 "jain", "ankh", "per_flow"}
FLOW_KEYS = {"flow", "controller", "throughput_mbps", "p95_owd_ms", "loss"}


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "jaxcc.evaluate", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


# ----------------------------------------------------------------------------- validation (no simulation)


def test_controller_entries():
    assert evaluation_runs.controller_entries(None) == [evaluation_runs.ControllerEntry("own", None)]
    got = evaluation_runs.controller_entries("bbr, cubic,fixed:40,bbr")
    assert [e.label for e in got] == ["bbr", "cubic", "fixed:40"]
    with pytest.raises(ValueError, match="unknown controller 'vegas'.*bbr, cubic, reno, oracle, fixed:MBPS"):
        evaluation_runs.controller_entries("bbr,vegas")
    with pytest.raises(ValueError, match="only in emulation"):
        evaluation_runs.controller_entries("kernel:cubic")
    with pytest.raises(ValueError, match="empty name"):
        evaluation_runs.controller_entries("bbr,,cubic")


def test_resolve_scenarios_errors(tmp_path):
    with pytest.raises(ValueError, match="exactly one of --suite, --scenario, --scenario-file"):
        evaluation_runs.resolve_scenarios()
    with pytest.raises(ValueError, match="exactly one"):
        evaluation_runs.resolve_scenarios(suite="pareto", scenario="pareto/fixed50")
    with pytest.raises(ValueError, match="unknown suite 'nope'; suites: .*pareto"):
        evaluation_runs.resolve_scenarios(suite="nope")
    with pytest.raises(ValueError, match=r"unknown scenario\(s\) \['pareto/nope'\]; named scenarios: .*pareto/fixed50"):
        evaluation_runs.resolve_scenarios(scenario="pareto/fixed50,pareto/nope")
    with pytest.raises(ValueError, match="does not exist"):
        evaluation_runs.resolve_scenarios(scenario_file=str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**TINY, "link": {"buffer_bytes": 1000}}))
    with pytest.raises(ValueError, match="give exactly one of bandwidth_mbps"):
        evaluation_runs.resolve_scenarios(scenario_file=str(bad))
    scs, src = evaluation_runs.resolve_scenarios(scenario="pareto/fixed50,pareto/shared2")
    assert [s.name for s in scs] == ["pareto/fixed50", "pareto/shared2"] and "pareto/fixed50" in src


def test_trace_files_become_one_flow_links(tmp_path):
    from jaxcc.scenarios import catalogue
    from jaxcc.sim.trace import find_trace

    with pytest.raises(ValueError, match=r"^--trace: '.*missing\.down' does not exist$"):
        evaluation_runs.resolve_scenarios(trace=str(tmp_path / "missing.down"))
    with pytest.raises(ValueError, match="exactly one of --suite, --scenario, --scenario-file, --trace"):
        evaluation_runs.resolve_scenarios(trace="x", suite="pareto")
    mine = tmp_path / "mine.down"
    mine.write_text("1\n")  # one packet per ms: 12 Mbit/s
    shipped = find_trace("Verizon-LTE-short.up")
    scs, src = evaluation_runs.resolve_scenarios(trace=f"{mine},{shipped}")
    assert [s.name for s in scs] == ["trace/mine.down", "trace/Verizon-LTE-short.up"] and "mine.down" in src
    sc = scs[0]
    assert sc.duration_s == catalogue.TRACE_DURATION_S and len(sc.flows) == 1
    assert sc.flows[0].rtt_ms == catalogue.TRACE_RTT_MS and sc.link.buffer_bytes == catalogue.TRACE_BUFFER
    assert sc.link.trace == str(mine)


def test_suites_list_in_order():
    from jaxcc.scenarios import SUITES

    scs, src = evaluation_runs.resolve_scenarios(suite="aurora-bw,aurora-loss")
    assert [s.name for s in scs] == list(SUITES["aurora-bw"]) + list(SUITES["aurora-loss"])
    assert src == "suite aurora-bw,aurora-loss"
    with pytest.raises(ValueError, match="unknown suite 'nope'"):
        evaluation_runs.resolve_scenarios(suite="aurora-bw,nope")


def test_with_duration_stretches_the_test():
    from jaxcc.scenarios import get_scenario

    sc = evaluation_runs.with_duration(get_scenario("aurora/bw8"), 120.0)
    assert sc.duration_s == 120.0 and all(f.stop_s == 120.0 for f in sc.flows)
    assert sc.link.bandwidth_mbps == 8 and sc.flows[0].rtt_ms == 60.0
    fig7 = evaluation_runs.with_duration(get_scenario("aurora/random16-32"), 120.0)
    assert len(fig7.link.capacity(seed=0, duration_s=120.0).times) == 24  # a new rate every 5 s
    # A flow that stops before the end keeps its stop time; one past the new end is cut.
    two = evaluation_runs.with_duration(load_scenario({**TINY, "flows": [
        {"rtt_ms": 40, "controller": "cubic", "stop_s": 2.0}, {"rtt_ms": 40, "controller": "bbr"}]}), 10.0)
    assert [f.stop_s for f in two.flows] == [2.0, 10.0]
    short = evaluation_runs.with_duration(two, 1.5)
    assert [f.stop_s for f in short.flows] == [1.5, 1.5]
    with pytest.raises(ValueError, match="--duration must be > 0"):
        evaluation_runs.with_duration(sc, 0.0)
    with pytest.raises(ValueError, match=r"^--duration must be > 0 seconds \(a finite number\), got inf$"):
        evaluation_runs.with_duration(sc, float("inf"))
    with pytest.raises(ValueError, match=r"^--duration=1: tiny.flows\[1\] starts at 1 s, not before the new end; "
                                         r"give --duration > 1$"):
        evaluation_runs.with_duration(load_scenario(TINY), 1.0)  # its bbr flow starts at 1 s


def test_format_table():
    rec = {"scenario": "s", "controller": "bbr", "throughput_mbps": 47.871, "utilization": 0.957, "p95_owd_ms": 116.0,
           "p95_qdelay_ms": 71.0, "loss": 0.017, "jain": 1.0, "ankh": 0.3533}
    text = evaluation_runs.format_table([rec])
    assert "scenario" in text.splitlines()[0] and "Ankh" in text.splitlines()[0]
    assert "47.87" in text and "1.70" in text and "0.353" in text


# ----------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    spec = d / "tiny.json"
    spec.write_text(json.dumps(TINY))
    out = d / "out"
    res = _cli("--scenario-file=" + str(spec), "--controller=bbr,cubic,oracle", "--seeds=2", "--out=" + str(out),
               "--noprogress")
    return res, out


def test_cli_writes_results_and_plots(cli_run):
    res, out = cli_run
    assert res.returncode == 0, res.stderr[-3000:]
    assert "tiny" in res.stdout and "Ankh" in res.stdout and "oracle" in res.stdout
    doc = json.loads((out / "results.json").read_text())
    recs = doc["results"]
    assert [r["controller"] for r in recs] == ["bbr", "cubic", "oracle"]
    for r in recs:
        assert CONTRACT_KEYS <= set(r), set(r) ^ CONTRACT_KEYS
        assert r["scenario"] == "tiny" and len(r["per_flow"]) == 2
        for pf in r["per_flow"]:
            assert FLOW_KEYS <= set(pf)
            assert pf["controller"] == r["controller"]
        assert 0 <= r["loss"] < 1 and 0 < r["utilization"] <= 1.01 and 0 <= r["ankh"] <= 1
        assert r["seeds"] == 2 and r["runs"] == 1  # a constant link: one run stands for every seed
        assert "last 20 s" in r["jain_note"]
    # d_max is the largest p95 one-way delay among this run's controllers.
    d_max = max(r["p95_owd_ms"] for r in recs)
    assert all(r["ankh_d_max_ms"] == pytest.approx(d_max) for r in recs)
    oracle = [r for r in recs if r["controller"] == "oracle"][0]
    assert oracle["ankh"] == min(r["ankh"] for r in recs)
    plots = sorted(os.listdir(out / "plots"))
    assert plots == sorted(f"{k}_tiny.{e}" for k in ("scatter", "timeseries") for e in ("pdf", "png", "svg"))
    assert all((out / "plots" / p).stat().st_size > 5000 for p in plots)
    assert [r["per_seed"] for r in recs] == [[{"seed": 0, **{k: r[k] for k in evaluation_runs.PER_SEED_KEYS[1:]}}]
                                             for r in recs]
    s = doc["series"]["tiny"]["bbr"]
    assert len(s["throughput_mbps"]) == len(s["t"]) == len(s["owd_ms"]) and len(s["owd_ms"][-1]) == 2
    assert "python -m jaxcc.evaluate" in doc["meta"]["command"]


def test_cli_own_controllers_mixed_link(tmp_path):
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(TINY))
    res = _cli("--scenario-file=" + str(spec), "--out=" + str(tmp_path / "o"), "--noplots", "--noprogress")
    assert res.returncode == 0, res.stderr[-3000:]
    (rec,) = json.loads((tmp_path / "o" / "results.json").read_text())["results"]
    assert rec["controller"] == "cubic+bbr"
    assert [pf["controller"] for pf in rec["per_flow"]] == ["cubic", "bbr"]
    assert not (tmp_path / "o" / "plots").exists()


@pytest.mark.parametrize("args, message", [
    (["--suite=nope"], "unknown suite 'nope'; suites:"),
    (["--scenario=pareto/nope"], "named scenarios:"),
    (["--suite=pareto", "--controller=vegas"], "unknown controller 'vegas'; allowed: bbr, cubic, reno"),
    (["--controller=bbr"], "give exactly one of --suite, --scenario, --scenario-file"),
    (["--scenario=pareto/fixed50", "--noout"], None),
    (["--scenario=pareto/fixed50"], "--out: give the output folder"),
    (["--scenario=pareto/fixed50", "--seeds=0"], "--seeds must be >= 1"),
    (["--suite=pareto", "--bogus=1"], "Unknown command line flag 'bogus'"),
    (["--suite=pareto", "stray"], "unexpected arguments"),
    (["--scenario=pareto/fixed50", "--checkpoint=/nonexistent-jaxcc-run"], "no stage checkpoints"),
    (["--scenario=pareto/fixed50", "--bars=nope"], "unknown bar set 'nope'; expected one of aurora, coexist, deepcc, eagle, mocc, outage, pareto, pareto-links, robust"),
    (["--scenario=pareto/fixed50", "--bars=pareto,nope"], "unknown bar set 'nope'; expected one of"),
    (["--scenario=pareto/fixed50", "--duration=-5"], "--duration must be > 0 seconds"),
])
def test_cli_errors_name_the_problem(tmp_path, capsys, args, message):
    if message is None:  # absl rejects --noout for a string flag
        assert evaluate.run_cli(["evaluate", *args]) == 2
        return
    extra = [] if message.startswith("--out") else ["--out=" + str(tmp_path)]
    assert evaluate.run_cli(["evaluate", *args, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ")
    assert not os.listdir(tmp_path)  # nothing simulated or written


def test_cli_subprocess_error_exit_code():
    res = _cli("--suite=nope", "--out=/tmp/unused-jaxcc", timeout=120)
    assert res.returncode == 2 and "unknown suite 'nope'" in res.stderr and "Traceback" not in res.stderr


def test_cli_bars_reports_what_was_not_evaluated(tmp_path):
    """--bars=pareto on fixed 50 Mbit/s only: the fixed-50 bars are judged, the rest say what is missing."""
    pol = os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors")
    res = _cli("--scenario=pareto/fixed50", "--controller=bbr,policy:" + pol, "--bars=pareto",
               "--out=" + str(tmp_path), "--noplots", "--noprogress")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "3 of 14 bars met" in res.stdout  # fixed50: 0.951 util, 1.3 ms, 0.31 % (README)
    bars = json.loads((tmp_path / "results.json").read_text())["meta"]["bars"]
    assert bars["set"] == "pareto" and list(bars["verdicts"]) == ["policy:" + pol]
    v = {x["bar"]: x for x in bars["verdicts"]["policy:" + pol]}
    assert v["fixed50 util >= 0.85"]["met"] and v["fixed50 loss <= 1%"]["met"]
    assert v["dyn10-30 util >= 0.70"] == {"bar": "dyn10-30 util >= 0.70", "value": "not evaluated", "met": False}
    assert "needs the pareto-fig5 scenarios" in v["Ankh < BBR on >= 4 of 6 Fig. 5 scenarios"]["value"]


def test_a_start_rate_on_a_flows_own_baseline_is_an_error(tmp_path, capsys):
    """robust/start1pct's placeholder controller (bbr) cannot take its start rate: one line, nothing run."""
    assert evaluate.run_cli(["evaluate", "--scenario=robust/start1pct", "--out=" + str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: robust/start1pct.flows[0].init_rate_mbps: only a learned sender (policy:FILE)")
    assert len(err.strip().splitlines()) == 1 and not os.listdir(tmp_path)


def test_robust_bars_skip_baselines_that_cannot_take_a_start_rate(tmp_path):
    """--controller=cubic,policy:... on the robust suite: cubic runs the step link only; its start-rate
    pair is reported as not run (with the reason) and kept in meta; the policy gets both robust bars."""
    pol = os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors")
    res = _cli("--suite=robust", "--controller=cubic,policy:" + pol, "--bars=robust",
               "--out=" + str(tmp_path), "--noplots", "--noprogress")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "not run: cubic on robust/start1pct: robust/start1pct.flows[0].init_rate_mbps" in res.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [(r["scenario"], r["controller"]) for r in doc["results"]] == [
        ("robust/start1pct", "policy:" + pol), ("robust/step5-50", "cubic"), ("robust/step5-50", "policy:" + pol)]
    assert doc["meta"]["skipped"] == [{"scenario": "robust/start1pct", "controller": "cubic",
                                       "reason": doc["meta"]["skipped"][0]["reason"]}]
    v = doc["meta"]["bars"]["verdicts"]["policy:" + pol]
    assert [x["bar"] for x in v] == ["start at 1%: >= 80% util within 10 s", "5 -> 50 Mbit/s: >= 80% util within 5 s"]
    assert all(x["value"] != "not evaluated" and not x["value"].startswith("not") for x in v)
    step = {r["controller"]: r for r in doc["results"] if r["scenario"] == "robust/step5-50"}
    assert step["cubic"]["step_up_at_s"] == [10.0] and step["cubic"]["step_ramp_s"][0] is not None


def test_a_baseline_from_its_own_start_drops_only_the_rate_it_cannot_take():
    """--baseline_start=own: cubic on robust/start1pct runs without the start rate and the note names
    the field and the rate (1 % of 50 Mbit/s); a policy keeps it; a link without one is untouched."""
    from jaxcc.scenarios import get_scenario

    sc = get_scenario("robust/start1pct")
    run, note = evaluation_runs.from_own_start(sc.with_controller("cubic"))
    assert [f.init_rate_mbps for f in run.flows] == [None] and run.init_rate_refusals() == []
    assert note == ("ran from its own initial window/rate (--baseline_start=own), not from "
                    "robust/start1pct.flows[0].init_rate_mbps (0.5 Mbit/s): a start rate is a learned sender's")
    assert (run.name, run.duration_s, run.link, run.flows[0].rtt_ms) == (sc.name, 30.0, sc.link, 100.0)
    pol = sc.with_controller("policy:" + os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors"))
    assert evaluation_runs.from_own_start(pol) == (pol, None)
    step = get_scenario("robust/step5-50").with_controller("cubic")
    assert evaluation_runs.from_own_start(step) == (step, None)
    with pytest.raises(ValueError, match="--baseline_start must be one of skip, own, got 'start'"):
        evaluation_runs.run_evaluation([sc], evaluation_runs.controller_entries("cubic"), baseline_start="start")


def test_overlapping_suites_run_each_scenario_once():
    """pareto-links shares pareto/fixed50 with pareto: the union keeps the first order, no repeats."""
    scs, _ = evaluation_runs.resolve_scenarios(suite="pareto,pareto-links")
    names = [s.name for s in scs]
    assert names == list(SUITES["pareto"]) + ["pareto/link12"]
