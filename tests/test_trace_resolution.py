"""Where traces and policies named in a spec are found (``jaxcc.sim.trace.find_trace``).

One rule everywhere: an absolute path is used as is; a relative trace path is looked up in
``$JAXCC_TRACES``, then in the traces shipped in ``jaxcc/traces``, then in the spec's folder; a
relative ``policy:FILE`` is relative to the spec's folder.  Each folder below is made by hand,
and every named scenario and suite must work with ``$JAXCC_TRACES`` unset and no
``../shared`` (a user's fresh clone).
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest

from jaxcc import scenarios, units
from jaxcc.sim.trace import SHIPPED_TRACES, find_trace

LTE_UP = "Verizon-LTE-short.up"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No $JAXCC_TRACES, and the current directory an empty folder (nothing beside it)."""
    monkeypatch.delenv("JAXCC_TRACES", raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return tmp_path


def _folder(root, name, files):
    d = root / name
    d.mkdir()
    for fname, text in files.items():
        (d / fname).write_text(text)
    return d


def _spec_file(folder, trace=None, controller="bbr", name="s.json"):
    link = {"trace": trace} if trace is not None else {"bandwidth_mbps": 12.0}
    spec = {"name": "t", "duration_s": 2.0, "link": {**link, "buffer_bytes": 375000},
            "flows": [{"rtt_ms": 40.0, "controller": controller}]}
    p = folder / name
    p.write_text(json.dumps(spec))
    return str(p)


# ----------------------------------------------------------------------------- order


def test_env_folder_wins_over_the_shipped_traces(fresh, monkeypatch):
    env = _folder(fresh, "env", {LTE_UP: "1\n"})  # 12 Mbit/s, unlike the real LTE trace
    monkeypatch.setenv("JAXCC_TRACES", str(env))
    assert find_trace(LTE_UP) == str(env / LTE_UP)
    lte = scenarios.get_scenario("pareto/lte")  # the named scenarios use the same rule
    assert lte.link.trace == str(env / LTE_UP)
    assert lte.link.capacity().rates.tolist() == [12 * units.MBPS]


def test_shipped_traces_win_over_the_spec_folder(fresh):
    spec_dir = _folder(fresh, "spec", {LTE_UP: "1\n"})
    sc = scenarios.load_scenario(_spec_file(spec_dir, trace=LTE_UP))
    assert sc.link.trace == os.path.join(SHIPPED_TRACES, LTE_UP)


def test_spec_folder_is_used_when_the_others_lack_the_file(fresh, monkeypatch):
    env = _folder(fresh, "env", {"other.trace": "1\n"})
    monkeypatch.setenv("JAXCC_TRACES", str(env))
    spec_dir = _folder(fresh, "spec", {"mine.trace": "2\n"})
    sc = scenarios.load_scenario(_spec_file(spec_dir, trace="mine.trace"))
    assert sc.link.trace == str(spec_dir / "mine.trace")
    # a subfolder of the spec's folder works the same way
    (spec_dir / "sub").mkdir()
    (spec_dir / "sub" / "deep.trace").write_text("1\n")
    sc = scenarios.load_scenario(_spec_file(spec_dir, trace="sub/deep.trace", name="s2.json"))
    assert sc.link.trace == str(spec_dir / "sub" / "deep.trace")


def test_absolute_trace_path_is_used_as_is(fresh, monkeypatch):
    env = _folder(fresh, "env", {"x.trace": "1\n"})
    monkeypatch.setenv("JAXCC_TRACES", str(env))
    other = _folder(fresh, "other", {"x.trace": "3\n"})
    spec_dir = _folder(fresh, "spec", {})
    sc = scenarios.load_scenario(_spec_file(spec_dir, trace=str(other / "x.trace")))
    assert sc.link.trace == str(other / "x.trace")


def test_a_dict_spec_uses_the_current_directory_as_its_folder(fresh):
    (fresh / "cwd" / "here.trace").write_text("1\n")
    spec = json.loads(open(_spec_file(_folder(fresh, "spec", {}), trace="here.trace")).read())
    assert scenarios.parse_scenario(spec).link.trace == str(fresh / "cwd" / "here.trace")


def test_missing_trace_error_names_field_file_and_every_folder(fresh, monkeypatch):
    env = _folder(fresh, "env", {})
    monkeypatch.setenv("JAXCC_TRACES", str(env))
    spec_dir = _folder(fresh, "spec", {})
    path = _spec_file(spec_dir, trace="nope.trace")
    with pytest.raises(ValueError) as err:
        scenarios.load_scenario(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}.link.trace: trace file 'nope.trace' not found; searched ")
    # every folder, in the order searched
    searched = msg.split("; searched ", 1)[1]
    assert searched == f"{env} ($JAXCC_TRACES), {SHIPPED_TRACES} (shipped), {spec_dir} (spec folder)"


def test_missing_trace_error_says_when_the_env_variable_is_unset(fresh):
    with pytest.raises(ValueError, match=r"^eagle\.link\.trace: trace file 'nope' not found; searched "
                                         r".*\(shipped\).*\$JAXCC_TRACES is not set"):
        find_trace("nope", field="eagle.link.trace")


def test_named_scenario_error_names_its_field(fresh, monkeypatch):
    # Without the shipped file (a broken install), the named scenario says which field and where.
    monkeypatch.setattr("jaxcc.sim.trace.SHIPPED_TRACES", str(fresh / "empty"))
    with pytest.raises(ValueError, match=r"^pareto/lte\.link\.trace: trace file 'Verizon-LTE-short\.up' not found"):
        scenarios.get_scenario("pareto/lte")


# ----------------------------------------------------------------------------- policy: paths


def test_relative_policy_path_is_relative_to_the_spec_folder(fresh):
    spec_dir = _folder(fresh, "spec", {"p.safetensors": "spec's"})
    (fresh / "cwd" / "p.safetensors").write_text("cwd's: must not be used")
    sc = scenarios.load_scenario(_spec_file(spec_dir, controller="policy:p.safetensors"))
    assert sc.flows[0].controller == f"policy:{spec_dir / 'p.safetensors'}"
    # the resolved path survives a round trip through to_dict (what emulation receives)
    assert scenarios.parse_scenario(sc.to_dict()) == sc


def test_missing_relative_policy_names_the_spec_folder(fresh):
    spec_dir = _folder(fresh, "spec", {})
    (fresh / "cwd" / "p.safetensors").write_text("only in the current directory")
    with pytest.raises(ValueError, match=re.escape(f"flows[0].controller: 'policy:{spec_dir / 'p.safetensors'}'")
                       + r".*does not exist"):
        scenarios.load_scenario(_spec_file(spec_dir, controller="policy:p.safetensors"))


def test_absolute_policy_path_is_used_as_is(fresh):
    pol = _folder(fresh, "pols", {"a.safetensors": "x"}) / "a.safetensors"
    sc = scenarios.load_scenario(_spec_file(_folder(fresh, "spec", {}), controller=f"policy:{pol}"))
    assert sc.flows[0].controller == f"policy:{pol}"


# ----------------------------------------------------------------------------- fresh clone


def _trace_names(monkeypatch) -> set[str]:
    """The trace file names the named scenarios use (found by recording find_trace's calls)."""
    from jaxcc.sim import trace as trace_mod

    seen = set()
    real = trace_mod.find_trace

    def spy(name, *a, **kw):
        seen.add(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(scenarios.catalogue, "find_trace", spy)  # the named scenarios' traces
    monkeypatch.setattr(scenarios.spec, "find_trace", spy)  # and any a spec names
    for name in scenarios.list_scenarios():
        scenarios.get_scenario(name)
    return {os.path.basename(n) for n in seen}


def test_every_named_scenario_and_suite_works_on_a_fresh_clone(fresh):
    """No $JAXCC_TRACES, no ../shared: every named scenario parses and builds its capacity
    schedule, every suite loads, and each trace comes from the shipped folder."""
    used = set()
    for name in scenarios.list_scenarios():
        sc = scenarios.get_scenario(name)
        sched = sc.link.capacity(seed=0, duration_s=sc.duration_s)
        assert sched.mean_rate(sc.duration_s) > 0, name
        if sc.link.trace is not None:
            assert os.path.dirname(sc.link.trace) == SHIPPED_TRACES, (name, sc.link.trace)
            used.add(os.path.basename(sc.link.trace))
    assert used == {"Verizon-LTE-short.up", "Verizon-LTE-short.down", "ATT-LTE-driving.down"}
    for suite in scenarios.SUITES:
        assert len(scenarios.get_suite(suite)) == len(scenarios.SUITES[suite])


def test_shipped_folder_holds_exactly_the_used_traces_as_documented(fresh, monkeypatch):
    """Only what the named scenarios use is shipped, byte-identical to the README's checksums."""
    used = _trace_names(monkeypatch)
    shipped = set(os.listdir(SHIPPED_TRACES)) - {"README.md", "COPYING", "__pycache__"}
    assert shipped == used
    readme = open(os.path.join(SHIPPED_TRACES, "README.md"), encoding="utf-8").read()
    assert "GPL-3+" in readme and "Winstein" in readme
    assert "GNU GENERAL PUBLIC LICENSE" in open(os.path.join(SHIPPED_TRACES, "COPYING"), encoding="utf-8").read()
    for fname in sorted(shipped):
        digest = hashlib.sha256(open(os.path.join(SHIPPED_TRACES, fname), "rb").read()).hexdigest()
        assert re.search(rf"`{re.escape(fname)}` \|.*\| `{digest}` \|", readme), (fname, digest)


def test_package_data_lists_the_shipped_files():
    """A non-editable install gets the same files (pyproject's package data)."""
    import tomllib

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        data = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["jaxcc.traces"]
    assert set(data) == set(os.listdir(SHIPPED_TRACES)) - {"__pycache__"}
