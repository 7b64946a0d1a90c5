"""The first-fit model (``none``, ``first-fit``, ``fifo``): place pending work by priority then
submit time, first fit; preempt nothing. The placement it uses is the core's (``core.placement``);
this module holds only the policy: which workloads a pass tries, from the backlog and the change
journals.
"""

from __future__ import annotations

import heapq

from makeway.core.decisions import Decision, Start
from makeway.core.placement import (NEG, Backlog, blocking_queue, exceeds_free, first_fit, shape_of,
                                    within_room)
from makeway.core.policy import PreemptionModel
from makeway.core.resources import Res, add_into, sub
from makeway.core.state import ClusterState


class PriorityFirstFit(PreemptionModel):
    """Priority, then FIFO, first fit, honouring queue max; never preempts.

    A workload that did not fit waits in a ``Backlog`` and is tried again only when a release or a
    limit change could have made room for it (the state's change journals say which), so a backlog
    of tens of thousands costs nothing per pass beyond what changed.
    """

    name = "none"
    all_or_nothing = True

    def __init__(self, settings=None):
        super().__init__(settings)
        self._backlog: Backlog | None = None
        self._seen: tuple = ()

    def _candidates(self, state: ClusterState) -> tuple[list[str], list[tuple], list[int]]:
        """Workloads to try in full, backlog shapes to try on freed nodes, and those nodes' indexes."""
        if not self.caches:  # the reference path: every pending workload tried, nothing kept between passes
            self._backlog = Backlog(state.resources)
            return list(state.pending), [], []
        seen = self._seen
        self._seen = (state, state.config_epoch, state.freed_epoch, state.freed_log.position,
                      state.pending_log.position, state.topology_epoch)
        b = self._backlog
        # a node that joined, left or was cordoned changes what fits where: start over (rare)
        if b is None or not seen or seen[0] is not state or seen[1] != state.config_epoch \
                or seen[5] != state.topology_epoch:
            self._backlog = Backlog(state.resources)
            return list(state.pending), [], []
        fresh: dict[str, None] = {}
        new = state.pending_log.since(seen[4])
        if new is None:  # trimmed: compare pending counts instead (a requeue raises it)
            new = [w for w in b.failed if w not in state.pending]  # withdrawn since
            new += [w for w, tasks in state.pending.items()
                    if w not in b.failed or b.failed[w][2] != len(tasks)]
        for wl in new:
            b.forget(wl)  # a withdrawn workload leaves the backlog too
            if wl in state.pending:
                fresh[wl] = None
        if state.freed_epoch == seen[2]:
            return list(fresh), [], []
        freed = state.freed_log.since(seen[3])
        if freed is None:
            nodes = [i for i, e in enumerate(state.node_freed_epoch) if e > seen[2]]
            touched = {q for q, e in state.queue_freed_epoch.items() if e > seen[2]}
        else:
            order = state.node_order
            nodes = sorted({order[n] for n, _ in freed})
            touched = set()
            for _, q in freed:
                if q is not None:
                    touched.update(state.path_to_root(q))
        names = state.node_names
        nodes = [i for i in nodes if state.nodes[names[i]].schedulable]
        for q in touched & b.quota.keys():
            for wl in list(b.quota[q]):
                b.forget(wl)
                fresh[wl] = None
        if not nodes:
            return list(fresh), [], []
        room: Res = {}
        for i in nodes:
            for k, v in state.node_free(names[i]).items():
                if v > room.get(k, NEG):
                    room[k] = v
        for wl, shapes in list(b.gangs.items()):
            if any(within_room(s, room) for s in shapes):
                b.forget(wl)
                fresh[wl] = None
        return list(fresh), b.shapeswithin_room(room), nodes

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        fresh, shapes, freed_nodes = self._candidates(state)
        if not fresh and not shapes:
            return []
        b = self._backlog
        wls = state.workloads
        heap: list[tuple] = []
        for wl_id in fresh:
            w = wls[wl_id]
            heap.append(((-w.priority, w.submit, wl_id), 0, wl_id))
        retried = set()
        for shape in shapes:
            h = b.head(shape)
            if h is not None:
                heap.append((h[0], 1, shape))
                retried.add(shape)
        heapq.heapify(heap)
        # What this step promises is written into the free index as it goes, so thousands of
        # placements in one instant each cost a tree search, not a walk past every promised node;
        # the touched entries are put back from the state before returning.
        index = state.free_index()
        order = state.node_order
        names = state.node_names
        decisions: list[Decision] = []
        promised_nodes: dict[str, Res] = {}
        promised_queues: dict[str, Res] = {}
        promised_total: Res = {}
        dead: set[tuple] = set()  # shapes no node can hold any more in this pass
        try:
            while heap:
                key, kind, ref = heapq.heappop(heap)
                if kind == 1:
                    shape = ref
                    if shape in dead:
                        continue
                    wl_id = b.head(shape)[1]
                else:
                    wl_id = ref
                wl = wls[wl_id]
                tasks = list(state.pending[wl_id])
                count = len(tasks)
                req = state.task_resources(tasks[0]) if count == 1 else None
                if kind == 0 and count == 1:
                    shape = shape_of(req)
                    if shape in dead or (shape not in retried and b.head(shape) is not None):
                        b.fileshape_of(wl_id, key, shape, 1)
                        continue
                need = state.pending_demand(wl_id)
                starts = blocked = None
                room = not exceeds_free(state, need, promised_total)
                if room:
                    blocked = blocking_queue(state, wl.queue, need, promised_queues)
                if room and blocked is None:
                    if kind == 1 and len(freed_nodes) <= 32:  # else the index search is cheaper
                        hit = next((i for i in freed_nodes if index.fits_at(i, req)), None)
                        starts = None if hit is None else [Start(tasks[0], names[hit])]
                    else:
                        starts = first_fit(state, tasks)
                if starts is None:
                    if blocked is not None:
                        if kind == 1:
                            b.pop_head(shape)
                        b.file_quota(wl_id, blocked, count)
                    elif count == 1:
                        dead.add(shape)
                        if kind == 0:
                            b.fileshape_of(wl_id, key, shape, 1)
                        continue
                    else:
                        b.file_gang(wl_id, sorted({shape_of(state.task_resources(t)) for t in tasks}), count)
                    if kind == 1:
                        h = b.head(shape)
                        if h is not None:
                            heapq.heappush(heap, (h[0], 1, shape))
                    continue
                if kind == 1:
                    b.pop_head(shape)
                    h = b.head(shape)
                    if h is not None:
                        heapq.heappush(heap, (h[0], 1, shape))
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
