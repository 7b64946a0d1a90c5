"""The struct-of-arrays core (``makeway.sim.fast``) against the general engine: same results document.

Every example runs the same inputs twice, once forced through the general engine (the reference
path) and once through the fast core, and compares the JSON of ``Recorder.results`` byte for byte:
decisions (start times, waits), the summary, the time series, the pending-reason trails.
"""

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.policies.hpc.model import StrictFifo
from makeway.sim.engine import Simulation, SimOptions, simulate
from makeway.sim.fast.core import FastSimulation
from makeway.sim.fast.reasons import FastReasons
from makeway.sim.fast.strict import FastStrictFifo
from makeway.sim.pending import ReasonLog
from makeway.sim.fast.dispatch import why_not

DATA = Path(__file__).resolve().parents[1] / "data" / "swf"


def _cluster(nodes, nested):
    qs = [Queue("root"), Queue("a", "root", weight=2.0), Queue("b", "root")]
    if nested:
        qs += [Queue("b1", "b"), Queue("b2", "b")]
    return ClusterState(["cpu", "gpu"], qs, [Node(f"n{i}", {"cpu": c, "gpu": g}) for i, (c, g) in enumerate(nodes)])


group = st.tuples(st.integers(0, 3), st.sampled_from([0.5, 1, 2, 3, 4, 6]), st.sampled_from([0, 0, 1, 2]))
workload = st.tuples(st.integers(0, 40), st.sampled_from([0.0, 0.0, 1.0, 2.5, 7.0, 30.0, 100.0]),
                     st.lists(group, min_size=1, max_size=3), st.integers(0, 2),
                     st.one_of(st.none(), st.sampled_from([0.0, 1.0, 5.0, 50.0])), st.integers(0, 3))


def _workloads(specs, nested):
    leaves = ["a", "b1", "b2"] if nested else ["a", "b"]
    out = []
    for i, (sub, dur, groups, prio, req, q) in enumerate(specs):
        gs = tuple(TaskGroup(c, {"cpu": cpu, "gpu": gpu}) for c, cpu, gpu in groups)
        if sum(g.count for g in gs) == 0:
            gs = (TaskGroup(1, {"cpu": 1}),)
        out.append(Workload(f"w{i}", leaves[q % len(leaves)], float(sub), dur, gs, prio, requested_duration=req))
    return sorted(out, key=lambda w: w.submit)


def _both(make_state, workloads, model=PriorityFirstFit, **opts):
    docs = []
    for engine in ("general", "auto"):
        rec = simulate(make_state(), model(), iter(workloads), options=SimOptions(engine=engine, **opts),
                       streamed=True)
        docs.append(json.dumps(rec.results({"m": 1}), default=str))
    return docs


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([2, 4, 8]), st.sampled_from([0, 1, 2])), min_size=1, max_size=4),
       st.booleans(), st.lists(workload, min_size=1, max_size=30),
       st.one_of(st.none(), st.sampled_from([5.0, 20.0, 60.0])), st.booleans(),
       st.sampled_from([PriorityFirstFit, StrictFifo]), st.sampled_from([None, 2]))
def test_fast_core_gives_the_general_engines_results(nodes, nested, specs, horizon, kill, model, head):
    # ``head``: how many of a queue's first workloads the pending-reason rounds ask the model about
    # (32 by default: a small one puts queues past it within a few workloads)
    wls = _workloads(specs, nested)
    saved = ReasonLog.HEAD, FastReasons.HEAD
    try:
        if head is not None:
            ReasonLog.HEAD = FastReasons.HEAD = head
        general, fast = _both(lambda: _cluster(nodes, nested), wls, model, horizon=horizon,
                              kill_at_requested_time=kill)
    finally:
        ReasonLog.HEAD, FastReasons.HEAD = saved
    assert fast == general


def test_the_fast_core_is_the_one_that_ran():
    state = _cluster([(4, 1)], False)
    model = PriorityFirstFit()
    assert why_not(state, model, SimOptions(), False) is None
    from makeway.sim.engine import make_simulation

    assert isinstance(make_simulation(state, model, SimOptions(), False), FastSimulation)
    assert isinstance(make_simulation(state, model, SimOptions(engine="general"), False), Simulation)
    assert isinstance(make_simulation(state, StrictFifo(), SimOptions(), False), FastStrictFifo)
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
            assert json.loads(fast)["summary"]["jobs_finished"] > 0
