"""Views the YTsaurus model reads lazily: what a snapshot's operations publish, and the usage and
satisfaction of operations and pools during one heartbeat, each computed for the few names
actually read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import classify, fairshare, starvation
from makeway.policies.ytsaurus.tree import Tree

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import YTsaurusModel


class LazyPublished(dict):
    """``classify.publish`` of every operation of the tree, computed when first read: a heartbeat
    reads the few operations on its node, not the whole backlog."""

    def __init__(self, tree: Tree, attrs: Mapping[str, fairshare.Attrs]):
        super().__init__()
        self.tree, self.attrs = tree, attrs
        self._shared: dict[int, classify.Published] = {}  # by Attrs object: a group's members share one

    def __contains__(self, name: object) -> bool:
        el = self.tree.elements.get(name)  # type: ignore[arg-type]
        return el is not None and el.is_op

    def __missing__(self, name: str) -> classify.Published:
        if name not in self:
            raise KeyError(name)
        a = self.attrs[name]  # held by the result as long as this mapping lives: its id stays its own
        v = self._shared.get(id(a))
        if v is None:
            v = self._shared[id(a)] = classify.publish(a.fair_share, a.demand_share)
        self[name] = v
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


def heartbeat_sat(model: YTsaurusModel, opusage: dict[str, list[float]]):
    """A heartbeat's satisfaction function: ``model._sat`` over its live usage. An operation whose
    usage the heartbeat has not moved (``LiveUsage.changed``) has the state's usage, a function of
    its allocations' (count, newest seq); so its value is kept with the snapshot's view
    (``Waiting.sat``) under that signature and shared by the heartbeats until either moves."""
    changed = getattr(opusage, "changed", None)
    if not model.caches or changed is None:
        return lambda w: model._sat(w, opusage)
    memo = model._waiting.sat
    running, allocations = opusage.state.running, opusage.state.allocations  # type: ignore[attr-defined]

    def sat(w: str) -> float:
        if w in changed:
            return model._sat(w, opusage)
        mine = running.get(w)
        sig = (len(mine), allocations[next(reversed(mine))].seq) if mine else (0, 0)
        hit = memo.get(w)
        if hit is not None and hit[0] == sig:
            return hit[1]
        v = model._sat(w, opusage)
        memo[w] = (sig, v)
        return v
    return sat


def from_arrays(arr, params: dict[str, starvation.Params]) -> tuple[dict, dict[str, str]]:
    """What every operation publishes and every element's status, from an array-backed fair share
    result in a few array operations (the same values ``classify.publish`` and
    ``fairshare.element_status`` give one element at a time)."""
    names = arr.names
    tol = np.fromiter((params[n].tolerance for n in names), dtype=float, count=len(names))
    below = fairshare.below_fair_share(arr.fair, arr.demand_share, arr.usage_share, tol, arr.is_op).tolist()
    statuses = {n: "below_fair_share" if b else "normal" for n, b in zip(names, below)}
    rows = np.flatnonzero(arr.is_op)
    fair, demand = arr.fair[rows], arr.demand_share[rows]
    equal = np.all(np.abs(fair - demand) <= EPS, axis=1) & (demand.max(axis=1, initial=0.0) > EPS)
    published = {names[i]: classify.Published(f, d, not e)
                 for i, f, d, e in zip(rows.tolist(), fair.tolist(), demand.tolist(), equal.tolist())}
    return published, statuses


class _OnFirstRead(Mapping):
    """A mapping over every element of one tree whose values are computed, all at once, when first
    read (``_make``). Membership and size are the tree's, so asking computes nothing."""

    __slots__ = ("tree", "_values")

    def __init__(self, tree: Tree) -> None:
        self.tree, self._values = tree, None

    def _make(self) -> Mapping:
        raise NotImplementedError

    def _get(self) -> Mapping:
        if self._values is None:
            self._values = self._make()
        return self._values

    @property
    def computed(self) -> bool:
        return self._values is not None

    def __contains__(self, name: object) -> bool:
        return name in self.tree.elements

    def __getitem__(self, name: str):
        return self._get()[name]

    def __iter__(self):
        return iter(self._get())

    def __len__(self) -> int:
        return len(self.tree.elements)


class DeferredAttrs(_OnFirstRead):
    """A fair share result's attributes, computed when first read (the result has an entry for
    every element of its tree)."""

    __slots__ = ("_compute",)

    def __init__(self, tree: Tree, compute) -> None:
        super().__init__(tree)
        self._compute = compute

    def _make(self) -> Mapping[str, fairshare.Attrs]:
        attrs, self._compute = self._compute().attrs, None
        return attrs


class DeferredResult:
    """``fairshare.FairShareResult`` of an update nothing may read (``idle_view``): the same
    computation, run on first read with the inputs of the update (the tree is never changed once
    built, and the curve cache is keyed by content), so a read gets what the update would have
    computed."""

    __slots__ = ("attrs",)

    def __init__(self, tree: Tree, compute) -> None:
        self.attrs = DeferredAttrs(tree, compute)

    def fair(self, name: str):
        return self.attrs[name].fair_share


class DeferredParams(_OnFirstRead):
    """``starvation.effective_params`` of a deferred update's tree, computed when first read (only a
    preemptive stage's candidates read them while no clock runs)."""

    __slots__ = ("cfg",)

    def __init__(self, tree: Tree, cfg: dict) -> None:
        super().__init__(tree)
        self.cfg = cfg

    def _make(self) -> dict[str, starvation.Params]:
        return starvation.effective_params(self.tree, self.cfg)


def idle_view(tree: Tree) -> starvation.StarvationView:
    """``starvation.update_statuses`` where every element's usage is its demand (no operation of the
    tree has a pending task): no bound ``min(fair x tolerance, demand)`` exceeds the usage, so every
    status is ``normal``, whatever the fair share, and every clock steps to idle. (In the tree's own
    order, not its preorder: nothing reads an idle view in order.)"""
    names = tree.elements
    return starvation.StarvationView(dict.fromkeys(names, "normal"), dict.fromkeys(names, starvation._IDLE),
                                     dict.fromkeys(names), dict.fromkeys(names))
