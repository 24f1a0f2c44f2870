"""Sweeps in one program (``jaxcc.sweep``, ``python -m jaxcc.train --sweep=FILE``) and the wandb
agent path (``launch/sweep_pareto.yaml``), offline.

The reference for a member is an ordinary ``python -m jaxcc.train`` run with that member's
configuration.  Tolerance: a member computes the same float32 operations as the separate run, but
``vmap`` turns its matmuls and reductions into batched ones whose summation order XLA picks
differently, so results differ in the last bits (init is bit-identical: checked below).  RL
amplifies those bits over updates (aurora_smoke, measured: max |Δθ| 1e-6 after 4 updates, 5e-5
after 8, 4e-2 after 12, once some link's trajectory crosses a threshold differently), so the
runs compared here are short: pareto_smoke's bootstrap and fairness stages (8 updates, measured
|Δθ| ≤ 1e-8) and 4 aurora_smoke updates.  Parameters must agree to ``|Δ| ≤ 1e-5 + 1e-4·|x|``;
what no float arithmetic touches (PRNG keys, counters, the hyperparameter leaves) must be equal.
"""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from jaxcc.training import sweep as training_sweep
from jaxcc.training import sweep_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ATOL, RTOL = 1e-5, 1e-4

# Short runs (see the docstring): two of pareto_smoke's stages.
PARETO_SHORT = ["--config=pareto_smoke", "--config.stage_order=bootstrap,fairness"]
# 4 updates in 2 chunks with a checkpoint after each, so that a run stopped after one resumes.
AURORA_SHORT = ["--config=aurora_smoke", "--config.num_updates=4", "--config.chunk_updates=2",
                "--config.checkpoint_every_chunks=1"]


def _env(**extra):
    return {**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": "cpu", "PYTHONPATH": REPO, **extra}


def _train(*args, env=None, cwd=REPO, timeout=600):
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", "--no_progress", *args], capture_output=True, text=True,
                       cwd=cwd, env=env or _env(), timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _final_state(workdir):
    from jaxcc.training import checkpointing

    ck = os.path.join(workdir, "checkpoints")
    last = max(int(s) for s in os.listdir(ck) if s.isdigit())
    return checkpointing.restore_untyped(os.path.join(ck, str(last), "state"))


def _leaves(tree):
    import jax

    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _assert_member_equals_run(stacked, m, single, what):

    a, b = _leaves(stacked), _leaves(single)
    assert set(a) == set(b), what
    worst = 0.0
    for k, y in b.items():
        if a[k].shape == y.shape == (1,):  # a zero-size leaf (checkpointing stores a 1-element stand-in)
            continue
        shared = k.startswith("['counters']") and any(f"['{c}']" in k for c in training_sweep.SHARED_COUNTERS)
        x = a[k] if shared else a[k][m]
        assert x.shape == y.shape and x.dtype == y.dtype, f"{what} {k}"
        if k.startswith(("['env']", "['buffer']")):
            # The environments' and replay's contents are not compared: an ulp in an action can move
            # one event of the fluid model by a ring slot (seen: 1 link of 32 after 4 aurora updates).
            continue
        if np.issubdtype(y.dtype, np.floating) and not k.startswith("['hp']"):
            if y.size:
                np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL, err_msg=f"{what} {k}")
                worst = max(worst, float(np.max(np.abs(x - y))))
        else:  # keys, counters, masks, hyperparameters: exactly
            np.testing.assert_array_equal(x, y, err_msg=f"{what} {k}")
    return worst


def _policy_tensors(path):
    from safetensors.numpy import load_file

    return load_file(path)


def _write(path, text):
    path.write_text(text)
    return str(path)


# ----------------------------------------------------------------------------- the sweep file


@pytest.fixture(scope="module")
def pareto_cfg():
    from jaxcc.training.configs import load_config, resolve_config_path

    return load_config(resolve_config_path("pareto_smoke"))


def _err(tmp_path, text, cfg):

    p = _write(tmp_path / "s.yaml", text)
    with pytest.raises(sweep_file.SweepError) as e:
        sweep_file.load_sweep(p, cfg, "pareto_smoke")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(p), msg
    return msg


def test_shape_key_is_refused_listing_the_sweepable_keys(tmp_path, pareto_cfg):
    msg = _err(tmp_path, "members:\n  - {config.td3.lr_actor: 1.0e-4}\n  - {config.num_envs: 16}\n", pareto_cfg)
    assert ":3: config.num_envs is not sweepable for pareto_td3" in msg
    assert "config.seed" in msg and "config.td3.lr_actor" in msg and "config.td3.gamma" in msg
    assert "config.td3.batch_size" not in msg
    msg = _err(tmp_path, "parameters:\n  config.td3.hidden: {values: [8, 16]}\n", pareto_cfg)
    assert ":2: config.td3.hidden is not sweepable" in msg


def test_malformed_and_wrong_files_are_refused_in_one_line(tmp_path, pareto_cfg):
    assert ":3: not valid YAML" in _err(tmp_path, "members:\n  - {config.seed: 0\n  - {config.seed: 1}\n", pareto_cfg)
    assert ":2: unknown key 'membres'; allowed: name, group" in _err(tmp_path, "name: x\nmembres: []\n", pareto_cfg)
    assert "config.td3.bogus: no such config field" in _err(tmp_path, "members: [{td3.bogus: 1}]\n", pareto_cfg)
    assert "config.td3.gamma: 'high' is not a number" in _err(tmp_path, "members: [{td3.gamma: high}]\n", pareto_cfg)
    assert "config.seed: 1.5; expected an integer" in _err(tmp_path, "members: [{seed: 1.5}]\n", pareto_cfg)
    assert "expected {values: [...]}" in _err(
        tmp_path, "parameters:\n  td3.tau: {distribution: uniform, min: 0, max: 1}\n", pareto_cfg)
    assert "no members" in _err(tmp_path, "name: x\n", pareto_cfg)
    assert "set both in members and in parameters" in _err(
        tmp_path, "members: [{seed: 1}]\nparameters: {seed: {values: [2]}}\n", pareto_cfg)


def test_members_and_grid_expand(tmp_path, pareto_cfg):

    p = _write(tmp_path / "g.yaml", "name: g\nmembers:\n  - {td3.lr_actor: 1e-4}\n  - {config.td3.lr_actor: 1.0e-3}\n"
                                    "parameters:\n  config.seed: {values: [3, 4]}\n")
    s = sweep_file.load_sweep(p, pareto_cfg, "pareto_smoke")
    assert s.keys == ["td3.lr_actor", "seed"] and s.group == "pareto_smoke-g" and s.metric == "val_best"
    assert s.members == [{"td3.lr_actor": 1e-4, "seed": 3}, {"td3.lr_actor": 1e-4, "seed": 4},
                         {"td3.lr_actor": 1e-3, "seed": 3}, {"td3.lr_actor": 1e-3, "seed": 4}]
    c = sweep_file.member_config(pareto_cfg, s, 3)
    assert (c.seed, c.td3.lr_actor, c.wandb.group) == (4, 1e-3, "pareto_smoke-g")
    assert pareto_cfg.seed == 0 and pareto_cfg.td3.lr_actor == 3e-4  # the base is untouched


def test_uri_workdir_is_refused_in_one_line_without_a_local_directory(tmp_path, pareto_cfg, monkeypatch):

    monkeypatch.chdir(tmp_path)
    s = sweep_file.load_sweep(_write(tmp_path / "s.yaml", "members: [{seed: 0}, {seed: 1}]\n"), pareto_cfg, "pareto_smoke")
    with pytest.raises(sweep_file.SweepError) as e:
        training_sweep.run_sweep(pareto_cfg, s, "memory://sweeps/x", log=False, progress=False)
    assert "\n" not in str(e.value) and "--workdir=memory://sweeps/x: a sweep's workdir must be a local path" in str(e.value)
    assert not (tmp_path / "memory:").exists()


def test_every_algorithm_declares_what_it_can_sweep():
    from jaxcc import agents
    from jaxcc.training.configs import load_config, resolve_config_path

    for algo in agents.list_algos():
        table = sweep_file.sweepable(algo)
        assert "seed" in table, algo
    assert set(sweep_file.sweepable("aurora_ppo")) == {"seed", "ppo.lr", "ppo.clip_eps", "ppo.ent_coef", "ppo.vf_coef",
                                                    "ppo.gamma", "ppo.gae_lambda", "ppo.reward_scale"}
    # every declared leaf exists in the state with the shape of a scalar
    import jax

    for name in ("pareto_smoke", "aurora_smoke"):
        cfg = load_config(resolve_config_path(name))
        tmpl = agents.make_train(cfg).template(0)
        for key, path in sweep_file.sweepable(str(cfg.algo)).items():
            leaf = tmpl
            for p in path:
                leaf = leaf[p]
            if path:
                assert isinstance(leaf, jax.ShapeDtypeStruct) and leaf.shape == (), (name, key)


def test_cli_refuses_a_shape_key_in_one_line(tmp_path):
    p = _write(tmp_path / "bad.yaml", "members:\n  - {config.ppo.num_steps: 32}\n")
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", "--config=aurora_smoke", f"--sweep={p}",
                        f"--workdir={tmp_path / 'w'}"], capture_output=True, text=True, cwd=REPO, env=_env(),
                       timeout=300)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}:2: config.ppo.num_steps is not sweepable"), r.stderr
    assert "config.ppo.lr" in lines[0]


# ----------------------------------------------------------------------------- members = separate runs


@pytest.mark.full
def test_pareto_sweep_members_equal_separate_runs(tmp_path):
    sw = _write(tmp_path / "p.yaml", "name: t\nmembers:\n  - {config.seed: 0}\n"
                                     "  - {config.seed: 1, config.td3.lr_actor: 1.0e-3, config.td3.gamma: 0.8}\n")
    wd = tmp_path / "sweep"
    _train(*PARETO_SHORT, f"--sweep={sw}", f"--workdir={wd}")
    stacked = _final_state(str(wd))
    # m1 differs from the base config in its seed (init keys and validation links) and two
    # hyperparameters; m0 is the base config (both members of the Aurora test are compared).
    for m, extra in [(1, ["--config.seed=1", "--config.td3.lr_actor=1e-3", "--config.td3.gamma=0.8"])]:
        sep = tmp_path / f"sep{m}"
        _train(*PARETO_SHORT, *extra, f"--workdir={sep}")
        worst = _assert_member_equals_run(stacked, m, _final_state(str(sep)), f"member m{m}")
        print(f"pareto m{m}: max |Δθ| = {worst:.3g}")
        # the member's exported policy is the separate run's
        a = _policy_tensors(str(wd / "members" / f"m{m}" / "stages" / "Pareto-Fair.safetensors"))
        b = _policy_tensors(str(sep / "stages" / "Pareto-Fair.safetensors"))
        assert set(a) == set(b)
        for k in b:
            np.testing.assert_allclose(a[k], b[k], rtol=RTOL, atol=ATOL, err_msg=k)
        # and its metrics.jsonl has the separate run's rows (same updates, same validation scores)
        ra = [json.loads(x) for x in open(wd / "members" / f"m{m}" / "metrics.jsonl")]
        rb = [json.loads(x) for x in open(sep / "metrics.jsonl")]
        assert [r["update"] for r in ra] == [r["update"] for r in rb] == [2, 4, 6, 8]
        for x, y in zip(ra, rb):
            for k in ("val_best", "critic_loss", "reward"):
                assert (k in x) == (k in y)
                if k in y:
                    np.testing.assert_allclose(x[k], y[k], rtol=1e-4, atol=1e-6, err_msg=k)
    out = stacked["agent"]["actor"]["out"]["kernel"]
    assert not np.array_equal(out[0], out[1])
    assert stacked["seed"].tolist() == [0, 1]
    np.testing.assert_allclose(stacked["hp"]["lr_actor"], [3e-4, 1e-3], rtol=1e-7)
    # the comparison table and the plot
    rows = list(csv.DictReader(open(wd / "sweep_results.csv")))
    assert [r["member"] for r in rows] == ["m0", "m1"]
    assert [float(r["config.td3.lr_actor"]) for r in rows] == [3e-4, 1e-3]
    assert [int(r["config.seed"]) for r in rows] == [0, 1]
    assert all(r["status"] == "ok" and np.isfinite(float(r["val_best_final"])) for r in rows)
    assert rows[1]["policy"].endswith("m1/stages/Pareto-Fair.safetensors")
    assert "**(best)**" in (wd / "sweep_results.md").read_text()
    assert (wd / "sweep.png").stat().st_size > 10_000
    assert json.load(open(wd / "sweep.json"))["runs"] == ["pareto_smoke-t-m0", "pareto_smoke-t-m1"]


@pytest.mark.full
def test_aurora_sweep_members_equal_separate_runs_log_offline_wandb_runs_and_resume(tmp_path):
    sw = _write(tmp_path / "a.yaml", "name: lr\ngroup: grp\nparameters:\n  config.ppo.lr: {values: [1.0e-3, 3.0e-3]}\n"
                                     "  config.ppo.clip_eps: {value: 0.1}\n")
    wd = tmp_path / "sweep"
    _train(*AURORA_SHORT, f"--sweep={sw}", f"--workdir={wd}", env=_env(WANDB_MODE="offline"))
    stacked = _final_state(str(wd))
    # Stopped after its first chunk and run again, the sweep resumes from its stacked checkpoint
    # and ends bit-identical to the uninterrupted one (the same program on the same inputs).
    cut = tmp_path / "cut"
    _train(*AURORA_SHORT, f"--sweep={sw}", f"--workdir={cut}", "--stop_after_chunks=1")
    r = _train(*AURORA_SHORT, f"--sweep={sw}", f"--workdir={cut}")
    assert "resuming" in r.stderr
    a, b = _leaves(stacked), _leaves(_final_state(str(cut)))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert [json.loads(x)["update"] for x in open(cut / "members" / "m1" / "metrics.jsonl")] == [2, 4]
    other = _write(tmp_path / "b.yaml", "members: [{config.seed: 7}]\n")  # another sweep, same folder
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", *AURORA_SHORT, f"--sweep={other}", f"--workdir={cut}",
                        "--no_progress"], capture_output=True, text=True, cwd=REPO, env=_env(), timeout=300)
    assert r.returncode == 2 and "holds a different sweep" in r.stderr
    for m, lr in enumerate(["1e-3", "3e-3"]):
        sep = tmp_path / f"sep{m}"
        _train(*AURORA_SHORT, f"--config.ppo.lr={lr}", "--config.ppo.clip_eps=0.1", f"--workdir={sep}")
        worst = _assert_member_equals_run(stacked, m, _final_state(str(sep)), f"member m{m}")
        print(f"aurora m{m}: max |Δθ| = {worst:.3g}")
        # one offline wandb run per member, named and grouped by the sweep
        mdir = wd / "members" / f"m{m}"
        runs = [d for d in os.listdir(mdir / "wandb") if d.startswith("offline-run-")]
        assert len(runs) == 1, runs
        rid = runs[0].rsplit("-", 1)[1]
        assert (mdir / "wandb_id.txt").read_text().strip() == rid
        record = (mdir / "wandb" / runs[0] / f"run-{rid}.wandb").read_bytes()  # what `wandb sync` uploads
        assert f"aurora_smoke-lr-m{m}".encode() in record and b"grp" in record
        log = (mdir / "wandb" / runs[0] / "logs" / "debug.log").read_text()
        assert f"'lr': {float(lr)}" in log and "'group': 'grp'" in log
        assert (mdir / "stages" / "Aurora.safetensors").is_file()
    rows = list(csv.DictReader(open(wd / "sweep_results.csv")))
    assert len(rows) == 2 and [r["run"] for r in rows] == ["aurora_smoke-lr-m0", "aurora_smoke-lr-m1"]
    for m, r in enumerate(rows):  # 4 updates x 64 MIs end no 400-MI episode: the reward per MI is the result
        last = [json.loads(x) for x in open(wd / "members" / f"m{m}" / "metrics.jsonl")][-1]
        assert float(r["reward_final"]) == pytest.approx(last["reward"], rel=1e-12) and np.isfinite(last["reward"])
        assert r["episode_return_final"] == "nan"
    assert (wd / "sweep.png").is_file()


# ----------------------------------------------------------------------------- the wandb agent path


def _agent_command(sweep_yaml: str, params: dict) -> list[str]:
    """The command line ``wandb agent`` runs for one parameter set (``wandb.wandb_agent.Agent.
    _command_run``: the sweep's ``command`` with its ``${...}`` macros replaced by wandb's own
    ``create_sweep_command_args``)."""
    from wandb.sdk.launch.sweeps import utils as sweep_utils

    spec = yaml.safe_load(open(sweep_yaml))
    command = {"args": {k: {"value": v} for k, v in params.items()}, "program": spec.get("program")}
    sweep_vars = sweep_utils.create_sweep_command_args(command)
    sweep_vars.update({"interpreter": ["python"], "program": [command["program"]], "env": ["/usr/bin/env"]})
    out = []
    for c in sweep_utils.create_sweep_command(list(spec["command"])):
        c = str(c)
        out += (sweep_vars.get(c[2:-1]) or []) if c.startswith("${") and c.endswith("}") else [c]
    return out


def _first_values(spec: dict) -> dict:
    """One parameter set of a wandb sweep: each parameter's first value, or its range's minimum."""
    out = {}
    for k, p in spec["parameters"].items():
        out[k] = p["values"][0] if "values" in p else p.get("value", p.get("min"))
    return out


def test_wandb_sweep_file_is_well_formed():
    spec = yaml.safe_load(open(os.path.join(REPO, "launch", "sweep_pareto.yaml")))
    assert spec["method"] in ("grid", "random", "bayes") and spec["metric"]["name"] == "val_best"
    from jaxcc import train
    from jaxcc.training import configs as training_configs
    from jaxcc.training.configs import load_config, resolve_config_path

    cmd = _agent_command(os.path.join(REPO, "launch", "sweep_pareto.yaml"), _first_values(spec))
    # the interpreter is $JAXCC_PYTHON's (the agent's ${interpreter} is always PATH's `python`)
    assert cmd[:3] == ["/usr/bin/env", "bash", "-c"]
    shown = subprocess.run(cmd, env=dict(os.environ, JAXCC_PYTHON="echo"), capture_output=True, text=True,
                           timeout=30)
    assert shown.returncode == 0 and shown.stdout.split() == ["-m", "jaxcc.train", *cmd[5:]], shown
    cfg_name = train.config_arg(cmd)
    keys = training_configs.all_keys(load_config(resolve_config_path(cfg_name)))
    assert train.unknown_override(cmd, keys) is None
    # every parameter it varies is a state leaf: the agent's runs share one compiled program
    table = sweep_file.sweepable("pareto_td3")
    assert all(k.removeprefix("config.") in table for k in spec["parameters"]), sorted(spec["parameters"])


@pytest.mark.full
def test_wandb_agent_command_runs_offline(tmp_path):
    """The exact command ``wandb agent`` would run for one parameter set of launch/sweep_pareto.yaml,
    offline, as the agent starts it (its run id, sweep id and parameter file in the environment,
    ``JAXCC_PYTHON`` this interpreter), with ``--stop_after_chunks=1`` appended so that one chunk of
    pareto_staged runs."""
    path = os.path.join(REPO, "launch", "sweep_pareto.yaml")
    params = _first_values(yaml.safe_load(open(path)))
    cmd = _agent_command(path, params) + ["--stop_after_chunks=1"]
    param_file = tmp_path / "wandb" / "sweep-sw1" / "config-run1.yaml"
    param_file.parent.mkdir(parents=True)
    param_file.write_text(yaml.safe_dump({k: {"value": v} for k, v in params.items()}))
    env = _env(WANDB_MODE="offline", WANDB_RUN_ID="run1", WANDB_SWEEP_ID="sw1",
               WANDB_SWEEP_PARAM_PATH=str(param_file), JAXCC_PYTHON=sys.executable)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stopped as asked" in r.stdout
    wd = tmp_path / "checkpoints" / "runs" / "pareto_staged-0"
    cfg = json.load(open(wd / "config.json"))
    assert cfg["td3"]["lr_actor"] == params["config.td3.lr_actor"] and cfg["td3"]["gamma"] == params["config.td3.gamma"]
    assert cfg["td3"]["alpha"] == params["config.td3.alpha"]
    rows = [json.loads(x) for x in open(wd / "metrics.jsonl")]
    assert len(rows) == 1 and rows[0]["update"] == 10 and np.isfinite(rows[0]["critic_loss"])
    runs = os.listdir(wd / "wandb")
    assert any(d.startswith("offline-run-") and d.endswith("-run1") for d in runs), runs  # the agent's run id


@pytest.mark.full
def test_a_diverging_member_is_dropped_and_the_others_finish(tmp_path):
    """Rewards scaled by 1e30 overflow m1's value loss (float32 max 3.4e38) on its first update;
    m0 (the base config) is unaffected: it finishes, is exported and ranked."""
    sw = _write(tmp_path / "d.yaml", "metric: {name: reward, goal: maximize}\n"
                                     "members:\n  - {config.seed: 0}\n  - {config.ppo.reward_scale: 1.0e30}\n")
    wd = tmp_path / "sweep"
    r = _train(*AURORA_SHORT, f"--sweep={sw}", f"--workdir={wd}")
    assert "member m1" in r.stderr and "non-finite" in r.stderr
    rows = list(csv.DictReader(open(wd / "sweep_results.csv")))
    assert [x["status"] for x in rows] == ["ok", "diverged"]
    assert np.isfinite(float(rows[0]["reward_best"])) and rows[1]["reward_best"] == "nan"
    assert rows[0]["policy"] and not rows[1]["policy"]
    assert not (wd / "members" / "m1" / "stages").exists() and not (wd / "members" / "m1" / "metrics.jsonl").exists()
    assert "| m0 **(best)**" in (wd / "sweep_results.md").read_text()
    # every member diverged: the sweep stops with status 3
    sw = _write(tmp_path / "e.yaml", "members:\n  - {config.ppo.reward_scale: 1.0e30}\n")
    r = subprocess.run([sys.executable, "-m", "jaxcc.train", *AURORA_SHORT, f"--sweep={sw}",
                        f"--workdir={tmp_path / 'all'}", "--no_progress"], capture_output=True, text=True, cwd=REPO,
                       env=_env(), timeout=300)
    assert r.returncode == 3 and "every member of the sweep diverged" in r.stderr
