"""``python -m jaxcc.online``: fine-tune Pareto online from the senders' experience (Algorithm 4).

    python -m jaxcc.online --checkpoint=DIR (--scenario=NAME | --scenario-file=F) \\
        --emulator=netns|mahimahi|sim --minutes=M --out=DIR

1. Restores Pareto's offline state from ``--checkpoint`` (a ``jaxcc.train`` workdir: its last
   finished stage, normally Pareto-Fair; a stage checkpoint ``<workdir>/stages/<Label>``; or a
   rolling checkpoint ``<workdir>/checkpoints/<n>``): actor, twin critics, target networks,
   optimizer states and the segmented prioritized replay with its stage segments, priorities
   and cursors.
2. Grows the buffer by an online segment and freezes the old ones (Algorithm 4 line 1,
   ``jaxcc.agents.pareto.online``); ``--buffers=local`` (the paper's choice, §IV) keeps one
   agent and buffer per sender, ``--buffers=shared`` one for all.
3. Listens for senders (``jaxcc.emulation.experience``, protocol 1; ``--learner``, default a
   unix socket in ``--out``), exports the starting policy to ``OUT/policy_v0.safetensors`` and
   starts the network (``jaxcc.emulation.online_net``: the netns harness, Mahimahi or the
   simulator behind the same socket protocol) with every learned flow running it and streaming
   its decisions.
4. Turns each flow's records into transitions (the flow's window ring of the last T feature
   vectors; reward = Algorithm 1 from the record's monitor-interval sums, through
   ``jaxcc.envs.pareto``'s own functions; a sender cannot see the link, so of Pareto-Fair v2's
   link-wide training terms ``--reward=local`` (the default) keeps the utilization term as the
   sender estimates it — 1 while it sees a queue, else its delivery rate over its largest one
   of the last ``--max-rate-window-s`` — and ``--reward=alg1`` keeps neither, the paper's
   Algorithm 1 alone; ``jaxcc.agents.pareto.online`` says why), runs jitted TD3 steps at the learner's own pace
   (``--updates-per-s`` caps them, and the loop sleeps ``--yield-ms`` between batches so a
   learner sharing a small CPU with the senders leaves them room to pace; ``--replay-ratio``
   caps the gradient steps per online transition, 1 by default: offline training takes about
   one step per 30 new transitions), and pushes the actor every ``--push-every`` gradient steps as a
   versioned policy file.  The online learning rates are ``--lr-scale`` (0.1) times the
   offline ones, and the actor's loss holds it toward the offline actor (``--anchor``, 10;
   ``jaxcc.agents.pareto.online``, variant ``anchor``; ``--anchor=0 --reward=alg1 --lr-scale=1``
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
``jaxcc.evaluate.run_evaluation``: one evaluation with both actors, so Ankh's numbers share one
d_max), ``grad_steps``, ``records``, ``transitions``, ``records_per_s``, the per-flow learner
view and a 1-s timeline; ``OUT/online.png`` plots throughput, RTT and the weight version over
time (from the records).  ``--emulator=flood`` is the learner's benchmark: ``--replicas`` (3)
flooding senders (``jaxcc.emulation.experience.flood``) send records as fast as the learner takes
them while it learns; ``records_per_s`` is what it sustained, ``learner_events_dropped`` what it
could not keep.  ``--emulator=external`` starts no network: it serves senders started
elsewhere on ``--learner`` for ``--minutes`` (or until every sender that said HELLO has said BYE)
and its windows come from the records (the run's end: the latest record's sender time).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

EMULATORS = ("netns", "mahimahi", "sim", "external", "flood")
REWARDS = ("local", "alg1")  # jaxcc.agents.pareto.online.record_reward
DEFAULT_OLD_ENVS = "pareto/fixed50,pareto/dyn10-30,pareto/shared2"


# ----------------------------------------------------------------------------- restore


def _read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _stage_dirs(workdir: str) -> list[tuple[int, str]]:
    sd = os.path.join(workdir, "stages")
    out = []
    if os.path.isdir(sd):
        for d in os.listdir(sd):
            p = os.path.join(sd, d)
            if os.path.isfile(os.path.join(p, "meta.json")) and os.path.isdir(os.path.join(p, "state")):
                out.append((int(_read_json(os.path.join(p, "meta.json"))["stage"]), p))
    return sorted(out)


def restore_offline(ckpt: str) -> dict:
    """Pareto's offline state from a run workdir, a stage checkpoint or a rolling checkpoint.

    Returns ``{"config", "trainer", "state", "spec", "label", "stage"}``; ``spec`` is the actor's
    policy-file spec with the stage label.

    Raises:
      ValueError: one line naming the path and what is missing or wrong.
    """
    import ml_collections

    from jaxcc import agents, checkpointing

    ckpt = os.path.abspath(ckpt)
    if not os.path.isdir(ckpt):
        raise ValueError(f"--checkpoint {ckpt}: no such directory")
    roll_step = None
    if os.path.isfile(os.path.join(ckpt, "meta.json")) and os.path.isdir(os.path.join(ckpt, "state")):
        stage_dir, workdir = ckpt, os.path.dirname(os.path.dirname(ckpt))
    elif os.path.basename(os.path.dirname(ckpt)) == "checkpoints" and os.path.basename(ckpt).isdigit():
        stage_dir, workdir, roll_step = None, os.path.dirname(os.path.dirname(ckpt)), int(os.path.basename(ckpt))
    else:
        stages = _stage_dirs(ckpt)
        workdir = ckpt
        if stages:
            stage_dir = stages[-1][1]
        else:
            stage_dir = None
            roll = checkpointing.RunCheckpoints(ckpt)
            roll_step = roll.latest()
            roll.close()
            if roll_step is None:
                raise ValueError(f"--checkpoint {ckpt}: no stage checkpoints (stages/<Label>) and no rolling "
                                 f"checkpoints (checkpoints/<n>)")
    cfg_path = os.path.join(workdir, "config.json")
    if not os.path.isfile(cfg_path):
        raise ValueError(f"--checkpoint {ckpt}: the run's config.json is missing ({cfg_path})")
    config = ml_collections.ConfigDict(_read_json(cfg_path))
    if str(config.get("algo", "")) != "pareto_td3":
        raise ValueError(f"--checkpoint {ckpt}: config.algo is {config.get('algo')!r}; online training needs "
                         f"a Pareto run (pareto_td3)")
    trainer = agents.make_train(config)
    if stage_dir is not None:
        meta = _read_json(os.path.join(stage_dir, "meta.json"))
        stage, label = int(meta["stage"]), str(meta.get("label", os.path.basename(stage_dir)))
        state = checkpointing.restore_stage(stage_dir, trainer.template(stage))
    else:
        roll = checkpointing.RunCheckpoints(workdir)
        meta = roll.meta(roll_step)
        stage, label = int(meta["stage"]), f"{meta.get('stage_label', 'Pareto')}@{roll_step}"
        state = roll.restore(roll_step, trainer.template(stage))
        roll.close()
    spec = {**trainer.actor_spec, "stage": label}
    return {"config": config, "trainer": trainer, "state": state, "spec": spec, "label": label, "stage": stage}


def policy_blob(spec: dict, tensors: dict) -> bytes:
    """The bytes of a policy file (``jaxcc.policyfile.save``'s format, validated)."""
    from safetensors.numpy import save as st_save

    from jaxcc import policyfile

    tensors = {k: np.ascontiguousarray(np.asarray(v, np.float32)) for k, v in tensors.items()}
    policyfile.validate(spec, tensors)
    return st_save(tensors, metadata={policyfile.METADATA_KEY: json.dumps(spec, sort_keys=True)})


def write_atomic(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- records -> transitions


class FlowTrack:
    """One flow's view: its window ring, Algorithm 1's memory and the transition under way.

    Record k carries the MI that ended at decision k, the features appended at decision k and
    the action a_k taken then.  Its transition is (window_k, a_k, r_{k+1}, window_{k+1}): the
    reward is Algorithm 1 on the *next* record's MI, the interval a_k governed, exactly as the
    offline environment steps (apply the action, run one MI, observe).  The window is the last T
    feature vectors (``empty`` rows before the first decision, as the sender starts); after a gap
    in ``seq`` (records the sender dropped) it is rebuilt from T consecutive records and
    Algorithm 1's memory restarts (keeping the delay flag the features carry), so no transition
    spans a gap.
    """

    def __init__(self, T: int, D: int, empty, a_range, reward_fn, max_rate_window_s: float | None = None):
        self.T, self.D = T, D
        # Variant ``local`` (``--reward=local``): the largest MI delivery rate of the last
        # ``max_rate_window_s`` seconds of the flow, Pareto-Fair v2's utilization term as a sender sees it.
        self.max_rate_window_s = max_rate_window_s
        self.rates: collections.deque = collections.deque()  # (t_s, delivery rate B/s)
        self.empty = np.asarray(empty, np.float32)
        self.lo, self.hi = a_range
        self.reward_fn = reward_fn
        self.win: collections.deque = collections.deque(maxlen=T)
        self.memory = None  # jaxcc.envs.pareto.ParetoFlow of one flow
        self.prev_seq = None
        self.pending = None  # (window [T, D], action)
        self.gaps = 0
        self.dropped = 0.0  # the sender's records_dropped in its last record
        self.records = 0
        # Largest relative difference (|own − sender's| / max(1, |sender's|)) between the features
        # this learner derives from a record's MI sums (Algorithm 1's inputs) and the features the
        # sender appended: a check that both read the same interval the same way.
        self.feature_err = 0.0

    def action_of(self, fx) -> float | None:
        from jaxcc.emulation.experience import F

        a = fx[F["action"]]
        if math.isfinite(a):
            return float(np.clip(a, self.lo, self.hi))
        rb, ra = fx[F["rate_before"]], fx[F["rate_after"]]
        if rb > 0 and math.isfinite(ra):  # the fallback (BBR) decided: the action its rate change implies
            return float(np.clip(ra / rb - 1.0, self.lo, self.hi))
        return None

    def push(self, fx: np.ndarray, feats: np.ndarray):
        """Consume one record; returns a transition dict or None."""
        from jaxcc.emulation.experience import F, MI_COLS
        from jaxcc.envs import pareto as penv

        self.records += 1
        self.dropped = float(fx[F["records_dropped"]])
        seq = int(fx[F["seq"]])
        if feats.shape != (self.D,):
            raise ValueError(f"RECORD with {feats.shape[0]} features; the policy's windows have D={self.D}")
        contiguous = self.prev_seq is not None and seq == self.prev_seq + 1
        if not contiguous:
            if self.prev_seq is not None:
                self.gaps += 1
            self.win.clear()
            self.pending = None
            self.memory = penv.zero_flows(1)
            if seq == 0:
                for _ in range(self.T - 1):
                    self.win.append(self.empty)
        self.prev_seq = seq
        args = (self.memory, fx[MI_COLS][None], np.asarray([fx[F["min_rtt_s"]]]))
        if self.max_rate_window_s is not None:
            t, dur = float(fx[F["t_s"]]), float(fx[F["mi_duration"]])
            self.rates.append((t, float(fx[F["mi_acked"]]) / dur if dur > 0 else 0.0))
            while self.rates and self.rates[0][0] < t - self.max_rate_window_s:
                self.rates.popleft()
            args += (np.asarray([max(x for _, x in self.rates)], np.float32),)
        r, own, new = self.reward_fn(*args)
        if contiguous or seq == 0:  # the features re-derived from the MI sums against the sender's own
            err = np.abs(np.asarray(own, np.float64)[0] - feats)
            self.feature_err = max(self.feature_err, float(np.max(err / np.maximum(1.0, np.abs(feats)))))
        if not contiguous and seq > 0:  # restart mid-flow: keep the flag of "delay experienced"
            new = new.replace(exp_delay=new.exp_delay | (feats[0] > 0.5))
        self.memory = new
        self.win.append(feats.astype(np.float32))
        out = None
        full = len(self.win) == self.T
        if self.pending is not None and full:
            w0, a0 = self.pending
            out = {"obs": w0, "action": np.float32(a0), "reward": np.float32(np.asarray(r)[0]),
                   "next_obs": np.stack(self.win), "done": np.float32(0.0)}
        a = self.action_of(fx)
        self.pending = (np.stack(self.win), a) if full and a is not None else None
        return out


# ----------------------------------------------------------------------------- the learner


class Learner:
    """Algorithm 4 around a ``experience.Server``: ingest records, learn, push, checkpoint."""

    def __init__(self, checkpoint: str, out: str, *, buffers: str = "local", replicas: int = 1,
                 online_segment: int | None = None, grad_steps: int | None = None, push_every: int = 64,
                 updates_per_s: float = 40.0, min_online: int | None = None, checkpoint_every_s: float = 30.0,
                 seed: int = 0, add_batch: int = 64, replay_ratio: float = 1.0, hp: dict | None = None,
                 critic_warmup: int = 0, lr_scale: float = 1.0, reward: str = "local",
                 max_rate_window_s: float = 10.0, new_priority: str = "config", anchor_w: float = 0.0, log=print):
        import jax
        import jax.numpy as jnp
        import orbax.checkpoint as ocp

        from jaxcc.agents.pareto import online as alg
        from jaxcc.agents.pareto import env_adapter

        if buffers not in ("local", "shared"):
            raise ValueError(f"--buffers={buffers!r}: expected local or shared")
        if reward not in REWARDS:
            raise ValueError(f"--reward={reward!r}: expected one of {', '.join(REWARDS)}")
        if not max_rate_window_s > 0:
            raise ValueError(f"--max-rate-window-s={max_rate_window_s}: must be > 0")
        self.reward = reward
        self.max_rate_window_s = float(max_rate_window_s) if reward == "local" else None
        self.log = log
        self.out = os.path.abspath(out)
        os.makedirs(self.out, exist_ok=True)
        off = restore_offline(checkpoint)
        cfg = off["config"]
        self.config, self.spec, self.label = cfg, off["spec"], off["label"]
        feats = self.spec["features"]
        self.T, self.D = int(feats["history"]), int(feats["obs_dim"])
        self.feature_set = str(feats.get("name", "pareto_v1"))
        self.empty = feats.get("empty", [0.0] * self.D)
        self.a_range = (float(self.spec["head"]["low"]), float(self.spec["head"]["high"]))
        self.K = 1 if buffers == "shared" else max(1, int(replicas))
        self.buffers = buffers
        seg = int(online_segment or max(int(s.buffer_segment) for s in cfg.stages.values()))
        self.grad_steps = int(grad_steps or int(cfg.td3.grad_steps))
        self.push_every = int(push_every)
        self.updates_per_s = float(updates_per_s)
        self.replay_ratio = float(replay_ratio)
        self.critic_warmup = int(critic_warmup)
        self.min_online = int(min_online if min_online is not None else int(cfg.td3.batch_size))
        self.ckpt_every_s = float(checkpoint_every_s)
        self.M = int(add_batch)
        if new_priority not in ("config", "max", "one"):
            raise ValueError(f"--new-priority={new_priority!r}: expected config, max or one")
        # A new online transition's priority: the largest seen (the offline config's default) or
        # 1, the paper's initial value (§IV), which samples online experience less at first.
        self.new_priority_max = (bool(cfg.replay.new_priority_max) if new_priority == "config"
                                 else new_priority == "max")
        # Algorithm 1's parameters: the last stage's environment (its reward leaves, d_min, EWMA gain...).
        names = [n.strip() for n in str(cfg.stage_order).split(",") if n.strip()]
        over = dict(cfg.env.overrides) if "overrides" in cfg.env else {}
        last = cfg.stages[names[-1]]
        se = env_adapter.make_stage_env(names[-1], overrides={**over, **dict(last.get("env_overrides", {}))},
                                        params=dict(cfg.env.params) if "params" in cfg.env else {})
        self.reward_params = se.params
        fs = self.feature_set
        self._reward = jax.jit(lambda m, mi, r, mx=None: alg.record_reward(m, mi, r, self.reward_params, fs, mx))
        kw = alg.learn_kwargs(cfg.td3, self.spec, self.a_range)
        # Donated: the buffers are updated in place (no copy of the replay per call).
        self._learn = jax.jit(lambda s, on: alg.learn(s, on, n_steps=self.grad_steps, kw=kw), donate_argnums=0)
        self._add = jax.jit(lambda s, b, v: alg.add(s, b, v, new_priority_max=self.new_priority_max),
                            donate_argnums=0)
        self._count = jax.jit(alg.online_count)
        self.alg = alg

        # The starting policy (the offline actor) and the online state, fresh or resumed.
        self.v0_path = os.path.join(self.out, "policy_v0.safetensors")
        self.latest_path = os.path.join(self.out, "policy_latest.safetensors")
        from jaxcc.agents import pipeline

        if not os.path.isfile(self.v0_path):
            write_atomic(self.v0_path, policy_blob(self.spec, pipeline.actor_tensors(off["state"])))
        self.policy_sha256 = hashlib.sha256(open(self.v0_path, "rb").read()).hexdigest()
        opts = ocp.CheckpointManagerOptions(max_to_keep=2, enable_async_checkpointing=False, create=True)
        self.mgr = ocp.CheckpointManager(os.path.join(self.out, "online_ckpt"), options=opts,
                                         item_names=("state", "meta"))
        step = self.mgr.latest_step()
        self.resumed = step is not None
        self.meta = {"version": 0, "grad_steps": 0, "records": 0, "transitions": 0, "replica_of": {},
                     "pushes": [], "wall_s": 0.0, "sessions": 0, "replicas": self.K, "buffers": buffers,
                     "online_segment": seg, "anchor_w": float(anchor_w)}
        if self.resumed:  # the shapes are the checkpoint's (replicas, segment), whatever was asked now
            m0 = dict(self.mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])
            self.K, seg = int(m0.get("replicas", self.K)), int(m0.get("online_segment", seg))
            self.buffers = str(m0.get("buffers", buffers))
        if self.resumed:  # the variant is the checkpoint's too
            anchor_w = float(m0.get("anchor_w", 0.0))
        self.anchor_w = float(anchor_w)
        fresh = alg.init_online(off["state"], replicas=self.K, online_size=seg, seed=seed, anchor_w=anchor_w)
        if self.resumed:
            r = self.mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(fresh),
                                                               meta=ocp.args.JsonRestore()))
            self.ostate, self.meta = r["state"], {**self.meta, **dict(r["meta"])}
            self.log(f"[jaxcc.online] resumed {self.out}/online_ckpt at step {step}: weight version "
                     f"{self.meta['version']}, {self.meta['grad_steps']} online gradient steps")
        else:  # a fresh online stage: the learning rates scaled (the hp leaves are checkpointed after)
            hp0 = fresh["hp"]
            scaled = {k: hp0[k] * jnp.float32(lr_scale) for k in ("lr_actor", "lr_critic")}
            self.ostate = {**fresh, "hp": {**hp0, **scaled}}
        self.meta["sessions"] = int(self.meta["sessions"]) + 1
        for k, v in (hp or {}).items():  # e.g. a smaller online learning rate (no recompile: hp leaves)
            if k not in self.ostate["hp"]:
                raise ValueError(f"--hp {k}: not a TD3 hyperparameter; allowed: {', '.join(sorted(self.ostate['hp']))}")
            self.ostate = {**self.ostate, "hp": {**self.ostate["hp"], k: jnp.asarray(float(v), jnp.float32)}}
        resume_actor = self.resumed and os.path.isfile(self.latest_path)
        self.start_actor_path = self.latest_path if resume_actor else self.v0_path
        del off
        self.compile_s = self._compile_ahead()
        self.log(f"[jaxcc.online] learner steps compiled in {self.compile_s:.1f} s")
        # Per-run bookkeeping.
        self.tracks: dict[int, FlowTrack] = {}
        self.flow_of_conn: dict[int, int] = {}
        self.conn_version: dict[int, int] = {}
        self.applied_conns: set[int] = set()
        self.pending: list[list[dict]] = [[] for _ in range(self.K)]
        self.counters = collections.Counter()
        self.acks: list[dict] = []
        self.byes: dict[int, dict] = {}
        self.hellos: dict[int, dict] = {}
        self.timeline: list[tuple] = []  # (flow, t_s, delivery B/s, rtt s, weight_version, wall)
        self.learn_metrics: list[dict] = []
        self.t0 = time.monotonic()
        self.t_last_ckpt = self.t0
        self.grad_steps_run = 0
        self.steps_since_push = 0
        self._ck = (0, 0)  # records, transitions already counted into meta
        self.tokens, self.t_tokens = 0.0, self.t0
        # A flood of records never starves learning: at most this many events per loop pass (the
        # server's queue is bounded and drops the oldest, counted, beyond that).
        self.max_events_per_tick = 2048

    def _empty_batch(self) -> dict[str, np.ndarray]:
        """A zero batch of ``add_batch`` rows per replica, in the shapes ``alg.add`` takes."""
        km, kmtd = (self.K, self.M), (self.K, self.M, self.T, self.D)
        return {"obs": np.zeros(kmtd, np.float32), "next_obs": np.zeros(kmtd, np.float32),
                "action": np.zeros(km, np.float32), "reward": np.zeros(km, np.float32),
                "done": np.zeros(km, np.float32)}

    def _compile_ahead(self) -> float:
        """Compiles the add, count and learn steps before any sender connects; returns the seconds.

        Their first calls would otherwise compile while records arrive: measured on the sim
        backend (``pareto/shared2``, 1 simulated minute at 4x), the first weight push came at
        15.4 s of a 19-s run.  The calls are no-ops on the state (no valid row to add, no
        replica active: ``replay.add`` drops every row, ``learn`` keeps every leaf), so the
        online state is the same bit for bit."""
        import jax

        t = time.monotonic()
        self.ostate = self._add(self.ostate, self._empty_batch(), np.zeros((self.K, self.M), bool))
        np.asarray(self._count(self.ostate))
        self.ostate, m = self._learn(self.ostate, np.zeros(self.K, bool))
        jax.block_until_ready(m)
        return time.monotonic() - t

    # -- ingest
    def replica(self, flow_id: int) -> int:
        m = self.meta["replica_of"]
        k = str(flow_id)
        if k not in m:
            m[k] = len(m) % self.K
        return int(m[k])

    def handle(self, events) -> None:
        from jaxcc.emulation.experience import F

        for kind, cid, payload in events:
            if kind == "hello":
                fid = int(payload.get("flow_id", cid))
                self.hellos[fid] = payload
                self.flow_of_conn[cid] = fid
                self.conn_version[cid] = int(payload.get("weight_version", 0))
                self.meta["version"] = max(int(self.meta["version"]), self.conn_version[cid])
                if payload.get("policy_sha256") not in (None, "", self.policy_sha256):
                    self.counters["hello_other_policy"] += 1
                if int(payload.get("history", self.T)) != self.T or int(payload.get("obs_dim", self.D)) != self.D:
                    self.counters["hello_shape_mismatch"] += 1
                self.replica(fid)
            elif kind == "record":
                fx, feats = payload
                fid = self.flow_of_conn.get(cid)
                if fid is None:
                    self.counters["records_before_hello"] += 1
                    continue
                tr = self.tracks.get(fid)
                if tr is None:
                    tr = self.tracks[fid] = FlowTrack(self.T, self.D, self.empty, self.a_range, self._reward,
                                                        self.max_rate_window_s)
                self.counters["records"] += 1
                acked, dur = fx[F["mi_acked"]], fx[F["mi_duration"]]
                rtt = fx[F["mi_rtt_wsum"]] / acked if acked > 0 else float("nan")
                self.timeline.append((fid, float(fx[F["t_s"]]), acked / dur if dur > 0 else 0.0, rtt,
                                      int(fx[F["weight_version"]]), time.monotonic() - self.t0,
                                      float(fx[F["mi_lost"]]), float(acked), float(dur)))
                t = tr.push(fx, feats)
                if t is not None:
                    self.pending[self.replica(fid)].append(t)
                    self.counters["transitions"] += 1
            elif kind == "ack":
                self.acks.append({**payload, "flow_id": self.flow_of_conn.get(cid),
                                  "wall_s": time.monotonic() - self.t0})
                if payload.get("ok"):
                    self.counters["updates_applied"] += 1
                    if cid not in self.applied_conns:  # one line per connection: its first applied update
                        self.applied_conns.add(cid)
                        self.log(f"[jaxcc.online] flow {self.flow_of_conn.get(cid)} runs weight version "
                                 f"{int(payload.get('version', 0))} (its first update applied)")
                    self.conn_version[cid] = max(self.conn_version.get(cid, 0), int(payload.get("version", 0)))
                elif str(payload.get("reason", "")).startswith("superseded"):
                    # a newer blob replaced it in the sender's mailbox before a decision took it
                    self.counters["weights_superseded"] += 1
                else:
                    self.counters["weights_rejected"] += 1
                    self.log(f"[jaxcc.online] flow {self.flow_of_conn.get(cid)} rejected weights "
                             f"v{payload.get('version')}: {payload.get('reason')}")
            elif kind == "bye":
                self.byes[self.flow_of_conn.get(cid, cid)] = payload
            elif kind == "closed":
                self.counters["disconnects"] += 1

    def flush(self) -> int:
        """Moves queued transitions into the replicas' online segments (fixed-size jitted adds)."""
        n = 0
        while any(self.pending):
            takes = [p[:self.M] for p in self.pending]
            self.pending = [p[self.M:] for p in self.pending]
            valid = np.zeros((self.K, self.M), bool)
            batch = self._empty_batch()
            for k, ts in enumerate(takes):
                for i, t in enumerate(ts):
                    valid[k, i] = True
                    for key in batch:
                        batch[key][k, i] = t[key]
            batch["reward"] = batch["reward"] * np.float32(float(np.asarray(self.ostate["hp"]["reward_scale"])))
            self.ostate = self._add(self.ostate, batch, valid)
            n += int(valid.sum())
        return n

    # -- learn, push
    def learn_once(self) -> bool:
        """One jitted batch of ``grad_steps`` TD3 steps on every replica with enough online data,
        when the ``updates_per_s`` budget allows.  Returns whether it ran."""
        import jax
        import jax.numpy as jnp

        now = time.monotonic()
        elapsed = now - self.t0
        # Token bucket: updates_per_s accrue, at most one second's worth (or one batch) banked, so
        # the learner never bursts to catch up after an idle spell.
        cap = max(self.updates_per_s, float(self.grad_steps))
        self.tokens = min(cap, self.tokens + self.updates_per_s * (now - self.t_tokens))
        self.t_tokens = now
        if self.tokens < self.grad_steps:
            return False
        # Replay ratio: at most ``replay_ratio`` gradient steps per online transition this session
        # (offline training takes ~1 step per 30 new transitions).
        budget = self.replay_ratio * self.counters["transitions"]
        if self.replay_ratio > 0 and self.grad_steps_run + self.grad_steps > budget:
            return False
        active = np.asarray(self._count(self.ostate)) >= self.min_online
        if not active.any():
            return False
        self.tokens -= self.grad_steps
        prev_agent = jax.tree.map(np.asarray, self.ostate["agent"])  # the buffers are donated; agents are small
        hp = {k: np.asarray(v) for k, v in self.ostate["hp"].items()}  # host copies: the state is donated
        if int(self.meta["grad_steps"]) < self.critic_warmup:
            # critics first: the actor holds still (its learning rate 0) while the critics fit it
            self.ostate = {**self.ostate, "hp": {**self.ostate["hp"], "lr_actor": jnp.zeros((), jnp.float32)}}
        self.ostate, m = self._learn(self.ostate, active)
        self.ostate = {**self.ostate, "hp": {k: jnp.asarray(v) for k, v in hp.items()}}
        m = jax.device_get(m)
        if not np.all(m["params_finite"][active]):
            self.counters["nonfinite_batches"] += 1  # keep the last good agent; the batch is dropped
            self.ostate = {**self.ostate, "agent": jax.tree.map(jnp.asarray, prev_agent)}
            self.log("[jaxcc.online] non-finite parameters after a learn batch: batch discarded")
            return False
        self.grad_steps_run += self.grad_steps
        self.steps_since_push += self.grad_steps
        self.meta["grad_steps"] = int(self.meta["grad_steps"]) + self.grad_steps
        self.learn_metrics.append({"wall_s": elapsed, "critic_loss": float(np.mean(m["critic_loss"][active])),
                                   "actor_loss": float(np.mean(m["actor_loss"][active])),
                                   "q": float(np.mean(m["q"][active]))})
        return True

    def actor_blob(self, k: int) -> bytes:
        from jaxcc.agents import pipeline

        actor = self.alg.actor_of(self.ostate, k)
        return policy_blob(self.spec, {k2: np.asarray(v) for k2, v in pipeline.flat(actor).items()})

    def push(self, server) -> int:
        """Sends every connected sender its replica's actor as the next weight version."""
        conns = [c for c in server.connected() if c in self.flow_of_conn]
        if not conns:
            return 0
        v = int(self.meta["version"]) + 1
        blobs = {}
        for c in conns:
            k = self.replica(self.flow_of_conn[c])
            if k not in blobs:
                blobs[k] = self.actor_blob(k)
            server.send_weights(v, blobs[k], cid=c)
        self.meta["version"] = v
        self.meta["pushes"].append({"version": v, "wall_s": time.monotonic() - self.t0,
                                    "grad_steps": int(self.meta["grad_steps"])})
        write_atomic(self.latest_path, blobs.get(0) or self.actor_blob(0))
        self.steps_since_push = 0
        return len(conns)

    def checkpoint(self) -> None:
        import orbax.checkpoint as ocp

        self.meta["records"] = int(self.meta["records"]) + self.counters["records"] - self._ck[0]
        self.meta["transitions"] = int(self.meta["transitions"]) + self.counters["transitions"] - self._ck[1]
        self._ck = (self.counters["records"], self.counters["transitions"])
        now = time.monotonic()
        self.meta["wall_s"] = float(self.meta["wall_s"]) + now - self.t_last_ckpt
        step = (self.mgr.latest_step() or 0) + 1  # checkpoints count up across sessions
        self.mgr.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(self.ostate),
                                                    meta=ocp.args.JsonSave(self.meta)), force=True)
        self.mgr.wait_until_finished()
        write_atomic(self.latest_path, self.actor_blob(0))
        self.t_last_ckpt = now

    def tick(self, server, *, wait_s: float = 0.02, yield_s: float = 0.005) -> None:
        """One pass of the loop: events, transitions, at most one learn batch, push, checkpoint."""
        self.handle(server.drain(max_n=self.max_events_per_tick, timeout=wait_s))
        self.flush()
        if self.learn_once():
            time.sleep(yield_s)  # leave the CPU to the senders between batches
        if self.steps_since_push >= self.push_every:
            self.push(server)
        if time.monotonic() - self.t_last_ckpt >= self.ckpt_every_s:
            self.checkpoint()

    def close(self):
        self.mgr.close()

    # -- reporting
    def records_dropped(self, server) -> float:
        from_byes = {fid: float(b.get("records_dropped", 0)) for fid, b in self.byes.items()}
        per_flow = {fid: max(t.dropped, from_byes.get(fid, 0.0)) for fid, t in self.tracks.items()}
        return float(sum(per_flow.values()) + server.counters["events_dropped"])

    def max_decision_gap(self) -> tuple[float | None, str]:
        gaps = [float(b["max_decision_gap_s"]) for b in self.byes.values() if "max_decision_gap_s" in b]
        if gaps:
            return max(gaps), "senders"
        if not self.timeline:
            return None, "none"
        tl = np.asarray([(r[0], r[1]) for r in self.timeline])
        best = 0.0
        for fid in np.unique(tl[:, 0]):
            t = np.sort(tl[tl[:, 0] == fid, 1])
            if t.size > 1:
                best = max(best, float(np.max(np.diff(t))))
        return best, "records"

    def timeline_bins(self, bin_s: float = 1.0) -> dict:
        """Per 1-s bin of sender time: total delivery (Mbit/s), mean RTT (ms), newest weight version."""
        if not self.timeline:
            return {"t_s": [], "throughput_mbps": [], "rtt_ms": [], "weight_version": []}
        a = np.asarray([r[:5] for r in self.timeline], np.float64)
        b = np.floor(a[:, 1] / bin_s).astype(int)
        out = {"t_s": [], "throughput_mbps": [], "rtt_ms": [], "weight_version": []}
        for i in range(b.min(), b.max() + 1):
            sel = a[b == i]
            if not sel.size:
                continue
            flows = np.unique(sel[:, 0])
            thr = sum(float(np.mean(sel[sel[:, 0] == f, 2])) for f in flows) * 8 / 1e6
            rtt = sel[:, 3][np.isfinite(sel[:, 3])]
            out["t_s"].append((i + 0.5) * bin_s)
            out["throughput_mbps"].append(thr)
            out["rtt_ms"].append(float(np.mean(rtt)) * 1e3 if rtt.size else float("nan"))
            out["weight_version"].append(int(np.max(sel[:, 4])))
        return out

    def records_window(self, t0: float, t1: float) -> dict:
        """Throughput, loss and Jain over the records whose sender time lies in [t0, t1) (the
        learner's own view; the network's logs give the reported windows)."""
        rows = [r for r in self.timeline if t0 <= r[1] < t1]
        if not rows:
            return {"throughput_mbps": None, "loss": None, "jain": None, "p95_rtt_ms": None, "records": 0}
        per = collections.defaultdict(lambda: [0.0, 0.0])
        lost = acked = 0.0
        rtts = []
        for fid, _, _, rtt, _, _, lo, ac, _ in rows:
            per[fid][0] += ac
            lost += lo
            acked += ac
            if math.isfinite(rtt):
                rtts.append(rtt)
        x = np.asarray([v[0] for v in per.values()])
        jain = float(x.sum() ** 2 / (x.size * np.sum(x * x))) if np.sum(x * x) > 0 else 1.0
        return {"throughput_mbps": float(acked * 8 / 1e6 / (t1 - t0)), "loss": float(lost / max(acked + lost, 1.0)),
                "jain": jain, "p95_rtt_ms": float(np.percentile(rtts, 95) * 1e3) if rtts else None,
                "records": len(rows)}


# ----------------------------------------------------------------------------- forgetting check


def old_env_check(before: str, after: str, names: list[str]) -> tuple[dict, dict]:
    """The start and end actors in the simulator on ``names`` (one ``run_evaluation`` for both, so
    their Ankh's numbers share d_max).  Returns (before, after): ``{scenario: record}``."""
    from jaxcc import evaluate

    if not names:
        return {}, {}
    scs, _ = evaluate.resolve_scenarios(scenario=",".join(names))
    entries = [evaluate.ControllerEntry("before", f"policy:{before}"),
               evaluate.ControllerEntry("after", f"policy:{after}")]
    rep = evaluate.run_evaluation(scs, entries, progress=False, keep_series=False)
    keys = ("throughput_mbps", "utilization", "p95_owd_ms", "loss", "jain", "ankh", "ankh_d_max_ms")
    out = {"before": {}, "after": {}}
    for r in rep["results"]:
        out[r["controller"]][r["scenario"]] = {k: r[k] for k in keys}
    return out["before"], out["after"]


def ankh_pair(first: dict, last: dict) -> None:
    """Adds ``ankh`` to both windows with d_max the larger of their p95 delays (Pareto eq. 10)."""
    from jaxcc import metrics

    try:
        d_max = max(float(first["p95_owd_ms"]), float(last["p95_owd_ms"]))
        for w in (first, last):
            u = float(w["utilization"])
            w["ankh"] = metrics.ankh(u, 1.0, float(w["p95_owd_ms"]), d_max, float(w["loss"]))
            w["ankh_d_max_ms"] = d_max
    except (KeyError, TypeError, ValueError):
        for w in (first, last):
            w.setdefault("ankh", None)


def plot(path: str, tl: dict, pushes: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    ax[0].plot(tl["t_s"], tl["throughput_mbps"], lw=1)
    ax[0].set_ylabel("throughput (Mbit/s)")
    ax[1].plot(tl["t_s"], tl["rtt_ms"], lw=1, color="tab:orange")
    ax[1].set_ylabel("mean RTT (ms)")
    ax[2].step(tl["t_s"], tl["weight_version"], where="post", color="tab:green")
    ax[2].set_ylabel("weight version in force")
    ax[2].set_xlabel("sender time (s)")
    fig.suptitle(f"online fine-tuning ({len(pushes)} weight pushes)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ----------------------------------------------------------------------------- CLI


def default_address(out: str) -> str:
    p = os.path.join(os.path.abspath(out), "learner.sock")
    if len(p) > 100:  # AF_UNIX paths are limited to 108 bytes
        p = os.path.join(tempfile.gettempdir(), "jaxcc-online-" + hashlib.sha1(p.encode()).hexdigest()[:12] + ".sock")
    return "unix:" + p


def policy_flow_count(sc) -> int:
    """Senders a scenario runs with the learned policy: its ``policy:*`` flows, else every flow."""
    n = sum(1 for f in sc.flows if str(f.controller).startswith("policy"))
    return n or len(sc.flows)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jaxcc.online", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="jaxcc.train workdir, stages/<Label> or checkpoints/<n>")
    p.add_argument("--scenario", help="a named scenario (jaxcc.scenarios)")
    p.add_argument("--scenario-file", help="a scenario JSON file")
    p.add_argument("--emulator", required=True, choices=EMULATORS)
    p.add_argument("--minutes", required=True, type=float, help="how long the network runs (minutes, > 0)")
    p.add_argument("--out", required=True, help="output directory (results.json, online.png, online_ckpt/)")
    p.add_argument("--learner", help="address to listen on: unix:/abs/path or tcp:HOST:PORT (default OUT/learner.sock)")
    p.add_argument("--buffers", default="local", choices=("local", "shared"),
                   help="local: one agent+buffer per sender (the paper's); shared: one for all")
    p.add_argument("--replicas", type=int, default=0, help="local buffers: how many (0: the scenario's policy flows)")
    p.add_argument("--online-segment", type=int, default=0, help="online buffer segment size (0: the largest stage's)")
    p.add_argument("--grad-steps", type=int, default=0, help="TD3 steps per learn batch (0: config td3.grad_steps)")
    p.add_argument("--push-every", type=int, default=64, help="push weights every N gradient steps")
    p.add_argument("--updates-per-s", type=float, default=40.0, help="cap on gradient steps per second")
    p.add_argument("--replay-ratio", type=float, default=1.0,
                   help="at most this many gradient steps per online transition (0: no cap)")
    p.add_argument("--lr-scale", type=float, default=0.1,
                   help="online learning rates = this × the offline ones (a fresh online stage; --hp wins)")
    p.add_argument("--reward", default="local", choices=REWARDS,
                   help="online reward: local = Algorithm 1 + Pareto-Fair v2's utilization term as the sender "
                        "estimates it (jaxcc.agents.pareto.online.local_util); alg1 = Algorithm 1 alone (the paper's)")
    p.add_argument("--max-rate-window-s", type=float, default=10.0,
                   help="--reward=local: the window of the flow's largest delivery rate (s)")
    p.add_argument("--new-priority", default="config", choices=("config", "max", "one"),
                   help="priority of a new online transition: the offline config's rule, the largest seen, or 1 "
                        "(the paper's initial value)")
    p.add_argument("--anchor", type=float, default=10.0,
                   help="variant anchor (ours): weight of ((actor - offline actor) / half-range)^2 in the actor's loss "
                        "(0: Algorithm 4 as the paper gives it; the default 10 was chosen on eagle/lte with "
                        "pareto/link12 and pareto/dyn10-20 as the old links, checkpoints/pareto/online/README.md)")
    p.add_argument("--critic-warmup", type=int, default=0,
                   help="online gradient steps that train the critics only (the actor's learning rate 0)")
    p.add_argument("--hp", action="append", default=[], metavar="KEY=VALUE",
                   help="override a TD3 hyperparameter online, e.g. --hp=lr_actor=1e-4 (repeatable)")
    p.add_argument("--min-online", type=int, default=-1, help="online transitions before learning (-1: batch size)")
    p.add_argument("--checkpoint-every-s", type=float, default=30.0)
    p.add_argument("--yield-ms", type=float, default=5.0, help="sleep after every learn batch (ms)")
    p.add_argument("--fallback", default="keep", choices=("keep", "bbr"))
    p.add_argument("--learner-timeout-s", type=float, default=5.0)
    p.add_argument("--sender-arg", action="append", default=[], help="extra sender argument (repeatable)")
    p.add_argument("--old-envs", default=DEFAULT_OLD_ENVS, help="scenarios for the forgetting check ('' for none)")
    p.add_argument("--prefix", default="onl", help="netns name prefix")
    p.add_argument("--speed", type=float, default=1.0, help="sim: simulated seconds per wall second (0: unpaced)")
    p.add_argument("--seed", type=int, default=0)
    return p


def _check_args(a) -> None:
    if not a.minutes > 0:
        raise ValueError(f"--minutes={a.minutes}: must be > 0")
    given = [x for x in (a.scenario, a.scenario_file) if x]
    if a.emulator not in ("external", "flood") and len(given) != 1:
        raise ValueError("give exactly one of --scenario, --scenario-file")
    for name, v, lo in (("--push-every", a.push_every, 1), ("--replicas", a.replicas, 0),
                        ("--online-segment", a.online_segment, 0), ("--grad-steps", a.grad_steps, 0)):
        if v < lo:
            raise ValueError(f"{name}={v}: must be >= {lo}")
    if a.speed < 0:
        raise ValueError(f"--speed={a.speed}: must be >= 0")
    if not a.lr_scale > 0:
        raise ValueError(f"--lr-scale={a.lr_scale}: must be > 0")
    if a.critic_warmup < 0:
        raise ValueError(f"--critic-warmup={a.critic_warmup}: must be >= 0")
    if a.replay_ratio < 0:
        raise ValueError(f"--replay-ratio={a.replay_ratio}: must be >= 0")
    if not a.updates_per_s > 0:
        raise ValueError(f"--updates-per-s={a.updates_per_s}: must be > 0")
    if a.checkpoint_every_s <= 0:
        raise ValueError(f"--checkpoint-every-s={a.checkpoint_every_s}: must be > 0")


def _parse_hp(items: list[str]) -> dict:
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            eq = ""
        if not eq or not k.strip():
            raise ValueError(f"--hp {it!r}: expected KEY=NUMBER, e.g. --hp=lr_actor=1e-4")
    return out


def run(a, log=print) -> dict:
    """The whole command (parsed ``a``); returns the results dict it also writes."""
    from jaxcc.emulation import experience

    _check_args(a)
    sc = None
    if a.scenario or a.scenario_file:
        from jaxcc import scenarios

        sc = (scenarios.get_scenario(a.scenario) if a.scenario
              else scenarios.load_scenario(a.scenario_file, allow_kernel=True))
    replicas = a.replicas or (policy_flow_count(sc) if sc is not None else (3 if a.emulator == "flood" else 1))
    learner = Learner(a.checkpoint, a.out, buffers=a.buffers, replicas=replicas,
                      online_segment=a.online_segment or None, grad_steps=a.grad_steps or None,
                      push_every=a.push_every, updates_per_s=a.updates_per_s,
                      min_online=None if a.min_online < 0 else a.min_online,
                      checkpoint_every_s=a.checkpoint_every_s, seed=a.seed, replay_ratio=a.replay_ratio,
                      hp=_parse_hp(a.hp), critic_warmup=a.critic_warmup,
                      lr_scale=a.lr_scale, reward=a.reward, max_rate_window_s=a.max_rate_window_s,
                      new_priority=a.new_priority, anchor_w=a.anchor, log=log)
    addr = a.learner or default_address(a.out)
    server = experience.Server(addr)
    handle = None
    run_result = None
    flood = None
    t_wall0 = time.monotonic()
    try:
        if a.emulator == "flood":  # the learner benchmark: records as fast as the learner takes them
            import subprocess

            flood_out = os.path.join(learner.out, "flood.json")
            flood = subprocess.Popen([sys.executable, "-m", "jaxcc.emulation.experience", f"--learner={server.address}",
                                      f"--flows={learner.K}", f"--seconds={60.0 * a.minutes}",
                                      f"--policy={learner.v0_path}", f"--out={flood_out}"])
            done = lambda: flood.poll() is not None  # noqa: E731
        elif a.emulator != "external":
            from jaxcc.emulation import online_net

            sender_args = [f"--fallback={a.fallback}", f"--learner-timeout-s={a.learner_timeout_s}",
                           *a.sender_arg]
            handle = online_net.start(a.emulator, sc, minutes=a.minutes, policy_path=learner.start_actor_path,
                                      learner=server.address, sender_args=sender_args,
                                      out_dir=os.path.join(learner.out, "net"), prefix=a.prefix, speed=a.speed)
            done = handle.done
            if getattr(handle, "pid", None):  # a child-process network outlives a killed learner
                with open(os.path.join(learner.out, "net.pid"), "w") as f:
                    f.write(f"{handle.pid}\n")
        else:
            end = time.monotonic() + 60.0 * a.minutes

            def done():  # --minutes up, or every sender that said HELLO has said BYE and left
                finished = bool(learner.byes) and set(learner.byes) >= set(learner.hellos)
                return time.monotonic() >= end or (finished and not server.connected())
        while not done():
            learner.tick(server, yield_s=a.yield_ms / 1e3)
        if handle is not None:
            run_result = handle.wait()
        if flood is not None and flood.returncode != 0:
            raise RuntimeError(f"the flooding senders (python -m jaxcc.emulation.experience) exited {flood.returncode}")
        # the last records and BYEs
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            evs = server.drain(timeout=0.1)
            learner.handle(evs)
            if not evs and (not server.connected()):
                break
        learner.flush()
        learner.checkpoint()
        wall = time.monotonic() - t_wall0
    finally:
        server.close()
        learner.close()

    # windows: the network's own logs (first and last minute of the run)
    dur = 60.0 * a.minutes
    w = min(60.0, dur)
    if run_result is not None:
        from jaxcc.emulation import online_net

        first = dict(online_net.window_record(run_result, 0.0, w))
        last = dict(online_net.window_record(run_result, dur - w, dur))
        src = a.emulator
    else:
        dur = max([r[1] for r in learner.timeline], default=dur)  # the senders' clock: they may end early
        w = min(60.0, dur)
        first, last = learner.records_window(0.0, w), learner.records_window(dur - w, dur)
        first["utilization"] = last["utilization"] = None
        first["p95_owd_ms"] = last["p95_owd_ms"] = None
        src = "records"
    ankh_pair(first, last)
    gap, gap_src = learner.max_decision_gap()
    names = [n.strip() for n in a.old_envs.split(",") if n.strip()]
    final = os.path.join(learner.out, "policy_final.safetensors")
    write_atomic(final, open(learner.latest_path, "rb").read())
    before, after = old_env_check(learner.v0_path, final, names)
    tl = learner.timeline_bins()
    res: dict[str, Any] = {
        "checkpoint": os.path.abspath(a.checkpoint), "start_policy": learner.label,
        "scenario": sc.name if sc is not None else None, "emulator": a.emulator, "minutes": a.minutes,
        "buffers": a.buffers, "replicas": learner.K, "replay_ratio": a.replay_ratio,
        "updates_per_s": a.updates_per_s, "push_every": a.push_every, "resumed": learner.resumed,
        "hp": {k: float(v) for k, v in learner.ostate["hp"].items()},
        "critic_warmup": a.critic_warmup, "lr_scale": a.lr_scale, "reward": a.reward, "anchor": learner.anchor_w, "new_priority": "max" if learner.new_priority_max else "one",
        "max_rate_window_s": a.max_rate_window_s if a.reward == "local" else None,
        "sessions": learner.meta["sessions"],
        "first_minute": first, "last_minute": last, "window_source": src,
        "updates_applied": int(learner.counters["updates_applied"]),
        "weights_rejected": int(learner.counters["weights_rejected"]),
        "weights_superseded": int(learner.counters["weights_superseded"]),
        "records_dropped": learner.records_dropped(server),
        "max_decision_gap_s": gap, "max_decision_gap_source": gap_src,
        "old_env_before": before, "old_env_after": after,
        "old_env_ankh_change": {k: (after[k]["ankh"] - before[k]["ankh"]) / before[k]["ankh"]
                                if before[k].get("ankh") else None for k in before},
        "weight_version": int(learner.meta["version"]), "weight_pushes": len(learner.meta["pushes"]),
        "grad_steps": learner.grad_steps_run, "grad_steps_total": int(learner.meta["grad_steps"]),
        "records": int(learner.counters["records"]), "transitions": int(learner.counters["transitions"]),
        "records_per_s": learner.counters["records"] / max(wall, 1e-9), "wall_s": wall,
        "record_gaps": sum(t.gaps for t in learner.tracks.values()),
        "learner_events_dropped": int(server.counters["events_dropped"]),
        "protocol_errors": int(server.counters["protocol_errors"]),
        "hello_other_policy": int(learner.counters["hello_other_policy"]),
        "senders": {str(f): {"hello": learner.hellos.get(f), "bye": learner.byes.get(f),
                             "replica": learner.replica(f),
                             "records": learner.tracks[f].records if f in learner.tracks else 0,
                             "feature_err": learner.tracks[f].feature_err if f in learner.tracks else None}
                    for f in sorted(set(learner.hellos) | set(learner.tracks))},
        "acks": learner.acks, "pushes": learner.meta["pushes"], "learn": learner.learn_metrics[-50:],
        "records_first_minute": learner.records_window(0.0, w),
        "records_last_minute": learner.records_window(dur - w, dur),
        "timeline": tl,
    }
    if flood is not None:  # the benchmark's own counts beside what the learner took
        with open(os.path.join(learner.out, "flood.json")) as f:
            res["flood"] = json.load(f)
    if run_result is not None and isinstance(run_result, dict):
        res["network"] = {k: v for k, v in run_result.items() if isinstance(v, (int, float, str, bool, type(None)))}
    with open(os.path.join(learner.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=_json_default)
    plot(os.path.join(learner.out, "online.png"), tl, learner.meta["pushes"])
    return res


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    a = build_parser().parse_args(argv)
    from jaxcc.emulation.host import EmulationError

    try:
        res = run(a, log=lambda s: print(s, file=sys.stderr))
    except (ValueError, EmulationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: res[k] for k in ("first_minute", "last_minute", "updates_applied", "weights_rejected",
                                          "records_dropped", "max_decision_gap_s")}, default=_json_default))
    print(f"[jaxcc.online] {os.path.join(os.path.abspath(a.out), 'results.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
