"""The Kueue model's caches never change a decision (hypothesis).

The model reuses work between heads and calls: a twin head's no-op outcome, GetTargets results
and "no targets" stamps, flavor assignments, and whole calls skipped when nothing moved. Each is
valid only while its stamps say that nothing it read has changed. On random clusters (nested
cohorts, mixed pod shapes, grace periods, classic and fair sharing) the model and
``FullEvaluation`` must decide exactly the same, at the same times, in the same order.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from tests.kueue.test_golden import FullEvaluation, Recording


@st.composite
def clusters(draw):
    within = draw(st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"]))
    reclaim = draw(st.sampled_from(["Any", "LowerPriority", "Never"]))
    borrow = draw(st.sampled_from(["Never", "LowerPriority"])) if reclaim != "Never" else "Never"
    queues = [Queue("org", settings={"kind": "Cohort"}), Queue("sub", "org", settings={"kind": "Cohort"})]
    for i in range(draw(st.integers(2, 5))):
        quota = {"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}
        if draw(st.booleans()):
            quota["borrowingLimit"] = draw(st.integers(0, 6))
        if draw(st.booleans()):
            quota["lendingLimit"] = draw(st.integers(0, 6))
        queues.append(Queue(f"q{i}", draw(st.sampled_from(["org", "sub"])), weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                            settings={"kind": "ClusterQueue",
                                      "resourceGroups": [{"coveredResources": ["cpu"],
                                                          "flavors": [{"name": "f", "resources": [quota]}]}],
                                      "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim,
                                                     "borrowWithinCohort": {"policy": borrow}}}))
    nodes = [Node(f"n{i}", {"cpu": draw(st.integers(2, 6))}, {"flavor": "f"}) for i in range(draw(st.integers(1, 4)))]
    cqs = [q.name for q in queues if q.settings["kind"] == "ClusterQueue"]
    grace = draw(st.sampled_from([0.0, 0.0, 1.5]))
    workloads, t = [], 0.0
    for j in range(draw(st.integers(20, 70))):
        t += draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, 2.0]))
        workloads.append(Workload(f"w{j}", draw(st.sampled_from(cqs)), t, draw(st.sampled_from([2.0, 10.0, 30.0])),
                                  (TaskGroup(draw(st.integers(1, 3)), {"cpu": draw(st.integers(1, 3))}),),
                                  draw(st.integers(0, 3)), grace=grace))
    return queues, nodes, workloads, draw(st.booleans())


def _run(cls, queues, nodes, workloads, fair):
    model = cls({"fairSharing": {}} if fair else {})
    simulate(ClusterState(["cpu"], queues, nodes), model, list(workloads), options=SimOptions(check_invariants=True))
    return model.log


# derandomized: one random CI run drew an example that took 564 s (the same test takes 10-16 s on
# other seeds); until that input is found and made cheap, CI runs a fixed set of 60
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_caches_decide_as_evaluating_every_head(case):
    queues, nodes, workloads, fair = case
    assert _run(Recording, queues, nodes, workloads, fair) == _run(FullEvaluation, queues, nodes, workloads, fair)


class CountsCurrent(Recording):
    """Counts the lookups where pending reasons read the model's own snapshot (``_current``)."""

    hits = 0

    def _current(self, state):
        current = super()._current(state)
        type(self).hits += bool(current)
        return current


def _trails(cls, queues, nodes, workloads, fair):
    model = cls({"fairSharing": {}} if fair else {})
    rec = simulate(ClusterState(["cpu"], queues, nodes), model, list(workloads), options=SimOptions(check_invariants=True))
    return model.log, rec.reasons.rows()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_pending_reasons_read_a_current_snapshot(case):
    """Pending reasons read the model's own snapshot when it is current, a fresh build otherwise;
    the reason trails (codes, times) must be those of the model with ``caches: false``, which
    always builds afresh. (Whether a random run reads any reason at a current snapshot depends on
    when its allocations change, so that the shortcut is taken is asserted on a fixed run below.)"""
    queues, nodes, workloads, fair = case
    assert _trails(CountsCurrent, queues, nodes, workloads, fair) == _trails(FullEvaluation, queues, nodes,
                                                                             workloads, fair)


def _cq(name: str, nominal: int) -> Queue:
    return Queue(name, "org", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}],
        "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                       "borrowWithinCohort": {"policy": "Never"}}})


@pytest.mark.parametrize("fair", [False, True])
def test_a_reason_read_after_a_call_that_decided_nothing_takes_the_current_snapshot(fair):
    """w1 and w2 arrive at instants where the call admits nothing: their first reasons are read
    from the model's own snapshot (the shortcut), and say the same as a fresh build."""
    queues = [Queue("org", settings={"kind": "Cohort"}), _cq("q0", 2), _cq("q1", 0)]
    nodes = [Node("n0", {"cpu": 4}, {"flavor": "f"})]
    workloads = [Workload("w0", "q0", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("w1", "q0", 1.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("w2", "q1", 2.0, 10.0, (TaskGroup(1, {"cpu": 1}),), 0)]
    hits = CountsCurrent.hits
    got = _trails(CountsCurrent, queues, nodes, workloads, fair)
    assert got == _trails(FullEvaluation, queues, nodes, workloads, fair)
    assert got[1] == {"w1": [[1.0, "quota", "q0"]], "w2": [[2.0, "quota", "q1"]]}
    assert CountsCurrent.hits > hits
