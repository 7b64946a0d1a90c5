"""Loader for ``symphony-rank`` cases: one SSM preemption decision over given slot counts.

The case's sessions become ``SessionView``s and go through the same rule functions the simulator
model calls (``preemptors``, ``select_victims``, ``need_of``; ``proportional_deserved`` when a
case leaves ``deserved`` out but gives priorities). Only the outcome is compared: preemptor,
preempted tasks in selection order, slots per victim session and the remaining shortfall.
"""

from __future__ import annotations

from typing import Any

from makeway.conformance.result import CaseResult
from makeway.policies.symphony.rules import (
    DEFAULT_PRIORITY, DEFAULT_RANK, SessionView, TaskView, need_of, normalize_criteria, normalize_scope,
    preemptors, proportional_deserved, select_victims,
)


def _sessions(inp: dict[str, Any]) -> list[SessionView]:
    now = float(inp.get("now", 0))
    out = []
    for i, raw in enumerate(inp.get("sessions", [])):
        name = str(raw["name"])
        tasks = []
        for t in raw.get("tasks", []):
            start = float(t.get("startedAt", now))
            elapsed = float(t["elapsedSeconds"]) if "elapsedSeconds" in t else now - start
            tasks.append(TaskView(str(t["id"]), name, start, elapsed, int(t.get("slots", 1)), t.get("slot")))
        allocated = int(raw.get("allocated", sum(t.slots for t in tasks)))
        out.append(SessionView(
            name=name, rank=int(raw.get("rank", DEFAULT_RANK)), preemptive=bool(raw.get("preemptive", False)),
            deserved=int(raw["deserved"]) if "deserved" in raw else -1, allocated=allocated,
            demand=int(raw.get("demand", allocated)), priority=int(raw.get("priority", DEFAULT_PRIORITY)),
            order=(i,), tasks=tasks))
    return out


def decide(inp: dict[str, Any]) -> dict[str, Any]:
    """The decision for one case input, in the case's ``expected`` shape."""
    sessions = _sessions(inp)
    slots = int(inp.get("slots", 0))
    if any(s.deserved < 0 for s in sessions):
        computed = proportional_deserved(slots, ((s.name, s.priority, s.demand) for s in sessions))
        for s in sessions:
            if s.deserved < 0:
                s.deserved = computed[s.name]
    config = inp.get("config") or {}
    scope = normalize_scope(config.get("preemptionScope"))
    criteria = normalize_criteria(config.get("preemptionCriteria"))
    free = slots - sum(s.allocated for s in sessions)
    chosen = preemptors(sessions)
    if not chosen:
        # Nobody may preempt: report the deficit of every under-allocated session that wants more.
        waiting = {s.name: need_of(s, free) for s in sessions if s.under_allocated and s.demand > s.allocated}
        return {"preemptor": None, "preemptedTasks": [], "fromSessions": {}, "shortfallAfter": waiting}
    # The cases hold at most one preemptor; the first in our order decides, as in the simulator.
    sel = select_victims(chosen[0], sessions, free, scope, criteria)
    return {"preemptor": sel.preemptor, "preemptedTasks": [t.id for t in sel.victims],
            "fromSessions": dict(sel.from_sessions), "shortfallAfter": {sel.preemptor: sel.shortfall}}


def run_case(case: dict) -> CaseResult:
    expected = case.get("expected", {})
    got = decide(case.get("input", {}))
    ok = all(got.get(k) == v for k, v in expected.items())
    diffs = [f"{k}: expected {v!r}, got {got.get(k)!r}" for k, v in expected.items() if got.get(k) != v]
    return CaseResult(ok, expected, got, "; ".join(diffs))
