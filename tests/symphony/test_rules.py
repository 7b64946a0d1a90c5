"""Table-driven tests of the session-preemption rules (in the spirit of Kueue's preemption_test.go)."""

from __future__ import annotations

import pytest

from makeway.policies.symphony.rules import (
    LOWER, LOWER_OR_EQUAL, MOST_OVER_ALLOCATED, MOST_RECENT_TASK, SessionView, TaskView, need_of,
    normalize_criteria, normalize_scope, preemptors, proportional_deserved, select_victims,
)

NOW = 1000


def sess(name, rank=1, deserved=4, starts=(), preemptive=False, demand=None, slots=None, priority=1):
    """A session whose tasks started at ``starts``; ``slots`` optionally labels each task's slot."""
    tasks = [TaskView(f"{name.lower()}{i + 1}", name, s, NOW - s, 1, (slots or {}).get(i))
             for i, s in enumerate(starts)]
    allocated = len(tasks)
    return SessionView(name, rank, preemptive, deserved, allocated,
                       allocated if demand is None else demand, priority, (), tasks)


def over(name, rank, deserved, n, first=100, step=100, **kw):
    return sess(name, rank, deserved, [first + step * i for i in range(n)], **kw)


CASES = [
    dict(id="equal-rank-default-scope", free=0, scope=LOWER_OR_EQUAL,
         sessions=[over("A", 1, 5, 8), sess("B", 1, 5, [850, 900], True, 6)],
         want=["a8", "a7", "a6"], short=0),
    dict(id="strict-scope-blocks-equal-rank", free=0, scope=LOWER,
         sessions=[over("A", 1, 5, 8), sess("B", 1, 5, [850, 900], True, 6)], want=[], short=3),
    dict(id="higher-rank-immune", free=0,
         sessions=[over("A", 1, 4, 6), over("H", 5, 4, 6, first=910, step=10), sess("B", 3, 4, [], True, 8)],
         want=["a6", "a5"], short=2),
    dict(id="lowest-rank-first", free=0,
         sessions=[over("L", 1, 4, 6), over("M", 2, 4, 6, first=910, step=10), sess("B", 3, 4, [800, 850], True, 6)],
         want=["l6", "l5"], short=0),
    dict(id="spill-to-next-rank", free=0,
         sessions=[over("L", 1, 4, 5), over("M", 2, 4, 7, first=600, step=50), sess("B", 3, 4, [], True, 4)],
         want=["l5", "m7", "m6", "m5"], short=0),
    dict(id="most-over-allocated-default", free=0,
         sessions=[over("X", 1, 4, 7), sess("Y", 1, 4, [560, 570, 580, 590, 950]), sess("B", 1, 4, [840, 860], True, 6)],
         want=["x7", "x6"], short=0),
    dict(id="most-recent-task", free=0, criteria=MOST_RECENT_TASK,
         sessions=[over("X", 1, 4, 7), sess("Y", 1, 4, [560, 570, 580, 590, 950]), sess("B", 1, 4, [840, 860], True, 6)],
         want=["y5", "x7"], short=0),
    dict(id="free-slots-first", free=2,
         sessions=[over("A", 1, 5, 6), sess("B", 1, 5, [700, 800], True, 10)], want=["a6"], short=0),
    dict(id="demand-caps-need", free=0,
         sessions=[over("A", 1, 2, 8), sess("B", 1, 6, [700, 800], True, 3)], want=["a8"], short=0),
    dict(id="shared-slot-judged-by-highest-rank", free=0,
         sessions=[sess("L", 1, 3, [100, 200, 300, 400, 500], slots={3: "h/0", 4: "h/1"}),
                   sess("P", 10, 2, [200, 250], slots={0: "h/0", 1: "h/1"}),
                   sess("B", 3, 5, [600, 650, 700], True, 8)],
         want=["l3", "l2"], short=0),
    dict(id="shared-slot-in-scope-for-high-preemptor", free=0,
         sessions=[sess("L", 1, 3, [100, 200, 300, 400, 500], slots={3: "h/0", 4: "h/1"}),
                   sess("P", 10, 2, [200, 250], slots={0: "h/0", 1: "h/1"}),
                   sess("B", 10, 5, [600, 650, 700], True, 8)],
         want=["l5", "l4"], short=0),
    dict(id="under-allocated-co-tenant-protects", free=0,
         sessions=[sess("L", 1, 3, [100, 200, 300, 400, 500], slots={3: "h/0", 4: "h/1"}),
                   sess("U", 1, 4, [200, 250], slots={0: "h/0", 1: "h/1"}, demand=6),
                   sess("B", 3, 5, [600, 650, 700], True, 8)],
         want=["l3", "l2"], short=0),
    dict(id="all-protected-falls-through", free=0,
         sessions=[sess("L", 1, 2, [100, 200, 300], slots={0: "h/0", 1: "h/1", 2: "h/2"}),
                   sess("P", 10, 3, [150, 250, 350], slots={0: "h/0", 1: "h/1", 2: "h/2"}),
                   over("M", 2, 2, 3, first=300), sess("B", 3, 3, [900], True, 5)],
         want=["m3"], short=1),
    dict(id="not-preemptive-takes-nothing", free=0,
         sessions=[over("A", 1, 5, 8), sess("B", 1, 5, [850, 900], False, 6)], want=[], short=3),
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_select_victims(case):
    sessions = case["sessions"]
    p = next(s for s in sessions if s.name == "B")
    sel = select_victims(p, sessions, case["free"], case.get("scope", LOWER_OR_EQUAL),
                         case.get("criteria", MOST_OVER_ALLOCATED))
    if not p.preemptive:
        assert preemptors(sessions) == []
    assert [t.id for t in sel.victims] == case["want"]
    assert sel.shortfall == case["short"]
    assert sum(sel.from_sessions.values()) == len(case["want"])


@pytest.mark.parametrize("capacity,sessions,want", [
    (10, [("A", 1, 8), ("B", 1, 3)], {"A": 7, "B": 3}),
    (12, [("A", 1, 10), ("B", 3, 12)], {"A": 3, "B": 9}),
    (8, [("a", 1, 6), ("b", 1, 6), ("c", 1, 4)], {"a": 3, "b": 3, "c": 2}),
    (10, [("A", 1, 2), ("B", 1, 2)], {"A": 2, "B": 2}),
    (10, [("A", 1, 0), ("B", 5, 20)], {"A": 0, "B": 10}),
    (0, [("A", 1, 3)], {"A": 0}),
    (7, [("A", 2, 100), ("B", 1, 1), ("C", 1, 100)], {"A": 4, "B": 1, "C": 2}),
])
def test_proportional_deserved(capacity, sessions, want):
    got = proportional_deserved(capacity, sessions)
    assert got == want
    assert sum(got.values()) == min(capacity, sum(d for _, _, d in sessions))


def test_need_is_bounded_by_deficit_demand_and_free_slots():
    s = SessionView("B", deserved=5, allocated=2, demand=4)
    assert need_of(s, 0) == 2
    assert need_of(s, 1) == 1
    assert need_of(s, 5) == 0


@pytest.mark.parametrize("raw,want", [(None, LOWER_OR_EQUAL), ("lowerrankedsessions", LOWER),
                                      ("LowerOrEqualRankedSessions", LOWER_OR_EQUAL)])
def test_scope_tokens(raw, want):
    assert normalize_scope(raw) == want


@pytest.mark.parametrize("raw,want", [(None, MOST_OVER_ALLOCATED), ("most recently started task", MOST_RECENT_TASK),
                                      ("MostOverAllocatedSession", MOST_OVER_ALLOCATED)])
def test_criteria_tokens(raw, want):
    assert normalize_criteria(raw) == want


def test_unknown_tokens_are_refused():
    with pytest.raises(ValueError):
        normalize_scope("AllSessions")
    with pytest.raises(ValueError):
        normalize_criteria("Random")


def test_preemptor_order_prefers_rank_then_deficit():
    a = SessionView("a", rank=1, preemptive=True, deserved=5, allocated=0, demand=5)
    b = SessionView("b", rank=3, preemptive=True, deserved=2, allocated=1, demand=5)
    c = SessionView("c", rank=3, preemptive=True, deserved=4, allocated=1, demand=5)
    idle = SessionView("d", rank=9, preemptive=True, deserved=4, allocated=4, demand=4)
    assert [s.name for s in preemptors([a, b, c, idle])] == ["c", "b", "a"]
