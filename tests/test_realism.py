"""Hand-computed checks of the realism effects (``jaxcc.sim.realism``): cross traffic, jitter,
ACK aggregation and RTT measurement noise, their scenario fields, their training distributions
in the environments, and that with every effect off the model is bit-identical to none.

The links are small and the senders constant-rate (``fixed:MBPS``), so every expected number
follows from the link by hand: a 10 Mbit/s link serves 1.25e6 B/s, a 40 ms RTT at 8 ticks per
RTT makes a 5 ms tick, one MSS (1500 B) of serialisation is 1.2 ms.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc import envs, scenarios, senders
from jaxcc.evaluation import metrics
from jaxcc.envs import base
from jaxcc.sim import core, links, realism, runner

C = 1.25e6  # 10 Mbit/s in B/s
RTT = 0.04
DT = RTT / 8
SER = 1500 / C  # one MSS of serialisation: the queueing delay of an otherwise empty queue


def _scenario(link: dict, flows: list[dict], duration: float = 20.0, name: str = "t") -> scenarios.Scenario:
    return scenarios.parse_scenario({"name": name, "duration_s": duration, "link": link, "flows": flows})


def _run(scs, seed: int = 0):
    """Simulate scenarios (``runner.build_batches``); returns [(final state, trajectory, Trace)]
    in the order given (one triple for one scenario)."""
    scs = scs if isinstance(scs, list) else [scs]
    items = [runner.Item(sc, seed) for sc in scs]
    found = {}
    for b in runner.build_batches(items, resolve=senders.resolve):
        sim, traj, rates = runner.run_batch(b)
        for i, it in enumerate(b.items):
            pick = lambda x: np.asarray(x)[i]  # noqa: E731
            found[id(it)] = (jax.tree.map(pick, sim), jax.tree.map(pick, traj), metrics.from_batch(traj, rates, b, i))
    out = [found[id(it)] for it in items]
    return out if len(out) > 1 else out[0]


def _bits(x) -> np.ndarray:
    x = np.ascontiguousarray(np.asarray(x))
    return x.view(np.uint8) if x.dtype != bool else x


def _assert_identical(traj_a, traj_b, skip=()):
    for k, a in traj_a._asdict().items():
        if k in skip:
            continue
        b = getattr(traj_b, k)
        assert np.shape(a) == np.shape(b) and np.array_equal(_bits(a), _bits(b)), f"TickOut.{k} differs"


FLOW6 = [{"rtt_ms": 40, "controller": "fixed:6"}]
FLOW2 = [{"rtt_ms": 40, "controller": "fixed:2"}]
BUF = 150_000.0


# ----------------------------------------------------------------------------- cross traffic


def test_cross_traffic_overload_hand_computed():
    """10 Mbit/s link, a fixed 6 Mbit/s flow and 6 Mbit/s of cross traffic: 12 in, 10 out.

    The 150 KB buffer fills at the 2 Mbit/s excess in 150e3 / 250e3 = 0.6 s; from then on the
    2 Mbit/s of drops are shared in proportion to arrivals, 50/50: each stream keeps 5 Mbit/s,
    the flow loses 1/6 of what it sends, the queue stays full and every byte waits buffer/C =
    120 ms (owd = 120 + 20 ms).  Cross bytes admitted over 20 s: 6 Mbit/s · 0.6 s + 5 Mbit/s ·
    19.4 s = 100.6 Mbit = 12.575e6 B, of 15e6 B offered.
    """
    sim, traj, tr = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "cross_traffic": [[0, 6]]}, FLOW6))
    m = metrics.evaluate_trace(tr, window=(10.0, 20.0))
    np.testing.assert_allclose(m["throughput_mbps"], 5.0, rtol=1e-3)
    np.testing.assert_allclose(m["cross_mbps"], 5.0, rtol=1e-3)
    np.testing.assert_allclose(m["loss"], 1.0 / 6.0, rtol=1e-3)
    np.testing.assert_allclose(m["p95_qdelay_ms"], BUF / C * 1e3, rtol=1e-4)
    np.testing.assert_allclose(m["p95_owd_ms"], BUF / C * 1e3 + 20.0, rtol=1e-4)
    np.testing.assert_allclose(tr.queue[tr.time > 1.0], BUF, rtol=1e-6)
    # The first drop: when the queue reaches the buffer, 0.6 s in.
    dropped = tr.sent[:, 0] - tr.admitted[:, 0]
    first = tr.time[np.argmax(dropped > 1e-3)]
    assert 0.6 - DT <= first <= 0.6 + DT, first
    # Totals: offered, admitted, and the flow's drops equal the cross traffic's (50/50).
    st = sim.realism
    np.testing.assert_allclose(float(st.cross_offered), 6 * 125_000 * 20, rtol=1e-4)
    np.testing.assert_allclose(float(st.cross_admitted), 12.575e6, rtol=1e-3)
    np.testing.assert_allclose(float(np.sum(dropped)), float(st.cross_offered - st.cross_admitted), rtol=1e-3)
    np.testing.assert_allclose(float(np.sum(tr.cross)), float(st.cross_admitted), rtol=1e-4)
    # Link conservation still holds with the cross bytes: admitted − served = queue.
    np.testing.assert_allclose(float(sim.admitted_total - sim.served_total), float(sim.queue), rtol=1e-3)
    # Per flow: sent = acked + lost + in flight (float32 counters summed over 4000 ticks).
    np.testing.assert_allclose(sim.sent_total, sim.acked_total + sim.lost_total + sim.inflight, rtol=1e-4)


def test_cross_traffic_schedule_and_results_field():
    """Cross traffic 0 → 4 Mbit/s at 10 s next to a fixed 5 Mbit/s flow on 10 Mbit/s: no
    overload (9 < 10), so nothing is dropped; the queue holds one packet's worth of delay; the
    results' cross_mbps is the mean carried, 4 · 10/20 = 2 Mbit/s, and the flow keeps 5."""
    from jaxcc.evaluation import runs as evaluation_runs

    sc = _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "cross_traffic": [[0, 0], [10, 4]]},
                   [{"rtt_ms": 40, "controller": "fixed:5"}])
    rep = evaluation_runs.run_evaluation([sc], evaluation_runs.controller_entries(None), progress=False, keep_series=False)
    rec = rep["results"][0]
    np.testing.assert_allclose(rec["cross_mbps"], 2.0, rtol=1e-3)
    # Goodput by ACK time: the first ACK comes one RTT + one MSS of serialisation in.
    np.testing.assert_allclose(rec["throughput_mbps"], 5.0 * (20.0 - RTT - SER) / 20.0, rtol=1e-3)
    assert rec["loss"] == 0.0
    plain = evaluation_runs.run_evaluation([_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF},
                                               [{"rtt_ms": 40, "controller": "fixed:5"}])],
                                    evaluation_runs.controller_entries(None), progress=False, keep_series=False)
    assert "cross_mbps" not in plain["results"][0]  # records without cross traffic are unchanged


# ----------------------------------------------------------------------------- off = none


@pytest.mark.parametrize("controller", ["bbr", "cubic"])
def test_all_effects_off_is_bit_identical(controller):
    """A spec whose realism fields are all 0 gives a link without realism, which runs bit for
    bit like a spec without them — alone, and evaluated together with a link with realism (the
    runner batches links with and without realism apart)."""
    link = {"bandwidth_mbps": 20, "buffer_bytes": 100_000, "loss": 0.001}
    flows = [{"rtt_ms": 40, "controller": controller}, {"rtt_ms": 60, "start_s": 2, "controller": controller}]
    plain = _scenario(link, flows, duration=6.0)
    off = _scenario({**link, "jitter_ms": 0, "ack_agg_ms": 0, "rtt_noise_ms": 0, "cross_traffic": [[0, 0], [2, 0]]},
                    flows, duration=6.0)
    assert plain.link.realism(seed=0) is None and off.link.realism(seed=0) is None
    on = _scenario({**link, "jitter_ms": 3, "ack_agg_ms": 10, "rtt_noise_ms": 1, "cross_traffic": [[0, 5], [3, 1]]},
                   flows, duration=6.0)
    s0, t0, _ = _run(plain)
    s1, t1, _ = _run(off)
    (s2, t2, _), (_, t_on, _) = _run([plain, on])
    _assert_identical(t0, t1)
    _assert_identical(t0, t2)
    assert np.all(np.asarray(t0.cross) == 0.0)
    assert not np.array_equal(_bits(t0.owd), _bits(t_on.owd))  # the effects do change something
    for a, b in ((s0, s1), (s0, s2)):
        for k in ("ring", "inflight", "sent_total", "acked_total", "queue"):
            assert np.array_equal(_bits(getattr(a, k)), _bits(getattr(b, k))), k


def test_all_off_realism_object_matches_none_to_rounding():
    """A ``Realism`` with every effect 0 (what ``stack_links`` gives the realism-free links of a
    mixed batch) does the same arithmetic as none in a differently fused program, so a
    constant-rate sender's run agrees to float32 rounding (XLA may contract multiply-adds
    differently; bit-identity is promised, and tested above, for links without realism)."""
    sc = _scenario({"bandwidth_mbps": 20, "buffer_bytes": 100_000, "loss": 0.01},
                   [{"rtt_ms": 40, "controller": "fixed:25"}, {"rtt_ms": 60, "start_s": 1, "controller": "fixed:5"}],
                   duration=5.0)
    b = runner.build_batches([runner.Item(sc, 0)], resolve=senders.resolve)[0]
    _, t0, _ = runner.run_batch(b)
    b.params = links.stack_links([jax.tree.map(lambda x: np.asarray(x)[0], b.params)]).replace(
        realism=jax.tree.map(lambda x: np.asarray(x)[None], links.realism_params()))
    _, t1, _ = runner.run_batch(b)
    for k in ("sent", "admitted", "owd", "qdelay", "queue", "served"):
        np.testing.assert_allclose(np.asarray(getattr(t1, k)), np.asarray(getattr(t0, k)), rtol=1e-5, atol=1e-3,
                                   err_msg=k)
    # Feedback: an ulp in a split fraction can move a fraction of a byte between adjacent ticks.
    for k in ("acked", "lost", "rtt_wsum"):
        np.testing.assert_allclose(np.cumsum(np.asarray(getattr(t1, k)), axis=1),
                                   np.cumsum(np.asarray(getattr(t0, k)), axis=1), rtol=1e-5, atol=1.0, err_msg=k)


def test_named_scenarios_carry_no_realism():
    """Except pareto/jitter4, which carries its ± 5 ms jitter (jitter_ms 10) and nothing else."""
    for name in scenarios.list_scenarios():
        sc = scenarios.get_scenario(name)
        if name == "pareto/jitter4":
            assert [k for k in scenarios.REALISM_FIELDS if k in sc.to_dict()["link"]] == ["jitter_ms"]
            assert sc.link.jitter_ms == 10.0
            continue
        assert sc.link.realism(seed=0) is None, name
        assert not any(k in sc.to_dict()["link"] for k in scenarios.REALISM_FIELDS), name


# ----------------------------------------------------------------------------- jitter


def _extra_delay(tr):
    """Per tick with admitted bytes: the one-way delay beyond propagation and queueing."""
    a = tr.admitted[:, 0] > 0
    return a, tr.owd[a, 0] - 0.5 * RTT - tr.qdelay[a]


def test_jitter_below_a_tick_is_uniform():
    """jitter_ms = 2 on a 5 ms tick: the FIFO rule never binds (consecutive departures are a
    tick apart), so each tick's extra one-way delay is U[0, 2 ms]: mean 1 ms (standard error
    2/sqrt(12)/sqrt(n)), within [0, 2]; queueing delay is unchanged, and the RTT samples grow by
    the same mean."""
    J = 0.002
    base_sc = _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF}, FLOW2)
    _, t_plain, tr_plain = _run(base_sc)
    _, traj, tr = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "jitter_ms": J * 1e3}, FLOW2))
    a, extra = _extra_delay(tr)
    n = extra.size
    assert n > 3900
    assert extra.min() >= -1e-6 and extra.max() <= J + 1e-6
    se = J / np.sqrt(12) / np.sqrt(n)
    assert abs(extra.mean() - J / 2) < 4 * se + 1e-6, (extra.mean(), se)
    np.testing.assert_array_equal(tr.qdelay, tr_plain.qdelay)  # jitter is not queueing
    np.testing.assert_allclose(tr.qdelay[a], SER, atol=2e-6)  # float32 time at 20 s: ulp 1.9e-6
    acked = np.asarray(traj.acked[:, 0])
    r = np.asarray(traj.rtt_wsum[:, 0])[acked > 0] / acked[acked > 0]
    np.testing.assert_allclose(r.mean(), RTT + SER + J / 2, atol=4 * se + 2e-5)


def test_jitter_is_fifo_deterministic_and_conserves():
    """jitter_ms = 30 (six ticks): bytes leave the jitter element in order (departure times
    never decrease), the extra delay stays within [0, 30 ms] and its mean exceeds the
    uniform's 15 ms (a FIFO element's delay is a running maximum); the same seed gives the
    same run, another seed another; conservation holds; the ring was sized for it."""
    J = 0.03
    sc = _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "jitter_ms": J * 1e3}, FLOW2)
    sim, traj, tr = _run(sc, seed=0)
    a, extra = _extra_delay(tr)
    dep = tr.time[a] - 0.5 * DT + tr.qdelay[a] + extra
    assert np.all(np.diff(dep) >= -1e-5)
    assert extra.min() >= -1e-6 and extra.max() <= J + 1e-5
    assert extra.mean() > J / 2 + 1e-3
    _, traj_same, _ = _run(sc, seed=0)
    _, traj_other, _ = _run(sc, seed=1)
    assert np.array_equal(_bits(traj.owd), _bits(traj_same.owd))
    assert not np.array_equal(_bits(traj.owd), _bits(traj_other.owd))
    np.testing.assert_allclose(sim.sent_total, sim.acked_total + sim.lost_total + sim.inflight, rtol=1e-4)
    assert int(sim.clamped) == 0


@pytest.mark.parametrize("controller", ["cubic", "bbr"])
def test_all_effects_with_closed_loop_senders_conserve(controller):
    """Every effect at once under two closed-loop flows with different RTTs and a capacity step:
    per flow sent = acked + lost + in flight, per link admitted − served = queue (cross bytes
    included), nothing clamped, the cross traffic's offered = admitted + dropped (its drops are
    never negative), and the flows still get most of what the cross traffic leaves."""
    sc = _scenario({"schedule": [[0, 20], [4, 8], [8, 20]], "buffer_bytes": 120_000, "loss": 0.002,
                    "jitter_ms": 12, "ack_agg_ms": 16, "rtt_noise_ms": 2, "cross_traffic": [[0, 4], [6, 0], [9, 6]]},
                   [{"rtt_ms": 30, "controller": controller},
                    {"rtt_ms": 70, "start_s": 1, "controller": controller}], duration=12.0)
    sim, traj, tr = _run(sc)
    np.testing.assert_allclose(sim.sent_total, sim.acked_total + sim.lost_total + sim.inflight, rtol=1e-4, atol=64)
    # float32 running totals of ~3e7 bytes over 2400 ticks: compare at their rounding scale.
    np.testing.assert_allclose(float(sim.admitted_total - sim.served_total), float(sim.queue),
                               atol=5e-5 * float(sim.admitted_total))
    assert int(sim.clamped) == 0
    st = sim.realism
    assert float(st.cross_admitted) <= float(st.cross_offered) * (1 + 1e-6)
    np.testing.assert_allclose(float(st.cross_offered), (4 * 6 + 6 * 3) * 125_000, rtol=1e-3)
    assert np.all(np.asarray(traj.cross) >= 0)
    m = metrics.evaluate_trace(tr)
    cap = (20 * 8 + 8 * 4) / 12  # mean capacity, Mbit/s
    assert m["throughput_mbps"] + m["cross_mbps"] > 0.7 * cap, m


def test_large_jitter_and_aggregation_are_not_clamped():
    sc = _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "jitter_ms": 400, "ack_agg_ms": 300}, FLOW2,
                   duration=5.0)
    sim, _, _ = _run(sc)
    assert int(sim.clamped) == 0


# ----------------------------------------------------------------------------- ACK aggregation


def test_ack_aggregation_lumps_feedback_hand_computed():
    """ack_agg_ms = 20 on a 5 ms tick: ACKs are released every 20 ms, at tick starts that are
    multiples of 20 ms, i.e. in every 4th tick, each lump 4 ticks of a 2 Mbit/s flow (4 · 5 ms ·
    250e3 B/s = 5000 B); a lump's bytes were held P/2 = 10 ms on average, so its RTT sample is
    40 + 1.2 + 10 = 51.2 ms.  Data is not delayed: owd and qdelay are unchanged."""
    _, t_plain, _ = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF}, FLOW2))
    _, traj, _ = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "ack_agg_ms": 20}, FLOW2))
    acked = np.asarray(traj.acked[:, 0])
    ticks = np.nonzero(acked > 0)[0]
    assert np.all(ticks % 4 == 0), ticks[:10]
    steady = ticks[(ticks > 40) & (ticks < len(acked) - 40)]
    np.testing.assert_allclose(acked[steady], 4 * DT * 250e3, rtol=1e-3)
    r = np.asarray(traj.rtt_wsum[:, 0])[steady] / acked[steady]
    np.testing.assert_allclose(r, RTT + SER + 0.010, rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(traj.owd), np.asarray(t_plain.owd))
    np.testing.assert_array_equal(np.asarray(traj.qdelay), np.asarray(t_plain.qdelay))
    np.testing.assert_allclose(acked.sum(), np.asarray(t_plain.acked[:, 0]).sum(), rtol=1e-3)


def test_ack_aggregation_below_a_tick_shifts_by_half_a_period():
    """ack_agg_ms = 2 < one 5 ms tick: below the model's resolution; ACKs keep arriving every
    tick, 1 ms (P/2) later on average, so the RTT sample is 41.2 + 1 = 42.2 ms."""
    _, traj, _ = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "ack_agg_ms": 2}, FLOW2))
    acked = np.asarray(traj.acked[:, 0])
    steady = np.arange(40, len(acked) - 40)
    assert np.all(acked[steady] > 0)
    r = np.asarray(traj.rtt_wsum[:, 0])[steady] / acked[steady]
    np.testing.assert_allclose(r, RTT + SER + 0.001, rtol=1e-4)


def test_feedback_slots_split_by_hand():
    """One tick by hand: t0 = 0.1 s, dt = 5 ms, P = 20 ms, ACKs arriving (unheld) over one
    tick.  Flow 0: over [141, 146] ms, all before the release at 160 ms: one lump credited
    round(60/5) = 12 ticks ahead, each byte held 160 − a, sample 160 − 143.5 + 41 = 57.5 ms.
    Flow 1: over [157, 162] ms, across the release: 3/5 at 160 ms (tick 12), 2/5 at 180 ms
    (tick 16); samples 160 − 158.5 + 57 = 58.5 ms and 180 − 161 + 57 = 76 ms."""
    r = jax.tree.map(jnp.asarray, links.realism_params(ack_agg_s=0.02))
    t0, dt = jnp.float32(0.1), jnp.float32(0.005)
    first = jnp.array([0.041, 0.057], jnp.float32)  # first unheld arrival, s after t0
    offs, over, cum, rtt = realism.feedback_slots(r, t0, dt, first / dt + 0.5, jnp.float32(1.0), 64,
                                                  core.FEEDBACK_SLOTS)
    np.testing.assert_array_equal(np.asarray(offs)[:, :2], [[12, 16], [12, 16]])
    np.testing.assert_allclose(np.asarray(cum)[:, :2], [[1.0, 1.0], [0.6, 1.0]], atol=1e-4)
    np.testing.assert_allclose(np.asarray(rtt)[:, 0], [0.0575, 0.0585], atol=1e-5)
    np.testing.assert_allclose(float(rtt[1, 1]), 0.076, atol=1e-5)
    assert not np.any(np.asarray(over))


# ----------------------------------------------------------------------------- RTT noise


def test_rtt_noise_changes_only_the_observation():
    """rtt_noise_ms = 5: the RTT samples the sender sees scatter around the true 41.2 ms with
    the standard deviation of a normal truncated at ±3σ (0.98658·5 ms), never beyond ±15 ms;
    everything physical (sending, queue, delays, what is acked when) is bit-identical."""
    sig = 0.005
    _, t_plain, _ = _run(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF}, FLOW2))
    sc = _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "rtt_noise_ms": sig * 1e3}, FLOW2)
    _, traj, _ = _run(sc)
    _assert_identical(t_plain, traj, skip=("rtt_wsum",))
    acked = np.asarray(traj.acked[:, 0])
    has = acked > 0
    noise = np.asarray(traj.rtt_wsum[:, 0])[has] / acked[has] - np.asarray(t_plain.rtt_wsum[:, 0])[has] / acked[has]
    n = noise.size
    assert n > 3900
    std = 0.98658 * sig
    assert abs(noise.mean()) < 4 * std / np.sqrt(n)
    np.testing.assert_allclose(noise.std(), std, rtol=0.05)
    assert np.abs(noise).max() <= 3 * sig + 1e-5
    _, again, _ = _run(sc)
    assert np.array_equal(_bits(traj.rtt_wsum), _bits(again.rtt_wsum))


# ----------------------------------------------------------------------------- spec fields


@pytest.mark.parametrize("field,value,msg", [
    ("jitter_ms", -1, "scenario.link.jitter_ms: must be in [0, 1000], got -1"),
    ("ack_agg_ms", 1001, "scenario.link.ack_agg_ms: must be in [0, 1000], got 1001"),
    ("rtt_noise_ms", True, "scenario.link.rtt_noise_ms: expected a finite number, got True"),
    ("cross_traffic", [[1, 5]], "scenario.link.cross_traffic[0].t_s: the cross traffic must start at 0, got 1.0"),
    ("cross_traffic", [[0, 5], [0, 3]], "scenario.link.cross_traffic[1].t_s: times must increase (0.0 after 0.0)"),
    ("cross_traffic", [[0, -2]], "scenario.link.cross_traffic[0].mbps: must be in [0, 100000], got -2"),
    ("cross_traffic", [[0, 5, 1]], "scenario.link.cross_traffic[0]: expected [t_s, mbps], got [0, 5, 1]"),
    ("cross_traffic", [], "scenario.link.cross_traffic: expected a non-empty list of [t_s, mbps] pairs"),
    ("cross_traffic", [[i, 1] for i in range(257)], "scenario.link.cross_traffic: at most 256 [t_s, mbps] pairs, got 257"),
])
def test_spec_rejects_bad_realism(field, value, msg):
    with pytest.raises(ValueError) as e:
        _scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, field: value}, FLOW2)
    assert str(e.value) == msg  # one line naming the field and the allowed range


def test_spec_round_trip_and_randomness():
    from jaxcc.evaluation import runs as evaluation_runs

    link = {"bandwidth_mbps": 10, "buffer_bytes": BUF, "loss": 0.0, "jitter_ms": 4.0, "ack_agg_ms": 8.0, "rtt_noise_ms": 1.0,
            "cross_traffic": [[0.0, 3.0], [5.0, 0.0]]}
    sc = _scenario(link, FLOW2)
    assert sc.to_dict()["link"] == link
    assert scenarios.parse_scenario(sc.to_dict()) == sc
    assert evaluation_runs._is_random(sc)  # per-tick draws: seeds matter
    assert not evaluation_runs._is_random(_scenario({"bandwidth_mbps": 10, "buffer_bytes": BUF, "ack_agg_ms": 8.0,
                                              "cross_traffic": [[0, 3]]}, FLOW2))


def test_emulation_refuses_realism():
    from jaxcc.emulation import spec as emu_spec
    from jaxcc.emulation.host import EmulationError

    for field, value in (("jitter_ms", 5), ("ack_agg_ms", 5), ("rtt_noise_ms", 1), ("cross_traffic", [[0, 5]])):
        d = {"name": "t", "duration_s": 10, "link": {"bandwidth_mbps": 10, "buffer_bytes": BUF, field: value},
             "flows": FLOW2}
        with pytest.raises(EmulationError) as e:
            emu_spec.as_scenario(d)
        assert str(e.value).startswith(f"t.link.{field}: not emulated yet") and "\n" not in str(e.value)
    emu_spec.as_scenario({"name": "t", "duration_s": 10, "link": {"bandwidth_mbps": 10, "buffer_bytes": BUF},
                          "flows": FLOW2})


# ----------------------------------------------------------------------------- environments

ON = {"p_each": 1.0, "jitter_ms_max": 20.0, "ack_agg_ms_max": 20.0, "rtt_noise_ms_max": 5.0, "cross_frac_max": 0.5,
      "cross_every_s": 2.0, "cross_segments": 3}


# The fast tier holds the multi-flow continuous environment and a discrete-action one, MOCC (every
# environment reaches the realism through ``jaxcc.envs.base``); make test-full holds every one
# (each compile costs 5-8 s on two cores).
_REALISM_FAST = ("pareto-fairness", "mocc")
assert set(_REALISM_FAST) <= set(envs.ENV_NAMES)


@pytest.mark.parametrize("name", [n if n in _REALISM_FAST else pytest.param(n, marks=pytest.mark.full)
                                  for n in envs.ENV_NAMES])
def test_envs_off_by_default_and_on_when_asked(name):
    env0, p0 = envs.make_env(name)
    assert env0.config.realism is None
    env_off, _ = envs.make_env(name, realism=base.realism_config())
    assert env_off.config == env0.config  # all off: exactly the environment without realism
    env, p = envs.make_env(name, realism=ON)
    assert env.config.realism == base.RealismRanges(**ON)
    assert env.config.ring_len > env0.config.ring_len
    key = jax.random.PRNGKey(7)
    _, s0 = jax.jit(env0.reset)(key, p0)  # one program each, not op by op
    _, s = jax.jit(env.reset)(key, p)
    assert s0.link.realism is None and s0.sim.realism is None
    # The paper's own draws are unchanged; the realism draws are within their ranges.
    for k in ("dt", "cap_t", "cap_bps", "buffer_bytes", "loss", "rtt", "start", "stop"):
        np.testing.assert_array_equal(getattr(s.link, k), getattr(s0.link, k), err_msg=k)
    r = s.link.realism
    assert 0 < float(r.jitter_s) <= 0.020 and 0 < float(r.ack_agg_s) <= 0.020 and 0 < float(r.rtt_noise_s) <= 0.005
    np.testing.assert_allclose(r.cross_t, [0.0, 2.0, 4.0])
    assert np.all(r.cross_bps >= 0) and np.all(r.cross_bps <= 0.5 * s0.link.cap_bps[0] * (1 + 1e-6))
    spec = env.action_spec()
    a = jnp.zeros((env.num_agents,), jnp.int32 if spec["kind"] == "discrete" else jnp.float32)
    step = jax.jit(env.step)
    for i in range(3):
        _, s, rew, *_ = step(jax.random.PRNGKey(i), s, a, p)
    assert np.all(np.isfinite(np.asarray(rew)))
    assert int(s.sim.clamped) == 0


def test_env_realism_p_each_and_validation():
    env, p = envs.make_env("pareto", realism={**ON, "p_each": 0.5})
    keys = jax.random.split(jax.random.PRNGKey(0), 400)
    _, st = jax.jit(jax.vmap(lambda k: env.reset(k, p)))(keys)
    on = np.asarray(st.link.realism.jitter_s) > 0
    assert 0.4 < on.mean() < 0.6  # each effect on in half the episodes (binomial sd 0.025)
    with pytest.raises(ValueError, match=r"^realism.jitter_ms_max: must be in \[0, 1000\], got -1$"):
        envs.make_env("pareto", realism={"jitter_ms_max": -1})
    with pytest.raises(ValueError, match=r"^realism: unknown field\(s\) \['jitter'\]"):
        envs.make_env("pareto", realism={"jitter": 5})


def test_configs_realism_on_in_the_defaults_off_in_the_papers_setup():
    from jaxcc.training.configs import load_config

    for name in ("pareto_paper", "aurora_paper", "eagle_paper"):
        c = load_config(name)
        assert base.as_realism(c.env.overrides.realism) is None, name
        assert set(c.env.overrides.realism) == {f.name for f in dataclasses.fields(base.RealismRanges)}
    # Robust training: the default Pareto trains with jitter, ACK aggregation, RTT noise and
    # cross traffic.
    for name in ("pareto_staged", "pareto_smoke"):
        rr = base.as_realism(load_config(name).env.overrides.realism)
        assert rr is not None and (rr.jitter_ms_max, rr.ack_agg_ms_max, rr.rtt_noise_ms_max, rr.cross_frac_max) == \
            (10.0, 10.0, 2.0, 0.3), name
    # Robust training: the default Aurora and Eagle commands train with moderate realism (their
    # configs say why these maxima).
    for name, segs in (("aurora", 8), ("eagle", 12)):
        rr = base.as_realism(load_config(name).env.overrides.realism)
        assert rr == base.RealismRanges(p_each=0.5, jitter_ms_max=5.0, ack_agg_ms_max=5.0, rtt_noise_ms_max=2.0,
                                        cross_frac_max=0.3, cross_every_s=5.0, cross_segments=segs), name
    c = load_config("pareto_realism")
    rr = base.as_realism(c.env.overrides.realism)
    assert rr is not None and rr.jitter_ms_max == 20.0 and rr.cross_segments == 3
    env, _ = envs.make_env("pareto", **dict(c.env.overrides))
    assert env.config.realism == rr
