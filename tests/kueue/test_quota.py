"""Quota tree arithmetic and share values, table-driven from SEMANTICS.md sections 1 and 6."""

import pytest

from makeway.policies.kueue.drs import dominant_resource_share
from makeway.policies.kueue.quota import (CohortSpec, FlavorQuota, TreeError, available, cq_available,
                                          potential_available, quantities_fit_in_quota)

from .helpers import F, cq, quota, tree, wl

FR = (F, "cpu")


def test_lending_limits_hide_local_quota_from_the_cohort():
    t = tree(["c"], [cq("lend1", "c", 6, lending=4), cq("lend2", "c", 6, lending=2)], [wl("w", "lend2", 7)])
    assert t.cohorts["c"].subtree[FR] == 6000
    assert t.cohorts["c"].usage[FR] == 3000
    assert cq_available(t.cqs["lend1"], FR) == 2000 + 3000  # own local 2 + what the cohort has left


def test_removing_usage_is_the_inverse_of_adding_it():
    t = tree(["c"], [cq("a", "c", 6, lending=2), cq("b", "c", 6)])
    for w in (wl("w1", "a", 3), wl("w2", "a", 4), wl("w3", "b", 1)):
        t.add_workload(w)
    for name in ("w2", "w1", "w3"):
        node = t.cqs["a" if name != "w3" else "b"]
        t.remove_workload(node.workloads[name])
    assert all(v == 0 for n in t.nodes() for v in n.usage.values())


@pytest.mark.parametrize("borrowing_limit, used_other, expected", [
    (None, 0, 20), (None, 5, 15), (2, 0, 12), (2, 9, 11), (0, 0, 10),
])
def test_available_respects_borrowing_limit(borrowing_limit, used_other, expected):
    t = tree(["c"], [cq("a", "c", 10, borrowing=borrowing_limit), cq("b", "c", 10)],
             [wl("x", "b", used_other)] if used_other else [])
    assert available(t.cqs["a"], FR) == expected * 1000


def test_potential_available_ignores_usage():
    t = tree(["c"], [cq("a", "c", 10, borrowing=3), cq("b", "c", 10)], [wl("x", "b", 10)])
    assert potential_available(t.cqs["a"], FR) == 13000
    assert potential_available(t.cqs["b"], FR) == 20000


def test_quantities_fit_in_quota_reports_remaining():
    t = tree(["c"], [cq("a", "c", 4, lending=1), cq("b", "c", 4)], [wl("x", "a", 2)])
    fits, remaining = quantities_fit_in_quota(t.cqs["a"], {FR: 2000})
    assert fits and remaining == {FR: 1000}  # localQuota 3, 1 of it still free
    fits, _ = quantities_fit_in_quota(t.cqs["a"], {FR: 3000})
    assert not fits


@pytest.mark.parametrize("weight, expected", [(1.0, 200), (2.0, 100), (0.5, 400)])
def test_share_of_a_borrower(weight, expected):
    # 2 borrowed against a cohort of 10 lendable
    t = tree(["c"], [cq("a", "c", 0, weight=weight), cq("b", "c", 10)], [wl("x", "a", 2)])
    assert dominant_resource_share(t.cqs["a"]).rounded == expected


def test_weight_zero_borrower_is_infinite_and_weight_zero_within_nominal_is_zero():
    t = tree(["c"], [cq("a", "c", 1, weight=0.0), cq("b", "c", 10)], [wl("x", "a", 2)])
    assert dominant_resource_share(t.cqs["a"]).infinite
    t = tree(["c"], [cq("a", "c", 4, weight=0.0), cq("b", "c", 10)], [wl("x", "a", 2)])
    assert dominant_resource_share(t.cqs["a"]).rounded == 0


def test_child_cohort_share_uses_the_parents_lendable_capacity():
    cohorts = [CohortSpec("root", quotas=quota(50)),
               CohortSpec("child", "root", quotas={FR: FlavorQuota(0, 10000, None)})]
    t = tree(cohorts, [cq("a", "child", 0)], [wl("x", "a", 10)])
    assert dominant_resource_share(t.cqs["a"]).rounded == 1000
    assert dominant_resource_share(t.cohorts["child"]).rounded == 200


def test_standalone_queue_has_zero_share():
    t = tree([], [cq("a", None, 1)], [wl("x", "a", 5)])
    assert dominant_resource_share(t.cqs["a"]).rounded == 0


def test_cohort_cycle_is_refused_naming_the_cohort():
    with pytest.raises(TreeError, match="Cohort/"):
        tree([CohortSpec("x", "y"), CohortSpec("y", "x")], [])
