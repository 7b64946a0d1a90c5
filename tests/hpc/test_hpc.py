"""Strict FIFO and EASY backfilling: table tests and properties on a minimal event loop.

The loop here (finishes, then submits, then ``schedule`` at each instant; tasks run ``duration``)
is deliberately tiny so the tests judge the policy, not a simulator.
"""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Note, Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState
from makeway.policies.hpc.model import EasyBackfill, StrictFifo, best_fit, gang_fits
from makeway.core.placement import first_fit
from makeway.core.resources import EPS


def job(id, submit, duration, count=1, cpu=1, requested=None, queue="q"):
    return Workload(id, queue, submit, duration, (TaskGroup(count, {"cpu": cpu}),), requested_duration=requested)


def make_state(nodes, queues=None):
    qs = [Queue("root"), Queue("q", parent="root")] + list(queues or [])
    return ClusterState(["cpu"], qs, [Node(n, {"cpu": c}) for n, c in nodes])


def run(model, nodes, jobs, queues=None):
    """Returns (start time per workload, reservations seen [(time, head, shadow)], notes, node per task)."""
    state = make_state(nodes, queues)
    model.bind(state)
    submits = sorted(jobs, key=lambda w: (w.submit, w.id))
    finishes: list[tuple[float, str]] = []
    starts: dict[str, float] = {}
    placed: dict[str, str] = {}
    reservations, notes = [], []
    i = 0
    while i < len(submits) or finishes:
        now = min(([submits[i].submit] if i < len(submits) else []) + ([finishes[0][0]] if finishes else []))
        while finishes and finishes[0][0] == now:
            state.finish(heapq.heappop(finishes)[1])
        while i < len(submits) and submits[i].submit == now:
            state.submit(submits[i])
            i += 1
        decisions = model.schedule(state, now)
        for d in decisions:
            if isinstance(d, Start):
                assert state.fits_node(state.task_resources(d.task), d.node), d
                state.start(d.task, d.node, now)
                wl = d.task.split("/")[0]
                starts.setdefault(wl, now)
                placed[d.task] = d.node
                heapq.heappush(finishes, (now + state.workloads[wl].duration, d.task))
            elif isinstance(d, Note):
                notes.append(d)
        assert not state.check_invariants()
        res = getattr(model, "reservation", None)
        if res is not None:
            reservations.append((now, *res))
        if i >= len(submits) and not finishes and state.pending:
            break  # nothing left to wake us: the rest never runs
    return starts, reservations, notes, placed


CASES = [
    # name, nodes, jobs, expected starts (strict), expected starts (easy)
    ("head blocks everyone in strict fifo; small job backfills under easy",
     [("n", 4)],
     [job("a", 0, 10, cpu=3, requested=10), job("b", 1, 10, cpu=2, requested=10), job("c", 2, 100, cpu=1, requested=100)],
     {"a": 0, "b": 10, "c": 10}, {"a": 0, "b": 10, "c": 2}),
    ("long job would delay the head: not backfilled; short one is",
     [("n", 4)],
     [job("a", 0, 10, cpu=3, requested=10), job("b", 0, 10, cpu=4, requested=10),
      job("c", 0, 5, cpu=1, requested=5), job("d", 0, 20, cpu=1, requested=20)],
     {"a": 0, "b": 10, "c": 20, "d": 20}, {"a": 0, "b": 10, "c": 0, "d": 20}),
    ("requested time, not actual, decides: a job that would end early is still judged by its request",
     [("n", 4)],
     [job("a", 0, 10, cpu=3, requested=10), job("b", 0, 10, cpu=4, requested=10),
      job("c", 0, 2, cpu=1, requested=50)],
     {"a": 0, "b": 10, "c": 20}, {"a": 0, "b": 10, "c": 20}),
    ("no requested time: falls back to duration",
     [("n", 4)],
     [job("a", 0, 10, cpu=3), job("b", 0, 10, cpu=4), job("c", 0, 10, cpu=1)],
     {"a": 0, "b": 10, "c": 20}, {"a": 0, "b": 10, "c": 0}),
    ("gang over two nodes reserved at the shadow time; backfill on the node the head does not need",
     [("n0", 2), ("n1", 2), ("n2", 2)],
     [job("a", 0, 10, count=2, cpu=2, requested=10), job("b", 0, 10, count=2, cpu=2, requested=10),
      job("c", 0, 30, count=1, cpu=2, requested=30)],
     {"a": 0, "b": 10, "c": 10}, {"a": 0, "b": 10, "c": 0}),
    ("running work overruns its request: expected to end now, head still first",
     [("n", 2)],
     [job("a", 0, 30, cpu=2, requested=10), job("b", 5, 10, cpu=2, requested=10),
      job("c", 6, 100, cpu=1, requested=100), job("d", 12, 1, cpu=1, requested=1)],
     {"a": 0, "b": 30, "c": 40, "d": 40}, {"a": 0, "b": 30, "c": 40, "d": 40}),
]


@pytest.mark.parametrize("name,nodes,jobs,strict,easy", CASES, ids=[c[0] for c in CASES])
def test_start_times(name, nodes, jobs, strict, easy):
    assert run(StrictFifo({}), nodes, jobs)[0] == strict
    assert run(EasyBackfill({}), nodes, jobs)[0] == easy


def test_registered_names_load_the_classes():
    assert isinstance(load_model("fifo-strict", {}), StrictFifo)
    assert isinstance(load_model("easy-backfill", {"placement": "best-fit"}), EasyBackfill)
    with pytest.raises(ValueError, match="placement"):
        EasyBackfill({"placement": "worst-fit"})


def test_reservation_is_reported_for_the_blocked_head():
    _, reservations, _, _ = run(EasyBackfill({}), [("n", 4)],
                                [job("a", 0, 10, cpu=3, requested=12), job("b", 0, 10, cpu=4, requested=10)])
    assert reservations[0] == (0, "b", 12)


@pytest.mark.parametrize("placement,node", [("first-fit", "big"), ("best-fit", "small")])
def test_placement_setting(placement, node):
    _, _, _, placed = run(EasyBackfill({"placement": placement}), [("big", 4), ("small", 2)], [job("a", 0, 5, cpu=2)])
    assert placed == {"a/0/0": node}


def test_queue_max_holds_a_job_without_blocking_the_rest():
    limited = Queue("capped", parent="root", max={"cpu": 1})
    jobs = [job("a", 0, 10, cpu=2, queue="capped"), job("b", 1, 10, cpu=1)]
    for model in (StrictFifo({}), EasyBackfill({})):
        starts, _, _, _ = run(model, [("n", 4)], jobs, queues=[limited])
        assert starts == {"b": 1}


def test_job_larger_than_the_cluster_is_reported_once_and_passed_over():
    jobs = [job("huge", 0, 10, count=3, cpu=4), job("b", 1, 10, cpu=1), job("c", 2, 10, cpu=1)]
    starts, _, notes, _ = run(StrictFifo({}), [("n0", 4), ("n1", 4)], jobs)
    assert starts == {"b": 1, "c": 2}
    assert [(n.kind, n.subject) for n in notes] == [("unschedulable", "huge")]


def test_gang_fits_agrees_with_first_fit():
    state = make_state([("n0", 3), ("n1", 2), ("n2", 5)])
    state.submit(job("w", 0, 1, count=4, cpu=2))
    tasks = state.pending_tasks("w")
    for extra in ({}, {"n2": {"cpu": 3}}, {"n2": {"cpu": 4}}, {"n0": {"cpu": -1}, "n2": {"cpu": 4}}):
        assert gang_fits(state, tasks, extra) == (first_fit(state, tasks, extra) is not None), extra
    assert best_fit(state, tasks[:1])[0].node == "n1"


# -- properties --------------------------------------------------------------------------------

jobs_strategy = st.lists(
    st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(0, 20), st.integers(1, 3), st.integers(1, 4)),
    min_size=1, max_size=14,
).map(lambda rows: [job(f"j{i:02d}", s, d, count=c, cpu=cpu, requested=d + extra)
                    for i, (s, d, extra, c, cpu) in enumerate(rows)])
nodes_strategy = st.lists(st.integers(2, 6), min_size=1, max_size=3).map(
    lambda caps: [(f"n{i}", 4 + c) for i, c in enumerate(caps)])


@settings(max_examples=150, deadline=None)
@given(jobs_strategy, nodes_strategy, st.sampled_from(["first-fit", "best-fit"]))
def test_easy_never_delays_a_reserved_head(jobs, nodes, placement):
    """With run times no longer than requested, a head starts no later than any reservation it got."""
    starts, reservations, notes, _ = run(EasyBackfill({"placement": placement}), nodes, jobs)
    for now, head, shadow in reservations:
        assert head in starts and starts[head] <= shadow + EPS, (now, head, shadow, starts)
    skipped = {n.subject for n in notes}
    assert set(starts) == {w.id for w in jobs} - skipped


@settings(max_examples=120, deadline=None)
@given(jobs_strategy, nodes_strategy, st.sampled_from(["first-fit", "best-fit"]))
def test_strict_fifo_never_starts_a_job_before_an_earlier_one(jobs, nodes, placement):
    starts, _, notes, _ = run(StrictFifo({"placement": placement}), nodes, jobs)
    skipped = {n.subject for n in notes}
    order = sorted((w for w in jobs if w.id not in skipped), key=lambda w: (w.submit, w.id))
    times = [starts.get(w.id, float("inf")) for w in order]
    assert times == sorted(times)
    assert all(w.id in starts for w in order)


# -- through the simulator, on a real log excerpt ----------------------------------------------

def test_kth_excerpt_through_the_simulator():
    """The SWF excerpt on (a shrunk copy of) the cluster its header describes: strict FIFO starts
    in submit order, EASY waits less in total, and both finish every job."""
    from pathlib import Path

    from makeway.config import build_state, parse_config
    from makeway.sim.engine import simulate
    from makeway.sim.importers import cluster_from_trace, read_trace
    from makeway.sim.trace import workload_from_record

    kth = Path(__file__).resolve().parents[1] / "data" / "swf" / "KTH-SP2-excerpt.swf"
    recs = list(read_trace(kth))
    waits = {}
    for name in ("fifo-strict", "easy-backfill"):
        cfg = cluster_from_trace(kth)
        cfg["nodes"][0]["capacity"]["cpu"] = 40  # a smaller machine than the SP2's 100 procs, so jobs queue
        state = build_state(parse_config(cfg, "kth"))
        rec = simulate(state, load_model(name, {}), [workload_from_record(r) for r in recs])
        assert set(rec.first_start) == {r["id"] for r in recs}
        if name == "fifo-strict":
            order = [rec.first_start[r["id"]] for r in sorted(recs, key=lambda r: (r["submit"], r["id"]))]
            assert order == sorted(order)
        waits[name] = sum(rec.first_start[r["id"]] - r["submit"] for r in recs)
    assert 0 < waits["easy-backfill"] < waits["fifo-strict"], waits
