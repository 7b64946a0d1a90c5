"""Flavor assignment (``fitsResourceQuota``): which flavor each resource of a workload gets, and in
which mode (Fit, Preempt, NoFit). Flavors of a resource group are tried in the ClusterQueue's order;
``flavorFungibility`` decides whether to stop at a flavor that borrows or needs preemption.

Simplification (documented): the preemption oracle that ranks several Preempt flavors is not run;
the first flavor in Preempt mode is taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from makeway.policies.kueue.quota import (FR, NEVER, QNode, borrowing, cq_available, local_available,
                                          potential_available)

FIT, PREEMPT, NOFIT = "Fit", "Preempt", "NoFit"
_RANK = {NOFIT: 0, PREEMPT: 1, FIT: 2}


@dataclass(slots=True)
class Assignment:
    mode: str = FIT
    flavors: list[dict[str, str]] = field(default_factory=list)  # per pod set: resource -> flavor
    usage: dict[FR, int] = field(default_factory=dict)
    frs_need: set[FR] = field(default_factory=set)
    borrows: bool = False
    reason: str = ""


def _may_reclaim_in_hierarchy(cq: QNode, fr: FR, val: int) -> bool:
    """Whether ``val`` fits inside a proper subtree of the cohort tree (FindHeightOfLowestSubtreeThatFits)."""
    if cq.parent is None or not borrowing(cq, fr, val):
        return False
    remaining = val - local_available(cq, fr)
    for node in cq.path_parent_to_root():
        if not borrowing(node, fr, remaining):
            return node.parent is not None
        remaining -= local_available(node, fr)
    return False


def resource_mode(cq: QNode, fr: FR, val: int, fair: bool) -> str:
    if fr not in cq.quotas:
        return NOFIT
    if val > potential_available(cq, fr):
        return NOFIT
    if val <= cq_available(cq, fr):
        return FIT
    pol = cq.policy
    can_borrow_preempt = pol.borrow_within_cohort != NEVER or (fair and pol.reclaim_within_cohort != NEVER)
    if cq.nominal(fr) >= val or _may_reclaim_in_hierarchy(cq, fr, val) or can_borrow_preempt:
        return PREEMPT
    return NOFIT


def assign_flavors(cq: QNode, pod_sets: Sequence[Mapping[str, int]], covered: set[str], fair: bool,
                   fungibility: Mapping[str, str] | None = None) -> Assignment:
    """``pod_sets``: total request per resource of each pod set, in Kueue units (count x per pod)."""
    fung = fungibility or {}
    stop_at_borrow = fung.get("whenCanBorrow", "MayStopSearch") in ("MayStopSearch", "Borrow")
    stop_at_preempt = fung.get("whenCanPreempt", "TryNextFlavor") in ("MayStopSearch", "Preempt")
    out = Assignment()
    for ps in pod_sets:
        chosen: dict[str, str] = {}
        requested = {r: v for r, v in ps.items() if v > 0 and r in covered}
        for resources, flavors in cq.groups:
            in_group = [r for r in requested if r in resources]
            if not in_group:
                continue
            best: tuple[int, bool, str, dict[str, str]] | None = None  # (mode rank, not borrowing, flavor)
            for flv in flavors:
                modes = {}
                for r in in_group:
                    fr = (flv, r)
                    modes[r] = resource_mode(cq, fr, requested[r] + out.usage.get(fr, 0), fair)
                mode = min(modes.values(), key=_RANK.__getitem__)
                borrows = any(borrowing(cq, (flv, r), requested[r] + out.usage.get((flv, r), 0)) for r in in_group)
                cand = (_RANK[mode], not borrows, flv, modes)
                if best is None or cand[:2] > best[:2]:
                    best = cand
                if mode == FIT and (not borrows or stop_at_borrow):
                    break
                if mode == PREEMPT and stop_at_preempt:
                    break
            if best is None or best[0] == _RANK[NOFIT]:
                out.mode = NOFIT
                out.reason = f"no flavor of {','.join(flavors)} fits {','.join(in_group)}"
                return out
            for r in in_group:
                fr = (best[2], r)
                chosen[r] = best[2]
                out.usage[fr] = out.usage.get(fr, 0) + requested[r]
                if best[3][r] == PREEMPT:
                    out.frs_need.add(fr)
        missing = [r for r in requested if r not in chosen]
        if missing:
            out.mode = NOFIT
            out.reason = f"resource {','.join(missing)} is not covered by the ClusterQueue"
            return out
        out.flavors.append(chosen)
    out.mode = PREEMPT if out.frs_need else FIT
    out.borrows = any(borrowing(cq, fr, v) for fr, v in out.usage.items())
    return out
