"""Loss-event bookkeeping shared by the window-based baselines (``cubic``, ``reno``).

One multiplicative decrease per window of losses (RFC 6582's "recover" point, Linux's
``high_seq``): losses of data sent before the decrease are ignored until everything that was in
flight at the loss notice is ACKed or known lost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxcc.units import MSS


# A loss event is one packet's worth of dropped bytes (see ``loss_event``).
LOSS_EVENT_BYTES = MSS
# Slack for comparing fluid byte counters (float32 rounding stays far below one byte).
LOSS_EPS_BYTES = 1.0


def loss_event(in_recovery: jax.Array, recovery_left: jax.Array, lost_acc: jax.Array, acked: jax.Array,
               lost: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One tick's recovery bookkeeping.

    Returns ``(rec_left, still_recovering, lost_acc, event)``: the bytes still outstanding from
    before the decrease, whether recovery goes on, the lost bytes counted towards the next event
    (outside recovery), and whether this tick starts a loss event.

    A loss event needs a whole packet: fluid drops are spread over all flows in proportion to
    their arrivals, and counting them up to one MSS before reacting gives the packet-level
    outcome in expectation (a flow that sent little during a short overflow may escape it).  On
    the tick that ends recovery only the losses past the recovery point are new (the tick's
    feedback is a FIFO mix, so they are the lost share of the bytes past it); counting the whole
    tick's losses made the tail of the old loss episode a second decrease.
    """
    rec_left = recovery_left - (acked + lost)
    still_recovering = in_recovery & (rec_left > LOSS_EPS_BYTES)
    past = jnp.where(in_recovery, jnp.clip(acked + lost - jnp.maximum(recovery_left, 0.0), 0.0, acked + lost), acked + lost)
    lost_new = lost * past / jnp.maximum(acked + lost, 1e-9)
    lost_acc = jnp.where(still_recovering, 0.0, lost_acc + lost_new)
    event = (lost_acc >= LOSS_EVENT_BYTES) & ~still_recovering
    lost_acc = jnp.where(event, 0.0, lost_acc)
    return rec_left, still_recovering, lost_acc, event
