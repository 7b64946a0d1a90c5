"""The one-flavor shortcut of ``assign.assign_flavors`` against the general flavor assigner
(hypothesis): random cohort trees with lending and borrowing limits, usage, resource groups of one
or two flavors (``pods`` covered or not), pod sets with uncovered or unknown resources, both
fungibility preferences, classic and fair sharing: the same ``Assignment`` field by field."""

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.policies.kueue import assign as A
from makeway.policies.kueue.quota import Admitted, CohortSpec, CQSpec, FlavorQuota, Policy, QuotaTree


@st.composite
def cases(draw):
    flavors = ("f", "g") if draw(st.integers(0, 3)) == 0 else ("f",)
    covered = ("cpu", "memory", "pods") if draw(st.booleans()) else ("cpu", "memory")
    groups = [(covered, flavors)]
    frs = [(f, r) for f in flavors for r in covered]

    def quota():
        return FlavorQuota(draw(st.integers(0, 8)), draw(st.none() | st.integers(0, 6)), draw(st.none() | st.integers(0, 6)))

    cohorts = [CohortSpec("org", None, quotas={fr: FlavorQuota(draw(st.integers(0, 6))) for fr in frs}),
               CohortSpec("sub", "org", quotas={fr: FlavorQuota(draw(st.integers(0, 6))) for fr in frs})]
    cqs = [CQSpec(f"q{i}", draw(st.sampled_from(["org", "sub"])), quotas={fr: quota() for fr in frs}, groups=groups,
                  policy=Policy(reclaim_within_cohort=draw(st.sampled_from(["Never", "Any"])),
                                borrow_within_cohort=draw(st.sampled_from(["Never", "LowerPriority"]))))
           for i in range(draw(st.integers(1, 4)))]
    admitted = [Admitted(f"w{j}", f"q{draw(st.integers(0, len(cqs) - 1))}", 0,
                         {fr: draw(st.integers(1, 4)) for fr in draw(st.sets(st.sampled_from(frs), min_size=1))})
                for j in range(draw(st.integers(0, 10)))]
    resources = draw(st.sampled_from([["cpu"], ["cpu"], ["cpu", "memory"], ["cpu", "pods"], ["cpu", "gpu"]]))
    pod_set = {r: draw(st.integers(0 if r != "cpu" else 1, 6)) for r in resources}
    fung = draw(st.sampled_from([None, {"preference": "PreemptionOverBorrowing"},
                                 {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"}]))
    excluded = draw(st.sampled_from([None, None, {"f": "untolerated taint"}, {"g": "untolerated taint"}]))
    return cohorts, cqs, admitted, pod_set, fung, excluded, draw(st.booleans()), draw(st.sampled_from(
        [{"cpu", "memory", "pods"}, {"cpu", "memory"}, {"cpu"}]))


@settings(max_examples=100, deadline=None)
@given(cases())
def test_one_flavor_shortcut_assigns_as_the_general_assigner(case):
    cohorts, cqs, admitted, pod_set, fung, excluded, fair, covered = case
    tree = QuotaTree(cohorts, cqs)
    for wl in admitted:
        tree.add_workload(wl)
    cq = tree.cqs["q0"]
    got = A.assign_flavors(cq, [pod_set], covered, fair, fung, excluded)
    A.ONE_FLAVOR = False
    try:
        want = A.assign_flavors(cq, [pod_set], covered, fair, fung, excluded)
    finally:
        A.ONE_FLAVOR = True
    assert got == want
    assert list(got.usage) == list(want.usage)
