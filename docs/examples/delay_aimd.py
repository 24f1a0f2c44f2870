"""Delay-based AIMD: a window controller written against jaxcc's controller protocol.

Slow start (the window grows by what is ACKed) until the first congestion signal, then one
packet more per window of ACKed bytes (per RTT); on a congestion signal -- an RTT sample more
than THRESHOLD_S above the smallest seen, or a loss -- the window drops to BETA of itself, at
most once per RTT.  Unpaced: the window alone limits the sending.  Run it beside BBR:

    python3 -m jaxcc.evaluate --controller=docs/examples/delay_aimd.py:DELAY_AIMD,bbr --suite=pareto-links --out=results/delay_aimd
"""
from typing import NamedTuple

import jax.numpy as jnp

from jaxcc.sim.controller import Action, Controller
from jaxcc.sim.core import BIG
from jaxcc.units import MSS

INIT_CWND, MIN_CWND = 10 * MSS, 2 * MSS  # bytes
THRESHOLD_S = 0.010  # queueing delay that counts as congestion (s)
BETA = 0.7  # multiplicative decrease


class State(NamedTuple):
    cwnd: jnp.ndarray  # bytes
    min_rtt: jnp.ndarray  # smallest RTT sample so far (s; BIG before the first)
    hold_until: jnp.ndarray  # no second decrease before this time (s)
    slow_start: jnp.ndarray  # bool: no congestion signal yet


def init(cp):
    return State(jnp.float32(INIT_CWND), jnp.float32(BIG), jnp.float32(0.0), jnp.bool_(True))


def act(s, cp):
    return Action(rate=jnp.full_like(s.cwnd, BIG), cwnd=s.cwnd)


def update(s, obs, cp):
    sampled = obs.acked > 0  # obs.rtt_mean is the tick's mean RTT sample, 0 without ACKs
    min_rtt = jnp.where(sampled, jnp.minimum(s.min_rtt, obs.rtt_mean), s.min_rtt)
    signal = (sampled & (obs.rtt_mean > min_rtt + THRESHOLD_S)) | (obs.lost > 0)
    decrease = signal & (obs.now >= s.hold_until)
    grown = jnp.where(s.slow_start, s.cwnd + obs.acked, s.cwnd + MSS * obs.acked / s.cwnd)
    cwnd = jnp.where(decrease, jnp.maximum(BETA * s.cwnd, MIN_CWND), grown)
    rtt = jnp.where(sampled, obs.rtt_mean, jnp.minimum(min_rtt, 1.0))  # this tick's RTT, else the smallest
    hold_until = jnp.where(decrease, obs.now + rtt, s.hold_until)
    return State(cwnd, min_rtt, hold_until, s.slow_start & ~signal)


DELAY_AIMD = Controller("delay_aimd", init, act, update)
