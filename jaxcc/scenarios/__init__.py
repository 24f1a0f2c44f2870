"""Scenarios: the JSON spec users write and its validation (``spec``: ``parse_scenario``, the
format's full description), and the papers' named scenarios and suites (``catalogue``:
``get_scenario``, ``get_suite``, ``SUITES``; ``load_scenario`` takes a file, a dict or a name)."""

from __future__ import annotations

from jaxcc.scenarios.catalogue import SUITES, get_scenario, get_suite, list_scenarios, load_scenario, trace_scenario
from jaxcc.scenarios.spec import (INIT_RATE_MBPS_MAX, INIT_RATE_MBPS_MIN, KB, PREFERENCE_SUM_TOL, REALISM_FIELDS,
                                  TARGET_FIELDS, FlowSpec, LinkSpec, Scenario, init_rate_refusal, parse_scenario)

__all__ = [
    "SUITES", "get_scenario", "get_suite", "list_scenarios", "load_scenario", "trace_scenario", "INIT_RATE_MBPS_MAX",
    "INIT_RATE_MBPS_MIN", "KB", "PREFERENCE_SUM_TOL", "REALISM_FIELDS", "TARGET_FIELDS", "FlowSpec", "LinkSpec",
    "Scenario", "init_rate_refusal", "parse_scenario",
]
