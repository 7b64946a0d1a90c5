"""The Kueue model's runs that the compiled loop (``fast.loop``) can take, packed into its arrays.

The compiled loop covers classic preemption on one flavor-resource: every ClusterQueue has one
resource group with the same single flavor and resource, every workload one pod set asking a
positive integer amount of it, nodes with integer capacities, no grace periods, taints,
namespaces, StrictFIFO queues or fair sharing. ``unsupported`` names the first thing outside
that; ``decisions`` runs the loop and returns the decisions in the order the model makes them.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.policies.kueue.fast import layout as L
from makeway.policies.kueue.flavorassign import height
from makeway.policies.kueue.quota import ANY, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER, QuotaTree, units
from makeway.policies.kueue.setup import specs_from_queues

_POLICY = {NEVER: L.P_NEVER, "": L.P_NEVER, LOWER_PRIORITY: L.P_LOWER, LOWER_OR_NEWER_EQUAL: L.P_LOWER_OR_NEWER,
           ANY: L.P_ANY}
VARIANT_REASON = ("InClusterQueue", "InCohortReclamation", "InCohortReclamation", "InCohortReclaimWhileBorrowing")


def _tree(state: ClusterState, model: Any) -> QuotaTree:
    return QuotaTree(*specs_from_queues(state.queues, state.resources, model.default_flavor,
                                        model.settings.get("defaultPreemption")))


def unsupported(state: ClusterState, model: Any, workloads: Sequence[Workload]) -> str | None:
    """Why the compiled loop cannot run this (None: it can)."""
    if getattr(model, "name", None) != "kueue":
        return "not the kueue model"
    if model.fair:
        return "fair sharing"
    for key in ("resourceFlavors", "namespaces"):
        if model.settings.get(key):
            return f"settings.{key}"
    tree = _tree(state, model)
    fr = None
    for q in tree.cqs.values():
        settings = state.queues[q.name].settings or {}
        if settings.get("queueingStrategy") == "StrictFIFO" or settings.get("namespaceSelector") is not None:
            return f"queue {q.name}: StrictFIFO or namespaceSelector"
        if len(q.groups) != 1 or len(q.groups[0][0]) != 1 or len(q.groups[0][1]) != 1:
            return f"queue {q.name}: not one resource group of one resource and one flavor"
        mine = (q.groups[0][1][0], q.groups[0][0][0])
        if fr is None:
            fr = mine
        if mine != fr or set(q.quotas) != {fr} or mine[1] == "pods":
            return f"queue {q.name}: a flavor-resource other than {fr}"
    for c in tree.cohorts.values():
        if set(c.quotas) - {fr}:
            return f"cohort {c.name}: quota on another flavor-resource"
    if fr is None:
        return "no ClusterQueue"
    for n in state.nodes.values():
        if not n.schedulable or n.removed or any(type(v) is not int or v < 0 for v in n.capacity.values()):
            return f"node {n.name}: not schedulable or a capacity that is not a non-negative integer"
    if state.workloads or state.allocations:
        return "the state already holds workloads"
    for wl in workloads:
        if wl.queue not in tree.cqs:
            return f"workload {wl.id}: queue {wl.queue} is not a ClusterQueue"
        if len(wl.groups) != 1 or type(wl.groups[0].count) is not int or wl.groups[0].count < 1:
            return f"workload {wl.id}: not one pod set"
        res = wl.groups[0].resources
        if any(type(v) is not int or v < 0 for v in res.values()) or not res.get(fr[1]):
            return f"workload {wl.id}: requests not non-negative integers with some {fr[1]}"
        if not wl.preemptible or wl.grace or wl.settings:
            return f"workload {wl.id}: not preemptible, a grace period or settings"
    return None


class Packed:
    """The arrays of one run (see ``fast.loop.run``) and what reads them back."""

    def __init__(self, state: ClusterState, model: Any, workloads: Sequence[Workload]):
        tree = _tree(state, model)
        self.wls = list(workloads)
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        cq0 = next(iter(tree.cqs.values()))
        flv, res = cq0.groups[0][1][0], cq0.groups[0][0][0]
        fr = (flv, res)
        self.resource = res
        # the quota forest: every node of it, cohorts and ClusterQueues, by name
        tnodes = sorted(list(tree.cohorts.values()) + list(tree.cqs.values()), key=lambda n: (not n.is_cq, n.name))
        self.tnodes = tnodes
        ix = {id(n): i for i, n in enumerate(tnodes)}
        T = len(tnodes)
        TI = np.zeros((T, L.NTI), np.int64)
        for i, n in enumerate(tnodes):
            q = n.quotas.get(fr)
            sub = n.subtree.get(fr, 0)
            TI[i, L.PAR] = -1 if n.parent is None else ix[id(n.parent)]
            TI[i, L.SUB] = sub
            TI[i, L.LQ] = 0 if q is None or q.lending_limit is None else max(0, sub - q.lending_limit)
            TI[i, L.HASBL] = int(q is not None and q.borrowing_limit is not None)
            TI[i, L.BL] = q.borrowing_limit if TI[i, L.HASBL] else 0
            TI[i, L.NOM] = q.nominal if q is not None else 0
            TI[i, L.HEIGHT] = 0 if n.is_cq else height(n)
            TI[i, L.ROOT] = ix[id(n.root())]
            TI[i, L.ISCQ] = int(n.is_cq)
            if n.is_cq:
                pol = n.policy
                TI[i, L.WITHIN] = _POLICY.get(pol.within_cluster_queue, L.P_OTHER)
                TI[i, L.RECLAIM] = _POLICY.get(pol.reclaim_within_cohort, L.P_OTHER)
                TI[i, L.BW_ALLOWED] = int(pol.borrow_within_cohort not in (NEVER, "", None))
                TI[i, L.BW_NOT_NEVER] = int(pol.borrow_within_cohort != NEVER)
                TI[i, L.HASTH] = int(pol.max_priority_threshold is not None)
                TI[i, L.TH] = pol.max_priority_threshold or 0
        kc = [[ix[id(c)] for c in n.child_cohorts] for n in tnodes]
        kq = [[ix[id(c)] for c in n.child_cqs] for n in tnodes]
        self.KC_OFF = np.array([0] + list(np.cumsum([len(k) for k in kc])), np.int64)
        self.KC = np.array([x for k in kc for x in k] or [0], np.int64)
        self.KQ_OFF = np.array([0] + list(np.cumsum([len(k) for k in kq])), np.int64)
        self.KQ = np.array([x for k in kq for x in k] or [0], np.int64)
        self.TI = TI
        cq_names = sorted(tree.cqs)
        self.CQO = np.array([ix[id(tree.cqs[q])] for q in cq_names], np.int64)
        # workloads, in submit order
        W = len(self.wls)
        ranks = {w: k for k, w in enumerate(sorted(wl.id for wl in self.wls))}
        rix = {r: k for k, r in enumerate(state.resources)}
        R = len(state.resources)
        WI = np.zeros((W, L.NWI), np.int64)
        req_rows: list[list[int]] = []
        cols: list[list[int]] = [[] for _ in range(L.NWI)]
        keys: dict[tuple, int] = {}
        toff = 0
        per_cq = np.zeros(T, np.int64)
        per_queue = {}  # ClusterQueue name -> (tree index, whether its policies read creation times)
        for q, cq in tree.cqs.items():
            per_queue[q] = (ix[id(cq)], LOWER_OR_NEWER_EQUAL in (cq.policy.within_cluster_queue,
                                                                 cq.policy.reclaim_within_cohort))
        for wl in self.wls:
            g = wl.groups[0]
            c, newer = per_queue[wl.queue]
            prio = model.priority(wl)
            row = [0] * R
            for k, v in g.resources.items():
                if k in rix:
                    row[rix[k]] = v
            req_rows.append(row)
            qv = units(res, g.resources[res] * g.count)
            key = (c, qv, g.count, tuple(row), prio, wl.submit if newer else None)
            cols[L.W_CQ].append(c)
            cols[L.W_PRIO].append(prio)
            cols[L.W_RANK].append(ranks[wl.id])
            cols[L.W_CNT].append(g.count)
            cols[L.W_QV].append(qv)
            cols[L.W_KEY].append(keys.setdefault(key, len(keys)))
            cols[L.W_TOFF].append(toff)
            toff += g.count
            per_cq[c] += 1
        for j, col in enumerate(cols):
            if col:
                WI[:, j] = col
        REQ = np.array(req_rows, np.int64).reshape(W, R)
        self.WI, self.REQ = WI, REQ
        self.sub_t = np.array([float(wl.submit) for wl in self.wls], np.float64)
        self.dur = np.array([float(wl.duration) for wl in self.wls], np.float64)
        self.adm = np.zeros(W, np.float64)
        self.cap = np.array([[n.capacity.get(r, 0) for r in state.resources] for n in nodes], np.int64).reshape(len(nodes), R)
        self.used = np.zeros_like(self.cap)
        label, default = model.flavor_label, model.default_flavor
        self.FN = np.array([i for i, n in enumerate(nodes) if n.labels.get(label, default) == flv], np.int64)
        self.TN = np.zeros(max(1, toff), np.int64)
        self.u = np.zeros(T, np.int64)
        self.RV = np.zeros(T, np.int64)
        self.RFREED = np.zeros(T, np.int64)
        self.MO = np.zeros((max(1, len(keys)), 4), np.int64)
        self.MO[:, 3] = -1
        off = np.concatenate([[0], np.cumsum(per_cq)]).astype(np.int64)
        self.PQ_OFF = off[:-1].copy()
        self.PQ = np.zeros(max(1, W), np.int64)
        self.PQ_N = np.zeros(T, np.int64)
        self.RQ = np.zeros(max(1, W), np.int64)
        self.RQ_OFF = self.PQ_OFF.copy()
        self.RQ_N = np.zeros(T, np.int64)
        self.RPOS = np.full(W, -1, np.int64)
        self.SL = np.zeros(max(1, W), np.int64)
        self.VA = np.zeros((max(1, W), 2), np.int64)
        self.VICT = np.zeros(W, np.int64)
        self.VL = np.zeros(max(1, W), np.int64)
        self.FIN = np.full(W, np.nan, np.float64)
        from makeway.policies.kueue.fast.layout import I_PRIO_PRE, NIS

        self.IS = np.zeros(NIS, np.int64)
        self.IS[I_PRIO_PRE] = int(model.prioritize_preemptors)
        self.caches = bool(model.caches)
        self.log_size = 8 * W + 1024  # a first guess: a run that needs more is run again with twice
        self.ln_size = 8 * toff + 1024

    def run(self, horizon: float = float("inf"), window: float = 600.0, check_lists: bool = False) -> None:
        """The whole run, up to ``horizon``, stopped where it cycles for ``window`` seconds
        (``SimOptions.no_progress_window``; the engine's default for a model without periods).
        ``check_lists``: at every call each queue's runs are checked against its pending list
        (``queues.runs_ok``; tests: an ``AssertionError`` names how many were out of step)."""
        from makeway.policies.kueue.fast.loop import I_BAD, I_CHECK, run

        self.IS[I_CHECK] = int(check_lists)

        self.LOG = np.zeros((self.log_size, 7), np.int64)
        self.LT = np.zeros(self.log_size, np.float64)
        self.LN = np.zeros(self.ln_size, np.int64)
        self.HW = np.zeros(self.log_size, np.int64)  # the heap holds at most one entry per start
        self.HT = np.zeros(self.log_size, np.float64)
        self.HS = np.zeros(self.log_size, np.int64)
        self.HG = np.zeros(self.log_size, np.int64)
        self.X = np.array([0.0, np.nan, 0.0, np.nan])  # the no-progress watch (``layout.X_*``)
        self.VF = np.zeros((len(self.wls), 2), np.float64)
        self.TOUCH = np.zeros(len(self.wls) + 1, np.int64)
        rc = run(self.TI, self.KC_OFF, self.KC, self.KQ_OFF, self.KQ, self.IS, self.WI, self.sub_t, self.dur,
                 self.adm, self.REQ, self.cap, self.used, self.TN, self.FN, self.u, self.RV, self.RFREED, self.MO,
                 self.CQO, self.PQ, self.PQ_OFF, self.PQ_N, self.RQ, self.RQ_OFF, self.RQ_N, self.RPOS, self.SL,
                 self.VA, self.VICT, self.VL, self.HW, self.HT, self.HS, self.HG,
                 self.LOG, self.LT, self.LN, self.FIN, self.X, self.VF, self.TOUCH, self.caches, float(horizon),
                 float(window))
        if rc:
            raise OverflowError("decision log full")
        if self.IS[I_BAD]:
            raise AssertionError(f"{int(self.IS[I_BAD])} queues' runs out of step with their pending lists")

    @property
    def stopped_at(self) -> float | None:
        """When the no-progress watch stopped the run, or None."""
        from makeway.policies.kueue.fast.layout import I_STOP, X_STOPPED

        return float(self.X[X_STOPPED]) if self.IS[I_STOP] else None

    def decisions(self) -> list[tuple]:
        """Per decision, in order: ``("start", call, time, workload, nodes)`` with its pods' nodes
        sorted, or ``("preempt", call, time, victim, preemptor, reason, allowBorrowing, lca)``."""
        from makeway.policies.kueue.fast.layout import I_NLOG

        out = []
        names, wls = self.node_names, self.wls
        for k in range(int(self.IS[I_NLOG])):
            kind, w, a, b, c, d, call = self.LOG[k].tolist()
            t = float(self.LT[k])
            if kind == L.L_UNWAIT:
                continue
            if kind == L.L_START:
                out.append(("start", call, t, wls[w].id, tuple(sorted(names[i] for i in self.LN[a:a + b].tolist()))))
            else:
                out.append(("preempt", call, t, wls[w].id, wls[a].id, VARIANT_REASON[b], bool(c),
                            None if d < 0 else self.tnodes[d].name))
        return out


def run(state: ClusterState, model: Any, workloads: Sequence[Workload], horizon: float = float("inf"),
        window: float = 600.0, checked: bool = False, check_lists: bool = False) -> Packed:
    """The compiled loop's whole run (``Packed.run``), its log enlarged till the run fits in it.
    ``checked``: the caller found ``unsupported`` None for these workloads already."""
    why = None if checked else unsupported(state, model, workloads)
    if why is not None:
        raise ValueError(f"the compiled Kueue loop cannot run this: {why}")
    size = None
    while True:
        p = Packed(state, model, workloads)
        if size is not None:
            p.log_size, p.ln_size = size
        try:
            p.run(horizon, window, check_lists)
        except OverflowError:
            size = (2 * p.log_size, 2 * p.ln_size)
            continue
        return p


def decisions(state: ClusterState, model: Any, workloads: Sequence[Workload], horizon: float = float("inf"),
              window: float = 600.0, check_lists: bool = False) -> tuple[list[tuple], float | None]:
    """Run the compiled loop (``run``); its decisions (``Packed.decisions``) and when the
    no-progress watch stopped it (None: it ran to the end or the horizon)."""
    p = run(state, model, workloads, horizon, window, check_lists=check_lists)
    return p.decisions(), p.stopped_at
