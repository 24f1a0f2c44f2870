"""``python -m jaxcc.train``: argument handling, wandb mode resolution, the progress bar, a finished
run, and the evaluation command a run suggests."""

import os
import subprocess
import sys

import numpy as np
import pytest

from jaxcc import train
from jaxcc.training import loop
from jaxcc.training import configs as training_configs
from jaxcc.training import runlog

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    return subprocess.run([sys.executable, "-m", "jaxcc.train", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "WANDB_MODE": "disabled"}, timeout=300)


def test_unknown_config_lists_valid_names():
    r = _run("--config=no_such_config")
    assert r.returncode == 2
    assert "unknown config 'no_such_config'" in r.stderr and "pareto_staged" in r.stderr and "pareto_smoke" in r.stderr


def test_unknown_key_lists_valid_keys(tmp_path):
    r = _run("--config=pareto_smoke", "--config.td3.bogus=1", f"--workdir={tmp_path}")
    assert r.returncode == 2
    assert "bogus" in r.stderr and "config.td3.gamma" in r.stderr


def test_config_name_and_path_resolve():
    p = training_configs.resolve_config_path("pareto_staged")
    assert p.endswith(os.path.join("configs", "pareto_staged.py"))
    assert training_configs.resolve_config_path(p) == p
    assert "pareto_smoke" in training_configs.list_configs()


def test_wandb_mode(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert runlog.resolve_wandb_mode("auto") == "offline"
    assert runlog.resolve_wandb_mode("online") == "offline"  # no credentials: never wait on the network
    assert runlog.resolve_wandb_mode("disabled") == "disabled"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert runlog.resolve_wandb_mode("auto") == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert runlog.resolve_wandb_mode("auto") == "offline"


def test_metric_rows_leave_out_optional_metrics_without_a_value():
    """A chunk that did not validate logs no val_score (NaN = no value), never a placeholder."""
    import math

    nan = float("nan")
    row = runlog.metrics_row({"reward": np.array([1.0, 2.0]), "val_score": np.array([nan, nan]),
                      "val_best": np.array([0.25, 0.25])})
    assert row == {"reward": 1.5, "val_best": 0.25}
    row = runlog.metrics_row({"reward": np.array([nan, 1.0])}, i=0)  # only the optional ones are dropped
    assert math.isnan(row["reward"])


def test_config_field_typo_is_one_line_with_a_suggestion(tmp_path):
    r = _run("--config=pareto_smoke", "--config.num_env=4", f"--workdir={tmp_path}")
    assert r.returncode == 2
    assert r.stderr == "error: --config.num_env: no such config field; did you mean num_envs?\n"
    r = _run("--config=pareto_smoke", "--config.td3.gama=0.9", f"--workdir={tmp_path}")
    assert r.returncode == 2 and r.stderr.strip().endswith("did you mean td3.gamma?")
    r = _run("--config", "pareto_smoke", "--config.num_env=4", f"--workdir={tmp_path}")  # two tokens
    assert r.returncode == 2
    assert r.stderr == "error: --config.num_env: no such config field; did you mean num_envs?\n"
    assert not os.listdir(tmp_path)  # refused before anything ran


def test_bad_override_value_is_one_line(tmp_path):
    r = _run("--config=pareto_smoke", "--config.num_envs=abc", f"--workdir={tmp_path}")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--config.num_envs=abc" in r.stderr


def test_unknown_override_checks_every_form():
    keys = ["num_envs", "td3.gamma", "td3.tau", "export_stages"]
    assert train.unknown_override(["prog", "--config.num_envs=4", "--config.td3.tau", "0.1"], keys) is None
    assert train.unknown_override(["prog", "--noconfig.export_stage"], keys).endswith("did you mean export_stages?")
    msg = train.unknown_override(["prog", "--config.zzz.q=1"], keys)
    assert msg.startswith("--config.zzz.q: no such config field; valid fields: config.num_envs")
    assert train.unknown_override(["prog", "--workdir=x", "--config=pareto_smoke"], keys) is None


def test_run_ends_with_policies_and_the_evaluate_command(tmp_path):
    """The last lines name each stage's policy file and a command `jaxcc.evaluate` accepts."""
    from absl import flags

    from jaxcc import evaluate

    workdir = str(tmp_path / "run")
    labels = ["Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair"]
    os.makedirs(os.path.join(workdir, "stages"))
    for label in labels[:2]:  # the last stage exported nothing: not listed
        open(os.path.join(workdir, "stages", label + ".safetensors"), "wb").close()
    summary = {"workdir": workdir, "resumed": False, "final_update": 12, "wall_s": 89.4,
               **loop.stage_outputs(workdir, labels)}
    assert list(summary["stages"]) == labels and list(summary["policies"]) == labels[:2]
    text = train.next_steps(summary, "pareto_td3", "pareto_smoke")
    lines = text.splitlines()
    assert lines[0].startswith(f"[jaxcc.train] done: update 12 in 89 s; run directory {workdir}")
    listed = [l.split()[-1] for l in lines if l.endswith(".safetensors")]
    assert listed == [summary["policies"][k] for k in labels[:2]] and all(os.path.isfile(p) for p in listed)
    cmd = lines[-1].split()
    assert cmd[:3] == ["python3", "-m", "jaxcc.evaluate"]
    fv = evaluate.define_flags(flags.FlagValues())
    assert fv(["evaluate", *cmd[3:]]) == ["evaluate"]  # every flag exists and parses
    assert fv.checkpoint == workdir and fv.suite == "pareto,pareto-fair,robust" and fv.bars == "pareto"
    assert fv.controller == "bbr,cubic" and fv.out == os.path.join("results", "run")
    assert "resume" in train.next_steps({"workdir": workdir, "stopped": True}, "pareto_td3", "x")


def test_lanes_that_do_not_split_over_the_devices_are_one_line(tmp_path):
    """7 environment lanes on 2 (forced CPU) devices: exit 2 and one line naming the field and the
    device count, before anything is trained or written."""
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", "--config.num_envs=7",
                        f"--workdir={tmp_path / 'run'}", "--no_progress"], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu",
                            "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith(("I", "W"))]
    assert lines == ["error: config.num_envs=7 must be a multiple of the 2 devices"], r.stderr[-2000:]
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_progress_bar_keeps_the_last_finite_return():
    """A chunk in which no episode ended (Pareto's Fair stage) shows the last finite return, never
    ``nan``; nothing before the first one."""
    nan = float("nan")
    post, last = runlog.progress_postfix({"episode_return": nan, "reward": 0.5, "critic_loss": 2.0})
    assert post == {"rew": "0.5", "closs": "2"} and last is None
    post, last = runlog.progress_postfix({"episode_return": -12.345, "reward": 1.0, "expert_share": 0.125}, last)
    assert post == {"ret": "-12.3", "rew": "1", "expert": "0.125"} and last == -12.345
    post, last = runlog.progress_postfix({"episode_return": nan, "reward": 2.0}, last)  # NaN after a finite value
    assert post == {"ret": "-12.3", "rew": "2"} and last == -12.345
    post, last = runlog.progress_postfix({"reward": 3.0, "ep_count": 0.0}, last)  # no return in the row at all
    assert post == {"ret": "-12.3", "rew": "3"} and last == -12.345
    post, last = runlog.progress_postfix({"episode_return": 7.0}, last)
    assert post == {"ret": "7"} and last == 7.0


def test_a_chunk_without_an_ended_episode_logs_no_return():
    """metrics.jsonl stays strict JSON: no ``NaN`` return when no episode ended in the chunk."""
    import json

    z = np.zeros(2)
    row = runlog.metrics_row({"reward": np.array([1.0, 3.0]), "ep_count": z, "ep_return_sum": z})
    assert row == {"reward": 2.0, "ep_count": 0.0}
    json.dumps(row, allow_nan=False)
    row = runlog.metrics_row({"ep_count": np.array([1.0, 3.0]), "ep_return_sum": np.array([10.0, 30.0])})
    assert row == {"episode_return": 10.0, "ep_count": 4.0}


def _strict_json(line):
    import json

    def refuse(x):
        raise ValueError(f"not strict JSON: {x}")
    return json.loads(line, parse_constant=refuse)


def test_a_finished_run_says_so_in_one_line_and_trains_nothing(tmp_path):
    """A workdir whose last checkpoint ends the run (made here: the last stage's checkpoint meta
    over a stand-in state, the stages' policy files): one line, exit 0, nothing written.  The
    same after a real training: the next test (full tier)."""
    import shutil

    from jaxcc.training import checkpointing

    wd = str(tmp_path / "run")
    ck = checkpointing.RunCheckpoints(wd)
    ck.save(12, {"w": np.zeros(2, np.float32)},
            {"stage": 2, "stage_chunk": 2, "stage_done": True, "update": 12, "stage_label": "Pareto-Fair"})
    ck.close()
    labels = ("Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair")
    os.makedirs(os.path.join(wd, "stages"))
    for lab in labels:
        shutil.copy(os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors"),
                    os.path.join(wd, "stages", f"{lab}.safetensors"))
    before = sorted(os.listdir(wd))
    r = _run("--config=pareto_smoke", f"--workdir={wd}", "--no_progress")
    assert r.returncode == 0, r.stderr[-3000:]
    pol = ", ".join(f"{lab} {wd}/stages/{lab}.safetensors" for lab in labels)
    assert r.stdout == (f"[jaxcc.train] {wd} is finished (update 12 of 12); its policies: {pol}; "
                        f"to train again, use a new --workdir or delete {wd}\n")
    assert "resuming" not in r.stderr and "Metadata file does not exist" not in r.stderr, r.stderr[-3000:]
    assert sorted(os.listdir(wd)) == before  # no run.json, config.json, metrics.jsonl, wandb


@pytest.mark.full  # a whole pareto_smoke training
def test_rerunning_a_finished_run_says_so_and_trains_nothing(tmp_path):
    """The smoke run twice in one workdir: the second says in one line that the run is finished,
    names its policies and how to train again, exits 0, rewrites nothing, and orbax logs no
    "Metadata file does not exist"."""
    wd = str(tmp_path / "run")
    env = {**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)  # one CPU device, whatever the caller forced
    cmd = [sys.executable, "-m", "jaxcc.train", "--config=pareto_smoke", f"--workdir={wd}", "--no_progress"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "[jaxcc.train] done: update 12" in first.stdout
    rows = [_strict_json(line) for line in open(os.path.join(wd, "metrics.jsonl"))]
    assert [r["update"] for r in rows] == [2, 4, 6, 8, 10, 12]
    assert all(("episode_return" in r) == (r["ep_count"] > 0) for r in rows)
    kept = {f: open(os.path.join(wd, f)).read() for f in ("metrics.jsonl", "run.json", "config.json", "summary.json")}

    second = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    pol = ", ".join(f"{lab} {wd}/stages/{lab}.safetensors" for lab in ("Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair"))
    assert second.stdout == (f"[jaxcc.train] {wd} is finished (update 12 of 12); its policies: {pol}; "
                             f"to train again, use a new --workdir or delete {wd}\n")
    out = second.stdout + second.stderr
    assert "Metadata file does not exist" not in out and "resuming" not in out, second.stderr[-3000:]
    assert {f: open(os.path.join(wd, f)).read() for f in kept} == kept


@pytest.mark.full  # the whole suggested evaluation: about 3 minutes with an empty compilation cache
def test_the_suggested_evaluate_command_runs_without_a_warning(tmp_path):
    """The command a finished Pareto run suggests (on a run whose last stage exported the shipped
    Pareto policy), shortened with --duration: exit 0, nothing "not run", no warning; the baselines
    run the start-rate link from their own start and their records say so, the policy from 1 %."""
    import json
    import shlex
    import shutil

    wd = str(tmp_path / "run")
    os.makedirs(os.path.join(wd, "stages", "Pareto-Fair"))  # the last stage, as jaxcc.train leaves it
    for name, obj in (("meta.json", {"stage": 2, "label": "Pareto-Fair"}), ("spec.json", {})):
        with open(os.path.join(wd, "stages", "Pareto-Fair", name), "w") as f:
            json.dump(obj, f)
    shutil.copy(os.path.join(REPO, "checkpoints", "pareto", "pareto_fair.safetensors"),
                os.path.join(wd, "stages", "Pareto-Fair.safetensors"))
    labels = ["Pareto-Bootstrap", "Pareto-Advance", "Pareto-Fair"]
    summary = {"workdir": wd, "resumed": False, "final_update": 12, "wall_s": 1.0, **loop.stage_outputs(wd, labels)}
    cmd = shlex.split(train.next_steps(summary, "pareto_td3", "pareto_smoke").splitlines()[-1])
    assert cmd[:3] == ["python3", "-m", "jaxcc.evaluate"]
    # 15 s: pareto/shared8's last flow starts at 14 s (a shorter run refuses it)
    r = subprocess.run([sys.executable, *cmd[1:], "--duration=15"], capture_output=True, text=True,
                       cwd=tmp_path, env={**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu"},
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "not run" not in r.stdout + r.stderr and "warning" not in r.stderr.lower(), r.stdout + r.stderr[-3000:]
    doc = json.loads((tmp_path / "results" / "run" / "results.json").read_text())
    assert doc["meta"]["skipped"] == [] and doc["meta"]["baseline_start"] == "own"
    from jaxcc.scenarios import SUITES

    n = sum(len(SUITES[k]) for k in ("pareto", "pareto-fair", "robust"))
    assert n == 15 and len(doc["results"]) == n * 3  # pareto (9) + pareto-fair (4) + robust (2) scenarios x 3 controllers
    start = {rec["controller"]: rec for rec in doc["results"] if rec["scenario"] == "robust/start1pct"}
    assert sorted(start) == ["Pareto-Fair", "bbr", "cubic"]
    assert [pf["init_rate_mbps"] for pf in start["Pareto-Fair"]["per_flow"]] == [0.5]  # 1 % of 50 Mbit/s
    assert "start_rate_note" not in start["Pareto-Fair"]
    for base in ("bbr", "cubic"):
        assert [pf["init_rate_mbps"] for pf in start[base]["per_flow"]] == [None]
        assert start[base]["start_rate_note"].startswith("ran from its own initial window/rate (--baseline_start=own), "
                                                         "not from robust/start1pct.flows[0].init_rate_mbps (0.5 Mbit/s)")
    bars = {v["bar"]: v for v in doc["meta"]["bars"]["verdicts"]["Pareto-Fair"]}
    assert bars["start at 1%: >= 80% util within 10 s"]["value"] != "not evaluated (needs robust/start1pct)"


def test_help_lists_the_configs_and_flags():
    r = _run("--help")
    assert r.returncode == 0, r.stderr
    configs = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "configs")) if f.endswith(".py"))
    assert f"configs: {', '.join(configs)}" in r.stdout
    for flag in train.CLI_FLAGS:
        assert f"\n  --{flag}: " in r.stdout


def test_check_finite_names_the_first_bad_update_and_quantity():
    """The divergence guard (a whole training that hits a NaN: tests/test_train_resume.py, full tier)."""
    state = {"agent": {"w": np.ones(3, np.float32)}}
    loop.check_finite({"critic_loss": np.array([1.0, 2.0]), "params_finite": np.array([True, True])}, state, 10, "advance")
    with pytest.raises(loop.TrainingDiverged, match=r"non-finite critic_loss \(nan\) at update 11 \(stage advance\)"):
        loop.check_finite({"critic_loss": np.array([1.0, np.nan, np.inf])}, state, 10, "advance")
    bad = {"agent": {"w": np.array([1.0, np.inf], np.float32), "b": np.zeros(2, np.float32)}}
    with pytest.raises(loop.TrainingDiverged, match=r"non-finite parameters \['w'\] at update 7 \(stage fair\)"):
        loop.check_finite({"loss": np.array([0.5]), "params_finite": np.array([False])}, bad, 7, "fair")
