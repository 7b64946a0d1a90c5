"""One fast ``schedule`` call of the YuniKorn model (``_FastPass``), split out of ``model``.

It decides what the reference pass decides (see ``YuniKornModel``), doing the work only where an
outcome can change: placements through the state's free-capacity index, blocked asks streamed
back per (queue, request) key, doomed preemption attempts decided on the queue path, the partition
view built only when an ask runs the preemptor.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from makeway.core.decisions import Decision, Preempt, Start
from makeway.core.resources import Res, add_into
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.blocks import PARKED, Blocks, WalkKey, walk_key
from makeway.policies.yunikorn.common import (MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US, Partition,
                                              QueueProps, YAsk, exact, free_of, log_failure, plus)
from makeway.policies.yunikorn.gate import doomed_by, path_margin
from makeway.policies.yunikorn.preemptor import DOES_NOT_GUARANTEE, DOES_NOT_HELP, try_allocate
from makeway.policies.yunikorn.resources import component_wise_min, fit_in, fit_in_max_undef
from makeway.policies.yunikorn.views import build_state_partition, preempting_allocs, to_us as _us

if TYPE_CHECKING:
    from makeway.policies.yunikorn.model import YuniKornModel

RESERVATION_TIMEOUT_US = 3_600_000_000



class _FastPass:
    """One ``schedule`` call of the fast path; see ``YuniKornModel``.

    In-call bookkeeping mirrors what the reference pass does to its partition, with the same
    arithmetic in the same order: ``pq`` holds queue usage copies touched by starts made in this
    call, ``pn`` node usage. The partition, when it is needed, is built from the state and then
    shares these dicts, so both views stay one.
    """

    def __init__(self, model: "YuniKornModel", state: ClusterState, now_us: int, taken: set[str],
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
        # the world as the call found it (``YuniKornModel._world``); ``dirty`` once this call moved it
        self.world = model._world(state)
        self.fit_world = model._fit_world(state)
        self.dirty = bool(decisions)
        if model._doom_world != self.fit_world:  # submissions move no guarantee verdict
            model._doom_world = self.fit_world
            model._doom_cache = {}
        self.index = state.free_index()
        if model._topology != state.topology_epoch:  # node order = index order; nodes joined or left
            model._topology = state.topology_epoch
            model._names = list(state.nodes)
            model._sorted_names = sorted(state.nodes)
            model._ynodes.clear()
        self.names = model._names
        self.cohort: list[str] = []  # asks refused by their guarantee in this call: one cohort (``Blocks``)

    def version(self) -> tuple:
        return self.m._version(self.state)

    # -- views -------------------------------------------------------------------------------------

    def ensure_part(self) -> Partition:
        if self.part is None:
            m, state = self.m, self.state
            part = build_state_partition(state, self.taken, m._props, m._ycache, m._ymarked, m._leaves, m._cands,
                                         m._ynodes, m._pre)
            part.sorted_names = m._sorted_names
            part.node_rejects = m._node_rejects
            part.victim_index = m._vindex
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
        self.dirty = True
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
        pending = state.pending
        blocks = m.blocks
        blocked = blocks.blocked
        block = blocks.block
        streams = self.streams
        reservations, asks, nohead, nofit, budgets = m.reservations, m.asks, m._nohead, m._nofit, self.budgets
        now_us, enabled = self.now_us, m.preemption_enabled
        facts = m._walk_facts
        self.start_resv = m._resv_released
        heap = self.heap = [walk_key(wls[w]) for w in blocks.candidates(state)]
        heapq.heapify(heap)
        self.queued = {wk[2] for wk in heap}  # stream heads released at the start are among them
        ver = self.version()
        while heap:
            pos = self.pos = heapq.heappop(heap)
            wl_id = pos[2]
            wl = wls[wl_id]
            f = facts.get(wl_id)
            if f is None or f[0] is not wl:
                f = facts[wl_id] = _facts(wl)
            _, pinned, may_preempt, submit_us, one, one_key = f
            queue = wl.queue
            props = m._props[queue]
            due0 = submit_us + props.preemption_delay_us
            advance: list[tuple] = []
            for tid in list(pending.get(wl_id, ())):
                if tid in blocked:
                    continue
                res = one if one is not None else state.task_resources(tid)
                if pinned:
                    self.slow(tid, wl_id, props, pinned)
                    self.check_release(wl_id, tid)
                    continue
                if tid in reservations:
                    self.reserved(tid, queue, res)
                    self.check_release(wl_id, tid)
                    continue
                if ver[2] != m._resv_released:  # the state's epochs stand still within a call
                    ver = self.version()
                rkey = one_key if one is not None else tuple(res.items())
                hkey = (queue, rkey)
                if nohead.get(hkey) != ver and nofit.get(rkey) != ver:
                    if not fit_in_max_undef(self.headroom(queue), res):
                        nohead[hkey] = ver
                    else:
                        node = self.first_fit(res)
                        if node is not None:
                            self.started(tid, queue, res, node)
                            if streams.get(hkey) == wl_id:
                                advance.append(hkey)
                            continue
                        nofit[rkey] = ver
                streams.pop(hkey, None)  # not placed: no later ask of this key can be in this call
                ask = asks.get(tid)
                if ask is not None:
                    triggered, last = ask.triggered_preemption, ask.last_check_us
                else:
                    triggered, last = False, None
                due: int | None = None
                if enabled and may_preempt and not triggered:
                    due = due0
                    if last is not None and last + PREEMPT_ATTEMPT_FREQUENCY_US > due:
                        due = last + PREEMPT_ATTEMPT_FREQUENCY_US
                    budget = budgets.get(queue)
                    if budget is None:
                        budget = budgets[queue] = [MAX_PREEMPTION_ATTEMPTS]
                    if due <= now_us and budget[0] > 0:
                        if self.doomed(queue, res, rkey):
                            self.doomed_attempt(tid, wl, props, budget, hkey, ask)
                        else:
                            self.slow(tid, wl_id, props, pinned)
                        if m._resv_released != self.start_resv:
                            self.check_release(wl_id, tid)
                        continue
                if due is not None and due <= now_us:
                    # its leaf's attempts are spent: parked until the next call gives fresh ones
                    if now_us < self.due_min:
                        self.due_min = now_us
                    block(tid, wl, PARKED, last is not None, hkey)
                    continue
                if due is not None:
                    if due < self.due_min:
                        self.due_min = due
                    if last is None or self.running:
                        self.wake = _min(self.wake, due / 1_000_000)
                block(tid, wl, due, last is not None, hkey)
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
        if self.cohort:
            blocks.add_cohort(self.now_us + PREEMPT_ATTEMPT_FREQUENCY_US, self.fit_world, self.cohort)
        self.due_min, self.wake = timers(blocks, self.due_min, self.wake, self.running)

    def doomed(self, queue: str, res: Res, rkey: tuple) -> bool:
        """Whether an unpinned ask without a reservation, due to try preemption, will be refused by
        its queue's guarantee (``gate``): decided on the queue path before any view is built.
        Kept per queue and request (``rkey``: ``res`` as items) for the world until this call
        starts an ask or makes a real attempt (what moves the usage or the preempting sums it
        reads), and across worlds under the usage it reads (``_doomed``)."""
        if not self.dirty:  # the path as the call found it: the verdict of an earlier call in this world
            wkey = (queue, rkey)
            cache = self.m._doom_cache
            hit = cache.get(wkey)
            if hit is None:
                hit = cache[wkey] = self._doomed(queue, res, (queue, rkey, self.doom_epoch, self.part is None))
            return hit
        return self._doomed(queue, res, (queue, rkey, self.doom_epoch, self.part is None))

    def _doomed(self, queue: str, res: Res, key: tuple) -> bool:
        hit = self.doom_memo.get(key)
        if hit is not None:
            return hit
        # the verdict reads only the usage of the path's queues from the first with a guarantee
        # down (``YuniKornModel._doom_path``): kept under that usage across calls and worlds
        usage = self._path_usage(queue)
        kept = self.m._doom_by_usage
        ukey = (queue, key[1])
        hit = kept.get(ukey)
        if hit is not None and hit[0] == usage:
            out = hit[1]
        else:
            out = doomed_by(path_margin(self._path(queue)), res)
            if len(kept) >= 4096:  # requests long gone: a bound, not a working set
                kept.clear()
            kept[ukey] = ([(dict(a), dict(p)) for a, p in usage], out)
        self.doom_memo[key] = out
        return out

    def _path_usage(self, queue: str) -> list[tuple[Res, Res]]:
        """(allocated, preempting) of each queue of ``_doom_path`` as ``_path`` reads them."""
        part, names = self.part, self.m._doom_path(self.state, queue)
        if part is not None:
            return [(part.queues[q].allocated or {}, part.queues[q].preempting or {}) for q in names]
        pq, usage, pre = self.pq, self.state.queue_usage, self.preempting_sums()
        return [(pq[q] if q in pq else usage[q], pre.get(q, {})) for q in names]

    def _path(self, queue: str) -> list:
        """The queue path ``gate`` reads, root first, as this point of the call sees it."""
        state, part = self.state, self.part
        path = []
        for q in reversed(state.path_to_root(queue)):
            if part is not None:
                yq = part.queues[q]
                path.append((q, yq.allocated, yq.preempting, yq.max, yq.guaranteed))
            else:
                a = self.pq[q] if q in self.pq else state.queue_usage[q]
                path.append((q, a, self.preempting_sums().get(q, {}), self.m._maxes[q], self.m._guars[q]))
        return path

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

    def doomed_attempt(self, tid: str, wl: Any, props: QueueProps, budget: list[int], hkey: tuple,
                       ask: YAsk | None) -> None:
        """What ``try_allocate`` does for an ask ``doomed`` says no to: the attempt counts against
        the leaf's budget and sets the ask's check clock, then the guarantee check refuses it.
        Then ``settle`` for it, whose tests the walk has passed (may preempt, not triggered, not
        pinned, no reservation): its next check is 15 s on at the earliest, a wake while running."""
        if ask is None:
            ask = self.m._ask(self.state, tid)
        now = self.now_us
        ask.last_check_us = now
        budget[0] -= 1
        log_failure(ask, DOES_NOT_GUARANTEE, DOES_NOT_HELP)
        due = max(ask.create_us + props.preemption_delay_us, now + PREEMPT_ATTEMPT_FREQUENCY_US)
        if self.running:
            self.wake = _min(self.wake, due / 1_000_000)
        if due < self.due_min:
            self.due_min = due
        alike = due == now + PREEMPT_ATTEMPT_FREQUENCY_US
        if alike:
            self.cohort.append(tid)
        self.m.blocks.block(tid, wl, due, True, hkey, timer=not alike)

    def slow(self, tid: str, wl_id: str, props: QueueProps, pinned: str) -> None:
        """The reference step for one ask, on the partition view."""
        m, state = self.m, self.state
        memo = not pinned and not self.dirty and tid not in m.reservations
        ask = m._ask(state, tid)
        budget = self.budgets.setdefault(ask.queue, [MAX_PREEMPTION_ATTEMPTS])
        if memo and ask.failed is not None and ask.failed[0] == self.world:
            self.replay(ask, budget, ask.failed)
            self.settle(tid, wl_id, props, pinned, ask)
            return
        self.doom_epoch += 1
        part = self.ensure_part()
        before = set(m.reservations)
        marks = (dict(ask.log), budget[0], ask.last_check_us)
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
        if r.kind is not None or r.victims or before != set(m.reservations):
            self.dirty = True
        elif memo:
            logged = marks[0]
            added = {k: n - logged.get(k, 0) for k, n in ask.log.items() if n != logged.get(k, 0)}
            ask.failed = (self.world, added, marks[1] - budget[0], ask.last_check_us != marks[2])
        self.rmap = {n: a for a, n in m.reservations.items()}
        if r.kind in ("Allocated", "AllocatedReserved") and r.node is not None:
            self.started(tid, ask.queue, state.task_resources(tid), r.node)
            return
        if r.victims:
            m._vindex.marked([v.node for v in r.victims])
            m.reserved_at.setdefault(tid, self.now_us)
            m._ymarked.update(v.key for v in r.victims)
            for v in r.victims:
                if v.key in self.taken or v.key not in state.allocations:
                    continue
                self.taken.add(v.key)
                self.decisions.append(Preempt(v.key, m._reason(r.rule, ask, v, r.node)))
        self.settle(tid, wl_id, props, pinned, ask)

    def replay(self, ask: YAsk, budget: list[int], failed: tuple) -> None:
        """An attempt that failed in this world without moving it fails again the same way: it
        reads only the world, the ask and the preconditions the walk checked (``world``)."""
        _, added, spent, clocked = failed
        log = ask.log
        for k, n in added.items():
            log[k] = log.get(k, 0) + n
        budget[0] -= spent
        if clocked:
            ask.last_check_us = self.now_us

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


def _facts(wl: Any) -> tuple:
    """What the walk reads of a workload at every visit, read once: (the workload, its pinned node,
    whether it may preempt, its submit time in µs, and the request every task shares with its
    items when it has one task group, else None and ())."""
    s = wl.settings or {}
    one = wl.groups[0].resources if len(wl.groups) == 1 else None
    return (wl, str(s.get("requiredNode", "") or ""), bool(s.get("allowPreemptOther", True)), _us(wl.submit),
            one, tuple(one.items()) if one is not None else ())


def timers(blocks: Blocks, due_min: float, wake: float | None, running: bool) -> tuple[float, float | None]:
    """``due_min`` and ``wake`` lowered by the earliest timer of the asks still blocked: a fresh
    ask's always wakes the model, a checked ask's (or a cohort's) only while something runs."""
    for heap, counts in ((blocks.valid(blocks.heap_fresh), True), (blocks.valid(blocks.heap_checked), running)):
        if heap:
            due_min = min(due_min, heap[0][0])
            if counts:
                wake = _min(wake, heap[0][0] / 1_000_000)
    cohort = blocks.cohort_top()
    if cohort is not None:
        due_min = min(due_min, cohort.due)
        if running:
            wake = _min(wake, cohort.due / 1_000_000)
    return due_min, wake


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


__all__ = ["RESERVATION_TIMEOUT_US", "_FastPass", "_min", "timers"]
