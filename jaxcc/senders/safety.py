"""The deployed sender's safety net: a guard against raising the rate in the dark, and a runtime
monitor that hands control to BBR while a policy leaves a safe envelope.

Twin of ``datapath/src/safety.{h,cc}`` (``NoFeedback``, ``Guard``, ``SafetyMonitor``); the
parity vector ``tests/vectors/safety.json`` holds the two to the same numbers.  Both run once per
monitor interval (MI), when it closes, on the MI's own statistics:

**Guard — no increase without feedback.**  An MI that brought back neither an ACKed byte nor an
RTT sample (``no_feedback``) says nothing about the path, so the decision taken on it may lower
the rate and window but not raise them: ``rate = min(policy's rate, rate in force)``, the same
for the window.  A learned policy's features cannot tell a dark link from a quiet one (Pareto's
§III features are all derivatives: a steady 100 % loss reads as a steady clean link), and a
policy that keeps raising its rate while no feedback arrives meets the link's return far above
its capacity.  An MI in which the window kept the sender silent and nothing came back is no
feedback either.

**Monitor — fall back to BBR and return.**  An MI is *bad* when no ACK came back or at least
``LOSS_ENTER`` of the bytes it learned about were lost; *good* when ACKs came back and less than
``LOSS_EXIT`` was lost.  After ``enter_mis`` bad MIs in a row, ``MIN_ENTER_S`` long in all, the
in-sender BBR (fed by every ACK all along) paces the flow; after ``exit_mis`` good MIs in a row
the policy decides again, from the rate BBR left in force.  While BBR paces, the policy's
features and history stay current (every MI is still observed) but it does not decide.

**From the first answer on.**  Both engage once the path has answered: from the first MI with
an RTT sample on (``answered``).  Before it every sender starts on its own guess (TCP's
initial window, a policy's trained start), and a first round trip without ACKs is the path's
delay, not a dark link: guarding it changed the start of every flow and, through it, the
policies' numbers on links without outages by up to 42 % (a 120 ms flow on a 30 ms link spends
eight of Aurora's MIs waiting for its first ACK).  A path dark from the first packet is
therefore left to the policy.

The thresholds:

* ``LOSS_ENTER = 0.5``: half of what the flow learned about was lost.  A paced flow loses the
  fraction 1 − C/x sending at x over capacity C, so 0.5 is twice the capacity; BBR's 1.25 ×
  probe of a full link loses 0.2 of an MI, the largest single step of a shipped policy
  (Pareto-Fair's × 1.5) a third, and the named scenarios' random loss is at most 8 %.
* ``LOSS_EXIT = 0.2``: less than a 1.25 × probe of a full link loses, so an MI paced by BBR
  over a link that carries traffic again counts as good, one still draining a meltdown not.
* ``ENTER_RTTS = 3`` and ``MIN_ENTER_S = 0.2``: how long the envelope may be left before BBR
  paces: three round trips, and never less than Linux's minimum RTO (``TCP_RTO_MIN``, 200 ms:
  TCP declares no timeout sooner, and a sender's ACK processing may stall for milliseconds on a
  busy host, which on a sub-millisecond path is many MIs); three round trips is also as long
  as a learned policy took over real packets to turn its action positive in a dark link.  The
  round trips are counted in whole MIs, ``enter_mis = ceil(ENTER_RTTS / mi_rtts)`` (at least
  1), so both twins count the same integers whatever their clocks' rounding; the floor on the
  streak's summed MI durations.
* ``EXIT_RTTS = 3``: three round trips of ACKs with little loss — the link carries the flow
  again — before the policy resumes; ``exit_mis`` is counted the same way.

Canopy (EuroSys'26: a certified envelope around a learned controller, a classic one outside it)
and Orca (a learned agent on top of CUBIC, which always keeps control of the window) are the
prior art; this monitor is the simplest envelope of the kind, on the two failures measured here:
a policy that keeps sending into a dark link, and one that meets sustained heavy loss.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

LOSS_ENTER = 0.5
LOSS_EXIT = 0.2
ENTER_RTTS = 3.0
MIN_ENTER_S = 0.2
# Summed MI lengths meet MIN_ENTER_S to a microsecond: five 40 ms MIs sum to 0.19999997 in
# float32 (the simulator) and to 0.2 in double (the datapath).
TIME_SLACK_S = 1e-6
EXIT_RTTS = 3.0


def mis_for(rtts: float, mi_rtts: float) -> int:
    """Whole MIs of ``mi_rtts`` min RTTs that cover ``rtts`` min RTTs (at least 1)."""
    return max(1, math.ceil(rtts / mi_rtts - 1e-9))


class MonitorState(NamedTuple):
    """One flow's monitor (scalars)."""

    fallback: jax.Array  # bool: BBR paces the flow
    bad_run: jax.Array  # int32: bad MIs in a row
    bad_s: jax.Array  # their summed durations (s)
    good_run: jax.Array  # int32: good MIs in a row
    entries: jax.Array  # int32: times BBR took over
    fallback_mis: jax.Array  # int32: MIs closed while BBR paced


def monitor_zero(dtype=jnp.float32) -> MonitorState:
    z = jnp.zeros((), jnp.int32)
    return MonitorState(fallback=jnp.zeros((), bool), bad_run=z, bad_s=jnp.zeros((), dtype), good_run=z,
                        entries=z, fallback_mis=z)


def no_feedback(acked, n_samples) -> jax.Array:
    """The MI brought back no ACKed byte and no RTT sample."""
    return (acked <= 0) & (n_samples <= 0)


def guard(rate, cwnd, rate_in, cwnd_in, dark) -> tuple[jax.Array, jax.Array]:
    """The decision's rate and window, no higher than those in force when ``dark`` (an answered
    flow's MI without feedback: ``no_feedback(...) & answered``)."""
    return jnp.where(dark, jnp.minimum(rate, rate_in), rate), jnp.where(dark, jnp.minimum(cwnd, cwnd_in), cwnd)


def monitor_step(s: MonitorState, acked, lost, n_samples, duration, answered, enter_mis: int,
                 exit_mis: int) -> MonitorState:
    """The monitor after one closed MI of ``duration`` s with ``acked``/``lost`` bytes and
    ``n_samples`` RTT samples; ``answered``: the flow has had an RTT sample (this MI's
    included).  Before it the monitor stays as it is.

    ``fallback_mis`` counts the MIs that closed while BBR paced (the state before this MI's
    switch); the switch applies from the next MI on.
    """
    known = acked + lost
    loss = jnp.where(known > 0, lost / jnp.maximum(known, 1e-30), 0.0)
    dark = no_feedback(acked, n_samples)
    bad = dark | (loss >= LOSS_ENTER)
    good = (~dark) & (loss < LOSS_EXIT)
    bad_run = jnp.where(bad, s.bad_run + 1, 0)
    bad_s = jnp.where(bad, s.bad_s + duration, 0.0)
    good_run = jnp.where(good, s.good_run + 1, 0)
    enter = (~s.fallback) & (bad_run >= enter_mis) & (bad_s >= MIN_ENTER_S - TIME_SLACK_S)
    leave = s.fallback & (good_run >= exit_mis)
    new = MonitorState(fallback=(s.fallback | enter) & ~leave, bad_run=bad_run.astype(jnp.int32),
                       bad_s=bad_s.astype(s.bad_s.dtype), good_run=good_run.astype(jnp.int32),
                       entries=s.entries + enter.astype(jnp.int32),
                       fallback_mis=s.fallback_mis + s.fallback.astype(jnp.int32))
    return jax.tree.map(lambda a, b: jnp.where(answered, a, b), new, s)
