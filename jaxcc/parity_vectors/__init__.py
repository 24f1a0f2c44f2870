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

Modules: ``vectors`` (``write_vectors``: every file), ``common`` (shared helpers and constants),
``features`` (feature-set vectors, Pareto-Fair v2's loop), ``papers`` (Eagle's, MOCC's and
DeepCC's sender runs, MOCC's preference switch), ``goal_tuning`` (DeepCC's goal tuning),
``sender_sets`` (one set's vectors from its simulator sender: a set added beyond the built-in
ones, or a given policy file, ``--features=SET [--policy=FILE]``; docs/feature-sets.md), ``cli``.
"""

from __future__ import annotations

from jaxcc.parity_vectors.cli import run_cli
from jaxcc.parity_vectors.common import MOCC_POLICY_MARKER, ONE_HOT_GOALS, event_mi
from jaxcc.parity_vectors.goal_tuning import GOAL_TUNING_VECTORS, goal_tuning_cases, write_goal_tuning_vectors
from jaxcc.parity_vectors.papers import MOCC_SWITCH_MI, nearest_rank_p95
from jaxcc.parity_vectors.vectors import write_vectors

__all__ = ["GOAL_TUNING_VECTORS", "MOCC_POLICY_MARKER", "MOCC_SWITCH_MI", "ONE_HOT_GOALS", "event_mi", "goal_tuning_cases",
           "nearest_rank_p95", "run_cli", "write_goal_tuning_vectors", "write_vectors"]
