"""Dominant Resource Share, Kueue's fair-sharing value (SEMANTICS.md section 6).

A share is returned as a ``Share`` whose tuple order is Kueue's ``CompareDRS``: a weight-0 node
that borrows is larger than every finite share, and two such nodes compare their unweighted
ratios. Borrowing and lendable capacity are summed across the flavors of one resource name, and
the lendable capacity is what the *parent* could make available, so a node's share never depends
on its children's shares.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Mapping

from makeway.policies.kueue.quota import FR, INT64_MAX, QNode, potential_available


@dataclass(slots=True, frozen=True, order=True)
class Share:
    infinite: bool  # weight 0 and a non-zero ratio
    value: float  # unweighted ratio when infinite, weighted share otherwise
    ratio: float = 0.0
    resource: str = ""
    borrowing: bool = False
    exact: Fraction = Fraction(0)  # ratio / weight as an exact fraction, for the rounded status value

    def key(self) -> tuple[bool, float]:
        return (self.infinite, self.value)

    @property
    def rounded(self) -> int:
        """The status value: ceil(ratio / weight), int64 max for an infinite share."""
        if self.infinite:
            return INT64_MAX
        return math.ceil(self.exact)

    def describe(self) -> str:
        return "inf" if self.infinite else f"{self.value:.6g}"


ZERO = Share(False, 0.0)


def dominant_resource_share(n: QNode, extra: Mapping[FR, int] | None = None) -> Share:
    if n.parent is None:
        return ZERO
    borrowed: dict[str, int] = {}
    for fr, quota in n.subtree.items():
        b = n.usage.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - quota
        if b > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + b
    if not borrowed:
        return ZERO
    root = n.root()
    lendable: dict[str, int] = {}
    for fr in root.subtree:
        if fr[1] in borrowed:
            lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(n.parent, fr)
    exact, dres = Fraction(0), ""
    for res in sorted(borrowed):
        lr = lendable.get(res, 0)
        if lr > 0:
            r = Fraction(borrowed[res] * 1000, lr)
            if r > exact:
                exact, dres = r, res
    ratio = float(exact)
    if n.weight == 0:
        if ratio > 0:
            return Share(True, ratio, ratio, dres, True)
        return Share(False, 0.0, 0.0, dres, True)
    return Share(False, ratio / n.weight, ratio, dres, True, exact / Fraction(str(n.weight)))
