"""The YuniKorn simulator model: per-ask placement plus ask-triggered and required-node preemption.

Each task is an ask. Asks are walked by application priority then submit time, placed first fit
within the queue headroom, and an ask that cannot be placed runs YuniKorn's preemptor
(``yunikorn_preemptor``) once its leaf's ``preemption.delay`` has passed since submission. A
successful preemption reserves the node for the ask; the ask is placed when the victims are gone
(possibly on another node, as in YuniKorn). Quota-change preemption is composed in from
``yunikorn_quota.QuotaPreemption`` when that module is available.
"""

from __future__ import annotations

from typing import Any, Mapping

from makeway.core.decisions import Decision, Preempt, Reason, Start
from makeway.core.model import Queue, split_task_id
from makeway.core.policy import PreemptionModel
from makeway.core.state import ClusterState
from makeway.policies.default import pending_order
from makeway.policies.yunikorn_common import (MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US, Partition,
                                              QueueProps, YAlloc, YAsk, YNode, YQueue, resolve_props)
from makeway.policies.yunikorn_preemptor import try_allocate

RESERVATION_TIMEOUT_US = 3_600_000_000


def _us(t: float) -> int:
    return int(round(t * 1_000_000))


def queue_props(state: ClusterState) -> dict[str, QueueProps]:
    """Effective YuniKorn properties of every queue (``settings.properties``), with inheritance."""
    out: dict[str, QueueProps] = {}
    raw: dict[str, dict[str, object]] = {}
    for root in state.roots:
        for name in state.descendants(root):
            q = state.queues[name]
            props = (q.settings or {}).get("properties") or {}
            p, merged = resolve_props({str(k): v for k, v in props.items()}, raw.get(q.parent or ""),
                                      out.get(q.parent or ""))
            out[name], raw[name] = p, merged
    return out


def build_partition(state: ClusterState, skip: set[str] | None = None) -> Partition:
    """YuniKorn's view of the cluster state; allocations in ``skip`` count as already preempted."""
    props = queue_props(state)
    queues = []
    for root in state.roots:
        for name in state.descendants(root):
            q = state.queues[name]
            queues.append(YQueue(name, q.parent, _nonzero(q.guaranteed), _nonzero(q.max), dict(state.queue_usage[name]),
                                 {}, props[name], q.is_leaf))
    nodes = [YNode(n.name, dict(n.capacity), dict(state.node_used[n.name]), n.schedulable) for n in state.nodes.values()]
    allocs = []
    for a in state.allocations.values():
        wl = state.workloads[a.workload]
        s = wl.settings or {}
        _, g, i = split_task_id(a.id)
        allocs.append(YAlloc(a.id, a.workload, a.queue, a.node, a.resources, a.priority, _us(a.start),
                             bool(s.get("originator", False)) and g == 0 and i == 0,
                             bool(s.get("allowPreemption", True)) and a.preemptible,
                             str(s.get("requiredNode", "") or ""), False,
                             a.preempting or (skip is not None and a.id in skip)))
    part = Partition(queues, nodes, allocs)
    for a in allocs:
        if a.preempted:
            part.add_preempting(a.queue, a.resources)
    return part


def _nonzero(r: Mapping[str, float] | None) -> dict | None:
    """YuniKorn stores a configured max/guaranteed without a positive value as unset."""
    if r is None or not any(v > 0 for v in r.values()):
        return None
    return dict(r)


class YuniKornModel(PreemptionModel):
    """YuniKorn: ask-triggered inter-queue preemption, DaemonSet preemption, composed quota preemption.

    Model-wide settings: ``preemptionEnabled`` (default true; gates ask-triggered preemption only),
    and whatever ``QuotaPreemption`` reads.
    """

    name = "yunikorn"

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        self.preemption_enabled = bool(self.settings.get("preemptionEnabled", True))
        self.asks: dict[str, YAsk] = {}
        self.reservations: dict[str, str] = {}
        self.reserved_at: dict[str, int] = {}
        self._wake: float | None = None
        self.quota: Any = None
        try:
            from makeway.policies.yunikorn_quota import QuotaPreemption
        except ImportError:
            QuotaPreemption = None  # noqa: N806 - the quota module may not be present
        if QuotaPreemption is not None:
            self.quota = QuotaPreemption(self.settings)

    def bind(self, state: ClusterState) -> None:
        if self.quota is not None:
            self.quota.bind(state)

    def on_config_change(self, state: ClusterState, queue: str, old: Queue, now: float) -> list[Decision]:
        if self.quota is not None:
            return list(self.quota.on_config_change(state, queue, old, now))
        return []

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        wakes = [w for w in (self._wake,) if w is not None and w > now]
        if self.quota is not None:
            q = self.quota.next_wakeup(state, now)
            if q is not None:
                wakes.append(q)
        return min(wakes) if wakes else None

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

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        decisions: list[Decision] = []
        taken: set[str] = set()
        if self.quota is not None:
            for d in self.quota.run_due(state, now):
                if isinstance(d, Preempt):
                    if d.allocation in taken:
                        continue
                    taken.add(d.allocation)
                decisions.append(d)
        now_us = _us(now)
        self._drop_stale(state, now_us)
        part = build_partition(state, taken)
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
                    node.used = {**node.used, **{k: node.used.get(k, 0) + v for k, v in ask.resources.items()}}
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
                wake = _min(wake, self._next_check(part, ask, now_us, running))
        self._wake = wake
        return decisions

    def _reason(self, rule: str, ask: YAsk, v: YAlloc, node: str | None) -> Reason:
        return Reason("yunikorn", rule, ask.key,
                      f"{ask.key} ({ask.queue}, priority {ask.priority}) reserves {node}; "
                      f"victim {v.key} in {v.queue}",
                      {"ask_resources": dict(ask.resources), "ask_queue": ask.queue, "ask_priority": ask.priority,
                       "victim_queue": v.queue, "victim_priority": v.priority,
                       "victim_resources": dict(v.resources), "node": node})

    def _next_check(self, part: Partition, ask: YAsk, now_us: int, running: bool) -> float | None:
        """When this ask could next pass its preconditions, if that may change anything."""
        if ask.triggered_preemption or not ask.allow_preempt_other or ask.required_node \
                or not self.preemption_enabled:
            return None
        due = ask.create_us + part.queues[ask.queue].props.preemption_delay_us
        if ask.last_check_us is not None:
            if not running:
                return None
            due = max(due, ask.last_check_us + PREEMPT_ATTEMPT_FREQUENCY_US)
        return due / 1_000_000 if due > now_us else None

    def _drop_stale(self, state: ClusterState, now_us: int) -> None:
        """Forget asks that are no longer pending and reservations that waited too long."""
        for tid in list(self.asks):
            wl_id, _, _ = split_task_id(tid)
            if tid not in state.pending.get(wl_id, {}):
                del self.asks[tid]
        for tid in list(self.reservations):
            wl_id, _, _ = split_task_id(tid)
            stale = now_us - self.reserved_at.get(tid, now_us) > RESERVATION_TIMEOUT_US
            if tid not in state.pending.get(wl_id, {}) or stale:
                del self.reservations[tid]
                self.reserved_at.pop(tid, None)


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


__all__ = ["YuniKornModel", "build_partition", "queue_props"]
