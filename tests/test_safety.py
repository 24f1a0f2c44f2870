"""The sender's safety net (``jaxcc.senders.safety``): the monitor and the guard by hand, the
committed C++ vectors (``tests/vectors/safety.json``) are current, and the simulator twin
(``jaxcc.senders.common.make_controller``) on made-up feedback: no rise in the dark, BBR's
pacing after 200 ms of it, the policy back from BBR's rate once ACKs return; and on the
``outage`` suite, the raw policy against the deployed one."""

import json
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

from jaxcc.baselines import bbr
from jaxcc.parity_vectors import safety as pv_safety
from jaxcc.senders import common, safety
from jaxcc.sim.controller import ControllerParams, TickObs, rate_only

VECTORS = os.path.join(os.path.dirname(__file__), "vectors", pv_safety.SAFETY_VECTORS)


def _run(mis, enter=3, leave=3, answered=True):
    """The monitor after each (acked, lost, n_samples, duration) MI of a flow whose path has
    answered (``answered``) or not yet."""
    s, out = safety.monitor_zero(), []
    for acked, lost, n, d in mis:
        s = safety.monitor_step(s, jnp.float32(acked), jnp.float32(lost), jnp.float32(n), jnp.float32(d),
                                jnp.bool_(answered), enter, leave)
        out.append(s)
    return out


def test_mis_for_covers_three_rtts():
    assert [safety.mis_for(3.0, r) for r in (0.5, 1.0, 2.0, 3.0, 4.0)] == [6, 3, 2, 1, 1]


def test_monitor_by_hand():
    dark, lossy, half, clean, fifth = (0, 0, 0, .1), (400, 600, 4, .1), (500, 500, 5, .1), (1000, 0, 10, .1), \
        (800, 200, 8, .1)
    # Loss exactly 0.5 is bad (>=): dark, dark, half -> three bad MIs, 0.3 s: BBR paces.
    s = _run([dark, dark, half])
    assert [bool(x.fallback) for x in s] == [False, False, True] and int(s[-1].entries) == 1
    # A clean MI breaks the streak; loss exactly 0.2 is not good (<), so it breaks the good one.
    s = _run([dark, dark, clean, dark, lossy, clean])
    assert not any(bool(x.fallback) for x in s) and int(s[3].bad_run) == 1
    s = _run([dark] * 3 + [clean, clean, fifth, clean, clean, clean])
    assert [bool(x.fallback) for x in s] == [False, False, True, True, True, True, True, True, False]
    assert int(s[-1].fallback_mis) == 6  # MIs 4-9 were paced by BBR
    # 10 ms MIs: three are not 200 ms; the 20th is.
    s = _run([(0, 0, 0, 0.01)] * 20)
    assert not bool(s[18].fallback) and bool(s[19].fallback)
    # Before the path's first answer nothing counts.
    s = _run([dark] * 10, answered=False)
    assert int(s[-1].bad_run) == 0 and not bool(s[-1].fallback)


def test_guard_only_in_the_dark():
    r, c = safety.guard(jnp.float32(3.0), jnp.float32(30.0), jnp.float32(2.0), jnp.float32(40.0), jnp.bool_(True))
    assert (float(r), float(c)) == (2.0, 30.0)
    r, c = safety.guard(jnp.float32(3.0), jnp.float32(30.0), jnp.float32(2.0), jnp.float32(40.0), jnp.bool_(False))
    assert (float(r), float(c)) == (3.0, 30.0)
    assert bool(safety.no_feedback(jnp.float32(0), jnp.float32(0)))
    assert not bool(safety.no_feedback(jnp.float32(1500), jnp.float32(1)))


def test_committed_vectors_are_current():
    """The Python half of the parity: the committed file is what the code writes now (the C++
    half is datapath/tests/vectors_test.cc SafetyNetMatchesPython)."""
    with open(VECTORS) as f:
        committed = json.load(f)
    assert committed["constants"] == pv_safety._constants()
    fresh = pv_safety.safety_cases(0)
    assert len(fresh) == len(committed["cases"])
    for a, b in zip(fresh, committed["cases"]):
        assert a["mi_rtts"] == b["mi_rtts"] and a["enter_mis"] == b["enter_mis"]
        assert a["mis"] == b["mis"], f"mi_rtts {a['mi_rtts']}: python -m jaxcc.parity_vectors --out tests/vectors"
    # Every case switches both ways (write_safety_vectors refuses otherwise).
    for c in committed["cases"]:
        fb = [m["fallback"] for m in c["mis"]]
        assert any(fb) and not all(fb)


class _Own(NamedTuple):
    rate: jax.Array


# A policy that always wants 1.5x: MI of 1 RTT, 8 ticks of 5 ms (a 40 ms path).
_SPEC = {"features": {"history": 1, "obs_dim": 1, "ticks_per_rtt": 8}, "mi_rtts": 1.0}
_GREEDY = common.Sender(start=lambda rtt0: _Own(jnp.float32(1e6)),
                        decide=lambda own, hist, run, rtt0: own._replace(rate=own.rate * 1.5),
                        observe=lambda own, m, run, rtt0: (jnp.zeros(1), own),
                        act=lambda own: rate_only(own.rate))


def _obs(t, acked, rtt=0.04, dt=0.005):
    f = jnp.float32
    return TickObs(now=f(t), dt=f(dt), active=jnp.bool_(True), acked=f(acked), lost=f(0), rtt_wsum=f(acked * rtt),
                   sent=f(5000), inflight=f(20000), capacity=f(0), n_active=f(1))


def _drive(ctrl, ticks):
    """The controller's rate after each tick of (acked bytes) feedback."""
    cp = ControllerParams.zeros()
    s = ctrl.init(cp)
    update = jax.jit(ctrl.update)
    rates, states = [], []
    for i, acked in enumerate(ticks):
        s = update(s, _obs((i + 1) * 0.005, acked), cp)
        rates.append(float(ctrl.act(s, cp).rate))
        states.append(s)
    return rates, states


def test_simulator_twin_waits_for_the_first_answer():
    """A first round trip without ACKs (here 5 MIs, 200 ms) is not guarded: the policy rises."""
    safe = common.make_controller("t", _SPEC, _GREEDY, safe=True)
    r, st = _drive(safe, [0.0] * 40 + [2000.0] * 8)
    assert r[39] == pytest.approx(1e6 * 1.5 ** 6, rel=1e-5) and int(st[-1].mon.bad_run) == 0


def test_simulator_twin_guards_hands_over_and_back():
    safe = common.make_controller("t", _SPEC, _GREEDY, safe=True)
    raw = common.make_controller("t", _SPEC, _GREEDY, safe=False)
    # 2 clean MIs (ACKs every tick), 6 dark MIs, 4 clean MIs.
    ticks = [2000.0] * 16 + [0.0] * 48 + [2000.0] * 32
    r_raw, _ = _drive(raw, ticks)
    r_safe, st = _drive(safe, ticks)
    mi_end = lambda k: 8 * k - 1  # noqa: E731  the tick that closes MI k (1-based)
    # The raw policy rises 1.5x at every MI, dark or not.
    assert r_raw[mi_end(8)] == pytest.approx(1e6 * 1.5 ** 9, rel=1e-5)
    # Deployed: up 1.5x after the two clean MIs, then held through the dark ones ...
    assert r_safe[mi_end(2)] == pytest.approx(1e6 * 1.5 ** 3, rel=1e-5)
    assert r_safe[mi_end(3)] == pytest.approx(1e6 * 1.5 ** 3, rel=1e-5)
    assert r_safe[mi_end(4)] == pytest.approx(1e6 * 1.5 ** 3, rel=1e-5)
    # ... until MI 7 closes 200 ms of them (3 MIs are only 120 ms): BBR's pacing from then on.
    assert not bool(st[mi_end(7) - 1].mon.fallback) and bool(st[mi_end(7)].mon.fallback)
    assert r_safe[mi_end(7)] == pytest.approx(float(bbr.bbr_rate(st[mi_end(7)].bbr)), rel=1e-6)
    # Three clean MIs (9, 10, 11) hand it back; the policy decides on MI 11 from BBR's rate.
    back = mi_end(11)
    assert bool(st[back - 1].mon.fallback) and not bool(st[back].mon.fallback)
    assert r_safe[back] == pytest.approx(1.5 * float(bbr.bbr_rate(st[back].bbr)), rel=1e-5)
    assert int(st[-1].mon.entries) == 1


@pytest.mark.full
def test_outage_raw_against_deployed():
    """On a 3 s outage of a 20 Mbit/s link the shipped Aurora, raw, raises its rate while the link
    is dark and meets its return far above capacity; deployed, it loses a fraction of that."""
    from jaxcc.evaluation.runs import controller_entries, run_evaluation
    from jaxcc.scenarios.catalogue import get_scenario

    pol = os.path.join(os.path.dirname(__file__), "..", "checkpoints", "aurora", "aurora.safetensors")
    rep = run_evaluation([get_scenario("outage/20mbps-3s")],
                         controller_entries(f"policy:{pol},raw-policy:{pol}"),
                         keep_series=False, progress=False)
    loss = {r["controller"].split(":")[0]: r["loss"] for r in rep["results"]}
    assert loss["policy"] <= 0.03 < loss["raw-policy"], loss
