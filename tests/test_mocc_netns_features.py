"""``launch/mocc_netns_features.py``: the MOCC features recomputed from an emulated sender's log,
and the replay of a max-ACK-rate series into the simulator's sender, against hand-computed
values."""

from __future__ import annotations

import sys

import jax.numpy as jnp
import numpy as np
import pytest

import launch_script
from jaxcc import policyfile
from jaxcc.envs import mi as mi_lib
from jaxcc.senders import mocc_v1

SHIPPED = launch_script.REPO / "checkpoints" / "mocc" / "mocc.safetensors"


@pytest.fixture(scope="module")
def nf():
    sys.modules.setdefault("mocc_settle_sim", launch_script.load("mocc_settle_sim"))  # its sibling import
    return launch_script.load("mocc_netns_features")


def test_features_from_the_senders_log_by_hand(nf, tmp_path):
    """Three decisions: ACK rates 10, 12, 11 Mbit/s, send rates 11, 12, 13, a 30 000-byte
    window, mean RTT 22 ms over a 20-ms min RTT (timeout: the 200-ms floor)."""
    head = "t_s,cwnd_bytes,throughput_mbps,sent_mbps,rtt_mean_ms,min_rtt_ms\n"
    rows = ["0.02,30000,10,11,22,20", "0.04,30000,12,12,22,20", "0.06,30000,11,13,22,20"]
    (tmp_path / "sender.csv").write_text(head + "\n".join(rows) + "\n")
    got = nf.netns_log(str(tmp_path))
    np.testing.assert_allclose(got["max_ack"], [1.25e6, 1.5e6, 1.5e6])  # bytes/s: the running max
    want = [[0.11, 1.0, 1.1, 30000 / 25000],  # BDP estimate 1.25e6 B/s x 20 ms = 25 000 B
            [0.11, 1.0, 1.0, 1.0],
            [0.11, 11 / 12, 13 / 12, 1.0]]
    np.testing.assert_allclose(got["feats"], want, rtol=1e-9)


def test_features_with_the_max_over_an_ewma_by_hand(nf, tmp_path):
    """The same log read for a file with ``max_ack_ewma`` 0.5: the EWMA of 10, 12, 11 Mbit/s is
    10, 11, 11, so the max is 1.25e6, 1.375e6, 1.375e6 bytes/s; the numerators stay the rows'."""
    head = "t_s,cwnd_bytes,throughput_mbps,sent_mbps,rtt_mean_ms,min_rtt_ms\n"
    rows = ["0.02,30000,10,11,22,20", "0.04,30000,12,12,22,20", "0.06,30000,11,13,22,20"]
    (tmp_path / "sender.csv").write_text(head + "\n".join(rows) + "\n")
    got = nf.netns_log(str(tmp_path), max_ack_ewma=0.5)
    np.testing.assert_allclose(got["max_ack"], [1.25e6, 1.375e6, 1.375e6])
    np.testing.assert_allclose(got["feats"][:, 1], [1.0, 12 / 11, 1.0], rtol=1e-9)
    np.testing.assert_allclose(got["feats"][:, 3], [1.2, 30000 / 27500, 30000 / 27500], rtol=1e-9)


def test_replay_raises_the_max_ack_rate_to_the_series_and_the_features_follow(nf):
    """An interval delivering 1e6 B/s; the series says 5e6 after the first interval and 6e6
    after the second (and after its end): ACK rate over max is 0.2, then 1/6, then 1/6."""
    spec, tensors = policyfile.load(str(SHIPPED))
    s = nf.replay_sender(mocc_v1.sender(spec, tensors), np.array([5e6, 6e6]))
    rtt0 = jnp.float32(0.02)
    own = s.start(rtt0)
    m = mi_lib.mi_zero(1)
    m = m.replace(duration=jnp.full((1,), 0.02), acked=jnp.full((1,), 2e4), sent=jnp.full((1,), 2e4),
                  active=jnp.ones((1,)))
    run = mi_lib.running_zero(1)
    for want_max in (5e6, 6e6, 6e6):
        f, own = s.observe(own, m, run, rtt0)
        assert float(own.paper.max_ack_rate[0]) == pytest.approx(want_max)
        assert float(f[1]) == pytest.approx(1e6 / want_max, rel=1e-6)
    # Without the wrapper the same interval is its own max.
    f, own = mocc_v1.sender(spec, tensors).observe(s.start(rtt0), m, run, rtt0)
    assert float(f[1]) == pytest.approx(1.0)
