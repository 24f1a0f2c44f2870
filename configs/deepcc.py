"""DeepCC (Hu et al., IEEE/ACM ToN 2022): multi-objective DDPG, one policy for every goal.

    python -m jaxcc.train --config=deepcc --config.wandb.mode=offline

§IV-A/B and §V "Training" of the paper (``jaxcc.envs.deepcc``, ``jaxcc.agents.deepcc_ddpg``);
"decided" marks numbers the paper does not give.  A goal per link and episode uniform on the
simplex (throughput, delay, loss); 60-s episodes, a decision every ½ min RTT; the action a
log-scale rate 0.1–100 Mbit/s.  Sized to finish in <= 20 min on a 2-core CPU.

Training links: Poisson capacity in 10 ms slots (the Wi-Fi-like link of §VI-A) over wider
ranges than the paper's one link — mean capacity log-uniform 1–50 Mbit/s, min RTT 100–800 ms,
random loss 0–1 %, the buffer half of the time 0.5–4 BDP and half of the time the paper-like
65–260 packets — because they measured better (``jaxcc.agents.deepcc_ddpg.goal_probe``: the shipped actor
μ' on 64 held-out links of a sampler (key 777), goals (.8,.1,.1), (⅓,⅓,⅓), (.1,.8,.1),
(.1,.1,.8), mean eq. 3 reward, 30 k updates, seeds 0/1/2; higher is better):
  trained on (rows); links of:  wide, BDP buffers      this recipe's          Wi-Fi-like (env default)
  wide, BDP buffers only       −0.324/−0.344/−0.332  −0.343/−0.408/−0.364  −0.116/−0.343/−0.143
  this recipe                  −0.300/−0.305/−0.406  −0.299/−0.321/−0.399  −0.096/−0.092/−0.105
  (a constant 0.9 × the link's mean capacity, which no sender knows: −0.231 on this recipe's
  links, −0.089 on the Wi-Fi-like ones).  Trained on the Wi-Fi-like sampler alone (10 k updates,
  one seed, online actor): −0.529 on the wide BDP links, −0.112 on its own.
On those links, the shared robust dynamics (``jaxcc.envs.samplers.ROBUST_DYNAMICS``: per
episode outages of 0.2–10 s, a cellular walk with dropouts, capacity steps) and eq. 3 with its
delay and loss terms bounded at the largest a target asks for (``reward_bounded``,
``jaxcc.envs.deepcc.bounded_measurement``; without the bound two seeds collapsed to 1.2–1.8 Mbit/s
on every link).  Chosen over the same recipe without them (``configs/deepcc_clean.py``, the
shipped file's) by a rule fixed before the runs: the higher mean over the ``outage`` and
``robust`` links of the median-seed TCR (three seeds each, the default tuner), links that judge
no DeepCC TCR bar (``checkpoints/deepcc/README.md``, "The default since 2026-12-01").
Since then, by the same rule: the window the paper's sender ACK-clocks (cwnd = rate x min RTT,
``cwnd_rtts`` 1, §V) with the actor's z² penalty at 0.01.  With the penalty at 0.1 the
window-trained actors held a rate ceiling of their own (29 / 11 / 17 Mbit/s at a
throughput-only goal on clean 50 and 90 Mbit/s links, ``launch/deepcc_ceiling.py``); at 0.01
they fill 50 Mbit/s and the rule's mean rose from 76.8 to 86.7 (``checkpoints/deepcc/README.md``,
"A rate ceiling from the actor's penalty").  The recipe before, paced at the rate alone:
``configs/deepcc_paced.py``.
The env's default sampler (1–6 Mbit/s uniform, 100–250 ms, 65–260 packets, no loss) alone:
``--config=deepcc_clean --config.env.params.mean_hi_mbps=6 --config.env.params.mean_log=0 --config.env.params.rtt_hi_s=0.25
--config.env.params.buf_bdp_hi=0 --config.env.params.loss_hi=0``.
"""

import ml_collections

from jaxcc.envs.samplers import ROBUST_DYNAMICS, dynamics_config


def get_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.algo = "deepcc_ddpg"
    c.seed = 0
    c.num_envs = 64  # links stepped at once (one flow each); decided
    c.num_updates = 30000  # env steps per link: 1.9 M transitions, 60 k gradient steps
    c.chunk_updates = 500
    c.checkpoint_every_chunks = 4
    c.keep_checkpoints = 2

    c.env = ml_collections.ConfigDict()
    c.env.name = "deepcc"
    c.env.overrides = ml_collections.ConfigDict()
    # The shared robust dynamics (docstring); each field can be set on the command line.
    c.env.overrides.dynamics = ml_collections.ConfigDict(dynamics_config(**ROBUST_DYNAMICS))
    # DeepccParams fields to replace; listed so that each can be set on the command line (the
    # env's defaults are the paper's Wi-Fi-like link: 1–6 Mbit/s uniform, 100–250 ms, 65–260 packets).
    c.env.params = ml_collections.ConfigDict()
    c.env.params.mean_lo_mbps = 1.0
    c.env.params.mean_hi_mbps = 50.0
    c.env.params.mean_log = 1.0  # log-uniform mean capacity (0: uniform)
    c.env.params.rtt_lo_s = 0.1
    c.env.params.rtt_hi_s = 0.8
    c.env.params.buf_lo_pkts = 65.0  # the packet buffers (buf_pkts_prob of the links)
    c.env.params.buf_hi_pkts = 260.0
    c.env.params.buf_bdp_lo = 0.5  # buffer U[lo, hi] x BDP (mean capacity x min RTT)
    c.env.params.buf_bdp_hi = 4.0
    c.env.params.buf_pkts_prob = 0.5  # share of links with a U[buf_lo_pkts, buf_hi_pkts] buffer instead
    c.env.params.loss_lo = 0.0
    c.env.params.loss_hi = 0.01
    c.env.params.low_mbps = 0.1
    c.env.params.bound_mbps = 100.0
    c.env.params.reward_bounded = 1.0  # eq. 3, m² and m³ bounded (envs.deepcc.bounded_measurement); 0: as written
    c.env.params.cwnd_rtts = 1.0  # the ACK-clocked window, cwnd = 1 x rate x min RTT (§V); 0: paced at the rate alone

    c.ddpg = ml_collections.ConfigDict()
    c.ddpg.conv_filters = 32  # §V
    c.ddpg.kernel = 3  # §V
    c.ddpg.branch = 64  # decided: width of the measurement/goal/action dense layers
    c.ddpg.hidden = 64  # decided: the merged layer
    c.ddpg.gamma = 0.95  # decided: a 20-decision (10-RTT) horizon (measured better than 0.9)
    c.ddpg.actor_lr = 3e-5  # decided: DDPG's 1e-4 drove the tanh to saturation (u = 0 or 1) within 1 k steps
    c.ddpg.critic_lr = 1e-3  # DDPG
    c.ddpg.tau = 0.005  # soft target update per gradient step (θ' ← τθ + (1 − τ)θ')
    c.ddpg.batch_size = 64  # §V
    c.ddpg.buffer_size = 200_000
    c.ddpg.learning_starts = 1_024  # uniform random u until then
    c.ddpg.updates_per_step = 2
    c.ddpg.actor_starts = 10_000  # env transitions before the actor's first update (critic-only warm-up)
    c.ddpg.init_u = 1.0 / 3.0  # the actor's first output (output-layer bias): 1 Mbit/s
    c.ddpg.actor_z_penalty = 0.01  # λ·mean(z²) in the actor loss (keeps tanh out of saturation; 0.1 capped the rate)
    c.ddpg.max_grad_norm = 10.0
    c.ddpg.export_target_actor = True  # ship μ' (the Polyak-averaged actor), measured better
    c.ddpg.noise_theta = 0.15  # OU (1.0: i.i.d. Gaussian)
    c.ddpg.noise_sigma = 0.05  # in u (stationary sd σ/√(2θ − θ²) ≈ 0.095: ×1.9 in rate on the log scale)
    c.ddpg.noise_sigma_end = 0.02
    c.ddpg.noise_decay_frac = 0.8

    c.wandb = ml_collections.ConfigDict()
    c.wandb.project = "jaxcc"
    c.wandb.mode = "auto"
    c.wandb.entity = ""
    c.wandb.group = "deepcc"
    c.export_stages = True
    return c
