"""What both of Kueue's target selections share: the preemptor and its targets, the reasons,
the candidates' policy and order, the fit test, and the fill-back that keeps only the victims
needed (``preemption`` for classic, ``fair`` for fair sharing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from makeway.policies.kueue.quota import (ANY, FR, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, Admitted, QuotaTree,
                                          borrowing, cq_available)

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
