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
from makeway.core.resources import Res, add_into, fits_limit, sub
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
    the state, so several placements in one step never overbook a node. Tasks with the same
    request resume the search where the previous one landed: nodes before it did not fit that
    request and have only filled up since, so a gang of n tasks costs O(n + nodes), not O(n x nodes).
    """
    if nodes is None:
        return _indexed_first_fit(state, tasks, extra_used)
    promised: dict[str, Res] = {n: dict(r) for n, r in (extra_used or {}).items()}
    node_names = list(nodes)
    all_nodes, used_by = state.nodes, state.node_used
    out: list[Start] = []
    last_req: Res | None = None
    resume = 0
    for tid in tasks:
        req = state.task_resources(tid)
        i = resume if req is last_req else 0
        placed = False
        while i < len(node_names):
            n = node_names[i]
            node = all_nodes[n]
            if node.schedulable:
                used = used_by[n]
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
            i += 1
        if not placed:
            return None
        last_req, resume = req, i
    return out


def _indexed_first_fit(state: ClusterState, tasks: list[str], extra_used: dict[str, Res] | None) -> list[Start] | None:
    """First fit over all nodes through the state's free-capacity index; same answer as a scan.

    The index knows what the state holds; nodes promised earlier in this step are checked by
    hand and, if the promise makes them too full, the search resumes after them.
    """
    index = state.free_index()
    names = list(state.nodes)
    promised: dict[str, Res] = {n: dict(r) for n, r in (extra_used or {}).items()}
    undo: dict[int, dict[str, float]] = {}
    out: list[Start] = []
    last_req: Res | None = None
    resume = 0
    try:
        for tid in tasks:
            req = state.task_resources(tid)
            i = resume if req is last_req else 0
            while True:
                i = index.first_fit(req, i)
                if i is None:
                    return None
                n = names[i]
                extra = promised.get(n)
                if extra is None or all(v <= 0 or state.node_used[n].get(k, 0) + extra.get(k, 0) + v
                                        <= state.nodes[n].capacity.get(k, 0) + 1e-9 for k, v in req.items()):
                    break
                i += 1
            # this gang's own placements go into the index for its later tasks, undone on return
            leaf = index.leaf(i)
            undo.setdefault(i, dict(leaf))
            index.set(i, {k: v - req.get(k, 0) for k, v in leaf.items()})
            if n in promised:
                add_into(promised[n], req)
            out.append(Start(tid, n))
            last_req, resume = req, i
        return out
    finally:
        for i, leaf in undo.items():
            index.set(i, leaf)


def exceeds_free(state: ClusterState, need: Res, promised_total: Res | None = None) -> bool:
    """Cheap necessary condition: the request is larger than all free capacity together."""
    cap = state.total_capacity_cached()
    used = state.used_total
    for k, v in need.items():
        if v > 0 and used.get(k, 0) + (promised_total.get(k, 0) if promised_total else 0) + v > cap.get(k, 0) + 1e-9:
            return True
    return False


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
    """Priority, then FIFO, first fit, honouring queue max; never preempts.

    A workload that did not fit is not tried again until resources are released or a limit
    changes (the state's epochs say when), which keeps a long backlog cheap.
    """

    name = "none"

    def __init__(self, settings=None):
        super().__init__(settings)
        self._tried: set[str] = set()
        self._epochs = (-1, -1)

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        epochs = (state.freed_epoch, state.config_epoch)
        if epochs != self._epochs:
            self._tried.clear()
            self._epochs = epochs
        tried = self._tried
        candidates = [w for w in state.pending if w not in tried]
        if not candidates:
            return []
        # What this step promises is written into the free index as it goes, so thousands of
        # placements in one instant each cost a tree search, not a walk past every promised node;
        # the touched entries are put back from the state before returning.
        index = state.free_index()
        order = state.node_order
        decisions: list[Decision] = []
        promised_nodes: dict[str, Res] = {}
        promised_queues: dict[str, Res] = {}
        promised_total: Res = {}
        try:
            for wl_id in pending_order(state, candidates):
                wl = state.workloads[wl_id]
                need = state.pending_demand(wl_id)
                if exceeds_free(state, need, promised_total) or not within_queue_max(state, wl.queue, need, promised_queues):
                    tried.add(wl_id)
                    continue
                tasks = list(state.pending[wl_id])
                starts = first_fit(state, tasks)
                if starts is None:
                    tried.add(wl_id)
                    continue
                for st in starts:
                    add_into(promised_nodes.setdefault(st.node, {}), state.task_resources(st.task))
                for n in {st.node for st in starts}:
                    node = state.nodes[n]
                    free = sub(sub(node.capacity, state.node_used[n]), promised_nodes[n])
                    index.set(order[n], free)
                for q in state.path_to_root(wl.queue):
                    add_into(promised_queues.setdefault(q, {}), need)
                add_into(promised_total, need)
                decisions.extend(starts)
        finally:
            for n in promised_nodes:
                state.refresh_index(n)
        return decisions
