"""Kueue's quota tree: ClusterQueues (leaves) and Cohorts (inner nodes) with per flavor-resource quota.

Everything is kept per flavor-resource pair ``fr = (flavor, resource)`` in Kueue's integer units
(see ``units``), because Kueue's decisions compare int64 quantities exactly and a float drift of
1e-12 would flip a "within nominal" test. The arithmetic follows SEMANTICS.md section 1:
``subtree`` (SubtreeQuota), ``usage``, ``local_quota`` (the part hidden from the parent by a
lending limit), ``available`` and ``potential_available``. Usage is maintained incrementally: a
change at a node pushes only the part above its local quota to the parent.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

FR = tuple[str, str]  # (flavor, resource)
INT64_MAX = 2**63 - 1

NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL = "LowerOrNewerEqualPriority"
ANY = "Any"


def units(resource: str, value: float) -> int:
    """Kueue's integer unit of a quantity in makeway's unit: cpu in milli-cores, the rest as is.

    Memory in makeway is already bytes. Values are saturated at int64 max, as Kueue does when a
    quota overflows.
    """
    v = value * 1000 if resource == "cpu" else value
    if isinstance(v, float):
        if math.isinf(v) or v >= INT64_MAX:
            return INT64_MAX
        v = round(v)
    return min(int(v), INT64_MAX)


@dataclass(slots=True)
class FlavorQuota:
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(slots=True)
class Policy:
    """ClusterQueue ``spec.preemption``; an empty or unknown value behaves like Never."""

    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(slots=True)
class Admitted:
    """An admitted workload as preemption sees it: who, where, how much per fr, and ordering keys."""

    name: str
    cq: str
    priority: int
    usage: dict[FR, int]
    admitted_at: float = 0.0
    created_at: float = float("-inf")
    uid: str = ""
    evicted: bool = False
    protected: bool = False  # makeway's preemptible=false: counts against quota, never a candidate

    def uses_any(self, frs: Iterable[FR]) -> bool:
        return not self.protected and any(fr in self.usage for fr in frs)


@dataclass(slots=True, eq=False)
class QNode:
    """One ClusterQueue or Cohort. ``flavors`` keeps per resource group the flavor order."""

    name: str
    is_cq: bool
    parent: "QNode | None" = None
    quotas: dict[FR, FlavorQuota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    weight: float = 1.0
    policy: Policy = field(default_factory=Policy)
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)  # (resources, flavors)
    child_cohorts: list["QNode"] = field(default_factory=list)
    child_cqs: list["QNode"] = field(default_factory=list)
    workloads: dict[str, Admitted] = field(default_factory=dict)
    # the same workloads as (cand_key, workload), kept sorted: preemption reads them in order
    ordered: list[tuple[tuple, Admitted]] = field(default_factory=list)
    # the same workloads (protected ones left out) summed per (priority, flavor-resources used):
    # [count, usage]; a target search reads whole groups of candidates from here in O(groups)
    buckets: dict[tuple, list] = field(default_factory=dict)
    bucket_of: dict[str, tuple] = field(default_factory=dict)
    lendable: dict[str, int] | None = None  # cache for children's DRS: quotas only, never usage
    share: Any = None  # cached DRS of this node, valid until its usage changes

    def nominal(self, fr: FR) -> int:
        q = self.quotas.get(fr)
        return q.nominal if q else 0

    def path_parent_to_root(self) -> Iterator["QNode"]:
        n = self.parent
        while n is not None:
            yield n
            n = n.parent

    def root(self) -> "QNode":
        n = self
        while n.parent is not None:
            n = n.parent
        return n


def cand_key(wl: Admitted) -> tuple:
    """Kueue's CandidatesOrdering within one ClusterQueue: evicted first, then low priority, newest
    admission, uid (the name makes it total). Across queues the preemptor's own queue goes last
    (``preemption.ordering_key``)."""
    return (not wl.evicted, wl.priority, -wl.admitted_at, wl.uid, wl.name)


def _drop(ordered: list[tuple[tuple, Admitted]], wl: Admitted) -> None:
    i = bisect_left(ordered, (cand_key(wl),))
    if i < len(ordered) and ordered[i][1] is wl:
        del ordered[i]
    else:  # its fields were changed after it was added
        ordered[:] = [e for e in ordered if e[1] is not wl]


def _unbucket(cq: QNode, wl: Admitted) -> None:
    key = cq.bucket_of.pop(wl.name, None)
    if key is None:
        return
    b = cq.buckets[key]
    b[0] -= 1
    if b[0] == 0:
        del cq.buckets[key]
        return
    acc = b[1]
    for fr, v in wl.usage.items():
        acc[fr] -= v


class TreeError(ValueError):
    """An invalid quota tree (cycle, unknown reference); the message names the object."""


@dataclass(slots=True)
class CohortSpec:
    name: str
    parent: str | None = None
    weight: float = 1.0
    quotas: dict[FR, FlavorQuota] = field(default_factory=dict)
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)


@dataclass(slots=True)
class CQSpec:
    name: str
    cohort: str | None = None
    weight: float = 1.0
    quotas: dict[FR, FlavorQuota] = field(default_factory=dict)
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)


def _sat_add(a: int, b: int) -> int:
    return min(a + b, INT64_MAX)


class QuotaTree:
    """The forest of cohorts and ClusterQueues with usage; the snapshot preemption simulates on.

    Children are kept sorted by name so that nothing depends on the order objects were listed in.
    """

    __slots__ = ("cqs", "cohorts")

    def __init__(self, cohorts: Iterable[CohortSpec], cqs: Iterable[CQSpec]):
        self.cohorts: dict[str, QNode] = {}
        self.cqs: dict[str, QNode] = {}
        specs = {c.name: c for c in cohorts}
        for c in specs.values():
            self.cohorts[c.name] = QNode(c.name, False, weight=c.weight, quotas=dict(c.quotas), groups=list(c.groups))
        for c in specs.values():  # implicit parents: no quota, no parent, weight 0 (harmless, roots)
            if c.parent is not None and c.parent not in self.cohorts:
                self.cohorts[c.parent] = QNode(c.parent, False, weight=0.0)
        for q in cqs:
            if q.name in self.cqs:
                raise TreeError(f"ClusterQueue/{q.name}: defined twice")
            self.cqs[q.name] = QNode(q.name, True, weight=q.weight, quotas=dict(q.quotas),
                                     groups=list(q.groups), policy=q.policy)
            if q.cohort is not None and q.cohort not in self.cohorts:
                self.cohorts[q.cohort] = QNode(q.cohort, False, weight=0.0)
        for c in specs.values():
            if c.parent is not None:
                self.cohorts[c.name].parent = self.cohorts[c.parent]
        for c in self.cohorts.values():
            seen = {c.name}
            n = c.parent
            while n is not None:
                if n.name in seen:
                    raise TreeError(f"Cohort/{c.name}: parent chain forms a cycle")
                seen.add(n.name)
                n = n.parent
        for q in cqs:
            if q.cohort is not None:
                self.cqs[q.name].parent = self.cohorts[q.cohort]
        for name in sorted(self.cohorts):
            c = self.cohorts[name]
            if c.parent is not None:
                c.parent.child_cohorts.append(c)
        for name in sorted(self.cqs):
            q = self.cqs[name]
            if q.parent is not None:
                q.parent.child_cqs.append(q)
        for q in self.cqs.values():
            q.subtree = {fr: fq.nominal for fr, fq in q.quotas.items()}
        for c in self.cohorts.values():
            if c.parent is None:
                self._accumulate(c)

    def _accumulate(self, c: QNode) -> None:
        sub = {fr: fq.nominal for fr, fq in c.quotas.items()}
        for child in c.child_cohorts:
            self._accumulate(child)
        for child in list(c.child_cohorts) + list(c.child_cqs):
            for fr, v in child.subtree.items():
                sub[fr] = _sat_add(sub.get(fr, 0), v - local_quota(child, fr))
        c.subtree = sub

    # -- usage ------------------------------------------------------------------------------

    def add_usage(self, node: QNode, usage: Mapping[FR, int], sign: int = 1) -> None:
        for fr, v in usage.items():
            n: QNode | None = node
            delta = sign * v
            while n is not None and delta != 0:
                u = n.usage
                old = u.get(fr, 0)
                new = old + delta
                u[fr] = new
                n.share = None
                q = n.quotas.get(fr)
                if q is None or q.lending_limit is None:
                    delta = (new if new > 0 else 0) - (old if old > 0 else 0)
                else:
                    lq = n.subtree.get(fr, 0) - q.lending_limit
                    lq = lq if lq > 0 else 0
                    delta = max(0, new - lq) - max(0, old - lq)
                n = n.parent

    def add_workload(self, wl: Admitted) -> None:
        cq = self.cqs[wl.cq]
        old = cq.workloads.get(wl.name)
        if old is not None:  # a name given twice: the later entry replaces the earlier one
            _drop(cq.ordered, old)
            _unbucket(cq, old)
        cq.workloads[wl.name] = wl
        insort(cq.ordered, (cand_key(wl), wl))
        if not wl.protected:
            key = cq.bucket_of[wl.name] = (wl.priority, frozenset(wl.usage))
            b = cq.buckets.get(key)
            if b is None:
                cq.buckets[key] = [1, dict(wl.usage)]
            else:
                b[0] += 1
                acc = b[1]
                for fr, v in wl.usage.items():
                    acc[fr] = acc.get(fr, 0) + v
        self.add_usage(cq, wl.usage)

    def remove_workload(self, wl: Admitted) -> None:
        cq = self.cqs[wl.cq]
        old = cq.workloads.pop(wl.name)
        _drop(cq.ordered, old)
        _unbucket(cq, old)
        self.add_usage(cq, wl.usage, -1)

    def nodes(self) -> Iterator[QNode]:
        yield from self.cohorts.values()
        yield from self.cqs.values()


# -- per-node quantities (SEMANTICS 1.2, 1.3) -------------------------------------------------


def local_quota(n: QNode, fr: FR) -> int:
    q = n.quotas.get(fr)
    if q is None or q.lending_limit is None:
        return 0
    return max(0, n.subtree.get(fr, 0) - q.lending_limit)


def local_available(n: QNode, fr: FR) -> int:
    return max(0, local_quota(n, fr) - n.usage.get(fr, 0))


def available(n: QNode, fr: FR) -> int:
    """What ``n`` could still admit on ``fr``; may be negative after over-admission."""
    if n.parent is None:
        return n.subtree.get(fr, 0) - n.usage.get(fr, 0)
    p = available(n.parent, fr)
    q = n.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        lq = local_quota(n, fr)
        cap = (n.subtree.get(fr, 0) - lq) - max(0, n.usage.get(fr, 0) - lq) + q.borrowing_limit
        p = min(p, cap)
    return local_available(n, fr) + p


def cq_available(n: QNode, fr: FR) -> int:
    return max(0, available(n, fr))


def potential_available(n: QNode, fr: FR) -> int:
    """The largest amount ``n`` could take on ``fr`` with nothing else admitted anywhere."""
    if n.parent is None:
        return n.subtree.get(fr, 0)
    v = _sat_add(local_quota(n, fr), potential_available(n.parent, fr))
    q = n.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        v = min(v, _sat_add(n.subtree.get(fr, 0), q.borrowing_limit))
    return v


def borrowing(n: QNode, fr: FR, extra: int = 0) -> bool:
    return n.usage.get(fr, 0) + extra > n.subtree.get(fr, 0)


def within_nominal_in(n: QNode, frs: Iterable[FR]) -> bool:
    return all(n.usage.get(fr, 0) <= n.subtree.get(fr, 0) for fr in frs)


def quantities_fit_in_quota(n: QNode, req: Mapping[FR, int]) -> tuple[bool, dict[FR, int]]:
    """Whether ``req`` fits the node's subtree quota, and what is left to ask of its parent."""
    fits = True
    remaining: dict[FR, int] = {}
    for fr, v in req.items():
        if n.usage.get(fr, 0) + v > n.subtree.get(fr, 0):
            fits = False
        remaining[fr] = max(0, v - local_available(n, fr))
    return fits, remaining
