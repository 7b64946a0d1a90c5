"""Target selection, table-driven in the spirit of Kueue's preemption_test.go (flat cohort, one flavor)."""

from dataclasses import dataclass, field

import pytest

from makeway.policies.kueue.preemption import Preemptor, get_targets

from .helpers import cpu, cq, tree, wl

FR = ("default", "cpu")
LP = "LowerPriority"


@dataclass
class Case:
    name: str
    cqs: list
    workloads: list
    incoming: tuple  # (queue, cpus, priority)
    want: dict  # victim -> reason
    fair: bool = False
    cohorts: list = field(default_factory=lambda: ["c"])


CASES = [
    Case("own queue, lower priority first, newest first",
         [cq("a", "c", 4, within_cluster_queue=LP)],
         [wl("low-old", "a", 2, -1, admitted=1), wl("low-new", "a", 2, -1, admitted=2)],
         ("a", 2, 0), {"low-new": "InClusterQueue"}),
    Case("equal priority is not preempted under LowerPriority",
         [cq("a", "c", 4, within_cluster_queue=LP)], [wl("x", "a", 4, 0)], ("a", 2, 0), {}),
    Case("reclaim from a borrowing queue while staying within nominal",
         [cq("a", "c", 4, reclaim_within_cohort="Any"), cq("b", "c", 4)],
         [wl("b1", "b", 4), wl("b2", "b", 4)], ("a", 4, 0), {"b1": "InCohortReclamation"}),
    Case("no reclaim when the preemptor would borrow",
         [cq("a", "c", 4, reclaim_within_cohort="Any"), cq("b", "c", 4)],
         [wl("b1", "b", 4), wl("b2", "b", 4)], ("a", 6, 0), {}),
    Case("a queue at its nominal is never a victim of reclamation",
         [cq("a", "c", 4, reclaim_within_cohort=LP), cq("b", "c", 4), cq("d", "c", 0)],
         [wl("b1", "b", 4, -1), wl("d1", "d", 4, 5)], ("a", 2, 0), {}),
    Case("equal uid-less ties go to the smaller uid",
         [cq("a", "c", 4, reclaim_within_cohort="Any"), cq("b", "c", 4)],
         [wl("b1", "b", 3), wl("b2", "b", 3), wl("a1", "a", 2)], ("a", 2, 0), {"b1": "InCohortReclamation"}),
    Case("borrowWithinCohort lets a borrower take lower priority work",
         [cq("a", "c", 2, reclaim_within_cohort="Any", borrow_within_cohort=LP), cq("b", "c", 4)],
         [wl("b1", "b", 3, -5), wl("b2", "b", 3, -5)], ("a", 3, 0), {"b1": "InCohortReclaimWhileBorrowing"}),
    Case("maxPriorityThreshold protects candidates above it",
         [cq("a", "c", 2, reclaim_within_cohort="Any", borrow_within_cohort=LP, max_priority_threshold=-10),
          cq("b", "c", 4)],
         [wl("b1", "b", 3, -5), wl("b2", "b", 3, -5)], ("a", 3, 0), {}),
    Case("minimisation keeps the small victim that was not needed",
         [cq("a", None, 6, within_cluster_queue=LP)],
         [wl("low", "a", 1, 1), wl("mid", "a", 2, 2), wl("high", "a", 3, 3)], ("a", 2, 4),
         {"mid": "InClusterQueue"}, cohorts=[]),
    Case("fair sharing takes from the biggest borrower",
         [cq("a", "c", 4, reclaim_within_cohort="Any"), cq("b", "c", 4), cq("d", "c", 4)],
         [wl("b1", "b", 4), wl("b2", "b", 4), wl("a1", "a", 4)],
         ("a", 2, 0), {"b1": "InCohortFairSharing"}, fair=True),
    Case("fair sharing within nominal reclaims without comparing shares",
         [cq("a", "c", 4, reclaim_within_cohort="Any"), cq("b", "c", 4)],
         [wl("b1", "b", 4), wl("b2", "b", 4, admitted=5)], ("a", 3, 0), {"b2": "InCohortReclamation"}, fair=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_targets(case):
    t = tree(case.cohorts, case.cqs, case.workloads)
    queue, cpus, prio = case.incoming
    p = Preemptor("in", queue, prio, cpu(cpus), frozenset({FR}))
    got = {x.workload.name: x.reason for x in get_targets(t, p, case.fair)}
    assert got == case.want


def test_target_selection_leaves_the_tree_unchanged():
    t = tree(["c"], [cq("a", "c", 4, reclaim_within_cohort="Any", within_cluster_queue=LP), cq("b", "c", 4)],
             [wl("b1", "b", 4), wl("b2", "b", 4), wl("a1", "a", 1, -1)])
    before = {n.name: dict(n.usage) for n in t.nodes()}
    for fair in (False, True):
        get_targets(t, Preemptor("in", "a", 0, cpu(4), frozenset({FR})), fair)
        assert {n.name: dict(n.usage) for n in t.nodes()} == before
