"""``python -m jaxcc.train`` argument handling and wandb mode resolution (no training)."""

import os
import subprocess
import sys

import numpy as np

from jaxcc import train

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
    p = train.resolve_config_path("pareto_staged")
    assert p.endswith(os.path.join("configs", "pareto_staged.py"))
    assert train.resolve_config_path(p) == p
    assert "pareto_smoke" in train.list_configs()


def test_wandb_mode(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert train.resolve_wandb_mode("auto") == "offline"
    assert train.resolve_wandb_mode("online") == "offline"  # no credentials: never wait on the network
    assert train.resolve_wandb_mode("disabled") == "disabled"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert train.resolve_wandb_mode("auto") == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert train.resolve_wandb_mode("auto") == "offline"


def test_metric_rows_leave_out_optional_metrics_without_a_value():
    """A chunk that did not validate logs no val_score (NaN = no value), never a placeholder."""
    import math

    nan = float("nan")
    row = train._row({"reward": np.array([1.0, 2.0]), "val_score": np.array([nan, nan]),
                      "val_best": np.array([0.25, 0.25])})
    assert row == {"reward": 1.5, "val_best": 0.25}
    row = train._row({"reward": np.array([nan, 1.0])}, i=0)  # only the optional ones are dropped
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
               **train.stage_outputs(workdir, labels)}
    assert list(summary["stages"]) == labels and list(summary["policies"]) == labels[:2]
    text = train.next_steps(summary, "pareto_td3", "pareto_smoke")
    lines = text.splitlines()
    assert lines[0].startswith(f"[jaxcc.train] done: update 12 in 89 s; run directory {workdir}")
    listed = [l.split()[-1] for l in lines if l.endswith(".safetensors")]
    assert listed == [summary["policies"][k] for k in labels[:2]] and all(os.path.isfile(p) for p in listed)
    cmd = lines[-1].split()
    assert cmd[:3] == ["python", "-m", "jaxcc.evaluate"]
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
