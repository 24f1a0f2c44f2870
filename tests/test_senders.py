"""The simulator's senders (``jaxcc.senders``) against the shared parity vectors, and ``policy:FILE``
end to end for all seven feature sets.

``tests/vectors/features_<set>.json`` (``python -m jaxcc.parity_vectors``) hold per-packet events
per monitor interval and what the environments' own code makes of them: features, and the rate
and window after every decision.  The C++ datapath is checked against the same files
(``datapath/tests/features_test.cc``); here each sender module's ``start``/``observe``/``decide``
(the functions its per-tick ``Controller`` runs, ``jaxcc.senders.common.make_controller``) must
reproduce them too.
"""

from __future__ import annotations

import json
import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import parity_vectors, policyfile, senders
from jaxcc.envs import mi as mi_lib
from jaxcc.senders import common, eagle_v1
from jaxcc.sim.controller import ControllerParams

VECTORS = pathlib.Path(__file__).parent / "vectors"
SETS = ("aurora_v1", "aurora_v2", "pareto_v1", "pareto_v2", "eagle_v1", "mocc_v1", "deepcc_v1")


def _close(got, want, rel, abs_tol, what):
    got, want = float(got), float(want)
    assert abs(got - want) <= rel * abs(want) + abs_tol, f"{what}: got {got!r}, want {want!r}"


# deepcc_window: deepcc_v1's loop with the file's ACK-clocked window (features.cwnd_rtts).
# mocc_initscaled: mocc_v1's loop with §IV-B's init-cwnd scaled by the min RTT (features.init_ref_rtt_s).
# mocc_ackewma: mocc_v1's loop with the max ACK rate over an EWMA of the ACK rate (features.max_ack_ewma).
@pytest.mark.parametrize("stem", [f"features_{n}" for n in SETS] + ["deepcc_window", "mocc_initscaled", "mocc_ackewma"])
def test_sender_reproduces_the_parity_vector(stem):
    vec = json.loads((VECTORS / f"{stem}.json").read_text())
    spec, tensors = policyfile.load(VECTORS / vec["policy"])
    name = vec["features"]
    assert spec["features"]["name"] == name
    mod = senders.feature_set(name)
    snd = mod.sender(spec, tensors, goal=vec["goal"]) if vec.get("goal") else mod.sender(spec, tensors)
    hist = common.empty_window(spec, [0.0, 1.0, 1.0] if name == "aurora_v1" else None)  # v2's file states it
    # The fallback min RTT before any sample: the vector's (the sender's guess), else 0 as the
    # generator's aurora/pareto runs use.
    rtt0 = float(vec.get("rtt_guess", 0.0))
    loop = "start" in vec  # the sender's whole loop: start, first decision, chained rate/cwnd
    with jax.enable_x64(True):
        run = mi_lib.running_zero(1, jnp.float64)
        own = snd.start(rtt0 if loop else None)
        if loop:
            st = vec["start"]
            a = snd.act(own)
            _close(a.rate, st["rate_in"], 1e-5, 1e-3, "start rate_in")
            _close(min(float(a.cwnd), 1e30), st["cwnd_in"], 1e-5, 1e-3, "start cwnd_in")
            own = snd.decide(own, hist, mi_lib.running_zero(1, jnp.float64), rtt0)
            a = snd.act(own)
            _close(a.rate, st["rate"], 1e-5, 1e-3, "start rate")
            _close(min(float(a.cwnd), 1e30), st["cwnd"], 1e-5, 1e-3, "start cwnd")
        add_sample = jax.jit(mi_lib.mi_add_sample)
        # One program per step of the sender's loop, as the simulator runs them, not op by op.
        running_update, observe, push = jax.jit(mi_lib.running_update), jax.jit(snd.observe), jax.jit(common.push)
        decide, act = jax.jit(snd.decide), jax.jit(snd.act)
        for i, rec in enumerate(vec["mis"]):
            m = parity_vectors.event_mi(add_sample, rec)
            if "rtt_p95" in rec:  # a per-packet datapath's delay_t (the simulator's is the MI's max sample)
                m = m.replace(rtt_max=jnp.array([rec["rtt_p95"]], jnp.float64))
            run = running_update(run, m)
            x, own = observe(own, m, run, rtt0)
            x = np.asarray(x, np.float32)
            assert x.shape == (len(rec["features"]),)
            for k, (g, w) in enumerate(zip(x, rec["features"])):
                _close(g, w, 1e-6, 1e-6, f"MI {i} feature {k}")
            hist = push(hist, jnp.asarray(x))
            if loop:
                a = act(own)
                _close(a.rate, rec["rate_in"], 1e-5, 1e-3, f"MI {i} rate_in")
                _close(min(float(a.cwnd), 1e30), rec["cwnd_in"], 1e-5, 1e-3, f"MI {i} cwnd_in")
            else:  # the generator chains the action block from its own rate_in
                own = own._replace(rate=jnp.float32(rec["rate_in"]))
            own = decide(own, hist, run, rtt0)
            a = act(own)
            _close(a.rate, rec["rate"], 1e-5, 1e-3, f"MI {i} rate")
            if loop:
                _close(min(float(a.cwnd), 1e30), rec["cwnd"], 1e-5, 1e-3, f"MI {i} cwnd")


def test_parity_check_can_fail():
    """The comparison above is not vacuous: a sender with a different EWMA gain misses the vector."""
    vec = json.loads((VECTORS / "features_eagle_v1.json").read_text())
    spec, tensors = policyfile.load(VECTORS / vec["policy"])
    spec = dict(spec, features=dict(spec["features"], ewma_gain=0.5))
    snd = eagle_v1.sender(spec, tensors)
    rtt0 = float(vec["rtt_guess"])
    with jax.enable_x64(True):
        run, own = mi_lib.running_zero(1, jnp.float64), snd.start(rtt0)
        add_sample = jax.jit(mi_lib.mi_add_sample)
        got, want = [], []
        for rec in vec["mis"][:6]:
            m = parity_vectors.event_mi(add_sample, rec)
            run = mi_lib.running_update(run, m)
            x, own = snd.observe(own, m, run, rtt0)
            got.append(np.asarray(x, np.float64)[2])  # the EWMA queuing delay
            want.append(rec["features"][2])
    assert not np.allclose(got, want, rtol=1e-6, atol=1e-6)


def test_eagle_reads_the_bdp_window():
    """The file's bw_window_steps sets the BDP window; a file without it (trained before the window
    existed) keeps the whole connection's max (0); an out-of-range value is refused by name."""
    spec, tensors = policyfile.make_feature_policy("eagle_v1", 0)
    assert spec["features"]["bw_window_steps"] == 4
    assert int(eagle_v1.env_and_params(spec)[1].bw_window_steps) == 4
    old = dict(spec, features={k: v for k, v in spec["features"].items() if k != "bw_window_steps"})
    assert int(eagle_v1.env_and_params(old)[1].bw_window_steps) == 0
    for bad in (17, 2.5, -1):
        with pytest.raises(ValueError, match="bw_window_steps"):
            eagle_v1.sender(dict(spec, features=dict(spec["features"], bw_window_steps=bad)), tensors)



def test_explore_noise_and_the_noisy_action_by_hand():
    from jaxcc.senders import pareto_v1

    sp = ControllerParams.zeros().sender
    noisy = sp._replace(explore=np.asarray([0.1, 7.0], np.float32))
    now = jnp.asarray(1.2345, jnp.float32)
    assert float(common.explore_noise(sp, now)) == 0.0  # σ 0: no noise, whatever the time
    assert float(common.explore_noise(noisy, jnp.asarray(-jnp.inf))) == 0.0  # the decision before the first tick
    # σ·z with z from the flow's stream: its seed folded with the decision's time in 0.1-ms steps
    z = jax.random.normal(jax.random.fold_in(jax.random.PRNGKey(7), 12345), (), jnp.float32)
    assert float(common.explore_noise(noisy, now)) == pytest.approx(0.1 * float(z), rel=1e-6)
    draws = np.asarray(jax.vmap(lambda t: common.explore_noise(noisy, t))(jnp.arange(1, 4001) * 0.01))
    assert len(set(draws.tolist())) == 4000 and abs(draws.mean()) < 0.01 and abs(draws.std() - 0.1) < 0.01
    spec = {"head": {"type": "continuous", "low": -0.3, "high": 0.5}}
    out = jnp.asarray([0.1], jnp.float32)
    np.testing.assert_array_equal(np.asarray(pareto_v1.explored(spec, out, 0.0)), np.asarray(out))  # untouched
    # + 0.5 half-ranges of 0.4 = +0.2; beyond the range, clipped
    assert float(pareto_v1.explored(spec, out, 0.5)[0]) == pytest.approx(0.3, abs=1e-6)
    assert float(pareto_v1.explored(spec, out, 3.0)[0]) == pytest.approx(0.5)
    assert float(pareto_v1.explored(spec, out, -3.0)[0]) == pytest.approx(-0.3)

@pytest.mark.parametrize("name,field", [("mocc_v1", "action must be cwnd_table"),
                                        ("deepcc_v1", "action must be rate_absolute")])
def test_goal_conditioned_sets_refuse_a_policy_that_does_not_fit(name, field):
    spec, tensors = policyfile.make_feature_policy(name, 0)
    senders.feature_set(name).sender(spec, tensors)  # fits
    bad = dict(spec, action={"type": "rate_multiplicative"})
    with pytest.raises(ValueError, match=f"{name}: {field}"):
        senders.feature_set(name).sender(bad, tensors)
    with pytest.raises(ValueError, match="goal: the policy needs 3 values"):
        senders.feature_set(name).sender(spec, tensors, goal=[0.5, 0.5])


def test_resolve_names_every_simulator_controller(tmp_path):
    for name in ("bbr", "cubic", "copa", "oracle"):
        ctrl, cp = senders.resolve(name)
        assert ctrl.name == name and jax.tree.all(jax.tree.map(np.array_equal, cp, ControllerParams.zeros()))
    ctrl, cp = senders.resolve("fixed:12.5")
    assert ctrl.name == "fixed" and cp.fixed.mbps == np.float32(12.5)
    rest = cp._replace(fixed=cp.fixed._replace(mbps=np.zeros((), np.float32)))  # nothing else is set
    assert jax.tree.all(jax.tree.map(np.array_equal, rest, ControllerParams.zeros()))
    with pytest.raises(ValueError, match="only in emulation"):
        senders.resolve("kernel:cubic")
    with pytest.raises(ValueError, match="does not exist"):
        senders.resolve(f"policy:{tmp_path / 'missing.safetensors'}")


# Each feature set's sender is its own program (3-8 s of compiling on two cores): the fast tier
# runs a rate action (Pareto v2, LSTM) and a discrete one (MOCC, Q-values); the full tier all seven.
@pytest.mark.parametrize("sets", [pytest.param(("pareto_v2", "mocc_v1"), id="two"),
                                  pytest.param(SETS, id="all", marks=pytest.mark.full)])
def test_policy_file_runs_every_feature_set_in_the_simulator(sets, tmp_path):
    """``policy:FILE`` for random-weight files of each set, as ``python -m jaxcc.policyfile
    --random=SET`` writes them, in one evaluation: the wiring end to end (file → sender →
    runner → metrics), each flow sending with a finite delay.  What each sender decides is held
    to the C++ twin's parity vectors by the tests above."""
    from jaxcc import scenarios
    from jaxcc.evaluation import runs as evaluation_runs

    paths = []
    for name in sets:
        path = str(tmp_path / f"{name}.safetensors")
        assert policyfile.run_cli(["policyfile", "--random", name, "--seed", "3", "--out", path]) == 0
        assert policyfile.load(path)[0]["features"]["name"] == name
        paths.append(path)
    sc = scenarios.parse_scenario({"name": "smoke", "duration_s": 3.0,
                                   "link": {"bandwidth_mbps": 12, "buffer_bytes": 150_000, "loss": 0.0},
                                   "flows": [{"rtt_ms": 40.0, "controller": "bbr"}]})
    rep = evaluation_runs.run_evaluation([sc], evaluation_runs.controller_entries([f"policy:{p}" for p in paths]),
                                  progress=False, keep_series=False)
    got = {os.path.basename(r["controller"]).split(".")[0]: r for r in rep["results"]}
    assert sorted(got) == sorted(sets)
    for name, r in got.items():
        assert r["throughput_mbps"] > 0.01, (name, r["throughput_mbps"])
        assert np.isfinite(r["p95_owd_ms"]), name


# What each layer may import (a fresh interpreter, so earlier imports in this process hide nothing).
_RUNNER = "import jaxcc.sim.runner"
_SENDERS = "import jaxcc.senders as s; [s.resolve(n) for n in ('bbr', 'cubic', 'copa', 'oracle', 'fixed:5')]"


@pytest.mark.parametrize("code,allowed", [
    (_RUNNER, ("jaxcc.sim", "jaxcc.units")),
    (_SENDERS, ("jaxcc.sim", "jaxcc.units", "jaxcc.params", "jaxcc.envs", "jaxcc.senders", "jaxcc.policyfile",
                "jaxcc.controllers", "jaxcc.shipped", "jaxcc.baselines", "jaxcc.cli")),
])
def test_layers_import_nothing_above_them(code, allowed):
    """The runner reaches no controller (its caller passes ``resolve``); the senders and every
    baseline they resolve sit below the agents, scenarios and evaluation.  Unlike
    ``tests/test_layout.py`` (the imports written in the code), this sees what is loaded at run
    time, ``importlib`` included."""
    import subprocess
    import sys

    show = "; import sys; print(' '.join(m for m in sys.modules if m.startswith('jaxcc.')))"
    out = subprocess.run([sys.executable, "-c", code + show], capture_output=True, text=True, check=True,
                         cwd=pathlib.Path(__file__).parent.parent).stdout.split()
    assert out, "nothing imported?"
    above = [m for m in out if not m.startswith(allowed)]
    assert not above, f"{code!r} imports {above}"
