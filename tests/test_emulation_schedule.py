"""The emulated link's tbf rate schedule.  For every named scenario and the harness's own emu/*
links without a trace, ``jaxcc.emulation.spec.rate_schedule`` equals, value for value, what the
old ``jaxcc/emulate.py`` (its own spec parser and binning; copied below as the reference, from
commit d6f8728) computed.  A trace link is the simulator's own schedule of the trace
(``jaxcc.sim.links.from_trace`` at the scenario's ``trace_bin_ms``), so a trace's outage is the
same in both; the trace scenarios use the traces shipped in ``jaxcc/traces``.
"""
from __future__ import annotations

import math

import pytest

from jaxcc import scenarios
from jaxcc.emulation import spec as emu_spec
from jaxcc.sim import links

MSS = 1500
MIN_RATE_MBPS = 0.01


# ----------------------------------------------------------------------------- the old code (reference)

def _old_schedule_of(scenario: scenarios.Scenario, duration: float, trace_bin_s: float):
    """Old normalize_spec (random forms drawn once, seed 0) followed by old bandwidth_schedule."""
    link = scenario.to_dict()["link"]
    if link.get("random_steps") is not None or link.get("poisson") is not None:
        cap = scenario.link.capacity(seed=0, duration_s=duration)
        link = {"schedule": [[float(t), float(r) * 8 / 1e6]
                             for t, r in zip(cap.times, cap.rates) if t < duration],
                "buffer_bytes": link["buffer_bytes"], "loss": link.get("loss", 0.0)}
    return _old_bandwidth_schedule(link, duration, trace_bin_s)


def _old_bandwidth_schedule(link, duration_s, trace_bin_s=0.1):
    if link.get("bandwidth_mbps") is not None:
        sched = [(0.0, float(link["bandwidth_mbps"]))]
    elif link.get("schedule") is not None:
        sched = sorted((float(t), float(r)) for t, r in link["schedule"])
        if sched[0][0] > 0:
            sched.insert(0, (0.0, sched[0][1]))
    else:
        with open(link["trace"]) as f:
            ts = [int(line) for line in f if line.strip()]
        sched = _old_trace_to_schedule(ts, duration_s, trace_bin_s)
    seg = [b[0] - a[0] for a, b in zip(sched, sched[1:]) if b[0] < duration_s]
    if seg and min(seg) < trace_bin_s - 1e-9:
        sched = [(i * trace_bin_s, _old_mean(sched, i * trace_bin_s, (i + 1) * trace_bin_s))
                 for i in range(int(math.ceil(duration_s / trace_bin_s)))]
    out = []
    for t, r in sched:
        r = max(r, MIN_RATE_MBPS)
        if t >= duration_s and out:
            break
        if out and abs(out[-1][1] - r) < 1e-9:
            continue
        out.append((t, r))
    return out


def _old_trace_to_schedule(ts_ms, duration_s, bin_s=0.1):
    period_ms = max(ts_ms[-1], 1)
    bin_ms = bin_s * 1000.0
    n_bins = int(math.ceil(duration_s / bin_s))
    counts = [0] * n_bins
    loops = int(math.ceil(duration_s * 1000.0 / period_ms)) + 1
    for k in range(loops):
        base = k * period_ms
        for t in ts_ms:
            b = int((base + t) // bin_ms)
            if b >= n_bins:
                break
            counts[b] += 1
    return [(i * bin_s, c * MSS * 8 / bin_s / 1e6) for i, c in enumerate(counts)]


def _old_mean(sched, t0, t1):
    total = 0.0
    for i, (t, r) in enumerate(sched):
        end = sched[i + 1][0] if i + 1 < len(sched) else math.inf
        lo, hi = max(t, t0), min(end, t1)
        if hi > lo:
            total += r * (hi - lo)
    return total / max(t1 - t0, 1e-9)


# ----------------------------------------------------------------------------- the comparison

# Robust training's simulator-only links (jitter; a flow's start rate): the emulation refuses them.
SIM_ONLY = {"pareto/jitter4": "link.jitter_ms", "robust/start1pct": "flows[0].init_rate_mbps"}
NAMES = [n for n in scenarios.list_scenarios() if n not in SIM_ONLY] + sorted(emu_spec.BUILTIN_SCENARIOS)
TRACED = [n for n in NAMES if emu_spec.load(name=n).link.trace is not None]
UNTRACED = [n for n in NAMES if n not in TRACED]


@pytest.mark.parametrize("name", sorted(SIM_ONLY))
def test_simulator_only_named_scenarios_are_refused(name):
    from jaxcc.emulation.host import EmulationError
    with pytest.raises(EmulationError, match=rf"^{name}\.{SIM_ONLY[name].replace('[', '.').replace(']', '.')}: "
                                             r"not emulated yet"):
        emu_spec.load(name=name)


@pytest.mark.parametrize("bin_ms", [100.0, 50.0, 10.0])
@pytest.mark.parametrize("name", UNTRACED)
def test_rate_schedule_is_the_old_one(name, bin_ms):
    sc = emu_spec.load(name=name)
    new = emu_spec.rate_schedule(sc, bin_ms / 1000.0)
    old = _old_schedule_of(sc, sc.duration_s, bin_ms / 1000.0)
    assert new == old      # exact: the same tbf rates at the same times


@pytest.mark.parametrize("bin_ms", [None, 50.0])
@pytest.mark.parametrize("name", TRACED)
def test_trace_schedule_is_the_simulators(name, bin_ms):
    """Each tbf step is the simulator's capacity over that bin (floored at tbf's minimum), at the
    scenario's own bin by default; a step starts wherever the simulator's capacity changes."""
    sc = emu_spec.load(name=name)
    got = emu_spec.rate_schedule(sc, None if bin_ms is None else bin_ms / 1000.0)
    sim = links.from_trace(sc.link.trace, sc.link.trace_bin_ms if bin_ms is None else bin_ms)
    starts = [t for t in sim.times if t < sc.duration_s]
    want, prev = [], None
    for t in starts:
        r = max(float(sim.rate_at(t)) * 8 / 1e6, MIN_RATE_MBPS)
        if r != prev:
            want.append((float(t), r))
            prev = r
    assert got == want


def test_trace_outage_is_the_same_in_both(tmp_path):
    """A trace that goes dark for 2 s (one opportunity per ms, none from 1 s to 3 s; its last
    stamp, 5000, is time 0 of the next lap): the simulator's capacity is 0 there and the tbf
    schedule sits at its floor over exactly those bins."""
    p = tmp_path / "gap.trace"
    p.write_text("\n".join(str(t) for t in list(range(1, 1000)) + list(range(3000, 5001))) + "\n")
    sc = emu_spec.as_scenario({"name": "gap", "duration_s": 5.0,
                               "link": {"trace": str(p), "trace_bin_ms": 100, "buffer_bytes": 60000},
                               "flows": [{"rtt_ms": 40.0, "controller": "bbr"}]})
    sched = emu_spec.rate_schedule(sc)
    dark = [(t, r) for t, r in sched if r == MIN_RATE_MBPS]
    assert dark == [(pytest.approx(1.0), MIN_RATE_MBPS)]
    nxt = sched[sched.index(dark[0]) + 1]
    assert nxt[0] == pytest.approx(3.0) and nxt[1] == pytest.approx(12.0)
    sim = sc.link.capacity()
    assert float(sim.rate_at(2.0)) == 0.0 and float(sim.rate_at(3.05)) == pytest.approx(12.0 * 1e6 / 8)


def test_trace_scenarios_are_compared():
    """The comparison covers the trace links: at least two named scenarios use a trace."""
    assert {"pareto/lte", "eagle/lte"} <= set(TRACED)
    assert all(len(emu_spec.rate_schedule(emu_spec.load(name=n))) > 10 for n in TRACED)
