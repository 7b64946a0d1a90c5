"""The compiled Kueue run's finish heap: one entry per start, ordered by end time then push order.

An evicted workload's entry stays, as the engine's does (its instant is one at which the model is
called), and is told apart by the workload's start count.
"""

from __future__ import annotations

from numba import njit

from makeway.policies.kueue.fast.layout import I_FULL, I_HN, I_SEQ

@njit(cache=True, inline='always')
def _h_less(HT, HS, a, b):
    return HT[a] < HT[b] or (HT[a] == HT[b] and HS[a] < HS[b])


@njit(cache=True, inline='always')
def _h_swap(HW, HT, HS, HG, a, b):
    HW[a], HW[b] = HW[b], HW[a]
    HT[a], HT[b] = HT[b], HT[a]
    HS[a], HS[b] = HS[b], HS[a]
    HG[a], HG[b] = HG[b], HG[a]


@njit(cache=True)
def h_push(IS, HW, HT, HS, HG, w, gen, t):
    n = IS[I_HN]
    if n >= HW.shape[0]:
        IS[I_FULL] = 1
        return
    HW[n] = w
    HT[n] = t
    HS[n] = IS[I_SEQ]
    HG[n] = gen
    IS[I_SEQ] += 1
    IS[I_HN] = n + 1
    k = n
    while k > 0:
        p = (k - 1) // 2
        if _h_less(HT, HS, k, p):
            _h_swap(HW, HT, HS, HG, k, p)
            k = p
        else:
            break


@njit(cache=True)
def h_pop(IS, HW, HT, HS, HG):
    n = IS[I_HN] - 1
    IS[I_HN] = n
    if n > 0:
        HW[0], HT[0], HS[0], HG[0] = HW[n], HT[n], HS[n], HG[n]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= n:
                break
            b = a + 1
            m = b if b < n and _h_less(HT, HS, b, a) else a
            if _h_less(HT, HS, m, k):
                _h_swap(HW, HT, HS, HG, k, m)
                k = m
            else:
                break
