"""YTsaurusModel: the simulator-facing model (periodic fair share, per-node heartbeats).

Mapping: makeway queues are pools (a synthetic ``<Root>`` sits above the config's roots), workloads
are operations, tasks are allocations. Pool ``weight``/``guaranteed``/``max`` are the queue's
``weight``/``guaranteed``/``max``; everything else (``mode``, starvation and preemption settings) is
read from ``queues.<q>.settings`` and the tree-level options from ``preemption.settings``.

``schedule`` only refreshes the fair share snapshot when ``fair_share_update_period`` elapsed;
placement and preemption happen in ``heartbeat`` (regular stage, then the preemptive stages under
the per-node backoff, at most one allocation started by preemption per heartbeat).

An operation with a task group that no node can hold (its resources are not within the per-resource
maximum over nodes) is failed, as YTsaurus's controller agent fails it ("No online node can satisfy
the resource demand"): it never enters the pool tree, so its demand never takes a FIFO pool's fair
share and never makes a pool starve, and a note of kind ``operation-failed`` says why.
"""

from __future__ import annotations

import functools
import gc
import math
from dataclasses import dataclass
from typing import Any, Mapping

from makeway.core.resources import EPS
from makeway.core.decisions import Decision, Note, Preempt, Reason, Start
from makeway.core.objects import Queue
from makeway.core.pending import blocking_usage
from makeway.core.policy import PreemptionModel
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import (catchup, classify, clockheap, durations, fairshare, grouping, heartbeat, integral,
                                      live, onedim, preemptive, quiet, starvation, treeops, views, waiting)
from makeway.policies.ytsaurus.classify import AP, NP, P
from makeway.errors import ConfigError
from makeway.policies.ytsaurus.schedule import HeapPicker, Picker, ReferencePicker
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

@dataclass(slots=True)
class Snapshot:
    """Everything one fair share update publishes; heartbeats read it until the next update."""

    time: float
    tree: Tree
    result: fairshare.FairShareResult
    params: dict[str, starvation.Params]
    view: starvation.StarvationView
    published: dict[str, classify.Published]


class YTsaurusModel(PreemptionModel):
    name = "ytsaurus"
    fixed_priority = ("YTsaurus orders operations by fair share and their pools' weights, not by a priority; "
                      "change the pool's weight instead")
    heartbeat_period: float | None = 5.0
    heartbeat_splay: float = 1.0
    tick_period: float | None = 0.2

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(durations.normalize(settings))
        s = self.settings
        self.update_period = float(s.get("fair_share_update_period", 0.2))
        self.tick_period = self.update_period
        if s.get("heartbeat_period") is not None:
            self.heartbeat_period = float(s["heartbeat_period"])
        if s.get("heartbeat_splay") is not None:
            self.heartbeat_splay = float(s["heartbeat_splay"])
        self.backoff = heartbeat.Backoff(float(s.get("preemptive_scheduling_backoff", 5.0)))
        self.threshold = float(s.get("preemption_satisfaction_threshold", 1.0))
        self.aggressive_threshold = float(s.get("aggressive_preemption_satisfaction_threshold", 0.2))
        self.enabled = bool(s.get("enable_preemption", True))
        self.snap: Snapshot | None = None
        self.clocks: dict[str, starvation.Clock] = {}
        self.status: dict[str, str] = {}       # allocation id -> preemption status
        self.grace: dict[str, float] = {}      # allocation id -> timeout chosen at preemption
        self.dirty = True
        self._sig: dict[str, tuple] = {}       # operation -> (snapshot stamp, allocation signature)
        self._classed: dict[str, tuple] = {}   # operation -> every input of its last classification
        self._thresholds: dict[str, tuple] = {}  # operation -> (workload, config epoch, usage threshold)
        self._group_keys: dict[str, tuple] = {}  # operation -> (element, whole units, group key)
        self._node_free: dict[str, tuple] = {}  # node -> (allocation signature, free vector, overcommitted)
        self._stamp = 0                        # bumped by every fair share update
        self._fs_key: tuple | None = None      # state epochs the last computed fair share saw
        self._integral_key: int | None = None
        self._integral_any = False
        self._limits_any = False
        self.curve_cache = fairshare.CurveCache() if self.caches else None
        self.kernel = bool(s.get("fair_share_kernel", False))
        self.closed_form = bool(s.get("fair_share_closed_form", True))  # ``onedim`` for the trees it takes
        self.groups = bool(s.get("fair_share_groups", True))
        self.batching = fairshare.Batching(min_pools=int(s.get("fair_share_batch_min_pools", 8)))
        if self.kernel and not fairshare.kernel_available():
            raise ConfigError("preemption.settings.fair_share_kernel: needs numba (pip install 'makeway[fast]')")
        self._usage_cache: dict[str, tuple[tuple[int, int], list[float]]] = {}
        self._waiting = waiting.Waiting()  # the backlog a heartbeat's stages may serve, per snapshot
        self._live_ops = live.LiveOps()  # pending or running operations, without walking finished ones
        self._tree_ops = treeops.TreeOps()  # the last tree's operations: an update walks only those that changed
        self._kept_groups = grouping.KeptGroups()  # the waiting groups, moved as operations change
        self._kept_params = starvation.KeptParams()  # the starvation parameters, likewise
        self._pos_tree: Tree | None = None
        self._pos: dict[str, int] = {}
        self._paths: dict[str, tuple[int, ...]] = {}  # each operation's positions path in ``_pos_tree``
        self._group_shapes: dict[str, tuple[Any, list[list[float]]]] = {}  # operation -> its groups' requests
        self._largest: dict[str, float] = {}  # per resource, the most one node has
        self._topology = -1  # the state's topology epoch ``_largest`` was read at
        self._sane: set[str] = set()  # operations ``_sanity`` passed at that epoch
        self._demand_cache: dict[str, tuple[tuple, list[float]]] = {}  # one-group operation -> demand and inputs
        # one-group operation -> (workload, index, (running, newest seq, pending), its tree element): an
        # element is never changed once built, so an unchanged operation's goes into the next tree as it is
        self._op_els: dict[str, tuple[Any, int, tuple[int, int, int], Element]] = {}
        self._els_topology = -1
        self._quiet_cache: tuple[tuple, Any] | None = None  # ``quiet``'s verdict and its inputs
        self._clock_heap: clockheap.ClockHeap | None = None  # the snapshot's clock thresholds
        self._graceful_ids: set[str] = set()  # operations in graceful mode that ``build_tree`` made elements of
        self._clock_sig: tuple[int, int, int] = (0, 0, 0)  # clocks running, starving, aggressive
        self._clock_next = -math.inf  # no clock of the snapshot changes status at or before this time
        self.failed: dict[str, str] = {}       # operation -> why the controller failed it
        self._failed_notes: list[Decision] = []
        ig = s.get("integral_guarantees") or {}
        self.integral = integral.IntegralConfig(
            float(ig.get("smooth_period", 60.0)), float(ig.get("pool_capacity_saturation_period", 86400.0)),
            float(ig.get("relaxed_share_multiplier_limit", 3.0)))

    # -- interface -------------------------------------------------------------------------------

    def bind(self, state: ClusterState) -> None:
        self.resources = tuple(state.resources)
        self._largest = state.largest_node_capacity()
        self._topology = state.topology_epoch

    def _sanity(self, state: ClusterState, wid: str) -> bool:
        """False (and the operation recorded as failed) when some task group of it fits no node.

        YTsaurus's ``TOperationControllerBase::CheckMinNeededResourcesSanity`` compares each task
        with pending jobs against the per-resource maximum of the exec nodes' limits and fails the
        whole operation when that maximum does not dominate the task's needs. Node capacities do not
        change during a simulated run; on a live cluster the maximum is re-read when nodes join or
        leave, but an operation once failed stays failed, as in YTsaurus.
        """
        if wid in self.failed:
            return False
        if self._topology != state.topology_epoch:
            self._largest = state.largest_node_capacity()
            self._topology = state.topology_epoch
            self._sane.clear()
        if wid in self._sane:  # passed against these nodes already (task groups never change)
            return True
        found = state.beyond_every_node(state.workloads[wid], self._largest)
        if found is not None:
            g, r, asked, most = found
            asked, most = float(asked), float(most)
            why = (f"operation {wid} failed: no node can satisfy task group {g} "
                   f"({r} {asked:g} asked, at most {most:g} on any node)")
            self.failed[wid] = why
            self._failed_notes.append(Note("operation-failed", wid, why, {
                "task_group": g, "resource": r, "asked": asked, "largest_node": most,
                "rule": "no-online-node-can-satisfy-resource-demand"}))
            return False
        if self.caches:
            self._sane.add(wid)
        return True

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        if self.snap is None or self.dirty or now >= self.snap.time + self.update_period - EPS:
            # an update allocates a few objects per element (tree, parameters, clocks) and frees
            # nothing cyclic: the cyclic collector, run meanwhile, would rescan the whole heap
            # again and again (``fairshare.compute`` pauses it the same way)
            paused = gc.isenabled()
            gc.disable()
            try:
                return self.update(state, now)
            finally:
                if paused:
                    gc.enable()
        return []

    def options(self) -> dict[str, Any]:
        return {**super().options(), "fair_share_kernel": self.kernel, "fair_share_closed_form": self.closed_form}

    def _alloc_sig(self, state: ClusterState, wid: str) -> tuple:
        running = state.running.get(wid) or {}
        return (self._stamp, len(running), state.allocations[next(reversed(running))].seq if running else 0,
                len(state.pending.get(wid) or ()))

    def allocation_status(self, state: ClusterState, tid: str) -> str | None:
        """Preemption status of a running allocation, reclassifying its operation on demand.

        Classification is lazy: an operation's prefix rule is re-run only when one of its
        allocations is looked at and its allocations (or the snapshot) changed since, so a heartbeat
        costs the allocations on its node, not every operation in the cluster.
        """
        a = state.allocations.get(tid)
        if not self.caches:
            self._sig.clear()
        if a is not None and self.snap is not None and a.workload in self.snap.published:
            if self._sig.get(a.workload) != self._alloc_sig(state, a.workload):
                self.reclassify(state, a.workload)
        return self.status.get(tid)

    def on_config_change(self, state: ClusterState, queue: str, old: Queue, now: float) -> list[Decision]:
        self.dirty = True
        return []

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        return None

    # -- idle stretches --------------------------------------------------------------------------

    def quiet(self, state: ClusterState, now: float) -> Any:
        """Periodic calls decide nothing until the next other event (True) or until a starvation
        clock may move (that time), but for the heartbeats of nodes with room for a waiting task
        (``QuietExcept``), ``ytsaurus.quiet``: the snapshot already reflects the state (so
        further updates only move its time and leave the clocks as they are), no fair share with
        integral guarantees (they accumulate with time). The verdict is kept while the fair
        share, the epochs and the clocks' statuses stay."""
        snap = self.snap
        if snap is None or self.dirty or self._failed_notes:
            return False
        key = (state.alloc_epoch, state.submit_epoch, state.config_epoch, state.freed_epoch, state.topology_epoch)
        if key != self._fs_key or self._has_integral(state):
            return False
        sig = (self._stamp, key, self._clock_sig)
        cached = self._quiet_cache
        if cached is not None and cached[0] == sig:
            return cached[1]
        verdict = quiet.quiet_until(self, state, snap)
        self._quiet_cache = (sig, verdict)
        return verdict

    def skip_periodic(self, state: ClusterState, skipped: Any) -> None:
        """Catch up on skipped quiet calls (``catchup``): the time of the last fair share update
        (the instant ``schedule`` would last have refreshed the snapshot) and each node's
        preemptive backoff."""
        snap = self.snap
        assert snap is not None
        t = catchup.last_update(snap.time, self.update_period, skipped)
        if t != snap.time:
            self.snap = Snapshot(t, snap.tree, snap.result, snap.params, snap.view, snap.published)
        if self.enabled:
            for row in skipped.beats:
                if state.nodes[row.payload].schedulable:
                    catchup.catch_up_backoff(self.backoff, row.payload, row)

    def grace_period(self, state: ClusterState, allocation: str) -> float:
        if allocation in self.grace:
            return self.grace[allocation]
        return super().grace_period(state, allocation)

    def queue_shares(self, state: ClusterState, now: float) -> dict[str, dict[str, Any]]:
        """Each pool's fair share and usage share (dominant resource) as of the last update."""
        snap = self.snap
        if snap is None:
            return {}
        return {q: {"fair_share": max(a.fair_share, default=0.0), "usage_share": max(a.usage_share, default=0.0)}
                for q, a in snap.result.attrs.items() if q in state.queues}

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """A failed operation never runs; one at its fair share waits for the pool tree's shares to
        move; a starving one gets preemptive heartbeats; pool limits are the generic ``quota``."""
        if wl_id in self.failed:
            return ("fits-nowhere", self.failed[wl_id], {"rule": "no-online-node-can-satisfy-resource-demand"})
        if blocking_usage(state, state.workloads[wl_id].queue, state.pending_demand(wl_id)) is not None:
            return None  # pool resource limits: the generic ``quota``
        snap = self.snap
        if snap is None or wl_id not in snap.result.attrs:
            return ("resources", "waiting for the next fair share update", {})
        a = snap.result.attrs[wl_id]
        clock = self.clocks.get(wl_id)
        status = starvation.NON if clock is None else clock.status
        fair, usage = max(a.fair_share, default=0.0), max(a.usage_share, default=0.0)
        values = {"fair_share": fair, "usage_share": usage, "status": status, "pool": state.workloads[wl_id].queue}
        if status != starvation.NON:
            return ("preempting" if any(al.preempting for al in state.allocations.values()) else "resources",
                    f"operation is starving ({status}) below its fair share {fair:.3g} (usage {usage:.3g}): "
                    "preemptive heartbeats may take resources for it",
                    {**values, "below_fair_share_since": clock.since if clock else None})
        if usage + EPS >= fair:
            return ("quota", f"operation is at its fair share {fair:.3g} (usage {usage:.3g}) in pool "
                             f"{values['pool']}", {**values, "blocking": values["pool"]})
        return None

    # -- fair share update ---------------------------------------------------------------------------

    def build_tree(self, state: ClusterState) -> Tree:
        res = self.resources
        # refreshed when nodes join or leave
        total = state.total_capacity_cached() if self.caches else state.total_capacity()
        tree = Tree(res, [float(total.get(r, 0)) for r in res],
                    main_resource=str(self.settings.get("main_resource", "cpu")), memo_orders=self.caches)
        tree.add(Element(ROOT, None))
        for i, q in enumerate(state.queues.values()):
            s = durations.normalize(q.settings)
            el = tree.add(Element(q.name, q.parent or ROOT, weight=float(q.weight or 1.0), guarantee=q.guaranteed,
                                  limits=q.max, mode=str(s.get("mode", "fair_share")),
                                  fifo_sort=tuple(s.get("fifo_sort_parameters", ("weight", "start_time"))),
                                  order=i, settings=dict(s), relaxed_multiplier=s.get("relaxed_share_multiplier_limit")))
            ig = s.get("integral_guarantees") or {}
            if ig.get("guarantee_type", "none") != "none":
                el.integral = {"type": ig["guarantee_type"], "flow": tree.vec(ig.get("resource_flow")),
                               "burst": tree.vec(ig.get("burst_guarantee_resources"))}
        workloads = state.workloads
        todo = self._tree_ops.todo(state) if self.caches else None  # operations changed since the last tree
        walk = todo if todo is not None else (self._live_ops.ops(state) if self.caches
                                              else ((w, i) for i, w in enumerate(workloads)))
        els, allocations = self._op_els, state.allocations
        if self._els_topology != state.topology_epoch:
            els.clear()  # sanity is re-checked against the new nodes
            self._els_topology = state.topology_epoch
        runs, pends, caches = state.running.get, state.pending.get, self.caches
        elements: dict[str, Element] = {}  # the operations walked, in walk order
        for wid, i in walk:
            wl = workloads[wid]
            running = runs(wid) or {}
            pend = pends(wid) or {}
            if not running and not pend:
                continue
            if caches:
                sig = (len(running), allocations[next(reversed(running))].seq if running else 0, len(pend))
                hit = els.get(wid)
                if hit is not None and hit[0] is wl and hit[1] == i and hit[2] == sig:
                    # the very element an unchanged operation made last time (``Tree.add`` without
                    # clearing the orders of a tree that has none yet)
                    elements[wid] = hit[3]
                    continue
            if not running and not self._sanity(state, wid):
                continue
            usage = self._op_usage(state, wid, running)
            key = (wl, tuple(usage), len(pend))
            hit = self._demand_cache.get(wid) if self.caches and len(wl.groups) == 1 else None
            if hit is not None and hit[0][0] is wl and hit[0][1:] == key[1:]:
                demand = list(hit[1])  # one task group: the same additions as last time
            else:
                demand = list(usage)
                for tid in pend:
                    rr = state.task_resources(tid)
                    for k, r in enumerate(res):
                        demand[k] += float(rr.get(r, 0))
                if self.caches and len(wl.groups) == 1:
                    self._demand_cache[wid] = (key, list(demand))
            ws = durations.normalize(wl.settings) if wl.settings else {}
            el = elements[wid] = Element(wid, wl.queue, is_op=True, weight=float(ws.get("weight", 1.0)),
                                         demand=demand, usage=usage, start_time=wl.submit, order=i,
                                         pending_count=len(pend), gang=bool(ws.get("gang")), settings=dict(ws),
                                         limits=ws.get("resource_limits"))
            if self.caches and len(wl.groups) == 1:  # one task group: (count, newest seq, pending) fix it all
                els[wid] = (wl, i, sig, el)
            if self._graceful(state, wid):
                self._graceful_ids.add(wid)
        if caches:
            ops = elements if todo is None else self._tree_ops.merge(todo, elements)
            self._tree_ops.record(state, ops, todo)
            elements = ops
        tree.elements.update(elements)
        if len(els) > 2 * len(tree.elements) + 64:
            self._op_els = {w: v for w, v in els.items() if w in tree.elements}
            # pruned with the elements: an operation outside the tree has no kept element, so its
            # next element is made afresh and recorded again
            self._graceful_ids &= tree.elements.keys()
        limit = 2 * len(tree.elements) + 64  # per-operation memos outlive finished operations
        for attr in ("_usage_cache", "_group_shapes", "_demand_cache", "_classed", "_thresholds", "_group_keys"):
            kept = getattr(self, attr)
            if len(kept) > limit:
                setattr(self, attr, {w: v for w, v in kept.items() if w in tree.elements})
        if len(self._sane) > 2 * len(tree.elements) + 64:
            self._sane &= tree.elements.keys()
        return tree

    def _op_usage(self, state: ClusterState, wid: str, running: Mapping[str, None]) -> list[float]:
        """Sum of the operation's running allocations, recomputed only when they changed.

        Allocations are appended in start order with increasing ``seq``, so (count, newest seq)
        changes whenever the set does: any start brings a new newest seq, removals alone lower the count.
        """
        sig = (len(running), state.allocations[next(reversed(running))].seq if running else 0)
        if not self.caches:
            self._usage_cache.clear()
        hit = self._usage_cache.get(wid)
        if hit is not None and hit[0] == sig:
            return list(hit[1])
        res = self.resources
        usage = [0.0] * len(res)
        for tid in running:
            a = state.allocations[tid]
            for k, r in enumerate(res):
                usage[k] += float(a.resources.get(r, 0))
        self._usage_cache[wid] = (sig, usage)
        return list(usage)

    def update(self, state: ClusterState, now: float) -> list[Decision]:
        """Recompute fair shares, starvation and the preemptible classes; notes on starvation changes."""
        self.dirty = False
        if not self.caches:  # the reference path: every update computed
            self._fs_key = self._integral_key = None
        key = (state.alloc_epoch, state.submit_epoch, state.config_epoch, state.freed_epoch, state.topology_epoch)
        snap = self.snap
        if snap is not None and key == self._fs_key and not self._has_integral(state):
            if self.caches and not self._failed_notes and now <= self._clock_next:
                # no clock changes status before ``_clock_next`` (``quiet.clock_bound``): the
                # statuses, clocks and notes would all be as they are; only the snapshot time moves
                self.snap = Snapshot(now, snap.tree, snap.result, snap.params, snap.view, snap.published)
                return []
            # nothing the fair share depends on moved: only the starvation clocks advance
            tree, result, params = snap.tree, snap.result, snap.params
            published = snap.published
            fixed = snap.view.status  # same shares and tolerances: the same statuses
            heap = self._clock_heap
            if self.caches and heap is not None and heap.tree is tree:
                got = heap.advance(snap.view, params, now)  # only the clocks whose threshold passed
                if got is not None:
                    return self._advanced(state, now, got[0], got[1])
        else:
            tree = self.build_tree(state)
            self.integral.elapsed = None if snap is None else now - snap.time
            caps = ([[float(n.capacity.get(r, 0)) for r in self.resources] for n in state.nodes.values()]
                    if self.settings.get("best_allocation_share") else None)
            delta = (self._tree_ops.changed, self._tree_ops.generation) if self.caches else None
            if self._deferrable(state, tree):
                return self._idle_update(now, tree, lambda: self._compute(tree, caps, delta), key)
            result = self._compute(tree, caps, delta)
            params = (starvation.effective_params(tree, self.settings) if delta is None
                      else self._kept_params.params(tree, self.settings, *delta))
            arr = getattr(result.attrs, "arrays", None)
            if arr is None:
                published = views.LazyPublished(tree, result.attrs)
                fixed = None
            else:
                published, fixed = views.from_arrays(arr, params)
            self._fs_key = key
            self._stamp += 1
        view = starvation.update_statuses(tree, result, params, self.clocks, now, self.settings, fixed)
        notes: list[Decision] = []
        before, after, non = self.clocks, view.clocks, starvation.NON
        for name, el in tree.elements.items():
            if el.is_op and (before.get(name, starvation._IDLE).status == non) != (after[name].status == non):
                notes.append(starvation.note(name, result, view))
        for name, c in self.clocks.items():
            if name not in tree.elements and c.status != starvation.NON and name in state.workloads:
                notes.append(Note("starvation", name, f"operation {name} stops starving (finished)",
                                  {"starving": False, "status": starvation.NON}))
        self.clocks = {n: c for n, c in view.clocks.items() if n in tree.elements}
        self._clock_sig = _clock_sig(self.clocks)
        self.snap = Snapshot(now, tree, result, params, view, published)
        if self.caches:
            self._clock_heap = clockheap.ClockHeap(tree, view.clocks, params)
            self._clock_next = self._clock_heap.bound(view.clocks)
        else:
            self._clock_next = quiet.clock_bound(self.snap)
        return self._with_failed(notes)

    def _compute(self, tree: Tree, caps: list[list[float]] | None,
                 delta: tuple[list[str] | None, int] | None = None) -> fairshare.FairShareResult:
        result = onedim.compute(tree, caps, self.integral) if self.closed_form else None
        if result is None and self.groups and not self.kernel:
            group = grouping.waiting_groups if delta is None else functools.partial(
                self._kept_groups.groups, changed=delta[0], gen=delta[1], index=self._tree_ops.index)
            result = grouping.grouped_compute(tree, caps, self.integral, self.curve_cache, self.batching,
                                              self._group_keys if self.caches else None, group)
        if result is None:
            result = fairshare.compute(tree, caps, self.integral, self.curve_cache, self.kernel, self.batching)
        return result

    def _deferrable(self, state: ClusterState, tree: Tree) -> bool:
        """Whether this update's fair share may be computed on first read (``views.DeferredResult``):
        no operation of the tree waits, so every status is ``normal`` (``views.idle_view``) and
        only a read (a preemptive stage's candidates, a report) needs the shares; no clock is
        starving, so no note needs them either. Not for the reference path, the compiled kernel
        or integral guarantees (their volumes move with every update)."""
        if not self.caches or self.kernel or self._clock_sig[1] or self._clock_sig[2] or self._has_integral(state):
            return False
        return not any(el.pending_count for el in tree.elements.values())

    def _idle_update(self, now: float, tree: Tree, compute, key: tuple) -> list[Decision]:
        """``update``'s end for a deferrable update: the same statuses, clocks, notes and bound."""
        tree.link()  # what the computation would have done to the tree first
        result = views.DeferredResult(tree, compute)
        params = views.DeferredParams(tree, self.settings)
        self._fs_key = key
        self._stamp += 1
        view = views.idle_view(tree)  # no clock was starving: every clock goes idle without a note
        self.clocks = view.clocks
        self._clock_sig = (0, 0, 0)
        self.snap = Snapshot(now, tree, result, params, view, views.LazyPublished(tree, result.attrs))
        self._clock_heap = clockheap.ClockHeap(tree, {}, params)  # no clock runs
        self._clock_next = math.inf
        return self._with_failed([])

    def _with_failed(self, notes: list[Decision]) -> list[Decision]:
        if self._failed_notes:
            notes = self._failed_notes + notes
            self._failed_notes = []
        return notes

    def _advanced(self, state: ClusterState, now: float, view: starvation.StarvationView,
                  changed: list[str]) -> list[Decision]:
        """``update``'s end where only the clocks in ``changed`` (operations, in tree order) moved
        (``clockheap``): the same notes, clocks, counts and bound as the walk over the tree."""
        snap = self.snap
        assert snap is not None and self._clock_heap is not None
        notes: list[Decision] = []
        running, starving, aggressive = self._clock_sig
        for name in changed:
            before, after = self.clocks[name].status, view.clocks[name].status
            if (before == starvation.NON) != (after == starvation.NON):
                notes.append(starvation.note(name, snap.result, view))
            starving += (after == starvation.STARVING) - (before == starvation.STARVING)
            aggressive += (after == starvation.AGGRESSIVE) - (before == starvation.AGGRESSIVE)
        self.clocks = view.clocks  # the tree's elements: the view was made over the same tree
        self._clock_sig = (running, starving, aggressive)
        self.snap = Snapshot(now, snap.tree, snap.result, snap.params, view, snap.published)
        self._clock_next = self._clock_heap.bound(view.clocks)
        return self._with_failed(notes)

    def _config_facts(self, state: ClusterState) -> None:
        """Whether some pool has integral guarantees and whether some pool has resource limits,
        read again only when the config changes."""
        if self._integral_key != state.config_epoch:
            self._integral_key = state.config_epoch
            self._integral_any = any(((q.settings or {}).get("integral_guarantees") or {}).get("guarantee_type", "none")
                                     != "none" for q in state.queues.values())
            self._limits_any = any(q.max for q in state.queues.values())

    def _has_integral(self, state: ClusterState) -> bool:
        """Integral guarantees accumulate volume with time, so their fair share is never reused."""
        self._config_facts(state)
        return self._integral_any

    def _any_limits(self, state: ClusterState) -> bool:
        self._config_facts(state)
        return self._limits_any

    def reclassify(self, state: ClusterState, wid: str, extra: dict[str, float] | None = None) -> None:
        """Prefix rule over the operation's running allocations in start order (§5)."""
        snap = self.snap
        if snap is None or wid not in snap.published:
            return
        tree = snap.tree
        running = state.running.get(wid) or {}
        thr = self._usage_threshold(state, wid, tree)
        if self.caches:
            # the statuses are a function of these alone (the allocations are fixed by their count
            # and newest seq): a new snapshot that published the same values changes none of them
            # (lists compared by value: the key is never hashed, and none of them is changed later)
            pub = snap.published[wid]
            key = (pub.fair, pub.demand, pub.preemptible, tree.total, thr, len(running),
                   state.allocations[next(reversed(running))].seq if running else 0)
            if self._classed.get(wid) == key:
                self._sig[wid] = self._alloc_sig(state, wid)
                return
            self._classed[wid] = key
        allocs = sorted((state.allocations[t] for t in running), key=lambda a: a.seq)
        out = classify.classify([(a.id, [float(a.resources.get(r, 0)) for r in self.resources]) for a in allocs],
                                snap.published[wid], tree.total, thr, self.aggressive_threshold, self.threshold)
        for a in allocs:
            if not a.preemptible:
                out[a.id] = NP
        self.status.update(out)
        self._sig[wid] = self._alloc_sig(state, wid)

    def may_preempt(self, state: ClusterState, wid: str, memo: dict | None = None) -> bool:
        """False only where no running allocation of the operation is classed ``P`` now
        (``classify.may_have_preemptible`` at its current usage, or at none for a lone
        allocation): its allocations need no classification to know the normal preemptive stage
        may not take them."""
        snap = self.snap
        if snap is None or wid not in snap.published:
            return False
        running = state.running.get(wid) or {}
        pub, thr = snap.published[wid], self._usage_threshold(state, wid, snap.tree)
        if len(running) != 1:
            return classify.may_have_preemptible(pub, self._op_usage(state, wid, running), snap.tree.total,
                                                 thr, self.threshold)
        # what decides is the usage before the newest allocation: nothing before a lone one, so
        # the verdict is the published values' (``memo``: per object, alive for the whole check)
        key = (id(pub), id(thr))
        hit = None if memo is None else memo.get(key)
        if hit is None:
            hit = classify.may_have_preemptible(pub, [0.0] * len(self.resources), snap.tree.total, thr,
                                                self.threshold)
            if memo is not None:
                memo[key] = hit
        return hit

    def _usage_threshold(self, state: ClusterState, wid: str, tree: Tree) -> list[float] | None:
        """``classify.usage_threshold`` of the operation: a function of the settings of the model,
        of its pools and of the workload, so kept per (workload object, config epoch)."""
        wl = state.workloads[wid]
        hit = self._thresholds.get(wid) if self.caches else None
        if hit is not None and hit[0] is wl and hit[1] == state.config_epoch:
            return hit[2]
        chain = [tree.elements[n].settings for n in tree.ancestors(wid)[1:] if n != ROOT]
        thr = classify.usage_threshold(self.settings, chain, wl.settings, self.resources)
        if self.caches:
            self._thresholds[wid] = (wl, state.config_epoch, thr)
        return thr

    # -- heartbeat --------------------------------------------------------------------------------

    def _vec(self, d: Mapping[str, float]) -> list[float]:
        return [float(d.get(r, 0)) for r in self.resources]

    def _positions(self, tree: Tree) -> dict[str, int]:
        """Each element's index among its parent's children (the tie-break of the regular stage)."""
        if self._pos_tree is not tree or not self.caches:
            self._pos = {c: i for el in tree.elements.values() for i, c in enumerate(el.children)}
            self._pos[ROOT] = 0
            self._paths = {}
            self._pos_tree = tree
        return self._pos

    def _within_limits(self, state: ClusterState, queue: str, req: list[float],
                       qusage: dict[str, list[float]]) -> bool:
        for q in state.path_to_root(queue):
            lim = state.queues[q].max
            if lim:
                u = qusage[q]
                for k, r in enumerate(self.resources):
                    if r in lim and lim[r] is not None and u[k] + req[k] > float(lim[r]) + EPS:
                        return False
        return True

    def _sat(self, wid: str, usage: dict[str, list[float]]) -> float:
        snap = self.snap
        assert snap is not None
        a = snap.result.attrs.get(wid)
        if a is None:  # submitted after the last update: no fair share yet
            return fairshare.INF_SAT
        return fairshare.local_satisfaction(snap.tree.share(usage[wid]), a.fair_share, a.demand_share)

    def _graceful(self, state: ClusterState, wid: str) -> bool:
        return (state.workloads[wid].settings or {}).get("preemption_mode") == "graceful"

    def heartbeat(self, state: ClusterState, node: str, now: float) -> list[Decision]:
        snap = self.snap
        if snap is None or not state.nodes[node].schedulable:
            return []
        out: list[Decision] = []
        out.extend(self._graceful_stage(state, node))
        cap = self._vec(state.nodes[node].capacity)
        used = self._vec(state.node_used[node])
        qusage, opusage = self._live_usage(state)
        started: set[str] = set()
        # regular stage
        free = [c - u for c, u in zip(cap, used)]
        published = snap.published
        if self.caches:  # free only shrinks during the stage: an operation no task of which fits
            # now is never served; the satisfaction function is made after the walk (it reads the
            # walk's values) and positions only where an operation is active
            picker = self._waiting.picker(self, state, snap, free, lambda active, start: HeapPicker(
                snap.tree, active, views.heartbeat_sat(self, opusage), self._positions(snap.tree) if active else {},
                self._paths, start))
        else:
            active = {w for w, p in state.pending.items() if p and w in published
                      and not (self._graceful(state, w) and snap.view.status.get(w) == "normal")}
            picker = self._picker(snap.tree, active, views.heartbeat_sat(self, opusage))
        while True:
            found = self.next_fitting(picker, state, free, started, qusage)
            if found is None:
                break
            pick, tid = found
            req = self._vec(state.task_resources(tid))
            out.append(Start(tid, node))
            started.add(tid)
            self._account(state, pick, req, free, qusage, opusage, -1)
            picker.changed(pick)
        if self.enabled and self.backoff.should_run(node, now):
            out.extend(preemptive.stages(self, state, node, free, qusage, opusage, started))
        if any(f < -EPS for f in free):
            out.extend(self._overcommit(state, node))
        return out

    def _picker(self, tree: Tree, active: set[str], sat) -> Picker:
        if not self.caches:
            return ReferencePicker(tree, active, sat, {})
        pos = self._positions(tree)
        return HeapPicker(tree, active, sat, pos, self._paths)

    def _groups(self, state: ClusterState, wid: str) -> list[list[float]]:
        """The operation's task groups' requests as vectors (kept per workload object)."""
        wl = state.workloads[wid]
        shapes = self._group_shapes.get(wid)
        if shapes is None or shapes[0] is not wl:
            shapes = self._group_shapes[wid] = (wl, [self._vec(g.resources) for g in wl.groups])
        return shapes[1]

    def _pending_shapes(self, state: ClusterState, wid: str, tasks) -> set[tuple[float, ...]]:
        """The distinct requests of the operation's pending ``tasks`` (non-empty): its one group's,
        or, with several groups, read task by task."""
        groups = self._groups(state, wid)
        if len(groups) == 1:
            return {tuple(groups[0])}
        return {tuple(self._vec(state.task_resources(t))) for t in tasks}

    def _live_usage(self, state: ClusterState) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        """Pool and operation usage vectors for one heartbeat, converted from the state on first use
        and then kept current by ``_account`` (without caches: all converted up front)."""
        pools, ops = views.LiveQueueUsage(self, state), views.LiveUsage(self, state)
        if not self.caches:
            return {q: pools[q] for q in state.queues}, {w: ops[w] for w in state.workloads}
        return pools, ops

    def _overcommit(self, state: ClusterState, node: str) -> list[Decision]:
        """Node usage above its limits (capacity shrank): keep oldest non-preemptible first (§6.7)."""
        cap = self._vec(state.nodes[node].capacity)
        victims = heartbeat.overcommit_victims(self._cands(state, node), cap)
        return [Preempt(c.id, Reason("ytsaurus", "node-overcommit", f"node:{node}",
                                     f"node {node} uses more than its capacity",
                                     {"victim_status": c.status, "node_capacity": dict(zip(self.resources, cap))}))
                for c in victims]

    def _account(self, state: ClusterState, wid: str, req: list[float], free: list[float],
                 qusage: dict[str, list[float]], opusage: dict[str, list[float]], sign: int,
                 pools: bool = True) -> None:
        for k in range(len(req)):
            free[k] += sign * req[k]
        if pools:
            for q in state.path_to_root(state.workloads[wid].queue):
                qusage[q] = [u - sign * r for u, r in zip(qusage[q], req)]
        if wid in opusage:
            opusage[wid] = [u - sign * r for u, r in zip(opusage[wid], req)]
            changed = getattr(opusage, "changed", None)
            if changed is not None:
                changed.add(wid)

    def next_fitting(self, picker: Picker, state: ClusterState, room: list[float], started: set[str],
                     qusage: dict[str, list[float]]) -> tuple[str, str] | None:
        """The next pick with a pending task that fits ``room``, and that task; operations with none
        are deactivated on the way."""
        while True:
            pick = picker.pick()
            if pick is None:
                return None
            tid = self._fitting_task(state, pick, room, started, qusage)
            if tid is not None:
                return pick, tid
            picker.deactivate(pick)

    def _fitting_task(self, state: ClusterState, wid: str, free: list[float], started: set[str],
                      qusage: dict[str, list[float]]) -> str | None:
        queue = state.workloads[wid].queue
        for tid in state.pending.get(wid, ()):
            if tid in started:
                continue
            req = self._vec(state.task_resources(tid))
            if heartbeat.fits(req, free) and self._within_limits(state, queue, req, qusage):
                return tid
        return None

    def _graceful_stage(self, state: ClusterState, node: str) -> list[Decision]:
        out: list[Decision] = []
        timeout = float(self.settings.get("allocation_graceful_preemption_timeout", 60.0))
        for tid in state.node_allocs[node]:
            a = state.allocations[tid]
            if a.preempting or not self._graceful(state, a.workload) or self.allocation_status(state, tid) != P:
                continue
            self.grace[tid] = float(durations.seconds(state.workloads[a.workload].settings.get(
                "allocation_graceful_preemption_timeout", timeout)))
            out.append(Preempt(tid, Reason("ytsaurus", "graceful-preemption", None,
                                            "graceful-mode operation above its fair share",
                                            {"status": P})))
        return out

    def _cands(self, state: ClusterState, node: str) -> list[heartbeat.Cand]:
        snap = self.snap
        assert snap is not None
        out = []
        for tid in state.node_allocs[node]:
            a = state.allocations[tid]
            if a.preempting:
                continue
            st = self.allocation_status(state, tid) or NP
            allow = snap.params[a.workload].allow_aggressive if a.workload in snap.params else True
            out.append(heartbeat.Cand(tid, a.workload, st, classify.preemption_level(st, allow), a.start, a.seq,
                                      self._vec(a.resources), self._graceful(state, a.workload)))
        return out

__all__ = ["YTsaurusModel", "AP", "NP", "P"]


def _clock_sig(clocks: dict[str, starvation.Clock]) -> tuple[int, int, int]:
    """Counts that change whenever a clock does while the fair share stays (clocks then only move
    forward: started, starving, aggressively starving)."""
    running = starving = aggressive = 0
    for c in clocks.values():
        if c.since is not None:
            running += 1
            if c.status == starvation.STARVING:
                starving += 1
            elif c.status == starvation.AGGRESSIVE:
                aggressive += 1
    return running, starving, aggressive
