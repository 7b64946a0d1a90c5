"""What a simulation records and the summary people read.

The recorder is fed by the simulator as things happen and keeps compact per-workload fields (submit,
first start, finish, preemption count) plus the event log of every preemption, note and config change
with its reason. Utilisation is integrated exactly: used resources x time between changes.
"""

from __future__ import annotations

import math
from typing import Any

from makeway.core.decisions import Note, Reason
from makeway.core.model import Allocation, Workload
from makeway.core.resources import Res, add_into
from makeway.core.state import ClusterState

RESULTS_SCHEMA = "makeway.results/1"


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty list)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


class Recorder:
    def __init__(self, state: ClusterState, record_starts: bool = False):
        self.state = state
        self.record_starts = record_starts
        self.capacity: Res = state.total_capacity()
        self.used: Res = {}
        self.used_integral: Res = {}
        self.last_t = 0.0
        self.first_t: float | None = None
        self.end_t = 0.0
        self.submit_t: dict[str, float] = {}
        self.first_start: dict[str, float] = {}
        self.finish_t: dict[str, float] = {}
        self.preempt_count: dict[str, int] = {}
        self.killed: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.wasted: Res = {}
        self.preemptions = 0
        self.finished_in_grace = 0

    # -- feed ----------------------------------------------------------------------------------

    def before_change(self, now: float) -> None:
        dt = now - self.last_t
        if dt > 0:
            for k, v in self.used.items():
                if v:
                    self.used_integral[k] = self.used_integral.get(k, 0) + v * dt
            self.last_t = now

    def submit(self, wl: Workload, now: float) -> None:
        self.before_change(now)
        if self.first_t is None:
            self.first_t = now
        self.submit_t[wl.id] = now

    def start(self, alloc: Allocation, now: float) -> None:
        add_into(self.used, alloc.resources)
        self.first_start.setdefault(alloc.workload, now)
        if self.record_starts:
            self.events.append({"time": now, "kind": "start", "allocation": alloc.id,
                                "workload": alloc.workload, "node": alloc.node})

    def finish(self, alloc: Allocation, now: float, killed: bool = False) -> None:
        add_into(self.used, alloc.resources, -1)
        if alloc.preempting:
            self.finished_in_grace += 1
        if killed:
            self.killed[alloc.workload] = self.killed.get(alloc.workload, 0) + 1
        if self.state.is_finished(alloc.workload):
            self.finish_t[alloc.workload] = now
        self.end_t = max(self.end_t, now)
        if self.record_starts:
            self.events.append({"time": now, "kind": "finish", "allocation": alloc.id, "workload": alloc.workload})

    def preempt(self, alloc: Allocation, reason: Reason, now: float, grace: float) -> None:
        self.preemptions += 1
        self.preempt_count[alloc.workload] = self.preempt_count.get(alloc.workload, 0) + 1
        self.events.append({"time": now, "kind": "preempt", "allocation": alloc.id, "workload": alloc.workload,
                            "queue": alloc.queue, "node": alloc.node, "start": alloc.start,
                            "resources": dict(alloc.resources), "grace": grace, "reason": reason.to_dict()})

    def evicted(self, alloc: Allocation, now: float) -> None:
        add_into(self.used, alloc.resources, -1)
        lost = now - alloc.start
        for k, v in alloc.resources.items():
            self.wasted[k] = self.wasted.get(k, 0) + v * lost
        self.events.append({"time": now, "kind": "evicted", "allocation": alloc.id, "workload": alloc.workload,
                            "queue": alloc.queue, "lost_seconds": lost})

    def note(self, note: Note, now: float) -> None:
        self.events.append({"time": now, "kind": "note", "note": note.kind, "subject": note.subject,
                            "message": note.message, "values": note.values})

    def config_change(self, change: Any, now: float) -> None:
        self.events.append({"time": now, "kind": "config", "queue": change.queue,
                            "changes": {k: v for k, v in change.changes.items()}})

    def close(self, now: float) -> None:
        self.before_change(now)
        self.end_t = max(self.end_t, now)

    # -- read ----------------------------------------------------------------------------------

    def waits(self) -> list[float]:
        return sorted(self.first_start[w] - self.submit_t[w] for w in self.first_start)

    def summary(self) -> dict[str, Any]:
        waits = self.waits()
        start = self.first_t or 0.0
        makespan = (max(self.finish_t.values()) - start) if self.finish_t else 0.0
        span = self.last_t - start
        util = {k: (self.used_integral.get(k, 0) / (cap * span) if cap and span > 0 else 0.0)
                for k, cap in sorted(self.capacity.items())}
        victims = len(self.preempt_count)
        return {
            "jobs_submitted": len(self.submit_t),
            "jobs_finished": len(self.finish_t),
            "jobs_unfinished": len(self.submit_t) - len(self.finish_t),
            "makespan_s": makespan,
            "wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
            "wait_p50_s": percentile(waits, 50),
            "wait_p95_s": percentile(waits, 95),
            "utilisation": util,
            "preemptions": self.preemptions,
            "preempted_workloads": victims,
            "finished_during_grace": self.finished_in_grace,
            "wasted_resource_seconds": dict(sorted(self.wasted.items())),
            "killed_at_requested_time": sum(self.killed.values()),
        }

    def workload_rows(self) -> list[dict[str, Any]]:
        rows = []
        for w, sub in self.submit_t.items():
            wl = self.state.workloads[w]
            fs = self.first_start.get(w)
            rows.append({"id": w, "queue": wl.queue, "priority": wl.priority, "submit": sub, "first_start": fs,
                         "finish": self.finish_t.get(w), "wait": (fs - sub) if fs is not None else None,
                         "preemptions": self.preempt_count.get(w, 0)})
        return rows

    def results(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"schema": RESULTS_SCHEMA, **(meta or {}), "summary": self.summary(),
                "workloads": self.workload_rows(), "events": self.events}
