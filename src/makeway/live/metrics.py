"""Prometheus ``/metrics``: the scheduler's state read at scrape time, plus two histograms.

Gauges and counters come from one collector that reads the loop's core under ``loop.lock`` when
Prometheus scrapes, so they are the figures the JSON API gives at that moment (no second copy of
the state to drift). Counters (preemptions, wasted work) are sums over the core's history, which
only grows. The pass-duration and commit-latency histograms are observed where those happen (a
pass listener on the loop, an observer on the group committer). Each app has its own registry, so
several servers in one process do not clash.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from makeway.live import views

PASS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
NODE_STATES = ("ready", "suspect", "cordoned", "lost", "unregistered")


class StateCollector:
    """Everything a scrape reads from the core."""

    def __init__(self, loop: Any, model: str, accepted: dict[str, Any], refresh: Any = None):
        self.loop, self.model, self.accepted = loop, model, accepted
        self.refresh = refresh  # brings ``accepted`` up to the journal (submits other processes took)

    def describe(self) -> list[Metric]:
        return []  # collected at scrape time only; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        loop = self.loop
        jobs = GaugeMetricFamily("makeway_jobs", "Jobs by state and queue", labels=["state", "queue"])
        usage = GaugeMetricFamily("makeway_queue_usage", "Resources in use by the queue's subtree",
                                  labels=["queue", "resource"])
        guaranteed = GaugeMetricFamily("makeway_queue_guaranteed", "The queue's guaranteed resources",
                                       labels=["queue", "resource"])
        maximum = GaugeMetricFamily("makeway_queue_max", "The queue's maximum resources (where set)",
                                    labels=["queue", "resource"])
        share = GaugeMetricFamily("makeway_queue_share",
                                  "The share the model schedules by (fair_share, usage_share, drs...)",
                                  labels=["queue", "kind"])
        running = GaugeMetricFamily("makeway_queue_running_tasks", "Running allocations of the queue",
                                    labels=["queue"])
        demand = GaugeMetricFamily("makeway_pending_demand", "Resources asked for by pending tasks",
                                   labels=["queue", "resource"])
        preempt = CounterMetricFamily("makeway_preemptions", "Preemptions by model, rule and victim queue",
                                      labels=["model", "rule", "queue"])
        wasted = CounterMetricFamily("makeway_wasted_resource_seconds",
                                     "Work lost to preemption: resource x seconds held by stopped attempts",
                                     labels=["queue", "resource"])
        node_states = GaugeMetricFamily("makeway_nodes", "Nodes by state", labels=["state"])
        age = GaugeMetricFamily("makeway_node_heartbeat_age_seconds",
                                "Seconds since the node's agent last spoke", labels=["node"])
        leader = GaugeMetricFamily("makeway_leader", "1 while this server's scheduler loop leads")
        passes = CounterMetricFamily("makeway_passes", "Scheduling passes committed")
        submitted = CounterMetricFamily("makeway_jobs_submitted",
                                        "Jobs accepted (journaled) by any of the server's API processes")
        applied = GaugeMetricFamily("makeway_applied_seq", "Journal sequence number applied by the last pass")

        if self.refresh is not None:
            self.refresh()
        node_rows = views.nodes(loop)["nodes"]
        with loop.lock:
            core = loop.core
            st = core.state
            now = core.now
            counts: dict[tuple[str, str], int] = {}
            for job in core.jobs.values():
                counts[(job.state, job.queue)] = counts.get((job.state, job.queue), 0) + 1
            unapplied = 0
            for jid, spec in list(self.accepted.items()):
                if jid not in core.jobs:
                    unapplied += 1
                    counts[("pending", spec["queue"])] = counts.get(("pending", spec["queue"]), 0) + 1
            submitted.add_metric([], len(core.jobs) + unapplied)
            shares = core.model.queue_shares(st, now)
            for name, q in st.queues.items():
                for r, v in st.queue_usage[name].items():
                    usage.add_metric([name, r], v)
                for r, v in (q.guaranteed or {}).items():
                    guaranteed.add_metric([name, r], v)
                for r, v in (q.max or {}).items():
                    if math.isfinite(v):
                        maximum.add_metric([name, r], v)
                for kind, v in (shares.get(name) or {}).items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        share.add_metric([name, kind], v)
                running.add_metric([name], len(st.queue_allocs[name]))
            dem: dict[tuple[str, str], float] = {}
            for wid in st.pending:
                q = st.workloads[wid].queue
                for r, v in st.pending_demand(wid).items():
                    dem[(q, r)] = dem.get((q, r), 0) + v
            by_rule: dict[tuple[str, str, str], int] = {}
            lost: dict[tuple[str, str], float] = {}
            for job in core.jobs.values():
                for p in job.preemptions:
                    key = (p.get("model") or "", p.get("rule") or "", job.queue)
                    by_rule[key] = by_rule.get(key, 0) + 1
                    a = core.attempts.get(p.get("attempt"))
                    if a is not None and a.ended is not None:  # counted once the work is gone
                        for r, v in views.work_lost(core, a.id, now)[1].items():
                            lost[(job.queue, r)] = lost.get((job.queue, r), 0.0) + v
            pass_no, applied_seq = core.pass_no, loop.applied_seq
        for (state, queue), n in sorted(counts.items()):
            jobs.add_metric([state, queue], n)
        for (q, r), v in sorted(dem.items()):
            demand.add_metric([q, r], v)
        for key, n in sorted(by_rule.items()):
            preempt.add_metric(list(key), n)
        for (q, r), v in sorted(lost.items()):
            wasted.add_metric([q, r], v)
        states = dict.fromkeys(NODE_STATES, 0)
        for n in node_rows:
            states[n["state"]] = states.get(n["state"], 0) + 1
            if n["heartbeat_age"] is not None:
                age.add_metric([n["name"]], n["heartbeat_age"])
        for s, n in states.items():
            node_states.add_metric([s], n)
        leader.add_metric([], 1.0 if is_leader(loop) else 0.0)
        passes.add_metric([], pass_no)
        applied.add_metric([], applied_seq)
        yield from (jobs, usage, guaranteed, maximum, share, running, demand, preempt, wasted, node_states, age,
                    leader, passes, applied, submitted)


def is_leader(loop: Any) -> bool:
    """A loop leads while it is ready and has not stopped (a stale leader's failed pass stops it);
    a standby's loop says so itself through a ``leader`` attribute."""
    flag = getattr(loop, "leader", None)
    if flag is not None:
        return bool(flag)
    return loop.ready and loop.failed is None


def mount_metrics(app: FastAPI, loop: Any, model: str, accepted: dict[str, Any], committer: Any = None,
                  refresh: Any = None) -> None:
    """``GET /metrics`` on ``app``, with a registry of its own. Submits count from the core and the
    journal (``refresh``), not from this process's requests: acceptor processes journal them too."""
    registry = CollectorRegistry()
    registry.register(StateCollector(loop, model, accepted, refresh))
    pass_hist = Histogram("makeway_pass_duration_seconds", "Scheduling pass duration (apply, decide, commit)",
                          buckets=PASS_BUCKETS, registry=registry)
    commit_hist = Histogram("makeway_commit_latency_seconds", "Journal group-commit latency per batch",
                            buckets=COMMIT_BUCKETS, registry=registry)
    loop.pass_listeners.append(lambda info: pass_hist.observe(info["seconds"]))
    if committer is not None:
        committer.observers.append(lambda seconds, rows: commit_hist.observe(seconds))
    app.state.metrics_registry = registry

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


__all__ = ["StateCollector", "mount_metrics"]
