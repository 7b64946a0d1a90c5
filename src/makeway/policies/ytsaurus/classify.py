"""Preemptible classification of one operation's allocations (SEMANTICS §5).

Allocations in registration order are cut into non_preemptible | aggressively_preemptible |
preemptible by walking from the oldest and adding while the usage *before* adding is still below
the bound (so the crossing allocation belongs to the less preemptible class; equality is "not
below"). Runs per operation on every start/finish and after each fair share publish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.fairshare import blocked, strictly_dominates_non_blocked

NP, AP, P = "non_preemptible", "aggressively_preemptible", "preemptible"
RANK = {NP: 0, AP: 1, P: 2}
INF = float("inf")

CLASSIFY_DEFAULTS: dict[str, Any] = {
    "preemption_satisfaction_threshold": 1.0,
    "aggressive_preemption_satisfaction_threshold": 0.2,
}


@dataclass(slots=True)
class Published:
    """What the last fair share update published at an operation."""

    fair: list[float]
    demand: list[float]
    preemptible: bool


def publish(fair: list[float], demand: list[float]) -> Published:
    """An operation whose fair share equals its demand has no plain-preemptible allocations (§5.3)."""
    equal = all(abs(f - d) <= EPS for f, d in zip(fair, demand))
    return Published(list(fair), list(demand), not (equal and max(demand, default=0.0) > EPS))


def usage_threshold(cfg: dict[str, Any], pool_chain: Iterable[dict[str, Any]], op_spec: dict[str, Any] | None,
                    resources: tuple[str, ...]) -> list[float] | None:
    """None when disabled (no resource given); unspecified resources are infinite."""
    """non_preemptible_resource_usage_threshold: tree, nearest pool override, op may only lower."""
    base = cfg.get("non_preemptible_resource_usage_threshold") or {}
    legacy = cfg.get("max_unpreemptible_running_allocation_count",
                     cfg.get("max_unpreemptible_running_job_count", cfg.get("max_unpreemptable_running_job_count")))
    for s in pool_chain:
        v = s.get("non_preemptible_resource_usage_threshold")
        if v is not None:
            base = v
            break
    thr = [float(base[r]) if r in base and base[r] is not None else INF for r in resources]
    configured = any(r in base and base[r] is not None for r in resources)
    if legacy is not None and "user_slots" in resources and "user_slots" not in base:
        thr[resources.index("user_slots")] = float(legacy)
        configured = True
    spec = (op_spec or {}).get("non_preemptible_resource_usage_threshold")
    if spec:
        thr = [min(t, float(spec[r])) if r in spec and spec[r] is not None else t for t, r in zip(thr, resources)]
        configured = True
    return thr if configured else None


def classify(allocs: list[tuple[str, list[float]]], pub: Published, total: list[float], thr: list[float] | None,
             aggressive_threshold: float, threshold: float) -> dict[str, str]:
    """Map allocation id -> status, allocations given oldest first with absolute resource vectors."""
    bl = blocked(pub.fair, pub.demand)
    b1 = [f * aggressive_threshold for f in pub.fair]
    b2 = [f * threshold for f in pub.fair] if pub.preemptible else [INF] * len(pub.fair)
    dim = len(total)
    usage = [0.0] * dim

    def below(bound: list[float]) -> bool:
        if thr is not None and all(u < t for u, t in zip(usage, thr)):
            return True
        share = [u / t if t > 0 else 0.0 for u, t in zip(usage, total)]
        return strictly_dominates_non_blocked(bound, share, bl)

    out: dict[str, str] = {}
    i, n = 0, len(allocs)
    for status, bound in ((NP, b1), (AP, b2)):
        while i < n and below(bound):
            aid, res = allocs[i]
            out[aid] = status
            for k in range(dim):
                usage[k] += res[k]
            i += 1
    for aid, _ in allocs[i:]:
        out[aid] = P
    return out


def may_have_preemptible(pub: Published, usage: list[float], total: list[float], thr: list[float] | None,
                         threshold: float) -> bool:
    """False only where ``classify`` gives no allocation of the operation ``P``: an allocation is
    ``P`` when the usage before it is not below ``fair x threshold``, and "below" only turns false as
    usage grows, so below at ``usage`` means below before every allocation where ``usage`` is at
    least the sum before the newest one: the allocations' whole sum in start order, or zeros for
    a lone allocation."""
    if not pub.preemptible:
        return False
    if thr is not None and all(u < t for u, t in zip(usage, thr)):
        return False
    share = [u / t if t > 0 else 0.0 for u, t in zip(usage, total)]
    return not strictly_dominates_non_blocked([f * threshold for f in pub.fair], share, blocked(pub.fair, pub.demand))


def preemption_level(status: str, allow_aggressive: bool) -> str:
    """Level after pool permission: AP without aggressive preemption allowed counts as NP (§5.4)."""
    if status == AP and not allow_aggressive:
        return NP
    return status
