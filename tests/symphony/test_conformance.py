"""The symphony-rank loader beyond the shared cases (those run in tests/test_conformance.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from makeway.conformance.symphony import decide, run_case



def test_defaults_apply_when_keys_are_omitted():
    # No rank, no scope, no criteria: rank 1 everywhere, equal rank allowed, most over-allocated first.
    inp = {"now": 100, "slots": 6, "sessions": [
        {"name": "A", "deserved": 2, "allocated": 3, "demand": 3,
         "tasks": [{"id": "a1", "startedAt": 10}, {"id": "a2", "startedAt": 20}, {"id": "a3", "startedAt": 30}]},
        {"name": "C", "deserved": 1, "allocated": 3, "demand": 3,
         "tasks": [{"id": "c1", "startedAt": 40}, {"id": "c2", "startedAt": 50}, {"id": "c3", "startedAt": 60}]},
        {"name": "B", "preemptive": True, "deserved": 3, "allocated": 0, "demand": 4}]}
    got = decide(inp)
    assert got == {"preemptor": "B", "preemptedTasks": ["c3", "c2", "a3"], "fromSessions": {"C": 2, "A": 1},
                   "shortfallAfter": {"B": 0}}


def test_deserved_derived_from_priorities_when_absent():
    inp = {"now": 10, "slots": 4, "sessions": [
        {"name": "A", "priority": 1, "allocated": 4, "demand": 4,
         "tasks": [{"id": f"a{i}", "startedAt": i} for i in range(4)]},
        {"name": "B", "priority": 1, "preemptive": True, "allocated": 0, "demand": 2}]}
    got = decide(inp)
    assert got["preemptedTasks"] == ["a3", "a2"]


def test_failure_message_names_the_field():
    case = {"input": {"now": 0, "slots": 1, "sessions": []},
            "expected": {"preemptor": "X", "preemptedTasks": []}}
    result = run_case(case)
    assert not result.ok
    assert "preemptor: expected 'X', got None" in result.message
