"""Running scenarios: many links × controllers in one jitted ``vmap(lax.scan(step))``.

``build_batches`` turns (scenario, controller, seed) items into padded batches that share a
compiled shape (same tick count, segment count, flow slots and ring length); ``run_batch``
simulates one batch and returns per-tick trajectories for the metrics.

Each flow slot has a controller id into a static tuple of ``Controller``s; every controller in
the tuple is stepped for every flow and the flow's own is selected (``jnp.take_along_axis``), so
mixed links (a learned flow next to ``cubic``) cost one compile.  A flow's controller state is
reset to ``init`` after every tick in which the flow was idle, so it starts fresh when it starts.

The runner knows no controller names: ``build_batches`` takes a ``resolve`` callable from its
caller (``jaxcc.senders.resolve``: name -> ``(Controller, ControllerParams)``), and a scenario is anything
with the fields ``Scenario`` below lists (``jaxcc.scenarios.Scenario`` is one).  So nothing here
imports above ``jaxcc.sim``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Any, Callable, Protocol, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcc import units
from jaxcc.sim import controller as ctl
from jaxcc.sim import core, links


class FlowSpec(Protocol):
    """One flow of a scenario, as the runner reads it."""

    rtt_ms: float
    start_s: float
    stop_s: float
    controller: str  # a name ``resolve`` understands
    # optional ``init_rate_mbps`` (float | None): a learned sender's start rate, put in
    # ``SenderParams.init_rate``; only controllers named ``policy:*`` may take it
    # optional ``preference`` ([3] | None) and ``preference_changes`` (((at_s, [3]), ...)): a
    # preference-conditioned policy's preference and its changes (``SenderParams.preference``,
    # ``.preference_changes``); ``controller.refusal`` says which controller may take them
    # optional ``goal`` ([3] | None): a goal-tuned policy's fixed goal (``SenderParams.preference``)
    # and ``target`` ((throughput_mbps, delay_ms, loss) | None): its online-tuning target
    # (``.target``, ``.target_on``); ``controller.refusal`` says which may take them, never both


class LinkSpec(Protocol):
    """A scenario's bottleneck, as the runner reads it."""

    buffer_bytes: float
    loss: float

    def capacity(self, *, seed: int, duration_s: float) -> links.Schedule: ...

    def realism(self, *, seed: int) -> "links.rz.Realism | None": ...  # REALISM (None: off)


class Scenario(Protocol):
    """What the runner needs of a scenario (``jaxcc.scenarios.Scenario`` has it)."""

    duration_s: float
    link: LinkSpec
    flows: Sequence[FlowSpec]


Resolve = Callable[[str], tuple[ctl.Controller, np.ndarray]]


@dataclasses.dataclass
class Item:
    """One simulation: a scenario (its flows carry their controllers) and a seed."""

    scenario: Scenario
    seed: int = 0
    label: str = ""  # the controller label for reports ("" = the flows' own controllers)


@dataclasses.dataclass
class Batch:
    items: list[Item]
    params: core.LinkParams  # leaves [B, ...]
    ctrl_ids: np.ndarray  # [B, F] int32
    cparams: ctl.ControllerParams  # numpy leaves [B, F, ...]
    controllers: tuple[ctl.Controller, ...]
    num_ticks: int
    ring_len: int
    schedules: list[links.Schedule]
    num_real_flows: list[int]


def _item_link(item: Item, ticks_per_rtt: int):
    sc = item.scenario
    sched = sc.link.capacity(seed=item.seed, duration_s=sc.duration_s)
    rtts = [f.rtt_ms / 1e3 for f in sc.flows]
    dt = min(rtts) / ticks_per_rtt
    return sched, rtts, dt


def _extra_delay(link: LinkSpec) -> float:
    """REALISM: how much later than RTT + queueing a link's feedback can arrive (s)."""
    r = link.realism(seed=0)
    return 0.0 if r is None else links.rz.extra_delay_bound(float(r.jitter_s), float(r.ack_agg_s))


def build_batches(items: Sequence[Item], *, resolve: Resolve, ticks_per_rtt: int = links.DEFAULT_TICKS_PER_RTT,
                  max_ring: int = links.DEFAULT_MAX_RING) -> list[Batch]:
    """Group items by tick count and pad each group into one batch.

    Args:
      items: the simulations.
      resolve: a flow's controller name -> ``(Controller, ControllerParams)`` (one flow's)
        (``jaxcc.senders.resolve``), called once per distinct name; controllers are told apart
        by their ``name``.
      ticks_per_rtt: ticks per smallest flow RTT of each item.
      max_ring: cap on the feedback ring length.
    """
    resolved: dict[str, tuple[ctl.Controller, ctl.ControllerParams]] = {}  # each name resolved once (policy files load once)

    def resolve_once(name: str):
        if name not in resolved:
            resolved[name] = resolve(name)
        return resolved[name]

    prepared = []
    for it in items:
        sched, rtts, dt = _item_link(it, ticks_per_rtt)
        ticks = int(math.ceil(it.scenario.duration_s / dt))
        prepared.append((it, sched, rtts, dt, ticks))
    groups: dict[tuple[int, bool], list] = defaultdict(list)
    for p in prepared:  # REALISM: links with realism in batches of their own (others stay bit-identical)
        groups[(p[4], p[0].scenario.link.realism(seed=0) is not None)].append(p)
    batches = []
    for (ticks, _), group in sorted(groups.items()):
        k = max(g[1].num_segments for g in group)
        f = max(len(g[2]) for g in group)
        ring = max(links.ring_len_for(g[1], g[0].scenario.link.buffer_bytes, g[2], g[3], max_ring,
                                      extra_delay_s=_extra_delay(g[0].scenario.link)) for g in group)  # REALISM
        names: list[str] = []
        ctrls: list[ctl.Controller] = []
        params, ids, cps = [], [], []
        for it, sched, rtts, dt, _ in group:
            sc = it.scenario
            params.append(links.make_link(
                sched, sc.link.buffer_bytes, sc.link.loss, rtts, [fl.start_s for fl in sc.flows],
                [fl.stop_s for fl in sc.flows], num_segments=k, num_flows=f, dt=dt,
                realism=sc.link.realism(seed=it.seed)))  # REALISM
            row_ids = np.zeros((f,), np.int32)
            row_cp = ctl.ControllerParams.zeros((f,))
            for j, fl in enumerate(sc.flows):
                ctrl, cparam = resolve_once(fl.controller)
                if ctrl.name not in names:
                    names.append(ctrl.name)
                    ctrls.append(ctrl)
                row_ids[j] = names.index(ctrl.name)
                ctl.set_flow(row_cp, j, cparam)
                # A learned sender decides on its own RTT's clock (SenderParams.mi_scale).
                row_cp.sender.mi_scale[j] = max(1.0, round(rtts[j] / min(rtts)))
                init_mbps = getattr(fl, "init_rate_mbps", None)
                if init_mbps is not None:
                    if not ctrl.name.startswith(("policy:", "raw-policy:")):
                        raise ValueError(f"flows[{j}].init_rate_mbps: only a learned sender (policy:FILE) takes a "
                                         f"start rate; {fl.controller!r} starts from its own initial window/rate")
                    row_cp.sender.init_rate[j] = float(init_mbps) * units.MBPS
                _put_preference(row_cp.sender, fl, ctrl, j)
                _put_target(row_cp.sender, fl, ctrl, j)
            ids.append(row_ids)
            cps.append(row_cp)
        batches.append(Batch(
            items=[g[0] for g in group], params=links.stack_links(params), ctrl_ids=np.stack(ids),
            cparams=ctl.stack(cps), controllers=tuple(ctrls), num_ticks=ticks, ring_len=ring,
            schedules=[g[1] for g in group], num_real_flows=[len(g[2]) for g in group]))
    return batches


def _put_preference(sp: ctl.SenderParams, fl: FlowSpec, ctrl: ctl.Controller, j: int) -> None:
    """Writes flow ``j``'s ``preference`` and ``preference_changes`` into row ``j`` of ``sp``."""
    pref = getattr(fl, "preference", None)
    changes = tuple(getattr(fl, "preference_changes", None) or ())
    if pref is None and not changes:
        return
    field = "preference" if pref is not None else "preference_changes"
    why = ctl.refusal(ctrl, fl.controller, field)
    if why is not None:
        raise ValueError(f"flows[{j}].{field}: {why}")
    if len(changes) > ctl.MAX_PREFERENCE_CHANGES:
        raise ValueError(f"flows[{j}].preference_changes: at most {ctl.MAX_PREFERENCE_CHANGES} changes "
                         f"in the simulator, got {len(changes)}")
    if pref is not None:
        sp.preference[j] = np.asarray(pref, np.float32)
    for k, (at_s, w) in enumerate(changes):
        sp.preference_changes[j, k, 0] = float(at_s)
        sp.preference_changes[j, k, 1:] = np.asarray(w, np.float32)


def _put_target(sp: ctl.SenderParams, fl: FlowSpec, ctrl: ctl.Controller, j: int) -> None:
    """Writes flow ``j``'s fixed ``goal`` (``preference``) or its ``target`` (and ``target_on``) into ``sp``."""
    goal, target = getattr(fl, "goal", None), getattr(fl, "target", None)
    if goal is None and target is None:
        return
    field = "goal" if goal is not None else "target"
    why = ctl.refusal(ctrl, fl.controller, field)
    if why is not None:
        raise ValueError(f"flows[{j}].{field}: {why}")
    if goal is not None and target is not None:
        raise ValueError(f"flows[{j}].target: give a goal (fixed) or a target (tuned), not both")
    if goal is not None:
        sp.preference[j] = np.asarray(goal, np.float32)
    else:
        tuner = getattr(fl, "tuner", ctl.DEFAULT_TUNER)
        if tuner not in ctl.TUNER_CODES:
            raise ValueError(f"flows[{j}].target.tuner: must be one of {', '.join(ctl.TUNER_CODES)}, got {tuner!r}")
        sp.target[j] = np.asarray(target, np.float32)
        sp.target_on[j] = ctl.TUNER_CODES[tuner]


def _where_flow(mask: jax.Array, a, b):
    """Per-flow select over pytrees whose leaves have a leading flow axis."""
    def sel(x, y):
        return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y)
    return jax.tree.map(sel, a, b)


def make_run(controllers: tuple[ctl.Controller, ...], num_ticks: int, ring_len: int, keep_states: bool = False,
             probe: Callable[[tuple], Any] | None = None):
    """A pure ``run(params, ctrl_ids, cparams) -> (final SimState, TickOut trajectory, rates)``
    for one link (``keep_states``: and the controllers' final states, one ``[F, ...]`` pytree per
    controller, each flow's in its own controller's entry); vmap it for a batch.

    ``probe``: a function of the controllers' states after each tick's update (the tuple
    ``keep_states`` returns at the end) whose pytree is recorded every tick and returned last,
    leaves ``[T, ...]`` (for measurements of a sender's internals, e.g. its window or goal at
    every decision).  It only reads the states: the run is the same with or without it."""

    def run(p: core.LinkParams, ctrl_ids: jax.Array, cparams: ctl.ControllerParams):
        inits = tuple(jax.vmap(c.init)(cparams) for c in controllers)

        def body(carry, _):
            sim, cstates = carry
            acts = [jax.vmap(c.act)(cs, cparams) for c, cs in zip(controllers, cstates)]
            rates = jnp.stack([a.rate for a in acts])  # [C, F]
            cwnds = jnp.stack([a.cwnd for a in acts])
            rate = jnp.take_along_axis(rates, ctrl_ids[None], axis=0)[0]
            cwnd = jnp.take_along_axis(cwnds, ctrl_ids[None], axis=0)[0]
            sim, out = core.step(p, sim, rate, cwnd)
            obs = ctl.tick_obs(out, p.dt)
            cstates = tuple(jax.vmap(c.update)(cs, obs, cparams) for c, cs in zip(controllers, cstates))
            # A flow idle during this tick starts its next tick from a fresh state, so a flow that
            # starts (or restarts) does so from ``init``, not from updates it saw while idle.
            cstates = tuple(_where_flow(out.active, cs, ini) for cs, ini in zip(cstates, inits))
            ys = (out, jnp.where(out.active, rate, 0.0))
            return (sim, cstates), (ys + (probe(cstates),) if probe is not None else ys)

        (sim, cstates), ys = jax.lax.scan(body, (core.init_state(p, ring_len), inits), None, length=num_ticks)
        return (sim, *ys[:2]) + ((cstates,) if keep_states else ()) + tuple(ys[2:])

    return run


def run_batch(batch: Batch, keep_states: bool = False, probe: Callable[[tuple], Any] | None = None):
    """Simulate a batch; returns NumPy (final states, trajectories [B, T, ...], rates [B, T, F])
    (``keep_states``: and the controllers' final states, leaves ``[B, F, ...]``; ``probe``: and
    its per-tick record, leaves ``[B, T, ...]``; ``make_run``)."""
    run = jax.jit(jax.vmap(make_run(batch.controllers, batch.num_ticks, batch.ring_len, keep_states, probe)))
    out = run(jax.tree.map(jnp.asarray, batch.params), jnp.asarray(batch.ctrl_ids),
              jax.tree.map(jnp.asarray, batch.cparams))
    return jax.device_get(out)
