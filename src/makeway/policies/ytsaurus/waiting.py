"""The pending operations a heartbeat may serve, kept while the snapshot and the backlog stay.

Each heartbeat's stages used to walk every pending operation (the regular stage filtering out
graceful ones at their fair share, the preemptive stages keeping those of their preemption
priority) and then test each one's task groups against the node's room. On a contended trace the
backlog is thousands of operations and nodes beat several times a second. What a stage keeps
depends only on the snapshot's starvation view and on the backlog, so the walk is done once per
(view, allocation epoch, submission epoch): each entry carries its distinct task-group requests,
and a stage tests each distinct request set once: the kept operations are grouped by their
request sets, so a heartbeat costs the distinct sets plus the operations it returns, not the
backlog. Same operations as the walk, hence the same picks (pickers order by tree position, not
by set order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import heartbeat, starvation

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import Snapshot, YTsaurusModel

Shapes = tuple[tuple[float, ...], ...]


class Waiting:
    """``picker`` (the regular stage) and ``preemptive`` answer what the heartbeat's own set
    comprehensions did; ``backlog`` what ``quiet`` walked the backlog for. One walk of the backlog
    per key feeds all three."""

    __slots__ = ("_key", "_view", "_regular", "_by_priority", "_backlog", "_ops", "sat", "_starts")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._view: Any = None
        self._regular: dict[Shapes, list[str]] = {}
        self._by_priority: dict[str, dict[Shapes, list[str]]] = {}
        self._backlog: tuple = (False, set(), {})
        self._ops: dict[str, tuple[Any, Shapes, bool]] = {}  # operation -> (workload, its requests, graceful)
        self.sat: dict[str, tuple] = {}  # operation -> (allocation signature, satisfaction), for this view
        self._starts: dict[tuple, tuple] = {}  # fitting request sets -> the regular stage's first heap

    def _fresh(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is not snap.view or self._key != key:
            if self._view is not snap.view:
                self.sat = {}
            self._key, self._view = key, snap.view
            self._starts = {}
            self._walk(model, state, snap, scope)

    def _walk(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        """The snapshot's pending operations (requests and graceful flag kept per workload object)
        grouped by request set for the regular stage (graceful ones at their fair share left out)
        and per preemption priority; for ``quiet``, whether a pending operation (not failed) is
        missing from the snapshot, the distinct requests of the pending tasks, and those of
        operations with each preemption priority."""
        # the snapshot publishes exactly its tree's operations: read the tree, not the lazy mapping
        elements, workloads, known, failed = snap.tree.elements, state.workloads, self._ops, model.failed
        if len(known) > 2 * len(state.pending) + 64:
            self._ops = known = {w: v for w, v in known.items() if state.pending.get(w)}
        view = snap.view
        status = view.status
        regular: list[tuple[str, Shapes]] = []
        by: dict[str, list[tuple[str, Shapes]]] = {}
        unpublished = False
        one: dict[str, set[Shapes]] = {"none": set(), "aggressive": set(), "normal": set()}
        pending: set[tuple[float, ...]] = set()
        needy: dict[str, set[tuple[float, ...]]] = {"aggressive": set(), "normal": set()}
        for w, p in state.pending.items():
            if not p:
                continue
            el = elements.get(w)
            if el is None or not el.is_op:
                if w not in failed:
                    unpublished = True
                continue
            wl = workloads[w]
            hit = known.get(w)
            if hit is None or hit[0] is not wl:
                hit = known[w] = (wl, tuple(tuple(v) for v in model._groups(state, w)), model._graceful(state, w))
            shapes = hit[1]
            if not (hit[2] and status.get(w) == "normal"):
                regular.append((w, shapes))
            priority = starvation.preemption_priority(view, w, scope)
            by.setdefault(priority, []).append((w, shapes))
            if unpublished:
                continue
            if len(shapes) == 1:  # one task group: its request is every pending task's
                one[priority].add(shapes)
                continue
            own = model._pending_shapes(state, w, p)
            pending |= own
            if priority != "none":
                needy[priority] |= own
        self._regular = _by_shapes(regular)
        self._by_priority = {priority: _by_shapes(entries) for priority, entries in by.items()}
        if unpublished:  # nothing else is needed: ``quiet`` says no
            self._backlog = (True, set(), {"aggressive": set(), "normal": set()})
            return
        for priority, distinct in one.items():
            for shapes in distinct:
                pending.add(shapes[0])
                if priority != "none":
                    needy[priority].add(shapes[0])
        self._backlog = (False, pending, needy)

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
        return _fitting(self._by_priority.get(target, {}), room)

    def backlog(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot,
                scope: str) -> tuple[bool, set[tuple[float, ...]], dict[str, set[tuple[float, ...]]]]:
        """For ``quiet``: whether a pending operation (not failed) is missing from the snapshot, the
        distinct requests of the pending tasks, and those of operations with each preemption
        priority."""
        self._fresh(model, state, snap, scope)
        return self._backlog


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
