"""Non-congestive realism for the fluid model: jitter, ACK aggregation, RTT noise, cross traffic.

The bare model (``jaxcc.sim.core``) is a clean path: every delay a sender sees is propagation
plus queueing, every RTT sample is exact and the only traffic is the flows'.  Trained policies
meet none of that on a real path, so a link may carry a ``Realism`` (``LinkParams.realism``;
``None`` means none of it, and the model then runs exactly the code and arithmetic it runs
without this module: bit-identical results, no extra cost).  Each effect is off at 0.  A
``Realism`` whose effects are all 0 does the same arithmetic as ``None`` but in a differently
fused program, so its results agree to float rounding, not bit for bit (XLA may contract
multiply-adds differently, and a closed-loop sender can amplify an ulp); so the scenario
parser and the environments give a link no ``Realism`` at all when every effect is off, and
the runner batches links with and without realism apart.

All randomness comes from ``Realism.key`` folded with the tick index: one draw of ``1 + F``
uniforms per tick (``jax.random.uniform(fold_in(key, tick), (1 + F,))``; element 0 for the
jitter, the others for each flow's RTT noise): deterministic under the seed, no generator
state, one generator call per tick.

* **Jitter** (``jitter_s``: non-congestive one-way delay variation, e.g. a Wi-Fi MAC's retries
  or a cellular scheduler).  An element after the bottleneck holds each tick's bytes for an
  extra ``j ~ U[0, jitter_s]``, drawn once per tick (the model's time resolution) and shared by
  all flows of the link.  The element is FIFO: bytes never leave it before the previous tick's
  bytes (``extra = max(j, last − dep)``, ``dep`` the time the bytes leave the queue), so there
  is no reordering, as on the links it stands for.  While ``jitter_s`` is below the gap between
  consecutive departures (a tick) the FIFO rule never binds and the extra delay is exactly
  ``U[0, jitter_s]`` (mean ``jitter_s/2``); above it consecutive draws interact and the mean
  grows (a FIFO element's delay is the running maximum of its recent draws).  The extra delay
  is added to the one-way delay (``TickOut.owd``, delay metrics), the RTT sample and the
  feedback's arrival time; it is not queueing delay (``TickOut.qdelay`` leaves it out).
  Uniform was chosen over a heavy-tailed law because it is bounded (the feedback ring is sized
  from ``jitter_s``, see ``links.ring_len_for``) and has one parameter with a plain meaning:
  the largest extra delay.  Conservation is unaffected: the jitter only moves the tick in
  which feedback arrives.
* **ACK aggregation** (``ack_agg_s``: ACKs released in bursts, as Wi-Fi block ACKs and
  cellular uplink grants do).  ACKs that would arrive at time ``a`` are held until the next
  multiple of the period, ``ceil(a / P)·P`` (one grid from time 0 for the whole link).  A
  tick's ACKs arrive spread over its bytes' FIFO departure interval (the core's ACK clock), so
  for ``P >= dt`` they are released in lumps at consecutive release instants, each taking the
  ACKs that arrived since the previous one (at most ``core.FEEDBACK_SLOTS`` lumps; ACKs beyond
  go with the last, released after they arrive); each lump is credited to the tick whose start
  is nearest its release instant (the rounding the model uses for all feedback).  The RTT samples of a lump include the hold: its bytes' mean send
  time is known, so the sample is the release instant less that mean.  Loss notices ride with
  the ACKs (a sender infers losses from them).  Data is not delayed (``owd`` unchanged).
  Periods below one tick are below the model's resolution (it already credits feedback to
  tick starts): then the ACKs are only shifted by the mean hold ``P/2``, not lumped.
* **RTT measurement noise** (``rtt_noise_s``: timestamp noise, delayed ACKs, host scheduling).
  The mean RTT sample of each flow's ACKs in a tick, as the sender sees it
  (``TickOut.rtt_wsum``, what ``TickObs`` and the environments' MI statistics read), gets
  additive noise ``rtt_noise_s·z``, ``z`` a standard normal truncated to ±3, per tick and
  flow, and is never below ``MIN_RTT_SAMPLE_S``.  Only the observation changes: the physics
  (queue, delays, ``owd``, what is acked when) does not.  Delivered-byte counts stay exact: an
  ACK counts its bytes exactly, and noisy counts would break the sender's in-flight
  bookkeeping, which the model keeps exact.
* **Cross traffic** (``cross_t``/``cross_bps``: an unresponsive byte stream, piecewise
  constant from ``cross_t[k]`` on, padded with ``PAD`` like the capacity schedule).  It joins
  at the bottleneck queue (it is not subject to the flows' random loss: it did not take their
  path), shares drop-tail drops with the flows in proportion to arrivals, is served FIFO with
  them and gets no feedback.  It shows in the queue, the flows' delay and loss, and in
  ``TickOut.cross`` (its bytes admitted to the queue in the tick); the link counters
  ``admitted_total``/``served_total`` include it, so ``admitted − served = queue`` still holds.
  The bytes offered in a tick are summed over segments (``O(segments)`` per tick, no
  cumulative totals: a float32 running total would lose a tick's bytes to rounding after a few
  minutes).

Cost does not depend on the link rate: every effect is a fixed number of operations per tick
(cross traffic: per schedule segment).

Units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

PAD = 3e38  # unused cross-traffic segments start here (never reached); the core's PAD
NEVER = -1e30  # "no bytes have left the jitter element yet"
MIN_RTT_SAMPLE_S = 1e-4  # a noisy RTT sample is never below 0.1 ms
NOISE_CLIP = 3.0  # RTT noise is a standard normal truncated to ±3, times rtt_noise_s


@struct.dataclass
class Realism:
    """Realism parameters of one link (leaves are arrays; add a leading axis for a batch).

    Attributes:
      key: [2] uint32, the link's random key (``jax.random.PRNGKey(seed)``).
      jitter_s: largest extra one-way delay (s); per tick ``U[0, jitter_s]``; 0 = off.
      ack_agg_s: ACK aggregation period (s); 0 = off.
      rtt_noise_s: standard deviation of the RTT sample noise (s); 0 = off.
      cross_t: [C] start of each cross-traffic segment (s), ascending, ``cross_t[0] == 0``,
        unused trailing segments ``PAD``.
      cross_bps: [C] cross-traffic rate of each segment (bytes/s, >= 0; 0 in padding).
    """

    key: jax.Array
    jitter_s: jax.Array
    ack_agg_s: jax.Array
    rtt_noise_s: jax.Array
    cross_t: jax.Array
    cross_bps: jax.Array


@struct.dataclass
class RealismState:
    """Per-link state of the realism effects.

    Attributes:
      jitter_last: time the previous tick's bytes left the jitter element (s; ``NEVER`` first).
      cross_offered: cumulative cross-traffic bytes that arrived at the queue.
      cross_admitted: cumulative cross-traffic bytes admitted (the rest was dropped).
    """

    jitter_last: jax.Array
    cross_offered: jax.Array
    cross_admitted: jax.Array


def init_state(r: Realism | None) -> RealismState | None:
    if r is None:
        return None
    z = jnp.zeros((), jnp.result_type(r.jitter_s))
    return RealismState(jitter_last=jnp.full((), NEVER, z.dtype), cross_offered=z, cross_admitted=z)


def tick_uniforms(r: Realism, tick: jax.Array, n: int, dtype) -> jax.Array:
    """[n] uniforms in [0, 1) for one tick: element 0 for the jitter, 1.. for the RTT noise of
    each flow (one generator call per tick; deterministic in (key, tick))."""
    return jax.random.uniform(jax.random.fold_in(r.key, tick), (n,), dtype)


# ----------------------------------------------------------------------------- cross traffic


def cross_offered(r: Realism, t0: jax.Array, t1: jax.Array) -> jax.Array:
    """Cross-traffic bytes arriving at the queue in [t0, t1]: Σ_k bps_k·|[t0,t1] ∩ segment k|."""
    ends = jnp.concatenate([r.cross_t[1:], jnp.full((1,), PAD, r.cross_t.dtype)])
    overlap = jnp.maximum(jnp.minimum(t1, ends) - jnp.maximum(t0, r.cross_t), 0.0)
    return jnp.sum(r.cross_bps * overlap)


def cross_update(st: RealismState, offered: jax.Array, admitted: jax.Array) -> RealismState:
    return st.replace(cross_offered=st.cross_offered + offered, cross_admitted=st.cross_admitted + admitted)


# ----------------------------------------------------------------------------- jitter


def jitter(r: Realism, st: RealismState, u: jax.Array, dep: jax.Array) -> tuple[jax.Array, RealismState]:
    """Extra one-way delay (s) of the bytes that leave the queue at ``dep``, and the new state.

    ``extra = max(j, last − dep)`` with ``j = u·jitter_s ~ U[0, jitter_s]`` (``u`` the tick's
    uniform 0, see ``tick_uniforms``; FIFO: never before the previous tick's bytes); exactly 0
    when ``jitter_s == 0``.
    """
    j = r.jitter_s * u
    extra = jnp.where(r.jitter_s > 0, jnp.maximum(j, st.jitter_last - dep), 0.0)
    return extra, st.replace(jitter_last=jnp.where(r.jitter_s > 0, dep + extra, st.jitter_last))


# ----------------------------------------------------------------------------- ACK aggregation


def _spread(dt: jax.Array, s_a: jax.Array, width: jax.Array, ring_len: int, n_slots: int):
    """The core's rule (``core.step`` step 5): a tick's ACKs arrive uniformly from slot
    coordinate ``s_a`` (time/dt + ½ after the tick's start) over ``width`` ticks, split over
    ``n_slots`` consecutive ring slots.  Returns (offsets [F, S], over [F], cum [F, S],
    rtt [F, S]): slots ahead, clamped, cumulative share up to each slot, mean RTT sample."""
    j0_f = jnp.floor(s_a)
    over = j0_f > ring_len - 2
    j0 = jnp.clip(j0_f.astype(jnp.int32), 1, ring_len - 2)
    j0_fc = j0.astype(dt.dtype)
    a_c = jnp.clip(s_a, j0_fc, j0_fc + n_slots)
    b_c = jnp.clip(s_a + width, a_c, j0_fc + n_slots)
    w_c = jnp.maximum(b_c - a_c, 1e-9)
    ks = jnp.arange(n_slots, dtype=dt.dtype)
    lo_e = jnp.maximum(a_c[:, None], j0_fc[:, None] + ks)
    hi_e = jnp.minimum(b_c[:, None], j0_fc[:, None] + ks + 1.0)
    cum = jnp.clip((hi_e - a_c[:, None]) / w_c[:, None], 0.0, 1.0).at[:, -1].set(1.0)
    x_mid = jnp.clip((0.5 * (lo_e + hi_e) - a_c[:, None]) / w_c[:, None], 0.0, 1.0)
    rtt = (s_a[:, None] - 0.5 + x_mid * (width - 1.0)) * dt
    offs = jnp.minimum(j0[:, None] + jnp.arange(n_slots), ring_len - 1)
    return offs, over, cum, rtt


def _lumps(per: jax.Array, t0: jax.Array, dt: jax.Array, s_a: jax.Array, width: jax.Array, ring_len: int,
           n_slots: int):
    """ACKs held to the next multiple of ``per`` (>= dt): the same (offsets, over, cum, rtt)."""
    p_safe = jnp.maximum(per, 1e-30)
    a = (s_a - 0.5) * dt  # unheld arrivals, s after t0: uniform over [a, b]
    w = jnp.broadcast_to(jnp.maximum(width, 1e-6) * dt, a.shape)
    b = a + w
    grid = lambda x: jnp.ceil((t0 + x) / p_safe) * p_safe - t0  # noqa: E731  next release at or after x
    r1 = jnp.maximum(grid(a), a)  # float rounding of the grid can put it a hair before a
    m = jnp.arange(n_slots, dtype=dt.dtype)
    rel = r1[:, None] + m * per  # [F, S] release instants
    last = jnp.maximum(rel[:, -1], jnp.maximum(grid(b), b))  # arrivals beyond: compressed into the last
    rel = rel.at[:, -1].set(last)
    cum = jnp.clip((rel - a[:, None]) / w[:, None], 0.0, 1.0).at[:, -1].set(1.0)
    prev = jnp.concatenate([a[:, None], rel[:, :-1]], axis=1)
    lo = jnp.maximum(a[:, None], prev)
    hi = jnp.minimum(b[:, None], rel).at[:, -1].set(b)
    x_mid = jnp.clip((0.5 * (lo + hi) - a[:, None]) / w[:, None], 0.0, 1.0)
    rtt = rel - x_mid * dt  # released at rel, sent at x·dt on average
    slot_f = jnp.floor(jnp.minimum(rel / dt + 0.5, ring_len))
    mass = cum - jnp.concatenate([jnp.zeros_like(cum[:, :1]), cum[:, :-1]], axis=1)
    over = jnp.any((slot_f > ring_len - 1) & (mass > 0), axis=1)
    offs = jnp.clip(slot_f.astype(jnp.int32), 1, ring_len - 1)
    return offs, over, cum, rtt


def feedback_slots(r: Realism, t0: jax.Array, dt: jax.Array, s_a: jax.Array, width: jax.Array, ring_len: int,
                   n_slots: int):
    """Where one tick's feedback goes in the ring with ACK aggregation (module docstring).

    Args:
      r: the link's realism.
      t0: the tick's start (s).
      dt: tick length (s).
      s_a: [F] slot coordinate of each flow's first ACK ((arrival − t0)/dt + ½; the core's
        convention, jitter included).
      width: ticks over which the ACKs arrive (the FIFO departure interval).
      ring_len, n_slots: ring length and the number of slots a tick's feedback may use.

    Returns:
      (offsets [F, S] in [1, ring_len − 1]: ticks ahead; over [F]: clamped to the ring; cum
      [F, S]: share of the tick's feedback credited up to each slot, non-decreasing, 1 at the
      last; rtt [F, S]: mean RTT sample of each slot's bytes, s).  Without aggregation this is
      the core's own rule; with ``0 < P < dt`` the arrivals shift by ``P/2``; with ``P >= dt``
      the ACKs up to each release instant ``R = ceil(t/P)·P`` are credited at ``R`` (tick
      ``round(R/dt)``), each lump's RTT sample being ``R`` less its bytes' mean send time.
    """
    per = r.ack_agg_s
    lump = per >= dt
    # Off (P = 0): the core's spread as is; below a tick: the spread, P/2 later.
    shift = jnp.where((per > 0) & ~lump, 0.5 * per / dt, 0.0)
    spread = _spread(dt, jnp.minimum(s_a + shift, ring_len), width, ring_len, n_slots)
    lumped = _lumps(per, t0, dt, s_a, width, ring_len, n_slots)
    return tuple(jnp.where(lump, b, a) for a, b in zip(spread, lumped))


# ----------------------------------------------------------------------------- RTT noise


def observe_rtt(r: Realism, u: jax.Array, acked: jax.Array, rtt_wsum: jax.Array) -> jax.Array:
    """The ``rtt_wsum`` a sender sees: each flow's mean sample ``rtt_wsum/acked`` plus
    ``rtt_noise_s·z``, at least ``MIN_RTT_SAMPLE_S``; unchanged (bit for bit) when
    ``rtt_noise_s == 0`` or nothing was acked.  ``z`` is a standard normal truncated to ±3,
    by the inverse CDF of the flows' uniforms ``u`` [F] (``tick_uniforms``)."""
    lo = jax.scipy.special.ndtr(-NOISE_CLIP)
    z = jax.scipy.special.ndtri(lo + u * (1.0 - 2.0 * lo))
    has = acked > 0
    mean = rtt_wsum / jnp.maximum(acked, 1e-30)
    noisy = jnp.maximum(mean + r.rtt_noise_s * z, MIN_RTT_SAMPLE_S)
    return jnp.where(has & (r.rtt_noise_s > 0), acked * noisy, rtt_wsum)


def extra_delay_bound(jitter_s: float, ack_agg_s: float) -> float:
    """The most these effects can delay feedback (s), for sizing the feedback ring.

    Jitter adds at most ``jitter_s`` (the FIFO rule keeps ``extra <= jitter_s`` while the
    queue's departures are in order), aggregation at most one period (``ring_len_for`` adds two
    ticks of slack for the rounding to ticks).  Noise does not move feedback.
    """
    return float(jitter_s) + float(ack_agg_s)
