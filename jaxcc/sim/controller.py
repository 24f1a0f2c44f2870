"""The protocol every in-simulator controller follows (classic baselines and learned policies).

A controller is three pure functions over one flow, vmapped over flows by the runner:

    cstate = init(cp)                       # when the flow starts (and while it is idle)
    action = act(cstate, cp)                # what to send during the next tick
    cstate = update(cstate, obs, cp)        # after the tick, with its feedback

``cp`` is the flow's ``ControllerParams``: a typed pytree with one field per controller family
(``fixed:MBPS``'s rate, BBR's seed, CUBIC's HyStart switch, the window-based baselines'
retransmission timeout, a learned sender's start rate,
preference, preference changes and target), so one compiled run serves every parameter value;
``refusal`` is the one rule for which controller takes a preference or a goal.  ``obs`` carries only what a real sender can measure — ACKed
and lost bytes and RTT samples that arrived during the tick, and its own sending — plus two
*privileged* fields (``capacity``, ``n_active``) that only the ``oracle`` controller may read.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc.sim.core import BIG, TickOut

# A preference is (throughput, delay, loss) weights; a flow's preference changes are at most
# MAX_PREFERENCE_CHANGES rows (at_s, w_thr, w_delay, w_loss); a DeepCC target is
# (throughput_mbps, delay_ms, loss).
PREFERENCE_DIM, MAX_PREFERENCE_CHANGES, TARGET_DIM = 3, 8, 3
TUNER_CODES = {"paper": 1.0, "p95": 2.0}  # SenderParams.target_on per tuner (jaxcc.senders.goal_tuning)
DEFAULT_TUNER = "p95"  # the tuner a target gets when it names none (jaxcc.senders.goal_tuning says why)


class FixedParams(NamedTuple):
    """``fixed:MBPS``'s parameters."""

    mbps: jax.Array  # the sending rate (Mbit/s)


class BBRParams(NamedTuple):
    """BBR's parameters (``jaxcc.baselines.bbr``)."""

    seed: jax.Array  # seeds the random choice of the first PROBE_BW phase (0 by default)


class CubicParams(NamedTuple):
    """CUBIC's parameters (``jaxcc.baselines.cubic``)."""

    hystart: jax.Array  # > 0.5: HyStart's delay detector ends slow start (off for the plain ``cubic`` name)


class TimeoutParams(NamedTuple):
    """The window-based baselines' retransmission timeout (``jaxcc.baselines.recovery.timeout``;
    ``cubic`` and ``reno``)."""

    rto_min: jax.Array  # s: the timer's floor (ns-3's MinRto 1 s, Linux's 0.2 s); 0: no timeouts (the default)


class SenderParams(NamedTuple):
    """A learned sender's parameters (``jaxcc.senders``; the runner sets them from a scenario flow)."""

    init_rate: jax.Array  # start rate, bytes/s (a flow's ``init_rate_mbps``; 0: the sender's own start)
    # A preference-conditioned policy's preference [PREFERENCE_DIM] (a flow's ``preference``, or a
    # goal-tuned policy's fixed ``goal``; all 0: the policy's default).
    preference: jax.Array
    # [MAX_PREFERENCE_CHANGES, 1 + PREFERENCE_DIM] rows (at_s, w_thr, w_delay, w_loss), at_s
    # increasing, seconds since the scenario began (a flow's ``preference_changes``); unused rows are
    # all 0 (a preference sums to 1, so a row of zero weights is no change).  A decision taken at a
    # tick ending at or after at_s uses that row.
    preference_changes: jax.Array
    # A goal-tuned policy's application target [TARGET_DIM] (a flow's ``target``; DeepCC §IV-C) and
    # target_on: 0 no target, else tune the goal online toward it with the tuner TUNER_CODES names
    # (``jaxcc.senders.goal_tuning``: 1 the paper's, 2 "p95").
    target: jax.Array
    target_on: jax.Array
    # The flow's own decision clock: its MI is ``max(1, mi_scale)`` times the policy's MI on the
    # link's smallest RTT (the runner sets round(flow RTT / smallest RTT), as the environments'
    # per-flow clocks, ``jaxcc.envs.base``); 0 (the default) or 1: the smallest RTT's MI.
    mi_scale: jax.Array
    # Behaviour noise of a continuous-action sender (online fine-tuning's ``--explore``; Algorithm
    # 3's "play an episode" with TD3's exploration): [σ, seed], σ as a fraction of the action's
    # half-range (as ``td3.expl_noise`` offline) and the seed of the flow's noise stream
    # (``jaxcc.senders.common.explore_noise``); σ 0 (the default): none.
    explore: jax.Array


class ControllerParams(NamedTuple):
    """One flow's controller parameters, a field per controller family; each controller reads its
    own (BBR ``.bbr``, a learned sender ``.sender``) and the others stay 0.  Leaves carry the
    leading batch/flow axes of the run, so one compiled run serves every parameter value."""

    fixed: FixedParams
    bbr: BBRParams
    cubic: CubicParams
    sender: SenderParams
    timeout: TimeoutParams

    @classmethod
    def zeros(cls, shape: tuple[int, ...] = ()) -> "ControllerParams":
        """All-0 parameters (every controller's defaults) as float32 numpy arrays of leading ``shape``."""
        z = lambda *tail: np.zeros(tuple(shape) + tail, np.float32)  # noqa: E731
        return cls(fixed=FixedParams(mbps=z()), bbr=BBRParams(seed=z()), cubic=CubicParams(hystart=z()),
                   sender=SenderParams(init_rate=z(), preference=z(PREFERENCE_DIM),
                                       preference_changes=z(MAX_PREFERENCE_CHANGES, 1 + PREFERENCE_DIM),
                                       target=z(TARGET_DIM), target_on=z(), mi_scale=z(), explore=z(2)),
                   timeout=TimeoutParams(rto_min=z()))


def set_flow(rows: ControllerParams, j: int, flow: ControllerParams) -> None:
    """Writes one flow's parameters ``flow`` into row ``j`` of the numpy parameters ``rows``."""
    for r, x in zip(jax.tree.leaves(rows), jax.tree.leaves(flow)):
        r[j] = x


def stack(rows: "list[ControllerParams]") -> ControllerParams:
    """Stacks numpy parameters along a new leading axis."""
    return jax.tree.map(lambda *xs: np.stack(xs), *rows)


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
    takes_preference: bool = False  # reads SenderParams.preference(_changes) (a preference-conditioned policy)
    takes_target: bool = False  # reads SenderParams.target and tunes its goal (a goal-tuned policy: deepcc_v1)


PREFERENCE_FIELDS = ("preference", "preference_changes")
GOAL_FIELDS = ("goal", "target")


def refusal(ctrl: Controller | None, name: str, field: str) -> str | None:
    """Why the controller ``ctrl`` (named ``name`` in the scenario; None: one that is not a
    learned policy, which takes neither) cannot take a flow's ``field``
    (``preference``, ``preference_changes``, ``goal`` or ``target``), or None when it can: the
    one simulator rule, read by the runner and ``jaxcc.senders.preference_refusals``.  Only a
    preference-conditioned policy (``takes_preference``) takes a preference; only a goal-tuned
    policy (``takes_target``) takes a goal or a target."""
    if field in PREFERENCE_FIELDS and (ctrl is None or not ctrl.takes_preference):
        return (f"only a preference-conditioned policy (policy:FILE of a MOCC policy, goal_dim 3) takes a "
                f"preference; {name!r} does not")
    if field in GOAL_FIELDS and (ctrl is None or not ctrl.takes_target):
        return (f"only a goal-tuned policy (policy:FILE of a DeepCC policy, features deepcc_v1, goal_dim 3) "
                f"takes a goal or target; {name!r} does not")
    return None


def preference_at(sp: SenderParams, now: jax.Array, default: jax.Array) -> jax.Array:
    """The ``[PREFERENCE_DIM]`` preference in force at time ``now`` (s since the scenario began):
    the last row of the change table with at_s <= now, else the flow's preference, else
    ``default`` (a flow whose preference is all 0 has none).  jnp, jittable."""
    base = jnp.asarray(sp.preference)
    base = jnp.where(jnp.sum(base) > 0, base, jnp.asarray(default, base.dtype))
    table = jnp.asarray(sp.preference_changes)
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
