"""Fidelity of the fluid model (``jaxcc.sim``) against the packet-level reference
(``tests/reference/packet_sim.py``) where that reference can judge it: constant-rate senders —
the model's network part (drop-tail FIFO, random loss, delays, several flows with different
RTTs and start/stop times) with no feedback loop in between — and the exact regimes.

For random links (1–200 Mbps, 10–400 ms RTT, 0.1–4 BDP buffers, 0–5 % loss, 1–5 flows with
different RTTs and start/stop times, 0.3–2× offered load; seeded), every flow's goodput, p95
one-way delay and loss fraction must match within the tolerances below.  All links run in ONE
compiled fluid call; the reference is averaged over enough seeds that its binomial noise does
not dominate the loss comparison (see ``harness.replicates``).  On an overloaded link shared
by several flows, goodput and loss are compared as link totals (``shared_overload``): the
reference's flows are perfectly periodic, so which flow's packet finds the one free slot is
decided by their phases, which no real sender keeps; the fluid splits drops in proportion to
arrivals.  Their delays are still compared per flow.

Known limitations are narrow parameter regions (``LIMITATIONS``, decided from the parameters,
never from the result), each excusing only the metrics it explains; a case in one is xfailed
only if those are the failing metrics, with the numbers in the message; any other violation
fails.  All limited cases together stay within ``LIMITATION_BUDGET`` of the cases
(``test_limitation_budget``, which also prints the pass rate per metric).

What left this file: the Reno-like AIMD and the simple BBR-like sender of the reference.  The
oracle's versions of them are toys, and a feedback-driven sender's window process depends on
sub-tick packet timing (ACK-clocked bursts at the line rate in slow start, per-packet loss
detection) that the two models treat differently by design; the review found every such case
tagged with a limitation excusing all metrics.  The simulator's real controllers are judged
where it is credible: ``cubic``, ``reno`` and ``bbr`` against the Linux kernel's TCP in the
netns harness and ns-3 (``jaxcc.fidelity``, tests/test_fidelity_kernel.py,
tests/test_fidelity_ns3.py), with hand-computed checks in tests/test_baselines*.py.  The oracle
and its fluid twins of those senders stay for ``tests/fidelity_report.py --senders=aimd,bbr_like``.

``pytest -m slow tests/test_fidelity.py`` runs the 30-link sweep; the unmarked fast subset runs
a few small links.  ``python tests/fidelity_report.py`` prints the full table.
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

SENDER = "constant"
FAST = dict(n=6, seed=11, max_mbps=20.0, n_rtts=60)
SLOW = dict(n=30, seed=2026, max_mbps=200.0, n_rtts=100)

TINY_BUFFER_PKTS = 2.5  # measured: 2.5–4-packet buffers matched on 100 random links
FEW_PACKETS = 600  # packets the link can carry over the whole run
LIMITATION_BUDGET = 0.10  # all limited cases together, as a fraction of the cases

# Regions in which the fluid model is known to differ from the packet reference, with the
# metrics they explain.
LIMITATIONS = {
    "packet_collisions": (
        {"owd"},
        "several paced flows below capacity: the fluid queue stays empty (delay = RTT/2 + MSS/c), "
        "but packets of different flows collide and wait up to (n-1) MSS/c; on slow links one "
        "packet time exceeds the delay tolerance (MSS/c > max(2 ms, 10 % owd))."),
    "few_packets": (
        {"loss"},
        f"the link carries fewer than {FEW_PACKETS} packets over the run: each flow's start and stop "
        "cut a packet in the reference (whole packets) but not in the fluid, and with a few hundred "
        "packets one packet per edge is ~0.5 pp of loss."),
    "tiny_buffer": (
        {"thr", "owd", "loss"},
        f"buffer < {TINY_BUFFER_PKTS:g} packets: drop-tail admits whole packets only (a 1.5-packet "
        "buffer admits a packet only into a nearly empty queue); a fluid queue has no packets."),
}


def overloaded(case: H.Case) -> bool:
    return sum(case.rates) * (1 - case.loss) > case.capacity


def shared_overload(case: H.Case) -> bool:
    """Goodput and loss are compared as link totals (see the module docstring)."""
    return overloaded(case) and len(case.rtts) > 1


def limitations(case: H.Case) -> list[str]:
    """The documented regions this case is in (from its parameters only)."""
    out = []
    if not overloaded(case) and len(case.rtts) > 1:
        if H.MSS / case.capacity > max(OWD_ABS_TOL, OWD_REL_TOL * (0.5 * min(case.rtts) + H.MSS / case.capacity)):
            out.append("packet_collisions")
    if case.capacity * case.duration / H.MSS < FEW_PACKETS:
        out.append("few_packets")
    if case.buffer < TINY_BUFFER_PKTS * H.MSS:
        out.append("tiny_buffer")
    return out


_CACHE: dict = {}


def suite(kind: str):
    """(cases, fluid metrics, reference metrics) for one suite (computed once)."""
    if kind not in _CACHE:
        cfg = FAST if kind == "fast" else SLOW
        cases = H.random_cases(cfg["n"], SENDER, seed=cfg["seed"], max_mbps=cfg["max_mbps"], n_rtts=cfg["n_rtts"])
        fluid = H.run_fluid(cases)  # one compiled call for all links
        ref = [H.run_packet(c)[0] for c in cases]
        _CACHE[kind] = (cases, fluid, ref)
    return _CACHE[kind]


def _link_totals(case: H.Case, m: H.Metrics) -> tuple[float, float]:
    """Total goodput and the sent-weighted loss (constant senders send rate × active time)."""
    sent = np.array([r * (b - a) for r, a, b in zip(case.rates, case.start_ticks, case.stop_ticks)])
    return float(np.sum(m.goodput)), float(np.sum(m.loss * sent) / np.sum(sent))


def violations(case: H.Case, fl: H.Metrics, ref: H.Metrics) -> list[tuple[str, str]]:
    """(metric, message) for every flow/metric outside the tolerances."""
    out = []
    e = H.errors(fl, ref)
    per_flow_rate = not shared_overload(case)
    for i in range(len(case.rtts)):
        if per_flow_rate and not e.thr_rel[i] <= THR_REL_TOL:
            out.append(("thr", f"flow {i}: goodput fluid {fl.goodput[i] / H.MBPS:.4g} vs ref "
                               f"{ref.goodput[i] / H.MBPS:.4g} Mbps ({fl.goodput[i] / ref.goodput[i] - 1:+.1%})"))
        if not e.owd_abs[i] <= max(OWD_ABS_TOL, OWD_REL_TOL * ref.p95_owd[i]):
            out.append(("owd", f"flow {i}: p95 owd fluid {fl.p95_owd[i] * 1e3:.2f} vs ref "
                               f"{ref.p95_owd[i] * 1e3:.2f} ms"))
        if per_flow_rate and not e.loss_abs[i] <= LOSS_ABS_TOL:
            out.append(("loss", f"flow {i}: loss fluid {fl.loss[i]:.2%} vs ref {ref.loss[i]:.2%}"))
    if not per_flow_rate:
        (gf, lf), (gr, lr) = _link_totals(case, fl), _link_totals(case, ref)
        if not abs(gf - gr) <= THR_REL_TOL * gr:
            out.append(("thr", f"link: goodput fluid {gf / H.MBPS:.4g} vs ref {gr / H.MBPS:.4g} Mbps ({gf / gr - 1:+.1%})"))
        if not abs(lf - lr) <= LOSS_ABS_TOL:
            out.append(("loss", f"link: loss fluid {lf:.2%} vs ref {lr:.2%}"))
    return out


def check(kind: str, idx: int):
    cases, fluid, ref = suite(kind)
    case, fl, rf = cases[idx], fluid[idx], ref[idx]
    lims = limitations(case)
    bad = violations(case, fl, rf)
    explained = set().union(*(LIMITATIONS[name][0] for name in lims)) if lims else set()
    unexplained = [msg for metric, msg in bad if metric not in explained]
    assert not unexplained, f"{case.describe()}:\n  " + "\n  ".join(unexplained)
    if bad:
        pytest.xfail(f"{'+'.join(lims)}: {case.describe()}: " + "; ".join(m for _, m in bad))


def pass_rates(kind: str) -> dict:
    """Per metric: cases passing, cases xfailed by a limitation, cases failing; and the table."""
    cases, fluid, ref = suite(kind)
    rates = {m: {"pass": 0, "limited": 0, "fail": 0} for m in ("thr", "owd", "loss")}
    for c, fl, rf in zip(cases, fluid, ref):
        bad = {metric for metric, _ in violations(c, fl, rf)}
        explained = set().union(*(LIMITATIONS[n][0] for n in limitations(c))) if limitations(c) else set()
        for m in rates:
            rates[m]["pass" if m not in bad else ("limited" if m in explained else "fail")] += 1
    limited = sum(bool(limitations(c)) for c in cases)
    lines = [f"fidelity vs packet oracle ({kind}, sender {SENDER}, {len(cases)} links): "
             f"{limited} in a limitation region ({limited / len(cases):.0%}, budget {LIMITATION_BUDGET:.0%})"]
    for m, r in rates.items():
        lines.append(f"  {m:>4}: pass {r['pass']}/{len(cases)} ({r['pass'] / len(cases):.0%}), "
                     f"limited {r['limited']}, fail {r['fail']}")
    return {"rates": rates, "limited": limited, "cases": len(cases), "table": "\n".join(lines)}


@pytest.mark.parametrize("idx", range(FAST["n"]))
def test_fidelity_fast(idx):
    check("fast", idx)


@pytest.mark.parametrize("idx", range(SLOW["n"]))
def test_fidelity_sweep(idx):
    check("slow", idx)


def test_pass_rates_fast(capsys):
    """Prints the fast subset's pass rate per metric (its short runs on slow links sit in the
    ``few_packets`` region more often than the sweep; the budget is the sweep's)."""
    r = pass_rates("fast")
    with capsys.disabled():
        print("\n" + r["table"])
    assert sum(v["fail"] for v in r["rates"].values()) == 0, r["table"]


def test_limitation_budget(capsys):
    """Prints the sweep's pass rate per metric; its limited cases stay within the budget."""
    r = pass_rates("slow")
    with capsys.disabled():
        print("\n" + r["table"])
    assert r["limited"] <= LIMITATION_BUDGET * r["cases"], r["table"]


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


def test_single_overloaded_flow_exact_regime():
    """One paced flow at 1.5× capacity into a 30-packet buffer, no random loss: after the fill,
    a third of the packets is dropped and every admitted one waits a full buffer — B/c in the
    packet reference (an admitted packet had to fit, itself included), (B − MSS + MSS)/c in
    the fluid (it waits behind at most B − MSS, plus its own serialisation)."""
    c = 10 * H.MBPS
    case = H.Case("overload", capacity=c, buffer=30 * H.MSS, loss=0.0, rtts=[0.04],
                  start_ticks=[0], stop_ticks=[1600], num_ticks=1600, sender="constant", rates=[1.5 * c])
    fl, = H.run_fluid([case])
    rf, _ = H.run_packet(case, reps=1)
    assert rf.p95_owd[0] == pytest.approx(0.02 + case.buffer / c, rel=1e-9)
    np.testing.assert_allclose(fl.p95_owd, rf.p95_owd, rtol=1e-4)
    np.testing.assert_allclose(fl.loss, rf.loss, atol=0.002)
    assert fl.loss[0] == pytest.approx(1 / 3, abs=0.01)
    np.testing.assert_allclose(fl.goodput, rf.goodput, rtol=0.005)


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
