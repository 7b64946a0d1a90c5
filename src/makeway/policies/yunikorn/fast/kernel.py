"""The compiled YuniKorn loop's data structures: rank bitsets, the free-capacity tree and heaps.

Rank bitsets (two levels: a word per 64 ranks, a summary bit per word) let a call visit only the
asks that can act, in the model's walk order, without walking every pending ask. The tree gives
first fit over the nodes not reserved in ``O(log N)`` when nothing fits, which is the usual case
in a full cluster. Heaps hold the engine's finishes (stale ones included: they make instants),
the model's wake-ups, and the asks' preemption due times.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import os

from makeway.jitcache import by_package

by_package(os.path.dirname(__file__))  # the loop inlines helpers from every file here: any edit recompiles

_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_CTZ = np.zeros(64, np.int64)
for _i in range(64):
    _CTZ[(((1 << _i) * 0x03F79D71B4CB0A89) & (2**64 - 1)) >> 58] = _i
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_SIX = np.uint64(6)


@njit(cache=True, inline='always')
def _ctz(x):
    low = x & (~x + _ONE)
    return _CTZ[np.int64((low * _DEBRUIJN) >> np.uint64(58))]


# -- rank bitsets: row ``s`` of ``B`` (words) and ``SM`` (a bit per non-empty word) ------------------

@njit(cache=True, _nrt=False)
def b_set(B, SM, s, p):
    w = p >> 6
    B[s, w] |= _ONE << np.uint64(p & 63)
    SM[s, w >> 6] |= _ONE << np.uint64(w & 63)


@njit(cache=True, _nrt=False)
def b_clear(B, SM, s, p):
    w = p >> 6
    B[s, w] &= ~(_ONE << np.uint64(p & 63))
    if B[s, w] == _ZERO:
        SM[s, w >> 6] &= ~(_ONE << np.uint64(w & 63))


@njit(cache=True, _nrt=False)
def b_has(B, s, p):
    return (B[s, p >> 6] >> np.uint64(p & 63)) & _ONE != _ZERO


@njit(cache=True, _nrt=False)
def b_next(B, SM, s, p):
    """The least set position >= ``p`` in row ``s``, or -1."""
    nw = B.shape[1]
    w = p >> 6
    if w >= nw:
        return -1
    bits = B[s, w] >> np.uint64(p & 63)
    if bits != _ZERO:
        return p + _ctz(bits)
    w += 1
    i = w >> 6
    if i >= SM.shape[1]:
        return -1
    base = w
    m = SM[s, i] >> np.uint64(w & 63)
    while True:
        if m != _ZERO:
            w = base + _ctz(m)
            return (w << 6) + _ctz(B[s, w])
        i += 1
        if i >= SM.shape[1]:
            return -1
        base = i << 6
        m = SM[s, i]


# -- free capacity of the nodes not reserved: a max tree per resource --------------------------

@njit(cache=True, _nrt=False)
def t_leaf(T, size, CAP, USED, NI, RESV_COL, n):
    """Node ``n``'s leaf: its free amounts, or -1 everywhere while it is reserved."""
    R = T.shape[0]
    for r in range(R):
        j = size + n
        T[r, j] = CAP[n, r] - USED[n, r] if NI[n, RESV_COL] < 0 else -1
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
def t_first(T, size, N, SREQ, s, ASKT, stack):
    """The least node not reserved where shape ``s`` fits, or -1."""
    R = T.shape[0]
    for r in range(R):
        if ASKT[r] and T[r, 1] < SREQ[s, r]:
            return -1
    stack[0] = 1
    top = 1
    while top:
        top -= 1
        j = stack[top]
        ok = True
        for r in range(R):
            if ASKT[r] and T[r, j] < SREQ[s, r]:
                ok = False
                break
        if not ok:
            continue
        if j >= size:
            if j - size < N:
                return j - size
            continue
        stack[top] = 2 * j + 1
        stack[top + 1] = 2 * j
        top += 2
    return -1


# -- heaps ------------------------------------------------------------------------------------

@njit(cache=True, _nrt=False)
def _f_before(HT, HI, i, j):
    """Finish-heap order: time, then push sequence (the engine's heap breaks ties by its seq)."""
    return HT[i] < HT[j] or (HT[i] == HT[j] and HI[i, 0] < HI[j, 0])


@njit(cache=True, _nrt=False)
def _f_swap(HT, HI, i, j):
    HT[i], HT[j] = HT[j], HT[i]
    for c in range(3):
        HI[i, c], HI[j, c] = HI[j, c], HI[i, c]


@njit(cache=True, _nrt=False)
def f_push(HT, HI, n, t, seq, task, gen):
    """Push (time ``t``, seq) onto the finish heap of ``n`` entries; the new count."""
    HT[n] = t
    HI[n, 0] = seq
    HI[n, 1] = task
    HI[n, 2] = gen
    k = n
    while k > 0:
        p = (k - 1) >> 1
        if _f_before(HT, HI, k, p):
            _f_swap(HT, HI, k, p)
            k = p
        else:
            break
    return n + 1


@njit(cache=True, _nrt=False)
def f_pop(HT, HI, n):
    n -= 1
    if n > 0:
        HT[0] = HT[n]
        for c in range(3):
            HI[0, c] = HI[n, c]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= n:
                break
            b = a + 1
            m = a
            if b < n and _f_before(HT, HI, b, a):
                m = b
            if _f_before(HT, HI, m, k):
                _f_swap(HT, HI, m, k)
                k = m
            else:
                break
    return n


@njit(cache=True, _nrt=False)
def w_push(WH, n, t):
    WH[n] = t
    k = n
    while k > 0:
        p = (k - 1) >> 1
        if WH[k] < WH[p]:
            WH[k], WH[p] = WH[p], WH[k]
            k = p
        else:
            break
    return n + 1


@njit(cache=True, _nrt=False)
def w_pop(WH, n):
    n -= 1
    if n > 0:
        WH[0] = WH[n]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= n:
                break
            b = a + 1
            m = b if b < n and WH[b] < WH[a] else a
            if WH[m] < WH[k]:
                WH[m], WH[k] = WH[k], WH[m]
                k = m
            else:
                break
    return n


@njit(cache=True, _nrt=False)
def d_push(HK, HX, HN, h, key, x, gen):
    """Push (due ``key``, task ``x``, ``gen``) onto due heap ``h`` (0: fresh asks, 1: checked)."""
    n = HN[h]
    HK[h, n] = key
    HX[h, n, 0] = x
    HX[h, n, 1] = gen
    k = n
    while k > 0:
        p = (k - 1) >> 1
        if HK[h, k] < HK[h, p]:
            HK[h, k], HK[h, p] = HK[h, p], HK[h, k]
            HX[h, k, 0], HX[h, p, 0] = HX[h, p, 0], HX[h, k, 0]
            HX[h, k, 1], HX[h, p, 1] = HX[h, p, 1], HX[h, k, 1]
            k = p
        else:
            break
    HN[h] = n + 1


@njit(cache=True, _nrt=False)
def d_pop(HK, HX, HN, h):
    n = HN[h] - 1
    HN[h] = n
    if n > 0:
        HK[h, 0] = HK[h, n]
        HX[h, 0, 0] = HX[h, n, 0]
        HX[h, 0, 1] = HX[h, n, 1]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= n:
                break
            b = a + 1
            m = b if b < n and HK[h, b] < HK[h, a] else a
            if HK[h, m] < HK[h, k]:
                HK[h, m], HK[h, k] = HK[h, k], HK[h, m]
                HX[h, m, 0], HX[h, k, 0] = HX[h, k, 0], HX[h, m, 0]
                HX[h, m, 1], HX[h, k, 1] = HX[h, k, 1], HX[h, m, 1]
                k = m
            else:
                break
