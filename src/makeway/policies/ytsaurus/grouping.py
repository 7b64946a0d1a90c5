"""Equal waiting operations of a pool as one group element (prototype, issues 17 and 20).

Under contention the fair share tree is the backlog (22,000 waiting operations on Philly days
45-50) but the backlog holds few distinct operations (23 (queue, task shape) classes over the whole
trace). Operations of one pool with the same weight, demand, settings and nothing running have the
same curve and the same suggestion, so the reference gives them the same fair share: a group of k
of them needs its curve once and its weight k in the pool's sum only.

The pool's sum is bit for bit the reference's only where every part's slope is an integer and
no part jumps except by zero: the sweep then adds integers, exact in any grouping and order, and
each step (an integer times the same knot gap) rounds the same way. ``exact_rows`` says which
rows qualify (one-resource operations do: their slopes are 0 and 1); a pool with any other child
must keep its members apart (or take the per-operation sum).
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Callable, Mapping

import numpy as np

from makeway.policies.ytsaurus import batched, fairshare, plf
from makeway.policies.ytsaurus.plf import PLF, SLIVER
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


def group_key(el: Element) -> tuple | None:
    """What makes two operations of a pool interchangeable for the fair share: the same weight,
    demand and usage, either waiting (nothing running) or wholly running (usage is demand, nothing
    pending), so the same curve. None for an operation that cannot be grouped (partly running, a
    guarantee, limits, a gang, settings, a demand that is not whole units: the pool's sums add
    k x demand where the reference adds k times, the same floats only for whole numbers)."""
    if not el.is_op or el.parent == ROOT or el.guarantee or el.limits \
            or el.max_share_ratio is not None or el.gang or el.integral or el.settings \
            or not all(float(v).is_integer() for v in el.demand):
        return None
    if any(el.usage) and (el.pending_count or el.usage != el.demand):
        return None
    return (el.parent, el.weight, tuple(el.demand), tuple(el.usage), el.pending_count)


def waiting_groups(tree: Tree, memo: dict[str, tuple] | None = None) -> list[list[str]]:
    """Groups of two or more interchangeable operations (``group_key``) of fair share pools, members in
    tree order, groups in the order of their first member. None where an operation's demand or
    usage is not whole units: a pool's sums would then depend on the order of the additions.
    ``memo`` keeps each operation's verdict with its element (never changed once built), so an
    operation a later tree holds as it was costs a lookup."""
    groups: dict[tuple, list[str]] = {}
    elements = tree.elements
    for name, el in elements.items():
        if not el.is_op:
            continue
        whole, key = _verdict(name, el, memo)
        if not whole:
            return []
        if key is not None and elements[el.parent].mode == "fair_share":
            groups.setdefault(key, []).append(name)
    return [m for m in groups.values() if len(m) > 1]


class KeptGroups:
    """``waiting_groups`` kept from one tree to the next: a tree that differs from the last one
    grouped only in some operations (``TreeOps``: the ones made again, and the generation of
    trees they are relative to) moves only those between groups, instead of looking up every
    operation of a backlog of thousands. Members stay in tree order (by their index in
    ``state.workloads``, the order ``build_tree`` adds operations in). Anything else (no change
    list, a tree that is not the next generation of the last one grouped) groups the whole tree
    again; a change of the queues (a pool's mode) makes ``TreeOps`` walk everything, so it comes
    with no change list."""

    __slots__ = ("_gen", "_of", "_groups", "_broken")

    def __init__(self) -> None:
        self._gen: int | None = None
        self._of: dict[str, tuple] = {}  # grouped operation -> its key
        self._groups: dict[tuple, list[str]] = {}  # key -> members, in tree order
        self._broken: set[str] = set()  # operations whose demand or usage is not whole units

    def groups(self, tree: Tree, memo: dict[str, tuple] | None, changed: list[str] | None, gen: int,
               index: Mapping[str, int]) -> list[list[str]]:
        elements = tree.elements
        if changed is None or self._gen != gen - 1:
            self._of, self._groups, self._broken = {}, {}, set()
            changed = [name for name, el in elements.items() if el.is_op]
        self._gen = gen
        of, groups, broken = self._of, self._groups, self._broken
        at = index.__getitem__
        for name in changed:
            key = of.pop(name, None)
            if key is not None:
                members = groups[key]
                members.remove(name)
                if not members:
                    del groups[key]
            broken.discard(name)
            el = elements.get(name)
            if el is None or not el.is_op:
                continue
            whole, key = _verdict(name, el, memo)
            if not whole:
                broken.add(name)
            elif key is not None and elements[el.parent].mode == "fair_share":
                of[name] = key
                bisect.insort(groups.setdefault(key, []), name, key=at)
        if broken:
            return []
        return sorted((list(m) for m in groups.values() if len(m) > 1), key=lambda m: at(m[0]))


def _verdict(name: str, el: Element, memo: dict[str, tuple] | None) -> tuple[bool, tuple | None]:
    """(whole units, group key) of an operation, kept in ``memo`` with its element."""
    hit = memo.get(name) if memo is not None else None
    if hit is not None and hit[0] is el:
        return hit[1], hit[2]
    whole = _whole(el.demand) and _whole(el.usage)
    key = group_key(el) if whole else None
    if memo is not None:
        memo[name] = (el, whole, key)
    return whole, key


def _whole(v: list[float]) -> bool:
    return all(float(x).is_integer() for x in v)


def _link_from(tree: Tree, grouped: Tree) -> None:
    """``Tree.link`` of the per-operation tree with the pool sums taken from the grouped tree's
    (the same floats: whole numbers added in another order)."""
    tree.link_children()
    elements = tree.elements
    for name, el in grouped.elements.items():
        if not el.is_op:
            own = elements[name]
            own.demand, own.usage = el.demand, el.usage


def collapse(tree: Tree, groups: list[list[str]]) -> Tree:
    """The tree with each group as its first member standing for all (``Tree.members``). Pools are
    copied (``link`` rewrites their children and demand); operations are shared."""
    drop = {m for members in groups for m in members[1:]}
    out = Tree(tree.resources, tree.total, main_resource=tree.main_resource, memo_orders=tree.memo_orders,
               members={members[0]: len(members) for members in groups})
    for name, el in tree.elements.items():
        if name not in drop:
            out.add(el if el.is_op else copy.copy(el))
    return out


def grouped_compute(tree: Tree, node_caps: list[list[float]] | None = None, integral: object | None = None,
                    cache: fairshare.CurveCache | None = None,
                    batching: fairshare.Batching = fairshare.BATCHING,
                    memo: dict[str, tuple] | None = None,
                    group: Callable[[Tree, dict[str, tuple] | None], list[list[str]]] = waiting_groups,
                    ) -> fairshare.FairShareResult | None:
    """``fairshare.compute`` of the per-operation tree (the Python construction) through a tree of
    groups: every element's attributes bit for bit, each member of a group sharing its group's.
    None where that cannot be promised (``NotGroupable``): the caller computes the per-operation
    tree. ``memo``: ``waiting_groups``'s. ``group``: what finds the groups (``waiting_groups``, or
    ``KeptGroups.groups`` bound to the operations the tree made again)."""
    groups = group(tree, memo)
    if not groups:
        return fairshare.compute(tree, node_caps, integral, cache, False, batching)
    grouped = collapse(tree, groups)
    try:
        res = fairshare.compute(grouped, node_caps, integral, cache, False, batching)
    except batched.NotGroupable:
        return None
    _link_from(tree, grouped)  # the per-operation tree's children and pool sums, read by the later stages
    attrs = res.attrs
    for members in groups:
        a = attrs[members[0]]
        for m in members[1:]:
            attrs[m] = a
    return res


def exact_rows(ax: np.ndarray, ay: np.ndarray) -> np.ndarray:
    """Rows (closed-form fair share by suggestion, points end to end) whose every segment has
    integer slopes in every resource and that never jump by a nonzero amount."""
    dx = ax[:, 1:] - ax[:, :-1]
    dy = ay[:, 1:, :] - ay[:, :-1, :]
    lin = dx > SLIVER
    safe = np.where(lin, dx, 1.0)[:, :, None]
    slope = dy / safe
    ok_lin = np.where(lin[:, :, None], slope == np.round(slope), True)
    ok_jump = np.where(lin[:, :, None], True, dy == 0)
    return np.all(ok_lin & ok_jump, axis=(1, 2))


def grouped_pool_curve(weights: list[float], counts: list[int], ax: np.ndarray, ay: np.ndarray,
                       rows: list[int], dim: int) -> PLF | None:
    """``fairshare.pool_curve`` of a fair share pool whose child i (closed-form row ``rows[i]``)
    stands for ``counts[i]`` equal operations: the sweep takes each part once with its slopes and
    jumps times its count. Parts are shaped as ``pool_curve`` shapes them (x divided by the relative
    weight, extended to 1 where short). None where that is not bit for bit the per-operation sum
    (a shaped part not ``exact_rows``, a weight of 0): the caller expands the groups."""
    if not rows or not all(w > 0 for w in weights) or sum(counts) < 2:
        return None
    wmin = min(weights)
    m = np.asarray(counts, dtype=float)
    shaped = fairshare.shaped_rows(weights, ax, ay, rows)
    if shaped is not None:  # every part shaped alike: all rows at once
        xs, ys = shaped
        if not exact_rows(xs, ys).all():
            return None
        n, q = xs.shape
        return plf.sum_points(xs.reshape(-1), ys.reshape(n * q, dim), np.full(n, q, dtype=np.int64),
                              np.add.reduce(ys[:, 0, :] * m[:, None]), dim, 1.0, mult=np.repeat(m, q))
    xs_parts, ys_parts, lens = [], [], []
    for w, r in zip(weights, rows):
        fn = PLF(ax[r], ay[r])
        xs = fn.ax / (w / wmin)
        ys = fn.ay
        if xs[-1] < 1.0:
            xs = np.append(xs, 1.0)
            ys = np.concatenate([ys, ys[-1:]])
        if not exact_rows(xs[None, :], ys[None, :, :])[0]:
            return None
        xs_parts.append(xs)
        ys_parts.append(ys)
        lens.append(len(xs))
    base = np.add.reduce(np.stack([y[0] for y in ys_parts]) * m[:, None])
    lens_a = np.asarray(lens, dtype=np.int64)
    return plf.sum_points(np.concatenate(xs_parts), np.concatenate(ys_parts).reshape(-1, dim), lens_a, base, dim,
                          1.0, mult=np.repeat(m, lens_a))


def grouped_curve(tree: Tree, el: Element, weights: list[float], kids: list[str], fsbs, dim: int) -> PLF:
    """The generic path's curve of a pool holding group elements (``Tree.members``), or
    ``NotGroupable`` where it would not be the per-operation sum bit for bit."""
    rows = getattr(fsbs, "rows", {})
    if el.mode == "fifo" or not all(c in rows for c in kids):
        raise batched.NotGroupable(f"pool {el.name}: FIFO or a child without the closed form")
    curve = grouped_pool_curve(weights, [tree.members.get(c, 1) for c in kids], fsbs.ax, fsbs.ay,
                               [rows[c] for c in kids], dim)
    if curve is None:
        raise batched.NotGroupable(f"pool {el.name}: a part with a slope that is not an integer")
    return curve
