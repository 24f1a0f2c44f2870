"""Feature-set vectors: monitor-interval statistics -> features -> policy output, per feature set,
and Pareto-Fair v2's sender loop."""

from __future__ import annotations

import json
import os

import numpy as np

from jaxcc.parity_vectors.common import (_SENDER_NO_CWND, event_mi, _f32_list, _jitted_add_sample,
                                 _jitted_policy, _random_mi_events)
from jaxcc.policyfile import apply, forward, make_feature_policy, map_action, save
from jaxcc.units import MBPS, MSS


def _write_feature_vectors(out_dir: str, rng: np.random.Generator, mocc_policy=None) -> list[str]:
    """Feature-parity vectors: per-packet events -> MI statistics -> features -> policy output.

    For each feature set implemented in both jaxcc/envs and the datapath, writes
    ``features_<name>.json`` (+ a matching random policy ``features_<name>.safetensors``).
    Python accumulates the events with ``jaxcc.envs.mi.mi_add_sample`` (the per-packet
    update) in float64, then runs the environment's own feature function; the C++ test feeds
    the same events through its MonitorStats/FeatureFn/Policy and compares.
    """
    written = []
    for name in ("aurora_v1", "pareto_v1"):
        written += _set_vectors(out_dir, name, rng)
    return written


def _write_aurora_v2_vectors(out_dir: str, seed: int) -> list[str]:
    """``features_aurora_v2``, as ``_write_feature_vectors`` writes the others, from draws of its
    own (the other sets' vectors stay as they were)."""
    return _set_vectors(out_dir, "aurora_v2", np.random.default_rng([seed, 4]))


def _set_vectors(out_dir: str, name: str, rng: np.random.Generator) -> list[str]:
    """One feature set's vector file and policy (aurora_v1, aurora_v2 or pareto_v1)."""
    import jax
    import jax.numpy as jnp

    from jaxcc.envs import aurora, mi as mi_lib, pareto

    written = []
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
            m = event_mi(add_sample, ev)
            run = mi_lib.running_update(run, m)
            if name.startswith("aurora_"):
                f = aurora.features(m, run, name == "aurora_v2")[0]
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
    return written


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
            m = event_mi(add_sample, ev)
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
