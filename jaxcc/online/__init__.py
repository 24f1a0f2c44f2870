"""``python -m jaxcc.online``: fine-tune Pareto (Algorithm 4) or MOCC (toward a new preference)
online from the senders' experience.

    python -m jaxcc.online --checkpoint=DIR (--scenario=NAME | --scenario-file=F) \
        --emulator=netns|mahimahi|sim --minutes=M --out=DIR

1. Restores Pareto's offline state from ``--checkpoint`` (a ``jaxcc.train`` workdir: its last
   finished stage, normally Pareto-Fair; a stage checkpoint ``<workdir>/stages/<Label>``; or a
   rolling checkpoint ``<workdir>/checkpoints/<n>``): actor, twin critics, target networks,
   optimizer states and the segmented prioritized replay with its stage segments, priorities
   and cursors.
2. Grows the buffer by an online segment and freezes the old ones (Algorithm 4 line 1,
   ``jaxcc.online.pareto``); ``--buffers=local`` (the paper's choice, §IV) keeps one
   agent and buffer per sender, ``--buffers=shared`` one for all.
3. Listens for senders (``jaxcc.online.experience``; ``--learner``, default a unix socket in
   ``--out``; ``--key=FILE``, a pre-shared key of at least 16 bytes, authenticates every sender
   and every frame, protocol 2, ``jaxcc.online.auth``, and is required for a ``tcp:`` address;
   refused connections are counted in ``auth_refused``), exports the starting policy to
   ``OUT/policy_v0.safetensors`` and
   starts the network (``jaxcc.online.network``: the netns harness, Mahimahi or the
   simulator behind the same socket protocol) with every learned flow running it and streaming
   its decisions.
4. Turns each flow's records into transitions (the flow's window ring of the last T feature
   vectors; reward = Algorithm 1 from the record's monitor-interval sums, through
   ``jaxcc.envs.pareto``'s own functions; a sender cannot see the link, so of Pareto-Fair v2's
   link-wide training terms ``--reward=local`` keeps the utilization term as the
   sender estimates it — 1 while it sees a queue, else its delivery rate over its largest one
   of the last ``--max-rate-window-s`` —, ``--reward=queue`` (the default) also charges the
   standing queue's level, which Algorithm 1 does not, and ``--reward=alg1`` keeps neither, the
   paper's Algorithm 1 alone; ``jaxcc.online.pareto`` says why), runs jitted TD3 steps at the learner's own pace
   (``--updates-per-s`` caps them, and the loop sleeps ``--yield-ms`` between batches so a
   learner sharing a small CPU with the senders leaves them room to pace; ``--replay-ratio``
   caps the gradient steps per online transition, 1 by default: offline training takes about
   one step per 30 new transitions), and pushes the actor every ``--push-every`` gradient steps as a
   versioned policy file.  The online learning rates are ``--lr-scale`` (0.3) times the
   offline ones, and the actor's loss holds it toward the offline actor (``--anchor``, 10;
   ``jaxcc.online.pareto``, variant ``anchor``; ``--anchor=0 --reward=alg1 --lr-scale=1``
   is Algorithm 4 as the paper gives it).  Why these defaults, with every run measured
   (without the anchor the old links are forgotten: after 3 minutes on an LTE trace the fixed
   12 Mbit/s link's Ankh's number rose 16–174% in every variant tried):
   ``checkpoints/pareto/online/README.md``.
   ``--hp=KEY=VALUE`` sets a TD3 hyperparameter online (absolute, after the scaling);
   ``--critic-warmup=N`` trains only the critics for the first N online steps: the offline
   state's actor is the stage's *selected* snapshot (``select``) while its critics are the
   stage's last iterate's, so without a warm-up the first actor steps pull the actor toward what
   the last iterate's critics prefer.  The writer threads PING every sender every 0.5 s.
5. Saves orbax checkpoints of the online state in ``OUT/online_ckpt`` every
   ``--checkpoint-every-s`` and at the end; started again with the same ``--out`` it resumes
   there (agents, buffers, RNG keys, step counts, the weight version), and the network it starts
   runs the newest online actor (``OUT/policy_latest.safetensors``).

``OUT/results.json``: ``first_minute`` and ``last_minute`` (``throughput_mbps``,
``utilization``, ``p95_owd_ms``, ``loss``, ``jain`` from the network's own logs,
``online_net.window_record``; plus ``ankh`` with d_max the larger of the two p95 delays),
``updates_applied`` (weight files the senders applied, from their acknowledgements),
``weights_rejected``, ``records_dropped`` (the senders' queue drops plus any the learner's event
queue dropped), ``max_decision_gap_s`` (the senders' own measure from their BYE counters; else
the largest gap between consecutive records' times), ``old_env_before`` / ``old_env_after``
(the starting and final actors in the simulator on ``--old-envs``, the forgetting check,
``jaxcc.online.checks.old_env_check``: Ankh's numbers of each pair share one d_max),
``old_env_ankh_change`` (each link as named, one run) and ``old_env_neighbourhood_change`` (the
change of the mean Ankh over ``--old-env-neighbours`` neighbours of each link,
``Scenario.neighbour``: the figure the forgetting bar reads, since one run of a shared link moves
by several percent for any small change of the actor), ``grad_steps``, ``records``, ``transitions``, ``records_per_s``, the per-flow learner
view and a 1-s timeline; ``OUT/online.png`` plots throughput, RTT and the weight version over
time (from the records).  ``--emulator=flood`` is the learner's benchmark: ``--replicas`` (3)
flooding senders (``jaxcc.emulation.experience.flood``) send records as fast as the learner takes
them while it learns; ``records_per_s`` is what it sustained, ``learner_events_dropped`` what it
could not keep.  ``--emulator=external`` starts no network: it serves senders started
elsewhere on ``--learner`` for ``--minutes`` (or until every sender that said HELLO has said BYE)
and its windows come from the records (the run's end: the latest record's sender time).

``--control=frozen`` runs, for each seed of ``--learner-seeds``, this run and its frozen control
(the same run with learning off: no gradient steps, no pushes) on the same network, interleaved,
in ``OUT/seed<S>/learning`` and ``OUT/seed<S>/frozen``, and compares them in ``OUT/compare.json``
and ``OUT/compare.md`` (``compare``: the order, the report, what the arms share).

A MOCC run (``config.algo`` ``mocc_envelope``) takes ``--preference=THR,DELAY,LOSS``, the
application objective ω* every learned flow runs with and the learner fine-tunes toward: §IV-A's
vector reward from the records, envelope updates on an online ring beside the frozen offline
buffer (``--old-share``), the Q network pushed as the policy file (``jaxcc.online.mocc``;
netns and Mahimahi only: the simulator backend runs Pareto's senders).  ``results.json`` then
has the objective ω*·r per window and ``operating_point`` (``checks.operating_point_time``).

Modules: ``restore`` (the offline state, policy blobs), ``tracks`` (records -> transitions),
``learner`` (the ``Learner``), ``experience`` (the learner protocol's Python side: frames,
records, the listening server), ``auth`` (the protocol's pre-shared-key authentication),
``network`` (where fine-tuning runs: netns, Mahimahi or the
simulator, started beside the learner), ``simnet`` (the simulator behind the protocol),
``checks`` (forgetting check, first/last minute), ``compare`` (the frozen control's report), ``cli``.  The algorithms' own online stages
are ``jaxcc.online.pareto`` (Algorithm 4's buffer and TD3 steps) and ``jaxcc.online.mocc``.
"""

from __future__ import annotations

from jaxcc.online.cli import DEFAULT_OLD_ENVS, EMULATORS, define_flags, main, run, run_cli
from jaxcc.online.learner import REWARDS, Learner
from jaxcc.online.restore import policy_blob, restore_offline, write_atomic
from jaxcc.online.tracks import FlowTrack

__all__ = ["DEFAULT_OLD_ENVS", "EMULATORS", "REWARDS", "FlowTrack", "Learner", "define_flags", "main", "policy_blob",
           "restore_offline", "run", "run_cli", "write_atomic"]
