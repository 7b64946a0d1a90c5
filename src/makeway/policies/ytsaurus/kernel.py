"""Compiled fair share update (SEMANTICS §2) over a struct-of-arrays pool tree (``arrays``).

Bottom-up, element by element in postorder, every element's functions: operations in closed form
where they have one (``kernel_closed``), a pool's curve as the sum of its children's parts
(``kernel_sweep``; children's points closer than ``SLIVER`` are one point), its fit factor and fair
share by suggestion read off the curve parametrically (``kernel_closed``) or, where that does not
cover it, built the generic way (``kernel_plf``, the counterpart of ``plf``). The root's children
keep their curves and are read at single suggestions: the root's fit factor at suggestion 1 is found
by bisection over them. Then top-down, every pool's fit factor and fair share and its children's
suggestions, and every operation's fair share. Also here: pool sums, effective guarantees and their
scaling (§2.1-2.2).

It is the Python construction of ``fairshare`` written again as loops over flat arrays compiled with
numba, because a tree of 10,000 pools and 100,000 operations spends its time in per-element work
that Python and numpy cannot make cheap enough for a 200 ms update period.
``tests/ytsaurus/test_kernel.py`` holds it to the Python construction on random trees. Numba caches
each compiled function by its own file only: after a change to a helper in another module, clear
``__pycache__/*.nbi`` (or touch this file), or a stale caller keeps the old helper compiled in.

Layout: elements are rows; ``post`` lists them children first; a pool's children are
``kids[kid_ptr[i]:kid_ptr[i + 1]]`` in the order the pool hands out its share (FIFO order for FIFO
pools). Every element's fair share by suggestion goes to one buffer (``fs_x``/``fs_y`` with
offsets), every pool's fit factor by suggestion to another; both are kept across updates, and
scratch space is reused between elements, so that an element costs no allocation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.kernel_closed import _closed_ok, _op_closed, _param_fsbs, _param_space
from makeway.policies.ytsaurus.kernel_plf import (INF, _clean_into, _eval_left_at, _fsbs, _grow1, _grow2,
                                                  _inv_left2, _inv_right2, _left, _limit_level2, _op_curve, _snap_limit,
                                                  _workspace)
from makeway.policies.ytsaurus.kernel_sweep import _part, _sweep_space, _total_sum


@njit(cache=True, error_model="numpy", _nrt=False)
def _wmin(weight, kids, a0, a1):
    """The smallest weight above EPS among children kids[a0:a1] (1 if none): fair share mode scales
    child suggestions by weight / this (``fairshare.child_suggestion``)."""
    wmin = INF
    for z in range(a0, a1):
        wz = weight[kids[z]]
        if wz > EPS and wz < wmin:
            wmin = wz
    return 1.0 if wmin == INF else wmin


@njit(cache=True, error_model="numpy")
def _room(i, is_op, kid_ptr, kids, fs_len, dim):
    """Room a pool's construction may take: (children, points of its parts, most curve points, most
    function points written); (0, 0, 0, most points) for an operation."""
    if is_op[i]:
        nc = dim + 3
        return 0, 0, 0, (2 * dim + 8) * 4 * (2 + dim * dim) + 64
    a0 = kid_ptr[i]
    a1 = kid_ptr[i + 1]
    bound = 2
    for z in range(a0, a1):
        bound += fs_len[kids[z]] + 2
    nc = 2 * bound + 6
    npos = dim * (nc + 6)
    nmin = npos * (2 + dim * (dim - 1) // 2) + 2
    out = 2 * nmin + 2 * nc + 4
    out2 = 2 * nc + (nc + 1) * (dim + dim * (dim - 1) // 2) + 6
    return a1 - a0, bound, nc, max(out, out2, 2 * nc + 8)


@njit(cache=True, error_model="numpy")
def _build_run(t0, post, is_op, fifo, weight, kid_ptr, kids, U, D, G, L, root, pointwise, param, fs_x, fs_y, mf_x,
               mf_v, fs_at, fs_len, mf_at, mf_len, used, mused, cx, cy, inv, ws_small, ws_big, pws, px, py, pcx, pcy,
               sw, plen, tok):
    """Elements from post[t0] on, until one finds a buffer short (``_room``): returns where it
    stopped and the buffers' fill. No buffer is replaced in here, so none is reference-counted per
    element."""
    dim = len(tok)
    small = 2 * dim + 8
    for t in range(t0, post.shape[0]):
        i = post[t]
        if i == root:
            continue
        m, bound, ncmax, outmax = _room(i, is_op, kid_ptr, kids, fs_len, dim)
        if pointwise[i] and not is_op[i]:
            outmax = 2 * ncmax + 8
        if used + outmax > fs_x.shape[0] or mused + outmax > mf_x.shape[0]:
            return t, used, mused
        if is_op[i]:
            if not pointwise[i] and _closed_ok(U, D, G, L, i, tok):
                no = _op_closed(U, D, i, cx, cy, inv, tok)
                w = _clean_into(cx, cy, no, fs_x, fs_y, used, tok)
            else:
                nc = _op_curve(U[i], D[i], cx, cy, tok)
                if pointwise[i]:
                    w = _clean_into(cx, cy, nc, fs_x, fs_y, used, tok)
                else:
                    nm, no = _fsbs(cx, cy, nc, G[i], L[i], ws_small, tok)
                    w = _clean_into(ws_small[10], ws_small[11], no, fs_x, fs_y, used, tok)
            fs_at[i] = used
            fs_len[i] = w
            used += w
            continue
        if plen.shape[0] < m or px.shape[0] < bound or pcx.shape[0] < 2 * ncmax + 8 or sw[0].shape[0] < bound + 2:
            return t, used, mused
        if not pointwise[i] and (pws[0].shape[0] < ncmax or ws_big[3].shape[0] < ncmax + 6):
            return t, used, mused
        a0 = kid_ptr[i]
        a1 = kid_ptr[i + 1]
        if m == 0:
            pcx[0] = 0.0
            pcx[1] = 1.0
            for r in range(dim):
                pcy[0, r] = 0.0
                pcy[1, r] = 0.0
            nc = 2
        else:
            wmin = _wmin(weight, kids, a0, a1)
            end = float(m) if fifo[i] else 1.0
            tot = 0
            for z in range(a0, a1):
                c = kids[z]
                kz = weight[c] / wmin if weight[c] > EPS else 0.0
                ln = _part(fs_x, fs_y, fs_at[c], fs_at[c] + fs_len[c], fifo[i], kz, float(z - a0), end, px, py, tot,
                           tok)
                plen[z - a0] = ln
                tot += ln
            nc = _total_sum(px, py, plen, m, end, pcx, pcy, sw, tok)
        if pointwise[i]:
            w = _clean_into(pcx, pcy, nc, fs_x, fs_y, used, tok)
            fs_at[i] = used
            fs_len[i] = w
            used += w
            continue
        npt = _param_fsbs(pcx, pcy, nc, G[i], L[i], pws, tok) if param else -1
        if npt >= 0:
            os_ = pws[12]
            of_ = pws[13]
            ov_ = pws[14]
            for z in range(npt):
                mf_x[mused + z] = os_[z]
                mf_v[mused + z] = of_[z]
                fs_x[used + z] = os_[z]
                for r in range(dim):
                    fs_y[used + z, r] = ov_[z, r]
            mf_at[i] = mused
            mf_len[i] = npt
            mused += npt
            fs_at[i] = used
            fs_len[i] = npt
            used += npt
            continue
        ws = ws_small if nc <= small else ws_big
        nm, no = _fsbs(pcx, pcy, nc, G[i], L[i], ws, tok)
        mx = ws[8]
        mv = ws[9]
        for z in range(nm):
            mf_x[mused + z] = mx[z]
            mf_v[mused + z] = mv[z]
        mf_at[i] = mused
        mf_len[i] = nm
        mused += nm
        w = _clean_into(ws[10], ws[11], no, fs_x, fs_y, used, tok)
        fs_at[i] = used
        fs_len[i] = w
        used += w
    return post.shape[0], used, mused


@njit(cache=True, error_model="numpy")
def build(post, is_op, fifo, weight, kid_ptr, kids, U, D, G, L, root, pointwise, param, fs_x, fs_y, mf_x, mf_v, tok):
    """Bottom-up: every element's fair share by suggestion and every pool's fit factor by
    suggestion; for ``pointwise`` elements (the root's children, read at single suggestions only)
    the curve itself, with its components made monotone in ``cm_y``. ``param``: pools are read off
    their curves parametrically where that covers them (False: all through ``_fsbs``, for tests).
    ``fs_x``..``mf_v`` are buffers from an earlier update (grown here when short): reusing them
    spares the page faults of fresh memory every update."""
    dim = len(tok)
    n = U.shape[0]
    fs_at = np.full(n, -1, dtype=np.int64)
    fs_len = np.zeros(n, dtype=np.int64)
    mf_at = np.full(n, -1, dtype=np.int64)
    mf_len = np.zeros(n, dtype=np.int64)
    small = 2 * dim + 8
    ws_small = _workspace(dim, small)
    ws_big = _workspace(dim, 256)
    pws = _param_space(dim, 256)
    cx = np.empty(small + dim * dim + 8)
    cy = np.empty((small + dim * dim + 8, dim))
    px = np.empty(256)
    py = np.empty((256, dim))
    pcx = np.empty(1024)
    pcy = np.empty((1024, dim))
    sw = _sweep_space(dim, 1024)
    plen = np.empty(16, dtype=np.int64)
    inv = np.empty(dim)
    t = np.int64(0)  # not a literal: a literal argument compiles a callee once more
    used = np.int64(0)
    mused = np.int64(0)
    while True:
        t, used, mused = _build_run(t, post, is_op, fifo, weight, kid_ptr, kids, U, D, G, L, root, pointwise, param,
                                    fs_x, fs_y, mf_x, mf_v, fs_at, fs_len, mf_at, mf_len, used, mused, cx, cy, inv,
                                    ws_small, ws_big, pws, px, py, pcx, pcy, sw, plen, tok)
        if t >= post.shape[0]:
            break
        m, bound, ncmax, outmax = _room(post[t], is_op, kid_ptr, kids, fs_len, dim)
        if pointwise[post[t]] and not is_op[post[t]]:
            outmax = 2 * ncmax + 8
        if used + outmax > fs_x.shape[0]:
            fs_x = _grow1(fs_x, 2 * (used + outmax))
            fs_y = _grow2(fs_y, 2 * (used + outmax))
        if mused + outmax > mf_x.shape[0]:
            mf_x = _grow1(mf_x, 2 * (mused + outmax))
            mf_v = _grow1(mf_v, 2 * (mused + outmax))
        if plen.shape[0] < m:
            plen = np.empty(2 * m, dtype=np.int64)
        if px.shape[0] < bound:
            px = np.empty(2 * bound)
            py = np.empty((2 * bound, dim))
        if pcx.shape[0] < 2 * ncmax + 8:
            pcx = np.empty(4 * ncmax + 16)
            pcy = np.empty((4 * ncmax + 16, dim))
        if sw[0].shape[0] < bound + 2:
            sw = _sweep_space(dim, 2 * (bound + 2))
        if not pointwise[post[t]]:
            if pws[0].shape[0] < ncmax:
                pws = _param_space(dim, 2 * ncmax)
            if ws_big[3].shape[0] < ncmax + 6:
                ws_big = _workspace(dim, 2 * ncmax)
    # the pointwise curves' components made monotone (as plf.mff_component reads them), packed
    cm_at = np.full(n, -1, dtype=np.int64)
    tot = 0
    for i in range(n):
        if pointwise[i] and fs_at[i] >= 0:
            cm_at[i] = tot
            tot += fs_len[i]
    cm_y = np.empty((tot, dim))
    for i in range(n):
        if cm_at[i] >= 0:
            a = fs_at[i]
            o = cm_at[i] - a
            for r in range(dim):
                acc = fs_y[a, r]
                for z in range(a, a + fs_len[i]):
                    v = fs_y[z, r]
                    if v < acc:
                        v = acc
                    cm_y[o + z, r] = v
                    acc = v
    return fs_x, fs_y, fs_at, fs_len, mf_x, mf_v, mf_at, mf_len, cm_y, cm_at


@njit(cache=True, error_model="numpy", _nrt=False)
def _fit_at(xs, ym, a, o, n, g, lim, s, tok):
    """A pointwise element's fit factor at suggestion s, the left value of min over resources of
    ``plf.mff_component``'s function, read off its curve directly."""
    dim = len(tok)
    best = INF
    for r in range(dim):
        lo = ym[o, r]
        hi = ym[o + n - 1, r]
        lp = min(max(_snap_limit(lim[r], hi), lo), hi)
        gp = min(max(g[r], lo), lp)
        span = lp - gp
        if span <= 0.0:
            m = _inv_right2(xs, ym, a, o, n, r, _limit_level2(ym, o, n, r, lp))
        elif s == 0.0:
            m = _inv_right2(xs, ym, a, o, n, r, gp)
        elif s < span:
            m = _inv_left2(xs, ym, a, o, n, r, gp + s)
        elif s == span:
            m = _inv_left2(xs, ym, a, o, n, r, lp)
        else:
            m = _inv_right2(xs, ym, a, o, n, r, _limit_level2(ym, o, n, r, lp))
        if m < best:
            best = m
    return best


@njit(cache=True, error_model="numpy", _nrt=False)
def _child_value(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, G, L, c, s, out, oi, tok):
    """A root child's fair share at suggestion s: its curve read left-continuously at its fit factor
    there (what its fair share by suggestion gives, without building it). Returns the fit factor."""
    a = fs_at[c]
    n = fs_len[c]
    f = _fit_at(fs_x, cm_y, a, cm_at[c], n, G[c], L[c], s, tok)
    _left(fs_x, fs_y, a, n, f, out, oi, tok)
    return f


@njit(cache=True, error_model="numpy", _nrt=False)
def _root_suggestions(kid_ptr, kids, weight, fifo_root, root, f, sugg):
    a0 = kid_ptr[root]
    a1 = kid_ptr[root + 1]
    if fifo_root:
        for z in range(a0, a1):
            sugg[z - a0] = min(1.0, max(0.0, f - (z - a0)))
        return
    wmin = _wmin(weight, kids, a0, a1)
    for z in range(a0, a1):
        sugg[z - a0] = min(1.0, f * weight[kids[z]] / wmin)


@njit(cache=True, error_model="numpy")
def root_fit(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, kid_ptr, kids, weight, fifo_root, G, L, root, tok):
    """The root's fit factor at suggestion 1, found by bisection over its children read at single
    suggestions (``batched.root_fit``): the first f where some resource passes its bound."""
    dim = len(tok)
    a0 = kid_ptr[root]
    a1 = kid_ptr[root + 1]
    m = a1 - a0
    if m == 0:
        return 1.0
    end = float(m) if fifo_root else 1.0
    g = G[root]
    lim = L[root]
    vals = np.zeros((m, dim))
    sugg = np.zeros(m)
    lo_v = np.zeros(dim)
    hi_v = np.zeros(dim)

    def total(f, out):
        _root_suggestions(kid_ptr, kids, weight, fifo_root, root, f, sugg)
        for z in range(m):
            _child_value(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, G, L, kids[a0 + z], sugg[z], vals, z, tok)
        for r in range(dim):
            out[r] = 0.0
        for z in range(m):
            for r in range(dim):
                out[r] += vals[z, r]

    total(0.0, lo_v)
    total(end, hi_v)
    strict = np.zeros(dim, dtype=np.bool_)
    bound = np.zeros(dim)
    for r in range(dim):
        lp = min(max(_snap_limit(lim[r], hi_v[r]), lo_v[r]), hi_v[r])
        gp = min(max(g[r], lo_v[r]), lp)
        span = lp - gp
        strict[r] = span < 1.0
        if strict[r] or span == 1.0:
            bound[r] = lp
        else:
            bound[r] = gp + 1.0
        if strict[r] and lp >= hi_v[r]:
            bound[r] = INF
    val = np.zeros(dim)

    def passed(v):
        for r in range(dim):
            if strict[r]:
                if v[r] > bound[r]:
                    return True
            elif v[r] >= bound[r]:
                return True
        return False

    if not passed(hi_v):
        return end
    if passed(lo_v):
        return 0.0
    lo = 0.0
    hi = end
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        total(mid, val)
        if passed(val):
            hi = mid
        else:
            lo = mid
    return lo


SLIVER_WINDOW = 1e-12
"""How far either side of the root's fit factor ``root_in_sliver`` looks for a split jump (ten times
``SLIVER``: runs of knots a few ulps apart are far narrower)."""


@njit(cache=True, error_model="numpy")
def root_in_sliver(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, kid_ptr, kids, weight, fifo_root, G, L, root, root_f, tok):
    """Whether some child of the root rises by more than ``EPS`` just below the root's fit factor
    (within ``SLIVER_WINDOW`` up to it) or just above it (from the next float on).

    The reference sums the root's children with knots closer than ``SLIVER`` made one point, so a
    jump that rounding split over a few ulps is one jump there and the root stops at its start. The
    kernel reads the children pointwise, unsnapped, and may stop inside such a run, where a child's
    share is neither end of the jump. A clean jump (one point) reads the same both ways: the child
    is flat to the left of the fit factor and again from the next float on, and the kernel keeps
    its answer. Otherwise the update is left to the reference (``ArrayResult.exact``)."""
    dim = len(tok)
    a0 = kid_ptr[root]
    a1 = kid_ptr[root + 1]
    m = a1 - a0
    if m == 0:
        return False
    end = float(m) if fifo_root else 1.0
    nxt = np.nextafter(root_f, np.inf)
    probes = np.array([max(0.0, root_f - SLIVER_WINDOW), root_f, min(end, nxt), min(end, nxt + SLIVER_WINDOW)])
    sugg = np.zeros((4, m))
    for k in range(4):
        _root_suggestions(kid_ptr, kids, weight, fifo_root, root, probes[k], sugg[k])
    vals = np.zeros((4, dim))
    for z in range(m):
        c = kids[a0 + z]
        for k in range(4):
            _child_value(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, G, L, c, sugg[k, z], vals, k, tok)
        for r in range(dim):
            if vals[1, r] - vals[0, r] > EPS or vals[3, r] - vals[2, r] > EPS:
                return True
    return False


@njit(cache=True, error_model="numpy")
def read_down(pre, is_op, fifo, weight, kid_ptr, kids, fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, mf_x, mf_v, mf_at,
              mf_len, G, L, root, root_f, fair, fit, pointwise, tok):
    """Top-down from the root's fit factor: each pool's fair share and fit factor at its suggestion,
    its children's suggestions (§2.5), and then the operations' fair shares in one pass over the
    rows (in memory order). ``pre`` lists pools, parents first; the root's children are read
    pointwise."""
    dim = len(tok)
    n = fair.shape[0]
    sugg = np.zeros(n)
    sugg[root] = 1.0
    a0 = kid_ptr[root]
    a1 = kid_ptr[root + 1]
    rs = np.zeros(a1 - a0)
    _root_suggestions(kid_ptr, kids, weight, fifo[root], root, root_f, rs)
    fit[root] = root_f
    for z in range(a0, a1):
        c = kids[z]
        sugg[c] = rs[z - a0]
        f = _child_value(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, G, L, c, rs[z - a0], fair, c, tok)
        if not is_op[c] and kid_ptr[c + 1] > kid_ptr[c]:
            fit[c] = f
    for t in range(pre.shape[0]):
        i = pre[t]
        if i == root or is_op[i]:
            continue
        b0 = kid_ptr[i]
        b1 = kid_ptr[i + 1]
        if b1 == b0:
            if sugg[i] >= 0 and fs_at[i] >= 0 and mf_at[i] >= 0:
                _left(fs_x, fs_y, fs_at[i], fs_len[i], sugg[i], fair, i, tok)
            continue
        if mf_at[i] >= 0:
            s = sugg[i]
            _left(fs_x, fs_y, fs_at[i], fs_len[i], s, fair, i, tok)
            b = mf_at[i]
            f = _eval_left_at(mf_x, mf_v, b, mf_len[i], s)
            fit[i] = f
        else:
            f = fit[i]
        if fifo[i]:
            for z in range(b0, b1):
                v = f - (z - b0)
                sugg[kids[z]] = min(1.0, max(0.0, v))
        else:
            wmin = _wmin(weight, kids, b0, b1)
            for z in range(b0, b1):
                sugg[kids[z]] = min(1.0, f * weight[kids[z]] / wmin)
    for i in range(n):
        if is_op[i] and not pointwise[i]:
            _left(fs_x, fs_y, fs_at[i], fs_len[i], sugg[i], fair, i, tok)
    # the root's fair share is its children's sum
    for r in range(dim):
        fair[root, r] = 0.0
    for z in range(a0, a1):
        for r in range(dim):
            fair[root, r] += fair[kids[z], r]
    return sugg


# -- the tree's order ------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def postorder(kid_ptr, kids, root):
    """Rows reachable from ``root``, children before parents, each pool's children in ``kids``
    order (``Tree.postorder``: a preorder that takes the last child first, reversed)."""
    n = kid_ptr.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    stack[0] = root
    top = 1
    c = 0
    while top > 0:
        top -= 1
        i = stack[top]
        out[c] = i
        c += 1
        for z in range(kid_ptr[i], kid_ptr[i + 1]):
            stack[top] = kids[z]
            top += 1
    return out[:c][::-1].copy()


# -- guarantees and sums (SEMANTICS §2.1-2.2) ---------------------------------------------------------

@njit(cache=True, error_model="numpy")
def sums(post, is_op, kid_ptr, kid_ins, fixed_usage, demand, usage):
    """Pools' demand and usage: their children's, added left to right in insertion order."""
    dim = demand.shape[1]
    for t in range(post.shape[0]):
        i = post[t]
        a0 = kid_ptr[i]
        a1 = kid_ptr[i + 1]
        if is_op[i] or a1 == a0:
            continue
        for r in range(dim):
            acc = 0.0
            for z in range(a0, a1):
                acc = acc + demand[kid_ins[z], r]
            demand[i, r] = acc
            if not fixed_usage[i]:
                acc = 0.0
                for z in range(a0, a1):
                    acc = acc + usage[kid_ins[z], r]
                usage[i, r] = acc


@njit(cache=True, error_model="numpy")
def strong_shares(pre, kid_ptr, kid_ins, has_g, gabs, total, main, L, root):
    """Explicit + implicit guarantees as shares, capped by limits (``fairshare.strong_shares``);
    ``gabs`` holds NaN where a resource is not given."""
    n = L.shape[0]
    dim = L.shape[1]
    eff = np.zeros((n, dim))
    effset = np.zeros(n, dtype=np.bool_)
    eff[root] = total
    effset[root] = True
    zero = np.zeros(dim)
    explicit = np.zeros((0, dim))
    implicit = np.zeros((0, dim))
    for t in range(pre.shape[0]):
        p = pre[t]
        a0 = kid_ptr[p]
        a1 = kid_ptr[p + 1]
        if a1 == a0:
            continue
        parent_g = eff[p] if effset[p] else zero
        finite = True
        for r in range(dim):
            if not parent_g[r] < INF:
                finite = False
        pm = parent_g[main] if main >= 0 else 0.0
        restrict = finite or main < 0 or not pm > 0
        nk = 0
        for z in range(a0, a1):
            if not restrict or has_g[kid_ins[z]]:
                nk += 1
        if nk == 0:
            continue
        kl = np.empty(nk, dtype=np.int64)
        q = 0
        for z in range(a0, a1):
            if not restrict or has_g[kid_ins[z]]:
                kl[q] = kid_ins[z]
                q += 1
        if explicit.shape[0] < nk:
            explicit = np.zeros((2 * nk, dim))
            implicit = np.zeros((2 * nk, dim))
        for q in range(nk):
            c = kl[q]
            for r in range(dim):
                v = gabs[c, r]
                explicit[q, r] = v if has_g[c] and v == v else 0.0
                implicit[q, r] = 0.0
        residual = np.zeros(dim)
        for r in range(dim):
            s = 0.0
            for q in range(nk):
                s = s + explicit[q, r]
            residual[r] = max(0.0, parent_g[r] - s)
        if main >= 0 and pm > 0:
            for q in range(nk):
                c = kl[q]
                if not has_g[c] and finite:
                    continue
                ratio = explicit[q, main] / pm
                for r in range(dim):
                    if r != main and not (has_g[c] and gabs[c, r] == gabs[c, r]):
                        implicit[q, r] = ratio * parent_g[r]
            if p != root:
                for r in range(dim):
                    s = 0.0
                    for q in range(nk):
                        s = s + implicit[q, r]
                    if s > residual[r] + EPS and s > 0:
                        k = residual[r] / s
                        for q in range(nk):
                            implicit[q, r] *= k
        for q in range(nk):
            c = kl[q]
            anyimp = False
            for r in range(dim):
                if implicit[q, r] != 0.0:
                    anyimp = True
            if not has_g[c] and not anyimp:
                effset[c] = False
            else:
                effset[c] = True
                for r in range(dim):
                    eff[c, r] = explicit[q, r] + implicit[q, r]
    out = np.zeros((n, dim))
    for i in range(n):
        if effset[i] and i != root:
            for r in range(dim):
                sh = eff[i, r] / total[r] if total[r] > 0 else 0.0
                out[i, r] = min(sh, L[i, r])
        else:
            neg = False
            for r in range(dim):
                if L[i, r] < 0.0:
                    neg = True
            if neg:
                for r in range(dim):
                    out[i, r] = min(0.0, L[i, r])
    for r in range(dim):
        out[root, r] = 1.0 if total[r] > 0 else 0.0
    return out


@njit(cache=True, error_model="numpy")
def adjust(pre, kid_ptr, kid_ins, shares, root):
    """Children's guarantees scaled by one common factor wherever they overflow the parent's (§2.2);
    then the root's guarantee is its children's sum."""
    dim = shares.shape[1]
    tot = np.zeros(dim)
    for t in range(pre.shape[0]):
        p = pre[t]
        a0 = kid_ptr[p]
        a1 = kid_ptr[p + 1]
        if a1 == a0:
            continue
        tot[:] = 0.0
        for z in range(a0, a1):
            c = kid_ins[z]
            for r in range(dim):
                tot[r] = tot[r] + shares[c, r]
        k = 1.0
        for r in range(dim):
            if tot[r] > shares[p, r] + EPS:
                k = min(k, shares[p, r] / tot[r])
        if k < 1.0:
            for z in range(a0, a1):
                c = kid_ins[z]
                for r in range(dim):
                    shares[c, r] = shares[c, r] * k
    a0 = kid_ptr[root]
    a1 = kid_ptr[root + 1]
    for r in range(dim):
        s = 0.0
        for z in range(a0, a1):
            s = s + shares[kid_ins[z], r]
        shares[root, r] = s
