"""Shared test setup: make ``tests/reference`` importable as ``reference`` whatever pytest's
import mode (the fidelity tests and ``tests/fidelity_report.py`` use it)."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
