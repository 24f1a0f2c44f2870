"""Tests for jaxcc.policyfile: hand-computed forward passes, round trips, rejections."""

import copy
import functools
import json
import math
import os
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile as pf


def _tiny_dense():
    spec = {
        "format": "jaxcc-policy", "version": 1, "algorithm": "random",
        "features": {"name": "test", "history": 1, "obs_dim": 2}, "mi_rtts": 1.0, "goal_dim": 0,
        "layers": [{"type": "flatten"},
                   {"type": "dense", "name": "fc", "in": 2, "out": 1, "activation": "linear"}],
        "head": {"type": "gaussian_mean", "low": -2.0, "high": 2.0},
        "action": {"type": "aurora", "alpha": 0.5},
    }
    tensors = {"fc.kernel": np.array([[0.5], [-1.0]], np.float32), "fc.bias": np.array([0.25], np.float32)}
    return spec, tensors


def _tiny_lstm():
    spec = {
        "format": "jaxcc-policy", "version": 1, "algorithm": "random",
        "features": {"name": "test", "history": 2, "obs_dim": 1}, "mi_rtts": 2.0, "goal_dim": 0,
        "layers": [{"type": "lstm", "name": "l", "in": 1, "hidden": 1}, {"type": "last_step"}],
        "head": {"type": "continuous", "low": -0.7, "high": 2.0},
        "action": {"type": "rate_multiplicative"},
    }
    # gate order i, f, g, o
    tensors = {"l.kernel_i": np.array([[0.5, -0.25, 1.0, 0.75]], np.float32),
               "l.kernel_h": np.array([[0.1, 0.2, -0.3, 0.4]], np.float32),
               "l.bias": np.array([0.0, 1.0, 0.1, -0.1], np.float32)}
    return spec, tensors


def _sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def test_tiny_dense_by_hand():
    spec, t = _tiny_dense()
    obs = np.array([[2.0, 1.0]], np.float32)
    # 0.5*2 - 1.0*1 + 0.25 = 0.25, inside the clip range
    assert float(pf.apply(spec, t, obs)[0]) == pytest.approx(0.25, abs=1e-7)
    obs = np.array([[10.0, 0.0]], np.float32)  # 5.25 -> clipped to 2
    assert float(pf.apply(spec, t, obs)[0]) == pytest.approx(2.0)
    # aurora: a=2 >= 0 -> rate*(1+0.5*2) = 2*rate ; a=-2 -> rate/(1+1) = rate/2
    rate, cwnd = pf.map_action(spec, jnp.array([2.0]), 1e6, 30000.0)
    assert float(rate) == pytest.approx(2e6) and float(cwnd) == 30000.0
    rate, _ = pf.map_action(spec, jnp.array([-2.0]), 1e6, 30000.0)
    assert float(rate) == pytest.approx(0.5e6)


def test_tiny_lstm_by_hand():
    spec, t = _tiny_lstm()
    xs = [0.5, -1.0]
    # Independent scalar computation of c' = f*c + i*g, h' = o*tanh(c').
    h = c = 0.0
    for x in xs:
        z = [x * t["l.kernel_i"][0, j] + h * t["l.kernel_h"][0, j] + t["l.bias"][j] for j in range(4)]
        i, f, g, o = _sig(z[0]), _sig(z[1]), math.tanh(z[2]), _sig(z[3])
        c = f * c + i * g
        h = o * math.tanh(c)
    # First step by hand: z = [0.25, 0.875, 0.6, 0.275]
    # i=σ(.25)=.562177, g=tanh(.6)=.537050, c1=i*g=.301916, tanh(c1)=.293067,
    # o=σ(.275)=.568320, h1=o*tanh(c1)=.166555
    net = pf.forward(spec, t, np.array([[0.5], [-1.0]], np.float32))
    assert float(net[0]) == pytest.approx(h, rel=1e-5)
    out = pf.apply(spec, t, np.array([[0.5], [-1.0]], np.float32))
    assert float(out[0]) == pytest.approx(-0.7 + (math.tanh(h) + 1) / 2 * 2.7, rel=1e-5)
    # first step hand values
    h1 = _sig(0.275) * math.tanh(_sig(0.25) * math.tanh(0.6))
    assert h1 == pytest.approx(0.166555, abs=2e-6)


# conv1d_goal (DeepCC's actor: branches, select, goal, conv1d, concat_goal twice) against numpy:
# tests/test_policy_branches.py.


@pytest.mark.parametrize("kind", ["mlp", "lstm", "lstm2_discrete", "conv1d_goal", "q_values"])
def test_random_round_trip_jit_vmap(tmp_path, kind):
    spec, t = pf.make_random_policy(kind, jax.random.PRNGKey(0))
    path = tmp_path / "p.safetensors"
    pf.save(path, spec, t)
    spec2, t2 = pf.load(path)
    assert spec2 == json.loads(json.dumps(spec))
    assert set(t2) == set(t)
    for k in t:
        np.testing.assert_array_equal(t[k], t2[k])
    T, D, G = spec["features"]["history"], spec["features"]["obs_dim"], spec["goal_dim"]
    obs = jax.random.normal(jax.random.PRNGKey(1), (7, T, D))
    goal = jnp.ones((7, G)) / G if G else None
    f = jax.jit(jax.vmap(functools.partial(pf.apply, spec2, t2)))
    out = f(obs, goal) if G else f(obs)
    single = pf.apply(spec2, t2, obs[3], goal[3] if G else None)
    np.testing.assert_allclose(np.asarray(out[3]), np.asarray(single), rtol=1e-5, atol=1e-6)
    rate, cwnd = jax.jit(functools.partial(pf.map_action, spec2))(out[0], 1e6, 3e4)
    assert np.isfinite(float(rate)) and float(rate) > 0


def test_map_action_tables_and_clamps():
    spec, _ = pf.make_random_policy("lstm2_discrete", 0)
    r, c = pf.map_action(spec, 4, 1e6, 3e4)
    assert float(r) == pytest.approx(2e6) and float(c) == 3e4
    spec, tensors = pf.make_random_policy("q_values", 0)
    r, c = pf.map_action(spec, 0, 1e6, 3500.0)  # 3500-3000 -> clamped to 2 MSS
    assert float(c) == 3000.0 and float(r) == 1e6
    r, c = pf.map_action(spec, 4, 1e6, jnp.inf)
    assert math.isinf(float(c))
    # MOCC's mixed table (jaxcc.envs.mocc "Actions"): x2 and -50 packets
    assert spec["action"]["multipliers"] == [0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0]
    assert float(pf.map_action(spec, 5, 1e6, 30000.0)[1]) == 60000.0
    assert float(pf.map_action(spec, 1, 1e6, 90000.0)[1]) == 15000.0
    assert float(pf.map_action(spec, 0, 1e6, 30000.0)[1]) == 15000.0
    bad = copy.deepcopy(spec)
    bad["action"]["multipliers"] = [1.0] * 6
    _expect(bad, tensors, "action.multipliers must be a list of 7")
    bad["action"]["multipliers"] = [0.5, 1.0, 1.0, -1.0, 1.0, 2.0, 1.0]
    _expect(bad, tensors, "action.multipliers[3] must be > 0")
    spec, _ = pf.make_random_policy("lstm", 0)
    r, _ = pf.map_action(spec, jnp.array([-0.7]), 1e3, 1e4)  # 300 B/s -> min 0.01 Mbit/s
    assert float(r) == pytest.approx(0.01 * 125000)


# ------------------------------------------------------------------ rejections


def _expect(spec, tensors, *needles):
    with pytest.raises(ValueError) as e:
        pf.validate(spec, tensors)
    for n in needles:
        assert n in str(e.value), str(e.value)


def test_reject_missing_layer_type():
    spec, t = _tiny_dense()
    del spec["layers"][1]["type"]
    _expect(spec, t, "layer 1", "missing its 'type'")


def test_reject_unknown_layer_type():
    spec, t = _tiny_dense()
    spec["layers"][1]["type"] = "attention"
    _expect(spec, t, "unknown layer type 'attention'")


def test_reject_shape_mismatch_names_tensor_and_shapes():
    spec, t = _tiny_lstm()
    t["l.kernel_h"] = np.zeros((2, 4), np.float32)
    _expect(spec, t, "'l.kernel_h'", "[2, 4]", "expected [1, 4]")


def test_reject_in_mismatch():
    spec, t = _tiny_dense()
    spec["layers"][1]["in"] = 3
    _expect(spec, t, "fc", "in=3")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_reject_nonfinite(bad):
    spec, t = _tiny_dense()
    t["fc.bias"] = np.array([bad], np.float32)
    _expect(spec, t, "'fc.bias'", "NaN/inf")


def test_reject_missing_and_unknown_tensor():
    spec, t = _tiny_dense()
    t2 = dict(t)
    del t2["fc.bias"]
    _expect(spec, t2, "missing tensor 'fc.bias'")
    t3 = dict(t, extra=np.zeros(1, np.float32))
    _expect(spec, t3, "unknown tensor", "extra")


def test_reject_magic_version_head_action():
    spec, t = _tiny_dense()
    s = copy.deepcopy(spec); s["format"] = "onnx"
    _expect(s, t, "wrong magic")
    s = copy.deepcopy(spec); s["version"] = 2
    _expect(s, t, "unsupported version 2")
    s = copy.deepcopy(spec); s["head"] = {"type": "beta"}
    _expect(s, t, "unknown head type 'beta'")
    s = copy.deepcopy(spec); s["action"] = {"type": "rate_table", "multipliers": [1.0]}
    _expect(s, t, "needs a discrete")
    s = copy.deepcopy(spec); s["goal_dim"] = 2
    _expect(s, t, "no concat_goal")


def _blob(spec, t, tmp_path):
    p = tmp_path / "ok.safetensors"
    pf.save(p, spec, t)
    return p.read_bytes()


def test_reject_truncated_and_corrupted_files(tmp_path):
    spec, t = _tiny_lstm()
    blob = _blob(spec, t, tmp_path)
    p = tmp_path / "bad.safetensors"
    for cut, needle in ((4, "truncated"), (20, "truncated"), (len(blob) - 3, "truncated")):
        p.write_bytes(blob[:cut])
        with pytest.raises(ValueError, match=needle):
            pf.load(p)
    p.write_bytes(struct.pack("<Q", 1 << 40) + blob[8:])
    with pytest.raises(ValueError, match="implausible"):
        pf.load(p)
    (hlen,) = struct.unpack("<Q", blob[:8])
    p.write_bytes(blob[:8] + b"{" * hlen + blob[8 + hlen:])
    with pytest.raises(ValueError, match="corrupted"):
        pf.load(p)


def test_reject_wrong_magic_in_file(tmp_path):
    from safetensors.numpy import save_file

    spec, t = _tiny_dense()
    p = tmp_path / "m.safetensors"
    save_file(t, str(p), metadata={"jaxcc": json.dumps(dict(spec, format="other"))})
    with pytest.raises(ValueError, match="wrong magic"):
        pf.load(p)
    save_file(t, str(p), metadata={"something": "else"})
    with pytest.raises(ValueError, match="no 'jaxcc' spec"):
        pf.load(p)
    save_file({k: v.astype(np.float16) for k, v in t.items()}, str(p), metadata={"jaxcc": json.dumps(spec)})
    with pytest.raises(ValueError, match="F32"):
        pf.load(p)


def test_save_refuses_invalid(tmp_path):
    spec, t = _tiny_dense()
    t["fc.kernel"] = np.zeros((3, 1), np.float32)
    with pytest.raises(ValueError, match="fc.kernel"):
        pf.save(tmp_path / "x.safetensors", spec, t)
    assert not (tmp_path / "x.safetensors").exists()


def _numbers(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _numbers(x[k])]
    if isinstance(x, list):
        return [v for item in x for v in _numbers(item)]
    return [float(x)] if isinstance(x, (int, float)) and not isinstance(x, bool) else []


def test_vectors_command_and_committed_vectors_are_current(tmp_path):
    """The committed tests/vectors (read by the C++ tests) must be what the current Python
    code writes; otherwise a change in jaxcc/envs features or in apply() would leave the
    datapath checked against stale numbers. Fix: python -m jaxcc.parity_vectors --out tests/vectors"""
    import pathlib

    from jaxcc import parity_vectors

    repo = pathlib.Path(__file__).parent.parent
    marker = repo / "tests" / "vectors" / parity_vectors.MOCC_POLICY_MARKER  # written with --mocc-policy
    extra = [f"--mocc-policy={repo / marker.read_text().strip()}"] if marker.exists() else []
    assert parity_vectors.run_cli(["parity_vectors", "--out", str(tmp_path)] + extra) == 0
    d = json.loads((tmp_path / "lstm.json").read_text())
    spec, t = pf.load(tmp_path / d["policy"])
    c = d["cases"][0]
    np.testing.assert_allclose(np.asarray(pf.forward(spec, t, np.array(c["obs"], np.float32))), c["net_out"],
                               rtol=1e-6)
    committed = pathlib.Path(__file__).parent / "vectors"
    fresh = sorted(p.name for p in tmp_path.glob("*.json"))
    # Written by a module above jaxcc.parity_vectors' layer (jaxcc.online), and checked by its own test.
    others = {"frame_auth.json": "jaxcc.online.auth.write_vectors, tests/test_online_auth.py"}
    assert fresh == sorted(p.name for p in committed.glob("*.json") if p.name not in others), \
        "vector files differ; regenerate"
    for name in fresh:
        a = _numbers(json.loads((committed / name).read_text()))
        b = _numbers(json.loads((tmp_path / name).read_text()))
        assert len(a) == len(b), f"{name}: structure changed; regenerate tests/vectors"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} is stale; regenerate tests/vectors")


def test_random_command_writes_kinds_and_feature_sets(tmp_path, capsys):
    """``python -m jaxcc.policyfile --random=KIND|SET``: a network kind, or a policy fitting a
    feature set as its environment exports it (``make_feature_policy``); anything else is refused."""
    out = str(tmp_path / "p.safetensors")
    assert pf.run_cli(["policyfile", "--random", "q_values", "--out", out]) == 0
    spec = pf.load(out)[0]  # MOCC's exported shape
    assert spec["features"] == {"name": "mocc_v1", "history": 1, "obs_dim": 4}
    assert spec["goal_dim"] == 3 and spec["head"] == {"type": "q_values", "n": 7, "objectives": 3}
    assert spec["action"]["deltas"] == [0.0, -75000.0, -15000.0, 0.0, 15000.0, 0.0, 75000.0]
    assert spec["action"]["multipliers"] == [0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0]
    assert pf.run_cli(["policyfile", "--random", "mocc_v1", "--out", out]) == 0
    spec = pf.load(out)[0]
    assert spec["features"]["obs_dim"] == 4 and spec["goal_dim"] == 3
    assert spec["head"] == {"type": "q_values", "n": 7, "objectives": len(spec["features"]["objectives"])}
    assert spec["action"]["deltas"] == [d * 1500 for d in spec["features"]["cwnd_deltas_pkts"]]
    capsys.readouterr()
    assert pf.run_cli(["policyfile", "--random", "nope", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "mocc_v1" in err and "q_values" in err
    assert pf.run_cli(["policyfile", "--random=mlp"]) == 2  # no --out
    assert pf.run_cli(["policyfile", f"--check={tmp_path / 'missing.safetensors'}"]) == 2
    assert pf.run_cli(["policyfile", "--seed=x"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(e.startswith("error: ") for e in lines), lines
    assert "--random needs --out" in lines[0] and "missing.safetensors" in lines[1] and "--seed" in lines[2]
    assert pf.run_cli(["policyfile", f"--check={out}"]) == 0
    assert '"mocc_v1"' in capsys.readouterr().out


def test_load_returns_tensors_in_name_order():
    """safetensors decodes a file's tensors in an order that changes from process to process; load
    hands them back sorted by name, so code that walks them (a seeded perturbation) repeats."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checkpoints", "pareto",
                        "pareto_fair.safetensors")
    spec, t = pf.load(path)
    assert len(t) >= 6 and list(t) == sorted(t)
