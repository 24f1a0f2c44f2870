"""``aurora_v2``: the simulator sender of an exported Aurora policy whose features see a loss level.

Twin of ``AuroraFeatures`` with ``loss_level`` in ``datapath/src/mi_features.cc``.  It is
``aurora_v1`` (``jaxcc.senders.aurora_v1``: start, window, network and action block) with a
fourth feature, the MI's loss rate ``lost / (acked + lost)`` (``jaxcc.envs.aurora``, "Feature
sets"), pushed into the [10, 4] window.
"""

from __future__ import annotations

from jaxcc.senders.aurora_v1 import controller, sender

NAME = "aurora_v2"

__all__ = ["NAME", "controller", "sender"]
