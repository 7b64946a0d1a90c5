"""A node's candidate victims, merged on demand from the per-leaf groups the search memo keeps.

The ask-triggered node search reads the candidates of the nodes it tries, usually a few of them;
grouping every candidate of every leaf by node for each attempt cost as much as the search. The
groups are kept per leaf (``search.LeafMemo``) as long as the leaf's allocations and the ask's
filter stay the same; an attempt merges only the nodes it asks for.
"""

from __future__ import annotations

from makeway.policies.yunikorn.common import YAlloc


class NodeCandidates:
    """``node -> candidates`` as grouping ``all_candidates()`` by node gives: the leaves in snapshot
    order, each leaf's candidates in its order, the ones being preempted left out. Allocations'
    ``preempted`` flags do not change while an attempt searches, so a node's list is made once."""

    __slots__ = ("groups", "done")

    def __init__(self, groups: list[dict[str, list[YAlloc]]]):
        self.groups = groups
        self.done: dict[str, list[YAlloc] | None] = {}

    def get(self, node: str, default: list[YAlloc] | None = None) -> list[YAlloc] | None:
        done = self.done
        if node in done:
            out = done[node]
        else:
            out = None
            for g in self.groups:
                lst = g.get(node)
                if lst is not None:
                    for a in lst:
                        if not a.preempted:
                            if out is None:
                                out = [a]
                            else:
                                out.append(a)
            done[node] = out
        return default if out is None else out


__all__ = ["NodeCandidates"]
