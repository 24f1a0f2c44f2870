"""The documented path for a new feature set (``docs/feature-sets.md``,
``datapath/templates/feature_set``), followed for a toy set, ``toy_v1``, in a temporary copy of
the tree: ``scaffold.py`` writes its Python sender and inserts its C++ twin and both
registrations; ``python -m jaxcc.parity_vectors --features=toy_v1`` writes its vectors from the
sender; ``jaxcc-features-check`` replays them through a C++ build of the copy.

The toy's two features (the template's example): the MI's delivery rate over its sending rate,
and its mean RTT over the connection's min RTT.  The fast tier holds the Python half to values
computed here by hand (a three-MI history, and every MI of the vectors from their raw per-packet
events) and shows that an off-by-one sender misses them; the full tier builds the C++ twin, which
must agree with the vectors, and then an off-by-one C++ variant, which must not.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from jaxcc import parity_vectors, policyfile, senders
from jaxcc.parity_vectors import sender_sets

REPO = pathlib.Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "datapath" / "templates" / "feature_set"
NAME, CLASS = "toy_v1", "ToyV1Features"
MODULE = f"jaxcc.senders.{NAME}"
MBPS = 125_000.0
# The C++ twin's ratio with the deliberate off-by-one: queueing delay over min RTT, not the ratio.
CC_RATIO = "m.RttMean() / std::max(min_rtt, 1e-9) : 1.0"
PY_RATIO = "mi_lib.rtt_mean(m) / jnp.maximum(min_rtt, 1e-9), 1.0"


def _scaffold():
    spec = importlib.util.spec_from_file_location("feature_set_scaffold", TEMPLATE / "scaffold.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def tree(tmp_path):
    """A copy of what the scaffold edits and the C++ build needs, with toy_v1 added to it."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "datapath", root / "datapath",
                    ignore=shutil.ignore_patterns("build", "build-*", "ns3", "fuzz", "corpus-*"))
    (root / "jaxcc" / "senders").mkdir(parents=True)
    shutil.copy(REPO / "jaxcc" / "senders" / "__init__.py", root / "jaxcc" / "senders" / "__init__.py")
    assert _scaffold().main([NAME, "--root", str(root)]) == 0
    return root


def _register(monkeypatch, path: pathlib.Path):
    """The tree's sender module, imported as jaxcc.senders.toy_v1 and registered, as the scaffold's
    line in the tree's FEATURE_SETS registers it (the real package is not touched)."""
    spec = importlib.util.spec_from_file_location(MODULE, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, MODULE, mod)
    spec.loader.exec_module(mod)
    monkeypatch.setitem(senders.FEATURE_SETS, NAME, MODULE)
    return mod


@pytest.fixture
def toy(tree, monkeypatch):
    return _register(monkeypatch, tree / "jaxcc" / "senders" / f"{NAME}.py")


def _feature_sets_names(init_py: pathlib.Path) -> list[str]:
    """The names FEATURE_SETS is built from in a senders/__init__.py (read, not imported)."""
    for node in ast.parse(init_py.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "FEATURE_SETS":
            return [e.value for e in node.value.generators[0].iter.elts]
    raise AssertionError(f"no FEATURE_SETS in {init_py}")


def test_scaffold_registers_the_set_once_on_each_side(tree, capsys):
    cc = (tree / "datapath" / "src" / "mi_features.cc").read_text()
    section, table = cc.index(f"class {CLASS} : public FeatureFn"), cc.index("const FeatureSetEntry kFeatureSets[]")
    assert section < cc.index("// New feature sets: their section above this line") < table
    assert cc.count(f'{{"{NAME}", Make<{CLASS}>}},') == 1 and cc.index(f'{{"{NAME}",') > table
    assert _feature_sets_names(tree / "jaxcc" / "senders" / "__init__.py")[-1] == NAME
    assert _feature_sets_names(REPO / "jaxcc" / "senders" / "__init__.py") == list(sender_sets.BUILT_IN)
    assert (tree / "jaxcc" / "senders" / f"{NAME}.py").read_text().count(f'NAME = "{NAME}"') == 1
    capsys.readouterr()
    scaffold = _scaffold()
    assert scaffold.main([NAME, "--root", str(tree)]) == 2  # already there: nothing is written twice
    assert scaffold.main(["Toy-1", "--root", str(tree)]) == 2
    assert scaffold.main(["toy_v2", "--root", str(tree / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("error: ") for e in err), err
    assert "already exists" in err[0] and "'Toy-1'" in err[1] and "--root" in err[2]
    assert cc == (tree / "datapath" / "src" / "mi_features.cc").read_text()


def test_toy_sender_on_a_tiny_history_by_hand(toy):
    """Three MIs: two packets (RTT 0.10 and 0.12 s) of 4500 bytes sent -> (2/3, 0.11/0.10); an
    MI without feedback -> (0, 1); one packet at 0.09 s, a new min RTT, 1500 of 3000 sent -> (1/2, 1)."""
    import jax
    import jax.numpy as jnp

    from jaxcc.envs import mi as mi_lib

    spec, tensors = toy.random_policy(0)
    snd = toy.sender(spec, tensors)
    mis = [{"duration": 0.1, "sent": 4500.0, "lost": 0.0, "samples": [[1500.0, 0.10, 0.01], [1500.0, 0.12, 0.05]]},
           {"duration": 0.1, "sent": 0.0, "lost": 0.0, "samples": []},
           {"duration": 0.1, "sent": 3000.0, "lost": 1500.0, "samples": [[1500.0, 0.09, 0.02]]}]
    want = [(2 / 3, 1.1), (0.0, 1.0), (0.5, 1.0)]
    with jax.enable_x64(True):
        run, own = mi_lib.running_zero(1, jnp.float64), snd.start(None)
        assert float(snd.act(own).rate) == 2.0 * MBPS  # FEATURES' init_mbps
        add = jax.jit(mi_lib.mi_add_sample)
        for ev, w in zip(mis, want):
            m = parity_vectors.event_mi(add, ev)
            run = mi_lib.running_update(run, m)
            x, own = snd.observe(own, m, run, 0.5)
            np.testing.assert_allclose(np.asarray(x), w, rtol=1e-12)


def _hand_mismatches(vec: dict) -> list[str]:
    """Where a toy_v1 vector's features and decisions differ from what its raw events and
    outputs give by hand: features from the per-packet samples (acked = their bytes, the mean RTT
    byte-weighted, the min RTT over every sample so far), rate = rate_in x (1 + output)."""
    bad, min_rtt, rate = [], np.inf, vec["start"]["rate"]
    if vec["start"]["rate_in"] != 2.0 * MBPS:
        bad.append(f"start rate_in {vec['start']['rate_in']}")
    for i, m in enumerate(vec["mis"]):
        w = np.array([s[0] for s in m["samples"]])
        r = np.array([s[1] for s in m["samples"]])
        min_rtt = min(min_rtt, r.min()) if len(r) else min_rtt
        f0 = w.sum() / m["sent"] if m["sent"] > 0 else 0.0
        f1 = (w * r).sum() / w.sum() / min_rtt if len(r) else 1.0
        for k, (got, want) in enumerate(zip(m["features"], (f0, f1))):
            if abs(got - want) > 1e-9 * abs(want) + 1e-12:
                bad.append(f"MI {i} feature {k}: {got} != {want}")
        if abs(m["rate_in"] - rate) > 1e-9 * rate:
            bad.append(f"MI {i} rate_in {m['rate_in']} != {rate}")
        rate = float(np.float32(m["rate_in"]) * (np.float32(1) + np.float32(m["output"][0])))
        if abs(m["rate"] - rate) > 1e-6 * rate:
            bad.append(f"MI {i} rate {m['rate']} != {rate}")
        rate = m["rate"]
    return bad


def test_toy_vectors_hold_hand_computed_values(toy, tmp_path, capsys):
    out = tmp_path / "vectors"
    assert parity_vectors.run_cli(["parity_vectors", f"--features={NAME}", f"--out={out}"]) == 0
    assert capsys.readouterr().out.split() == [str(out / f"features_{NAME}.{ext}") for ext in ("safetensors", "json")]
    vec = json.loads((out / f"features_{NAME}.json").read_text())
    assert vec["features"] == NAME and len(vec["mis"]) == sender_sets.N_MI
    assert _hand_mismatches(vec) == []
    # The events cover what the features special-case: MIs without an RTT sample, and a queue.
    assert sum(1 for m in vec["mis"] if not m["samples"]) == 2
    assert sum(m["features"][1] > 1.05 for m in vec["mis"]) >= 4
    # The network outputs: the policy file on the window of the recorded features, padded with the
    # set's empty step (1, 1), oldest first.
    spec, tensors = policyfile.load(out / vec["policy"])
    assert spec["features"]["name"] == NAME
    window = np.ones((spec["features"]["history"], 2), np.float32)
    for m in vec["mis"]:
        window = np.concatenate([window[1:], np.asarray([m["features"]], np.float32)])
        np.testing.assert_allclose(np.asarray(policyfile.apply(spec, tensors, window)), m["output"], rtol=1e-6)
    # One seed, one file: a rerun writes the same bytes.
    again = tmp_path / "again"
    assert parity_vectors.run_cli(["parity_vectors", f"--features={NAME}", f"--out={again}"]) == 0
    assert (again / f"features_{NAME}.json").read_bytes() == (out / f"features_{NAME}.json").read_bytes()
    # The policy:FILE sender runs it in the simulator, its window starting at the empty step.
    from jaxcc.sim.controller import ControllerParams

    ctrl, _ = senders.policy_controller(str(out / vec["policy"]))
    np.testing.assert_array_equal(np.asarray(ctrl.init(ControllerParams.zeros()).hist), np.ones_like(window))


def test_an_off_by_one_sender_misses_the_hand_values(tree, monkeypatch, tmp_path):
    src = (tree / "jaxcc" / "senders" / f"{NAME}.py").read_text()
    assert src.count(PY_RATIO) == 1
    bad = tmp_path / f"{NAME}.py"
    bad.write_text(src.replace(PY_RATIO, PY_RATIO.replace(", 1.0", " - 1.0, 1.0")))
    _register(monkeypatch, bad)
    sender_sets.write_sender_vectors(tmp_path / "vectors", NAME)
    miss = _hand_mismatches(json.loads((tmp_path / "vectors" / f"features_{NAME}.json").read_text()))
    assert miss and all("feature 1" in m for m in miss), miss


def test_registration_and_refusals(toy, tmp_path, capsys):
    assert sender_sets.registered_sets() == [NAME]
    out = str(tmp_path / "v")
    capsys.readouterr()
    other = str(REPO / "tests" / "vectors" / "features_pareto_v1.safetensors")
    assert parity_vectors.run_cli(["parity_vectors", f"--policy={other}", f"--out={out}"]) == 2
    assert parity_vectors.run_cli(["parity_vectors", f"--features={NAME}", f"--policy={other}", f"--out={out}"]) == 2
    assert parity_vectors.run_cli(["parity_vectors", "--features=nope_v1", f"--out={out}"]) == 2
    assert parity_vectors.run_cli(["parity_vectors", "--features=mocc_v1", f"--policy={tmp_path / 'x'}",
                                   f"--out={out}"]) == 2
    mocc = str(REPO / "tests" / "vectors" / "features_mocc_v1.safetensors")
    assert parity_vectors.run_cli(["parity_vectors", "--features=mocc_v1", f"--policy={mocc}", f"--out={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 5 and all(e.startswith("error: ") for e in err), err
    assert "--policy needs --features" in err[0]
    assert "pareto_v1 policy, expected toy_v1" in err[1]
    assert "'nope_v1' is not a registered feature set" in err[2] and NAME in err[2]
    assert "does not exist" in err[3]
    assert "mocc_v1's sender takes a preference" in err[4]


def _build_checker(root: pathlib.Path) -> pathlib.Path:
    build = root / "build"
    subprocess.run(["cmake", "-S", str(root / "datapath"), "-B", str(build), "-DJAXCC_TESTS=OFF",
                    "-DCMAKE_BUILD_TYPE=Debug"], check=True, capture_output=True)
    subprocess.run(["nice", "-n", "10", "cmake", "--build", str(build), "--target", "jaxcc-features-check", "-j2"],
                   check=True, capture_output=True)
    return build / "jaxcc-features-check"


def _check(exe: pathlib.Path, *files) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, files)], capture_output=True, text=True)


@pytest.mark.full
@pytest.mark.datapath
def test_cpp_twin_agrees_and_an_off_by_one_twin_is_caught(tree, toy, tmp_path):
    vectors = tmp_path / "vectors"
    assert parity_vectors.run_cli(["parity_vectors", f"--features={NAME}", f"--out={vectors}"]) == 0
    exe = _build_checker(tree)
    res = _check(exe, vectors / f"features_{NAME}.json")
    assert res.returncode == 0 and f"features_{NAME}.json: ok ({sender_sets.N_MI} MIs)" in res.stdout, res
    # The same checker agrees with the committed vectors of the built-in sets (what features_test
    # holds them to), and with a trained file's vectors written through its simulator sender.
    trained = REPO / "checkpoints" / "pareto" / "pareto_fair.safetensors"
    assert parity_vectors.run_cli(["parity_vectors", "--features=pareto_v2", f"--policy={trained}",
                                   f"--out={vectors}"]) == 0
    committed = sorted((REPO / "tests" / "vectors").glob("features_*.json"))
    res = _check(exe, *committed, vectors / "features_pareto_v2.json")
    assert res.returncode == 0 and res.stdout.count(": ok (") == len(committed) + 1 == 8, res
    # The off-by-one C++ twin: every MI with an RTT sample misses feature 1, nothing else does.
    cc = tree / "datapath" / "src" / "mi_features.cc"
    text = cc.read_text()
    assert text.count(CC_RATIO) == 1
    cc.write_text(text.replace(CC_RATIO, CC_RATIO.replace(" : 1.0", " - 1.0 : 1.0")))
    _build_checker(tree)
    res = _check(exe, vectors / f"features_{NAME}.json")
    vec = json.loads((vectors / f"features_{NAME}.json").read_text())
    n_rtt = sum(1 for m in vec["mis"] if m["samples"])
    assert res.returncode == 1 and f"{n_rtt} mismatches" in res.stdout, res
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("  ")]
    assert len(lines) == n_rtt and all(ln.split(": ", 2)[1].endswith("feature 1") for ln in lines), res.stdout


@pytest.mark.full
def test_one_built_in_set_is_written_as_the_full_command_writes_it(tmp_path):
    """``--features=eagle_v1``: the committed features_eagle_v1 (the built-in sets share one
    random stream, so it is the full command's file, not a rerun from another draw)."""
    assert parity_vectors.run_cli(["parity_vectors", "--features=eagle_v1", f"--out={tmp_path}"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["features_eagle_v1.json", "features_eagle_v1.safetensors"]
    got = json.loads((tmp_path / "features_eagle_v1.json").read_text())
    want = json.loads((REPO / "tests" / "vectors" / "features_eagle_v1.json").read_text())
    assert len(got["mis"]) == len(want["mis"])
    for key in ("features", "net_out", "rate", "cwnd"):
        np.testing.assert_allclose([m[key] for m in got["mis"]], [m[key] for m in want["mis"]], rtol=1e-5, atol=1e-6)
