"""The class of YuniKorn runs a compiled loop can take (the first slice of
``docs/plans/yunikorn-compiled-loop.md``; the loop itself is the next).

Inside: the partition's preemption on, quota preemption off; a root with neither guarantee nor
max and, under it, leaves only, without a max, with guarantees in whole numbers and no
preemption property but ``preemption.delay``; schedulable nodes with whole capacities; an empty
state; workloads of one task group (of one task, or of any number with ``gangs``: each task its
own ask) asking positive whole amounts of one same set of resources, without settings, always
preemptible and without a grace period. There the model's rules reduce to what
the plan restates on arrays: no fences, priority offsets, required nodes, originators, float
rounding or Go-faithful sorts of comparators that are not strict weak orders.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from makeway.core.objects import Workload, task_id
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.common import INT32_MAX, INT32_MIN, QueueProps
from makeway.policies.yunikorn.fast import layout as L
from makeway.policies.yunikorn.views import nonzero, queue_props, to_us


def _whole(values: Any) -> bool:
    return all(type(v) is int for v in values)


def unsupported(state: ClusterState, model: Any, workloads: Sequence[Workload], gangs: bool = False) -> str | None:
    """Why the compiled YuniKorn loop could not run this (None: it could): the first thing
    outside its class, named. ``gangs``: workloads of several tasks (one group) are inside."""
    if getattr(model, "name", None) != "yunikorn":
        return "not the yunikorn model"
    if not model.preemption_enabled:
        return "settings.preemptionEnabled: false"
    if model.quota.enabled:
        return "settings.quotaPreemptionEnabled: true"
    if len(state.roots) != 1:
        return "not one root queue"
    root = state.roots[0]
    if nonzero(state.queues[root].guaranteed) or nonzero(state.queues[root].max):
        return f"queue {root}: a guaranteed or max"
    props, plain = queue_props(state), QueueProps()
    for name, q in state.queues.items():
        if name == root:
            continue
        if q.parent != root or not q.is_leaf:
            return f"queue {name}: not a leaf under {root}"
        if nonzero(q.max):
            return f"queue {name}: a max"
        if q.guaranteed and (not _whole(q.guaranteed.values()) or min(q.guaranteed.values()) < 0):
            return f"queue {name}: a guaranteed that is not in non-negative whole numbers"
        p = props[name]
        if (p.preemption_policy, p.priority_fence, p.priority_offset) != \
                (plain.preemption_policy, plain.priority_fence, plain.priority_offset):
            return f"queue {name}: a preemption or priority policy, or a priority offset"
    for n in state.nodes.values():
        if not n.schedulable or n.removed or not _whole(n.capacity.values()):
            return f"node {n.name}: not schedulable, or a capacity that is not whole"
    if state.workloads or state.allocations:
        return "the state already holds workloads"
    kinds = None
    seen: set[tuple] = set()  # the requests already found inside (most workloads share a few)
    for wl in workloads:
        if len(wl.groups) != 1 or wl.groups[0].count < 1:
            return f"workload {wl.id}: not one task group" if gangs else f"workload {wl.id}: not one task"
        if wl.groups[0].count != 1 and not gangs:
            return f"workload {wl.id}: not one task"
        res = wl.groups[0].resources
        request = tuple(res.items())
        if request not in seen:
            if not res or not _whole(res.values()) or min(res.values()) <= 0:
                return f"workload {wl.id}: a request that is not in positive whole numbers"
            if kinds is None:
                kinds = set(res)
            elif set(res) != kinds:
                return f"workload {wl.id}: asks for other resources than {sorted(kinds)}"
            seen.add(request)
        if wl.queue not in state.queues or wl.queue == root:
            return f"workload {wl.id}: queue {wl.queue} is not a leaf"
        if not wl.preemptible or wl.grace or wl.settings:
            return f"workload {wl.id}: not preemptible, a grace period, or settings"
        if type(wl.priority) is not int or not INT32_MIN <= wl.priority <= INT32_MAX:
            return f"workload {wl.id}: a priority that is not a 32-bit integer"
    return None


class Packed:
    """One run of the class on arrays (``fast.loop.run``) and its results, read as the trailing
    comment of ``layout`` lists: ``wls``, ``node_names``, ``LOG[:nlog]``, ``LT[:nlog]``,
    ``calls``, ``CT[:calls]``, ``WK[:calls]`` and ``stopped``."""

    def __init__(self, state: ClusterState, model: Any, workloads: Sequence[Workload]):
        self.wls = sorted(workloads, key=lambda w: w.submit)
        root = state.roots[0]
        leaves = [q for q in state.descendants(root) if q != root]
        lix = {q: i for i, q in enumerate(leaves)}
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        types = list(state.resources)
        for d in [wl.groups[0].resources for wl in self.wls] + [n.capacity for n in nodes] + \
                [state.queues[q].guaranteed or {} for q in leaves]:
            if not d.keys() <= set(types):
                types += [k for k in d if k not in types]
        rix = {k: i for i, k in enumerate(types)}
        W, Q, N, R = len(self.wls), len(leaves), len(nodes), len(types)
        props = queue_props(state)
        QI = np.zeros((Q, L.NQI), np.int64)
        G = np.zeros((Q, R), np.int64)
        GT = np.zeros((Q, R), np.bool_)
        for i, q in enumerate(leaves):
            g = nonzero(state.queues[q].guaranteed)
            QI[i, L.Q_HASG] = int(g is not None)
            QI[i, L.Q_DELAY] = props[q].preemption_delay_us
            for k, v in (g or {}).items():
                G[i, rix[k]] = v
                GT[i, rix[k]] = True
        PREFIX = np.zeros((Q, Q), np.bool_)
        for i, q in enumerate(leaves):
            for j, a in enumerate(leaves):
                PREFIX[i, j] = i != j and a.startswith(q) and bool(QI[j, L.Q_HASG])
        ASKT = np.zeros(R, np.bool_)
        for k in (self.wls[0].groups[0].resources if self.wls else {}):
            ASKT[rix[k]] = True
        INCL = np.zeros(R, np.bool_)
        CAP = np.zeros((N, R), np.int64)
        for i, n in enumerate(nodes):
            for k, v in n.capacity.items():
                CAP[i, rix[k]] = v
                INCL[rix[k]] = True
        CAPT = CAP.sum(axis=0).astype(np.int64)
        asks = [wl.groups[0].resources for wl in self.wls]
        rows = list(zip(*[[a.get(k, 0) for a in asks] for k in types])) if types else [()] * W
        NT = np.array([wl.groups[0].count for wl in self.wls], np.int64)
        TOFF = np.zeros(W + 1, np.int64)
        np.cumsum(NT, out=TOFF[1:])
        T = int(TOFF[-1])
        TW = np.repeat(np.arange(W, dtype=np.int64), NT)
        REQ = np.array(rows, np.int64).reshape(W, R)[TW]
        minreq = REQ.min(axis=0) if W else np.zeros(R, np.int64)
        NI = np.zeros((N, L.NNI), np.int64)
        order = sorted(range(N), key=lambda i: self.node_names[i])
        BYNAME = np.array(order, np.int64)
        off = 0
        NI[order, L.N_RANK] = np.arange(N)
        NI[:, L.N_RESV] = -1
        for i in range(N):
            most = T
            for k in range(R):
                if ASKT[k]:
                    most = min(most, CAP[i, k] // minreq[k] if minreq[k] > 0 else T)
            NI[i, L.N_CAPN] = max(0, most) + 1
            NI[i, L.N_OFF] = off
            off += NI[i, L.N_CAPN]
        shapes: dict[tuple, int] = {}
        TI = np.zeros((T, L.NTI), np.int64)
        TF = np.zeros((T, L.NTF), np.float64)
        levels = sorted({wl.priority for wl in self.wls})
        lev = {p: i for i, p in enumerate(levels)}
        ranked = sorted(range(W), key=lambda i: (-self.wls[i].priority, self.wls[i].submit, self.wls[i].id))
        self.ranked = ranked  # the default queue order (``yunikorn_record.LogRun.by_rank``)
        if W:  # whole columns at once: an element write costs as much as building its list entry
            wls = self.wls
            wrank = np.zeros(W, np.int64)
            wrank[ranked] = np.arange(W)

            def column(values: Any, dtype: Any = np.int64) -> np.ndarray:
                return np.asarray(values, dtype)[TW]

            TI[:, L.T_RANK] = wrank[TW]
            TI[:, L.T_W] = TW
            TI[:, L.T_Q] = column([lix[wl.queue] for wl in wls])
            TI[:, L.T_PRIO] = column([wl.priority for wl in wls])
            TI[:, L.T_PLEV] = column([lev[wl.priority] for wl in wls])
            TI[:, L.T_SHAPE] = column([shapes.setdefault(row, len(shapes)) for row in rows])
            TI[:, L.T_SUBUS] = column([to_us(wl.submit) for wl in wls])
            TI[:, L.T_RESV] = -1
            TI[:, L.T_RESAT] = -1
            TF[:, L.F_SUB] = column([float(wl.submit) for wl in wls], np.float64)
            TF[:, L.F_DUR] = column([float(wl.duration) for wl in wls], np.float64)
        SREQ = np.array(list(shapes) or [[0] * R], np.int64).reshape(max(1, len(shapes)), R)
        self.leaves = leaves
        self.TW, self.TOFF, self.NT = TW, TOFF, NT
        self.T_IX = np.arange(T, dtype=np.int64) - TOFF[TW] if T else np.zeros(0, np.int64)
        self.args = (TI, TF, REQ, QI, G, GT, PREFIX, ASKT, INCL, CAPT, NI, CAP, BYNAME, SREQ,
                     np.array(ranked, np.int64), max(1, len(levels)), TOFF)
        self.TI = TI

    def run(self, horizon: float = math.inf, window: float = math.inf) -> "Packed":
        from makeway.policies.yunikorn.fast.loop import I_ATTEMPTS, I_CALLS, I_NLOG, I_STOP, I_VISITS, X_STOPPED, run

        LOG, LT, CT, WK, IS, X = run(*self.args, float(horizon), float(window))
        self.nlog, self.calls = int(IS[I_NLOG]), int(IS[I_CALLS])
        self.LOG, self.LT, self.CT, self.WK = LOG, LT, CT, WK
        self.stopped = bool(IS[I_STOP])
        self.stopped_at = float(X[X_STOPPED]) if self.stopped else None
        self.attempts, self.visits = int(IS[I_ATTEMPTS]), int(IS[I_VISITS])
        return self

    def task_ids(self) -> list[str]:
        """Each task's id (``core.objects.task_id``), by task index."""
        return [task_id(self.wls[w].id, 0, i) for w, i in zip(self.TW.tolist(), self.T_IX.tolist())]


def run(state: ClusterState, model: Any, workloads: Sequence[Workload], horizon: float = math.inf,
        window: float = math.inf, checked: bool = False, gangs: bool = False) -> Packed:
    """The compiled loop's whole run of a case inside the class (``unsupported`` None).
    ``checked``: the caller found ``unsupported`` None for these workloads already."""
    why = None if checked else unsupported(state, model, workloads, gangs)
    if why is not None:
        raise ValueError(f"the compiled YuniKorn loop cannot run this: {why}")
    return Packed(state, model, workloads).run(horizon, window)


__all__ = ["Packed", "run", "unsupported"]
