"""The YuniKorn simulator model: per-ask placement plus ask-triggered and required-node preemption.

Each task is an ask. Asks are walked by application priority then submit time, placed first fit
within the queue headroom, and an ask that cannot be placed runs YuniKorn's preemptor
(``preemptor``) once its leaf's ``preemption.delay`` has passed since submission. A
successful preemption reserves the node for the ask; the ask is placed when the victims are gone
(possibly on another node, as in YuniKorn). Quota-change preemption is composed in from
``quota.QuotaPreemption``; required-node preemption lives in ``required_node``.
"""

from __future__ import annotations

import heapq
from typing import Any, Mapping

from makeway.policies.yunikorn.events import preempted_by_scheduler_message
from makeway.core.decisions import Decision, Preempt, Reason, Start
from makeway.core.resources import Res, add_into
from makeway.policies.yunikorn.resources import component_wise_min, fit_in, fit_in_max_undef
from makeway.core.objects import Queue, split_task_id
from makeway.core.policy import PreemptionModel
from makeway.core.state import ClusterState
from makeway.core.placement import pending_order
from makeway.policies.yunikorn.common import (MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US, Partition,
                                              QueueProps, YAlloc, YAsk, YNode, exact, free_of, plus)
from makeway.policies.yunikorn.blocks import PARKED, Blocks, WalkKey, walk_key
from makeway.policies.yunikorn.gate import guarantee_doomed
from makeway.policies.yunikorn.preemptor import DOES_NOT_GUARANTEE, DOES_NOT_HELP, try_allocate
from makeway.policies.yunikorn.quota import QuotaPreemption
from makeway.policies.yunikorn.views import (build_partition, build_state_partition, preempting_allocs, queue_props,
                                             nonzero as _nonzero, to_us as _us)

RESERVATION_TIMEOUT_US = 3_600_000_000


class YuniKornModel(PreemptionModel):
    """YuniKorn: ask-triggered inter-queue preemption, DaemonSet preemption, composed quota preemption.

    Model-wide settings: ``preemptionEnabled`` (default true; gates ask-triggered preemption only),
    and whatever ``QuotaPreemption`` reads.

    ``schedule`` decides exactly what the reference pass (``caches: false``: rebuild the whole
    partition view, walk every ask through ``try_allocate``, no preemptor shortcut) decides, but does the work only where
    an outcome can change: asks that fit are placed through the state's free-capacity index; the
    partition view is built only when an ask is due to run the preemptor (or holds a reservation /
    a required node); a request that found no node or no headroom is not re-tried until resources
    are freed, a queue changes or a reservation goes; a call in which nothing moved and no timer is
    due returns at once.
    """

    name = "yunikorn"
    fixed_priority = ("YuniKorn takes an ask's priority from its pod at submission, and a pod's priority "
                      "cannot change in Kubernetes")

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        self.preemption_enabled = bool(self.settings.get("preemptionEnabled", True))
        self.asks: dict[str, YAsk] = {}
        self.reservations: dict[str, str] = {}
        self.reserved_at: dict[str, int] = {}
        self._wake: float | None = None
        self.quota = QuotaPreemption(self.settings)
        # fast-path caches
        self._cfg_epoch = -1
        self._props: dict[str, QueueProps] = {}
        self._maxes: dict[str, Res | None] = {}
        self._resv_released = 0
        self._nofit: dict[tuple, tuple] = {}
        self._nohead: dict[tuple, tuple] = {}
        self._quiet: tuple | None = None
        self._due_min = 0
        self.blocks = Blocks()
        self._bver: tuple | None = None
        self._xmark: int | None = None
        self._ycache: dict[str, tuple[int, YAlloc]] = {}
        self._ymarked: set[str] = set()
        self._leaves: dict[str, tuple[int, int, list[YAlloc]]] = {}
        self._cands: dict[str, tuple] = {}
        self._ynodes: dict[str, YNode] = {}
        self._names: list[str] = []
        self._sorted_names: list[str] = []
        self._topology = -1  # the state's topology epoch the node views above were made for
        # every allocation this model has had marked preempting (its own Preempt decisions), so
        # views need not scan all allocations for the flag; seeded by one scan per state
        self._pre: dict[str, None] = {}
        self._pre_state: ClusterState | None = None
        self._guars: dict[str, Res | None] = {}

    def bind(self, state: ClusterState) -> None:
        if self.quota is not None:
            self.quota.bind(state)

    def on_config_change(self, state: ClusterState, queue: str, old: Queue, now: float) -> list[Decision]:
        if self.quota is not None:
            out = list(self.quota.on_config_change(state, queue, old, now))
            self._track_preempts(state, out)
            return out
        return []

    def _track_preempts(self, state: ClusterState, decisions: list[Decision]) -> None:
        if self._pre_state is not state:
            self._pre_state = state
            self._pre = {a.id: None for a in state.allocations.values() if a.preempting}
        for d in decisions:
            if isinstance(d, Preempt):
                self._pre[d.allocation] = None

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        wakes = [w for w in (self._wake,) if w is not None and w > now]
        if self.quota is not None:
            q = self.quota.next_wakeup(state, now)
            if q is not None:
                wakes.append(q)
        return min(wakes) if wakes else None

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """An ask holding a reservation waits for its victims; one beyond its queue's headroom
        (a configured max minus allocated, on the path to the root) waits for its queue;
        otherwise the generic rules."""
        wl = state.workloads[wl_id]
        tasks = list(state.pending.get(wl_id, ()))
        for tid in tasks:
            node = self.reservations.get(tid)
            if node is not None:
                victims = sorted(t for t in state.node_allocs.get(node, ()) if state.allocations[t].preempting)
                return ("preempting", f"ask {tid} reserved node {node}; waiting for its victims to release it",
                        {"ask": tid, "node": node, "victims": victims})
        if not tasks:
            return None
        res = state.task_resources(tasks[0])
        for q in state.path_to_root(wl.queue):
            mx = _nonzero(state.queues[q].max)
            if mx is None:  # an unset root max is the cluster size: a full cluster is ``resources``
                continue
            used = state.queue_usage[q]
            room = {k: exact(v - used.get(k, 0)) for k, v in mx.items()}
            if not fit_in_max_undef(room, res):
                return ("quota", f"ask {tasks[0]} needs {dict(res)}; queue {q} has headroom {room}",
                        {"blocking": q, "headroom": room, "ask": dict(res), "max": dict(mx), "allocated": dict(used)})
        return None

    def _ask(self, state: ClusterState, tid: str) -> YAsk:
        ask = self.asks.get(tid)
        wl_id, _, _ = split_task_id(tid)
        wl = state.workloads[wl_id]
        if ask is None:
            s = wl.settings or {}
            ask = YAsk(tid, wl_id, wl.queue, dict(state.task_resources(tid)), wl.priority, _us(wl.submit),
                       bool(s.get("allowPreemptOther", True)), bool(s.get("allowPreemption", True)),
                       bool(s.get("originator", False)), str(s.get("requiredNode", "") or ""))
            self.asks[tid] = ask
        return ask

    def _quota_decisions(self, state: ClusterState, now: float, taken: set[str]) -> list[Decision]:
        decisions: list[Decision] = []
        if self.quota is not None:
            for d in self.quota.run_due(state, now):
                if isinstance(d, Preempt):
                    if d.allocation in taken:
                        continue
                    taken.add(d.allocation)
                decisions.append(d)
        return decisions

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        if not self.caches:
            return self._schedule_reference(state, now)
        return self._schedule_fast(state, now)

    def _schedule_reference(self, state: ClusterState, now: float) -> list[Decision]:
        """The plain pass every fast-path decision is checked against (tests compare event logs)."""
        taken: set[str] = set()
        decisions = self._quota_decisions(state, now, taken)
        now_us = _us(now)
        self._drop_stale(state, now_us)
        part = build_partition(state, taken)
        part.shortcuts = False
        for ask_key, node in self.reservations.items():
            if node in part.nodes:
                part.nodes[node].reserved_for = ask_key
        budgets: dict[str, list[int]] = {}
        wake: float | None = None
        running = bool(state.allocations)
        for wl_id in pending_order(state):
            for tid in list(state.pending.get(wl_id, ())):
                ask = self._ask(state, tid)
                budget = budgets.setdefault(ask.queue, [MAX_PREEMPTION_ATTEMPTS])
                r = try_allocate(part, ask, now_us, budget, self.reservations, None, self.preemption_enabled)
                if r.kind in ("Allocated", "AllocatedReserved") and r.node is not None:
                    decisions.append(Start(tid, r.node))
                    part.add_usage(ask.queue, ask.resources)
                    node = part.nodes[r.node]
                    node.used = plus(node.used, ask.resources)
                    self.asks.pop(tid, None)
                    self.reserved_at.pop(tid, None)
                    continue
                if r.victims:
                    self.reserved_at.setdefault(tid, now_us)
                    for v in r.victims:
                        if v.key in taken or v.key not in state.allocations:
                            continue
                        taken.add(v.key)
                        decisions.append(Preempt(v.key, self._reason(r.rule, ask, v, r.node)))
                wake = _min(wake, self._next_check(part.queues[ask.queue].props, ask, now_us, running))
        self._wake = wake
        return decisions

    # -- the fast pass ---------------------------------------------------------------------------

    def _refresh_config(self, state: ClusterState) -> None:
        if self._cfg_epoch != state.config_epoch:
            self._cfg_epoch = state.config_epoch
            self._props = queue_props(state)
            self._maxes = {name: _nonzero(q.max) for name, q in state.queues.items()}
            self._guars = {name: _nonzero(q.guaranteed) for name, q in state.queues.items()}

    def _schedule_fast(self, state: ClusterState, now: float) -> list[Decision]:
        taken: set[str] = set()
        decisions = self._quota_decisions(state, now, taken)
        self._track_preempts(state, decisions)
        now_us = _us(now)
        # only our own Starts take tasks out of pending; when the counts say someone else started
        # one, look for asks that went stale (alloc_epoch - freed_epoch moves by starts only)
        x = state.alloc_epoch - state.freed_epoch
        self._drop_stale(state, now_us, asks=self._xmark is None or x != self._xmark)
        self._refresh_config(state)
        key = (state.freed_epoch, state.config_epoch, state.alloc_epoch, state.submit_epoch,
               state.topology_epoch, tuple(self.reservations.items()))
        if not decisions and self._quiet == key and now_us < self._due_min:
            return []
        if len(self._nofit) + len(self._nohead) > 4096:  # entries of older versions are dead weight
            self._nofit.clear()
            self._nohead.clear()
        run = _FastPass(self, state, now_us, taken, decisions)
        self._unblock(state, now_us, run)
        try:
            run.walk()
        finally:
            for n in run.pn:
                state.refresh_index(n)
        self._track_preempts(state, decisions)
        self._bver = run.version()
        run.fold_heaps()
        self._wake = run.wake
        self._due_min = run.due_min
        self._quiet = key if not decisions else None
        self._xmark = x + sum(1 for d in decisions if isinstance(d, Start))
        return decisions

    def _unblock(self, state: ClusterState, now_us: int, run: "_FastPass") -> None:
        """Forget blocks when the version moved; release asks whose precondition time came.

        When only released resources or reservations moved it, the asks of a (queue, request)
        key that can be placed now are streamed (``Blocks``); the others stay blocked: the walk
        would find just that and block them again with the same timer. Placing only takes room,
        so nothing the walk does before reaching them can make them fit. Heap entries of asks no
        longer blocked with that timer are skipped (``Blocks.valid``)."""
        blocks = self.blocks
        ver = (state.freed_epoch, state.config_epoch, self._resv_released, state.topology_epoch)
        if self._bver != ver:
            if self._bver is None or self._bver[1] != ver[1] or self._bver[3] != ver[3]:
                blocks.clear()
                return
            blocks.restream.update(k for k in blocks.keys() if k not in blocks.restream and run.placeable(k[0], k[1]))
        for key in sorted(blocks.restream):
            wl = blocks.stream_next(state, key, None)
            if wl is not None:
                run.streams[key] = wl
        blocks.restream.clear()
        blocks.release_due(now_us)
        for leaf in blocks.parked_leaves():
            run.stream_leaf(leaf, None)

    def _reason(self, rule: str, ask: YAsk, v: YAlloc, node: str | None) -> Reason:
        return Reason("yunikorn", rule, ask.key,
                      f"{ask.key} ({ask.queue}, priority {ask.priority}) reserves {node}; "
                      f"victim {v.key} in {v.queue}",
                      {"ask_resources": dict(ask.resources), "ask_queue": ask.queue, "ask_priority": ask.priority,
                       "victim_queue": v.queue, "victim_priority": v.priority,
                       "victim_resources": dict(v.resources), "node": node,
                       "event": preempted_by_scheduler_message(ask.key, ask.app, ask.queue)})

    def _next_check(self, props: QueueProps, ask: YAsk, now_us: int, running: bool) -> float | None:
        """When this ask could next pass its preconditions, if that may change anything."""
        if ask.triggered_preemption or not ask.allow_preempt_other or ask.required_node \
                or not self.preemption_enabled:
            return None
        due = ask.create_us + props.preemption_delay_us
        if ask.last_check_us is not None:
            if not running:
                return None
            due = max(due, ask.last_check_us + PREEMPT_ATTEMPT_FREQUENCY_US)
        return due / 1_000_000 if due > now_us else None

    def _drop_stale(self, state: ClusterState, now_us: int, asks: bool = True) -> None:
        """Forget asks that are no longer pending and reservations that waited too long."""
        for tid in list(self.asks) if asks else ():
            wl_id, _, _ = split_task_id(tid)
            if tid not in state.pending.get(wl_id, {}):
                del self.asks[tid]
        for tid in list(self.reservations):
            wl_id, _, _ = split_task_id(tid)
            stale = now_us - self.reserved_at.get(tid, now_us) > RESERVATION_TIMEOUT_US
            if tid not in state.pending.get(wl_id, {}) or stale:
                del self.reservations[tid]
                self.reserved_at.pop(tid, None)
                self._resv_released += 1


class _FastPass:
    """One ``schedule`` call of the fast path; see ``YuniKornModel``.

    In-call bookkeeping mirrors what the reference pass does to its partition, with the same
    arithmetic in the same order: ``pq`` holds queue usage copies touched by starts made in this
    call, ``pn`` node usage. The partition, when it is needed, is built from the state and then
    shares these dicts, so both views stay one.
    """

    def __init__(self, model: YuniKornModel, state: ClusterState, now_us: int, taken: set[str],
                 decisions: list[Decision]):
        self.m = model
        self.state = state
        self.now_us = now_us
        self.taken = taken
        self.decisions = decisions
        self.pq: dict[str, Res] = {}
        self.pn: dict[str, Res] = {}
        self.part: Partition | None = None
        self.pre_sums: dict[str, Res] | None = None
        self.fit_memo: dict[tuple, bool] = {}
        self.room_memo: dict[str, tuple] = {}
        self.doom_memo: dict[tuple, bool] = {}
        self.doom_epoch = 0  # moved by every start and real attempt of this call
        self.rmap: dict[str, str] = {n: a for a, n in model.reservations.items()}
        self.budgets: dict[str, list[int]] = {}
        # keys being streamed (``Blocks``) -> the workload released last, not yet walked past
        self.streams: dict[tuple, str] = {}
        self.leaf_streams: dict[str, str] = {}  # the same for leaves with parked asks
        self.heap: list[WalkKey] = []
        self.queued: set[str] = set()
        self.pos: WalkKey | None = None
        self.wake: float | None = None
        self.due_min: float = float("inf")
        self.running = bool(state.allocations)
        self.index = state.free_index()
        if model._topology != state.topology_epoch:  # node order = index order; nodes joined or left
            model._topology = state.topology_epoch
            model._names = list(state.nodes)
            model._sorted_names = sorted(state.nodes)
            model._ynodes.clear()
        self.names = model._names

    def version(self) -> tuple:
        s = self.state
        return (s.freed_epoch, s.config_epoch, self.m._resv_released, s.topology_epoch)

    # -- views -------------------------------------------------------------------------------------

    def ensure_part(self) -> Partition:
        if self.part is None:
            m, state = self.m, self.state
            part = build_state_partition(state, self.taken, m._props, m._ycache, m._ymarked, m._leaves, m._cands,
                                         m._ynodes, m._pre)
            part.sorted_names = m._sorted_names
            for ask_key, node in m.reservations.items():
                if node in part.nodes:
                    part.nodes[node].reserved_for = ask_key
            for name, yq in part.queues.items():
                if name in self.pq:
                    yq.allocated = self.pq[name]
                else:
                    self.pq[name] = yq.allocated
            for n, used in self.pn.items():
                part.nodes[n].used = used
            self.part = part
        return self.part

    def headroom(self, queue: str) -> Res | None:
        state, pq, maxes = self.state, self.pq, self.m._maxes
        out: Res | None = None
        for q in state.path_to_root(queue):
            mx = maxes[q]
            if mx is None:
                if state.queues[q].parent is not None:
                    continue
                mx = state.total_capacity_cached()  # the sum Partition.cluster_size makes, same order
            a = pq[q] if q in pq else state.queue_usage[q]
            room = {k: exact(v - a.get(k, 0)) for k, v in mx.items()}
            out = component_wise_min(out, room)
        return out

    def placeable(self, queue: str, rkey: tuple) -> bool:
        """Whether the walk would start an ask of this queue and request now (before any start)."""
        res = dict(rkey)
        room = self.room_memo.get(queue)
        if room is None:
            room = self.room_memo[queue] = (self.headroom(queue),)
        if not fit_in_max_undef(room[0], res):
            return False
        fits = self.fit_memo.get(rkey)  # nothing started yet: a request's answer is the same for every queue
        if fits is None:
            fits = self.fit_memo[rkey] = self.first_fit(res) is not None
        return fits

    def first_fit(self, res: Res) -> str | None:
        """First node in order, not reserved, where ``res`` fits what the node has left in this call."""
        index, names, state, pn, rmap = self.index, self.names, self.state, self.pn, self.rmap
        for k, v in res.items():
            if v > 0 and k not in index.trees:
                return self._scan(res)
        i = 0
        while True:
            i = index.first_fit(res, i)
            if i is None:
                return None
            n = names[i]
            if n not in rmap:
                node = state.nodes[n]
                used = pn[n] if n in pn else state.node_used[n]
                if node.schedulable and fit_in(free_of(node.capacity, used), res):
                    return n
            i += 1

    def _scan(self, res: Res) -> str | None:
        state, pn, rmap = self.state, self.pn, self.rmap
        for n, node in state.nodes.items():
            if n in rmap or not node.schedulable:
                continue
            used = pn[n] if n in pn else state.node_used[n]
            if fit_in(free_of(node.capacity, used), res):
                return n
        return None

    def started(self, tid: str, queue: str, res: Res, node: str) -> None:
        self.decisions.append(Start(tid, node))
        self.doom_epoch += 1
        state, pq = self.state, self.pq
        for q in state.path_to_root(queue):
            a = pq.get(q)
            if a is None:
                a = pq[q] = dict(state.queue_usage[q])
                if self.part is not None:
                    self.part.queues[q].allocated = a
            add_into(a, res)
        used = self.pn[node] if node in self.pn else state.node_used[node]
        used = plus(used, res)
        self.pn[node] = used
        # The promise goes into the free index (only ever lowering it), so a burst of placements
        # in one call costs a tree search each instead of a walk past every node filled before it.
        # first_fit still checks ``pn`` itself, so it picks the same node; the walk's caller puts
        # the touched entries back from the state.
        index = self.index
        i = state.node_order[node]
        free = free_of(state.nodes[node].capacity, used)
        index.set(i, {r: min(v, free.get(r, 0)) for r, v in index.leaf(i).items()})
        if self.part is not None:
            self.part.nodes[node].used = used
        self.m.asks.pop(tid, None)
        self.m.reserved_at.pop(tid, None)

    # -- the walk ----------------------------------------------------------------------------------

    def walk(self) -> None:
        """Every candidate workload in pending order (a heap: streams push workloads as they go)."""
        state, m = self.state, self.m
        wls = state.workloads
        blocks = m.blocks
        blocked = blocks.blocked
        streams = self.streams
        self.start_resv = m._resv_released
        heap = self.heap = [walk_key(wls[w]) for w in blocks.candidates(state)]
        heapq.heapify(heap)
        self.queued = {wk[2] for wk in heap}  # stream heads released at the start are among them
        while heap:
            pos = self.pos = heapq.heappop(heap)
            wl_id = pos[2]
            wl = wls[wl_id]
            s = wl.settings or {}
            pinned = str(s.get("requiredNode", "") or "")
            may_preempt = bool(s.get("allowPreemptOther", True))
            props = m._props[wl.queue]
            advance: list[tuple] = []
            for tid in list(state.pending.get(wl_id, ())):
                if tid in blocked:
                    continue
                res = state.task_resources(tid)
                if tid in m.reservations and not pinned:
                    self.reserved(tid, wl.queue, res)
                    self.check_release(wl_id, tid)
                    continue
                if pinned:
                    self.slow(tid, wl_id, props, pinned)
                    self.check_release(wl_id, tid)
                    continue
                ver = self.version()
                rkey = tuple(res.items())
                hkey = (wl.queue, rkey)
                if m._nohead.get(hkey) != ver and m._nofit.get(rkey) != ver:
                    if not fit_in_max_undef(self.headroom(wl.queue), res):
                        m._nohead[hkey] = ver
                    else:
                        node = self.first_fit(res)
                        if node is not None:
                            self.started(tid, wl.queue, res, node)
                            if streams.get(hkey) == wl_id:
                                advance.append(hkey)
                            continue
                        m._nofit[rkey] = ver
                streams.pop(hkey, None)  # not placed: no later ask of this key can be in this call
                ask = m.asks.get(tid)
                if ask is not None:
                    triggered, last = ask.triggered_preemption, ask.last_check_us
                else:
                    triggered, last = False, None
                due: int | None = None
                if m.preemption_enabled and may_preempt and not triggered:
                    due = _us(wl.submit) + props.preemption_delay_us
                    if last is not None:
                        due = max(due, last + PREEMPT_ATTEMPT_FREQUENCY_US)
                    budget = self.budgets.setdefault(wl.queue, [MAX_PREEMPTION_ATTEMPTS])
                    if due <= self.now_us and budget[0] > 0:
                        if self.doomed(wl.queue, res):
                            self.doomed_attempt(tid, wl_id, props, budget)
                        else:
                            self.slow(tid, wl_id, props, pinned)
                        self.check_release(wl_id, tid)
                        continue
                if due is not None and due <= self.now_us:
                    # its leaf's attempts are spent: parked until the next call gives fresh ones
                    self.due_min = min(self.due_min, self.now_us)
                    blocks.block(tid, wl, PARKED, last is not None, hkey)
                    continue
                if due is not None:
                    self.due_min = min(self.due_min, due)
                    if last is None or self.running:
                        self.wake = _min(self.wake, due / 1_000_000)
                blocks.block(tid, wl, due, last is not None, hkey)
            for key in advance:
                if streams.get(key) == wl_id:
                    self.stream(key, pos)
            if self.leaf_streams.get(wl.queue) == wl_id:
                budget = self.budgets.get(wl.queue)
                if budget is None or budget[0] > 0:
                    self.stream_leaf(wl.queue, pos)
                else:
                    del self.leaf_streams[wl.queue]
        if blocks.nparked:
            self.due_min = min(self.due_min, self.now_us)  # the next call gives their leaves attempts
        blocks.compact(state)
        for tid, at in m.reserved_at.items():
            if tid in m.reservations:
                self.due_min = min(self.due_min, at + RESERVATION_TIMEOUT_US + 1)

    def stream_leaf(self, leaf: str, after: WalkKey | None) -> None:
        """Release the next workload with asks parked in ``leaf`` after ``after`` into the walk."""
        w = self.m.blocks.stream_parked(self.state, leaf, after)
        if w is None:
            self.leaf_streams.pop(leaf, None)
            return
        self.leaf_streams[leaf] = w
        if after is not None and w not in self.queued:
            self.queued.add(w)
            heapq.heappush(self.heap, walk_key(self.state.workloads[w]))

    def stream(self, key: tuple, after: WalkKey) -> None:
        """Release the next workload with asks blocked under ``key`` after ``after`` into the walk."""
        w = self.m.blocks.stream_next(self.state, key, after)
        if w is None:
            self.streams.pop(key, None)
            return
        self.streams[key] = w
        if w not in self.queued:
            self.queued.add(w)
            heapq.heappush(self.heap, walk_key(self.state.workloads[w]))

    def reserved(self, tid: str, queue: str, res: Res) -> None:
        """``try_allocate`` for an ask holding a reservation: its node first, then any node in order
        (reserved or not); placing it gives the reservation up. Never preempts again."""
        m, state, pn = self.m, self.state, self.pn
        if not fit_in_max_undef(self.headroom(queue), res):
            return
        node_id = m.reservations[tid]

        def fits(n: str) -> bool:
            node = state.nodes[n]
            return node.schedulable and fit_in(free_of(node.capacity, pn[n] if n in pn else state.node_used[n]), res)

        found = node_id if fits(node_id) else None
        if found is None:
            for k, v in res.items():
                if v > 0 and k not in self.index.trees:
                    found = next((n for n in self.names if n != node_id and fits(n)), None)
                    break
            else:
                i = 0
                while True:
                    i = self.index.first_fit(res, i)
                    if i is None:
                        break
                    n = self.names[i]
                    if n != node_id and fits(n):
                        found = n
                        break
                    i += 1
        if found is None:
            return
        del m.reservations[tid]
        m._resv_released += 1
        if self.part is not None:
            self.part.nodes[node_id].reserved_for = None
        self.rmap = {n: a for a, n in m.reservations.items()}
        self.started(tid, queue, res, found)

    def check_release(self, wl_id: str, tid: str) -> None:
        """After a reservation went mid-walk, the keys that can be placed now are streamed from
        here on, and from the start at the next call for the asks the walk has passed; the
        workload being walked has its asks of those keys released. Every other blocked ask still
        cannot be placed (only the reservation's node opened up) and stays as it is.

        The timers of released asks the walk has passed count now: those asks are walked again
        only at the next call."""
        m = self.m
        if m._resv_released == self.start_resv:
            return
        self.start_resv = m._resv_released
        blocks, state = m.blocks, self.state
        keys = [k for k in blocks.keys() if self.placeable_now(k[0], k[1])]
        if not keys:
            return
        tasks = list(state.pending.get(wl_id, ()))
        passed = set(tasks[:tasks.index(tid) + 1]) if tid in tasks else set(tasks)
        for key in keys:
            blocks.restream.add(key)
            for t in tasks:
                if blocks.key_of.get(t) == key:
                    due = blocks.blocked[t]
                    if t in passed and due == PARKED:
                        self.due_min = min(self.due_min, self.now_us)
                    if t in passed and due >= 0:
                        self.due_min = min(self.due_min, due)
                        ask = m.asks.get(t)
                        if self.running or ask is None or ask.last_check_us is None:
                            self.wake = _min(self.wake, due / 1_000_000)
                    blocks.release(t)
            if key not in self.streams:
                self.stream(key, self.pos)

    def placeable_now(self, queue: str, rkey: tuple) -> bool:
        """Whether an ask of this queue and request would be placed at this point of the walk."""
        res = dict(rkey)
        return fit_in_max_undef(self.headroom(queue), res) and self.first_fit(res) is not None

    def fold_heaps(self) -> None:
        """Count the timers of the asks still blocked at the end of the walk: one placed in the
        walk must leave no wake-up behind, since an extra call can decide something (an ask
        holding a reservation is placed at the next call)."""
        blocks = self.m.blocks
        for heap, counts in ((blocks.valid(blocks.heap_fresh), True),
                             (blocks.valid(blocks.heap_checked), self.running)):
            if heap:
                self.due_min = min(self.due_min, heap[0][0])
                if counts:
                    self.wake = _min(self.wake, heap[0][0] / 1_000_000)

    def doomed(self, queue: str, res: Res) -> bool:
        """Whether an unpinned ask without a reservation, due to try preemption, will be refused by
        its queue's guarantee (``gate``): decided on the queue path before any view is built.
        Kept per queue and request until this call starts an ask or makes a real attempt (what
        moves the usage or the preempting sums it reads)."""
        state, part = self.state, self.part
        key = (queue, tuple(res.items()), self.doom_epoch, part is None)
        hit = self.doom_memo.get(key)
        if hit is not None:
            return hit
        path = []
        for q in reversed(state.path_to_root(queue)):
            if part is not None:
                yq = part.queues[q]
                path.append((q, yq.allocated, yq.preempting, yq.max, yq.guaranteed))
            else:
                a = self.pq[q] if q in self.pq else state.queue_usage[q]
                path.append((q, a, self.preempting_sums().get(q, {}), self.m._maxes[q], self.m._guars[q]))
        out = self.doom_memo[key] = guarantee_doomed(path, res)
        return out

    def preempting_sums(self) -> dict[str, Res]:
        """Per queue, the resources of its subtree's allocations being preempted (as the view's
        ``preempting``), summed once per call in allocation order; only read before the view exists."""
        if self.pre_sums is None:
            state, out = self.state, {}
            for a in preempting_allocs(state, self.m._pre, self.taken):
                if a.preempting or a.id in self.taken:
                    for q in state.path_to_root(a.queue):
                        add_into(out.setdefault(q, {}), a.resources)
            self.pre_sums = out
        return self.pre_sums

    def doomed_attempt(self, tid: str, wl_id: str, props: QueueProps, budget: list[int]) -> None:
        """What ``try_allocate`` does for an ask ``doomed`` says no to: the attempt counts against
        the leaf's budget and sets the ask's check clock, then the guarantee check refuses it."""
        ask = self.m._ask(self.state, tid)
        ask.last_check_us = self.now_us
        budget[0] -= 1
        ask.log += [DOES_NOT_GUARANTEE, DOES_NOT_HELP]
        self.settle(tid, wl_id, props, "", ask)

    def slow(self, tid: str, wl_id: str, props: QueueProps, pinned: str) -> None:
        """The reference step for one ask, on the partition view."""
        m, state = self.m, self.state
        self.doom_epoch += 1
        part = self.ensure_part()
        ask = m._ask(state, tid)
        budget = self.budgets.setdefault(ask.queue, [MAX_PREEMPTION_ATTEMPTS])
        before = set(m.reservations)
        # an unpinned ask without a reservation within its headroom reaches here only after the
        # first-fit index (or its cached verdict for this version) found no unreserved node, the
        # scan try_allocate would redo; one beyond its headroom went by without it: ask the index
        no_fit = not pinned and tid not in m.reservations
        if no_fit and m._nofit.get(tuple(ask.resources.items())) != self.version():
            no_fit = self.first_fit(state.task_resources(tid)) is None
        r = try_allocate(part, ask, self.now_us, budget, m.reservations, None, m.preemption_enabled,
                         known_no_fit=no_fit)
        if before - set(m.reservations):
            m._resv_released += 1
        self.rmap = {n: a for a, n in m.reservations.items()}
        if r.kind in ("Allocated", "AllocatedReserved") and r.node is not None:
            self.started(tid, ask.queue, state.task_resources(tid), r.node)
            return
        if r.victims:
            m.reserved_at.setdefault(tid, self.now_us)
            m._ymarked.update(v.key for v in r.victims)
            for v in r.victims:
                if v.key in self.taken or v.key not in state.allocations:
                    continue
                self.taken.add(v.key)
                self.decisions.append(Preempt(v.key, m._reason(r.rule, ask, v, r.node)))
        self.settle(tid, wl_id, props, pinned, ask)

    def settle(self, tid: str, wl_id: str, props: QueueProps, pinned: str, ask: YAsk) -> None:
        """After an attempt that placed nothing: the ask's next check, the wake-up, its block."""
        m = self.m
        nxt = m._next_check(props, ask, self.now_us, self.running)
        self.wake = _min(self.wake, nxt)
        due: int | None = None
        if not (ask.triggered_preemption or not ask.allow_preempt_other or ask.required_node
                or not m.preemption_enabled):
            due = ask.create_us + props.preemption_delay_us
            if ask.last_check_us is not None:
                due = max(due, ask.last_check_us + PREEMPT_ATTEMPT_FREQUENCY_US)
            self.due_min = min(self.due_min, max(due, self.now_us))
        if not pinned and tid not in m.reservations and (due is None or due > self.now_us):
            m.blocks.block(tid, self.state.workloads[wl_id], due, ask.last_check_us is not None,
                     (ask.queue, tuple(self.state.task_resources(tid).items())))


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


__all__ = ["YuniKornModel", "build_partition", "queue_props"]
