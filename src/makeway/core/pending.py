"""Why a workload is pending now, and where it stands in its queue: one answer for every model.

A live user asks "why is my job not running?" and "how many are ahead of me?" (Kueue's
visibility API answers the second per ClusterQueue). ``explain_pending`` answers both from the
state and the model's own bookkeeping, between scheduling calls, without changing either.

Codes, checked in this order (the first that applies wins):

* ``fits-nowhere``: a task asks for more than any node (of those in the cluster) has;
* ``queue-max``: its pending demand alone exceeds the ``max`` of its queue or of an ancestor, so
  only a config change lets it start (``blocking``: that queue);
* what the model says (``PreemptionModel.pending_reason``), when it has a more precise answer;
* ``quota``: it fits the limits, but what its queue (or an ancestor) already uses leaves too
  little: it waits for work of that queue to end (models add their guarantee rules: Kueue's nominal
  quota and borrowing limits, YTsaurus's fair share, Symphony's deserved share...);
* ``preempting``: victims were chosen for it and are still inside their grace period;
* ``gang``: an all-or-nothing workload whose tasks together fit nowhere now, though one would;
* ``priority``: work ahead of it in its queue's order takes what is free;
* ``resources``: it is first in line, but no node has room for it now.

``position`` is the workload's 1-based place among the pending workloads of its leaf queue in the
model's order (``PreemptionModel.queue_order``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from makeway.core.resources import Res, add_into, fits_limit, fits_on
from makeway.core.state import ClusterState

if TYPE_CHECKING:
    from makeway.core.policy import PreemptionModel

FITS_NOWHERE = "fits-nowhere"
QUEUE_MAX = "queue-max"
QUOTA = "quota"
PREEMPTING = "preempting"
GANG = "gang"
PRIORITY = "priority"
RESOURCES = "resources"
CODES = (FITS_NOWHERE, QUEUE_MAX, QUOTA, PREEMPTING, GANG, PRIORITY, RESOURCES)

@dataclass(slots=True, frozen=True)
class PendingInfo:
    code: str
    message: str
    queue: str
    position: int
    blocking: str | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "queue": self.queue, "position": self.position,
                "blocking": self.blocking, "values": self.values}


def fits_some_node(state: ClusterState, request: Res) -> bool:
    """True when one node's whole capacity holds ``request`` (whether it is schedulable or not)."""
    for node in state.nodes.values():
        if fits_on(request, {}, node.capacity):
            return True
    return False


def blocking_max(state: ClusterState, queue: str, demand: Res) -> str | None:
    """The first queue on the path to the root whose ``max`` ``demand`` alone exceeds, or None."""
    return _blocking(state, queue, demand, with_usage=False)


def blocking_usage(state: ClusterState, queue: str, demand: Res) -> str | None:
    """The first queue on the path to the root whose ``max`` its usage plus ``demand`` exceeds."""
    return _blocking(state, queue, demand, with_usage=True)


def _blocking(state: ClusterState, queue: str, demand: Res, with_usage: bool) -> str | None:
    for q in state.path_to_root(queue):
        limit = state.queues[q].max
        if not limit:
            continue
        asked = dict(demand)
        if with_usage:
            add_into(asked, state.queue_usage[q])
        if not fits_limit(asked, limit):
            return q
    return None


def default_queue_order(state: ClusterState, queue: str) -> list[str]:
    """Pending workloads of ``queue``: priority (high first), then submit time, then id."""
    wls = state.workloads
    return sorted((w for w in state.pending if wls[w].queue == queue), key=_default_key(wls))


def _default_key(wls: Mapping[str, Any]) -> Any:
    return lambda w: (-wls[w].priority, wls[w].submit, w)


_QUEUE = attrgetter("queue")


class PendingCounts:
    """Pending workloads per queue, kept from the state's journals: a workload enters or leaves
    the pending set only by a submission, requeue or withdrawal (``pending_log``) or by the
    start of its last pending task (``run_log``), so only the workloads named there since the
    last read are looked at. Another state, or a journal trimmed past the last read, counts the
    whole backlog again."""

    __slots__ = ("counts", "_queue_of", "_state", "_pending_pos", "_run_pos")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._queue_of: dict[str, str] = {}  # the workloads counted, with their queue
        self._state: ClusterState | None = None
        self._pending_pos = self._run_pos = 0

    def read(self, state: ClusterState) -> Counter[str]:
        """The counts now (queues with none may be left out), to be read, not changed."""
        fresh = state.pending_log.since(self._pending_pos) if self._state is state else None
        started = state.run_log.since(self._run_pos) if fresh is not None else None
        wls, pending = state.workloads, state.pending
        if started is None:
            self._queue_of = {w: wls[w].queue for w in pending}
            self.counts = Counter(self._queue_of.values())
            self._state = state
        else:
            queue_of, counts = self._queue_of, self.counts
            for w in (*fresh, *started):
                if w in pending:
                    if w not in queue_of:
                        q = queue_of[w] = wls[w].queue
                        counts[q] += 1
                elif w in queue_of:
                    counts[queue_of.pop(w)] -= 1
        self._pending_pos, self._run_pos = state.pending_log.position, state.run_log.position
        return self.counts


def queue_orders(model: Any, state: ClusterState, now: float, counts: dict[str, int] | None = None,
                 known: PendingCounts | None = None) -> dict[str, list[str]]:
    """The model's ``queue_order`` of every queue with pending work, by queue name in sorted order.
    When the model keeps the default order, all of them come from one pass over the pending
    workloads instead of one per queue. ``counts``, when given, gets the number of pending
    workloads per queue (from that pass when there is one); ``known``, when given, is read for
    them instead of a pass over the backlog."""
    from makeway.core.policy import PreemptionModel

    wls = state.workloads
    if getattr(type(model), "queue_order", None) is not PreemptionModel.queue_order:
        if known is not None:
            per_queue = {q: n for q, n in known.read(state).items() if n}
        else:  # one pass in C over the backlog (thousands deep on a long trace, at every reason round)
            per_queue = Counter(map(_QUEUE, map(wls.__getitem__, state.pending)))
        if counts is not None:
            for q, n in per_queue.items():
                counts[q] = counts.get(q, 0) + n
        return {q: model.queue_order(state, q, now) for q in sorted(per_queue)}
    out: dict[str, list[str]] = {}
    for w in state.pending:
        out.setdefault(wls[w].queue, []).append(w)
    key = _default_key(wls)
    for ws in out.values():
        ws.sort(key=key)
    if counts is not None:
        counts.update((q, len(ws)) for q, ws in out.items())
    return {q: out[q] for q in sorted(out)}


def _free_fit(state: ClusterState, tasks: Iterable[str]) -> bool:
    """Whether all ``tasks`` fit the free room of schedulable nodes now (first fit, in order)."""
    promised: dict[str, Res] = {}
    for tid in tasks:
        req = state.task_resources(tid)
        for name in state.node_names:
            if not state.nodes[name].schedulable:
                continue
            if fits_on(req, state.node_used[name], state.nodes[name].capacity, promised.get(name)):
                add_into(promised.setdefault(name, {}), req)
                break
        else:
            return False
    return True


def generic_reason(state: ClusterState, wl_id: str, position: int, gang: bool,
                   victims: Iterable[str] = ()) -> tuple[str, str, dict[str, Any], str | None]:
    """(code, message, values, blocking) from the state alone, after ``fits-nowhere``."""
    wl = state.workloads[wl_id]
    demand = state.pending_demand(wl_id)
    q = blocking_usage(state, wl.queue, demand)
    if q is not None:
        return (QUOTA, f"queue {q} uses {state.queue_usage[q]} of its max {state.queues[q].max}; "
                       f"{demand} more does not fit",
                {"demand": dict(demand), "max": dict(state.queues[q].max or {}), "usage": dict(state.queue_usage[q])}, q)
    waiting = sorted(v for v in victims if v in state.allocations)
    if waiting:
        return (PREEMPTING, f"waiting for {len(waiting)} preempted allocation(s) to release their resources",
                {"victims": waiting}, None)
    tasks = list(state.pending.get(wl_id, ()))
    if gang and len(tasks) > 1 and not _free_fit(state, tasks) and _free_fit(state, tasks[:1]):
        return (GANG, f"its {len(tasks)} tasks must start together and do not all fit now", {"tasks": len(tasks)}, None)
    if position > 1:
        return (PRIORITY, f"{position - 1} workload(s) ahead of it in queue {wl.queue}", {"ahead": position - 1}, None)
    return (RESOURCES, "first in its queue; no node has room for it now", {"demand": dict(demand)}, None)


def explain_pending(state: ClusterState, model: "PreemptionModel", now: float,
                    preempting_for: Mapping[str, Iterable[str]] | None = None) -> dict[str, PendingInfo]:
    """``PendingInfo`` for every pending workload, by id (in the state's pending order).

    ``preempting_for`` (workload -> allocation ids preempted for it, from the executor's record of
    each preemption's ``Reason.preemptor``) lets a model that keeps no such record still answer
    ``preempting``. Reads only: neither the state nor the model changes.
    """
    positions: dict[str, int] = {}
    for order in queue_orders(model, state, now).values():
        for i, w in enumerate(order, 1):
            positions[w] = i
    largest = state.largest_node_capacity()
    out: dict[str, PendingInfo] = {}
    for wl_id in state.pending:
        wl = state.workloads[wl_id]
        pos = positions.get(wl_id, 0)
        bad = next((g for g, grp in enumerate(wl.groups) if grp.count > 0 and not fits_some_node(state, grp.resources)),
                   None)
        if bad is not None:
            asked = dict(wl.groups[bad].resources)
            out[wl_id] = PendingInfo(FITS_NOWHERE, f"a task of group {bad} asks {asked}, more than any node has",
                                     wl.queue, pos, None,
                                     {"task_group": bad, "asked": asked, "largest_node": largest})
            continue
        demand = state.pending_demand(wl_id)
        q = blocking_max(state, wl.queue, demand)
        if q is not None:
            out[wl_id] = PendingInfo(QUEUE_MAX, f"asks {demand}, more than the max {state.queues[q].max} of queue {q}",
                                     wl.queue, pos, q, {"demand": dict(demand), "max": dict(state.queues[q].max or {})})
            continue
        mine = model.pending_reason(state, wl_id, now)
        if mine is not None:
            code, message, values = mine
            out[wl_id] = PendingInfo(code, message, wl.queue, pos, values.get("blocking"), values)
            continue
        code, message, values, blocking = generic_reason(
            state, wl_id, pos, model.all_or_nothing, (preempting_for or {}).get(wl_id, ()))
        out[wl_id] = PendingInfo(code, message, wl.queue, pos, blocking, values)
    return out


__all__ = ["CODES", "FITS_NOWHERE", "GANG", "PREEMPTING", "PRIORITY", "PendingCounts", "PendingInfo", "QUEUE_MAX",
           "QUOTA", "RESOURCES", "blocking_max", "blocking_usage", "default_queue_order", "queue_orders",
           "explain_pending", "fits_some_node", "generic_reason"]
