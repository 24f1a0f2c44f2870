"""One MOCC policy, any preference: the multi-objective ``q_values`` head of the policy
file (``head.objectives``), the scenario flow fields ``preference`` / ``preference_changes``, and
the simulator deciding with the flow's preference.

The head is checked against hand-computed Q-values of a tiny 2-action, 2-objective network; the
simulator against itself with the preference given another way (``mocc_v1.controller(goal=)``,
the sender's own goal input) and against symmetry (two identical flows with one preference send
identically, with two preferences they do not).
"""

from __future__ import annotations

import functools
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import parity_vectors, policyfile as pf, scenarios, senders
from jaxcc.evaluation import runs
from jaxcc.envs import mocc
from jaxcc.senders import mocc_v1
from jaxcc.sim import controller as ctl
from jaxcc.sim import runner

VECTORS = pathlib.Path(__file__).parent / "vectors"


# ------------------------------------------------------------------ the head


def _tiny(objectives=2, n=2, out=None, goal_dim=2, head_type="q_values"):
    """history 1 x obs 1, goal 2 -> dense(linear) -> n*M Q-values:
    z = [x, 0, 0, x] + bias, i.e. Q(a0) = (x + 0.25, -0.125), Q(a1) = (0, x + 0.375)."""
    out = n * objectives if out is None else out
    spec = {"format": pf.FORMAT, "version": pf.VERSION, "algorithm": "random",
            "features": {"name": "tiny", "history": 1, "obs_dim": 1}, "mi_rtts": 1.0, "goal_dim": goal_dim,
            "layers": [{"type": "flatten"}, {"type": "concat_goal"},
                       {"type": "dense", "name": "q", "in": 1 + goal_dim, "out": out, "activation": "linear"}],
            "head": {"type": head_type, "n": n, "objectives": objectives},
            "action": {"type": "cwnd_table", "deltas": [-1500.0, 1500.0][:n] + [0.0] * max(0, n - 2)}}
    k = np.zeros((1 + goal_dim, out), np.float32)
    if out == 4:
        k[0] = [1.0, 0.0, 0.0, 1.0]
    t = {"q.kernel": k, "q.bias": np.array([0.25, -0.125, 0.0, 0.375][:out] + [0.0] * max(0, out - 4), np.float32)}
    return spec, t


@pytest.mark.parametrize("x,goal,want", [
    # z = [2.25, -0.125, 0, 2.375]: a0 scores 0.6*2.25 + 0.4*(-0.125) = 1.30, a1 0.4*2.375 = 0.95
    (2.0, (0.6, 0.4), 0),
    # a0: 0.2*2.25 - 0.8*0.125 = 0.35, a1: 0.8*2.375 = 1.90
    (2.0, (0.2, 0.8), 1),
    # z = [1.25, -0.125, 0, 1.375]; (1, 0): a0 1.25 > a1 0, although z's largest value is a1's
    (1.0, (1.0, 0.0), 0),
    # z = [0.25, -0.125, 0, 0.375]; (0.5, 0.5): a0 0.0625, a1 0.1875
    (0.0, (0.5, 0.5), 1),
    # z = [-0.25, -0.125, 0, -0.125] (exact in binary); (0, 1): -0.125 for both, a tie: the first action
    (-0.5, (0.0, 1.0), 0),
])
def test_multi_objective_head_by_hand(x, goal, want):
    spec, t = _tiny()
    pf.validate(spec, t)
    obs = np.array([[x]], np.float32)
    z = np.asarray(pf.forward(spec, t, obs, goal))
    np.testing.assert_allclose(z, [x + 0.25, -0.125, 0.0, x + 0.375], rtol=1e-6, atol=1e-7)
    assert int(pf.apply(spec, t, obs, goal)) == want
    assert int(jax.jit(functools.partial(pf.apply, spec, t))(obs, jnp.asarray(goal))) == want
    rate, cwnd = pf.map_action(spec, pf.apply(spec, t, obs, goal), 1e6, 30000.0)
    assert float(cwnd) == 30000.0 + (-1500.0, 1500.0)[want] and float(rate) == 1e6


def test_multi_objective_head_vmaps_over_preferences():
    spec, t = _tiny()
    goals = jnp.array([[0.6, 0.4], [0.2, 0.8], [1.0, 0.0]])
    obs = jnp.broadcast_to(jnp.array([[2.0]]), (3, 1, 1))
    out = jax.vmap(functools.partial(pf.apply, spec, t))(obs, goals)
    assert out.tolist() == [0, 1, 0]
    np.testing.assert_allclose(np.asarray(pf.scalarised_q(jnp.array([2.25, -0.125, 0.0, 2.375]), goals[0], 2, 2)),
                               [1.30, 0.95], rtol=1e-6)


def test_single_objective_q_values_is_plain_argmax():
    spec, t = _tiny(objectives=1, out=2, goal_dim=2)
    del spec["head"]["objectives"]  # absent: 1
    t = {"q.kernel": np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]], np.float32), "q.bias": np.array([0.0, 0.5], np.float32)}
    pf.validate(spec, t)
    assert int(pf.apply(spec, t, np.array([[1.0]], np.float32), (0.0, 1.0))) == 0  # z = [1, 0.5]
    assert int(pf.apply(spec, t, np.array([[0.2]], np.float32), (1.0, 0.0))) == 1  # z = [0.2, 0.5]
    assert pf.q_objectives(spec) == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_objectives_must_be_a_positive_integer(bad):
    spec, t = _tiny()
    spec["head"]["objectives"] = bad
    with pytest.raises(ValueError, match=r"policy file: head\.objectives must be an integer >= 1.*got"):
        pf.validate(spec, t)


def test_objectives_validation_names_sizes_and_goal():
    spec, t = _tiny(objectives=3, out=4, goal_dim=3)  # 2 actions x 3 objectives need 6 outputs
    t = {"q.kernel": np.zeros((4, 4), np.float32), "q.bias": np.zeros((4,), np.float32)}
    with pytest.raises(ValueError, match=r"n=2 and objectives=3: the final layer must output n\*objectives=6 values, got 4"):
        pf.validate(spec, t)
    spec, t = _tiny(objectives=2, out=4, goal_dim=3)  # 2 objectives but a 3-weight goal
    t = {"q.kernel": np.zeros((4, 4), np.float32), "q.bias": np.zeros((4,), np.float32)}
    with pytest.raises(ValueError, match=r"head\.objectives is 2 but spec\.goal_dim is 3"):
        pf.validate(spec, t)
    spec, t = _tiny(head_type="discrete")
    with pytest.raises(ValueError, match=r"head\.objectives is only allowed on a q_values head"):
        pf.validate(spec, t)


def test_random_q_values_kind_has_the_mocc_shape_and_runs_as_policy_file(tmp_path):
    spec, t = pf.make_random_policy("q_values", 3)
    assert spec["goal_dim"] == 3 and spec["head"] == {"type": "q_values", "n": 7, "objectives": 3}
    assert (spec["features"]["history"], spec["features"]["obs_dim"]) == (1, 4)
    assert spec["action"]["deltas"] == [d * 1500.0 for d in mocc.CWND_DELTAS_PKTS]
    assert t["q.kernel"].shape == (64, 21)
    path = tmp_path / "q.safetensors"
    pf.save(path, spec, t)
    ctrl, cp = senders.resolve(f"policy:{path}")
    assert ctrl.takes_preference and jax.tree.all(jax.tree.map(np.array_equal, cp, ctl.ControllerParams.zeros()))
    fspec, _ = pf.make_feature_policy("mocc_v1", 0)
    assert fspec["head"] == {"type": "q_values", "n": 7, "objectives": len(mocc.OBJECTIVES)}


def test_mocc_sender_requires_the_objectives_head():
    spec, t = pf.make_feature_policy("mocc_v1", 0)
    mocc_v1.sender(spec, t)  # fits
    one, t1 = pf.make_random_policy("q_values", 0, objectives=1, n_actions=7, goal_dim=3)
    one = dict(one, features=spec["features"], mi_rtts=spec["mi_rtts"], action=spec["action"])
    with pytest.raises(ValueError, match=r"mocc_v1: head must be q_values over 7 actions .* with objectives 3 .*objectives=1"):
        mocc_v1.sender(one, t1)


# ------------------------------------------------------------------ scenario fields


def _spec(**flow):
    return {"name": "p", "duration_s": 10, "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000},
            "flows": [dict({"rtt_ms": 20, "start_s": 1.0}, **flow)]}


@pytest.mark.parametrize("bad", [[0.5, 0.5], [0.5, 0.6, 0.0], [-0.1, 1.1, 0.0], [0.2, 0.2, 0.2], "thr",
                                 [True, False, False], [0.5, 0.5, None], [float("nan"), 0.5, 0.5], {"thr": 1}])
def test_preference_field_is_validated(bad):
    with pytest.raises(ValueError) as e:
        scenarios.parse_scenario(_spec(preference=bad), source="x.json")
    msg = str(e.value)
    assert msg.startswith("x.json.flows[0].preference: must be 3 numbers >= 0 summing to 1 (throughput, delay, loss), got")
    assert "\n" not in msg


def test_preference_sum_tolerance_and_round_trip():
    sc = scenarios.parse_scenario(_spec(preference=[0.3334, 0.3333, 0.3338]))  # sum 1.0005: within 1e-3
    assert sc.flows[0].preference == (0.3334, 0.3333, 0.3338)
    with pytest.raises(ValueError, match="summing to 1"):
        scenarios.parse_scenario(_spec(preference=[0.3334, 0.3333, 0.3348]))  # 1.0015
    sc = scenarios.parse_scenario(_spec(preference=[1, 0, 0], preference_changes=[
        {"at_s": 2.5, "preference": [0, 1, 0]}, {"at_s": 4, "preference": [0.5, 0.25, 0.25]}]))
    assert sc.flows[0].preference_changes == ((2.5, (0.0, 1.0, 0.0)), (4.0, (0.5, 0.25, 0.25)))
    assert scenarios.parse_scenario(json.loads(json.dumps(sc.to_dict())), source="p") == sc
    assert "preference" not in scenarios.parse_scenario(_spec()).to_dict()["flows"][0]


@pytest.mark.parametrize("changes,needle", [
    ([], "preference_changes: expected a non-empty list"),
    ({"at_s": 2}, "preference_changes: expected a non-empty list"),
    (["x"], r"preference_changes\[0\]: expected"),
    ([{"at_s": 1.0, "preference": [1, 0, 0]}], r"preference_changes\[0\]\.at_s: must be after the flow's start_s \(1\)"),
    ([{"at_s": 10.0, "preference": [1, 0, 0]}], r"preference_changes\[0\]\.at_s: .*before duration_s \(10\), got 10"),
    ([{"at_s": 3, "preference": [1, 0, 0]}, {"at_s": 3, "preference": [0, 1, 0]}],
     r"preference_changes\[1\]\.at_s: times must increase \(3 after 3\)"),
    ([{"at_s": 3}], r"preference_changes\[0\]\.preference: missing"),
    ([{"at_s": 3, "preference": [1, 1, 0]}], r"preference_changes\[0\]\.preference: must be 3 numbers"),
    ([{"at_s": 3, "pref": [1, 0, 0]}], r"preference_changes\[0\]: unknown key\(s\) \['pref'\]"),
    ([{"at_s": 2 + 0.5 * k, "preference": [1, 0, 0]} for k in range(ctl.MAX_PREFERENCE_CHANGES + 1)],
     f"preference_changes: at most {ctl.MAX_PREFERENCE_CHANGES} changes"),
])
def test_preference_changes_field_is_validated(changes, needle):
    with pytest.raises(ValueError, match=r"^sc\.flows\[0\]\." + needle):
        scenarios.parse_scenario(_spec(preference_changes=changes), source="sc")


def test_with_duration_keeps_the_preference_and_drops_changes_that_never_come():
    sc = scenarios.parse_scenario(_spec(preference=[1, 0, 0], preference_changes=[
        {"at_s": 2.5, "preference": [0, 1, 0]}, {"at_s": 6, "preference": [0, 0, 1]}]))
    short = runs.with_duration(sc, 5.0)
    assert short.flows[0].preference == (1.0, 0.0, 0.0)
    assert short.flows[0].preference_changes == ((2.5, (0.0, 1.0, 0.0)),)
    assert runs.with_duration(sc, 2.0).flows[0].preference_changes == ()
    assert runs.with_duration(sc, 20.0).flows[0].preference_changes == sc.flows[0].preference_changes


def test_preference_at_picks_the_change_in_force():
    sp = ctl.ControllerParams.zeros().sender
    default = jnp.array([1 / 3] * 3)
    np.testing.assert_allclose(ctl.preference_at(sp, 5.0, default), [1 / 3] * 3)  # nothing given
    sp.preference[:] = [0.2, 0.3, 0.5]
    sp.preference_changes[0] = [2.0, 1.0, 0.0, 0.0]
    sp.preference_changes[1] = [3.0, 0.0, 1.0, 0.0]
    f = jax.jit(lambda now: ctl.preference_at(sp, now, default))
    for now, want in ((0.0, [0.2, 0.3, 0.5]), (1.99, [0.2, 0.3, 0.5]), (2.0, [1, 0, 0]), (2.9, [1, 0, 0]),
                      (3.0, [0, 1, 0]), (100.0, [0, 1, 0])):
        np.testing.assert_allclose(np.asarray(f(jnp.float32(now))), want, err_msg=f"t={now}")


# ------------------------------------------------------------------ the simulator


@pytest.fixture(scope="module")
def mocc_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("mocc") / "mocc.safetensors"
    assert pf.run_cli(["policyfile", "--random", "mocc_v1", "--out", str(path)]) == 0
    return str(path)


def _sc(name, pol, prefs, changes=None, duration=4.0):
    flows = []
    for p in prefs:
        f = {"rtt_ms": 20, "controller": f"policy:{pol}"}
        if p is not None:
            f["preference"] = p
        if changes:
            f["preference_changes"] = changes
        flows.append(f)
    return scenarios.parse_scenario({"name": name, "duration_s": duration,
                                     "link": {"bandwidth_mbps": 12, "buffer_bytes": 375000}, "flows": flows})


def _rates(items, resolve=senders.resolve):
    (b,) = runner.build_batches(items, resolve=resolve)
    _, _, rates = runner.run_batch(b)
    return np.asarray(rates)  # [B, T, F] bytes/s


def test_simulator_decides_with_each_flows_preference(mocc_file):
    thr, delay, loss = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
    items = [runner.Item(_sc("thr", mocc_file, [thr])), runner.Item(_sc("delay", mocc_file, [delay])),
             runner.Item(_sc("both", mocc_file, [thr, delay])), runner.Item(_sc("same", mocc_file, [loss, loss]))]
    r = _rates(items)
    assert not np.allclose(r[0, :, 0], r[1, :, 0])  # (1,0,0) and (0,1,0): different trajectories
    assert not np.allclose(r[2, :, 0], r[2, :, 1])  # one file, two preferences on one link
    np.testing.assert_array_equal(r[3, :, 0], r[3, :, 1])  # one preference: identical flows send alike

    # The preference IS the policy's goal: the same run with the goal given to the sender directly.
    spec, tensors = pf.load(mocc_file)

    def with_goal(goal):
        def resolve(name):
            return mocc_v1.controller(name, spec, tensors, goal=goal), ctl.ControllerParams.zeros()
        return resolve

    for i, g in ((0, thr), (1, delay)):
        plain = runner.Item(_sc("x", mocc_file, [None]))
        np.testing.assert_allclose(_rates([plain], with_goal(g))[0, :, 0], r[i, :, 0], rtol=1e-6)


def test_preference_changes_switch_the_goal_at_their_time(mocc_file):
    thr, loss = [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]
    at = 2.0
    items = [runner.Item(_sc("thr", mocc_file, [thr])), runner.Item(_sc("loss", mocc_file, [loss])),
             runner.Item(_sc("switch", mocc_file, [thr], [{"at_s": at, "preference": loss}]))]
    r = _rates(items)
    assert not np.allclose(r[0], r[1])
    dt = 0.020 / 8  # 8 ticks per 20 ms RTT
    t_end = (np.arange(r.shape[1]) + 1) * dt  # each tick's end: a decision there uses the change
    before = t_end < at - 1e-9
    np.testing.assert_array_equal(r[2][before], r[0][before])  # the same run until at_s
    assert not np.allclose(r[2][~before], r[0][~before])  # then the policy decides with the new one
    # Not a restart: the switched flow keeps its state, so it is not the loss-preference run either.
    assert not np.allclose(r[2][~before], r[1][~before])


def test_evaluate_records_carry_the_preference(mocc_file):
    pol = f"policy:{mocc_file}"
    scs = [_sc("a", mocc_file, [[0.0, 1.0, 0.0]], duration=2.0), _sc("b", mocc_file, [None], duration=2.0),
           _sc("c", mocc_file, [[1, 0, 0], [0.5, 0.5, 0]], [{"at_s": 1.0, "preference": [0, 0, 1]}], duration=2.0)]
    rep = runs.run_evaluation(scs, [runs.ControllerEntry(pol, pol), runs.ControllerEntry("bbr", "bbr")],
                                  progress=False, keep_series=False)
    recs = {(r["scenario"], r["controller"]): r for r in rep["results"]}
    assert recs[("a", pol)]["preference"] == [0.0, 1.0, 0.0]
    assert recs[("a", pol)]["per_flow"][0]["preference"] == [0.0, 1.0, 0.0]
    assert recs[("b", pol)]["preference"] is None and recs[("b", pol)]["per_flow"][0]["preference"] is None
    c = recs[("c", pol)]
    assert c["preference"] is None  # two flows, two preferences
    assert [f["preference"] for f in c["per_flow"]] == [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    assert c["per_flow"][0]["preference_changes"] == [{"at_s": 1.0, "preference": [0.0, 0.0, 1.0]}]
    # bbr takes no preference: that pair is not run, with the field named; b (no preference) is.
    assert ("b", "bbr") in recs and ("a", "bbr") not in recs
    why = {s["scenario"]: s["reason"] for s in rep["skipped"]}
    assert why["a"].startswith("a.flows[0].preference: only a preference-conditioned policy")
    assert why["c"].startswith("c.flows[0].preference: only")
    # written out as JSON
    json.dumps(rep["results"])


def test_a_preference_for_a_controller_without_one_is_refused(tmp_path, mocc_file):
    own = scenarios.parse_scenario(dict(_spec(controller="cubic", preference=[1, 0, 0]), name="own"))
    with pytest.raises(ValueError, match=r"^own\.flows\[0\]\.preference: only a preference-conditioned policy .*'cubic'"):
        runs.run_evaluation([own], [runs.ControllerEntry(runs.OWN, None)], progress=False)
    aurora = tmp_path / "aurora.safetensors"
    pf.save(aurora, *pf.make_feature_policy("aurora_v1", 0))
    sc = scenarios.parse_scenario(dict(_spec(controller=f"policy:{aurora}",
                                             preference_changes=[{"at_s": 2, "preference": [0, 1, 0]}]), name="au"))
    assert senders.preference_refusals(sc)[0].startswith("au.flows[0].preference_changes: only a preference")
    # the runner refuses it too (a caller that skips the check)
    with pytest.raises(ValueError, match=r"flows\[0\]\.preference_changes: only a preference-conditioned"):
        runner.build_batches([runner.Item(sc)], resolve=senders.resolve)
    ok = scenarios.parse_scenario(dict(_spec(controller=f"policy:{mocc_file}", preference=[0, 1, 0]), name="ok"))
    assert senders.preference_refusals(ok) == []


# ------------------------------------------------------------------ the parity vectors


def test_q_values_vector_is_the_goal_weighted_argmax():
    """tests/vectors/q_values.json (read by the C++ tests): each case's action is the first argmax of
    the preference-weighted Q-values, recomputed here in numpy from its net_out; and the
    preference decides (the one-hot preferences pick different actions for some observation)."""
    vec = json.loads((VECTORS / "q_values.json").read_text())
    spec, _ = pf.load(VECTORS / vec["policy"])
    n, m = spec["head"]["n"], spec["head"]["objectives"]
    assert (n, m) == (7, 3)
    by_obs: dict = {}
    for c in vec["cases"]:
        q = np.asarray(c["net_out"], np.float64).reshape(n, m) @ np.asarray(c["goal"], np.float64)
        np.testing.assert_allclose(c["q_weighted"], q, rtol=1e-5, atol=1e-6)
        assert c["output"] == int(np.argmax(q))
        by_obs.setdefault(json.dumps(c["obs"]), []).append((tuple(c["goal"]), c["output"]))
    assert all(dict(v)[(0.0, 0.0, 0.0)] == 0 for v in by_obs.values())  # no weight: a tie, the first action
    assert any(len({dict(v)[g] for g in parity_vectors.ONE_HOT_GOALS}) > 1 for v in by_obs.values())
    one = json.loads((VECTORS / "q_values_1obj.json").read_text())
    assert "objectives" not in pf.load(VECTORS / one["policy"])[0]["head"]
    assert all(c["output"] == int(np.argmax(c["net_out"])) for c in one["cases"])


def test_sender_reproduces_the_preference_switch_vector():
    """tests/vectors/mocc_preference_switch.json: the mocc_v1 sender's loop with the preference
    changed at run time (each MI record's goal), as the C++ sender must reproduce it."""
    from jaxcc.envs import mi as mi_lib
    from jaxcc.senders import common

    vec = json.loads((VECTORS / "mocc_preference_switch.json").read_text())
    base = json.loads((VECTORS / "features_mocc_v1.json").read_text())
    spec, tensors = pf.load(VECTORS / vec["policy"])
    snd = mocc_v1.sender(spec, tensors, goal=vec["goal"])
    rtt0 = float(vec["rtt_guess"])
    assert vec["decisions_changed"] > 0 and vec["goal"] == base["goal"]
    outs = []
    with jax.enable_x64(True):
        run = mi_lib.running_zero(1, jnp.float64)
        own = snd.decide(snd.start(rtt0), common.empty_window(spec), run, rtt0)
        hist = common.empty_window(spec)
        add_sample = jax.jit(mi_lib.mi_add_sample)
        for i, rec in enumerate(vec["mis"]):
            assert rec["goal"] == (vec["goal"] if i < vec["switch_mi"] else vec["switch_goal"])
            m = parity_vectors.event_mi(add_sample, rec)
            run = mi_lib.running_update(run, m)
            x, own = snd.observe(own, m, run, rtt0)
            hist = common.push(hist, jnp.asarray(np.asarray(x, np.float32)))
            own = snd.decide(own, hist, run, rtt0, jnp.asarray(rec["goal"], jnp.float32))
            a = snd.act(own)
            assert float(a.cwnd) == pytest.approx(rec["cwnd"], rel=1e-5, abs=1e-3), f"MI {i} cwnd"
            assert float(a.rate) == pytest.approx(rec["rate"], rel=1e-5, abs=1e-3), f"MI {i} rate"
            outs.append(int(pf.apply(spec, tensors, np.asarray(hist), jnp.asarray(rec["goal"]))))
    assert outs == [r["output"] for r in vec["mis"]]
    same = [a["output"] == b["output"] for a, b in zip(vec["mis"], base["mis"])]
    assert all(same[:vec["switch_mi"]]) and not all(same[vec["switch_mi"]:])


def test_vectors_command_checks_the_mocc_policy(tmp_path, capsys):
    missing, mlp = tmp_path / "missing.safetensors", VECTORS / "mlp.safetensors"
    assert parity_vectors.run_cli(["parity_vectors", "--out", str(tmp_path), f"--mocc-policy={missing}"]) == 2
    assert parity_vectors.run_cli(["parity_vectors", "--out", str(tmp_path), f"--mocc-policy={mlp}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --mocc-policy: {str(missing)!r} does not exist",
                   f"error: --mocc-policy: {str(mlp)!r} is a {pf.load(mlp)[0]['features']['name']} policy, "
                   "expected mocc_v1"]
    assert not list(tmp_path.iterdir())  # refused before writing anything
