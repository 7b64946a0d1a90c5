"""A pool's curve as the sum of its children's parts (SEMANTICS §2.5), compiled, for ``kernel``.

Each child's fair share by suggestion is placed on the pool's fit factor axis (``_part``), the parts'
points are put in x order (each part is sorted, so a merge of runs: ``_merge_runs``), and one sweep
adds up slope changes and jumps (``_total_sum``), as ``plf.total_sum`` does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.ytsaurus.kernel_plf import SLIVER, _clean_into


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
            for _ in range((hi - lo + 1) // 2):
                ii = min(i, mid - 1)
                jj = min(j, hi - 1)
                tj = np.int64((i >= mid) | ((j < hi) & (sx[jj] < sx[ii])))
                q = i + (jj - i) * tj
                dx[of] = sx[q]
                di[of] = si[q]
                of += 1
                j += tj
                i += 1 - tj
                if of > ob:
                    break  # an odd count: the front took the last point
                ie2 = max(ie, lo)
                je2 = max(je, mid)
                tl = np.int64((je < mid) | ((ie >= lo) & (sx[ie2] > sx[je2])))
                q = je2 + (ie2 - je2) * tl
                dx[ob] = sx[q]
                di[ob] = si[q]
                ob -= 1
                ie -= tl
                je -= 1 - tl
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
        # points closer than SLIVER (point to point) are one point, at the first one's position, or
        # at the domain's end for the last run (``plf.snap_knots``)
        u = ox[q]
        for r in range(dim):
            S[r] = 0.0
            J[r] = 0.0
        prev_x = u
        while q < ne and ox[q] - prev_x <= SLIVER:
            prev_x = ox[q]
            i = oi[q]
            for r in range(dim):
                S[r] += dS[i, r]
                J[r] += dJ[i, r]
            q += 1
        if q == ne:
            u = ox[ne - 1]
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
