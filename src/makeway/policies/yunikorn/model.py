"""The YuniKorn simulator model: per-ask placement plus ask-triggered and required-node preemption.

Each task is an ask. Asks are walked by application priority then submit time, placed first fit
within the queue headroom, and an ask that cannot be placed runs YuniKorn's preemptor
(``preemptor``) once its leaf's ``preemption.delay`` has passed since submission. A
successful preemption reserves the node for the ask; the ask is placed when the victims are gone
(possibly on another node, as in YuniKorn). Quota-change preemption is composed in from
``quota.QuotaPreemption``; required-node preemption lives in ``required_node``.
"""

from __future__ import annotations

from typing import Any, Mapping

from makeway.policies.yunikorn.events import preempted_by_scheduler_message
from makeway.core.decisions import Decision, Preempt, Reason, Start
from makeway.core.objects import Queue, split_task_id
from makeway.core.policy import PreemptionModel
from makeway.core.state import ClusterState
from makeway.core.placement import pending_order
from makeway.policies.yunikorn.common import (MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US, QueueProps,
                                              YAlloc, YAsk, YNode, exact, plus)
from makeway.core.resources import Res
from makeway.policies.yunikorn.blocks import Blocks
from makeway.policies.yunikorn.cohorts import repeat_refusals
from makeway.policies.yunikorn.fastpass import RESERVATION_TIMEOUT_US, _FastPass, _min
from makeway.policies.yunikorn.preemptor import try_allocate
from makeway.policies.yunikorn.quota import QuotaPreemption
from makeway.policies.yunikorn.stretch import skip_stretch
from makeway.policies.yunikorn.resources import fit_in_max_undef
from makeway.policies.yunikorn.victim_index import VictimNodeIndex
from makeway.policies.yunikorn.views import build_partition, queue_props, nonzero as _nonzero, to_us as _us


def preempt_reason(rule: str, ask: str, app: str, queue: str, priority: int, resources: Res, victim: str,
                   victim_queue: str, victim_priority: int, victim_resources: Res, node: str | None) -> Reason:
    """The Reason of a victim preempted for an ask, from plain values: the model writes it from its
    views, and what records a compiled run (``sim.fast.yunikorn_record``) from the log."""
    return Reason("yunikorn", rule, ask,
                  f"{ask} ({queue}, priority {priority}) reserves {node}; victim {victim} in {victim_queue}",
                  {"ask_resources": dict(resources), "ask_queue": queue, "ask_priority": priority,
                   "victim_queue": victim_queue, "victim_priority": victim_priority,
                   "victim_resources": dict(victim_resources), "node": node,
                   "event": preempted_by_scheduler_message(ask, app, queue)})


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

    # False: every call walks, even one that only refuses (the reference ``cohorts`` is tested against)
    closed_form_refusals = True

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
        self._node_rejects: dict[tuple, tuple] = {}
        self._vindex = VictimNodeIndex()
        self._ynodes: dict[str, YNode] = {}
        self._names: list[str] = []
        self._sorted_names: list[str] = []
        self._topology = -1  # the state's topology epoch the node views above were made for
        # every allocation this model has had marked preempting (its own Preempt decisions), so
        # views need not scan all allocations for the flag; seeded by one scan per state
        self._pre: dict[str, None] = {}
        self._pre_state: ClusterState | None = None
        self._guars: dict[str, Res | None] = {}
        self._marks = 0  # Preempt decisions seen: moves whenever an allocation may become preempting
        self._doom_world: tuple | None = None
        self._doom_cache: dict[tuple, bool] = {}
        # (queue, request items) -> (the usage ``_doom_path`` reads, the verdict), per config
        self._doom_by_usage: dict[tuple, tuple] = {}
        self._doom_paths: dict[str, tuple[str, ...]] = {}  # ``_doom_path``, per config
        self._walk_facts: dict[str, tuple] = {}  # workload -> what the walk reads of it (``fastpass._facts``)
        self._refusals: tuple[tuple | None, dict] = (None, {})  # ``cohorts`` verdicts, for one ``_fit_world``
        self._plans: tuple[int | None, dict] = (None, {})  # ``cohorts._plan``, per state
        self.cohort_repeats = 0  # calls done by ``cohorts.repeat_refusals`` (or as it would)
        self.cohort_refusals = 0  # the refusals they made
        self.parked_turns = 0  # those calls in which parked asks had their turn

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
                self._marks += 1

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        wakes = [w for w in (self._wake,) if w is not None and w > now]
        if self.quota is not None:
            q = self.quota.next_wakeup(state, now)
            if q is not None:
                wakes.append(q)
        return min(wakes) if wakes else None

    def skip_wakes(self, state: ClusterState, wakes: list[float],
                   limit: float) -> tuple[int, float, float, list[float]] | None:
        if not self.caches or not self.closed_form_refusals:
            return None
        return skip_stretch(self, state, wakes, limit)

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
        if ask is None:
            wl_id, _, _ = split_task_id(tid)
            wl = state.workloads[wl_id]
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
        # each queue's headroom, computed as try_allocate would; only a start moves it
        rooms: dict[str, tuple[Res | None]] = {}
        for wl_id in pending_order(state):
            for tid in list(state.pending.get(wl_id, ())):
                ask = self._ask(state, tid)
                budget = budgets.setdefault(ask.queue, [MAX_PREEMPTION_ATTEMPTS])
                room = rooms.get(ask.queue)
                if room is None:
                    room = rooms[ask.queue] = (part.headroom(ask.queue),)
                r = try_allocate(part, ask, now_us, budget, self.reservations, None, self.preemption_enabled,
                                 headroom=room[0])
                if r.kind in ("Allocated", "AllocatedReserved") and r.node is not None:
                    decisions.append(Start(tid, r.node))
                    rooms.clear()
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
            self._doom_by_usage, self._doom_paths = {}, {}  # both read the guarantees

    def _doom_path(self, state: ClusterState, queue: str) -> tuple[str, ...]:
        """The queues of ``queue``'s path whose usage ``gate.path_margin`` reads: from the first
        (root first) with a guarantee down to ``queue``, and ``queue`` itself. Above that queue
        every remaining guarantee is unset whatever the usage (an unset remainder above and no
        guarantee of one's own give none), so its usage moves no verdict."""
        hit = self._doom_paths.get(queue)
        if hit is None:
            path = list(reversed(state.path_to_root(queue)))
            first = next((i for i, q in enumerate(path) if self._guars[q]), len(path) - 1)
            hit = self._doom_paths[queue] = tuple(path[first:])
        return hit

    def _schedule_fast(self, state: ClusterState, now: float) -> list[Decision]:
        taken: set[str] = set()
        decisions = self._quota_decisions(state, now, taken)
        self._track_preempts(state, decisions)
        self._vindex.sync(state)
        self._vindex.marked([state.allocations[d.allocation].node for d in decisions
                             if isinstance(d, Preempt) and d.allocation in state.allocations])
        now_us = _us(now)
        # only our own Starts take tasks out of pending; when the counts say someone else started
        # one, look for asks that went stale (alloc_epoch - freed_epoch moves by starts only)
        x = state.alloc_epoch - state.freed_epoch
        self._drop_stale(state, now_us, asks=self._xmark is None or x != self._xmark)
        self._refresh_config(state)
        key = self._quiet_key(state)
        if not decisions and self._quiet == key and now_us < self._due_min:
            return []
        if not decisions and self.closed_form_refusals and repeat_refusals(self, state, now_us):
            self._quiet, self._xmark = key, x
            return []
        if len(self._nofit) + len(self._nohead) > 4096:  # entries of older versions are dead weight
            self._nofit.clear()
            self._nohead.clear()
        if len(self._walk_facts) > 2 * len(state.pending) + 4096:  # mostly workloads no longer pending
            self._walk_facts.clear()
        run = _FastPass(self, state, now_us, taken, decisions)
        self._unblock(state, now_us, run)
        try:
            run.walk()
        finally:
            for n in run.pn:
                state.refresh_index(n)
        self._track_preempts(state, decisions)
        self._vindex.decided(state, decisions)
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
        ver = self._version(state)
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
        return preempt_reason(rule, ask.key, ask.app, ask.queue, ask.priority, ask.resources, v.key, v.queue,
                              v.priority, v.resources, node)

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

    def _version(self, state: ClusterState) -> tuple:
        """What the walk's blocks and "no headroom" / "no node" verdicts hold for: only releases,
        config, reservations going and nodes moving can make an ask placeable again."""
        return (state.freed_epoch, state.config_epoch, self._resv_released, state.topology_epoch)

    def _quiet_key(self, state: ClusterState) -> tuple:
        """A call that decided nothing in this key, before any timer is due, decides nothing again."""
        return (state.freed_epoch, state.config_epoch, state.alloc_epoch, state.submit_epoch,
                state.topology_epoch, tuple(self.reservations.items()))

    def _fit_world(self, state: ClusterState) -> tuple:
        """``_world`` but for submissions, which move no placement and no guarantee verdict
        (withdrawals are counted: they take asks away)."""
        return (id(state), state.alloc_epoch, state.freed_epoch, state.config_epoch, state.topology_epoch,
                len(state.withdrawn), self._marks, tuple(self.reservations.items()))

    def _world(self, state: ClusterState) -> tuple:
        """What a preemption attempt or a guarantee verdict reads besides its own ask, at the start
        of a call: allocations, releases, submissions, queues, nodes, preempting marks (only our
        own decisions set them) and reservations. Equal worlds give equal attempts."""
        return (id(state), state.alloc_epoch, state.freed_epoch, state.submit_epoch, state.config_epoch,
                state.topology_epoch, self._marks, tuple(self.reservations.items()))

    def _drop_stale(self, state: ClusterState, now_us: int, asks: bool = True) -> None:
        """Forget asks that are no longer pending and reservations that waited too long."""
        for tid, ask in list(self.asks.items()) if asks else ():
            if tid not in state.pending.get(ask.app, {}):
                del self.asks[tid]
        for tid in list(self.reservations):
            wl_id, _, _ = split_task_id(tid)
            stale = now_us - self.reserved_at.get(tid, now_us) > RESERVATION_TIMEOUT_US
            if tid not in state.pending.get(wl_id, {}) or stale:
                del self.reservations[tid]
                self.reserved_at.pop(tid, None)
                self._resv_released += 1


__all__ = ["YuniKornModel", "build_partition", "preempt_reason", "queue_props"]
