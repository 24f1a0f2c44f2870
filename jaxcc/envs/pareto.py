"""Pareto (TNSE 2022): TD3 + LSTM rate control with phase rewards and staged training.

Paper: Pareto: Fair Congestion Control With Online Reinforcement Learning (IEEE TNSE 2022), §III ("Formulating congestion control as an
RL task"), Algorithm 1 (reward), §IV / Algorithm 2 (stages), §V-A (training environments).

* Action (§III "Action space"): S_t = S_{t−1}·(1 + a_t), a_t ∈ [−0.7, 2].
* Step (§III "Step size"): 2 × RTT.  The step must be a static number of ticks, so it is 2 ×
  the *minimum propagation* RTT (``mi_rtts = 2``) rather than "2 × recently measured RTT".
* Episode (§III): 60 steps (offline training).
* Observation (§III "Observations"), per step, in this order:
    0. delay flag: 1 if the flow has experienced delay (d ≥ d_min) at any step so far;
    1. ΔR_t / 20, with ΔR_t = (R_t − R_{t−1}) / min(R_{t−1}, R_t);
    2. (dD/dT)_t / 5, with (dD/dT)_t = (d_t − d_{t−1}) / d_{t−1} / Δt,  Δt in milliseconds;
    3. (dL/dT)_t = (l_t − l_{t−1}) / l_{t−1} / Δt;
    4. X_t = (S_t − R_t)/R_t if d_t ≥ d_min else 0.
  "We scale down ΔR_t and (dD/dT)_t by 20 and 5" — i.e. divide.  R, l and the RTT are EWMAs
  of the per-step measurements (see ``PARETO_EWMA_GAIN``); d_t = RTT_t − min RTT of the
  episode, in ms; d_min = 4 ms.  The LSTM sees the last ``history`` steps (the paper does not
  give the number; 8 here, a static config value).
* Reward: Algorithm 1, clipped to [−50, 50] (see ``reward``).
* Stages (§IV, §V-A): ``params.stage`` 0 = bootstrap (one flow; bandwidth one of
  5/10/12/20/50/100 Mbps; RTT 90 ms; 440 KB buffer), 1 = advance (half the episodes as
  bootstrap, half with a bandwidth that changes every 5 s), 2 = fairness (two flows on one
  fixed-bandwidth link, the second starting 2 s after the first; needs ``num_flows = 2``).

Decisions where the paper is silent or ambiguous (all in ``ParetoParams`` so they can be
changed without recompiling):

* EWMA: §III says the step's RTT, delivery rate and loss rate are EWMAs "to weigh recent
  observations more than past observations" without a gain.  We average *across steps*,
  ``ewma = 0.8·this step + 0.2·previous``, because a per-step value is something a datapath
  can reproduce exactly from MI sums (a per-ACK EWMA differs between a packet sender and a
  fluid model).
* Division guards: d_{t−1} is floored at 0.01 ms and l_{t−1} at 0.001 before dividing (a
  drained queue or a loss-free step would otherwise divide by zero).  0.01 ms makes the first
  delay of a 20–100 ms queue at Δt = 180 ms give dD/dT ≈ 11–55, matching the "observed maximum
  of 60 in the first occurrence of delay".  R_{t−1}, R_t are floored at one packet per step.
* The first step of a flow has no previous step: ΔR, dD/dT and dL/dT are 0.
* S_t is the rate the sender actually sent at during the step (sent bytes / step length).
* "if (dD/dT)_t not 0" is read as "the delay changed by more than 0.01 ms" (float EWMAs are
  never exactly equal when a full buffer holds the delay constant).
* The "first step out of delay" is the first non-delayed step after a delayed one.
* The paper's bootstrap list names six bandwidths (text says "five"); all six are used.
  The advance stage's five dynamic links are not listed; we alternate low↔high every 5 s over
  the pairs (10,20), (10,30), (20,50), (5,12), (50,100) Mbps (the first two are the paper's
  evaluation links), starting low.
* Initial rate: not given; 10 packets per RTT (TCP's initial window paced over one RTT).
* A flow that has not started (fairness) has zero reward and keeps its initial state.

Pareto-Fair v2 (``feature_set="pareto_v2"``; ours, not the paper's: ``configs/pareto_staged.py``
trains it, ``configs/pareto_paper.py`` keeps §III literally).  §III's features are all relative
and its action multiplicative, so flows behind one FIFO see the same features, take the same
action and keep their rate ratio (MIMD, which Chiu & Jain 1989 show never converges to
fairness; ``checkpoints/pareto/README.md``).  v2 changes three things and nothing else:

* a sixth feature, the flow's own standing queue in packets, log2(1 + R_t·d̂_t / MSS) / 8, with
  R_t the EWMA delivery rate and d̂_t = (smallest RTT sample of the MI) − min RTT.  R·d is
  Vegas's "extra packets in the queue" (Brakmo & Peterson 1995, "Diff"); a FIFO holds each
  flow's packets in proportion to its rate, so the feature differs between flows exactly when
  their rates differ, whatever their RTTs.  The MI's *smallest* sample is Copa's RTTstanding
  (Arun & Balakrishnan 2018, §2.1): it filters jitter and ACK compression that do not queue;
* the action range [−0.3, 0.5] instead of [−0.7, 2]: a queue signal steered at §III's range
  over-corrects into a limit cycle (the experiment in ``checkpoints/pareto/README.md``);
* a training-only reward on top of Algorithm 1 that sees the whole link (as Astraea's critic
  does, Liao et al. 2024): −fair_w·|log(R_i / mean R)| over the flows active on the link, and
  +util_w·min(Σ delivered / capacity, 1), because Algorithm 1 pays a steady rate below capacity
  as much as one at capacity (both score ≈ 0).  The deployed actor stays local.

``robust`` (a params leaf, 1 in the v2 configs) replaces the paper's fixed training links by
draws: bandwidth log-uniform in [bw_lo, bw_hi] Mbit/s, RTT log-uniform in [rtt_lo, rtt_hi] s,
buffer log-uniform in [buf_bdp_lo, buf_bdp_hi] × the BDP at the schedule's lowest capacity,
capacity steps (advance stage) by a factor in [dyn_ratio_lo, dyn_ratio_hi] up or down every
[dyn_every_lo, dyn_every_hi] s, initial rates log-uniform in [init_frac_lo, init_frac_hi] × the
fair share, and on shared links 2..F active flows with random start gaps and departures.  With
``ParetoConfig.rtt_ratio_max`` > 1, a share ``p_mixed_rtt`` of the shared links gives each flow
its own RTT, up to ``rtt_ratio_max`` times the link's smallest (``configs/pareto_async.py``, which
also puts every flow on its own decision clock, ``EnvConfig.flow_clock``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc import units
from jaxcc.envs import base
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import samplers
from jaxcc.sim import core, links

A_LOW, A_HIGH = -0.7, 2.0  # §III action range
FEATURE_NAMES = ("delay_flag", "delta_R/20", "dDdT/5", "dLdT", "excess_X")
# Feature set -> (feature names, action range).  pareto_v1: §III; pareto_v2: Pareto-Fair v2 (above).
FEATURE_SETS = {
    "pareto_v1": (FEATURE_NAMES, (A_LOW, A_HIGH)),
    "pareto_v2": (FEATURE_NAMES + ("log2_own_queue/8",), (-0.3, 0.5)),
}
PARETO_EWMA_GAIN = 0.8
BOOT_MBPS = (5.0, 10.0, 12.0, 20.0, 50.0, 100.0)
DYN_PAIRS_MBPS = ((10.0, 20.0), (10.0, 30.0), (20.0, 50.0), (5.0, 12.0), (50.0, 100.0))
STAGE_BOOTSTRAP, STAGE_ADVANCE, STAGE_FAIRNESS = 0, 1, 2


@struct.dataclass
class ParetoParams:
    stage: jax.Array = 0  # 0 bootstrap, 1 advance, 2 fairness
    boot_mbps: jax.Array = BOOT_MBPS
    dyn_pairs_mbps: jax.Array = DYN_PAIRS_MBPS
    p_dynamic: jax.Array = 0.5  # advance stage: share of dynamic-bandwidth episodes (5 of 10)
    change_every_s: jax.Array = 5.0
    rtt_s: jax.Array = 0.09
    buffer_bytes: jax.Array = 440_000.0
    loss: jax.Array = 0.0
    fair_gap_s: jax.Array = 2.0
    init_pkts_per_rtt: jax.Array = 10.0
    d_min_ms: jax.Array = 4.0
    ewma_gain: jax.Array = PARETO_EWMA_GAIN
    scale_dR: jax.Array = 20.0
    scale_dD: jax.Array = 5.0
    d_floor_ms: jax.Array = 0.01
    l_floor: jax.Array = 0.001
    delay_eps_ms: jax.Array = 0.01
    # Algorithm 1's startup branch gives −50 for any ΔR < 0.  Read literally, a sender holding a
    # steady rate is punished for measurement noise (in the simulator, float32 rounding of
    # ±1e-7; on a real path, far more).  A decrease counts only below −startup_dR_eps.
    startup_dR_eps: jax.Array = 0.01
    r_clip: jax.Array = 50.0
    max_time_s: jax.Array = jnp.inf
    # Pareto-Fair v2's training-only reward terms (module docstring; 0 = Algorithm 1 alone).
    fair_w: jax.Array = 0.0
    util_w: jax.Array = 0.0
    # The robust training distribution (module docstring); robust = 0: the paper's links above.
    robust: jax.Array = 0.0
    bw_lo_mbps: jax.Array = 5.0
    bw_hi_mbps: jax.Array = 100.0
    rtt_lo_s: jax.Array = 0.03
    rtt_hi_s: jax.Array = 0.15
    buf_bdp_lo: jax.Array = 0.5
    buf_bdp_hi: jax.Array = 6.0
    dyn_ratio_lo: jax.Array = 2.0
    dyn_ratio_hi: jax.Array = 10.0
    dyn_every_lo_s: jax.Array = 2.0
    dyn_every_hi_s: jax.Array = 6.0
    init_frac_lo: jax.Array = 0.01
    init_frac_hi: jax.Array = 2.0
    # Shared links: active flows drawn uniformly from {flows_lo..flows_hi}, then capped at the F slots
    # (with F = 4: 2 and 3 flows in 1/7 of the episodes each, 4 in 5/7).
    flows_lo: jax.Array = 2.0
    flows_hi: jax.Array = 8.0
    gap_lo_s: jax.Array = 0.0  # start gap between consecutive flows, uniform in [gap_lo_s, gap_hi_s]
    gap_hi_s: jax.Array = 2.0
    p_low_first: jax.Array = 0.5  # a stepping capacity starts at its low value with this probability
    p_depart: jax.Array = 0.25  # each later flow leaves with this probability, uniformly in its lifetime
    # Mixed RTTs on shared links (robust fairness stage, ``ParetoConfig.rtt_ratio_max`` > 1): with
    # this probability each active flow's RTT is the drawn RTT times a factor log-uniform in
    # [1, rtt_ratio_max], rescaled so that the smallest is 1 (the drawn RTT stays the link's smallest).
    p_mixed_rtt: jax.Array = 0.0


@struct.dataclass
class ParetoFlow:
    """Per-flow state ([F] leaves)."""

    started: jax.Array  # a previous step exists
    rtt: jax.Array  # EWMA RTT (s)
    R: jax.Array  # EWMA delivery rate (bytes/s)
    l: jax.Array  # EWMA loss rate
    d_ms: jax.Array  # delay d_{t} (ms) of the last step
    dD: jax.Array  # (dD/dT) of the last step
    exp_delay: jax.Array  # experienced delay at some step so far
    prev_delayed: jax.Array  # the last step had d >= d_min


class ParetoSignals(struct.PyTreeNode):
    """The per-step quantities of §III (unscaled)."""

    dR: jax.Array
    dD: jax.Array
    dL: jax.Array
    X: jax.Array
    d_ms: jax.Array
    delayed: jax.Array
    q_pkts: jax.Array  # v2: own standing queue R_t·d̂_t / MSS (packets)


def apply_action(rate, a, a_range=(A_LOW, A_HIGH)):
    """§III: S_t = S_{t−1}·(1 + a_t) with a_t clipped to the action range ([−0.7, 2] in §III)."""
    return rate * (1.0 + jnp.clip(a, a_range[0], a_range[1]))


def signals(prev: ParetoFlow, m: mi_lib.MIStats, min_rtt, p: ParetoParams):
    """Updates the EWMAs and computes ΔR, dD/dT, dL/dT, X and d (see the module docstring).

    Args:
      prev: the flow state before this step.
      m: this step's MI statistics.
      min_rtt: min RTT of the episode including this step (s).
    Returns (ParetoSignals, new EWMA values (rtt, R, l)).
    """
    g = p.ewma_gain
    first = ~prev.started
    has = mi_lib.has_rtt(m)
    rtt = jnp.where(has, base.ewma(prev.rtt, mi_lib.rtt_mean(m), g, first | (prev.rtt <= 0)), prev.rtt)
    R = base.ewma(prev.R, mi_lib.delivery_rate(m), g, first)
    l = base.ewma(prev.l, mi_lib.loss_rate(m), g, first)
    dt_ms = m.duration * 1000.0
    d_ms = jnp.where(rtt > 0, jnp.maximum(rtt - min_rtt, 0.0) * 1000.0, 0.0)
    r_floor = units.MSS / jnp.maximum(m.duration, 1e-9)
    dR = (R - prev.R) / jnp.maximum(jnp.minimum(prev.R, R), r_floor)
    dD = (d_ms - prev.d_ms) / jnp.maximum(prev.d_ms, p.d_floor_ms) / dt_ms
    dL = (l - prev.l) / jnp.maximum(prev.l, p.l_floor) / dt_ms
    dR, dD, dL = (jnp.where(first, 0.0, x) for x in (dR, dD, dL))
    delayed = d_ms >= p.d_min_ms
    S = mi_lib.send_rate(m)
    X = jnp.where(delayed, (S - R) / jnp.maximum(R, r_floor), 0.0)
    # v2: the standing queue d̂ = (smallest RTT sample of the MI) − min RTT, 0 without a sample.
    d_stand = jnp.where(has, jnp.maximum(m.rtt_min - min_rtt, 0.0), 0.0)
    q_pkts = R * d_stand / units.MSS
    return ParetoSignals(dR=dR, dD=dD, dL=dL, X=X, d_ms=d_ms, delayed=delayed, q_pkts=q_pkts), (rtt, R, l)


def features(sig: ParetoSignals, exp_delay_now, p: ParetoParams, feature_set: str = "pareto_v1"):
    """pareto_v1: [flag, ΔR/20, (dD/dT)/5, dL/dT, X], [F, 5]; pareto_v2 appends
    log2(1 + q_pkts)/8, [F, 6]."""
    cols = [exp_delay_now.astype(jnp.float32), sig.dR / p.scale_dR, sig.dD / p.scale_dD, sig.dL, sig.X]
    if feature_set == "pareto_v2":
        cols.append(jnp.log2(1.0 + sig.q_pkts) / 8.0)
    elif feature_set != "pareto_v1":
        raise ValueError(f"unknown Pareto feature set {feature_set!r}; expected one of {', '.join(FEATURE_SETS)}")
    return jnp.stack(cols, axis=-1)


def zero_flows(num_flows: int, dtype=jnp.float32) -> ParetoFlow:
    """The per-flow memory before the first monitor interval (``dtype`` for the float leaves)."""
    z = jnp.zeros((num_flows,), dtype)
    b = jnp.zeros((num_flows,), bool)
    return ParetoFlow(started=b, rtt=z, R=z, l=z, d_ms=z, dD=z, exp_delay=b, prev_delayed=b)


def observe_features(prev: ParetoFlow, m: mi_lib.MIStats, min_rtt, p: ParetoParams,
                     feature_set: str = "pareto_v1"):
    """The feature half of ``ParetoEnv.observe``: one MI's signals, the features and the flows'
    new memory, ``(features [F, D], new ParetoFlow, signals)``.  The simulator senders
    (``jaxcc.senders.pareto_v1``, ``pareto_v2``) and the parity vectors run this same code."""
    sig, (rtt, R, l) = signals(prev, m, min_rtt, p)
    exp_now = prev.exp_delay | sig.delayed
    feats = features(sig, exp_now, p, feature_set)
    new = ParetoFlow(started=jnp.ones_like(prev.started), rtt=rtt, R=R, l=l, d_ms=sig.d_ms, dD=sig.dD,
                     exp_delay=exp_now, prev_delayed=sig.delayed)
    return feats, new, sig


def reward(sig: ParetoSignals, exp_before, prev_delayed, prev_dD, prev_d_ms, p: ParetoParams):
    """Algorithm 1, per flow.

    startup (d_t < d_min and never delayed before):   r = −50 if ΔR < −eps else 10·ΔR
                                                       (eps = startup_dR_eps: a noise deadband)
    queue draining (d_t >= d_min):
        first delay ever:                              r = −0.2·(dD/dT)_t + 10·ΔR
        otherwise:                                     r = −5·(dL/dT)_t − 10·clip(X_t, 0, 1), then
            if the delay changed (|d_t − d_{t−1}| > eps): r −= 0.25·((dD/dT)_t − (dD/dT)_{t−1})
            else:                                      r −= 15·(dL/dT)_t
    bandwidth probing (d_t < d_min, delayed before):
        first step out of delay:                       r = −(dD/dT)_t + 10·ΔR
        otherwise:                                     r = 50·ΔR
    r = clip(r, −50, 50)
    """
    startup = jnp.where(sig.dR < -p.startup_dR_eps, -50.0, 10.0 * sig.dR)
    changed = jnp.abs(sig.d_ms - prev_d_ms) > p.delay_eps_ms
    # §III: "X_t lies between [0, 1]".  Unclipped, X < 0 while the queue drains would pay the
    # agent for crashing its rate (−10·X > 0), and X > 1 would swamp the other terms.
    drain_later = -5.0 * sig.dL - 10.0 * jnp.clip(sig.X, 0.0, 1.0)
    drain_later = jnp.where(changed, drain_later - 0.25 * (sig.dD - prev_dD), drain_later - 15.0 * sig.dL)
    drain = jnp.where(exp_before, drain_later, -0.2 * sig.dD + 10.0 * sig.dR)
    probe = jnp.where(prev_delayed, -sig.dD + 10.0 * sig.dR, 50.0 * sig.dR)
    r = jnp.where(sig.delayed, drain, jnp.where(exp_before, probe, startup))
    return jnp.clip(r, -p.r_clip, p.r_clip)


def phase(sig: ParetoSignals, exp_before):
    """0 startup, 1 queue draining, 2 bandwidth probing."""
    return jnp.where(sig.delayed, 1, jnp.where(exp_before, 2, 0)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class ParetoConfig(base.EnvConfig):
    """``EnvConfig`` plus the feature set (static: it decides ``obs_dim`` and the action range) and
    the largest ratio of a shared link's RTTs (static: it sizes the feedback ring; 1: one RTT)."""

    feature_set: str = "pareto_v1"
    rtt_ratio_max: float = 1.0


class ParetoEnv(base.MultiFlowEnv):
    name = "pareto"

    @property
    def a_range(self) -> tuple[float, float]:
        return FEATURE_SETS[self.config.feature_set][1]

    def action_spec(self) -> dict:
        lo, hi = self.a_range
        return {"kind": "continuous", "low": lo, "high": hi}

    @property
    def default_params(self) -> ParetoParams:
        p = base.params_as_arrays(ParetoParams(), ("stage",))
        stage = STAGE_FAIRNESS if self.config.num_flows >= 2 else STAGE_BOOTSTRAP
        return p.replace(stage=jnp.asarray(stage, jnp.int32))

    def _paper_link(self, key, p: ParetoParams):
        """§V-A's training links: (times, rates, buffer, rtt [F], start [F], stop [F], rate0 [F])."""
        c = self.config
        kb, kd, kp = jax.random.split(key, 3)
        bw_fixed = p.boot_mbps[jax.random.randint(kb, (), 0, p.boot_mbps.shape[0])]
        pair = p.dyn_pairs_mbps[jax.random.randint(kp, (), 0, p.dyn_pairs_mbps.shape[0])]
        dynamic = (p.stage == STAGE_ADVANCE) & (jax.random.uniform(kd, ()) < p.p_dynamic)
        seg = jnp.arange(c.num_segments)
        mbps_dyn = jnp.where(seg % 2 == 0, pair[0], pair[1])
        mbps = jnp.where(dynamic, mbps_dyn, bw_fixed)
        times = seg.astype(jnp.float32) * p.change_every_s
        f = c.num_flows
        idx = jnp.arange(f)
        fair = p.stage == STAGE_FAIRNESS
        # Fairness: flow i starts i·gap seconds in; other stages: only flow 0 exists.
        start = jnp.where(fair, idx * p.fair_gap_s, 0.0)
        stop = jnp.where(fair | (idx == 0), 1e9, 0.0)
        rtt = jnp.full((f,), p.rtt_s)
        rate0 = jnp.full((f,), p.init_pkts_per_rtt * units.MSS / p.rtt_s)
        return times, mbps * units.MBPS, jnp.asarray(p.buffer_bytes, jnp.float32), rtt, start, stop, rate0

    def _robust_link(self, key, p: ParetoParams):
        """The robust distribution (module docstring), same tuple as ``_paper_link``."""
        c = self.config
        f = c.num_flows
        ks = jax.random.split(key, 10)
        bw = samplers.log_uniform(ks[0], p.bw_lo_mbps, p.bw_hi_mbps)
        rtt_s = samplers.log_uniform(ks[1], p.rtt_lo_s, p.rtt_hi_s)
        ratio = samplers.log_uniform(ks[2], p.dyn_ratio_lo, p.dyn_ratio_hi)
        every = jax.random.uniform(ks[3], (), minval=p.dyn_every_lo_s, maxval=p.dyn_every_hi_s)
        low_first = jax.random.uniform(ks[4], ()) < p.p_low_first
        dynamic = (p.stage == STAGE_ADVANCE) & (jax.random.uniform(ks[5], ()) < p.p_dynamic)
        seg = jnp.arange(c.num_segments)
        low_phase = (seg % 2 == 0) == low_first  # alternate low/high, starting either way
        mbps = jnp.where(dynamic, jnp.where(low_phase, bw, bw * ratio), bw)
        times = seg.astype(jnp.float32) * jnp.where(dynamic, every, 1e3)
        bdp_low = bw * units.MBPS * rtt_s  # the BDP at the schedule's lowest capacity
        buffer = samplers.log_uniform(ks[6], p.buf_bdp_lo, p.buf_bdp_hi) * bdp_low
        fair = p.stage == STAGE_FAIRNESS
        horizon = c.max_steps * c.mi_rtts * rtt_s
        n, start, stop = samplers.arrivals(ks[7], ks[8], ks[9], f, jnp.where(fair, p.flows_lo, 1.0),
                                           jnp.where(fair, p.flows_hi, 1.0), p.gap_lo_s, p.gap_hi_s, p.p_depart,
                                           horizon)
        share = mbps[0] * units.MBPS / n
        frac = samplers.log_uniform(jax.random.fold_in(key, 11), p.init_frac_lo, p.init_frac_hi, (f,))
        rate0 = frac * share
        rtt = jnp.full((f,), rtt_s)
        if c.rtt_ratio_max > 1.0:  # static: with one RTT the draws above are all there is
            k_mix, k_fac = jax.random.split(jax.random.fold_in(key, 12))
            used = jnp.arange(f) < n
            fac = jnp.where(used, samplers.log_uniform(k_fac, 1.0, c.rtt_ratio_max, (f,)), jnp.inf)
            fac = jnp.where(used, fac / jnp.min(fac), 1.0)
            mixed = fair & (jax.random.uniform(k_mix, ()) < p.p_mixed_rtt)
            rtt = jnp.where(mixed, rtt_s * fac, rtt)
        return times, mbps * units.MBPS, buffer, rtt, start, stop, rate0

    def sample_episode(self, key, p: ParetoParams) -> base.EpisodeInit:
        c = self.config
        paper = self._paper_link(key, p)
        robust = self._robust_link(jax.random.fold_in(key, 0x0B), p)
        times, rates, buffer, rtt, start, stop, rate0 = (jnp.where(p.robust > 0, b, a) for a, b in zip(paper, robust))
        link = links.link_from_arrays(times, rates, buffer, p.loss, rtt, start, stop, ticks_per_rtt=c.ticks_per_rtt)
        f = c.num_flows
        return base.EpisodeInit(link=link, rate=rate0, cwnd=jnp.full((f,), core.BIG), goal=jnp.zeros((f, 0)))

    def init_paper(self, init, p):
        return zero_flows(self.config.num_flows)

    def apply_action(self, state, action, p):
        a = jnp.asarray(action, jnp.float32).reshape(self.config.num_flows)
        return apply_action(state.rate, a, self.a_range), state.cwnd, state.paper

    def observe(self, state, prev: ParetoFlow, m, run, lmi, p):
        min_rtt = mi_lib.known_min_rtt(run, state.link.rtt)
        feats, new, sig = observe_features(prev, m, min_rtt, p, self.config.feature_set)
        r1 = reward(sig, prev.exp_delay, prev.prev_delayed, prev.dD, prev.d_ms, p)
        r = jnp.clip(r1 + link_terms(new.R, m, lmi, p), -p.r_clip, p.r_clip)
        # "alg1_reward": Algorithm 1 alone, what decides when the expert plays (Algorithm 3 line 3).
        info = {"phase": phase(sig, prev.exp_delay), "d_ms": sig.d_ms, "alg1_reward": r1}
        return base.StepOut(features=feats, reward=r, paper=new, terminated=jnp.zeros((), bool), info=info)


# Validation links for snapshot selection (``jaxcc.agents.pareto.td3``, ``select.validation =
# "disjoint"``).  Each is a point of the robust distribution chosen to differ from every evaluation
# scenario and bar (``jaxcc.scenarios``: 50 Mbit/s at 90 ms / 440 KB, 10↔20 and 10↔30 Mbit/s, the
# LTE trace, 12 Mbit/s / 40 ms / 375 KB, the robust/* 50 Mbit/s links, Aurora's 30 Mbit/s / 60 ms,
# Eagle's 10 Mbit/s / 100 ms, MOCC's 12 Mbit/s / 20 ms): other bandwidths, RTTs and buffers, other
# flow counts and start gaps, other step sizes.  Fields: bandwidth Mbit/s, step ratio (1 = fixed),
# step period s, starts low (1) or high (0), RTT s, buffer in BDPs of the lowest capacity,
# flows, start gap s, initial rate as a fraction of the fair share.
VALIDATION_LINKS = (
    # bw,  ratio, every, low1st, rtt,   buf,  flows, gap, init
    (35.0, 1.0, 5.0, 1.0, 0.060, 1.2, 1, 0.0, 0.05),
    (8.0, 1.0, 5.0, 1.0, 0.140, 3.0, 1, 0.0, 0.3),
    (70.0, 1.0, 5.0, 1.0, 0.035, 4.0, 1, 0.0, 0.02),
    (15.0, 3.0, 4.0, 1.0, 0.050, 2.0, 1, 0.0, 1.0),
    (6.0, 6.0, 3.0, 0.0, 0.080, 3.0, 1, 0.0, 0.5),
    (25.0, 1.0, 5.0, 1.0, 0.070, 1.5, 3, 1.0, 0.1),
    (80.0, 1.0, 5.0, 1.0, 0.040, 2.0, 4, 0.5, 0.3),
    (20.0, 1.0, 5.0, 1.0, 0.110, 0.7, 2, 2.0, 2.0),
)
VALIDATION_FLOWS = max(v[6] for v in VALIDATION_LINKS)


def validation_params(p: ParetoParams) -> ParetoParams:
    """``VALIDATION_LINKS`` as ``ParetoParams`` with a leading [V] axis (point masses of the robust
    distribution, no departures), on top of ``p`` (its reward weights and other leaves)."""
    rows = []
    for bw, ratio, every, low1st, rtt, buf, flows, gap, init in VALIDATION_LINKS:
        stage = STAGE_ADVANCE if ratio > 1.0 else (STAGE_FAIRNESS if flows >= 2 else STAGE_BOOTSTRAP)
        rows.append(p.replace(
            stage=jnp.asarray(stage, jnp.int32), robust=jnp.float32(1.0), p_dynamic=jnp.float32(ratio > 1.0),
            bw_lo_mbps=jnp.float32(bw), bw_hi_mbps=jnp.float32(bw), dyn_ratio_lo=jnp.float32(ratio),
            dyn_ratio_hi=jnp.float32(ratio), dyn_every_lo_s=jnp.float32(every), dyn_every_hi_s=jnp.float32(every),
            p_low_first=jnp.float32(low1st), rtt_lo_s=jnp.float32(rtt), rtt_hi_s=jnp.float32(rtt),
            buf_bdp_lo=jnp.float32(buf), buf_bdp_hi=jnp.float32(buf), flows_lo=jnp.float32(flows),
            flows_hi=jnp.float32(flows), gap_lo_s=jnp.float32(gap), gap_hi_s=jnp.float32(gap),
            init_frac_lo=jnp.float32(init), init_frac_hi=jnp.float32(init), p_depart=jnp.float32(0.0)))
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *rows)


# Validation links with a CUBIC neighbour (``select.coexist_links``; ``configs/pareto_coexist.py``):
# one learned flow from 0 s beside a CUBIC flow that starts in the first
# ``COEXIST_VALIDATION_START_S`` seconds (``EnvConfig.competitor``, two flow slots), on fixed links
# unlike the ``coexist/*`` scenarios (20 Mbit/s, 40 ms, 1 BDP) and every other evaluation link.
# Fields: bandwidth Mbit/s, RTT s, buffer in BDPs.
COEXIST_VALIDATION_LINKS = (
    (30.0, 0.070, 2.0),
    (9.0, 0.030, 1.5),
    (45.0, 0.050, 0.8),
)
COEXIST_VALIDATION_FLOWS = 2
COEXIST_VALIDATION_START_S = 2.0


def coexist_validation_params(p: ParetoParams) -> ParetoParams:
    """``COEXIST_VALIDATION_LINKS`` as ``ParetoParams`` with a leading [V] axis (fixed links, one
    learned flow from 0 s at a quarter of the fair share), on top of ``p``.  The environment's
    competitor (``p_competitor = 1``) takes the second slot."""
    rows = []
    for bw, rtt, buf in COEXIST_VALIDATION_LINKS:
        rows.append(p.replace(
            stage=jnp.asarray(STAGE_FAIRNESS, jnp.int32), robust=jnp.float32(1.0), p_dynamic=jnp.float32(0.0),
            bw_lo_mbps=jnp.float32(bw), bw_hi_mbps=jnp.float32(bw), rtt_lo_s=jnp.float32(rtt),
            rtt_hi_s=jnp.float32(rtt), buf_bdp_lo=jnp.float32(buf), buf_bdp_hi=jnp.float32(buf),
            flows_lo=jnp.float32(1.0), flows_hi=jnp.float32(1.0), init_frac_lo=jnp.float32(0.25),
            init_frac_hi=jnp.float32(0.25), p_depart=jnp.float32(0.0)))
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *rows)


def link_terms(R, m: mi_lib.MIStats, lmi: base.LinkMI, p: ParetoParams):
    """Pareto-Fair v2's training-only reward terms (0 with ``fair_w = util_w = 0``), per flow [F]:
    −fair_w·|log(R_i / mean R)| over the flows active in the MI when at least two are, and
    +util_w·min(Σ acked / (capacity·MI), 1), the link's utilization, shared by its flows.  On
    per-flow clocks (``lmi.cap_bytes`` [F], each flow's MI its own) the utilization seen by flow
    ``i`` is Σ_j delivery rate_j / capacity over i's MI, each rate over its flow's own MI."""
    act = m.active > 0
    n = jnp.sum(act)
    floor = units.MSS / jnp.maximum(m.duration, 1e-9)
    Rf = jnp.maximum(R, floor)
    mean_R = jnp.sum(jnp.where(act, Rf, 0.0)) / jnp.maximum(n, 1)
    dev = jnp.abs(jnp.log(Rf / jnp.maximum(mean_R, 1e-9)))
    fair = jnp.where(act & (n >= 2), -p.fair_w * dev, 0.0)
    if jnp.ndim(lmi.cap_bytes) == 0:  # one clock: every flow's MI is the step
        util = jnp.minimum(jnp.sum(jnp.where(act, m.acked, 0.0)) / jnp.maximum(lmi.cap_bytes, 1.0), 1.0)
    else:
        rates = jnp.sum(jnp.where(act, mi_lib.delivery_rate(m), 0.0))
        util = jnp.minimum(rates * m.duration / jnp.maximum(lmi.cap_bytes, 1.0), 1.0)
    return fair + jnp.where(act, p.util_w * util, 0.0)


def make_config(num_flows: int = 1, ticks_per_rtt: int = 8, history: int = 8, max_steps: int = 60,
                feature_set: str = "pareto_v1", **kw) -> ParetoConfig:
    """60 steps of 2 × 90 ms = 10.8 s: capacity segments every 5 s → 3 (4 with slack).  Ring: a
    full 440 KB buffer drained at 5 Mbps on a 90 ms RTT.  ``feature_set="pareto_v2"``: Pareto-Fair
    v2 (module docstring), whose robust distribution needs 8 segments (steps every ≥ 2 s over up to
    18 s) and whose buffers hold at most ``buf_bdp_hi`` RTTs at the lowest capacity (×2 for
    cross traffic taking up to half the link)."""
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set: unknown Pareto feature set {feature_set!r}; "
                         f"expected one of {', '.join(FEATURE_SETS)}")
    p = ParetoParams()
    wait_over_rtt = (float(p.buffer_bytes) + 2 * units.MSS) / (min(BOOT_MBPS) * units.MBPS) / float(p.rtt_s)
    segments = 4
    if feature_set == "pareto_v2":
        wait_over_rtt = max(wait_over_rtt, 2.0 * float(p.buf_bdp_hi))
        segments = 8
    # A flow with k times the smallest RTT hears back k·ticks_per_rtt ticks after it sent.
    wait_over_rtt += float(kw.get("rtt_ratio_max", 1.0)) - 1.0
    ring = base.ring_len_worst(wait_over_rtt, ticks_per_rtt)
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=2.0, history=history,
               obs_dim=len(FEATURE_SETS[feature_set][0]), max_steps=max_steps, ring_len=ring,
               num_segments=segments, feature_set=feature_set)
    cfg.update(kw)
    min_rtt = float(p.rtt_lo_s) if feature_set == "pareto_v2" else float(p.rtt_s)
    return base.env_config(cfg, min_rtt_s=min_rtt, cls=ParetoConfig)  # realism (if any) lengthens the ring


def export_features_spec(config: base.EnvConfig | None = None) -> dict:
    c = config or make_config()
    p = ParetoParams()
    names, (lo, hi) = FEATURE_SETS[c.feature_set]
    return {
        "name": c.feature_set, "history": c.history, "obs_dim": len(names), "feature_names": list(names),
        "empty": [0.0] * len(names), "scale_dR": 20.0, "scale_dD": 5.0, "d_min_ms": 4.0, "ewma_gain": PARETO_EWMA_GAIN,
        "d_floor_ms": float(p.d_floor_ms), "l_floor": float(p.l_floor), "dt_unit": "ms",
        "mi_rtts": c.mi_rtts, "ticks_per_rtt": c.ticks_per_rtt, "action_low": lo, "action_high": hi,
    }
