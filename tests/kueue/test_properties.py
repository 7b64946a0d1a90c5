"""Invariants of target selection on random cohort trees (hypothesis).

1. Reclamation never takes from a queue that is not above its nominal quota: for every other queue
   that loses workloads, removing all of its victims but the last one leaves it still above nominal
   (classic: on a contested flavor-resource; fair sharing: on some flavor-resource).
2. Decisions do not depend on the order in which workloads, queues and cohorts are listed.
"""


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.conformance.kueue import build_preemptor, build_tree
from makeway.policies.kueue.preemption import get_targets

POLICIES = st.sampled_from(["Never", "LowerPriority", "Any"])
WITHIN = st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])


@st.composite
def scenarios(draw):
    n_cohorts = draw(st.integers(1, 3))
    cohorts = [{"name": "root"}]
    for i in range(1, n_cohorts):
        parent = cohorts[draw(st.integers(0, i - 1))]["name"]
        c = {"name": f"co{i}", "parent": parent}
        if draw(st.booleans()):
            c["resourceGroups"] = _groups(draw(st.integers(0, 6)), None, None)
        cohorts.append(c)
    queues = []
    for i in range(draw(st.integers(2, 5))):
        bl = draw(st.one_of(st.none(), st.integers(0, 6)))
        ll = draw(st.one_of(st.none(), st.integers(0, 6)))
        bwc = draw(st.sampled_from(["Never", "LowerPriority"]))
        reclaim = draw(POLICIES)
        if reclaim == "Never":
            bwc = "Never"
        queues.append({"name": f"q{i}", "cohort": cohorts[draw(st.integers(0, n_cohorts - 1))]["name"],
                       "fairSharingWeight": draw(st.sampled_from([0, 0.5, 1, 2])),
                       "preemption": {"withinClusterQueue": draw(WITHIN), "reclaimWithinCohort": reclaim,
                                      "borrowWithinCohort": {"policy": bwc}},
                       "resourceGroups": _groups(draw(st.integers(0, 8)), bl, ll)})
    workloads = []
    for j in range(draw(st.integers(0, 10))):
        q = queues[draw(st.integers(0, len(queues) - 1))]["name"]
        workloads.append({"name": f"w{j}", "uid": f"w{j}", "clusterQueue": q,
                          "priority": draw(st.integers(-2, 2)),
                          "admittedAt": f"2024-01-01T11:{draw(st.integers(0, 59)):02d}:00Z",
                          "createdAt": f"2024-01-01T10:{draw(st.integers(0, 59)):02d}:00Z",
                          "usage": {"default": {"cpu": draw(st.integers(1, 4))}}})
    preemptor = {"name": "in", "clusterQueue": queues[draw(st.integers(0, len(queues) - 1))]["name"],
                 "priority": draw(st.integers(-2, 3)), "createdAt": "2024-01-01T10:30:00Z",
                 "requests": {"cpu": draw(st.integers(1, 6))}, "count": 1,
                 "assignedFlavors": {"cpu": {"flavor": "default", "mode": "Preempt"}}}
    fair = draw(st.booleans())
    return {"now": "2024-01-01T12:00:00Z", "config": {"fairSharing": {} if fair else None},
            "resourceFlavors": ["default"], "cohorts": cohorts, "clusterQueues": queues,
            "admittedWorkloads": workloads, "preemptor": preemptor}, draw(st.randoms(use_true_random=False))


def _groups(nominal, bl, ll):
    r = {"name": "cpu", "nominalQuota": nominal}
    if bl is not None:
        r["borrowingLimit"] = bl
    if ll is not None:
        r["lendingLimit"] = ll
    return [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [r]}]}]


def _run(inp):
    tree = build_tree(inp)
    p = build_preemptor(inp["preemptor"])
    fair = inp["config"]["fairSharing"] is not None
    return tree, p, get_targets(tree, p, fair)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_reclamation_only_from_queues_above_nominal(data):
    inp, _ = data
    tree, p, targets = _run(inp)
    fair = inp["config"]["fairSharing"] is not None
    by_queue = {}
    for t in targets:
        by_queue.setdefault(t.workload.cq, []).append(t.workload)
    for q, victims in by_queue.items():
        if q == p.cq:
            continue
        node = tree.cqs[q]
        usage = dict(node.usage)
        for v in victims[:-1]:
            for fr, amount in v.usage.items():
                usage[fr] -= amount
        frs = node.subtree.keys() if fair else p.frs_need
        assert any(usage.get(fr, 0) > node.subtree.get(fr, 0) for fr in frs), (q, victims)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_decisions_do_not_depend_on_listing_order(data):
    inp, rnd = data
    _, _, base = _run(inp)
    want = sorted((t.workload.name, t.reason) for t in base)
    for _ in range(3):
        shuffled = dict(inp)
        for key in ("cohorts", "clusterQueues", "admittedWorkloads"):
            items = list(inp[key])
            rnd.shuffle(items)
            shuffled[key] = items
        _, _, got = _run(shuffled)
        assert sorted((t.workload.name, t.reason) for t in got) == want
