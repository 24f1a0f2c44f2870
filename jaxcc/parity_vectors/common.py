"""What every vector file shares: float32 lists, the network kinds and goals of the network
vectors, the marker naming the MOCC policy the vectors were written with, the C++ sender's
defaults before a feature set's start, random monitor-interval events and the jitted policy and
feature helpers."""

from __future__ import annotations

import functools
import json

import numpy as np

from jaxcc.policyfile import apply, forward
from jaxcc.units import MBPS



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
ONE_HOT_GOALS = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


# Feature sets whose paper adds rules around the policy (its start, its window, what the next
# features remember of the action): (set, environment); the random policy of each is
# ``policyfile.make_feature_policy``'s.
_PAPER_SETS = (("eagle_v1", "eagle"), ("mocc_v1", "mocc"), ("deepcc_v1", "deepcc"))
# The sender's defaults before a feature set's Start (jaxcc-sender: --init-mbps 1, no window;
# 10 packets of 1472 bytes for window actions).
_SENDER_RATE = 1.0 * MBPS
_SENDER_NO_CWND = 1e30


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


@functools.lru_cache(maxsize=None)
def _jitted_policy(spec_json: str):
    """``(forward, apply)`` of a spec, compiled once per architecture (tensors are arguments)."""
    import jax

    spec = json.loads(spec_json)
    return jax.jit(lambda t, o, g: (forward(spec, t, o, g), apply(spec, t, o, g)))


def event_mi(add_sample, ev: dict):
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
