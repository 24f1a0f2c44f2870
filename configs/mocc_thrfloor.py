"""``mocc_mixed`` (the default before its scale-free action table) with a throughput floor in
every preference: a named variant, measured and not adopted (``checkpoints/mocc/README.md``,
"Five more trainers measured": median 13 of 20 preference-sweep bars over three seeds, the
delay-heavy end still at 0.225 utilization).

    python -m jaxcc.train --config=mocc_thrfloor

The vector reward's delay and loss objectives each carry ε·r_thr (``MoccParams.thr_floor``,
``jaxcc.envs.mocc.with_throughput_floor``), so under a preference ω the scalarised reward weighs
throughput by w_thr + ε (1 − w_thr) ≥ ε.  Without it, (0, 1, 0) is indifferent between every
window at or below the BDP and its policies settled at 0.13–0.23 utilisation on ``mocc/12mbps``.
ε = 0.1 (a tenth, set once, not tuned): at (0, 1, 0) the whole link over none is worth
0.1 × L(1) = 0.09 a step, the queueing-delay objective's price of 0.28 round trips of queue
(−log2(1.28) / 4): the floor breaks the tie below the BDP and trades at most about a quarter of a
round trip of queue for the whole link.
Everything else is ``mocc_mixed``'s; the file runs on the same sender.
"""

import os

from jaxcc.training.configs import load_config


def get_config():
    c = load_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mocc_mixed.py"))  # as measured
    c.env.params.thr_floor = 0.1
    c.wandb.group = "mocc_thrfloor"
    return c
