"""Queue snapshots and the victim search scope of YuniKorn's ask-triggered preemptor (SEMANTICS
§2.3-§2.5): the fence root, the priority thresholds on the way, and each leaf's candidate victims.
Split out of ``preemptor`` (which re-exports these names) so that each module keeps one job.
"""

from __future__ import annotations

from dataclasses import dataclass

from makeway.core.resources import Res, add, sub
from makeway.policies.yunikorn.common import INT32_MAX, INT32_MIN, POLICY_DISABLED, POLICY_FENCE, Partition, YAlloc, YAsk
from makeway.policies.yunikorn.resources import (component_wise_min, component_wise_min_only_existing, is_empty,
                                                 match_any, merge_if_not_present,
                                                 strictly_greater_than_or_equals_only_existing, sub_only_existing)


def _clamp32(v: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, v))


# ---------------------------------------------------------------------------------------------
# Queue snapshots (§2.5)


class Snap:
    """A queue's guarantee/usage snapshot; working copies are taken with ``duplicate``."""

    __slots__ = ("path", "parent", "leaf", "allocated", "preempting", "max", "guaranteed", "_victims",
                 "ask_queue", "memo")

    def __init__(self, path: str, parent: "Snap | None", leaf: bool, allocated: Res | None,
                 preempting: Res | None, max_: Res | None, guaranteed: Res | None):
        self.path = path
        self.parent = parent
        self.leaf = leaf
        self.allocated = None if allocated is None else dict(allocated)
        self.preempting = None if preempting is None else dict(preempting)
        self.max = max_
        self.guaranteed = guaranteed
        self._victims: list[YAlloc] | None = []
        self.ask_queue: Snap | None = None
        # the leaf's candidate filter when its victims are read on first use (``LeafScope``)
        self.memo: LeafScope | None = None

    @property
    def victims(self) -> list[YAlloc]:
        out = self._victims
        if out is None:
            out = self._victims = self.memo.live()  # type: ignore[union-attr]
        return out

    @victims.setter
    def victims(self, value: list[YAlloc]) -> None:
        self._victims, self.memo = value, None

    def duplicate(self, cache: dict[str, "Snap"]) -> "Snap":
        if self.path in cache:
            return cache[self.path]
        parent = self.parent.duplicate(cache) if self.parent is not None else None
        s = Snap(self.path, parent, self.leaf, self.allocated, self.preempting, self.max, self.guaranteed)
        s._victims, s.memo = self._victims, self.memo
        s.ask_queue = self.ask_queue  # the link keeps pointing at the original snapshot
        cache[self.path] = s
        return s

    def add_allocation(self, res: Res) -> None:
        s: Snap | None = self
        while s is not None:
            s.allocated = add(s.allocated, res)
            s = s.parent

    def remove_allocation(self, res: Res) -> None:
        s: Snap | None = self
        while s is not None:
            s.allocated = sub(s.allocated, res)
            s = s.parent

    def used(self) -> Res | None:
        return sub_only_existing(self.allocated, self.preempting)

    def remaining_guaranteed(self) -> Res | None:
        parent_r = self.parent.remaining_guaranteed() if self.parent is not None else None
        if is_empty(parent_r) and is_empty(self.guaranteed):
            return None
        if self.guaranteed is None:  # what the general path comes to (r is None), without ``used``
            return dict(parent_r)  # type: ignore[arg-type]
        r = sub_only_existing(self.guaranteed, self.used())
        aq = self.ask_queue
        if aq is not None and self.path == aq.path and not is_empty(r):
            return merge_if_not_present(r, parent_r)
        if aq is not None and aq.path.startswith(self.path) and not is_empty(r):
            if not is_empty(sub_only_existing(aq.guaranteed, aq.used())):
                return None
        return component_wise_min(r, parent_r)

    def preemptable(self) -> Res | None:
        if is_empty(self.allocated):
            return None
        over = {k: v for k, v in sub(self.used(), self.guaranteed).items() if v > 0}
        if not over:
            return {}
        parent_p = self.parent.preemptable() if self.parent is not None else None
        return component_wise_min_only_existing(over, parent_p)

    def within_guarantee(self) -> bool:
        r = self.remaining_guaranteed()
        return r is not None and all(v >= 0 for v in r.values())


# ---------------------------------------------------------------------------------------------
# Search scope (§2.3, §2.4)


@dataclass(slots=True)
class VictimSearch:
    fence_root: str
    snapshots: dict[str, Snap]  # creation order: ask path first (root down), then victim leaves


def find_fence_root(part: Partition, ask: YAsk) -> tuple[str, dict[str, int]]:
    """Walk up from the ask's leaf, recording the priority threshold of each queue on the way."""
    recorded: dict[str, int] = {}
    p = ask.priority
    cur: str | None = ask.queue
    while cur is not None:
        q = part.queues[cur]
        p = q.props.priority_offset if q.props.priority_fence else _clamp32(p + q.props.priority_offset)
        recorded[cur] = p
        if q.parent is None or q.props.preemption_policy == POLICY_FENCE or _max_fenced(part, cur, ask):
            return cur, recorded
        cur = q.parent
    raise AssertionError("unreachable")  # pragma: no cover


def _max_fenced(part: Partition, path: str, ask: YAsk) -> bool:
    eff = part.effective_max(path)
    if is_empty(eff):
        return False
    projected = add(part.queues[path].allocated, ask.resources)
    return not strictly_greater_than_or_equals_only_existing(eff, projected)


def find_victims(part: Partition, ask: YAsk, link_root: bool = True) -> VictimSearch:
    fence_root, recorded = find_fence_root(part, ask)
    snaps: dict[str, Snap] = {}
    ask_link: list[Snap] = []

    def snap_for(path: str, registry: dict[str, Snap]) -> Snap:
        if path in registry:
            return registry[path]
        q = part.queues[path]
        parent = snap_for(q.parent, registry) if q.parent is not None else None
        s = Snap(path, parent, q.leaf, q.allocated, q.preempting, q.max, q.guaranteed)
        if ask_link and (link_root or parent is not None):
            s.ask_queue = ask_link[0]
        registry[path] = s
        return s

    ask_snap = snap_for(ask.queue, snaps)
    ask_link.append(ask_snap)
    for s in snaps.values():
        if link_root or s.parent is not None:
            s.ask_queue = ask_snap
    path_set = set(part.ancestors(ask.queue))

    def visit(path: str, t: int, fenced: bool) -> None:
        q = part.queues[path]
        if path == ask.queue:
            return
        if q.leaf:
            probe = snap_for(path, dict(snaps))
            cands = _leaf_candidates(part, ask, path, t, fenced, probe)
            if isinstance(cands, LeafScope):
                if cands.any_live():
                    s = snap_for(path, snaps)
                    s._victims, s.memo = None, cands
            elif cands:
                snap_for(path, snaps).victims = cands
            return
        for child in q.children:
            cq = part.queues[child]
            if child in path_set:
                visit(child, recorded[child], fenced)
            elif cq.props.priority_fence:
                if cq.props.priority_offset > t:
                    continue
                visit(child, t, True)
            else:
                visit(child, _clamp32(t - cq.props.priority_offset), fenced)

    visit(fence_root, recorded[fence_root], False)
    return VictimSearch(fence_root, snaps)


def _leaf_candidates(part: Partition, ask: YAsk, path: str, t: int, fenced: bool,
                     probe: Snap) -> "list[YAlloc] | LeafScope":
    q = part.queues[path]
    if q.props.preemption_policy == POLICY_DISABLED:
        return []
    state = getattr(part, "state", None) if part.shortcuts else None
    if state is not None:
        # the simulator's partition: the leaf's candidates are read where they are needed (``LeafScope``)
        if not state.queue_allocs.get(path) or probe.within_guarantee():
            return []
        return LeafScope(part, path, ask.resources, t, fenced)
    allocs = part.leaf_allocs(path)
    if not allocs or probe.within_guarantee():
        return []
    out = []
    for a in allocs:
        if not match_any(a.resources, ask.resources):
            continue
        if a.required_node or a.released or a.preempted:
            continue
        if fenced or a.priority <= t:
            out.append(a)
    return out


class LeafScope:
    """A leaf's candidate victims as a filter over the partition's allocation views, so that an
    attempt reads only what it needs: whether the leaf has a candidate (usually its first
    allocation answers), a node's candidates (``NodeCandidates``), and the whole list only when
    a stage walks every candidate. ``key`` is the filter (the ask's resource types, the priority
    threshold, fenced) without the ``preempted`` flag, which is read at every use."""

    __slots__ = ("part", "path", "key", "want", "t", "fenced")

    def __init__(self, part: Partition, path: str, ask: Res | None, t: int, fenced: bool):
        self.part, self.path, self.t, self.fenced = part, path, t, fenced
        self.want = ask.keys() if ask is not None else None
        self.key = (tuple(ask) if ask is not None else None, t, fenced)

    def admits(self, a: YAlloc) -> bool:
        """The candidate filter but ``preempted`` (``match_any`` inlined)."""
        want = self.want
        return want is not None and a.resources is not None and not want.isdisjoint(a.resources) \
            and not a.required_node and not a.released and (self.fenced or a.priority <= self.t)

    def live(self) -> list[YAlloc]:
        return [a for a in self.part.leaf_allocs(self.path) if not a.preempted and self.admits(a)]

    def any_live(self) -> bool:
        part = self.part
        for k in part.state.queue_allocs.get(self.path, ()):  # type: ignore[attr-defined]
            a = part.yalloc(k)  # type: ignore[attr-defined]
            if a.tracked and not a.preempted and self.admits(a):
                return True
        return False

    def nonint(self) -> frozenset:
        """The non-int resource types of every allocation the leaf has had (a superset of its
        candidates'), kept per leaf in the partition's ``cand_memo`` and grown with new starts."""
        part = self.part
        state, memo = part.state, part.cand_memo  # type: ignore[attr-defined]
        seen, types = memo.get(self.path, (0, frozenset()))
        top = seen
        allocs = state.allocations
        for k in reversed(state.queue_allocs.get(self.path, {})):
            a = allocs[k]
            if a.seq <= seen:
                break
            top = max(top, a.seq)
            extra = [r for r, v in a.resources.items() if type(v) is not int]
            if extra:
                types = types.union(extra)
        memo[self.path] = (top, types)
        return types


__all__ = ["LeafScope", "Snap", "VictimSearch", "find_fence_root", "find_victims"]
