"""The pending operations a heartbeat may serve, kept while the snapshot and the backlog stay.

Each heartbeat's stages used to walk every pending operation (the regular stage filtering out
graceful ones at their fair share, the preemptive stages keeping those of their preemption
priority) and then test each one's task groups against the node's room. On a contended trace the
backlog is thousands of operations and nodes beat several times a second. What a stage keeps
depends only on the snapshot's starvation view and on the backlog, so the walk is done once per
(view, allocation epoch, submission epoch): each entry carries its distinct task-group requests,
and a stage tests each distinct request set once. Same operations as the walk, hence the same
picks (pickers order by tree position, not by set order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import heartbeat, starvation

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import Snapshot, YTsaurusModel

Shapes = tuple[tuple[float, ...], ...]


class Waiting:
    """``regular`` and ``preemptive`` answer what the heartbeat's own set comprehensions did."""

    __slots__ = ("_key", "_view", "_regular", "_by_priority", "unpublished", "shapes", "needy", "_ops")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._view: Any = None
        self._regular: list[tuple[str, Shapes]] = []
        self._by_priority: dict[str, list[tuple[str, Shapes]]] = {}
        self._ops: dict[str, tuple[Any, Shapes, bool]] = {}  # operation -> (workload, its requests, graceful)
        self.unpublished = False  # some pending operation, not failed, is not in the snapshot
        self.shapes: set[tuple[float, ...]] = set()  # the pending tasks' distinct requests
        self.needy: dict[str, set[tuple[float, ...]]] = {}  # the same by preemption priority

    def _refresh(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is snap.view and self._key == key:
            return
        published, status = snap.published, snap.view.status
        regular: list[tuple[str, Shapes]] = []
        by_priority: dict[str, list[tuple[str, Shapes]]] = {}
        unpublished = False
        failed, workloads, known = model.failed, state.workloads, self._ops
        one: dict[str, set[Shapes]] = {"none": set(), "aggressive": set(), "normal": set()}  # one-group shapes
        pending: set[tuple[float, ...]] = set()
        needy: dict[str, set[tuple[float, ...]]] = {"aggressive": set(), "normal": set()}
        view = snap.view
        for w, p in state.pending.items():
            if not p or w not in published:
                unpublished = unpublished or (bool(p) and w not in failed)
                continue
            wl = workloads[w]
            hit = known.get(w)
            if hit is None or hit[0] is not wl:
                hit = known[w] = (wl, tuple(tuple(v) for v in model._groups(state, w)), model._graceful(state, w))
            shapes = hit[1]
            if not (hit[2] and status.get(w) == "normal"):
                regular.append((w, shapes))
            priority = starvation.preemption_priority(view, w, scope)
            by_priority.setdefault(priority, []).append((w, shapes))
            if len(shapes) == 1:
                one[priority].add(shapes)
                continue
            own = model._pending_shapes(state, w, p)
            pending |= own
            if priority != "none":
                needy[priority] |= own
        for priority, distinct in one.items():
            for shapes in distinct:
                pending.add(shapes[0])
                if priority != "none":
                    needy[priority].add(shapes[0])
        if len(known) > 2 * len(state.pending) + 64:
            self._ops = {w: v for w, v in known.items() if state.pending.get(w)}
        self._key, self._view, self._regular, self._by_priority = key, view, regular, by_priority
        self.unpublished, self.shapes, self.needy = unpublished, pending, needy

    def backlog(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot,
                scope: str) -> tuple[bool, set[tuple[float, ...]], dict[str, set[tuple[float, ...]]]]:
        """For ``quiet``: whether a pending operation is missing from the snapshot, the distinct
        requests of the pending tasks, and those of operations with each preemption priority."""
        self._refresh(model, state, snap, scope)
        return self.unpublished, self.shapes, self.needy

    def regular(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, free: list[float]) -> set[str]:
        """Pending operations of the snapshot (graceful ones at their fair share left out) some task
        group of which fits ``free``."""
        self._refresh(model, state, snap, str(model.settings.get("scheduling_preemption_priority_scope",
                                                                 "operation_and_ancestors")))
        return _fitting(self._regular, free)

    def preemptive(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str, target: str,
                   room: list[float]) -> set[str]:
        """Pending operations of the snapshot with preemption priority ``target`` some task group of
        which fits ``room``."""
        self._refresh(model, state, snap, scope)
        return _fitting(self._by_priority.get(target, ()), room)


def _fitting(entries, free: list[float]) -> set[str]:
    memo: dict[Shapes, bool] = {}
    fits = heartbeat.fits
    out: set[str] = set()
    for w, shapes in entries:
        ok = memo.get(shapes)
        if ok is None:
            ok = memo[shapes] = any(fits(v, free) for v in shapes)
        if ok:
            out.add(w)
    return out
