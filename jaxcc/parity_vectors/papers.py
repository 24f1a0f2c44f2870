"""The paper feature sets' vectors (Eagle, MOCC, DeepCC): a whole sender run from the environment's
start, decision by decision, and MOCC's runtime preference switch."""

from __future__ import annotations

import json
import math
import os

import numpy as np

from jaxcc.parity_vectors.common import (ONE_HOT_GOALS, _PAPER_SETS, _SENDER_NO_CWND, _SENDER_RATE,
                                 event_mi, _f32_list, _jitted_add_sample, _jitted_policy,
                                 _random_mi_events)
from jaxcc.policyfile import load, make_feature_policy, save
from jaxcc.units import MBPS, MSS


def nearest_rank_p95(rtts) -> float:
    """The MI's 95th-percentile RTT over per-packet samples, nearest rank (ceil(0.95 n)-th
    smallest): DeepCC's delay_t in a per-packet datapath (``deepcc_v1``'s ``delay_p95``)."""
    v = sorted(float(r) for r in rtts)
    if not v:
        return 0.0
    return v[min(max(int(math.ceil(95.0 / 100.0 * len(v))), 1), len(v)) - 1]


def _write_paper_vectors(out_dir: str, rng: np.random.Generator, mocc_policy=None) -> list[str]:
    """Vectors for ``_PAPER_SETS``: the whole decision loop of the sender, with the environment's
    own code on the Python side.  A sender-side start (the env's reset rate/cwnd), a first
    decision on the empty history (``env.apply_action``, as the env acts at reset), then per MI:
    per-packet events -> ``mi_add_sample`` -> ``env.observe`` (features) -> the policy ->
    ``env.apply_action`` (rate and cwnd).  The C++ test runs FeatureFn::Start, Compute and
    Decide (Policy::MapAction + FeatureFn::AfterAction) on the same events.

    The link's propagation RTT, which the environments fall back on before the first RTT
    sample, is ``rtt_guess`` (MI 0 has no ACK, so it is used); for DeepCC the MI's delay_t is
    the nearest-rank p95 of the packets' RTTs (``delay_p95`` of the spec; the env's per-tick
    ``rtt_max`` is that statistic for its <= 20 samples per MI).  Of a few random policies the
    first whose decisions cover the set's branches is kept (Eagle: an increase and a decrease
    while delayed, so both counters move).  ``mocc_policy`` (a file) replaces MOCC's random policy.

    MOCC also gets ``mocc_preference_switch.json``: the same loop, policy and events with the
    preference changed at run time before the decision after MI ``switch_mi`` (to the one-hot
    preference that changes the most decisions), each MI record's ``goal`` the preference its
    decision used — what the C++ sender's runtime preference change must reproduce — and
    ``mocc_initscaled.json``: the same loop, policy and events, the file stating ``init_ref_rtt_s``;
    ``mocc_ackewma.json``: likewise, the file stating ``max_ack_ewma``.
    """
    written = []
    for name, env_name in _PAPER_SETS:
        seeds = [int(rng.integers(1 << 30)) for _ in range(8)]
        goal_seed, event_seed = int(rng.integers(1 << 30)), int(rng.integers(1 << 30))
        vec = None
        given = load(mocc_policy) if (name == "mocc_v1" and mocc_policy) else None
        for seed in seeds:
            spec, tensors, vec = _paper_vector(name, env_name, seed, goal_seed, event_seed, policy=given)
            if given is not None or _covers_branches(name, vec):
                break
        pol = os.path.join(out_dir, f"features_{name}.safetensors")
        save(pol, spec, tensors)
        path = os.path.join(out_dir, f"features_{name}.json")
        with open(path, "w") as fh:
            json.dump(dict(policy=os.path.basename(pol), features=name, **vec), fh, indent=1)
        written += [pol, path]
        if name == "mocc_v1":
            written.append(_write_mocc_switch(out_dir, env_name, seed, goal_seed, event_seed, (spec, tensors), vec,
                                              os.path.basename(pol)))
            written += _write_with_feature(out_dir, "mocc_initscaled", name, env_name, seed, goal_seed, event_seed,
                                           (spec, tensors), "init_ref_rtt_s", MOCC_INIT_REF_RTT_S)
            written += _write_with_feature(out_dir, "mocc_ackewma", name, env_name, seed, goal_seed, event_seed,
                                           (spec, tensors), "max_ack_ewma", MOCC_MAX_ACK_EWMA)
        if name == "deepcc_v1":
            written += _write_with_feature(out_dir, "deepcc_window", name, env_name, 0, goal_seed, event_seed,
                                           (spec, tensors), "cwnd_rtts", DEEPCC_WINDOW_RTTS)
    return written


DEEPCC_WINDOW_RTTS = 1.0  # deepcc_window: the ACK-clocked window's multiplier the file states
MOCC_INIT_REF_RTT_S = 0.02  # mocc_initscaled: the RTT at which the file's init-cwnd is eq. 1's
MOCC_MAX_ACK_EWMA = 0.25  # mocc_ackewma: the weight of the ACK-rate EWMA the file's max ACK rate runs over


def _write_with_feature(out_dir, stem, name, env_name, seed, goal_seed, event_seed, policy, field, value) -> list[str]:
    """``<stem>.{safetensors,json}``: ``features_<name>``'s policy, goal and events, the file
    stating ``features.<field>`` = ``value``.  Used for ``deepcc_window`` (``cwnd_rtts``: the
    window the paper's sender derives from its rate, ``jaxcc.envs.deepcc.ack_clock_cwnd``; every
    decision after the first also sets one), ``mocc_initscaled`` (``init_ref_rtt_s``: §IV-B's
    init-cwnd scaled by min RTT / ``init_ref_rtt_s``, ``jaxcc.envs.mocc.init_cwnd``) and
    ``mocc_ackewma`` (``max_ack_ewma``: the max ACK rate over an EWMA of the ACK rate,
    ``jaxcc.envs.mocc`` "State")."""
    spec, tensors = policy
    spec = json.loads(json.dumps(spec))
    spec["features"][field] = value
    _, _, vec = _paper_vector(name, env_name, seed, goal_seed, event_seed, policy=(spec, tensors))
    pol = os.path.join(out_dir, f"{stem}.safetensors")
    save(pol, spec, tensors)
    path = os.path.join(out_dir, f"{stem}.json")
    with open(path, "w") as fh:
        json.dump(dict(policy=os.path.basename(pol), features=name, **vec), fh, indent=1)
    return [pol, path]


MOCC_SWITCH_MI = 8  # mocc_preference_switch: the decision after this MI is the first with the new preference


def _write_mocc_switch(out_dir, env_name, seed, goal_seed, event_seed, policy, base_vec, pol_name) -> str:
    """``mocc_preference_switch.json`` (see ``_write_paper_vectors``)."""
    best = None
    for g in ONE_HOT_GOALS:
        _, _, vec = _paper_vector("mocc_v1", env_name, seed, goal_seed, event_seed, policy=policy,
                                  switch=(MOCC_SWITCH_MI, np.asarray(g, np.float32)))
        changed = sum(a["output"] != b["output"] for a, b in zip(vec["mis"], base_vec["mis"]))
        if best is None or changed > best[0]:
            best = (changed, g, vec)
    changed, g, vec = best
    if changed == 0:
        raise RuntimeError("mocc_preference_switch: no one-hot preference changes a decision; pick another seed")
    path = os.path.join(out_dir, "mocc_preference_switch.json")
    with open(path, "w") as fh:
        json.dump(dict(policy=pol_name, features="mocc_v1", switch_mi=MOCC_SWITCH_MI, switch_goal=list(g),
                       decisions_changed=changed, **vec), fh, indent=1)
    return path


def _covers_branches(name: str, vec: dict) -> bool:
    if name != "eagle_v1":
        return True
    delayed = [m["output"] for m in vec["mis"] if m["features"][2] * 1000.0 >= 4.0]
    return any(a in (0, 1) for a in delayed) and any(a in (3, 4) for a in delayed)


def _paper_vector(name: str, env_name: str, seed: int, goal_seed: int, event_seed: int, policy=None,
                  switch=None):
    """(spec, tensors, vector dict) of one random policy fitting ``name`` on ``env_name``'s set
    (``policyfile.make_feature_policy``), or of ``policy`` (spec, tensors) when given.  ``switch``
    ``(i, goal)``: the decisions after MI i onward use ``goal`` (each MI record then has its ``goal``)."""
    import types

    import jax
    import jax.numpy as jnp

    from jaxcc.envs import base as env_base
    from jaxcc.envs import mi as mi_lib
    from jaxcc.envs.registry import make_env

    spec, tensors = make_feature_policy(name, seed) if policy is None else policy
    mi_rtts = float(spec["mi_rtts"])
    T, D = int(spec["features"]["history"]), int(spec["features"]["obs_dim"])
    if name == "mocc_v1":  # the environment with the file's numbers (a trained file states its own)
        from jaxcc.senders import mocc_v1

        env, p = mocc_v1.env_and_params(spec)
    elif name == "deepcc_v1":
        from jaxcc.senders import deepcc_v1

        env, p = deepcc_v1.env_and_params(spec)
    else:
        env, p = make_env(env_name, num_flows=1)
    G = int(spec["goal_dim"])
    g_rng = np.random.default_rng(goal_seed)
    goal = g_rng.dirichlet(np.ones(G)).astype(np.float32) if G > 0 else None
    events = _random_mi_events(np.random.default_rng(event_seed), 16, no_ack=(0, 3))
    rtt_guess = events[0]["duration"] / mi_rtts  # the sender's: its first MI / mi_rtts
    jt = {k: jnp.asarray(v) for k, v in tensors.items()}
    head = spec["head"]
    policy = _jitted_policy(json.dumps(spec, sort_keys=True))

    def env_action(out):
        if name == "deepcc_v1":  # the env's a in [0, 1]: the head output normalised
            u = (float(np.asarray(out).reshape(-1)[0]) - head["low"]) / (head["high"] - head["low"])
            return np.array([u], np.float64)
        return np.asarray(out, np.int32).reshape((1,))

    def rec_out(net, out):
        return {"net_out": _f32_list(net), "output": int(out) if np.ndim(out) == 0 else _f32_list(out)}

    with jax.enable_x64(True):
        f64 = jnp.float64
        add_sample = _jitted_add_sample()
        run = mi_lib.running_zero(1, f64)
        paper = jax.tree.map(lambda x: x.astype(f64) if jnp.issubdtype(x.dtype, jnp.floating) else x,
                             env.init_paper(None, p))
        link = types.SimpleNamespace(rtt=jnp.full((1,), rtt_guess, f64))
        goal_j = jnp.asarray(goal if goal is not None else np.zeros(0), f64).reshape((1, G))

        def state(rate, cwnd, run, paper):
            return types.SimpleNamespace(rate=jnp.full((1,), rate, f64), cwnd=jnp.full((1,), cwnd, f64), run=run,
                                         paper=paper, link=link, goal=goal_j)

        def act(out, rate, cwnd, run, paper):
            r, c, paper = env.apply_action(state(rate, cwnd, run, paper), env_action(out), p)
            return float(jnp.clip(r, env_base.MIN_RATE, env_base.MAX_RATE)[0]), float(c[0]), paper

        # The start: the env's reset rate/cwnd where the paper fixes them, else the sender's.
        if name == "eagle_v1":
            rate, cwnd = float(p.init_rate_mbps) * MBPS, float(p.init_cwnd_pkts) * MSS
        elif name == "mocc_v1":
            rate, cwnd = _SENDER_RATE, float(p.init_cwnd_pkts) * MSS
        else:
            rate, cwnd = _SENDER_RATE, _SENDER_NO_CWND
        window = np.tile(np.asarray(spec["features"].get("empty", [0.0] * D), np.float32), (T, 1))
        net, out = policy(jt, window, goal)
        start = {"rate_in": rate, "cwnd_in": cwnd, **rec_out(net, out)}
        rate, cwnd, paper = act(out, rate, cwnd, run, paper)
        start.update(rate=rate, cwnd=cwnd)
        out_mis = []
        goal0 = goal
        for i, ev in enumerate(events):
            if switch is not None and i == switch[0]:
                goal = switch[1]
            m = event_mi(add_sample, ev)
            run = mi_lib.running_update(run, m)
            rec = dict(ev, rtt_mean=float(mi_lib.rtt_mean(m)[0]), rtt_slope=float(mi_lib.rtt_slope(m)[0]),
                       loss_rate=float(mi_lib.loss_rate(m)[0]))
            if switch is not None:
                rec["goal"] = _f32_list(goal)
            if name == "deepcc_v1" and ev["samples"]:
                rec["rtt_p95"] = nearest_rank_p95(r for _, r, _ in ev["samples"])
                m = m.replace(rtt_max=jnp.array([rec["rtt_p95"]], f64))
            lmi = env_base.LinkMI(cap_bytes=jnp.asarray(ev["sent"], f64), queue_end=jnp.zeros((), f64))
            so = env.observe(state(rate, cwnd, run, paper), paper, m, run, lmi, p)
            paper = so.paper
            f = np.asarray(so.features[0], np.float64)
            window = np.concatenate([window[1:], f.astype(np.float32)[None]], axis=0)
            net, out = policy(jt, window, goal)
            rec.update(features=[float(x) for x in f], rate_in=rate, cwnd_in=cwnd, **rec_out(net, out))
            rate, cwnd, paper = act(out, rate, cwnd, run, paper)
            rec.update(rate=rate, cwnd=cwnd)
            out_mis.append(rec)
    vec = {"goal": _f32_list(goal0) if goal0 is not None else [], "rtt_guess": rtt_guess, "start": start,
           "mis": out_mis}
    return spec, tensors, vec
