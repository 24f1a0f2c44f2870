"""The experience stream between a sender and the online learner (protocols 1 and 2), Python side.

One stream socket per flow: ``unix:/abs/path`` (default; a filesystem socket crosses network
namespaces, so a sender inside a netns reaches a learner in the root namespace) or
``tcp:HOST:PORT``.  The learner listens (``Server``); each sender connects from its I/O thread.
The C++ sender (``datapath/src/learner_link.cc``) implements the same table independently.

With a pre-shared key on both ends (``Server(key=...)``, ``python -m jaxcc.online --key=FILE``,
``jaxcc-sender --learner-key=FILE``) the connection speaks protocol 2: an AUTH handshake with a
fresh nonce from each end, then every frame below sealed with a sequence number and an
HMAC-SHA256 tag (``jaxcc.online.auth`` has the construction).  A ``tcp:`` address needs a key;
without one only ``unix:`` is allowed (a filesystem socket under the host's permissions).  A keyed
learner refuses a keyless sender and a keyless learner a keyed one; every refusal is counted
(``counters["auth_refused"]``, reasons in ``auth_refusals``) and drops the connection before
anything it sent reaches the events.

Frame: ``u32 len`` (little-endian; the bytes after this field = 1 + payload), ``u8 type``,
payload.  ``len`` is at least 1 and at most ``MAX_LEN`` (64 MiB); anything else is a protocol
error, after which the receiver closes the connection and counts it.  Unknown types are skipped
by length and counted.

====  ===========  ====  ====================================================================
type  name         dir   payload
====  ===========  ====  ====================================================================
0x01  HELLO        s→l   UTF-8 JSON {"proto": 1, "flow_id", "feature_set", "history", "obs_dim",
                         "mi_rtts", "policy_sha256", "weight_version", "fallback"}; first frame
                         of every (re)connection
0x02  RECORD       s→l   ``u32 D`` then (24 + D) float64 LE: ``RECORD_FIELDS`` then the D
                         features appended to the window at this decision
0x03  WEIGHTS      l→s   ``u64 version`` then a whole policy file (safetensors + spec)
0x04  WEIGHTS_ACK  s→l   JSON {"version", "ok", "reason", "decision", "t_s"}
0x05  BYE          s→l   JSON: the sender's learner counters at the end
0x06  PING         l→s   empty; the learner sends one at least every second
====  ===========  ====  ====================================================================

RECORD's 16 MI sums are ``jaxcc.envs.mi.MIStats``'s fields in declaration order (``MI_FIELDS``),
so the learner rebuilds the monitor interval the sender measured (``fixed[MI_COLS]``) and
computes the reward with the simulator's own functions (``jaxcc.online.pareto``).

Events of ``Server`` (``drain``): ``(kind, conn id, payload)`` with kind ``hello`` (dict),
``record`` ((fixed [24], features [D])), ``ack`` (dict), ``bye`` (dict) or ``closed`` (the
connection's HELLO dict or None).
"""

from __future__ import annotations

import collections
import json
import os
import socket
import struct
import sys
import threading
import time
from typing import Any, Sequence

import numpy as np

from jaxcc.online import auth
from jaxcc.online.auth import AuthError

PROTO = 1
HELLO, RECORD, WEIGHTS, WEIGHTS_ACK, BYE, PING = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
TYPE_NAMES = {HELLO: "HELLO", RECORD: "RECORD", WEIGHTS: "WEIGHTS", WEIGHTS_ACK: "WEIGHTS_ACK", BYE: "BYE",
              PING: "PING"}
MAX_LEN = 64 << 20  # largest allowed ``len`` field (type byte + payload)
AUTH = auth.AUTH  # 0x07, protocol 2's handshake

MI_FIELDS = ("duration", "active", "sent", "acked", "lost", "rtt_wsum", "rtt_min", "rtt_max", "rtt_first",
             "rtt_last", "n_samples", "ls_w", "ls_wt", "ls_wtt", "ls_wr", "ls_wtr")
RECORD_FIELDS = (("seq", "t_s", "weight_version", "action", "rate_before", "rate_after", "min_rtt_s")
                 + tuple("mi_" + f for f in MI_FIELDS) + ("records_dropped",))
N_FIXED = len(RECORD_FIELDS)  # 24
F = {name: i for i, name in enumerate(RECORD_FIELDS)}  # field name -> column
MI_COLS = slice(F["mi_duration"], F["mi_ls_wtr"] + 1)


class ProtocolError(ValueError):
    """A frame that breaks the protocol (bad length, truncated or malformed payload)."""


# ----------------------------------------------------------------------------- encode


def frame(ftype: int, payload: bytes = b"") -> bytes:
    """``u32 len`` + ``u8 type`` + payload."""
    n = 1 + len(payload)
    if n > MAX_LEN:
        raise ProtocolError(f"frame of {n} bytes is larger than the protocol's {MAX_LEN}")
    return struct.pack("<IB", n, ftype) + payload


def json_frame(ftype: int, obj: dict) -> bytes:
    return frame(ftype, json.dumps(obj, separators=(",", ":"), default=float).encode("utf-8"))  # numpy scalars too


def hello(*, flow_id: int, feature_set: str, history: int, obs_dim: int, mi_rtts: float, policy_sha256: str,
          weight_version: int = 0, fallback: str = "keep", proto: int = PROTO) -> bytes:
    """HELLO; ``proto`` 2 on an authenticated connection (``auth.PROTO``)."""
    return json_frame(HELLO, {"proto": int(proto), "flow_id": int(flow_id), "feature_set": str(feature_set),
                              "history": int(history), "obs_dim": int(obs_dim), "mi_rtts": float(mi_rtts),
                              "policy_sha256": str(policy_sha256), "weight_version": int(weight_version),
                              "fallback": str(fallback)})


def record(fixed, features) -> bytes:
    """A RECORD frame from the 24 ``RECORD_FIELDS`` values (a sequence, or a dict by name) and the
    D features."""
    if isinstance(fixed, dict):
        missing = [k for k in RECORD_FIELDS if k not in fixed]
        if missing:
            raise ValueError(f"record: missing field(s) {', '.join(missing)}")
        fixed = [fixed[k] for k in RECORD_FIELDS]
    fixed = np.asarray(fixed, "<f8").reshape(-1)
    if fixed.size != N_FIXED:
        raise ValueError(f"record: {fixed.size} fixed values, expected {N_FIXED} (RECORD_FIELDS)")
    feats = np.asarray(features, "<f8").reshape(-1)
    return frame(RECORD, struct.pack("<I", feats.size) + fixed.tobytes() + feats.tobytes())


def weights(version: int, policy_blob: bytes) -> bytes:
    return frame(WEIGHTS, struct.pack("<Q", int(version)) + bytes(policy_blob))


def ping() -> bytes:
    return frame(PING)


# ----------------------------------------------------------------------------- decode


def decode_record(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(fixed [24] float64, features [D] float64) of a RECORD payload."""
    if len(payload) < 4:
        raise ProtocolError(f"RECORD payload of {len(payload)} bytes has no feature count")
    (d,) = struct.unpack_from("<I", payload)
    need = 4 + 8 * (N_FIXED + d)
    if len(payload) != need:
        raise ProtocolError(f"RECORD with D={d} needs {need} payload bytes, got {len(payload)}")
    v = np.frombuffer(payload, "<f8", offset=4)
    return v[:N_FIXED].astype(np.float64), v[N_FIXED:].astype(np.float64)


def decode_weights(payload: bytes) -> tuple[int, bytes]:
    if len(payload) < 8:
        raise ProtocolError(f"WEIGHTS payload of {len(payload)} bytes has no version")
    return struct.unpack_from("<Q", payload)[0], payload[8:]


def decode_json(payload: bytes) -> dict:
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"JSON payload is not valid UTF-8 JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ProtocolError("JSON payload is not an object")
    return obj


def record_dict(fixed: np.ndarray) -> dict[str, float]:
    return {k: float(fixed[i]) for i, k in enumerate(RECORD_FIELDS)}


class FrameReader:
    """Incremental frame splitter: ``feed(bytes)`` returns the complete ``(type, payload)`` frames."""

    def __init__(self, max_len: int = MAX_LEN):
        self.buf = bytearray()
        self.max_len = max_len

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("<I", self.buf)
            if n < 1 or n > self.max_len:
                raise ProtocolError(f"frame length {n} outside [1, {self.max_len}]")
            if len(self.buf) < 4 + n:
                break
            out.append((self.buf[4], bytes(self.buf[5:4 + n])))
            del self.buf[:4 + n]
        return out


# ----------------------------------------------------------------------------- addresses


def parse_address(addr: str) -> tuple[int, Any]:
    """``unix:/abs/path`` → (AF_UNIX, path); ``tcp:HOST:PORT`` → (AF_INET, (host, port))."""
    if addr.startswith("unix:"):
        path = addr[5:]
        if not os.path.isabs(path):
            raise ValueError(f"learner address {addr!r}: a unix socket path must be absolute")
        return socket.AF_UNIX, path
    if addr.startswith("tcp:"):
        host, _, port = addr[4:].rpartition(":")
        try:
            p = int(port)
        except ValueError:
            p = -1
        if not host or not 0 <= p <= 65535:
            raise ValueError(f"learner address {addr!r}: expected tcp:HOST:PORT with PORT in [0, 65535]")
        return socket.AF_INET, (host, p)
    raise ValueError(f"learner address {addr!r}: expected unix:/abs/path or tcp:HOST:PORT")


def check_key(addr: str, key: bytes | None, flag: str = "--key") -> None:
    """A ``tcp:`` address needs a key (one-line ValueError naming ``flag``); ``unix:`` may go without."""
    fam, _ = parse_address(addr)
    if fam == socket.AF_INET and key is None:
        raise ValueError(f"learner address {addr!r}: a tcp: link must be authenticated; give {flag}=FILE "
                         f"(a pre-shared key, >= {auth.MIN_KEY_LEN} bytes)")


def connect(addr: str, timeout: float = 5.0) -> socket.socket:
    fam, a = parse_address(addr)
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(a)
    s.settimeout(None)
    return s


def recv_frame(sock: socket.socket, reader: FrameReader | None = None) -> tuple[int, bytes] | None:
    """Blocking read of one frame from ``sock`` (None at EOF).  Simple helper for tests and stubs;
    frames after the first stay buffered in ``reader``."""
    reader = reader or FrameReader()
    pending = getattr(reader, "_pending", [])
    while not pending:
        data = sock.recv(65536)
        if not data:
            return None
        pending = reader.feed(data)
    reader._pending = pending[1:]
    return pending[0]


class Client:
    """A sender's end of one connection, for Python senders (``flood``) and tests: connects, does
    the AUTH handshake when ``key`` is given (then ``send`` seals and ``recv`` verifies every
    frame), and takes whole frames as ``frame``/``record``/... build them."""

    def __init__(self, addr: str, key: bytes | None = None, timeout: float = 5.0):
        check_key(addr, key)
        self.sock = connect(addr, timeout)
        self.reader = FrameReader()
        self.chan: auth.Channel | None = None
        if key is not None:
            nonce_s = auth.new_nonce()
            self.sock.settimeout(timeout)
            try:
                self.sock.sendall(auth.auth_frame(nonce_s))
                got = recv_frame(self.sock, self.reader)
            except OSError:
                self.sock.close()
                raise
            if got is None:
                self.sock.close()
                raise AuthError("the learner closed the connection during the AUTH handshake")
            self.sock.settimeout(None)
            self.chan = auth.Channel(key, auth.S2L, nonce_s, auth.parse_auth(*got))

    def seal(self, fr: bytes) -> bytes:
        """``fr`` (a whole plain frame) as this connection sends it."""
        return fr if self.chan is None else self.chan.seal(fr[4], fr[5:])

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(self.seal(f) for f in frames))

    def recv(self) -> tuple[int, bytes] | None:
        """The next frame (type, plain payload), None at EOF; AuthError for a refused one."""
        got = recv_frame(self.sock, self.reader)
        if got is None or self.chan is None:
            return got
        return got[0], self.chan.open(got[0], got[1])

    def close(self) -> None:
        """Half-closes, reads (and drops) what the learner still sends, such as its PINGs, until it
        closes its end or 1 s passes, then closes.  A TCP socket closed with unread data sends a
        reset, and a reset can discard this end's last frames (the BYE) before the learner reads them."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(1.0)
            while self.sock.recv(1 << 16):
                pass
        except OSError:
            pass
        self.sock.close()


# ----------------------------------------------------------------------------- the learner's server


class _Conn:
    def __init__(self, cid: int, sock: socket.socket):
        self.cid = cid
        self.sock = sock
        self.hello: dict | None = None
        self.out: collections.deque = collections.deque()
        self.cv = threading.Condition()
        self.closed = False
        self.last_ping = 0.0
        self.chan: auth.Channel | None = None  # protocol 2: set by the handshake
        self.hs: bytes | None = None  # protocol 2: the learner's AUTH answer, sent first


class Server:
    """Listens on ``addr``; one reader and one writer thread per connection.

    Decoded frames land in a bounded queue of events (``get`` / ``drain``); when the learner
    falls behind, the oldest record is dropped and counted (``counters["events_dropped"]``;
    HELLO, WEIGHTS_ACK and BYE events are kept while there is a record to drop), so a flooding
    sender costs the learner bounded memory.  ``send_weights`` queues a WEIGHTS frame to one connection
    or all; the writer threads also send a PING every ``ping_s`` (≤ 1 s) so a sender knows the
    learner is alive.  Nothing here blocks the caller on a socket.

    ``key`` (the pre-shared key's bytes, ``auth.load_key``): every connection must open with an
    AUTH handshake and seal every frame (protocol 2); a ``tcp:`` address needs one.  A connection
    that fails authentication (a keyless or wrong-key sender, a bad tag, a replayed or reordered
    seq, no AUTH within ``auth_timeout_s``) is counted in ``counters["auth_refused"]`` (the first
    32 reasons in ``auth_refusals``) and closed; nothing it sent becomes an event.
    """

    def __init__(self, addr: str, *, ping_s: float = 0.5, max_events: int = 1 << 16, key: bytes | None = None,
                 auth_timeout_s: float = 5.0):
        if not 0 < ping_s <= 1.0:
            raise ValueError(f"ping_s={ping_s}: the protocol needs a PING at least every 1 s")
        check_key(addr, key)
        if key is not None and len(key) < auth.MIN_KEY_LEN:
            raise ValueError(f"key of {len(key)} bytes: {auth.KEY_RULE}")
        self.addr = addr
        self.ping_s = ping_s
        self.key = key
        self.auth_timeout_s = auth_timeout_s
        self.auth_refusals: list[str] = []
        fam, a = parse_address(addr)
        if fam == socket.AF_UNIX:
            os.makedirs(os.path.dirname(a), exist_ok=True)
            if os.path.exists(a):
                os.unlink(a)
        self.lsock = socket.socket(fam, socket.SOCK_STREAM)
        if fam == socket.AF_INET:
            self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(a)
        self.lsock.listen(64)
        if fam == socket.AF_INET:
            self.address = f"tcp:{a[0]}:{self.lsock.getsockname()[1]}"
        else:
            self.address = addr
            os.chmod(a, 0o777)
        self.events: collections.deque = collections.deque()
        self.max_events = max_events
        self.ev_cv = threading.Condition()
        self.conns: dict[int, _Conn] = {}
        self.lock = threading.Lock()
        self.counters = collections.Counter()
        self.last_error = ""
        self._stop = threading.Event()
        self._next = 0
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="exp-accept")]
        self._threads[0].start()

    # -- events
    def _push(self, ev: tuple) -> None:
        with self.ev_cv:
            if len(self.events) >= self.max_events:
                # The oldest *record* goes first: a flood of records never costs the learner a
                # HELLO, WEIGHTS_ACK or BYE (it would lose a flow's identity or its counts).
                for i, e in enumerate(self.events):
                    if e[0] == "record":
                        del self.events[i]
                        break
                else:
                    self.events.popleft()
                self.counters["events_dropped"] += 1
            self.events.append(ev)
            self.ev_cv.notify()

    def drain(self, max_n: int | None = None, timeout: float = 0.0) -> list[tuple]:
        """Every queued event (up to ``max_n``), waiting up to ``timeout`` s for the first."""
        with self.ev_cv:
            if not self.events and timeout > 0:
                self.ev_cv.wait(timeout)
            n = len(self.events) if max_n is None else min(max_n, len(self.events))
            return [self.events.popleft() for _ in range(n)]

    # -- threads
    def _accept(self):
        self.lsock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                s, _ = self.lsock.accept()
            except (socket.timeout, OSError):
                continue
            s.settimeout(None)
            with self.lock:
                cid = self._next
                self._next += 1
                c = _Conn(cid, s)
                self.conns[cid] = c
            self.counters["connections"] += 1
            for fn, nm in ((self._read, "r"), (self._write, "w")):
                t = threading.Thread(target=fn, args=(c,), daemon=True, name=f"exp-{nm}{cid}")
                t.start()

    def _refuse(self, c: _Conn, why: str) -> None:
        self.counters["auth_refused"] += 1
        self.last_error = f"connection {c.cid}: refused: {why}"
        if len(self.auth_refusals) < 32:
            self.auth_refusals.append(why)

    def _read(self, c: _Conn):
        reader = FrameReader()
        if self.key is not None:  # the handshake must come in time; after it, reads block freely
            c.sock.settimeout(self.auth_timeout_s)
        try:
            while not self._stop.is_set():
                data = c.sock.recv(1 << 16)
                if not data:
                    break
                for ftype, payload in reader.feed(data):
                    self._dispatch(c, ftype, payload)
        except AuthError as e:
            self._refuse(c, str(e))
        except ProtocolError as e:
            self.counters["protocol_errors"] += 1
            self.last_error = f"connection {c.cid}: {e}"
        except socket.timeout:
            self._refuse(c, f"no AUTH within {self.auth_timeout_s} s")
        except OSError:
            pass
        self._close(c)
        self._push(("closed", c.cid, c.hello))

    def _authenticate(self, c: _Conn, ftype: int, payload: bytes) -> bytes | None:
        """The plain payload of a frame from ``c`` (None: the handshake, nothing to dispatch).

        Raises:
          AuthError: the frame is refused (the caller counts it and closes the connection).
        """
        if self.key is None:
            if ftype == AUTH:
                raise AuthError("the sender has a key (protocol 2); this learner has none (--key)")
            return payload
        if c.chan is None:
            nonce_s, nonce_l = auth.parse_auth(ftype, payload), auth.new_nonce()
            with c.cv:
                c.chan = auth.Channel(self.key, auth.L2S, nonce_s, nonce_l)
                c.hs = auth.auth_frame(nonce_l)
                c.cv.notify()
            c.sock.settimeout(None)
            return None
        return c.chan.open(ftype, payload)

    def _dispatch(self, c: _Conn, ftype: int, payload: bytes):
        payload = self._authenticate(c, ftype, payload)
        if payload is None:
            return
        if ftype == RECORD:
            fixed, feats = decode_record(payload)
            self.counters["records"] += 1
            self._push(("record", c.cid, (fixed, feats)))
        elif ftype == HELLO:
            h = decode_json(payload)
            want = PROTO if self.key is None else auth.PROTO
            if h.get("proto") != want:
                raise ProtocolError(f"HELLO proto {h.get('proto')!r}; this learner speaks {want}")
            c.hello = h
            self._push(("hello", c.cid, h))
        elif ftype == WEIGHTS_ACK:
            self._push(("ack", c.cid, decode_json(payload)))
        elif ftype == BYE:
            self._push(("bye", c.cid, decode_json(payload)))
        else:
            self.counters["unknown_frames"] += 1

    def _write(self, c: _Conn):
        try:
            while not self._stop.is_set() and not c.closed:
                with c.cv:
                    if self.key is not None and c.chan is None:  # nothing before the handshake
                        c.cv.wait(self.ping_s)
                        continue
                    hs, c.hs = c.hs, None
                    if hs is None and not c.out:
                        c.cv.wait(self.ping_s)
                    item = c.out.popleft() if hs is None and c.out else None
                if hs is not None:  # protocol 2: the AUTH answer first, unsealed, then a PING at once
                    c.sock.sendall(hs)
                if item is None:
                    item = ping()
                    self.counters["pings"] += 1
                if c.chan is not None:
                    item = c.chan.seal(item[4], item[5:])
                c.sock.sendall(item)
        except OSError:
            pass
        self._close(c)

    def _close(self, c: _Conn):
        with self.lock:
            if c.closed:
                return
            c.closed = True
            self.conns.pop(c.cid, None)
        try:
            c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.sock.close()
        with c.cv:
            c.cv.notify_all()

    # -- sending
    def send_weights(self, version: int, policy_blob: bytes, cid: int | None = None) -> int:
        """Queue a WEIGHTS frame to connection ``cid`` (None: every connection that said HELLO);
        returns how many connections it was queued for.  An unsent older WEIGHTS frame in the same
        queue is replaced (the sender would supersede it anyway)."""
        f = weights(version, policy_blob)
        n = 0
        with self.lock:
            targets = [c for c in self.conns.values() if (cid is None and c.hello is not None) or c.cid == cid]
        for c in targets:
            with c.cv:
                old = [x for x in c.out if x[4] == WEIGHTS]
                for x in old:
                    c.out.remove(x)
                c.out.append(f)
                c.cv.notify()
            n += 1
        self.counters["weights_sent"] += n
        return n

    def connected(self) -> list[int]:
        with self.lock:
            return sorted(self.conns)

    def close(self):
        self._stop.set()
        try:
            self.lsock.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self.conns.values())
        for c in conns:
            self._close(c)
        fam, a = parse_address(self.addr)
        if fam == socket.AF_UNIX and os.path.exists(a):
            try:
                os.unlink(a)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def wait_for(pred, timeout: float, step: float = 0.01) -> bool:
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())


# ----------------------------------------------------------------------------- learner benchmark


def flood(address: str, *, flows: int, seconds: float, feature_set: str, history: int, obs_dim: int,
          mi_rtts: float = 2.0, policy_sha256: str = "", batch: int = 64, key: bytes | None = None) -> dict[str, Any]:
    """The learner benchmark's senders (``python -m jaxcc.online --emulator=flood``): ``flows``
    connections say HELLO, then send RECORDs as fast as the learner's sockets take them for
    ``seconds`` (``batch`` records per write), then BYE.  Every record is one 0.1-s monitor
    interval at 1 MB/s and a 50 ms RTT over a 40 ms minimum (a queue, so Algorithm 1's drain
    branch runs), features 0; ``seq`` and ``t_s`` advance as a real flow's would.  Returns the
    counts: what the learner sustained is its ``records_per_s``, what it could not keep its
    ``learner_events_dropped``.  ``key``: protocol 2 (every frame sealed, as a keyed sender's)."""
    if flows < 1 or not seconds > 0 or batch < 1:
        raise ValueError(f"flood: flows={flows}, seconds={seconds}, batch={batch} must be >= 1, > 0, >= 1")
    check_key(address, key)
    socks = [Client(address, key) for _ in range(flows)]
    mi = {"mi_duration": 0.1, "mi_active": 0.1, "mi_sent": 1e5, "mi_acked": 1e5, "mi_lost": 0.0,
          "mi_rtt_wsum": 0.05 * 1e5, "mi_rtt_min": 0.05, "mi_rtt_max": 0.05, "mi_rtt_first": 0.05,
          "mi_rtt_last": 0.05, "mi_n_samples": 67.0, "mi_ls_w": 1e5, "mi_ls_wt": 5e3, "mi_ls_wtt": 333.0,
          "mi_ls_wr": 0.05 * 1e5, "mi_ls_wtr": 0.05 * 5e3}
    fixed = np.zeros(N_FIXED)
    for k, v in mi.items():
        fixed[F[k]] = v
    fixed[F["action"]], fixed[F["rate_before"]], fixed[F["rate_after"]], fixed[F["min_rtt_s"]] = 0.0, 1e6, 1e6, 0.04
    feats = np.zeros(obs_dim)
    sent = [0] * flows
    t0 = time.monotonic()
    try:
        for i, s in enumerate(socks):
            s.send(hello(flow_id=i, feature_set=feature_set, history=history, obs_dim=obs_dim, mi_rtts=mi_rtts,
                         policy_sha256=policy_sha256, proto=PROTO if key is None else auth.PROTO))
        seq = 0
        while time.monotonic() - t0 < seconds:
            for i, s in enumerate(socks):
                frames = []
                for j in range(batch):
                    fixed[F["seq"]], fixed[F["t_s"]] = seq + j, 0.1 * (seq + j)
                    frames.append(record(fixed, feats))
                s.send(*frames)
                sent[i] += batch
            seq += batch
        wall = time.monotonic() - t0
        for i, s in enumerate(socks):
            s.send(json_frame(BYE, {"records_sent": sent[i], "records_dropped": 0, "weights_applied": 0,
                                    "weights_rejected": 0, "weight_version": 0}))
    finally:
        for s in socks:
            s.close()
    return {"flows": flows, "records_sent": sum(sent), "wall_s": wall, "sent_per_s": sum(sent) / wall}


FLOOD_DOC = """``python -m jaxcc.online.experience``: the learner benchmark's flooding senders (``flood``).

    python -m jaxcc.online.experience --learner=unix:/abs/path --flows=3 --seconds=S --policy=FILE --out=FILE.json

``--key=FILE``: the learner's pre-shared key (protocol 2; required for a ``tcp:`` learner).
"""


def define_flags(fv):
    from absl import flags

    flags.DEFINE_string("learner", None, "the learner's address: unix:/abs/path or tcp:HOST:PORT", flag_values=fv)
    flags.DEFINE_integer("flows", 3, "flooding senders (one connection each)", flag_values=fv)
    flags.DEFINE_float("seconds", None, "how long they flood (s)", flag_values=fv)
    flags.DEFINE_string("policy", None, "the policy file whose window shape the records have", flag_values=fv)
    flags.DEFINE_string("out", None, "JSON file for the counts", flag_values=fv)
    flags.DEFINE_string("key", None, "the learner's pre-shared key file (>= 16 bytes; required for tcp:)",
                        flag_values=fv)
    for name in ("learner", "seconds", "policy", "out"):
        flags.mark_flag_as_required(name, flag_values=fv)
    return fv


def main(fv, argv: Sequence[str] = ()) -> int:
    """Flood with parsed flags ``fv`` (``define_flags``); writes the counts to ``--out``."""
    import hashlib

    from jaxcc import policyfile

    try:
        spec, _ = policyfile.load(fv.policy)
        blob = open(fv.policy, "rb").read()
    except OSError as e:
        raise ValueError(f"--policy: cannot read {fv.policy!r} ({e.strerror or e})") from e
    fe = spec["features"]
    key = auth.load_key(fv.key, "--key") if fv.key else None
    check_key(fv.learner, key)
    try:
        res = flood(fv.learner, flows=fv.flows, seconds=fv.seconds, feature_set=str(fe.get("name")),
                    history=int(fe["history"]), obs_dim=int(fe["obs_dim"]), mi_rtts=float(spec.get("mi_rtts", 2.0)),
                    policy_sha256=hashlib.sha256(blob).hexdigest(), key=key)
    except OSError as e:  # no learner there, or it went away
        raise ValueError(f"--learner={fv.learner}: {e}") from e
    with open(fv.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


def run_cli(argv: Sequence[str]) -> int:
    """Parse ``argv`` (program name first) into fresh flags and run; errors print one line, exit 2."""
    from jaxcc.cli import run_absl_cli

    return run_absl_cli(argv, FLOOD_DOC, define_flags, main, "--learner=ADDR --seconds=S", uses_jax=False)


if __name__ == "__main__":
    sys.exit(run_cli(sys.argv))
