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
from makeway.core.model import Node, Queue, TaskGroup, Workload
from makeway.core.policy import load_model
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
