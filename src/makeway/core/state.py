"""Cluster state with the incremental indexes a scheduler needs.

Usage per queue (hierarchical: a queue's usage includes its descendants), used resources per node,
allocations per node in start order, running and pending tasks per workload. Every index is updated
in O(depth of tree + size of vector) when a task starts or ends, never recomputed from scratch.

The state is mutated only by its executor (simulator or service) through ``start``/``end``/
``requeue`` (and, on a live cluster, ``add_node``/``remove_node``/``withdraw``); models read it and
return decisions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator

from makeway.core.journal import Journal
from makeway.core.node_index import FreeIndex
from makeway.core.objects import Allocation, Node, Queue, Workload, split_task_id, task_id
from makeway.core.resources import EPS, Number, Res, add_into, fits, fits_on, sub


class StateError(ValueError):
    """An executor asked for something the state cannot do (unknown task, double start...)."""


class ClusterState:
    __slots__ = ("resources", "queues", "nodes", "workloads", "pending", "allocations", "node_used",
                 "node_allocs", "queue_usage", "queue_allocs", "running", "finished_tasks",
                 "_seq", "_ancestors", "roots", "used_total", "freed_epoch", "config_epoch",
                 "_capacity", "pending_res", "node_order", "alloc_epoch", "submit_epoch",
                 "_free_index", "freed_log", "pending_log", "run_log", "node_names", "node_freed_epoch",
                 "queue_freed_epoch", "topology_epoch", "withdrawn")

    def __init__(self, resources: Iterable[str], queues: Iterable[Queue], nodes: Iterable[Node]):
        self.resources: tuple[str, ...] = tuple(resources)
        self.queues: dict[str, Queue] = {}
        for q in queues:
            if q.name in self.queues:
                raise StateError(f"duplicate queue {q.name!r}")
            self.queues[q.name] = q
        for q in self.queues.values():
            q.children = []
        for q in self.queues.values():
            if q.parent is not None:
                if q.parent not in self.queues:
                    raise StateError(f"queue {q.name!r} has unknown parent {q.parent!r}")
                self.queues[q.parent].children.append(q.name)
        self.roots = [q.name for q in self.queues.values() if q.parent is None]
        self._ancestors: dict[str, tuple[str, ...]] = {}
        for name in self.queues:
            chain, cur, seen = [], name, set()
            while cur is not None:
                if cur in seen:
                    raise StateError(f"queue {name!r} is part of a cycle")
                seen.add(cur)
                chain.append(cur)
                cur = self.queues[cur].parent
            self._ancestors[name] = tuple(chain)
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            if n.name in self.nodes:
                raise StateError(f"duplicate node {n.name!r}")
            self.nodes[n.name] = n
        self.node_order: dict[str, int] = {n: i for i, n in enumerate(self.nodes)}
        self.node_names: list[str] = list(self.nodes)
        self._free_index: FreeIndex | None = None
        self.workloads: dict[str, Workload] = {}
        self.pending: dict[str, dict[str, None]] = {}
        self.pending_res: dict[str, Res] = {}
        self.allocations: dict[str, Allocation] = {}
        self.node_used: dict[str, Res] = {n: {} for n in self.nodes}
        self.node_allocs: dict[str, dict[str, None]] = {n: {} for n in self.nodes}
        self.queue_usage: dict[str, Res] = {q: {} for q in self.queues}
        self.queue_allocs: dict[str, dict[str, None]] = {q: {} for q in self.queues}
        self.running: dict[str, dict[str, None]] = {}
        self.finished_tasks: dict[str, int] = {}
        self._seq = 0
        self.used_total: Res = {}
        # Bumped whenever resources are released or limits change: a placement that failed
        # before either can only succeed after one of them moved, so models can skip re-trying.
        self.freed_epoch = 0
        self.config_epoch = 0
        # Bumped on every start or end of an allocation / every submission or requeue: cheap
        # "did anything change since I last looked?" checks for models that cache derived views.
        self.alloc_epoch = 0
        self.submit_epoch = 0
        # Bumped whenever the set of nodes that can take work changes (a node added, removed,
        # cordoned or uncordoned): the key of every cache derived from node capacities.
        self.topology_epoch = 0
        # Cancelled workloads: kept in ``workloads`` for reports, never pending again.
        self.withdrawn: set[str] = set()
        # What changed, not only that it did: (node, queue) for every release (queue None when a
        # node became schedulable), the workload id of every submission or requeue, and that of
        # every start or end (a change of its running set).
        self.freed_log: Journal[tuple[str, str | None]] = Journal()
        self.pending_log: Journal[str] = Journal()
        self.run_log: Journal[str] = Journal()
        # The same by node and by queue (the freed epoch of the latest release), for a reader whose
        # journal position was trimmed away: one scan instead of starting over.
        self.node_freed_epoch: list[int] = [0] * len(self.nodes)
        self.queue_freed_epoch: dict[str, int] = dict.fromkeys(self.queues, 0)
        self._capacity: tuple[int, Res] | None = None

    # -- queries ----------------------------------------------------------------------------

    def path_to_root(self, queue: str) -> tuple[str, ...]:
        """The queue itself, then its parent, up to its root."""
        return self._ancestors[queue]

    def descendants(self, queue: str) -> Iterator[str]:
        stack = [queue]
        while stack:
            q = stack.pop()
            yield q
            stack.extend(reversed(self.queues[q].children))

    def node_free(self, node: str) -> Res:
        return sub(self.nodes[node].capacity, self.node_used[node])

    def free_index(self) -> FreeIndex:
        """The first-fit index over free node capacity, built on first use and then kept current."""
        if self._free_index is None:
            self._free_index = FreeIndex(self.resources, [
                sub(n.capacity, self.node_used[name]) if n.schedulable else None  # type: ignore[misc]
                for name, n in self.nodes.items()])
        return self._free_index

    def refresh_index(self, node: str) -> None:
        """Reset a node's free-index entry to what the state holds (after a model's tentative edits)."""
        self._index_node(node)

    def _index_node(self, node: str) -> None:
        if self._free_index is not None:
            n = self.nodes[node]
            self._free_index.set(self.node_order[node], sub(n.capacity, self.node_used[node]) if n.schedulable else None)

    def set_schedulable(self, node: str, schedulable: bool) -> None:
        """Cordon (False) or uncordon (True) a node. Uncordoning is recorded as a release, so
        models that parked work for lack of room try it again."""
        n = self.nodes[node]
        if schedulable and n.removed:
            raise StateError(f"node {node!r} was removed; add it again instead")
        n.schedulable = schedulable
        self._index_node(node)
        self.topology_epoch += 1
        if schedulable:
            self._record_freed(node)

    def _record_freed(self, node: str) -> None:
        self.freed_epoch += 1
        self.freed_log.append((node, None))
        self.node_freed_epoch[self.node_order[node]] = self.freed_epoch

    def fits_node(self, request: Res, node: str) -> bool:
        n = self.nodes[node]
        if not n.schedulable:
            return False
        return fits_on(request, self.node_used[node], n.capacity)

    def pending_tasks(self, workload: str) -> list[str]:
        return list(self.pending.get(workload, ()))

    def log_positions(self) -> tuple[int, int]:
        """Where ``run_log`` and ``pending_log`` end now: what a reader of both stores."""
        return self.run_log.position, self.pending_log.position

    def logged_since(self, positions: tuple[int, int]) -> set[str] | None:
        """The workloads with an entry in either log after ``positions`` (``log_positions``): every
        workload whose running or pending tasks, or whose workload object, may have changed since.
        None when either log was trimmed past them."""
        ran = self.run_log.since(positions[0])
        queued = self.pending_log.since(positions[1]) if ran is not None else None
        if queued is None:
            return None
        touched = set(ran)
        touched.update(queued)
        return touched

    def task_resources(self, tid: str) -> Res:
        wl, g, _ = tid.rsplit("/", 2)
        return self.workloads[wl].groups[int(g)].resources

    def pending_demand(self, wl_id: str) -> Res:
        """Resources of a workload's pending tasks together, kept incrementally."""
        return self.pending_res.get(wl_id) or {}

    def total_capacity_cached(self) -> Res:
        """Total capacity of all nodes, recomputed only when the topology changed (nodes come and
        go on a live cluster, never during a simulated run). Callers must not mutate it."""
        hit = self._capacity
        if hit is None or hit[0] != self.topology_epoch:
            hit = self._capacity = (self.topology_epoch, self.total_capacity())
        return hit[1]

    def largest_node_capacity(self) -> Res:
        """Per resource, the most any single node has (a removed node has nothing)."""
        out: Res = {}
        for n in self.nodes.values():
            for k, v in n.capacity.items():
                if v > out.get(k, 0):
                    out[k] = v
        return out

    def beyond_every_node(self, wl: Workload, largest: Res) -> tuple[int, str, Number, Number] | None:
        """(task group, resource, asked, most on any node) for the first task group of ``wl`` that
        asks more of a resource than any node has (``largest`` from ``largest_node_capacity``),
        else None. Per-resource maxima make this one cheap pass; a task that fits each maximum but
        no single node is not caught."""
        for g, grp in enumerate(wl.groups):
            if grp.count <= 0:
                continue
            for k, v in grp.resources.items():
                if v > largest.get(k, 0) + EPS:
                    return g, k, v, largest.get(k, 0)
        return None

    def total_capacity(self) -> Res:
        out: Res = {}
        for n in self.nodes.values():
            add_into(out, n.capacity)
        return out

    # -- mutations (executor only) ------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """A node joins at runtime, at the end of the node order (or, a removed node coming back, at
        its old place, with the capacity given now). Recorded as a release, so models that parked
        work for lack of room try it again, and as a topology change, so capacity caches refresh."""
        name = node.name
        old = self.nodes.get(name)
        if old is not None and not old.removed:
            raise StateError(f"node {name!r} is already in the cluster")
        node.removed = False
        self.nodes[name] = node
        if old is None:
            self.node_order[name] = len(self.node_names)
            self.node_names.append(name)
            self.node_used[name] = {}
            self.node_allocs[name] = {}
            self.node_freed_epoch.append(0)
            self._free_index = None  # rebuilt on next use with one more leaf
        else:
            self.node_used[name] = {}
            self._index_node(name)
        self.topology_epoch += 1
        self._record_freed(name)

    def remove_node(self, name: str) -> None:
        """A node leaves the cluster. Only an empty node can go: the executor first ends (and
        requeues) what ran there, so the state never holds an allocation on a missing node. The
        node keeps its index (every per-index structure stays valid) with no capacity."""
        node = self.nodes.get(name)
        if node is None:
            raise StateError(f"unknown node {name!r}")
        if node.removed:
            raise StateError(f"node {name!r} was already removed")
        if self.node_allocs[name]:
            raise StateError(f"node {name!r} still runs {len(self.node_allocs[name])} allocation(s); "
                             "end or requeue them first")
        node.capacity = {}
        node.schedulable = False
        node.removed = True
        self.node_used[name] = {}
        self._index_node(name)
        self.topology_epoch += 1

    def withdraw(self, wl_id: str) -> list[str]:
        """Cancel a workload: its pending tasks are dropped (and returned, in pending order) and it
        can never be pending again; it stays in ``workloads`` for reports. Running tasks are the
        executor's to ``end`` (never ``requeue``). Idempotent: a second call returns []."""
        if wl_id not in self.workloads:
            raise StateError(f"unknown workload {wl_id!r}")
        if wl_id in self.withdrawn:
            return []
        self.withdrawn.add(wl_id)
        dropped = list(self.pending.pop(wl_id, ()))
        self.pending_res.pop(wl_id, None)
        self.submit_epoch += 1
        self.pending_log.append(wl_id)
        return dropped

    def submit(self, wl: Workload) -> None:
        if wl.id in self.workloads:
            raise StateError(f"workload {wl.id!r} submitted twice")
        if wl.queue not in self.queues:
            raise StateError(f"workload {wl.id!r} names unknown queue {wl.queue!r}")
        self.workloads[wl.id] = wl
        self.pending[wl.id] = dict.fromkeys(wl.task_ids())
        self.pending_res[wl.id] = wl.total()
        self.submit_epoch += 1
        self.pending_log.append(wl.id)
        self.running[wl.id] = {}

    def start(self, tid: str, node: str, now: float) -> Allocation:
        wl_id, g, _ = split_task_id(tid)
        pend = self.pending.get(wl_id)
        if pend is None or tid not in pend:
            raise StateError(f"task {tid!r} is not pending")
        if node not in self.nodes:
            raise StateError(f"unknown node {node!r}")
        wl = self.workloads[wl_id]
        res = wl.groups[g].resources
        del pend[tid]
        if not pend:
            del self.pending[wl_id]
            del self.pending_res[wl_id]
        else:
            add_into(self.pending_res[wl_id], res, -1)
        self._seq += 1
        self.alloc_epoch += 1
        alloc = Allocation(tid, wl_id, wl.queue, node, res, now, wl.priority, wl.preemptible, False, self._seq)
        self.allocations[tid] = alloc
        add_into(self.node_used[node], res)
        add_into(self.used_total, res)
        self._index_node(node)
        self.node_allocs[node][tid] = None
        for q in self._ancestors[wl.queue]:
            add_into(self.queue_usage[q], res)
        self.queue_allocs[wl.queue][tid] = None
        self.running[wl_id][tid] = None
        self.run_log.append(wl_id)
        return alloc

    def end(self, tid: str) -> Allocation:
        """Remove a running allocation (finished or preempted) and release its resources."""
        alloc = self.allocations.pop(tid, None)
        if alloc is None:
            raise StateError(f"allocation {tid!r} is not running")
        add_into(self.node_used[alloc.node], alloc.resources, -1)
        add_into(self.used_total, alloc.resources, -1)
        self.freed_epoch += 1
        self.freed_log.append((alloc.node, alloc.queue))
        self.node_freed_epoch[self.node_order[alloc.node]] = self.freed_epoch
        self.alloc_epoch += 1
        self._index_node(alloc.node)
        del self.node_allocs[alloc.node][tid]
        for q in self._ancestors[alloc.queue]:
            add_into(self.queue_usage[q], alloc.resources, -1)
            self.queue_freed_epoch[q] = self.freed_epoch
        del self.queue_allocs[alloc.queue][tid]
        del self.running[alloc.workload][tid]
        self.run_log.append(alloc.workload)
        return alloc

    def finish(self, tid: str) -> Allocation:
        alloc = self.end(tid)
        self.finished_tasks[alloc.workload] = self.finished_tasks.get(alloc.workload, 0) + 1
        return alloc

    def requeue(self, tid: str) -> None:
        """Put a preempted task back in its workload's pending set, keeping identity and submit time."""
        wl_id, _, _ = split_task_id(tid)
        if wl_id in self.withdrawn:
            raise StateError(f"workload {wl_id!r} was withdrawn: end its task {tid!r} without requeue")
        self.pending.setdefault(wl_id, {})[tid] = None
        self.submit_epoch += 1
        self.pending_log.append(wl_id)
        add_into(self.pending_res.setdefault(wl_id, {}), self.task_resources(tid))

    def set_priority(self, wl_id: str, priority: int) -> Workload:
        """Give a waiting workload a new priority; the old workload object is returned.

        Only a workload with nothing running may change: its running tasks' allocations carry the
        priority they started with, which preemption orders victims by, and a workload half at one
        priority and half at another has no meaning in any of the models. The workload is logged as
        pending again, so models that keep a backlog re-sort it."""
        wl = self.workloads.get(wl_id)
        if wl is None:
            raise StateError(f"unknown workload {wl_id!r}")
        if wl_id in self.withdrawn:
            raise StateError(f"workload {wl_id!r} was withdrawn")
        if self.running.get(wl_id):
            raise StateError(f"workload {wl_id!r} has running tasks")
        self.workloads[wl_id] = replace(wl, priority=priority)
        self.submit_epoch += 1
        self.pending_log.append(wl_id)
        return wl

    def mark_preempting(self, tid: str) -> None:
        self.allocations[tid].preempting = True

    def is_finished(self, wl_id: str) -> bool:
        wl = self.workloads[wl_id]
        return self.finished_tasks.get(wl_id, 0) >= wl.task_count

    def update_queue(self, name: str, **changes: object) -> Queue:
        """Change a queue's limits or settings (config change); returns the queue as it was."""
        q = self.queues[name]
        self.config_epoch += 1
        old = Queue(q.name, q.parent, q.guaranteed, q.max, q.weight, q.borrowing_limit,
                    q.lending_limit, q.priority, q.rank, dict(q.settings), list(q.children))
        for key, value in changes.items():
            if key == "settings":
                q.settings = {**q.settings, **value}  # type: ignore[dict-item]
            else:
                setattr(q, key, value)
        return old

    # -- invariants -------------------------------------------------------------------------

    def check_invariants(self) -> list[str]:
        """Problems found, if any: used above capacity, or an index out of step with allocations,
        an allocation on a removed node, a withdrawn workload still pending."""
        problems: list[str] = []
        for name, node in self.nodes.items():
            if not fits(self.node_used[name], node.capacity):
                problems.append(f"node {name} used {self.node_used[name]} exceeds capacity {node.capacity}")
            if node.removed and self.node_allocs[name]:
                problems.append(f"removed node {name} holds {list(self.node_allocs[name])}")
        for wl_id in self.withdrawn:
            if wl_id in self.pending:
                problems.append(f"withdrawn workload {wl_id} is pending")
        recount: dict[str, Res] = {q: {} for q in self.queues}
        for a in self.allocations.values():
            for q in self._ancestors[a.queue]:
                add_into(recount[q], a.resources)
        for q, res in recount.items():
            cur = self.queue_usage[q]
            for k in set(res) | set(cur):
                if abs(res.get(k, 0) - cur.get(k, 0)) > 1e-6:
                    problems.append(f"queue {q} usage index {cur} differs from allocations {res}")
                    break
        return problems


__all__ = ["ClusterState", "StateError", "task_id"]
