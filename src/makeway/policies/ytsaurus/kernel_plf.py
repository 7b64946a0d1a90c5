"""Piecewise-linear functions on flat arrays, compiled: the counterpart of ``plf`` for ``kernel``.

A function is rows ``a .. a + n`` of an x array (non-decreasing; a repeated x is a jump) and a value
array. Reading is left-continuous, as in ``plf`` (SEMANTICS §2.4). Here: searches and reads, each
resource's fit factor by suggestion (``_mff``), their minimum (``_min_scalar``), the composition
with the curve (``_compose``), the clean-up of repeated points, an operation's curve, and the
generic construction of an element's functions (``_fsbs``) with its scratch space. The number of
resources comes as the length of ``tok``, a tuple of that many zeros: a tuple's length is part of
the compiled signature, so every loop over resources has a constant count and is unrolled, and the
update takes a quarter less time than with an array token (10,000 pools / 100,000 operations: 107
to 82 ms). The price is one compilation of the kernel per resource count, about 18 s each, once
per machine (numba's cache). Functions that allocate nothing are compiled without reference
counting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SLIVER = 1e-13  # as plf.SLIVER: a rise over less x than this is summed as a jump
INF = np.inf
LIMIT_SNAP = 1e-13  # as plf.LIMIT_SNAP: a top above a limit by rounding only does not meet it


@njit(cache=True, inline="always", error_model="numpy")
def _snap_limit(lim, hi):
    return hi if lim <= hi and hi <= lim + LIMIT_SNAP else lim



# -- small searches and reads --------------------------------------------------------------------

@njit(cache=True, error_model="numpy", _nrt=False)
def _bl2(a, o, n, x):
    """First i < n with a[o + i] >= x."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[o + mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, error_model="numpy", _nrt=False)
def _br2(a, o, n, x):
    """First i < n with a[o + i] > x."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < a[o + mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always", error_model="numpy")
def _lerp1(x0, y0, x1, y1, x):
    if x1 == x0:
        return y0
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@njit(cache=True, error_model="numpy", _nrt=False)
def _insert_sorted(a, lo, n, v):
    """Insert v into the ascending a[lo:lo + n] (after any equal values); returns n + 1."""
    z = lo + n
    while z > lo and a[z - 1] > v:
        a[z] = a[z - 1]
        z -= 1
    a[z] = v
    return n + 1


@njit(cache=True, error_model="numpy", _nrt=False)
def _value(xs, ys, a, n, x, out, oi, right, tok):
    """Vector value at x of the function in rows a..a+n, clamped to the domain, written to out[oi]:
    the left-continuous value (``PLF.left``), or with ``right`` the limit from the right
    (``PLF.right``), which differ at a jump (a repeated x)."""
    dim = len(tok)
    j = _br2(xs, a, n, x) if right else _bl2(xs, a, n, x)
    if j == 0 or j >= n:
        k = a if j == 0 else a + n - 1
        for r in range(dim):
            out[oi, r] = ys[k, r]
        return
    k = a + j - 1 if right else a + j
    if xs[k] == x:
        for r in range(dim):
            out[oi, r] = ys[k, r]
        return
    x0 = xs[a + j - 1]
    t = (x - x0) / (xs[a + j] - x0)
    for r in range(dim):
        out[oi, r] = ys[a + j - 1, r] + (ys[a + j, r] - ys[a + j - 1, r]) * t


@njit(cache=True, error_model="numpy", _nrt=False)
def _left(xs, ys, a, n, x, out, oi, tok):
    """``_value`` from the left."""
    _value(xs, ys, a, n, x, out, oi, False, tok)


@njit(cache=True, error_model="numpy", _nrt=False)
def _right(xs, ys, a, n, x, out, oi, tok):
    """``_value`` from the right."""
    _value(xs, ys, a, n, x, out, oi, True, tok)


@njit(cache=True, error_model="numpy", _nrt=False)
def _eval_left_at(xs, vs, a, n, x):
    """Left value at x of the scalar function xs[a:a + n] -> vs[a:a + n] with jumps (``plf._eval1``'s
    first value)."""
    j = _bl2(xs, a, n, x)
    if j >= n:
        return vs[a + n - 1]
    k = _br2(xs, a, n, x)
    if j < k:
        return vs[a + j]
    if j == 0:
        return vs[a]
    return _lerp1(xs[a + j - 1], vs[a + j - 1], xs[a + j], vs[a + j], x)


# -- fit factor by suggestion ----------------------------------------------------------------------

@njit(cache=True, error_model="numpy", _nrt=False)
def _inv_left(xs, yr, n, w):
    """inf{f : F_r(f) >= w}."""
    z0 = np.int64(0)  # a literal 0 as argument would compile each callee once more
    i = _bl2(yr, z0, n, w)
    if i == 0:
        return xs[0]
    if i >= n:
        return xs[n - 1]
    return _lerp1(yr[i - 1], xs[i - 1], yr[i], xs[i], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _inv_right(xs, yr, n, w):
    """sup{f : F_r(f) <= w}."""
    z0 = np.int64(0)  # a literal 0 as argument would compile each callee once more
    i = _br2(yr, z0, n, w) - 1
    if i < 0:
        return xs[0]
    if i >= n - 1:
        return xs[n - 1]
    return _lerp1(yr[i], xs[i], yr[i + 1], xs[i + 1], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _last_at_most2(ym, o, n, r, w):
    """The last i < n with ym[o + i, r] <= w, -1 if none (a monotone component)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if w < ym[o + mid, r]:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1


@njit(cache=True, error_model="numpy", _nrt=False)
def _limit_level2(ym, o, n, r, lp):
    """``plf.limit_level`` over n rows of a monotone component (values from o): the highest value
    within ``LIMIT_SNAP`` above L', else L'."""
    i = _last_at_most2(ym, o, n, r, lp + LIMIT_SNAP)
    if i >= 0 and ym[o + i, r] >= lp:
        return ym[o + i, r]
    return lp


@njit(cache=True, error_model="numpy", _nrt=False)
def _limit_level(yr, n, lp):
    """``_limit_level2`` on a plain array of n values."""
    i = _br2(yr, np.int64(0), n, lp + LIMIT_SNAP) - 1
    if i >= 0 and yr[i] >= lp:
        return yr[i]
    return lp


@njit(cache=True, error_model="numpy", _nrt=False)
def _inv_left2(xs, ym, a, o, n, r, w):
    """inf{f : F_r(f) >= w} over n rows of a monotone component (x from a, values from o)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if ym[o + mid, r] < w:
            lo = mid + 1
        else:
            hi = mid
    i = lo
    if i == 0:
        return xs[a]
    if i >= n:
        return xs[a + n - 1]
    return _lerp1(ym[o + i - 1, r], xs[a + i - 1], ym[o + i, r], xs[a + i], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _inv_right2(xs, ym, a, o, n, r, w):
    """sup{f : F_r(f) <= w} over n rows of a monotone component (x from a, values from o)."""
    i = _last_at_most2(ym, o, n, r, w)
    if i < 0:
        return xs[a]
    if i >= n - 1:
        return xs[a + n - 1]
    return _lerp1(ym[o + i, r], xs[a + i], ym[o + i + 1, r], xs[a + i + 1], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _mff(xs, yr, n, g, lim, out_s, out_v, q):
    """Fit factor by suggestion of one resource (``plf.mff_component``); ``yr`` already monotone.
    Returns the number of points written."""
    lo = yr[0]
    hi = yr[n - 1]
    lp = min(max(_snap_limit(lim, hi), lo), hi)
    gp = min(max(g, lo), lp)
    if lp - gp <= 0.0:
        v = _inv_right(xs, yr, n, _limit_level(yr, n, lp))
        out_s[q, 0] = 0.0
        out_v[q, 0] = v
        out_s[q, 1] = 1.0
        out_v[q, 1] = v
        return 2
    out_s[q, 0] = 0.0
    out_v[q, 0] = _inv_right(xs, yr, n, gp)
    c = 1
    for i in range(n):
        y = yr[i]
        if gp < y and y < lp:
            out_s[q, c] = y - gp
            out_v[q, c] = xs[i]
            c += 1
    span = lp - gp
    out_s[q, c] = span
    out_v[q, c] = _inv_left(xs, yr, n, lp)
    c += 1
    if span < 1.0:
        tail = _inv_right(xs, yr, n, _limit_level(yr, n, lp))
        out_s[q, c] = span
        out_v[q, c] = tail
        out_s[q, c + 1] = 1.0
        out_v[q, c + 1] = tail
        c += 2
    return c


@njit(cache=True, error_model="numpy", _nrt=False)
def _min_scalar(ss, vs, cnt, pos, lv, rv, heads, ts, out_x, out_v):
    """Pointwise minimum of the scalar functions ``ss[i, :cnt[i]] -> vs[i, :cnt[i]]`` with jumps
    (``plf.min_scalar``): values at every knot, the lower after a jump, and crossings in between."""
    m = ss.shape[0]
    if m == 1:
        n0 = cnt[0]
        for z in range(n0):
            out_x[z] = ss[0, z]
            out_v[z] = vs[0, z]
        return n0
    # sorted union of knots (each function's knots are sorted)
    for i in range(m):
        heads[i] = 0
    p = 0
    while True:
        best = INF
        found = False
        for i in range(m):
            if heads[i] < cnt[i]:
                x = ss[i, heads[i]]
                if not found or x < best:
                    best = x
                    found = True
        if not found:
            break
        if p == 0 or pos[p - 1] != best:
            pos[p] = best
            p += 1
        for i in range(m):
            while heads[i] < cnt[i] and ss[i, heads[i]] == best:
                heads[i] += 1
    # left and right values of every function at every knot, one forward pass each
    for i in range(m):
        n = cnt[i]
        j = 0
        k = 0
        for q in range(p):
            x = pos[q]
            while j < n and ss[i, j] < x:
                j += 1
            if k < j:
                k = j
            while k < n and ss[i, k] <= x:
                k += 1
            if j >= n:
                lv[i, q] = vs[i, n - 1]
                rv[i, q] = vs[i, n - 1]
            elif j < k:
                lv[i, q] = vs[i, j]
                rv[i, q] = vs[i, k - 1]
            elif j == 0:
                lv[i, q] = vs[i, 0]
                rv[i, q] = vs[i, 0]
            else:
                x0 = ss[i, j - 1]
                x1 = ss[i, j]
                if x1 == x0:
                    v = vs[i, j - 1]
                else:
                    v = vs[i, j - 1] + (vs[i, j] - vs[i, j - 1]) * (x - x0) / (x1 - x0)
                lv[i, q] = v
                rv[i, q] = v
    c = 0
    for q in range(p):
        x = pos[q]
        ml = lv[0, q]
        mr = rv[0, q]
        for i in range(1, m):
            if lv[i, q] < ml:
                ml = lv[i, q]
            if rv[i, q] < mr:
                mr = rv[i, q]
        out_x[c] = x
        out_v[c] = ml
        c += 1
        if mr != ml:
            out_x[c] = x
            out_v[c] = mr
            c += 1
        if q + 1 < p:
            x1 = pos[q + 1]
            nt = 0
            for i in range(m):
                for j in range(i + 1, m):
                    d0 = rv[i, q] - rv[j, q]
                    d1 = lv[i, q + 1] - lv[j, q + 1]
                    if d0 * d1 < 0:
                        nt = _insert_sorted(ts, 0, nt, d0 / (d0 - d1))
            for z in range(nt):
                t = ts[z]
                cx = x + (x1 - x) * t
                if x < cx and cx < x1:
                    best = INF
                    for i in range(m):
                        v = rv[i, q] + (lv[i, q + 1] - rv[i, q]) * t
                        if i == 0 or v < best:
                            best = v
                    out_x[c] = cx
                    out_v[c] = best
                    c += 1
    return c


@njit(cache=True, error_model="numpy", _nrt=False)
def _compose(cx, cy, nc, mx, mv, nm, ox, oy, tok):
    """s -> F(M(s)) for the curve F and fit factor by suggestion M (``plf.compose`` before
    ``clean``). Returns the number of points written."""
    z0 = np.int64(0)  # a literal 0 as argument would compile each callee once more
    dim = len(tok)
    ox[0] = mx[0]
    _left(cx, cy, z0, nc, mv[0], oy, z0, tok)
    c = 1
    for k in range(nm - 1):
        s0 = mx[k]
        s1 = mx[k + 1]
        m0 = mv[k]
        m1 = mv[k + 1]
        if s1 == s0:
            continue
        if m1 == m0:
            _left(cx, cy, z0, nc, m0, oy, c, tok)
            for r in range(dim):
                oy[c + 1, r] = oy[c, r]
            ox[c] = s0
            ox[c + 1] = s1
            c += 2
            continue
        ox[c] = s0
        _right(cx, cy, z0, nc, m0, oy, c, tok)
        c += 1
        i = _br2(cx, z0, nc, m0)
        while i < nc and cx[i] < m1:
            x = cx[i]
            s = s0 + (x - m0) / (m1 - m0) * (s1 - s0)
            e = i + 1
            while e < nc and cx[e] == x:
                e += 1
            ox[c] = s
            ox[c + 1] = s
            for r in range(dim):
                oy[c, r] = cy[i, r]
                oy[c + 1, r] = cy[e - 1, r]
            c += 2
            i = e
        ox[c] = s1
        _left(cx, cy, z0, nc, m1, oy, c, tok)
        c += 1
    return c


@njit(cache=True, error_model="numpy", _nrt=False)
def _same_row(a, i, b, j, tok):
    dim = len(tok)
    for r in range(dim):
        if a[i, r] != b[j, r]:
            return False
    return True


@njit(cache=True, error_model="numpy", _nrt=False)
def _clean_into(xs, ys, n, dx, dy, at, tok):
    """Consecutive duplicates dropped, a run of one x kept as its first and last point
    (``plf.clean``), written at ``dx[at:]``. Returns the number of points written."""
    dim = len(tok)
    dx[at] = xs[0]
    for r in range(dim):
        dy[at, r] = ys[0, r]
    c = 1
    for i in range(1, n):
        x = xs[i]
        last = at + c - 1
        if x == dx[last] and _same_row(ys, i, dy, last, tok):
            continue
        if c >= 2 and x == dx[last] and x == dx[last - 1]:
            for r in range(dim):
                dy[last, r] = ys[i, r]
            continue
        dx[at + c] = x
        for r in range(dim):
            dy[at + c, r] = ys[i, r]
        c += 1
    if c == 1:
        dx[at + 1] = dx[at]
        for r in range(dim):
            dy[at + 1, r] = dy[at, r]
        c = 2
    return c


# -- growing buffers ---------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _grow1(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]))
    b[:a.shape[0]] = a
    return b


@njit(cache=True, error_model="numpy")
def _grow2(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty((max(need, 2 * a.shape[0]), a.shape[1]))
    b[:a.shape[0]] = a
    return b


# -- one element: curve -> fit factor by suggestion -> fair share by suggestion ---------------------

@njit(cache=True, error_model="numpy", _nrt=False)
def _op_curve(u, d, cx, cy, tok):
    """Usage-first path on [0, 1], then linearly to demand on [1, 2] (§2.3)."""
    dim = len(tok)
    umax = u[0]
    for r in range(1, dim):
        if u[r] > umax:
            umax = u[r]
    if not umax > 0:
        cx[0] = 0.0
        cx[1] = 1.0
        cx[2] = 2.0
        for r in range(dim):
            cy[0, r] = 0.0
            cy[1, r] = 0.0
            cy[2, r] = d[r]
        return 3
    cx[0] = 0.0
    n = 1
    for r in range(dim):  # distinct ratios strictly inside (0, 1), sorted
        f = u[r] / umax
        if 0 < f and f < 1:
            dup = False
            for q in range(1, n):
                if cx[q] == f:
                    dup = True
            if not dup:
                n = 1 + _insert_sorted(cx, 1, n - 1, f)
    cx[n] = 1.0
    n += 1
    for i in range(n):
        f = cx[i]
        for r in range(dim):
            cy[i, r] = min(u[r], f * umax)
    cx[n] = 2.0
    for r in range(dim):
        cy[n, r] = d[r]
    return n + 1


@njit(cache=True, error_model="numpy", _nrt=False)
def _fsbs(cx, cy, nc, g, lim, ws, tok):
    """Fit factor by suggestion (min over resources) into ws.mx/ws.mv, and the fair share by
    suggestion composed from it into ws.ox/ws.oy (not yet cleaned). Returns (points of the fit
    factor function, points of the composition)."""
    dim = len(tok)
    ss, vs, cnt, yr, pos, lv, rv, heads, mx, mv, ox, oy, ts = ws
    for r in range(dim):
        acc = cy[0, r]
        for i in range(nc):
            v = cy[i, r]
            if v < acc:
                v = acc
            yr[i] = v
            acc = v
        cnt[r] = _mff(cx, yr, nc, g[r], lim[r], ss, vs, r)
    nm = _min_scalar(ss, vs, cnt, pos, lv, rv, heads, ts, mx, mv)
    no = _compose(cx, cy, nc, mx, mv, nm, ox, oy, tok)
    return nm, no


@njit(cache=True, error_model="numpy")
def _workspace(dim, nc):
    """Scratch sized for a curve of nc points (bounds of what each step can write)."""
    per = nc + 6
    npos = dim * per
    nmin = npos * (2 + dim * (dim - 1) // 2) + 2
    nout = 2 * nmin + 2 * nc + 4
    return (np.empty((dim, per)), np.empty((dim, per)), np.zeros(dim, dtype=np.int64), np.empty(per),
            np.empty(npos), np.empty((dim, npos)), np.empty((dim, npos)), np.zeros(dim, dtype=np.int64),
            np.empty(nmin), np.empty(nmin), np.empty(nout), np.empty((nout, dim)), np.empty(dim * dim + 1))
