"""Node-level pieces of a YTsaurus heartbeat (SEMANTICS §6): candidates, victims, overcommit, backoff.

Pure functions over small records so the simulator model and the conformance loader share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.classify import AP, P, RANK
from makeway.policies.ytsaurus.tree import ROOT, Tree

STAGE_MIN_LEVEL = {"preemptive_aggressive": AP, "preemptive_normal": P}
STAGE_PRIORITY = {"preemptive_aggressive": "aggressive", "preemptive_normal": "normal"}
STAGES = ("preemptive_aggressive", "preemptive_normal")


@dataclass(slots=True)
class Cand:
    """A running allocation as a heartbeat sees it."""

    id: str
    op: str
    status: str
    level: str
    start: float
    seq: int
    res: list[float]
    graceful: bool = False


def level_at_least(level: str, minimum: str) -> bool:
    return RANK[level] >= RANK[minimum]


def victim_order(cands: Iterable[Cand]) -> list[Cand]:
    """Ascending (status, start, registration) reversed: youngest plain-preemptible first (§6.5)."""
    return sorted(cands, key=lambda c: (RANK[c.status], c.start, c.seq), reverse=True)


def exceeds(usage: list[float], limits: list[float]) -> bool:
    return any(u > lim + EPS for u, lim in zip(usage, limits))


def fits(req: list[float], free: list[float]) -> bool:
    return all(r <= f + EPS for r, f in zip(req, free))


def stage_candidates(allocs: Iterable[Cand], stage: str,
                     blocked: Callable[[Cand], bool] | None = None) -> list[Cand]:
    minimum = STAGE_MIN_LEVEL[stage]
    return [c for c in allocs if not c.graceful and level_at_least(c.level, minimum)
            and not (blocked and blocked(c))]


def discount(cands: Iterable[Cand], dim: int) -> list[float]:
    out = [0.0] * dim
    for c in cands:
        for i in range(dim):
            out[i] += c.res[i]
    return out


def preempt_after_scheduling(usage: list[float], limits: list[float], cands: list[Cand],
                             violates: Callable[[Cand], bool] | None = None) -> list[tuple[Cand, str]]:
    """Greedy victims until the node fits, then limit violators (checked live by ``violates``)."""
    usage = list(usage)
    out: list[tuple[Cand, str]] = []
    rest: list[Cand] = []
    for c in victim_order(cands):
        if exceeds(usage, limits):
            out.append((c, "preemption"))
            usage = [u - r for u, r in zip(usage, c.res)]
        else:
            rest.append(c)
    if violates is not None:
        for c in rest:
            if violates(c):
                out.append((c, "resource_limits_violated"))
    return out


def overcommit_victims(allocs: Iterable[Cand], limits: list[float]) -> list[Cand]:
    """Keep oldest non-preemptible first while the running sum fits; skip (not stop) on misfit (§6.7)."""
    kept = [0.0] * len(limits)
    out = []
    for c in sorted(allocs, key=lambda c: (RANK[c.status], c.start, c.seq)):
        trial = [k + r for k, r in zip(kept, c.res)]
        if exceeds(trial, limits):
            out.append(c)
        else:
            kept = trial
    return out


@dataclass(slots=True)
class Backoff:
    """preemptive_scheduling_backoff per node: first heartbeat runs, then only after the backoff."""

    period: float = 5.0
    last: dict[str, float] = field(default_factory=dict)

    def should_run(self, node: str, now: float) -> bool:
        t = self.last.get(node)
        if t is None or now > t + self.period:
            self.last[node] = now
            return True
        return False


def blocking_element(tree: Tree, op: str, starving: Callable[[str], bool], local_sat: Callable[[str], float],
                     allow_aggressive: Callable[[str], bool], stage_aggressive: bool, threshold: float,
                     aggressive_threshold: float, graceful: bool = False, check_starvation: bool = True,
                     check_satisfaction: bool = True) -> str | None:
    """2024 FindPreemptionBlockingAncestor: walk op -> root (exclusive) for a reason not to give up."""
    if graceful:
        return op
    for name in tree.ancestors(op):
        if name == ROOT:
            break
        if check_starvation and starving(name):
            return name
        if check_satisfaction:
            thr = aggressive_threshold if (allow_aggressive(name) and stage_aggressive) else threshold
            if local_sat(name) < thr + 1e-4:
                return name
    return None
