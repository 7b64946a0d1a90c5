"""Which release requeues a parked (inadmissible) workload.

Kueue moves the inadmissible workloads of a cohort tree back to the active heap when quota is
released in that tree (``QueueAssociatedInadmissibleWorkloadsAfter`` -> ``requeueWorkloadsCQ``:
the ClusterQueue alone without a cohort, else every ClusterQueue under the cohort's root), never
the whole cluster's. A workload the simulator parked because its pods found no room on the nodes
(a check Kueue does not make) waits for room instead, which an end in any tree gives.
"""

import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, simulate


def _cq(name, cohort, nominal):
    return Queue(name, cohort, settings={
        "kind": "ClusterQueue",
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]})


def _cluster(node_cpu: int, nominal: int) -> ClusterState:
    queues = [Queue("A", settings={"kind": "Cohort"}), Queue("B", settings={"kind": "Cohort"}),
              _cq("a1", "A", nominal), _cq("b1", "B", nominal)]
    return ClusterState(["cpu"], queues, [Node("n0", {"cpu": node_cpu}, {"flavor": "f"})])


def _visits(caches: bool, state, workloads):
    """(time, workload) of every head the model looked at, and each workload's first start."""
    model = load_model("kueue", {"caches": caches})
    seen: list[tuple[float, str]] = []
    inner = model._process_strict

    def visit(state, tree, h, now, *rest):
        seen.append((now, h.wl))
        return inner(state, tree, h, now, *rest)

    model._process_strict = visit
    # the model's own heads are watched: the general engine, which calls its ``schedule``
    rec = simulate(state, model, workloads, options=SimOptions(engine="general"))
    return seen, rec.first_start


@pytest.mark.parametrize("caches", [True, False])
def test_quota_released_in_another_tree_leaves_a_parked_workload_parked(caches):
    # b-wait does not fit b1's quota (b-run holds it) and is parked at t=1. a-run's end at t=5
    # releases quota in tree A only: b-wait is not looked at again until b-run ends at t=20.
    workloads = [Workload("a-run", "a1", 0.0, 5.0, (TaskGroup(1, {"cpu": 1}),)),
                 Workload("b-run", "b1", 0.0, 20.0, (TaskGroup(1, {"cpu": 1}),)),
                 Workload("b-wait", "b1", 1.0, 1.0, (TaskGroup(1, {"cpu": 1}),))]
    seen, first_start = _visits(caches, _cluster(node_cpu=10, nominal=1), workloads)
    assert [t for t, w in seen if w == "b-wait"] == [1.0, 20.0]
    assert first_start["b-wait"] == 20.0


@pytest.mark.parametrize("caches", [True, False])
def test_room_freed_by_another_tree_requeues_a_workload_parked_for_room(caches):
    # b-big fits b1's quota but not the node a-run fills: parked for room at t=1, started at
    # a-run's end at t=5, though that end released quota in tree A only.
    workloads = [Workload("a-run", "a1", 0.0, 5.0, (TaskGroup(1, {"cpu": 2}),)),
                 Workload("b-big", "b1", 1.0, 1.0, (TaskGroup(1, {"cpu": 2}),))]
    seen, first_start = _visits(caches, _cluster(node_cpu=2, nominal=2), workloads)
    assert [t for t, w in seen if w == "b-big"] == [1.0, 5.0]
    assert first_start["b-big"] == 5.0


@pytest.mark.parametrize("caches", [True, False])
def test_quota_released_in_the_same_tree_requeues(caches):
    # as the first case, but a-run is in b's tree: its end at t=5 requeues b-wait, which then fits
    state = _cluster(node_cpu=10, nominal=2)
    workloads = [Workload("a-run", "b1", 0.0, 5.0, (TaskGroup(1, {"cpu": 1}),)),
                 Workload("b-run", "b1", 0.0, 20.0, (TaskGroup(1, {"cpu": 1}),)),
                 Workload("b-wait", "b1", 1.0, 1.0, (TaskGroup(1, {"cpu": 1}),))]
    seen, first_start = _visits(caches, state, workloads)
    assert [t for t, w in seen if w == "b-wait"] == [1.0, 5.0]
    assert first_start["b-wait"] == 5.0
