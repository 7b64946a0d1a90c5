"""Kueue's target selection (``GetTargets``): classic (hierarchical) here, fair sharing in ``fair``.

Both algorithms simulate on the ``QuotaTree`` itself (remove a candidate, test the fit, put it back)
and always leave the tree as they found it. They return the victims with Kueue's reason, or an
empty list: preemption is all-or-nothing. SEMANTICS.md sections 4, 5 and 7 describe the rules.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import merge
from dataclasses import dataclass
from operator import attrgetter
from typing import Iterator, Mapping, NamedTuple, Sequence

from makeway.policies.kueue.fair import fair_targets
from makeway.policies.kueue.quota import (ANY, FR, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER, Admitted,
                                          QNode, QuotaTree, quantities_fit_in_quota, within_nominal_in)
from makeway.policies.kueue.quota_one import Frame, frame
from makeway.policies.kueue.targets import (DEFAULT_STRATEGIES, IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING,
                                            IN_COHORT_RECLAIM_WHILE_BORROWING, IN_COHORT_RECLAMATION,
                                            LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, Preemptor,
                                            Target, fill_back, ordering_key, satisfies_policy, workload_fits)


# -- classic ----------------------------------------------------------------------------------

WITHIN_CQ, HIERARCHICAL, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(4)
_VARIANT_REASON = {WITHIN_CQ: IN_CLUSTER_QUEUE, HIERARCHICAL: IN_COHORT_RECLAMATION,
                   RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
                   RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING}


@dataclass(slots=True)
class _Cand:
    wl: Admitted
    variant: int
    lca: QNode | None
    key: tuple = ()  # quota.cand_key: within one list it orders as ordering_key does


HIER, PRIO, SAME = range(3)  # the candidate lists of classic preemption, in the order they are taken


@dataclass(slots=True)
class _Source:
    """One ClusterQueue that gives candidates: the preemptor's own (list SAME) or one found below
    an ancestor of it (HIER with hierarchical advantage, else PRIO), with that ancestor (lca)."""

    node: QNode
    own: bool
    kind: int
    advantage: bool
    lca: QNode | None


def _borrow_within_cohort_allowed(cq: QNode) -> bool:
    return cq.policy.borrow_within_cohort not in (NEVER, "", None)


def classic_sources(tree: QuotaTree, p: Preemptor) -> list[_Source]:
    """The queues whose workloads may be candidates, in the order Kueue collects them: the own
    queue, then per ancestor the queues below it that are not within nominal on the preemptor's
    flavor-resources (subtrees within nominal are skipped whole)."""
    cq = tree.cqs[p.cq]
    out: list[_Source] = []
    if cq.policy.within_cluster_queue not in (NEVER, "", None):
        out.append(_Source(cq, True, SAME, False, None))
    if cq.parent is not None and cq.policy.reclaim_within_cohort not in (NEVER, "", None):
        advantage, remaining = quantities_fit_in_quota(cq, p.requests)
        prev: QNode | None = None
        for anc in cq.path_parent_to_root():
            _sources_in_subtree(p, cq, anc, anc, prev, advantage, out)
            fits, remaining = quantities_fit_in_quota(anc, remaining)
            advantage = advantage or fits
            prev = anc
    return out


def _sources_in_subtree(p: Preemptor, cq: QNode, current: QNode, lca: QNode, skip: QNode | None,
                        advantage: bool, out: list[_Source]) -> None:
    for child in current.child_cohorts:
        if child is skip or within_nominal_in(child, p.frs_need):
            continue
        _sources_in_subtree(p, cq, child, lca, skip, advantage, out)
    for child in current.child_cqs:
        if child is cq or within_nominal_in(child, p.frs_need):
            continue
        out.append(_Source(child, False, HIER if advantage else PRIO, advantage, lca))


def _variant(p: Preemptor, cq: QNode, src: _Source, wp: int) -> int:
    """Within the queue by its policy; elsewhere hierarchical advantage or borrowWithinCohort."""
    if src.own:
        return WITHIN_CQ
    if src.advantage:
        return HIERARCHICAL
    threshold = cq.policy.max_priority_threshold
    if not _borrow_within_cohort_allowed(cq) or wp >= p.priority or (threshold is not None and wp > threshold):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _policy(cq: QNode, src: _Source) -> str:
    return cq.policy.within_cluster_queue if src.own else cq.policy.reclaim_within_cohort


def _entries(p: Preemptor, cq: QNode, src: _Source, evicted: bool) -> Iterator[_Cand]:
    """The candidates of one source, evicted ones or the others, in CandidatesOrdering (the
    queue's entries are kept in it). Generated as the search takes them: a search that fits
    after a few victims reads a few entries, not every admitted workload."""
    span = _span(p, cq, src, evicted)
    if span is None:
        return
    ordered, split, end, policy = span
    prio, created = p.priority, p.created_at
    frs = p.frs_need
    only = next(iter(frs)) if len(frs) == 1 else None
    lca = src.lca
    for i in range(0 if evicted else split, end):
        key, wl = ordered[i]
        if wl.protected or (wl.usage.get(only) is None if only is not None
                            else not any(fr in wl.usage for fr in frs)):
            continue
        wp = wl.priority
        if policy == LOWER_PRIORITY:
            if wp >= prio:
                continue
        elif policy == LOWER_OR_NEWER_EQUAL and not (wp < prio or (wp == prio and created < wl.created_at)):
            continue
        yield _Cand(wl, _variant(p, cq, src, wp), lca, key)


def _add(acc: dict[FR, int], usage: Mapping[FR, int]) -> None:
    for fr, v in usage.items():
        acc[fr] = acc.get(fr, 0) + v


def _sums(p: Preemptor, cq: QNode, src: _Source) -> tuple[int, dict[FR, int], dict[FR, int]]:
    """How many candidates the source gives, and the usage of all its candidates and of those
    valid when borrowing is allowed (not RECLAIM_WITHOUT_BORROWING), at the start of a search.
    Read from the queue's priority buckets (``QNode.buckets``): exact integer sums, in
    O(buckets); LowerOrNewerEqualPriority compares creation times, so it walks the entries."""
    every: dict[FR, int] = {}
    valid: dict[FR, int] = {}
    found = 0
    policy = _policy(cq, src)
    if policy == LOWER_OR_NEWER_EQUAL:
        for evicted in (True, False):
            for c in _entries(p, cq, src, evicted):
                found += 1
                _add(every, c.wl.usage)
                if c.variant != RECLAIM_WITHOUT_BORROWING:
                    _add(valid, c.wl.usage)
        return found, every, valid
    if policy not in (LOWER_PRIORITY, ANY):
        return 0, every, valid
    frs = p.frs_need
    for (wp, used), (n, usage) in src.node.buckets.items():
        if used.isdisjoint(frs) or (policy == LOWER_PRIORITY and wp >= p.priority):
            continue
        found += n
        _add(every, usage)
        if _variant(p, cq, src, wp) != RECLAIM_WITHOUT_BORROWING:
            _add(valid, usage)
    return found, every, valid


def fits_without(tree: QuotaTree, p: Preemptor, per_cq: Mapping[str, Mapping[FR, int]], allow_borrowing: bool) -> bool:
    """Whether the preemptor would fit with the given usage gone from each ClusterQueue.

    Available capacity only grows as usage is removed, so when this fails for every candidate
    no subset can succeed; it lets target selection give up after one pass instead of a search.
    Every node's usage after a batch of changes is the same whatever the grouping (the parts
    pushed to a parent telescope), so usage is removed in one sum per queue.
    """
    for name, usage in per_cq.items():
        tree.add_usage(tree.cqs[name], usage, -1)
    ok = workload_fits(tree, p, allow_borrowing)
    for name, usage in per_cq.items():
        tree.add_usage(tree.cqs[name], usage)
    return ok


_EAGER = 64  # up to this many candidates, one list sorted in C beats a lazy merge in Python


def _sequence(p: Preemptor, cq: QNode, sources: list[_Source], count: int) -> Iterator[_Cand]:
    """All candidates in the order the search takes them: the evicted ones of the hierarchy,
    priority and same-queue lists, then the others, each list in CandidatesOrdering (a merge of
    its queues' entries: within one list ``cand_key`` orders as ``ordering_key``, and keys are
    unique, so sorting the concatenation gives the same order)."""
    for evicted in (True, False):
        for kind in (HIER, PRIO, SAME):
            its = [_entries(p, cq, s, evicted) for s in sources if s.kind == kind]
            if len(its) == 1:
                yield from its[0]
            elif its and count <= _EAGER:
                yield from sorted((c for it in its for c in it), key=_CAND_KEY)
            elif its:
                yield from merge(*its, key=_CAND_KEY)


_CAND_KEY = attrgetter("key")


def _valid(tree: QuotaTree, p: Preemptor, c: _Cand, allow_borrowing: bool) -> bool:
    if c.wl.cq == p.cq:
        return True
    if allow_borrowing and c.variant == RECLAIM_WITHOUT_BORROWING:
        return False
    node = tree.cqs[c.wl.cq]
    if within_nominal_in(node, p.frs_need):
        return False
    for anc in node.path_parent_to_root():
        if anc is c.lca:
            break
        if within_nominal_in(anc, p.frs_need):
            return False
    return True


def classic_targets(tree: QuotaTree, p: Preemptor) -> list[Target]:
    return classic_search(tree, p)[0]


def classic_search(tree: QuotaTree, p: Preemptor) -> tuple[list[Target], bool]:
    """``classic_search_headroom`` without the headroom."""
    targets, doomed, _ = classic_search_headroom(tree, p)
    return targets, doomed


class Headroom(NamedTuple):
    """What a search doomed by its first test could take, with every candidate gone:
    ``available`` at the preemptor's queue, and the root's free quota where no node's lending
    limit holds usage back (so that all usage reaches the root: ``Frame.lends_all``), else None."""

    available: int
    root_free: int | None


def classic_search_headroom(tree: QuotaTree, p: Preemptor) -> tuple[list[Target], bool, Headroom | None]:
    """The targets; whether the search was doomed, that is no attempt fits even with every
    candidate valid at its start gone; and, for a preemptor of one flavor-resource doomed by the
    first test (all candidates gone, borrowing allowed), its headroom: ``available`` on that fr
    at its queue with every candidate gone, which is less than it asks for.

    Within a call a doomed answer stays doomed while usage only grows and no node of the cohort
    tree goes from within nominal to borrowing on any flavor-resource: candidate and valid sets
    depend on usage only through within-nominal tests, so they stay the same (the
    hierarchy/priority split may move, but not their union; the attempts can only shrink to
    ``[True]``), and more usage only makes the fit test fail harder (``available`` and
    ``borrowing`` are monotone in every node's usage, and a node's usage is monotone in its
    leaves'). An admission loop uses this to skip searches within one call.

    The headroom carries this across calls. ``available`` rises by at most the usage that leaves
    the tree. A workload admitted as a candidate leaves the usage with every candidate gone as it
    was, and one that is not a candidate only adds to it. Candidates appear only when a node
    starts borrowing. So the preemptor stays doomed while less than its request minus the
    headroom has left the tree and no node has started borrowing.

    Where no node lends with a limit, ``available`` is at most the root's free quota with every
    candidate gone, and that one moves by exactly the usage of the non-candidates admitted or
    leaving. A workload admitted in another ClusterQueue that stays within its nominal quota is
    no candidate (a search only takes from queues that borrow) until a node starts borrowing. So
    the preemptor also stays doomed while the root's free quota then, plus what left the tree,
    less what such admissions took, stays below its request: the releases an end frees are
    taken again by the admissions that follow it.
    """
    if ONE_FR and len(p.requests) == 1 and len(p.frs_need) == 1 and next(iter(p.frs_need)) in p.requests:
        return _search_one(tree, p)
    targets, doomed = _search_general(tree, p)
    return targets, doomed, None


def _search_general(tree: QuotaTree, p: Preemptor) -> tuple[list[Target], bool]:
    cq = tree.cqs[p.cq]
    sources = classic_sources(tree, p)
    every: dict[str, dict[FR, int]] = {}
    valid: dict[str, dict[FR, int]] = {}
    nonempty = [False, False, False]
    count = 0
    for src in sources:
        found, e, v = _sums(p, cq, src)
        if found:
            count += found
            nonempty[src.kind] = True
            every[src.node.name] = e
            valid[src.node.name] = v
    if not fits_without(tree, p, every, True):
        return [], True
    hier, prio = nonempty[HIER], nonempty[PRIO]
    forbidden = not _borrow_within_cohort_allowed(cq)
    under_nominal = all(cq.usage.get(fr, 0) < cq.nominal(fr) for fr in p.frs_need)
    attempts = _attempts(hier, prio, forbidden, under_nominal)
    # At the start of a search every collected candidate passes the within-nominal tests of
    # ``_valid`` (sources below a queue or cohort within nominal were not collected), so the
    # valid ones are all of them, less RECLAIM_WITHOUT_BORROWING ones when borrowing is allowed.
    # A search only removes candidates valid when it starts (removing usage only makes more
    # queues within nominal, so validity only shrinks), and fitting only gets easier as usage
    # goes: when no attempt fits with all of its starting candidates gone, no search can.
    if not any(fits_without(tree, p, valid if allow else every, allow) for allow in attempts):
        return [], True
    # The search changes usage only (nothing it reads looks at which workloads are registered),
    # and puts every bit of it back before returning.
    for allow in attempts:
        taken: list[_Cand] = []
        for c in _sequence(p, cq, sources, count):
            if not _valid(tree, p, c, allow):
                continue
            tree.add_usage(tree.cqs[c.wl.cq], c.wl.usage, -1)
            taken.append(c)
            if workload_fits(tree, p, allow):
                kept = list(taken)
                for i in range(len(taken) - 2, -1, -1):  # fill_back, on usage
                    b = taken[i]
                    tree.add_usage(tree.cqs[b.wl.cq], b.wl.usage)
                    if workload_fits(tree, p, allow):
                        kept = [k for k in kept if k is not b]
                    else:
                        tree.add_usage(tree.cqs[b.wl.cq], b.wl.usage, -1)
                for b in kept:
                    tree.add_usage(tree.cqs[b.wl.cq], b.wl.usage)
                return [Target(b.wl, _VARIANT_REASON[b.variant],
                               {"variant": b.variant, "allowBorrowing": allow, "lca": b.lca.name if b.lca else None})
                        for b in kept], False
        for b in taken:
            tree.add_usage(tree.cqs[b.wl.cq], b.wl.usage)
    return [], False


def _sources_one(f: Frame, u: list[int], ci: int, cq: QNode, p: Preemptor, v: int) -> list[_Source]:
    """``classic_sources`` on the frame's lists (within nominal: usage <= subtree quota)."""
    out: list[_Source] = []
    if cq.policy.within_cluster_queue not in (NEVER, "", None):
        out.append(_Source(cq, True, SAME, False, None))
    if cq.parent is None or cq.policy.reclaim_within_cohort in (NEVER, "", None):
        return out
    sub, lq, par, nodes = f.sub, f.lq, f.par, f.nodes
    advantage = u[ci] + v <= sub[ci]
    remaining = v - (lq[ci] - u[ci] if lq[ci] > u[ci] else 0)
    remaining = remaining if remaining > 0 else 0
    prev = -1
    anc = par[ci]
    while anc >= 0:
        _walk_one(f, u, anc, nodes[anc], prev, ci, HIER if advantage else PRIO, advantage, out)
        fits = u[anc] + remaining <= sub[anc]
        remaining -= lq[anc] - u[anc] if lq[anc] > u[anc] else 0
        remaining = remaining if remaining > 0 else 0
        advantage = advantage or fits
        prev, anc = anc, par[anc]
    return out


def _walk_one(f: Frame, u: list[int], cur: int, lca: QNode, skip: int, ci: int, kind: int, advantage: bool,
              out: list[_Source]) -> None:
    """The borrowing ClusterQueues below ``cur`` (child cohorts first, each wholly), but the
    preemptor's own queue and the subtree it came up from."""
    sub = f.sub
    for c in f.kid_cohorts[cur]:
        if c != skip and u[c] > sub[c]:
            _walk_one(f, u, c, lca, skip, ci, kind, advantage, out)
    nodes = f.nodes
    for c in f.kid_cqs[cur]:
        if c != ci and u[c] > sub[c]:
            out.append(_Source(nodes[c], False, kind, advantage, lca))


def _sums_one(p: Preemptor, cq: QNode, src: _Source, fr: FR) -> tuple[int, int, int]:
    """``_sums`` on one fr: (candidates, their usage, the usage of those valid when borrowing)."""
    policy = _policy(cq, src)
    if policy not in (LOWER_PRIORITY, ANY):
        found, e, va = _sums(p, cq, src)
        return found, e.get(fr, 0), va.get(fr, 0)
    every = valid = found = 0
    low = policy == LOWER_PRIORITY
    prio = p.priority
    for (wp, used), (n, usage) in src.node.buckets.items():
        if fr not in used or (low and wp >= prio):
            continue
        found += n
        x = usage[fr]
        every += x
        if _variant(p, cq, src, wp) != RECLAIM_WITHOUT_BORROWING:
            valid += x
    return found, every, valid


ONE_FR = True  # tests turn it off to check the general path against the same reference


def _search_one(tree: QuotaTree, p: Preemptor) -> tuple[list[Target], bool, int | None]:
    """``classic_search`` for a preemptor that needs one flavor-resource and requests nothing
    else: the same steps in the same order, on a copy of that fr's usage (``quota_one.Frame``);
    only that fr is ever read (fit and within-nominal tests), and frs move independently."""
    cq = tree.cqs[p.cq]
    fr = next(iter(p.frs_need))
    v = p.requests[fr]
    f = frame(cq.root(), fr)
    ci = f.cq_index[cq.name]
    u0 = f.usage()
    sources = _sources_one(f, u0, ci, cq, p, v)
    every: list[tuple[int, int]] = []
    valid: list[tuple[int, int]] = []
    nonempty = [False, False, False]
    count = 0
    for src in sources:
        found, e, va = _sums_one(p, cq, src, fr)
        if found:
            count += found
            nonempty[src.kind] = True
            i = f.cq_index[src.node.name]
            every.append((i, e))
            valid.append((i, va))

    def without(gone: list[tuple[int, int]]) -> list[int]:
        u = list(u0)
        for i, amount in gone:
            f.add(u, i, -amount)
        return u

    def fits_without(gone: list[tuple[int, int]], allow: bool) -> bool:
        return f.fits(without(gone), ci, v, allow)

    u_every = without(every)
    if not f.fits(u_every, ci, v, True):
        return [], True, Headroom(f.available(u_every, ci), f.sub[0] - u_every[0] if f.lends_all else None)
    hier, prio = nonempty[HIER], nonempty[PRIO]
    forbidden = not _borrow_within_cohort_allowed(cq)
    under_nominal = u0[ci] < cq.nominal(fr)
    attempts = _attempts(hier, prio, forbidden, under_nominal)
    if not any(fits_without(valid if allow else every, allow) for allow in attempts):
        return [], True, None
    sub, par, index, cq_index = f.sub, f.par, f.index, f.cq_index
    own = p.cq
    for allow in attempts:
        u = list(u0)
        taken: list[tuple[Admitted, int, QNode | None, int, int]] = []
        for _, wl, variant, lca in _sequence_one(p, cq, sources, count, fr):
            i = cq_index[wl.cq]
            if wl.cq != own:  # ``_valid``
                if allow and variant == RECLAIM_WITHOUT_BORROWING or u[i] <= sub[i]:
                    continue
                stop = index[id(lca)] if lca is not None else -1
                j = par[i]
                while j >= 0 and j != stop and u[j] > sub[j]:
                    j = par[j]
                if j >= 0 and j != stop:
                    continue
            amount = wl.usage[fr]
            f.add(u, i, -amount)
            taken.append((wl, variant, lca, i, amount))
            if f.fits(u, ci, v, allow):
                dropped = set()
                for k in range(len(taken) - 2, -1, -1):  # fill_back
                    bi, bv = taken[k][3], taken[k][4]
                    f.add(u, bi, bv)
                    if f.fits(u, ci, v, allow):
                        dropped.add(k)
                    else:
                        f.add(u, bi, -bv)
                return [Target(b, _VARIANT_REASON[bvar], {"variant": bvar, "allowBorrowing": allow,
                                                          "lca": blca.name if blca else None})
                        for k, (b, bvar, blca, _, _) in enumerate(taken) if k not in dropped], False, None
    return [], False, None


def _sequence_one(p: Preemptor, cq: QNode, sources: list[_Source], count: int,
                  fr: FR) -> Iterator[tuple[tuple, Admitted, int, QNode | None]]:
    """``_sequence`` as plain tuples (key, workload, variant, lca): keys are unique, so tuples
    sort and merge by key alone."""
    for evicted in (True, False):
        for kind in (HIER, PRIO, SAME):
            its = [_entries_one(p, cq, s, evicted, fr) for s in sources if s.kind == kind]
            if len(its) == 1:
                yield from its[0]
            elif its and count <= _EAGER:
                yield from sorted([c for it in its for c in it])
            elif its:
                yield from merge(*its)


def _attempts(hier: bool, prio: bool, forbidden: bool, under_nominal: bool) -> list[bool]:
    """The ``allow_borrowing`` values a target search tries, in order (Kueue's ``GetTargets``): only
    with borrowing where no candidate needs the distinction or borrowing is forbidden while the CQ
    is at nominal; without first where borrowing is forbidden and no hierarchical candidate exists."""
    if (not hier and not prio) or (forbidden and not under_nominal):
        return [True]
    if forbidden and not hier:
        return [False, True]
    return [True, False]


def _span(p: Preemptor, cq: QNode, src: _Source, evicted: bool) -> tuple[list, int, int, str] | None:
    """The source's ordered entries, where the evicted ones end (entries order as (not evicted,
    priority, ...)), where the candidates under the CQ's policy end, and that policy; None where
    the policy allows no candidate."""
    ordered = src.node.ordered
    split = bisect_left(ordered, ((True,),))
    policy = _policy(cq, src)
    if policy == LOWER_PRIORITY:
        # past the evicted ones, entries are lower priority only up to the first at the preemptor's
        end = split if evicted else bisect_left(ordered, ((True, p.priority),))
    elif policy in (ANY, LOWER_OR_NEWER_EQUAL):
        end = split if evicted else len(ordered)
    else:
        return None
    return ordered, split, end, policy


def _entries_one(p: Preemptor, cq: QNode, src: _Source, evicted: bool,
                 fr: FR) -> Iterator[tuple[tuple, Admitted, int, QNode | None]]:
    """``_entries`` for one fr, with the variant worked out per source (``_variant``)."""
    span = _span(p, cq, src, evicted)
    if span is None:
        return
    ordered, split, end, policy = span
    prio, created = p.priority, p.created_at
    lca = src.lca
    fixed = WITHIN_CQ if src.own else HIERARCHICAL if src.advantage else None
    threshold = cq.policy.max_priority_threshold
    forbidden = not _borrow_within_cohort_allowed(cq)
    newer = policy == LOWER_OR_NEWER_EQUAL
    for i in range(0 if evicted else split, end):
        key, wl = ordered[i]
        if wl.protected or fr not in wl.usage:
            continue
        wp = wl.priority
        if wp >= prio and (policy == LOWER_PRIORITY or newer and not (wp == prio and created < wl.created_at)):
            continue
        if fixed is not None:
            variant = fixed
        elif forbidden or wp >= prio or (threshold is not None and wp > threshold):
            variant = RECLAIM_WITHOUT_BORROWING
        else:
            variant = RECLAIM_WHILE_BORROWING
        yield key, wl, variant, lca


def get_targets(tree: QuotaTree, p: Preemptor, fair_sharing: bool,
                strategies: Sequence[str] = DEFAULT_STRATEGIES) -> list[Target]:
    if fair_sharing:
        return fair_targets(tree, p, strategies)
    return classic_targets(tree, p)


__all__ = ["DEFAULT_STRATEGIES", "IN_CLUSTER_QUEUE", "IN_COHORT_FAIR_SHARING", "IN_COHORT_RECLAIM_WHILE_BORROWING",
           "IN_COHORT_RECLAMATION", "LESS_THAN_INITIAL_SHARE", "LESS_THAN_OR_EQUAL_TO_FINAL_SHARE", "Preemptor",
           "Headroom", "Target", "classic_search", "classic_search_headroom", "classic_targets", "fair_targets",
           "fill_back", "get_targets", "ordering_key", "satisfies_policy", "workload_fits"]
