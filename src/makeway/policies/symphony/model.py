"""IBM Spectrum Symphony session scheduling and session preemption as a makeway model.

Mapping (see ``docs/models/symphony.md``):

* a leaf queue is one application's **consumer**; its workloads are **sessions**;
* a **slot** is one unit of the *slot resource*: ``slots`` when the cluster declares it, else ``cpu``
  (Symphony's default host slot count is its number of CPUs), or ``preemption.settings.slotResource``.
  A node has ``floor(capacity)`` slots; a task takes ``max(1, ceil(request))`` slots;
* per consumer and per cycle the SSM recomputes each session's demand (running + pending slots),
  allocation and **deserved** share (``R_Proportion``: by session priority, capped by demand,
  surplus shared out), places pending tasks up to deserved, and then lets preemptive
  under-allocated sessions take slots from over-allocated ones (``rules``).

Session knobs (workload ``settings``, overriding the session type named by ``settings.sessionType``
in the queue's ``settings.sessionTypes``): ``preemptive`` (default false), ``preemptionRank``
(default 1), ``priority`` (else the workload priority when >= 1, else 1). Consumer knobs
(queue ``settings``, else ``preemption.settings``): ``preemptionScope``, ``preemptionCriteria``,
``slotSharing`` (``none`` or ``host``: tasks on one host share a slot for the protection rule).

Preemption is immediate (grace 0) and the interrupted task is requeued in its session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from makeway.core.decisions import Decision, Preempt, Reason, Start
from makeway.core.policy import PreemptionModel
from makeway.core.resources import EPS, Res, fits_on
from makeway.core.state import ClusterState
from makeway.core.objects import Workload
from makeway.errors import ConfigError
from makeway.policies.symphony.backlog import Backlog
from makeway.policies.symphony.holders import ConsumerHolders, pending_slots
from makeway.policies.symphony.sparse import (
    Consumer, class_counts, class_shares, consumer_cycle, deserved_total, place_in_order, waiting_view,
)
from makeway.policies.symphony.rules import (
    DEFAULT_PRIORITY, DEFAULT_RANK, SessionView, TaskView, may_preempt, normalize_criteria, normalize_scope,
    need_of, preemptors, proportional_deserved, select_victims,
)

MODEL = "symphony"
_NO_HOLDERS = ConsumerHolders()  # a consumer without holders (read only)
RULE = "rank-preemption"


@dataclass(slots=True, frozen=True)
class SessionSettings:
    session_type: str
    preemptive: bool
    rank: int
    priority: int


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "y")
    return bool(value)


def session_types(state: ClusterState, queue: str) -> dict[str, dict[str, Any]]:
    """Session types visible to a consumer: its own, then inherited from its ancestors."""
    out: dict[str, dict[str, Any]] = {}
    for q in reversed(state.path_to_root(queue)):
        out.update(state.queues[q].settings.get("sessionTypes") or {})
    return out


def session_settings(state: ClusterState, wl: Workload) -> SessionSettings:
    """A session's attributes: creation-time values (workload settings) over its session type."""
    name = str(wl.settings.get("sessionType", "") or "")
    stype = session_types(state, wl.queue).get(name) or {}
    preemptive = _bool(wl.settings.get("preemptive", stype.get("preemptive", False)))
    rank = int(wl.settings.get("preemptionRank", stype.get("preemptionRank", DEFAULT_RANK)))
    if "priority" in wl.settings:
        priority = int(wl.settings["priority"])
    elif wl.priority >= 1:
        priority = wl.priority
    else:
        priority = int(stype.get("priority", DEFAULT_PRIORITY))
    return SessionSettings(name, preemptive, rank, max(priority, 1))


def node_slots(capacity: Mapping[str, float], resource: str) -> int:
    return int(math.floor(capacity.get(resource, 0) + EPS))


def task_slots(request: Mapping[str, float], resource: str) -> int:
    return max(1, int(math.ceil(request.get(resource, 0) - EPS)))


class _SlotCache:
    """Slots per request vector. Task groups share one resources dict, so it is keyed by identity
    (the dict is kept alive in the cache, so an id is never reused while cached)."""

    __slots__ = ("resource", "_by_id")

    def __init__(self, resource: str):
        self.resource = resource
        self._by_id: dict[int, tuple[Res, int]] = {}

    def __call__(self, req: Res) -> int:
        hit = self._by_id.get(id(req))
        if hit is not None and hit[0] is req:
            return hit[1]
        n = task_slots(req, self.resource)
        self._by_id[id(req)] = (req, n)
        return n


class _Plan:
    """Virtual node usage for one cycle: starts promised and victims released, not yet applied."""

    __slots__ = ("state", "extra", "used_slots", "total_slots", "resource", "slots_of", "no_fit",
                 "consumer_allocated", "first")

    def __init__(self, state: ClusterState, slots_of: _SlotCache, total_slots: int, used_slots: int,
                 cursors: bool = True):
        """``used_slots``: 0 for a plan read only for its capacity (``consumer_capacity``).
        ``cursors``: remember where each request's first-fit scan may start (``fit``)."""
        self.state = state
        self.extra: dict[str, Res] = {}
        self.resource = slots_of.resource
        self.slots_of = slots_of
        self.total_slots = total_slots
        self.used_slots = used_slots
        self.no_fit: set[tuple] = set()  # requests no node holds in the plan as it stands (``take`` only)
        self.consumer_allocated = 0      # slots the consumer being scheduled holds in the plan
        # per request (sorted items): the position in node order before which no node holds it;
        # the plan's usage only grows between releases, so a node that did not hold it still does not
        self.first: dict[tuple, int] | None = {} if cursors else None

    def fit(self, req: Res, key: tuple | None = None) -> str | None:
        """The first schedulable node in node order that holds ``req`` in the plan; ``key``, the
        request's sorted items, lets the scan start where the last one for it ended."""
        state = self.state
        names, nodes, used, extra = state.node_names, state.nodes, state.node_used, self.extra
        first = self.first if key is not None else None
        i = first.get(key, 0) if first is not None else 0
        for i in range(i, len(names)):
            name = names[i]
            node = nodes[name]
            if node.schedulable and fits_on(req, used[name], node.capacity, extra.get(name)):
                if first is not None:
                    first[key] = i
                return name
        if first is not None:
            first[key] = len(names)
        return None

    def take(self, node: str, req: Res, sign: int = 1) -> None:
        if sign < 0:
            self.no_fit.clear()  # a release may make room for any request
            if self.first is not None:
                self.first.clear()
        extra = self.extra.setdefault(node, {})
        for k, v in req.items():
            extra[k] = extra.get(k, 0) + sign * v
        self.used_slots += sign * self.slots_of(req)


class SymphonyModel(PreemptionModel):
    """Proportional session scheduling with rank-based session preemption, per consumer."""

    name = MODEL

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        try:
            self.scope = normalize_scope(self.settings.get("preemptionScope"))
            self.criteria = normalize_criteria(self.settings.get("preemptionCriteria"))
        except ValueError as exc:
            raise ConfigError(f"preemption.settings: {exc}") from None
        self._slots: _SlotCache | None = None
        self._explained: tuple[tuple | None, dict[str, tuple[int, dict[str, SessionView]]]] = (None, {})
        self._session_cache: dict[str, tuple[tuple, SessionSettings]] = {}
        self._shares: tuple[tuple | None, dict[str, dict[str, Any]]] = (None, {})  # ``queue_shares`` and its key
        self._settings_of: tuple[tuple | None, dict[str, tuple[str, str, str]]] = (None, {})  # ``consumer_settings``
        self._backlog = Backlog()  # waiting sessions kept between calls (caches on; ``sparse``)
        self._total: tuple[tuple | None, int] = (None, 0)  # schedulable slots and their key (``_plan``)

    def _slot_counter(self, state: ClusterState) -> _SlotCache:
        """Slots per request of the slot resource: the cycle's counter when it counts that one."""
        resource = self.slot_resource(state)
        if self._slots is not None and self._slots.resource == resource:
            return self._slots
        return _SlotCache(resource)

    def _plan(self, state: ClusterState, slots_of: _SlotCache, used_slots: int = 0) -> _Plan:
        """A plan over the schedulable nodes' slots, counted once per topology while caches are on."""
        key = (id(state), state.topology_epoch, slots_of.resource)
        if not self.caches or self._total[0] != key:
            total = sum(node_slots(n.capacity, slots_of.resource) for n in state.nodes.values() if n.schedulable)
            self._total = (key, total)
        return _Plan(state, slots_of, self._total[1], used_slots, self.caches)

    def _session_settings(self, state: ClusterState, wl: Workload) -> SessionSettings:
        """``session_settings`` kept per session while its priority and the consumers' settings
        (config events) stay: every cycle reads them for every open session."""
        if not self.caches:
            return session_settings(state, wl)
        key = (id(state), state.config_epoch, wl.priority, id(wl))
        hit = self._session_cache.get(wl.id)
        if hit is not None and hit[0] == key:
            return hit[1]
        if len(self._session_cache) > 4 * len(state.workloads) + 64:
            self._session_cache = {w: v for w, v in self._session_cache.items() if w in state.workloads}
        ss = self._session_cache[wl.id] = (key, session_settings(state, wl))
        return ss[1]

    def bind(self, state: ClusterState) -> None:
        """Refuse bad consumer settings up front rather than in the middle of a simulation."""
        for name, q in state.queues.items():
            where = f"queues.{name}.settings"
            try:
                normalize_scope(q.settings.get("preemptionScope"))
                normalize_criteria(q.settings.get("preemptionCriteria"))
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            if q.settings.get("slotSharing", "none") not in ("none", "host"):
                raise ConfigError(f"{where}.slotSharing: {q.settings['slotSharing']!r} is not none or host")
            types = q.settings.get("sessionTypes") or {}
            if not isinstance(types, Mapping):
                raise ConfigError(f"{where}.sessionTypes: expected a mapping of type name -> attributes")
            for tname, spec in types.items():
                if not isinstance(spec, Mapping):
                    raise ConfigError(f"{where}.sessionTypes.{tname}: expected a mapping")
                for key in ("preemptionRank", "priority"):
                    if key in spec and (isinstance(spec[key], bool) or not isinstance(spec[key], int)):
                        raise ConfigError(f"{where}.sessionTypes.{tname}.{key}: {spec[key]!r} is not an integer")

    def grace_period(self, state: ClusterState, allocation: str) -> float:
        """Session preemption is immediate; only reclaim (not modelled here) has a grace period."""
        return 0.0

    def slot_resource(self, state: ClusterState) -> str:
        configured = self.settings.get("slotResource")
        if configured:
            return str(configured)
        return "slots" if "slots" in state.resources else "cpu"

    def consumer_settings(self, state: ClusterState, queue: str) -> tuple[str, str, str]:
        """(scope, criteria, slot sharing) of a consumer: its own settings over its ancestors' over
        the model's; read twice per consumer and cycle, so kept per config while caches are on."""
        key = (id(state), state.config_epoch)
        if self.caches:
            if self._settings_of[0] != key:
                self._settings_of = (key, {})
            hit = self._settings_of[1].get(queue)
            if hit is None:
                hit = self._settings_of[1][queue] = self._merged_settings(state, queue)
            return hit
        return self._merged_settings(state, queue)

    def _merged_settings(self, state: ClusterState, queue: str) -> tuple[str, str, str]:
        merged: dict[str, Any] = dict(self.settings)
        for q in reversed(state.path_to_root(queue)):
            merged.update({k: v for k, v in state.queues[q].settings.items()
                           if k in ("preemptionScope", "preemptionCriteria", "slotSharing")})
        return (normalize_scope(merged.get("preemptionScope")), normalize_criteria(merged.get("preemptionCriteria")),
                str(merged.get("slotSharing", "none")))

    def consumer_capacity(self, state: ClusterState, queue: str, plan: _Plan) -> int:
        cap = plan.total_slots
        for q in state.path_to_root(queue):
            limit = state.queues[q].max
            if limit is not None and plan.resource in limit:
                cap = min(cap, node_slots(limit, plan.resource))
        return cap

    def queue_order(self, state: ClusterState, queue: str, now: float) -> list[str]:
        """Sessions are served by session priority, then creation time (as ``_consumer`` does)."""
        wls = state.workloads
        return sorted((w for w in state.pending if wls[w].queue == queue),
                      key=lambda w: (-self._session_settings(state, wls[w]).priority, wls[w].submit, w))

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """A session at its deserved share that may not preempt waits for its consumer's slots."""
        wl = state.workloads[wl_id]
        capacity, s = self._explain_session(state, wl_id, now)
        values = {"consumer": wl.queue, "deserved": s.deserved, "allocated": s.allocated, "demand": s.demand,
                  "preemptive": s.preemptive, "rank": s.rank, "consumer_slots": capacity}
        if s.allocated >= s.deserved and not s.preemptive:
            return ("quota", f"session has its deserved share ({s.allocated}/{s.deserved} slots) of consumer "
                             f"{wl.queue} and is not preemptive", {**values, "blocking": wl.queue})
        if s.allocated < s.deserved and s.preemptive:
            return ("resources", f"under its deserved share ({s.allocated}/{s.deserved} slots): it preempts "
                                 "over-allocated sessions of lower rank when there are any", values)
        return None

    def queue_shares(self, state: ClusterState, now: float) -> dict[str, dict[str, Any]]:
        """Per consumer with open sessions, the slots its sessions deserve together (each session's
        ``R_Proportion`` share, capped by its demand) and hold. Read-only."""
        slots_of = self._slot_counter(state)
        resource = slots_of.resource
        key = (id(state), state.alloc_epoch, state.submit_epoch, state.config_epoch, state.topology_epoch, resource)
        if self.caches and self._shares[0] == key:  # deserved and allocated slots do not depend on ``now``
            return {q: dict(v) for q, v in self._shares[1].items()}
        plan = self._plan(state, slots_of)
        out: dict[str, dict[str, Any]] = {}
        if self.caches:  # from the class counts alone: no session is looked at
            bl = self._sync(state, slots_of)
            for queue in bl.open_consumers():
                ch = bl.table.of.get(queue) or _NO_HOLDERS
                counts = class_counts(bl.consumers.get(queue), ch.counts())
                cs = class_shares(self.consumer_capacity(state, queue, plan), counts)
                out[queue] = {"deserved_slots": deserved_total(cs, counts), "allocated_slots": ch.allocated,
                              "slot_resource": resource}
            self._shares = (key, {q: dict(v) for q, v in out.items()})
            return out
        consumers: dict[str, list[str]] = {}
        for wl_id in _open_sessions(state):
            consumers.setdefault(state.workloads[wl_id].queue, []).append(wl_id)
        for queue in sorted(consumers):
            views = self.sessions(state, queue, consumers[queue], resource, now,
                                  self.consumer_capacity(state, queue, plan))
            out[queue] = {"deserved_slots": sum(v.deserved for v in views.values()),
                          "allocated_slots": sum(v.allocated for v in views.values()), "slot_resource": resource}
        self._shares = (key, {q: dict(v) for q, v in out.items()})
        return out

    def _explain_session(self, state: ClusterState, wl_id: str, now: float) -> tuple[int, SessionView]:
        queue = state.workloads[wl_id].queue
        if not self.caches:
            capacity, views = self._explain_views(state, queue, now)
            return capacity, views[wl_id]
        stamp = (id(state), state.alloc_epoch, state.submit_epoch, state.config_epoch, state.topology_epoch, now)
        if self._explained[0] != stamp:
            self._explained = (stamp, {})
        cons = self._explained[1].get(queue)
        if cons is None:
            slots_of = self._slot_counter(state)
            bl = self._sync(state, slots_of)
            cons = self._explained[1][queue] = self._consumers(bl, state, self._plan(state, slots_of), now, False,
                                                               queue)[0][1]
        s = cons.holders.get(wl_id)
        if s is None:
            r = cons.cb.recs[wl_id]
            s = waiting_view(self, state, r, cons.deserved(wl_id, r.w, r.d))
        return cons.capacity, s

    def _consumers(self, bl: Backlog, state: ClusterState, plan: _Plan, now: float,
                   waiting_only: bool, only: str | None = None) -> list[tuple[str, Consumer]]:
        """Each consumer with open sessions (with a pending one, if ``waiting_only``: a cycle's; just
        ``only`` if given), in name order, with its shares over the backlog and holder tables
        (``sparse``, ``holders``). A pending session to explain has a view or a backlog row."""
        out = []
        for queue in ([only] if only is not None else bl.open_consumers()):
            cb = bl.consumers.get(queue)
            ch = bl.table.of.get(queue) or _NO_HOLDERS
            if waiting_only and not (cb is not None and cb.recs) and not ch.waiting:
                continue
            sharing = self.consumer_settings(state, queue)[2]
            out.append((queue, Consumer(self.consumer_capacity(state, queue, plan), ch, cb,
                                        (state, now, sharing, plan.slots_of), sharing == "host")))
        return out

    def _sync(self, state: ClusterState, slots_of: _SlotCache) -> Backlog:
        self._backlog.sync(state, slots_of.resource, lambda wl: self._session_settings(state, wl), slots_of)
        return self._backlog

    def _explain_views(self, state: ClusterState, queue: str, now: float) -> tuple[int, dict[str, SessionView]]:
        """A consumer's capacity and session views for ``pending_reason``, built once per consumer
        while nothing moved (explaining every pending session must not rebuild them per session)."""
        stamp = (id(state), state.alloc_epoch, state.submit_epoch, state.config_epoch, state.topology_epoch, now)
        if self._explained[0] != stamp:
            self._explained = (stamp, {})
        hit = self._explained[1].get(queue)
        if hit is None:
            slots_of = self._slot_counter(state)
            mine = [w for w in _open_sessions(state) if state.workloads[w].queue == queue]
            capacity = self.consumer_capacity(state, queue, self._plan(state, slots_of))
            hit = self._explained[1][queue] = (capacity, self.sessions(state, queue, mine, slots_of.resource, now,
                                                                       capacity))
        return hit

    # -- one cycle -------------------------------------------------------------------------------

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        if not state.pending:  # nothing to place and nobody with unmet demand to preempt for
            return []
        resource = self.slot_resource(state)
        if self._slots is None or self._slots.resource != resource or not self.caches:
            self._slots = _SlotCache(resource)  # without caches: slots per request counted afresh
        slots_of = self._slots
        if self.caches:
            bl = self._sync(state, slots_of)
            used = sum(ch.allocated for ch in bl.table.of.values())  # every allocation is a holder's
            plan = self._plan(state, slots_of, used)
            decisions: list[Decision] = []
            for queue, cons in self._consumers(bl, state, plan, now, True):
                decisions.extend(consumer_cycle(self, state, queue, cons, plan, now))
            return decisions
        plan = self._plan(state, slots_of, sum(slots_of(a.resources) for a in state.allocations.values()))
        consumers: dict[str, list[str]] = {}
        for wl_id in _open_sessions(state):
            consumers.setdefault(state.workloads[wl_id].queue, []).append(wl_id)
        decisions = []
        for queue in sorted(consumers):
            if not any(w in state.pending for w in consumers[queue]):
                continue
            decisions.extend(self._consumer(state, queue, consumers[queue], plan, now))
        return decisions

    def sessions(self, state: ClusterState, queue: str, workloads: Iterable[str], resource: str,
                 now: float, capacity: int, slot_sharing: str = "none") -> dict[str, SessionView]:
        """Session views of one consumer with deserved shares recomputed from current demand."""
        slots_of = self._slots if self._slots is not None and self._slots.resource == resource else _SlotCache(resource)
        views: dict[str, SessionView] = {}
        for wl_id in sorted(workloads, key=lambda w: (state.workloads[w].submit, w)):
            wl = state.workloads[wl_id]
            ss = self._session_settings(state, wl)
            tasks = []
            for tid in state.running.get(wl_id, ()):
                a = state.allocations[tid]
                label = a.node if slot_sharing == "host" else None
                tasks.append(TaskView(tid, wl_id, a.start, now - a.start, slots_of(a.resources), label,
                                      a.preemptible and not a.preempting))
            allocated = sum(t.slots for t in tasks)
            pending = pending_slots(state, wl, wl_id, slots_of)
            views[wl_id] = SessionView(wl_id, ss.rank, ss.preemptive, 0, allocated, allocated + pending,
                                       ss.priority, (wl.submit,), tasks)
        deserved = proportional_deserved(capacity, ((s.name, s.priority, s.demand) for s in views.values()))
        for name, s in views.items():
            s.deserved = deserved[name]
        return views

    def _consumer(self, state: ClusterState, queue: str, workloads: list[str], plan: _Plan,
                  now: float) -> list[Decision]:
        scope, criteria, sharing = self.consumer_settings(state, queue)
        capacity = self.consumer_capacity(state, queue, plan)
        views = self.sessions(state, queue, workloads, plan.resource, now, capacity, sharing)
        pending = {w: list(state.pending.get(w, ())) for w in views}
        out: list[Decision] = []

        def free() -> int:
            if not self.caches:
                return min(capacity - sum(s.allocated for s in views.values()), plan.total_slots - plan.used_slots)
            return min(capacity - plan.consumer_allocated, plan.total_slots - plan.used_slots)

        plan.consumer_allocated = sum(s.allocated for s in views.values())  # kept as views' allocations move
        plan.no_fit = set()

        def place(s: SessionView, budget: int | None) -> tuple[list[Start], int]:
            """Start pending tasks of ``s`` in order while slots and nodes allow, up to ``budget`` slots."""
            # identical requests that found no node: skip, don't search again (kept across sessions
            # while the plan only takes; a release clears it)
            no_fit: set[tuple] = plan.no_fit if self.caches else set()
            starts, used, pending[s.name] = place_in_order(state, plan, s, pending[s.name], free(), budget, no_fit)
            return starts, used

        order = sorted(views.values(), key=lambda s: (-s.priority, s.order, s.name))
        for s in order:  # up to the deserved share first
            starts, _ = place(s, max(0, s.deserved - s.allocated))
            out.extend(starts)
        for s in order:  # then whatever still fits (only when a deserved slot cannot be used)
            starts, _ = place(s, None)
            out.extend(starts)

        # only sessions holding tasks can be victims or slot co-tenants, and none gains a task view
        # during the cycle: each preemptor's search reads them, not the whole backlog
        holders = [s for s in views.values() if s.tasks] if self.caches else None
        # ranks whose search found no victim while it needed some: another preemptor of that rank
        # finds none either (the search reads the preemptor's rank only) until a preemption moves the views
        barren: set[int] = set()
        for p in preemptors(views.values()):
            if not p.under_allocated or not pending[p.name] or p.rank in barren:
                continue
            out.extend(self._preempt(state, queue, p, views, pending, plan, free(), scope, criteria, place, holders,
                                     barren))
        return out

    def _preempt(self, state: ClusterState, queue: str, p: SessionView, views: dict[str, SessionView],
                 pending: dict[str, list[str]], plan: _Plan, free: int, scope: str, criteria: str,
                 place: Any, holders: list[SessionView] | None = None,
                 barren: set[int] | None = None, memo: dict | None = None, shared_slots: bool = True) -> list[Decision]:
        """``memo``: selections by (rank, need, may preempt), valid while the views stand as they
        are (the caller clears it when a preemption or a start moves them): the selection reads the
        preemptor only through those. ``shared_slots``: as ``select_victims`` takes it."""
        key = (p.rank, need_of(p, free), may_preempt(p)) if memo is not None else None
        sel = memo.get(key) if memo is not None else None
        if sel is None:
            sel = select_victims(p, views.values() if holders is None else holders, free, scope, criteria,
                                 shared_slots)
            if memo is not None:
                memo[key] = sel
        if not sel.victims:
            if barren is not None and holders is not None and sel.need > 0 and may_preempt(p):
                barren.add(p.rank)
            return []
        if barren is not None:
            barren.clear()
        # as they are before any victim is taken (select_victims reads the views, never changes them)
        before = {n: (views[n].deserved, views[n].allocated) for n in {p.name, *(v.session for v in sel.victims)}}
        budget = min(p.deserved, p.demand) - p.allocated
        starts: list[Start] = []
        useful = -1
        for i, v in enumerate(sel.victims):
            alloc = state.allocations[v.id]
            plan.take(alloc.node, alloc.resources, -1)
            views[v.session].allocated -= v.slots
            plan.consumer_allocated -= v.slots
            placed, used = place(p, budget)
            if placed:
                starts.extend(placed)
                budget -= used
                useful = i
            if budget <= 0:
                break
        kept = sel.victims[:useful + 1]
        for v in sel.victims[useful + 1:i + 1]:  # freed but of no use to the preemptor: keep them
            alloc = state.allocations[v.id]
            plan.take(alloc.node, alloc.resources, 1)
            views[v.session].allocated += v.slots
            plan.consumer_allocated += v.slots
        out: list[Decision] = []
        pd, pa = before[p.name]
        for v in kept:
            vd, va = before[v.session]
            victim = views[v.session]
            victim.tasks = [t for t in victim.tasks if t.id != v.id]
            out.append(Preempt(v.id, Reason(
                model=MODEL, rule=RULE, preemptor=p.name,
                detail=(f"session {p.name} (rank {p.rank}, {pa}/{pd} slots) takes a slot of over-allocated "
                        f"session {v.session} (rank {victim.rank}, {va}/{vd} slots) in consumer {queue}"),
                values={"consumer": queue, "scope": scope, "criteria": criteria,
                        "preemptor_rank": p.rank, "victim_rank": victim.rank, "slot_rank": sel.slot_ranks[v.id],
                        "preemptor_deserved": pd, "preemptor_allocated": pa,
                        "victim_deserved": vd, "victim_allocated": va,
                        "need": sel.need, "elapsed": v.elapsed})))
        return out + starts


def _open_sessions(state: ClusterState) -> set[str]:
    """Sessions with a running allocation or a pending task (every session ever opened stays in
    ``state.workloads`` and ``state.running``; the allocations are the running ones). Callers order
    them themselves."""
    return {a.workload for a in state.allocations.values()} | set(state.pending)


def session_metrics(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per session, what Symphony's console shows: tasks interrupted and runtime lost to preemption.

    Reads the simulator's preemption events (``time``, ``allocation``, ``workload``, ``queue``,
    ``start``, ``resources``, ``reason``); events of another kind are skipped. Interruptions whose
    reason is not Symphony's rank preemption (a quota decrease, another model's rule) are counted
    as *reclaim*, the name Symphony gives to slots taken back from outside the application.
    """
    out: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.get("kind", "preempt") != "preempt":
            continue
        reason = ev.get("reason") or {}
        if not isinstance(reason, Mapping):
            reason = {"model": getattr(reason, "model", None), "rule": getattr(reason, "rule", None),
                      "preemptor": getattr(reason, "preemptor", None)}
        kind = "preemption" if reason.get("model") == MODEL and reason.get("rule") == RULE else "reclaim"
        wl = str(ev["workload"])
        m = out.setdefault(wl, {
            "queue": ev.get("queue"), "tasks_interrupted_by_preemption": 0,
            "interrupted_runtime_by_preemption": 0.0, "interrupted_runtime_by_preemption_ms": 0,
            "tasks_interrupted_by_reclaim": 0, "interrupted_runtime_by_reclaim": 0.0,
            "interrupted_runtime_by_reclaim_ms": 0, "preempted_by": {}})
        runtime = max(0.0, float(ev["time"]) - float(ev.get("start", ev["time"])))
        m[f"tasks_interrupted_by_{kind}"] += 1
        m[f"interrupted_runtime_by_{kind}"] += runtime
        m[f"interrupted_runtime_by_{kind}_ms"] = int(round(m[f"interrupted_runtime_by_{kind}"] * 1000))
        who = reason.get("preemptor")
        if who is not None:
            m["preempted_by"][str(who)] = m["preempted_by"].get(str(who), 0) + 1
    return {k: out[k] for k in sorted(out)}


__all__ = ["SymphonyModel", "SessionSettings", "node_slots", "session_metrics", "session_settings",
           "session_types", "task_slots"]
