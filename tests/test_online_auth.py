"""The online link's pre-shared-key authentication (protocol 2), Python side: the construction
against hand-composed HMAC-SHA256 (``hmac``/``hashlib`` called here directly, from the
construction as documented), the committed C++ parity vectors being current, key files, and the
learner's ``Server`` against hostile clients: a keyless or wrong-key client, frames replayed on
the same and on a new connection, a flipped bit.  Each refusal is counted and no record of a
refused connection reaches the learner's events.  (The C++ sender against hostile learners:
``tests/test_online_faults.py``.)"""

import hashlib
import hmac
import json
import os
import socket

import numpy as np
import pytest

from jaxcc.online import auth
from jaxcc.online import experience as X

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def key_file(tmp_path):
    """The pre-shared key: 32 random bytes, hex, one line (as `openssl rand -hex 32 > FILE` writes it)."""
    p = tmp_path / "link.key"
    p.write_text(os.urandom(32).hex() + "\n")
    return p


# ----------------------------------------------------------------------------- the construction


def test_sealed_frame_is_the_documented_hmac_composition():
    psk, ns, nl = b"k" * 20, bytes(range(32)), bytes(range(100, 132))
    k_s2l = hmac.new(psk, b"jaxcc-link-v2 s->l" + ns + nl, hashlib.sha256).digest()
    k_l2s = hmac.new(psk, b"jaxcc-link-v2 l->s" + ns + nl, hashlib.sha256).digest()
    assert auth.session_keys(psk, ns, nl) == {0: k_s2l, 1: k_l2s} and k_s2l != k_l2s
    payload = b"\x07\x00\x00\x00\x00\x00\x00\x00blob"
    seq = 5
    tag = hmac.new(k_l2s, bytes([1]) + seq.to_bytes(8, "little") + bytes([0x03]) + payload, hashlib.sha256).digest()
    body = seq.to_bytes(8, "little") + payload + tag
    want = (1 + len(body)).to_bytes(4, "little") + b"\x03" + body
    assert auth.seal(k_l2s, 1, seq, 0x03, payload) == want
    assert auth.open_sealed(k_l2s, 1, 5, 0x03, body) == payload
    assert auth.auth_frame(ns) == (34).to_bytes(4, "little") + b"\x07\x02" + ns


def test_channel_refuses_replay_skip_other_direction_flip_and_truncation():
    keys_psk = b"0123456789abcdef"
    s = auth.Channel(keys_psk, auth.S2L, b"a" * 32, b"b" * 32)
    lr = auth.Channel(keys_psk, auth.L2S, b"a" * 32, b"b" * 32)
    f0, f1 = s.seal(X.RECORD, b"r0"), s.seal(X.RECORD, b"r1")
    with pytest.raises(auth.AuthError, match="seq 1 where 0 was due"):
        lr.open(f1[4], f1[5:])
    assert lr.open(f0[4], f0[5:]) == b"r0"
    with pytest.raises(auth.AuthError, match="seq 0 where 1 was due"):
        lr.open(f0[4], f0[5:])
    reflected = lr.seal(X.PING)  # the learner's own frame is not the sender's
    with pytest.raises(auth.AuthError, match="bad tag"):
        lr.open(reflected[4], reflected[5:])
    for i in range(4, len(f1)):
        bad = bytearray(f1)
        bad[i] ^= 0x10
        with pytest.raises(auth.AuthError):
            lr.open(bad[4], bytes(bad[5:]))
    with pytest.raises(auth.AuthError, match="bad tag"):
        lr.open(f1[4], f1[5:-1])
    with pytest.raises(auth.AuthError, match="shorter than its seq and tag"):
        lr.open(f1[4], f1[5:5 + 39])
    assert lr.open(f1[4], f1[5:]) == b"r1" and lr.received == 2
    with pytest.raises(auth.AuthError, match="got type 0x01"):
        auth.parse_auth(X.HELLO, b"{}")
    with pytest.raises(auth.AuthError, match="not protocol 2"):
        auth.parse_auth(auth.AUTH, b"\x01" + b"n" * 32)


def test_committed_parity_vectors_are_current():
    """tests/vectors/frame_auth.json (read by datapath/tests/frame_auth_test.cc, which seals the
    same frames in C++ byte for byte) is what the Python side writes today."""
    with open(os.path.join(REPO, "tests", "vectors", "frame_auth.json")) as f:
        committed = json.load(f)
    assert committed == auth.parity_vectors(), (
        "stale: PYTHONPATH=. python3 -c \"from jaxcc.online import auth; "
        "auth.write_vectors('tests/vectors/frame_auth.json')\"")
    # and each frame opens with the keys it names
    keys = {0: bytes.fromhex(committed["k_s2l"]), 1: bytes.fromhex(committed["k_l2s"])}
    for c in committed["cases"]:
        fr = bytes.fromhex(c["frame"])
        assert auth.open_sealed(keys[c["dir"]], c["dir"], c["seq"], fr[4], fr[5:]).hex() == c["payload"]


def test_key_file_rules_are_one_line(tmp_path):
    ok, crlf, short = tmp_path / "ok", tmp_path / "crlf", tmp_path / "short"
    ok.write_bytes(b"0123456789abcdef\n")
    crlf.write_bytes(b"0123456789abcdef\r\n")
    short.write_bytes(b"0123456789abcde\n")
    assert auth.load_key(str(ok)) == auth.load_key(str(crlf)) == b"0123456789abcdef"
    with pytest.raises(ValueError) as e:
        auth.load_key(str(short), "--key")
    msg = str(e.value)
    assert msg.startswith(f"--key={short}: key file has 15 bytes;") and "at least 16 bytes" in msg and "\n" not in msg
    with pytest.raises(ValueError, match=r"--key=/nonexistent/k: cannot read the key file"):
        auth.load_key("/nonexistent/k")


def test_tcp_needs_a_key_unix_does_not(key_file):
    with pytest.raises(ValueError, match="a tcp: link must be authenticated; give --key=FILE"):
        X.Server("tcp:127.0.0.1:0")
    with pytest.raises(ValueError, match="a tcp: link must be authenticated"):
        X.Client("tcp:127.0.0.1:9")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        X.Server("tcp:127.0.0.1:0", key=b"short")
    X.check_key("unix:/tmp/x.sock", None)


# ----------------------------------------------------------------------------- the server against hostile clients


def _hello(proto=2):
    return X.hello(flow_id=3, feature_set="pareto_v1", history=8, obs_dim=2, mi_rtts=2.0, policy_sha256="",
                   proto=proto)


def _rec(k):
    fx = np.zeros(24)
    fx[X.F["seq"]] = k
    return X.record(fx, np.ones(2))


def _closed(s: socket.socket) -> bool:
    """True once the server has closed ``s`` (EOF within 5 s)."""
    s.settimeout(5)
    try:
        while s.recv(1 << 16):
            pass
    except ConnectionResetError:  # closed with our unread frames in its buffer
        return True
    except socket.timeout:
        return False
    return True


def test_keyed_server_session_then_every_forgery_refused_and_counted(key_file):
    key = auth.load_key(str(key_file))
    with X.Server("tcp:127.0.0.1:0", key=key, ping_s=0.2) as srv:
        # A good sender: handshake, sealed HELLO and records, a sealed PING back, then WEIGHTS.
        good = X.Client(srv.address, key)
        good.send(_hello(), _rec(0), _rec(1))
        assert X.wait_for(lambda: srv.counters["records"] == 2, 5)
        assert [e[0] for e in srv.drain()] == ["hello", "record", "record"]
        assert good.recv()[0] == X.PING
        assert srv.send_weights(4, b"blob") == 1
        while True:
            t, p = good.recv()
            if t == X.WEIGHTS:
                break
        assert X.decode_weights(p) == (4, b"blob")
        captured = good.seal(_rec(2))  # sealed under this connection's keys, seq 3
        good.sock.sendall(captured)
        assert X.wait_for(lambda: srv.counters["records"] == 3, 5)

        # 1. The same frame again on that connection: seq 3 where 4 was due.
        good.sock.sendall(captured)
        assert _closed(good.sock)
        assert X.wait_for(lambda: srv.counters["auth_refused"] == 1, 5)
        assert "seq 3 where 4 was due" in srv.auth_refusals[0]
        # 2. Replayed on a new, properly authenticated connection: its keys differ.
        again = X.Client(srv.address, key)
        again.sock.sendall(captured)
        assert _closed(again.sock) and X.wait_for(lambda: srv.counters["auth_refused"] == 2, 5)
        assert srv.auth_refusals[1] == "bad tag"
        # 3. A keyless client streaming HELLO (proto 1) and records.
        raw = X.connect(srv.address)
        raw.sendall(_hello(proto=1) + b"".join(_rec(k) for k in range(50)))
        assert _closed(raw) and X.wait_for(lambda: srv.counters["auth_refused"] == 3, 5)
        assert "expected an AUTH frame" in srv.auth_refusals[2]
        # 4. A client with the wrong key: the handshake goes through, its first sealed frame does not.
        wrong = X.Client(srv.address, b"not the right key, 32 bytes long")
        wrong.send(_hello(), *[_rec(k) for k in range(50)])
        assert _closed(wrong.sock) and X.wait_for(lambda: srv.counters["auth_refused"] == 4, 5)
        assert srv.auth_refusals[3] == "bad tag"
        # 5. A flipped bit in an otherwise good client's record.
        flip = X.Client(srv.address, key)
        flip.send(_hello())
        bad = bytearray(flip.seal(_rec(9)))
        bad[20] ^= 1
        flip.sock.sendall(bytes(bad))
        assert _closed(flip.sock) and X.wait_for(lambda: srv.counters["auth_refused"] == 5, 5)
        # 6. A client that never sends AUTH is dropped after the handshake timeout.
        srv.auth_timeout_s = 0.3
        silent = X.connect(srv.address)
        assert _closed(silent) and X.wait_for(lambda: srv.counters["auth_refused"] == 6, 5)
        assert "no AUTH within" in srv.auth_refusals[5]
        # None of it reached the learner: the good connection's 3 records, and flip's HELLO only.
        evs = srv.drain()
        assert srv.counters["records"] == 3 and [e[0] for e in evs if e[0] != "closed"] == ["record", "hello"], evs
        assert srv.counters["protocol_errors"] == 0


def test_keyless_server_refuses_a_keyed_client(tmp_path, key_file):
    with X.Server("unix:" + str(tmp_path / "l.sock")) as srv:
        with pytest.raises(auth.AuthError, match="closed the connection during the AUTH handshake"):
            X.Client(srv.address, auth.load_key(str(key_file)))
        assert X.wait_for(lambda: srv.counters["auth_refused"] == 1, 5)
        assert "this learner has none" in srv.auth_refusals[0]
        assert [e[0] for e in srv.drain(timeout=0.1)] == ["closed"]


def test_flood_speaks_protocol_2(key_file):
    key = auth.load_key(str(key_file))
    with X.Server("tcp:127.0.0.1:0", key=key) as srv:
        res = X.flood(srv.address, flows=2, seconds=0.3, feature_set="pareto_v1", history=8, obs_dim=2,
                      batch=8, key=key)
        evs: list = []
        assert X.wait_for(lambda: evs.extend(srv.drain()) or sum(e[0] == "bye" for e in evs) == 2, 10)
        n_rec = sum(e[0] == "record" for e in evs)
        assert srv.counters["records"] == res["records_sent"] == n_rec + srv.counters["events_dropped"]
        assert sum(e[0] == "hello" for e in evs) == 2 and all(e[2]["proto"] == 2 for e in evs if e[0] == "hello")
        assert srv.counters["auth_refused"] == 0
