"""How long a twin's no-op outcome stays valid (``TwinSkipping``).

A head parked because its pod found no node read the nodes as well as its cohort tree. Within a
call, an admission in another cohort tree only adds promises on the nodes: a single pod that
found no room finds none with less, so the outcome holds until the head's own tree changes or the
nodes change between calls (the node version). A gang's placement is not shown to be monotone,
so its outcome still ends with any change anywhere (the global version).
"""

from __future__ import annotations

import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.kueue import KueueModel
from makeway.sim.engine import SimOptions, simulate
from tests.kueue.test_golden import FullEvaluation, Recording


def cq(name: str, cohort: str, nominal: int) -> Queue:
    return Queue(name, cohort, settings={
        "kind": "ClusterQueue",
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]})


class Counting(Recording):
    """Counts per workload the heads taken (``_process``, evaluated or skipped as a twin) and the
    real evaluations (``_process_head``)."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.visits: dict[str, int] = {}
        self.evaluated: dict[str, int] = {}

    def _process(self, state, tree, h, *args):
        self.visits[h.wl] = self.visits.get(h.wl, 0) + 1
        return super()._process(state, tree, h, *args)

    def _process_head(self, state, tree, h, *args):
        self.evaluated[h.wl] = self.evaluated.get(h.wl, 0) + 1
        return super()._process_head(state, tree, h, *args)


def run(cls: type, pods: int) -> KueueModel:
    """One 4-cpu node, 1 cpu of it held by ``hold`` (cohort a). At t=1 cohort b's ClusterQueue,
    with quota to spare, gets two high-priority heads of 4 cpu (no node has room: parked, the
    second as the first's twin) and cohort a's gets a 1-cpu head, admitted in the same call after
    b's first head was evaluated."""
    queues = [Queue("a", settings={"kind": "Cohort"}), Queue("b", settings={"kind": "Cohort"}),
              cq("qa", "a", 4), cq("qb", "b", 8)]
    state = ClusterState(["cpu"], queues, [Node("n0", {"cpu": 4}, {"flavor": "f"})])
    size = {"cpu": 4 // pods}
    jobs = [Workload("hold", "qa", 0.0, 100.0, (TaskGroup(1, {"cpu": 1}),)),
            Workload("big-1", "qb", 1.0, 10.0, (TaskGroup(pods, size),), 5),
            Workload("big-2", "qb", 1.0, 10.0, (TaskGroup(pods, size),), 5),
            Workload("small", "qa", 1.0, 10.0, (TaskGroup(1, {"cpu": 1}),))]
    model = cls({})
    simulate(state, model, jobs, options=SimOptions(horizon=1.0))
    return model


@pytest.mark.parametrize("pods, evaluations", [(1, 1), (2, 2)])
def test_no_room_outcome_outlives_other_trees_admissions_for_one_pod(pods, evaluations):
    model = run(Counting, pods)
    assert any(" S small/" in line for line in model.log)  # cohort a admitted in that call
    assert model.evaluated["big-1"] == 1
    # the twin is parked unevaluated for a single pod; a gang is evaluated again
    assert model.evaluated.get("big-2", 0) == evaluations - 1
    assert model.log == run(FullEvaluation, pods).log


def run_two_trees(cls: type, strict: bool = False) -> KueueModel:
    """At t=1 cohort a's queue starts five 1-cpu workloads, one per round; cohort b's queue is
    full (2 of 2 cpu held) and gets five 1-cpu twins that cannot be admitted."""
    qb = cq("qb", "b", 2)
    # reclaiming within the cohort, a head without targets holds no quota back (no in-call usage)
    qb.settings["preemption"] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    if strict:
        qb.settings["queueingStrategy"] = "StrictFIFO"
    queues = [Queue("a", settings={"kind": "Cohort"}), Queue("b", settings={"kind": "Cohort"}), cq("qa", "a", 10), qb]
    state = ClusterState(["cpu"], queues, [Node("n0", {"cpu": 16}, {"flavor": "f"})])
    jobs = [Workload("hold", "qb", 0.0, 100.0, (TaskGroup(2, {"cpu": 1}),))]
    jobs += [Workload(f"a{i}", "qa", 1.0, 10.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(5)]
    jobs += [Workload(f"b{i}", "qb", 1.0, 10.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(5)]
    model = cls({})
    simulate(state, model, jobs, options=SimOptions(horizon=1.0))
    return model


def test_a_tree_of_known_twins_takes_its_rounds_at_once_while_another_tree_evaluates():
    model = run_two_trees(Counting)
    assert sum(" S a" in line for line in model.log) == 5
    # round 1 evaluates b0; from round 2 every head of qb is b0's twin and tree b is done at once,
    # while qa's heads are evaluated one round at a time
    assert sum(model.visits.get(f"b{i}", 0) for i in range(5)) == 1
    assert model.log == run_two_trees(FullEvaluation).log


def test_a_strict_fifo_queue_is_not_skipped_by_tree():
    model = run_two_trees(Counting, strict=True)
    assert sum(model.visits.get(f"b{i}", 0) for i in range(5)) == 1  # its head blocks the rest
    assert model.log == run_two_trees(FullEvaluation, strict=True).log
