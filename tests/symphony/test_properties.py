"""Invariants of session preemption, checked on random session sets and on random simulations.

No preemption ever leaves a victim session under-allocated, and none takes from a session (or a
shared slot) ranked above the preemptor; under LowerRankedSessions, not even from an equal rank.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.policies.symphony.rules import (
    LOWER, LOWER_OR_EQUAL, MOST_OVER_ALLOCATED, MOST_RECENT_TASK, SessionView, TaskView, preemptors,
    select_victims,
)

from .helpers import preempts, run, session, slot_cluster


@st.composite
def session_sets(draw):
    n = draw(st.integers(2, 6))
    slots_pool = [f"h/{i}" for i in range(draw(st.integers(1, 6)))]
    sessions = []
    for i in range(n):
        name = f"s{i}"
        count = draw(st.integers(0, 6))
        tasks = [TaskView(f"{name}t{j}", name, start := draw(st.integers(0, 999)), 1000 - start, 1,
                          draw(st.one_of(st.none(), st.sampled_from(slots_pool))))
                 for j in range(count)]
        sessions.append(SessionView(
            name, rank=draw(st.integers(1, 5)), preemptive=draw(st.booleans()),
            deserved=draw(st.integers(0, 6)), allocated=count, demand=count + draw(st.integers(0, 4)),
            tasks=tasks))
    return sessions, draw(st.integers(0, 3)), draw(st.sampled_from([LOWER, LOWER_OR_EQUAL])), \
        draw(st.sampled_from([MOST_OVER_ALLOCATED, MOST_RECENT_TASK]))


@settings(max_examples=300, deadline=None)
@given(session_sets())
def test_selection_never_pushes_a_victim_below_deserved_or_reaches_above_rank(data):
    sessions, free, scope, criteria = data
    by_name = {s.name: s for s in sessions}
    for p in preemptors(sessions):
        sel = select_victims(p, sessions, free, scope, criteria)
        taken: dict[str, int] = {}
        for t in sel.victims:
            taken[t.session] = taken.get(t.session, 0) + t.slots
            victim = by_name[t.session]
            assert victim.name != p.name
            assert victim.over_allocated
            rank = sel.slot_ranks[t.id]
            assert rank >= victim.rank
            assert rank < p.rank if scope == LOWER else rank <= p.rank
        assert taken == sel.from_sessions
        for name, n in taken.items():
            assert by_name[name].allocated - n >= by_name[name].deserved
        assert sum(taken.values()) + sel.shortfall == sel.need
        assert len({t.id for t in sel.victims}) == len(sel.victims)


@st.composite
def traces(draw):
    n = draw(st.integers(2, 6))
    return [session(f"w{i}", submit=float(draw(st.integers(0, 50))), tasks=draw(st.integers(1, 6)),
                    duration=float(draw(st.integers(5, 60))), rank=draw(st.integers(1, 4)),
                    preemptive=draw(st.booleans()), priority=draw(st.integers(1, 3)))
            for i in range(n)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from([LOWER, LOWER_OR_EQUAL]), st.sampled_from(["none", "host"]))
def test_simulated_preemptions_respect_rank_and_deserved(workloads, scope, sharing):
    state = slot_cluster(hosts=2, slots=3, consumer_settings={"preemptionScope": scope, "slotSharing": sharing})
    rec = run(state, workloads, horizon=5000)
    for wl in workloads:
        assert state.is_finished(wl.id), f"{wl.id} did not finish"
    for e in preempts(rec):
        v = e["reason"]["values"]
        assert e["reason"]["preemptor"] != e["workload"]
        assert v["victim_allocated"] > v["victim_deserved"]
        assert v["preemptor_allocated"] < v["preemptor_deserved"]
        if scope == LOWER:
            assert v["slot_rank"] < v["preemptor_rank"]
        else:
            assert v["slot_rank"] <= v["preemptor_rank"]
    # per instant, preemptor and victim, no victim session loses more than its excess
    lost: dict[tuple, int] = {}
    excess: dict[tuple, int] = {}
    for e in preempts(rec):
        key = (e["time"], e["reason"]["preemptor"], e["workload"])
        lost[key] = lost.get(key, 0) + 1
        v = e["reason"]["values"]
        excess[key] = v["victim_allocated"] - v["victim_deserved"]
    assert all(lost[k] <= excess[k] for k in lost)
