"""One Kueue scheduling cycle (``Scheduler.schedule``) on the quota tree.

The heads (one pending workload per active ClusterQueue) are nominated against the snapshot:
flavor assignment with fungibility and the preemption oracle (``flavorassign``), target selection
(``preemption.get_targets``), partial admission when the full request cannot be placed
(``partial``). They are then ordered (classic: not borrowing first, priority, FIFO; fair sharing:
the DRS tournament, ``tournament_winner``, which the simulator model uses too) and processed one by
one against the snapshot as earlier heads changed it: admitted, preempting, skipped (targets taken
by an earlier head, or no longer fitting), waiting without targets (and then reserving capacity),
or no fit. Finally each head that was not admitted is requeued, to the active heap or to the
inadmissible list (``requeue_to_active``).

Pure: it works on a ``QuotaTree`` and plain descriptions of the heads, adds the usage of admitted
workloads and preemptors to the tree (as Kueue's snapshot does) and leaves victims in it (their
quota is released later, by eviction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from makeway.policies.kueue.drs import dominant_resource_share
from makeway.policies.kueue.flavorassign import (DEFERRED_FIT, FIT, G_NO_CANDIDATES, G_PREEMPT, G_RECLAIM, NOFIT,
                                                 PREEMPT, WAITING_FOR_QUOTA, FlavorAssignment, Fungibility,
                                                 PodSetRequest, assign, lowest_subtree_that_fits)
from makeway.policies.kueue.partial import can_be_partially_admitted, reduce_pod_sets
from makeway.policies.kueue.preemption import DEFAULT_STRATEGIES, Preemptor, Target, get_targets
from makeway.policies.kueue.quota import ANY, FR, QNode, QuotaTree, borrowing, cq_available

# requeue reasons (pkg/cache/queue)
RQ_GENERIC = ""
RQ_FAILED_AFTER_NOMINATION = "FailedAfterNomination"
RQ_NAMESPACE_MISMATCH = "NamespaceMismatch"
RQ_PENDING_PREEMPTION = "PendingPreemption"
RQ_NO_FIT = "NoFit"
RQ_NO_CANDIDATES = "PreemptionNoCandidates"

WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
MISCONFIGURED = "Misconfigured"

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

# entry status
NOT_NOMINATED, NOMINATED, SKIPPED, ASSUMED = "", "nominated", "skipped", "assumed"

# preemption_target_recomputations_total results
NEW_TARGETS, DEFERRED, SKIPPED_RESULT = "new_targets", "deferred_fit", "skipped"


@dataclass(slots=True)
class Head:
    """A pending workload at the head of its ClusterQueue."""

    key: str
    cq: str
    priority: int
    created_at: float
    uid: str
    pod_sets: list[PodSetRequest]
    # rejected before flavor assignment: (QuotaReserved reason, requeue reason, message)
    rejected: tuple[str, str, str] | None = None

    def partial_allowed(self) -> bool:
        return can_be_partially_admitted([p.count for p in self.pod_sets], [p.min_count for p in self.pod_sets])


@dataclass(slots=True)
class CycleConfig:
    fair: bool = False
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    partial_admission: bool = True  # gate PartialAdmission
    recompute_on_overlap: bool = True  # gate RecomputeAssignmentUponPreemptionTargetsOverlap
    preserve_scan_progress: bool = True  # gate FlavorFungibilityPreserveScanProgress
    fungibility: Mapping[str, Fungibility] = field(default_factory=dict)  # per ClusterQueue
    existing_flavors: frozenset[str] | None = None
    priority_sorting: bool = True  # gate PrioritySortingWithinCohort


@dataclass(slots=True)
class Entry:
    head: Head
    cq: QNode
    assignment: FlavorAssignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: str = NOT_NOMINATED
    requeue_reason: str = RQ_GENERIC
    quota_reason: str = ""
    message: str = ""
    last_assignment: FlavorAssignment | None = None  # scan progress kept for the next cycle

    # the attributes the tournament reads
    @property
    def wl(self) -> str:
        return self.head.key

    @property
    def priority(self) -> int:
        return self.head.priority

    @property
    def submit(self) -> float:
        return self.head.created_at

    @property
    def usage(self) -> dict[FR, int]:
        return self.assignment.usage if self.assignment is not None else {}

    @property
    def borrows(self) -> bool:
        return self.assignment is not None and self.assignment.borrowing > 0


@dataclass(slots=True)
class CycleResult:
    entries: list[Entry]  # every head, nominated or rejected, in processing order
    admitted: dict[str, FlavorAssignment] = field(default_factory=dict)
    preempted: dict[str, tuple[Target, Entry]] = field(default_factory=dict)  # victim -> (target, preemptor)
    skipped_preemptions: dict[str, int] = field(default_factory=dict)
    recomputations: dict[str, dict[str, int]] = field(default_factory=dict)


# -- nomination ---------------------------------------------------------------------------------


def oracle_for(tree: QuotaTree, head: Head, cq: QNode, cfg: CycleConfig) -> Callable[[FR, int], tuple[int, int]]:
    """``PreemptionOracle.SimulatePreemption``: target selection for one flavor-resource."""

    def simulate(fr: FR, qty: int) -> tuple[int, int]:
        p = Preemptor(head.key, cq.name, head.priority, {fr: qty}, frozenset({fr}), head.created_at, head.uid)
        targets = get_targets(tree, p, cfg.fair, cfg.strategies)
        if not targets:
            return G_NO_CANDIDATES, lowest_subtree_that_fits(cq, fr, qty)[0]
        for t in targets:
            tree.remove_workload(t.workload)
        after = lowest_subtree_that_fits(cq, fr, qty)[0]
        for t in targets:
            tree.add_workload(t.workload)
        return (G_PREEMPT if any(t.workload.cq == cq.name for t in targets) else G_RECLAIM), after

    return simulate


def targets_for(tree: QuotaTree, head: Head, cq: QNode, a: FlavorAssignment, cfg: CycleConfig) -> list[Target]:
    p = Preemptor(head.key, cq.name, head.priority, a.quota_usage(), frozenset(a.frs_need), head.created_at,
                  head.uid)
    return get_targets(tree, p, cfg.fair, cfg.strategies)


def nominate(tree: QuotaTree, head: Head, cq: QNode, cfg: CycleConfig,
             nomination: Mapping[str, Mapping[str, str]] | None = None) -> tuple[FlavorAssignment, list[Target]]:
    """``getInitialAssignments``: the full request; if it neither fits nor finds targets, the
    largest partial admission that fits or finds targets; else the full assignment without targets."""
    fung = cfg.fungibility.get(cq.name, Fungibility())
    oracle = oracle_for(tree, head, cq, cfg)

    def attempt(counts: Sequence[int] | None) -> tuple[FlavorAssignment, list[Target], bool]:
        a = assign(cq, head.pod_sets, cfg.fair, fung, oracle, counts, cfg.existing_flavors, nomination)
        if a.mode == FIT:
            return a, [], True
        if a.mode == PREEMPT:
            t = targets_for(tree, head, cq, a, cfg)
            if t:
                return a, t, True
        return a, [], False

    full, targets, ok = attempt(None)
    if ok:
        return full, targets
    if cfg.partial_admission and head.partial_allowed():
        def fits(counts: list[int]) -> tuple[tuple[FlavorAssignment, list[Target]] | None, bool]:
            a, t, good = attempt(counts)
            return ((a, t) if good else None), good

        found, good = reduce_pod_sets([p.count for p in head.pod_sets], [p.min_count for p in head.pod_sets], fits)
        if good and found is not None:
            return found
    return full, []


# -- ordering -----------------------------------------------------------------------------------


def tournament_winner(tree: QuotaTree, heads: Sequence[Any], first: Callable[[Any], bool] = lambda h: False):
    """Kueue's fair-sharing iterator: at every cohort, the child whose head is best by (not
    borrowing on the flavors it requests, lower DRS of that child with the head's usage added,
    priority, time). Heads need ``wl``, ``cq``, ``usage``, ``priority``, ``submit``, ``borrows``;
    ``first`` puts some heads ahead of all others (the simulator's waiting preemptors)."""
    levels: dict[str, dict[int, tuple]] = {}
    for h in heads:
        usage = h.usage
        tree.add_usage(h.cq, usage)
        per: dict[int, tuple] = {}
        node: QNode | None = h.cq
        while node is not None and node.parent is not None:
            b = any(borrowing(node, fr) for fr, v in usage.items() if v > 0)
            per[id(node)] = (b, dominant_resource_share(node).key())
            node = node.parent
        tree.add_usage(h.cq, usage, -1)
        levels[h.wl] = per
    by_cq = {h.cq.name: h for h in heads}

    def key(node: QNode, h) -> tuple:
        lv = levels[h.wl].get(id(node), (False, (False, 0.0)))
        return (not first(h), lv[0], lv[1], -h.priority, h.submit, h.wl)

    def rec(co: QNode):
        best, best_key = None, None
        for c in co.child_cqs:
            h = by_cq.get(c.name)
            if h is not None and (best is None or key(c, h) < best_key):
                best, best_key = h, key(c, h)
        for c in co.child_cohorts:
            h = rec(c)
            if h is not None and (best is None or key(c, h) < best_key):
                best, best_key = h, key(c, h)
        return best

    winners = []
    roots = {id(h.cq.root()): h.cq.root() for h in heads}
    for r in roots.values():
        w = by_cq[r.name] if r.is_cq else rec(r)
        if w is not None:
            winners.append(w)
    return min(winners, key=lambda h: (not first(h), h.borrows, -h.priority, h.submit, h.wl))


def classic_order(entries: Iterable[Entry], priority_sorting: bool = True) -> list[Entry]:
    """``makeClassicalIterator``: lower borrowing level first (the height of the cohort subtree the
    request borrows from; 0 = within nominal quota), higher priority, earlier creation."""
    def key(e: Entry) -> tuple:
        level = e.assignment.borrowing if e.assignment else 0
        return (level, -e.priority if priority_sorting else 0, e.submit, e.head.uid, e.wl)

    return sorted(entries, key=key)


# -- processing ---------------------------------------------------------------------------------


def _fits(tree: QuotaTree, cq: QNode, usage: Mapping[FR, int], victims: Iterable[Any]) -> bool:
    """``fits``: the usage fits the queue once every victim so far and the new targets are gone."""
    removed = list({v.name: v for v in victims}.values())
    for v in removed:
        tree.remove_workload(v)
    ok = all(cq_available(cq, fr) >= q for fr, q in usage.items())
    for v in removed:
        tree.add_workload(v)
    return ok


def reserve_usage(cq: QNode, a: FlavorAssignment) -> dict[FR, int]:
    """``quotaResourcesToReserve`` for a head in Preempt mode without targets."""
    out: dict[FR, int] = {}
    for fr, v in a.usage.items():
        used = cq.usage.get(fr, 0)
        q = cq.quotas.get(fr)
        nominal = q.nominal if q else 0
        if a.borrowing > 0:
            if q is None or q.borrowing_limit is None:
                out[fr] = v
            else:
                out[fr] = min(v, nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(v, nominal - used))
    return out


def _overlaps(victims: Mapping[str, Any], targets: Iterable[Target]) -> bool:
    return any(t.workload.name in victims for t in targets)


def process(tree: QuotaTree, e: Entry, cfg: CycleConfig, victims: dict[str, Any], res: CycleResult) -> None:
    """``processEntry`` for one nominated head."""
    cq = e.cq
    a = e.assignment
    assert a is not None
    usage = a.usage
    fits = _fits(tree, cq, usage, list(victims.values()) + [t.workload for t in e.targets])
    if cfg.recompute_on_overlap and _overlaps(victims, e.targets):
        removed = list(victims.values())
        for v in removed:
            tree.remove_workload(v)
        mapping = a.nomination()
        new_a, new_t = nominate(tree, e.head, cq, cfg, mapping)
        for v in removed:
            tree.add_workload(v)
        e.assignment, e.targets = new_a, new_t
        e.last_assignment = new_a
        e.message = new_a.message()
        if new_a.mode == FIT:
            new_a.forced_mode = DEFERRED_FIT
        a, usage = new_a, new_a.usage
        fits = _fits(tree, cq, usage, list(victims.values()) + [t.workload for t in new_t])
        if a.mode == DEFERRED_FIT:
            result = DEFERRED
        elif new_t and fits and not _overlaps(victims, new_t):
            result = NEW_TARGETS
        else:
            result = SKIPPED_RESULT
        per = res.recomputations.setdefault(cq.name, {})
        per[result] = per.get(result, 0) + 1
    mode = a.mode
    if mode == NOFIT:
        e.requeue_reason = RQ_NO_FIT
        e.quota_reason = a.no_fit_reason
        return
    if mode == PREEMPT and not e.targets:
        e.requeue_reason = RQ_NO_CANDIDATES
        e.quota_reason = WAITING_FOR_QUOTA
        if cq.policy.reclaim_within_cohort != ANY:
            tree.add_usage(cq, reserve_usage(cq, a))
        return
    if mode == DEFERRED_FIT:
        e.message = ("Workload has overlapping preemption targets with another workload, but will fit after "
                     "these preemptions complete")
        e.quota_reason = WAITING_FOR_PREEMPTED
        e.requeue_reason = RQ_PENDING_PREEMPTION
        e.last_assignment = None
        tree.add_usage(cq, usage)
        return
    if _overlaps(victims, e.targets):
        _skip(e, cfg, "Workload has overlapping preemption targets with another workload")
        res.skipped_preemptions[cq.name] = res.skipped_preemptions.get(cq.name, 0) + 1
        return
    if not fits:
        _skip(e, cfg, "Workload no longer fits after processing another workload")
        if mode == PREEMPT:
            res.skipped_preemptions[cq.name] = res.skipped_preemptions.get(cq.name, 0) + 1
        return
    for t in e.targets:
        victims[t.workload.name] = t.workload
    tree.add_usage(cq, usage)
    if mode == PREEMPT:
        e.quota_reason = WAITING_FOR_PREEMPTED
        for t in e.targets:
            res.preempted.setdefault(t.workload.name, (t, e))
        e.last_assignment = None
        if e.targets:
            e.message += f". Pending the preemption of {len(e.targets)} workload(s)"
            e.requeue_reason = RQ_PENDING_PREEMPTION
        return
    e.status = ASSUMED
    res.admitted[e.head.key] = a


def _skip(e: Entry, cfg: CycleConfig, msg: str) -> None:
    e.status = SKIPPED
    e.message = msg
    e.quota_reason = WAITING_FOR_QUOTA
    if not cfg.preserve_scan_progress:
        e.last_assignment = None


def run_cycle(tree: QuotaTree, heads: Sequence[Head], cfg: CycleConfig) -> CycleResult:
    """Nominate, order and process the heads; the caller requeues what was not admitted."""
    nominated: list[Entry] = []
    rejected: list[Entry] = []
    for h in heads:
        cq = tree.cqs[h.cq]
        e = Entry(h, cq)
        if h.rejected is not None:
            e.quota_reason, e.requeue_reason, e.message = h.rejected
            rejected.append(e)
            continue
        e.assignment, e.targets = nominate(tree, h, cq, cfg)
        e.last_assignment = e.assignment
        e.message = e.assignment.message()
        nominated.append(e)
    res = CycleResult([])
    victims: dict[str, Any] = {}
    if cfg.fair:
        left = list(nominated)
        while left:
            e = tournament_winner(tree, left)
            left.remove(e)
            process(tree, e, cfg, victims, res)
            res.entries.append(e)
    else:
        for e in classic_order(nominated, cfg.priority_sorting):
            process(tree, e, cfg, victims, res)
            res.entries.append(e)
    res.entries.extend(rejected)
    return res


def final_requeue_reason(e: Entry) -> str:
    if e.status != NOT_NOMINATED and e.requeue_reason == RQ_GENERIC:
        return RQ_FAILED_AFTER_NOMINATION
    return e.requeue_reason


def requeue_to_active(e: Entry, strategy: str) -> bool:
    """Whether a head that was not admitted goes back to the active heap (else: inadmissible)."""
    reason = final_requeue_reason(e)
    if strategy == STRICT_FIFO:
        immediate = reason != RQ_NAMESPACE_MISMATCH
    else:
        immediate = reason in (RQ_FAILED_AFTER_NOMINATION, RQ_PENDING_PREEMPTION)
    return immediate or (e.last_assignment is not None and e.last_assignment.pending_flavors())


def writes_status(e: Entry) -> bool:
    """Whether the scheduler writes ``QuotaReserved=False`` on the head (``requeueAndUpdate``)."""
    return e.status in (NOT_NOMINATED, SKIPPED)
