"""The struct-of-arrays core (``makeway.sim.fast``) against the general engine: same results document.

Every example runs the same inputs twice, once forced through the general engine (the reference
path) and once through the fast core, and compares the JSON of ``Recorder.results`` byte for byte:
decisions (start times, waits), the summary, the time series, the pending-reason trails. The fast
core is the compiled loop (``fast.compiled``, numba) where numba is installed, and the pure-Python
one with ``MAKEWAY_JIT=0``; both are checked.
"""

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.policies.hpc.model import StrictFifo
from makeway.sim.engine import Simulation, SimOptions, simulate
from makeway.sim.fast import compiled
from makeway.sim.fast.compiled import CompiledRecorder, CompiledSimulation
from makeway.sim.fast.core import FastSimulation
from makeway.sim.fast.reasons import FastReasons
from makeway.sim.fast.recorder import FastRecorder
from makeway.sim.fast.strict import FastStrictFifo
from makeway.sim.pending import ReasonLog
from makeway.sim.results_io import write_results
from makeway.sim.fast.dispatch import why_not

DATA = Path(__file__).resolve().parents[1] / "data" / "swf"


def _cluster(nodes, nested):
    qs = [Queue("root"), Queue("a", "root", weight=2.0), Queue("b", "root")]
    if nested:
        qs += [Queue("b1", "b"), Queue("b2", "b")]
    return ClusterState(["cpu", "gpu"], qs, [Node(f"n{i}", {"cpu": c, "gpu": g}) for i, (c, g) in enumerate(nodes)])


def _workload(cpus):
    group = st.tuples(st.integers(0, 3), st.sampled_from(cpus), st.sampled_from([0, 0, 1, 2]))
    return st.tuples(st.integers(0, 40), st.sampled_from([0.0, 0.0, 1.0, 2.5, 7.0, 30.0, 100.0]),
                     st.lists(group, min_size=1, max_size=3), st.integers(0, 2),
                     st.one_of(st.none(), st.sampled_from([0.0, 1.0, 5.0, 50.0])), st.integers(0, 3))


workload = _workload([0.5, 1, 2, 3, 4, 6])
int_workload = _workload([1, 2, 3, 4, 6])  # the compiled loop takes integer quantities only


@contextmanager
def _engine(jit, batch=None):
    """The pure-Python fast core (``jit`` False) or the compiled one, for runs of any size."""
    saved = (os.environ.get("MAKEWAY_JIT"), CompiledSimulation.MIN_JOBS, CompiledSimulation.BATCH,
             CompiledSimulation.PLACES)
    os.environ["MAKEWAY_JIT"] = "1" if jit else "0"
    CompiledSimulation.MIN_JOBS = 0
    CompiledSimulation.BATCH = batch or saved[2]
    CompiledSimulation.PLACES = 1  # gang placements compacted at almost every hand-over
    try:
        yield
    finally:
        if saved[0] is None:
            del os.environ["MAKEWAY_JIT"]
        else:
            os.environ["MAKEWAY_JIT"] = saved[0]
        CompiledSimulation.MIN_JOBS, CompiledSimulation.BATCH, CompiledSimulation.PLACES = saved[1:]


def _workloads(specs, nested):
    leaves = ["a", "b1", "b2"] if nested else ["a", "b"]
    out = []
    for i, (sub, dur, groups, prio, req, q) in enumerate(specs):
        gs = tuple(TaskGroup(c, {"cpu": cpu, "gpu": gpu}) for c, cpu, gpu in groups)
        if sum(g.count for g in gs) == 0:
            gs = (TaskGroup(1, {"cpu": 1}),)
        out.append(Workload(f"w{i}", leaves[q % len(leaves)], float(sub), dur, gs, prio, requested_duration=req))
    return sorted(out, key=lambda w: w.submit)


def _both(make_state, workloads, model=PriorityFirstFit, recorder=None, **opts):
    docs = []
    for engine in ("general", "auto"):
        rec = simulate(make_state(), model(), iter(workloads), options=SimOptions(engine=engine, **opts),
                       streamed=True)
        written = Path(tempfile.gettempdir()) / f"makeway-fast-{os.getpid()}.json"
        write_results(rec, {"m": 1}, written)  # the fast core's own row encoder, byte for byte
        docs.append((json.dumps(rec.results({"m": 1}), default=str), written.read_text()))
    if recorder is not None:
        assert type(rec) is recorder
    return docs


nodes_st = st.lists(st.tuples(st.sampled_from([2, 4, 8]), st.sampled_from([0, 1, 2])), min_size=1, max_size=4)
horizon_st = st.one_of(st.none(), st.sampled_from([5.0, 20.0, 60.0]))
model_st = st.sampled_from([PriorityFirstFit, StrictFifo])


def _check(nodes, nested, specs, horizon, kill, model, head, jit, batch=None):
    # ``head``: how many of a queue's first workloads the pending-reason rounds ask the model about
    # (32 by default: a small one puts queues past it within a few workloads)
    wls = _workloads(specs, nested)
    saved = ReasonLog.HEAD, FastReasons.HEAD
    recorder = CompiledRecorder if jit else None
    try:
        if head is not None:
            ReasonLog.HEAD = FastReasons.HEAD = head
        with _engine(jit, batch):
            general, fast = _both(lambda: _cluster(nodes, nested), wls, model, recorder, horizon=horizon,
                                  kill_at_requested_time=kill)
    finally:
        ReasonLog.HEAD, FastReasons.HEAD = saved
    assert fast == general


@settings(max_examples=150, deadline=None)
@given(nodes_st, st.booleans(), st.lists(int_workload, min_size=1, max_size=30), horizon_st, st.booleans(),
       model_st, st.sampled_from([None, 1, 2]), st.sampled_from([1, 3, 8192]))
def test_compiled_fast_core_gives_the_general_engines_results(nodes, nested, specs, horizon, kill, model, head,
                                                              batch):
    # ``batch``: how many workloads the compiled loop is handed at a time (every one of a submit time
    # together), so runs cross many hand-overs
    _check(nodes, nested, specs, horizon, kill, model, head, compiled.enabled(), batch)


@settings(max_examples=60, deadline=None)
@given(nodes_st, st.booleans(), st.lists(workload, min_size=1, max_size=30), horizon_st, st.booleans(),
       model_st, st.sampled_from([None, 1, 2]))
def test_pure_fast_core_gives_the_general_engines_results(nodes, nested, specs, horizon, kill, model, head):
    # what runs without numba (and for short runs, and where a quantity is not an integer)
    _check(nodes, nested, specs, horizon, kill, model, head, False)


def test_a_fraction_late_in_the_trace_restarts_on_the_pure_core():
    specs = [(i, 3.0, [(1, 1 + i % 3, 0)], 0, None, i) for i in range(20)]
    specs.append((25, 2.0, [(2, 0.5, 1)], 1, None, 0))
    with _engine(True, 4):
        general, fast = _both(lambda: _cluster([(4, 1), (8, 2)], False), _workloads(specs, False),
                              recorder=FastRecorder)
    assert fast == general


def test_the_compiled_core_refuses_what_the_general_engine_refuses():
    import pytest

    from makeway.core.state import StateError
    from makeway.sim.engine import SimulationError

    base = [Workload(f"w{i}", "a", float(i), 5.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(6)]
    bad = {"unsorted": base + [Workload("x", "a", 2.0, 1.0, (TaskGroup(1, {"cpu": 1}),))],
           "queue": base + [Workload("x", "nope", 7.0, 1.0, (TaskGroup(1, {"cpu": 1}),))],
           "twice": base + [Workload("w1", "a", 7.0, 1.0, (TaskGroup(1, {"cpu": 1}),))],
           # (the general engine takes a workload without tasks; the fast cores refuse it)
           "no task": base + [Workload("x", "a", 7.0, 1.0, (TaskGroup(0, {"cpu": 1}),))]}
    for name, wls in bad.items():
        errors = []
        for engine, jit in (("general", True), ("auto", True)) if name != "no task" else (("auto", False), ("auto", True)):
            with _engine(jit, 2), pytest.raises((SimulationError, StateError)) as info:
                simulate(_cluster([(4, 1)], False), PriorityFirstFit(), iter(wls), options=SimOptions(engine=engine),
                         streamed=True)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1], name
        if name == "unsorted":  # the general engine reads ahead and refuses it past the horizon too
            continue
        # past the horizon nothing is refused, by either
        docs = []
        for engine in ("general", "auto"):
            with _engine(True, 2):
                rec = simulate(_cluster([(4, 1)], False), PriorityFirstFit(), iter(wls),
                               options=SimOptions(engine=engine, horizon=6.5), streamed=True)
            docs.append(json.dumps(rec.results({}), default=str))
        assert docs[0] == docs[1], name


def test_the_fast_core_is_the_one_that_ran():
    state = _cluster([(4, 1)], False)
    model = PriorityFirstFit()
    assert why_not(state, model, SimOptions(), False) is None
    from makeway.sim.engine import make_simulation

    assert isinstance(make_simulation(state, model, SimOptions(), False), (CompiledSimulation, FastSimulation))
    assert isinstance(make_simulation(state, model, SimOptions(engine="general"), False), Simulation)
    strict = make_simulation(state, StrictFifo(), SimOptions(), False)
    assert isinstance(strict, FastStrictFifo) or strict.pure is FastStrictFifo
    assert "fast core" in why_not(state, StrictFifo({"placement": "best-fit"}), SimOptions(), False)
    state.queues["a"].max = {"cpu": 2}
    assert "max" in why_not(state, model, SimOptions(), False)


def test_kth_excerpt_same_results_both_layouts():
    from makeway.config import build_state, parse_config
    from makeway.sim.importers import cluster_from_trace, read_trace
    from makeway.sim.trace import workload_from_record

    path = DATA / "KTH-SP2-excerpt.swf"
    for layout in ("pool", "nodes"):
        cfg = parse_config(cluster_from_trace(path, "swf", layout=layout), "swf")
        wls = [workload_from_record(r) for r in read_trace(path, "swf", layout=layout)]
        for model in (PriorityFirstFit, StrictFifo):
            general, fast = _both(lambda: build_state(cfg), wls, model)
            assert fast == general
            assert json.loads(fast[0])["summary"]["jobs_finished"] > 0


def test_without_numba_the_pure_core_runs(monkeypatch):
    from makeway.sim.fast.dispatch import core_for

    monkeypatch.setattr(compiled, "_HAVE_NUMBA", False)
    assert core_for(PriorityFirstFit()) is FastSimulation
    assert core_for(StrictFifo()) is FastStrictFifo
    monkeypatch.setattr(compiled, "_HAVE_NUMBA", True)
    monkeypatch.setenv("MAKEWAY_JIT", "1")
    assert core_for(StrictFifo()).keywords["pure"] is FastStrictFifo


def _reason_case(specs, head, nodes=((2, 0),)):
    saved = ReasonLog.HEAD, FastReasons.HEAD
    try:
        ReasonLog.HEAD = FastReasons.HEAD = head
        with _engine(False):
            general, fast = _both(lambda: _cluster(list(nodes), False), _workloads(specs, False),
                                  recorder=FastRecorder)
    finally:
        ReasonLog.HEAD, FastReasons.HEAD = saved
    assert fast == general
    return json.loads(fast[0])


# (submit, duration, [(count, cpu, gpu)], priority, requested, queue index), on a node of 2 cpu (and
# one of 1 gpu): w0 holds the cpus till t=100. Rounds run at the first instant at least 1 s after
# the last one, at t=0, 1 and 3 here. Each case: specs (w0, w1, ...), HEAD, the trail of w1.
PUSHED_BEHIND = {
    # w1 is the head at t=1 (``resources``); w2, of a higher priority, comes at the round of t=3
    # and is the one head: the round must look at w1 again though it did not change
    "a head pushed behind": ([(0, 100.0, [(1, 2, 0)], 0, None, 0), (1, 5.0, [(1, 2, 0)], 0, None, 0),
                              (3, 5.0, [(1, 2, 0)], 5, None, 0)], 1,
                             ["resources", "priority", "resources"]),
    # w1 comes between rounds (t=1.5, after the round of t=1, which the gpu job w3 in queue b makes),
    # first in line; at the round of t=3, w2 of a higher priority is the one head
    "a first reason pushed behind": ([(0, 100.0, [(1, 2, 0)], 0, None, 0), (1.5, 5.0, [(1, 2, 0)], 0, None, 0),
                                      (3, 5.0, [(1, 2, 0)], 5, None, 0), (1, 0.2, [(1, 0, 1)], 0, None, 1)], 1,
                                     ["resources", "priority", "resources"]),
}


def test_a_workload_pushed_behind_the_heads_is_looked_at_again():
    for name, (specs, head, trail) in PUSHED_BEHIND.items():
        doc = _reason_case(specs, head, nodes=((2, 0), (0, 1)))
        w1 = next(w for w in doc["workloads"] if w["id"] == "w1")
        assert [r[1] for r in w1["reasons"]] == trail, name


def test_a_deep_backlog_keeps_each_queues_order():
    # hundreds waiting at once, most of them starting in turn: the heaps drop started ones as they go
    specs = [(i // 7, 1.0 + (i % 5), [(1, 1 + i % 2, 0)], i % 3, None, i % 2) for i in range(400)]
    doc = _reason_case(specs, 2, nodes=((4, 0), (2, 0)))
    assert max(len(w.get("reasons", [])) for w in doc["workloads"]) >= 3
