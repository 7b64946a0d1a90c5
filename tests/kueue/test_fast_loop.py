"""The compiled Kueue loop (``policies.kueue.fast``) decides exactly as the Python model does.

Reference: ``KueueModel`` through the general engine, its decisions read at every ``schedule``
call. The compiled loop must give the same decisions (starts with their nodes, preemptions with
preemptor and reason), at the same times, in the same calls and the same order: on random
clusters of the class it takes (one flavor-resource, classic preemption, nested cohorts, lending
and borrowing limits, gangs, a node resource no quota covers) and on Kueue's own perf scenario.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from makeway.benchmarks import kueue_baseline  # noqa: E402
from makeway.core.decisions import Preempt, Start  # noqa: E402
from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.kueue.fast.pack import decisions, unsupported  # noqa: E402
from makeway.registry import load_model  # noqa: E402
from makeway.sim.engine import SimOptions, simulate  # noqa: E402
from tests.kueue.helpers import draw_cluster  # noqa: E402

# a drawn cluster can cycle for ever, as Kueue can (``test_memo_equivalence``): the engine stops it
OPTIONS = SimOptions(engine="general", no_progress_window=32.0)


def reference(state, model, workloads):
    """The Python model's decisions in ``pack.decisions``' shape, and when the engine stopped."""
    out: list[list] = []
    calls = [0]
    schedule = model.schedule

    def logged(st_, now):
        calls[0] += 1
        made = schedule(st_, now)
        starts: dict[str, list] = {}
        for d in made:
            if isinstance(d, Start):
                w = d.task.rsplit("/", 2)[0]
                if w not in starts:
                    starts[w] = []
                    out.append(["start", calls[0], now, w, starts[w]])
                starts[w].append(d.node)
            elif isinstance(d, Preempt):
                a = st_.allocations[d.allocation]
                entry = ["preempt", calls[0], now, a.workload, d.reason.preemptor, d.reason.rule,
                         bool(d.reason.values.get("allowBorrowing")), d.reason.values.get("lca")]
                if not out or out[-1] != entry:  # one entry per victim, not per pod
                    out.append(entry)
        return made

    model.schedule = logged
    rec = simulate(state, model, list(workloads), options=OPTIONS)
    for e in out:
        if e[0] == "start":
            e[4] = tuple(sorted(e[4]))
    assert rec.stopped_reason is None or rec.stopped_reason.startswith("no-progress")
    return [tuple(e) for e in out], (rec.last_t if rec.stopped_reason else None), rec.last_t


def _same(state_of, workloads, settings=None):
    """The same decisions, and the same stop where the run cycles (``OPTIONS``' window). The
    compiled run is bounded by the reference's last instant: one that fails to stop a cycle
    fails the test instead of running for ever. Every call's unparked lists, kept from call to
    call, are checked against the pending lists (``check_lists``)."""
    ref, stop, last = reference(state_of(), load_model("kueue", dict(settings or {})), workloads)
    fast, stopped = decisions(state_of(), load_model("kueue", dict(settings or {})), workloads,
                              horizon=last, window=OPTIONS.no_progress_window, check_lists=True)
    assert fast == ref
    assert stopped == stop
    return ref, stop


@st.composite
def clusters(draw):
    queues, nodes, workloads, resources = draw_cluster(draw, wide=True)
    return queues, nodes, workloads, resources, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_compiled_loop_decides_as_the_model(drawn):
    queues, nodes, workloads, resources, caches, prioritize = drawn
    model_settings = {"caches": caches, "prioritizePreemptorWorkloads": prioritize}
    _same(lambda: ClusterState(resources, queues, nodes), workloads, model_settings)


def test_kueue_baseline_decided_the_same():
    """Kueue's perf scenario at 10% of its size: admissions, reclaims within the cohorts,
    preemptions within the queues, victims preempted again as soon as they restart, and queues
    deep enough in twins that whole rounds, and one cohort tree's rounds while the others are
    busy, are skipped (at 5% no head is skipped wrongly by a skip that overshoots)."""
    state, workloads = kueue_baseline(scale=0.1)
    ref, stop = _same(lambda: kueue_baseline(scale=0.1)[0], workloads)
    assert stop is None
    kinds = {e[0] for e in ref}
    assert kinds == {"start", "preempt"} and len(ref) > 6000
    assert {e[5] for e in ref if e[0] == "preempt"} >= {"InCohortReclamation"}


def test_a_victim_goes_back_to_its_queue_in_order():
    """One ClusterQueue, one node: ``low`` runs, ``high`` preempts it at t=1 and starts in the
    engine's second call of that instant, once ``low`` has left. ``later`` (priority 1, parked
    for want of quota) starts before the requeued ``low`` when ``high`` ends, and ``low`` only
    when ``later`` ends (the instant at which ``low`` would have ended is called too, as the
    engine does with its stale finish event; the baseline case depends on that)."""
    queues = [Queue("cq", settings={"kind": "ClusterQueue", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}],
        "preemption": {"withinClusterQueue": "LowerPriority"}})]
    nodes = [Node("n0", {"cpu": 4}, {"flavor": "f"})]
    workloads = [Workload("low", "cq", 0.0, 10.0, (TaskGroup(1, {"cpu": 2}),), 0),
                 Workload("high", "cq", 1.0, 20.0, (TaskGroup(1, {"cpu": 2}),), 5),
                 Workload("later", "cq", 2.0, 5.0, (TaskGroup(1, {"cpu": 1}),), 1)]
    ref, _ = _same(lambda: ClusterState(["cpu"], queues, nodes), workloads)
    assert [(e[0], e[2], e[3]) for e in ref] == [("start", 0.0, "low"), ("preempt", 1.0, "low"), ("start", 1.0, "high"),
                                                 ("start", 21.0, "later"), ("start", 26.0, "low")]


def test_unsupported_names_what_is_outside_the_class():
    state, workloads = kueue_baseline(scale=0.01)
    assert unsupported(state, load_model("kueue", {}), workloads) is None
    assert unsupported(state, load_model("kueue", {"fairSharing": {}}), workloads) == "fair sharing"
    gang = Workload("two-sets", workloads[0].queue, 0.0, 1.0, (TaskGroup(1, {"cpu": 1}), TaskGroup(1, {"cpu": 1})))
    assert unsupported(state, load_model("kueue", {}), [gang]) == "workload two-sets: not one pod set"
    with pytest.raises(ValueError, match="fair sharing"):
        decisions(state, load_model("kueue", {"fairSharing": {}}), workloads)


def test_a_cycling_run_stops_where_the_engine_stops_it():
    """The input a random run drew in which victims reclaim their quota back every 0.5 s and no
    task finishes (``test_memo_equivalence._livelock``): the no-progress watch stops the compiled
    run at the same instant as the engine's, after the same decisions."""
    from tests.kueue.test_memo_equivalence import _livelock

    queues, nodes, workloads, _ = _livelock()
    ref, stop = _same(lambda: ClusterState(["cpu"], queues, nodes), workloads)
    assert stop is not None and sum(e[0] == "preempt" for e in ref) > 100
