"""What a simulation records and the summary people read.

The recorder is fed by the simulator as things happen and keeps compact per-workload fields (submit,
first start, finish, preemption count) plus the event log of every preemption, note and config change
with its reason. Restarts (a task starting again after its eviction) are kept only for the workloads
that had one, so the common start-once workload pays nothing for them. Utilisation is integrated
exactly: used resources x time between changes.

Per tracked queue the time series hold what the model decides by, sampled on a bounded grid (the
interval doubles whenever the sample count would pass ``MAX_SAMPLES``): usage and pending demand
per resource, pending tasks, and the shares the model reports (``PreemptionModel.queue_shares``:
YTsaurus's fair share, Kueue's DRS, Symphony's deserved slots). Guarantees and maxes are kept as
steps (``limits``: one entry at the start and one per config change). Why each waiting workload
waits is recorded as it changes (``makeway.sim.pending.ReasonLog``) and written in its row.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from makeway.core.decisions import Note, Reason
from makeway.core.objects import Allocation, Workload
from makeway.core.resources import EPS, Number, Res, add_into
from makeway.core.state import ClusterState
from makeway.sim.pending import ReasonLog, pending_reasons

RESULTS_SCHEMA = "makeway.results/1"


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty list)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def _round(v: float) -> float:
    """Six significant digits: series stay exact for counts and short in JSON for shares."""
    return v if isinstance(v, int) or v == 0 else float(f"{v:.6g}")


class Recorder:
    MAX_SAMPLES = 2000
    MAX_TRACKED_QUEUES = 64

    def __init__(self, state: ClusterState, record_starts: bool = False, model: Any = None):
        self.state = state
        self.model = model
        self.reasons: ReasonLog | None = ReasonLog(state, model) if model is not None else None
        self.record_starts = record_starts
        self.model_options: dict[str, Any] = {}  # how the model computed (``caches`` ...), from the engine
        self.pending_tasks: dict[str, int] = {q: 0 for q in state.queues}
        self.queue_wasted: dict[str, Res] = {}
        self.queue_preemptions: dict[str, int] = {}
        self.convergence: list[dict[str, Any]] = []
        self._open_convergence: list[dict[str, Any]] = []
        leaves = [q for q, spec in state.queues.items() if not spec.children]
        tracked = list(state.queues) if len(state.queues) <= self.MAX_TRACKED_QUEUES else leaves[: self.MAX_TRACKED_QUEUES]
        self.tracked_queues: list[str] = tracked
        self.leaves = leaves
        self.sample_interval = 1.0
        self.series_t: list[float] = []
        self.series_used: dict[str, list[float]] = {k: [] for k in state.resources}
        self.series_queues: dict[str, dict[str, list[float]]] = {q: {k: [] for k in state.resources} for q in tracked}
        self.series_jain: list[float] = []
        self._tracked_set = set(tracked)
        self._quotas_read = model is None
        self.pending_res: dict[str, Res] = {q: {} for q in tracked}
        self.pending_n: dict[str, int] = {q: 0 for q in tracked}
        self.series_pending: dict[str, dict[str, list[float]]] = {q: {k: [] for k in state.resources} for q in tracked}
        self.series_pending_n: dict[str, list[int]] = {q: [] for q in tracked}
        self.series_shares: dict[str, dict[str, list[float | None]]] = {q: {} for q in tracked}
        self.limits: dict[str, list[list[Any]]] = {
            q: [[0.0, dict(state.queues[q].guaranteed or {}), dict(state.queues[q].max or {})]] for q in tracked}
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
        # Filled only on eviction, so a workload that starts once costs nothing here.
        self.restarts: dict[str, list[tuple[float, str, str, float]]] = {}
        self._evicted_at: dict[str, float] = {}
        self.killed: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.by_rule: dict[str, int] = {}
        self.note_counts: dict[str, int] = {}
        self.wasted: Res = {}
        self.preemptions = 0
        self.finished_in_grace = 0
        self.largest_node: Res = state.largest_node_capacity()
        self.unplaceable = 0
        self.first_unplaceable: tuple[str, str, Number, Number] | None = None
        # Why the run ended early, when it did: "horizon" (set by the engine) or "no-progress" (a
        # model that can make no progress); None for a run that went until nothing was left to do.
        # Unfinished workloads' pending reasons are read from it (makeway.sim.pending).
        self.stopped_reason: str | None = None

    # -- feed ----------------------------------------------------------------------------------

    def before_change(self, now: float) -> None:
        dt = now - self.last_t
        if dt > 0:
            for k, v in self.used.items():
                if v:
                    self.used_integral[k] = self.used_integral.get(k, 0) + v * dt
            self.last_t = now
            if not self.series_t or now - self.series_t[-1] >= self.sample_interval:
                self._sample(now)

    # -- time series (bounded: the interval doubles whenever the sample count would pass the cap) --

    def _sample(self, now: float) -> None:
        if len(self.series_t) >= self.MAX_SAMPLES:
            self._thin()
        self.series_t.append(now)
        for k, series in self.series_used.items():
            cap = self.capacity.get(k, 0)
            series.append(self.used.get(k, 0) / cap if cap else 0.0)
        usage = self.state.queue_usage
        for q, per_res in self.series_queues.items():
            u = usage[q]
            for k, series in per_res.items():
                series.append(u.get(k, 0))
            p = self.pending_res[q]
            for k, series in self.series_pending[q].items():
                series.append(_round(p.get(k, 0)))
            self.series_pending_n[q].append(self.pending_n[q])
        self._sample_shares(now, len(self.series_t) - 1)
        if not self._quotas_read:
            self._read_quotas()
        self.series_jain.append(self.jain_now())

    def _read_quotas(self) -> None:
        """A model whose quotas live in its own settings (Kueue's ``resourceGroups``) reports them
        (``nominal_quotas``); they become the guarantee of the first ``limits`` step of a queue
        that has none in the config. Read once the model is bound, at the first sample."""
        self._quotas_read = True
        read = getattr(self.model, "nominal_quotas", None)
        if read is None:
            return
        for q, nominal in read(self.state).items():
            steps = self.limits.get(q)
            if steps and len(steps) == 1 and not steps[0][1] and nominal:
                steps[0][1] = {k: _round(v) for k, v in nominal.items()}

    def _sample_shares(self, now: float, index: int) -> None:
        """The model's per-queue shares at this sample; a share first reported later is padded with
        None before it, one no longer reported gets None."""
        if self.model is None:
            return
        shares = self.model.queue_shares(self.state, now)
        for q, per in self.series_shares.items():
            got = shares.get(q) or {}
            for key, v in got.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                series = per.get(key)
                if series is None:
                    series = per[key] = [None] * index
                series.append(_round(v))
            for key, series in per.items():
                if len(series) <= index:
                    series.append(None)

    def _thin(self) -> None:
        keep = slice(None, None, 2)
        self.series_t = self.series_t[keep]
        for k in self.series_used:
            self.series_used[k] = self.series_used[k][keep]
        for group in (self.series_queues, self.series_pending, self.series_shares):
            for per_res in group.values():
                for k in per_res:
                    per_res[k] = per_res[k][keep]
        for q in self.series_pending_n:
            self.series_pending_n[q] = self.series_pending_n[q][keep]
        self.series_jain = self.series_jain[keep]
        self.sample_interval *= 2

    def jain_now(self) -> float:
        """Jain's index over the leaf queues that have work, of weighted dominant shares of the cluster."""
        state = self.state
        xs = []
        for q in self.leaves:
            usage = state.queue_usage[q]
            if not self.pending_tasks.get(q) and not any(usage.values()):
                continue
            share = max((v / self.capacity[k] for k, v in usage.items() if self.capacity.get(k)), default=0.0)
            w = state.queues[q].weight or 1.0
            xs.append(share / w)
        if not xs:
            return 1.0
        total, sq = sum(xs), sum(x * x for x in xs)
        return (total * total) / (len(xs) * sq) if sq > 0 else 1.0

    def counts(self) -> tuple[int, int]:
        """(finished, submitted) workloads so far, for a run interrupted midway."""
        return len(self.finish_t), len(self.submit_t)

    def submit(self, wl: Workload, now: float) -> None:
        self.before_change(now)
        if self.first_t is None:
            self.first_t = now
        self.submit_t[wl.id] = now
        self.pending_tasks[wl.queue] += wl.task_count
        tracked = [q for q in self.state.path_to_root(wl.queue) if q in self._tracked_set]
        if tracked:
            for g in wl.groups:
                if g.count > 0:
                    for q in tracked:
                        add_into(self.pending_res[q], g.resources, g.count)
            for q in tracked:
                self.pending_n[q] += wl.task_count
        if self.reasons is not None:
            self.reasons.submitted(wl)
        too_big = self.beyond_every_node(wl)
        if too_big is not None:
            self.unplaceable += 1
            if self.first_unplaceable is None:
                self.first_unplaceable = (wl.id, *too_big)

    def beyond_every_node(self, wl: Workload) -> tuple[str, Number, Number] | None:
        """(resource, asked, largest node's) for a task bigger than every node, else None: such a
        workload stays pending for ever, and saying so up front spares users a hunt."""
        found = self.state.beyond_every_node(wl, self.largest_node)
        return None if found is None else found[1:]

    def start(self, alloc: Allocation, now: float) -> None:
        add_into(self.used, alloc.resources)
        self.pending_tasks[alloc.queue] -= 1
        self._pending_change(alloc, -1)
        if self.reasons is not None:
            self.reasons.started(alloc.workload)
        self.first_start.setdefault(alloc.workload, now)
        if self._evicted_at:
            evicted_at = self._evicted_at.pop(alloc.id, None)
            if evicted_at is not None:
                self.restarts.setdefault(alloc.workload, []).append((now, alloc.id, alloc.node, evicted_at))
        if self.record_starts:
            self.events.append({"time": now, "kind": "start", "allocation": alloc.id,
                                "workload": alloc.workload, "node": alloc.node})

    def _pending_change(self, alloc: Allocation, sign: int) -> None:
        for q in self.state.path_to_root(alloc.queue):
            if q in self._tracked_set:
                add_into(self.pending_res[q], alloc.resources, sign)
                self.pending_n[q] += sign

    def after_instant(self, now: float) -> None:
        """Called once the model had every call of an instant: pending reasons are read now."""
        if self.reasons is not None:
            self.reasons.observe(now)

    def finish(self, alloc: Allocation, now: float, killed: bool = False) -> None:
        add_into(self.used, alloc.resources, -1)
        if alloc.preempting:
            self.finished_in_grace += 1
        if killed:
            self.killed[alloc.workload] = self.killed.get(alloc.workload, 0) + 1
        if self.state.is_finished(alloc.workload):
            self.finish_t[alloc.workload] = now
        self.end_t = max(self.end_t, now)
        self._check_convergence(now)
        if self.record_starts:
            self.events.append({"time": now, "kind": "finish", "allocation": alloc.id, "workload": alloc.workload})

    def preempt(self, alloc: Allocation, reason: Reason, now: float, grace: float) -> None:
        self.preemptions += 1
        self.preempt_count[alloc.workload] = self.preempt_count.get(alloc.workload, 0) + 1
        self.queue_preemptions[alloc.queue] = self.queue_preemptions.get(alloc.queue, 0) + 1
        rule = f"{reason.model}/{reason.rule}"
        self.by_rule[rule] = self.by_rule.get(rule, 0) + 1
        if self.reasons is not None:
            self.reasons.preempted_for(reason.preemptor, alloc.id, now)
        self.events.append({"time": now, "kind": "preempt", "allocation": alloc.id, "workload": alloc.workload,
                            "queue": alloc.queue, "node": alloc.node, "start": alloc.start,
                            "resources": dict(alloc.resources), "grace": grace, "reason": reason.to_dict()})

    def evicted(self, alloc: Allocation, now: float) -> None:
        add_into(self.used, alloc.resources, -1)
        self.pending_tasks[alloc.queue] += 1
        self._pending_change(alloc, 1)
        lost = now - alloc.start
        qw = self.queue_wasted.setdefault(alloc.queue, {})
        for k, v in alloc.resources.items():
            self.wasted[k] = self.wasted.get(k, 0) + v * lost
            qw[k] = qw.get(k, 0) + v * lost
        self._evicted_at[alloc.id] = now
        self._check_convergence(now)
        self.events.append({"time": now, "kind": "evicted", "allocation": alloc.id, "workload": alloc.workload,
                            "queue": alloc.queue, "resources": dict(alloc.resources), "lost_seconds": lost})

    def note(self, note: Note, now: float) -> None:
        self.note_counts[note.kind] = self.note_counts.get(note.kind, 0) + 1
        self.events.append({"time": now, "kind": "note", "note": note.kind, "subject": note.subject,
                            "message": note.message, "values": note.values})

    def config_change(self, change: Any, now: float) -> None:
        self.events.append({"time": now, "kind": "config", "queue": change.queue,
                            "changes": {k: v for k, v in change.changes.items()}})
        if change.queue in self.limits:
            spec = self.state.queues[change.queue]
            self.limits[change.queue].append([now, dict(spec.guaranteed or {}), dict(spec.max or {})])
        new_max = change.changes.get("max")
        if new_max:
            self._open_convergence = [c for c in self._open_convergence if c["queue"] != change.queue]
            entry = {"queue": change.queue, "time": now, "max": dict(new_max), "converged_at": None, "seconds": None}
            self.convergence.append(entry)
            self._open_convergence.append(entry)
            self._check_convergence(now)

    def _check_convergence(self, now: float) -> None:
        """Quota convergence: when a queue's usage first fits a lowered max again."""
        if not self._open_convergence:
            return
        still = []
        for c in self._open_convergence:
            usage = self.state.queue_usage[c["queue"]]
            if all(usage.get(k, 0) <= v + EPS for k, v in c["max"].items()):
                c["converged_at"], c["seconds"] = now, now - c["time"]
            else:
                still.append(c)
        self._open_convergence = still

    def stop(self, now: float, code: str, message: str, workloads: list[str]) -> None:
        """The simulator gave up on the run (``code`` such as ``no-progress``); ``workloads`` are the
        ones caught in what it detected, so ``explain`` can say so."""
        self.stopped_reason = message if message.startswith(code) else f"{code}: {message}"
        self.events.append({"time": now, "kind": "stopped", "reason": code, "message": self.stopped_reason,
                            "workloads": list(workloads)})

    def close(self, now: float) -> None:
        self.before_change(now)
        self.end_t = max(self.end_t, now)

    # -- read ----------------------------------------------------------------------------------

    def workload_fields(self, w: str) -> tuple[str, Any, float]:
        """(queue, priority, duration) of a submitted workload, which the results read per row."""
        wl = self.state.workloads[w]
        return wl.queue, wl.priority, wl.duration

    def waits(self) -> list[float]:
        return sorted(self.first_start[w] - self.submit_t[w] for w in self.first_start)

    def _slowdowns(self, ids: Any = None) -> list[float]:
        """Bounded slowdown (wait + run) / max(run, 10 s), at least 1, of finished workloads."""
        fields = self.workload_fields
        out = []
        for w in (self.finish_t if ids is None else ids):
            if w not in self.finish_t:
                continue
            run = fields(w)[2]
            out.append(max(1.0, (self.finish_t[w] - self.submit_t[w]) / max(run, 10.0)))
        return out

    def starvation_seconds(self) -> float:
        """Total time operations spent starving, from the models' ``starvation`` notes."""
        total, since = 0.0, {}
        for e in self.events:
            if e["kind"] != "note" or e["note"] != "starvation":
                continue
            starving = (e.get("values") or {}).get("starving", True)
            if starving:
                since.setdefault(e["subject"], e["time"])
            elif e["subject"] in since:
                total += e["time"] - since.pop(e["subject"])
        total += sum(self.last_t - t for t in since.values())
        return total

    def queue_table(self) -> dict[str, Any]:
        by_queue: dict[str, list[str]] = {}
        for w in self.submit_t:
            by_queue.setdefault(self.workload_fields(w)[0], []).append(w)
        out = {}
        for q in self.state.queues:
            ids = by_queue.get(q, [])
            waits = sorted(self.first_start[w] - self.submit_t[w] for w in ids if w in self.first_start)
            slow = self._slowdowns(ids)
            spec = self.state.queues[q]
            if not ids and not spec.children and q not in self.queue_preemptions:
                continue
            out[q] = {"jobs": len(ids), "finished": sum(1 for w in ids if w in self.finish_t),
                      "wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
                      "wait_p50_s": percentile(waits, 50), "wait_p95_s": percentile(waits, 95),
                      "wait_p99_s": percentile(waits, 99),
                      "bounded_slowdown_mean": sum(slow) / len(slow) if slow else 0.0,
                      "preemptions": self.queue_preemptions.get(q, 0),
                      "victim_workloads": sum(1 for w in ids if w in self.preempt_count),
                      "wasted_resource_seconds": dict(sorted(self.queue_wasted.get(q, {}).items())),
                      "guaranteed": spec.guaranteed, "max": spec.max}
        return out

    def timeseries(self) -> dict[str, Any]:
        queues = {}
        for q, per_res in self.series_queues.items():
            entry: dict[str, Any] = {"usage": per_res, "pending": self.series_pending[q],
                                     "pending_tasks": self.series_pending_n[q], "limits": self.limits[q]}
            if self.series_shares[q]:
                entry["shares"] = dict(sorted(self.series_shares[q].items()))
            queues[q] = entry
        return {"interval": self.sample_interval, "t": self.series_t, "utilisation": self.series_used,
                "queues": queues, "jain": self.series_jain}

    def summary(self) -> dict[str, Any]:
        waits = self.waits()
        slow = self._slowdowns()
        gpu_names = [k for k in self.wasted if k == "gpu" or k.endswith("/gpu") or k.startswith("gpu")]
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
            "unplaceable": self.unplaceable,
            "makespan_s": makespan,
            "wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
            "wait_p50_s": percentile(waits, 50),
            "wait_p95_s": percentile(waits, 95),
            "wait_p99_s": percentile(waits, 99),
            "bounded_slowdown_mean": sum(slow) / len(slow) if slow else 0.0,
            "utilisation": util,
            "jain_mean": (sum(self.series_jain) / len(self.series_jain)) if self.series_jain else 1.0,
            "preemptions": self.preemptions,
            "preempted_workloads": victims,
            "preemptions_by_rule": dict(sorted(self.by_rule.items())),
            "notes": dict(sorted(self.note_counts.items())),
            "finished_during_grace": self.finished_in_grace,
            "wasted_resource_seconds": dict(sorted(self.wasted.items())),
            "gpu_hours_wasted": sum(self.wasted[k] for k in gpu_names) / 3600.0,
            "killed_at_requested_time": sum(self.killed.values()),
            "starvation_s": self.starvation_seconds(),
            "stopped": self.stopped_reason,
            "pending_reasons": self._reason_counts(),
        }

    def pending_reasons(self) -> dict[str, str]:
        """A reason code for every submitted workload that did not finish, by id (submission order)."""
        unfinished = [w for w in self.submit_t if w not in self.finish_t]
        return pending_reasons(self.state, unfinished, self.stopped_reason)

    def _reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for code in self.pending_reasons().values():
            counts[code] = counts.get(code, 0) + 1
        return dict(sorted(counts.items()))

    def workload_rows(self) -> list[dict[str, Any]]:
        """One row per submitted workload. ``restarts`` is always written (empty when there were none)
        so a reader can tell "never restarted" from a file recorded before restarts were kept."""
        return list(self.iter_workload_rows())

    def iter_workload_rows(self) -> Iterator[dict[str, Any]]:
        """``workload_rows`` one at a time (``makeway.sim.results_io`` writes them as they come)."""
        reasons = self.pending_reasons()
        trails = self.reasons.rows() if self.reasons is not None else {}
        for w, sub in self.submit_t.items():
            queue, priority, _ = self.workload_fields(w)
            fs = self.first_start.get(w)
            row = {"id": w, "queue": queue, "priority": priority, "submit": sub, "first_start": fs,
                   "finish": self.finish_t.get(w), "wait": (fs - sub) if fs is not None else None,
                   "preemptions": self.preempt_count.get(w, 0),
                   "pending_reason": reasons.get(w),
                   "restarts": [{"time": t, "allocation": a, "node": n, "evicted_at": ev}
                                for t, a, n, ev in self.restarts.get(w, ())]}
            if w in trails:
                row["reasons"] = trails[w]
            yield row

    def results(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"schema": RESULTS_SCHEMA, **(meta or {}), "model_options": dict(self.model_options),
                "capacity": dict(self.capacity), "summary": self.summary(),
                "queues": self.queue_table(), "quota_convergence": self.convergence,
                "timeseries": self.timeseries(), "workloads": self.workload_rows(), "events": self.events}
