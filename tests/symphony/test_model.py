"""The SymphonyModel in the simulator: deserved shares, placement, rank preemption, examples."""

from __future__ import annotations

import pytest

from makeway.core.decisions import Preempt, Start
from makeway.registry import load_model
from makeway.policies.symphony.model import SymphonyModel, session_settings, task_slots

from .helpers import preempts, run, run_example, session, slot_cluster


def _schedule(state, model, now):
    decisions = model.schedule(state, now)
    for d in decisions:
        if isinstance(d, Preempt):
            state.end(d.allocation)
            state.requeue(d.allocation)
        elif isinstance(d, Start):
            state.start(d.task, d.node, now)
    return decisions


def test_registered_and_grace_zero():
    model = load_model("symphony", {})
    assert isinstance(model, SymphonyModel)
    state = slot_cluster()
    state.submit(session("s"))
    _schedule(state, model, 0)
    alloc = next(iter(state.allocations))
    assert model.grace_period(state, alloc) == 0.0


def test_sole_session_takes_every_slot():
    state = slot_cluster(hosts=2, slots=4)
    state.submit(session("a", tasks=10))
    model = SymphonyModel({})
    starts = [d for d in _schedule(state, model, 0) if isinstance(d, Start)]
    assert len(starts) == 8
    assert len(state.pending["a"]) == 2


def test_free_slots_split_by_priority():
    state = slot_cluster(hosts=1, slots=8)
    state.submit(session("low", tasks=8, priority=1))
    state.submit(session("high", tasks=8, priority=3))
    _schedule(state, SymphonyModel({}), 0)
    assert len(state.running["low"]) == 2
    assert len(state.running["high"]) == 6


@pytest.mark.parametrize("scope,victim_counts", [
    ("LowerOrEqualRankedSessions", {"a": 2}),
    ("LowerRankedSessions", {}),
])
def test_equal_rank_preemption_depends_on_scope(scope, victim_counts):
    state = slot_cluster(hosts=1, slots=4, consumer_settings={"preemptionScope": scope})
    state.submit(session("a", tasks=4, rank=10))
    model = SymphonyModel({})
    _schedule(state, model, 0)
    state.submit(session("b", submit=10, tasks=4, rank=10, preemptive=True))
    decisions = _schedule(state, model, 10)
    got: dict[str, int] = {}
    for d in decisions:
        if isinstance(d, Preempt):
            assert d.reason.model == "symphony" and d.reason.rule == "rank-preemption"
            assert d.reason.preemptor == "b"
            got[d.allocation.split("/")[0]] = got.get(d.allocation.split("/")[0], 0) + 1
    assert got == victim_counts
    assert len(state.running["b"]) == sum(victim_counts.values())


def test_higher_rank_victim_is_never_taken():
    state = slot_cluster(hosts=1, slots=4)
    state.submit(session("vip", tasks=4, rank=50))
    model = SymphonyModel({})
    _schedule(state, model, 0)
    state.submit(session("b", submit=5, tasks=4, rank=10, preemptive=True))
    assert not any(isinstance(d, Preempt) for d in _schedule(state, model, 5))


def test_non_preemptible_workload_is_never_a_victim():
    state = slot_cluster(hosts=1, slots=4)
    state.submit(session("a", tasks=4, preemptible=False))
    model = SymphonyModel({})
    _schedule(state, model, 0)
    state.submit(session("b", submit=5, tasks=4, rank=5, preemptive=True))
    assert not any(isinstance(d, Preempt) for d in _schedule(state, model, 5))


@pytest.mark.parametrize("sharing,want", [("none", ["young/0/0", "young/0/1"]), ("host", ["young/0/0"])])
def test_host_slot_sharing_protects_tasks_next_to_a_high_rank_session(sharing, want):
    state = slot_cluster(hosts=2, slots=4, consumer_settings={"slotSharing": sharing})
    model = SymphonyModel({})
    state.submit(session("old", tasks=3, rank=1))
    _schedule(state, model, 0)                       # old x3 on h0
    state.submit(session("young", submit=1, tasks=4, rank=1))
    _schedule(state, model, 1)                       # young: h0 x1, h1 x3
    state.submit(session("vip", submit=1.5, tasks=1, rank=100))
    _schedule(state, model, 1.5)                     # vip on h1
    assert state.allocations["young/0/0"].node == "h0"
    assert state.allocations["vip/0/0"].node == "h1"
    state.submit(session("b", submit=2, tasks=2, rank=5, preemptive=True))
    decisions = _schedule(state, model, 2)
    # deserved: vip 1, b 2 (both capped by demand), old 3, young 2: young is 2 over. With host
    # sharing its tasks on h1 count at vip's rank 100, beyond b's rank 5, so only one slot goes.
    victims = [d for d in decisions if isinstance(d, Preempt)]
    assert [d.allocation for d in victims] == want
    assert all(d.reason.values["slot_rank"] == 1 and d.reason.values["victim_deserved"] == 2 for d in victims)
    assert len([d for d in decisions if isinstance(d, Start)]) == len(want)


def test_session_type_resolution_prefers_creation_values():
    state = slot_cluster(consumer_settings={"sessionTypes": {"urgent": {"preemptive": True, "preemptionRank": 20,
                                                                        "priority": 50}}})
    wl = session("x", stype="urgent")
    assert session_settings(state, wl).preemptive is True
    assert session_settings(state, wl).rank == 20
    assert session_settings(state, wl).priority == 50
    wl2 = session("y", stype="urgent", rank=3, priority=2)
    assert (session_settings(state, wl2).rank, session_settings(state, wl2).priority) == (3, 2)
    assert session_settings(state, session("z")).rank == 1
    assert session_settings(state, session("z")).preemptive is False


def test_slots_derive_from_cpu_without_a_slots_resource():
    assert task_slots({"cpu": 2.5}, "cpu") == 3
    assert task_slots({"memory": 1}, "cpu") == 1


def test_requeued_tasks_finish_later():
    state = slot_cluster(hosts=1, slots=2)
    rec = run(state, [session("a", tasks=2, duration=100, rank=1),
                      session("b", submit=10, tasks=2, duration=50, rank=5, preemptive=True)])
    assert state.is_finished("a") and state.is_finished("b")
    assert len(preempts(rec)) == 1  # deserved 1 each: b takes exactly a's excess


def test_example_rank_20_preempts_rank_10_and_peer_preempts_equal_rank():
    rec = run_example("cluster.yaml")
    by = {}
    for e in preempts(rec):
        by.setdefault(e["reason"]["preemptor"], set()).add(e["workload"])
    assert by == {"peer": {"batch-a", "batch-b"}, "urgent": {"batch-a", "batch-b"}}


def test_example_lower_ranked_scope_protects_equal_rank():
    rec = run_example("cluster-lower-ranked.yaml")
    events = preempts(rec)
    assert events and all(e["reason"]["preemptor"] == "urgent" for e in events)
    assert all(e["reason"]["values"]["victim_rank"] < e["reason"]["values"]["preemptor_rank"] for e in events)


@pytest.mark.parametrize("settings,message", [
    ({"preemptionScope": "Everyone"}, "queues.app.settings"),
    ({"slotSharing": "rack"}, "queues.app.settings.slotSharing"),
    ({"sessionTypes": {"t": {"preemptionRank": "high"}}}, "queues.app.settings.sessionTypes.t.preemptionRank"),
])
def test_bad_consumer_settings_are_refused_at_bind(settings, message):
    from makeway.errors import ConfigError

    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        SymphonyModel({}).bind(slot_cluster(consumer_settings=settings))


def test_bad_model_settings_are_refused():
    from makeway.errors import ConfigError

    with pytest.raises(ConfigError, match="preemption.settings"):
        SymphonyModel({"preemptionCriteria": "Oldest"})
