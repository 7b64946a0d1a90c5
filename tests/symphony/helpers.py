"""Builders for Symphony simulator tests: slot clusters, sessions, and a run that returns events."""

from __future__ import annotations

from pathlib import Path

from makeway.config import build_state, load_config, trace_path
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import load_jsonl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "symphony"


def slot_cluster(hosts=2, slots=4, consumer_settings=None, queues=("app",)) -> ClusterState:
    qs = [Queue("root")] + [Queue(q, "root", settings=dict(consumer_settings or {})) for q in queues]
    return ClusterState(["cpu", "slots"], qs,
                        [Node(f"h{i}", {"cpu": slots, "slots": slots}) for i in range(hosts)])


def session(id, submit=0.0, tasks=4, duration=100.0, queue="app", rank=None, preemptive=None, priority=None,
            stype=None, preemptible=True):
    settings = {}
    if rank is not None:
        settings["preemptionRank"] = rank
    if preemptive is not None:
        settings["preemptive"] = preemptive
    if priority is not None:
        settings["priority"] = priority
    if stype is not None:
        settings["sessionType"] = stype
    return Workload(id, queue, submit, duration, (TaskGroup(tasks, {"cpu": 1, "slots": 1}),),
                    preemptible=preemptible, settings=settings)


def run(state, workloads, settings=None, horizon=None):
    model = load_model("symphony", settings or {})
    rec = simulate(state, model, workloads, options=SimOptions(horizon=horizon, check_invariants=True))
    return rec


def run_example(name: str):
    path = EXAMPLES / name
    cfg = load_config(path)
    workloads, changes = load_jsonl(trace_path(cfg, path))
    state = build_state(cfg)
    model = load_model(cfg.preemption.model, cfg.preemption.settings)
    return simulate(state, model, workloads, changes, SimOptions(check_invariants=True))


def preempts(rec):
    return [e for e in rec.events if e["kind"] == "preempt"]
