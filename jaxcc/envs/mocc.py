"""MOCC (IWQoS 2021): preference-conditioned multi-objective cwnd control.

Paper: MOCC: A Multi-objective Reinforcement Learning Perspective on Internet Congestion Control (Xia et al., IWQoS 2021), §IV-A (state, actions, reward), §IV-B
(init-cwnd, eq. 1–3), §IV-C (dynamic terminal episode, Algorithm 1), Algorithm 2.

* State (§IV-A): S_t = [Delay(t), ACK_rate(t), Sending_rate(t), cwnd(t)], normalised (the
  paper gives no scaling) to be independent of the link's absolute speed:
    0. Delay / timeout           (mean RTT of the step over the timeout, see below)
    1. ACK_rate / max ACK rate   (max over the episode's steps; with ``max_ack_ewma`` α < 1,
                                 the max of an EWMA of the ACK rate, below)
    2. Sending_rate / max ACK rate
    3. cwnd / (max ACK rate × min RTT)   (cwnd in units of the estimated BDP)
  Ratios are 0 until an ACK has been seen.  History 1 (the state is the current step).
  ``max_ack_ewma`` α (ours; this env's 1 is the paper's reading, ``configs/mocc.py`` sets 0.25):
  the max ACK rate is the running max of e_t = (1 − α) e_{t−1} + α ACK_rate(t), e starting at the
  first step's ACK rate, not of the per-step ACK rate itself; the numerators stay the step's own
  rates.  Over netns a
  one-RTT interval counts whole packets and ACKs arrive bunched, so the running max of the raw
  rate climbs to 1.2–1.6 × the link over a 45-s run while the simulator's stays at 1.0, and the
  policy reads a full link as part-full; the max of an EWMA with α = 0.25 stays within 1.03 × of
  it (``configs/mocc.py`` says where this was measured).
* Preference ω (§IV-D, Algorithm 2 line 6): drawn per episode and per flow uniformly on the
  simplex over the three objectives; ``env.goal(state)`` returns it.
* Actions (§IV-A): the paper prints the set {−0.5, −50, −10, +0, +10, +2, +50} and says what it is
  for: "increase the convergence rate during the initial data sending phase, quickly lower the
  data sending rate when network congestion occurs, and steadily adjust the size of congestion
  window ... during other phases".  Read as seven additive steps (in packets) it cannot do the
  second: −0.5 and +2 packets are finer than ±10 and the fastest way down is −50 packets a step.
  We read it as a mixed table (decided), index 0..6 in the printed order — the notation of the
  Pantheon/mvfst-rl congestion-control environments, whose cwnd actions are written
  "0,/2,-10,+10,*2" (mvfst-rl's ``cc_env_actions`` default), with "−0.5" for /2 and "+2.0" for *2:
  cwnd × 0.5 (halve: congestion), −50, −10, hold, +10, cwnd × 2 (double: the start-up phase), +50
  packets; cwnd ≥ 2 packets.  It matters: with the additive reading a policy that has let its
  window run to thousands of packets on a slow link (a state training rarely reaches) needs
  tens of steps to come back, and trained policies stayed there at 97 % loss on the LTE links
  (the additive table remains a named variant: ``LITERAL_DELTAS_PKTS`` with multipliers 1,
  ``configs/mocc_additive.py``).  ``cwnd_mults`` and ``cwnd_deltas_pkts`` hold the table:
  cwnd ← min(cwnd · cwnd_mults[a] + cwnd_deltas_pkts[a] · MSS, max_cwnd_pkts · MSS).  The mixed
  table is this env's default (``configs/mocc_mixed.py``, ``mocc_paper``); the default config,
  ``configs/mocc.py``, replaces it by a scale-free one, ×0.5, ×1/1.5, ×1/1.1, hold, ×1.1, ×2, ×1.5
  (its docstring says why).  The cap
  (10 000 packets, 15 MB; not in the paper) stands for the receive window that bounds every real
  TCP window (Linux's default largest receive buffer is 6 MB), far above any BDP here; without
  it a run of doublings overflows float32 and the training stops on NaN.  MOCC is window-based;
  the window is paced at
  1.2 · cwnd / min RTT (Linux's congestion-avoidance pacing ratio), because the fluid model
  would otherwise send a whole window in one tick and ACK bursts would alias with the step.
* Vector reward (§IV-A): [L(Throughput/bandwidth), −L(Delay/timeout), −L(Loss_rate)] with
  L(x) = 1 − 10^(−x).  The paper lists the objectives as (throughput, loss, delay); we order them
  (throughput, delay, loss), the order in which a user states a preference
  ``[w_thr, w_delay, w_loss]``, so a preference *is* the policy's goal vector and
  nothing anywhere reorders it.  The printed "L(x) = (−10)^(−x) + 1" is complex-valued for non-integer
  x; reading the sign as applying to the power (−10^(−x) + 1) gives a real, increasing,
  saturating activation with L(0) = 0.  Loss and delay are penalties, so their objectives are
  negated, and every objective is "higher is better" under ω ≥ 0.  Throughput is the ACK rate
  and "bandwidth" the link's mean capacity over the step (privileged, training only).
  ``MoccParams.delay_objective = 1`` (``configs/mocc.py``, the default config; ours) replaces the delay
  objective by the queueing delay in the path's own round trips on a log scale
  (``delay_objective`` says why).
* Timeout: TCP's retransmission timeout, modelled as max(200 ms, 2 × min RTT) (Linux's
  minimum RTO; the paper does not define it).
* Step: one min RTT (``mi_rtts = 1``; not given in the paper), simulated at 16 ticks per RTT
  (see ``make_config``).
* Init-cwnd (§IV-B, Algorithm 2 lines 8–9): the flow starts with 10 packets; at step
  ``init_step`` (2) the agent's action is overridden and cwnd = b × bw_i packets, b = 2.5, where
  bw_i (Mbps) = F(Num_ave) (eq. 2–3) maps the average ACK rate of the steps so far to the
  smallest bandwidth of the set ``bw_set_mbps`` at or above it (intervals (bw_{j−1}, bw_j]).
  Note: with a 10-packet window the ACK rate cannot exceed 10 packets per RTT, so on fast links
  the estimate saturates; the agent's first two actions decide how much it probes.
* Dynamic terminal episode (Algorithm 1, M = L = 50, T = 200): see ``termination``.  Win and
  lose are true terminals; a tie at T = 200 is also a terminal ("the policy has finished
  sending the data") unless ``tie_is_terminal = 0``, when it is a truncation.
* Training links: the paper trains on a Mahimahi link of 12 Mbps, 10 ms, 375 KB (§V-D) and
  evaluates on 12 and 50 Mbps links, 18–375 KB buffers and cellular traces (§V-B–D).  One policy
  must serve all of them, so every episode draws (decided): a starting capacity log-uniform in
  ``[bw_lo_mbps, bw_hi_mbps]`` = [6, 100] Mbps (F's range), a one-way delay log-uniform in
  ``[owd_lo_s, owd_hi_s]`` = [1, 30] ms (the 50 Mbps link of §V-B has "no delay": Mahimahi's
  ~1 ms), a buffer log-uniform in [15, 375] KB, no random loss; and with probability ``p_vary``
  (0.5) a cellular-like capacity: ``num_segments`` segments of ``vary_seg_rtts`` (12.5) min RTTs
  each (so an episode of 200 one-RTT steps meets all of them), each at the starting capacity
  times exp(σ·N(0, 1)), σ = ``vary_sigma`` (0.5), clipped to [``vary_lo``, ``vary_hi``] =
  [0.25, 2] × — a capacity that moves by tens of percent every few RTTs, as the LTE traces do
  (the shipped traces themselves are evaluation links, never training ones).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxcc import units
from jaxcc.envs import base
from jaxcc.envs import mi as mi_lib
from jaxcc.envs import samplers
from jaxcc.sim import links

# The action table (module docstring, "Actions"): cwnd · CWND_MULTS[a] + CWND_DELTAS_PKTS[a] packets.
CWND_MULTS = (0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0)
CWND_DELTAS_PKTS = (0.0, -50.0, -10.0, 0.0, 10.0, 0.0, 50.0)
# §IV-A's list read as seven additive steps (multipliers all 1): the named variant.
LITERAL_DELTAS_PKTS = (-0.5, -50.0, -10.0, 0.0, 10.0, 2.0, 50.0)
N_ACTIONS = len(CWND_DELTAS_PKTS)
HOLD_ACTION = 3
FEATURE_NAMES = ("delay_over_timeout", "ack_rate_over_max", "send_rate_over_max", "cwnd_over_bdp")
OBJECTIVES = ("throughput", "delay", "loss")  # the preference order [w_thr, w_delay, w_loss]
BW_SET_MBPS = (6.0, 12.0, 24.0, 50.0, 100.0)
INIT_REF_RTT_MAX_S = 1.0  # the largest init_ref_rtt_s a policy file may state (0 leaves eq. 1 unscaled)
INT_FIELDS = ("init_step", "win_M", "lose_L", "max_T", "tie_is_terminal")
OUT_NONE, OUT_WIN, OUT_LOSE, OUT_TIE = 0, 1, 2, 3


@struct.dataclass
class MoccParams:
    bw_set_mbps: jax.Array = BW_SET_MBPS  # F's bandwidth set (eq. 2), not the training draw
    bw_lo_mbps: jax.Array = 6.0
    bw_hi_mbps: jax.Array = 100.0
    owd_lo_s: jax.Array = 0.001
    owd_hi_s: jax.Array = 0.03
    buffer_lo_bytes: jax.Array = 15_000.0
    buffer_hi_bytes: jax.Array = 375_000.0
    p_vary: jax.Array = 0.5
    vary_seg_rtts: jax.Array = 12.5
    vary_sigma: jax.Array = 0.5
    vary_lo: jax.Array = 0.25
    vary_hi: jax.Array = 2.0
    loss: jax.Array = 0.0
    init_cwnd_pkts: jax.Array = 10.0
    min_cwnd_pkts: jax.Array = 2.0
    b: jax.Array = 2.5
    init_step: jax.Array = 2
    init_ref_rtt_s: jax.Array = 0.0  # > 0: eq. 1's window scaled by min RTT / this (``init_cwnd``); 0: eq. 1
    timeout_min_s: jax.Array = 0.2
    timeout_rtts: jax.Array = 2.0
    win_M: jax.Array = 50
    lose_L: jax.Array = 50
    max_T: jax.Array = 200
    tie_is_terminal: jax.Array = 1
    pacing_gain: jax.Array = 1.2
    max_time_s: jax.Array = jnp.inf
    cwnd_deltas_pkts: jax.Array = CWND_DELTAS_PKTS  # §IV-A's action table (a policy file may state its own)
    cwnd_mults: jax.Array = CWND_MULTS
    max_cwnd_pkts: jax.Array = 10_000.0
    # The delay objective: 0, §IV-A's −L(delay / timeout); 1, the queueing-delay objective of
    # ``configs/mocc.py``, −log2(1 + (delay − min RTT) / min RTT) / qdelay_scale (see
    # ``delay_objective``).
    delay_objective: jax.Array = 0.0
    qdelay_scale: jax.Array = 4.0
    # α of the max ACK rate's EWMA (module docstring, "State"); 1: the running max of the raw rate.
    max_ack_ewma: jax.Array = 1.0
    # ε of ``with_throughput_floor``: every preference keeps a weight of at least ε on throughput
    # (0: none, the paper's scalarisation; ``configs/mocc_thrfloor.py`` sets 0.1).
    thr_floor: jax.Array = 0.0


@struct.dataclass
class MoccFlow:
    win: jax.Array  # consecutive wins
    lose: jax.Array  # consecutive losses
    acked_sum: jax.Array  # bytes acked over the steps so far (for Num_ave)
    time_sum: jax.Array  # seconds of those steps
    max_ack_rate: jax.Array  # bytes/s
    ack_ewma: jax.Array  # bytes/s, the EWMA the max runs over (``max_ack_ewma``); 0 before the first step
    steps: jax.Array  # steps taken by this flow


def L(x):
    """§IV-A activation, read as L(x) = 1 − 10^(−x)."""
    return 1.0 - jnp.power(10.0, -x)


def timeout(min_rtt, p: MoccParams):
    """max(200 ms, 2 × min RTT) (s)."""
    return jnp.maximum(p.timeout_min_s, p.timeout_rtts * min_rtt)


def reward_vector(thr, bandwidth, loss, delay, tmo, delay_term=None):
    """[L(thr/bw), −L(delay/timeout), −L(loss)], [..., 3] (``OBJECTIVES`` order); ``delay_term``
    replaces the middle objective (``delay_objective``)."""
    d = -L(delay / tmo) if delay_term is None else delay_term
    return jnp.stack([L(thr / jnp.maximum(bandwidth, 1e-9)), d, -L(loss)], axis=-1)


def delay_objective(delay, min_rtt, tmo, p: MoccParams):
    """The delay objective of a step.  ``p.delay_objective = 0``: §IV-A's −L(delay / timeout).  1
    (ours): −log2(1 + q / min RTT) / ``qdelay_scale`` with q = delay − min RTT, the queueing delay
    in the path's own round trips, on a log scale.  Measured on ``mocc/12mbps``
    (``launch/mocc_probe.py``, ``checkpoints/mocc/README.md``): with a timeout of at least 200 ms,
    §IV-A's objective moves by 0.086 per step between no queue and a 10-ms one on a 20-ms path,
    less than the learned values' error there, and it saturates above a few timeouts (a 900-ms
    queue costs hardly more than a 300-ms one).  The log of the queue in round trips is
    scale-free: half a round trip of queue costs 0.15, one 0.25, 15 (a 300-ms queue at 20 ms)
    1.0, 45 (900 ms) 1.4."""
    q = jnp.maximum(delay - min_rtt, 0.0) / jnp.maximum(min_rtt, 1e-6)
    return jnp.where(p.delay_objective > 0, -jnp.log2(1.0 + q) / p.qdelay_scale, -L(delay / tmo))


def with_throughput_floor(r, eps):
    """The vector reward [r_thr, r_delay, r_loss] (``reward_vector``) with ε·r_thr added to the
    delay and loss objectives, so that under any preference ω on the simplex
    ω·r' = (w_thr + ε (1 − w_thr)) r_thr + w_delay r_delay + w_loss r_loss: the throughput weight
    is at least ε and (1, 0, 0) is unchanged.  Why: with w_thr = 0 the scalarised reward is
    indifferent between every window at or below the BDP (no queue, no loss at any of them), so
    a delay-heavy policy may settle anywhere below it and the first round trips decide where
    (measured: 0.13–0.23 utilisation at (0, 1, 0) on ``mocc/12mbps``, ``checkpoints/mocc/README.md``).
    A linear scalarisation picks Pareto-efficient points only when every weight is positive;
    the floor makes the throughput weight positive and the sender's argmax ω·Q(s, a, ω) stays as
    it is (the Q-heads learn r', the policy file and the C++ datapath are unchanged).  ε = 0 is
    the paper's reward.  Measured with ε = 0.1 (``configs/mocc_thrfloor.py``): it did not lift
    the delay-heavy end, whose learned action values below the BDP stay wrong
    (``checkpoints/mocc/README.md``)."""
    return r.at[..., 1:].add(eps * r[..., :1])


def init_cwnd(ack_rate_bps, bw_set_mbps, b=2.5, min_rtt=0.0, ref_rtt_s=0.0):
    """eq. 1–3: cwnd (packets) = b × F(ACK rate), F = smallest set bandwidth (Mbps) >= the ACK
    rate in Mbps (the largest one when the rate exceeds them all).

    With ``ref_rtt_s`` > 0 (ours, ``MoccParams.init_ref_rtt_s``) the window is scaled by
    min RTT / ``ref_rtt_s``.  Eq. 1 counts packets per Mbit/s, which is a fixed number of
    bandwidth-delay products only at one RTT: b × F is 1.5 BDPs of F at 20 ms, the paper's own link
    (§V-A: 12 Mbps, 20 ms), and 15 at 2 ms.  Scaled, it is 1.5 BDPs of F at every RTT, and eq. 1
    on a 20-ms path."""
    mbps = ack_rate_bps / units.MBPS
    idx = jnp.clip(jnp.searchsorted(bw_set_mbps, mbps, side="left"), 0, bw_set_mbps.shape[-1] - 1)
    scale = jnp.where(ref_rtt_s > 0, min_rtt / jnp.maximum(ref_rtt_s, 1e-9), 1.0)
    return b * bw_set_mbps[idx] * scale


def apply_delta(cwnd_bytes, a, min_cwnd_pkts=2.0, deltas_pkts=CWND_DELTAS_PKTS, mults=CWND_MULTS,
                max_cwnd_pkts=10_000.0):
    """cwnd · mults[a] + deltas_pkts[a] packets, within [``min_cwnd_pkts``, ``max_cwnd_pkts``]
    packets (bytes in and out)."""
    d = jnp.asarray(deltas_pkts, jnp.float32)[a] * units.MSS
    k = jnp.asarray(mults, jnp.float32)[a]
    return jnp.clip(cwnd_bytes * k + d, min_cwnd_pkts * units.MSS, max_cwnd_pkts * units.MSS)


def pacing_rate(cwnd_bytes, min_rtt, p: MoccParams):
    """pacing_gain · cwnd / min RTT (bytes/s)."""
    return p.pacing_gain * cwnd_bytes / jnp.maximum(min_rtt, 1e-6)


def termination(win, lose, step, thr, bandwidth, delay, tmo, p: MoccParams):
    """Algorithm 1 for one step (``step`` = steps taken including this one).

    win  += 1 if 0.9·bw ≤ thr ≤ 1.1·bw and delay ≤ 0.7·timeout, else win = 0
    lose += 1 if 0.5·bw ≤ thr ≤ 0.7·bw and delay ≥ 0.7·timeout, else lose = 0
    outcome = win if win ≥ M; else lose if lose ≥ L; else tie if step = T; else none.
    Returns (win, lose, outcome int32).
    """
    w_ok = (thr >= 0.9 * bandwidth) & (thr <= 1.1 * bandwidth) & (delay <= 0.7 * tmo)
    l_ok = (thr >= 0.5 * bandwidth) & (thr <= 0.7 * bandwidth) & (delay >= 0.7 * tmo)
    win = jnp.where(w_ok, win + 1, 0)
    lose = jnp.where(l_ok, lose + 1, 0)
    out = jnp.where(win >= p.win_M, OUT_WIN,
                    jnp.where(lose >= p.lose_L, OUT_LOSE, jnp.where(step >= p.max_T, OUT_TIE, OUT_NONE)))
    return win, lose, out.astype(jnp.int32)


class MoccEnv(base.MultiFlowEnv):
    name = "mocc"

    def action_spec(self) -> dict:
        return {"kind": "discrete", "n": N_ACTIONS}
    truncation_wins = False

    @property
    def default_params(self) -> MoccParams:
        return base.params_as_arrays(MoccParams(), INT_FIELDS)

    def sample_episode(self, key, p: MoccParams) -> base.EpisodeInit:
        """One training link (module docstring, "Training links") and a preference per flow,
        uniform on the simplex (Algorithm 2 line 6)."""
        c = self.config
        kb, kd, kq, kv, kz, kg = jax.random.split(key, 6)
        bw = samplers.log_uniform(kb, p.bw_lo_mbps, p.bw_hi_mbps) * units.MBPS
        owd = samplers.log_uniform(kd, p.owd_lo_s, p.owd_hi_s)
        buf = samplers.log_uniform(kq, p.buffer_lo_bytes, p.buffer_hi_bytes)
        S = c.num_segments
        mult = jnp.clip(jnp.exp(p.vary_sigma * jax.random.normal(kz, (S,))), p.vary_lo, p.vary_hi)
        mult = jnp.where(jax.random.uniform(kv, ()) < p.p_vary, mult.at[0].set(1.0), 1.0)
        times = jnp.arange(S, dtype=jnp.float32) * (p.vary_seg_rtts * 2 * owd)
        f = c.num_flows
        link = links.link_from_arrays(times, bw * mult, buf, p.loss, jnp.full((f,), 2 * owd),
                                      jnp.zeros((f,)), jnp.full((f,), 1e9), ticks_per_rtt=c.ticks_per_rtt)
        goal = jax.random.dirichlet(kg, jnp.ones((len(OBJECTIVES),)), (f,))
        return base.EpisodeInit(link=link, rate=jnp.full((f,), base.MAX_RATE),
                                cwnd=jnp.full((f,), p.init_cwnd_pkts * units.MSS), goal=goal)

    def init_paper(self, init, p):
        f = self.config.num_flows
        z, zi = jnp.zeros((f,), jnp.float32), jnp.zeros((f,), jnp.int32)
        return MoccFlow(win=zi, lose=zi, acked_sum=z, time_sum=z, max_ack_rate=z, ack_ewma=z, steps=zi)

    def apply_action(self, state, action, p):
        n = p.cwnd_deltas_pkts.shape[-1]  # N_ACTIONS unless the params carry another table
        a = jnp.clip(jnp.asarray(action, jnp.int32).reshape(self.config.num_flows), 0, n - 1)
        fl = state.paper
        cwnd = apply_delta(state.cwnd, a, p.min_cwnd_pkts, p.cwnd_deltas_pkts, p.cwnd_mults, p.max_cwnd_pkts)
        ack_rate = fl.acked_sum / jnp.maximum(fl.time_sum, 1e-9)
        min_rtt = mi_lib.known_min_rtt(state.run, state.link.rtt)
        cwnd_init = init_cwnd(ack_rate, p.bw_set_mbps, p.b, min_rtt, p.init_ref_rtt_s) * units.MSS
        cwnd = jnp.where(fl.steps == p.init_step, cwnd_init, cwnd)
        return pacing_rate(cwnd, min_rtt, p), cwnd, fl

    def observe(self, state, fl: MoccFlow, m, run, lmi, p):
        min_rtt = mi_lib.known_min_rtt(run, state.link.rtt)
        tmo = timeout(min_rtt, p)
        delay = jnp.where(mi_lib.has_rtt(m), mi_lib.rtt_mean(m), min_rtt)
        ack = mi_lib.delivery_rate(m)
        snd = mi_lib.send_rate(m)
        bw = lmi.cap_bytes / jnp.maximum(m.duration, 1e-9)
        ewma = jnp.where(fl.steps > 0, (1.0 - p.max_ack_ewma) * fl.ack_ewma + p.max_ack_ewma * ack, ack)
        max_ack = jnp.maximum(fl.max_ack_rate, ewma)
        cwnd = state.cwnd  # the cwnd in force during this step
        steps = fl.steps + 1
        win, lose, outcome = termination(fl.win, fl.lose, steps, ack, bw, delay, tmo, p)
        r = reward_vector(ack, bw, mi_lib.loss_rate(m), delay, tmo, delay_objective(delay, min_rtt, tmo, p))
        r = with_throughput_floor(r, p.thr_floor)
        new = MoccFlow(win=win, lose=lose, acked_sum=fl.acked_sum + m.acked, time_sum=fl.time_sum + m.duration,
                       max_ack_rate=max_ack, ack_ewma=ewma, steps=steps)
        ok = max_ack > 0
        feats = jnp.stack([
            delay / tmo,
            jnp.where(ok, ack / jnp.maximum(max_ack, 1e-9), 0.0),
            jnp.where(ok, snd / jnp.maximum(max_ack, 1e-9), 0.0),
            jnp.where(ok, cwnd / jnp.maximum(max_ack * min_rtt, 1e-9), 0.0),
        ], axis=-1)
        # The episode ends on any flow's win or lose; ties end it at T.
        any_out = jnp.max(jnp.where(outcome == OUT_TIE, 0, outcome))
        tie = jnp.any(outcome == OUT_TIE)
        terminated = (any_out > 0) | (tie & (p.tie_is_terminal > 0))
        info = {"outcome": outcome, "win": win, "lose": lose, "bandwidth": bw}
        return base.StepOut(features=feats, reward=r, paper=new, terminated=terminated, info=info)


def make_config(num_flows: int = 1, ticks_per_rtt: int = 16, **kw) -> base.EnvConfig:
    """T = 200 steps (a tie); 16 capacity segments (the cellular-like draw).

    16 ticks per RTT (not the usual 8): the simulator delivers a tick's ACKs in one later tick,
    so an MI's ACK count can be off by one tick's worth (1/8 of a 1-RTT MI at 8 ticks/RTT),
    which would break Algorithm 1's ±10 % "win" band; at 16 the jitter is ±6 %.

    Ring: sized for the largest buffer drained at 6 Mbps on a 10 ms RTT (``ring_len_worst``).
    Shorter RTTs with a full, slow buffer (the 2-ms, 6-Mbps corner with a 375 KB queue: 0.5 s
    of queueing, 250 RTTs, beyond any timeout the reward still tells apart) have their
    feedback delay clamped to the ring (``core.SimState.clamped`` counts such ticks); the ring
    would otherwise need 4000 slots for every link of the batch.
    """
    p = MoccParams()
    wait = (float(p.buffer_hi_bytes) + 2 * units.MSS) / (float(p.bw_lo_mbps) * units.MBPS)
    ring = base.ring_len_worst(wait / 0.01, ticks_per_rtt)
    cfg = dict(num_flows=num_flows, ticks_per_rtt=ticks_per_rtt, mi_rtts=1.0, history=1, obs_dim=4,
               max_steps=200, ring_len=ring, num_segments=16, goal_dim=3, reward_dim=3)
    cfg.update(kw)
    return base.env_config(cfg, min_rtt_s=2 * float(p.owd_lo_s))  # realism (if any) lengthens the ring


def export_features_spec(config: base.EnvConfig | None = None) -> dict:
    c = config or make_config()
    d = MoccParams()
    return {
        "name": "mocc_v1", "history": c.history, "obs_dim": 4, "feature_names": list(FEATURE_NAMES),
        "empty": [0.0] * 4, "objectives": list(OBJECTIVES), "timeout": "max(0.2 s, 2 × min RTT)",
        "cwnd_deltas_pkts": list(CWND_DELTAS_PKTS), "cwnd_mults": list(CWND_MULTS), "mi_rtts": c.mi_rtts,
        "ticks_per_rtt": c.ticks_per_rtt, "goal": "preference ω on the simplex",
        # The numbers behind the timeout, the init-cwnd step and the pacing (MoccParams), for
        # senders outside the simulator (datapath/src/mi_features.cc).
        "timeout_min_s": float(d.timeout_min_s), "timeout_rtts": float(d.timeout_rtts),
        "init_cwnd_pkts": float(d.init_cwnd_pkts), "min_cwnd_pkts": float(d.min_cwnd_pkts),
        "max_cwnd_pkts": float(d.max_cwnd_pkts), "b": float(d.b),
        "init_step": int(d.init_step), "bw_set_mbps": [float(x) for x in d.bw_set_mbps],
        "pacing_gain": float(d.pacing_gain),
    }
