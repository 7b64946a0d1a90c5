"""Satisfaction and schedulable status of a pool tree element (SEMANTICS §3, §4.1), from its fair,
demand and usage shares. Split out of ``fairshare`` (which re-exports these names) because they
read a computed fair share rather than compute one."""

from __future__ import annotations

import numpy as np

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.plf import Vec

INF_SAT = 1e9
"""Satisfaction of an element with no fair share (YTsaurus's infinite value)."""


def blocked(fair: Vec, demand: Vec) -> list[bool]:
    """Resources the element does not want more of. Comparisons allow EPS of rounding noise, so a
    fair share of 0.8000000000000003 against a usage of 0.8 is not "strictly above"."""
    return [f + EPS >= d for f, d in zip(fair, demand)]


def local_satisfaction(usage: Vec, fair: Vec, demand: Vec) -> float:
    """SEMANTICS §3: usage / fair share on the dominant wanted resource. (Loops, not temporary lists:
    it is called for every active operation at every pick of the reference path.)"""
    for f in fair:
        if f > EPS:
            break
    else:
        return INF_SAT
    for u, f in zip(usage, fair):
        if u > f:
            best = 0.0
            for u, f in zip(usage, fair):
                r = (0.0 if u == 0 else INF_SAT) if f == 0 else u / f
                if r > best:
                    best = r
            return min(best, INF_SAT)
    low = high = None
    blocked_all = True
    for u, f, d in zip(usage, fair, demand):
        if f + EPS >= d:  # blocked: the element does not want more of it
            r = u / f if f != 0 else 1.0
            if low is None or r < low:
                low = r
            continue
        if blocked_all:
            blocked_all, low = False, None
        if f != 0:
            r = u / f
            if high is None or r > high:
                high = r
    if blocked_all:
        return low
    return high if high is not None else INF_SAT


def strictly_dominates_non_blocked(bound: Vec, usage: Vec, bl: list[bool]) -> bool:
    if all(bl):
        return any(b > u + EPS for b, u in zip(bound, usage))
    return all(b > u + EPS for b, u, x in zip(bound, usage, bl) if not x)


def below_fair_share(fair: np.ndarray, demand: np.ndarray, usage: np.ndarray, tolerance: np.ndarray,
                     is_op: np.ndarray) -> np.ndarray:
    """``element_status`` of many elements at once (rows), True where ``below_fair_share``: the same
    comparisons on the same numbers, so the same answers."""
    tol = np.where(is_op & np.all(np.abs(fair - demand) <= 1e-4, axis=1), 1.0, tolerance)
    bound = np.minimum(fair * tol[:, None], demand)
    bl = fair + EPS >= demand
    above = bound > usage + EPS
    return np.where(bl.all(axis=1), above.any(axis=1), (above | bl).all(axis=1))


def element_status(fair: Vec, demand: Vec, usage: Vec, tolerance: float, is_op: bool) -> str:
    """``below_fair_share`` or ``normal`` (§4.1)."""
    if is_op and all(abs(f - d) <= 1e-4 for f, d in zip(fair, demand)):
        tolerance = 1.0
    bound = [min(f * tolerance, d) for f, d in zip(fair, demand)]
    bl = blocked(fair, demand)
    return "below_fair_share" if strictly_dominates_non_blocked(bound, usage, bl) else "normal"
