"""The fair share of a one-resource tree in closed form: water-filling (SEMANTICS §2.7).

With one resource, no pool limits and no integral or promised guarantees, every element's fair
share by suggestion is a clamp ``min(hi, g + s)`` (in resource units: ``hi`` what it can take at
most, ``g`` its effective guarantee), and a fair share pool splits its own fair share V among its
children by one level λ solving ``Σ_c min(hi_c, g_c + λ·k_c) = V`` (``k_c`` the child's weight
over the smallest weight among its siblings). That is exactly what the piecewise-linear
construction (``fairshare._compute``) computes, without curves and without their rounding, and at
the cost of the distinct operations of a pool, not of its backlog: equal operations of a pool (same
weight, demand, usage and limit) form one class, computed once and counted.

``compute`` returns None for a tree outside the class (``why_not`` names the reason) and the
caller takes the curves. The float operations are done in a fixed order (pools in postorder then
preorder, a pool's items in child order, a level's items by breakpoint then child order), so a
compiled twin can reproduce them bit for bit (``docs/plans/ytsaurus-compiled-loop.md`` §3.3). The
model uses it with ``fair_share_closed_form: true``.
"""

from __future__ import annotations

import math

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.fairshare import Attrs, FairShareResult
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

INF = math.inf


def why_not(tree: Tree, node_caps: list[list[float]] | None = None, integral: object | None = None) -> str | None:
    """The first reason the tree is outside the closed form's class, or None. The tree must be
    linked (``Tree.link``)."""
    if node_caps is not None:
        return "best_allocation_share caps operations by node packing"
    if tree.members:
        return "a tree of group elements"
    r = _resource(tree)
    if r is None:
        return "not exactly one resource with a positive, finite total"
    for el in tree.elements.values():
        if not math.isfinite(el.weight) or el.weight <= EPS:
            return f"{el.name}: weight {el.weight!r}"
        if el.max_share_ratio is not None:
            return f"{el.name}: max_share_ratio"
        if el.integral or el.volume is not None:
            return f"{el.name}: integral guarantees"
        if el.is_op:
            if el.guarantee:
                return f"{el.name}: an operation with a guarantee"
            d, u = el.demand[r], el.usage[r]
            if not (0.0 <= u <= d < INF):
                return f"{el.name}: usage {u!r} and demand {d!r}"
            if _limit(tree, el, r) < 0.0:
                return f"{el.name}: a negative limit"
            continue
        if el.mode != "fair_share":
            return f"{el.name}: mode {el.mode}"
        if el.limits and any(v is not None for v in el.limits.values()):
            return f"{el.name}: pool limits"
        if el.settings.get("compute_promised_guarantee_fair_share"):
            return f"{el.name}: promised guarantee fair share"
        if el.guarantee:
            g = el.guarantee.get(tree.resources[r])
            if g is not None and not (0.0 <= float(g) < INF):
                return f"{el.name}: guarantee {g!r}"
    return None


def _resource(tree: Tree) -> int | None:
    """The one resource with a positive total (every other total 0, so all their shares are 0)."""
    pos = [i for i, t in enumerate(tree.total) if t != 0]
    if len(pos) != 1 or not (0.0 < tree.total[pos[0]] < INF):
        return None
    return pos[0]


def _limit(tree: Tree, el: Element, r: int) -> float:
    v = (el.limits or {}).get(tree.resources[r])
    return INF if v is None else float(v)


def compute(tree: Tree, node_caps: list[list[float]] | None = None,
            integral: object | None = None) -> FairShareResult | None:
    """``fairshare.compute`` of a tree in the class, in closed form; None outside it. ``integral``
    is passed as the curves take it: when given (the model and the conformance cases always give
    one), root guarantees beyond the cluster scale every guarantee down first (what
    ``integral.IntegralConfig.scale_with_bursts`` does without burst pools)."""
    tree.link()
    if why_not(tree, node_caps, integral) is not None:
        return None
    return _fill(tree, integral is not None)


def _fill(tree: Tree, scale_root: bool) -> FairShareResult:
    r = _resource(tree)
    assert r is not None
    T = tree.total[r]
    dim = len(tree.resources)
    elements = tree.elements
    pools = tree.pool_postorder()

    def vec(x: float) -> list[float]:
        v = [0.0] * dim
        v[r] = x
        return v

    unlimited = vec(1.0)
    zero = [0.0] * dim

    gu = unit_guarantees(tree, r, scale_root)
    preorder = tree.pool_preorder()

    # bottom-up: each pool's items (child pools, and classes of equal operations) and (hi, g')
    hi: dict[str, float] = {}
    geff: dict[str, float] = {}
    items: dict[str, list[_Item]] = {}
    op_attrs: dict[tuple, Attrs] = {}  # (pool, weight, demand, usage, limit): shared by equal operations
    op_class: dict[tuple, _Item] = {}
    member_attrs: dict[str, Attrs] = {}
    for name in pools:
        el = elements[name]
        mine: list[_Item] = []
        classes: dict[tuple, _Item] = {}
        for c in el.children:
            ce = elements[c]
            if ce.is_op:
                d = ce.demand[r]
                lim = _limit(tree, ce, r)
                top = min(d, lim, T)
                key = (ce.weight, top)
                it = classes.get(key)
                if it is None:
                    it = classes[key] = _Item(None, ce.weight, top, 0.0)
                    mine.append(it)
                it.count += 1
                akey = (name, ce.weight, d, ce.usage[r], lim)
                a = op_attrs.get(akey)
                if a is None:
                    ls = unlimited if lim == INF else vec(min(lim, T) / T)
                    a = op_attrs[akey] = Attrs(ls, zero, vec(d / T), vec(ce.usage[r] / T), zero)
                    op_class[akey] = it
                member_attrs[c] = a
            else:
                mine.append(_Item(c, ce.weight, hi[c], geff[c]))
        items[name] = mine
        lo = 0.0
        top = 0.0
        for it in mine:
            lo += it.count * it.g
            top += it.count * it.hi
        h = min(max(T, lo), top)
        hi[name] = h
        geff[name] = min(max(gu[name], lo), h)

    # top-down: each pool's value split among its items by one level
    value: dict[str, float] = {ROOT: hi[ROOT]}
    level: dict[str, float] = {}
    for name in preorder:
        mine = items[name]
        if not mine:
            continue
        lam = water_fill(mine, value[name])
        level[name] = lam
        for it in mine:
            if it.pool is not None:
                value[it.pool] = it.value

    for akey, a in op_attrs.items():
        a.fair_share = vec(op_class[akey].value / T)
    attrs: dict[str, Attrs] = {}
    for name, el in elements.items():
        if el.is_op:
            attrs[name] = member_attrs[name]
        else:
            attrs[name] = Attrs(unlimited, vec(gu[name] / T), vec(el.demand[r] / T), vec(el.usage[r] / T), zero,
                                vec(value[name] / T), level.get(name, 0.0) / T)
    root = attrs[ROOT]
    s = 0.0
    g = 0.0
    for c in elements[ROOT].children:
        s += attrs[c].fair_share[r]
        g += attrs[c].strong_share[r]
    root.fair_share = vec(s)
    root.strong_share = vec(g)
    return FairShareResult(attrs)


def unit_guarantees(tree: Tree, r: int, scale_root: bool) -> dict[str, float]:
    """Each pool's guarantee of resource ``r`` in units, scaled as SEMANTICS §2.2 scales them (and
    the burst check at the root, ``scale_root``): a pool's children that overflow its own guarantee
    (the cluster at the root; 0 for a pool without one) share it in proportion. Shared with the
    compiled loop's packing (``fast.pack``), which reads them once per run."""
    T = tree.total[r]
    res_name = tree.resources[r]
    elements = tree.elements
    gu: dict[str, float] = {}
    for name in tree.pool_postorder():
        g = elements[name].guarantee
        v = g.get(res_name) if g else None
        gu[name] = min(float(v), T) if v is not None and name != ROOT else 0.0
    preorder = tree.pool_preorder()
    if scale_root:
        tot = 0.0
        for c in tree.pool_children(ROOT):  # an operation adds no guarantee
            tot += gu[c]
        if tot > T + EPS * T:
            k = T / tot
            for name in preorder:
                if name != ROOT:
                    gu[name] = gu[name] * k
    for name in preorder:
        kids = [c for c in tree.pool_children(name) if gu[c] != 0.0]
        if not kids:
            continue
        cap = T if name == ROOT else gu[name]
        tot = 0.0
        for c in kids:
            tot += gu[c]
        if tot > cap + EPS * T:
            k = cap / tot
            for c in kids:
                gu[c] = gu[c] * k
    return gu


class _Item:
    """One child of a pool as water-filling sees it: a pool, or ``count`` equal operations (``pool``
    None); ``hi`` the most it takes, ``g`` its effective guarantee, ``value`` what it gets."""

    __slots__ = ("pool", "weight", "hi", "g", "count", "value")

    def __init__(self, pool: str | None, weight: float, hi: float, g: float) -> None:
        self.pool, self.weight, self.hi, self.g = pool, weight, hi, g
        self.count = 0 if pool is None else 1
        self.value = 0.0


def water_fill(items: list[_Item], V: float) -> float:
    """Split V among ``items`` (in child order): item i gets ``min(hi_i, g_i + λ·k_i)``, with
    ``k_i = weight_i / min weight`` and λ ≥ 0 such that the values sum to V (V lies between the
    guarantees' sum and the tops' sum). Sets each item's ``value`` and returns λ.

    Items reach their top in ascending order of breakpoint ``(hi - g) / k``, ties in child order;
    those with a breakpoint at or below 0 are full from the start, and all are when V reaches the
    tops' sum (added in child order, as the pool's own top was). Walking that order, the level
    with the first j items full is ``(V - Σ_full count·hi - Σ_rest count·g) / Σ_rest count·k``
    (the full sums added forward, the rest's backward, each once); the first j whose level does
    not pass the next breakpoint is the answer. Full items get exactly ``hi``."""
    wmin = min(it.weight for it in items)
    ks = [it.weight / wmin for it in items]
    top = 0.0
    for it in items:
        top += it.count * it.hi
    live = []
    full = 0.0
    for i, it in enumerate(items):
        if it.hi - it.g <= 0.0:
            it.value = it.hi
            full += it.count * it.hi
        else:
            live.append(((it.hi - it.g) / ks[i], i))
    if not live:
        return 0.0
    live.sort()
    if V >= top:  # a pool given its top (its parent's full item): every item full, exactly
        for _, i in live:
            items[i].value = items[i].hi
        return max(live[-1][0], 0.0)
    n = len(live)
    rest_g = [0.0] * (n + 1)
    rest_k = [0.0] * (n + 1)
    for j in range(n - 1, -1, -1):
        i = live[j][1]
        c = items[i].count
        rest_g[j] = rest_g[j + 1] + c * items[i].g
        rest_k[j] = rest_k[j + 1] + c * ks[i]
    lam = live[-1][0]
    cut = n
    for j in range(n):
        cand = (V - full - rest_g[j]) / rest_k[j]
        if cand <= live[j][0]:
            lam, cut = cand, j
            break
        it = items[live[j][1]]
        full += it.count * it.hi
    lam = max(lam, 0.0)
    for j, (_, i) in enumerate(live):
        it = items[i]
        it.value = it.hi if j < cut else min(it.hi, it.g + lam * ks[i])
    return lam
