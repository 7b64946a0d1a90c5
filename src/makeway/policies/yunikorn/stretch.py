"""YuniKorn's ``skip_wakes``: the engine's stretches of the model's own wake-ups, run inside the
model (issue 20).

Between two other events (a submission, a finish, a config change, a pending-reason round) a
long YuniKorn run is mostly instants of its own timers, at which a call only refuses again
(``cohorts.repeat_refusals``) or finds nothing due. ``skip_stretch`` runs those instants here, in
the order the engine would, with what each call would do, and hands the engine the count, the
last instant and the wake-ups still asked for. Where only known cohorts are due (every cohort
refused in the world that stands, or refused before a start or end and found refused again in
this world: its asks placed nowhere and doomed) each repeats every 15 s on its own instants, so
the rest of the stretch is done in closed form (``_chains``). With asks parked, that holds while
each repeat's attempts all go to the cohort's own asks (``_parked_chains``): a long Philly run spends most of
its refusals there, one leaf holding hundreds of parked asks behind its cohorts. The stretch
stops before the first instant at which a call could do anything else; the engine runs that one
as usual.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING

from makeway.core.state import ClusterState
from makeway.policies.yunikorn.cohorts import all_refused, own_turns, refused, repeat_refusals, still_pending, turns
from makeway.policies.yunikorn.common import PREEMPT_ATTEMPT_FREQUENCY_US
from makeway.policies.yunikorn.fastpass import timers
from makeway.policies.yunikorn.views import to_us

if TYPE_CHECKING:
    from makeway.policies.yunikorn.model import YuniKornModel


def skip_stretch(model: "YuniKornModel", state: ClusterState, wakes: list[float],
                 limit: float) -> tuple[int, float, float, list[float]] | None:
    """Run the instants before ``limit`` (``wakes``: those asked for already) while each call
    would be quiet or only refuse; see the module doc. Returns (instants run, the last one, the
    end of the stretch, the wake-ups asked for during it that fall at or after its end), or
    None when not even the first instant could be run, changing nothing."""
    blocks = model.blocks
    if blocks.restream or model.reservations or not state.allocations:
        return None
    if (model._quiet != model._quiet_key(state) or model._xmark != state.alloc_epoch - state.freed_epoch
            or model._bver != model._version(state)):
        return None
    # the quota's trigger loop runs at any call from its earliest timer on (already due ones too)
    quota = model.quota.next_wakeup(state, -math.inf) if model.quota is not None else None
    if quota is not None:
        limit = min(limit, quota)
    if blocks.candidates(state):
        return None
    queue = [w for w in wakes if w < limit]
    heapq.heapify(queue)
    queued = set(queue)
    asked: set[float] = set()  # wake-ups asked for during the stretch (the engine has the others)
    count, last = 0, -math.inf
    while queue:
        done = _chains(model, state, queue, limit)
        if done is not None:
            n, at, end = done
            count, last = count + n, max(last, at)
            queue = [w for w in queue if w >= end]
            heapq.heapify(queue)
            if end >= limit:
                break
        else:
            t = queue[0]
            now_us = to_us(t)
            if not (now_us < model._due_min) and not repeat_refusals(model, state, now_us):
                limit = t
                break
            heapq.heappop(queue)
            count, last = count + 1, t
        wake = model.next_wakeup(state, last)  # what the engine asks after the instant
        if wake is not None and wake > last and wake not in queued:
            queued.add(wake)
            asked.add(wake)
            if wake < limit:
                heapq.heappush(queue, wake)
    if count == 0:
        return None
    end = min(limit, queue[0]) if queue else limit
    return count, last, end, sorted(w for w in asked if w >= end)


def _chains(model: "YuniKornModel", state: ClusterState, wakes: list[float],
            limit: float) -> tuple[int, float, float] | None:
    """The stretch before ``limit`` in which every call is a cohort's known repeat (the world
    that refused it stands, nothing due but cohorts) or, at an instant in ``wakes``, finds
    nothing due. Each live cohort due repeats every 15 s, at instants of its own (none shares one
    with another cohort, dead ones included: there the walk would run), and its asks get the
    check clock and log counts of its last repeat. A cohort refused in another world is asked
    again first (``_refused_here``): the first repeat after a start or end is then done here
    too. Ends earlier at a per-ask timer and at the first cohort whose call would do more than
    refuse. Returns (instants, the last, the end), or None when no cohort repeats; a cohort's
    world is made current only in a stretch that runs.

    With asks parked (``_parked_chains``) a repeat gives each leaf's attempts in walk order, so
    it is the same call every time only when none of them reaches a parked ask."""
    blocks = model.blocks
    if blocks.nparked:
        return _parked_chains(model, state, wakes, limit)
    limit = _before_ask_timers(blocks, limit)
    world = model._fit_world(state)
    due_now: list = []  # (cohort, live asks)
    dead: list[int] = []
    for _, _, c in blocks.cohorts_before(limit):
        tids = blocks.live(c)
        if not tids:
            dead.append(c.due)
        elif c.world != world and not _refused_here(model, state, c, tids, world):
            limit = c.due / 1_000_000  # its call would do more than refuse: the stretch ends there
            break
        else:
            due_now.append((c, tids))
    if not due_now:
        return None
    period = PREEMPT_ATTEMPT_FREQUENCY_US
    firsts = [c.due for c, _ in due_now]
    if len({d % period for d in firsts}) < len(firsts):
        return None
    for d in dead:
        if any(d >= f and (d - f) % period == 0 for f in firsts):
            return None
    chains = []
    instants = 0
    last = -math.inf
    seen: set[int] = set()
    for c, tids in due_now:
        t, n, at = c.due / 1_000_000, 0, c.due
        while t < limit:
            at = to_us(t)
            seen.add(at)
            n += 1
            last = max(last, t)
            t = (at + period) / 1_000_000
        chains.append((c, tids, n, at))
        instants += n
    for w in wakes:
        if w < limit and to_us(w) not in seen:
            instants += 1  # asked for earlier, nothing due there: the model is quiet
            last = max(last, w)
    model._wake, model._due_min = _repeat(model, state, chains, limit, False)
    return instants, last, limit


def _parked_chains(model: "YuniKornModel", state: ClusterState, wakes: list[float],
                   limit: float) -> tuple[int, float, float] | None:
    """``_chains`` with asks parked. Every call then gives each leaf that has parked asks its
    attempts (``cohorts.turns``): at an instant where no live cohort is due, parked asks get
    them, so the stretch ends before any such instant (a wake-up asked for earlier, a dead
    cohort's timer). At a cohort's instant the call is the same one every time when its attempts
    all go to the cohort's own asks, each refused again, and none is parked: nothing parked or
    blocked changes but the cohort's timer, and another cohort's repeat changes only the timers
    of its own asks, which no turn reads (only ``PARKED`` marks are read). That is checked once
    per cohort (for one refused in another world, with its asks found refused in this one);
    then each repeats in closed form, its asks refused in walk order, as the call lists them.
    Returns as ``_chains``, or None, changing nothing."""
    blocks = model.blocks
    limit = _before_ask_timers(blocks, limit)
    world = model._fit_world(state)
    due_now: list = []  # (cohort, asks in the order the call refuses them)
    firsts: list[int] = []
    for _, _, c in blocks.cohorts_before(limit):
        tids = blocks.live(c)
        if not tids:  # a dead cohort's instant: parked asks would have their turn there
            limit = c.due / 1_000_000
            break
        firsts.append(c.due)
        due_now.append((c, tids))
    if not due_now:
        return None
    period = PREEMPT_ATTEMPT_FREQUENCY_US
    if len({d % period for d in firsts}) < len(firsts):
        return None
    for w in sorted(wakes):
        if w >= limit:
            break
        w_us = to_us(w)
        if not any(w_us >= f and (w_us - f) % period == 0 for f in firsts):
            limit = w  # a wake-up with no cohort due: the parked asks' turn
            break
    chains = []
    for c, tids in due_now:
        if c.due / 1_000_000 >= limit:
            continue
        known = c.world == world
        if own_turns(model, state, c, tids):
            refuse, unknown = c.tids, ([] if known else c.tids)
        else:
            refuse, park, unknown = turns(model, state, tids, known)
            if park or len(refuse) != len(tids) or set(refuse) != set(tids):
                return None
        # not known: the attempts are the cohort's own asks, each refused if doomed in this world
        if unknown and (known or not all_refused(model, state, c.due, unknown, world)):
            return None
        chains.append((c, refuse))
    if not chains:
        return None
    runs = []
    instants = 0
    last, last_us = -math.inf, -1
    for c, refuse in chains:
        t, n, at = c.due / 1_000_000, 0, c.due
        while t < limit:
            at = to_us(t)
            n += 1
            last = max(last, t)
            t = (at + period) / 1_000_000
        runs.append((c, refuse, n, at))
        instants += n
        last_us = max(last_us, at)
    wake, due_min = _repeat(model, state, runs, limit, True)
    model._wake, model._due_min = wake, min(due_min, last_us)  # asks parked: due at every call
    return instants, last, limit


def _refused_here(model: "YuniKornModel", state: ClusterState, c, tids: list[str], world: tuple) -> bool:
    """Whether the call at a cohort's instant, refused in another world, refuses all of its asks
    again as a known cohort's would: each still pending (the call drops any other) and placed
    nowhere and doomed in this world, which stands until the stretch ends (``cohorts.all_refused``;
    its verdicts do not depend on the time). If so the cohort is known once the stretch runs."""
    if not all(still_pending(state, t) for t in tids):
        return False
    return all_refused(model, state, c.due, tids, world)


def _before_ask_timers(blocks, limit: float) -> float:
    """``limit``, or the earliest per-ask timer if sooner: a stretch ends before it."""
    for heap in (blocks.heap_fresh, blocks.heap_checked):
        top = blocks.valid(heap)
        if top:
            limit = min(limit, top[0][0] / 1_000_000)
    return limit


def _repeat(model: "YuniKornModel", state: ClusterState, runs: list, limit: float,
            parked: bool) -> tuple[float | None, float]:
    """Apply each (cohort, its asks in refusal order, repeats, the last one's instant in µs):
    the asks' clocks and log counts, their timers and the cohort's one period after its last
    repeat, the cohorts heap without the timers passed; the wake-up and ``due_min`` the blocked
    asks' timers then give."""
    blocks = model.blocks
    blocked, cohorts = blocks.blocked, blocks.cohorts
    world = model._fit_world(state)
    for c, tids, n, at in runs:
        c.world = world  # refused in this world (known, or found so: ``_refused_here``)
        nxt = at + PREEMPT_ATTEMPT_FREQUENCY_US
        refused(model, state, tids, at, n)
        for tid in tids:
            blocked[tid] = nxt
        c.due, c.tids = nxt, tids
        model.cohort_repeats += n
        model.cohort_refusals += n * len(tids)
        model.parked_turns += n if parked else 0
    while cohorts and cohorts[0][0] / 1_000_000 < limit:
        heapq.heappop(cohorts)
    for c, _, _, _ in runs:
        blocks.push_cohort(c)
    due_min, wake = timers(blocks, float("inf"), None, True)
    return wake, due_min


__all__ = ["skip_stretch"]
