"""The learner of online fine-tuning (Pareto §IV, Algorithm 4; MOCC toward a new preference,
``jaxcc.online.mocc``): replicas of the run's agent fed by the senders' records, learning at its
own pace and pushing new weights (``Learner``)."""

from __future__ import annotations

import collections
import hashlib
import math
import os
import time

import numpy as np
from jaxcc.online.restore import policy_blob, restore_offline, write_atomic
from jaxcc.online.tracks import FlowTrack, MoccTrack


REWARDS = ("local", "alg1", "queue")  # jaxcc.online.pareto.record_reward


# ----------------------------------------------------------------------------- the learner


class Learner:
    """An online stage around a ``experience.Server``: ingest records, learn, push, checkpoint.

    The stage follows the run's algorithm (``family``): Pareto's Algorithm 4
    (``jaxcc.online.pareto``, ``FlowTrack``) or MOCC's toward ``preference``
    (``jaxcc.online.mocc``, ``MoccTrack``).  ``old_share``: the share of each minibatch drawn from
    the offline experience (MOCC: its frozen buffer, default 0.5; Pareto: the offline segments,
    default None, every segment sampled by priority alone as Algorithm 4 does)."""

    def __init__(self, checkpoint: str, out: str, *, buffers: str = "local", replicas: int = 1,
                 online_segment: int | None = None, grad_steps: int | None = None, push_every: int = 64,
                 updates_per_s: float = 40.0, min_online: int | None = None, checkpoint_every_s: float = 30.0,
                 seed: int = 0, add_batch: int = 64, replay_ratio: float = 1.0, hp: dict | None = None,
                 critic_warmup: int = 0, lr_scale: float = 1.0, reward: str = "local",
                 max_rate_window_s: float = 10.0, new_priority: str = "config", anchor_w: float = 0.0,
                 preference=None, old_share: float | None = None, learn: bool = True, log=print):
        import jax
        import jax.numpy as jnp
        import orbax.checkpoint as ocp

        if buffers not in ("local", "shared"):
            raise ValueError(f"--buffers={buffers!r}: expected local or shared")
        self.log = log
        # learn=False: the frozen control (``jaxcc.online.compare``): every record is taken and
        # turned into transitions as in a learning run, but no gradient step runs, so nothing is pushed.
        self.learn = bool(learn)
        self.out = os.path.abspath(out)
        os.makedirs(self.out, exist_ok=True)
        off = restore_offline(checkpoint)
        cfg = off["config"]
        self.config, self.spec, self.label = cfg, off["spec"], off["label"]
        # Which online stage: Pareto's Algorithm 4 or MOCC's (``jaxcc.online.mocc``), by the run's algorithm.
        self.family = "mocc" if str(cfg.algo) == "mocc_envelope" else "pareto"
        feats = self.spec["features"]
        self.T, self.D = int(feats["history"]), int(feats["obs_dim"])
        self.feature_set = str(feats.get("name", "pareto_v1"))
        self.empty = feats.get("empty", [0.0] * self.D)
        self.K = 1 if buffers == "shared" else max(1, int(replicas))
        self.buffers = buffers
        self.push_every = int(push_every)
        self.updates_per_s = float(updates_per_s)
        self.replay_ratio = float(replay_ratio)
        self.critic_warmup = int(critic_warmup)
        self.ckpt_every_s = float(checkpoint_every_s)
        self.M = int(add_batch)
        self.preference = None
        if self.family == "mocc":
            if preference is None:
                raise ValueError(f"--checkpoint {checkpoint}: a MOCC run fine-tunes toward one preference; give "
                                 f"--preference=THR,DELAY,LOSS")
            if critic_warmup:
                raise ValueError(f"--critic-warmup={critic_warmup}: MOCC's learner has no critic apart from its "
                                 f"Q network")
            if anchor_w:
                raise ValueError(f"--anchor={anchor_w}: the anchor is Pareto's actor loss term; MOCC's learner "
                                 f"keeps its offline experience instead (--old-share)")
            seg = self._setup_mocc(off, preference, online_segment, grad_steps, min_online,
                                   0.5 if old_share is None else old_share)
        else:
            if preference is not None:
                raise ValueError(f"--preference: only a MOCC run takes one (this run's algorithm is {cfg.algo})")
            seg = self._setup_pareto(off, online_segment, grad_steps, min_online, reward, max_rate_window_s,
                                     new_priority, old_share)

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
                     "online_segment": seg, "anchor_w": float(anchor_w),
                     "preference": list(self.preference) if self.preference else None,
                     "old_share": self.old_share}
        if self.resumed:  # the shapes are the checkpoint's (replicas, segment), whatever was asked now
            m0 = dict(self.mgr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])
            self.K, seg = int(m0.get("replicas", self.K)), int(m0.get("online_segment", seg))
            self.buffers = str(m0.get("buffers", buffers))
        if self.resumed:  # the variant is the checkpoint's too
            anchor_w = float(m0.get("anchor_w", 0.0))
            was = m0.get("preference")
            if self.preference is not None and was is not None and \
                    not np.allclose(np.asarray(was, np.float64), self.preference, atol=1e-6):
                raise ValueError(f"--preference={','.join(f'{x:g}' for x in self.preference)}: {self.out}/online_ckpt "
                                 f"fine-tunes toward {','.join(f'{float(x):g}' for x in was)}; use a new --out")
            if "old_share" in m0 and m0["old_share"] != self.old_share:  # the sampling is the checkpoint's too
                raise ValueError(f"--old-share={-1 if old_share is None else old_share:g}: {self.out}/online_ckpt was "
                                 f"learnt with {-1 if m0['old_share'] is None else m0['old_share']:g}; give that, "
                                 f"or use a new --out")
        self.anchor_w = float(anchor_w)
        if self.family == "mocc":
            fresh = self.alg.init_online(off["state"], replicas=self.K, online_size=seg, seed=seed, lr_scale=lr_scale)
        else:
            fresh = self.alg.init_online(off["state"], replicas=self.K, online_size=seg, seed=seed, anchor_w=anchor_w)
        if self.resumed:
            r = self.mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(fresh),
                                                               meta=ocp.args.JsonRestore()))
            self.ostate, self.meta = r["state"], {**self.meta, **dict(r["meta"])}
            self.log(f"[jaxcc.online] resumed {self.out}/online_ckpt at step {step}: weight version "
                     f"{self.meta['version']}, {self.meta['grad_steps']} online gradient steps")
        elif self.family == "mocc":  # lr_scale is the online state's own hp leaf
            self.ostate = fresh
        else:  # a fresh online stage: the learning rates scaled (the hp leaves are checkpointed after)
            hp0 = fresh["hp"]
            scaled = {k: hp0[k] * jnp.float32(lr_scale) for k in ("lr_actor", "lr_critic")}
            self.ostate = {**fresh, "hp": {**hp0, **scaled}}
        self.meta["sessions"] = int(self.meta["sessions"]) + 1
        for k, v in (hp or {}).items():  # e.g. a smaller online learning rate (no recompile: hp leaves)
            if k not in self.ostate["hp"]:
                raise ValueError(f"--hp {k}: not an online hyperparameter of this learner; allowed: {', '.join(sorted(self.ostate['hp']))}")
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
        self.rewards: list[tuple[float, float]] = []  # (t_s of the record that closed it, reward) per transition
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

    def _setup_pareto(self, off, online_segment, grad_steps, min_online, reward, max_rate_window_s,
                      new_priority, old_share) -> int:
        """Pareto's online stage (Algorithm 4, ``jaxcc.online.pareto``): its reward, steps and
        buffer options; returns the online segment's size."""
        import jax

        from jaxcc.agents.pareto import env_adapter
        from jaxcc.online import pareto as alg

        cfg = off["config"]
        if old_share is not None and not 0.0 < float(old_share) < 1.0:
            raise ValueError(f"--old-share={old_share}: Pareto's online stage draws from both the offline and the "
                             f"online segments; must be in (0, 1)")
        self.old_share = None if old_share is None else float(old_share)

        if reward not in REWARDS:
            raise ValueError(f"--reward={reward!r}: expected one of {', '.join(REWARDS)}")
        if not max_rate_window_s > 0:
            raise ValueError(f"--max-rate-window-s={max_rate_window_s}: must be > 0")
        self.reward = reward
        self.max_rate_window_s = float(max_rate_window_s) if reward in ("local", "queue") else None
        self.a_range = (float(self.spec["head"]["low"]), float(self.spec["head"]["high"]))
        seg = int(online_segment or max(int(s.buffer_segment) for s in cfg.stages.values()))
        self.grad_steps = int(grad_steps or int(cfg.td3.grad_steps))
        self.min_online = int(min_online if min_online is not None else int(cfg.td3.batch_size))
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
        queue = reward == "queue"
        self._reward = jax.jit(lambda m, mi, r, mx=None: alg.record_reward(m, mi, r, self.reward_params, fs, mx, queue))
        # The online segment comes after the offline stages' (``alg.grow_buffer``).
        kw = alg.learn_kwargs(cfg.td3, self.spec, self.a_range, old_share=self.old_share,
                              segment=int(np.shape(off["state"]["buffer"].seg_size)[-1]))
        # Donated: the buffers are updated in place (no copy of the replay per call).
        self._learn = jax.jit(lambda s, on: alg.learn(s, on, n_steps=self.grad_steps, kw=kw), donate_argnums=0)
        self._add = jax.jit(lambda s, b, v: alg.add(s, b, v, new_priority_max=self.new_priority_max),
                            donate_argnums=0)
        self._count = jax.jit(alg.online_count)
        self.alg = alg
        self._batch_size = int(cfg.td3.batch_size)
        return seg

    def _setup_mocc(self, off, preference, online_segment, grad_steps, min_online, old_share) -> int:
        """MOCC's online stage (``jaxcc.online.mocc``): §IV-A's vector reward from the records,
        envelope updates toward ``preference``; returns the online ring's size."""
        import jax

        from jaxcc.agents import mocc_envelope as moq
        from jaxcc.online import mocc as alg

        cfg = off["config"]
        self.preference = alg.check_preference(preference)
        self.reward, self.max_rate_window_s, self.new_priority_max = "mocc", None, False
        self.old_share = float(old_share)
        self.grad_steps = int(grad_steps or alg.GRAD_STEPS)
        self.min_online = int(min_online if min_online is not None else int(cfg.moq.batch_transitions))
        _, ep = moq.make_env(cfg)
        self.reward_params = ep
        self.n_actions = int(self.spec["head"]["n"])
        self.init_step = int(round(float(np.asarray(ep.init_step))))
        self._reward = jax.jit(lambda m, mr, mx: alg.record_reward(m, mr, mx, self.reward_params))
        kw = alg.learn_kwargs(cfg.moq, self.spec, preference=self.preference, old_share=self.old_share)
        # The frozen offline buffer is an argument (a closure would make it a compile-time constant).
        self.offline_buffer = off["state"]["buffer"]
        learn_j = jax.jit(lambda s, on, ob: alg.learn(s, ob, on, n_steps=self.grad_steps, kw=kw), donate_argnums=0)
        self._learn = lambda s, on: learn_j(s, on, self.offline_buffer)
        self._add = jax.jit(alg.add, donate_argnums=0)
        self._count = jax.jit(alg.online_count)
        self.alg = alg
        return int(online_segment or alg.ONLINE_SIZE)

    def _empty_batch(self) -> dict[str, np.ndarray]:
        """A zero batch of ``add_batch`` rows per replica, in the shapes ``alg.add`` takes."""
        km, kmtd = (self.K, self.M), (self.K, self.M, self.T, self.D)
        if self.family == "mocc":  # MOCC's replay rows: flattened windows, an action index, a reward vector
            return {"obs": np.zeros(km + (self.T * self.D,), np.float32),
                    "next_obs": np.zeros(km + (self.T * self.D,), np.float32),
                    "action": np.zeros(km, np.int32), "reward": np.zeros(km + (len(self.preference),), np.float32),
                    "done": np.zeros(km, np.float32)}
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

    def _new_track(self):
        if self.family == "mocc":
            return MoccTrack(self.T, self.D, self.empty, self.n_actions, self.init_step, self._reward,
                             float(np.asarray(self.reward_params.max_ack_ewma)))
        return FlowTrack(self.T, self.D, self.empty, self.a_range, self._reward, self.max_rate_window_s)

    def handle(self, events) -> None:
        from jaxcc.online.experience import F

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
                    tr = self.tracks[fid] = self._new_track()
                self.counters["records"] += 1
                acked, dur = fx[F["mi_acked"]], fx[F["mi_duration"]]
                rtt = fx[F["mi_rtt_wsum"]] / acked if acked > 0 else float("nan")
                self.timeline.append((fid, float(fx[F["t_s"]]), acked / dur if dur > 0 else 0.0, rtt,
                                      int(fx[F["weight_version"]]), time.monotonic() - self.t0,
                                      float(fx[F["mi_lost"]]), float(acked), float(dur)))
                t = tr.push(fx, feats)
                if t is not None:
                    self.pending[self.replica(fid)].append(t)
                    # MOCC: the preference's scalarisation ω*·r, the objective it fine-tunes toward
                    rew = (float(np.dot(t["reward"], self.preference)) if self.family == "mocc"
                           else float(t["reward"]))
                    self.rewards.append((float(fx[F["t_s"]]), rew))
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
            if self.family == "pareto":  # offline training's reward scale (MOCC's vector is unscaled)
                batch["reward"] = batch["reward"] * np.float32(float(np.asarray(self.ostate["hp"]["reward_scale"])))
            self.ostate = self._add(self.ostate, batch, valid)
            n += int(valid.sum())
        return n

    # -- learn, push
    def learn_once(self) -> bool:
        """One jitted batch of ``grad_steps`` TD3 steps on every replica with enough online data,
        when the ``updates_per_s`` budget allows (never when ``learn`` is off).  Returns whether it ran."""
        import jax
        import jax.numpy as jnp

        if not self.learn:
            return False
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
        if self.family == "pareto" and int(self.meta["grad_steps"]) < self.critic_warmup:
            # critics first: the actor holds still (its learning rate 0) while the critics fit it
            self.ostate = {**self.ostate, "hp": {**self.ostate["hp"], "lr_actor": jnp.zeros((), jnp.float32)}}
        self.ostate, m = self._learn(self.ostate, active)
        # Put back where the step left them (committed like its outputs: an uncommitted leaf is
        # another jit signature, and the next batch compiled again, 2 s measured).
        self.ostate = {**self.ostate, "hp": {k: jax.device_put(v, self.ostate["hp"][k].sharding) for k, v in hp.items()}}
        m = jax.device_get(m)
        if not np.all(m["params_finite"][active]):
            self.counters["nonfinite_batches"] += 1  # keep the last good agent; the batch is dropped
            self.ostate = {**self.ostate, "agent": jax.tree.map(jnp.asarray, prev_agent)}
            self.log("[jaxcc.online] non-finite parameters after a learn batch: batch discarded")
            return False
        self.grad_steps_run += self.grad_steps
        self.steps_since_push += self.grad_steps
        self.meta["grad_steps"] = int(self.meta["grad_steps"]) + self.grad_steps
        names = ("loss", "loss_s", "loss_t", "q") if self.family == "mocc" else ("critic_loss", "actor_loss", "q")
        self.learn_metrics.append({"wall_s": elapsed, **{k: float(np.mean(m[k][active])) for k in names}})
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
    def online_sample_share(self) -> list[float]:
        """Per replica, the share of a minibatch drawn from the online experience (Pareto:
        ``jaxcc.online.pareto.online_sample_share`` at the buffer's current priorities; MOCC: the
        fixed 1 − ``old_share``)."""
        if self.family == "mocc":
            return [1.0 - self.old_share] * self.K
        share = self.alg.online_sample_share(self.ostate, self.old_share, self._batch_size)
        return [float(x) for x in np.asarray(share)]

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
        learner's own view; the network's logs give the reported windows), and the mean reward
        of the transitions those records closed."""
        rows = [r for r in self.timeline if t0 <= r[1] < t1]
        rs = [r for t, r in self.rewards if t0 <= t < t1]
        # the learner's own objective: the mean reward of the transitions closed in the window
        # (--reward's, before reward_scale), learning's target where the window's Ankh is the judge's
        reward = {"reward_mean": float(np.mean(rs)) if rs else None, "transitions": len(rs)}
        if not rows:
            return {"throughput_mbps": None, "loss": None, "jain": None, "p95_rtt_ms": None, "records": 0, **reward}
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
                "records": len(rows), **reward}
