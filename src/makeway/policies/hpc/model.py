"""HPC batch scheduling modes: strict FIFO and EASY backfilling. Neither preempts.

Both serve pending workloads in submit order (then id), across all queues, as one batch queue
does. A workload whose gang would exceed its queue's (or an ancestor's) ``max`` is held and passed
over rather than blocking everyone, as batch systems skip limit-held jobs; a workload that could
not fit even on the empty cluster is reported once (``Note("unschedulable")``) and passed over.

* ``StrictFifo``: start workloads from the head while they fit; the first that does not fit stops
  the pass, so no workload ever starts before an earlier one.
* ``EasyBackfill`` (Lifka's EASY, as in the SP2 logs the SWF importer reads): after the FIFO pass,
  the blocked head gets a reservation at the *shadow time*, the earliest time at which it fits once
  running work ends at its requested time (``start + requested_duration``, fallback ``duration``).
  A later workload may start now ("backfill") only if it fits now and either ends (by its own
  request) no later than the shadow time, or leaves enough room at the shadow time for the head.
  Only the head holds a reservation, which is what makes EASY aggressive yet starvation-free.

Settings (``preemption.settings``): ``placement: first-fit | best-fit`` (default first-fit: the
first node in config order where a task fits; best-fit: the node left with the least normalised
free space). Work holds its resources for its actual run time; killing at the requested time is the
simulator's job (``simulation.kill_at_requested_time``).

The model keeps ``reservation`` (head id, shadow time) from its last pass, for reports and tests.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from typing import Any, Iterable, Iterator, Mapping

from makeway.core.decisions import Decision, Note, Start
from makeway.core.objects import Workload
from makeway.core.pending import blocking_usage
from makeway.core.policy import PreemptionModel
from makeway.core.resources import EPS, Res, add_into, total_of
from makeway.core.state import ClusterState
from makeway.core.placement import first_fit, within_queue_max

PLACEMENTS = ("first-fit", "best-fit")


def requested_time(wl: Workload) -> float:
    """The run time the scheduler believes: the user's request, else the actual duration."""
    return wl.requested_duration if wl.requested_duration is not None else wl.duration


def fifo_order(state: ClusterState) -> list[str]:
    """Pending workloads by submit time then id: the batch queue order (priority is ignored)."""
    wls = state.workloads
    return sorted(state.pending, key=lambda w: (wls[w].submit, w))


def best_fit(state: ClusterState, tasks: list[str], extra_used: dict[str, Res] | None = None) -> list[Start] | None:
    """Place each task on the node that it leaves fullest (least normalised free space), or None."""
    promised: dict[str, Res] = {n: dict(r) for n, r in (extra_used or {}).items()}
    out: list[Start] = []
    for tid in tasks:
        req = state.task_resources(tid)
        best: tuple[float, int, str] | None = None
        for order, (name, node) in enumerate(state.nodes.items()):
            if not node.schedulable:
                continue
            used, extra, cap = state.node_used[name], promised.get(name, {}), node.capacity
            score = 0.0
            for k, v in req.items():
                if v <= 0:
                    continue
                left = cap.get(k, 0) - used.get(k, 0) - extra.get(k, 0) - v
                if left < -EPS:
                    break
                score += left / cap[k] if cap.get(k) else 0.0
            else:
                if best is None or (score, order) < best[:2]:
                    best = (score, order, name)
        if best is None:
            return None
        add_into(promised.setdefault(best[2], {}), req)
        out.append(Start(tid, best[2]))
    return out


def task_groups(state: ClusterState, tasks: Iterable[str]) -> list[tuple[Res, int]]:
    """Consecutive identical requests folded into (request, count): a gang's shape."""
    groups: list[tuple[Res, int]] = []
    for tid in tasks:
        req = state.task_resources(tid)
        if groups and groups[-1][0] is req:
            groups[-1] = (req, groups[-1][1] + 1)
        else:
            groups.append((req, 1))
    return groups


def gang_fits(state: ClusterState, tasks: list[str], extra_used: Mapping[str, Res]) -> bool:
    """Whether all tasks fit given per-node ``extra_used`` (negative = released): fast first-fit test.

    Identical tasks are counted per node (how many fit) instead of placed one by one; for tasks
    taken in order this gives exactly the yes/no answer of ``first_fit``, in O(groups x nodes).
    """
    return groups_fit(state, task_groups(state, tasks), extra_used)


def groups_fit(state: ClusterState, groups: list[tuple[Res, int]], extra_used: Mapping[str, Res],
               *, empty_cluster: bool = False) -> bool:
    """``gang_fits`` on a precomputed shape; ``empty_cluster`` ignores what is running."""
    taken: dict[str, Res] = {}
    none: Res = {}
    node_used = state.node_used
    last = len(groups) - 1
    for g, (req, count) in enumerate(groups):
        wanted = [(r, v) for r, v in req.items() if v > 0]
        left = count
        for name, node in state.nodes.items():
            if not node.schedulable:
                continue
            used = none if empty_cluster else node_used[name]
            extra, mine, cap = extra_used.get(name, none), taken.get(name, none), node.capacity
            k = math.inf
            for r, v in wanted:
                free = cap.get(r, 0) - used.get(r, 0) - extra.get(r, 0) - mine.get(r, 0)
                if free + EPS < v:
                    k = 0
                    break
                k = min(k, math.floor((free + EPS) / v))
            if k <= 0:
                continue
            n = left if k == math.inf else min(left, int(k))
            if g < last:  # later groups must see what this one took
                add_into(taken.setdefault(name, {}), {r: v * n for r, v in req.items()})
            left -= n
            if left == 0:
                break
        if left:
            return False
    return True


def _free_total(state: ClusterState, capacity: Res, extra_used: Mapping[str, Res]) -> Res:
    """Free resources summed over all nodes given per-node ``extra_used``: an upper bound of what
    any placement can use (unschedulable nodes count too), so it only ever serves to reject early.
    Used = the roots' hierarchical queue usage, kept by the state: O(queues), not O(nodes)."""
    out = dict(capacity)
    for root in state.roots:
        add_into(out, state.queue_usage[root], -1)
    for res in extra_used.values():
        add_into(out, res, -1)
    return out


def _covers(free: Res, need: Res) -> bool:
    return all(free.get(k, 0) + EPS >= v for k, v in need.items() if v > 0)


class StrictFifo(PreemptionModel):
    """Submit order, no overtaking: the first workload that does not fit stops the pass."""

    name = "fifo-strict"
    fixed_priority = "first come, first served: jobs start in submit order, whatever their priority"
    backfill = False
    all_or_nothing = True

    def __init__(self, settings: Mapping[str, Any] | None = None):
        super().__init__(settings)
        self.placement = str(self.settings.get("placement", "first-fit"))
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement: {self.placement!r} is not one of {', '.join(PLACEMENTS)}")
        self._reported: set[str] = set()
        self._empty_fit: dict[tuple[str, int], bool] = {}
        self._queue: list[tuple[float, str]] = []
        self._queued: set[str] = set()
        self._log = 0
        self._capacity: Res | None = None
        self._topology = -1
        self.reservation: tuple[str, float] | None = None
        self._explain: tuple[tuple, list[tuple[float, str]]] | None = None

    def bind(self, state: ClusterState) -> None:
        self._capacity = state.total_capacity()
        self._topology = state.topology_epoch

    def _free(self, state: ClusterState, extra_used: Mapping[str, Res]) -> Res:
        if self._capacity is None or self._topology != state.topology_epoch or not self.caches:
            self._capacity = state.total_capacity()
            self._empty_fit.clear()  # what fits an empty cluster depends on its nodes
            self._topology = state.topology_epoch
        return _free_total(state, self._capacity, extra_used)

    def _order(self, state: ClusterState) -> Iterator[str]:
        """``fifo_order`` as a lazy iterator, kept incrementally between calls.

        Workloads that became pending (the state's pending journal: submissions, and requeues
        after a node was lost on a live cluster) arrive mostly in submit order, so there is no
        re-sort; started ones are dropped from the front at once and from the middle by compaction
        when they outnumber the pending ones. The queue stays sorted, so rebuilding it from the
        pending set (when the journal was trimmed) gives the same order.
        """
        if not self.caches:  # the reference path: sorted afresh
            return iter(fifo_order(state))
        pending = state.pending
        queue, queued = self._queue, self._queued
        fresh = state.pending_log.since(self._log)
        self._log = state.pending_log.position
        if fresh is None:
            queue[:] = sorted((state.workloads[w].submit, w) for w in pending)
            queued.clear()
            queued.update(pending)
        else:
            for wl_id in fresh:
                if wl_id in queued or wl_id not in pending:
                    continue
                queued.add(wl_id)
                key = (state.workloads[wl_id].submit, wl_id)
                if not queue or key >= queue[-1]:
                    queue.append(key)
                else:
                    insort(queue, key)
        front = 0
        while front < len(queue) and queue[front][1] not in pending:
            queued.discard(queue[front][1])
            front += 1
        if front:
            del queue[:front]
        if len(queue) > 2 * len(pending) + 64:
            queue[:] = [k for k in queue if k[1] in pending]
            queued.intersection_update(k[1] for k in queue)
        return (k[1] for k in queue if k[1] in pending)

    def queue_order(self, state: ClusterState, queue: str, now: float) -> list[str]:
        """Submit order (then id): batch queues ignore priority."""
        wls = state.workloads
        return sorted((w for w in state.pending if wls[w].queue == queue), key=lambda w: (wls[w].submit, w))

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """One batch queue across all queues: what waits ahead of it is everything submitted
        earlier (limit-held work excepted, which the generic rules explain); the head of an EASY
        pass holds a reservation at its shadow time."""
        wl = state.workloads[wl_id]
        if blocking_usage(state, wl.queue, state.pending_demand(wl_id)) is not None:
            return None
        if self.reservation is not None and self.reservation[0] == wl_id:
            return ("resources", f"first in line; reserved to start at {self.reservation[1]:g} when running work "
                                 "ends as requested", {"shadow_time": self.reservation[1]})
        ahead = bisect_left(self._eligible_keys(state), (wl.submit, wl_id))
        if ahead:
            return ("priority", f"{ahead} workload(s) submitted earlier wait ahead of it in the batch queue",
                    {"ahead": ahead})
        return None

    def _eligible_keys(self, state: ClusterState) -> list[tuple[float, str]]:
        """(submit, id) of pending workloads not held by a limit, sorted; kept while nothing moved,
        so explaining every pending workload costs one pass, not one per workload."""
        stamp = (id(state), state.alloc_epoch, state.submit_epoch, state.config_epoch)
        hit = self._explain
        if hit is None or hit[0] != stamp:
            wls = state.workloads
            keys = sorted((wls[w].submit, w) for w in state.pending
                          if blocking_usage(state, wls[w].queue, state.pending_demand(w)) is None)
            hit = self._explain = (stamp, keys)
        return hit[1]

    def _place(self, state: ClusterState, tasks: list[str], promised: dict[str, Res]) -> list[Start] | None:
        if self.placement == "best-fit":
            return best_fit(state, tasks, promised)
        return first_fit(state, tasks, promised)

    def _eligible(self, state: ClusterState, wl_id: str, decisions: list[Decision],
                  promised_queues: dict[str, Res]) -> tuple[list[str], Res] | None:
        """The workload's pending tasks and total need, or None when it is held (queue max, too big)."""
        tasks = list(state.pending[wl_id])
        need = self._need(state, wl_id, tasks)
        if not within_queue_max(state, state.workloads[wl_id].queue, need, promised_queues):
            return None
        if not self._fits_empty(state, wl_id, tasks):
            if wl_id not in self._reported:
                self._reported.add(wl_id)
                decisions.append(Note("unschedulable", wl_id, "does not fit the cluster even when it is empty",
                                      {"need": need}))
            return None
        return tasks, need

    @staticmethod
    def _shape(state: ClusterState, wl_id: str, tasks: list[str]) -> list[tuple[Res, int]]:
        wl = state.workloads[wl_id]
        if len(tasks) == wl.task_count:
            return [(g.resources, g.count) for g in wl.groups if g.count]
        return task_groups(state, tasks)

    @staticmethod
    def _need(state: ClusterState, wl_id: str, tasks: list[str]) -> Res:
        wl = state.workloads[wl_id]
        if len(tasks) == wl.task_count:
            return wl.total()
        need: Res = {}
        for t in tasks:
            add_into(need, state.task_resources(t))
        return need

    def _fits_empty(self, state: ClusterState, wl_id: str, tasks: list[str]) -> bool:
        """Whether the gang fits the cluster with nothing running (cached: nodes rarely change)."""
        key = (wl_id, len(tasks))
        if not self.caches:
            return groups_fit(state, self._shape(state, wl_id, tasks), {}, empty_cluster=True)
        hit = self._empty_fit.get(key)
        if hit is None:
            hit = self._empty_fit[key] = groups_fit(state, self._shape(state, wl_id, tasks), {}, empty_cluster=True)
        return hit

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        decisions: list[Decision] = []
        promised: dict[str, Res] = {}
        promised_queues: dict[str, Res] = {}
        started: list[tuple[str, list[Start]]] = []
        self.reservation = None
        order = self._order(state)
        head = None
        free_now = self._free(state, promised)
        for wl_id in order:
            got = self._eligible(state, wl_id, decisions, promised_queues)
            if got is None:
                continue
            tasks, need = got
            starts = self._place(state, tasks, promised) if _covers(free_now, need) else None
            if starts is None:
                head = wl_id
                break
            add_into(free_now, need, -1)
            self._commit(state, wl_id, need, starts, promised, promised_queues, decisions, started)
        if self.backfill and head is not None:
            self._backfill(state, now, head, order, promised, promised_queues, decisions, started)
        return decisions

    @staticmethod
    def _commit(state: ClusterState, wl_id: str, need: Res, starts: list[Start], promised: dict[str, Res],
                promised_queues: dict[str, Res], decisions: list[Decision],
                started: list[tuple[str, list[Start]]]) -> None:
        for s in starts:
            add_into(promised.setdefault(s.node, {}), state.task_resources(s.task))
        for q in state.path_to_root(state.workloads[wl_id].queue):
            add_into(promised_queues.setdefault(q, {}), need)
        decisions.extend(starts)
        started.append((wl_id, starts))

    def _backfill(self, state: ClusterState, now: float, head: str, rest: Iterator[str],
                  promised: dict[str, Res], promised_queues: dict[str, Res], decisions: list[Decision],
                  started: list[tuple[str, list[Start]]]) -> None:
        """Not used by strict FIFO; see ``EasyBackfill``."""


class EasyBackfill(StrictFifo):
    """EASY backfilling: one reservation for the blocked head; later work may jump ahead of it only
    when it cannot delay that reservation (judged by requested run times)."""

    name = "easy-backfill"
    backfill = True

    def _backfill(self, state: ClusterState, now: float, head: str, rest: Iterator[str],
                  promised: dict[str, Res], promised_queues: dict[str, Res], decisions: list[Decision],
                  started: list[tuple[str, list[Start]]]) -> None:
        head_tasks = list(state.pending[head])
        head_groups = self._shape(state, head, head_tasks)
        head_need = self._need(state, head, head_tasks)
        shadow, at_shadow = self._shadow(state, now, head_groups, head_need, promised, started,
                                         self._free(state, promised))
        if shadow is None:
            return
        self.reservation = (head, shadow)
        # Aggregate free space now and spare space at the shadow time: necessary conditions that
        # reject most candidates without a per-node placement.
        free_now = self._free(state, promised)
        spare = self._free(state, at_shadow)
        add_into(spare, head_need, -1)
        for wl_id in rest:
            wl = state.workloads[wl_id]
            ends = now + requested_time(wl)
            rough = self._need(state, wl_id, state.pending[wl_id])  # type: ignore[arg-type]
            if not _covers(free_now, rough) or (ends > shadow + EPS and not _covers(spare, rough)):
                continue
            got = self._eligible(state, wl_id, decisions, promised_queues)
            if got is None:
                continue
            tasks, need = got
            starts = self._place(state, tasks, promised)
            if starts is None:
                continue
            add_into(free_now, need, -1)
            if ends > shadow + EPS:
                add_into(spare, need, -1)
                trial = dict(at_shadow)  # shallow: only the candidate's nodes get new vectors
                copied: set[str] = set()
                for s in starts:
                    if s.node not in copied:
                        copied.add(s.node)
                        trial[s.node] = dict(trial.get(s.node, {}))
                    add_into(trial[s.node], state.task_resources(s.task))
                if not groups_fit(state, head_groups, trial):
                    continue
                at_shadow = trial
            self._commit(state, wl_id, need, starts, promised, promised_queues, decisions, started)

    @staticmethod
    def _shadow(state: ClusterState, now: float, head_groups: list[tuple[Res, int]], need: Res,
                promised: dict[str, Res],
                started: Iterable[tuple[str, list[Start]]], free_total: Res) -> tuple[float | None, dict[str, Res]]:
        """The head's shadow time and the per-node ``extra_used`` at that time (releases negative).

        Running work (and work started in this pass) is released in order of its expected end,
        ``start + requested time`` (never before ``now``: overrunning work is expected any moment).
        """
        # One release per workload (a gang starts and ends together): the aggregate test is
        # O(workloads); per-node vectors are built only once the aggregate says the head may fit.
        by_wl: dict[str, list[tuple[str, Res]]] = {}
        first_start: dict[str, float] = {}
        for alloc in state.allocations.values():
            items = by_wl.get(alloc.workload)
            if items is None:
                items = by_wl[alloc.workload] = []
                first_start[alloc.workload] = alloc.start
            items.append((alloc.node, alloc.resources))
        entries: list[tuple[float, int, Res, list[tuple[str, Res]]]] = []
        for seq, (wl_id, items) in enumerate(by_wl.items()):
            wl = state.workloads[wl_id]
            total = wl.total() if len(items) == wl.task_count else total_of(r for _, r in items)
            entries.append((max(now, first_start[wl_id] + requested_time(wl)), seq, total, items))
        base = len(entries)
        for seq, (wl_id, starts) in enumerate(started, base):
            wl = state.workloads[wl_id]
            items = [(st.node, state.task_resources(st.task)) for st in starts]
            entries.append((now + requested_time(wl), seq, total_of(r for _, r in items), items))
        entries.sort(key=lambda e: (e[0], e[1]))
        extra: dict[str, Res] = {n: dict(r) for n, r in promised.items()}
        applied = 0
        i = 0
        while i < len(entries):
            t = entries[i][0]
            while i < len(entries) and entries[i][0] == t:
                add_into(free_total, entries[i][2])
                i += 1
            if not _covers(free_total, need):
                continue
            for _, _, _, items in entries[applied:i]:
                for node, res in items:
                    add_into(extra.setdefault(node, {}), res, -1)
            applied = i
            if groups_fit(state, head_groups, extra):
                return t, extra
        return None, extra
