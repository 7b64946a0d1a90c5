"""The class a compiled YuniKorn loop can take (``policies.yunikorn.fast.pack.unsupported``):
the preemption benchmark is inside it, and each way out of it is named, first thing first."""

from dataclasses import replace

import pytest

from makeway.benchmarks import preemption_scenario
from makeway.core.objects import Node, Queue, TaskGroup
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.fast.pack import unsupported
from makeway.registry import load_model


def _scenario():
    state, jobs = preemption_scenario(30, 10)
    return state, jobs


def _queues(state, **changes):
    """The scenario's queues with one changed: ``name=dict(field=value)``."""
    out = []
    for q in state.queues.values():
        kw = changes.get(q.name, {})
        out.append(Queue(q.name, kw.get("parent", q.parent), guaranteed=kw.get("guaranteed", q.guaranteed),
                         max=kw.get("max", q.max), settings=kw.get("settings", q.settings)))
    out += [Queue(n, kw["parent"], settings=kw.get("settings", {})) for n, kw in changes.items() if n not in state.queues]
    return out


def test_the_preemption_benchmark_is_inside():
    state, jobs = _scenario()
    assert unsupported(state, load_model("yunikorn", {}), jobs) is None


def _state(queues=None, nodes=None):
    base, _ = _scenario()
    return ClusterState(base.resources, queues or list(base.queues.values()), nodes or list(base.nodes.values()))


def _refusal(case):
    state, jobs = _scenario()
    settings, queues, nodes, jobs = case(state, jobs)
    return unsupported(_state(queues, nodes), load_model("yunikorn", settings), jobs, gangs=True)


CASES = {
    "another model": (lambda s, j: ({}, None, None, j), "not the yunikorn model"),
    "preemption off": (lambda s, j: ({"preemptionEnabled": False}, None, None, j), "settings.preemptionEnabled"),
    "quota preemption on": (lambda s, j: ({"quotaPreemptionEnabled": True}, None, None, j),
                            "settings.quotaPreemptionEnabled"),
    "a guaranteed root": (lambda s, j: ({}, _queues(s, root={"guaranteed": {"cpu": 10}}), None, j),
                          "queue root: a guaranteed or max"),
    "a deeper queue": (lambda s, j: ({}, _queues(s, deep={"parent": "q0"}), None, j), "queue q0: not a leaf"),
    "a leaf max": (lambda s, j: ({}, _queues(s, q3={"max": {"cpu": 4}}), None, j), "queue q3: a max"),
    "a fractional guarantee": (lambda s, j: ({}, _queues(s, q2={"guaranteed": {"cpu": 1.5}}), None, j),
                               "queue q2: a guaranteed that is not"),
    "a fence": (lambda s, j: ({}, _queues(s, q1={"settings": {"properties": {"preemption.policy": "fence"}}}), None, j),
                "queue q1: a preemption or priority policy"),
    "a priority offset": (lambda s, j: ({}, _queues(s, q4={"settings": {"properties": {"priority.offset": "5"}}}),
                                        None, j), "queue q4: a preemption or priority policy"),
    "an unschedulable node": (lambda s, j: ({}, None, [Node("n0", {"cpu": 32}, schedulable=False)]
                                            + [n for n in s.nodes.values() if n.name != "n0"], j),
                              "node n0: not schedulable"),
    "a fractional capacity": (lambda s, j: ({}, None, [Node("n0", {"cpu": 0.5})], j), "node n0: not schedulable, or a capacity"),
    "two task groups": (lambda s, j: ({}, None, None, [replace(j[0], groups=(j[0].groups[0], j[0].groups[0]))] + j[1:]),
                        f"workload {_scenario()[1][0].id}: not one task group"),
    "an empty group": (lambda s, j: ({}, None, None, [replace(j[0], groups=(replace(j[0].groups[0], count=0),))] + j[1:]),
                       f"workload {_scenario()[1][0].id}: not one task group"),
    "a zero request": (lambda s, j: ({}, None, None, j[:3] + [replace(j[3], groups=(TaskGroup(1, {"cpu": 0, "memory": 1}),))]),
                       f"workload {_scenario()[1][3].id}: a request that is not in positive whole numbers"),
    "other resources": (lambda s, j: ({}, None, None, j[:2] + [replace(j[2], groups=(TaskGroup(1, {"cpu": 1}),))]),
                        f"workload {_scenario()[1][2].id}: asks for other resources than ['cpu', 'memory']"),
    "a grace period": (lambda s, j: ({}, None, None, j[:1] + [replace(j[1], grace=30.0)]),
                       f"workload {_scenario()[1][1].id}: not preemptible, a grace period, or settings"),
    "a required node": (lambda s, j: ({}, None, None, [replace(j[0], settings={"requiredNode": "n1"})]),
                        f"workload {_scenario()[1][0].id}: not preemptible, a grace period, or settings"),
    "a huge priority": (lambda s, j: ({}, None, None, [replace(j[0], priority=2**31)]),
                        f"workload {_scenario()[1][0].id}: a priority that is not a 32-bit integer"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_way_out_is_named(name):
    case, expected = CASES[name]
    if name == "another model":
        state, jobs = _scenario()
        assert unsupported(state, load_model("kueue", {}), jobs) == expected
        return
    got = _refusal(case)
    assert got is not None and got.startswith(expected), got


def test_gangs_are_inside_where_asked_for():
    """A workload of several tasks of one group is inside the class the dispatch asks about
    (``gangs=True``); the keyword's default keeps the one-task class."""
    state, jobs = _scenario()
    jobs = [replace(j, groups=(replace(j.groups[0], count=1 + i % 4),)) for i, j in enumerate(jobs)]
    assert unsupported(state, load_model("yunikorn", {}), jobs, gangs=True) is None
    assert unsupported(state, load_model("yunikorn", {}), jobs) == f"workload {jobs[1].id}: not one task"


def test_a_state_already_running_work_is_outside():
    state, jobs = _scenario()
    state.submit(jobs[0])
    assert unsupported(state, load_model("yunikorn", {}), jobs[1:]) == "the state already holds workloads"
