"""The shared C++/Python parity vectors in ``tests/vectors`` (one command writes them all)::

    python -m jaxcc.parity_vectors --out tests/vectors
    python -m jaxcc.parity_vectors --out tests/vectors --mocc-policy=checkpoints/mocc/mocc.safetensors  # trained MOCC

They hold three implementations of the same rules together: the policy-file interpreter
(``jaxcc.policyfile``) and the C++ loader (``datapath/tests/vectors_test.cc``: ``<kind>.json``,
forward pass + action mapping); the environments' features and the papers' rules around the
policy (``jaxcc.envs``), the C++ feature sets (``datapath/tests/features_test.cc``) and the
simulator's senders (``jaxcc.senders``, ``tests/test_senders.py``): ``features_<set>.json``,
per-packet events -> monitor-interval statistics -> features -> policy output -> rate/cwnd.

Everything is drawn from one seed, so a rerun writes byte-identical files;
``tests/test_policyfile.py`` checks that the committed files are what this code writes.

MOCC (``features_mocc_v1``, ``mocc_preference_switch``) uses a random policy of the exported
shape unless ``--mocc-policy=FILE`` names one (the trained file once it ships; the committed
vectors then come from that command, and the check above must be told the same file:
``tests/test_policyfile.py`` reads ``tests/vectors/mocc_policy.txt`` when it exists — the
command writes it, holding the file's path relative to the repository).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys

import numpy as np

from jaxcc.policyfile import (apply, forward, load, make_feature_policy, make_random_policy,
                              map_action, q_objectives, save, scalarised_q)
from jaxcc.units import MBPS, MSS

def _f32_list(a) -> list:
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


MOCC_POLICY_MARKER = "mocc_policy.txt"  # names the --mocc-policy file the vectors were written with

# Network kinds with a ``<kind>.json`` vector: (file stem, ``make_random_policy`` kind, its keywords).
# ``q_values`` is MOCC's shape (7 actions x 3 objectives, goal-weighted argmax);
# ``q_values_1obj`` the same head with one objective (``objectives`` absent: argmax of 7 values).
_KINDS = (("mlp", "mlp", {}), ("lstm", "lstm", {}), ("lstm2_discrete", "lstm2_discrete", {}),
          ("conv1d_goal", "conv1d_goal", {}), ("q_values", "q_values", {}),
          ("q_values_1obj", "q_values", {"objectives": 1}))
# The q_values cases' goals besides a random one: each objective alone, and no weight at all
# (every action scores 0: a tie, the first action wins).
_ONE_HOT_GOALS = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def write_vectors(out_dir: str | os.PathLike, n_cases: int = 4, seed: int = 0,
                  mocc_policy: str | os.PathLike | None = None) -> list[str]:
    """Writes policy files + expected outputs that the C++ tests check against.

    For each random kind (``_KINDS``): ``<kind>.safetensors`` and ``<kind>.json`` with
    ``cases`` of {obs [T][D], goal [G], net_out [..], output, rate_in, cwnd_in,
    rate, cwnd}; a multi-objective ``q_values`` head's cases also carry ``q_weighted``
    ([n] goal-weighted Q-values, the scores its argmax takes) and each observation is met with a
    random preference, each one-hot preference and the zero vector (a tie: action 0); then the
    feature-set vectors (monitor-interval stats -> features, ``_write_feature_vectors``).
    Each kind draws from its own stream (``[seed, 1, k]``), so changing one kind leaves the other
    files as they were.

    Args:
      out_dir: the folder (the repository's: ``tests/vectors``).
      n_cases: observations per kind.
      seed: the one seed everything is drawn from (committed: 0).
      mocc_policy: a MOCC policy file (e.g. the shipped trained one) to use for
        ``features_mocc_v1`` and ``mocc_preference_switch`` instead of a random one.

    Returns:
        the list of files written.
    """
    import jax
    import jax.numpy as jnp

    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    written = []
    for k_i, (stem, kind, kw) in enumerate(_KINDS):
        spec, tensors = make_random_policy(kind, seed * 100 + k_i + 1, **kw)
        k_rng = np.random.default_rng([seed, 1, k_i])
        pol = os.path.join(out_dir, f"{stem}.safetensors")
        save(pol, spec, tensors)
        T, D, G = spec["features"]["history"], spec["features"]["obs_dim"], spec["goal_dim"]
        m_obj = q_objectives(spec)
        jt = {k: jnp.asarray(v) for k, v in tensors.items()}
        # One compilation per kind (eager lax.scan would compile on every call).
        both = jax.jit(lambda t, o, g, spec=spec: (forward(spec, t, o, g), apply(spec, t, o, g)))
        cases = []
        for _ in range(n_cases):
            obs = k_rng.normal(0.0, 1.0, size=(T, D)).astype(np.float32)
            goals = [k_rng.dirichlet(np.ones(G)).astype(np.float32) if G > 0 else None]
            if m_obj > 1:
                goals += [np.asarray(g, np.float32) for g in _ONE_HOT_GOALS] + [np.zeros(G, np.float32)]
            for goal in goals:
                net, out = both(jt, obs, goal)
                rate_in = np.float32(k_rng.uniform(0.5, 50.0) * MBPS)
                cwnd_in = np.float32(k_rng.uniform(4, 200) * MSS)
                rate, cwnd = map_action(spec, out, rate_in, cwnd_in)
                case = {
                    "obs": _f32_list(obs), "goal": _f32_list(goal) if goal is not None else [],
                    "net_out": _f32_list(net),
                    "output": int(out) if np.ndim(out) == 0 else _f32_list(out),
                    "rate_in": float(rate_in), "cwnd_in": float(cwnd_in),
                    "rate": float(rate), "cwnd": float(cwnd),
                }
                if m_obj > 1:
                    case["q_weighted"] = _f32_list(scalarised_q(net, goal, int(spec["head"]["n"]), m_obj))
                cases.append(case)
        if m_obj > 1:
            _check_preference_matters(stem, cases, len(goals))
        vec = os.path.join(out_dir, f"{stem}.json")
        with open(vec, "w") as f:
            json.dump({"policy": f"{stem}.safetensors", "kind": kind, "cases": cases}, f, indent=1)
        written += [pol, vec]
    written += _write_feature_vectors(out_dir, rng, mocc_policy)
    marker = os.path.join(out_dir, MOCC_POLICY_MARKER)
    if mocc_policy is not None:
        with open(marker, "w") as f:
            f.write(os.fspath(mocc_policy) + "\n")
        written.append(marker)
    elif os.path.exists(marker):
        os.remove(marker)
    written += _write_pareto_v2_vectors(out_dir, seed)
    written.append(write_goal_tuning_vectors(os.path.join(out_dir, GOAL_TUNING_VECTORS), seed))
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("Generated by `python -m jaxcc.parity_vectors --out tests/vectors`; do not edit.\n"
                "With the trained MOCC policy: add `--mocc-policy=checkpoints/mocc/mocc.safetensors`\n"
                "(features_mocc_v1 and mocc_preference_switch then run that file; the rest is unchanged).\n"
                "Read by datapath/tests/vectors_test.cc (forward pass + action mapping: <kind>.json;\n"
                "q_values is MOCC's multi-objective head: 7 actions x 3 objectives, action-major net_out,\n"
                "output = first argmax of q_weighted[a] = sum_k goal[k] * net_out[a*3+k]; q_values_1obj\n"
                "the single-objective head) and\n"
                "datapath/tests/features_test.cc (per-packet events -> MI stats -> features -> policy:\n"
                "features_<set>.json; for pareto_v2, eagle_v1, mocc_v1 and deepcc_v1 the sender's whole\n"
                "decision loop: start, first decision on the empty history, rate and cwnd after every MI,\n"
                "from the environments' own observe/apply_action; pareto_v2's policy is built as the\n"
                "Pareto trainer exports its actor). mocc_preference_switch.json is features_mocc_v1's loop\n"
                "with the preference changed at run time: each MI record's `goal` is the preference its\n"
                "decision uses (the top-level `goal` until `switch_mi`, then `switch_goal`).\n"
                "goal_tuning.txt: DeepCC's online goal tuner (jaxcc/senders/goal_tuning.py) on measurement\n"
                "sequences -> goal sequences, read by datapath/tests/goal_tuning_test.cc (format in its header).\n"
                "C++ and Python must agree to 1e-5 relative.\n")
    return written


def _check_preference_matters(stem: str, cases: list[dict], per_obs: int) -> None:
    """The multi-objective cases must show that the preference picks the action: for some
    observation the one-hot preferences choose different actions (else the head is not tested)."""
    for i in range(0, len(cases), per_obs):
        if len({c["output"] for c in cases[i + 1:i + 4]}) > 1:
            return
    raise RuntimeError(f"{stem}: no observation where the preference changes the action; pick another seed")


def _random_mi_events(rng: np.random.Generator, n_mi: int, no_ack: tuple[int, ...] = (3,)) -> list[dict]:
    """Per-packet events for a sequence of MIs, with the edge cases the features special-case:
    MIs without any ACK (``no_ack``; MI 0 among them: no RTT seen yet), one with a single ACK,
    losses, and a queue that builds then drains."""
    mis = []
    base_rtt = rng.uniform(0.02, 0.1)
    queue = 0.0
    for i in range(n_mi):
        dur = float(rng.uniform(0.5, 2.0) * base_rtt)
        if i in no_ack:
            n_ack = 0
        elif i == 4:
            n_ack = 1
        else:
            n_ack = int(rng.integers(2, 40))
        queue = max(0.0, queue + rng.normal(0.004 if i < n_mi // 2 else -0.006, 0.003))
        t = np.sort(rng.uniform(0.0, dur, size=n_ack))
        slope = rng.normal(0.0, 0.05)
        samples = [[float(rng.choice([1500.0, 1472.0, 1000.0])), float(base_rtt + queue + slope * ti + abs(rng.normal(0, 1e-4))),
                    float(ti)] for ti in t]
        lost = float(rng.integers(0, 4) * 1500.0) if i % 3 == 2 else 0.0
        sent = float(sum(w for w, _, _ in samples) * rng.uniform(0.8, 1.3) + rng.integers(0, 3) * 1500.0)
        mis.append({"duration": dur, "sent": sent, "lost": lost, "samples": samples})
    return mis


def _write_feature_vectors(out_dir: str, rng: np.random.Generator, mocc_policy=None) -> list[str]:
    """Feature-parity vectors: per-packet events -> MI statistics -> features -> policy output.

    For each feature set implemented in both jaxcc/envs and the datapath, writes
    ``features_<name>.json`` (+ a matching random policy ``features_<name>.safetensors``).
    Python accumulates the events with ``jaxcc.envs.mi.mi_add_sample`` (the per-packet
    update) in float64, then runs the environment's own feature function; the C++ test feeds
    the same events through its MonitorStats/FeatureFn/Policy and compares.
    """
    import jax
    import jax.numpy as jnp

    from jaxcc.envs import aurora, mi as mi_lib, pareto

    written = []
    for name in ("aurora_v1", "pareto_v1"):
        spec, tensors = make_feature_policy(name, int(rng.integers(1 << 30)))
        T, obs_dim = int(spec["features"]["history"]), int(spec["features"]["obs_dim"])
        pol = os.path.join(out_dir, f"features_{name}.safetensors")
        save(pol, spec, tensors)
        jt = {k: jnp.asarray(v) for k, v in tensors.items()}
        events = _random_mi_events(rng, 12)
        out_mis = []
        with jax.enable_x64(True):
            f64 = jnp.float64
            add_sample = jax.jit(mi_lib.mi_add_sample)  # compiled once, then per-packet calls are cheap
            run = mi_lib.running_zero(1, f64)
            pflow = pareto.zero_flows(1, f64)
            pp = pareto.ParetoParams()
            feats_rows = []
            for ev in events:
                m = _event_mi(add_sample, ev)
                run = mi_lib.running_update(run, m)
                if name == "aurora_v1":
                    f = aurora.features(m, run)[0]
                else:
                    f, pflow, _ = pareto.observe_features(pflow, m, mi_lib.known_min_rtt(run, jnp.zeros(1, f64)), pp)
                    f = f[0]
                feats_rows.append(np.asarray(f, np.float64))
                out_mis.append(dict(ev, features=[float(x) for x in np.asarray(f, np.float64)],
                                    rtt_mean=float(mi_lib.rtt_mean(m)[0]), rtt_slope=float(mi_lib.rtt_slope(m)[0]),
                                    loss_rate=float(mi_lib.loss_rate(m)[0])))
        # Policy over the sliding window (float32, as the simulator runs it).
        empty = np.asarray(spec["features"].get("empty", [0.0] * obs_dim), np.float32)
        window = np.tile(empty, (T, 1))
        rate = np.float32(5.0 * MBPS)
        both = jax.jit(lambda t, o, spec=spec: (forward(spec, t, o), apply(spec, t, o)))
        for rec, f in zip(out_mis, feats_rows):
            window = np.concatenate([window[1:], np.asarray(f, np.float32)[None]], axis=0)
            net, out = both(jt, window)
            rec["net_out"] = _f32_list(net)
            rec["output"] = _f32_list(out)
            rec["rate_in"] = float(rate)
            rate, _ = map_action(spec, out, rate, 1e30)
            rate = np.float32(rate)
            rec["rate"] = float(rate)
        path = os.path.join(out_dir, f"features_{name}.json")
        with open(path, "w") as fh:
            json.dump({"policy": os.path.basename(pol), "features": name, "mis": out_mis}, fh, indent=1)
        written += [pol, path]
    return written + _write_paper_vectors(out_dir, rng, mocc_policy)


def _write_pareto_v2_vectors(out_dir: str, seed: int) -> list[str]:
    """``features_pareto_v2.json``: Pareto-Fair v2 (``jaxcc.envs.pareto``, feature set
    ``pareto_v2``), the sender's whole loop as for ``_PAPER_SETS``, with the environment's code on
    the Python side: the start (``init_pkts_per_rtt`` packets per ``rtt_s``, the environment's
    reset rate), a first decision on the empty history, then per MI ``mi_add_sample`` →
    ``pareto.observe_features`` → the actor → ``pareto.apply_action`` over the set's range.

    The policy is the one the Pareto trainer exports (``jaxcc.agents.pareto.networks``:
    ``actor_spec`` with ``export_features_spec``'s features and action range, ``init_actor``'s
    weights with the last layer scaled up), so reading it in C++ is the export → datapath round
    trip of a v2 file; of a few such actors the first that both raises and lowers its rate by
    more than 5% is kept.  The events (own random stream, so the other vectors stay as they
    were) include MIs without an RTT sample (0 and 3: the queue feature is 0 there whatever the
    rate) and a queue that builds (the feature > 0) then drains.
    """
    import jax

    from jaxcc.agents import pipeline
    from jaxcc.agents.pareto import networks
    from jaxcc.envs.registry import export_features_spec
    from jaxcc.policyfile import validate

    name = "pareto_v2"
    rng = np.random.default_rng([seed, 2])
    feats = export_features_spec("pareto", feature_set=name)
    mi_rtts = float(feats.pop("mi_rtts"))
    a_range = (float(feats["action_low"]), float(feats["action_high"]))
    T, D, hidden, fc = int(feats["history"]), int(feats["obs_dim"]), 32, 32
    spec = networks.actor_spec(T, D, hidden, fc, mi_rtts=mi_rtts, features=feats, a_range=a_range)
    events = _random_mi_events(rng, 16, no_ack=(0, 3))
    for key in [int(rng.integers(1 << 30)) for _ in range(8)]:
        params = networks.init_actor(jax.random.PRNGKey(key), D, hidden, fc, a_range)
        params["out"]["kernel"] = params["out"]["kernel"] * 30.0
        tensors = {k: np.asarray(v, np.float32) for k, v in pipeline.flat(params).items()}
        vec = _pareto_v2_loop(spec, tensors, events, a_range)
        acts = [m["output"][0] for m in vec["mis"]]
        if max(acts) > 0.05 and min(acts) < -0.05:
            break
    validate(spec, tensors)
    pol = os.path.join(out_dir, f"features_{name}.safetensors")
    save(pol, spec, tensors)
    path = os.path.join(out_dir, f"features_{name}.json")
    with open(path, "w") as fh:
        json.dump(dict(policy=os.path.basename(pol), features=name, **vec), fh, indent=1)
    return [pol, path]


def _pareto_v2_loop(spec: dict, tensors: dict, events: list[dict], a_range) -> dict:
    """The vector dict (rtt_guess, start, mis) of one ``pareto_v2`` policy on ``events``."""
    import jax
    import jax.numpy as jnp

    from jaxcc.envs import base as env_base
    from jaxcc.envs import mi as mi_lib
    from jaxcc.envs import pareto

    T = int(spec["features"]["history"])
    jt = {k: jnp.asarray(v) for k, v in tensors.items()}
    policy = _jitted_policy(json.dumps(spec, sort_keys=True))
    rtt_guess = events[0]["duration"] / float(spec["mi_rtts"])  # the sender's: its first MI / mi_rtts
    p = pareto.ParetoParams()

    def act(out, rate):
        a = np.asarray(out, np.float64).reshape(-1)[0]
        return float(np.clip(pareto.apply_action(rate, a, a_range), env_base.MIN_RATE, env_base.MAX_RATE))

    with jax.enable_x64(True):
        f64 = jnp.float64
        add_sample = _jitted_add_sample()
        run = mi_lib.running_zero(1, f64)
        flow = pareto.zero_flows(1, f64)
        window = np.tile(np.asarray(spec["features"]["empty"], np.float32), (T, 1))
        rate = float(p.init_pkts_per_rtt) * MSS / float(p.rtt_s)
        net, out = policy(jt, window, None)
        start = {"rate_in": rate, "cwnd_in": _SENDER_NO_CWND, "net_out": _f32_list(net), "output": _f32_list(out)}
        rate = act(out, rate)
        start.update(rate=rate, cwnd=_SENDER_NO_CWND)
        out_mis = []
        for ev in events:
            m = _event_mi(add_sample, ev)
            run = mi_lib.running_update(run, m)
            min_rtt = mi_lib.known_min_rtt(run, jnp.full((1,), rtt_guess, f64))
            f, flow, _ = pareto.observe_features(flow, m, min_rtt, p, "pareto_v2")
            f = np.asarray(f[0], np.float64)
            window = np.concatenate([window[1:], f.astype(np.float32)[None]], axis=0)
            net, out = policy(jt, window, None)
            rec = dict(ev, rtt_mean=float(mi_lib.rtt_mean(m)[0]), rtt_slope=float(mi_lib.rtt_slope(m)[0]),
                       loss_rate=float(mi_lib.loss_rate(m)[0]), features=[float(x) for x in f], rate_in=rate,
                       cwnd_in=_SENDER_NO_CWND, net_out=_f32_list(net), output=_f32_list(out))
            rate = act(out, rate)
            rec.update(rate=rate, cwnd=_SENDER_NO_CWND)
            out_mis.append(rec)
    return {"rtt_guess": rtt_guess, "start": start, "mis": out_mis}


# Feature sets whose paper adds rules around the policy (its start, its window, what the next
# features remember of the action): (set, environment); the random policy of each is
# ``policyfile.make_feature_policy``'s.
_PAPER_SETS = (("eagle_v1", "eagle"), ("mocc_v1", "mocc"), ("deepcc_v1", "deepcc"))
# The sender's defaults before a feature set's Start (jaxcc-sender: --init-mbps 1, no window;
# 10 packets of 1472 bytes for window actions).
_SENDER_RATE = 1.0 * MBPS
_SENDER_NO_CWND = 1e30


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
    decision used — what the C++ sender's runtime preference change must reproduce.
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
    return written


MOCC_SWITCH_MI = 8  # mocc_preference_switch: the decision after this MI is the first with the new preference


def _write_mocc_switch(out_dir, env_name, seed, goal_seed, event_seed, policy, base_vec, pol_name) -> str:
    """``mocc_preference_switch.json`` (see ``_write_paper_vectors``)."""
    best = None
    for g in _ONE_HOT_GOALS:
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
            m = _event_mi(add_sample, ev)
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


@functools.lru_cache(maxsize=None)
def _jitted_policy(spec_json: str):
    """``(forward, apply)`` of a spec, compiled once per architecture (tensors are arguments)."""
    import jax

    spec = json.loads(spec_json)
    return jax.jit(lambda t, o, g: (forward(spec, t, o, g), apply(spec, t, o, g)))


def _event_mi(add_sample, ev: dict):
    """One MI's statistics (float64; call under ``jax.enable_x64``) from a ``_random_mi_events``
    record: its per-packet samples through ``add_sample`` (``mi_add_sample``), then its totals."""
    import jax.numpy as jnp

    from jaxcc.envs import mi as mi_lib

    f64 = jnp.float64
    m = mi_lib.mi_zero(1, f64)
    for w, r, t in ev["samples"]:
        m = add_sample(m, jnp.array([w], f64), jnp.array([r], f64), jnp.array([t], f64))
    return m.replace(duration=jnp.array([ev["duration"]], f64), active=jnp.array([ev["duration"]], f64),
                     sent=jnp.array([ev["sent"]], f64), lost=jnp.array([ev["lost"]], f64))


@functools.lru_cache(maxsize=None)
def _jitted_add_sample():
    import jax

    from jaxcc.envs import mi as mi_lib

    return jax.jit(mi_lib.mi_add_sample)


GOAL_TUNING_VECTORS = "goal_tuning.txt"


def goal_tuning_cases(seed: int = 0) -> list[dict]:
    """Measurement sequences for the goal tuner's vectors: one hand-made case per heuristic
    branch of ``jaxcc.senders.goal_tuning`` (throughput short, jump-out, delay over, loss met,
    non-congestion loss with throughput and delay met, loss following delay, everything met,
    a goal that does not move: no usable Δg) and random ones drawn from ``seed``.  Each case:
    target (throughput_mbps, delay_ms, loss), g0, steps of (m [3], thr_max bytes/s, min_rtt s)."""
    rng = np.random.default_rng([seed, 15])

    def noisy(base, n, sd):
        return [[float(np.float32(b + rng.normal(0.0, s))) for b, s in zip(base, sd)] for _ in range(n)]

    def case(name, target, g0, ms, thr_max=2e6, min_rtt=0.1):
        return {"name": name, "target": list(target), "g0": list(g0),
                "steps": [(m, thr_max, min_rtt) for m in ms]}

    third = [1 / 3, 1 / 3, 1 / 3]
    cases = [
        # T̂ = (1.25, 1.5, 0.01): throughput short by < half, delay and loss met.
        case("thr_short", (20.0, 50.0, 0.01), third, noisy((0.85, 1.1, 0.0), 12, (0.05, 0.02, 0.0))),
        # T̂¹ = 100 Mbit/s / 12 Mbit/s = 8.3 > every m¹: the jump-out every interval.
        case("thr_far_jump", (100.0, 1000.0, 1.0), third, noisy((0.8, 1.2, 0.0), 10, (0.1, 0.05, 0.0)), thr_max=1.5e6),
        # T̂² = 1.1: delay 64 % over (jump), then 18 % over (no jump); loss met.
        case("delay_over", (1.0, 10.0, 0.05), [0.8, 0.1, 0.1], noisy((0.9, 1.8, 0.02), 6, (0.02, 0.05, 0.0))
             + noisy((0.9, 1.3, 0.02), 6, (0.02, 0.02, 0.0))),
        # Throughput and delay met, loss over: non-congestion loss, g³ never moves by a gradient.
        case("loss_noncongestion", (1.0, 200.0, 0.01), [0.5, 0.3, 0.2], noisy((0.9, 1.2, 0.03), 8, (0.02, 0.02, 0.005))),
        # Delay and loss over: the loss gradient := the delay gradient.
        case("loss_follows_delay", (1.0, 20.0, 0.01), [0.6, 0.2, 0.2], noisy((0.95, 1.5, 0.02), 10, (0.02, 0.05, 0.003))),
        # Everything met: the goal stays.
        case("all_met", (1.0, 200.0, 0.05), [0.7, 0.2, 0.1], noisy((0.9, 1.2, 0.0), 6, (0.02, 0.02, 0.0))),
        # One measurement repeated: the first Δg pairs exist but Δm = 0 (a zero quotient).
        case("constant_m", (20.0, 50.0, 0.01), third, [[0.8, 1.1, 0.0]] * 8),
    ]
    for r in range(3):
        g0 = [float(x) for x in rng.dirichlet(np.ones(3))]
        target = (float(rng.uniform(0.0, 12.0)), float(rng.uniform(0.0, 100.0)), float(rng.uniform(0.0, 0.05)))
        ms = [[float(np.float32(rng.uniform(0.2, 1.0))), float(np.float32(rng.uniform(1.0, 2.5))),
               float(np.float32(rng.choice([0.0, rng.uniform(0.0, 0.08)])))] for _ in range(16)]
        cases.append({"name": f"random{r}", "target": list(target), "g0": g0,
                      "steps": [(m, float(np.float32(rng.uniform(0.5e6, 1.5e6))), float(np.float32(rng.uniform(0.02, 0.3))))
                                for m in ms]})
    return cases


def write_goal_tuning_vectors(path: str, seed: int = 0) -> str:
    """``goal_tuning.txt``: ``goal_tuning_cases`` run through ``jaxcc.senders.goal_tuning``.

    Format (whitespace-separated, one record per line)::

        case NAME
        target THROUGHPUT_MBPS DELAY_MS LOSS
        goal0 G1 G2 G3
        step M1 M2 M3 THR_MAX_BYTES_PER_S MIN_RTT_S GOAL1 GOAL2 GOAL3    (the goal after the step)
        end
    """
    import jax

    from jaxcc.senders import goal_tuning as gt

    step = jax.jit(gt.step)
    lines = ["# jaxcc.senders.goal_tuning vectors (python -m jaxcc.parity_vectors); do not edit"]
    f = lambda x: f"{float(np.float32(x)):.9g}"  # noqa: E731
    for c in goal_tuning_cases(seed):
        lines += [f"case {c['name']}", "target " + " ".join(map(f, c["target"])), "goal0 " + " ".join(map(f, c["g0"]))]
        st = gt.init(np.float32(c["target"]), np.float32(c["g0"]))
        for m, thr_max, min_rtt in c["steps"]:
            st = step(st, np.float32(m), np.float32(thr_max), np.float32(min_rtt))
            lines.append("step " + " ".join(map(f, list(m) + [thr_max, min_rtt] + list(np.asarray(st.goal)))))
        lines.append("end")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxcc.parity_vectors", description=__doc__.split("\n")[0])
    p.add_argument("--out", metavar="DIR", required=True, help="write the vectors into DIR (the repository's: tests/vectors)")
    p.add_argument("--seed", type=int, default=0, help="the one seed everything is drawn from (committed: 0)")
    p.add_argument("--mocc-policy", metavar="FILE", default=None,
                   help="a MOCC policy file (the trained one: checkpoints/mocc/mocc.safetensors) for features_mocc_v1 "
                        "and mocc_preference_switch instead of a random policy")
    a = p.parse_args(argv)
    if a.mocc_policy is not None:
        if not os.path.isfile(a.mocc_policy):
            p.error(f"--mocc-policy: {a.mocc_policy!r} does not exist")
        spec, _ = load(a.mocc_policy)
        if spec["features"]["name"] != "mocc_v1":
            p.error(f"--mocc-policy: {a.mocc_policy!r} is a {spec['features']['name']} policy, expected mocc_v1")
    for path in write_vectors(a.out, seed=a.seed, mocc_policy=a.mocc_policy):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
