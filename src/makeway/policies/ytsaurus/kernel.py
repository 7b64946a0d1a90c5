"""Compiled fair share update (SEMANTICS §2) over a struct-of-arrays pool tree.

The same construction as ``fairshare`` on its generic path (``plf``'s list code): every element's
curve, each resource's fit factor by suggestion, their minimum, the fair share by suggestion as the
curve composed with it, then the root at suggestion 1 and the suggestions flowing down. It is
written once more here, as loops over flat arrays compiled with numba, because a tree of 10,000
pools and 100,000 operations spends its time in per-element work that Python and numpy cannot make
cheap enough for a 200 ms update period. ``tests/ytsaurus/test_kernel.py`` holds it to the Python
construction on random trees.

Layout: elements are rows; ``post`` lists them children first; a pool's children are
``kids[kid_ptr[i]:kid_ptr[i + 1]]`` in the order the pool hands out its share (FIFO order for FIFO
pools). Every element's fair share by suggestion goes to one growing buffer (``fs_x``/``fs_y`` with
offsets), every pool's fit factor by suggestion to another; scratch space is reused between elements
so that an operation costs no allocation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

EPS = 1e-9
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
def _eval_left(xs, vs, n, x):
    """Left value of a scalar function with jumps (``plf._eval1``'s first value)."""
    j = _bl2(xs, 0, n, x)
    if j >= n:
        return vs[n - 1]
    k = _br2(xs, 0, n, x)
    if j < k:
        return vs[j]
    if j == 0:
        return vs[0]
    return _lerp1(xs[j - 1], vs[j - 1], xs[j], vs[j], x)


@njit(cache=True, error_model="numpy", _nrt=False)
def _eval_left_at(xs, vs, a, n, x):
    """``_eval_left`` of the function in xs[a:a + n], vs[a:a + n]."""
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
    i = _bl2(yr, 0, n, w)
    if i == 0:
        return xs[0]
    if i >= n:
        return xs[n - 1]
    return _lerp1(yr[i - 1], xs[i - 1], yr[i], xs[i], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _inv_right(xs, yr, n, w):
    """sup{f : F_r(f) <= w}."""
    i = _br2(yr, 0, n, w) - 1
    if i < 0:
        return xs[0]
    if i >= n - 1:
        return xs[n - 1]
    return _lerp1(yr[i], xs[i], yr[i + 1], xs[i + 1], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _mff(xs, yr, n, g, lim, out_s, out_v, q):
    """Fit factor by suggestion of one resource (``plf.mff_component``); ``yr`` already monotone.
    Returns the number of points written."""
    lo = yr[0]
    hi = yr[n - 1]
    lp = min(max(_snap_limit(lim, hi), lo), hi)
    gp = min(max(g, lo), lp)
    if lp - gp <= 0.0:
        v = _inv_right(xs, yr, n, lp)
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
        tail = _inv_right(xs, yr, n, lp)
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
                        t = d0 / (d0 - d1)
                        # insertion keeps them sorted
                        z = nt
                        while z > 0 and ts[z - 1] > t:
                            ts[z] = ts[z - 1]
                            z -= 1
                        ts[z] = t
                        nt += 1
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
    dim = len(tok)
    ox[0] = mx[0]
    _left(cx, cy, 0, nc, mv[0], oy, 0, tok)
    c = 1
    for k in range(nm - 1):
        s0 = mx[k]
        s1 = mx[k + 1]
        m0 = mv[k]
        m1 = mv[k + 1]
        if s1 == s0:
            continue
        if m1 == m0:
            _left(cx, cy, 0, nc, m0, oy, c, tok)
            for r in range(dim):
                oy[c + 1, r] = oy[c, r]
            ox[c] = s0
            ox[c + 1] = s1
            c += 2
            continue
        ox[c] = s0
        _right(cx, cy, 0, nc, m0, oy, c, tok)
        c += 1
        i = _br2(cx, 0, nc, m0)
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
        _left(cx, cy, 0, nc, m1, oy, c, tok)
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


# -- pool curves ---------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy", _nrt=False)
def _part(fs_x, fs_y, a, b, fifo, k, pos, end, px, py, o, tok):
    """Write a child's part at px[o:]: FIFO shifts the child to [pos, pos + 1] and holds it to
    ``end``; fair share mode scales x by 1/k and holds the last value to 1."""
    dim = len(tok)
    n = b - a
    if fifo:
        px[o] = 0.0
        for r in range(dim):
            py[o, r] = fs_y[a, r]
        for i in range(n):
            px[o + 1 + i] = fs_x[a + i] + pos
            for r in range(dim):
                py[o + 1 + i, r] = fs_y[a + i, r]
        px[o + n + 1] = end
        for r in range(dim):
            py[o + n + 1, r] = fs_y[b - 1, r]
        return n + 2
    if k <= 0.0:
        px[o] = 0.0
        px[o + 1] = 1.0
        for r in range(dim):
            py[o, r] = fs_y[a, r]
            py[o + 1, r] = fs_y[a, r]
        return 2
    for i in range(n):
        px[o + i] = fs_x[a + i] / k
        for r in range(dim):
            py[o + i, r] = fs_y[a + i, r]
    if px[o + n - 1] < 1.0:
        px[o + n] = 1.0
        for r in range(dim):
            py[o + n, r] = fs_y[b - 1, r]
        return n + 1
    return n


@njit(cache=True, error_model="numpy", _nrt=False)
def _merge_runs(kx, ki, runs, nruns, tx, ti):
    """Stable sort of keys ``kx`` (with their indices ``ki`` alongside), given as ``nruns``
    ascending runs starting at ``runs[0..nruns]`` (``runs[nruns]`` is the end): runs merged pairwise
    until one is left. Returns 0 when the result is in ``kx``/``ki``, 1 when in ``tx``/``ti``."""
    n = runs[nruns]
    flip = 0
    while nruns > 1:
        if flip == 0:
            sx, si, dx, di = kx, ki, tx, ti
        else:
            sx, si, dx, di = tx, ti, kx, ki
        k = 0
        w = 0
        while k < nruns:
            lo = runs[k]
            if k + 1 >= nruns:
                for e in range(lo, runs[k + 1]):
                    dx[e] = sx[e]
                    di[e] = si[e]
                runs[w] = lo
                w += 1
                k += 1
                continue
            mid = runs[k + 1]
            hi = runs[k + 2]
            # from both ends at once: two independent chains of loads keep the processor busy
            i = lo
            j = mid
            ie = mid - 1
            je = hi - 1
            of = lo
            ob = hi - 1
            # selections by arithmetic on clamped indices: the outcome of a comparison of real
            # keys is unpredictable, and a mispredicted branch per point was most of the cost
            for _ in range((hi - lo) // 2):
                ii = min(i, mid - 1)
                jj = min(j, hi - 1)
                tj = np.int64((i >= mid) | ((j < hi) & (sx[jj] < sx[ii])))
                q = i + (jj - i) * tj
                dx[of] = sx[q]
                di[of] = si[q]
                of += 1
                j += tj
                i += 1 - tj
                ie2 = max(ie, lo)
                je2 = max(je, mid)
                tl = np.int64((je < mid) | ((ie >= lo) & (sx[ie2] > sx[je2])))
                q = je2 + (ie2 - je2) * tl
                dx[ob] = sx[q]
                di[ob] = si[q]
                ob -= 1
                ie -= tl
                je -= 1 - tl
            if (hi - lo) % 2 == 1:
                ii = min(i, mid - 1)
                jj = min(j, hi - 1)
                tj = np.int64((i >= mid) | ((j < hi) & (sx[jj] < sx[ii])))
                q = i + (jj - i) * tj
                dx[of] = sx[q]
                di[of] = si[q]
            runs[w] = lo
            w += 1
            k += 2
        runs[w] = n
        nruns = w
        flip = 1 - flip
    return flip


@njit(cache=True, error_model="numpy", _nrt=False)
def _total_sum(px, py, plen, nparts, end, cx, cy, sw, tok):
    """Sum of the parts on [0, end], each held constant at both ends (``plf.total_sum``): a sweep
    over the parts' points in x order, each point changing the running slope (the slope of the
    segment it starts minus that of the one it ends) or adding a jump (a rise over less than
    ``SLIVER`` of x). ``px``/``py`` hold the parts back to back, each sorted, so ordering them is a
    merge of runs. Returns the number of curve points written."""
    dim = len(tok)
    if nparts == 1:
        n = plen[0]
        c = 0
        if px[0] > 0.0:
            cx[0] = 0.0
            for r in range(dim):
                cy[0, r] = py[0, r]
            c = 1
        for i in range(n):
            cx[c] = px[i]
            for r in range(dim):
                cy[c, r] = py[i, r]
            c += 1
        if px[n - 1] < end:
            cx[c] = end
            for r in range(dim):
                cy[c, r] = py[n - 1, r]
            c += 1
        kx = sw[0]
        dS = sw[5]
        for q in range(c):
            kx[q] = cx[q]
            for r in range(dim):
                dS[q, r] = cy[q, r]
        return _clean_into(kx, dS, c, cx, cy, 0, tok)
    kx, ki, tx, ti, runs, dS, dJ, vec = sw
    tot = 0
    for p in range(nparts):
        runs[p] = tot
        e = tot + plen[p]
        prev_s = vec[0]
        for r in range(dim):
            prev_s[r] = 0.0
        for i in range(tot, e):
            kx[i] = px[i]
            ki[i] = i
            if i + 1 < e:
                d = px[i + 1] - px[i]
                if d > SLIVER:
                    for r in range(dim):
                        sl = (py[i + 1, r] - py[i, r]) / d
                        dS[i, r] = sl - prev_s[r]
                        dJ[i, r] = 0.0
                        prev_s[r] = sl
                else:
                    for r in range(dim):
                        dS[i, r] = -prev_s[r]
                        dJ[i, r] = py[i + 1, r] - py[i, r]
                        prev_s[r] = 0.0
            else:
                for r in range(dim):
                    dS[i, r] = -prev_s[r]
                    dJ[i, r] = 0.0
        tot = e
    # the domain's ends are points of the sum even where no part has one
    runs[nparts] = tot
    kx[tot] = 0.0
    kx[tot + 1] = end
    ki[tot] = tot
    ki[tot + 1] = tot
    for r in range(dim):
        dS[tot, r] = 0.0
        dJ[tot, r] = 0.0
    runs[nparts + 1] = tot + 2
    if _merge_runs(kx, ki, runs, nparts + 1, tx, ti) == 0:
        ox = kx
        oi = ki
    else:
        ox = tx
        oi = ti
    ne = tot + 2
    base = vec[0]
    S = vec[1]
    J = vec[2]
    after = vec[3]
    acc = vec[4]
    Jp = vec[5]
    for r in range(dim):
        base[r] = 0.0
        after[r] = 0.0
        acc[r] = 0.0
        Jp[r] = 0.0
    off = 0
    for p in range(nparts):
        for r in range(dim):
            base[r] += py[off, r]
        off += plen[p]
    prev_u = 0.0
    c = 0
    q = 0
    first_group = True
    while q < ne:
        u = ox[q]
        for r in range(dim):
            S[r] = 0.0
            J[r] = 0.0
        while q < ne and ox[q] == u:
            i = oi[q]
            for r in range(dim):
                S[r] += dS[i, r]
                J[r] += dJ[i, r]
            q += 1
        if not first_group:
            for r in range(dim):
                acc[r] += Jp[r] + after[r] * (u - prev_u)
        first_group = False
        jump = False
        for r in range(dim):
            after[r] += S[r]
            if J[r] != 0.0:
                jump = True
        cx[c] = u
        for r in range(dim):
            cy[c, r] = base[r] + acc[r]
        c += 1
        if jump:
            cx[c] = u
            for r in range(dim):
                cy[c, r] = cy[c - 1, r] + J[r]
            c += 1
        for r in range(dim):
            Jp[r] = J[r]
        prev_u = u
    return _clean_into(cx, cy, c, cx, cy, 0, tok)  # in place: exact repeats dropped


@njit(cache=True, error_model="numpy")
def _sweep_space(dim, ne):
    """Scratch for ``_total_sum`` over up to ne - 2 points (and as many parts)."""
    return (np.empty(ne), np.empty(ne, dtype=np.int64), np.empty(ne), np.empty(ne, dtype=np.int64),
            np.empty(ne + 2, dtype=np.int64), np.empty((ne, dim)), np.empty((ne, dim)), np.empty((6, dim)))


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
            z = n
            dup = False
            for q in range(1, n):
                if cx[q] == f:
                    dup = True
            if dup:
                continue
            while z > 1 and cx[z - 1] > f:
                cx[z] = cx[z - 1]
                z -= 1
            cx[z] = f
            n += 1
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


# -- the update ------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy", _nrt=False)
def _closed_ok(U, D, G, L, i, tok):
    """An operation whose fair share by suggestion has the closed form (``fairshare._closed_form_ok``):
    no guarantee, limits not below demand, usage within demand and below the whole cluster."""
    dim = len(tok)
    for r in range(dim):
        if U[i, r] >= 1.0 or G[i, r] != 0.0 or L[i, r] < D[i, r] or U[i, r] > D[i, r]:
            return False
    return True


@njit(cache=True, error_model="numpy", _nrt=False)
def _op_closed(Ua, Da, i, ox, oy, inv, tok):
    """Fair share by suggestion of an operation in closed form (``fairshare._op_fsbs_rows``): up to
    U = max usage the usage-first path min(usage, s); beyond, usage + t(s) x (demand - usage) with
    t(s) = min(1, min_r (s - u_r) / (d_r - u_r)), whose kinks are the lines' pairwise crossings and
    the points where they reach 1. Returns the number of points written (not yet cleaned)."""
    dim = len(tok)
    u = Ua[i]
    d = Da[i]
    U = u[0]
    for r in range(1, dim):
        if u[r] > U:
            U = u[r]
    # usage-first part: knots 0, min(u_r, U), U
    c = 0
    ox[c] = 0.0
    c += 1
    for r in range(dim):
        v = min(u[r], U)
        z = c
        while z > 0 and ox[z - 1] > v:
            ox[z] = ox[z - 1]
            z -= 1
        ox[z] = v
        c += 1
    z = c
    while z > 0 and ox[z - 1] > U:
        ox[z] = ox[z - 1]
        z -= 1
    ox[z] = U
    c += 1
    for k in range(c):
        for r in range(dim):
            oy[k, r] = min(u[r], ox[k])
    # toward demand: candidates clipped into [U, 1] and sorted
    b0 = c
    nb = 0
    for q in range(3 + dim + dim * (dim - 1) // 2):
        if q == 0:
            v = U
        elif q <= dim:
            v = d[q - 1]
        elif q == dim + 1:
            v = 1.0
        else:
            continue
        v = min(max(v, U), 1.0)
        z = b0 + nb
        while z > b0 and ox[z - 1] > v:
            ox[z] = ox[z - 1]
            z -= 1
        ox[z] = v
        nb += 1
    for i in range(dim):
        for j in range(i + 1, dim):
            ai = d[i] - u[i]
            aj = d[j] - u[j]
            if ai > 0 and aj > 0 and ai != aj:
                v = (u[i] * aj - u[j] * ai) / (aj - ai)
            else:
                v = 1.0
            v = min(max(v, U), 1.0)
            z = b0 + nb
            while z > b0 and ox[z - 1] > v:
                ox[z] = ox[z - 1]
                z -= 1
            ox[z] = v
            nb += 1
    for r in range(dim):
        ar = d[r] - u[r]
        inv[r] = 1.0 / ar if ar > 0 else 0.0
    for k in range(b0, b0 + nb):
        sx = ox[k]
        t = INF
        for r in range(dim):
            if d[r] - u[r] > 0:
                v = (sx - u[r]) * inv[r]
                if v < t:
                    t = v
        t = min(1.0, t)
        t = min(max(t, 0.0), 1.0)
        for r in range(dim):
            oy[k, r] = u[r] + t * (d[r] - u[r])
    c = b0 + nb
    ox[c] = 1.0
    for r in range(dim):
        oy[c, r] = oy[c - 1, r]
    return c + 1


SNAP = 1e-13  # suggestions closer than this are one suggestion (as batched.SNAP)


@njit(cache=True, error_model="numpy", _nrt=False)
def _top(z, k, tok):
    """Index of the largest of z[k, :] and 0 (the first on ties; dim when 0 leads)."""
    dim = len(tok)
    best = z[k, 0]
    arg = 0
    for r in range(1, dim):
        if z[k, r] > best:
            best = z[k, r]
            arg = r
    if 0.0 > best:
        arg = dim
    return arg


@njit(cache=True, error_model="numpy", _nrt=False)
def _param_fsbs(cx, cy, nc, g, lim, pw, tok):
    """Fit factor by suggestion and fair share by suggestion of a pool read off its curve
    parametrically (``batched._fsbs``): with rho(f) = max(0, max_r F_r(f) - g'_r), the points
    (rho(f), f, F(f)) at the curve's knots, at the corners of its jumps and where the leading
    resource changes, cut at f* where some resource reaches its limit for good. Writes the points
    (s, f, value) to pw's out arrays and returns their number; -1 for a pool this does not cover
    (a span L' - g' of 1 or more), which takes ``_fsbs``."""
    dim = len(tok)
    yr, z, PX, PY, PZ, rho, lp, gp, tmp, tmp2, cand, cidx, os_, of_, ov_ = pw
    for r in range(dim):
        acc = cy[0, r]
        for i in range(nc):
            v = cy[i, r]
            if v < acc:
                v = acc
            yr[i, r] = v
            acc = v
    for r in range(dim):
        lo = yr[0, r]
        hi = yr[nc - 1, r]
        lp[r] = min(max(_snap_limit(lim[r], hi), lo), hi)
        gp[r] = min(max(g[r], lo), lp[r])
        if not lp[r] - gp[r] < 1.0:
            return -1
    fstar = INF
    for r in range(dim):
        t = _inv_right2(cx, yr, 0, 0, nc, r, lp[r])
        if r == 0 or t < fstar:
            fstar = t
    for i in range(nc):
        for r in range(dim):
            z[i, r] = yr[i, r] - gp[r]
    P = 0
    for k in range(nc):
        PX[P] = cx[k]
        for r in range(dim):
            PY[P, r] = cy[k, r]
            PZ[P, r] = z[k, r]
        P += 1
        if k == nc - 1:
            break
        x0 = cx[k]
        x1 = cx[k + 1]
        if x1 > x0 and _top(z, k, tok) != _top(z, k + 1, tok):
            nq = 0
            for i in range(dim):
                y0 = yr[k, i]
                y1 = yr[k + 1, i]
                if y0 < gp[i] and y1 > gp[i]:
                    v = x0 + (x1 - x0) * (gp[i] - y0) / (y1 - y0)
                    if v > x0 and v < x1:
                        cand[nq] = v
                        cidx[nq] = i
                        nq += 1
                for j in range(i + 1, dim):
                    d0 = z[k, i] - z[k, j]
                    d1 = z[k + 1, i] - z[k + 1, j]
                    if d0 * d1 < 0:
                        v = x0 + (x1 - x0) * (d0 / (d0 - d1))
                        if v > x0 and v < x1:
                            cand[nq] = v
                            cidx[nq] = -1
                            nq += 1
            # in x order, candidates at one x in the order found (a stable insertion sort)
            for q in range(1, nq):
                v = cand[q]
                w = cidx[q]
                e = q
                while e > 0 and cand[e - 1] > v:
                    cand[e] = cand[e - 1]
                    cidx[e] = cidx[e - 1]
                    e -= 1
                cand[e] = v
                cidx[e] = w
            for q in range(nq):
                v = cand[q]
                t = (v - x0) / (x1 - x0)
                PX[P] = v
                for r in range(dim):
                    PY[P, r] = cy[k, r] + (cy[k + 1, r] - cy[k, r]) * t
                    PZ[P, r] = z[k, r] + (z[k + 1, r] - z[k, r]) * t
                if cidx[q] >= 0:
                    PZ[P, cidx[q]] = 0.0
                P += 1
        # the corner: at a jump the new rho with the old value (elsewhere it would repeat the next
        # knot exactly, which the compaction below drops anyway)
        if x1 == x0:
            PX[P] = x1
            for r in range(dim):
                PY[P, r] = cy[k, r]
                PZ[P, r] = z[k + 1, r]
            P += 1
    # from f* on the pool is at its limit: one point (f*, F(f*-)) stands for all of them
    _left(cx, cy, 0, nc, fstar, tmp, 0, tok)
    _left(cx, yr, 0, nc, fstar, tmp2, 0, tok)
    for r in range(dim):
        tmp2[0, r] -= gp[r]
    for k in range(P):
        if PX[k] >= fstar:
            PX[k] = fstar
            for r in range(dim):
                PY[k, r] = tmp[0, r]
                PZ[k, r] = tmp2[0, r]
    run = 0.0
    for k in range(P):
        m = 0.0
        for r in range(dim):
            v = min(PZ[k, r], lp[r] - gp[r])
            if r == 0 or v > m:
                m = v
        m = max(m, 0.0)
        if k == 0 or m > run:
            run = m
        rho[k] = run
    # snap: runs of suggestions within SNAP of the previous one take the run's first value
    head = rho[0]
    prev = rho[0]
    nzero = 1 if rho[0] <= 0.0 else 0
    for k in range(1, P):
        cur = rho[k]
        if cur - prev <= SNAP:
            rho[k] = head
        else:
            head = cur
        prev = cur
        if rho[k] <= 0.0:
            nzero += 1
    if nzero > 0:
        f0 = PX[nzero - 1]
        _left(cx, cy, 0, nc, f0, tmp, 0, tok)
        for k in range(P):
            if rho[k] <= 0.0:
                PX[k] = f0
                for r in range(dim):
                    PY[k, r] = tmp[0, r]
    rho[P] = 1.0
    PX[P] = fstar
    _left(cx, cy, 0, nc, fstar, PY, P, tok)
    P += 1
    # of every run of equal s: the first point, and the last if it differs from the first
    c = 0
    k = 0
    while k < P:
        e = k
        while e + 1 < P and rho[e + 1] == rho[k]:
            e += 1
        os_[c] = rho[k]
        of_[c] = PX[k]
        for r in range(dim):
            ov_[c, r] = PY[k, r]
        c += 1
        if e > k:
            diff = PX[e] != PX[k]
            for r in range(dim):
                if PY[e, r] != PY[k, r]:
                    diff = True
            if diff:
                os_[c] = rho[e]
                of_[c] = PX[e]
                for r in range(dim):
                    ov_[c, r] = PY[e, r]
                c += 1
        k = e + 1
    if c == 1:
        os_[1] = os_[0]
        of_[1] = of_[0]
        for r in range(dim):
            ov_[1, r] = ov_[0, r]
        c = 2
    return c


@njit(cache=True, error_model="numpy")
def _param_space(dim, nc):
    npts = 2 * nc + (nc + 1) * (dim + dim * (dim - 1) // 2) + 4
    nk = dim + dim * (dim - 1) // 2 + 1
    return (np.empty((nc, dim)), np.empty((nc, dim)), np.empty(npts), np.empty((npts, dim)),
            np.empty((npts, dim)), np.empty(npts + 1), np.empty(dim), np.empty(dim), np.empty((1, dim)),
            np.empty((1, dim)), np.empty(nk), np.empty(nk, dtype=np.int64), np.empty(npts + 1),
            np.empty(npts + 1), np.empty((npts + 1, dim)))


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
            wmin = INF
            for z in range(a0, a1):
                wz = weight[kids[z]]
                if wz > EPS and wz < wmin:
                    wmin = wz
            if wmin == INF:
                wmin = 1.0
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
    t = 0
    used = 0
    mused = 0
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
            m = _inv_right2(xs, ym, a, o, n, r, lp)
        elif s == 0.0:
            m = _inv_right2(xs, ym, a, o, n, r, gp)
        elif s < span:
            m = _inv_left2(xs, ym, a, o, n, r, gp + s)
        elif s == span:
            m = _inv_left2(xs, ym, a, o, n, r, lp)
        else:
            m = _inv_right2(xs, ym, a, o, n, r, lp)
        if m < best:
            best = m
    return best


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
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if w < ym[o + mid, r]:
            hi = mid
        else:
            lo = mid + 1
    i = lo - 1
    if i < 0:
        return xs[a]
    if i >= n - 1:
        return xs[a + n - 1]
    return _lerp1(ym[o + i, r], xs[a + i], ym[o + i + 1, r], xs[a + i + 1], w)


@njit(cache=True, error_model="numpy", _nrt=False)
def _child_value(fs_x, fs_y, cm_y, cm_at, fs_at, fs_len, G, L, c, s, out, oi, tok):
    """A root child's fair share at suggestion s: its curve read left-continuously at its fit factor
    there (what its fair share by suggestion gives, without building it). Returns the fit factor."""
    dim = len(tok)
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
    wmin = INF
    for z in range(a0, a1):
        wz = weight[kids[z]]
        if wz > EPS and wz < wmin:
            wmin = wz
    if wmin == INF:
        wmin = 1.0
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
            wmin = INF
            for z in range(b0, b1):
                wz = weight[kids[z]]
                if wz > EPS and wz < wmin:
                    wmin = wz
            if wmin == INF:
                wmin = 1.0
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
