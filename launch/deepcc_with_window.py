"""A copy of a DeepCC policy file whose features state the ACK-clocked window (``cwnd_rtts``).

    PYTHONPATH=. python3 launch/deepcc_with_window.py FILE CWND_RTTS OUT

The network, goal and action are the file's, unchanged; the copy's senders (the simulator's
``deepcc_v1`` and ``jaxcc-sender``) also set cwnd = CWND_RTTS x rate x min RTT from the second
decision on (``jaxcc.envs.deepcc.ack_clock_cwnd``), the window the paper's sender ACK-clocks.
It measures what the window does to a policy that was not trained with one
(``checkpoints/deepcc/README.md``, "The paper's ACK-clocked window"); CWND_RTTS 0 removes it.
"""

from __future__ import annotations

import os
import sys

from jaxcc import policyfile
from jaxcc.envs import deepcc


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, k, out = argv[1], argv[2], argv[3]
    try:
        k = float(k)
        spec, tensors = policyfile.load(src)
        if spec["features"].get("name") != "deepcc_v1":
            raise ValueError(f"{src}: features {spec['features'].get('name')!r}, not deepcc_v1")
        feats = dict(spec["features"], cwnd_rtts=k)
        deepcc.params_from_features(deepcc.DeepccParams(), feats)  # the range check, one line
    except (ValueError, OSError) as e:
        print(f"deepcc_with_window: {e}", file=sys.stderr)
        return 2
    if k == 0:
        feats.pop("cwnd_rtts")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    policyfile.save(out, dict(spec, features=feats), tensors)
    print(f"wrote {out} (cwnd_rtts {k:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
