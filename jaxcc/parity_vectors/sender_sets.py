"""Vectors of one feature set from its simulator sender: what a new feature set needs
(``docs/feature-sets.md``), and what ``--features=SET --policy=FILE`` writes for a trained file.

The seven built-in sets (``BUILT_IN``) have their vectors written from the environments' own
code (``features``, ``papers``), and their senders are held to them (``tests/test_senders.py``).
A feature set registered in ``jaxcc.senders.FEATURE_SETS`` beyond them has no environment code
here: its sender module is the Python reference, and ``write_sender_vectors`` runs it through the
sender's whole loop, as the C++ sender runs its twin: ``start``, the first decision on the empty
window, then per monitor interval ``event_mi`` (the per-packet events through
``mi_add_sample``) → ``observe`` → ``decide``, writing ``features_<set>.json`` in the loop format
that ``datapath/tests/features_test.cc`` and ``jaxcc-features-check`` read (``rtt_guess``,
``start``, ``mis`` with the features, network outputs and the rate and window before and after
every decision).

A new set's module provides, besides ``sender(spec, tensors)`` and ``controller(...)`` (every
sender module's), ``random_policy(seed) -> (spec, tensors)``: a policy file of its shape, the
one the committed vectors use (``datapath/templates/feature_set/sender.py.tmpl``).
"""

from __future__ import annotations

import json
import os
import shutil
import zlib

import numpy as np

from jaxcc.parity_vectors.common import (_SENDER_NO_CWND, _f32_list, _jitted_add_sample, _jitted_policy,
                                         _random_mi_events, event_mi)

# Feature sets whose vectors come from the environments' code (``features.py``, ``papers.py``).
BUILT_IN = ("aurora_v1", "aurora_v2", "pareto_v1", "pareto_v2", "eagle_v1", "mocc_v1", "deepcc_v1")
N_MI = 16  # monitor intervals per vector; MIs 0 and 3 bring no ACK, MI 4 a single one


def registered_sets() -> list[str]:
    """The feature sets registered in ``jaxcc.senders.FEATURE_SETS`` beyond ``BUILT_IN``, sorted."""
    from jaxcc import senders

    return sorted(set(senders.FEATURE_SETS) - set(BUILT_IN))


def _stream(seed: int, name: str) -> np.random.Generator:
    """The set's own random stream: adding a set leaves every other file as it was."""
    return np.random.default_rng([seed, 5, zlib.crc32(name.encode())])


def write_sender_vectors(out_dir: str | os.PathLike, name: str, seed: int = 0,
                         policy: str | os.PathLike | None = None) -> list[str]:
    """``features_<name>.json`` and its policy ``features_<name>.safetensors`` in ``out_dir``,
    from the set's sender (see the module docstring).

    Args:
      out_dir: the folder (the repository's: ``tests/vectors``).
      name: a key of ``jaxcc.senders.FEATURE_SETS``.
      seed: the one seed the events and the random policy are drawn from.
      policy: a policy file of the set (e.g. a trained one), copied as the vector's policy;
        without it, the module's ``random_policy``.

    Returns:
      the files written.

    Raises:
      ValueError: ``name`` is not registered, the policy is of another set, or the set's sender
        takes a preference or a target (its vectors need the environment's code, as MOCC's and
        DeepCC's do).
    """
    import jax
    import jax.numpy as jnp

    from jaxcc import policyfile, senders
    from jaxcc.envs import mi as mi_lib
    from jaxcc.senders import common
    from jaxcc.sim.controller import ControllerParams

    if name not in senders.FEATURE_SETS:
        raise ValueError(f"--features: {name!r} is not a registered feature set "
                         f"(jaxcc.senders.FEATURE_SETS: {', '.join(sorted(senders.FEATURE_SETS))})")
    mod = senders.feature_set(name)
    rng = _stream(seed, name)
    if policy is None:
        if not hasattr(mod, "random_policy"):
            raise ValueError(f"--features: {mod.__name__} has no random_policy(seed); give --policy=FILE")
        spec, tensors = mod.random_policy(int(rng.integers(1 << 30)))
    else:
        spec, tensors = policyfile.load(policy)
    if spec["features"]["name"] != name:
        raise ValueError(f"--policy: {os.fspath(policy)!r} is a {spec['features']['name']} policy, expected {name}")
    G = int(spec.get("goal_dim", 0))
    goal = [1.0 / G] * G if G else None  # jaxcc-sender's default without --goal
    snd = mod.sender(spec, tensors, goal=goal) if goal else mod.sender(spec, tensors)
    if snd.preference is not None or snd.takes_target:
        raise ValueError(f"--features: {name}'s sender takes a preference or a target; its vectors come from "
                         "the environment (python -m jaxcc.parity_vectors --out=DIR writes them)")

    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    pol = os.path.join(out_dir, f"features_{name}.safetensors")
    if policy is None:
        policyfile.save(pol, spec, tensors)
    elif os.path.abspath(policy) != os.path.abspath(pol):
        shutil.copyfile(policy, pol)
    events = _random_mi_events(rng, N_MI, no_ack=(0, 3))
    rtt_guess = events[0]["duration"] / float(spec["mi_rtts"])  # the sender's: its first MI / mi_rtts
    jt = common.tensors_as_arrays(tensors)
    net_and_out = _jitted_policy(json.dumps(spec, sort_keys=True))
    g = None if goal is None else jnp.asarray(goal, jnp.float32)
    # The window before the first MI as the simulator's controller starts it (the file's
    # features.empty, else the set's default).
    empty = mod.controller(name, spec, tensors, safe=False).init(ControllerParams.zeros()).hist

    def action(own):
        a = snd.act(own)
        return float(a.rate), min(float(a.cwnd), _SENDER_NO_CWND)

    with jax.enable_x64(True):
        f64 = jnp.float64
        decide = jax.jit(snd.decide)
        add_sample = _jitted_add_sample()
        run = mi_lib.running_zero(1, f64)
        hist = jnp.asarray(empty, jnp.float32)
        own = snd.start(rtt_guess)
        rate_in, cwnd_in = action(own)
        net, out = net_and_out(jt, hist, g)
        own = decide(own, hist, run, rtt_guess)
        rate, cwnd = action(own)
        start = {"rate_in": rate_in, "cwnd_in": cwnd_in, "net_out": _f32_list(net), "output": _out(out),
                 "rate": rate, "cwnd": cwnd}
        mis = []
        for ev in events:
            m = event_mi(add_sample, ev)
            run = mi_lib.running_update(run, m)
            x, own = snd.observe(own, m, run, rtt_guess)
            x = np.asarray(x, np.float64).reshape(-1)
            hist = common.push(hist, jnp.asarray(x))
            rate_in, cwnd_in = action(own)
            net, out = net_and_out(jt, hist, g)
            own = decide(own, hist, run, rtt_guess)
            rate, cwnd = action(own)
            mis.append(dict(ev, rtt_mean=float(mi_lib.rtt_mean(m)[0]), rtt_slope=float(mi_lib.rtt_slope(m)[0]),
                            loss_rate=float(mi_lib.loss_rate(m)[0]), features=[float(v) for v in x],
                            rate_in=rate_in, cwnd_in=cwnd_in, net_out=_f32_list(net), output=_out(out),
                            rate=rate, cwnd=cwnd))
    vec = {"policy": os.path.basename(pol), "features": name, "rtt_guess": rtt_guess, "start": start, "mis": mis}
    if goal:
        vec["goal"] = goal
    path = os.path.join(out_dir, f"features_{name}.json")
    with open(path, "w") as fh:
        json.dump(vec, fh, indent=1)
    return [pol, path]


def _out(out):
    """A head's output as the vectors hold it: an action index, or the float32 values."""
    return int(out) if np.ndim(out) == 0 else _f32_list(out)

