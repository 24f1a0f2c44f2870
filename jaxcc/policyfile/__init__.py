"""The exported policy file shared by the JAX side and the C++ datapath.

A policy file is a safetensors file: float32 little-endian tensors plus a
``__metadata__`` map whose key ``"jaxcc"`` holds a JSON string, the *spec*.
The spec says how to compute features, which layers to run, and how to turn
the network output into a sending rate or congestion window. The C++ loader in
``datapath/src/policy.cc`` implements exactly the same rules; the two are held
together by test vectors written by ``python -m jaxcc.parity_vectors --out
tests/vectors`` (``jaxcc.parity_vectors``).

Random policies (tests, and a file of any feature set for ``policy:FILE`` without a
trained one)::

    python -m jaxcc.policyfile --random=q_values --out=FILE   # a network of that kind
    python -m jaxcc.policyfile --random=mocc_v1 --out=FILE    # one that fits a feature set
    python -m jaxcc.policyfile --check=FILE                   # validate, print the spec

Spec (version 1)::

    {"format": "jaxcc-policy", "version": 1,
     "algorithm": "pareto|aurora|eagle|mocc|deepcc|random",
     "features": {"name": "pareto_v1", "history": T, "obs_dim": D, ...},
     "mi_rtts": k,            # monitor interval = k * min RTT
     "goal_dim": G,           # 0 when the policy takes no goal vector
     "layers": [...],         # see below
     "head": {...},           # see below
     "action": {...}}         # see below

Layers, applied in order to the observation window ``x`` of shape ``[T, D]``
(oldest first):

* ``dense`` (``in``, ``out``, ``activation``): ``act(x @ kernel + bias)`` on
  the last axis, so it works per time step on ``[T, in]`` or on a vector.
* ``lstm`` (``in``, ``hidden``): runs over the time axis from a zero state and
  returns the whole sequence ``[T, hidden]``. Gate order i, f, g, o.
* ``conv1d`` (``in``, ``out``, ``kernel``, ``activation``): VALID, stride 1,
  ``[T, in] -> [T-K+1, out]``; ``y[t] = b + sum_k x[t+k] @ W[k]``.
* ``last_step``: ``[T, X] -> [X]``.
* ``flatten``: any shape to a vector (row-major, time-major for ``[T, X]``).
* ``concat_goal``: vector ``[X]`` -> ``[X + G]`` (goal appended last); it may appear
  several times (DeepCC's goal reaches every merged layer).
* ``select`` (``start`` a, ``stop`` b): keeps features ``[a, b)`` of the last axis,
  ``[T, D] -> [T, b-a]`` or ``[D] -> [b-a]``; ``0 <= a < b <= D``.
* ``goal``: the output is the goal vector ``[G]`` (its input is dropped); needs
  ``goal_dim > 0``.
* ``branches`` (``branches``: a list of non-empty layer lists): each branch runs on a
  copy of the current input and must end in a vector; the outputs are concatenated in
  branch order.  A branch may hold any layer but ``branches`` (no nesting).  Layer
  (tensor) names are global: unique across all branches and the main list.

With ``goal_dim > 0`` some ``concat_goal`` or ``goal`` layer must read the goal.
DeepCC's actor (the DeepCC paper's §IV-B Fig. 4 and §V "Training": state, measurement
and goal each through their own network, the goal added to every merged layer;
``make_random_policy("conv1d_goal")``) is::

    branches: [[select 0:4, conv1d(4->32, k3, relu), flatten],           # 16 past states
               [last_step, select 4:7, dense 64 relu x3],                # measurement m_t
               [goal, dense 64 relu x3]]                                 # goal g
    concat_goal, dense(->64, relu), concat_goal, dense(->1, linear)

Heads take the final layer's output vector ``z`` (the last layer should be a
``linear`` dense):

* ``continuous`` (``low``, ``high``): ``low + (tanh(z) + 1) / 2 * (high - low)``.
* ``gaussian_mean`` (``low``, ``high``): ``clip(z, low, high)`` (the mean of the
  Gaussian used in training; deployment is deterministic).
* ``discrete`` (``n``): ``argmax(z)`` (first maximum).
* ``q_values`` (``n``, optional ``objectives`` M, an integer >= 1, default 1): with M = 1
  ``argmax(z)`` (first maximum), ``z`` has ``n`` values.  With M > 1 (a multi-objective Q
  network, MOCC's envelope Q-learning, Algorithm 2) the network outputs ``n * M`` values,
  action-major (``z[a*M + k]`` = Q_k(s, a, ω), objective k of action a), the spec's ``goal_dim``
  must be M (the goal is the preference ω), and the action is
  ``argmax_a sum_k goal[k] * z[a*M + k]`` (first maximum; the scalarised Q-value ω·Q(s, a, ω)).

Actions (``map_action``); rates are bytes/s, windows bytes; ``a`` is the first
element of a continuous head's output, ``i`` a discrete head's index:

* ``rate_multiplicative``: ``rate * (1 + a)`` (Pareto/Orca style).
* ``aurora`` (``alpha``): ``rate * (1 + alpha*a)`` if ``a >= 0`` else
  ``rate / (1 - alpha*a)`` (Aurora eq. 1).
* ``rate_table`` (``multipliers``): ``rate * multipliers[i]``.
* ``cwnd_table`` (``deltas``, bytes; optional ``multipliers``, default 1 each):
  ``cwnd * multipliers[i] + deltas[i]``, at least 2 MSS (MOCC's table mixes both).
* ``rate_absolute`` (``bound_mbps``; optional ``scale``: ``linear`` (default) or
  ``log``, and with ``log`` ``low_mbps``, ``0 < low < bound``): a continuous output is
  normalised to ``u = (a - low) / (high - low)``, a discrete index to
  ``u = i / (n - 1)``; ``rate = u * bound`` (linear) or ``rate = low * (bound / low) ** u``
  (log: one policy spans links from ``low`` to ``bound`` with the same relative step).

Every action then clamps the rate to ``[min_mbps, max_mbps]`` (optional keys of
the action block, defaults 0.01 and 100000 Mbit/s) so one bad output can never
stop or flood a flow. Rate-only actions leave the window untouched and
``cwnd_table`` leaves the rate untouched.
"""

from __future__ import annotations

from jaxcc.policyfile.cli import run_cli
from jaxcc.policyfile.factories import (FEATURE_ENV_CONFIG, FEATURE_POLICIES, make_feature_policy, make_random_policy,
                                        mlp_policy)
from jaxcc.policyfile.files import load, save
from jaxcc.policyfile.interpreter import apply, forward, lstm_sequence, map_action, q_objectives, scalarised_q
from jaxcc.policyfile.spec import (ACTION_TYPES, ACTIVATIONS, DEFAULT_MAX_MBPS, DEFAULT_MIN_MBPS, FORMAT, HEAD_TYPES,
                                   LAYER_TYPES, MAX_HEADER_BYTES, METADATA_KEY, RATE_SCALES, VERSION,
                                   expected_tensor_shapes, validate)

__all__ = [
    "save", "load", "validate", "apply", "forward", "map_action", "make_random_policy", "mlp_policy",
    "make_feature_policy", "expected_tensor_shapes", "q_objectives", "scalarised_q", "lstm_sequence", "run_cli",
    "FORMAT", "VERSION", "METADATA_KEY", "DEFAULT_MIN_MBPS", "DEFAULT_MAX_MBPS", "LAYER_TYPES", "ACTIVATIONS",
    "HEAD_TYPES", "ACTION_TYPES", "RATE_SCALES", "MAX_HEADER_BYTES", "FEATURE_POLICIES", "FEATURE_ENV_CONFIG",
]
