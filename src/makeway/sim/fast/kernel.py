"""The fast core's event loop compiled with numba (``makeway[fast]``), for integer quantities.

``makeway.sim.fast.compiled`` packs a run into numpy arrays and calls ``run`` here; ``run`` goes
until the run ends, or until it has submitted every workload loaded so far and needs the next
batch (``NEED_INPUT``), or until the reason log may overflow (``LOG_FULL``), or until the next
submission is one the general engine refuses (``BAD_INPUT``). Every step is the pure-Python fast
core's (``core.py``, ``strict.py``, ``reasons.py``, ``recorder.py``) on arrays: the same instants,
finishes in (time, start order), submissions in trace order, the same pass, the same pending-reason
rounds and samples. Quantities are integers (the driver checks), so every sum is exact and every
comparison is the one the general engine makes; the only float arithmetic (times, the utilisation
integral, Jain's index) is done in the same order with the same IEEE operations.

Per-workload state is one int64 row (``WI``) and one float64 row (``WF``); a request shape is an
``SI`` row whose groups are rows of ``GC`` (count) and ``GV`` (request vector); the waiting
workloads of a shape (or the strict FIFO) form a pairing heap threaded through ``WI``.
"""

from __future__ import annotations

import numpy as np

from numba import njit  # only imported once a run goes compiled (``compiled.enabled``)

from makeway.sim.fast.layout import *  # noqa: F401,F403  (the column and scalar names)
from makeway.sim.fast.layout import (
    CHILD, FIN_N, GOFF, NEGP, NG, ORD, SIB, SINGLE)


@njit(cache=True, _nrt=False)
def _less(WI, WF, a, b):
    pa, pb = WF[a, NEGP], WF[b, NEGP]
    if pa != pb:
        return pa < pb
    return WI[a, ORD] < WI[b, ORD]


@njit(cache=True, _nrt=False)
def _meld(WI, WF, a, b):
    if a < 0:
        return b
    if b < 0:
        return a
    if _less(WI, WF, b, a):
        a, b = b, a
    WI[b, SIB] = WI[a, CHILD]
    WI[a, CHILD] = b
    return a


@njit(cache=True, _nrt=False)
def _hpush(WI, WF, root, w):
    WI[w, CHILD] = -1
    WI[w, SIB] = -1
    return _meld(WI, WF, root, w)


@njit(cache=True, _nrt=False)
def _hpop(WI, WF, root):
    """The pairing heap without its root (two-pass pairing)."""
    c = np.int64(WI[root, CHILD])
    WI[root, CHILD] = -1
    prev = np.int64(-1)
    while c >= 0:
        a = c
        b = np.int64(WI[a, SIB])
        if b < 0:
            nxt = np.int64(-1)
            WI[a, SIB] = -1
            m = a
        else:
            nxt = np.int64(WI[b, SIB])
            WI[a, SIB] = -1
            WI[b, SIB] = -1
            m = _meld(WI, WF, a, b)
        WI[m, SIB] = prev
        prev = m
        c = nxt
    r = np.int64(-1)
    while prev >= 0:
        nxt = np.int64(WI[prev, SIB])
        WI[prev, SIB] = -1
        r = _meld(WI, WF, r, prev)
        prev = nxt
    return r


# -- the finish heap: (time, seq) -> (w, group or -1 for a gang, node) --------------------------------

@njit(cache=True, _nrt=False)
def _fless(FT, FI, a, b):
    if FT[a] != FT[b]:
        return FT[a] < FT[b]
    return FI[a, 0] < FI[b, 0]


@njit(cache=True, _nrt=False)
def _fswap(FT, FI, a, b):
    t = FT[a]
    FT[a] = FT[b]
    FT[b] = t
    for k in range(4):
        x = FI[a, k]
        FI[a, k] = FI[b, k]
        FI[b, k] = x


@njit(cache=True, _nrt=False)
def _fpush(FT, FI, IS, t, seq, w, g, i):
    n = IS[FIN_N]
    FT[n] = t
    FI[n, 0] = seq
    FI[n, 1] = w
    FI[n, 2] = g
    FI[n, 3] = i
    IS[FIN_N] = n + 1
    while n > 0:
        p = (n - 1) >> 1
        if _fless(FT, FI, n, p):
            _fswap(FT, FI, n, p)
            n = p
        else:
            break


@njit(cache=True, _nrt=False)
def _fpop(FT, FI, IS):
    n = IS[FIN_N] - 1
    IS[FIN_N] = n
    if n > 0:
        j = np.int64(0)
        _fswap(FT, FI, j, n)
        while True:
            a = 2 * j + 1
            if a >= n:
                break
            b = a + 1
            m = a if b >= n or _fless(FT, FI, a, b) else b
            if _fless(FT, FI, m, j):
                _fswap(FT, FI, m, j)
                j = m
            else:
                break
    return n  # the popped entry now sits at index n


# -- free capacity: one max tree per resource over cap - used ---------------------------------------

@njit(cache=True, _nrt=False)
def _leaf(T, cap, used, size, i):
    for r in range(T.shape[0]):
        j = size + i
        T[r, j] = cap[r, i] - used[r, i]
        j >>= 1
        while j >= 1:
            a = T[r, 2 * j]
            b = T[r, 2 * j + 1]
            m = a if a > b else b
            if T[r, j] == m:
                break
            T[r, j] = m
            j >>= 1


@njit(cache=True, _nrt=False)
def _first_fit(T, size, N, GV, g, start, stack):
    """Smallest node >= ``start`` whose free amounts cover group ``g``'s request, or -1."""
    R = T.shape[0]
    if start >= N:
        return -1
    stack[0] = 1
    stack[1] = 0
    stack[2] = size
    top = 1
    while top:
        top -= 1
        node = stack[3 * top]
        lo = stack[3 * top + 1]
        hi = stack[3 * top + 2]
        if hi <= start:
            continue
        ok = True
        for r in range(R):
            v = GV[g, r]
            if v > 0 and T[r, node] < v:
                ok = False
                break
        if not ok:
            continue
        if node >= size:
            if lo < N:
                return lo
            continue
        mid = (lo + hi) >> 1
        stack[3 * top] = 2 * node + 1
        stack[3 * top + 1] = mid
        stack[3 * top + 2] = hi
        top += 1
        stack[3 * top] = 2 * node
        stack[3 * top + 1] = lo
        stack[3 * top + 2] = mid
        top += 1
    return -1


@njit(cache=True, _nrt=False)
def _descend(T, size, N, GV, g, stack):
    R = T.shape[0]
    if N == 0:
        return -1
    for r in range(R):
        v = GV[g, r]
        if v > 0 and T[r, 1] < v:
            return -1
    node = 1
    while node < size:
        node <<= 1
        for r in range(R):
            v = GV[g, r]
            if v > 0 and T[r, node] < v:
                node += 1
                break
    for r in range(R):
        v = GV[g, r]
        if v > 0 and T[r, node] < v:
            return _first_fit(T, size, N, GV, g, np.int64(0), stack)
    return node - size


@njit(cache=True, _nrt=False)
def _first_group(SI, GC, s):
    o = SI[s, GOFF]
    for k in range(SI[s, NG]):
        if GC[o + k] > 0:
            return o + k
    return o


@njit(cache=True, _nrt=False)
def _place(SI, GC, GV, T, size, N, capt, rused, s, out_g, out_i, taken, mark, touched, stack):
    """(group, node) of every task of shape ``s`` into ``out_g``/``out_i``; the count, or -1."""
    R = T.shape[0]
    if SI[s, SINGLE]:
        g = _first_group(SI, GC, s)
        i = _descend(T, size, N, GV, g, stack)
        if i < 0:
            return -1
        out_g[0] = g
        out_i[0] = i
        return 1
    o, ng = SI[s, GOFF], SI[s, NG]
    for r in range(R):  # more than is free in all cannot fit
        tot = 0
        for k in range(ng):
            if GC[o + k] > 0:
                tot += GC[o + k] * GV[o + k, r]
        if tot > 0 and capt[r] - rused[r] < tot:
            return -1
    n = 0
    nt = 0
    res = 0
    for k in range(ng):
        g = o + k
        count = GC[g]
        if count <= 0:
            continue
        left = count
        i = 0
        while left:
            if i >= N:
                res = -1
                break
            if not mark[i]:
                for r in range(R):
                    taken[i, r] = T[r, size + i]
            fits = True
            for r in range(R):
                v = GV[g, r]
                if v > 0 and taken[i, r] < v:
                    fits = False
                    break
            if not fits:
                i = _first_fit(T, size, N, GV, g, i + 1, stack)
                if i < 0:
                    res = -1
                    break
                continue
            if not mark[i]:
                mark[i] = 1
                touched[nt] = i
                nt += 1
            while left and fits:
                for r in range(R):
                    taken[i, r] -= GV[g, r]
                out_g[n] = g
                out_i[n] = i
                n += 1
                left -= 1
                for r in range(R):
                    v = GV[g, r]
                    if v > 0 and taken[i, r] < v:
                        fits = False
                        break
            i += 1
        if res < 0:
            break
    for k in range(nt):
        mark[touched[k]] = 0
    return -1 if res < 0 else n


@njit(cache=True, _nrt=False)
def _free_fit(SI, GC, GV, cap, used, s, first_only, extra, mark, touched):
    """``core.pending._free_fit`` on the arrays: every task (or the first) fits now."""
    R = cap.shape[0]
    N = cap.shape[1]
    o, ng = SI[s, GOFF], SI[s, NG]
    nt = 0
    ok = True
    for k in range(ng):
        g = o + k
        count = GC[g]
        if count <= 0:
            continue
        left = 1 if first_only else count
        i = 0
        while left:
            found = False
            while i < N:
                fits = True
                for r in range(R):
                    v = GV[g, r]
                    if v > 0:
                        ex = extra[i, r] if mark[i] else 0
                        if used[r, i] + ex + v > cap[r, i]:
                            fits = False
                            break
                if fits:
                    found = True
                    break
                i += 1
            if not found:
                ok = False
                break
            if not mark[i]:
                mark[i] = 1
                touched[nt] = i
                nt += 1
                for r in range(R):
                    extra[i, r] = 0
            for r in range(R):
                extra[i, r] += GV[g, r]
            left -= 1
        if not ok or first_only:
            break
    for k in range(nt):
        mark[touched[k]] = 0
    return ok
