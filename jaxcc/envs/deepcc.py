"""DeepCC (IEEE/ACM ToN 2022): goal-conditioned multi-objective rate control.

Paper: DeepCC: Bridging the Gap Between Congestion Control and Applications via Multiobjective Optimization (Hu et al., IEEE/ACM ToN 2022), §IV-A (measurement eq. 1, goal eq. 2,
reward eq. 3), §IV-B (state, action), §V (implementation: decision interval ½ min RTT,
16 past states, 60 s episodes, Wi-Fi-like Poisson training link).

* State s_t (Table II), scale-free so one policy serves any link speed:
    0. s¹ the last action u ∈ [0, 1] — the policy's own output, a position on the log rate
       scale between ``low_mbps`` and ``bound_mbps`` (below);
    1. s² EWMA of the RTT / min RTT of the connection;
    2. s³ actual sending rate of the interval / throughput_max (the largest delivery rate of the
       connection so far, eq. 1's normaliser; 0 before any delivery), clipped to [0, 10];
    3. s⁴ average queuing delay of the interval / min RTT, (mean RTT − min RTT)/min RTT.
* Measurement m_t (eq. 1), appended to the state as features 4..6:
    m¹ = throughput_t / throughput_max   (throughput_max = max over the connection so far)
    m² = delay_t / delay_min              (delay_t = 95th-percentile RTT of the interval,
                                           delay_min = min RTT of the connection)
    m³ = loss rate_t
  The observation is the last 16 vectors [s, m] (the Conv1D input of §V), shape [F, 16, 7].
* Goal g_t (eq. 2): on the simplex, drawn uniformly (Dirichlet(1,1,1)) per episode and flow;
  ``env.goal(state)`` returns it.  g = (throughput, delay, loss) weights.
* Reward (eq. 3): r_t = g¹·m¹ − g²·m² − g³·m³ / threshold, threshold = 0.01 (the loss
  tolerance; the paper's example requirement is "loss rate within 1 %").
* Action (§IV-B: a sending rate in [0, bound]): the env takes u ∈ [0, 1] (the tanh output
  mapped to [0, 1]) and sends at ``low · (bound/low) ** u`` — a log scale from ``low_mbps`` =
  0.1 to ``bound_mbps`` = 100 Mbit/s, so that one policy covers every evaluated link (Wi-Fi
  2.64 Mbit/s, the AT&T cellular trace, the 42 Mbit/s satellite) with the same relative
  resolution everywhere (a step of 0.01 in u is a 7 % rate change at any speed); the policy
  file's action block is ``rate_absolute`` with ``scale: log``, ``low_mbps``, ``bound_mbps``.
  The paper's [0, bound] linear scale with bound = 42+ Mbit/s would leave the 2.64 Mbit/s Wi-Fi
  link 6 % of the action range.
* Decision interval: ½ min RTT (``mi_rtts = 0.5``); episodes last 60 s of simulated time
  (truncation), the step cap is sized for the shortest RTT.

Decisions where the paper is silent:

* The p95 of an interval's RTT samples: with per-tick samples an interval has at most 4, and
  the nearest-rank 95th percentile of n ≤ 20 samples is the largest, so delay_t = the MI's
  max RTT sample (a per-packet datapath would take the real percentile).  When the interval
  has no RTT sample, the previous m² is kept (1 at the start).
* EWMA gain 0.8 on the newest interval, as for Pareto/Eagle (across intervals, reproducible).
* Training link (§V "the fluctuation of bandwidth follows Poisson distribution, like the Wi-Fi
  link"; evaluation Wi-Fi: 2.64 Mbps mean, 176 ms min RTT, 130-packet buffer): mean capacity
  uniform in [``mean_lo_mbps``, ``mean_hi_mbps``] (1–6 Mbps), Poisson delivery opportunities per
  10 ms slot (``poisson_schedule``) (``SLOT_S``, the Wi-Fi scenario's ``slot_ms``), min RTT 100–250 ms, buffer 65–260
  packets, random loss uniform in [``loss_lo``, ``loss_hi``] (0 by default).  Options for wider
  samplers: ``mean_log`` (log-uniform mean), ``buf_bdp_lo/hi`` (buffers in BDPs) with
  ``buf_pkts_prob`` (that share of links keeps the packet range); ``configs/deepcc.py`` trains
  on such a wider sampler (measured in ``configs/deepcc_clean.py``).  The start:
  u = ``init_action`` = 1/3, i.e. 1 Mbit/s (the datapath sender's ``--init-mbps``).
* The reward's throughput term (decided; measured): eq. 1 divides throughput_t by
  "the maximum value among all the history throughput".  Read as the connection's own running
  maximum (the observation's m¹, all a deployed sender knows), eq. 3 is maximised by any
  constant rate below capacity from the start of a connection (m¹ = 1, m² = 1, m³ = 0 at
  0.1 Mbit/s as at capacity), and probing higher only lowers every later m¹: a DDPG run
  (configs/deepcc.py without the robust dynamics, 1500 updates) drove u to 0 (0.1 Mbit/s) with that reward.  The paper
  trained on one Wi-Fi link, where the history of all its training connections makes the
  maximum the link's peak; with a link drawn per episode we take the link's mean capacity over
  the episode (``thr_ref``, ``reward_link_norm`` = 1), so the reward's m¹ is the utilisation.
  The observation keeps the running maximum.
* Rate-based sending by default (``cwnd_rtts`` 0: paced at the rate, no window).  §V "DeepCC
  Implementation" derives a cwnd from the rate and ACK-clocks it; ``cwnd_rtts`` > 0 does that
  (``ack_clock_cwnd``: cwnd_rtts × rate × min RTT from the first MI on; the paper gives no
  multiplier), in training and, through the file's features, in both senders.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcc import units
from jaxcc.envs import base
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import samplers
from jaxcc.sim import core, links

FEATURE_NAMES = ("last_action", "rtt_ewma_over_min", "send_rate_over_thr_max", "qdelay_over_min",
                 "m_throughput", "m_delay", "m_loss")
HISTORY = 16
DEEPCC_EWMA_GAIN = 0.8
BOUND_MBPS = 100.0
LOW_MBPS = 0.1
INIT_ACTION = 1.0 / 3.0  # low·(bound/low)^(1/3) = 1 Mbit/s
SEND_RATIO_MAX = 10.0  # s³ clip
SLOT_S = 0.01
POISSON_KMAX = 256  # counts per slot the inverse-CDF sampler can draw (λ ≤ 150: 180 Mbit/s in 10 ms slots)
POISSON_LAM_MAX = 150.0
EPISODE_S = 60.0
CWND_RTTS_MAX = 100.0  # the ACK-clocked window's largest multiplier (features.cwnd_rtts)
TARGET_MAX_LOSS = 0.10  # the largest loss a requirement asks for, §VI-B: "ranges from 0 to 10%"


@struct.dataclass
class DeepccParams:
    mean_lo_mbps: jax.Array = 1.0
    mean_hi_mbps: jax.Array = 6.0
    rtt_lo_s: jax.Array = 0.1
    rtt_hi_s: jax.Array = 0.25
    buf_lo_pkts: jax.Array = 65.0
    buf_hi_pkts: jax.Array = 260.0
    buf_bdp_lo: jax.Array = 0.0  # > 0: the buffer is U[buf_bdp_lo, buf_bdp_hi] x BDP (mean capacity x RTT)
    buf_bdp_hi: jax.Array = 0.0  #   instead of U[buf_lo_pkts, buf_hi_pkts] packets
    buf_pkts_prob: jax.Array = 0.0  # with BDP buffers on: the share of episodes that draw packets anyway
    mean_log: jax.Array = 0.0  # 1: mean capacity log-uniform in [mean_lo, mean_hi] (else uniform)
    loss_lo: jax.Array = 0.0
    loss_hi: jax.Array = 0.0
    bound_mbps: jax.Array = BOUND_MBPS
    low_mbps: jax.Array = LOW_MBPS
    init_action: jax.Array = INIT_ACTION  # u at the start
    loss_threshold: jax.Array = 0.01
    ewma_gain: jax.Array = DEEPCC_EWMA_GAIN
    max_time_s: jax.Array = EPISODE_S
    # 1: the reward's throughput term is thr / the link's mean capacity (see the module
    # docstring); 0: thr / the connection's running max, the observation's m¹ (eq. 1 literally).
    reward_link_norm: jax.Array = 1.0
    # 1: the reward's m² and m³ are bounded by the largest delay and loss a target can ask for
    # (``bounded_measurement``); 0: eq. 3 literally.  Training only: needs the link's mean capacity.
    reward_bounded: jax.Array = 0.0
    # > 0: the window the paper's sender derives from the rate and ACK-clocks (§V "DeepCC
    # Implementation"): cwnd = cwnd_rtts x rate x min RTT (``ack_clock_cwnd``); 0: paced at the
    # rate alone, no window.
    cwnd_rtts: jax.Array = 0.0


@struct.dataclass
class DeepccFlow:
    started: jax.Array
    last_action: jax.Array  # u ∈ [0, 1] applied this interval
    rtt: jax.Array  # EWMA RTT (s)
    thr_max: jax.Array  # bytes/s
    thr_ref: jax.Array  # bytes/s: the link's mean capacity (reward normaliser); 0 when unknown
    m2_max: jax.Array  # the bounded reward's cap on m² (``m2_bound``); 0 when the link is unknown
    m2: jax.Array  # last delay measurement


def measurement(thr, thr_max, delay_p95, delay_min, loss):
    """eq. 1: (throughput/throughput_max, delay/delay_min, loss rate), [..., 3]."""
    return jnp.stack([thr / jnp.maximum(thr_max, 1e-9), delay_p95 / jnp.maximum(delay_min, 1e-9), loss], axis=-1)


def reward(g, m, threshold=0.01):
    """eq. 3: r = g¹m¹ − g²m² − g³m³/threshold."""
    return g[..., 0] * m[..., 0] - g[..., 1] * m[..., 1] - g[..., 2] * m[..., 2] / threshold


def m2_bound(mean_bps, buffer_bytes, rtt):
    """1 + B / (C̄ · RTT): the delay ratio m² of a full drop-tail buffer drained at the link's mean
    capacity C̄, the largest delay a target on this link asks for (``jaxcc.evaluation.tcr``:
    T2 ≤ B / C̄)."""
    return 1.0 + buffer_bytes / jnp.maximum(mean_bps * rtt, 1.0)


def bounded_measurement(m, m2_max):
    """m (eq. 1, [..., 3]) with m² ≤ ``m2_max`` (``m2_bound``) and m³ ≤ ``TARGET_MAX_LOSS``;
    unchanged where ``m2_max`` is 0 (the link unknown, as to a sender).

    Beyond those levels every requirement is already missed, so eq. 3's unbounded terms add no
    information about meeting one; they do swamp everything else after an outage (the delay ratio
    of the packets that waited it out reaches 50–150 at 100–250 ms RTTs) and make a rate far below
    capacity score best (measured in ``checkpoints/deepcc/README.md``, "Robust dynamics")."""
    known = m2_max > 0
    return m.at[..., 1].set(jnp.where(known, jnp.minimum(m[..., 1], m2_max), m[..., 1])).at[..., 2].set(
        jnp.where(known, jnp.minimum(m[..., 2], TARGET_MAX_LOSS), m[..., 2]))


def action_to_rate(u, bound_mbps, low_mbps=LOW_MBPS):
    """u ∈ [0, 1] → low·(bound/low)^u bytes/s (u clipped to [0, 1]): the policy file's
    ``rate_absolute`` with ``scale: log``."""
    u = jnp.clip(u, 0.0, 1.0)
    return low_mbps * jnp.exp(u * jnp.log(bound_mbps / low_mbps)) * units.MBPS


def rate_to_action(rate, bound_mbps, low_mbps=LOW_MBPS):
    """The inverse of ``action_to_rate``: bytes/s → u = log(rate/low)/log(bound/low), clipped to [0, 1]."""
    r = jnp.maximum(rate / units.MBPS, 1e-12)
    return jnp.clip(jnp.log(r / low_mbps) / jnp.log(bound_mbps / low_mbps), 0.0, 1.0)


def params_from_features(p: "DeepccParams", feats: dict) -> "DeepccParams":
    """``p`` with a policy file's ``features`` block's numbers (bound_mbps, low_mbps, ewma_gain,
    init_action, loss_threshold, cwnd_rtts where stated): what the simulator sender of an
    exported file runs.

    Raises:
      ValueError: naming the field when 0 < low_mbps < bound_mbps does not hold,
        features.scale is not "log" or cwnd_rtts is outside [0, ``CWND_RTTS_MAX``].
    """
    scale = feats.get("scale", "log")
    if scale != "log":
        raise ValueError(f"policy features: 'scale'={scale!r} must be 'log' (deepcc_v1)")
    bound = float(feats.get("bound_mbps", BOUND_MBPS))
    low = float(feats.get("low_mbps", LOW_MBPS))
    if not 0.0 < low < bound:
        raise ValueError(f"policy features: 'low_mbps'={low} must be in (0, bound_mbps={bound})")
    over = {"bound_mbps": bound, "low_mbps": low}
    cwnd_rtts = float(feats.get("cwnd_rtts", 0.0))
    if not 0.0 <= cwnd_rtts <= CWND_RTTS_MAX:
        raise ValueError(f"policy features: 'cwnd_rtts'={cwnd_rtts} must be in [0, {CWND_RTTS_MAX:g}] "
                         "(0: no window)")
    over["cwnd_rtts"] = cwnd_rtts
    for k in ("ewma_gain", "init_action", "loss_threshold"):
        if k in feats:
            over[k] = float(feats[k])
    return p.replace(**{k: jnp.asarray(v, jnp.float32) for k, v in over.items()})


def ack_clock_cwnd(rate, min_rtt, cwnd_rtts):
    """The window the paper's sender derives from its rate (§V "DeepCC Implementation": "the
    sender can calculate the new cwnd size and pace these packets in an ack-clock"):
    ``cwnd_rtts`` x rate x min RTT, at least two packets.  The paper does not give the
    multiplier; 1 is the rate's own bandwidth-delay product."""
    return jnp.maximum(cwnd_rtts * rate * min_rtt, 2.0 * units.MSS)


def poisson_schedule(key, num_segments: int, slot_s: float, mean_mbps):
    """The Wi-Fi-like capacity of ``links.sample_poisson_schedule`` (a Poisson number of MSS
    delivery opportunities per ``slot_s`` slot, mean ``mean_mbps``), drawn by inverse CDF: one
    CDF of Poisson(λ) over 0..``POISSON_KMAX``−1 per link, then a ``searchsorted`` per slot.
    ``jax.random.poisson`` draws the same distribution but its rejection loop made a reset of 64
    links × 6002 slots cost 130 ms against 7 ms here (measured), and every episode end redraws.
    The float32 CDF drops tail mass below ~1e-7 per slot; λ ≤ ``POISSON_LAM_MAX`` (checked by
    ``required_shape``) keeps the truncation at ``POISSON_KMAX`` beyond 8 standard deviations."""
    lam = mean_mbps * units.MBPS * slot_s / units.MSS
    k = jnp.arange(POISSON_KMAX, dtype=jnp.float32)
    cdf = jnp.cumsum(jnp.exp(k * jnp.log(jnp.maximum(lam, 1e-30)) - lam - jax.lax.lgamma(k + 1.0)))
    counts = jnp.minimum(jnp.searchsorted(cdf, jax.random.uniform(key, (num_segments,)), side="right"),
                         POISSON_KMAX - 1)
    times = jnp.arange(num_segments, dtype=jnp.float32) * slot_s
    return times, counts.astype(jnp.float32) * units.MSS / slot_s


class DeepccEnv(base.MultiFlowEnv):
    name = "deepcc"

    def action_spec(self) -> dict:
        return {"kind": "continuous", "low": 0.0, "high": 1.0}

    @property
    def default_params(self) -> DeepccParams:
        return base.params_as_arrays(DeepccParams())

    def sample_episode(self, key, p: DeepccParams) -> base.EpisodeInit:
        c = self.config
        km, ks, kr, kb, kg, kl, kp = jax.random.split(key, 7)
        mean = jnp.where(p.mean_log > 0, samplers.log_uniform(km, p.mean_lo_mbps, p.mean_hi_mbps),
                         jax.random.uniform(km, (), minval=p.mean_lo_mbps, maxval=p.mean_hi_mbps))
        times, rates = poisson_schedule(ks, c.num_segments, SLOT_S, mean)
        rtt = jax.random.uniform(kr, (), minval=p.rtt_lo_s, maxval=p.rtt_hi_s)
        in_bdp = (p.buf_bdp_hi > 0) & (jax.random.uniform(kp, ()) >= p.buf_pkts_prob)
        bdp = jax.random.uniform(kb, (), minval=p.buf_bdp_lo, maxval=p.buf_bdp_hi)
        buf = jnp.where(in_bdp, bdp * mean * units.MBPS * rtt,
                        jax.random.uniform(kb, (), minval=p.buf_lo_pkts, maxval=p.buf_hi_pkts) * units.MSS)
        f = c.num_flows
        loss = jax.random.uniform(kl, (), minval=p.loss_lo, maxval=p.loss_hi)
        link = links.link_from_arrays(times, rates, buf, loss, jnp.full((f,), rtt), jnp.zeros((f,)),
                                      jnp.full((f,), 1e9), ticks_per_rtt=c.ticks_per_rtt)
        goal = jax.random.dirichlet(kg, jnp.ones((3,)), (f,))
        rate0 = jnp.full((f,), action_to_rate(p.init_action, p.bound_mbps, p.low_mbps))
        return base.EpisodeInit(link=link, rate=rate0, cwnd=jnp.full((f,), core.BIG), goal=goal)

    def init_paper(self, init, p):
        f = self.config.num_flows
        z = jnp.zeros((f,), jnp.float32)
        # the link's mean capacity over the episode when the episode is known (training), else 0
        # and the bounded reward's cap on m² (0: no bound, as for a sender)
        if init is None:
            mean, m2_max = z, z
        else:
            if self.config.dynamics is None:  # equal 10-ms Poisson slots: the plain mean is the time average
                mean = jnp.full((f,), jnp.mean(init.link.cap_bps), jnp.float32)
            else:  # overlaid segments have unequal lengths
                mean = jnp.full((f,), samplers.mean_capacity(init.link, self.horizon(init.link, p)), jnp.float32)
            m2_max = m2_bound(mean, init.link.buffer_bytes, init.link.rtt).astype(jnp.float32)
        return DeepccFlow(started=jnp.zeros((f,), bool), last_action=jnp.full((f,), p.init_action), rtt=z,
                          thr_max=z, thr_ref=mean * p.reward_link_norm, m2_max=m2_max, m2=jnp.ones((f,), jnp.float32))

    def apply_action(self, state, action, p):
        a = jnp.clip(jnp.asarray(action, jnp.float32).reshape(self.config.num_flows), 0.0, 1.0)
        rate = action_to_rate(a, p.bound_mbps, p.low_mbps)
        # The window in force (none) without cwnd_rtts and on the first decision, before any MI.
        windowed = (p.cwnd_rtts > 0) & state.paper.started
        cwnd = jnp.where(windowed, ack_clock_cwnd(rate, mi_lib.known_min_rtt(state.run, state.link.rtt), p.cwnd_rtts),
                         state.cwnd)
        return rate, cwnd, state.paper.replace(last_action=a)

    def observe(self, state, fl: DeepccFlow, m, run, lmi, p):
        first = ~fl.started
        min_rtt = mi_lib.known_min_rtt(run, state.link.rtt)
        has = mi_lib.has_rtt(m)
        mean = mi_lib.rtt_mean(m)
        rtt = jnp.where(has, base.ewma(fl.rtt, mean, p.ewma_gain, first | (fl.rtt <= 0)), fl.rtt)
        thr = mi_lib.delivery_rate(m)
        thr_max = jnp.maximum(fl.thr_max, thr)
        m2 = jnp.where(has, m.rtt_max / jnp.maximum(min_rtt, 1e-9), fl.m2)
        meas = jnp.stack([jnp.where(thr_max > 0, thr / jnp.maximum(thr_max, 1e-9), 0.0), m2,
                          mi_lib.loss_rate(m)], axis=-1)
        m1_ref = jnp.where(fl.thr_ref > 0, thr / jnp.maximum(fl.thr_ref, 1e-9), meas[..., 0])
        m_r = meas.at[..., 0].set(m1_ref)
        m_r = jnp.where(p.reward_bounded > 0, bounded_measurement(m_r, fl.m2_max), m_r)
        r = reward(state.goal, m_r, p.loss_threshold)
        s = jnp.stack([
            fl.last_action,
            jnp.where(rtt > 0, rtt / jnp.maximum(min_rtt, 1e-9), 1.0),
            jnp.where(thr_max > 0, jnp.minimum(mi_lib.send_rate(m) / jnp.maximum(thr_max, 1e-9), SEND_RATIO_MAX), 0.0),
            jnp.where(has, jnp.maximum(mean - min_rtt, 0.0) / jnp.maximum(min_rtt, 1e-9), 0.0),
        ], axis=-1)
        feats = jnp.concatenate([s, meas], axis=-1)
        new = fl.replace(started=jnp.ones_like(fl.started), rtt=rtt, thr_max=thr_max, m2=m2)
        return base.StepOut(features=feats, reward=r, paper=new, terminated=jnp.zeros((), bool),
                            info={"measurement": meas})


def required_shape(p: DeepccParams, ticks_per_rtt: int) -> dict:
    """The static sizes a training distribution ``p`` needs: ``max_steps`` (60 s at ½ the lowest
    RTT) and ``ring_len`` (the largest buffer drained at half the lowest mean capacity, over the
    lowest RTT; with BDP buffers that is 2·buf_bdp_hi RTTs plus two packets)."""
    f = lambda x: float(np.asarray(x))  # noqa: E731
    lam_hi = f(p.mean_hi_mbps) * units.MBPS * SLOT_S / units.MSS
    if lam_hi > POISSON_LAM_MAX:
        raise ValueError(f"mean_hi_mbps: at most {POISSON_LAM_MAX * units.MSS / SLOT_S / units.MBPS:g} Mbit/s "
                         f"(Poisson sampler), got {f(p.mean_hi_mbps):g}")
    two = 2 * units.MSS / (0.5 * f(p.mean_lo_mbps) * units.MBPS)
    wait_over_rtt = 0.0
    if f(p.buf_bdp_hi) > 0:
        wait_over_rtt = 2.0 * f(p.buf_bdp_hi) + two / f(p.rtt_lo_s)
    if f(p.buf_bdp_hi) <= 0 or f(p.buf_pkts_prob) > 0:
        wait_over_rtt = max(wait_over_rtt, (f(p.buf_hi_pkts) * units.MSS / (0.5 * f(p.mean_lo_mbps) * units.MBPS)
                                            + two) / f(p.rtt_lo_s))
    return {"ring_len": base.ring_len_worst(wait_over_rtt, ticks_per_rtt),
            "max_steps": int(math.ceil(EPISODE_S / (0.5 * f(p.rtt_lo_s))))}


def make_config(num_flows: int = 1, ticks_per_rtt: int = 8, **kw) -> base.EnvConfig:
    """60 s episodes: ≤ 60 / (½ · 100 ms) = 1200 steps; 10 ms Poisson slots → 6002 segments.
    Ring: a 260-packet buffer drained at half the lowest mean (1 Mbps) on a 100 ms RTT
    (``required_shape``; a wider training distribution passes its own ``ring_len``/``max_steps``)."""
    p = DeepccParams()
    need = required_shape(p, ticks_per_rtt)
    ring, steps = need["ring_len"], need["max_steps"]
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=0.5, history=HISTORY, obs_dim=7,
               max_steps=steps, ring_len=ring, num_segments=int(EPISODE_S / SLOT_S) + 2, goal_dim=3)
    cfg.update(kw)
    return base.env_config(cfg, min_rtt_s=float(p.rtt_lo_s))  # realism (if any) lengthens the ring


def export_features_spec(config: base.EnvConfig | None = None) -> dict:
    c = config or make_config()
    return {
        "name": "deepcc_v1", "history": c.history, "obs_dim": 7, "feature_names": list(FEATURE_NAMES),
        "empty": [0.0] * 7, "goal": ["throughput", "delay", "loss"], "ewma_gain": DEEPCC_EWMA_GAIN,
        "bound_mbps": BOUND_MBPS, "low_mbps": LOW_MBPS, "scale": "log", "init_action": INIT_ACTION,
        "send_ratio_max": SEND_RATIO_MAX, "loss_threshold": 0.01, "mi_rtts": c.mi_rtts, "ticks_per_rtt": c.ticks_per_rtt,
        "delay_p95": "max RTT sample of the interval (per-tick); per-packet: nearest-rank p95",
    }
