"""Invariants of quota enforcement on random queues and allocations (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Note, Preempt
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.resources import add_into
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.quota import BEST_EFFORT, UNSUCCESSFUL, QuotaPreemption, configured

TYPES = ("cpu", "mem")
res = st.fixed_dictionaries({"cpu": st.integers(1, 8), "mem": st.integers(1, 8)})


@st.composite
def scenarios(draw):
    """root > p > (a, b); allocations in a and b; the max of p or a is lowered (guaranteed <= new max)."""
    allocs = draw(st.lists(st.tuples(st.sampled_from(["root.p.a", "root.p.b"]), res), min_size=1, max_size=12))
    usage: dict[str, dict] = {"root.p": {}, "root.p.a": {}, "root.p.b": {}}
    for q, r in allocs:
        add_into(usage[q], r)
        add_into(usage["root.p"], r)
    target = draw(st.sampled_from(["root.p", "root.p.a"]))
    used = usage[target]
    new_max = {k: draw(st.integers(0, max(used.get(k, 0), 1))) for k in TYPES}
    guaranteed = draw(st.one_of(st.none(), st.fixed_dictionaries(
        {k: st.integers(0, new_max[k]) for k in TYPES})))
    child_g = draw(st.one_of(st.none(), st.fixed_dictionaries({"cpu": st.integers(0, 10)})))
    return allocs, target, new_max, guaranteed, child_g


def _build(allocs, target, guaranteed, child_g):
    queues = [Queue("root"), Queue("root.p", "root", settings={"properties": {"quota.preemption.delay": "5s"}}),
              Queue("root.p.a", "root.p", child_g), Queue("root.p.b", "root.p")]
    used: dict = {}
    for q, r in allocs:
        if q.startswith(target):
            add_into(used, r)
    for q in queues:
        if q.name == target:  # an old max above usage, so the change is a real lowering (arms the timer)
            q.guaranteed = guaranteed
            q.max = {k: used.get(k, 0) + 1 for k in TYPES}
    state = ClusterState(TYPES, queues, [Node("n", {"cpu": 1000, "mem": 1000})])
    for i, (q, r) in enumerate(allocs):
        state.submit(Workload(f"w{i}", q, 0, 100, (TaskGroup(1, r),)))
        state.start(f"w{i}/0/0", "n", float(i))
    return state


def _run(allocs, target, new_max, guaranteed, child_g):
    state = _build(allocs, target, guaranteed, child_g)
    quota = QuotaPreemption({"quotaPreemptionEnabled": True})
    quota.bind(state)
    old = state.update_queue(target, max=new_max)
    quota.on_config_change(state, target, old, 0.0)
    decisions = quota.run_due(state, 5.0)
    for d in decisions:
        if isinstance(d, Preempt):
            state.end(d.allocation)
    return state, decisions


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_never_below_guarantee_of_the_lowered_queue_and_its_ancestors(sc):
    allocs, target, new_max, guaranteed, child_g = sc
    before = _build(allocs, target, guaranteed, child_g)
    state, _ = _run(*sc)
    for q in state.path_to_root(target):
        g = state.queues[q].guaranteed
        for k, v in (g or {}).items():
            if before.queue_usage[q].get(k, 0) > v:  # above its guarantee before: must not cross it
                assert state.queue_usage[q].get(k, 0) >= v, (q, k)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_after_the_delay_usage_is_within_max_or_the_note_says_why(sc):
    allocs, target, new_max, guaranteed, child_g = sc
    state, decisions = _run(*sc)
    notes = [d for d in decisions if isinstance(d, Note)]
    if configured(new_max) is None:  # an all-zero max is "not set" in YuniKorn: nothing to enforce
        assert not decisions
        return
    over = any(state.queue_usage[target].get(k, 0) > v for k, v in new_max.items())
    if not over:
        return
    assert len(notes) == 1
    n = notes[0]
    assert n.values["verdict"] in (BEST_EFFORT, UNSUCCESSFUL)
    assert f"{n.values['verdict']}: " in n.message


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_no_leaf_sheds_more_than_its_target(sc):
    """Greedy without overshoot, per leaf and on the leaf target's types. (A parent can still shed more
    than its own amount in a type the leaf target dropped: YuniKorn splits only over the types of each
    child's releasable amount and ignores a victim's other types - SEMANTICS 4.5/4.6.)"""
    _, decisions = _run(*sc)
    shed: dict[str, dict] = {}
    target: dict[str, dict] = {}
    for d in decisions:
        if isinstance(d, Preempt):
            leaf = d.reason.values["leaf"]
            add_into(shed.setdefault(leaf, {}), d.reason.values["victim"])
            target[leaf] = d.reason.values["leafPreemptable"]
    for leaf, total in shed.items():
        for k, v in target[leaf].items():
            assert total.get(k, 0) <= v, (leaf, k)
