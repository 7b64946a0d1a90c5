"""The default model: place pending work by priority then submit time, first fit; preempt nothing.

Placement is gang-aware per workload: all pending tasks of a workload are placed in one go or none
are, so a job never holds half its resources while waiting for the rest. The first-fit search is
shared with the preemption models (``first_fit``), which is YuniKorn's lesson: preemption that
re-implements the allocator's fit logic drifts from it.
"""

from __future__ import annotations

from typing import Iterable

from makeway.core.decisions import Decision, Start
from makeway.core.policy import PreemptionModel
from makeway.core.resources import Res, add_into, fits_limit
from makeway.core.state import ClusterState


def pending_order(state: ClusterState, workloads: Iterable[str] | None = None) -> list[str]:
    """Pending workloads by priority (high first), then submit time, then id: a total order."""
    ids = state.pending.keys() if workloads is None else workloads
    wls = state.workloads
    return sorted(ids, key=lambda w: (-wls[w].priority, wls[w].submit, w))


def first_fit(state: ClusterState, tasks: list[str], extra_used: dict[str, Res] | None = None,
              nodes: Iterable[str] | None = None) -> list[Start] | None:
    """Place every task on the first node (in node order) where it fits, or return None.

    ``extra_used`` holds resources already promised on nodes in this step and not yet applied to
    the state, so several placements in one step never overbook a node.
    """
    promised: dict[str, Res] = {n: dict(r) for n, r in (extra_used or {}).items()}
    node_names = list(state.nodes) if nodes is None else list(nodes)
    out: list[Start] = []
    for tid in tasks:
        req = state.task_resources(tid)
        placed = False
        for n in node_names:
            node = state.nodes[n]
            if not node.schedulable:
                continue
            used = state.node_used[n]
            extra = promised.get(n)
            cap = node.capacity
            ok = True
            for k, v in req.items():
                if v > 0 and used.get(k, 0) + (extra.get(k, 0) if extra else 0) + v > cap.get(k, 0) + 1e-9:
                    ok = False
                    break
            if ok:
                add_into(promised.setdefault(n, {}), req)
                out.append(Start(tid, n))
                placed = True
                break
        if not placed:
            return None
    return out


def within_queue_max(state: ClusterState, queue: str, request: Res, extra: dict[str, Res] | None = None) -> bool:
    """True when adding ``request`` keeps the queue and all its ancestors within their max."""
    for q in state.path_to_root(queue):
        limit = state.queues[q].max
        if limit is None:
            continue
        usage = dict(state.queue_usage[q])
        if extra and q in extra:
            add_into(usage, extra[q])
        add_into(usage, request)
        if not fits_limit(usage, limit):
            return False
    return True


class PriorityFirstFit(PreemptionModel):
    """Priority, then FIFO, first fit, honouring queue max; never preempts."""

    name = "none"

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        decisions: list[Decision] = []
        promised_nodes: dict[str, Res] = {}
        promised_queues: dict[str, Res] = {}
        for wl_id in pending_order(state):
            tasks = list(state.pending[wl_id])
            wl = state.workloads[wl_id]
            need: Res = {}
            for t in tasks:
                add_into(need, state.task_resources(t))
            if not within_queue_max(state, wl.queue, need, promised_queues):
                continue
            starts = first_fit(state, tasks, promised_nodes)
            if starts is None:
                continue
            for s in starts:
                add_into(promised_nodes.setdefault(s.node, {}), state.task_resources(s.task))
            for q in state.path_to_root(wl.queue):
                add_into(promised_queues.setdefault(q, {}), need)
            decisions.extend(starts)
        return decisions
