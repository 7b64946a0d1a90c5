"""Kueue's flavor assigner (``flavorassigner.Assign``) with fungibility, the preemption oracle,
flavors a pod set cannot use (untolerated taints) and scaled pod counts (partial admission).

Each pod set is assigned on its own, resource group by resource group, on top of the usage of the
pod sets assigned before it. In a group the flavors are tried in the ClusterQueue's order; every
flavor gets a *granular mode* (no fit < no preemption candidates < preempt in the queue < reclaim
from the cohort < fit, plus a borrowing level, the height of the lowest cohort subtree that holds
the request) and ``flavorFungibility`` decides whether the scan stops there (``whenCanBorrow``,
``whenCanPreempt``) and which flavor is best (``preference``). The oracle runs target selection for
one flavor-resource to tell "preempt" from "reclaim" from "no candidates", so a flavor whose
preemption would find nobody does not stop the scan.

Everything is in Kueue's integer units (``quota.units``) and reads the quota tree only; the tree is
left as it was found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from makeway.policies.kueue.quota import (FR, NEVER, QNode, borrowing, cq_available, local_available,
                                          potential_available)

FIT, DEFERRED_FIT, PREEMPT, NOFIT = "Fit", "DeferredFit", "Preempt", "NoFit"
_MODE_RANK = {NOFIT: 0, PREEMPT: 1, DEFERRED_FIT: 2, FIT: 3}

# granular preemption modes, worst first
G_NOFIT, G_NO_CANDIDATES, G_PREEMPT, G_RECLAIM, G_FIT = range(5)
_G_TO_MODE = {G_NOFIT: NOFIT, G_NO_CANDIDATES: PREEMPT, G_PREEMPT: PREEMPT, G_RECLAIM: PREEMPT, G_FIT: FIT}

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
_SEVERITY = {"": 0, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4}

BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"

# oracle(fr, quantity) -> (granular mode among G_NO_CANDIDATES/G_PREEMPT/G_RECLAIM, borrow level after)
Oracle = Callable[[FR, int], tuple[int, int]]


def most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 1) >= _SEVERITY.get(b, 1) else b


@dataclass(slots=True, frozen=True)
class Fungibility:
    """``flavorFungibility`` with the cache defaults for empty fields."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None

    @classmethod
    def of(cls, spec: Mapping[str, str | None] | None) -> "Fungibility":
        spec = spec or {}
        return cls(spec.get("whenCanBorrow") or "MayStopSearch", spec.get("whenCanPreempt") or "TryNextFlavor",
                   spec.get("preference") or None)


@dataclass(slots=True)
class PodSetRequest:
    """One pod set of a pending workload: per-pod requests (Kueue units), count and minCount, and
    the flavors its pods cannot use (flavor -> why, e.g. an untolerated taint)."""

    name: str
    count: int
    per_pod: dict[str, int]
    min_count: int | None = None
    excluded: Mapping[str, str] = field(default_factory=dict)

    def total(self, count: int | None = None) -> dict[str, int]:
        n = self.count if count is None else count
        return {r: v * n for r, v in self.per_pod.items()}


@dataclass(slots=True)
class Attempt:
    mode: int
    reason: str = ""


@dataclass(slots=True)
class PodSetAssignment:
    name: str
    count: int
    requests: dict[str, int]  # total per resource for this pod set
    flavors: dict[str, str] = field(default_factory=dict)  # resource -> flavor
    modes: dict[str, str] = field(default_factory=dict)  # resource -> FIT / PREEMPT
    tried: dict[str, int] = field(default_factory=dict)  # resource -> last tried flavor index, -1 = scanned all
    reasons: list[str] = field(default_factory=list)
    attempts: dict[str, Attempt] = field(default_factory=dict)  # flavor -> worst attempt
    failed: bool = False

    @property
    def mode(self) -> str:
        if not self.reasons and not self.failed:
            return FIT
        if self.failed or not self.flavors:
            return NOFIT
        return min(self.modes.values(), key=_MODE_RANK.__getitem__)


@dataclass(slots=True)
class FlavorAssignment:
    """Kueue's ``Assignment``: per pod set flavors, the quota it takes, its borrowing level and the
    scan progress (``LastState.LastTriedFlavorIdx``)."""

    pod_sets: list[PodSetAssignment] = field(default_factory=list)
    usage: dict[FR, int] = field(default_factory=dict)
    borrowing: int = 0
    no_fit_reason: str = ""
    forced_mode: str | None = None

    @property
    def mode(self) -> str:
        if self.forced_mode is not None:
            return self.forced_mode
        if not self.pod_sets:
            return NOFIT
        return min((ps.mode for ps in self.pod_sets), key=_MODE_RANK.__getitem__)

    @property
    def frs_need(self) -> set[FR]:
        return {(f, r) for ps in self.pod_sets for r, f in ps.flavors.items() if ps.modes.get(r) == PREEMPT}

    def pending_flavors(self) -> bool:
        """Whether some flavor scan stopped before the last flavor (``PendingFlavors``)."""
        return any(i != -1 for ps in self.pod_sets for i in ps.tried.values())

    def nomination(self) -> dict[str, dict[str, str]]:
        return {ps.name: dict(ps.flavors) for ps in self.pod_sets}

    def message(self) -> str:
        parts = [f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}"
                 for ps in self.pod_sets if ps.reasons]
        return "; ".join(parts)

    def quota_usage(self) -> dict[FR, int]:
        """``TotalRequestsFor``: the usage preemption has to make room for (zeros dropped)."""
        return {fr: v for fr, v in self.usage.items() if v > 0}


def height(node: QNode) -> int:
    """Distance from a cohort to its furthest leaf (``getNodeHeight``)."""
    h = min(len(node.child_cohorts) + len(node.child_cqs), 1)
    for c in node.child_cohorts:
        h = max(h, height(c) + 1)
    return h


def lowest_subtree_that_fits(cq: QNode, fr: FR, val: int) -> tuple[int, bool]:
    """(height of the lowest subtree holding ``val`` more of ``fr``, whether it is smaller than the
    whole tree) — ``FindHeightOfLowestSubtreeThatFits``."""
    if cq.parent is None or not borrowing(cq, fr, val):
        return 0, cq.parent is not None
    remaining = val - local_available(cq, fr)
    for node in cq.path_parent_to_root():
        if not borrowing(node, fr, remaining):
            return height(node), node.parent is not None
        remaining -= local_available(node, fr)
    return height(cq.root()), False


def is_preferred(a: tuple[int, int], b: tuple[int, int], fung: Fungibility) -> bool:
    """Whether granular mode ``a`` = (preemption mode, borrowing level) beats ``b``."""
    if a[0] == G_NOFIT:
        return False
    if b[0] == G_NOFIT:
        return True
    if (a[0] == G_NO_CANDIDATES) != (b[0] == G_NO_CANDIDATES):
        return a[0] != G_NO_CANDIDATES
    if fung.preference == PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def should_try_next(mode: tuple[int, int], fung: Fungibility) -> bool:
    if mode[0] in (G_NOFIT, G_NO_CANDIDATES):
        return True
    if mode[0] in (G_PREEMPT, G_RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and fung.when_can_borrow == "TryNextFlavor"


def can_preempt_while_borrowing(cq: QNode, fair: bool) -> bool:
    pol = cq.policy
    return pol.borrow_within_cohort != NEVER or (fair and pol.reclaim_within_cohort != NEVER)


def fits_resource_quota(cq: QNode, fr: FR, assumed: int, request: int, fair: bool,
                        oracle: Oracle | None) -> tuple[int, int, str, str]:
    """(granular mode, borrowing level, reason text, QuotaReserved reason) of one flavor-resource."""
    val = assumed + request
    max_capacity = potential_available(cq, fr)
    if val > max_capacity:
        return (G_NOFIT, 0, f"insufficient quota for {fr[1]} in flavor {fr[0]}, previously considered podsets "
                            f"requests ({assumed}) + current podset request ({request}) > maximum capacity "
                            f"({max_capacity})", EXCEEDS_MAX_QUOTA)
    borrow, may_reclaim = lowest_subtree_that_fits(cq, fr, val)
    available = cq_available(cq, fr)
    if val <= available:
        return G_FIT, borrow, "", ""
    text = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, {val - available} more needed"
    if cq.nominal(fr) >= val or may_reclaim or can_preempt_while_borrowing(cq, fair):
        if oracle is None:
            return G_PREEMPT, borrow, text, ""
        mode, after = oracle(fr, val)
        return mode, after, text, ""
    return G_NOFIT, borrow, text, WAITING_FOR_QUOTA


def _group_of(cq: QNode, res: str) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    for i, (resources, flavors) in enumerate(cq.groups):
        if res in resources:
            return i, resources, flavors
    return None


def assign(cq: QNode, pod_sets: Sequence[PodSetRequest], fair: bool, fungibility: Fungibility,
           oracle: Oracle | None = None, counts: Sequence[int] | None = None,
           existing_flavors: frozenset[str] | None = None,
           nomination: Mapping[str, Mapping[str, str]] | None = None) -> FlavorAssignment:
    """Assign flavors to every pod set (scaled to ``counts`` if given).

    ``existing_flavors``: the ResourceFlavors that exist (None: all); ``nomination``: during an
    overlap recomputation, the flavor each pod set and resource was nominated with, the only one
    tried again.
    """
    out = FlavorAssignment()
    for i, ps in enumerate(pod_sets):
        count = ps.count if counts is None else counts[i]
        requests = ps.total(count)
        if _group_of(cq, "pods") is not None:
            requests["pods"] = count  # a queue that covers "pods" counts them as a resource
        psa = PodSetAssignment(ps.name, count, requests)
        group_flavors: dict[str, str] = {}
        group_modes: dict[str, str] = {}
        group_tried: dict[str, int] = {}
        for res in sorted(requests):
            qty = requests[res]
            found = _group_of(cq, res)
            if found is None:
                if qty == 0:
                    continue
                psa.reasons.append(f"resource {res} unavailable in ClusterQueue")
                psa.failed = True
                break
            if res in group_flavors:
                continue
            got = _find_flavor(cq, found, ps, requests, out.usage, fair, fungibility, oracle, existing_flavors,
                               nomination, psa)
            if got is None:
                psa.failed = True
                break
            flavors, modes, tried, borrow = got
            out.borrowing = max(out.borrowing, borrow)
            group_flavors.update(flavors)
            group_modes.update(modes)
            group_tried.update(tried)
        if psa.failed:
            group_flavors, group_modes, group_tried = {}, {}, {}
        psa.flavors = {r: f for r, f in group_flavors.items() if r in requests}
        psa.modes = {r: m for r, m in group_modes.items() if r in requests}
        psa.tried = {r: t for r, t in group_tried.items() if r in requests}
        out.pod_sets.append(psa)
        for r, f in psa.flavors.items():
            fr = (f, r)
            out.usage[fr] = out.usage.get(fr, 0) + requests.get(r, 0)
        if psa.failed or psa.mode == NOFIT:
            out.no_fit_reason = _no_fit_reason(cq, out)
            return out
    if out.mode == NOFIT:
        out.no_fit_reason = _no_fit_reason(cq, out)
    return out


def _find_flavor(cq: QNode, group: tuple[int, tuple[str, ...], tuple[str, ...]], ps: PodSetRequest,
                 requests: Mapping[str, int], usage: Mapping[FR, int], fair: bool, fung: Fungibility,
                 oracle: Oracle | None, existing: frozenset[str] | None,
                 nomination: Mapping[str, Mapping[str, str]] | None, psa: PodSetAssignment):
    """``findFlavorForPodSets`` for one resource group: (flavors, modes, tried) or None."""
    _, covered, flavors = group
    in_group = {r: v for r, v in requests.items() if r in covered}
    best: tuple[dict[str, str], dict[str, str], int] | None = None
    best_mode = (G_NOFIT, 1 << 62)
    attempted = -1
    reasons: list[str] = []
    for idx, flv in enumerate(flavors):
        attempted = idx
        if nomination is not None:
            if not any(nomination.get(ps.name, {}).get(r) == flv for r in in_group):
                reasons.append(f"skipping flavor {flv} as it is not found in the nomination mapping")
                continue
        why = None
        if existing is not None and flv not in existing:
            why = f"flavor {flv} not found"
        elif flv in ps.excluded:
            why = ps.excluded[flv]
        if why is not None:
            reasons.append(why)
            _attempt(psa, flv, G_NOFIT, NO_MATCHING_FLAVOR)
            continue
        rep = (G_FIT, 0)
        max_borrow = 0
        assigned: dict[str, str] = {}
        modes: dict[str, str] = {}
        no_fit_reason = ""
        for r in sorted(in_group):
            fr = (flv, r)
            g, borrow, text, nfr = fits_resource_quota(cq, fr, usage.get(fr, 0), in_group[r], fair, oracle)
            if text:
                reasons.append(text)
            no_fit_reason = most_severe(no_fit_reason, nfr) if nfr else no_fit_reason
            mode = (g, borrow)
            max_borrow = max(max_borrow, borrow)
            if is_preferred(rep, mode, fung):
                rep = mode
            if rep[0] == G_NOFIT:
                continue
            assigned[r] = flv
            modes[r] = _G_TO_MODE[g]
        _attempt(psa, flv, rep[0], no_fit_reason if rep[0] == G_NOFIT else "")
        if not should_try_next(rep, fung):
            best, best_mode = (assigned, modes, max_borrow), rep
            break
        if is_preferred(rep, best_mode, fung):
            best, best_mode = (assigned, modes, max_borrow), rep
    if best is None or not best[0]:
        psa.reasons.extend(reasons)
        return None
    tried_idx = -1 if attempted == len(flavors) - 1 else attempted
    tried = {r: tried_idx for r in best[0]}
    if best_mode[0] != G_FIT:
        psa.reasons.extend(reasons)
    return best[0], best[1], tried, best[2]


def _attempt(psa: PodSetAssignment, flv: str, mode: int, reason: str) -> None:
    cur = psa.attempts.get(flv)
    if cur is None:
        psa.attempts[flv] = Attempt(mode, reason)
    else:
        psa.attempts[flv] = Attempt(min(cur.mode, mode), most_severe(cur.reason, reason))


def _no_fit_reason(cq: QNode, a: FlavorAssignment) -> str:
    """``resolveNoFitReason``: per pod set, the least severe reason of each resource group's failed
    flavors, the most severe over groups; over pod sets the most severe."""
    overall = ""
    for ps in a.pod_sets:
        if ps.mode != NOFIT:
            continue
        if not ps.attempts or any(r.startswith("resource ") and r.endswith("unavailable in ClusterQueue")
                                  for r in ps.reasons):
            overall = most_severe(overall, NO_MATCHING_FLAVOR)
            continue
        per_group: dict[int, str] = {}
        for i, (flv, att) in enumerate(sorted(ps.attempts.items())):
            if att.mode != G_NOFIT:
                continue
            groups = [gi for gi, (_, flavors) in enumerate(cq.groups) if flv in flavors] or [-1 - i]
            for gi in groups:
                cur = per_group.get(gi)
                if cur is None or _SEVERITY.get(att.reason, 1) < _SEVERITY.get(cur, 1):
                    per_group[gi] = att.reason
        reason = ""
        for r in per_group.values():
            reason = most_severe(reason, r)
        overall = most_severe(overall, reason)
    return overall
