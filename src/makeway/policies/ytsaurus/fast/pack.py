"""The YTsaurus runs a compiled loop can take (``docs/plans/ytsaurus-compiled-loop.md`` §1), and
their static arrays.

Inside: one resource; one config root under ``<Root>``, pools of mode ``fair_share`` without
``max``, integral or promised guarantees or their own usage thresholds, with guarantees in
non-negative whole numbers, workloads in leaf pools only; the tree's aggressive starvation off;
the closed-form fair share (``onedim``) on, the kernel off, caches on; schedulable nodes of whole
capacity; an empty state and a trace in submit order; workloads of one task group asking a
positive whole amount, no larger than the largest node, without settings, preemptible, without
grace. There the fair share of every update is ``onedim``'s water-filling over classes of equal
operations, which ``fast.fill`` computes bit for bit on the arrays ``Packed`` lays out.

Guarantees need not fit their parent's: ``onedim.unit_guarantees`` scales them, once per run
(config and capacity are fixed in the class), and ``Packed.GU`` holds the result. A pool without
a guarantee scales its children's to 0, as in the Philly study's tree.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from makeway.core.objects import Workload
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import durations, onedim
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

_LEGACY_COUNTS = ("max_unpreemptible_running_allocation_count", "max_unpreemptible_running_job_count",
                  "max_unpreemptable_running_job_count")
_AGGRESSIVE = ("enableAggressiveStarvation", "enable_aggressive_starvation")


def _whole(v: Any, least: int) -> bool:
    return type(v) is int and v >= least


def unsupported(state: ClusterState, model: Any, workloads: Sequence[Workload]) -> str | None:
    """Why the compiled YTsaurus loop could not run this (None: it could): the first thing
    outside its class, named."""
    if type(model) is not YTsaurusModel:
        return "not the ytsaurus model"
    s = model.settings
    if not model.caches:
        return "settings.caches: false"
    if model.kernel:
        return "settings.fair_share_kernel: true"
    if not model.closed_form:
        return "settings.fair_share_closed_form: false"
    if s.get("best_allocation_share"):
        return "settings.best_allocation_share: true"
    if s.get("enable_aggressive_starvation"):
        return "settings.enable_aggressive_starvation: true"
    if s.get("non_preemptible_resource_usage_threshold") is not None:
        return "settings.non_preemptible_resource_usage_threshold"
    for k in _LEGACY_COUNTS:
        if s.get(k) is not None:
            return f"settings.{k}"
    if s.get("allocation_preemption_timeout") not in (None, 0, 0.0):
        return "settings.allocation_preemption_timeout"
    if len(state.resources) != 1:
        return "not one resource"
    r = state.resources[0]
    if len(state.roots) != 1:
        return "not one root queue"
    for q in state.queues.values():
        qs = durations.normalize(q.settings)
        if qs.get("mode", "fair_share") != "fair_share":
            return f"queue {q.name}: mode {qs['mode']}"
        if q.max and any(v is not None for v in q.max.values()):
            return f"queue {q.name}: a max"
        if q.guaranteed and (set(q.guaranteed) - {r} or not _whole(q.guaranteed.get(r, 0), 0)):
            return f"queue {q.name}: a guaranteed that is not a non-negative whole amount of {r}"
        w = float(q.weight or 1.0)
        if not math.isfinite(w) or w <= EPS:
            return f"queue {q.name}: weight {q.weight!r}"
        if (qs.get("integral_guarantees") or {}).get("guarantee_type", "none") != "none":
            return f"queue {q.name}: integral guarantees"
        if qs.get("compute_promised_guarantee_fair_share"):
            return f"queue {q.name}: compute_promised_guarantee_fair_share"
        if any(qs.get(k) for k in _AGGRESSIVE):
            return f"queue {q.name}: enable_aggressive_starvation"
        if qs.get("non_preemptible_resource_usage_threshold") is not None:
            return f"queue {q.name}: non_preemptible_resource_usage_threshold"
    largest = 0
    for n in state.nodes.values():
        if not n.schedulable or n.removed or set(n.capacity) - {r} or not _whole(n.capacity.get(r, 0), 0):
            return f"node {n.name}: not schedulable, or a capacity that is not a whole amount of {r}"
        largest = max(largest, n.capacity.get(r, 0))
    if largest == 0:
        return f"no {r} in the cluster"
    if state.workloads or state.allocations:
        return "the state already holds workloads"
    last = -math.inf
    for wl in workloads:
        if not wl.submit >= last:
            return f"workload {wl.id}: the trace is not in submit order"
        last = wl.submit
        q = state.queues.get(wl.queue)
        if q is None or not q.is_leaf:
            return f"workload {wl.id}: queue {wl.queue} is not a leaf pool"
        if len(wl.groups) != 1 or not _whole(wl.groups[0].count, 1):
            return f"workload {wl.id}: not one task group"
        res = wl.groups[0].resources
        if set(res) != {r} or not _whole(res[r], 1):
            return f"workload {wl.id}: a request that is not a positive whole amount of {r}"
        if res[r] > largest:
            return f"workload {wl.id}: a task larger than the largest node"
        if not wl.preemptible or wl.grace or wl.settings:
            return f"workload {wl.id}: not preemptible, a grace period, or settings"
    return None


class Rows(NamedTuple):
    """``fast.fill``'s item arrays for one update, and each operation's item (-1: not in the tree)."""

    IOFF: np.ndarray
    IPOOL: np.ndarray
    IW: np.ndarray
    IHI: np.ndarray
    ICNT: np.ndarray
    OPITEM: np.ndarray


class Packed:
    """The static arrays of a run in the class. Pools in the tree's pool postorder (``<Root>``
    last): ``PAR`` (-1 at the root), ``W``, ``G`` (the configured guarantee, 0 when none), ``GU``
    (it in units as ``onedim`` scales it), child pools ``KIDS[KOFF[p]:KOFF[p+1]]`` in child order,
    ``LEAF``. Operations in trace order: ``POOL``, ``REQ`` (units per task), ``NT`` (tasks).
    Nodes in state order: ``CAP``; ``T`` their total, as the model's tree reads it."""

    def __init__(self, state: ClusterState, model: Any, workloads: Sequence[Workload]):
        r = self.resource = state.resources[0]
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        self.CAP = np.array([n.capacity.get(r, 0) for n in nodes], np.int64)
        self.T = float(sum(n.capacity.get(r, 0) for n in nodes))
        tree = Tree((r,), [self.T])
        tree.add(Element(ROOT, None))
        for i, q in enumerate(state.queues.values()):  # as the model's ``build_tree`` adds them
            tree.add(Element(q.name, q.parent or ROOT, weight=float(q.weight or 1.0), guarantee=q.guaranteed, order=i))
        tree.link_children()
        self.pools = tree.pool_postorder()
        pix = {p: i for i, p in enumerate(self.pools)}
        gu = onedim.unit_guarantees(tree, 0, True)
        P = len(self.pools)
        self.PAR = np.array([pix[tree.elements[p].parent] if p != ROOT else -1 for p in self.pools], np.int64)
        self.W = np.array([tree.elements[p].weight for p in self.pools], np.float64)
        self.G = np.array([(state.queues[p].guaranteed or {}).get(r, 0) if p != ROOT else 0 for p in self.pools],
                          np.int64)
        self.GU = np.array([gu[p] for p in self.pools], np.float64)
        kids = [[pix[c] for c in tree.elements[p].children] for p in self.pools]
        self.KOFF = np.array([0] + list(np.cumsum([len(k) for k in kids])), np.int64)
        self.KIDS = np.array([c for k in kids for c in k], np.int64)
        self.LEAF = np.array([not k for k in kids], np.bool_)
        self.wls = list(workloads)
        self.POOL = np.array([pix[wl.queue] for wl in self.wls], np.int64)
        self.REQ = np.array([wl.groups[0].resources[r] for wl in self.wls], np.int64)
        self.NT = np.array([wl.groups[0].count for wl in self.wls], np.int64)
        self._pool_of: list[int] = self.POOL.tolist()
        self._ops_of: list[list[int]] = [[] for _ in range(P)]
        for w, p in enumerate(self.POOL):
            self._ops_of[p].append(w)

    def rows(self, demand: Sequence[int] | Mapping[int, int]) -> Rows:
        """The items of an update where operation ``w`` demands ``demand[w]`` units (0, or absent
        from a mapping: not in the tree), in ``onedim``'s order: a pool's child pools in child
        order; a leaf's classes of equal top ``min(demand, T)`` (every weight is 1) at their first
        member in trace order. What the loop builds from its classes; here in Python, for the
        tests and the record (which passes a mapping of the tree's operations: a few hundred of
        a trace's tens of thousands)."""
        T = self.T
        ops_of = self._ops_of
        if isinstance(demand, Mapping):
            ops_of = [[] for _ in self.pools]
            for w in sorted(demand):
                ops_of[self._pool_of[w]].append(w)
        IOFF, IPOOL, IW, IHI, ICNT = [0], [], [], [], []
        OPITEM = np.full(len(self.wls), -1, np.int64)
        for p in range(len(self.pools)):
            if not self.LEAF[p]:
                for c in self.KIDS[self.KOFF[p]:self.KOFF[p + 1]]:
                    IPOOL.append(int(c))
                    IW.append(float(self.W[c]))
                    IHI.append(0.0)
                    ICNT.append(1)
            else:
                at: dict[float, int] = {}
                for w in ops_of[p]:
                    d = int(demand[w])
                    if d <= 0:
                        continue
                    top = min(float(d), math.inf, T)
                    k = at.get(top)
                    if k is None:
                        k = at[top] = len(IPOOL)
                        IPOOL.append(-1)
                        IW.append(1.0)
                        IHI.append(top)
                        ICNT.append(0)
                    ICNT[k] += 1
                    OPITEM[w] = k
            IOFF.append(len(IPOOL))
        return Rows(np.array(IOFF, np.int64), np.array(IPOOL, np.int64), np.array(IW, np.float64),
                    np.array(IHI, np.float64), np.array(ICNT, np.int64), OPITEM)

    def solve(self, rows: Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``fast.fill`` on ``rows``: each pool's value and level, each item's value (units)."""
        from makeway.policies.ytsaurus.fast.fill import fill

        P, n = len(self.pools), len(rows.IPOOL)
        IHI = rows.IHI.copy()
        IG, IVAL = np.zeros(n), np.zeros(n)
        HI, GEFF, VAL, LAM = np.zeros(P), np.zeros(P), np.zeros(P), np.zeros(P)
        fill(self.T, self.GU, rows.IOFF, rows.IPOOL, rows.IW, IHI, rows.ICNT, IG, IVAL, HI, GEFF, VAL, LAM)
        return VAL, LAM, IVAL
