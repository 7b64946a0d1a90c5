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
    """``regular`` and ``preemptive`` answer what the heartbeat's own set comprehensions did;
    ``backlog`` what ``quiet`` walked the backlog for. Each part is walked when first asked for."""

    __slots__ = ("_key", "_view", "_regular", "_by_priority", "_backlog", "_ops")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._view: Any = None
        self._regular: list[tuple[str, Shapes]] | None = None
        self._by_priority: dict[str, list[tuple[str, Shapes]]] | None = None
        self._backlog: tuple | None = None
        self._ops: dict[str, tuple[Any, Shapes, bool]] = {}  # operation -> (workload, its requests, graceful)

    def _fresh(self, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is not snap.view or self._key != key:
            self._key, self._view = key, snap.view
            self._regular = self._by_priority = self._backlog = None

    def _entries(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, failed=None):
        """(operation, pending tasks, (workload, requests, graceful)) of the snapshot's pending
        operations; the requests and the graceful flag are kept per workload object. With
        ``failed`` given, a pending operation neither in the snapshot nor failed comes as
        (operation, pending tasks, None)."""
        published, workloads, known = snap.published, state.workloads, self._ops
        if len(known) > 2 * len(state.pending) + 64:
            self._ops = known = {w: v for w, v in known.items() if state.pending.get(w)}
        for w, p in state.pending.items():
            if not p:
                continue
            if w not in published:
                if failed is not None and w not in failed:
                    yield w, p, None
                continue
            wl = workloads[w]
            hit = known.get(w)
            if hit is None or hit[0] is not wl:
                hit = known[w] = (wl, tuple(tuple(v) for v in model._groups(state, w)), model._graceful(state, w))
            yield w, p, hit

    def regular(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, free: list[float]) -> set[str]:
        """Pending operations of the snapshot (graceful ones at their fair share left out) some task
        group of which fits ``free``."""
        self._fresh(state, snap, str(model.settings.get("scheduling_preemption_priority_scope",
                                                        "operation_and_ancestors")))
        if self._regular is None:
            status = snap.view.status
            self._regular = [(w, hit[1]) for w, _, hit in self._entries(model, state, snap)
                             if not (hit[2] and status.get(w) == "normal")]
        return _fitting(self._regular, free)

    def preemptive(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str, target: str,
                   room: list[float]) -> set[str]:
        """Pending operations of the snapshot with preemption priority ``target`` some task group of
        which fits ``room``."""
        self._fresh(state, snap, scope)
        if self._by_priority is None:
            by: dict[str, list[tuple[str, Shapes]]] = {}
            view = snap.view
            for w, _, hit in self._entries(model, state, snap):
                by.setdefault(starvation.preemption_priority(view, w, scope), []).append((w, hit[1]))
            self._by_priority = by
        return _fitting(self._by_priority.get(target, ()), room)

    def backlog(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot,
                scope: str) -> tuple[bool, set[tuple[float, ...]], dict[str, set[tuple[float, ...]]]]:
        """For ``quiet``: whether a pending operation (not failed) is missing from the snapshot, the
        distinct requests of the pending tasks, and those of operations with each preemption
        priority."""
        self._fresh(state, snap, scope)
        if self._backlog is None:
            failed = model.failed
            unpublished = False
            one: dict[str, set[Shapes]] = {"none": set(), "aggressive": set(), "normal": set()}
            pending: set[tuple[float, ...]] = set()
            needy: dict[str, set[tuple[float, ...]]] = {"aggressive": set(), "normal": set()}
            view = snap.view
            for w, p, hit in self._entries(model, state, snap, failed):
                if hit is None:  # pending, not failed, not in the snapshot: nothing else is needed
                    unpublished = True
                    one = {}
                    pending, needy = set(), {"aggressive": set(), "normal": set()}
                    break
                priority = starvation.preemption_priority(view, w, scope)
                if len(hit[1]) == 1:  # one task group: its request is every pending task's
                    one[priority].add(hit[1])
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
            self._backlog = (unpublished, pending, needy)
        return self._backlog


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
