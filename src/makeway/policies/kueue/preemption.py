"""Kueue's target selection (``GetTargets``): classic (hierarchical) and fair-sharing preemption.

Both algorithms simulate on the ``QuotaTree`` itself (remove a candidate, test the fit, put it back)
and always leave the tree as they found it. They return the victims with Kueue's reason, or an
empty list: preemption is all-or-nothing. SEMANTICS.md sections 4, 5 and 7 describe the rules.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Iterable, Sequence

from makeway.policies.kueue.drs import Share, dominant_resource_share
from makeway.policies.kueue.quota import (ANY, FR, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER, Admitted,
                                          QNode, QuotaTree, borrowing, cq_available,
                                          quantities_fit_in_quota, within_nominal_in)

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(slots=True)
class Preemptor:
    """The pending workload: total request per fr (zeros dropped) and the frs in Preempt mode."""

    name: str
    cq: str
    priority: int
    requests: dict[FR, int]
    frs_need: frozenset[FR]
    created_at: float = float("-inf")
    uid: str = ""


@dataclass(slots=True)
class Target:
    workload: Admitted
    reason: str
    values: dict = field(default_factory=dict)


# -- shared pieces --------------------------------------------------------------------------


def satisfies_policy(p: Preemptor, cand: Admitted, policy: str) -> bool:
    if policy == LOWER_PRIORITY:
        return cand.priority < p.priority
    if policy == LOWER_OR_NEWER_EQUAL:
        return cand.priority < p.priority or (cand.priority == p.priority and p.created_at < cand.created_at)
    return policy == ANY


def ordering_key(cand: Admitted, preemptor_cq: str) -> tuple:
    """CandidatesOrdering as a sort key: evicted, other queue, low priority, newest admission, uid."""
    return (not cand.evicted, cand.cq == preemptor_cq, cand.priority, -cand.admitted_at, cand.uid, cand.name)


def workload_fits(tree: QuotaTree, p: Preemptor, allow_borrowing: bool) -> bool:
    cq = tree.cqs[p.cq]
    for fr, v in p.requests.items():
        if not allow_borrowing and borrowing(cq, fr, v):
            return False
        if v > cq_available(cq, fr):
            return False
    return True


def fits_without_all(tree: QuotaTree, p: Preemptor, candidates: Iterable[Admitted],
                     allow_borrowing: bool = True) -> bool:
    """Whether the preemptor would fit (borrowing allowed unless said) with every candidate gone.

    Available capacity only grows as usage is removed, so when even this fails no subset can
    succeed; it lets target selection give up after one pass instead of a full search.
    """
    # Usage is removed per ClusterQueue in one sum: every node's usage after a batch of changes
    # is the same whatever the grouping (the parts pushed to a parent telescope), and the
    # candidates stay registered, since only quantities are read here.
    per_cq: dict[str, dict[FR, int]] = {}
    for wl in candidates:
        acc = per_cq.setdefault(wl.cq, {})
        for fr, v in wl.usage.items():
            acc[fr] = acc.get(fr, 0) + v
    for name, usage in per_cq.items():
        tree.add_usage(tree.cqs[name], usage, -1)
    ok = workload_fits(tree, p, allow_borrowing)
    for name, usage in per_cq.items():
        tree.add_usage(tree.cqs[name], usage)
    return ok


def fill_back(tree: QuotaTree, p: Preemptor, targets: list[Target], fits: Callable[[], bool]) -> list[Target]:
    """Minimisation: put earlier victims back, newest first, while the preemptor still fits.

    The last victim (the one that made the workload fit) is never reconsidered.
    """
    kept = list(targets)
    for i in range(len(targets) - 2, -1, -1):
        t = targets[i]
        tree.add_workload(t.workload)
        if fits():
            kept.remove(t)
        else:
            tree.remove_workload(t.workload)
    return kept


def _restore(tree: QuotaTree, targets: Iterable[Target]) -> None:
    for t in targets:
        tree.add_workload(t.workload)


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


def _borrow_within_cohort_allowed(cq: QNode) -> bool:
    return cq.policy.borrow_within_cohort not in (NEVER, "", None)


def _collect_in_subtree(p: Preemptor, cq: QNode, current: QNode, lca: QNode, skip: QNode | None,
                        advantage: bool, out: list[_Cand]) -> None:
    for child in current.child_cohorts:
        if child is skip or within_nominal_in(child, p.frs_need):
            continue
        _collect_in_subtree(p, cq, child, lca, skip, advantage, out)
    for child in current.child_cqs:
        if child is cq or within_nominal_in(child, p.frs_need):
            continue
        _collect_from(p, cq, child.ordered, advantage, lca, out)


def _collect_from(p: Preemptor, cq: QNode, ordered: list, advantage: bool, lca: QNode | None,
                  out: list[_Cand]) -> None:
    """The candidates of one queue (``ordered``: its entries, the preemptor's own queue or one
    that can give quota back) with their variant: within the queue by its policy, elsewhere by
    reclaimWithinCohort, then hierarchical advantage or borrowWithinCohort. One tight loop: it
    runs over every admitted workload of those queues at every target search."""
    frs = p.frs_need
    only = next(iter(frs)) if len(frs) == 1 else None
    prio, created = p.priority, p.created_at
    own = ordered is cq.ordered
    policy = cq.policy.within_cluster_queue if own else cq.policy.reclaim_within_cohort
    if policy == LOWER_PRIORITY:
        # entries order as (not evicted, priority, ...): past the evicted ones, the rest are
        # lower priority only up to the first entry at the preemptor's priority
        ordered = ordered[:bisect_left(ordered, ((True, prio),))]
    elif policy not in (ANY, LOWER_OR_NEWER_EQUAL):
        return
    borrow_ok = _borrow_within_cohort_allowed(cq)
    threshold = cq.policy.max_priority_threshold
    for key, wl in ordered:
        if wl.protected or (wl.usage.get(only) is None if only is not None
                            else not any(fr in wl.usage for fr in frs)):
            continue
        wp = wl.priority
        if policy == LOWER_PRIORITY:
            if wp >= prio:
                continue
        elif policy == LOWER_OR_NEWER_EQUAL and not (wp < prio or (wp == prio and created < wl.created_at)):
            continue
        if own:
            v = WITHIN_CQ
        elif advantage:
            v = HIERARCHICAL
        elif not borrow_ok or wp >= prio or (threshold is not None and wp > threshold):
            v = RECLAIM_WITHOUT_BORROWING
        else:
            v = RECLAIM_WHILE_BORROWING
        out.append(_Cand(wl, v, lca, key))


def classic_candidates(tree: QuotaTree, p: Preemptor, ordered: bool = True) -> tuple[list[_Cand], list[_Cand], list[_Cand]]:
    """(hierarchy, priority, same-CQ) candidate lists, each in CandidatesOrdering (``ordered``)."""
    cq = tree.cqs[p.cq]
    same: list[_Cand] = []
    if cq.policy.within_cluster_queue not in (NEVER, "", None):
        _collect_from(p, cq, cq.ordered, False, None, same)  # already in CandidatesOrdering
    hier: list[_Cand] = []
    prio: list[_Cand] = []
    if cq.parent is not None and cq.policy.reclaim_within_cohort not in (NEVER, "", None):
        advantage, remaining = quantities_fit_in_quota(cq, p.requests)
        prev: QNode | None = None
        for anc in cq.path_parent_to_root():
            _collect_in_subtree(p, cq, anc, anc, prev, advantage, hier if advantage else prio)
            fits, remaining = quantities_fit_in_quota(anc, remaining)
            advantage = advantage or fits
            prev = anc
    if ordered:
        order_candidates(p, (hier, prio, same))
    return hier, prio, same


def order_candidates(p: Preemptor, lists: Iterable[list[_Cand]]) -> None:
    """Each list holds either only the preemptor's own queue or only other queues, so the
    per-queue key orders it as ``ordering_key`` would; the lists are runs already sorted per queue."""
    for lst in lists:
        lst.sort(key=_CAND_KEY)


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
    cq = tree.cqs[p.cq]
    hier, prio, same = classic_candidates(tree, p, ordered=False)
    if not fits_without_all(tree, p, [c.wl for c in hier + prio + same]):
        return []  # the check sums usage, so it needs no order: sorting waits until it passes
    order_candidates(p, (hier, prio, same))
    seq = ([c for c in hier if c.wl.evicted] + [c for c in prio if c.wl.evicted] + [c for c in same if c.wl.evicted]
           + [c for c in hier if not c.wl.evicted] + [c for c in prio if not c.wl.evicted]
           + [c for c in same if not c.wl.evicted])
    forbidden = not _borrow_within_cohort_allowed(cq)
    under_nominal = all(cq.usage.get(fr, 0) < cq.nominal(fr) for fr in p.frs_need)
    if (not hier and not prio) or (forbidden and not under_nominal):
        attempts = [True]
    elif forbidden and not hier:
        attempts = [False, True]
    else:
        attempts = [True, False]
    # A search only removes candidates valid when it starts (removing usage only makes more
    # queues within nominal, so validity only shrinks), and fitting only gets easier as usage
    # goes: when no attempt fits with all of its starting candidates gone, no search can.
    if not any(fits_without_all(tree, p, [c.wl for c in seq if _valid(tree, p, c, allow)], allow)
               for allow in attempts):
        return []
    # The search changes usage only (nothing it reads looks at which workloads are registered),
    # and puts every bit of it back before returning.
    for allow in attempts:
        taken: list[_Cand] = []
        for c in seq:
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
                        for b in kept]
        for b in taken:
            tree.add_usage(tree.cqs[b.wl.cq], b.wl.usage)
    return []


# -- fair sharing -------------------------------------------------------------------------------


def fair_candidates(tree: QuotaTree, p: Preemptor) -> list[Admitted]:
    cq = tree.cqs[p.cq]
    out: list[Admitted] = []
    if cq.policy.within_cluster_queue not in (NEVER, "", None):
        out.extend(wl for wl in cq.workloads.values()
                   if wl.uses_any(p.frs_need) and satisfies_policy(p, wl, cq.policy.within_cluster_queue))
    if cq.parent is not None and cq.policy.reclaim_within_cohort not in (NEVER, "", None):
        for other in _cqs_in_subtree(cq.root()):
            if other is cq or not any(borrowing(other, fr) for fr in p.frs_need):
                continue
            out.extend(wl for wl in other.workloads.values()
                       if wl.uses_any(p.frs_need) and satisfies_policy(p, wl, cq.policy.reclaim_within_cohort))
    out.sort(key=lambda w: ordering_key(w, p.cq))
    return out


def _cqs_in_subtree(n: QNode) -> Iterable[QNode]:
    if n.is_cq:
        yield n
        return
    for c in n.child_cohorts:
        yield from _cqs_in_subtree(c)
    yield from n.child_cqs


def _path_to_root(n: QNode) -> list[QNode]:
    out = [n]
    while out[-1].parent is not None:
        out.append(out[-1].parent)  # type: ignore[arg-type]
    return out


def almost_lcas(a: QNode, b: QNode) -> tuple[QNode, QNode]:
    """The children of the lowest common ancestor on the paths to ``a`` and ``b``."""
    pa, pb = _path_to_root(a), _path_to_root(b)
    ids_b = {id(x): i for i, x in enumerate(pb)}
    for i, x in enumerate(pa):
        j = ids_b.get(id(x))
        if j is not None:
            return pa[i - 1] if i > 0 else x, pb[j - 1] if j > 0 else x
    return pa[-1], pb[-1]


class TargetOrdering:
    """Which ClusterQueue to take the next victim from (``TargetClusterQueueOrdering``)."""

    def __init__(self, tree: QuotaTree, p: Preemptor, candidates: Sequence[Admitted]):
        self.tree = tree
        self.p = p
        self.cq = tree.cqs[p.cq]
        self.root = self.cq.root()
        self.groups: dict[str, list[Admitted]] = {}
        for wl in candidates:
            self.groups.setdefault(wl.cq, []).append(wl)
        self.pruned: set[int] = set()
        self.on_path = {id(n) for n in _path_to_root(self.cq)}

    def drop(self, cq: QNode) -> None:
        self.pruned.add(id(cq))

    def __iter__(self):
        while True:
            t = self._next()
            if t is None:
                return
            yield t

    def _next(self) -> QNode | None:
        if self.root.is_cq:  # standalone preemptor queue
            return self.root if self.groups.get(self.root.name) and id(self.root) not in self.pruned else None
        while id(self.root) not in self.pruned:
            node = self.root
            while True:
                best_cq, best_cq_share = None, None
                for c in node.child_cqs:
                    if id(c) in self.pruned:
                        continue
                    share = dominant_resource_share(c)
                    if not self.groups.get(c.name) or (c is not self.cq and not share.borrowing):
                        self.pruned.add(id(c))
                        continue
                    s = share.key()
                    if best_cq is None or s > best_cq_share or (
                            s == best_cq_share and ordering_key(self.groups[c.name][0], self.p.cq)
                            < ordering_key(self.groups[best_cq.name][0], self.p.cq)):
                        best_cq, best_cq_share = c, s
                best_co, best_co_share = None, None
                for c in node.child_cohorts:
                    if id(c) in self.pruned:
                        continue
                    share = dominant_resource_share(c)
                    if id(c) not in self.on_path and not share.borrowing:
                        self.pruned.add(id(c))
                        continue
                    s = share.key()
                    if best_co is None or s >= best_co_share:
                        best_co, best_co_share = c, s
                if best_cq is None and best_co is None:
                    self.pruned.add(id(node))
                    break
                if best_co is not None and (best_cq is None or best_co_share >= best_cq_share):
                    node = best_co
                    continue
                return best_cq
        return None


def _strategy(name: str) -> Callable[[Share, Share, Share], bool]:
    if name == LESS_THAN_INITIAL_SHARE:
        return lambda pn, to, tn: pn.key() < to.key()
    return lambda pn, to, tn: pn.key() <= tn.key()


def fair_targets(tree: QuotaTree, p: Preemptor, strategies: Sequence[str] = DEFAULT_STRATEGIES) -> list[Target]:
    cands = fair_candidates(tree, p)
    if not cands:
        return []
    strategies = list(strategies) or list(DEFAULT_STRATEGIES)
    cq = tree.cqs[p.cq]
    tree.add_usage(cq, p.requests)

    def fits() -> bool:
        tree.add_usage(cq, p.requests, -1)
        ok = workload_fits(tree, p, True)
        tree.add_usage(cq, p.requests)
        return ok

    within_nominal = all(cq.usage.get(fr, 0) <= cq.nominal(fr) for fr in p.frs_need)
    targets: list[Target] = []
    retry: list[Admitted] = []
    done = False

    def take(wl: Admitted, reason: str, values: dict) -> bool:
        tree.remove_workload(wl)
        targets.append(Target(wl, reason, values))
        return fits()

    first = _strategy(strategies[0])
    ordering = TargetOrdering(tree, p, cands)
    for t in ordering:
        group = ordering.groups[t.name]
        if t is cq:
            if take(group.pop(0), IN_CLUSTER_QUEUE, {}):
                done = True
                break
            continue
        if within_nominal:
            if take(group.pop(0), IN_COHORT_RECLAMATION, {"preemptorWithinNominal": True}):
                done = True
                break
            continue
        p_side, t_side = almost_lcas(cq, t)
        p_new = dominant_resource_share(p_side)
        t_old = dominant_resource_share(t_side)
        if p_new.infinite and not t_old.infinite:
            retry.extend(group)
            group.clear()
            continue
        while group:
            z = group.pop(0)
            tree.remove_workload(z)
            t_new = dominant_resource_share(t_side)
            tree.add_workload(z)
            if first(p_new, t_old, t_new):
                values = {"strategy": strategies[0], "preemptorNewShare": p_new.describe(),
                          "targetOldShare": t_old.describe(), "targetNewShare": t_new.describe(),
                          "preemptorNode": p_side.name, "targetNode": t_side.name}
                if take(z, IN_COHORT_FAIR_SHARING, values):
                    done = True
                break
            retry.append(z)
        if done:
            break
    if not done and len(strategies) > 1 and retry:
        second = _strategy(strategies[1])
        retry.sort(key=lambda w: ordering_key(w, p.cq))
        ordering = TargetOrdering(tree, p, retry)
        for t in ordering:
            group = ordering.groups[t.name]
            p_side, t_side = almost_lcas(cq, t)
            p_new = dominant_resource_share(p_side)
            t_old = dominant_resource_share(t_side)
            z = group.pop(0)
            if second(p_new, t_old, t_old):
                values = {"strategy": strategies[1], "preemptorNewShare": p_new.describe(),
                          "targetOldShare": t_old.describe(), "preemptorNode": p_side.name,
                          "targetNode": t_side.name}
                if take(z, IN_COHORT_FAIR_SHARING, values):
                    done = True
                    break
            ordering.drop(t)
    tree.add_usage(cq, p.requests, -1)
    if not done:
        _restore(tree, targets)
        return []
    targets = fill_back(tree, p, targets, lambda: workload_fits(tree, p, True))
    _restore(tree, targets)
    return targets


def get_targets(tree: QuotaTree, p: Preemptor, fair_sharing: bool,
                strategies: Sequence[str] = DEFAULT_STRATEGIES) -> list[Target]:
    if fair_sharing:
        return fair_targets(tree, p, strategies)
    return classic_targets(tree, p)

