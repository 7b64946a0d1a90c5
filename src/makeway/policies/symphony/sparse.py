"""Symphony's cycle at the cost of the sessions that can move, not of the backlog.

Why: a session with nothing running and no deserved slot can do nothing in the first placement
pass (its budget is 0), cannot preempt (it is not under-allocated) and cannot be preempted (it holds
nothing); the second pass ("whatever still fits") serves sessions in order while the consumer has
free slots, and a waiting session whose one request shape no longer fits, or needs more slots than
are free, can take nothing for the rest of that pass, nor can any session of that shape. A
session that holds tasks but has none pending and is not above its share is never served, never
preempts and is never preempted. So a cycle computes the deserved shares per (priority, demand)
class (``rules.class_deserved``), builds views only of the holders with a pending task or above
their share (``holders``) and of the waiting sessions that are multi-group or deserve a slot (at
most the consumer's slots), and serves the rest of the backlog in the second pass shape by shape,
merged in serving order, dropping a shape once it can take nothing.

Decisions are those of ``SymphonyModel._consumer`` over every session (``caches: false`` is that
path; ``tests/symphony/test_cache_equivalence.py`` compares them).
"""

from __future__ import annotations

import heapq
from functools import lru_cache
from itertools import chain, islice
from typing import Any, Callable, Iterable, Mapping

from makeway.core.decisions import Decision, Start
from makeway.core.state import ClusterState
from makeway.policies.symphony.backlog import ConsumerBacklog, Rec
from makeway.policies.symphony.holders import ConsumerHolders, HolderView
from makeway.policies.symphony.rules import ClassShares, SessionView, class_deserved, may_preempt

_EMPTY = ConsumerBacklog()


def waiting_view(model: Any, state: ClusterState, r: Rec, deserved: int) -> SessionView:
    return SessionView(r.name, r.rank, r.preemptive, deserved, 0, r.d, r.w, (r.okey[1],), [])


def class_counts(cb: ConsumerBacklog | None, held: Mapping[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    """Sessions per (priority, demand) class: the waiting ones and the holders (``held``)."""
    counts = {c: len(m) for c, m in cb.classes.items()} if cb is not None else {}
    for c, n in held.items():
        counts[c] = counts.get(c, 0) + n
    return counts


def class_shares(capacity: int, counts: Mapping[tuple[int, int], int]) -> ClassShares:
    """``class_deserved``, remembered for the last (capacity, counts) seen: a consumer's cycles and
    share samples mostly see the same few classes with the same members again. The result is
    shared: read it, never change it."""
    return _class_shares(capacity, tuple(sorted(counts.items())))


@lru_cache(maxsize=256)
def _class_shares(capacity: int, items: tuple) -> ClassShares:
    return class_deserved(capacity, dict(items))


def deserved_total(cs: ClassShares, counts: Mapping[tuple[int, int], int]) -> int:
    """Slots the consumer's sessions deserve together: each class's share times its members, plus
    the remainder slots (a priority's k never exceeds its members in the final split)."""
    return sum(cs.per.get(c, 0) * n for c, n in counts.items()) + sum(k for _, k in cs.extra)


class Consumer:
    """One consumer's shares: views of the holders a cycle can move, its waiting sessions' classes,
    the remainder slots."""

    __slots__ = ("capacity", "holders", "allocated", "cb", "cs", "chosen")

    def __init__(self, capacity: int, ch: ConsumerHolders, cb: ConsumerBacklog | None, src: tuple, every: bool):
        """``ch``: the consumer's holding sessions; ``src``: what their views read their tasks from
        (``HolderView``). A view is made of a holder with a pending task (it may be served or
        preempt) or above its share (it may be preempted): one with nothing pending holds its
        class's demand, so that is a class's question; the others' figures stay as they are
        through the cycle. ``every``: of every holder (a shared slot's co-tenants are read too)."""
        self.capacity = capacity
        self.allocated = ch.allocated  # slots every holder holds
        self.cb = cb = cb if cb is not None else _EMPTY
        self.cs: ClassShares = class_shares(capacity, class_counts(cb, ch.counts()))
        self.chosen: set[str] = set()
        active = self.cs.active
        for w, k in self.cs.extra:
            mine = [n for c, m in ch.classes.items() if c[0] == w and c in active for n in m]
            recs = cb.recs
            theirs = list(islice((n for n in cb.by_w.get(w, ()) if (w, recs[n].d) in active), k))
            # the first k of both (holders and waiting sessions are apart) are among these
            self.chosen.update(sorted(mine + theirs)[:k])
        per, chosen = self.cs.per, self.chosen
        if every:
            names: Iterable[str] = ch.held
        else:
            names = set(ch.waiting)
            for c, members in ch.classes.items():
                share = per.get(c, 0)
                if share + 1 < c[1]:
                    names.update(members)
                elif share + 1 == c[1]:
                    names.update(n for n in members if n not in chosen)
        self.holders: dict[str, SessionView] = {}
        for name in names:
            h = ch.held[name]
            v = self.holders[name] = HolderView(h, name, src)
            v.deserved = per.get((h.priority, h.demand), 0) + (name in chosen)

    def deserved(self, name: str, w: int, d: int) -> int:
        return self.cs.per.get((w, d), 0) + (name in self.chosen)

    def views(self, model: Any, state: ClusterState) -> tuple[dict[str, SessionView], dict[str, tuple[Rec, int]]]:
        """Views of the holders and of the waiting multi-group sessions, in no particular order (a
        cycle sorts whom it serves, and a search its candidates, by keys that end in the name); and
        the waiting one-shape sessions that deserve a slot, as (row, deserved): a cycle makes their
        views only when one can do something (``consumer_cycle``)."""
        cb, per, chosen = self.cb, self.cs.per, self.chosen
        views = dict(self.holders)
        lazy: dict[str, tuple[Rec, int]] = {}
        recs = cb.recs
        for c, members in cb.classes.items():  # the classes that deserve a slot, whole
            share = per.get(c, 0)
            if share > 0:
                for n in members:
                    r = recs[n]
                    if r.shape is None:
                        views[n] = waiting_view(model, state, r, share + (n in chosen))
                    else:
                        lazy[n] = (r, share + (n in chosen))
        for n in chain(cb.multi, chosen):  # and, outside those, the multi-group and remainder ones
            r = recs.get(n)  # None: a holder (chosen for a remainder slot)
            if r is None or n in views or n in lazy:
                continue
            d = self.deserved(n, r.w, r.d)
            if r.shape is None:
                views[n] = waiting_view(model, state, r, d)
            else:
                lazy[n] = (r, d)
        return views, lazy


def place_in_order(state: ClusterState, plan: Any, s: SessionView, tasks: list[str], room: int, budget: int | None,
                   no_fit: set[tuple]) -> tuple[list[Start], int, list[str]]:
    """Start ``tasks`` of ``s`` in order while ``room`` slots, the ``budget`` and the plan's nodes
    allow: the starts, the slots used and the tasks left pending. A request found to fit no node
    goes into ``no_fit`` and is not searched again."""
    starts: list[Start] = []
    used, rest = 0, []
    last: Any = None  # the tasks of a group share one request object: its slots and key are read once
    for k, tid in enumerate(tasks):
        if room <= 0 or (budget is not None and used >= budget):
            rest.extend(tasks[k:])
            break
        req = state.task_resources(tid)
        if req is not last:
            last, ts, key = req, plan.slots_of(req), tuple(sorted(req.items()))
        node = None
        if ts <= room and (budget is None or used + ts <= budget) and key not in no_fit:
            node = plan.fit(req, key)
            if node is None:
                no_fit.add(key)
        if node is None:
            rest.append(tid)
            continue
        plan.take(node, req)
        s.allocated += ts
        plan.consumer_allocated += ts
        used += ts
        room -= ts
        starts.append(Start(tid, node))
    return starts, used, rest


def consumer_cycle(model: Any, state: ClusterState, queue: str, cons: Consumer, plan: Any,
                   now: float) -> list[Decision]:
    """``SymphonyModel._consumer`` (caches on) over ``cons``: the same decisions in the same order."""
    scope, criteria, sharing = model.consumer_settings(state, queue)
    capacity = cons.capacity
    plan.consumer_allocated = cons.allocated  # the waiting sessions' views hold nothing yet
    plan.no_fit = set()
    no_fit = plan.no_fit

    def free() -> int:
        return min(capacity - plan.consumer_allocated, plan.total_slots - plan.used_slots)

    # only a holder above its share can be preempted, and only a placement can put one there
    if free() <= 0 and not any(s.over_allocated for s in cons.holders.values()):
        return []
    views, lazy = cons.views(model, state)
    pending = _Pending(state.pending)
    out: list[Decision] = []

    recs = cons.cb.recs

    def place(s: SessionView, budget: int | None) -> tuple[list[Start], int]:
        room = free()
        if room <= 0 or (budget is not None and budget <= 0):
            return [], 0  # the loop below would keep every task as it is
        r = recs.get(s.name)
        if r is not None and r.shape is not None and (r.slots > room or (budget is not None and r.slots > budget)):
            return [], 0  # every pending task has this shape: none passes the room and budget test
        starts, used, pending[s.name] = place_in_order(state, plan, s, pending[s.name], room, budget, no_fit)
        return starts, used

    def view(name: str) -> SessionView:
        got = views.get(name)
        if got is None:
            r, d = lazy[name]
            got = views[name] = waiting_view(model, state, r, d)
        return got

    if free() > 0:  # else neither pass can place a task (placing only takes slots)
        # serving order of the sessions that can take slots: those with pending tasks (a cycle adds
        # none); a one-shape waiting session without a view is one whose place() would return at
        # once until its task fits
        waiting = state.pending
        order = [(-s.priority, s.order[0], s.name) for s in views.values() if s.name in waiting]
        order.extend(r.okey for r, _ in lazy.values())
        order.sort()  # serving keys (-priority, submit, name), as a waiting session's ``okey``
        room = free()
        for key in order:  # up to the deserved share first
            if room <= 0:
                break  # place() would return at once, and a waiting session's task takes a slot at least
            name = key[2]
            s = views.get(name)
            if s is None:
                r, d = lazy[name]
                if r.slots > min(room, d) or r.shape in no_fit:
                    continue  # place() would start nothing: no view needed
                s = view(name)
            if s.deserved > s.allocated:
                out.extend(place(s, s.deserved - s.allocated)[0])
                room = free()
        out.extend(_second_pass(model, state, cons.cb, views, lazy, view, order, place, free, no_fit))

    holders = [s for s in views.values() if isinstance(s, HolderView)]  # task views not built
    if not any(s.over_allocated for s in holders):
        return out  # no victim for anyone: a search takes from holders above their share only
    # ``preemptors`` of every view, had each been made, by rank: the order's first key, and a rank
    # whose search came back barren stays so until a preemption, so the rest of its group is skipped
    by_rank: dict[int, list[tuple[tuple, str]]] = {}
    for s in views.values():
        if may_preempt(s):
            by_rank.setdefault(s.rank, []).append(((-(s.deserved - s.allocated), -s.priority, s.order, s.name), s.name))
    for n, (r, d) in lazy.items():
        if n not in views and r.preemptive and 0 < d and 0 < r.d:
            by_rank.setdefault(r.rank, []).append(((-d, -r.w, (r.okey[1],), n), n))
    barren: set[int] = set()
    memo: dict = {}
    for rank in sorted(by_rank, reverse=True):
        group = by_rank[rank]
        heapq.heapify(group)
        while group and rank not in barren:
            name = heapq.heappop(group)[1]
            p = views.get(name) or view(name)
            if not p.under_allocated or not pending.any(p.name):
                continue
            got = model._preempt(state, queue, p, views, pending, plan, free(), scope, criteria, place, holders,
                                 barren, memo, sharing == "host")
            if got:
                memo.clear()
                out.extend(got)
    return out


class _Pending(dict):
    """A cycle's pending task lists, copied from the state when first read."""

    __slots__ = ("_state",)

    def __init__(self, state_pending: Any):
        super().__init__()
        self._state = state_pending

    def __missing__(self, name: str) -> list[str]:
        got = self[name] = list(self._state.get(name, ()))
        return got

    def any(self, name: str) -> bool:
        """Whether ``name`` has a pending task left, without copying its list."""
        mine = dict.get(self, name)
        return bool(mine) if mine is not None else bool(self._state.get(name))


def _second_pass(model: Any, state: ClusterState, cb: ConsumerBacklog, views: dict[str, SessionView],
                 lazy: dict[str, tuple[Rec, int]], view: Callable, order: list[tuple],
                 place: Callable, free: Callable, no_fit: set) -> list[Start]:
    """Every session in serving order takes what still fits: the first pass's sessions one by one,
    the other waiting sessions through one sorted stream per request shape (see the module doc)."""
    out: list[Start] = []
    streams: list[tuple[list[tuple], int | None, tuple | None]] = []  # (keys, slots, shape)
    streams.append((order, None, None))
    for shape, keys in cb.by_shape.items():
        streams.append((keys, cb.recs[keys[0][2]].slots, shape))
    heap: list[tuple[tuple, int, int]] = []

    def push(i: int, j: int) -> None:
        keys = streams[i][0]
        if i:
            while j < len(keys) and (keys[j][2] in views or keys[j][2] in lazy):
                j += 1
        if j < len(keys):
            heapq.heappush(heap, (keys[j], i, j))

    for i in range(len(streams)):
        push(i, 0)
    while heap:
        room = free()
        if room <= 0:
            break
        key, i, j = heapq.heappop(heap)
        name = key[2]
        if i == 0:
            s = views.get(name)
            if s is None:
                r = lazy[name][0]
                if r.slots > room or r.shape in no_fit:
                    push(i, j + 1)
                    continue  # place() would try no task
                s = view(name)
            starts, _ = place(s, None)
        else:
            _, slots, shape = streams[i]
            if slots > room or shape in no_fit:
                continue  # nothing of this shape fits for the rest of the pass
            r = cb.recs[name]
            s = views[name] = waiting_view(model, state, r, 0)
            starts, _ = place(s, None)
        out.extend(starts)
        push(i, j + 1)
    return out


__all__ = ["Consumer", "class_counts", "class_shares", "consumer_cycle", "deserved_total", "waiting_view"]
