"""Eagle (INFOCOM 2020): discrete rate control learned with the cross-entropy method.

Paper: Eagle: Refining Congestion Control by Learning from the Experts (Emara et al., INFOCOM 2020), §III-B ("Eagle": actions, states, reward
eq. 7, Algorithm 1, eq. 8) and §IV-D (training environment).

* Actions (§III-B "Actions"), index → rate multiplier:
  0: ×2.89, 1: ×1.25, 2: hold, 3: ÷1.25, 4: ÷2.89.  The cwnd follows the BDP estimate
  (highest delivery rate × minimum RTT): cwnd = 2·k_a·BDP with k_a = 2, 1.25, 1, 1/1.25, 1/2
  ("with a 2.89 or 1.25 times increase or decrease in sending rate, cwnd is increased or
  reduced by a factor of 2 or 1.25"), around BBR's cwnd gain of 2 (the paper's "small
  multiple of the BDP"; a multiple of 1 would let a low delivery estimate choke the flow).
  Until the BDP can be estimated (no RTT sample or no delivery yet) cwnd = 10 packets.
* Step: 3 × RTT (``mi_rtts = 3``, RTT = min propagation RTT so the step is static).
* Episode: 50 steps (§IV-D).
* Start (§III-B "Startup"): 300 Kbps and a cwnd of 10 packets.
* Observation (§III-B "States"), per step, and the last four steps are stacked:
    0. delay flag: the flow has experienced delay;
    1. (decreases − increases) while the queue is being drained (a "long delay"), else 0,
       where increases/decreases are the cumulative products of the multipliers applied since
       the delay first appeared (e.g. two ×2.89 → 8.35), reset to 1 once the queue drains;
    2. EWMA of the queuing delay q = RTT − min RTT of the episode (seconds);
    3. EWMA of the loss rate;
    4. ratio Δd = (delivery_t − delivery_{t−1}) / delivery_{t−1}.
* Reward (phases):
    startup (never delayed):                        5·ratioΔd                       (eq. 7)
    queue draining (delayed), Algorithm 1:
      first delay ever:                              5·ratioΔd − 0.5·q_ms
      otherwise, increases > decreases:              5·(g_{t−1} − g_t)/max(|g_{t−1}|, 1),
                                                    g = increases − decreases
      otherwise (increases <= decreases):            (q_{t−1} − q_t)/q_{t−1}   (% decrease in delay)
    bandwidth probing (not delayed, delayed before): 5·ratioΔd − 0.5·q_ms           (eq. 8)

Decisions where the text is garbled or silent:

* "Delayed" means q ≥ 4 ms (Pareto's d_min; same authors; the paper says "the delay goes to
  0", which a measured RTT never does exactly).
* Queuing delay in the reward is in milliseconds: in seconds the −0.5·q term would vanish
  next to 5·ratioΔd, in ms a 10 ms queue costs as much as a 100 % delivery-rate gain.
* Algorithm 1 line 4 ("5 × % of decreases in (increases − decreases)") is the relative
  decrease of the gap g = increases − decreases (the example: rewards rise "as the times of
  decreases approach the times of increases"), floored at 1 in the denominator.
* "% decrease in delay" is a fraction; q_{t−1} is floored at 4 ms.
* The min RTT is the episode's (the paper's "past 50 steps" is one episode).
* The EWMA gain is 0.8 on the newest step (as for Pareto, which the same authors wrote).
* The "highest delivery rate" is a windowed maximum over the last ``bw_window_steps`` steps (4
  steps = 12 RTTs), the way BBR's BtlBw filter keeps the max over ~10 RTTs ("as inspired from
  BBR", §III-B).  ``bw_window_steps = 0`` takes the maximum over the whole episode, which the
  first shipped policy was trained with: on a cellular trace that sizes the window by the
  link's best moments and lets a deep queue build when the capacity falls.
* Training links (§IV-D: "20–120 Mbps fixed and stochastic, RTT 10–400 ms, different queue
  sizes and loss rates"): half fixed, half a log-space random walk changing every second;
  RTT uniform; buffer log-uniform in 0.25–4 BDP; loss 0 for half the episodes, else uniform
  0–1 %.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc import units
from jaxcc.envs import base
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import samplers
from jaxcc.sim import core, links

MULTIPLIERS = (2.89, 1.25, 1.0, 1.0 / 1.25, 1.0 / 2.89)
CWND_FACTORS = (2.0, 1.25, 1.0, 1.0 / 1.25, 1.0 / 2.0)
CWND_GAIN = 2.0
N_ACTIONS = 5
FEATURE_NAMES = ("delay_flag", "dec_minus_inc", "qdelay_ewma_s", "loss_ewma", "ratio_delta_delivery")
EAGLE_EWMA_GAIN = 0.8
BW_WINDOW_STEPS = 4  # 4 steps x 3 RTTs >= BBR's 10-RTT bandwidth filter
MAX_BW_WINDOW = 16  # static length of the per-flow delivery-rate ring (bw_window_steps <= this)


@struct.dataclass
class EagleParams:
    bw_lo_mbps: jax.Array = 20.0
    bw_hi_mbps: jax.Array = 120.0
    p_stochastic: jax.Array = 0.5
    walk_every_s: jax.Array = 1.0
    rtt_lo_s: jax.Array = 0.01
    rtt_hi_s: jax.Array = 0.4
    buf_bdp_lo: jax.Array = 0.25
    buf_bdp_hi: jax.Array = 4.0
    p_lossy: jax.Array = 0.5
    loss_hi: jax.Array = 0.01
    init_rate_mbps: jax.Array = 0.3
    init_cwnd_pkts: jax.Array = 10.0
    min_cwnd_pkts: jax.Array = 4.0
    delay_thresh_ms: jax.Array = 4.0
    ewma_gain: jax.Array = EAGLE_EWMA_GAIN
    bw_window_steps: jax.Array = BW_WINDOW_STEPS  # 0: the whole episode
    # Not in the paper (0 = off): this fraction of the episodes starts at ``init_rel_lo``–
    # ``init_rel_hi`` × the link's starting capacity (log-uniform) instead of 300 Kbps, which is
    # 0.25–1.5 % of the 20–120 Mbps links, so the policy also meets starts near and far above it.
    init_rel_frac: jax.Array = 0.0
    init_rel_lo: jax.Array = 0.3
    init_rel_hi: jax.Array = 4.0
    # Not in the paper (0 = off): with probability ``step_frac`` the capacity is multiplied by 2–
    # ``step_max`` or divided by it (``samplers.capacity_step``) from ``step_t_lo``–``step_t_hi`` of
    # the episode on, for ``step_dur_lo``–``step_dur_hi`` of it.  Needs ``make_config(
    # capacity_steps=True)`` (two more schedule segments).
    step_frac: jax.Array = 0.0
    step_max: jax.Array = 10.0
    step_t_lo: jax.Array = 0.15
    step_t_hi: jax.Array = 0.5
    step_dur_lo: jax.Array = 0.2
    step_dur_hi: jax.Array = 0.4
    max_time_s: jax.Array = jnp.inf


@struct.dataclass
class EagleFlow:
    started: jax.Array
    exp_delay: jax.Array
    inc: jax.Array  # cumulative product of increases since the delay appeared
    dec: jax.Array  # cumulative product of decreases (as factors > 1)
    q: jax.Array  # EWMA queuing delay (s)
    l: jax.Array  # EWMA loss rate
    deliv: jax.Array  # last step's delivery rate (bytes/s)
    last_action: jax.Array  # int32 index of the action applied this step
    deliv_win: jax.Array  # [F, MAX_BW_WINDOW] delivery rates of the last steps, newest first


def rate_multiplier(a):
    return jnp.asarray(MULTIPLIERS, jnp.float32)[a]


def windowed_max_delivery(deliv_win, episode_max, p: EagleParams):
    """The BDP estimate's bandwidth: max of the last ``bw_window_steps`` steps' delivery rates
    (``deliv_win`` newest first), or ``episode_max`` when ``bw_window_steps`` is 0."""
    w = jnp.asarray(p.bw_window_steps, jnp.int32)
    keep = jnp.arange(MAX_BW_WINDOW) < w
    win = jnp.max(jnp.where(keep, deliv_win, 0.0), axis=-1)
    return jnp.where(w > 0, win, episode_max)


def cwnd_for(a, max_delivery, min_rtt, p: EagleParams):
    """cwnd = 2·k_a·(max delivery rate × min RTT), ≥ 4 MSS; 10 MSS before a BDP estimate."""
    bdp = max_delivery * min_rtt
    k = jnp.asarray(CWND_FACTORS, jnp.float32)[a]
    known = (bdp > 0) & (min_rtt < core.BIG * 0.5)
    return jnp.where(known, jnp.maximum(CWND_GAIN * k * bdp, p.min_cwnd_pkts * units.MSS),
                     p.init_cwnd_pkts * units.MSS)


def update_counters(inc, dec, a, delayed):
    """While delayed, multiply the applied increase (×2.89/×1.25) into ``inc`` and decrease
    (÷1.25/÷2.89, as 1.25/2.89) into ``dec``; when not delayed both are reset to 1."""
    mult = rate_multiplier(a)
    inc2 = inc * jnp.where(mult > 1.0, mult, 1.0)
    dec2 = dec * jnp.where(mult < 1.0, 1.0 / mult, 1.0)
    return jnp.where(delayed, inc2, 1.0), jnp.where(delayed, dec2, 1.0)


def reward(ratio_dd, q_ms, prev_q_ms, inc, dec, prev_inc, prev_dec, delayed, exp_before, p: EagleParams):
    """Eq. 7, Algorithm 1 and eq. 8 (see the module docstring).  ``inc``/``dec`` include this
    step's action; ``prev_*`` are the values before it."""
    startup = 5.0 * ratio_dd
    probe = 5.0 * ratio_dd - 0.5 * q_ms
    gap, prev_gap = inc - dec, prev_inc - prev_dec
    gap_r = 5.0 * (prev_gap - gap) / jnp.maximum(jnp.abs(prev_gap), 1.0)
    q_r = (prev_q_ms - q_ms) / jnp.maximum(prev_q_ms, p.delay_thresh_ms)
    drain_later = jnp.where(inc <= dec, q_r, gap_r)
    drain = jnp.where(exp_before, drain_later, 5.0 * ratio_dd - 0.5 * q_ms)
    return jnp.where(delayed, drain, jnp.where(exp_before, probe, startup))


class EagleEnv(base.MultiFlowEnv):
    name = "eagle"

    def action_spec(self) -> dict:
        return {"kind": "discrete", "n": N_ACTIONS}

    @property
    def default_params(self) -> EagleParams:
        return base.params_as_arrays(EagleParams(), ("bw_window_steps",))

    def sample_episode(self, key, p: EagleParams) -> base.EpisodeInit:
        c = self.config
        kb, ks, kw, kr, kq, kl1, kl2 = jax.random.split(key, 7)
        n_walk = walk_segments(c.max_steps)
        stepped = c.num_segments == n_walk + 2  # make_config(capacity_steps=True)
        if c.num_segments not in (n_walk, n_walk + 2):
            raise ValueError(f"eagle: num_segments must be {n_walk} or {n_walk + 2} (capacity steps) for "
                             f"max_steps={c.max_steps}, got {c.num_segments}")
        times, walk = links.sample_schedule_steps(kw, n_walk, 1.0, p.bw_lo_mbps, p.bw_hi_mbps, "walk")
        times = times * p.walk_every_s
        fixed = jax.random.uniform(kb, (), minval=p.bw_lo_mbps, maxval=p.bw_hi_mbps) * units.MBPS
        stoch = jax.random.uniform(ks, ()) < p.p_stochastic
        rates = jnp.where(stoch, walk, jnp.full((n_walk,), fixed))
        rtt_s = jax.random.uniform(kr, (), minval=p.rtt_lo_s, maxval=p.rtt_hi_s)
        buf = samplers.log_uniform(kq, p.buf_bdp_lo, p.buf_bdp_hi) * rates[0] * rtt_s
        buf = jnp.maximum(buf, 2 * units.MSS)
        cap0 = rates[0]
        if stepped:  # keys of their own: the paper's draws are unchanged
            ep = c.max_steps * c.mi_rtts * rtt_s
            k_step = jax.random.fold_in(key, samplers.STEP_KEY)
            times, rates, _ = samplers.capacity_step(k_step, times, rates, p.step_frac, p.step_max, p.step_t_lo * ep,
                                                     p.step_t_hi * ep, p.step_dur_lo * ep, p.step_dur_hi * ep)
        loss = jnp.where(jax.random.uniform(kl1, ()) < p.p_lossy,
                         jax.random.uniform(kl2, (), minval=0.0, maxval=p.loss_hi), 0.0)
        f = c.num_flows
        link = links.link_from_arrays(times, rates, buf, loss, jnp.full((f,), rtt_s), jnp.zeros((f,)),
                                      jnp.full((f,), 1e9), ticks_per_rtt=c.ticks_per_rtt)
        x0 = jnp.full((f,), p.init_rate_mbps * units.MBPS)
        k_rel, k_which = jax.random.fold_in(key, 0x1417), jax.random.fold_in(key, 0x1418)
        x_rel = samplers.log_uniform(k_rel, p.init_rel_lo, p.init_rel_hi, (f,)) * cap0
        x0 = jnp.where(jax.random.uniform(k_which, (f,)) < p.init_rel_frac, x_rel, x0)
        return base.EpisodeInit(link=link, rate=x0,
                                cwnd=jnp.full((f,), p.init_cwnd_pkts * units.MSS), goal=jnp.zeros((f, 0)))

    def init_paper(self, init, p):
        f = self.config.num_flows
        z, o, b = jnp.zeros((f,), jnp.float32), jnp.ones((f,), jnp.float32), jnp.zeros((f,), bool)
        return EagleFlow(started=b, exp_delay=b, inc=o, dec=o, q=z, l=z, deliv=z,
                         last_action=jnp.full((f,), 2, jnp.int32),
                         deliv_win=jnp.zeros((f, MAX_BW_WINDOW), jnp.float32))

    def apply_action(self, state, action, p):
        a = jnp.clip(jnp.asarray(action, jnp.int32).reshape(self.config.num_flows), 0, N_ACTIONS - 1)
        rate = state.rate * rate_multiplier(a)
        min_rtt = jnp.where(state.run.min_rtt < core.BIG * 0.5, state.run.min_rtt, core.BIG)
        bw = windowed_max_delivery(state.paper.deliv_win, state.run.max_delivery, p)
        cwnd = cwnd_for(a, bw, min_rtt, p)
        return rate, cwnd, state.paper.replace(last_action=a)

    def observe(self, state, prev: EagleFlow, m, run, lmi, p):
        g = p.ewma_gain
        first = ~prev.started
        min_rtt = mi_lib.known_min_rtt(run, state.link.rtt)
        has = mi_lib.has_rtt(m)
        q_sample = jnp.maximum(mi_lib.rtt_mean(m) - min_rtt, 0.0)
        q = jnp.where(has, base.ewma(prev.q, q_sample, g, first), prev.q)
        l = base.ewma(prev.l, mi_lib.loss_rate(m), g, first)
        deliv = mi_lib.delivery_rate(m)
        floor = units.MSS / jnp.maximum(m.duration, 1e-9)
        ratio_dd = jnp.where(first, 0.0, (deliv - prev.deliv) / jnp.maximum(prev.deliv, floor))
        q_ms = q * 1000.0
        delayed = q_ms >= p.delay_thresh_ms
        inc, dec = update_counters(prev.inc, prev.dec, prev.last_action, delayed)
        r = reward(ratio_dd, q_ms, prev.q * 1000.0, inc, dec, prev.inc, prev.dec, delayed, prev.exp_delay, p)
        exp_now = prev.exp_delay | delayed
        gap_feat = jnp.where(delayed, dec - inc, 0.0)
        feats = jnp.stack([exp_now.astype(jnp.float32), gap_feat, q, l, ratio_dd], axis=-1)
        win = jnp.concatenate([deliv[:, None], prev.deliv_win[:, :-1]], axis=-1)
        new = EagleFlow(started=jnp.ones_like(prev.started), exp_delay=exp_now, inc=inc, dec=dec, q=q, l=l,
                        deliv=deliv, last_action=prev.last_action, deliv_win=win)
        ph = jnp.where(delayed, 1, jnp.where(prev.exp_delay, 2, 0)).astype(jnp.int32)
        return base.StepOut(features=feats, reward=r, paper=new, terminated=jnp.zeros((), bool),
                            info={"phase": ph, "cwnd": state.cwnd})


def walk_segments(max_steps: int) -> int:
    """1-s capacity segments covering the longest episode: ``max_steps`` × 3 × 400 ms."""
    p = EagleParams()
    return int(max_steps * 3 * float(p.rtt_hi_s) / float(p.walk_every_s)) + 1


def make_config(num_flows: int = 1, ticks_per_rtt: int = 8, history: int = 4, max_steps: int = 50,
                capacity_steps: bool = False, **kw) -> base.EnvConfig:
    """50 steps × 3 × 400 ms = 60 s of 1 s capacity segments (61).  Ring: a 4-BDP buffer whose
    capacity walked from 120 down to 20 Mbps (24 RTTs of waiting).  ``capacity_steps`` (not in
    the paper) adds the two segments of ``samplers.capacity_step`` and sizes the ring for a step
    down by ``step_max`` (capped at 4096 ticks; beyond, feedback is clamped and counted)."""
    p = EagleParams()
    low = float(p.bw_lo_mbps) / (float(p.step_max) if capacity_steps else 1.0)
    ratio = float(p.buf_bdp_hi) * float(p.bw_hi_mbps) / low
    ratio += 2 * units.MSS / (low * units.MBPS * float(p.rtt_lo_s))
    ring = base.ring_len_worst(ratio, ticks_per_rtt)
    seg = walk_segments(max_steps) + (2 if capacity_steps else 0)
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=3.0, history=history, obs_dim=5,
               max_steps=max_steps, ring_len=ring, num_segments=seg)
    cfg.update(kw)
    out = base.env_config(cfg, min_rtt_s=float(p.rtt_lo_s))  # realism (if any) lengthens the ring
    samplers.refuse_two_steps("eagle", out.dynamics, out.num_segments == walk_segments(out.max_steps) + 2)
    return out


def export_features_spec(config: base.EnvConfig | None = None) -> dict:
    c = config or make_config()
    return {
        "name": "eagle_v1", "history": c.history, "obs_dim": 5, "feature_names": list(FEATURE_NAMES),
        "empty": [0.0] * 5, "delay_thresh_ms": 4.0, "ewma_gain": EAGLE_EWMA_GAIN, "mi_rtts": c.mi_rtts, "ticks_per_rtt": c.ticks_per_rtt,
        "multipliers": list(MULTIPLIERS), "cwnd_factors": list(CWND_FACTORS), "cwnd_gain": CWND_GAIN,
        # §III-B "Startup" and the cwnd floor (EagleParams), for senders outside the simulator.
        "init_rate_mbps": float(EagleParams.init_rate_mbps), "init_cwnd_pkts": float(EagleParams.init_cwnd_pkts),
        "min_cwnd_pkts": float(EagleParams.min_cwnd_pkts),
        # The BDP estimate's bandwidth window in steps (0 or absent: the whole connection).
        "bw_window_steps": int(EagleParams.bw_window_steps),
    }
