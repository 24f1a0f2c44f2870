"""The recovery measurements in the simulator, against senders whose answer is known by hand.

* ``metrics.time_to_share`` / ``evaluate.recovery_metrics``: ``fixed:N`` (a constant rate) and
  ``oracle`` (c(t)/n from the tick after a change) on the named links, where the goodput of each
  0.5 s bin follows from the rates, the RTT and the capacity;
* ``metrics.fair_share_fractions``: two constant-rate flows below the capacity;
* a flow's start rate (``init_rate_mbps``): a policy whose every action is "hold" sends at exactly
  the start rate in every tick (and at its feature set's own start without it).
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest

from jaxcc.evaluation import runs as evaluation_runs
from jaxcc import policyfile, scenarios, senders
from jaxcc.evaluation import metrics
from jaxcc.senders import common
from jaxcc.sim import runner

MBPS = 125_000.0


def _traces(sc_list):
    """One ``metrics.Trace`` per scenario (each flow runs its own controller)."""
    items = [runner.Item(sc, 0) for sc in sc_list]
    out = []
    for b in runner.build_batches(items, resolve=senders.resolve):
        _, traj, rates = runner.run_batch(b)
        out += [(it.scenario.name, metrics.from_batch(traj, rates, b, i)) for i, it in enumerate(b.items)]
    by = dict(out)
    return [by[sc.name] for sc in sc_list]


def _renamed(sc, name, controller):
    d = sc.with_controller(controller).to_dict()
    d["name"] = name
    return scenarios.parse_scenario(d, source=name)


def test_reclaim_after_departures_oracle_at_once_fixed_never():
    """pareto/depart4 (50 Mbit/s, 90 ms; stops at 30, 40, 50 s).  oracle: the rest send the new share
    c/n from the tick after a stop, so the first 0.5 s bin already carries
    (0.09 s x the old share + 0.41 s x 50) / 0.5 s >= 0.95 of 50 (0.955 at 30 s): 0.5 s each time.
    fixed:12.5: the rest keep 37.5, 25, 12.5 Mbit/s = 75, 50, 25 % < 80 %: never."""
    dep = scenarios.get_scenario("pareto/depart4")
    recs = evaluation_runs.run_evaluation([dep], evaluation_runs.controller_entries("oracle,fixed:12.5"), progress=False,
                             keep_series=False)["results"]
    by = {r["controller"]: r for r in recs}
    assert by["oracle"]["depart_at_s"] == [30.0, 40.0, 50.0] and by["oracle"]["reclaim_s"] == [0.5, 0.5, 0.5]
    assert by["fixed:12.5"]["reclaim_s"] == [math.inf] * 3
    assert by["oracle"]["step_ramp_s"] == []
    # Jain's window 40-60 s counts flows 2 (25 Mbit/s until 50 s) and 3 (25, then 50): fair share 25
    assert by["oracle"]["min_fair_share"] == pytest.approx(1.0, rel=0.01)


def test_time_to_share_after_a_step_and_from_a_start():
    """robust/step5-50 with oracle: after the 10 s step the ACKs at 50 Mbit/s begin one tick (12.5 ms)
    plus one RTT (100 ms) later, so the first bin carries (0.1125 x 5 + 0.3875 x 50) / 0.5 = 39.9 Mbit/s
    (0.80 of 50): at 70 % it is the first bin (0.5 s), at 90 % the second (1.0 s).
    robust/step5-50's capacity under fixed:45 from 0 s is 5 Mbit/s; a fixed:45 flow on a plain
    50 Mbit/s, 100 ms link delivers nothing in its first 0.1 s: its first bin carries
    45 x 0.4 / 0.5 = 36 (72 %), the next 45 (90 %): 80 % after 1.0 s, 95 % never."""
    step = _renamed(scenarios.get_scenario("robust/step5-50"), "step-oracle", "oracle")
    flat = scenarios.parse_scenario({"name": "flat-fixed45", "duration_s": 5.0,
                                     "link": {"bandwidth_mbps": 50, "buffer_bytes": 625_000},
                                     "flows": [{"rtt_ms": 100.0, "controller": "fixed:45"}]})
    tr_step, tr_flat = _traces([step, flat])
    assert metrics.time_to_share(tr_step, 10.0, frac=0.7) == 0.5
    assert metrics.time_to_share(tr_step, 10.0, frac=0.9) == 1.0
    assert metrics.time_to_share(tr_step, 10.0, frac=0.9, t_end=10.9) == math.inf  # only whole bins count
    assert metrics.time_to_share(tr_flat, 0.0) == 1.0
    assert metrics.time_to_share(tr_flat, 0.0, frac=0.95) == math.inf
    rm = evaluation_runs.recovery_metrics(tr_step, step)
    assert rm["step_up_at_s"] == [10.0] and rm["step_ramp_s"] == [1.0] and rm["depart_at_s"] == []


def test_fair_share_of_two_constant_flows():
    """fixed:10 next to fixed:30 on 50 Mbit/s (no queue): fair share 25, so 0.4 and 1.2."""
    sc = scenarios.parse_scenario({"name": "two-fixed", "duration_s": 25.0,
                                   "link": {"bandwidth_mbps": 50, "buffer_bytes": 440_000},
                                   "flows": [{"rtt_ms": 90.0, "controller": "fixed:10"},
                                             {"rtt_ms": 90.0, "controller": "fixed:30"}]})
    (tr,) = _traces([sc])
    fr = metrics.fair_share_fractions(tr, metrics.jain_window(float(tr.time[-1])))
    assert fr == pytest.approx([0.4, 1.2], rel=1e-4)
    assert evaluation_runs.recovery_metrics(tr, sc)["min_fair_share"] == pytest.approx(0.4, rel=1e-4)


def _two_flows(g0, g1, active1, cap_mbps=10.0, dt=0.0125):
    """A synthetic two-flow trace: per-tick goodputs (Mbit/s) and flow 1's activity."""
    n = g0.size
    g = np.stack([g0, g1], axis=1) * MBPS * dt
    active = np.stack([np.ones(n, bool), active1], axis=1)
    return metrics.Trace(time=np.arange(1, n + 1) * dt, dt=dt, active=active, sent=g, acked=g, lost=np.zeros_like(g),
                         admitted=g, owd=np.zeros_like(g), qdelay=np.zeros(n), capacity=np.full(n, cap_mbps * MBPS))


def test_time_to_fairness_by_hand():
    """Flow 0 alone at 10 Mbit/s until flow 1 arrives at 10 s; then 9:1 for 3 s, Jain(9, 1) =
    100 / (2 x 82) = 0.61; then 6:4 (Jain 100 / (2 x 52) = 0.96).  The bins from 10 s are 0.5 s, so
    the first fair bin is (13, 13.5] and its 2 s hold is 6:4 too: 3.5 s.  Jain(1, r) >= 0.9 holds
    from r = 1/2: at 7:3 (r = 0.43, Jain 0.86) never; at 6.6:3.4 (r = 0.52) from 13 s on."""
    t = np.arange(1, 1601) * 0.0125  # 20 s
    after = t > 10.0
    g1 = np.where(after, np.where(t > 13.0, 4.0, 1.0), 0.0)
    tr = _two_flows(10.0 - g1, g1, after)
    assert metrics.time_to_fairness(tr, 10.0, [0, 1]) == 3.5
    assert metrics.time_to_fairness(tr, 10.0, [0, 1], t_end=13.4) == math.inf  # judged until the next event
    assert metrics.time_to_fairness(tr, 10.0, [0, 1], threshold=0.6) == 0.5
    g1 = np.where(after, np.where(t > 13.0, 3.0, 1.0), 0.0)
    assert metrics.time_to_fairness(_two_flows(10.0 - g1, g1, after), 10.0, [0, 1]) == math.inf
    g1 = np.where(after, np.where(t > 13.0, 3.4, 1.0), 0.0)  # 6.6:3.4, r = 0.52: Jain 100 / (2 x 55.12) = 0.907
    assert metrics.time_to_fairness(_two_flows(10.0 - g1, g1, after), 10.0, [0, 1]) == 3.5
    # A dark link is not fair: nothing delivered for 2 s after the arrival, then 5:5.
    g1 = np.where(t > 12.0, 5.0, 0.0)
    g0 = np.where((t > 10.0) & (t <= 12.0), 0.0, np.where(t > 12.0, 5.0, 10.0))
    assert metrics.time_to_fairness(_two_flows(g0, g1, after), 10.0, [0, 1]) == 2.5
    with pytest.raises(ValueError, match="two or more flows"):
        metrics.time_to_fairness(tr, 10.0, [1])


def test_time_to_fairness_events_come_from_the_scenario():
    """pareto/depart4 (starts at 0, 2, 4, 6 s; stops at 30, 40, 50, 60): the events with two
    flows or more sending after them are the arrivals at 2, 4, 6 s and the departures at 30 and
    40 s (after 50 s one flow is left).  oracle sends c/n to each flow from the tick after an
    event: fair from the first bin (0.5 s) each time; fixed:20 next to fixed:5 on a link that
    carries both is Jain 0.74 for ever."""
    dep = scenarios.get_scenario("pareto/depart4")
    (rec,) = evaluation_runs.run_evaluation([dep], evaluation_runs.controller_entries("oracle"), progress=False,
                                            keep_series=False)["results"]
    assert rec["fair_at_s"] == [2.0, 4.0, 6.0, 30.0, 40.0]
    assert rec["time_to_fair_s"] == [0.5] * 5
    two = scenarios.parse_scenario({"name": "two-fixed-unfair", "duration_s": 10.0,
                                    "link": {"bandwidth_mbps": 50, "buffer_bytes": 440_000},
                                    "flows": [{"rtt_ms": 90.0, "controller": "fixed:20"},
                                              {"rtt_ms": 90.0, "start_s": 1.0, "controller": "fixed:5"}]})
    (tr,) = _traces([two])
    assert metrics.jain_index([20.0, 5.0]) == pytest.approx(0.735, abs=1e-3)
    rm = evaluation_runs.recovery_metrics(tr, two)
    assert rm["fair_at_s"] == [1.0] and rm["time_to_fair_s"] == [math.inf]


def test_recovery_events_come_from_the_scenario():
    dyn = scenarios.get_scenario("pareto/dyn10-30")  # 10/30 every 5 s: steps up at 5, 15, 25 s
    tr = metrics.Trace(time=np.arange(1, 2401) * 0.0125, dt=0.0125, active=np.ones((2400, 1), bool),
                       sent=np.zeros((2400, 1)), acked=np.zeros((2400, 1)), lost=np.zeros((2400, 1)),
                       admitted=np.zeros((2400, 1)), owd=np.zeros((2400, 1)), qdelay=np.zeros(2400),
                       capacity=np.full(2400, 10 * MBPS))
    rm = evaluation_runs.recovery_metrics(tr, dyn)
    assert rm["step_up_at_s"] == [5.0, 15.0, 25.0] and rm["step_ramp_s"] == [math.inf] * 3  # nothing ACKed
    assert rm["ramp_s"] == math.inf and rm["depart_at_s"] == [] and math.isnan(rm["min_fair_share"])


# ----------------------------------------------------------------------------- start rate


def _hold_policy(tmp_path, name):
    """A policy of feature set ``name`` whose every action keeps the rate: a zero network (Aurora's
    clipped mean 0 is x1); Pareto's tanh head maps its output bias to a = 0 (x(1 + 0)); Eagle's
    logits favour the x1.0 entry."""
    spec, tensors = policyfile.make_feature_policy(name, 0)
    tensors = {k: np.zeros_like(v) for k, v in tensors.items()}
    if spec["head"]["type"] == "continuous":  # lo + (tanh(z) + 1)(hi - lo)/2 = 0
        lo, hi = spec["head"]["low"], spec["head"]["high"]
        tensors["out.bias"][:] = np.arctanh(2.0 * (0.0 - lo) / (hi - lo) - 1.0)
    if name == "eagle_v1":
        tensors["logits.bias"][spec["action"]["multipliers"].index(1.0)] = 1.0
    path = os.path.join(tmp_path, f"hold_{name}.safetensors")
    policyfile.save(path, spec, tensors)
    return path


def _link(pol, init=None, rtt_ms=100.0):
    fl = {"rtt_ms": rtt_ms, "controller": f"policy:{pol}"}
    if init is not None:
        fl["init_rate_mbps"] = init
    return scenarios.parse_scenario({"name": f"hold-{init}-{os.path.basename(pol)}", "duration_s": 3.0,
                                     "link": {"bandwidth_mbps": 50, "buffer_bytes": 625_000}, "flows": [fl]})


@pytest.mark.parametrize("name, own_start_mbps, first_tick_silent", [
    ("pareto_v1", 10 * 1500 / 0.09 / MBPS, False),  # the env's 10 packets per 90 ms
    ("aurora_v1", 10 * 1500 / 0.1 / MBPS, True),  # 10 packets per min RTT, known after the first tick
])
def test_hold_policy_sends_at_the_start_rate_every_tick(tmp_path, name, own_start_mbps, first_tick_silent):
    pol = _hold_policy(tmp_path, name)
    with_rate, own = _traces([_link(pol, 7.0), _link(pol)])
    dt = with_rate.dt
    assert with_rate.sent[:, 0] == pytest.approx(7.0 * MBPS * dt, rel=1e-5)  # from the first tick on
    sent_own = own.sent[1:, 0] if first_tick_silent else own.sent[:, 0]
    assert sent_own == pytest.approx(own_start_mbps * MBPS * dt, rel=1e-5)
    if first_tick_silent:
        assert own.sent[0, 0] == 0.0


def test_start_rate_replaces_only_the_rate_of_every_feature_sets_start(tmp_path):
    """Every feature set's state has a rate; ``start_at`` sets it (bytes/s) and keeps the rest."""
    import jax
    r = np.float32(3.5 * MBPS)
    for name in sorted(senders.FEATURE_SETS):
        spec, tensors = policyfile.make_feature_policy(name, 0)
        mod = senders.feature_set(name)
        snd = mod.sender(spec, tensors)
        own = snd.start(0.1)
        new = common.start_at(own, r)
        assert np.all(np.asarray(new.rate) == r), name
        assert np.asarray(new.rate).shape == np.asarray(own.rate).shape, name
        same = [np.array_equal(a, b) for a, b in zip(jax.tree.leaves(new._replace(rate=own.rate)), jax.tree.leaves(own))]
        assert all(same), name
        kept = common.start_at(own, np.float32(0.0))  # 0: the feature set's own start
        assert np.array_equal(np.asarray(kept.rate), np.asarray(own.rate)), name


def test_eagle_hold_keeps_the_start_rate_and_its_own_window(tmp_path):
    """Eagle's first decision ("hold", x1.0) on the start rate: the rate stays 2 Mbit/s (not the
    paper's 0.3) and the window is the one Eagle computes, as without the start rate."""
    pol = _hold_policy(tmp_path, "eagle_v1")
    ctrl, cparam = senders.policy_controller(pol)
    cp = cparam._replace(sender=cparam.sender._replace(init_rate=np.float32(2.0 * MBPS)))
    s_own, s_init = ctrl.init(cparam), ctrl.init(cp)
    assert float(s_init.own.rate[0]) == pytest.approx(2.0 * MBPS)
    assert float(s_own.own.rate[0]) == pytest.approx(0.3 * MBPS)
    assert float(s_init.own.cwnd[0]) == float(s_own.own.cwnd[0])


def test_runner_refuses_a_start_rate_for_a_baseline():
    sc = scenarios.get_scenario("robust/start1pct")  # its placeholder controller is bbr
    with pytest.raises(ValueError, match=r"flows\[0\]\.init_rate_mbps: only a learned sender \(policy:FILE\)"):
        runner.build_batches([runner.Item(sc, 0)], resolve=senders.resolve)


def _synthetic(goodput_mbps, dt=0.0125, cap_mbps=50.0):
    """A one-flow trace whose ACKed bytes per tick follow ``goodput_mbps`` [T] on a constant link."""
    g = np.asarray(goodput_mbps, np.float64)
    n = g.size
    return metrics.Trace(time=np.arange(1, n + 1) * dt, dt=dt, active=np.ones((n, 1), bool),
                         sent=(g * MBPS * dt)[:, None], acked=(g * MBPS * dt)[:, None], lost=np.zeros((n, 1)),
                         admitted=(g * MBPS * dt)[:, None], owd=np.zeros((n, 1)), qdelay=np.zeros(n),
                         capacity=np.full(n, cap_mbps * MBPS))


def test_a_spike_that_falls_back_does_not_count_and_a_short_dip_does_not_spoil():
    """40 ticks per 0.5 s bin.  A 0.5 s spike at 45 Mbit/s (1.5-2 s) then 25: the bin reaches 90 %
    but the 2 s from its start average (45 + 3 x 25) / 4 = 30 (60 %): not counted; from 6 s on 45
    Mbit/s with a 0.25 s dip to 5 Mbit/s at 7 s: the 6-6.5 s bin and its 2 s (1.75 s x 45 +
    0.25 s x 5) / 2 = 40 (80 %) qualify: 6.5 s."""
    t = np.arange(1, 801) * 0.0125  # 10 s
    g = np.full(t.size, 25.0)
    g[(t > 1.5) & (t <= 2.0)] = 45.0
    g[t > 6.0] = 45.0
    g[(t > 7.0) & (t <= 7.25)] = 5.0
    tr = _synthetic(g)
    assert metrics.time_to_share(tr, 0.0) == 6.5
    assert metrics.time_to_share(tr, 0.0, hold_s=0.5) == 2.0  # without the hold the spike would count
    with pytest.raises(ValueError, match="hold_s >= bin_s"):
        metrics.time_to_share(tr, 0.0, hold_s=0.25)


def test_a_dark_bin_reaches_no_share():
    """A trace link dark from 1 s to 2 s (whole 0.5 s bins with zero capacity) and 45 of 50 Mbit/s
    elsewhere: the dark bins are skipped, not divided by zero; from a start at 0 s the first bin
    (0, 0.5] qualifies (0.5 s), from a start at 1 s the first lit bin (2, 2.5] does (1.5 s)."""
    t = np.arange(1, 401) * 0.0125  # 5 s
    g = np.full(t.size, 45.0)
    dark = (t > 1.0) & (t <= 2.0)
    g[dark] = 0.0
    tr = _synthetic(g)
    tr = dataclasses.replace(tr, capacity=np.where(dark, 0.0, tr.capacity))
    assert np.isnan(metrics._share(tr, tr.acked[:, 0], (1.0, 1.5)))
    assert metrics.time_to_share(tr, 1.0, hold_s=0.5) == 1.5
    assert metrics.time_to_share(tr, 0.0, hold_s=0.5) == 0.5


def test_emulated_step_recovery_by_hand():
    """An emulated run's ``step_ramp_s`` (``jaxcc.emulation.results.step_recovery``) in the
    simulator's bins: a 10 Mbit/s link dark from 2 s to 4 s (tbf's floor), one flow whose
    per-MI log (100 ms MIs) carries 9.5 Mbit/s, nothing in the dark, 4 Mbit/s for the first
    second after the return, then 9.5 again.  80 % of 10 is first met and held from 5.0 s: the
    bin (5.0, 5.5] ends 1.5 s after the return."""
    from jaxcc.emulation import results as emu_results

    sched = [(0.0, 10.0), (2.0, 0.01), (4.0, 10.0)]
    series = []
    for k in range(1, 81):  # MIs ending at 0.1 .. 8.0 s
        t = k * 0.1
        series.append((t, 0.0 if 2.0 < t <= 4.0 else 4.0 if 4.0 < t <= 5.0 else 9.5))
    flows = [{"flow": 0, "start_s": 0.0, "stop_s": 8.0, "series": series}]
    out = emu_results.step_recovery(flows, sched, [(0.0, 10.0), (2.0, 0.01), (4.0, 10.0)], 8.0)
    assert out["step_up_at_s"] == [4.0]
    assert out["step_ramp_s"] == [pytest.approx(1.5)]
    # A flow without a per-MI log: no figure rather than a wrong one.
    assert emu_results.step_recovery([{"flow": 0, "start_s": 0.0, "stop_s": 8.0}], sched, sched, 8.0)[
        "step_ramp_s"] == [None]
