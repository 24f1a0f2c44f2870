"""The protocol every in-simulator controller follows (classic baselines and learned policies).

A controller is three pure functions over one flow, vmapped over flows by the runner:

    cstate = init(cparam)                       # when the flow starts (and while it is idle)
    action = act(cstate, cparam)                # what to send during the next tick
    cstate = update(cstate, obs, cparam)        # after the tick, with its feedback

``cparam`` is a small per-flow float vector (e.g. the rate of ``fixed:MBPS``; a learned
sender's start rate in slot ``INIT_RATE``), so one compiled run serves every parameter value.  ``obs`` carries only what a real sender can measure — ACKed
and lost bytes and RTT samples that arrived during the tick, and its own sending — plus two
*privileged* fields (``capacity``, ``n_active``) that only the ``oracle`` controller may read.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxcc.sim.core import BIG, TickOut

# cparam[INIT_RATE]: a learned sender's start rate in bytes/s (a scenario flow's init_rate_mbps,
# set by the runner; 0: the sender's own start).  Only jaxcc.senders reads it; the baselines use
# cparam[0] and never this slot.
INIT_RATE = 3
# cparam[PREFERENCE:PREFERENCE + PREFERENCE_DIM]: a preference-conditioned policy's preference
# (throughput, delay, loss) (a scenario flow's ``preference``; all 0: the policy's default).
PREFERENCE, PREFERENCE_DIM = 4, 3
# cparam[PREFERENCE_CHANGES:TARGET]: MAX_PREFERENCE_CHANGES rows (at_s, w_thr, w_delay, w_loss), at_s
# increasing, seconds since the scenario began (a flow's ``preference_changes``); unused rows are
# all 0 (a preference sums to 1, so a row of zero weights is no change).  A decision taken at a
# tick ending at or after at_s uses that row.
PREFERENCE_CHANGES, MAX_PREFERENCE_CHANGES = PREFERENCE + PREFERENCE_DIM, 8
# cparam[TARGET:TARGET + TARGET_DIM]: a goal-tuned policy's application target (throughput_mbps,
# delay_ms, loss) (a scenario flow's ``target``; DeepCC §IV-C); cparam[TARGET_ON] 1: tune the goal
# online toward it (``jaxcc.senders.goal_tuning``), 0: no target (the fixed goal of PREFERENCE).
TARGET, TARGET_DIM = PREFERENCE_CHANGES + MAX_PREFERENCE_CHANGES * (1 + PREFERENCE_DIM), 3
TARGET_ON = TARGET + TARGET_DIM
CPARAM_DIM = TARGET_ON + 1  # per-flow parameter vector


class TickObs(NamedTuple):
    """What one flow's sender sees at the end of a tick (all scalars for one flow)."""

    now: jax.Array  # s since the scenario began (end of the tick)
    dt: jax.Array  # tick length (s)
    active: jax.Array  # bool: the flow was sending during this tick
    acked: jax.Array  # bytes newly ACKed during the tick
    lost: jax.Array  # bytes newly known to be lost during the tick
    rtt_wsum: jax.Array  # Σ rtt·bytes over the newly ACKed bytes (s·bytes)
    sent: jax.Array  # bytes sent during the tick
    inflight: jax.Array  # bytes in flight after the tick
    capacity: jax.Array  # privileged: link capacity during the tick (bytes/s)
    n_active: jax.Array  # privileged: number of active flows on the link

    @property
    def rtt_mean(self) -> jax.Array:
        """Mean RTT of the bytes ACKed during the tick (0 when nothing was ACKed)."""
        return jnp.where(self.acked > 0, self.rtt_wsum / jnp.maximum(self.acked, 1e-30), 0.0)


class Action(NamedTuple):
    """A sender's controls for one tick: pacing rate (bytes/s) and window (bytes)."""

    rate: jax.Array
    cwnd: jax.Array


class Controller(NamedTuple):
    """A named, pure controller (see the module docstring)."""

    name: str
    init: Callable[[jax.Array], Any]
    act: Callable[[Any, jax.Array], Action]
    update: Callable[[Any, TickObs, jax.Array], Any]
    takes_preference: bool = False  # reads cparam's PREFERENCE slots (a preference-conditioned policy)
    takes_target: bool = False  # reads cparam's TARGET slots and tunes its goal (a goal-tuned policy: deepcc_v1)


def preference_at(cparam: jax.Array, now: jax.Array, default: jax.Array) -> jax.Array:
    """The ``[PREFERENCE_DIM]`` preference in force at time ``now`` (s since the scenario began):
    the last row of the change table with at_s <= now, else the flow's preference, else
    ``default`` (a cparam whose preference slots are all 0 has none).  jnp, jittable."""
    base = cparam[PREFERENCE:PREFERENCE + PREFERENCE_DIM]
    base = jnp.where(jnp.sum(base) > 0, base, jnp.asarray(default, base.dtype))
    table = cparam[PREFERENCE_CHANGES:TARGET].reshape((MAX_PREFERENCE_CHANGES, 1 + PREFERENCE_DIM))
    used = jnp.sum(table[:, 1:], axis=1) > 0  # unused rows are all 0
    passed = jnp.sum(((now >= table[:, 0]) & used).astype(jnp.int32))  # at_s increase: the rows passed
    row = table[jnp.maximum(passed - 1, 0), 1:]
    return jnp.where(passed > 0, row, base)


def tick_obs(out: TickOut, dt: jax.Array) -> TickObs:
    """Per-flow observations ([F] leaves) from one simulator tick."""
    f = out.sent.shape[-1]
    bcast = lambda x: jnp.broadcast_to(x, (f,))  # noqa: E731
    n_active = jnp.sum(out.active.astype(jnp.int32))
    return TickObs(
        now=bcast(out.time),
        dt=bcast(dt),
        active=out.active,
        acked=out.acked,
        lost=out.lost,
        rtt_wsum=out.rtt_wsum,
        sent=out.sent,
        inflight=out.inflight,
        capacity=bcast(out.capacity),
        n_active=bcast(n_active),
    )


def rate_only(rate: jax.Array) -> Action:
    """A purely rate-based action (no window limit)."""
    return Action(rate=rate, cwnd=jnp.full_like(rate, BIG))
