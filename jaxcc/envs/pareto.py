"""Pareto (TNSE 2022): TD3 + LSTM rate control with phase rewards and staged training.

Paper: /work/shared/seeds/000_cf449386ba6f7c1a.txt, §III ("Formulating congestion control as an
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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc.envs import base
from jaxcc.envs import mi as mi_lib
from jaxcc.sim import core, links

A_LOW, A_HIGH = -0.7, 2.0  # §III action range
FEATURE_NAMES = ("delay_flag", "delta_R/20", "dDdT/5", "dLdT", "excess_X")
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


def apply_action(rate, a):
    """§III: S_t = S_{t−1}·(1 + a_t) with a_t clipped to [−0.7, 2]."""
    return rate * (1.0 + jnp.clip(a, A_LOW, A_HIGH))


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
    r_floor = core.MSS / jnp.maximum(m.duration, 1e-9)
    dR = (R - prev.R) / jnp.maximum(jnp.minimum(prev.R, R), r_floor)
    dD = (d_ms - prev.d_ms) / jnp.maximum(prev.d_ms, p.d_floor_ms) / dt_ms
    dL = (l - prev.l) / jnp.maximum(prev.l, p.l_floor) / dt_ms
    dR, dD, dL = (jnp.where(first, 0.0, x) for x in (dR, dD, dL))
    delayed = d_ms >= p.d_min_ms
    S = mi_lib.send_rate(m)
    X = jnp.where(delayed, (S - R) / jnp.maximum(R, r_floor), 0.0)
    return ParetoSignals(dR=dR, dD=dD, dL=dL, X=X, d_ms=d_ms, delayed=delayed), (rtt, R, l)


def features(sig: ParetoSignals, exp_delay_now, p: ParetoParams):
    """[flag, ΔR/20, (dD/dT)/5, dL/dT, X], [F, 5]."""
    return jnp.stack([exp_delay_now.astype(jnp.float32), sig.dR / p.scale_dR, sig.dD / p.scale_dD, sig.dL, sig.X],
                     axis=-1)


def zero_flows(num_flows: int, dtype=jnp.float32) -> ParetoFlow:
    """The per-flow memory before the first monitor interval (``dtype`` for the float leaves)."""
    z = jnp.zeros((num_flows,), dtype)
    b = jnp.zeros((num_flows,), bool)
    return ParetoFlow(started=b, rtt=z, R=z, l=z, d_ms=z, dD=z, exp_delay=b, prev_delayed=b)


def observe_features(prev: ParetoFlow, m: mi_lib.MIStats, min_rtt, p: ParetoParams):
    """The feature half of ``ParetoEnv.observe``: one MI's signals, the five features and the
    flows' new memory, ``(features [F, 5], new ParetoFlow, signals)``.  The simulator sender
    (``jaxcc.senders.pareto_v1``) and the parity vectors run this same code."""
    sig, (rtt, R, l) = signals(prev, m, min_rtt, p)
    exp_now = prev.exp_delay | sig.delayed
    feats = features(sig, exp_now, p)
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


class ParetoEnv(base.MultiFlowEnv):
    name = "pareto"

    def action_spec(self) -> dict:
        return {"kind": "continuous", "low": A_LOW, "high": A_HIGH}

    @property
    def default_params(self) -> ParetoParams:
        p = base.params_as_arrays(ParetoParams(), ("stage",))
        stage = STAGE_FAIRNESS if self.config.num_flows >= 2 else STAGE_BOOTSTRAP
        return p.replace(stage=jnp.asarray(stage, jnp.int32))

    def sample_episode(self, key, p: ParetoParams) -> base.EpisodeInit:
        c = self.config
        kb, kd, kp = jax.random.split(key, 3)
        bw_fixed = p.boot_mbps[jax.random.randint(kb, (), 0, p.boot_mbps.shape[0])]
        pair = p.dyn_pairs_mbps[jax.random.randint(kp, (), 0, p.dyn_pairs_mbps.shape[0])]
        dynamic = (p.stage == STAGE_ADVANCE) & (jax.random.uniform(kd, ()) < p.p_dynamic)
        seg = jnp.arange(c.num_segments)
        mbps_dyn = jnp.where(seg % 2 == 0, pair[0], pair[1])
        mbps = jnp.where(dynamic, mbps_dyn, bw_fixed)
        times = seg.astype(jnp.float32) * p.change_every_s
        rates = mbps * links.MBPS
        f = c.num_flows
        idx = jnp.arange(f)
        fair = p.stage == STAGE_FAIRNESS
        # Fairness: flow i starts i·gap seconds in; other stages: only flow 0 exists.
        start = jnp.where(fair, idx * p.fair_gap_s, 0.0)
        stop = jnp.where(fair | (idx == 0), 1e9, 0.0)
        rtt = jnp.full((f,), p.rtt_s)
        link = links.link_from_arrays(times, rates, p.buffer_bytes, p.loss, rtt, start, stop,
                                      ticks_per_rtt=c.ticks_per_rtt)
        rate0 = jnp.full((f,), p.init_pkts_per_rtt * core.MSS / p.rtt_s)
        return base.EpisodeInit(link=link, rate=rate0, cwnd=jnp.full((f,), core.BIG), goal=jnp.zeros((f, 0)))

    def init_paper(self, init, p):
        return zero_flows(self.config.num_flows)

    def apply_action(self, state, action, p):
        a = jnp.asarray(action, jnp.float32).reshape(self.config.num_flows)
        return apply_action(state.rate, a), state.cwnd, state.paper

    def observe(self, state, prev: ParetoFlow, m, run, lmi, p):
        min_rtt = mi_lib.known_min_rtt(run, state.link.rtt)
        feats, new, sig = observe_features(prev, m, min_rtt, p)
        r = reward(sig, prev.exp_delay, prev.prev_delayed, prev.dD, prev.d_ms, p)
        info = {"phase": phase(sig, prev.exp_delay), "d_ms": sig.d_ms}
        return base.StepOut(features=feats, reward=r, paper=new, terminated=jnp.zeros((), bool), info=info)


def make_config(num_flows: int = 1, ticks_per_rtt: int = 8, history: int = 8, max_steps: int = 60,
                **kw) -> base.EnvConfig:
    """60 steps of 2 × 90 ms = 10.8 s: capacity segments every 5 s → 3 (4 with slack).  Ring: a
    full 440 KB buffer drained at 5 Mbps on a 90 ms RTT."""
    p = ParetoParams()
    wait = (float(p.buffer_bytes) + 2 * core.MSS) / (min(BOOT_MBPS) * links.MBPS)
    ring = base.ring_len_worst(wait / float(p.rtt_s), ticks_per_rtt)
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=2.0, history=history, obs_dim=5,
               max_steps=max_steps, ring_len=ring, num_segments=4)
    cfg.update(kw)
    return base.env_config(cfg, min_rtt_s=float(p.rtt_s))  # realism (if any) lengthens the ring


def export_features_spec(config: base.EnvConfig | None = None) -> dict:
    c = config or make_config()
    p = ParetoParams()
    return {
        "name": "pareto_v1", "history": c.history, "obs_dim": 5, "feature_names": list(FEATURE_NAMES),
        "empty": [0.0] * 5, "scale_dR": 20.0, "scale_dD": 5.0, "d_min_ms": 4.0, "ewma_gain": PARETO_EWMA_GAIN,
        "d_floor_ms": float(p.d_floor_ms), "l_floor": float(p.l_floor), "dt_unit": "ms",
        "mi_rtts": c.mi_rtts, "ticks_per_rtt": c.ticks_per_rtt, "action_low": A_LOW, "action_high": A_HIGH,
    }
