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

    __slots__ = ("_key", "_view", "_regular", "_by_priority")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._view: Any = None
        self._regular: list[tuple[str, Shapes]] = []
        self._by_priority: dict[str, list[tuple[str, Shapes]]] = {}

    def _refresh(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is snap.view and self._key == key:
            return
        published, status = snap.published, snap.view.status
        regular: list[tuple[str, Shapes]] = []
        by_priority: dict[str, list[tuple[str, Shapes]]] = {}
        for w, p in state.pending.items():
            if not p or w not in published:
                continue
            shapes = tuple(tuple(v) for v in model._groups(state, w))
            if not (model._graceful(state, w) and status.get(w) == "normal"):
                regular.append((w, shapes))
            by_priority.setdefault(starvation.preemption_priority(snap.view, w, scope), []).append((w, shapes))
        self._key, self._view, self._regular, self._by_priority = key, snap.view, regular, by_priority

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
