"""``write_vectors``: every parity vector file into one folder (``tests/vectors``), the network
vectors of each kind here and the feature-set, paper and goal-tuning vectors from their modules."""

from __future__ import annotations

import json
import os

import numpy as np

from jaxcc.parity_vectors.common import MOCC_POLICY_MARKER, _KINDS, ONE_HOT_GOALS, _f32_list
from jaxcc.parity_vectors.features import _write_aurora_v2_vectors, _write_feature_vectors, _write_pareto_v2_vectors
from jaxcc.parity_vectors.goal_tuning import GOAL_TUNING_VECTORS, write_goal_tuning_vectors
from jaxcc.parity_vectors.papers import _write_paper_vectors
from jaxcc.parity_vectors.safety import SAFETY_VECTORS, write_safety_vectors
from jaxcc.parity_vectors.sender_sets import BUILT_IN, registered_sets, write_sender_vectors
from jaxcc.policyfile import (apply, forward, make_random_policy, map_action, q_objectives, save,
                              scalarised_q)
from jaxcc.units import MBPS, MSS


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
                goals += [np.asarray(g, np.float32) for g in ONE_HOT_GOALS] + [np.zeros(G, np.float32)]
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
    written += _write_paper_vectors(out_dir, rng, mocc_policy)  # after the feature sets': one rng
    marker = os.path.join(out_dir, MOCC_POLICY_MARKER)
    if mocc_policy is not None:
        with open(marker, "w") as f:
            f.write(os.fspath(mocc_policy) + "\n")
        written.append(marker)
    elif os.path.exists(marker):
        os.remove(marker)
    written += _write_pareto_v2_vectors(out_dir, seed)
    written += _write_aurora_v2_vectors(out_dir, seed)
    written.append(write_goal_tuning_vectors(os.path.join(out_dir, GOAL_TUNING_VECTORS), seed))
    written.append(write_safety_vectors(os.path.join(out_dir, SAFETY_VECTORS), seed))
    for name in registered_sets():  # feature sets added beyond the built-in ones (docs/feature-sets.md)
        written += write_sender_vectors(out_dir, name, seed)
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("Generated by `python -m jaxcc.parity_vectors --out tests/vectors`; do not edit.\n"
                "With the trained MOCC policy: add `--mocc-policy=checkpoints/mocc/mocc.safetensors`\n"
                "(features_mocc_v1, mocc_preference_switch, mocc_initscaled and mocc_ackewma then run that file; the rest is unchanged).\n"
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
                "deepcc_window.json is features_deepcc_v1's loop (policy, goal, events) with the file stating\n"
                "`cwnd_rtts`: every decision after the first also sets the ACK-clocked window.\n"
                "mocc_initscaled.json is features_mocc_v1's loop (policy, goal, events) with the file stating\n"
                "`init_ref_rtt_s`: the init step's window is eq. 1's scaled by min RTT / init_ref_rtt_s.\n"
                "mocc_ackewma.json is features_mocc_v1's loop (policy, goal, events) with the file stating\n"
                "`max_ack_ewma`: the max ACK rate is the running max of an EWMA of the MI's ACK rate.\n"
                "goal_tuning.txt: DeepCC's online goal tuner (jaxcc/senders/goal_tuning.py) on measurement\n"
                "sequences -> goal sequences, read by datapath/tests/goal_tuning_test.cc (format in its header).\n"
                "safety.json: the sender's safety net (jaxcc/senders/safety.py: the guard and the runtime\n"
                "monitor) MI by MI for each MI length, read by datapath/tests/vectors_test.cc (src/safety.h).\n"
                "C++ and Python must agree to 1e-5 relative.\n")
    return written


def write_set_vectors(out_dir: str | os.PathLike, name: str, seed: int = 0, policy: str | os.PathLike | None = None,
                      mocc_policy: str | os.PathLike | None = None) -> list[str]:
    """One feature set's vectors (``--features=NAME``): a registered set's, or any set's with
    ``policy``, from its sender (``write_sender_vectors``); a built-in set's without ``policy``
    exactly as the full command writes them (it writes every file into a scratch folder, since
    the built-in sets share one random stream, and keeps this set's two)."""
    import shutil
    import tempfile

    if policy is not None or name not in BUILT_IN:
        return write_sender_vectors(out_dir, name, seed, policy)
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        write_vectors(tmp, seed=seed, mocc_policy=mocc_policy)
        for ext in ("safetensors", "json"):
            dst = os.path.join(out_dir, f"features_{name}.{ext}")
            shutil.copyfile(os.path.join(tmp, f"features_{name}.{ext}"), dst)
            written.append(dst)
    return written


def _check_preference_matters(stem: str, cases: list[dict], per_obs: int) -> None:
    """The multi-objective cases must show that the preference picks the action: for some
    observation the one-hot preferences choose different actions (else the head is not tested)."""
    for i in range(0, len(cases), per_obs):
        if len({c["output"] for c in cases[i + 1:i + 4]}) > 1:
            return
    raise RuntimeError(f"{stem}: no observation where the preference changes the action; pick another seed")
