"""Results dicts for report tests: real simulator runs of the examples and small hand-made ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from makeway.config import build_state, load_config, trace_path
from makeway.registry import load_model
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import load_jsonl

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.yaml"
SYMPHONY = REPO / "examples" / "symphony" / "cluster.yaml"


def run(config: Path) -> dict[str, Any]:
    """Simulate a config the way ``makeway simulate --out`` does and return the JSON-decoded results."""
    cfg = load_config(config)
    tpath = trace_path(cfg, config)
    workloads, changes = load_jsonl(tpath) if tpath is not None else ([], [])
    state = build_state(cfg)
    model = load_model(cfg.preemption.model, cfg.preemption.settings)
    opts = SimOptions(heartbeat_period=cfg.simulation.heartbeat_period)
    rec = simulate(state, model, workloads, changes, opts)
    meta = {"config": {"name": cfg.name, "model": cfg.preemption.model, "path": str(config)},
            "trace": str(tpath) if tpath else None}
    return json.loads(json.dumps(rec.results(meta), default=str))


def preempt(time, alloc, workload, queue, preemptor, rule="InCohortReclamation", cpu=2, start=0.0,
            values=None, grace=0.0):
    return {"time": time, "kind": "preempt", "allocation": alloc, "workload": workload, "queue": queue,
            "node": "n0", "start": start, "resources": {"cpu": cpu, "memory": 4 * 2**30}, "grace": grace,
            "reason": {"model": "kueue", "rule": rule, "preemptor": preemptor,
                       "detail": f"{preemptor} reclaims quota", "values": values or {"borrowing": True}}}


def evicted(time, alloc, workload, queue, lost):
    return {"time": time, "kind": "evicted", "allocation": alloc, "workload": workload, "queue": queue,
            "lost_seconds": lost}


def minimal() -> dict[str, Any]:
    """Only the fields every results file has had since schema version 1 began."""
    return {
        "schema": "makeway.results/1",
        "config": {"name": "tiny", "model": "kueue", "path": "tiny.yaml"},
        "trace": "tiny.jsonl",
        "summary": {"jobs_submitted": 3, "jobs_finished": 2, "jobs_unfinished": 1, "makespan_s": 700.0,
                    "wait_mean_s": 110.0, "wait_p50_s": 30.0, "wait_p95_s": 300.0,
                    "utilisation": {"cpu": 0.625, "memory": 0.25}, "preemptions": 1, "preempted_workloads": 1,
                    "finished_during_grace": 0, "wasted_resource_seconds": {"cpu": 200.0, "memory": 400 * 2**30},
                    "killed_at_requested_time": 0},
        "workloads": [
            {"id": "low", "queue": "team-a", "priority": 0, "submit": 0.0, "first_start": 0.0, "finish": 700.0,
             "wait": 0.0, "preemptions": 1},
            {"id": "high", "queue": "team-b", "priority": 10, "submit": 70.0, "first_start": 100.0,
             "finish": 400.0, "wait": 30.0, "preemptions": 0},
            {"id": "late", "queue": "team-a", "priority": 0, "submit": 50.0, "first_start": 350.0, "finish": None,
             "wait": 300.0, "preemptions": 0},
        ],
        "events": [
            {"time": 60.0, "kind": "config", "queue": "team-a", "changes": {"max": {"cpu": 4}}},
            {"time": 80.0, "kind": "note", "note": "pending", "subject": "late",
             "message": "queue team-a is at its max", "values": {"queue": "team-a"}},
            preempt(100.0, "low/0/0", "low", "team-a", "high", values={"borrowing": True, "priority": 0}),
            evicted(100.0, "low/0/0", "low", "team-a", 100.0),
        ],
    }


def full() -> dict[str, Any]:
    """``minimal`` plus every optional block the lead's recorder adds (per-queue, series, convergence)."""
    r = minimal()
    r["summary"].update({"wait_p99_s": 300.0, "bounded_slowdown_mean": 1.75, "jain_mean": 0.875,
                         "gpu_hours_wasted": 0.0})
    r["capacity"] = {"cpu": 8, "memory": 32 * 2**30}
    r["queues"] = {
        "team-a": {"jobs": 2, "finished": 1, "wait_mean_s": 150.0, "wait_p50_s": 0.0, "wait_p95_s": 300.0,
                   "wait_p99_s": 300.0, "bounded_slowdown_mean": 1.5, "preemptions": 1, "victim_workloads": 1,
                   "wasted_resource_seconds": {"cpu": 200.0, "memory": 400 * 2**30},
                   "guaranteed": {"cpu": 4}, "max": {"cpu": 4}},
        "team-b": {"jobs": 1, "finished": 1, "wait_mean_s": 30.0, "wait_p50_s": 30.0, "wait_p95_s": 30.0,
                   "wait_p99_s": 30.0, "bounded_slowdown_mean": 1.1, "preemptions": 0, "victim_workloads": 0,
                   "wasted_resource_seconds": {}, "guaranteed": {"cpu": 4}, "max": None},
    }
    r["timeseries"] = {
        "interval": 1.0, "t": [0.0, 100.0, 400.0, 700.0],
        "utilisation": {"cpu": [0.0, 0.75, 0.5, 0.25], "memory": [0.0, 0.5, 0.25, 0.125]},
        "queues": {"team-a": {"usage": {"cpu": [0, 6, 2, 2]}, "share": [0.0, 0.75, 0.25, 0.25],
                              "fair_share": [0.5, 0.5, 0.5, 1.0]},
                   "team-b": {"usage": {"cpu": [0, 0, 2, 0]}, "share": [0.0, 0.0, 0.25, 0.0]}},
        "jain": [1.0, 1.0, 0.8, 1.0],
    }
    r["quota_convergence"] = [{"queue": "team-a", "time": 60.0, "max": {"cpu": 4}, "converged_at": 100.0,
                               "seconds": 40.0}]
    return r
