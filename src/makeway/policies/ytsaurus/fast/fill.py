"""The compiled twin of ``onedim``'s water-filling (``docs/plans/ytsaurus-compiled-loop.md`` §3.3).

The loop keeps the tree as counts, so it cannot call ``onedim.compute`` on a ``Tree``; it calls
``fill`` on the same numbers laid out as arrays, and must get the same bits: every float
operation here is ``onedim._fill`` and ``onedim.water_fill``'s, in their order (sums in item
order, levels by breakpoint then item order, Python's ``min``/``max`` choices on ties). numba is
never given ``fastmath``, so nothing is reassociated or fused, and IEEE basic operations round
alike in both languages. ``tests/ytsaurus_fast/test_fill.py`` holds the two equal bit for bit.

**Layout.** Pools ``0..P-1`` in the tree's pool postorder (the root last). Pool ``p``'s items are
``IOFF[p]..IOFF[p+1]-1``, in ``onedim``'s item order: its children in child order, where a child
pool is one item (``IPOOL`` its index, count 1) and equal operations (same weight and top
``min(demand, limit, T)``) are one class item (``IPOOL`` -1) placed at its first member, with
``IW`` the weight, ``IHI`` the top and ``ICNT`` the members. ``GU`` is each pool's guarantee in
units as ``onedim.unit_guarantees`` scales it (static in the loop's class; packed once).

**Results** (written in place, in units): ``HI``/``GEFF`` each pool's top and effective guarantee,
``VAL`` its fair share, ``LAM`` its level (0 for a pool without items); ``IVAL`` each item's value
(a class member's fair share), ``IHI``/``IG`` filled in for pool items. Shares are these over T,
divided by the caller as ``onedim`` divides them.
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit

from makeway.jitcache import by_package

by_package(os.path.dirname(__file__))


@njit(cache=True, inline='always')
def _pmin(a, b):
    """Python's ``min(a, b)``: the first unless the second is smaller (which matters for -0.0)."""
    return b if b < a else a


@njit(cache=True, inline='always')
def _pmax(a, b):
    """Python's ``max(a, b)``."""
    return b if b > a else a


@njit(cache=True)
def water_fill(V, a, b, IHI, IG, IW, ICNT, IVAL):
    """``onedim.water_fill`` over items ``a..b-1``: sets ``IVAL`` and returns the level."""
    wmin = IW[a]
    for i in range(a + 1, b):
        wmin = _pmin(wmin, IW[i])
    n_items = b - a
    ks = np.empty(n_items)
    for i in range(a, b):
        ks[i - a] = IW[i] / wmin
    top = 0.0
    for i in range(a, b):
        top += ICNT[i] * IHI[i]
    bp = np.empty(n_items)
    ix = np.empty(n_items, np.int64)
    n = 0
    full = 0.0
    for i in range(a, b):
        if IHI[i] - IG[i] <= 0.0:
            IVAL[i] = IHI[i]
            full += ICNT[i] * IHI[i]
        else:
            bp[n] = (IHI[i] - IG[i]) / ks[i - a]
            ix[n] = i
            n += 1
    if n == 0:
        return 0.0
    order = np.argsort(bp[:n], kind='mergesort')  # stable: ties keep item order, as tuples sort
    lb = np.empty(n)
    li = np.empty(n, np.int64)
    for j in range(n):
        lb[j] = bp[order[j]]
        li[j] = ix[order[j]]
    if V >= top:
        for j in range(n):
            IVAL[li[j]] = IHI[li[j]]
        return _pmax(lb[n - 1], 0.0)
    rest_g = np.zeros(n + 1)
    rest_k = np.zeros(n + 1)
    for j in range(n - 1, -1, -1):
        i = li[j]
        rest_g[j] = rest_g[j + 1] + ICNT[i] * IG[i]
        rest_k[j] = rest_k[j + 1] + ICNT[i] * ks[i - a]
    lam = lb[n - 1]
    cut = n
    for j in range(n):
        cand = (V - full - rest_g[j]) / rest_k[j]
        if cand <= lb[j]:
            lam = cand
            cut = j
            break
        i = li[j]
        full += ICNT[i] * IHI[i]
    lam = _pmax(lam, 0.0)
    for j in range(n):
        i = li[j]
        if j < cut:
            IVAL[i] = IHI[i]
        else:
            IVAL[i] = _pmin(IHI[i], IG[i] + lam * ks[i - a])
    return lam


@njit(cache=True)
def fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM):
    """``onedim._fill`` on the layout above: tops and effective guarantees bottom-up, then each
    pool's value split among its items top-down."""
    P = GU.shape[0]
    for p in range(P):
        lo = 0.0
        top = 0.0
        for i in range(IOFF[p], IOFF[p + 1]):
            c = IPOOL[i]
            if c >= 0:
                IHI[i] = HI[c]
                IG[i] = GEFF[c]
            else:
                IG[i] = 0.0
            lo += ICNT[i] * IG[i]
            top += ICNT[i] * IHI[i]
        h = _pmin(_pmax(T, lo), top)
        HI[p] = h
        GEFF[p] = _pmin(_pmax(GU[p], lo), h)
    VAL[P - 1] = HI[P - 1]
    for p in range(P - 1, -1, -1):  # parents before children: a pool's value depends on its parent's only
        a, b = IOFF[p], IOFF[p + 1]
        if a == b:
            LAM[p] = 0.0
            continue
        LAM[p] = water_fill(VAL[p], a, b, IHI, IG, IW, ICNT, IVAL)
        for i in range(a, b):
            if IPOOL[i] >= 0:
                VAL[IPOOL[i]] = IVAL[i]
