"""The simulator as a "network" behind the online-learning socket protocol (protocols 1 and 2).

    python -m jaxcc.online.simnet --scenario=NAME | --scenario-file=F --policy=FILE \\
        --learner=unix:/path|tcp:HOST:PORT [--learner-key=FILE] [--speed=X] [--duration-s=S] --out=DIR

It runs a scenario's link in the jaxcc simulator (``jaxcc.sim.core`` through the runner's own
batch building, ``jaxcc.sim.runner.build_batches``) with every policy flow a ``pareto_v1`` /
``pareto_v2`` sender (``jaxcc.senders``), and talks to a learner exactly as ``jaxcc-sender
--learner=ADDR`` does (the table in ``jaxcc.online.experience``): one connection per
policy flow, HELLO first on every (re)connection, one RECORD per decision, WEIGHTS validated and
swapped in between two decisions and acknowledged, BYE with the counters at the end; with
``--learner-key=FILE`` (required for ``tcp:``) the AUTH handshake first and every frame sealed
(protocol 2, ``jaxcc.online.auth``), a refused frame counted in ``auth_refused`` and the
connection dropped, as the C++ sender does. Flows whose
controller is ``kernel:cubic`` / ``kernel:bbr`` (cross traffic in a scenario) run as the
simulator's CUBIC / BBR, and a flow that keeps its controller (``keep_controller``, e.g. the
CUBIC neighbour of ``coexist/*``) runs its own, as ``jaxcc.emulate`` and ``jaxcc.evaluate``
keep it; other flows run the policy.

Weights are a traced argument of the jitted chunk (``[F, ...]`` per flow: each flow has its own
connection and may run its own weight version), so a swap never recompiles. The simulation
steps in chunks of ``chunk_ticks`` ticks (default one monitor interval) carrying its state;
between chunks it writes records, reads the learner's frames and applies new weights, and
sleeps so that ``speed`` simulated seconds pass per wall second (``--speed=0``: as fast as it
can).

The protocol's frames and records are ``jaxcc.online.experience``'s (its table); the C++
sender writes the same bytes independently (``datapath/src/learner_link.h``).

A RECORD is written for every decision taken at the end of a monitor interval in which the flow
was active (the decision on the empty window at the flow's start has no interval and no record,
so ``seq`` 0 is the first interval's). ``t_s`` is seconds since the flow started; the rates are
the simulator sender's (bytes/s); ``min_rtt_s`` is the running minimum RTT (0 before a sample);
the 16 MI sums are the interval's ``jaxcc.envs.mi.MIStats`` as the sender accumulated it.

Only ``--fallback=keep`` exists here: the policy in force keeps running while the learner is
gone (the in-sender BBR fallback is the C++ sender's).
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import math
import os
import select
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import policyfile
from jaxcc.baselines import bbr
from jaxcc.controllers import policy_name
from jaxcc.evaluation import metrics
from jaxcc.envs import mi as mi_lib
from jaxcc.online import auth
from jaxcc.online.experience import (BYE, HELLO, MAX_LEN, MI_FIELDS, PING, PROTO, WEIGHTS, WEIGHTS_ACK,
                                     json_frame, record)
from jaxcc.senders import common
from jaxcc.senders import feature_set as sender_module
from jaxcc.senders import resolve as resolve_controller
from jaxcc.sim import controller as ctl
from jaxcc.sim import core
from jaxcc.sim import runner as sim_runner

# ----------------------------------------------------------------------------- protocol

FEATURE_SETS = ("pareto_v1", "pareto_v2")
RECONNECT_S = 0.2


def parse_address(addr: str) -> tuple[int, Any]:
    """(socket family, address) of ``unix:/abs/path`` or ``tcp:HOST:PORT``.

    Raises:
      ValueError: naming the allowed forms.
    """
    if addr.startswith("unix:") and len(addr) > 5:
        return socket.AF_UNIX, addr[5:]
    if addr.startswith("tcp:"):
        host, _, port = addr[4:].rpartition(":")
        if host and port.isdigit() and 0 < int(port) < 65536:
            return socket.AF_INET, (host, int(port))
    raise ValueError(f"--learner={addr!r}: expected unix:/abs/path or tcp:HOST:PORT")


# ----------------------------------------------------------------------------- weights

def validate_weights(blob: bytes, spec: dict, tensors: dict, version: int, current: int
                     ) -> tuple[dict | None, str]:
    """(tensors, "") for a policy blob that may replace the running one, else (None, reason).

    The checks of the C++ sender: the policy loader's own (``jaxcc.policyfile.load``), the same
    spec as the running policy (everything but tensor values), the same tensor names and shapes,
    every value finite, and ``version`` above the one in force.
    """
    if version <= current:
        return None, f"version {version} is not above the version in force ({current})"
    fd, tmp = tempfile.mkstemp(suffix=".safetensors")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        try:
            new_spec, new_tensors = policyfile.load(tmp)
        except ValueError as e:
            return None, str(e).replace(tmp, "blob").splitlines()[0]
    finally:
        os.unlink(tmp)
    if json.dumps(new_spec, sort_keys=True) != json.dumps(spec, sort_keys=True):
        return None, "spec differs from the running policy's"
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    new_shapes = {k: tuple(v.shape) for k, v in new_tensors.items()}
    if shapes != new_shapes:
        return None, f"tensors differ from the running policy's (names/shapes {new_shapes} vs {shapes})"
    bad = [k for k, v in new_tensors.items() if not np.all(np.isfinite(v))]
    if bad:
        return None, f"tensor '{bad[0]}' has non-finite values"
    return new_tensors, ""


# ----------------------------------------------------------------------------- one flow's link

@dataclasses.dataclass
class FlowLink:
    """One policy flow's connection to the learner, the C++ sender's I/O thread in one loop:
    a bounded record queue dropping the oldest, non-blocking writes and reads, reconnects."""

    flow_id: int
    address: str
    hello: dict
    queue_len: int = 8192
    timeout_s: float = 5.0
    sock: socket.socket | None = None
    out: bytearray = dataclasses.field(default_factory=bytearray)
    inbuf: bytearray = dataclasses.field(default_factory=bytearray)
    queue: collections.deque = dataclasses.field(default_factory=collections.deque)
    next_try: float = 0.0
    last_frame: float | None = None   # wall time of the last frame from the learner
    gone_since: float | None = None
    counters: dict = dataclasses.field(default_factory=dict)
    key: bytes | None = None          # the pre-shared key: protocol 2
    chan: auth.Channel | None = None  # protocol 2: set by the learner's AUTH answer
    connected_at: float = 0.0

    def __post_init__(self):
        self.family, self.addr = parse_address(self.address)
        if self.family == socket.AF_INET and self.key is None:
            raise ValueError(f"--learner={self.address}: a tcp: learner link must be authenticated; give "
                             "--learner-key=FILE")
        self.counters = {"learner": self.address, "records_sent": 0, "records_dropped": 0,
                         "record_queue": self.queue_len, "weights_received": 0, "weights_applied": 0,
                         "weights_rejected": 0, "weights_superseded": 0, "weight_version": 0,
                         "versions": [], "rejections": [], "learner_gone": [], "fallback_decisions": 0,
                         "protocol_errors": 0, "unknown_frames": 0, "pings": 0, "connects": 0,
                         "max_decision_gap_s": 0.0, "auth": "none" if self.key is None else "psk-hmac-sha256",
                         "auth_refused": 0, "auth_refusals": []}
        self.mailbox: tuple[int, dict] | None = None
        self.start_wall = time.monotonic()

    def push(self, fr: bytes) -> None:
        if len(self.queue) >= self.queue_len:
            self.queue.popleft()
            self.counters["records_dropped"] += 1
        self.queue.append(fr)

    def ready(self) -> bool:
        """Connected and (protocol 2) past the handshake: frames may go out."""
        return self.sock is not None and (self.key is None or self.chan is not None)

    def _seal(self, fr: bytes) -> bytes:
        return fr if self.chan is None else self.chan.seal(fr[4], fr[5:])

    def send_now(self, fr: bytes) -> None:
        """A control frame (ACK, BYE): ahead of queued records, after a partly written frame
        (dropped, like the C++ sender's, when not connected and authenticated)."""
        if self.ready():
            self.out += self._seal(fr)

    def _close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.out, self.inbuf, self.chan = None, bytearray(), bytearray(), None

    def _refuse(self, why: str, sim_t: float | None = None) -> None:
        self.counters["auth_refused"] += 1
        if len(self.counters["auth_refusals"]) < 32:
            self.counters["auth_refusals"].append({"t_s": sim_t, "reason": why})
        self._close()
        self.next_try = time.monotonic() + RECONNECT_S

    def _connect(self, now: float) -> None:
        self.next_try = now + RECONNECT_S
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.settimeout(RECONNECT_S)
        try:
            s.connect(self.addr)
        except OSError:
            s.close()
            return
        s.setblocking(False)
        self.sock = s
        self.counters["connects"] += 1
        self.connected_at = now
        if self.key is None:
            self.hello["weight_version"] = self.counters["weight_version"]
            self.out = bytearray(json_frame(HELLO, self.hello))
            self.last_frame = now
        else:  # our nonce first; HELLO goes sealed once the learner's AUTH is in
            self.nonce_s = auth.new_nonce()
            self.out = bytearray(auth.auth_frame(self.nonce_s))

    def pump(self, now: float, sim_t: float, max_bytes: int = 1 << 20) -> list[tuple[int, bytes]]:
        """Connects if due, writes what the socket takes, reads frames; returns WEIGHTS frames
        (version, blob) and tracks liveness (learner_gone entries in flow time ``sim_t``)."""
        if self.sock is None and now >= self.next_try:
            self._connect(now)
        got: list[tuple[int, bytes]] = []
        if self._write(max_bytes):
            try:
                while True:
                    chunk = self.sock.recv(1 << 16)
                    if not chunk:
                        raise ConnectionResetError("learner closed")
                    self.inbuf += chunk
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close()
            got = self._frames(now, sim_t)
        if self.sock is not None and self.chan is None and self.key is not None \
                and now - self.connected_at > self.timeout_s:
            self._refuse(f"no AUTH answer within {self.timeout_s} s", sim_t)
        gone = self.sock is None or self.last_frame is None or now - self.last_frame > self.timeout_s
        gone_log = self.counters["learner_gone"]
        if gone and self.gone_since is None and now - self.start_wall > self.timeout_s:
            self.gone_since = now
            gone_log.append({"t_s": sim_t, "back_t_s": None})
        elif not gone and self.gone_since is not None:
            self.gone_since = None
            gone_log[-1]["back_t_s"] = sim_t
        return got

    def _write(self, max_bytes: int = 1 << 20) -> bool:
        """Moves queued records behind what is pending and writes what the socket takes;
        False when there is no connection (or it just failed)."""
        if self.sock is None:
            return False
        while self.ready() and self.queue and len(self.out) < max_bytes:
            self.out += self._seal(self.queue.popleft())
            self.counters["records_sent"] += 1
        try:
            if self.out:
                n = self.sock.send(self.out)
                del self.out[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._close()
            return False
        return True

    def _frames(self, now: float, sim_t: float | None = None) -> list[tuple[int, bytes]]:
        got = []
        while self.sock is not None and len(self.inbuf) >= 5:
            (length,) = struct.unpack_from("<I", self.inbuf)
            if length < 1 or length > MAX_LEN:
                self.counters["protocol_errors"] += 1
                self._close()
                break
            if len(self.inbuf) < 4 + length:
                break
            ftype = self.inbuf[4]
            payload = bytes(self.inbuf[5:4 + length])
            del self.inbuf[:4 + length]
            try:  # authentication before anything reads the frame (liveness included)
                if self.key is None and ftype == auth.AUTH:
                    raise auth.AuthError("the learner asks for protocol 2 (a key); this sender has no --learner-key")
                if self.key is not None and self.chan is None:
                    self.chan = auth.Channel(self.key, auth.S2L, self.nonce_s, auth.parse_auth(ftype, payload))
                    self.hello["weight_version"] = self.counters["weight_version"]
                    self.hello["proto"] = auth.PROTO
                    self.out += self.chan.seal(HELLO, json.dumps(self.hello, separators=(",", ":")).encode())
                    continue
                if self.chan is not None:
                    payload = self.chan.open(ftype, payload)
            except auth.AuthError as e:
                self._refuse(str(e), sim_t)
                break
            self.last_frame = now
            if ftype == PING:
                self.counters["pings"] += 1
            elif ftype == WEIGHTS and len(payload) >= 8:
                got.append((struct.unpack_from("<Q", payload)[0], payload[8:]))
            elif ftype == WEIGHTS:
                self.counters["protocol_errors"] += 1
            else:
                self.counters["unknown_frames"] += 1
        return got

    def flush_and_close(self, deadline: float, sim_t: float) -> None:
        """Writes what is queued and BYE (until ``deadline``, wall), then closes."""
        bye_sent = False
        while time.monotonic() < deadline:
            if self.sock is None:   # (re)connect: HELLO, then what is queued, then BYE
                bye_sent = False
                self.pump(time.monotonic(), sim_t)
                time.sleep(0.005)
                continue
            if not self.ready():  # protocol 2: the handshake first
                self.pump(time.monotonic(), sim_t)
                time.sleep(0.001)
                continue
            if not bye_sent and not self.queue:
                self.send_now(json_frame(BYE, self.counters))
                bye_sent = True
            if self._write() and bye_sent and not self.out:
                break
            time.sleep(0.001)
        self._close()


# ----------------------------------------------------------------------------- the simulation

def _chunk_fn(spec: dict, controllers: tuple, pi: int, n_ticks: int, safe: bool = True, explore: bool = False):
    """The jitted ``chunk(p, carry, ctrl_ids, cparams, tensors)`` → (carry, per-tick outputs):
    ``jaxcc.sim.runner.make_run``'s tick body with the policy controller rebuilt from traced
    tensors (``[F, ...]``, one set per flow), plus each tick's decision record per flow."""
    mod = sender_module(spec["features"]["name"])
    T, D, mi_ticks = common.spec_window(spec)

    def pol(ten):
        return common.make_controller("policy", spec, mod.sender(spec, ten, explore=explore), safe=safe)

    def inits(cparams, tensors):
        out = []
        for k, c in enumerate(controllers):
            if k == pi:
                out.append(jax.vmap(lambda cp, ten: pol(ten).init(cp))(cparams, tensors))
            else:
                out.append(jax.vmap(c.init)(cparams))
        return tuple(out)

    def chunk(p: core.LinkParams, carry, ctrl_ids, cparams, tensors):
        ini = inits(cparams, tensors)
        is_pol = ctrl_ids == pi

        def body(carry, _):
            sim, cstates = carry
            acts = []
            for k, (c, cs) in enumerate(zip(controllers, cstates)):
                if k == pi:
                    acts.append(jax.vmap(lambda s, cp, ten: pol(ten).act(s, cp))(cs, cparams, tensors))
                else:
                    acts.append(jax.vmap(c.act)(cs, cparams))
            rate = jnp.take_along_axis(jnp.stack([a.rate for a in acts]), ctrl_ids[None], axis=0)[0]
            cwnd = jnp.take_along_axis(jnp.stack([a.cwnd for a in acts]), ctrl_ids[None], axis=0)[0]
            sim, out = core.step(p, sim, rate, cwnd)
            obs = ctl.tick_obs(out, p.dt)
            old = cstates[pi]
            new = []
            for k, (c, cs) in enumerate(zip(controllers, cstates)):
                if k == pi:
                    new.append(jax.vmap(lambda s, o, cp, ten: pol(ten).update(s, o, cp))(cs, obs, cparams, tensors))
                else:
                    new.append(jax.vmap(c.update)(cs, obs, cparams))
            upd = new[pi]
            # the MI the update closed (its own accumulation, mi.mi_add_tick), and whether it decided
            m = jax.vmap(lambda s, o: mi_lib.mi_add_tick(s.m, common.mi_tick(o), o.dt))(old, obs)
            decided = is_pol & (old.tick + 1 >= mi_ticks) & (m.active[:, 0] > 0)
            action = jax.vmap(lambda h, ten: jnp.reshape(policyfile.apply(spec, ten, h), (-1,))[0])(upd.hist, tensors)
            if explore:  # the action the sender took: with its behaviour noise, drawn as its decide drew it
                action = mod.explored(spec, action, jax.vmap(common.explore_noise)(cparams.sender, obs.now))
            # As the datapath's record: while the safety monitor has BBR pace, no action (NaN) and
            # BBR's rate in force before and after the MI's close.
            def in_force(s):
                own = jnp.reshape(s.own.rate, action.shape)
                return own if s.mon is None else jnp.where(s.mon.fallback, jax.vmap(bbr.bbr_rate)(s.bbr), own)

            if upd.mon is not None:
                action = jnp.where(upd.mon.fallback, jnp.nan, action)
            min_rtt = jnp.where(upd.run.min_rtt[:, 0] < 0.5 * mi_lib.BIG, upd.run.min_rtt[:, 0], 0.0)
            mi = jnp.stack([getattr(m, f)[:, 0] for f in MI_FIELDS], axis=-1)
            dec = (decided, action, in_force(old), in_force(upd), min_rtt, mi, upd.hist[:, -1])
            new = tuple(sim_runner._where_flow(out.active, cs, i) for cs, i in zip(new, ini))
            return (sim, new), (out, jnp.where(out.active, rate, 0.0), dec)

        return jax.lax.scan(body, carry, None, length=n_ticks)

    def init_carry(p, ctrl_ids, cparams, tensors, ring_len):
        return core.init_state(p, ring_len), inits(cparams, tensors)

    return jax.jit(chunk), jax.jit(init_carry, static_argnums=4), mi_ticks


def sim_controller(controller: str) -> str:
    """The simulator's name of a flow's cross-traffic controller (kernel:cubic → cubic)."""
    return controller.split(":", 1)[1] if controller.startswith("kernel:") else controller


class SimNet:
    """One scenario in the simulator, each policy flow connected to a learner (module docstring).

    Args:
      scenario: a ``jaxcc.scenarios.Scenario`` (its flows' ``kernel:*`` controllers and those
        it keeps, ``keep_controller``, are cross traffic; every other flow runs the policy).
      policy_path: the exported policy the senders start with (``pareto_v1`` / ``pareto_v2``).
      learner: the learner's address, or None (no streaming: the policy runs as is).
      speed: simulated seconds per wall second (0: as fast as possible).
      chunk_ticks: ticks per jitted chunk (default: one monitor interval).
      raw_policy: the senders without their safety net (``jaxcc-sender --raw-policy``;
        ``jaxcc.senders.safety``), else as deployed, with it.
      learner_key: the pre-shared key's bytes (``auth.load_key``): protocol 2; required for a
        ``tcp:`` learner.
    """

    def __init__(self, scenario, policy_path: str, learner: str | None = None, *, speed: float = 1.0,
                 chunk_ticks: int | None = None, record_queue: int = 8192, learner_timeout_s: float = 5.0,
                 fallback: str = "keep", seed: int = 0, log=None, raw_policy: bool = False,
                 learner_key: bytes | None = None, explore: float = 0.0, explore_seed: int = 0):
        if fallback != "keep":
            raise ValueError(f"--fallback={fallback}: the simulator backend keeps the policy in force "
                             "(fallback=keep); the BBR fallback is jaxcc-sender's")
        if speed < 0 or not math.isfinite(speed):
            raise ValueError(f"--speed={speed}: must be a finite number >= 0 (0: as fast as possible)")
        if record_queue < 1:
            raise ValueError(f"--record-queue={record_queue}: must be >= 1")
        if not 0.0 <= explore <= 1.0:
            raise ValueError(f"--explore={explore}: must be in [0, 1] (a fraction of the action's half-range)")
        if learner is not None and parse_address(learner)[0] == socket.AF_INET and learner_key is None:
            raise ValueError(f"--learner={learner}: a tcp: learner link must be authenticated; give "
                             "--learner-key=FILE")
        self.scenario, self.speed, self.learner = scenario, float(speed), learner
        self.policy_path = os.path.abspath(policy_path)
        self.spec, tensors = policyfile.load(self.policy_path)
        fs = self.spec["features"]["name"]
        if fs not in FEATURE_SETS:
            raise ValueError(f"{policy_path}: features.name is {fs!r}; the simulator backend runs {FEATURE_SETS}")
        with open(self.policy_path, "rb") as f:
            self.policy_sha256 = hashlib.sha256(f.read()).hexdigest()
        self.log = log or (lambda msg: print(f"[simnet] {msg}", file=sys.stderr))
        pol_name = policy_name(self.policy_path, raw_policy)
        flows = [dataclasses.replace(f, controller=sim_controller(f.controller)
                                     if f.controller.startswith("kernel:") or f.keep_controller else pol_name)
                 for f in scenario.flows]
        self.controllers = [f.controller for f in flows]
        sc = dataclasses.replace(scenario, flows=tuple(flows))
        (batch,) = sim_runner.build_batches([sim_runner.Item(sc, seed)], resolve=resolve_controller)
        names = [c.name for c in batch.controllers]
        self.pi = names.index(pol_name)
        self.batch = batch
        self.params = jax.tree.map(lambda x: jnp.asarray(x[0]), batch.params)
        self.ctrl_ids = jnp.asarray(batch.ctrl_ids[0])
        self.num_flows = len(flows)
        self.policy_flows = [i for i, c in enumerate(batch.ctrl_ids[0][:self.num_flows]) if c == self.pi]
        self.F = batch.ctrl_ids.shape[1]
        # Behaviour noise (--explore): each policy flow its own stream, (σ, seed · 1009 + flow).
        ex = np.zeros((self.F, 2), np.float32)
        for i in self.policy_flows:
            ex[i] = (float(explore), int(explore_seed) * 1009 + i)
        cp = jax.tree.map(lambda x: x[0], batch.cparams)
        self.cparams = jax.tree.map(jnp.asarray, cp._replace(sender=cp.sender._replace(explore=ex)))
        self.explore = float(explore)
        self.dt = float(np.asarray(batch.params.dt)[0])
        self.tensors = {k: np.repeat(v[None], self.F, 0) for k, v in tensors.items()}
        self.base_tensors = tensors
        T, D, mi_ticks = common.spec_window(self.spec)
        self.chunk_ticks = int(chunk_ticks or mi_ticks)
        self._chunk, self._init, _ = _chunk_fn(self.spec, batch.controllers, self.pi, self.chunk_ticks,
                                               safe=not raw_policy, explore=self.explore > 0)
        self.links: dict[int, FlowLink] = {}
        if learner is not None:
            for i in self.policy_flows:
                hello = {"proto": PROTO, "flow_id": i, "feature_set": fs, "history": T, "obs_dim": D,
                         "mi_rtts": float(self.spec["mi_rtts"]), "policy_sha256": self.policy_sha256,
                         "weight_version": 0, "fallback": "keep"}
                self.links[i] = FlowLink(i, learner, hello, record_queue, learner_timeout_s, key=learner_key)
        self.versions = np.zeros((self.F,), np.int64)
        self.seq = np.zeros((self.F,), np.int64)

    def _flow_t(self, i: int, t: float) -> float:
        return t - float(self.scenario.flows[i].start_s)

    def _apply_weights(self, sim_t: float) -> bool:
        """Validated weights in a flow's mailbox replace its tensors (between two decisions);
        True when any did."""
        swapped = False
        for i, lk in self.links.items():
            if lk.mailbox is None:
                continue
            v, ten = lk.mailbox
            lk.mailbox = None
            swapped = True
            for k in self.tensors:   # new arrays: the device copy of the old ones may share their memory
                self.tensors[k] = self.tensors[k].copy()
                self.tensors[k][i] = ten[k]
            self.versions[i] = v
            ft = self._flow_t(i, sim_t)
            lk.counters.update(weight_version=int(v), weights_applied=lk.counters["weights_applied"] + 1)
            lk.counters["versions"].append({"version": int(v), "decision": int(self.seq[i]), "t_s": ft})
            lk.send_now(json_frame(WEIGHTS_ACK, {"version": int(v), "ok": True, "reason": "",
                                                 "decision": int(self.seq[i]), "t_s": ft}))
        return swapped

    def _receive(self, lk: FlowLink, got: list[tuple[int, bytes]], sim_t: float) -> None:
        for v, blob in got:
            lk.counters["weights_received"] += 1
            current = max(int(self.versions[lk.flow_id]), lk.mailbox[0] if lk.mailbox else 0)
            ten, why = validate_weights(blob, self.spec, self.base_tensors, int(v), current)
            ft = self._flow_t(lk.flow_id, sim_t)
            if ten is None:
                lk.counters["weights_rejected"] += 1
                lk.counters["rejections"].append({"version": int(v), "reason": why, "t_s": ft})
                self.log(f"flow {lk.flow_id}: weights version {v} rejected: {why}")
                lk.send_now(json_frame(WEIGHTS_ACK, {"version": int(v), "ok": False, "reason": why, "t_s": ft}))
                continue
            if lk.mailbox is not None:
                lk.counters["weights_superseded"] += 1
            lk.mailbox = (int(v), ten)

    def _pump(self, sim_t: float) -> None:
        now = time.monotonic()
        for lk in self.links.values():
            self._receive(lk, lk.pump(now, self._flow_t(lk.flow_id, sim_t)), sim_t)

    def run(self, stop=None) -> dict[str, Any]:
        """Runs to the scenario's end (or ``stop()`` true); returns the run result
        (``trace``: the per-tick arrays for ``jaxcc.evaluation.metrics.Trace``; ``online``: per policy
        flow the sender's counters, as ``jaxcc-sender --summary``'s ``online`` object)."""
        num_ticks = self.batch.num_ticks
        carry = self._init(self.params, self.ctrl_ids, self.cparams,
                           jax.tree.map(jnp.asarray, self.tensors), self.batch.ring_len)
        # compile before the clock starts (a pure call; its result is dropped), so pacing holds from t=0
        jax.block_until_ready(self._chunk(self.params, carry, self.ctrl_ids, self.cparams,
                                          jax.tree.map(jnp.asarray, self.tensors)))
        parts: list = []
        last_dec_t = np.full((self.F,), np.nan)
        max_gap = np.zeros((self.F,))
        wall0 = time.monotonic()
        chunk_wall_max = 0.0
        ticks = 0
        dev_tensors = None
        self._pump(0.0)
        while ticks < num_ticks and not (stop is not None and stop()):
            c0 = time.monotonic()
            if dev_tensors is None:   # on the device once per weight swap
                dev_tensors = jax.tree.map(jnp.asarray, self.tensors)
            carry, (out, rates, dec) = self._chunk(self.params, carry, self.ctrl_ids, self.cparams, dev_tensors)
            out, rates, dec = jax.device_get((out, rates, dec))
            n = min(self.chunk_ticks, num_ticks - ticks)
            parts.append((jax.tree.map(lambda x: np.asarray(x)[:n], out), np.asarray(rates)[:n]))
            ticks += n
            sim_t = ticks * self.dt
            decided, action, r0, r1, min_rtt, mi, feats = dec
            for k, i in zip(*np.nonzero(decided[:n])):
                t = float(out.time[k])
                if not math.isnan(last_dec_t[i]):
                    max_gap[i] = max(max_gap[i], t - last_dec_t[i])
                last_dec_t[i] = t
                lk = self.links.get(int(i))
                if lk is not None:
                    vals = np.concatenate([[self.seq[i], self._flow_t(int(i), t), self.versions[i], action[k, i],
                                            r0[k, i], r1[k, i], min_rtt[k, i]], mi[k, i],
                                           [lk.counters["records_dropped"]]])
                    lk.push(record(vals, feats[k, i]))
                self.seq[i] += 1
            chunk_wall_max = max(chunk_wall_max, time.monotonic() - c0)
            self._pump(sim_t)
            if self._apply_weights(sim_t):
                dev_tensors = None
            if self.speed > 0:   # pace: sim_t simulated seconds at wall0 + sim_t / speed
                while True:
                    left = wall0 + sim_t / self.speed - time.monotonic()
                    if left <= 0:
                        break
                    socks = [lk.sock for lk in self.links.values() if lk.sock is not None]
                    if socks:
                        select.select(socks, [], [], min(left, 0.05))
                    else:
                        time.sleep(min(left, 0.05))
                    self._pump(sim_t)
                    if self._apply_weights(sim_t):
                        dev_tensors = None
        sim_t = ticks * self.dt
        for i, lk in self.links.items():
            lk.counters["max_decision_gap_s"] = float(max_gap[i])
            lk.counters["mi_mean_s"] = float(common.spec_window(self.spec)[2] * self.dt)
            lk.counters["decisions"] = int(self.seq[i])
        # at most 5 s (or the learner timeout, at least 1 s) to hand over the last records and BYE
        deadline = time.monotonic() + min(5.0, max(1.0, max((lk.timeout_s for lk in self.links.values()), default=0)))
        for lk in self.links.values():
            lk.flush_and_close(deadline, self._flow_t(lk.flow_id, sim_t))
        f = self.num_flows
        traj = {k: np.concatenate([getattr(o, k) for o, _ in parts]) for k in
                ("time", "active", "sent", "acked", "lost", "admitted", "owd", "qdelay", "capacity", "queue")}
        for k in ("active", "sent", "acked", "lost", "admitted", "owd"):
            traj[k] = traj[k][:, :f]
        traj["rate"] = np.concatenate([r for _, r in parts])[:, :f]
        return {"emulator": "sim", "scenario": self.scenario.name, "duration_s": sim_t, "dt": self.dt,
                "controllers": self.controllers, "policy": self.policy_path, "policy_sha256": self.policy_sha256,
                "explore": self.explore,
                "speed": self.speed, "wall_s": time.monotonic() - wall0, "chunk_ticks": self.chunk_ticks,
                "max_chunk_wall_s": chunk_wall_max, "decisions": [int(self.seq[i]) for i in range(f)],
                "max_decision_gap_s": [float(max_gap[i]) for i in range(f)],
                "online": {str(i): lk.counters for i, lk in self.links.items()},
                "flows": [{"flow": i, "controller": c, "rtt_ms": fl.rtt_ms, "start_s": fl.start_s,
                           "stop_s": fl.stop_s} for i, (c, fl) in enumerate(zip(self.controllers,
                                                                               self.scenario.flows))],
                "trace": traj}


def trace_of(run: dict[str, Any]) -> metrics.Trace:
    """The ``jaxcc.evaluation.metrics.Trace`` of a SimNet run result (its ``trace`` arrays or file)."""
    tr = run["trace"]
    if isinstance(tr, (str, os.PathLike)):
        with np.load(tr) as z:
            tr = {k: z[k] for k in z.files}
    return metrics.Trace(time=np.asarray(tr["time"], np.float64), dt=float(run["dt"]),
                         active=np.asarray(tr["active"], bool),
                         **{k: np.asarray(tr[k], np.float64) for k in ("sent", "acked", "lost", "admitted", "owd",
                                                                         "qdelay", "capacity", "queue", "rate")})


def save_run(run: dict[str, Any], out: Path) -> Path:
    """OUT/simnet.json (the run without its arrays) + OUT/trace.npz; returns the JSON's path."""
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "trace.npz", **run["trace"])
    doc = {**run, "trace": str((out / "trace.npz").resolve())}
    tmp = out / "simnet.json.tmp"
    tmp.write_text(json.dumps(metrics.json_safe(doc), indent=1))
    os.replace(tmp, out / "simnet.json")
    return out / "simnet.json"


def define_flags(fv):
    """The command's flags on ``fv`` (each also under its dashed name: ``--scenario-file``)."""
    from absl import flags

    from jaxcc.cli import dashed_aliases

    flags.DEFINE_string("scenario", None, "named scenario (jaxcc.scenarios or emu/*)", flag_values=fv)
    flags.DEFINE_string("scenario_file", None, "scenario JSON file (instead of --scenario)", flag_values=fv)
    flags.DEFINE_string("policy", None, "policy file (pareto_v1 / pareto_v2) the senders start with", flag_values=fv)
    flags.DEFINE_string("learner", None, "unix:/abs/path or tcp:HOST:PORT (default: no streaming)", flag_values=fv)
    flags.DEFINE_string("learner_key", None, "the learner's pre-shared key file (>= 16 bytes; protocol 2, "
                        "required for tcp:)", flag_values=fv)
    flags.DEFINE_float("speed", 1.0, "simulated seconds per wall second (0: unpaced)", flag_values=fv)
    flags.DEFINE_float("duration_s", None, "override the scenario's duration", flag_values=fv)
    flags.DEFINE_integer("record_queue", 8192, "records a flow queues while the learner is slow", flag_values=fv)
    flags.DEFINE_float("learner_timeout_s", 5.0, "seconds without the learner before it counts as gone",
                       flag_values=fv)
    flags.DEFINE_string("fallback", "keep", "what runs while the learner is gone (only keep here)", flag_values=fv)
    flags.DEFINE_integer("chunk_ticks", None, "simulator ticks per step between protocol work (default: one "
                         "monitor interval)", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "the simulator's link seed", flag_values=fv)
    flags.DEFINE_bool("raw_policy", False, "the senders without their safety net (jaxcc-sender --raw-policy)",
                      flag_values=fv)
    flags.DEFINE_float("explore", 0.0, "behaviour noise of the policy flows: σ as a fraction of the action's "
                       "half-range (0: none; jaxcc.senders.common.explore_noise)", flag_values=fv)
    flags.DEFINE_integer("explore_seed", 0, "the noise streams' seed", flag_values=fv)
    flags.DEFINE_string("out", None, "output folder (simnet.json, trace.npz)", flag_values=fv)
    for name in ("policy", "out"):
        flags.mark_flag_as_required(name, flag_values=fv)
    return dashed_aliases(fv)


def main(fv, argv: Sequence[str] = ()) -> int:
    """One simulated run with parsed flags ``fv`` (``define_flags``); prints simnet.json's path."""
    from jaxcc.emulation import spec as emu_spec
    from jaxcc.emulation.host import EmulationError

    if (fv.scenario is None) == (fv.scenario_file is None):
        raise ValueError("give exactly one of --scenario, --scenario-file")
    key = auth.load_key(fv.learner_key, "--learner-key") if fv.learner_key else None
    try:
        sc = emu_spec.load(path=fv.scenario_file) if fv.scenario_file else emu_spec.load(name=fv.scenario)
        if fv.duration_s is not None:
            sc = emu_spec.with_duration(sc, fv.duration_s)
        net = SimNet(sc, fv.policy, fv.learner, speed=fv.speed, chunk_ticks=fv.chunk_ticks,
                     record_queue=fv.record_queue, learner_timeout_s=fv.learner_timeout_s, fallback=fv.fallback,
                     seed=fv.seed, raw_policy=fv.raw_policy, learner_key=key, explore=fv.explore,
                     explore_seed=fv.explore_seed)
    except (OSError, EmulationError) as e:
        raise ValueError(str(e)) from e
    path = save_run(net.run(), Path(fv.out))
    print(path)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, __doc__, define_flags, main, "--scenario=NAME --policy=FILE --out=DIR")


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
