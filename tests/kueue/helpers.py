"""Paths and small builders shared by the Kueue tests."""

from pathlib import Path

from makeway.policies.kueue.quota import Admitted, CohortSpec, CQSpec, FlavorQuota, Policy, QuotaTree

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared"
CASES = REPO / "tests" / "conformance" / "kueue" / "cases"  # the repository copy of shared/
CONFIGS = SHARED / "configs" / "kueue"
F = "default"


def cpu(n: float) -> dict:
    return {(F, "cpu"): int(n * 1000)}


def quota(nominal: float, borrowing: float | None = None, lending: float | None = None) -> dict:
    m = lambda v: None if v is None else int(v * 1000)  # noqa: E731
    return {(F, "cpu"): FlavorQuota(int(nominal * 1000), m(borrowing), m(lending))}


def cq(name, cohort=None, nominal=0.0, borrowing=None, lending=None, weight=1.0, **policy) -> CQSpec:
    return CQSpec(name, cohort, weight, quota(nominal, borrowing, lending), [(("cpu",), (F,))], Policy(**policy))


def tree(cohorts, cqs, workloads=()) -> QuotaTree:
    t = QuotaTree([c if isinstance(c, CohortSpec) else CohortSpec(c) for c in cohorts], cqs)
    for w in workloads:
        t.add_workload(w)
    return t


def wl(name, queue, cpus, priority=0, admitted=0.0, created=0.0, evicted=False) -> Admitted:
    return Admitted(name, queue, priority, cpu(cpus), admitted, created, name, evicted)


def draw_cluster(draw, strategies=("BestEffortFIFO",), graces=(0.0,), wide=False):
    """A random cluster for the hypothesis tests: 2-5 ClusterQueues under two nested cohorts and
    a second tree (one preemption policy for all), 1-4 nodes of flavor ``f`` and 20-70
    single-pod-set workloads. ``wide`` adds what the compiled loop must also handle: queues with
    no cohort, a priority threshold for borrowing, a ``memory`` resource no quota covers and
    nodes of another flavor. Returns (queues, nodes, workloads, resources)."""
    from hypothesis import strategies as st

    from makeway.core.objects import Node, Queue, TaskGroup, Workload

    within = draw(st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"]))
    reclaim = draw(st.sampled_from(["Any", "LowerPriority", "Never"]))
    borrow = draw(st.sampled_from(["Never", "LowerPriority"])) if reclaim != "Never" else "Never"
    # "other" is a second cohort tree on the same nodes: an admission there moves what a head of
    # the first tree can place, never its quota (``TwinSkipping``'s node version)
    queues = [Queue("org", settings={"kind": "Cohort"}), Queue("sub", "org", settings={"kind": "Cohort"}),
              Queue("other", settings={"kind": "Cohort"})]
    parents = ["org", "sub", "other", None] if wide else ["org", "sub", "other"]
    for i in range(draw(st.integers(2, 5))):
        quota = {"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}
        if draw(st.booleans()):
            quota["borrowingLimit"] = draw(st.integers(0, 6))
        if draw(st.booleans()):
            quota["lendingLimit"] = draw(st.integers(0, 6))
        policy = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim, "borrowWithinCohort": {"policy": borrow}}
        if wide and borrow != "Never" and draw(st.booleans()):
            policy["borrowWithinCohort"]["maxPriorityThreshold"] = draw(st.integers(0, 3))
        settings = {"kind": "ClusterQueue",
                    "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [quota]}]}],
                    "preemption": policy}
        if len(strategies) > 1:
            settings["queueingStrategy"] = draw(st.sampled_from(strategies))
        queues.append(Queue(f"q{i}", draw(st.sampled_from(parents)), weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                            settings=settings))
    def node(i):
        if not wide:
            return Node(f"n{i}", {"cpu": draw(st.integers(2, 6))}, {"flavor": "f"})
        return Node(f"n{i}", {"cpu": draw(st.integers(2, 6)), "memory": draw(st.integers(4, 12))},
                    {"flavor": draw(st.sampled_from(["f", "f", "f", "g"]))})
    nodes = [node(i) for i in range(draw(st.integers(1, 4)))]
    cqs = [q.name for q in queues if q.settings["kind"] == "ClusterQueue"]
    grace = draw(st.sampled_from(graces))
    workloads, t = [], 0.0
    for j in range(draw(st.integers(20, 70))):
        t += draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, 2.0]))
        res = {"cpu": draw(st.integers(1, 3))}
        if wide and draw(st.booleans()):
            res["memory"] = draw(st.integers(0, 4))
        workloads.append(Workload(f"w{j}", draw(st.sampled_from(cqs)), t, draw(st.sampled_from([2.0, 10.0, 30.0])),
                                  (TaskGroup(draw(st.integers(1, 3)), res),), draw(st.integers(0, 3)), grace=grace))
    return queues, nodes, workloads, ["cpu", "memory"] if wide else ["cpu"]
