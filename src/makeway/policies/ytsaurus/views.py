"""Views the YTsaurus model reads lazily: what a snapshot's operations publish, and the usage of
operations and pools during one heartbeat, each computed for the few names actually read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import classify, fairshare
from makeway.policies.ytsaurus.tree import Tree

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import YTsaurusModel


class LazyPublished(dict):
    """``classify.publish`` of every operation of the tree, computed when first read: a heartbeat
    reads the few operations on its node, not the whole backlog."""

    def __init__(self, tree: Tree, attrs: Mapping[str, fairshare.Attrs]):
        super().__init__()
        self.tree, self.attrs = tree, attrs

    def __contains__(self, name: object) -> bool:
        el = self.tree.elements.get(name)  # type: ignore[arg-type]
        return el is not None and el.is_op

    def __missing__(self, name: str) -> classify.Published:
        if name not in self:
            raise KeyError(name)
        a = self.attrs[name]
        v = self[name] = classify.publish(a.fair_share, a.demand_share)
        return v


class LiveUsage(dict):
    """Current usage vector per operation, computed on first use during one heartbeat; ``changed``
    names the operations whose usage the heartbeat has moved since (``YTsaurusModel._account``)."""

    def __init__(self, model: YTsaurusModel, state: ClusterState):
        super().__init__()
        self.model, self.state = model, state
        self.changed: set[str] = set()

    def __missing__(self, wid: str) -> list[float]:
        v = [0.0] * len(self.model.resources)
        for tid in self.state.running.get(wid) or ():
            res = self.state.allocations[tid].resources
            for k, r in enumerate(self.model.resources):
                v[k] += float(res.get(r, 0))
        self[wid] = v
        return v

    def __contains__(self, wid: object) -> bool:
        return wid in self.state.workloads



class LiveQueueUsage(dict):
    """Usage vector per pool, converted from the state on first use during one heartbeat."""

    def __init__(self, model: YTsaurusModel, state: ClusterState):
        super().__init__()
        self.model, self.state = model, state

    def __missing__(self, q: str) -> list[float]:
        v = self.model._vec(self.state.queue_usage[q])
        self[q] = v
        return v
