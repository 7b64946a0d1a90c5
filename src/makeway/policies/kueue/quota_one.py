"""Quota arithmetic of one cohort tree on one flavor-resource, on flat lists of ints.

A classic target search removes and re-adds candidates dozens of times and tests the fit after
each step. On the ``QuotaTree`` every step walks dicts of dicts (usage, quotas, subtree) and
clears DRS caches; a preemptor that needs one flavor-resource only ever reads that one, so the
search runs here on a copy of the usage list instead, and the tree is never touched. The rules
are ``quota.add_usage`` and ``quota.available`` restated per node index: a node without a
lending limit has a local quota of 0, which makes both formulas one.
"""

from __future__ import annotations

from makeway.policies.kueue.quota import FR, QNode

_FRAMES: dict[tuple[int, FR], "Frame"] = {}


class Frame:
    """The fixed part of one root's tree on one fr: parents, subtree quota, local quota,
    borrowing limit per node index (quotas only change with a new tree)."""

    __slots__ = ("root", "fr", "nodes", "index", "cq_index", "par", "sub", "lq", "bl", "down", "kid_cohorts",
                 "kid_cqs", "lends_all")

    def __init__(self, root: QNode, fr: FR):
        self.root, self.fr = root, fr
        nodes: list[QNode] = []
        stack = [root]
        while stack:
            n = stack.pop()
            nodes.append(n)
            stack.extend(n.child_cohorts)
            stack.extend(n.child_cqs)
        self.nodes = nodes
        self.index = {id(n): i for i, n in enumerate(nodes)}
        self.cq_index = {n.name: i for i, n in enumerate(nodes) if n.is_cq}
        self.par = [-1 if n.parent is None else self.index[id(n.parent)] for n in nodes]
        self.sub = [n.subtree.get(fr, 0) for n in nodes]
        lq, bl = [], []
        for i, n in enumerate(nodes):
            q = n.quotas.get(fr)
            lq.append(0 if q is None or q.lending_limit is None else max(0, self.sub[i] - q.lending_limit))
            bl.append(None if q is None else q.borrowing_limit)
        self.lq, self.bl = lq, bl
        # no lending limit holds usage back anywhere: every unit of usage reaches the root (``add``)
        self.lends_all = not any(lq)
        # per node: its path from the root's child down to itself (``available`` is computed downwards)
        down = []
        for i in range(len(nodes)):
            path = []
            j = i
            while self.par[j] >= 0:
                path.append(j)
                j = self.par[j]
            down.append(path[::-1])
        self.down = down
        self.kid_cohorts = [[self.index[id(c)] for c in n.child_cohorts] for n in nodes]
        self.kid_cqs = [[self.index[id(c)] for c in n.child_cqs] for n in nodes]

    def usage(self) -> list[int]:
        fr = self.fr
        return [n.usage.get(fr, 0) for n in self.nodes]

    def add(self, u: list[int], i: int, delta: int) -> None:
        """``QuotaTree.add_usage`` of ``delta`` at node ``i``: the part above a node's local quota
        goes on to its parent."""
        par, lq = self.par, self.lq
        while i >= 0 and delta != 0:
            old = u[i]
            new = old + delta
            u[i] = new
            q = lq[i]
            delta = (new - q if new > q else 0) - (old - q if old > q else 0)
            i = par[i]

    def available(self, u: list[int], i: int) -> int:
        """``quota.available`` of node ``i`` (may be negative)."""
        sub, lq, bl = self.sub, self.lq, self.bl
        a = sub[0] - u[0] if self.down[i] else sub[i] - u[i]
        for j in self.down[i]:
            b = bl[j]
            q = lq[j]
            if b is not None:
                cap = (sub[j] - q) - (u[j] - q if u[j] > q else 0) + b
                if cap < a:
                    a = cap
            a += q - u[j] if q > u[j] else 0
        return a

    def fits(self, u: list[int], i: int, v: int, allow_borrowing: bool) -> bool:
        """``preemption.workload_fits`` of a request ``v`` at ClusterQueue ``i``."""
        if not allow_borrowing and u[i] + v > self.sub[i]:
            return False
        a = self.available(u, i)
        return v <= (a if a > 0 else 0)


def frame(root: QNode, fr: FR) -> Frame:
    """The frame of ``root`` on ``fr``, kept while the same root object is passed (the frame holds
    it, so its id cannot be reused meanwhile)."""
    key = (id(root), fr)
    f = _FRAMES.get(key)
    if f is None or f.root is not root:
        if len(_FRAMES) >= 256:
            _FRAMES.clear()
        f = _FRAMES[key] = Frame(root, fr)
    return f
