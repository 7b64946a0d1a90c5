"""A call whose only work is refusals, done without the walk (issue 20).

Most calls of a long YuniKorn run are the 15 s timers of asks refused by their queue's guarantee:
the walk releases them, finds each placed nowhere and refused again, and blocks it 15 s on.
``repeat_refusals`` does such a call in closed form when nothing else can be walked: no ask
released by a key, no workload with an unblocked ask. What is due is then a cohort's asks
(``Blocks``: refused together, so due together), asks whose own timer is due (a fresh ask's
first check, or one after a real attempt) and the asks parked for want of their leaf's
attempts. Per leaf, the walk gives the first ``MAX_PREEMPTION_ATTEMPTS`` of them in walk order
an attempt and parks the rest; an attempt is refused when its (queue, request) is
placed nowhere and doomed by the guarantee (``_FastPass.placeable``, ``_FastPass.doomed``), since
nothing is started or attempted before it in the call. When every attempt would be refused, each
refused ask gets what ``_FastPass.doomed_attempt`` gives, they form the next cohort, and
``_wake`` and ``_due_min`` are what the walk would leave. Otherwise nothing is changed and the call
walks.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from itertools import chain
from typing import TYPE_CHECKING

from makeway.core.state import ClusterState
from makeway.policies.yunikorn.blocks import PARKED, Cohort, walk_key
from makeway.policies.yunikorn.common import MAX_PREEMPTION_ATTEMPTS, PREEMPT_ATTEMPT_FREQUENCY_US
from makeway.policies.yunikorn.fastpass import RESERVATION_TIMEOUT_US, _FastPass, timers
from makeway.policies.yunikorn.preemptor import DOES_NOT_GUARANTEE, DOES_NOT_HELP
from makeway.policies.yunikorn.resources import fit_in_max_undef

if TYPE_CHECKING:
    from makeway.policies.yunikorn.model import YuniKornModel


def repeat_refusals(model: "YuniKornModel", state: ClusterState, now_us: int) -> bool:
    """Do this call as the walk would if it only refuses (see the module doc); False, changing
    nothing, when it may do anything else."""
    blocks = model.blocks
    cohort = blocks.cohort_top()
    if cohort is not None and cohort.due > now_us:
        cohort = None
    if blocks.restream or model._bver != model._version(state):
        return False
    timed = _due_asks(blocks, state, now_us)
    if timed is None or (cohort is None and not blocks.nparked and not timed):
        return False
    if (cohort is not None and blocks.next_cohort_due() <= now_us) or blocks.candidates(state):
        return False
    members = blocks.live(cohort) if cohort is not None else []
    world = model._fit_world(state)
    # refused in this very world: no start, release, withdrawal, mark or reservation since, so the
    # call that refused them moved nothing before any of them
    known = cohort is not None and cohort.world == world
    parked = blocks.nparked
    if timed:
        in_cohort = set(members)
        timed = [t for t in timed if t not in in_cohort]
        refuse, park, unsure = turns(model, state, members + timed, known, frozenset(timed))
    elif parked and cohort is not None and own_turns(model, state, cohort, members):
        refuse, park, unsure = cohort.tids, [], ([] if known else cohort.tids)
    elif parked:
        refuse, park, unsure = turns(model, state, members, known)
    elif known:
        refuse, park, unsure = members, [], []  # a cohort has no more asks in a leaf than attempts
    else:
        refuse, park = [t for t in members if still_pending(state, t)], []
        unsure = refuse
    if unsure and not all_refused(model, state, now_us, unsure, world):
        return False
    due = now_us + PREEMPT_ATTEMPT_FREQUENCY_US
    refused(model, state, refuse, now_us, 1)
    blocked = blocks.blocked
    for tid in refuse:
        if blocked[tid] == PARKED:
            blocks.nparked -= 1
        blocked[tid] = due
    wls = state.workloads
    for tid in park:
        blocks.park(tid, wls[tid.rsplit("/", 2)[0]])
    if cohort is not None:
        heapq.heappop(blocks.cohorts)
        for tid in members:
            if blocked.get(tid) == cohort.due:
                blocks.release(tid)  # no longer pending: released, as its timer would have
    if refuse:
        blocks.add_cohort(due, world, refuse)
    due_min, wake = timers(blocks, float("inf"), None, bool(state.allocations))
    if blocks.nparked:
        due_min = min(due_min, now_us)
    for tid, at in model.reserved_at.items():
        if tid in model.reservations:
            due_min = min(due_min, at + RESERVATION_TIMEOUT_US + 1)
    model._wake, model._due_min = wake, due_min
    model.cohort_repeats += 1
    model.cohort_refusals += len(refuse)
    model.parked_turns += bool(parked)
    return True


def refused(model: "YuniKornModel", state: ClusterState, tids: list[str], last_us: int, times: int) -> None:
    """What ``times`` refusals by the guarantee, the last at ``last_us``, leave on each ask: its
    check clock, and its log counts (``log_failure``, inlined)."""
    asks = model.asks
    for tid in tids:
        ask = asks.get(tid)
        if ask is None:
            ask = model._ask(state, tid)
        ask.last_check_us = last_us
        log = ask.log
        log[DOES_NOT_GUARANTEE] = log.get(DOES_NOT_GUARANTEE, 0) + times
        log[DOES_NOT_HELP] = log.get(DOES_NOT_HELP, 0) + times


def turns(model: "YuniKornModel", state: ClusterState, members: list[str], known: bool,
          fresh: frozenset[str] = frozenset()) -> tuple[list[str], list[str], list[str]]:
    """Per leaf, the due asks (``members``: a cohort's and those whose own timer is due, and the
    parked) in walk order: those that get an attempt, the members that find their leaf's
    attempts spent (to be parked), and those of the attempts whose refusal is not ``known``
    (all but the members of a known cohort, less the ``fresh`` ones: their own timers)."""
    blocks, pending = model.blocks, state.pending
    blocked = blocks.blocked
    mine, per_wl, member_set = _plan(model, state, members)
    refuse: list[str] = []
    park: list[str] = []
    unknown: list[str] = []
    for leaf in sorted(set(mine) | set(blocks.parked_leaves())):
        budget = MAX_PREEMPTION_ATTEMPTS
        keys = mine.get(leaf, ())
        listed = blocks.by_leaf.get(leaf, ())
        if keys:
            # walk order: the members' workloads and the parked ones (usually all after them)
            listed = chain(keys, listed) if not listed or keys[-1] < listed[0] else heapq.merge(keys, listed)
        seen: set[str] = set()
        last = None
        for wk in listed:
            if budget == 0:
                break
            w = wk[2]
            if w in seen:
                continue
            seen.add(w)
            last = wk
            here = per_wl.get(w, 0)  # members of this workload not reached yet
            for tid in pending.get(w, ()):
                if tid in member_set:
                    here -= 1
                    if budget > 0:
                        budget -= 1
                        refuse.append(tid)
                        if not known or tid in fresh:
                            unknown.append(tid)
                    else:
                        park.append(tid)
                elif budget > 0:
                    if blocked.get(tid) == PARKED:
                        budget -= 1
                        refuse.append(tid)
                        unknown.append(tid)
                elif here == 0:
                    break
        if budget == 0 and keys and keys[-1] > last:
            # the leaf's attempts are spent: only the members' workloads not reached yet are
            # read, their members parked (the parked asks between them could get nothing)
            for wk in keys[bisect_right(keys, last):]:
                here = per_wl[wk[2]]
                for tid in pending.get(wk[2], ()):
                    if tid in member_set:
                        park.append(tid)
                        here -= 1
                        if here == 0:
                            break
    return refuse, park, unknown


def own_turns(model: "YuniKornModel", state: ClusterState, c: Cohort, tids: list[str]) -> bool:
    """True when ``turns`` over a cohort's live asks (``tids``) would give every one of them an
    attempt and park none, nor give one to any other ask, in a way that is plain without the
    walk; False when it may not (``turns`` then decides). It is plain when every ask of the
    cohort is live and still pending, no leaf holds more of them than its attempts, and each leaf
    with parked asks is one of the cohort's, holding exactly as many of its asks as attempts,
    with every parked workload after the last of them in walk order: the attempts are spent on
    the cohort's asks before any parked one is reached. Per leaf (count, last walk key) is kept
    on the cohort with the list it was made from (``Cohort.leaves``, with each ask's workload);
    a repeat keeps the list."""
    if len(tids) != len(c.tids):
        return False
    hit = c.leaves
    if hit is None or hit[0] is not c.tids:
        wls, key_of = state.workloads, model.blocks.key_of
        leaves: dict[str, tuple[int, tuple]] = {}
        owners = []
        for tid in c.tids:
            leaf = key_of[tid][0]
            w = tid.rsplit("/", 2)[0]
            owners.append((w, tid))
            wk = walk_key(wls[w])
            n, last = leaves.get(leaf, (0, wk))
            leaves[leaf] = (n + 1, max(last, wk))
        hit = c.leaves = (c.tids, leaves, owners)
    leaves = hit[1]
    by_leaf = model.blocks.by_leaf
    for leaf, (n, last) in leaves.items():
        if n > MAX_PREEMPTION_ATTEMPTS:
            return False
        lst = by_leaf.get(leaf)
        if lst and (n < MAX_PREEMPTION_ATTEMPTS or lst[0] <= last):
            return False
    for leaf, lst in by_leaf.items():
        if lst and leaf not in leaves:
            return False
    pending = state.pending
    return all(t in pending.get(w, ()) for w, t in hit[2])


def still_pending(state: ClusterState, tid: str) -> bool:
    """Whether a blocked ask is still pending (one that started or was withdrawn is not)."""
    return tid in state.pending.get(tid.rsplit("/", 2)[0], ())


def _due_asks(blocks, state: ClusterState, now_us: int) -> list[str] | None:
    """The asks whose own timer (a per-ask heap's, not a cohort's) is due, in timer order; None
    when one of them is no longer pending (the walk drops it). The heaps are read, not popped."""
    out: list[tuple[int, str]] = []
    blocked = blocks.blocked
    for heap in (blocks.heap_fresh, blocks.heap_checked):
        stack, n = [0], len(heap)
        while stack:
            i = stack.pop()
            if i < n and heap[i][0] <= now_us:
                due, tid = heap[i]
                if blocked.get(tid) == due:
                    if not still_pending(state, tid):
                        return None
                    out.append(heap[i])
                stack.append(2 * i + 1)
                stack.append(2 * i + 2)
    out.sort()
    return list(dict.fromkeys(t for _, t in out))


def _plan(model: "YuniKornModel", state: ClusterState,
          members: list[str]) -> tuple[dict[str, list], dict[str, int], frozenset[str]]:
    """What ``turns`` reads of a list of asks: per leaf the walk keys of their workloads, sorted;
    the asks per workload; the asks as a set. A function of the list alone (an ask's leaf and
    its workload's walk key never change), kept per list: a cohort repeats with the same asks
    stretch after stretch."""
    memo = model._plans
    if memo[0] != id(state):
        memo = model._plans = (id(state), {})
    key = tuple(members)
    hit = memo[1].get(key)
    if hit is not None:
        return hit
    wls, key_of = state.workloads, model.blocks.key_of
    mine: dict[str, list] = {}
    per_wl: dict[str, int] = {}
    for tid in members:
        w = tid.rsplit("/", 2)[0]
        n = per_wl.get(w)
        if n is None:
            per_wl[w] = 1
            mine.setdefault(key_of[tid][0], []).append(walk_key(wls[w]))
        else:
            per_wl[w] = n + 1
    for keys in mine.values():
        keys.sort()
    if len(memo[1]) >= 4096:  # lists of cohorts long gone: a bound, not a working set
        memo[1].clear()
    hit = memo[1][key] = (mine, per_wl, frozenset(members))
    return hit


def all_refused(model: "YuniKornModel", state: ClusterState, now_us: int, refuse: list[str], world: tuple) -> bool:
    """Whether each ask in ``refuse`` would be placed nowhere and doomed, asked once per (queue,
    request) and world, through the verdicts the walk keeps (no headroom or no node for this
    version, the guarantee's for this world) and keeping those it finds."""
    if model._refusals[0] != world:
        model._refusals = (world, {})
    verdicts = model._refusals[1]
    run = None
    key_of = model.blocks.key_of
    ver = model._version(state)
    nohead, nofit = model._nohead, model._nofit
    for key in {key_of[t] for t in refuse}:
        out = verdicts.get(key)
        if out is None:
            queue, rkey = key
            if nohead.get(key) != ver and nofit.get(rkey) != ver:
                if run is None:
                    run = _FastPass(model, state, now_us, set(), [])
                res = dict(rkey)
                if not fit_in_max_undef(run.headroom(queue), res):
                    nohead[key] = ver
                elif run.first_fit(res) is None:
                    nofit[rkey] = ver
                else:
                    verdicts[key] = False
                    return False
            out = model._doom_cache.get(key) if model._doom_world == world else None
            if out is None:
                if run is None:
                    run = _FastPass(model, state, now_us, set(), [])
                out = run.doomed(queue, dict(rkey), rkey)
            verdicts[key] = out
        if not out:
            return False
    return True


__all__ = ["all_refused", "own_turns", "refused", "repeat_refusals", "still_pending", "turns"]
