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
"""

from __future__ import annotations

import random
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
    stuck = next(e for e in rec.events if e["kind"] == "stopped")["workloads"]
    blockers = [w.id for w in wls if w.id not in model.failed and w.id not in rec.finish_t
                and any(not _fits_some_node(g.resources, nodes) for g in w.groups)]
    assert blockers, rec.stopped_reason
    parents = {state.workloads[w].queue for w in stuck}
    assert any(state.workloads[b].queue in parents or nested_parent(state, b, parents) for b in blockers)


def nested_parent(state: ClusterState, blocker: str, pools: set[str]) -> bool:
    """True when the blocker's pool is an ancestor of, or shares a non-root ancestor with, one of ``pools``."""
    mine = set(state.path_to_root(state.workloads[blocker].queue)) - {"root"}
    return any(mine & (set(state.path_to_root(p)) - {"root"}) for p in pools)
