"""The pending operations a heartbeat may serve, kept while the snapshot and the backlog stay.

Each heartbeat's stages used to walk every pending operation (the regular stage filtering out
graceful ones at their fair share, the preemptive stages keeping those of their preemption
priority) and then test each one's task groups against the node's room. On a contended trace the
backlog is thousands of operations and nodes beat several times a second. What a stage keeps
depends only on the snapshot's starvation view and on the backlog, so it is read once per
(view, allocation epoch, submission epoch): each entry carries its distinct task-group requests,
and a stage tests each distinct request set once: the kept operations are grouped by their
request sets, so a heartbeat costs the distinct sets plus the operations it returns, not the
backlog. Same operations as a walk of every pending operation, hence the same picks (pickers
order by tree position, not by set order).

Reading the backlog afresh at each key still cost the backlog once per fair share update. So the
grouping by request set is kept across keys (``_Backlog``: only the operations logged since are
moved), and a key reads from its view only what differs between operations: the graceful ones
at their fair share and the few with a preemption priority.
"""

from __future__ import annotations

from itertools import compress
from typing import TYPE_CHECKING, Any

from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import heartbeat, starvation

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import Snapshot, YTsaurusModel

Shapes = tuple[tuple[float, ...], ...]


class Waiting:
    """``picker`` (the regular stage) and ``preemptive`` answer what the heartbeat's own set
    comprehensions did; ``backlog`` what ``quiet`` walked the backlog for. One ``_Backlog`` kept
    across keys and a pass over the key's view feed all three."""

    __slots__ = ("_key", "_view", "_regular", "_by_priority", "_backlog", "_ops", "sat", "_starts", "_base",
                 "_needy")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._view: Any = None
        self._regular: dict[Shapes, Any] = {}
        self._by_priority: dict[str, dict[Shapes, Any]] = {}
        self._backlog: tuple = (False, set(), {})
        self._ops: dict[str, tuple[Any, Shapes, bool]] = {}  # operation -> (workload, its requests, graceful)
        self.sat: dict[str, tuple] = {}  # operation -> (allocation signature, satisfaction), for this view
        self._starts: dict[tuple, tuple] = {}  # fitting request sets -> the regular stage's first heap
        self._base = _Backlog()
        self._needy: set[str] = set()  # the pending operations with a preemption priority, for this view

    def _fresh(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is not snap.view or self._key != key:
            if self._view is not snap.view:
                self.sat = {}
            self._key, self._view = key, snap.view
            self._starts = {}
            known = self._ops
            if len(known) > 2 * len(state.pending) + 64:
                self._ops = {w: v for w, v in known.items() if state.pending.get(w)}
            self._base.sync(model, state, snap, self._entry)
            self._walk(model, state, snap, scope)

    def _entry(self, model: YTsaurusModel, state: ClusterState, w: str) -> tuple[Any, Shapes, bool]:
        """(workload, its task groups' requests, graceful), kept per workload object."""
        wl = state.workloads[w]
        hit = self._ops.get(w)
        if hit is None or hit[0] is not wl:
            hit = self._ops[w] = (wl, tuple(tuple(v) for v in model._groups(state, w)), model._graceful(state, w))
        return hit

    def _walk(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        """The kept backlog read through this key's view: for the regular stage its request sets
        without the graceful operations at their fair share; per preemption priority the request
        sets of the operations with it (only operations with a starving element at or above them
        have one, found from ``lowest_starving`` without a walk); for ``quiet``, whether a pending
        operation (not failed) is missing from the snapshot, the distinct requests of the pending
        tasks, and those of operations with each preemption priority."""
        base, view = self._base, snap.view
        members, by = base.members, base.by_shapes
        regular = dict(by)
        if base.graceful:
            status, out = view.status, {}
            for w in base.graceful:
                if status.get(w) == "normal":
                    out.setdefault(members[w][0], set()).add(w)
            for shapes, gone in out.items():
                kept = [w for w in by[shapes] if w not in gone]
                if kept:
                    regular[shapes] = kept
                else:
                    del regular[shapes]
        self._regular = regular
        lowest = view.lowest_starving
        needy: dict[str, list[str]] = {}
        for w in compress(lowest, lowest.values()):
            if w in members:
                priority = starvation.preemption_priority(view, w, scope)
                if priority != "none":
                    needy.setdefault(priority, []).append(w)
        self._needy = {w for ops in needy.values() for w in ops}
        self._by_priority = {priority: _by_shapes((w, members[w][0]) for w in ops) for priority, ops in needy.items()}
        if any(w not in model.failed for w in base.unpublished):
            self._backlog = (True, set(), {"aggressive": set(), "normal": set()})
            return
        wanting: dict[str, set[tuple[float, ...]]] = {"aggressive": set(), "normal": set()}
        for priority, ops in needy.items():
            for w in ops:
                wanting[priority].update(members[w][1])
        self._backlog = (False, set(base.requests), wanting)

    def picker(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, free: list[float], make):
        """The regular stage's picker over the pending operations of the snapshot (graceful ones at
        their fair share left out) some task group of which fits ``free``: made by ``make(active, start)``,
        from the heap an earlier heartbeat of this key built over the same request sets. Its values
        are the kept ``sat`` (nothing moved the operations' usage before the regular stage), so
        the heap is the same; a heartbeat then costs its picks, not the backlog."""
        self._fresh(model, state, snap, str(model.settings.get("scheduling_preemption_priority_scope",
                                                               "operation_and_ancestors")))
        fits = heartbeat.fits
        found: list[int] = []
        active: set[str] = set()
        for i, (shapes, ops) in enumerate(self._regular.items()):
            if any(fits(v, free) for v in shapes):
                found.append(i)
                active.update(ops)
        key = tuple(found)
        start = self._starts.get(key)
        picker = make(active, start)
        if start is None:
            self._starts[key] = picker.start()
        return picker

    def preemptive(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str, target: str,
                   room: list[float]) -> set[str]:
        """Pending operations of the snapshot with preemption priority ``target`` some task group of
        which fits ``room``."""
        self._fresh(model, state, snap, scope)
        if target == "none":  # everyone else: no stage asks for it, so it is made only when asked
            out = _fitting(self._base.by_shapes, room)
            return out - self._needy
        return _fitting(self._by_priority.get(target, {}), room)

    def backlog(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot,
                scope: str) -> tuple[bool, set[tuple[float, ...]], dict[str, set[tuple[float, ...]]]]:
        """For ``quiet``: whether a pending operation (not failed) is missing from the snapshot, the
        distinct requests of the pending tasks, and those of operations with each preemption
        priority."""
        self._fresh(model, state, snap, scope)
        return self._backlog


class _Backlog:
    """The snapshot's pending operations by request set, moved only where something changed.

    Whether an operation is pending changes only with an entry in ``state.run_log`` (a start) or
    ``state.pending_log`` (a submission, requeue, withdrawal or priority change), and whether it
    is in the snapshot's tree only with such an entry since the tree before (``treeops.TreeOps``
    made those operations again and kept the others). So a sync reads the operations logged since
    the last sync (the same tree) or since the last tree was built (a new one); a change of nodes
    or queues, another state or a trimmed log reads every pending operation."""

    __slots__ = ("_key", "_tree", "_built", "_read", "members", "by_shapes", "requests", "unpublished", "graceful")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._tree: Any = None
        self._built = (0, 0)  # the journal positions the kept tree was built at
        self._read = (0, 0)  # the journal positions of the last sync
        self.members: dict[str, tuple[Shapes, set[tuple[float, ...]], bool]] = {}  # in the tree: (requests, pending requests, graceful)
        self.by_shapes: dict[Shapes, dict[str, None]] = {}
        self.requests: dict[tuple[float, ...], int] = {}  # distinct pending request -> members with it
        self.unpublished: set[str] = set()  # pending, not in the tree (failed ones too)
        self.graceful: set[str] = set()

    def sync(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, entry) -> None:
        tree = snap.tree
        key = (id(state), state.topology_epoch, state.config_epoch)
        since = self._read if tree is self._tree else self._built
        ran = state.run_log.since(since[0]) if key == self._key else None
        queued = state.pending_log.since(since[1]) if ran is not None else None
        if queued is None:
            self._clear()
            touched: Any = state.pending
        else:
            touched = set(ran)
            touched.update(queued)
        if tree is not self._tree:
            self._tree, self._built = tree, model._tree_ops.positions
        self._key = key
        self._read = (state.run_log.position, state.pending_log.position)
        elements = tree.elements
        for w in touched:
            self._drop(w)
            p = state.pending.get(w)
            if not p:
                continue
            el = elements.get(w)
            if el is None or not el.is_op:
                self.unpublished.add(w)
                continue
            _, shapes, graceful = entry(model, state, w)
            own = model._pending_shapes(state, w, p)
            self.members[w] = (shapes, own, graceful)
            self.by_shapes.setdefault(shapes, {})[w] = None
            requests = self.requests
            for r in own:
                requests[r] = requests.get(r, 0) + 1
            if graceful:
                self.graceful.add(w)

    def _clear(self) -> None:
        self.members, self.by_shapes, self.requests = {}, {}, {}
        self.unpublished, self.graceful = set(), set()

    def _drop(self, w: str) -> None:
        self.unpublished.discard(w)
        old = self.members.pop(w, None)
        if old is None:
            return
        shapes, own, graceful = old
        ops = self.by_shapes[shapes]
        del ops[w]
        if not ops:
            del self.by_shapes[shapes]
        requests = self.requests
        for r in own:
            n = requests[r] - 1
            if n:
                requests[r] = n
            else:
                del requests[r]
        if graceful:
            self.graceful.discard(w)


def _by_shapes(entries) -> dict[Shapes, list[str]]:
    """(operation, request set) pairs as request set -> operations (a backlog has a few distinct sets)."""
    out: dict[Shapes, list[str]] = {}
    for w, shapes in entries:
        ops = out.get(shapes)
        if ops is None:
            out[shapes] = [w]
        else:
            ops.append(w)
    return out


def _fitting(by_shapes: dict[Shapes, list[str]], free: list[float]) -> set[str]:
    """The operations some request of which fits ``free``: each distinct request set tested once."""
    fits = heartbeat.fits
    out: set[str] = set()
    for shapes, ops in by_shapes.items():
        if any(fits(v, free) for v in shapes):
            out.update(ops)
    return out
