"""Kueue's fair-sharing target selection (``GetTargets`` with fair sharing): candidates ordered
by the DRS of their ClusterQueue's side of the almost-LCA, taken while a strategy allows it.
SEMANTICS.md section 5 describes the rules.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from makeway.policies.kueue.drs import Share, dominant_resource_share
from makeway.policies.kueue.quota import NEVER, Admitted, QNode, QuotaTree, borrowing
from makeway.policies.kueue.targets import (DEFAULT_STRATEGIES, IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING,
                                            IN_COHORT_RECLAMATION, LESS_THAN_INITIAL_SHARE, Preemptor, Target,
                                            _restore, fill_back, ordering_key, satisfies_policy, workload_fits)

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
