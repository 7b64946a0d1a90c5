"""The pool tree as arrays, and the fair share update over it with the compiled kernel.

``PoolArrays`` is a struct-of-arrays snapshot of a pool tree: one row per element (pools and
operations), absolute demand and usage vectors, limit shares, given guarantees, and the children of
each pool in both insertion and hand-out order. ``compute_arrays`` runs one whole update over it
(pool sums, shares, effective guarantees and their adjustment, curves, the top-down read) and
returns a result whose per-element ``Attrs`` are made only when asked for. A caller that keeps a
``PoolArrays`` and writes usage rows in place between updates pays for nothing per element in
Python; ``PoolArrays.from_tree`` converts the object ``Tree`` for callers that build one.

Trees with integral guarantees or a promised fair share take the Python path in ``fairshare``
(those read curves at other suggestions); everything else comes here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, eq, methodcaller

import numpy as np

from makeway.core.resources import EPS
from makeway.policies.ytsaurus import kernel
from makeway.policies.ytsaurus.tree import ROOT, Tree



@dataclass(slots=True)
class PoolArrays:
    resources: tuple[str, ...]
    total: np.ndarray          # (dim,) cluster resources
    main: int                  # index of the main resource, -1 if absent
    names: list[str]
    root: int
    is_op: np.ndarray          # (n,) bool
    fifo: np.ndarray           # (n,) bool: FIFO pool
    weight: np.ndarray         # (n,)
    kid_ptr: np.ndarray        # (n + 1,) children of i are kids[kid_ptr[i]:kid_ptr[i + 1]]
    kids: np.ndarray           # children in hand-out order (FIFO order in FIFO pools)
    kid_ins: np.ndarray        # the same children in insertion order
    post: np.ndarray           # all rows, children before parents
    pre_pools: np.ndarray      # pool rows, parents before children
    has_g: np.ndarray          # (n,) bool: a strong guarantee is given
    gabs: np.ndarray           # (n, dim) absolute guarantee, NaN where not given
    limits: np.ndarray         # (n, dim) limit shares
    demand: np.ndarray         # (n, dim) absolute; pools' rows are recomputed from their children
    usage: np.ndarray          # (n, dim) absolute
    fixed_usage: np.ndarray    # (n,) bool: a pool whose usage is given, not summed
    truncate: list[tuple[int, list[int]]]  # FIFO pools that truncate, with their gang children
    buffers: tuple | None = None  # the kernel's function buffers, kept from one update to the next
    listing: list[str] | None = None  # names in the order results are listed (the tree's insertion order)

    @classmethod
    def from_tree(cls, tree: Tree, node_caps: list[list[float]] | None = None) -> "PoolArrays":
        """The tree's current state as arrays. Leaves the tree as ``Tree.link`` does (children lists
        filled, pools' demand and usage summed, the postorder memoised), so callers that read it
        afterwards see the same.

        Every attribute is read once per element in insertion order (``map`` over the elements, no
        per-element frame), and the rows are then put in postorder by one permutation: the
        conversion is most of what a caller with an object tree pays per update."""
        from makeway.policies.ytsaurus import fairshare

        elements = tree.elements
        listing = list(elements)
        vals = list(elements.values())
        for el in vals:
            el.children = []
        for el in vals:
            if el.parent is not None:
                elements[el.parent].children.append(el.name)
        tree._orders.clear()
        m = len(vals)
        dim = len(tree.resources)
        at = dict(zip(listing, range(m)))
        # children rows in insertion order; rows in postorder (a pool's subtree is the rows just
        # before it, so the update walks memory forward)
        par_ins = np.fromiter(map(at.get, map(attrgetter("parent"), vals), repeat(-1)), dtype=np.int64, count=m)
        counts_ins = np.bincount(par_ins[par_ins >= 0], minlength=m)
        ptr_ins = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts_ins, out=ptr_ins[1:])
        kids_ins = np.argsort(np.where(par_ins >= 0, par_ins, m), kind="stable")[: int(counts_ins.sum())]
        perm = kernel.postorder(ptr_ins, kids_ins.astype(np.int64), at[ROOT])
        order = perm.tolist()
        names = [listing[i] for i in order]
        if tree.memo_orders:
            tree._orders["post"] = names
        n = len(order)
        row = np.full(m, -1, dtype=np.int64)
        row[perm] = np.arange(n, dtype=np.int64)
        rows_of = row.tolist()
        parent = np.where(par_ins[perm] >= 0, row[np.maximum(par_ins[perm], 0)], -1)
        # attributes read in insertion order (the order the elements were made in, so memory is
        # walked forward), then put in postorder
        is_op = np.fromiter(map(attrgetter("is_op"), vals), dtype=bool, count=m)[perm]
        zero = [0.0] * dim
        demand = np.fromiter(chain.from_iterable([d or zero for d in map(attrgetter("demand"), vals)]), dtype=float,
                             count=m * dim).reshape(m, dim)[perm]
        usage = np.fromiter(chain.from_iterable([u or zero for u in map(attrgetter("usage"), vals)]), dtype=float,
                            count=m * dim).reshape(m, dim)[perm]
        weight = np.fromiter(map(attrgetter("weight"), vals), dtype=float, count=m)[perm]
        fifo = ~is_op & np.fromiter(map(eq, map(attrgetter("mode"), vals), repeat("fifo")), dtype=bool, count=m)[perm]
        fixed = np.fromiter(map(bool, map(methodcaller("get", "_fixed_usage"), map(attrgetter("settings"), vals))),
                            dtype=bool, count=m)[perm]
        has_g = np.fromiter(map(bool, map(attrgetter("guarantee"), vals)), dtype=bool, count=m)[perm]
        gabs = np.full((n, dim), np.nan)
        for i in np.flatnonzero(has_g).tolist():
            g = vals[order[i]].guarantee
            for r, res in enumerate(tree.resources):
                if res in g and g[res] is not None:
                    gabs[i, r] = float(g[res])
        limits = np.tile(np.where(np.asarray(tree.total, dtype=float) > 0, 1.0, 0.0), (n, 1))
        special = sorted(rows_of[i] for i, el in enumerate(vals)
                         if rows_of[i] >= 0 and (el.limits is not None or el.max_share_ratio is not None
                                                 or (el.is_op and node_caps)))
        if special:
            sub = fairshare.limits_shares(_Subset(tree, [vals[order[i]] for i in special]), node_caps)
            for i in special:
                limits[i] = sub[names[i]]
        # children rows, insertion order, then hand-out order
        counts = np.bincount(parent[parent >= 0], minlength=n)
        kid_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=kid_ptr[1:])
        kid_ins = np.argsort(np.where(parent >= 0, parent, n), kind="stable")[: int(counts.sum())].astype(np.int64)
        kids = kid_ins.copy()
        truncate: list[tuple[int, list[int]]] = []
        for p in np.flatnonzero(fifo).tolist():
            a, b = int(kid_ptr[p]), int(kid_ptr[p + 1])
            if b > a:
                kids[a:b] = [rows_of[at[c]] for c in fairshare.fifo_order(tree, names[p])]
            el = vals[order[p]]
            if el.truncate_fifo:
                truncate.append((p, [rows_of[at[c]] for c in el.children if elements[c].gang]))
        root = rows_of[at[ROOT]]
        post = np.arange(n, dtype=np.int64)
        pre_pools = np.flatnonzero(~is_op)[::-1].astype(np.int64)  # a parent's row is above its subtree's
        main = tree.resources.index(tree.main_resource) if tree.main_resource in tree.resources else -1
        pa = cls(tuple(tree.resources), np.asarray(tree.total, dtype=float), main, names, root, is_op, fifo, weight,
                 kid_ptr, kids, kid_ins, post, pre_pools, has_g, gabs, limits, demand, usage, fixed, truncate,
                 listing=listing)
        # pools' demand and usage, as Tree.link leaves them
        rows = np.flatnonzero(~is_op & (counts > 0))
        d, u = pa.pool_sums()
        for i, dr, ur in zip(rows.tolist(), d[rows].tolist(), u[rows].tolist()):
            el = vals[order[i]]
            el.demand = dr
            if not fixed[i]:
                el.usage = ur
        return pa

    def pool_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Demand and usage with every pool's row its children's sum (added in insertion order)."""
        d = self.demand.copy()
        u = self.usage.copy()
        kernel.sums(self.post, self.is_op, self.kid_ptr, self.kid_ins, self.fixed_usage, d, u)
        return d, u


class _Subset:
    """A view of a tree with only some elements, for computing their limit shares alone."""

    def __init__(self, tree: Tree, els) -> None:
        self.resources = tree.resources
        self.total = tree.total
        self.elements = {el.name: el for el in els}
        self.vec = tree.vec


def supported(tree: Tree) -> bool:
    """Whether the compiled update covers this tree: no integral guarantees, no promised fair share,
    a finite cluster."""
    if not all(np.isfinite(tree.total)):
        return False
    for el in tree.elements.values():
        if el.is_op:
            continue
        if el.integral and (el.integral or {}).get("type", "none") not in (None, "none"):
            return False
        if el.settings.get("compute_promised_guarantee_fair_share"):
            return False
    return True


@dataclass(slots=True)
class ArrayResult:
    """Shares of every element as arrays, rows as in ``PoolArrays.names``."""

    names: list[str]
    listing: list[str]
    is_op: np.ndarray
    limits: np.ndarray
    strong: np.ndarray
    demand_share: np.ndarray
    usage_share: np.ndarray
    fair: np.ndarray
    fit: np.ndarray
    exact: bool = True
    """False when the root's fit factor fell inside a jump that rounding split over a few ulps
    (``kernel.root_in_sliver``): there the reference may stop elsewhere, so it decides."""


def compute_arrays(pa: PoolArrays, param: bool = True) -> ArrayResult:
    """One fair share update (SEMANTICS §2 without integral guarantees) over a pool tree as arrays.
    ``param=False`` builds every pool's functions the generic way (tests compare the two)."""
    demand, usage = pa.pool_sums()
    total = pa.total
    pos = total > 0
    div = np.where(pos, total, 1.0)
    D = np.where(pos, demand / div, 0.0)
    U = np.where(pos, usage / div, 0.0)
    strong = kernel.strong_shares(pa.pre_pools, pa.kid_ptr, pa.kid_ins, pa.has_g, pa.gabs, total, pa.main,
                                  pa.limits, pa.root)
    kernel.adjust(pa.pre_pools, pa.kid_ptr, pa.kid_ins, strong, pa.root)
    lim = pa.limits.copy()
    lim[pa.root] = 1.0
    n, dim = U.shape
    pointwise = np.zeros(n, dtype=bool)
    pointwise[pa.kids[pa.kid_ptr[pa.root]:pa.kid_ptr[pa.root + 1]]] = True
    tok = (0.0,) * dim
    if pa.buffers is None:
        pa.buffers = (np.empty(12 * n + 64), np.empty((12 * n + 64, dim)), np.empty(4 * n + 64), np.empty(4 * n + 64))
    fs_x, fs_y, fs_at, fs_len, mf_x, mf_v, mf_at, mf_len, cm_y, cm_at = kernel.build(
        pa.post, pa.is_op, pa.fifo, pa.weight, pa.kid_ptr, pa.kids, U, D, strong, lim, pa.root, pointwise, param,
        *pa.buffers, tok)
    pa.buffers = (fs_x, fs_y, mf_x, mf_v)
    root_f = kernel.root_fit(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, pa.kid_ptr, pa.kids, pa.weight,
                             bool(pa.fifo[pa.root]), strong, lim, pa.root, tok)
    exact = not kernel.root_in_sliver(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, pa.kid_ptr, pa.kids, pa.weight,
                                      bool(pa.fifo[pa.root]), strong, lim, pa.root, root_f, tok)
    fair = np.zeros((n, dim))
    fit = np.zeros(n)
    kernel.read_down(pa.pre_pools, pa.is_op, pa.fifo, pa.weight, pa.kid_ptr, pa.kids, fs_x, fs_y, cm_y, cm_at, fs_at,
                     fs_len, mf_x, mf_v, mf_at, mf_len, strong, lim, pa.root, root_f, fair, fit, pointwise, tok)
    _truncate_fifo(pa, D, fair)
    return ArrayResult(pa.names, pa.listing or pa.names, pa.is_op, pa.limits, strong, D, U, fair, fit, exact)


def _truncate_fifo(pa: PoolArrays, D: np.ndarray, fair: np.ndarray) -> None:
    """A gang operation of a truncating FIFO pool below its demand gets nothing, and its ancestors
    lose what it had (``fairshare._truncate_fifo``)."""
    if not pa.truncate:
        return
    n = len(pa.names)
    parent = np.full(n, -1, dtype=np.int64)
    parent[pa.kid_ins] = np.repeat(np.arange(n), np.diff(pa.kid_ptr))
    for pool, gangs in pa.truncate:
        for c in gangs:
            if np.any(fair[c] < D[c] - EPS):
                cut = fair[c].copy()
                a = pool
                while a >= 0:
                    fair[a] = fair[a] - cut
                    a = int(parent[a])
                fair[c] = 0.0


class LazyAttrs(Mapping):
    """name -> ``fairshare.Attrs``, each made on first access (from rows converted all at once then:
    a caller that reads one element reads most of them, and one conversion of whole arrays is far
    cheaper than one per row)."""

    def __init__(self, res: ArrayResult) -> None:
        self._res = res
        self._index = {n: i for i, n in enumerate(res.names)}
        self._made: dict = {}
        self._rows: tuple | None = None

    def __getitem__(self, name: str):
        a = self._made.get(name)
        if a is None:
            from makeway.policies.ytsaurus.fairshare import Attrs

            i = self._index[name]
            if self._rows is None:
                r = self._res
                self._rows = (r.limits.tolist(), r.strong.tolist(), r.demand_share.tolist(), r.usage_share.tolist(),
                              r.fair.tolist(), r.fit.tolist())
            lim, strong, demand, usage, fair, fit = self._rows
            a = self._made[name] = Attrs(lim[i], strong[i], demand[i], usage[i], [0.0] * len(fair[i]), fair[i], fit[i])
        return a

    @property
    def arrays(self) -> ArrayResult:
        """The result as arrays, for callers that read every element (rows as ``names``)."""
        return self._res

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._res.listing)

    def __len__(self) -> int:
        return len(self._res.names)
