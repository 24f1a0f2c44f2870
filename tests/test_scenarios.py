"""Scenario specs: validation errors name the field; named scenarios follow the papers."""

import json

import pytest

from jaxcc import scenarios
from jaxcc.scenarios import parse_scenario


def spec(**over):
    base = {"name": "t", "duration_s": 10.0,
            "link": {"bandwidth_mbps": 12.0, "buffer_bytes": 375000, "loss": 0.0},
            "flows": [{"rtt_ms": 40.0, "start_s": 0.0, "stop_s": 10.0, "controller": "bbr"}]}
    for path, value in over.items():
        obj = base
        keys = path.split(".")
        for k in keys[:-1]:
            obj = obj[int(k)] if k.isdigit() else obj[k]
        last = keys[-1]
        if value is KeyError:
            del obj[last]
        else:
            obj[last] = value
    return base


def test_valid_spec_round_trips():
    sc = parse_scenario(spec())
    assert sc.flows[0].rtt_ms == 40.0 and sc.link.bandwidth_mbps == 12.0
    assert parse_scenario(sc.to_dict()) == sc


@pytest.mark.parametrize("path,value,field", [
    ("link.bandwidth_mbps", 0.0, r"link\.bandwidth_mbps: must be > 0"),
    ("link.bandwidth_mbps", -5, r"link\.bandwidth_mbps: must be > 0"),
    ("link.buffer_bytes", 0, r"link\.buffer_bytes: must be > 0"),
    ("link.loss", 1.0, r"link\.loss: must be in \[0, 1\)"),
    ("link.loss", -0.1, r"link\.loss: must be >= 0"),
    ("flows.0.rtt_ms", 0, r"flows\[0\]\.rtt_ms: must be > 0"),
    ("flows.0.stop_s", 0.0, r"flows\[0\]\.stop_s"),
    ("flows.0.controller", "vegas", r"flows\[0\]\.controller: unknown controller 'vegas'"),
    ("flows.0.controller", "fixed:-3", r"flows\[0\]\.controller: .*> 0"),
    ("flows.0.controller", "policy:/no/such/file", r"does not exist"),
    ("link.trace", "/no/such/trace", None),
    ("duration_s", float("nan"), r"duration_s: expected a finite number"),
    ("link.bandwidth_mbps", "fast", r"expected a finite number"),
])
def test_invalid_values_name_the_field(path, value, field):
    s = spec(**{path: value})
    if field is None:  # two capacity forms at once
        field = r"exactly one of"
    with pytest.raises(ValueError, match=field):
        parse_scenario(s)


def test_missing_and_unknown_keys():
    with pytest.raises(ValueError, match=r"link\.buffer_bytes: missing"):
        parse_scenario(spec(**{"link.buffer_bytes": KeyError}))
    s = spec()
    s["link"]["bandwith_mbps"] = 3
    with pytest.raises(ValueError, match="unknown key"):
        parse_scenario(s)


def test_missing_trace_file():
    s = spec()
    del s["link"]["bandwidth_mbps"]
    s["link"]["trace"] = "/no/such/trace"
    with pytest.raises(ValueError, match=r"link\.trace: trace file '/no/such/trace' does not exist"):
        parse_scenario(s)


def test_kernel_controllers_only_in_emulation():
    s = spec(**{"flows.0.controller": "kernel:cubic"})
    parse_scenario(s)
    with pytest.raises(ValueError, match="only in emulation"):
        parse_scenario(s, allow_kernel=False)


def test_json_file_errors_give_the_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"name": "x",\n "duration_s": 3,\n oops}\n')
    with pytest.raises(ValueError, match=r"bad\.json:3: invalid JSON"):
        scenarios.load_scenario(str(p))


def test_relative_trace_path_is_resolved_from_the_spec_file(tmp_path):
    (tmp_path / "link.trace").write_text("1\n")
    s = spec()
    del s["link"]["bandwidth_mbps"]
    s["link"]["trace"] = "link.trace"
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s))
    sc = scenarios.load_scenario(str(p))
    assert sc.link.trace == str(tmp_path / "link.trace")


def test_pareto_named_scenarios_follow_the_paper():
    f = scenarios.get_scenario("pareto/fixed50")
    assert (f.duration_s, f.link.bandwidth_mbps, f.link.buffer_bytes, f.flows[0].rtt_ms) == (30.0, 50.0, 440_000, 90.0)
    d = scenarios.get_scenario("pareto/dyn10-30")
    assert [m for _, m in d.link.schedule] == [10, 30, 10, 30, 10, 30]
    s5 = scenarios.get_scenario("pareto/shared5")
    assert [fl.start_s for fl in s5.flows] == [0, 2, 4, 6, 8]
    dep = scenarios.get_scenario("pareto/depart4")
    assert [fl.stop_s for fl in dep.flows] == [30, 40, 50, 60]
    assert scenarios.SUITES["pareto-fig5"][-1] == "pareto/lte"


def test_eagle_named_scenarios_follow_the_paper():
    # Eagle §V: 10 Mbps, 100 ms RTT (BDP = 125,000 bytes) and Verizon LTE with 10 ms one way.
    assert [scenarios.get_scenario(f"eagle/10mbps-bdp{k}").link.buffer_bytes for k in (1, 2, 4)] == \
        pytest.approx([125_000, 250_000, 500_000])
    e = scenarios.get_scenario("eagle/10mbps-bdp1")
    assert (e.link.bandwidth_mbps, e.flows[0].rtt_ms) == (10.0, 100.0)
    lte = scenarios.get_scenario("eagle/lte")  # the trace ships with jaxcc (jaxcc/traces)
    assert lte.link.trace.endswith("Verizon-LTE-short.down") and lte.flows[0].rtt_ms == 20.0


@pytest.mark.parametrize("name", ["pareto/lte", "eagle/lte", "mocc/lte-up", "mocc/lte-down"])
def test_verizon_scenarios_run_through_the_traces_longest_outage(name):
    """The trace's longest gap between delivery opportunities, read from the file itself (64.4 s
    + 1.45 s down, 65.8 s + 1.72 s up), ends at least 10 s before the run does, with every flow
    still sending: a 30-s run stopped before it."""
    sc = scenarios.get_scenario(name)
    with open(sc.link.trace) as fh:
        ms = sorted({int(line) for line in fh if line.strip()})
    gap, start = max((b - a, a) for a, b in zip(ms, ms[1:]))
    assert gap > 1000  # a multi-second outage, not a burst boundary
    assert (start + gap) / 1000 + 10 <= sc.duration_s
    assert all(f.start_s == 0 and f.stop_s == sc.duration_s for f in sc.flows)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="pareto/fixed50"):
        scenarios.get_scenario("pareto/fixed60")
    with pytest.raises(ValueError, match="pareto"):
        scenarios.get_suite("nope")


def test_random_links_are_deterministic_per_seed():
    sc = scenarios.get_scenario("aurora/random16-32")
    a, b, c = (sc.link.capacity(seed=s, duration_s=30) for s in (1, 1, 2))
    assert (a.rates == b.rates).all() and not (a.rates == c.rates).all()
    assert a.rates.min() >= 16 * 125000 and a.rates.max() <= 32 * 125000
    w = scenarios.get_scenario("deepcc/wifi").link.capacity(seed=0, duration_s=30)
    assert w.mean_rate(30) / 125000 == pytest.approx(2.64, rel=0.05)


# ----------------------------------------------------------------------------- robust training


def test_fairness_links():
    """50 Mbit/s / 440 KB / 90 ms as the Pareto set; Jain's last 20 s begin after the last start."""
    s8 = scenarios.get_scenario("pareto/shared8")
    assert (s8.duration_s, s8.link.bandwidth_mbps, s8.link.buffer_bytes) == (40.0, 50.0, 440_000)
    assert [f.start_s for f in s8.flows] == [0, 2, 4, 6, 8, 10, 12, 14] and {f.rtt_ms for f in s8.flows} == {90.0}
    assert max(f.start_s for f in s8.flows) < s8.duration_s - 20.0
    r = scenarios.get_scenario("pareto/rtt30-120")
    assert [(f.rtt_ms, f.start_s, f.stop_s) for f in r.flows] == [(30.0, 0.0, 40.0), (120.0, 2.0, 40.0)]
    assert (r.link.bandwidth_mbps, r.link.buffer_bytes) == (50.0, 440_000)
    r8 = scenarios.get_scenario("pareto/rtt20-160")
    assert [(f.rtt_ms, f.start_s, f.stop_s) for f in r8.flows] == [(20.0, 0.0, 40.0), (160.0, 2.0, 40.0)]
    assert (r8.link.bandwidth_mbps, r8.link.buffer_bytes) == (50.0, 440_000)
    j = scenarios.get_scenario("pareto/jitter4")
    # ± 5 ms: jaxcc.sim.realism draws U[0, jitter_ms] one way, so 10 ms is 5 ± 5 ms
    assert j.link.jitter_ms == 10.0 and len(j.flows) == 4 and j.link.bandwidth_mbps == 50.0
    assert scenarios.SUITES["pareto-fair"] == ("pareto/shared8", "pareto/rtt30-120", "pareto/rtt20-160",
                                               "pareto/jitter4")


def test_robust_links():
    s = scenarios.get_scenario("robust/start1pct")
    assert (s.link.bandwidth_mbps, s.flows[0].rtt_ms, s.flows[0].init_rate_mbps) == (50.0, 100.0, 0.5)
    assert s.link.buffer_bytes == pytest.approx(50e6 / 8 * 0.1)  # 1 BDP = 625 KB
    st = scenarios.get_scenario("robust/step5-50")
    assert st.link.schedule == ((0.0, 5.0), (10.0, 50.0)) and st.link.buffer_bytes == s.link.buffer_bytes
    assert scenarios.SUITES["robust"] == ("robust/start1pct", "robust/step5-50")
    for name in ("robust/start1pct", "robust/step5-50", "pareto/shared8", "pareto/rtt30-120", "pareto/rtt20-160",
                 "pareto/jitter4"):
        sc = scenarios.get_scenario(name)
        assert parse_scenario(sc.to_dict(), source=name) == sc


def test_init_rate_round_trips_and_is_absent_by_default():
    sc = parse_scenario(spec(**{"flows.0.init_rate_mbps": 0.5, "flows.0.controller": "bbr"}))
    assert sc.flows[0].init_rate_mbps == 0.5 and sc.to_dict()["flows"][0]["init_rate_mbps"] == 0.5
    assert parse_scenario(sc.to_dict()) == sc
    plain = parse_scenario(spec())
    assert plain.flows[0].init_rate_mbps is None and "init_rate_mbps" not in plain.to_dict()["flows"][0]


@pytest.mark.parametrize("value, match", [
    (0.0, r"^scenario\.flows\[0\]\.init_rate_mbps: must be in \[0\.01, 100000\] Mbit/s, got 0\.0"),
    (0.005, r"flows\[0\]\.init_rate_mbps: must be in \[0\.01, 100000\]"),
    (200000, r"flows\[0\]\.init_rate_mbps: must be in \[0\.01, 100000\]"),
    ("fast", r"flows\[0\]\.init_rate_mbps: expected a finite number"),
    (float("inf"), r"flows\[0\]\.init_rate_mbps: expected a finite number"),
])
def test_bad_init_rate_names_the_field_and_range(value, match):
    with pytest.raises(ValueError, match=match):
        parse_scenario(spec(**{"flows.0.init_rate_mbps": value}))


def test_init_rate_range_is_the_environments_rate_clip():
    from jaxcc.envs import base
    assert scenarios.INIT_RATE_MBPS_MIN * 125_000 == pytest.approx(base.MIN_RATE)
    assert scenarios.INIT_RATE_MBPS_MAX * 125_000 == pytest.approx(base.MAX_RATE)


@pytest.mark.parametrize("ctrl", ["bbr", "cubic", "reno", "copa", "oracle", "fixed:5"])
def test_init_rate_is_refused_for_senders_with_their_own_start(ctrl):
    sc = scenarios.get_scenario("robust/start1pct").with_controller(ctrl)
    (why,) = sc.init_rate_refusals()
    assert why.startswith("robust/start1pct.flows[0].init_rate_mbps: only a learned sender (policy:FILE)")
    assert repr(ctrl) in why
    assert scenarios.get_scenario("robust/step5-50").with_controller(ctrl).init_rate_refusals() == []


def test_init_rate_is_accepted_for_policies():
    import os
    pol = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checkpoints", "pareto",
                       "pareto_fair.safetensors")
    sc = scenarios.get_scenario("robust/start1pct").with_controller("policy:" + pol)
    assert sc.init_rate_refusals() == [] and sc.flows[0].init_rate_mbps == 0.5


def test_emulation_refuses_init_rate():
    from jaxcc.emulation import spec as emu_spec
    from jaxcc.emulation.host import EmulationError
    with pytest.raises(EmulationError, match=r"^t\.flows\[0\]\.init_rate_mbps: not emulated yet"):
        emu_spec.as_scenario(spec(**{"flows.0.init_rate_mbps": 2.0}))


def test_neighbours_move_each_flow_within_their_ranges_and_keep_the_link():
    sc = scenarios.get_scenario("pareto/shared2")
    seen = set()
    for k in range(8):
        nb = sc.neighbour(k)
        assert nb.name == f"pareto/shared2~{k}" and nb.link == sc.link and nb.duration_s == sc.duration_s
        for f, g in zip(sc.flows, nb.flows):
            assert abs(g.rtt_ms / f.rtt_ms - 1.0) <= 0.03 and 0.0 <= g.start_s - f.start_s <= 0.25
            assert g.stop_s == f.stop_s and g.controller == f.controller
        seen.add(tuple(round(g.rtt_ms, 6) for g in nb.flows))
        assert nb == sc.neighbour(k)  # drawn from k alone
    assert len(seen) == 8
    # The draws are numpy's default_rng(k), flow by flow: RTT factor, then start shift.
    import numpy as np
    rng = np.random.default_rng(5)
    f0 = rng.uniform(-0.03, 0.03)
    s0 = rng.uniform(0.0, 0.25)
    assert sc.neighbour(5).flows[0].rtt_ms == pytest.approx(90.0 * (1 + f0))
    assert sc.neighbour(5).flows[0].start_s == pytest.approx(s0)
    with pytest.raises(ValueError, match="neighbour index must be >= 0"):
        sc.neighbour(-1)


def test_a_neighbour_keeps_preference_changes_after_the_flow_start():
    sc = parse_scenario(spec() | {"flows": [
        {"rtt_ms": 40.0, "start_s": 1.0, "controller": "bbr",
         "preference_changes": [{"at_s": 1.1, "preference": [0.5, 0.5, 0.0]}]}]})
    nb = sc.neighbour(0)
    shift = nb.flows[0].start_s - 1.0
    assert 0.0 <= shift <= 0.25
    assert nb.flows[0].preference_changes[0][0] == pytest.approx(1.1 + shift)
