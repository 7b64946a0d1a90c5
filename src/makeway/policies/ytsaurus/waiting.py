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
                 "_prio", "_needy", "_lowest")

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
        self._prio: dict[str, tuple[str, Shapes, set]] = {}  # member with a preemption priority -> (it, as grouped)
        self._needy: dict[str, _Grouped] = {}  # preemption priority -> its members
        self._lowest: tuple[dict, dict] | None = None  # the last view's starving ancestors

    def _fresh(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str) -> None:
        key = (id(state), state.alloc_epoch, state.submit_epoch, scope)
        if self._view is not snap.view or self._key != key:
            if self._view is not snap.view:
                self.sat = {}
            if self._key is None or self._key[3] != scope:
                self._lowest = None
            self._key, self._view = key, snap.view
            self._starts = {}
            known = self._ops
            if len(known) > 2 * len(state.pending) + 64:
                self._ops = {w: v for w, v in known.items() if state.pending.get(w)}
            touched = self._base.sync(model, state, snap, self._entry)
            self._prioritise(snap.view, scope, touched)
            self._walk(model, snap)

    def _entry(self, model: YTsaurusModel, state: ClusterState, w: str) -> tuple[Any, Shapes, bool]:
        """(workload, its task groups' requests, graceful), kept per workload object."""
        wl = state.workloads[w]
        hit = self._ops.get(w)
        if hit is None or hit[0] is not wl:
            hit = self._ops[w] = (wl, tuple(tuple(v) for v in model._groups(state, w)), model._graceful(state, w))
        return hit

    def _prioritise(self, view: Any, scope: str, touched: Any) -> None:
        """The members' preemption priorities under ``view``, moved where they may have changed.
        An operation's priority is a function of its own entries in the view's lowest (aggressively)
        starving ancestors, so only a member moved by the sync (``touched``; None: all of them) or
        one whose entries differ from the last view's can have another. Afresh, only elements
        with a starving element at or above them are read."""
        ls, la = view.lowest_starving, view.lowest_aggressive
        last = self._lowest
        if touched is None or last is None:
            self._prio, self._needy = {}, {}
            check: Any = compress(ls, ls.values())
        else:
            check = set(touched)
            if ls is not last[0]:
                check.update(k for k, _ in ls.items() ^ last[0].items())
            if la is not last[1]:
                check.update(k for k, _ in la.items() ^ last[1].items())
        self._lowest = (ls, la)
        members, prio, needy = self._base.members, self._prio, self._needy
        for w in check:
            old = prio.pop(w, None)
            if old is not None:
                needy[old[0]].drop(w, old[1], old[2])
            m = members.get(w)
            if m is None:
                continue
            priority = starvation.preemption_priority(view, w, scope)
            if priority != "none":
                prio[w] = (priority, m[0], m[1])
                group = needy.get(priority)
                if group is None:
                    group = needy[priority] = _Grouped()
                group.add(w, m[0], m[1])

    def _walk(self, model: YTsaurusModel, snap: Snapshot) -> None:
        """The kept backlog read through this key's view: for the regular stage its request sets
        without the graceful operations at their fair share; per preemption priority the request
        sets of the operations with it; for ``quiet``, whether a pending operation (not failed) is
        missing from the snapshot, the distinct requests of the pending tasks, and those of
        operations with each preemption priority."""
        base, view = self._base, snap.view
        members, by = base.members, base.all.by_shapes
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
        self._by_priority = {priority: group.by_shapes for priority, group in self._needy.items() if group.by_shapes}
        if any(w not in model.failed for w in base.unpublished):
            self._backlog = (True, set(), {"aggressive": set(), "normal": set()})
            return
        wanting = {priority: set(group.requests) if (group := self._needy.get(priority)) else set()
                   for priority in ("aggressive", "normal")}
        self._backlog = (False, set(base.all.requests), wanting)

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
            return _fitting(self._base.all.by_shapes, room).difference(self._prio)
        return _fitting(self._by_priority.get(target, {}), room)

    def backlog(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot,
                scope: str) -> tuple[bool, set[tuple[float, ...]], dict[str, set[tuple[float, ...]]]]:
        """For ``quiet``: whether a pending operation (not failed) is missing from the snapshot, the
        distinct requests of the pending tasks, and those of operations with each preemption
        priority."""
        self._fresh(model, state, snap, scope)
        return self._backlog


class _Grouped:
    """Operations by request set, and how many have each pending request (its keys: the distinct
    ones); moved one operation at a time."""

    __slots__ = ("by_shapes", "requests")

    def __init__(self) -> None:
        self.by_shapes: dict[Shapes, dict[str, None]] = {}
        self.requests: dict[tuple[float, ...], int] = {}

    def add(self, w: str, shapes: Shapes, own: set[tuple[float, ...]]) -> None:
        self.by_shapes.setdefault(shapes, {})[w] = None
        requests = self.requests
        for r in own:
            requests[r] = requests.get(r, 0) + 1

    def drop(self, w: str, shapes: Shapes, own: set[tuple[float, ...]]) -> None:
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


class _Backlog:
    """The snapshot's pending operations by request set, moved only where something changed.

    Whether an operation is pending changes only with an entry in ``state.run_log`` (a start) or
    ``state.pending_log`` (a submission, requeue, withdrawal or priority change), and whether it
    is in the snapshot's tree only with such an entry since the tree before (``treeops.TreeOps``
    made those operations again and kept the others). So a sync reads the operations logged since
    the last sync (the same tree) or since the last tree was built (a new one); a change of nodes
    or queues, another state or a trimmed log reads every pending operation."""

    __slots__ = ("_key", "_tree", "_built", "_read", "members", "all", "unpublished", "graceful")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._tree: Any = None
        self._built = (0, 0)  # the journal positions the kept tree was built at
        self._read = (0, 0)  # the journal positions of the last sync
        # in the tree: operation -> (its requests, its pending tasks' distinct requests, graceful)
        self.members: dict[str, tuple[Shapes, set[tuple[float, ...]], bool]] = {}
        self.all = _Grouped()
        self.unpublished: set[str] = set()  # pending, not in the tree (failed ones too)
        self.graceful: set[str] = set()

    def sync(self, model: YTsaurusModel, state: ClusterState, snap: Snapshot, entry) -> set[str] | None:
        """Move the operations that may have changed; returns them (None: everything was read)."""
        tree = snap.tree
        key = (id(state), state.topology_epoch, state.config_epoch)
        logged = state.logged_since(self._read if tree is self._tree else self._built) if key == self._key else None
        touched: Any = logged
        if logged is None:
            self.members, self.all, self.unpublished, self.graceful = {}, _Grouped(), set(), set()
            touched = state.pending
        if tree is not self._tree:
            self._tree, self._built = tree, model._tree_ops.positions
        self._key = key
        self._read = state.log_positions()
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
            self.all.add(w, shapes, own)
            if graceful:
                self.graceful.add(w)
        return logged

    def _drop(self, w: str) -> None:
        self.unpublished.discard(w)
        old = self.members.pop(w, None)
        if old is None:
            return
        shapes, own, graceful = old
        self.all.drop(w, shapes, own)
        if graceful:
            self.graceful.discard(w)


def _fitting(by_shapes: dict[Shapes, list[str]], free: list[float]) -> set[str]:
    """The operations some request of which fits ``free``: each distinct request set tested once."""
    fits = heartbeat.fits
    out: set[str] = set()
    for shapes, ops in by_shapes.items():
        if any(fits(v, free) for v in shapes):
            out.update(ops)
    return out
