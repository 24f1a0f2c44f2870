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
