"""YuniKorn's view of a cluster state (``Partition``), built from the state for the model.

``build_partition`` is the reference view (the model's ``caches: false``); ``build_state_partition``
answers the same, keeping allocation, leaf and node views between builds and reading the
allocations being preempted from a tracked set instead of a scan of every allocation.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Mapping

from makeway.core.objects import split_task_id
from makeway.core.resources import Res
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.common import Partition, QueueProps, YAlloc, YNode, YQueue, resolve_props


def to_us(t: float) -> int:
    return int(round(t * 1_000_000))


def queue_props(state: ClusterState) -> dict[str, QueueProps]:
    """Effective YuniKorn properties of every queue (``settings.properties``), with inheritance."""
    out: dict[str, QueueProps] = {}
    raw: dict[str, dict[str, object]] = {}
    for root in state.roots:
        for name in state.descendants(root):
            q = state.queues[name]
            props = (q.settings or {}).get("properties") or {}
            p, merged = resolve_props({str(k): v for k, v in props.items()}, raw.get(q.parent or ""),
                                      out.get(q.parent or ""))
            out[name], raw[name] = p, merged
    return out


class StatePartition(Partition):
    """A partition built from a cluster state that answers per-leaf and per-node allocation lists
    from the state's indexes (start order, as the allocation map) instead of scanning everything.

    Its allocations live in ``ycache`` (task id -> (start sequence number, YAlloc)), kept by the
    model between builds: an allocation's view is made once per start, not once per build. Only
    the ``preempted`` flag changes during a pass; the model resets it (``marked``) at the next build.
    """

    def __init__(self, state: ClusterState, queues: list[YQueue], nodes: list[YNode],
                 ycache: dict[str, tuple[int, YAlloc]], leaves: dict[str, tuple[int, int, list[YAlloc]]],
                 cand_memo: dict[str, tuple]):
        super().__init__(queues, nodes, ())
        self.state = state
        self.ycache = ycache
        self.leaves = leaves
        self.cand_memo = cand_memo
        # (node, candidate scope) -> verdicts of the node search, kept by the model (``NodeRejects``)
        self.node_rejects: dict[tuple, tuple] | None = None
        self.victim_index: Any = None  # the model's ``victim_index.VictimNodeIndex``

    def yalloc(self, k: str) -> YAlloc:
        a = self.state.allocations[k]
        hit = self.ycache.get(k)
        if hit is None or hit[0] != a.seq:
            hit = self.ycache[k] = (a.seq, YAlloc(*_alloc_fields(self.state, a), False))
        return hit[1]

    def _views(self, keys: Any) -> list[YAlloc]:
        ycache, allocs, out = self.ycache, self.state.allocations, []
        for k in keys:
            hit = ycache.get(k)
            if hit is None or hit[0] != allocs[k].seq:
                out.append(self.yalloc(k))
            else:
                out.append(hit[1])
        return [a for a in out if a.tracked]

    def leaf_allocs(self, path: str) -> list[YAlloc]:
        """Kept between builds: a leaf's list only grows at its end until one of its allocations
        ends (which moves the leaf's freed epoch), so only new starts are appended."""
        keys = self.state.queue_allocs.get(path)
        if keys is None:
            return []
        epoch = self.state.queue_freed_epoch[path]
        hit = self.leaves.get(path)
        if hit is not None and hit[0] == epoch and hit[1] <= len(keys):
            views = hit[2]
            if hit[1] < len(keys):
                views = views + self._views(list(islice(reversed(keys), len(keys) - hit[1]))[::-1])
        else:
            views = self._views(keys)
        self.leaves[path] = (epoch, len(keys), views)
        return views

    def node_allocs(self, node: str) -> list[YAlloc]:
        return self._views(self.state.node_allocs.get(node, ()))

    def cluster_size(self) -> Res:
        return dict(self.state.total_capacity_cached())  # the same sum over the same nodes, kept


def build_state_partition(state: ClusterState, skip: set[str], props: dict[str, QueueProps],
                          ycache: dict[str, tuple[int, YAlloc]], marked: set[str],
                          leaves: dict[str, tuple[int, int, list[YAlloc]]],
                          cand_memo: dict[str, tuple], ynodes: dict[str, YNode],
                          preempting: dict[str, None]) -> StatePartition:
    """``build_partition(indexed=True)`` with the allocation views kept in ``ycache``.

    ``marked`` holds the ids whose cached view had ``preempted`` set by the previous pass; they are
    reset first, then the allocations preempting now (state flag or ``skip``) are marked again.
    ``preempting`` holds every allocation the state may flag as preempting (see ``preempting_allocs``).
    """
    queues = _queue_views(state, props)
    # node views are kept and reset; usage dicts are shared, not copied: a pass replaces a node's
    # ``used``, never edits it
    used = state.node_used
    if len(ynodes) != len(state.nodes):
        ynodes.clear()
        ynodes.update((n.name, YNode(n.name, n.capacity)) for n in state.nodes.values())
    for n in state.nodes.values():
        y = ynodes[n.name]
        y.used, y.schedulable, y.reserved_for = used[n.name], n.schedulable, None
    if len(ycache) > 2 * len(state.allocations) + 64:
        for k in [k for k in ycache if k not in state.allocations]:
            del ycache[k]
    for k in marked:
        hit = ycache.get(k)
        if hit is not None:
            hit[1].preempted = False
    marked.clear()
    part = StatePartition(state, queues, (), ycache, leaves, cand_memo)
    part.nodes = ynodes
    for a in preempting_allocs(state, preempting, skip):
        if a.preempting or a.id in skip:
            y = part.yalloc(a.id)
            y.preempted = True
            marked.add(a.id)
            part.add_preempting(a.queue, a.resources)
    return part


def preempting_allocs(state: ClusterState, preempting: dict[str, None], skip: set[str]) -> list[Any]:
    """The running allocations among ``preempting`` and ``skip``, in the state's allocation order
    (start order, so sums over them add in the order a scan of every allocation would). Ids that
    are no longer running are dropped from ``preempting``."""
    allocs = state.allocations
    for k in [k for k in preempting if k not in allocs]:
        del preempting[k]
    out = [allocs[k] for k in preempting]
    out += [allocs[k] for k in skip if k in allocs and k not in preempting]
    out.sort(key=lambda a: a.seq)
    return out


def _alloc_fields(state: ClusterState, a: Any) -> tuple:
    """What a running allocation looks like to YuniKorn, except its preempted flag."""
    wl = state.workloads[a.workload]
    s = wl.settings or {}
    _, g, i = split_task_id(a.id)
    return (a.id, a.workload, a.queue, a.node, a.resources, a.priority, to_us(a.start),
            bool(s.get("originator", False)) and g == 0 and i == 0,
            bool(s.get("allowPreemption", True)) and a.preemptible,
            str(s.get("requiredNode", "") or ""), False)


def _queue_views(state: ClusterState, props: dict[str, QueueProps]) -> list[YQueue]:
    """Every queue, parents before children, with its usage as the state has it now."""
    return [YQueue(name, q.parent, nonzero(q.guaranteed), nonzero(q.max), dict(state.queue_usage[name]), {},
                   props[name], q.is_leaf)
            for root in state.roots for name in state.descendants(root) for q in (state.queues[name],)]


def build_partition(state: ClusterState, skip: set[str] | None = None,
                    props: dict[str, QueueProps] | None = None) -> Partition:
    """YuniKorn's view of the cluster state; allocations in ``skip`` count as already preempted."""
    props = queue_props(state) if props is None else props
    queues = _queue_views(state, props)
    nodes = [YNode(n.name, dict(n.capacity), dict(state.node_used[n.name]), n.schedulable) for n in state.nodes.values()]
    allocs = [YAlloc(*_alloc_fields(state, a), a.preempting or (skip is not None and a.id in skip))
              for a in state.allocations.values()]
    part = Partition(queues, nodes, allocs)
    for a in allocs:
        if a.preempted:
            part.add_preempting(a.queue, a.resources)
    return part


def nonzero(r: Mapping[str, float] | None) -> dict | None:
    """YuniKorn stores a configured max/guaranteed without a positive value as unset."""
    if r is None or not any(v > 0 for v in r.values()):
        return None
    return dict(r)


__all__ = ["StatePartition", "build_partition", "build_state_partition", "nonzero", "preempting_allocs",
           "queue_props", "to_us"]
