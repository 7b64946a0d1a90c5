"""An element's functions without the generic construction, compiled, for ``kernel``.

Operations in closed form (``_op_closed``: usage-first up to their largest usage share, then the
lines toward demand), and pools read off their curves parametrically (``_param_fsbs``), with the
lower value kept at every jump (SEMANTICS §2.4).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.ytsaurus.kernel_plf import (INF, _insert_sorted, _inv_right2, _left, _limit_level2,
                                                  _snap_limit)


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
        c = _insert_sorted(ox, 0, c, min(u[r], U))
    c = _insert_sorted(ox, 0, c, U)
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
        nb = _insert_sorted(ox, b0, nb, min(max(v, U), 1.0))
    for i in range(dim):
        for j in range(i + 1, dim):
            ai = d[i] - u[i]
            aj = d[j] - u[j]
            if ai > 0 and aj > 0 and ai != aj:
                v = (u[i] * aj - u[j] * ai) / (aj - ai)
            else:
                v = 1.0
            nb = _insert_sorted(ox, b0, nb, min(max(v, U), 1.0))
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
    z0 = np.int64(0)  # a literal 0 as argument would compile each callee once more
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
        t = _inv_right2(cx, yr, z0, z0, nc, r, _limit_level2(yr, z0, nc, r, lp[r]))
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
    _left(cx, cy, z0, nc, fstar, tmp, z0, tok)
    _left(cx, yr, z0, nc, fstar, tmp2, z0, tok)
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
        _left(cx, cy, z0, nc, f0, tmp, z0, tok)
        for k in range(P):
            if rho[k] <= 0.0:
                PX[k] = f0
                for r in range(dim):
                    PY[k, r] = tmp[0, r]
    rho[P] = 1.0
    PX[P] = fstar
    _left(cx, cy, z0, nc, fstar, PY, P, tok)
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
