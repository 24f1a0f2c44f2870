"""Random links, both models on them, and the metric comparison (used by the fidelity test and
``tests/fidelity_report.py``).

A *case* is one link with 1–5 flows driven by one sender type.  ``run_fluid`` simulates a whole
list of cases in ONE compiled ``jit(vmap(runner.make_run(...)))`` call; ``run_packet`` runs the
packet-level reference on one case.  Flow start/stop times are whole ticks of the fluid model so
that both models see exactly the same active intervals.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import units
from jaxcc.sim import controller as ctl
from jaxcc.sim import links, runner

from reference import fluid_senders, packet_sim

MSS = packet_sim.MSS
MBPS = units.MBPS
TICKS_PER_RTT = links.DEFAULT_TICKS_PER_RTT
SENDERS = ("constant", "aimd", "bbr_like")


@dataclasses.dataclass
class Case:
    """One link and its flows (times in whole fluid ticks of length ``dt``)."""

    name: str
    capacity: float  # bytes/s
    buffer: float  # bytes
    loss: float
    rtts: list[float]  # s, per flow
    start_ticks: list[int]
    stop_ticks: list[int]
    num_ticks: int  # duration in ticks
    sender: str  # one of SENDERS
    rates: list[float]  # bytes/s per flow (constant-rate sender only)
    seed: int = 0

    @property
    def dt(self) -> float:
        return min(self.rtts) / TICKS_PER_RTT

    @property
    def duration(self) -> float:
        return self.num_ticks * self.dt

    @property
    def bdp(self) -> float:
        return self.capacity * min(self.rtts)

    def describe(self) -> str:
        return (f"{self.name}: {self.capacity / MBPS:.1f} Mbps, rtt {min(self.rtts) * 1e3:.0f} ms, "
                f"buf {self.buffer / max(self.bdp, 1):.2f} BDP ({self.buffer / MSS:.1f} pkt), "
                f"loss {self.loss * 100:.2f}%, {len(self.rtts)} flow(s), {self.duration:.1f} s")


def random_case(rng: np.random.Generator, sender: str, name: str, *, n_rtts: int = 100,
                min_rtts: int = 30, max_link_packets: float = 150_000, flows: int | None = None,
                max_mbps: float = 200.0, loss_max: float = 0.05) -> Case:
    """A random link: 1–200 Mbps, 10–400 ms RTT (log-uniform), 0.1–4 BDP buffer (log-uniform,
    at least 1.5 packets so that a packet fits at all), 0–5 % random loss (uniform), 1–5 flows
    with RTTs up to 2x the smallest; each later flow either runs throughout or starts in the
    first 30 % and stops in the last 30 % of the run.  Constant-rate flows share an offered load
    of 0.3–2x the capacity (each at least half of an equal share).

    The duration is ``n_rtts`` smallest RTTs, shortened (down to ``min_rtts``) so that the link
    carries at most about ``max_link_packets`` packets (keeps the packet-level runs short).
    """
    cap = math.exp(rng.uniform(math.log(1.0), math.log(max_mbps))) * MBPS
    base = math.exp(rng.uniform(math.log(0.010), math.log(0.400)))
    n = int(rng.integers(1, 6)) if flows is None else flows
    rtts = [base] + [base * float(rng.uniform(1.0, 2.0)) for _ in range(n - 1)]
    buf = max(math.exp(rng.uniform(math.log(0.1), math.log(4.0))) * cap * base, 1.5 * MSS)
    loss = float(rng.uniform(0.0, loss_max))
    dt = base / TICKS_PER_RTT
    ticks = n_rtts * TICKS_PER_RTT
    ticks = int(max(min(ticks, max_link_packets * MSS / (cap * dt)), min_rtts * TICKS_PER_RTT))
    starts, stops = [0], [ticks]
    for _ in range(n - 1):
        if rng.uniform() < 0.5:
            starts.append(0)
            stops.append(ticks)
        else:
            starts.append(int(rng.uniform(0.0, 0.3) * ticks))
            stops.append(int(rng.uniform(0.7, 1.0) * ticks))
    rates = []
    if sender == "constant":
        load = float(rng.uniform(0.3, 2.0))
        w = 0.5 / n + 0.5 * rng.dirichlet(np.ones(n))
        rates = [float(x) for x in load * cap * w]
    return Case(name, cap, buf, loss, rtts, starts, stops, ticks, sender, rates,
                seed=int(rng.integers(0, 2**31)))


def expected_packets(case: Case) -> np.ndarray:
    """A rough lower estimate of the packets each flow sends (to size the reference replicates)."""
    out = []
    for i, rtt in enumerate(case.rtts):
        active = (case.stop_ticks[i] - case.start_ticks[i]) * case.dt
        if case.sender == "constant":
            rate = case.rates[i]
        else:
            rate = 0.5 * case.capacity / len(case.rtts)
            if case.loss > 0 and case.sender == "aimd":
                rate = min(rate, 0.5 * 1.22 * MSS / (rtt * 2 * math.sqrt(case.loss)))
        out.append(max(rate * active / MSS, 1.0))
    return np.array(out)


def replicates(case: Case, min_packets: float = 20_000, max_replicates: int = 32) -> int:
    """Reference seeds to average so that each flow sends about ``min_packets`` packets in all.

    The fluid model is deterministic — it uses the *mean* random loss — so it is compared with
    the reference's expectation; a few hundred packets would leave a binomial error of ~1 pp in
    the loss fraction alone (sqrt(p(1-p)/N)), which would test the random numbers, not the model.
    """
    return int(np.clip(math.ceil(min_packets / expected_packets(case).min()), 1, max_replicates))


def random_cases(n: int, sender: str, seed: int, **kw) -> list[Case]:
    rng = np.random.default_rng(seed)
    return [random_case(rng, sender, f"{sender}/{seed}/{i}", **kw) for i in range(n)]


# ----------------------------------------------------------------------------- metrics


@dataclasses.dataclass
class Metrics:
    goodput: np.ndarray  # [F] bytes/s
    p95_owd: np.ndarray  # [F] s
    loss: np.ndarray  # [F] fraction


def _weighted_p95(x: np.ndarray, w: np.ndarray) -> float:
    """Smallest x with cumulative weight >= 95 % (NumPy's 'inverted_cdf' for weights)."""
    if w.sum() <= 0:
        return math.nan
    o = np.argsort(x, kind="stable")
    c = np.cumsum(w[o])
    return float(x[o][np.searchsorted(c, 0.95 * c[-1])])


def run_packet(case: Case, reps: int | None = None) -> tuple[Metrics, list[packet_sim.Result]]:
    """The reference on ``case``, over ``reps`` seeds (default ``replicates(case)``), pooled:
    goodput averaged, p95 delay over all delivered packets, loss over all sent packets."""
    reps = replicates(case) if reps is None else reps
    dt = case.dt
    results = []
    for r in range(reps):
        flows = []
        for i, rtt in enumerate(case.rtts):
            if case.sender == "constant":
                sender = packet_sim.ConstantRate(case.rates[i])
            elif case.sender == "aimd":
                sender = packet_sim.AIMD()
            else:
                sender = packet_sim.BBRLike()
            flows.append(packet_sim.Flow(rtt, case.start_ticks[i] * dt, case.stop_ticks[i] * dt, sender))
        results.append(packet_sim.simulate(case.capacity, case.buffer, case.loss, flows, case.duration,
                                           seed=case.seed + 7919 * r))
    gp, p95, loss = [], [], []
    for i in range(len(case.rtts)):
        gp.append(np.mean([res.flows[i].goodput for res in results]))
        owd = np.concatenate([res.packets["owd"][(res.packets["flow"] == i)
                                                 & (res.packets["fate"] == packet_sim.DELIVERED)]
                              for res in results])
        p95.append(float(np.percentile(owd, 95, method="inverted_cdf")) if owd.size else math.nan)
        sent = sum(res.flows[i].sent for res in results)
        loss.append(sum(res.flows[i].lost for res in results) / sent if sent else 0.0)
    return Metrics(np.array(gp), np.array(p95), np.array(loss)), results


_CONTROLLERS = {"constant": fluid_senders.FIXED, "aimd": fluid_senders.AIMD, "bbr_like": fluid_senders.BBR_LIKE}


def fluid_inputs(cases: list[Case]):
    """Padded, stacked ``LinkParams`` (float32), controller parameters and the static sizes."""
    f_max = max(len(c.rtts) for c in cases)
    num_ticks = max(c.num_ticks for c in cases)
    params, cps, ring = [], [], 8
    for c in cases:
        dt = c.dt
        sched = links.constant(c.capacity / MBPS)
        # Start/stop half a tick early: the flow is active in exactly the ticks [start, stop).
        params.append(links.make_link(sched, c.buffer, c.loss, c.rtts,
                                      [(s - 0.5) * dt if s > 0 else 0.0 for s in c.start_ticks],
                                      [(s - 0.5) * dt for s in c.stop_ticks],
                                      num_segments=1, num_flows=f_max, dt=dt))
        ring = max(ring, links.ring_len_for(sched, c.buffer, c.rtts, dt))
        cp = ctl.ControllerParams.zeros((f_max,))
        for i, r in enumerate(c.rates):
            cp.fixed.mbps[i] = r / MBPS
        cps.append(cp)
    return links.stack_links(params), ctl.stack(cps), num_ticks, ring


def run_fluid(cases: list[Case]) -> list[Metrics]:
    """All cases (one sender type) in one compiled call."""
    senders = {c.sender for c in cases}
    assert len(senders) == 1, "one sender type per batch"
    params, cps, num_ticks, ring = fluid_inputs(cases)
    ctrl = _CONTROLLERS[senders.pop()]
    run = jax.jit(jax.vmap(runner.make_run((ctrl,), num_ticks, ring)))
    ids = np.zeros(cps.fixed.mbps.shape[:2], np.int32)
    sim, traj, _ = jax.device_get(run(jax.tree.map(jnp.asarray, params), jnp.asarray(ids), jax.tree.map(jnp.asarray, cps)))
    out = []
    for b, c in enumerate(cases):
        n = len(c.rtts)
        gp, p95, loss = [], [], []
        for i in range(n):
            ticks = slice(c.start_ticks[i], c.stop_ticks[i])
            acked = traj.acked[b, ticks, i].astype(np.float64).sum()
            gp.append(acked / ((c.stop_ticks[i] - c.start_ticks[i]) * c.dt))
            adm = traj.admitted[b, : c.num_ticks, i].astype(np.float64)
            sent = traj.sent[b, : c.num_ticks, i].astype(np.float64).sum()
            p95.append(_weighted_p95(traj.owd[b, : c.num_ticks, i].astype(np.float64), adm))
            loss.append(1.0 - adm.sum() / sent if sent > 0 else 0.0)
        out.append(Metrics(np.array(gp), np.array(p95), np.array(loss)))
    return out


# ----------------------------------------------------------------------------- comparison


@dataclasses.dataclass
class Errors:
    thr_rel: np.ndarray  # [F] |fluid - ref| / ref goodput
    owd_abs: np.ndarray  # [F] |fluid - ref| p95 one-way delay (s)
    owd_rel: np.ndarray  # [F] owd_abs / ref
    loss_abs: np.ndarray  # [F] |fluid - ref| loss fraction


def errors(fluid: Metrics, ref: Metrics) -> Errors:
    owd_abs = np.abs(fluid.p95_owd - ref.p95_owd)
    return Errors(thr_rel=np.abs(fluid.goodput - ref.goodput) / np.maximum(ref.goodput, 1e-9),
                  owd_abs=owd_abs, owd_rel=owd_abs / ref.p95_owd, loss_abs=np.abs(fluid.loss - ref.loss))
