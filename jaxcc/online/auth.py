"""The online link's authentication with a pre-shared key (protocol 2), Python side.

The C++ twin is ``datapath/src/frame_auth.{h,cc}`` (written independently; the parity vectors in
``tests/vectors/frame_auth.json`` hold the two to the same bytes).  Only HMAC-SHA256 (Python's
``hmac`` and ``hashlib``) is used, composed as:

* ``psk``: the key file's bytes, a trailing ``\\n`` (or ``\\r\\n``) stripped, at least
  ``MIN_KEY_LEN`` (16) bytes (``load_key``);
* ``nonce_s``, ``nonce_l``: 32 bytes each from the OS RNG (``secrets.token_bytes``), fresh on
  every connection.  The sender's first frame is ``AUTH`` (type 0x07: ``u8 proto`` (2) then its
  nonce); the learner answers with its own ``AUTH``.  Both are unsealed;
* ``k_s2l = HMAC-SHA256(psk, b"jaxcc-link-v2 s->l" + nonce_s + nonce_l)`` and
  ``k_l2s = HMAC-SHA256(psk, b"jaxcc-link-v2 l->s" + nonce_s + nonce_l)``;
* every later frame is sealed: ``u32 len | u8 type | u64 seq | payload | tag`` (little-endian),
  ``tag = HMAC-SHA256(k_dir, u8 dir + u64 seq + u8 type + payload)`` with ``dir`` 0 for sender →
  learner and 1 for learner → sender; ``seq`` counts each direction's sealed frames on the
  connection from 0 and must be exactly the previous one + 1.  Tags are compared with
  ``hmac.compare_digest``.

A frame that fails (bad tag, wrong seq, too short, a first frame that is not AUTH) raises
``AuthError``; the receiver counts it and drops the connection.  Fresh nonces give each connection
fresh keys, so a frame captured on one connection fails on any other.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct

PROTO = 2
AUTH = 0x07
NONCE_LEN = TAG_LEN = 32
SEQ_LEN = 8
OVERHEAD = SEQ_LEN + TAG_LEN
MIN_KEY_LEN = 16
S2L, L2S = 0, 1
LABELS = {S2L: b"jaxcc-link-v2 s->l", L2S: b"jaxcc-link-v2 l->s"}
KEY_RULE = f"it must hold at least {MIN_KEY_LEN} bytes after a trailing newline is stripped"


class AuthError(ValueError):
    """A frame or handshake the authentication refuses."""


def load_key(path: str, flag: str = "--key") -> bytes:
    """The pre-shared key in file ``path``.

    Raises:
      ValueError: one line naming ``flag``, the file and the rule (missing or too short).
    """
    try:
        with open(path, "rb") as f:
            k = f.read()
    except OSError as e:
        raise ValueError(f"{flag}={path}: cannot read the key file ({e.strerror or e}; {KEY_RULE})") from None
    if k.endswith(b"\n"):
        k = k[:-1]
        if k.endswith(b"\r"):
            k = k[:-1]
    if len(k) < MIN_KEY_LEN:
        raise ValueError(f"{flag}={path}: key file has {len(k)} bytes; {KEY_RULE}")
    return k


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_LEN)


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def session_keys(psk: bytes, nonce_s: bytes, nonce_l: bytes) -> dict[int, bytes]:
    """{S2L: k_s2l, L2S: k_l2s} of one connection."""
    return {d: hmac_sha256(psk, LABELS[d] + nonce_s + nonce_l) for d in (S2L, L2S)}


def tag(key: bytes, direction: int, seq: int, ftype: int, payload: bytes) -> bytes:
    return hmac.new(key, struct.pack("<BQB", direction, seq, ftype) + payload, hashlib.sha256).digest()


def seal(key: bytes, direction: int, seq: int, ftype: int, payload: bytes = b"") -> bytes:
    """One whole sealed frame: ``u32 len | u8 type | u64 seq | payload | tag``."""
    payload = bytes(payload)
    body = struct.pack("<Q", seq) + payload + tag(key, direction, seq, ftype, payload)
    return struct.pack("<IB", 1 + len(body), ftype) + body


def open_sealed(key: bytes, direction: int, expect_seq: int, ftype: int, body: bytes) -> bytes:
    """The plain payload of a sealed frame's ``body`` (what follows its type byte).

    Raises:
      AuthError: too short for seq and tag, a bad tag, or a seq other than ``expect_seq``.
    """
    if len(body) < OVERHEAD:
        raise AuthError(f"sealed frame of {len(body)} bytes is shorter than its seq and tag ({OVERHEAD})")
    (seq,) = struct.unpack_from("<Q", body)
    payload, got = bytes(body[SEQ_LEN:-TAG_LEN]), bytes(body[-TAG_LEN:])
    if not hmac.compare_digest(tag(key, direction, seq, ftype, payload), got):
        raise AuthError("bad tag")
    if seq != expect_seq:
        raise AuthError(f"seq {seq} where {expect_seq} was due (replayed or reordered)")
    return payload


def auth_payload(nonce: bytes) -> bytes:
    return bytes([PROTO]) + nonce


def auth_frame(nonce: bytes) -> bytes:
    p = auth_payload(nonce)
    return struct.pack("<IB", 1 + len(p), AUTH) + p


def parse_auth(ftype: int, payload: bytes) -> bytes:
    """The nonce of an AUTH frame (the first frame each way on a protocol-2 connection).

    Raises:
      AuthError: another frame type (a peer without the key) or a malformed AUTH.
    """
    if ftype != AUTH:
        raise AuthError(f"expected an AUTH frame (0x07, protocol 2) first, got type 0x{ftype:02x} "
                        "(a peer without the key?)")
    if len(payload) != 1 + NONCE_LEN or payload[0] != PROTO:
        raise AuthError(f"AUTH frame of {len(payload)} bytes is not protocol 2 with a {NONCE_LEN}-byte nonce")
    return bytes(payload[1:])


class Channel:
    """One end of an authenticated connection (``me``: S2L for a sender, L2S for the learner):
    its two keys and its two sequence counters."""

    def __init__(self, psk: bytes, me: int, nonce_s: bytes, nonce_l: bytes):
        keys = session_keys(psk, nonce_s, nonce_l)
        self.me, self.peer = me, L2S if me == S2L else S2L
        self.send_key, self.recv_key = keys[self.me], keys[self.peer]
        self.sent = self.received = 0

    def seal(self, ftype: int, payload: bytes = b"") -> bytes:
        f = seal(self.send_key, self.me, self.sent, ftype, payload)
        self.sent += 1
        return f

    def open(self, ftype: int, body: bytes) -> bytes:
        """The plain payload; a refused frame (``AuthError``) leaves the counter where it was."""
        p = open_sealed(self.recv_key, self.peer, self.received, ftype, body)
        self.received += 1
        return p


# ----------------------------------------------------------------------------- parity vectors

VECTOR_PSK = b"jaxcc parity vector key, 32 byte"
VECTOR_NONCE_S = bytes(range(0, 32))
VECTOR_NONCE_L = bytes(range(0x80, 0xA0))


def parity_vectors() -> dict:
    """The frames of ``tests/vectors/frame_auth.json`` (fixed key, nonces and seqs), read by
    ``datapath/tests/frame_auth_test.cc``: the session keys and, per case, the sealed frame."""
    keys = session_keys(VECTOR_PSK, VECTOR_NONCE_S, VECTOR_NONCE_L)
    cases = []
    for direction, seq, ftype, payload in (
            (S2L, 0, 0x01, b'{"proto":2,"flow_id":0}'),
            (S2L, 1, 0x02, struct.pack("<I", 1) + struct.pack("<25d", *[0.5 * i for i in range(25)])),
            (L2S, 0, 0x06, b""),
            (L2S, 1, 0x03, struct.pack("<Q", 7) + bytes(range(256)) * 3),
            (S2L, 2**40 + 5, 0x04, b'{"version":7,"ok":true}'),
            (L2S, 2**64 - 1, 0x7F, b"\x00\xff")):
        cases.append({"dir": direction, "seq": seq, "type": ftype, "payload": payload.hex(),
                      "frame": seal(keys[direction], direction, seq, ftype, payload).hex()})
    return {"generated_by": "jaxcc.online.auth.parity_vectors (write_vectors)",
            "psk": VECTOR_PSK.hex(), "nonce_s": VECTOR_NONCE_S.hex(), "nonce_l": VECTOR_NONCE_L.hex(),
            "auth_s": auth_frame(VECTOR_NONCE_S).hex(), "auth_l": auth_frame(VECTOR_NONCE_L).hex(),
            "k_s2l": keys[S2L].hex(), "k_l2s": keys[L2S].hex(), "cases": cases}


def write_vectors(path: str) -> None:
    """Writes ``parity_vectors()`` to ``path`` (``tests/vectors/frame_auth.json``)."""
    with open(path, "w") as f:
        json.dump(parity_vectors(), f, indent=1)
        f.write("\n")
