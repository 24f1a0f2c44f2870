"""DeepCC (Hu et al., IEEE/ACM ToN 2022): multi-objective DDPG, one policy for every goal.

    python -m jaxcc.train --config=deepcc --config.wandb.mode=offline

§IV-A/B and §V "Training" of the paper (``jaxcc.envs.deepcc``, ``jaxcc.agents.deepcc_ddpg``);
"decided" marks numbers the paper does not give.  Training links (``DeepccParams``): the
Wi-Fi-like Poisson link of §VI-A — mean capacity 1–6 Mbit/s in 10 ms Poisson slots, min RTT
100–250 ms, 65–260-packet buffer, no random loss; a goal per link and episode uniform on the
simplex (throughput, delay, loss); 60-s episodes, a decision every ½ min RTT; the action a
log-scale rate 0.1–100 Mbit/s.  Sized to finish in <= 20 min on a 2-core CPU.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.algo = "deepcc_ddpg"
    c.seed = 0
    c.num_envs = 64  # links stepped at once (one flow each); decided
    c.num_updates = 20000  # env steps per link
    c.chunk_updates = 500
    c.checkpoint_every_chunks = 4
    c.keep_checkpoints = 2

    c.env = ml_collections.ConfigDict()
    c.env.name = "deepcc"
    c.env.overrides = ml_collections.ConfigDict()
    # DeepccParams fields to replace; listed so that each can be set on the command line.  These
    # are the env's defaults (the Wi-Fi-like Poisson link of §VI-A, the log action scale).
    c.env.params = ml_collections.ConfigDict()
    c.env.params.mean_lo_mbps = 1.0
    c.env.params.mean_hi_mbps = 6.0
    c.env.params.rtt_lo_s = 0.1
    c.env.params.rtt_hi_s = 0.25
    c.env.params.buf_lo_pkts = 65.0
    c.env.params.buf_hi_pkts = 260.0
    c.env.params.buf_bdp_lo = 0.0  # > 0: buffers in BDPs instead of packets
    c.env.params.buf_bdp_hi = 0.0
    c.env.params.mean_log = 0.0  # 1: log-uniform mean capacity
    c.env.params.loss_lo = 0.0
    c.env.params.loss_hi = 0.0
    c.env.params.low_mbps = 0.1
    c.env.params.bound_mbps = 100.0

    c.ddpg = ml_collections.ConfigDict()
    c.ddpg.conv_filters = 32  # §V
    c.ddpg.kernel = 3  # §V
    c.ddpg.branch = 64  # decided: width of the measurement/goal/action dense layers
    c.ddpg.hidden = 64  # decided: the merged layer
    c.ddpg.gamma = 0.9  # decided: a 10-decision (5-RTT) horizon
    c.ddpg.actor_lr = 1e-4  # DDPG (Lillicrap et al. 2016)
    c.ddpg.critic_lr = 1e-3  # DDPG
    c.ddpg.tau = 0.005  # soft target update per gradient step (θ' ← τθ + (1 − τ)θ')
    c.ddpg.batch_size = 64  # §V
    c.ddpg.buffer_size = 200_000
    c.ddpg.learning_starts = 5_000  # uniform random u until then
    c.ddpg.updates_per_step = 2
    c.ddpg.actor_starts = 5_000  # env transitions before the actor's first update (critic-only warm-up)
    c.ddpg.init_u = 1.0 / 3.0  # the actor's first output (output-layer bias): 1 Mbit/s
    c.ddpg.actor_z_penalty = 0.0  # λ·mean(z²) added to the actor loss (keeps tanh out of saturation)
    c.ddpg.max_grad_norm = 10.0
    c.ddpg.noise_theta = 0.15  # OU (1.0: i.i.d. Gaussian)
    c.ddpg.noise_sigma = 0.1  # in u: 0.1 ≈ ×2 in rate on the 0.1–100 Mbit/s log scale
    c.ddpg.noise_sigma_end = 0.02
    c.ddpg.noise_decay_frac = 0.8

    c.wandb = ml_collections.ConfigDict()
    c.wandb.project = "jaxcc"
    c.wandb.mode = "auto"
    c.wandb.entity = ""
    c.wandb.group = "deepcc"
    c.export_stages = True
    return c
