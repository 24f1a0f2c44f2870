"""Fidelity of the fluid model (``jaxcc.sim``) against the packet-level reference
(``tests/reference/packet_sim.py``), for three senders that follow the same rules in both:
constant rate (``fixed``), Reno-like AIMD and a simple BBR-like sender.

For random links (1–200 Mbps, 10–400 ms RTT, 0.1–4 BDP buffers, 0–5 % loss, 1–5 flows with
different RTTs and start/stop times; seeded), every flow's goodput, p95 one-way delay and loss
fraction must match within the tolerances below.  All links of one sender type run in ONE
compiled fluid call; the reference is averaged over enough seeds that its binomial noise does
not dominate the loss comparison (see ``harness.replicates``).

Known limitations of the model are not hidden by loosening the tolerances: a case whose
parameters put it in a documented regime (``LIMITATIONS``, decided from the parameters, never
from the result) is marked xfail *only* if the failing metrics are the ones that regime explains,
and the xfail message carries the measured numbers.  Any other violation fails.

``pytest -m slow tests/test_fidelity.py`` runs the 30-link sweep per sender; the unmarked fast
subset runs a few small links.  ``python tests/fidelity_report.py`` prints the full table.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reference import harness as H

THR_REL_TOL = 0.03  # |fluid - ref| / ref goodput
OWD_REL_TOL = 0.10  # p95 one-way delay: 10 % ...
OWD_ABS_TOL = 0.002  # ... or 2 ms, whichever is larger
LOSS_ABS_TOL = 0.005  # loss fraction: 0.5 percentage points

FAST = dict(n=3, seed=11, max_mbps=20.0, n_rtts=60)
SLOW = dict(n=30, seed=2026, max_mbps=200.0, n_rtts=100)

TINY_BUFFER_PKTS = 4.0

# Regimes in which the fluid model is known to differ from the packet reference, with the
# metrics they explain.  Each is measured and explained in the fidelity report to the lead.
LIMITATIONS = {
    "feedback_timing": (
        {"thr", "owd", "loss"},
        "core.step gives all bytes admitted in a tick ONE departure instant (t_mid + wait behind "
        "the tick's mean backlog) and delivers their ACKs over a window one tick wide after it "
        "(split between two slots; before that change: rounded to one slot). The ACK stream is "
        "therefore not clocked by the link: a tick of high sending is acked over one tick however "
        "long the link takes to serve it (ACK compression), and the slot convention (arrivals in "
        "[j dt, (j+1) dt) are usable from j dt) hands feedback out half a tick early on average. "
        "Feedback-driven senders burst on it: BBR-like delivery-rate samples exceed c (1.08-1.12 c "
        "with rounding at 8 ticks/RTT) and its max filter keeps the excess, so it builds a standing "
        "queue (p95 delay up to 1.8x the reference); AIMD overflows small buffers early. Spreading "
        "each tick's feedback over its FIFO departure interval (tests/reference/core_variants.py, "
        "spread_feedback) restores most of it; per-flow shares of several feedback-driven flows "
        "remain timing-sensitive in both models."),
    "mean_field_loss": (
        {"thr", "owd", "loss"},
        "random loss is applied as its mean; a loss-reacting sender (AIMD) sees evenly spread "
        "fractional losses instead of random whole-packet events, so its window process differs "
        "(E[f(X)] != f(E[X]))."),
    "paced_dropshare": (
        {"thr", "loss"},
        "overloaded drop-tail shared by several perfectly paced flows: the fluid splits drops in "
        "proportion to arrivals, but with periodic arrivals the first packet after a slot frees "
        "wins, which favours the faster flows (phase effects); per-flow shares differ, the link "
        "totals match (checked separately)."),
    "full_buffer_mss": (
        {"owd"},
        "with a full buffer the fluid delay is (B + MSS)/c (mean backlog B plus the packet's own "
        "serialisation) but an admitted packet sees at most B - MSS, i.e. waits at most B/c: the "
        "fluid is one MSS/c too slow, which exceeds the tolerance when MSS/c > max(2 ms, 10 % owd). "
        "Fix: cap the backlog a packet sees at buffer - MSS."),
    "packet_collisions": (
        {"owd"},
        "several paced flows below capacity: the fluid queue stays empty (delay = RTT/2 + MSS/c), "
        "but packets of different flows collide and wait up to (n-1) MSS/c; on slow links one "
        "packet time exceeds the delay tolerance (MSS/c > max(2 ms, 10 % owd))."),
    "tiny_buffer": (
        {"thr", "owd", "loss"},
        f"buffer < {TINY_BUFFER_PKTS:g} packets: drop-tail admits whole packets only (a 1.5-packet "
        "buffer admits a packet only into a nearly empty queue); a fluid queue has no packets."),
}


def limitations(case: H.Case) -> list[str]:
    """The documented regimes this case is in (from its parameters only)."""
    out = []
    overloaded = case.sender == "constant" and sum(case.rates) * (1 - case.loss) > case.capacity
    if case.sender in ("aimd", "bbr_like"):
        out.append("feedback_timing")
    if case.sender == "aimd" and case.loss > 0:
        out.append("mean_field_loss")
    if overloaded and len(case.rtts) > 1:
        out.append("paced_dropshare")
    if overloaded or case.sender != "constant":
        full_wait = (case.buffer + H.MSS) / case.capacity + 0.5 * min(case.rtts)
        if H.MSS / case.capacity > max(OWD_ABS_TOL, OWD_REL_TOL * full_wait):
            out.append("full_buffer_mss")
    if case.sender == "constant" and not overloaded and len(case.rtts) > 1:
        if H.MSS / case.capacity > max(OWD_ABS_TOL, OWD_REL_TOL * (0.5 * min(case.rtts) + H.MSS / case.capacity)):
            out.append("packet_collisions")
    if case.buffer < TINY_BUFFER_PKTS * H.MSS:
        out.append("tiny_buffer")
    return out


_CACHE: dict = {}


def suite(kind: str, sender: str):
    """(cases, fluid metrics, reference metrics) for one suite and sender (computed once)."""
    key = (kind, sender)
    if key not in _CACHE:
        cfg = FAST if kind == "fast" else SLOW
        cases = H.random_cases(cfg["n"], sender, seed=cfg["seed"], max_mbps=cfg["max_mbps"], n_rtts=cfg["n_rtts"])
        fluid = H.run_fluid(cases)  # one compiled call for all links
        ref = [H.run_packet(c)[0] for c in cases]
        _CACHE[key] = (cases, fluid, ref)
    return _CACHE[key]


def violations(case: H.Case, fl: H.Metrics, ref: H.Metrics) -> list[tuple[str, str]]:
    """(metric, message) for every flow/metric outside the tolerances."""
    out = []
    e = H.errors(fl, ref)
    for i in range(len(case.rtts)):
        if not e.thr_rel[i] <= THR_REL_TOL:
            out.append(("thr", f"flow {i}: goodput fluid {fl.goodput[i] / H.MBPS:.4g} vs ref "
                               f"{ref.goodput[i] / H.MBPS:.4g} Mbps ({fl.goodput[i] / ref.goodput[i] - 1:+.1%})"))
        if not e.owd_abs[i] <= max(OWD_ABS_TOL, OWD_REL_TOL * ref.p95_owd[i]):
            out.append(("owd", f"flow {i}: p95 owd fluid {fl.p95_owd[i] * 1e3:.2f} vs ref "
                               f"{ref.p95_owd[i] * 1e3:.2f} ms"))
        if not e.loss_abs[i] <= LOSS_ABS_TOL:
            out.append(("loss", f"flow {i}: loss fluid {fl.loss[i]:.2%} vs ref {ref.loss[i]:.2%}"))
    return out


def check(kind: str, sender: str, idx: int):
    cases, fluid, ref = suite(kind, sender)
    case, fl, rf = cases[idx], fluid[idx], ref[idx]
    lims = limitations(case)
    bad = violations(case, fl, rf)
    explained = set().union(*(LIMITATIONS[name][0] for name in lims)) if lims else set()
    unexplained = [msg for metric, msg in bad if metric not in explained]
    assert not unexplained, f"{case.describe()}:\n  " + "\n  ".join(unexplained)
    if "paced_dropshare" in lims:  # the link totals must still match
        gp_f, gp_r = fl.goodput.sum(), rf.goodput.sum()
        assert abs(gp_f - gp_r) <= THR_REL_TOL * gp_r, f"{case.describe()}: total goodput {gp_f} vs {gp_r}"
    if bad:
        pytest.xfail(f"{'+'.join(lims)}: {case.describe()}: " + "; ".join(m for _, m in bad))


@pytest.mark.parametrize("sender", H.SENDERS)
@pytest.mark.parametrize("idx", range(FAST["n"]))
def test_fidelity_fast(sender, idx):
    check("fast", sender, idx)


@pytest.mark.slow
@pytest.mark.parametrize("sender", H.SENDERS)
@pytest.mark.parametrize("idx", range(SLOW["n"]))
def test_fidelity_sweep(sender, idx):
    check("slow", sender, idx)


def test_single_paced_flow_exact_regime():
    """The regime the fluid model is exact in: one paced flow below capacity, no loss.  Goodput
    = rate, loss = 0, and the delay is RTT/2 + one packet's serialisation in both models."""
    case = H.Case("paced", capacity=10 * H.MBPS, buffer=50 * H.MSS, loss=0.0, rtts=[0.04],
                  start_ticks=[0], stop_ticks=[800], num_ticks=800, sender="constant", rates=[6 * H.MBPS])
    fl, = H.run_fluid([case])
    rf, _ = H.run_packet(case, reps=1)
    assert math.isclose(rf.p95_owd[0], 0.02 + H.MSS / case.capacity, rel_tol=1e-9)
    np.testing.assert_allclose(fl.p95_owd, rf.p95_owd, rtol=1e-5)
    np.testing.assert_allclose(fl.goodput, rf.goodput, rtol=THR_REL_TOL / 3)
    assert fl.loss[0] == 0.0 and rf.loss[0] == 0.0


# ----------------------------------------------------------------------------- the reference itself

from reference import packet_sim as P  # noqa: E402


def test_reference_paced_flow_below_capacity():
    """Every packet of a lone paced flow below capacity waits only for its own serialisation."""
    c, rtt = 1e6, 0.05
    res = P.simulate(c, 20 * P.MSS, 0.0, [P.Flow(rtt, 0.0, 2.0, P.ConstantRate(0.5 * c))], 2.0)
    owd = res.packets["owd"]
    np.testing.assert_allclose(owd, rtt / 2 + P.MSS / c, rtol=1e-12)
    assert res.flows[0].loss == 0.0 and res.flows[0].sent == 667  # ceil(2 s * 0.5e6 / 1500)


def test_reference_overload_fills_the_buffer_and_drops_half():
    """Twice the capacity into a 10-packet buffer: after the fill, every other packet is dropped
    and an admitted packet waits at most buffer / c (it must fit, itself included)."""
    c, rtt, buf = 1e6, 0.05, 10 * P.MSS
    res = P.simulate(c, buf, 0.0, [P.Flow(rtt, 0.0, 5.0, P.ConstantRate(2 * c))], 5.0)
    fate, owd = res.packets["fate"], res.packets["owd"]
    assert abs(res.flows[0].loss - 0.5) < 0.01
    assert set(np.unique(fate)) == {P.DELIVERED, P.DROPPED}
    delivered = owd[fate == P.DELIVERED] - rtt / 2
    assert delivered.max() <= buf / c + 1e-12 and delivered.max() > (buf - P.MSS) / c
    # The link is busy from the first packet on; ACKs arrive from RTT + one serialisation on.
    expect = c * (5.0 - rtt - P.MSS / c) / 5.0
    assert abs(res.flows[0].goodput - expect) <= P.MSS / 5.0


def test_reference_random_loss_is_bernoulli_and_seeded():
    c = 1e7
    run = lambda seed: P.simulate(c, 1e6, 0.03, [P.Flow(0.02, 0.0, 3.0, P.ConstantRate(0.5 * c))], 3.0, seed=seed)  # noqa: E731
    a, b, other = run(1), run(1), run(2)
    n = a.flows[0].sent
    assert abs(a.flows[0].loss - 0.03) < 4 * math.sqrt(0.03 * 0.97 / n)
    np.testing.assert_array_equal(a.packets["fate"], b.packets["fate"])
    assert not np.array_equal(a.packets["fate"], other.packets["fate"])
    assert set(np.unique(a.packets["fate"])) == {P.DELIVERED, P.RANDOM_LOSS}


def test_reference_aimd_detects_loss_from_a_gap_and_halves_once():
    """AIMD over a 5-packet buffer: each loss episode halves the window once (NewReno rule), and
    the sender learns of a loss only when a later packet's ACK arrives."""
    cuts = []

    class Logged(P.AIMD):
        def on_loss(self, now, nbytes, inflight, sent_at):
            before = self.cwnd
            super().on_loss(now, nbytes, inflight, sent_at)
            cuts.append((now, sent_at, before, self.cwnd))

    c, rtt = 1e6, 0.03
    res = P.simulate(c, 5 * P.MSS, 0.0, [P.Flow(rtt, 0.0, 3.0, Logged())], 3.0)
    assert res.flows[0].rto == 0 and cuts
    for now, sent_at, before, after in cuts:
        assert now >= sent_at + rtt  # learned at least one RTT after sending, never earlier
        assert after in (before, max(before / 2, P.AIMD.MIN_CWND))
    halvings = [x for x in cuts if x[3] < x[2]]
    assert all(b[0] - a[0] >= rtt for a, b in zip(halvings, halvings[1:]))  # at most one per RTT
    assert res.flows[0].goodput > 0.8 * c
