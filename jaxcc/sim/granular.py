"""Packet-granular loss for the fluid model: which flows a tick's drops and random losses hit.

The bare model (``jaxcc.sim.core``) splits a tick's drop-tail overflow between the flows in
proportion to their arrivals and applies random loss as its mean to every byte.  Both are right
on average, and both are wrong in one way that matters to loss-based senders: every flow sends
into an overflowing tick loses a sliver, so all of them reach their loss-event threshold
(``jaxcc.baselines.recovery``) at about the same time and back off together, and under random
loss a sender never sees a discrete loss event, only a steady trickle.  A real drop-tail FIFO
drops whole packets: when a tick overflows by one packet, one flow loses it and the others
do not, which desynchronises their windows and decides how they share the link.

A link may carry a ``Granular`` (``LinkParams.granular``; ``None`` means the bare model, whose
code and arithmetic then run unchanged: bit-identical results, no extra cost).  Its three effects
are switched separately (1.0 on, 0.0 off), so each can be measured on and off:

* **Drops** (``drops``).  A tick whose flows overflow the buffer by ``O`` bytes drops
  ``D = O / MSS`` packets.  The first dropped packet goes to one flow drawn with probability
  ``a_i / A`` (its share of the tick's arrivals ``A``); each other flow is hit by one of the
  remaining ``D − 1`` packets with probability ``1 − (1 − a_i / A)^(D − 1)``, the chance that
  ``D − 1`` packets drawn from the tick's arrivals include one of its own.  The flows hit share
  the ``O`` bytes in proportion to their arrivals, each at most all of them; what they cannot
  take goes to the others in proportion to theirs.  So the link's drops are exactly the bare
  model's (the queue, its delay and the link's loss do not change), and only their split
  between flows does: with one packet of overflow one flow takes it, with many every flow is
  hit and the split is the bare model's again.  Unresponsive cross traffic (``jaxcc.sim.realism``)
  keeps its proportional share.
* **Random-loss events** (``loss``).  A flow that sends ``n = sent / MSS`` packets in a tick
  under random loss ``p`` loses at least one of them with probability ``h = 1 − (1 − p)^max(n, 1)``;
  when it does it loses ``p · sent / h`` bytes (about one packet when ``n · p`` is small), and
  otherwise nothing.  The mean loss is exactly the bare model's ``p · sent``; what changes is that
  a loss-based sender now sees discrete events, as it does on a real lossy path.

* **Drops beyond the ACK clock first** (``clocked``; deterministic, no draws).  A flow that sends
  only what its ACKs (and loss notices) of the tick freed puts its packets into the queue as
  the packets ahead of them leave it; what it sends beyond that (slow start, a window's growth,
  a new flow's initial window, a rate raised above what comes back) arrives on top of a queue
  that others keep full.  In a drop-tail FIFO those are the packets that find it full: bursts
  lose more than an ACK-clocked stream (the traffic phase effects of Floyd and Jacobson, 1992).
  So the flows' overflow ``O`` is taken first from each flow's *excess*
  ``e_i = a_i · max(sent_i − acked_i − lost_i, 0) / sent_i`` (its arrivals ``a_i`` beyond the ACK
  clock: random loss is taken to hit a flow's excess and its clocked bytes in proportion),
  split in proportion to the excesses; only what the excesses cannot cover falls on the
  clocked arrivals, in proportion to them.  The link's drops are the bare model's, as with
  ``drops``; the two split the same overflow, so a link takes one of them, not both.

All randomness comes from ``Granular.key`` folded with the tick index: one draw of ``2F + 1``
uniforms per tick, deterministic under the seed (the same counter-based scheme as
``jaxcc.sim.realism``).  Conservation is unaffected: every byte sent is still admitted or lost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcc.units import MSS

EFFECTS = ("drops", "loss", "clocked")  # the names ``params`` takes


@struct.dataclass
class Granular:
    """Which packet-granular effects a link has (all leaves are arrays; vmap-able).

    Attributes:
      key: a ``jax.random`` key (uint32 [2]); the tick's draws fold the tick index into it.
      drops: 1.0 to split drop-tail drops by whole packets, 0.0 for the bare model's split.
      loss: 1.0 for discrete random-loss events, 0.0 for the bare model's mean loss.
      clocked: 1.0 to take the overflow from the bytes sent beyond the ACK clock first, 0.0 for
        the bare model's split.
    """

    key: jax.Array
    drops: jax.Array
    loss: jax.Array
    clocked: jax.Array


def check(effects) -> tuple[str, ...]:
    """``effects`` as a tuple, each one of ``EFFECTS`` (else a one-line ``ValueError``)."""
    effects = tuple(effects)
    bad = [e for e in effects if e not in EFFECTS]
    if bad:
        raise ValueError(f"unknown effect(s) {','.join(bad)}; allowed {','.join(EFFECTS)}")
    if "drops" in effects and "clocked" in effects:
        raise ValueError("drops and clocked both split the same overflow between the flows; name one of them")
    return effects


def params(effects, *, seed: int = 0) -> Granular:
    """A link's ``Granular`` as NumPy leaves, with the named ``effects`` (a subset of ``EFFECTS``) on."""
    effects = check(effects)
    return Granular(key=np.asarray(jax.random.key_data(jax.random.PRNGKey(seed))),
                    drops=np.float32("drops" in effects), loss=np.float32("loss" in effects),
                    clocked=np.float32("clocked" in effects))


def batch(effects, seeds) -> Granular:
    """One ``params(effects, seed=s)`` per seed, stacked on a leading axis (a batch of links)."""
    links = [params(effects, seed=int(s)) for s in seeds]
    return jax.tree.map(lambda *xs: np.stack(xs), *links)


def tick_uniforms(g: Granular, tick: jax.Array, num_flows: int, dtype) -> jax.Array:
    """[2F + 1] uniforms in [0, 1) for one tick: F for the random-loss events, then one for the
    first dropped packet's flow and F for the others (deterministic in (key, tick))."""
    return jax.random.uniform(jax.random.fold_in(g.key, tick), (2 * num_flows + 1,), dtype)


def random_loss(g: Granular, u: jax.Array, sent: jax.Array, loss: jax.Array) -> jax.Array:
    """[F] bytes of each flow's ``sent`` that survive random loss ``loss`` (``u``: [F] uniforms)."""
    mean_lost = sent * loss
    n = jnp.maximum(sent / MSS, 1.0)
    h = -jnp.expm1(n * jnp.log1p(-loss))  # P(at least one of n packets lost)
    event_lost = jnp.where(u < h, jnp.minimum(mean_lost / jnp.maximum(h, 1e-30), sent), 0.0)
    return sent - jnp.where(g.loss > 0, event_lost, mean_lost)


def drop_tail(g: Granular, u_first: jax.Array, u: jax.Array, arriving: jax.Array, overflow: jax.Array) -> jax.Array:
    """[F] bytes of each flow's ``arriving`` admitted when the flows' overflow is ``overflow``
    bytes (at most their total arrivals); ``u_first``: one uniform, ``u``: [F] uniforms."""
    total = jnp.sum(arriving)
    share = arriving / jnp.maximum(total, 1e-30)
    proportional = arriving - overflow * share
    # The first dropped packet's flow: the first whose cumulative share reaches u_first.
    cum = jnp.cumsum(share)
    first = jnp.minimum(jnp.sum(cum <= u_first * cum[-1]), arriving.shape[0] - 1)
    others = jnp.maximum(overflow / MSS - 1.0, 0.0)
    p_hit = -jnp.expm1(others * jnp.log1p(-jnp.minimum(share, 1.0 - 1e-7)))
    hit = ((u < p_hit) | (jnp.arange(arriving.shape[0]) == first)) & (arriving > 0)
    hit_total = jnp.sum(jnp.where(hit, arriving, 0.0))
    drop_hit = jnp.where(hit, arriving * jnp.minimum(overflow / jnp.maximum(hit_total, 1e-30), 1.0), 0.0)
    rest = jnp.maximum(overflow - jnp.sum(drop_hit), 0.0)
    miss_total = total - hit_total
    drop_miss = jnp.where(hit, 0.0, jnp.minimum(arriving * rest / jnp.maximum(miss_total, 1e-30), arriving))
    granular = arriving - drop_hit - drop_miss
    return jnp.where((g.drops > 0) & (overflow > 0), granular, proportional)


def clocked_split(g: Granular, arriving: jax.Array, excess: jax.Array, overflow: jax.Array) -> jax.Array:
    """[F] bytes of each flow's ``arriving`` admitted when the flows' overflow is ``overflow``
    bytes (at most their total arrivals), taken first from ``excess`` ([F], each at most the
    flow's arrivals: what it sent beyond its ACK clock), then from the rest, each in proportion."""
    proportional = arriving - overflow * arriving / jnp.maximum(jnp.sum(arriving), 1e-30)
    e_total = jnp.sum(excess)
    from_excess = jnp.minimum(overflow, e_total)
    clocked = arriving - excess
    rest = overflow - from_excess
    drop = (excess * (from_excess / jnp.maximum(e_total, 1e-30))
            + clocked * jnp.minimum(rest / jnp.maximum(jnp.sum(clocked), 1e-30), 1.0))
    split = jnp.clip(arriving - drop, 0.0, arriving)
    return jnp.where((g.clocked > 0) & (overflow > 0), split, proportional)


def split_overflow(g: Granular, u_first: jax.Array, u: jax.Array, arriving: jax.Array, overflow: jax.Array,
                   sent: jax.Array, freed: jax.Array) -> jax.Array:
    """[F] bytes of each flow's ``arriving`` admitted under the link's split of the flows'
    ``overflow``: ``clocked_split`` when ``clocked`` is on, else ``drop_tail`` (whole packets
    with ``drops``, the bare model's proportional split without).  ``sent``: [F] the tick's
    sending; ``freed``: [F] the bytes its ACKs and loss notices of the tick freed; a flow's
    excess is its arrivals' share beyond them."""
    excess = arriving * jnp.clip(1.0 - freed / jnp.maximum(sent, 1e-30), 0.0, 1.0)
    return jnp.where(g.clocked > 0, clocked_split(g, arriving, excess, overflow),
                     drop_tail(g, u_first, u, arriving, overflow))
