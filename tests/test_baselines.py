"""BBR and CUBIC in the fluid simulator: state machines, the formulas, and sane numbers.

Fast tests use short custom links; the ``slow`` ones run the Pareto suite (§V test set).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcc.evaluation import metrics
from jaxcc import senders
from jaxcc.baselines import bbr, cubic
from jaxcc.sim import controller as sim_controller
from jaxcc.scenarios import get_scenario, parse_scenario
from jaxcc.sim import core, runner
from jaxcc.units import MBPS, MSS



def _scenario(name, mbps, rtt_ms, buffer_bytes, duration, controller, n=1, gap=0.0, loss=0.0):
    return parse_scenario({
        "name": name, "duration_s": duration,
        "link": {"bandwidth_mbps": mbps, "buffer_bytes": buffer_bytes, "loss": loss},
        "flows": [{"rtt_ms": rtt_ms, "start_s": i * gap, "controller": controller} for i in range(n)]})


def _scan(controller_name: str, sc):
    """Run one single-controller link and return (TickOut, controller states, actions) per tick."""
    b = runner.build_batches([runner.Item(sc)], resolve=senders.resolve)[0]
    p = jax.tree.map(lambda x: jnp.asarray(x[0]), b.params)
    ctrl, cp = senders.resolve(controller_name)
    cps = jax.tree.map(lambda x: jnp.asarray(np.broadcast_to(x, (p.rtt.shape[0],) + x.shape)), cp)
    init = jax.vmap(ctrl.init)(cps)

    def body(carry, _):
        sim, cs = carry
        active = core.flow_active(p, sim.tick.astype(p.dt.dtype) * p.dt)
        cs = runner._where_flow(active, cs, init)
        act = jax.vmap(ctrl.act)(cs, cps)
        sim, out = core.step(p, sim, act.rate, act.cwnd)
        cs = jax.vmap(ctrl.update)(cs, sim_controller.tick_obs(out, p.dt), cps)
        return (sim, cs), (out, cs, act)

    run = jax.jit(lambda: jax.lax.scan(body, (core.init_state(p, b.ring_len), init), None, length=b.num_ticks)[1])
    return jax.device_get(run())


# ----------------------------------------------------------------------------- registry & formulas


def test_registry_exports_both():
    c, cp = senders.resolve("bbr")
    assert c is bbr.BBR and c.name == "bbr" and jax.tree.all(jax.tree.map(np.array_equal, cp, sim_controller.ControllerParams.zeros()))
    c, cp = senders.resolve("cubic")
    assert c is cubic.CUBIC and c.name == "cubic"


def test_bbr_constants_match_tcp_bbr_c():
    assert bbr.HIGH_GAIN == pytest.approx(2.885, abs=1e-3)
    assert bbr.DRAIN_GAIN == pytest.approx(1 / 2.885, abs=1e-3)
    assert bbr.PACING_GAIN_CYCLE == (1.25, 0.75, 1, 1, 1, 1, 1, 1)
    assert (bbr.CWND_GAIN, bbr.BW_WINDOW_ROUNDS, bbr.MIN_RTT_WINDOW_S, bbr.PROBE_RTT_DURATION_S) == (2, 10, 10, 0.2)
    assert (bbr.FULL_BW_THRESH, bbr.FULL_BW_COUNT, bbr.CWND_MIN_TARGET) == (1.25, 3, 4 * MSS)
    # The first PROBE_BW phase is never the draining one (bbr_reset_probe_bw_mode).
    phases = {int(bbr._random_cycle_start(jnp.float32(t), jnp.float32(1e6), jnp.float32(0))) for t in np.linspace(0.1, 9, 200)}
    assert phases == {0, 2, 3, 4, 5, 6, 7}


def test_cubic_formulas():
    w_max, beta, c = 100 * MSS, cubic.BETA_CUBIC, cubic.C_CUBIC
    k = float(cubic.cubic_k(jnp.float32(w_max), jnp.float32(beta * w_max)))
    assert k == pytest.approx(math.cbrt(100 * (1 - beta) / c), rel=1e-5)  # RFC 8312: K = ∛(W_max(1−β)/C)
    assert float(cubic.cubic_window(jnp.float32(k), k, w_max)) == pytest.approx(w_max)
    assert float(cubic.cubic_window(jnp.float32(0.0), k, w_max)) == pytest.approx(beta * w_max, rel=1e-4)
    assert float(cubic.cubic_window(jnp.float32(k + 1.0), k, w_max)) == pytest.approx(w_max + c * MSS, rel=1e-5)
    assert cubic.ALPHA_CUBIC == pytest.approx(3 * 0.3 / 1.7)
    assert (cubic.C_CUBIC, cubic.BETA_CUBIC) == (0.4, 0.7)


def test_controllers_jit_and_vmap():
    obs = sim_controller.TickObs(now=jnp.full((3,), 0.1), dt=jnp.full((3,), 0.005), active=jnp.ones((3,), bool),
                       acked=jnp.full((3,), 3000.0), lost=jnp.zeros((3,)), rtt_wsum=jnp.full((3,), 3000.0 * 0.04),
                       sent=jnp.full((3,), 1500.0), inflight=jnp.full((3,), 9000.0), capacity=jnp.full((3,), 1.5e6),
                       n_active=jnp.full((3,), 1))
    cps = jax.tree.map(jnp.asarray, sim_controller.ControllerParams.zeros((3,)))
    for c in (bbr.BBR, cubic.CUBIC):
        s = jax.vmap(c.init)(cps)
        s = jax.jit(jax.vmap(c.update))(s, obs, cps)
        a = jax.jit(jax.vmap(c.act))(s, cps)
        assert a.rate.shape == (3,) and a.cwnd.shape == (3,)
        assert bool(jnp.all(a.rate > 0)) and bool(jnp.all(a.cwnd >= 2 * MSS))


# ----------------------------------------------------------------------------- state machines


@pytest.fixture(scope="module")
def bbr_run():
    # 12 Mbit/s, 40 ms, buffer = 2 BDP, 12 s: long enough for one PROBE_RTT.
    sc = _scenario("bbr12", 12, 40, 120_000, 12.0, "bbr")
    return _scan("bbr", sc)


def test_bbr_state_machine(bbr_run):
    out, st, act = bbr_run
    t = out.time
    mode = st.mode[:, 0]
    # STARTUP first, then DRAIN, then PROBE_BW, in that order.
    first = {m: int(np.argmax(mode == m)) if np.any(mode == m) else None for m in range(4)}
    assert mode[0] == bbr.STARTUP
    assert first[bbr.DRAIN] is not None and first[bbr.PROBE_BW] is not None
    assert first[bbr.DRAIN] < first[bbr.PROBE_BW]
    assert t[first[bbr.PROBE_BW]] < 2.0  # the pipe is found within a few dozen RTTs
    # PROBE_RTT ~10 s after the min RTT was last refreshed, at 4 packets for >= 200 ms.
    assert first[bbr.PROBE_RTT] is not None
    assert 9.5 < t[first[bbr.PROBE_RTT]] < 11.5
    in_prt = mode == bbr.PROBE_RTT
    assert np.all(act.cwnd[1:, 0][in_prt[:-1]] <= bbr.CWND_MIN_TARGET + 1e-3)
    assert in_prt.sum() * float(out.time[1] - out.time[0]) >= 0.2
    assert mode[-1] == bbr.PROBE_BW
    # Both probing gains are used in PROBE_BW; the model matches the link.
    gains = set(np.round(st.pacing_gain[mode == bbr.PROBE_BW, 0], 3))
    assert {1.25, 0.75, 1.0} <= gains
    btlbw = st.bw_slots[-1, 0].max()
    assert btlbw == pytest.approx(12 * MBPS, rel=0.05)
    assert st.min_rtt[-1, 0] == pytest.approx(0.040, abs=0.0015)
    # cwnd = 2·BDP (plus the small TSO quantization budget) in PROBE_BW.
    steady = (mode == bbr.PROBE_BW) & (t > 3)
    bdp = 12 * MBPS * 0.040
    assert np.median(st.cwnd[steady, 0]) == pytest.approx(2 * bdp, rel=0.15)
    # Pacing = gain · BtlBw (1 % margin).
    i = np.nonzero(steady[:-1])[0][-1]
    assert act.rate[i + 1, 0] == pytest.approx(st.pacing_gain[i, 0] * st.bw_slots[i, 0].max() * 0.99, rel=1e-4)
    # Helpers for the experts.
    last = jax.tree.map(lambda x: x[-1, 0], st)
    assert float(bbr.bbr_rate(last)) == pytest.approx(float(last.pacing_rate))
    assert float(bbr.bbr_btlbw(last)) == pytest.approx(float(btlbw))


@pytest.fixture(scope="module")
def cubic_run():
    sc = _scenario("cubic12", 12, 40, 60_000, 12.0, "cubic")
    return _scan("cubic", sc)


def test_cubic_sawtooth(cubic_run):
    out, st, act = cubic_run
    cw = st.cwnd[:, 0]
    ev = np.nonzero(np.diff(st.loss_events[:, 0]) > 0)[0] + 1
    assert len(ev) >= 3, "CUBIC should see several congestion events in 12 s on a 1-BDP buffer"
    # Each event: cwnd ← β·cwnd and ssthresh set; W_max remembers the window (fast convergence may lower it).
    for i in ev:
        assert cw[i] == pytest.approx(max(0.7 * cw[i - 1], 2 * MSS), rel=1e-4)
        assert st.ssthresh[i, 0] == pytest.approx(cw[i], rel=1e-6)
        assert st.w_max[i, 0] <= cw[i - 1] * (1 + 1e-6)
        assert st.w_max[i, 0] >= cw[i - 1] * 0.85 * (1 - 1e-6)
    # Slow start until the first loss: the window doubles per RTT.
    first = ev[0]
    assert np.isinf(st.ssthresh[first - 1, 0]) or st.ssthresh[first - 1, 0] > 1e20
    # Between events the window grows back towards W_max (concave) and beyond (convex).
    a, b = ev[-2], ev[-1]
    seg = cw[a:b]
    assert np.all(np.diff(seg) >= -1e-3)
    # Window-limited: sending never takes inflight above the window (it may already be above
    # right after a decrease).
    assert np.all(out.inflight[1:, 0] <= np.maximum(cw[:-1], out.inflight[:-1, 0]) + 1.0)


def test_cubic_one_decrease_per_buffer_overflow():
    """A fidelity case: one CUBIC flow alone on 20 Mbit/s, 100 ms, a 0.25-BDP buffer (62.5 KB).

    Each overflow must cost ONE multiplicative decrease.  The bytes sent in the tick of the loss
    notice went out at the old window, so they belong to the recovery it opens; leaving them out
    made their drops (reported just after recovery closed) a second decrease ~1 RTT later
    (16.5 Mbit/s, 69.4 ms p95 before the fix).  Hand bound: after a decrease CUBIC needs
    K = ∛(W_max(1−β)/C) to regrow to W_max ≥ BDP = 166.7 packets, K ≥ ∛(166.7·0.3/0.4) = 5.0 s,
    so two steady-state decreases are never closer than a couple of seconds.  Reference: ns-3.37
    TcpCubic on the same dumbbell, 19.4 Mbit/s and 74.2 ms p95 one-way delay;
    the fidelity targets are 5 % throughput and 15 % delay."""
    sc = _scenario("cubic-quarter-bdp", 20, 100, 0.25 * 20 * MBPS * 0.1, 60.0, "cubic")
    out, st, _ = _scan("cubic", sc)
    t = out.time
    ev = np.nonzero(np.diff(st.loss_events[:, 0]) > 0)[0] + 1
    steady = t[ev][t[ev] > 2.0]
    assert len(steady) >= 3
    k_min = math.cbrt(20 * MBPS * 0.1 / MSS * (1 - cubic.BETA_CUBIC) / cubic.C_CUBIC)
    assert k_min == pytest.approx(5.0, abs=0.01)
    assert np.min(np.diff(steady)) > 0.5 * k_min, np.diff(steady)
    from jaxcc.evaluation import runs
    (r,) = runs.run_evaluation([sc], runs.controller_entries(None), progress=False, keep_series=False)["results"]
    assert r["throughput_mbps"] == pytest.approx(19.4, rel=0.05)
    assert r["p95_owd_ms"] == pytest.approx(74.2, rel=0.15)


# ----------------------------------------------------------------------------- sane numbers


@pytest.fixture(scope="module")
def deep_buffer_runs():
    # 12 Mbit/s, 40 ms, buffer = 4 BDP (240 KB = 160 ms), 15 s; one batch, one compile.
    items = [runner.Item(_scenario("deep", 12, 40, 240_000, 15.0, c), 0, c) for c in ("bbr", "cubic")]
    (b,) = runner.build_batches(items, resolve=senders.resolve)
    sim, traj, rates = runner.run_batch(b)
    out = {}
    for i, it in enumerate(b.items):
        sums = {k: getattr(traj, k)[i].astype(np.float64).sum(0) for k in ("sent", "acked", "lost")}
        sums["inflight"] = traj.inflight[i, -1].astype(np.float64)
        sums["ticks"] = traj.sent.shape[1]
        out[it.label] = (metrics.evaluate_trace(metrics.from_batch(traj, rates, b, i)),
                         jax.tree.map(lambda x: x[i], sim), sums)
    return out


def test_bbr_small_queue_cubic_fills_deep_buffer(deep_buffer_runs):
    full = 240_000 / (12 * MBPS) * 1e3  # ms to drain a full buffer
    mb = deep_buffer_runs["bbr"][0]
    mc = deep_buffer_runs["cubic"][0]
    assert mb["utilization"] >= 0.9
    assert mc["utilization"] >= 0.9
    # BBR's in-flight cap (2 BDP) bounds its queue to about one BDP (40 ms) — far below the buffer.
    assert mb["p95_qdelay_ms"] < 0.35 * full
    # CUBIC is loss-based: it fills the buffer before it backs off.
    assert mc["p95_qdelay_ms"] > 0.8 * full
    assert mc["loss"] > 0 and mb["loss"] < 0.01


def test_conservation_with_baselines(deep_buffer_runs):
    for label, (_, sim, sums) in deep_buffer_runs.items():
        # Per tick, summed in float64: sent = acked + lost + inflight, to rounding.
        np.testing.assert_allclose(sums["sent"], sums["acked"] + sums["lost"] + sums["inflight"], rtol=1e-6, atol=64)
        # The state's cumulative counters are float32 accumulators: each of the T additions may
        # round by half an ulp of the total (2 B at 2e7 B), and a sender that sends the same
        # fraction of a byte every tick (BBR's paced rate) rounds the same way each time.
        bound = sums["ticks"] * np.spacing(np.float32(sums["sent"].max())) / 2 + 64
        np.testing.assert_allclose(sim.sent_total, sim.acked_total + sim.lost_total + sim.inflight, atol=bound)
        np.testing.assert_allclose(sim.sent_total, sums["sent"], atol=bound)


# ----------------------------------------------------------------------------- the Pareto suite (slow)


def _pareto_suite():
    names = ["pareto/fixed50", "pareto/dyn10-20", "pareto/dyn10-30", "pareto/shared2", "pareto/shared3",
             "pareto/shared4", "pareto/shared5"]
    return [get_scenario(n) for n in names]


@pytest.fixture(scope="module")
def pareto_report():
    from jaxcc.evaluation import runs

    return runs.run_evaluation(_pareto_suite(), runs.controller_entries("bbr,cubic"), progress=False)


def _rec(report, scen, ctrl):
    (r,) = [r for r in report["results"] if r["scenario"] == scen and r["controller"] == ctrl]
    return r


def test_pareto_fixed50(pareto_report):
    b, c = _rec(pareto_report, "pareto/fixed50", "bbr"), _rec(pareto_report, "pareto/fixed50", "cubic")
    full_ms = 440_000 / (50 * MBPS) * 1e3  # 70.4 ms
    assert b["utilization"] >= 0.9 and c["utilization"] >= 0.9
    # CUBIC fills the (shallow, < 1 BDP) buffer.
    assert c["p95_qdelay_ms"] >= 0.75 * full_ms
    # BBR: full link, bounded loss.  (The buffer is below one BDP and BBR's cwnd is 2 BDP, so it can
    # fill it too — as BBR did in the paper's Table II: p95 116 ms, 1.7 % loss.)
    assert b["loss"] < 0.05
    assert 45.0 < b["p95_owd_ms"] <= 45.0 + full_ms + 1.5


# Jain's index of kernel:cubic on pareto/sharedN (last 20 s), measured with jaxcc.emulate.
KERNEL_CUBIC_JAIN = {2: 0.95, 3: 0.94, 4: 0.86, 5: 0.86}


def test_pareto_cubic_fairness(pareto_report):
    for n in (2, 3, 4, 5):
        r = _rec(pareto_report, f"pareto/shared{n}", "cubic")
        assert "last 20 s" in r["jain_note"]
        # CUBIC converges slowly (Pareto §V-C); four flows sit right at 0.9 after 20 s.  Linux
        # CUBIC on the same scenarios in the netns harness (kernel:cubic, one run each) gave
        # 0.95, 0.94, 0.86, 0.86 for 2–5 flows: the model must also be no less fair than that less
        # the fidelity tolerance on Jain's index (0.05).
        assert r["jain"] >= (0.9 if n != 4 else 0.88), (n, r["jain"])
        assert r["jain"] >= KERNEL_CUBIC_JAIN[n] - 0.05, (n, r["jain"])
        assert r["utilization"] >= 0.9


def test_pareto_bbr_tracks_steps(pareto_report):
    s = pareto_report["series"][("pareto/dyn10-30", "bbr")]
    t, thr = s["t"], s["throughput_mbps"][:, 0]
    for up in (5.0, 15.0, 25.0):  # 10 → 30 Mbit/s: BtlBw is re-probed ×1.25 per gain cycle
        seg = (t > up + 1) & (t < up + 5)
        assert np.nanmax(thr[seg]) >= 27.0, (up, thr[seg])
    for down in (10.0, 20.0):  # 30 → 10 Mbit/s: the link stays full
        seg = (t > down + 1) & (t < down + 5)
        assert np.nanmean(thr[seg]) >= 9.0
    r = _rec(pareto_report, "pareto/dyn10-30", "bbr")
    assert r["utilization"] >= 0.8


def test_pareto_records_are_sane(pareto_report):
    for r in pareto_report["results"]:
        for k in ("throughput_mbps", "utilization", "p95_owd_ms", "p95_qdelay_ms", "loss", "jain", "ankh"):
            assert np.isfinite(r[k]), (r["scenario"], r["controller"], k)
        assert 0 < r["utilization"] <= 1.01
        assert 0 <= r["loss"] < 0.2
        assert 0 <= r["ankh"] <= 1
        assert r["p95_owd_ms"] >= 45.0  # one-way propagation is 45 ms on every Pareto link


def test_pareto_fixed50_at_16_ticks_per_rtt():
    """At 16 ticks per RTT the fluid model's ACK-timing noise is small enough for the textbook
    picture on the 50 Mbit/s link: BBR full with a small queue, CUBIC filling the buffer."""
    from jaxcc.evaluation import runs

    rep = runs.run_evaluation([get_scenario("pareto/fixed50")], runs.controller_entries("bbr,cubic"),
                                  progress=False, keep_series=False, ticks_per_rtt=16)
    b, c = _rec(rep, "pareto/fixed50", "bbr"), _rec(rep, "pareto/fixed50", "cubic")
    full_ms = 440_000 / (50 * MBPS) * 1e3
    assert b["utilization"] >= 0.95 and c["utilization"] >= 0.95
    assert c["p95_qdelay_ms"] > 0.85 * full_ms
    # BBR leaves DRAIN once inflight <= BDP, which can happen while part of the startup queue is
    # still there (the pipe emptied during the slow drain); pacing at gain 1 then keeps that
    # queue until the first PROBE_RTT (min RTT older than 10 s) — BBRv1 behaviour.  The small
    # queue is asserted from then on.
    from jaxcc.sim import runner
    batch = runner.build_batches([runner.Item(get_scenario("pareto/fixed50").with_controller("bbr"))],
                                 resolve=senders.resolve, ticks_per_rtt=16)[0]
    _, traj, _ = runner.run_batch(batch)
    after = np.asarray(traj.time[0]) >= 12.0
    qdelay_ms = np.asarray(traj.qdelay[0])[after] * 1e3
    assert np.quantile(qdelay_ms, 0.95) < 0.5 * full_ms
