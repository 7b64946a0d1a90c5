"""Dominant Resource Share, Kueue's fair-sharing value (SEMANTICS.md section 6).

A share is returned as a ``Share`` whose tuple order is Kueue's ``CompareDRS``: a weight-0 node
that borrows is larger than every finite share, and two such nodes compare their unweighted
ratios. Borrowing and lendable capacity are summed across the flavors of one resource name, and
the lendable capacity is what the *parent* could make available, so a node's share never depends
on its children's shares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from makeway.policies.kueue.quota import FR, INT64_MAX, QNode, potential_available


@dataclass(slots=True, frozen=True, order=True)
class Share:
    infinite: bool  # weight 0 while borrowing
    value: float  # unweighted ratio when infinite, weighted share otherwise
    ratio: float = 0.0
    resource: str = ""
    borrowing: bool = False

    def key(self) -> tuple[bool, float]:
        return (self.infinite, self.value)

    @property
    def rounded(self) -> int:
        """The status value: ceil(ratio / weight), int64 max for an infinite share."""
        if self.infinite:
            return INT64_MAX
        return int(math.ceil(self.value))

    def describe(self) -> str:
        return "inf" if self.infinite else f"{self.value:.6g}"


ZERO = Share(False, 0.0)


def dominant_resource_share(n: QNode, extra: Mapping[FR, int] | None = None) -> Share:
    """Share of ``n`` against its parent's lendable capacity.

    The ratio is computed in float64 exactly as Kueue does (``float(b) * 1000 / float(lendable)``),
    so that equal-looking shares compare the way Kueue compares them.
    """
    if n.parent is None:
        return ZERO
    if not extra:
        if n.share is None:
            n.share = _compute(n, None)
        return n.share
    return _compute(n, extra)


def _compute(n: QNode, extra: Mapping[FR, int] | None) -> Share:
    borrowed: dict[str, int] = {}
    for fr, quota in n.subtree.items():
        b = n.usage.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - quota
        if b > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + b
    if not borrowed:
        return ZERO
    lendable = lendable_capacity(n.parent)
    ratio, dres = 0.0, ""
    for res in sorted(borrowed):
        lr = lendable.get(res, 0)
        if lr > 0:
            r = float(borrowed[res]) * 1000.0 / float(lr)
            if r > ratio:
                ratio, dres = r, res
    if n.weight == 0:
        return Share(True, ratio, ratio, dres, True)
    return Share(False, ratio / n.weight, ratio, dres, True)


def lendable_capacity(parent: QNode) -> dict[str, int]:
    """Per resource name, what ``parent`` could make available summed over every flavor of the
    tree. It depends on quotas only, so it is computed once per node of a tree."""
    if parent.lendable is None:
        out: dict[str, int] = {}
        for fr in parent.root().subtree:
            out[fr[1]] = min(INT64_MAX, out.get(fr[1], 0) + potential_available(parent, fr))
        parent.lendable = out
    return parent.lendable
