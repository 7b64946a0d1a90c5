"""Why a workload was still unfinished when a run ended: one code per workload, the same for every model.

A results file that lists a workload as never finished should say whether waiting longer would
have helped. The codes are generic, read from the final state alone, and checked in this order
(the first that applies wins):

* ``unplaceable``: a task asks for more than any single node has, so it can never start;
* ``queue-max``: what the workload still has to start exceeds, on its own, the ``max`` of its queue
  or of an ancestor (limits as they were at the end of the run), so it waits for a config change;
* ``horizon`` / ``no-progress``: the run stopped early, cut by ``--horizon`` or by the engine when the
  model could make no progress (``Recorder.stopped_reason``);
* ``waiting``: otherwise; resources or quota were held by others.

These codes are part of the results schema and stay as they are; the live service's finer,
per-model reasons and queue positions are ``makeway.core.pending`` (whose helpers these share).
"""

from __future__ import annotations

from typing import Any

from makeway.core.objects import Workload
from makeway.core.pending import (FITS_NOWHERE, PendingCounts, blocking_max, fits_some_node, generic_reason,
                                  queue_orders)
from makeway.core.pending import QUEUE_MAX as QUEUE_MAX_CODE
from makeway.core.state import ClusterState

UNPLACEABLE = "unplaceable"
QUEUE_MAX = "queue-max"
HORIZON = "horizon"
NO_PROGRESS = "no-progress"
WAITING = "waiting"
CODES = (UNPLACEABLE, QUEUE_MAX, HORIZON, NO_PROGRESS, WAITING)


def pending_reason(state: ClusterState, wl: Workload, stopped: str | None) -> str:
    """The code for one unfinished workload (see the module docstring)."""
    if any(g.count > 0 and not fits_some_node(state, g.resources) for g in wl.groups):
        return UNPLACEABLE
    demand = state.pending_demand(wl.id)
    if demand and blocking_max(state, wl.queue, demand) is not None:
        return QUEUE_MAX
    code = stopped.split(":", 1)[0] if stopped else None  # "no-progress: <what the engine saw>"
    if code in (HORIZON, NO_PROGRESS):
        return code
    return WAITING


def pending_reasons(state: ClusterState, unfinished: list[str], stopped: str | None) -> dict[str, str]:
    """Codes for the given unfinished workloads, by id."""
    wls = state.workloads
    return {w: pending_reason(state, wls[w], stopped) for w in unfinished}


__all__ = ["CODES", "HORIZON", "NO_PROGRESS", "QUEUE_MAX", "UNPLACEABLE", "WAITING", "ReasonLog", "RoundClock", "blocking_max",
           "fits_some_node", "pending_reason", "pending_reasons"]


# -- reasons over time ------------------------------------------------------------------------------

class RoundClock:
    """The grid the reason rounds run on: ``interval`` seconds apart, doubled every
    ``per_doubling`` rounds, so a trace of months costs a bounded number of rounds (shared by
    ``ReasonLog`` and the fast core's ``FastReasons``)."""

    __slots__ = ("interval", "rounds", "next", "_since_doubling")

    def __init__(self) -> None:
        self.interval = 1.0
        self.rounds = 0
        self.next = float("-inf")
        self._since_doubling = 0

    def tick(self, now: float, per_doubling: int) -> None:
        """A round ran at ``now``: the next is due one interval later."""
        self.rounds += 1
        self._since_doubling += 1
        if self._since_doubling >= per_doubling:
            self.interval *= 2
            self._since_doubling = 0
        self.next = now + self.interval


class ReasonLog:
    """Why each pending workload waits, recorded while the simulation runs, as it changes.

    After every instant (once the model had its ``schedule`` and heartbeats) the simulator calls
    ``observe``. Workloads submitted at that instant and still pending get their first reason at
    once, and so does one a preemption was made for (``preempting`` while its victims are in their
    grace period); every workload still pending is re-examined on a grid (``interval`` seconds apart, doubled
    every ``ROUNDS_PER_DOUBLING`` rounds, so a trace of months costs a bounded number of rounds).
    Only changes of code
    (or of the queue that blocks) are kept: ``trail[workload] = [(time, code, blocking), ...]``.

    The codes are those of the live service (``makeway.core.pending``, one rule set for every
    model, with each model's own ``pending_reason`` first): ``fits-nowhere``, ``queue-max``,
    ``quota``, ``preempting``, ``gang``, ``priority`` (work ahead of it in its queue's order) and
    ``resources`` (first in line, no node has room). The model is asked for the first ``HEAD``
    workloads of each queue's order; those behind them get the state-only rules, which is what
    keeps a round cheap on queues thousands deep (and ``priority`` is then the answer anyway).
    """

    ROUNDS_PER_DOUBLING = 250
    HEAD = 32
    # False: every round re-classifies every pending workload (the reference the property tests
    # compare the incremental rounds with)
    incremental = True

    def __init__(self, state: ClusterState, model: Any):
        self.state = state
        self.model = model
        self.clock = RoundClock()
        self.trail: dict[str, list[tuple[float, str, str | None]]] = {}
        self._current: dict[str, tuple[str, str | None]] = {}
        self._fresh: list[str] = []
        self._nowhere: set[str] = set()
        self._victims: dict[str, set[str]] = {}
        self._waiting: dict[str, int] = {}   # queue -> workloads with pending tasks, as last seen
        self._stale: set[str] = set()       # pending workloads whose "behind the head" reason may have moved
        self._log_pos = 0                    # where ``state.pending_log`` was read up to
        self._config_seen: int | None = None
        self._limited: dict[str, dict] = {}  # queue with a max -> its usage at the last round
        self._counts = PendingCounts()  # the backlog per queue, kept from the state's journals

    @property
    def rounds(self) -> int:
        return self.clock.rounds

    # -- fed by the recorder ------------------------------------------------------------------

    def submitted(self, wl: Workload) -> None:
        if any(g.count > 0 and not fits_some_node(self.state, g.resources) for g in wl.groups):
            self._nowhere.add(wl.id)
        self._fresh.append(wl.id)

    def started(self, wl_id: str) -> None:
        """A workload with no task left pending stops waiting; a later wait starts a new reason."""
        if wl_id not in self.state.pending:
            self._current.pop(wl_id, None)
        else:
            self._stale.add(wl_id)   # less demand: its limits may no longer block it

    def preempted_for(self, preemptor: str | None, allocation: str, now: float) -> None:
        """A victim was chosen for ``preemptor`` (a workload or task id): it waits for the victim."""
        wl = self._workload_of(preemptor)
        if wl is None:
            return
        self._victims.setdefault(wl, set()).add(allocation)
        self._fresh.append(wl)  # looked at once the instant is over: still waiting, it waits for them

    def _workload_of(self, ident: str | None) -> str | None:
        if not ident:
            return None
        wls = self.state.workloads
        if ident in wls:
            return ident
        head = ident.rsplit("/", 2)[0]
        return head if head in wls else None

    # -- after each instant -------------------------------------------------------------------

    def observe(self, now: float) -> None:
        if now >= self.clock.next:
            if self.incremental and self.HEAD >= 1:
                self._changed_round(now)
            else:
                self._round(now)
            self.clock.tick(now, self.ROUNDS_PER_DOUBLING)
        elif self._fresh:
            self._first_reasons(now)
        self._fresh.clear()

    def _set(self, wl_id: str, now: float, code: str, blocking: str | None) -> None:
        key = (code, blocking)
        if self._current.get(wl_id) == key:
            return
        self._current[wl_id] = key
        trail = self.trail.setdefault(wl_id, [])
        if trail and trail[-1][0] == now:
            trail[-1] = (now, code, blocking)
        else:
            trail.append((now, code, blocking))

    def _victims_of(self, wl_id: str) -> list[str]:
        mine = self._victims.get(wl_id)
        if not mine:
            return []
        allocs = self.state.allocations
        alive = {a for a in mine if a in allocs}
        if alive:
            self._victims[wl_id] = alive
        else:
            del self._victims[wl_id]
        return sorted(alive)

    def _classify(self, wl_id: str, now: float, position: int, ask_model: bool) -> tuple[str, str | None]:
        state = self.state
        if wl_id in self._nowhere:
            return FITS_NOWHERE, None
        wl = state.workloads[wl_id]
        demand = state.pending_demand(wl_id)
        q = blocking_max(state, wl.queue, demand) if demand else None
        if q is not None:
            return QUEUE_MAX_CODE, q
        if ask_model:
            mine = self.model.pending_reason(state, wl_id, now)
            if mine is not None:
                code, _, values = mine
                return code, values.get("blocking")
        code, _, _, blocking = generic_reason(state, wl_id, position, ask_model and self.model.all_or_nothing,
                                              self._victims_of(wl_id))
        return code, blocking

    def _first_reasons(self, now: float) -> None:
        """Reasons of the workloads submitted at ``now`` that did not start: behind the others of
        their queue (as last counted) unless the model or the state says more."""
        pending = self.state.pending
        wls = self.state.workloads
        done: set[str] = set()
        for wl_id in self._fresh:
            if wl_id not in pending or wl_id in done:
                continue
            done.add(wl_id)
            q = wls[wl_id].queue
            if wl_id in self._current:
                position = 2 if self._waiting.get(q, 0) > 1 else 1
            else:
                position = self._waiting.get(q, 0) + 1
                self._waiting[q] = position
            self._set(wl_id, now, *self._classify(wl_id, now, position, True))
            self._stale.add(wl_id)

    def _round(self, now: float) -> None:
        state, model = self.state, self.model
        by_queue: dict[str, int] = {}
        wls = state.workloads
        for w in state.pending:
            q = wls[w].queue
            by_queue[q] = by_queue.get(q, 0) + 1
        seen: set[str] = set()
        for order in queue_orders(model, state, now).values():
            for i, wl_id in enumerate(order, 1):
                seen.add(wl_id)
                self._set(wl_id, now, *self._classify(wl_id, now, i, i <= self.HEAD))
        for wl_id in list(self._current):
            if wl_id not in seen:
                del self._current[wl_id]   # started (or finished): the next wait gets a fresh first reason
        self._waiting = by_queue
        self._config_seen = None   # the incremental rounds' bookkeeping was not kept: start afresh

    def _changed_round(self, now: float) -> None:
        """``_round`` at the cost of what changed since the last round.

        The first ``HEAD`` workloads of each queue are asked as there (the model's answer may
        depend on anything). Behind them the reason is a function of the workload's pending demand,
        its victims and the ``max`` and usage of the queues on its path that have a ``max``
        (``_classify`` without the model: ``fits-nowhere``, ``queue-max``, ``quota``,
        ``preempting``, else ``priority``); such a workload is classified again only when one of
        those moved: its tasks started or came back (``started``, ``state.pending_log``), it was
        a head or got a first reason since, it has victims, or a limited queue on its path changed
        usage (then its whole queue is). A config change or a trimmed log re-classifies all."""
        state, model, head = self.state, self.model, self.HEAD
        pending, current = state.pending, self._current
        by_queue: dict[str, int] = {}
        orders = queue_orders(model, state, now, by_queue, self._counts)
        stale = self._stale
        log = state.pending_log
        back = log.since(self._log_pos)
        self._log_pos = log.position
        everything = back is None or self._config_seen != state.config_epoch
        if everything:
            self._config_seen = state.config_epoch
            self._limited = {q: {} for q, queue in state.queues.items() if queue.max}
            for w in list(current):
                if w not in pending:
                    del current[w]
        else:
            for w in back:
                if w in pending:
                    stale.add(w)
                else:
                    current.pop(w, None)   # withdrawn
        moved: set[str] = set()
        usage = state.queue_usage
        for q, seen in self._limited.items():
            now_used = usage[q]
            if seen != now_used:
                moved.add(q)
                self._limited[q] = dict(now_used)
        # preemptors long started keep their entry (``_victims_of`` prunes only pending ones)
        stale.update(self._victims.keys() & pending.keys())
        heads: set[str] = set()
        classify, put = self._classify, self._set
        for queue, order in orders.items():
            for i, wl_id in enumerate(order[:head], 1):
                heads.add(wl_id)
                put(wl_id, now, *classify(wl_id, now, i, True))
            if everything or (moved and not moved.isdisjoint(state.path_to_root(queue))):
                for i, wl_id in enumerate(order[head:], head + 1):
                    put(wl_id, now, *classify(wl_id, now, i, False))
                    stale.discard(wl_id)
        for wl_id in stale:
            if wl_id in pending and wl_id not in heads:
                put(wl_id, now, *classify(wl_id, now, head + 1, False))
        stale.clear()
        stale.update(heads)   # their reason is the model's: next round, behind the head, it is not
        self._waiting = by_queue

    def rows(self) -> dict[str, list[list[Any]]]:
        """The trails as JSON-ready lists, by workload."""
        return {w: [[t, code, blocking] for t, code, blocking in trail] for w, trail in self.trail.items()}
