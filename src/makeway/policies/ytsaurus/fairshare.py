"""Vector HDRF fair share (SEMANTICS §2): guarantees, limits, per-element curves, top-down evaluation.

Every element gets a curve "fair share by fit factor" (operations: usage-first then toward demand;
pools: the sum of children's "fair share by suggestion"), and from it its own "fair share by
suggestion" through the fit factor at which the curve first hits guarantee + suggestion (capped by
limits). The root is evaluated at suggestion 1 and the suggestion flows down. The curves are exact
piecewise-linear functions, so jumps are handled the way YTsaurus does (lower value wins).
"""

from __future__ import annotations

import gc
import importlib.util
from itertools import chain
from dataclasses import dataclass, field

import numpy as np

from makeway.core.resources import EPS
from makeway.policies.ytsaurus import batched, plf
from makeway.policies.ytsaurus.curve_cache import CurveCache
from makeway.policies.ytsaurus.plf import PLF, Vec
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree
from makeway.policies.ytsaurus.status import (INF_SAT, below_fair_share, blocked, element_status,  # noqa: F401
                                              local_satisfaction, strictly_dominates_non_blocked)

INF = float("inf")


@dataclass(slots=True)
class Attrs:
    limits_share: Vec
    strong_share: Vec
    demand_share: Vec
    usage_share: Vec
    integral_share: Vec
    fair_share: Vec = field(default_factory=list)
    fit_factor: float = 0.0
    promised: Vec | None = None
    _detailed: dict[str, Vec] | None = None

    @property
    def detailed(self) -> dict[str, Vec]:
        """Fair share split into strong guarantee, integral guarantee and the weight-proportional
        rest; built when first asked for (the simulator never asks), from the final shares."""
        if self._detailed is None:
            total = self.fair_share
            sg = [min(t, g) for t, g in zip(total, self.strong_share)]
            rest = [t - s for t, s in zip(total, sg)]
            ig = [min(r, i) for r, i in zip(rest, self.integral_share)]
            wp = [r - i for r, i in zip(rest, ig)]
            self._detailed = {"strongGuarantee": sg, "integralGuarantee": ig, "weightProportional": wp,
                              "total": total}
        return self._detailed


@dataclass(slots=True)
class FairShareResult:
    attrs: dict[str, Attrs]

    def fair(self, name: str) -> Vec:
        return self.attrs[name].fair_share


# -- limits and guarantees ---------------------------------------------------------------------

def limits_shares(tree: Tree, node_caps: list[list[float]] | None = None) -> dict[str, Vec]:
    out: dict[str, Vec] = {}
    unlimited = [1.0 if t > 0 else 0.0 for t in tree.total]  # what the general formula gives without limits
    for name, el in tree.elements.items():
        if el.limits is None and el.max_share_ratio is None and not (el.is_op and node_caps):
            out[name] = list(unlimited)
            continue
        given = tree.vec(el.limits, float("inf"))
        lim = [min(given[i], t) for i, t in enumerate(tree.total)]
        share = [lv / t if t > 0 else 0.0 for lv, t in zip(lim, tree.total)]
        if el.max_share_ratio is not None:
            share = [min(s, el.max_share_ratio) if t > 0 else 0.0 for s, t in zip(share, tree.total)]
        if el.is_op and node_caps:
            share = [min(s, b) for s, b in zip(share, best_allocation_share(tree, el, node_caps))]
        out[name] = share
    return out


def best_allocation_share(tree: Tree, el: Element, node_caps: list[list[float]]) -> Vec:
    """What an operation could hold if its allocations were packed onto the nodes (SEMANTICS §1.4):
    memory is what whole allocations of ``memory demand / slot demand`` fill, node by node; every
    other resource is not capped (1)."""
    res = tree.resources
    share = [1.0] * len(res)
    mem = res.index("memory") if "memory" in res else None
    slots = res.index("user_slots") if "user_slots" in res else None
    if mem is not None and slots is not None and el.demand[slots] > 0 and tree.total[mem] > 0:
        per = el.demand[mem] / el.demand[slots]
        if per > 0:
            share[mem] = sum(int(n[mem] / per + EPS) * per for n in node_caps) / tree.total[mem]
    return share


def strong_shares(tree: Tree, limits: dict[str, Vec]) -> dict[str, Vec]:
    """Explicit + implicit guarantees as shares, capped by limits, then scaled to fit (§2.1-2.2)."""
    res = tree.resources
    dim = len(res)
    main = res.index(tree.main_resource) if tree.main_resource in res else None
    zero = [0.0] * dim
    eff: dict[str, Vec] = {ROOT: list(tree.total)}
    elements = tree.elements
    for name in tree.pool_preorder():
        el = elements[name]
        if not el.children:
            continue
        parent_g = eff.get(name, zero)
        kids = el.children
        if all(v < INF for v in parent_g) or main is None or not parent_g[main] > 0:
            # a child without a guarantee gets none (``zero``, the default of ``eff``): explicit 0
            # and implicit ratio 0, adding 0 to the sums below
            kids = [c for c in kids if elements[c].guarantee]
            if not kids:
                continue
        explicit: dict[str, Vec] = {}
        specified: dict[str, set[int]] = {}
        for c in kids:
            g = tree.elements[c].guarantee
            if not g:
                explicit[c] = zero
                specified[c] = set()
                continue
            explicit[c] = tree.vec(g)
            specified[c] = {i for i, r in enumerate(res) if r in g and g[r] is not None}
        residual = [max(0.0, parent_g[i] - sum(explicit[c][i] for c in kids)) for i in range(dim)]
        implicit: dict[str, Vec] = {c: [0.0] * dim for c in kids}
        if main is not None and parent_g[main] > 0:
            finite = all(v < INF for v in parent_g)
            for c in kids:
                if explicit[c] is zero and finite:
                    continue  # ratio 0: the implicit guarantee stays 0
                ratio = explicit[c][main] / parent_g[main]
                for i in range(dim):
                    if i != main and i not in specified[c]:
                        implicit[c][i] = ratio * parent_g[i]
            if name != ROOT:
                for i in range(dim):
                    s = sum(implicit[c][i] for c in kids)
                    if s > residual[i] + EPS and s > 0:
                        k = residual[i] / s
                        for c in kids:
                            implicit[c][i] *= k
        for c in kids:
            imp = implicit[c]
            if explicit[c] is zero and not any(imp):
                eff[c] = zero  # no guarantee at all: its share is 0 (capped by its limits below)
            else:
                eff[c] = [explicit[c][i] + imp[i] for i in range(dim)]
    shares = {n: (_capped_zero(limits[n]) if eff.get(n, zero) is zero
                  else [min(s, lim) for s, lim in zip(tree.share(eff[n]), limits[n])])
              for n in tree.elements}
    shares[ROOT] = [1.0 if t > 0 else 0.0 for t in tree.total]
    return shares


def _capped_zero(lim: Vec) -> Vec:
    """min(0, limit) per resource: zeros unless a limit share is negative."""
    return [0.0] * len(lim) if min(lim, default=0.0) >= 0.0 else [min(0.0, v) for v in lim]


def adjust_guarantees(tree: Tree, shares: dict[str, Vec], extra: dict[str, Vec] | None = None) -> None:
    """Scale children's guarantees by one common factor wherever they overflow the parent's (§2.2)."""
    extra = extra or {}
    for name in tree.pool_preorder():
        el = tree.elements[name]
        if not el.children:
            continue
        cap = shares[name]
        dim = len(cap)
        kids = [c for c in el.children if c in extra or any(shares[c])]  # zeros add and scale to 0
        if not kids:
            continue
        none = [0.0] * dim
        tot = [sum(shares[c][i] + extra.get(c, none)[i] for c in kids) for i in range(dim)]
        k = 1.0
        for i in range(dim):
            if tot[i] > cap[i] + EPS:
                k = min(k, cap[i] / tot[i])
        if k < 1.0:
            for c in kids:
                shares[c] = [v * k for v in shares[c]]
                if c in extra:
                    extra[c] = [v * k for v in extra[c]]


# -- curves ------------------------------------------------------------------------------------

def op_curve(usage: Vec, demand: Vec) -> PLF:
    """Usage-first path on [0, 1], then linearly to demand on [1, 2] (§2.3)."""
    dim = len(usage)
    umax = max(usage) if usage else 0.0
    if umax <= 0:
        return PLF([0.0, 1.0, 2.0], [[0.0] * dim, [0.0] * dim, list(demand)])
    knots = sorted({u / umax for u in usage if 0 < u / umax < 1})
    xs = [0.0] + knots + [1.0, 2.0]
    ys = [[min(u, f * umax) for u in usage] for f in xs[:-1]] + [list(demand)]
    return PLF(xs, ys)


def op_fsbs_batch(usage: np.ndarray, demand: np.ndarray) -> list[PLF]:
    """``op_fsbs_arrays`` as one function per operation."""
    xs, ys = op_fsbs_arrays(usage, demand)
    return [PLF(xs[i], ys[i]) for i in range(len(xs))]


def op_fsbs_arrays(usage: np.ndarray, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_op_fsbs_rows`` in chunks of a few thousand operations (small temporaries stay cached)."""
    step = 4096
    if len(usage) <= step:
        return _op_fsbs_rows(usage, demand)
    parts = [_op_fsbs_rows(usage[i:i + step], demand[i:i + step]) for i in range(0, len(usage), step)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _op_fsbs_rows(usage: np.ndarray, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fair share by suggestion of many operations at once, in closed form.

    Valid for operations without guarantees whose limits do not bind below demand and whose usage
    share is below 1 (the common case; ``_build`` checks). With U = max usage: up to U the share is
    min(usage, s) (the usage-first path); beyond, usage + t(s) x (demand - usage) with
    t(s) = min(1, min_r (s - u_r) / (d_r - u_r)), a concave function whose kinks are the pairwise
    crossings of those lines and the points where they reach 1. At s = U it may jump (an operation
    whose dominant used resource needs no more); the lower value is kept there (left-continuity).
    Cross-checked against the generic construction in tests.
    """
    n, dim = usage.shape
    U = usage.max(axis=1)
    a = demand - usage
    live = a > EPS * 0
    inv = np.where(live, 1.0 / np.where(live, a, 1.0), 0.0)
    sa = np.concatenate([np.zeros((n, 1)), np.minimum(usage, U[:, None]), U[:, None]], axis=1)
    sa.sort(axis=1)
    va = np.minimum(usage[:, None, :], sa[:, :, None])
    cand = [U[:, None], demand, np.ones((n, 1))]
    for i in range(dim):
        for j in range(i + 1, dim):
            ai, aj = a[:, i], a[:, j]
            ok = live[:, i] & live[:, j] & (ai != aj)
            den = np.where(ok, aj - ai, 1.0)
            cand.append(np.where(ok, (usage[:, i] * aj - usage[:, j] * ai) / den, 1.0)[:, None])
    sb = np.clip(np.concatenate(cand, axis=1), U[:, None], 1.0)
    sb.sort(axis=1)
    lines = np.where(live[:, None, :], (sb[:, :, None] - usage[:, None, :]) * inv[:, None, :], np.inf)
    t = np.clip(np.minimum(1.0, lines.min(axis=2)), 0.0, 1.0)
    vb = usage[:, None, :] + t[:, :, None] * a[:, None, :]
    xs = np.concatenate([sa, sb], axis=1)
    ys = np.concatenate([va, vb], axis=1)
    xs = np.concatenate([xs, np.ones((n, 1))], axis=1)
    ys = np.concatenate([ys, ys[:, -1:, :]], axis=1)
    return xs, ys


def fit_factor_fn(curve: PLF, g: Vec, lim: Vec) -> tuple[list[float], list[float]]:
    comps = [plf.mff_component(curve, r, g[r], lim[r]) for r in range(len(g))]
    return plf.min_scalar(comps)


def child_suggestion(mode: str, weights: list[float], f: float) -> list[float]:
    if mode == "fifo":
        return [min(1.0, max(0.0, f - k)) for k in range(len(weights))]
    wmin = min((w for w in weights if w > EPS), default=1.0)
    return [min(1.0, f * w / wmin) for w in weights]


def pool_curve(mode: str, weights: list[float], kids: list[PLF], dim: int) -> PLF:
    if not kids:
        return PLF([0.0, 1.0], [[0.0] * dim, [0.0] * dim])
    parts: list[PLF] = []
    if mode == "fifo":
        n = len(kids)
        for k, fn in enumerate(kids):
            parts.append(PLF(np.concatenate([[0.0], fn.ax + k, [float(n)]]),
                             np.concatenate([fn.ay[:1], fn.ay, fn.ay[-1:]])))
        return plf.total_sum(parts, dim, float(n))
    wmin = min((w for w in weights if w > EPS), default=1.0)
    for w, fn in zip(weights, kids):
        k = w / wmin if w > EPS else 0.0
        if k <= 0:
            parts.append(PLF(np.array([0.0, 1.0]), np.concatenate([fn.ay[:1], fn.ay[:1]])))
            continue
        xs = fn.ax / k
        if xs[-1] < 1.0:
            parts.append(PLF(np.append(xs, 1.0), np.concatenate([fn.ay, fn.ay[-1:]])))
        else:
            parts.append(PLF(xs, fn.ay))
    return plf.total_sum(parts, dim, 1.0)


def pool_curve_rows(weights: list[float], ax: np.ndarray, ay: np.ndarray, rows: list[int], dim: int) -> PLF | None:
    """``pool_curve`` of a fair share pool whose children are all closed-form rows (``_Fsbs``),
    without a PLF per child: the same points end to end, so the very same sum. None where a child
    part differs in shape from the others (a weight of 0, or some parts extended to 1 and some not):
    the caller takes ``pool_curve``."""
    if len(rows) < 2 or not all(w > EPS for w in weights):
        return None
    shaped = shaped_rows(weights, ax, ay, rows)
    if shaped is None:
        return None
    xs, ys = shaped
    n, q = xs.shape
    return plf.sum_points(xs.reshape(-1), ys.reshape(n * q, dim), np.full(n, q, dtype=np.int64),
                          np.add.reduce(np.ascontiguousarray(ys[:, 0, :])), dim, 1.0)


def shaped_rows(weights: list[float], ax: np.ndarray, ay: np.ndarray,
                rows: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """The closed-form rows of a fair share pool's children shaped as ``pool_curve`` shapes each
    part (x divided by the relative weight, extended to 1 where short), all at once; None where the
    parts differ in shape (some extended and some not). Weights must be positive."""
    wmin = min(weights)
    xs = ax[rows] / np.array([w / wmin for w in weights], dtype=float)[:, None]
    ys = ay[rows]
    short = xs[:, -1] < 1.0
    if short.all():
        return (np.concatenate([xs, np.ones((len(rows), 1))], axis=1),
                np.concatenate([ys, ys[:, -1:]], axis=1))
    return None if short.any() else (xs, ys)


def fifo_order(tree: Tree, pool: str) -> list[str]:
    el = tree.elements[pool]
    keys = el.fifo_sort

    def key(c: str) -> tuple:
        ce = tree.elements[c]
        k: list = []
        for p in keys:
            if p == "weight":
                k.append(-ce.weight)
            elif p == "start_time":
                k.append(ce.start_time)
            elif p == "pending_allocation_count":
                k.append(ce.pending_count)
        return (*k, ce.order, c)
    return sorted(el.children, key=key)


# -- the update --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Batching:
    """When leaf-level pools go through ``batched`` together: a level with fewer pools than
    ``min_pools`` and fewer children than ``min_children`` stays on the generic path, one pool at
    a time (both agree to EPS; tests lower the thresholds so small trees are batched too, or turn
    batching off to compare)."""

    enabled: bool = True
    min_pools: int = 8
    min_children: int = 64


BATCHING = Batching()


def compute(tree: Tree, node_caps: list[list[float]] | None = None,
            integral: "object | None" = None, cache: CurveCache | None = None,
            kernel: bool = False, batching: Batching = BATCHING) -> FairShareResult:
    """One fair share update over the whole tree. ``integral`` computes integral shares (§2.9);
    ``cache`` carries unchanged subtrees' curves over from the previous update (exactly the same
    result, computed once). ``kernel`` (``fair_share_kernel``): the compiled update (numba) for
    every tree it covers, whatever its size, so no decision depends on tree size; else the Python
    construction, the reference (the two agree to EPS, not to the bit). ``batching``: which pools
    the Python construction computes together (``Batching``)."""
    # An update allocates a few small containers per element and frees nothing cyclic; the cyclic
    # collector would rescan the whole (growing) heap again and again meanwhile, about a fifth of
    # the time on a large tree. It is paused for the update only and restored as it was.
    paused = gc.isenabled()
    gc.disable()
    try:
        if kernel and _arrays().supported(tree):
            arrays = _arrays()
            res = arrays.compute_arrays(arrays.PoolArrays.from_tree(tree, node_caps))
            if res.exact:
                return FairShareResult(arrays.LazyAttrs(res))  # type: ignore[arg-type]
        return _compute(tree, node_caps, integral, cache, batching)
    finally:
        if paused:
            gc.enable()


def _arrays():
    """The compiled update's module, imported on first use: numba is an optional extra
    (``makeway[fast]``) and only ``fair_share_kernel: true`` needs it."""
    from makeway.policies.ytsaurus import arrays
    return arrays


def kernel_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def _compute(tree: Tree, node_caps, integral, cache: CurveCache | None,
             batching: Batching = BATCHING) -> FairShareResult:
    tree.link()
    dim = len(tree.resources)
    limits = limits_shares(tree, node_caps)
    strong = strong_shares(tree, limits)
    prep = _Prep(tree, node_caps)
    if integral is not None:
        integral.scale_with_bursts(tree, strong)  # type: ignore[attr-defined]
    adjust_guarantees(tree, strong)
    strong[ROOT] = [sum(strong[c][i] for c in tree.elements[ROOT].children) for i in range(dim)]
    attrs: dict[str, Attrs] = {}
    zero = [0.0] * dim
    for name, d, u in zip(prep.names, prep.ds.tolist(), prep.us.tolist()):
        attrs[name] = Attrs(limits[name], strong[name], d, u, list(zero))
    if cache is not None:
        cache.roll()
    curves, ffs, fsbs, orders = _build(tree, attrs, dim, cache, prep, batching)
    if integral is not None and integral.assign(tree, attrs, curves):  # type: ignore[attr-defined]
        curves, ffs, fsbs, orders = _build(tree, attrs, dim, cache, prep, batching)

    sugg: dict[str, float] = {ROOT: 1.0}
    rows = getattr(fsbs, "rows", {})
    elements = tree.elements
    view = getattr(fsbs, "view", None)
    below = {n for n, ok in zip(view.names, view.ok.tolist()) if ok} if view is not None else set()
    for name in tree.pool_preorder():
        if name in below:
            continue  # read together with its operations below
        el = elements[name]
        s = sugg[name]
        a = attrs[name]
        if name != ROOT or not getattr(fsbs, "root_only", False):
            a.fair_share = [float(v) for v in fsbs[name].left(s)]  # the root's: its children's sum, below
        if not el.children:
            continue
        fx, fv = ffs[name]
        f = plf._eval1(fx, fv, s)[0]
        a.fit_factor = f
        kids = orders[name]
        for c, cs in zip(kids, child_suggestion(el.mode, [tree.elements[c].weight for c in kids], f)):
            sugg[c] = cs
    if below:
        _read_level(view, sugg, attrs, orders)
    for name, el in elements.items():
        if el.is_op and name not in rows and el.parent not in below:
            attrs[name].fair_share = [float(v) for v in fsbs[name].left(sugg[name])]
    # the other closed-form operations, evaluated together
    later = [n for n in rows if elements[n].parent not in below] if below else list(rows)
    if later:
        vals = batched.left_rows(fsbs.ax, fsbs.ay, np.fromiter((rows[n] for n in later), dtype=np.int64,
                                                               count=len(later)),
                                 np.fromiter((sugg[n] for n in later), dtype=float, count=len(later)))
        for name, v in zip(later, vals.tolist()):
            attrs[name].fair_share = v
    from makeway.policies.ytsaurus.promised import promise, promised_tops

    for name in promised_tops(tree):
        promise(tree, attrs, name, ffs, fsbs, orders)
    root = tree.elements[ROOT]
    if root.children:
        attrs[ROOT].fair_share = [sum(attrs[c].fair_share[i] for c in root.children) for i in range(dim)]
    _truncate_fifo(tree, attrs)
    if integral is not None:
        integral.after_update(tree, attrs)  # type: ignore[attr-defined]
    return FairShareResult(attrs)


def _read_level(view: batched.LevelView, sugg: dict[str, float], attrs: dict[str, Attrs], orders) -> None:
    """Fit factors and fair shares of a batched level's pools and of their operations, from the
    pools' suggestions, in one pass (``batched.LevelView.read``)."""
    names = view.names
    fit, fair, kid_pool, kid_col, kid_fair = view.read(
        np.fromiter((sugg[n] for n in names), dtype=float, count=len(names)))
    ok = view.ok
    for name, f, v, good in zip(names, fit.tolist(), fair.tolist(), ok.tolist()):
        if good:
            a = attrs[name]
            a.fit_factor = f
            a.fair_share = v
    for p, c, v in zip(kid_pool.tolist(), kid_col.tolist(), kid_fair.tolist()):
        attrs[orders[names[p]][c]].fair_share = v


def _op_key(a: Attrs) -> tuple:
    return (tuple(a.usage_share), tuple(a.demand_share), tuple(a.strong_share), tuple(a.integral_share),
            tuple(a.limits_share))


class _Prep:
    """Demand and usage shares of all elements as arrays (one division for the whole tree instead of
    one list per element), and which operations may take the closed form."""

    def __init__(self, tree: Tree, node_caps) -> None:
        els = list(tree.elements.values())
        self.names = [el.name for el in els]
        n, dim = len(els), len(tree.resources)
        total = np.asarray(tree.total, dtype=float)
        pos = total > 0
        div = np.where(pos, total, 1.0)
        demand = np.array([el.demand for el in els], dtype=float).reshape(n, dim)
        usage = np.array([el.usage for el in els], dtype=float).reshape(n, dim)
        self.ds = np.where(pos, demand / div, 0.0)
        self.us = np.where(pos, usage / div, 0.0)
        self.is_op = np.fromiter((el.is_op for el in els), dtype=bool, count=n)
        # an operation with no limits and no guarantee of its own has limit share 1 where the cluster
        # has the resource, strong share 0 (its implicit share follows its explicit one), and never
        # an integral share (those go to integral pools and their ancestors)
        plain = np.fromiter((el.is_op and el.limits is None and el.max_share_ratio is None and not el.guarantee
                             for el in els), dtype=bool, count=n)
        if node_caps or not np.all(np.isfinite(total)):
            plain[:] = False
        self.plain_ok = plain & (self.us.max(axis=1, initial=0.0) < 1.0) & np.all(self.us <= self.ds, axis=1) \
            & np.all(self.ds <= pos.astype(float), axis=1)
        self.other = self.is_op & ~plain  # checked one by one against their Attrs

    def closed_form(self, attrs: dict[str, Attrs]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Operations whose fair share by suggestion has the closed form, with their usage and demand
        share rows; operations with limits or a guarantee are checked one by one."""
        names = self.names
        ok = self.plain_ok.copy()
        for i in np.flatnonzero(self.other).tolist():
            ok[i] = _closed_form_ok(attrs[names[i]])
        idx = np.flatnonzero(ok)
        return [names[i] for i in idx.tolist()], self.us[idx], self.ds[idx]


def _build(tree: Tree, attrs: dict[str, Attrs], dim: int, cache: CurveCache | None = None,
           prep: _Prep | None = None, batching: Batching = BATCHING):
    """Bottom-up: each element's curve, fit factor by suggestion, and fair share by suggestion."""
    curves: dict[str, PLF] = {}
    ffs: dict[str, tuple[list[float], list[float]]] = {}
    fsbs = _Fsbs()
    orders: dict[str, list[str]] = {}
    keys: dict[str, tuple] = {}
    tokens: dict[str, object] = {}
    elements = tree.elements
    if prep is not None:
        fast, us, ds = prep.closed_form(attrs)
    else:
        fast = [n for n, el in elements.items() if el.is_op and _closed_form_ok(attrs[n])]
        us = np.asarray([attrs[n].usage_share for n in fast], dtype=float).reshape(len(fast), dim)
        ds = np.asarray([attrs[n].demand_share for n in fast], dtype=float).reshape(len(fast), dim)
    if fast:
        # cheaper to recompute than to look up: not cached; a parent's key names them by content
        fsbs.add_rows(fast, *batched.compact_rows(*op_fsbs_arrays(us, ds)))
        if cache is not None:
            for n, u, d in zip(fast, us.tolist(), ds.tolist()):
                tokens[n] = ("closed", tuple(u), tuple(d))
    if cache is not None:
        rows = fsbs.rows if fast else {}
        for name, el in elements.items():
            if el.is_op and name not in rows:
                key = keys[name] = ("op", _op_key(attrs[name]))
                hit = cache.get(key)
                if hit is not None:
                    tokens[name], (curve, ff, f) = hit
                    if curve is not None:
                        curves[name], ffs[name] = curve, ff
                    fsbs[name] = f
    done = (_leaf_level(tree, attrs, dim, curves, ffs, fsbs, orders, keys, tokens, cache, batching)
            if batching.enabled else set())
    rows = getattr(fsbs, "rows", {})
    generic_ops = [n for n, el in elements.items() if el.is_op and n not in fsbs and n not in rows]
    for name in chain(generic_ops, [p for p in tree.pool_postorder() if p not in done]):
        el = elements[name]
        a = attrs[name]
        if not el.is_op:
            kids = fifo_order(tree, name) if el.mode == "fifo" else list(el.children)
            orders[name] = kids
            if cache is not None:
                key = keys[name] = _pool_key(tree, name, a, kids, tokens, False)
                hit = cache.get(key)
                if hit is not None:
                    tokens[name], (curves[name], ffs[name], fsbs[name]) = hit
                    continue
        if el.is_op:
            curve = op_curve(a.usage_share, a.demand_share)
        else:
            weights = [elements[c].weight for c in kids]
            rows = getattr(fsbs, "rows", {})
            if tree.members and any(c in tree.members for c in kids):
                from makeway.policies.ytsaurus.grouping import grouped_curve
                curve = grouped_curve(tree, el, weights, kids, fsbs, dim)
            else:
                curve = (pool_curve_rows(weights, fsbs.ax, fsbs.ay, [rows[c] for c in kids], dim)
                         if el.mode != "fifo" and rows and all(c in rows for c in kids) else None)
            if curve is None:
                curve = pool_curve(el.mode, weights, [fsbs[c] for c in kids], dim)
        g = [s + i for s, i in zip(a.strong_share, a.integral_share)]
        lim = a.limits_share if name != ROOT else [1.0] * dim
        ff = fit_factor_fn(curve, g, lim)
        curves[name] = curve
        ffs[name] = ff
        fsbs[name] = plf.compose(curve, *ff)
        if cache is not None:
            tokens[name] = cache.put(keys[name], (curve, ff, fsbs[name]))
    return curves, ffs, fsbs, orders


def _leaf_level(tree: Tree, attrs: dict[str, Attrs], dim: int, curves, ffs, fsbs: "_Fsbs", orders, keys,
                tokens, cache: CurveCache | None, batching: Batching = BATCHING) -> set[str]:
    """Pools computed together (``batched.leaf_pools``), level by level from the bottom: first those
    whose children are all operations with a known fair share by suggestion, then those whose
    children are all done, and so on. Returns the pools done (cache hits included)."""
    elements = tree.elements
    done: set[str] = set()
    pools = [n for n in tree.postorder() if not elements[n].is_op and elements[n].children]
    while True:
        level = _level(tree, pools, fsbs, orders, done)
        members = tree.members
        kids = (sum(members.get(c, 1) for n in level for c in orders[n]) if members
                else sum(len(orders[n]) for n in level))
        root_only = level == [ROOT] and _root_point_only(tree)
        if not level or (len(level) < batching.min_pools and kids < batching.min_children and not root_only):
            return done
        names = level
        if cache is not None and not root_only:
            names = []
            for name in level:
                key = keys[name] = _pool_key(tree, name, attrs[name], orders[name], tokens, True)
                hit = cache.get(key)
                if hit is None:
                    names.append(name)
                    continue
                tokens[name], (curves[name], ffs[name], fsbs[name]) = hit
                done.add(name)
        progress = len(names) < len(level)
        if not names:
            continue
        cx, cy, index = fsbs.padded({c for n in names for c in orders[n]}, dim)
        g = np.array([[s + i for s, i in zip(attrs[n].strong_share, attrs[n].integral_share)] for n in names])
        lim = np.array([attrs[n].limits_share if n != ROOT else [1.0] * dim for n in names])
        if root_only:
            root = elements[ROOT]
            f = batched.root_fit(cx, cy, [index[c] for c in orders[ROOT]], root.mode == "fifo",
                                 [elements[c].weight for c in orders[ROOT]], g[0], lim[0])
            ffs[ROOT] = ([0.0, 1.0], [f, f])
            fsbs.root_only = True
            done.add(ROOT)
            return done
        ops_below = all(elements[c].is_op for n in names for c in orders[n])
        view = batched.LevelView() if ops_below else None
        results = batched.leaf_pools(cx, cy, [[index[c] for c in orders[n]] for n in names],
                                     [elements[n].mode == "fifo" for n in names],
                                     [[elements[c].weight for c in orders[n]] for n in names], g, lim, view,
                                     [[members.get(c, 1) for c in orders[n]] for n in names] if members else None)
        if view is not None:
            view.names = names
            fsbs.view = view
        for name, res in zip(names, results):
            if res is None:
                continue
            curves[name], ffs[name], fsbs[name] = res
            done.add(name)
            progress = True
            if cache is not None:
                tokens[name] = cache.put(keys[name], res)
        if not progress:
            return done


def _root_point_only(tree: Tree) -> bool:
    """The root is read at suggestion 1 only, unless it asks for its promised fair share (read at 0)
    or takes part in integral guarantees (which read curves). Its own fair share is the sum of its
    children's, so its fit factor there is all that is needed."""
    root = tree.elements[ROOT]
    return not root.settings.get("compute_promised_guarantee_fair_share") and not root.integral


def _level(tree: Tree, pools: list[str], fsbs: "_Fsbs", orders, done: set[str]) -> list[str]:
    """Pools (of ``pools``) not taken yet whose children all are closed-form operations or pools in
    ``done``, with their children's order set. Which pools form a level, and so which path computes
    them, never depends on what the curve cache holds: a pool taken from the cache must be what a
    fresh computation of it gives (the paths round differently)."""
    elements = tree.elements
    names: list[str] = []
    rows = getattr(fsbs, "rows", {})
    for name in pools:
        if name in orders:
            continue
        el = elements[name]
        if not all(c in rows or c in done for c in el.children):
            continue
        orders[name] = fifo_order(tree, name) if el.mode == "fifo" else list(el.children)
        names.append(name)
    return names


def _pool_key(tree: Tree, name: str, a: Attrs, kids: list[str], tokens, batched_path: bool) -> tuple:
    """A pool's curve cache key: everything its curve, fit factor and fair share by suggestion are
    computed from, and the path computing them (batched and generic results may differ in rounding)."""
    elements = tree.elements
    return ("pool", batched_path, name == ROOT, elements[name].mode, _op_key(a),
            tuple((elements[c].weight, tokens[c], tree.members.get(c, 1)) for c in kids))


class _Fsbs(dict):
    """Fair share by suggestion by element. Closed-form operations are held as rows of two arrays
    and become a PLF only when read by name, since most are only ever read through the arrays."""

    def add_rows(self, names: list[str], xs: np.ndarray, ys: np.ndarray) -> None:
        self.rows = {n: i for i, n in enumerate(names)}
        self.ax, self.ay = xs, ys

    def has(self, name: str) -> bool:
        return name in self or name in getattr(self, "rows", ())

    def __missing__(self, name: str) -> PLF:
        i = getattr(self, "rows", {})[name]
        f = self[name] = PLF(self.ax[i], self.ay[i])
        return f

    def padded(self, names: set[str], dim: int) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """Padded rows for ``names`` (the closed-form rows as they are, others appended) and each
        name's row."""
        rows = getattr(self, "rows", {})
        others = sorted(n for n in names if n not in rows)
        if not others:
            return self.ax, self.ay, rows
        ox, oy = batched.pad_points([self[n] for n in others], dim)
        if len(others) == len(names):
            return ox, oy, {n: i for i, n in enumerate(others)}
        q = max(ox.shape[1], self.ax.shape[1])
        ax, ay = _widen(self.ax, self.ay, q)
        ox, oy = _widen(ox, oy, q)
        base = len(ax)
        index = dict(rows)
        index.update({n: base + i for i, n in enumerate(others)})
        return np.concatenate([ax, ox]), np.concatenate([ay, oy]), index


def _widen(x: np.ndarray, y: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Pad rows to q points by repeating the last one."""
    extra = q - x.shape[1]
    if extra <= 0:
        return x, y
    return (np.concatenate([x, np.repeat(x[:, -1:], extra, axis=1)], axis=1),
            np.concatenate([y, np.repeat(y[:, -1:], extra, axis=1)], axis=1))




def _closed_form_ok(a: Attrs) -> bool:
    return (max(a.usage_share, default=0.0) < 1.0 and not any(a.strong_share) and not any(a.integral_share)
            and all(lim >= d for lim, d in zip(a.limits_share, a.demand_share))
            and all(u <= d for u, d in zip(a.usage_share, a.demand_share)))


def _truncate_fifo(tree: Tree, attrs: dict[str, Attrs]) -> None:
    for name, el in tree.elements.items():
        if el.is_op or el.mode != "fifo" or not el.truncate_fifo:
            continue
        for c in el.children:
            ce = tree.elements[c]
            a = attrs[c]
            if not ce.gang:
                continue
            if any(f < d - EPS for f, d in zip(a.fair_share, a.demand_share)):
                cut = a.fair_share
                for anc in tree.ancestors(name):
                    attrs[anc].fair_share = [x - y for x, y in zip(attrs[anc].fair_share, cut)]
                a.fair_share = [0.0] * len(cut)
