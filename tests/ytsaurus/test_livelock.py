"""Issue 13, item 2: YTsaurus simulations that never ended (tests/data/repro, PROVENANCE.md there).

* ``ytsaurus-livelock-small``: one 2-cpu node; every operation has a task group of 4 or 8 cpu. YTsaurus's
  controller fails such operations ("No online node can satisfy the resource demand"), so nothing runs:
  0 of 4 finish, 0 preemptions, one ``operation-failed`` note each (it used to ping-pong for ever).
* ``ytsaurus-livelock``: j12 (first in FIFO pool q1) needs 8 cpu and 1 gpu per task: within the
  per-resource maximum of the nodes (16 cpu, 4 gpu), so YTsaurus keeps it, but no single node has both.
  It takes q1's fair share and makes q1 starve; j7 and j15 (fair share 0, all allocations preemptible)
  inherit the starvation and take n4 from each other at every heartbeat. YTsaurus loops here too
  (until its hung-operation check, after an hour, fails j12; not modelled), so the simulator stops the
  run as ``no-progress``: j10 and j11 finished, j7 preempted 114 times by j15.
* a drawn run (round 37, ``test_an_operation_preempting_its_own_allocations_is_stopped``): every task
  fits a node, yet one operation preempts its own allocations for ever. j4 (first in FIFO pool q0)
  needs a whole 4-cpu node for each of its tasks; j3 (fair share 0, all allocations preemptible)
  holds that node with two 2-cpu tasks and inherits q0's starvation. At each heartbeat the regular
  stage refills the node, so only one of j3's allocations is old enough to be a candidate: 2 cpu of
  discount, too little for j4, enough for j3's own next task. YTsaurus counts an operation's own
  conditionally preemptible allocations in its pool's discount (``AnalyzePreemptibleAllocations``
  leaves out only an operation that blocks itself), so it loops here too.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.config import build_state, load_config
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.resources import EPS
from makeway.registry import load_model
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.reports.explain import explain
from makeway.sim.engine import SimOptions, Simulation
from makeway.sim.importers import read_trace
from makeway.sim.trace import parse_record

DATA = Path(__file__).resolve().parent.parent / "data" / "repro"


def _run(name: str):
    cfg = load_config(DATA / f"{name}.yaml")
    state = build_state(cfg)
    model = load_model(cfg.preemption.model, cfg.preemption.settings)
    items = sorted((parse_record(r) for r in read_trace(DATA / f"{name}.jsonl", None)), key=lambda w: (w.submit, w.id))
    sim = Simulation(state, model, SimOptions())
    sim.stream_workloads(items)
    rec = sim.run()
    return rec, model, sim


def test_small_reproducer_fails_the_operations_no_node_can_hold():
    rec, model, sim = _run("ytsaurus-livelock-small")
    s = rec.summary()
    assert (s["jobs_finished"], s["jobs_submitted"], s["preemptions"]) == (0, 4, 0)
    assert rec.stopped_reason is None and sim.now < 400  # ends on its own, idle after the last submission
    assert sorted(model.failed) == ["j15", "j27", "j31", "j32"]
    notes = {e["subject"]: e for e in rec.events if e["kind"] == "note" and e["note"] == "operation-failed"}
    assert set(notes) == set(model.failed)
    assert notes["j31"]["values"]["task_group"] == 1 and notes["j31"]["values"]["asked"] == 8.0  # 2-cpu tasks fit
    assert rec.first_start == {}


def test_big_reproducer_is_stopped_as_no_progress():
    rec, model, sim = _run("ytsaurus-livelock")
    s = rec.summary()
    assert (s["jobs_finished"], s["jobs_submitted"]) == (2, 6) and set(rec.finish_t) == {"j10", "j11"}
    assert model.failed == {}  # every task fits the per-resource node maximum
    assert s["preemptions"] == 114 and rec.preempt_count == {"j7": 114}
    assert s["stopped"] == rec.stopped_reason and rec.stopped_reason.startswith(
        "no-progress: from t=814.75 to t=1415.5")
    stop = [e for e in rec.events if e["kind"] == "stopped"]
    assert [(e["time"], e["workloads"]) for e in stop] == [(1415.5, ["j15", "j7"])]
    results = rec.results()
    assert "simulation stopped: no-progress" in explain(results, "j7")
    assert "simulation stopped: no-progress" in explain(results, "j15")
    assert "stopped early" in explain(results, "j12")
    # the two caught in the cycle are pending for that reason; j12 and j14 fit no single node
    assert rec.pending_reasons() == {"j7": "no-progress", "j12": "unplaceable", "j14": "unplaceable",
                                     "j15": "no-progress"}


def _fits_some_node(res: dict, nodes: list[Node]) -> bool:
    return any(all(float(v) <= float(n.capacity.get(k, 0)) + EPS for k, v in res.items()) for n in nodes)


@st.composite
def small_runs(draw):
    """1-3 nodes of mixed shapes (a gpu-less big node beside small gpu nodes, as in the reproducers),
    FIFO and fair-share pools, 2-5 operations with 1-2 task groups, short starvation timeouts and no
    preemptive backoff, so that pools starve and operations preempt each other often."""
    shapes = [{"cpu": 2, "memory": 4, "gpu": 2}, {"cpu": 4, "memory": 32, "gpu": 4}, {"cpu": 16, "memory": 32, "gpu": 0},
              {"cpu": 2.5, "memory": 1, "gpu": 2}]
    nodes = [Node(f"n{i}", dict(draw(st.sampled_from(shapes)))) for i in range(draw(st.integers(1, 3)))]
    nested = draw(st.booleans())
    queues = [Queue("root")] + ([Queue("root.g", "root")] if nested else [])
    parent = "root.g" if nested else "root"
    npools = draw(st.integers(1, 3))
    for i in range(npools):
        queues.append(Queue(f"root.q{i}", parent, weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                            settings={"mode": draw(st.sampled_from(["fifo", "fair_share"])),
                                      "fair_share_starvation_tolerance": draw(st.sampled_from([0.5, 0.8, 1.0]))}))
    task = st.sampled_from([{"cpu": 1, "memory": 1}, {"cpu": 2, "memory": 2}, {"cpu": 8, "memory": 4},
                            {"cpu": 0.5, "memory": 2, "gpu": 1}, {"cpu": 1, "memory": 1, "gpu": 1},
                            {"cpu": 8, "memory": 2, "gpu": 1}, {"cpu": 4, "memory": 8}, {"cpu": 32, "memory": 1}])
    wls = []
    for j in range(draw(st.integers(2, 5))):
        groups = tuple(TaskGroup(draw(st.integers(1, 4)), dict(draw(task)))
                       for _ in range(draw(st.integers(1, 2))))
        wls.append(Workload(f"j{j}", f"root.q{draw(st.integers(0, npools - 1))}", float(draw(st.integers(0, 60))),
                            float(draw(st.integers(20, 120))), groups, grace=draw(st.sampled_from([0.0, 2.0]))))
    settings = {"fair_share_update_period": 1.0, "fair_share_starvation_timeout": draw(st.sampled_from([5, 30])),
                "preemptive_scheduling_backoff": 0, "heartbeat_period": 5}
    return nodes, queues, wls, settings


EXAMPLES = 300


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_runs())
def test_random_small_simulations_end(run):
    """Every run ends by itself (no horizon) in a bounded number of events. When the simulator has to
    stop one as no-progress, it is a case where YTsaurus loops too: an operation it keeps (its tasks
    are within the per-resource node maximum) has a task no single node can hold and is still pending,
    and the cycling operations share a pool (or an ancestor) with it, so they inherit its starvation."""
    nodes, queues, wls, settings_ = run
    state = ClusterState(["cpu", "memory", "gpu"], queues, nodes)
    model = YTsaurusModel(settings_)
    sim = Simulation(state, model, SimOptions())
    sim.add_workloads(wls)
    rec = sim.run()
    assert sim.events_processed < 20_000
    for w in model.failed:  # failed exactly when some task group is beyond the per-resource maximum
        assert any(not all(float(v) <= max(float(n.capacity.get(k, 0)) for n in nodes) for k, v in g.resources.items())
                   for g in state.workloads[w].groups)
    if rec.stopped_reason is None:
        return
    assert rec.stopped_reason.startswith("no-progress")
    _a_cycle_yt_has_too(rec, model, state, wls, nodes)


def _a_cycle_yt_has_too(rec, model, state, wls, nodes):
    """A run stopped as no-progress is one of the two shapes of the module docstring: an operation
    YTsaurus keeps has a task no single node can hold; or every preemption since the last progress
    is an operation preempting its own allocations. Either way a pending operation that is not
    failed shares a pool (or an ancestor) with the cycling ones and makes it starve."""
    stuck = next(e for e in rec.events if e["kind"] == "stopped")["workloads"]
    parents = {state.workloads[w].queue for w in stuck}
    unfinished = [w.id for w in wls if w.id not in model.failed and w.id not in rec.finish_t]
    blockers = [w for w in unfinished if any(not _fits_some_node(g.resources, nodes) for g in state.workloads[w].groups)]
    if not blockers:
        since = max([*rec.finish_t.values(), *rec.first_start.values(), *(w.submit for w in wls)])
        late = [e for e in rec.events if e["kind"] == "preempt" and e["time"] > since]
        assert late and all(e["reason"]["preemptor"] == e["workload"] for e in late), rec.stopped_reason
        blockers = [w for w in unfinished if w not in stuck]
    assert blockers, rec.stopped_reason
    assert any(state.workloads[b].queue in parents or nested_parent(state, b, parents) for b in blockers)


def test_an_operation_preempting_its_own_allocations_is_stopped():
    """The third shape of the module docstring, as hypothesis drew it: j3 preempts its own
    allocations at every heartbeat from t=70, and the run is stopped 600 s later; j4 never gets
    the node, and nothing no node can hold is pending."""
    nodes = [Node("n0", {"cpu": 4, "memory": 32, "gpu": 4}), Node("n1", {"cpu": 2.5, "memory": 1, "gpu": 2})]
    queues = [Queue("root"), Queue("root.q0", "root", weight=0.5,
                                   settings={"mode": "fifo", "fair_share_starvation_tolerance": 0.5})]
    small, mid, big = {"cpu": 1, "memory": 1}, {"cpu": 2, "memory": 2}, {"cpu": 4, "memory": 8}
    wls = [Workload("j0", "root.q0", 14.0, 20.0, (TaskGroup(2, dict(small)), TaskGroup(3, dict(mid)))),
           Workload("j1", "root.q0", 0.0, 20.0, (TaskGroup(1, dict(small)),)),
           Workload("j2", "root.q0", 0.0, 20.0, (TaskGroup(1, dict(small)),)),
           Workload("j3", "root.q0", 43.0, 20.0, (TaskGroup(4, dict(mid)),), grace=2.0),
           Workload("j4", "root.q0", 14.0, 20.0, (TaskGroup(2, dict(big)), TaskGroup(1, dict(small))))]
    state = ClusterState(["cpu", "memory", "gpu"], queues, nodes)
    model = YTsaurusModel({"fair_share_update_period": 1.0, "fair_share_starvation_timeout": 5,
                           "preemptive_scheduling_backoff": 0, "heartbeat_period": 5})
    sim = Simulation(state, model, SimOptions())
    sim.add_workloads(wls)
    rec = sim.run()
    assert rec.stopped_reason.startswith("no-progress: from t=70 to t=670")
    assert sorted(rec.finish_t) == ["j0", "j1", "j2"] and model.failed == {}
    assert all(_fits_some_node(g.resources, nodes) for w in wls for g in w.groups)
    preempts = [e for e in rec.events if e["kind"] == "preempt"]
    assert preempts and {(e["workload"], e["reason"]["preemptor"]) for e in preempts} == {("j3", "j3")}
    assert {e["reason"]["detail"] for e in preempts} == {"preemptible allocation of j3"}
    _a_cycle_yt_has_too(rec, model, state, wls, nodes)


def nested_parent(state: ClusterState, blocker: str, pools: set[str]) -> bool:
    """True when the blocker's pool is an ancestor of, or shares a non-root ancestor with, one of ``pools``."""
    mine = set(state.path_to_root(state.workloads[blocker].queue)) - {"root"}
    return any(mine & (set(state.path_to_root(p)) - {"root"}) for p in pools)
