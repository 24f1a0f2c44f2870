"""Aurora (Jay et al., ICML 2019): a PPO rate controller over a history of MI statistics.

Paper: Aurora: A Deep Reinforcement Learning Perspective on Internet Congestion Control (Jay et al., ICML 2019).  Reference gym: github.com/PCCproject/PCC-RL
(``network_sim.py``), whose units this module follows.

* Observation (§2 "States are bounded histories of network statistics", §3.3 history length):
  the last k = 10 statistics vectors v_t = (latency gradient, latency ratio, sending ratio),
  oldest first, shape [F, 10, 3].  See ``features``.
* Action (§3.1, "RL inputs and outputs"): a real number a_t; the rate becomes
  x_t = x_{t-1}·(1 + α·a_t) if a_t >= 0, else x_{t-1} / (1 − α·a_t), with α = 0.025.
* Reward (§3.1, "Reward function"): 10·throughput − 1000·latency − 2000·loss with throughput
  in packets/s, latency in seconds and loss the fraction of packets sent but not acknowledged.
  ``AuroraParams.scale_free`` (ours, not the paper's: ``configs/aurora_scalefree.py``) charges
  the same terms in the link's own units (``reward``).
* Training links (§5, Table 1): bandwidth 100–500 packets/s, latency 50–500 ms (one way, as in
  the gym where data and ACKs each cross a link with that latency: RTT = 2·latency), queue
  2–2981 packets drawn log-uniformly, random loss 0–5 %; the sender starts at 30–150 % of the
  bandwidth (§5.3).  Optionally (``init_far_frac`` > 0, not in the paper) a fraction of the
  episodes starts far below the bandwidth instead (log-uniform ``init_far_lo``–30 %).
* Monitor interval: ½ RTT of the link (``mi_rtts = 0.5``), 400 MIs per episode (the gym's
  ``MAX_STEPS``).  The paper's delay ``d`` between choosing a rate and seeing its effect is
  built in: an MI's statistics come from the ACKs that arrive during it (one RTT late).

Feature sets (``AuroraConfig.feature_set``): ``aurora_v1`` is §2's three statistics, literally.
``aurora_v2`` (ours, not the paper's: ``configs/aurora_loss.py``) adds a fourth, the MI's loss
rate ``lost / (acked + lost)`` (``mi.loss_rate``, what the reward's loss term charges).  On a
flat history §2's statistics cannot tell a sender losing a third of its packets from one
climbing loss-free at the action clip: the sending ratio is ``sent / acked`` of one MI, and a
steady 1.5 reads the same whether the 0.5 is loss or a rate ramp, while the latency features of
a full 10-packet queue are flat.  The loss rate is the level the reward pays for, so the policy
can see what it is charged (Aurora's Fig. 2 result, ``checkpoints/aurora/README.md``).
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

ALPHA = 0.025  # §3.1: "a scaling factor used to dampen oscillations (we use α = 0.025)"
HISTORY = 10  # §3.3: k = 10 MIs (k = 2 was comparable; 1 was not)
FEATURE_NAMES = ("latency_gradient", "latency_ratio", "sending_ratio")
# Feature set -> its feature names (the module docstring).
FEATURE_SETS = {"aurora_v1": FEATURE_NAMES, "aurora_v2": FEATURE_NAMES + ("loss_rate",)}
SEND_RATIO_CLIP = 1000.0  # the reference gym's observation bound for the sending ratio


@struct.dataclass
class AuroraParams:
    """Training distribution (Table 1) and reward weights.  Every leaf is an array."""

    bw_pps_lo: jax.Array = 100.0
    bw_pps_hi: jax.Array = 500.0
    latency_lo_s: jax.Array = 0.05  # one-way; RTT = 2·latency
    latency_hi_s: jax.Array = 0.5
    queue_pkts_lo: jax.Array = 2.0  # log-uniform
    queue_pkts_hi: jax.Array = 2981.0
    loss_lo: jax.Array = 0.0
    loss_hi: jax.Array = 0.05
    init_rate_lo: jax.Array = 0.3  # × bandwidth
    init_rate_hi: jax.Array = 1.5
    # Not in the paper (0 = off, the default): this fraction of the episodes instead starts
    # log-uniformly between ``init_far_lo`` and ``init_rate_lo`` × bandwidth, so that the policy
    # also sees links far above its starting rate (``configs/aurora.py`` explains why).
    init_far_frac: jax.Array = 0.0
    init_far_lo: jax.Array = 0.01
    # Not in the paper (0 = off): this fraction starts log-uniformly between ``init_rate_hi`` and
    # ``init_above_hi`` × bandwidth instead (far above the link; drawn after the far-below choice).
    init_above_frac: jax.Array = 0.0
    init_above_hi: jax.Array = 10.0
    # Not in the paper (0 = off): with probability ``step_frac`` the capacity steps by a factor
    # 2–``step_max`` up or down (``samplers.capacity_step``) at a time uniform in ``step_t_lo``–
    # ``step_t_hi`` of the episode and back after ``step_dur_lo``–``step_dur_hi`` of it.  Needs
    # ``num_segments=3`` (the env config) so that the schedule has room for the two switches.
    step_frac: jax.Array = 0.0
    step_max: jax.Array = 10.0
    step_t_lo: jax.Array = 0.1
    step_t_hi: jax.Array = 0.5
    step_dur_lo: jax.Array = 0.15
    step_dur_hi: jax.Array = 0.4
    alpha: jax.Array = ALPHA
    w_throughput: jax.Array = 10.0
    w_latency: jax.Array = 1000.0
    w_loss: jax.Array = 2000.0
    reward_scale: jax.Array = 1.0  # the gym multiplies by REWARD_SCALE = 0.001 before PPO
    # Not in the paper (0 = off, §3.1's reward): 1 charges the reward in the link's own units
    # (``reward``'s docstring), equal to §3.1's on a link of ``ref_pps`` and ``ref_rtt_s``.
    scale_free: jax.Array = 0.0
    ref_pps: jax.Array = 300.0  # Table 1's middle bandwidth (100–500 packets/s)
    ref_rtt_s: jax.Array = 0.55  # Table 1's middle RTT (2 × 50–500 ms)
    max_time_s: jax.Array = jnp.inf


@struct.dataclass
class AuroraFlow:
    """Per-flow Aurora state ([F] leaves)."""

    last_latency: jax.Array  # s; latency used in the reward when an MI has no ACK


# ----------------------------------------------------------------------------- pure functions


def apply_action(rate: jax.Array, a: jax.Array, alpha=ALPHA) -> jax.Array:
    """§3.1: x_t = x_{t−1}(1 + αa) if a >= 0 else x_{t−1}/(1 − αa)."""
    return jnp.where(a >= 0, rate * (1.0 + alpha * a), rate / (1.0 - alpha * a))


def features(m: mi_lib.MIStats, run: mi_lib.RunningStats, loss_level: bool = False) -> jax.Array:
    """The statistics vector v_t of one MI (§2), [F, 3]; ``loss_level`` (``aurora_v2``): [F, 4],
    the MI's loss rate ``lost / (acked + lost)`` appended (0 when neither; the module docstring).

    ``run`` must already include this MI (``mi.running_update``).

    * latency gradient (Dong et al. 2018, PCC Vivace, which the paper cites): the derivative of
      latency with respect to time, computed as Vivace does, as the least-squares slope of the
      MI's RTT samples against their arrival times (``mi.rtt_slope``; seconds per second).
      Ambiguity: the reference gym instead uses (mean RTT of the 2nd half of the samples −
      mean of the 1st half) / send duration; we keep the paper's wording and its citation.
      0 with fewer than two sample times.
    * latency ratio (Winstein & Balakrishnan 2013): the MI's mean latency over the minimum mean
      latency of any MI in the connection's history, ``rtt_mean / run.min_mean_rtt`` (the
      paper's wording; the gym uses the minimum single sample).  1 when the MI has no sample.
    * sending ratio: packets sent / packets acknowledged in the MI (= bytes ratio); 1 when
      nothing was acknowledged (as in the gym), clipped to [0, 1000] (the gym's bound).
    """
    has = mi_lib.has_rtt(m)
    grad = jnp.where(m.n_samples >= 2, mi_lib.rtt_slope(m), 0.0)
    mean = mi_lib.rtt_mean(m)
    ratio = jnp.where(has & (run.min_mean_rtt < core.BIG * 0.5),
                      mean / jnp.maximum(run.min_mean_rtt, 1e-9), 1.0)
    send = jnp.where(m.acked > 0, m.sent / jnp.maximum(m.acked, 1e-30), 1.0)
    send = jnp.clip(send, 0.0, SEND_RATIO_CLIP)
    cols = [grad, ratio, send] + ([mi_lib.loss_rate(m)] if loss_level else [])
    return jnp.stack(cols, axis=-1)


EMPTY_FEATURES = (0.0, 1.0, 1.0)  # the gym's statistics of an MI without any packet
EMPTY = {"aurora_v1": EMPTY_FEATURES, "aurora_v2": EMPTY_FEATURES + (0.0,)}  # ... and no loss


def reward(m: mi_lib.MIStats, last_latency: jax.Array, w_thr=10.0, w_lat=1000.0, w_loss=2000.0, *,
           cap_bytes=None, base_rtt=None, ref_pps=300.0, ref_rtt_s=0.55, scale_free=True):
    """§3.1: 10·throughput − 1000·latency − 2000·loss.

    throughput = acked packets per second of the MI (``acked / MSS / duration``);
    latency = the MI's mean RTT in seconds (the previous MI's when this one has no ACK — 0 at
    the start, which is what the gym uses for an MI without samples);
    loss = lost / (acked + lost), the fraction of the packets whose fate became known that were
    lost ("the proportion of all packets sent but not acknowledged").

    Scale-free (``cap_bytes`` and ``base_rtt`` given and ``scale_free`` true, which may be traced;
    not in the paper): the same three terms in
    the link's own units, throughput as ``ref_pps`` × the share of the MI's capacity acked and
    latency as ``ref_rtt_s`` × the RTT over the link's base RTT, so the reward equals §3.1's on a
    link of ``ref_pps`` packets/s and ``ref_rtt_s`` RTT and keeps its trade-offs on every other.
    The share is capped at 1: the MI's ACKs are for data served up to an RTT earlier, so after a
    capacity step down they can exceed the MI's capacity.
    Why: §3.1's throughput term grows with the bandwidth (1,000–5,000 per MI over Table 1) while
    the features are scale-free, so the critic cannot see what sets the return's scale, and the
    loss term (2,000 × the loss rate, whatever the bandwidth) is small against that unexplained
    part (``checkpoints/aurora/README.md``, "A scale-free reward").

    Returns (reward [F], latency used [F]).
    """
    thr = m.acked / units.MSS / jnp.maximum(m.duration, 1e-30)
    lat = jnp.where(mi_lib.has_rtt(m), mi_lib.rtt_mean(m), last_latency)
    loss = mi_lib.loss_rate(m)
    lat_term = lat
    if cap_bytes is not None:
        sf = jnp.asarray(scale_free, bool)
        thr = jnp.where(sf, ref_pps * jnp.minimum(m.acked / jnp.maximum(cap_bytes, 1.0), 1.0), thr)  # ACKs lag the capacity by an RTT
        lat_term = jnp.where(sf, ref_rtt_s * lat / jnp.maximum(base_rtt, 1e-9), lat)
    return w_thr * thr - w_lat * lat_term - w_loss * loss, lat


# ----------------------------------------------------------------------------- environment


@dataclasses.dataclass(frozen=True)
class AuroraConfig(base.EnvConfig):
    """``EnvConfig`` plus the feature set (static: it decides ``obs_dim``; the module docstring)."""

    feature_set: str = "aurora_v1"


class AuroraEnv(base.MultiFlowEnv):
    name = "aurora"

    def action_spec(self) -> dict:
        return {"kind": "continuous", "low": -float("inf"), "high": float("inf")}

    @property
    def default_params(self) -> AuroraParams:
        return base.params_as_arrays(AuroraParams())

    def sample_episode(self, key, p: AuroraParams) -> base.EpisodeInit:
        c = self.config
        kb, kl, kq, kloss, kr = jax.random.split(key, 5)
        bw = jax.random.uniform(kb, (), minval=p.bw_pps_lo, maxval=p.bw_pps_hi) * units.MSS
        latency = jax.random.uniform(kl, (), minval=p.latency_lo_s, maxval=p.latency_hi_s)
        queue = samplers.log_uniform(kq, p.queue_pkts_lo, p.queue_pkts_hi) * units.MSS
        loss = jax.random.uniform(kloss, (), minval=p.loss_lo, maxval=p.loss_hi)
        if c.num_segments >= 3:  # room for a capacity step (robust training); keys of its own
            times, rates = base.constant_schedule(c.num_segments - 2, bw)
            ep = c.max_steps * c.mi_rtts * 2.0 * latency  # the episode's length in seconds
            k_step = jax.random.fold_in(key, samplers.STEP_KEY)
            times, rates, _ = samplers.capacity_step(k_step, times, rates, p.step_frac, p.step_max, p.step_t_lo * ep,
                                                     p.step_t_hi * ep, p.step_dur_lo * ep, p.step_dur_hi * ep)
        else:
            times, rates = base.constant_schedule(c.num_segments, bw)
        f = c.num_flows
        rtt = jnp.full((f,), 2.0 * latency)
        link = links.link_from_arrays(times, rates, queue, loss, rtt, jnp.zeros((f,)), jnp.full((f,), 1e9),
                                      ticks_per_rtt=c.ticks_per_rtt)
        x0 = jax.random.uniform(kr, (f,), minval=p.init_rate_lo, maxval=p.init_rate_hi) * bw
        # Far-below starts use keys folded from ``kr``, so the paper's draws (frac 0) are unchanged.
        k_far, k_which = jax.random.fold_in(kr, 1), jax.random.fold_in(kr, 2)
        x_far = samplers.log_uniform(k_far, p.init_far_lo, p.init_rate_lo, (f,)) * bw
        u = jax.random.uniform(k_which, (f,))
        x0 = jnp.where(u < p.init_far_frac, x_far, x0)
        k_above = jax.random.fold_in(kr, 3)
        x_above = samplers.log_uniform(k_above, p.init_rate_hi, jnp.maximum(p.init_above_hi, p.init_rate_hi), (f,)) * bw
        x0 = jnp.where((u >= p.init_far_frac) & (u < p.init_far_frac + p.init_above_frac), x_above, x0)
        return base.EpisodeInit(link=link, rate=x0, cwnd=jnp.full((f,), core.BIG), goal=jnp.zeros((f, 0)))

    def init_paper(self, init, p):
        return AuroraFlow(last_latency=jnp.zeros((self.config.num_flows,), jnp.float32))

    def empty_features(self, p):
        return jnp.asarray(EMPTY[self.config.feature_set], jnp.float32)

    def apply_action(self, state, action, p):
        a = jnp.asarray(action, jnp.float32).reshape(self.config.num_flows)
        return apply_action(state.rate, a, p.alpha), state.cwnd, state.paper

    def observe(self, state, paper, m, run, lmi, p):
        feats = features(m, run, self.config.feature_set == "aurora_v2")
        r, lat = reward(m, paper.last_latency, p.w_throughput, p.w_latency, p.w_loss, cap_bytes=lmi.cap_bytes,
                        base_rtt=state.link.rtt, ref_pps=p.ref_pps, ref_rtt_s=p.ref_rtt_s, scale_free=p.scale_free > 0)
        return base.StepOut(features=feats, reward=r * p.reward_scale, paper=AuroraFlow(last_latency=lat),
                            terminated=jnp.zeros((), bool), info={})


def make_config(num_flows: int = 1, ticks_per_rtt: int = 8, max_steps: int = 400, feature_set: str = "aurora_v1",
                **kw) -> AuroraConfig:
    """Static shape for Table 1: the ring holds a full 2981-packet queue drained at 100 pkt/s
    on the shortest (100 ms) RTT (at 10 pkt/s, a 10× step down, with ``num_segments=3``; the
    ring is capped at 4096 ticks, beyond which feedback is clamped and counted, which only a
    queue of hundreds of BDPs at the step's low capacity reaches).  ``feature_set``: aurora_v1
    (§2) or aurora_v2 (the module docstring)."""
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set: unknown Aurora feature set {feature_set!r}; "
                         f"expected one of {', '.join(FEATURE_SETS)}")
    lo = AuroraParams()
    low = float(lo.bw_pps_lo) / (float(lo.step_max) if kw.get("num_segments", 1) >= 3 else 1.0)
    wait = (float(lo.queue_pkts_hi) * units.MSS + 2 * units.MSS) / (low * units.MSS)
    ring = base.ring_len_worst(wait / (2 * float(lo.latency_lo_s)), ticks_per_rtt)
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=0.5, history=HISTORY,
               obs_dim=len(FEATURE_SETS[feature_set]), max_steps=max_steps, ring_len=ring, num_segments=1,
               feature_set=feature_set)
    cfg.update(kw)
    out = base.env_config(cfg, min_rtt_s=2 * float(lo.latency_lo_s), cls=AuroraConfig)  # realism lengthens the ring
    samplers.refuse_two_steps("aurora", out.dynamics, out.num_segments >= 3)
    return out


def export_features_spec(config: AuroraConfig | None = None) -> dict:
    c = config or make_config()
    name = c.feature_set
    out = {
        "name": name, "history": c.history, "obs_dim": len(FEATURE_SETS[name]),
        "feature_names": list(FEATURE_SETS[name]), "empty": list(EMPTY[name]), "send_ratio_clip": SEND_RATIO_CLIP,
        "latency_gradient": "weighted least-squares slope of RTT vs time in the MI (s/s); 0 if < 2 samples",
        "latency_ratio": "MI mean RTT / min over MIs of MI mean RTT; 1 if no sample",
        "sending_ratio": "sent / acked bytes in the MI; 1 if acked == 0; clip [0, 1000]",
        "mi_rtts": c.mi_rtts, "ticks_per_rtt": c.ticks_per_rtt, "alpha": ALPHA,
    }
    if name == "aurora_v2":
        out["loss_rate"] = "lost / (acked + lost) bytes in the MI; 0 if both are 0"
    return out
