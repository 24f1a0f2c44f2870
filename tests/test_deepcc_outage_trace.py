"""launch/deepcc_outage_trace.py: its refusals, and one run of the shipped DeepCC file through the
cellular link's outage, checked against the link and the safety net's rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import launch_script

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def mod():
    return launch_script.load("deepcc_outage_trace")


@pytest.mark.parametrize("args, msg", [(["--from=a"], "numbers expected"), (["--from=5", "--to=4"], "from < to"),
                                       (["--every=0"], "every >= 1"), (["--bogus=1"], "unknown flag"),
                                       ([], "no such policy file")])
def test_bad_input_gets_one_line(mod, capsys, args, msg):
    assert mod.main(["deepcc_outage_trace.py", "x.safetensors", *args]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_the_shipped_file_through_the_outage(mod):
    """The queue never exceeds the 210 KB buffer; in the dark (21-30 s: the trace delivers about a
    packet a second) BBR paces and the policy takes no decision that sets its rate; the largest
    delivery rate never falls."""
    tr = mod.trace(str(REPO / "checkpoints" / "deepcc" / "deepcc.safetensors"))
    assert tr["queue_bytes"].max() <= 210_000 + 1e-3
    dark = (tr["t"] >= 22.0) & (tr["t"] < 29.0)
    assert tr["fallback"][dark].all()
    assert np.ptp(tr["rate_mbps"][dark]) == 0.0  # the policy's own rate, held while BBR paces
    assert (np.diff(tr["thr_max_mbps"]) >= -1e-6).all()
