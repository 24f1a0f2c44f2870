"""The policy-file layers DeepCC's actor needs (``select``, ``goal``, ``branches``, repeated
``concat_goal``) and ``rate_absolute`` on a log scale: hand-computed passes, DeepCC's actor
against numpy, and the validation errors.  ``datapath/tests/policy_test.cc`` checks the same
network and the same errors in C++."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import policyfile as pf


def _tiny_branches():
    """history 2 x obs 3, goal 2; three branches, concat_goal twice, log-scale absolute rate."""
    spec = {
        "format": "jaxcc-policy", "version": 1, "algorithm": "random",
        "features": {"name": "test", "history": 2, "obs_dim": 3}, "mi_rtts": 1.0, "goal_dim": 2,
        "layers": [
            {"type": "branches", "branches": [
                [{"type": "select", "start": 0, "stop": 2},
                 {"type": "conv1d", "name": "c", "in": 2, "out": 1, "kernel": 2, "activation": "linear"},
                 {"type": "flatten"}],
                [{"type": "last_step"}, {"type": "select", "start": 1, "stop": 3},
                 {"type": "dense", "name": "m", "in": 2, "out": 2, "activation": "relu"}],
                [{"type": "goal"}, {"type": "dense", "name": "g", "in": 2, "out": 1, "activation": "linear"}],
            ]},
            {"type": "concat_goal"},
            {"type": "dense", "name": "h", "in": 6, "out": 1, "activation": "linear"},
            {"type": "concat_goal"},
            {"type": "dense", "name": "out", "in": 3, "out": 1, "activation": "linear"},
        ],
        "head": {"type": "continuous", "low": 0.0, "high": 1.0},
        "action": {"type": "rate_absolute", "bound_mbps": 100.0, "scale": "log", "low_mbps": 1.0},
    }
    t = {
        "c.kernel": np.array([[[1.0], [0.0]], [[0.0], [1.0]]], np.float32),  # [K=2, in=2, out=1]
        "c.bias": np.array([0.5], np.float32),
        "m.kernel": np.array([[1.0, -1.0], [0.0, -1.0]], np.float32),
        "m.bias": np.array([0.0, 1.0], np.float32),
        "g.kernel": np.array([[2.0], [4.0]], np.float32),
        "g.bias": np.array([-1.0], np.float32),
        "h.kernel": np.array([[0.1], [0.2], [5.0], [-0.4], [4.0], [-2.0]], np.float32),
        "h.bias": np.array([0.05], np.float32),
        "out.kernel": np.array([[1.0], [2.0], [-1.0]], np.float32),
        "out.bias": np.array([0.0], np.float32),
    }
    return spec, t


OBS = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
GOAL = np.array([0.25, 0.75], np.float32)


def test_tiny_branches_by_hand():
    spec, t = _tiny_branches()
    # branch 0: select 0:2 -> [[1, 2], [4, 5]]; conv k2: 0.5 + 1*1 + 5*1 = 6.5
    # branch 1: last_step [4, 5, 6] -> select 1:3 [5, 6] -> relu([5, -5 - 6 + 1]) = [5, 0]
    # branch 2: goal [.25, .75] -> 2*.25 + 4*.75 - 1 = 2.5
    # concat [6.5, 5, 0, 2.5] + goal -> h = .65 + 1 + 0 - 1 + 1 - 1.5 + .05 = 0.2
    # concat [0.2] + goal -> out = 0.2 + 0.5 - 0.75 = -0.05
    net = pf.forward(spec, t, OBS, GOAL)
    assert net.shape == (1,)
    assert float(net[0]) == pytest.approx(-0.05, abs=1e-6)
    u = (math.tanh(-0.05) + 1.0) / 2.0  # 0.47502...
    out = jax.jit(functools.partial(pf.apply, spec, t))(OBS, GOAL)
    assert float(out[0]) == pytest.approx(u, rel=1e-6)
    rate, cwnd = jax.jit(functools.partial(pf.map_action, spec))(out, 5e6, 7e4)
    assert float(rate) == pytest.approx(1.0 * 100.0 ** u * 125000.0, rel=1e-5)  # ~8.91 Mbit/s
    assert float(cwnd) == 7e4
    # The goal changes branch 2 and both concat_goal inputs: goal (1, 0) -> branch 2 = 1,
    # h = .65 + 1 + 0 - .4 + 4 + 0 + .05 = 5.3, out = 5.3 + 2 = 7.3.
    assert float(pf.forward(spec, t, OBS, np.array([1.0, 0.0], np.float32))[0]) == pytest.approx(7.3, rel=1e-6)


def test_tiny_branches_vmap_matches_single():
    spec, t = _tiny_branches()
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(5, 2, 3)).astype(np.float32)
    goals = rng.dirichlet(np.ones(2), size=5).astype(np.float32)
    batch = jax.jit(jax.vmap(functools.partial(pf.forward, spec, t)))(obs, goals)
    for i in range(5):
        np.testing.assert_allclose(np.asarray(batch[i]), np.asarray(pf.forward(spec, t, obs[i], goals[i])),
                                   rtol=1e-6, atol=1e-6)


def test_select_on_a_vector_and_goal_only_network():
    spec, t = _tiny_branches()
    spec["goal_dim"] = 2
    spec["layers"] = [{"type": "flatten"}, {"type": "select", "start": 4, "stop": 6},
                      {"type": "dense", "name": "out", "in": 2, "out": 1, "activation": "linear"},
                      {"type": "goal"}, {"type": "dense", "name": "h", "in": 2, "out": 1, "activation": "linear"}]
    t = {"out.kernel": np.ones((2, 1), np.float32), "out.bias": np.zeros(1, np.float32),
         "h.kernel": np.array([[3.0], [-1.0]], np.float32), "h.bias": np.array([0.5], np.float32)}
    # flatten [1..6] -> select 4:6 [5, 6]; the goal layer drops that: 3*.25 - .75 + .5 = 0.5
    assert pf.expected_tensor_shapes(spec)["h.kernel"] == (2, 1)
    assert float(pf.forward(spec, t, OBS, GOAL)[0]) == pytest.approx(0.5, abs=1e-7)


# ------------------------------------------------------------------ rate_absolute, scale log


@pytest.mark.parametrize("a, mbps", [(0.0, 0.1), (1.0, 100.0), (0.5, math.sqrt(0.1 * 100.0)),
                                     (0.25, 0.1 * 1000.0 ** 0.25)])
def test_log_rate_by_hand(a, mbps):
    spec, _ = pf.make_random_policy("conv1d_goal", 0)
    assert spec["action"] == {"type": "rate_absolute", "bound_mbps": 100.0, "scale": "log", "low_mbps": 0.1,
                              "min_mbps": 0.01, "max_mbps": 100000.0}
    rate, _ = pf.map_action(spec, jnp.array([a]), 1e6, 1e5)
    assert float(rate) == pytest.approx(mbps * 125000.0, rel=1e-5)


def test_log_rate_discrete_head_and_head_range():
    spec, _ = pf.make_random_policy("lstm2_discrete", 0)  # 5 actions
    spec["action"] = {"type": "rate_absolute", "bound_mbps": 16.0, "scale": "log", "low_mbps": 1.0}
    pf.expected_tensor_shapes(spec)
    # i / (n - 1) = 0.75 -> 16 ** 0.75 = 8 Mbit/s
    assert float(pf.map_action(spec, 3, 1e6, 1e5)[0]) == pytest.approx(8.0 * 125000.0, rel=1e-6)
    spec, _ = pf.make_random_policy("conv1d_goal", 0)
    spec["head"] = {"type": "continuous", "low": -1.0, "high": 1.0}
    # a = 0 -> u = 0.5 -> sqrt(0.1 * 100) Mbit/s
    assert float(pf.map_action(spec, jnp.array([0.0]), 1e6, 1e5)[0]) == pytest.approx(
        math.sqrt(10.0) * 125000.0, rel=1e-5)


def test_linear_rate_unchanged():
    spec, _ = pf.make_random_policy("conv1d_goal", 0)
    spec["action"] = {"type": "rate_absolute", "bound_mbps": 40.0}
    assert float(pf.map_action(spec, jnp.array([0.25]), 1e6, 1e5)[0]) == pytest.approx(10.0 * 125000.0)


@pytest.mark.parametrize("patch, needle", [
    ({"scale": "exp"}, "action.scale must be one of linear, log, got 'exp'"),
    ({"scale": "log"}, "missing key 'low_mbps'"),
    ({"scale": "log", "low_mbps": 0.0}, "action.low_mbps must be in (0, bound_mbps=100.0), got 0.0"),
    ({"scale": "log", "low_mbps": 100.0}, "action.low_mbps must be in (0, bound_mbps=100.0), got 100.0"),
    ({"scale": "log", "low_mbps": -1.0}, "action.low_mbps must be in (0, bound_mbps=100.0)"),
    ({"scale": "linear", "low_mbps": 1.0}, "action.low_mbps is only allowed with scale 'log'"),
])
def test_log_rate_rejections(patch, needle):
    spec, t = pf.make_random_policy("conv1d_goal", 0)
    spec["action"] = dict({"type": "rate_absolute", "bound_mbps": 100.0}, **patch)
    with pytest.raises(ValueError) as e:
        pf.validate(spec, t)
    assert needle in str(e.value), str(e.value)


def test_scale_only_on_rate_absolute():
    spec, t = pf.make_random_policy("lstm", 0)
    spec["action"] = {"type": "rate_multiplicative", "scale": "log", "low_mbps": 1.0}
    with pytest.raises(ValueError, match="only allowed on rate_absolute, got rate_multiplicative"):
        pf.validate(spec, t)


# ------------------------------------------------------------------ DeepCC's actor


def test_conv1d_goal_is_deepcc_actor_against_numpy():
    spec, t = pf.make_random_policy("conv1d_goal", 3)
    assert (spec["features"]["history"], spec["features"]["obs_dim"], spec["goal_dim"]) == (16, 7, 3)
    assert t["state_conv.kernel"].shape == (3, 4, 32)  # §V: 32 filters, size 3, stride 1
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(16, 7)).astype(np.float32)
    goal = np.array([0.6, 0.3, 0.1], np.float32)
    f = {k: v.astype(np.float64) for k, v in t.items()}

    def dense(x, n, relu=True):
        y = x @ f[n + ".kernel"] + f[n + ".bias"]
        return np.maximum(y, 0.0) if relu else y

    w, b = f["state_conv.kernel"], f["state_conv.bias"]
    s = np.stack([sum(obs[i + k, 0:4] @ w[k] for k in range(3)) + b for i in range(14)])
    s = np.maximum(s, 0.0).reshape(-1)
    m = dense(dense(dense(obs[-1, 4:7], "meas1"), "meas2"), "meas3")
    g = dense(dense(dense(goal, "goal1"), "goal2"), "goal3")
    x = dense(np.concatenate([s, m, g, goal]), "merge1")
    z = dense(np.concatenate([x, goal]), "out", relu=False)
    np.testing.assert_allclose(np.asarray(pf.forward(spec, t, obs, goal)), z, rtol=1e-4, atol=1e-5)
    out = float(pf.apply(spec, t, obs, goal)[0])
    assert out == pytest.approx((math.tanh(z[0]) + 1) / 2, rel=1e-4)
    rate, _ = pf.map_action(spec, jnp.array([out]), 1e6, 1e5)
    assert float(rate) == pytest.approx(0.1 * 1000.0 ** out * 125000, rel=1e-5)


def test_conv1d_goal_overrides_and_bad_sizes():
    spec, t = pf.make_random_policy("conv1d_goal", 0, history=3, obs_dim=2, goal_dim=2, hidden=4, filters=2)
    br = spec["layers"][0]["branches"]
    assert br[0][0] == {"type": "select", "start": 0, "stop": 1}
    assert br[1][1] == {"type": "select", "start": 1, "stop": 2}
    assert t["merge1.kernel"].shape == (1 * 2 + 2 * 4 + 2, 4)
    with pytest.raises(ValueError, match="measurement_dim must be in"):
        pf.make_random_policy("conv1d_goal", 0, obs_dim=7, measurement_dim=7)
    with pytest.raises(ValueError, match="history must be >= 3"):
        pf.make_random_policy("conv1d_goal", 0, history=2)
    with pytest.raises(ValueError, match="conv1d_goal kind only"):
        pf.make_random_policy("lstm", 0, filters=8)


def test_deepcc_feature_policy_follows_env_spec(monkeypatch):
    spec, t = pf.make_feature_policy("deepcc_v1", 0)
    names = spec["features"]["feature_names"]
    sel_state, sel_meas = spec["layers"][0]["branches"][0][0], spec["layers"][0]["branches"][1][1]
    assert [n for n in names[sel_meas["start"]:sel_meas["stop"]]] == [n for n in names if n.startswith("m_")]
    assert sel_state == {"type": "select", "start": 0, "stop": sel_meas["start"]}
    assert [lay["type"] for lay in spec["layers"]] == ["branches", "concat_goal", "dense", "concat_goal", "dense"]
    assert spec["action"]["bound_mbps"] == spec["features"]["bound_mbps"]
    assert spec["action"].get("scale", "linear") == spec["features"].get("scale", "linear")

    # An env that exports a log scale: the action block carries it.
    from jaxcc.envs import registry

    real = registry.export_features_spec

    def log_spec(name, **kw):
        d = real(name, **kw)
        return dict(d, scale="log", low_mbps=0.1, bound_mbps=100.0) if name == "deepcc" else d

    monkeypatch.setattr(registry, "export_features_spec", log_spec)
    spec, t = pf.make_feature_policy("deepcc_v1", 0)
    assert spec["action"]["scale"] == "log" and spec["action"]["low_mbps"] == 0.1
    assert spec["action"]["bound_mbps"] == 100.0


# ------------------------------------------------------------------ rejections


def _expect(spec, tensors, *needles):
    with pytest.raises(ValueError) as e:
        pf.validate(spec, tensors)
    for n in needles:
        assert n in str(e.value), str(e.value)


def _branch(spec, b):
    return spec["layers"][0]["branches"][b]


def test_reject_select_out_of_range():
    spec, t = _tiny_branches()
    _branch(spec, 0)[0]["stop"] = 4
    _expect(spec, t, "layer 0 (branches) branch 0 layer 0 (select) 'stop' must be an integer in [1, 3]", "got 4")
    spec, t = _tiny_branches()
    _branch(spec, 0)[0].update(start=2, stop=2)
    _expect(spec, t, "'stop' must be an integer in [3, 3]", "got 2")
    spec, t = _tiny_branches()
    _branch(spec, 1)[1]["start"] = -1
    _expect(spec, t, "branch 1 layer 1 (select) 'start' must be an integer in [0, 2]", "got -1")
    spec, t = _tiny_branches()
    _branch(spec, 1)[1]["start"] = 3
    _expect(spec, t, "'start' must be an integer in [0, 2] (its input has 3 features), got 3")
    spec, t = _tiny_branches()
    _branch(spec, 1)[1]["start"] = 1.0
    _expect(spec, t, "'start' must be an integer", "got 1.0")
    spec, t = _tiny_branches()
    del _branch(spec, 1)[1]["stop"]
    _expect(spec, t, "layer 0 (branches) branch 1 layer 1 (select) is missing key 'stop'")


def test_reject_goal_without_goal_dim():
    spec, t = _tiny_branches()
    spec["goal_dim"] = 0
    _expect(spec, t, "layer 0 (branches) branch 2 layer 0 (goal) but spec.goal_dim is 0")


def test_reject_empty_branch_and_empty_branches():
    spec, t = _tiny_branches()
    spec["layers"][0]["branches"][1] = []
    _expect(spec, t, "layer 0 (branches) branch 1 must be a non-empty list of layers")
    spec["layers"][0]["branches"] = []
    _expect(spec, t, "layer 0 (branches) 'branches' must be a non-empty list of layer lists")
    del spec["layers"][0]["branches"]
    _expect(spec, t, "layer 0 (branches) is missing key 'branches'")


def test_reject_nested_branches():
    spec, t = _tiny_branches()
    _branch(spec, 2).insert(0, {"type": "branches", "branches": [[{"type": "goal"}]]})
    _expect(spec, t, "layer 0 (branches) branch 2 layer 0 (branches): branches cannot be nested")


def test_reject_branch_ending_in_a_matrix():
    spec, t = _tiny_branches()
    _branch(spec, 0).pop()  # no flatten: [1, 1]
    _expect(spec, t, "layer 0 (branches) branch 0 must end in a vector (add last_step or flatten), got shape [1, 1]")


def test_reject_duplicate_names_across_branches():
    spec, t = _tiny_branches()
    _branch(spec, 2)[1]["name"] = "m"
    _expect(spec, t, "branch 2 layer 1 (dense 'm'): duplicate layer name 'm'")
    spec, t = _tiny_branches()
    spec["layers"][2]["name"] = "g"  # a main-list layer named like a branch's
    _expect(spec, t, "layer 2 (dense 'g'): duplicate layer name 'g'")


def test_reject_branch_tensor_problems():
    spec, t = _tiny_branches()
    t2 = dict(t, **{"m.kernel": np.zeros((3, 2), np.float32)})
    _expect(spec, t2, "tensor 'm.kernel' has shape [3, 2], expected [2, 2]")
    t3 = dict(t)
    del t3["g.bias"]
    _expect(spec, t3, "missing tensor 'g.bias'")
    spec, t = _tiny_branches()
    spec["layers"][2]["in"] = 5
    _expect(spec, t, "layer 2 (dense 'h') expects in=5 but its input has shape [6]")


def test_goal_dim_needs_a_goal_reader():
    spec, t = _tiny_branches()
    spec["layers"] = [{"type": "flatten"}, {"type": "dense", "name": "out", "in": 6, "out": 1}]
    t = {"out.kernel": np.zeros((6, 1), np.float32), "out.bias": np.zeros(1, np.float32)}
    _expect(spec, t, "spec.goal_dim is 2 but no concat_goal or goal layer uses the goal")
