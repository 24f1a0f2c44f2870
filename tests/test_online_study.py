"""launch/online_study.py: which arms it runs, and its study table from arms already run
(hand-computed numbers; no network is started)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import launch_script


def _study():
    return launch_script.load("online_study")


def _w(u, p95, loss=0.0):
    return {"throughput_mbps": 50 * u, "utilization": u, "p95_owd_ms": p95, "loss": loss, "jain": 1.0, "ankh": 0.999}


def _arm(d: Path, first, last, reward=None, old=None, steps=80, old_nb=None):
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps({
        "first_minute": first, "last_minute": last, "weight_pushes": 5, "updates_applied": 5, "grad_steps": steps,
        "weight_version": 5, "records": 100, "transitions": 99, "net_seed": 0,
        "records_last_minute": {"reward_mean": reward}, "old_env_ankh_change": old or {},
        "old_env_neighbourhood_change": old_nb or {}}))


def test_table_from_existing_arms_by_hand(tmp_path, monkeypatch):
    """Every seed's d_max is 100 ms (the frozen arm's first minute), so Ankh = ((1 − u) + p95/100
    + loss) / 3, and the frozen arm's last minute (u 0.8, p95 50) is 0.7/3.  ``default``'s learning
    arms end at 0.5/3, 0.6/3, 0.7/3: relative −2/7, −1/7, 0, median −1/7.  ``lr0.3``'s end at
    u 0.7, p95 50, loss 0.2: 1.0/3, +3/7 on every seed.  So ``default`` ranks first."""
    study = _study()
    out = tmp_path / "study"
    base = out / "aurora_loss1"
    (base / "control").mkdir(parents=True)
    (base / "control" / "compare.json").write_text("{}")
    _arm(base / "control" / "seed0" / "frozen", _w(0.8, 100), _w(0.8, 50), reward=9.0, steps=0)
    _arm(base / "control" / "seed0" / "learning", _w(0.8, 50), _w(0.9, 40), reward=9.5, old={"a": 0.02, "b": 0.10})
    _arm(base / "default" / "seed1", _w(0.8, 50), _w(0.9, 50), reward=9.25, old={"a": 0.04})
    _arm(base / "default" / "seed2", _w(0.8, 50), _w(0.8, 50), reward=9.0, old={"a": 0.06})
    for s in (0, 1, 2):
        # with neighbours the check's figure is their mean's change (0.03), not the one run's (0.5)
        _arm(base / "lr0.3" / f"seed{s}", _w(0.8, 50), _w(0.7, 50, loss=0.2), reward=8.0, old={"a": 0.5},
             old_nb={"a": 0.03})
    started = []
    monkeypatch.setattr(study, "_online", lambda args, log: started.append(args))
    assert study.main([f"--checkpoint={tmp_path}", "--links=aurora/loss1", "--variants=default,lr0.3",
                       "--seeds=0,1,2", f"--out={out}"]) == 0
    assert started == []  # every arm had its results: nothing runs again

    doc = json.loads((out / "study.json").read_text())
    assert doc["ranking"] == ["default", "lr0.3"]
    d, lr = doc["per_link"]["aurora/loss1"]["default"], doc["per_link"]["aurora/loss1"]["lr0.3"]
    assert math.isclose(d["last_ankh_rel"]["median"], -1 / 7) and math.isclose(d["last_ankh_rel"]["min"], -2 / 7)
    assert math.isclose(lr["last_ankh_rel"]["median"], 3 / 7)
    assert d["worst_old_change"] == [0.10, 0.04, 0.06] and d["reward_last"] == [9.5, 9.25, 9.0]
    assert d["frozen_reward_last"] == 9.0
    md = (out / "study.md").read_text()
    assert "| default | (BASE) | -14.3 % (-28.6 … +0.0) | +6.0 % | 9.50, 9.25, 9.00 (9.00) |" in md
    assert "| lr0.3 | --lr-scale=0.3 | +42.9 % (+42.9 … +42.9) | +3.0 % |" in md
    cmp_ = json.loads((base / "default" / "compare.json").read_text())
    assert cmp_["variant"] == "default" and cmp_["frozen_arm"].endswith("control/seed0/frozen")


def test_only_missing_arms_run_each_with_base_then_its_flags(tmp_path, monkeypatch):
    study = _study()
    out = tmp_path / "study"
    started = []

    def fake(args, log):  # writes what a finished arm leaves, so the table can be made
        started.append(args)
        o = Path(next(a for a in args if a.startswith("--out=")).split("=", 1)[1])
        if "--control=frozen" in args:
            (o / "compare.json").parent.mkdir(parents=True, exist_ok=True)
            (o / "compare.json").write_text("{}")
            _arm(o / "seed0" / "frozen", _w(0.8, 100), _w(0.8, 50), steps=0)
            _arm(o / "seed0" / "learning", _w(0.8, 50), _w(0.8, 50))
        else:
            _arm(o, _w(0.8, 50), _w(0.8, 50))

    monkeypatch.setattr(study, "_online", fake)
    _arm(out / "aurora_bw128" / "paper" / "seed1", _w(0.8, 50), _w(0.8, 50))  # already run: kept
    study.main([f"--checkpoint={tmp_path}", "--links=aurora/bw128", "--variants=paper", "--seeds=0,1",
                f"--out={out}", "--jobs=1"])
    outs = sorted(next(a for a in args if a.startswith("--out=")) for args in started)
    assert outs == [f"--out={out}/aurora_bw128/control", f"--out={out}/aurora_bw128/default/seed1",
                    f"--out={out}/aurora_bw128/paper/seed0"]
    paper = next(a for a in started if a[-1] == "--reward=alg1")
    assert paper[paper.index("--lr-scale=0.1"):] == ["--lr-scale=0.1", "--replay-ratio=1", "--reward=local",
                                                     "--scenario=aurora/bw128", "--seed=0",
                                                     f"--out={out}/aurora_bw128/paper/seed0",
                                                     "--anchor=0", "--lr-scale=1", "--reward=alg1"]
    with pytest.raises(SystemExit):
        study.main([f"--checkpoint={tmp_path}", "--links=aurora/bw128", "--variants=nope", f"--out={out}"])
