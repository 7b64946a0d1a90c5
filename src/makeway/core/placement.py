"""Placement shared by the models: pending order, first fit over nodes, queue-max checks, the backlog.

Placement is gang-aware per workload: all pending tasks of a workload are placed in one go or none
are, so a job never holds half its resources while waiting for the rest. Every model that places
work uses ``first_fit`` rather than its own search, which is YuniKorn's lesson: preemption that
re-implements the allocator's fit logic drifts from it.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from typing import Iterable

from makeway.core.decisions import Start
from makeway.core.resources import EPS, Res, add_into, fits_limit, fits_on
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
                if fits_on(req, used_by[n], node.capacity, promised.get(n)):
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
    names = state.node_names
    promised: dict[str, Res] = {n: dict(r) for n, r in (extra_used or {}).items()}
    last = len(tasks) - 1
    undo: dict[int, dict[str, float]] = {}
    out: list[Start] = []
    last_req: Res | None = None
    resume = 0
    try:
        for k, tid in enumerate(tasks):
            req = state.task_resources(tid)
            i = resume if req is last_req else 0
            while True:
                i = index.first_fit(req, i)
                if i is None:
                    return None
                n = names[i]
                extra = promised.get(n)
                if extra is None or fits_on(req, state.node_used[n], state.nodes[n].capacity, extra):
                    break
                i += 1
            if k < last:  # this gang's own placements go into the index for its later tasks, undone on return
                leaf = index.leaf(i)
                undo.setdefault(i, dict(leaf))
                index.set(i, {r: v - req.get(r, 0) for r, v in leaf.items()})
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
    return not fits_on(need, state.used_total, state.total_capacity_cached(), promised_total)


def within_queue_max(state: ClusterState, queue: str, request: Res, extra: dict[str, Res] | None = None) -> bool:
    """True when adding ``request`` keeps the queue and all its ancestors within their max."""
    return blocking_queue(state, queue, request, extra) is None


def shape_of(request: Res) -> tuple:
    """A request as a hashable key (positive amounts only, by resource name)."""
    return tuple(sorted((k, v) for k, v in request.items() if v > 0))


def within_room(shape: tuple, room: Res) -> bool:
    """The shape fits ``room`` by the free index's ``EPS`` tolerance."""
    for k, v in shape:
        if v - EPS > room.get(k, NEG):
            return False
    return True


NEG = float("-inf")


class Backlog:
    """Pending workloads that did not fit, filed under the reason, so that a later pass re-tries
    only those a change could have helped.

    Filing is sound because between passes free capacity only grows where something was released
    and queue usage only shrinks where something ended: a single task that fit no node can fit only
    on a node freed since (so only shapes no larger than the freed room are re-tried, and only
    against the freed nodes); a gang only if one of its task shapes fits such a node; a workload a
    queue's max blocked only once that queue's usage went down. Everything else would fail again,
    and a failure has no effect, so skipping it changes no decision. A non-empty shape that is not
    re-tried therefore fits no node, which also settles new workloads of that shape at once.
    """

    __slots__ = ("failed", "by_shape", "sorted_by", "gangs", "quota")

    def __init__(self, resources: tuple[str, ...]):
        self.failed: dict[str, tuple] = {}  # workload -> (kind, shape or queue, pending task count)
        self.by_shape: dict[tuple, list] = {}  # shape -> heap of (pending order key, workload)
        # per resource: (amounts ascending, shapes) so "shapes within this room" reads a prefix
        self.sorted_by: dict[str, tuple[list[float], list[tuple]]] = {r: ([], []) for r in resources}
        self.gangs: dict[str, list[tuple]] = {}
        self.quota: dict[str, dict[str, None]] = {}

    def fileshape_of(self, wl: str, key: tuple, shape: tuple, count: int) -> None:
        self.failed[wl] = ("shape", shape, count)
        heap = self.by_shape.get(shape)
        if heap is None:
            heap = self.by_shape[shape] = []
            amounts = dict(shape)
            for r, (keys, shapes) in self.sorted_by.items():
                i = bisect_right(keys, amounts.get(r, 0.0))
                keys.insert(i, amounts.get(r, 0.0))
                shapes.insert(i, shape)
        heapq.heappush(heap, (key, wl))

    def file_gang(self, wl: str, shapes: list[tuple], count: int) -> None:
        self.failed[wl] = ("gang", None, count)
        self.gangs[wl] = shapes

    def file_quota(self, wl: str, queue: str, count: int) -> None:
        self.failed[wl] = ("quota", queue, count)
        self.quota.setdefault(queue, {})[wl] = None

    def forget(self, wl: str) -> None:
        """Take a workload out of the backlog (its shape heap entry goes stale and is skipped)."""
        entry = self.failed.pop(wl, None)
        if entry is None:
            return
        kind, ref, _ = entry
        if kind == "gang":
            del self.gangs[wl]
        elif kind == "quota":
            self.quota[ref].pop(wl, None)

    def head(self, shape: tuple) -> tuple | None:
        """The first workload filed under ``shape`` (by pending order), dropping stale entries."""
        heap = self.by_shape.get(shape)
        while heap:
            key, wl = heap[0]
            entry = self.failed.get(wl)
            if entry is not None and entry[0] == "shape" and entry[1] == shape:
                return key, wl
            heapq.heappop(heap)
        if heap is not None:
            del self.by_shape[shape]
            amounts = dict(shape)
            for r, (keys, shapes) in self.sorted_by.items():
                i = bisect_left(keys, amounts.get(r, 0.0))
                while shapes[i] != shape:
                    i += 1
                del keys[i]
                del shapes[i]
        return None

    def pop_head(self, shape: tuple) -> None:
        _, wl = heapq.heappop(self.by_shape[shape])
        del self.failed[wl]

    def shapeswithin_room(self, room: Res) -> list[tuple]:
        """Shapes no larger than ``room``, read from the shortest per-resource prefix."""
        best: list[tuple] | None = None
        for r, (keys, shapes) in self.sorted_by.items():
            n = bisect_right(keys, room.get(r, NEG) + EPS)
            if best is None or n < len(best):
                best = shapes[:n]
                if n == 0:
                    break
        return [s for s in best or () if within_room(s, room)]


def blocking_queue(state: ClusterState, queue: str, request: Res, extra: dict[str, Res] | None) -> str | None:
    """The first queue on the path to the root whose max ``request`` would exceed, or None."""
    for q in state.path_to_root(queue):
        limit = state.queues[q].max
        if limit is None:
            continue
        usage = dict(state.queue_usage[q])
        if extra and q in extra:
            add_into(usage, extra[q])
        add_into(usage, request)
        if not fits_limit(usage, limit):
            return q
    return None
