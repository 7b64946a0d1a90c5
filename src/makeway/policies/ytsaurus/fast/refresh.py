"""One refresh of the compiled YTsaurus loop (``YTsaurusModel.update`` for the loop's class), and its
decision log's rows (``fast.layout``): a computed update (the fair share by ``fill`` over the
leaves' classes of equal tops, then statuses, clocks and notes, as ``starvation.update_statuses``
and ``update`` make them), or one where only the clocks whose deadline passed move
(``clockheap.ClockHeap.advance``). Split out of ``fast.loop``, which calls them."""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.core.resources import EPS
from makeway.policies.ytsaurus.fast.fill import fill
from makeway.policies.ytsaurus.fast.layout import (
    C_A, C_B, C_C, C_KIND, I_NLOG, I_NUPD, L_NOTE, L_PCLOCK, L_UPDATE, N_FINISHED, N_STARTS, N_STOPS, NLOG_COLS, NLV,
    NUPD, ST_NON, ST_STARVING, U_FAIR, U_LEVEL, U_USAGE, V_FAIR, V_SINCE, V_USAGE,
)


# -- the log ------------------------------------------------------------------------------------------

@njit(cache=True)
def grown(LOG, LT, LV, need):
    """The log arrays with room for at least ``need`` rows (doubled)."""
    n = LOG.shape[0]
    while n < need:
        n *= 2
    L2 = np.zeros((n, NLOG_COLS), np.int64)
    T2 = np.zeros(n)
    V2 = np.full((n, NLV), np.nan)
    m = LOG.shape[0]
    L2[:m] = LOG
    T2[:m] = LT
    V2[:m] = LV
    return L2, T2, V2


@njit(cache=True)
def row(LOG, LT, LV, IS, kind, a, b, c, t, v0, v1, v2):
    i = IS[I_NLOG]
    LOG[i, C_KIND] = kind
    LOG[i, C_A] = a
    LOG[i, C_B] = b
    LOG[i, C_C] = c
    LT[i] = t
    LV[i, V_FAIR] = v0
    LV[i, V_USAGE] = v1
    LV[i, V_SINCE] = v2
    IS[I_NLOG] = i + 1


# -- one refresh --------------------------------------------------------------------------------------

@njit(cache=True)
def below(f, d, u, tol, is_op):
    """``status.element_status(...) == "below_fair_share"`` with one resource (shares)."""
    if is_op and abs(f - d) <= 1e-4:
        tol = 1.0
    bound = f * tol
    if d < bound:
        bound = d
    return bound > u + EPS


@njit(cache=True)
def pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now):
    """An ``L_PCLOCK`` row per pool whose clock moved, in the pools' preorder."""
    for k in range(PRE.shape[0]):
        p = PRE[k]
        same = PST[p] == OST[p] and ((np.isnan(PSINCE[p]) and np.isnan(OSINCE[p])) or PSINCE[p] == OSINCE[p])
        if not same:
            row(LOG, LT, LV, IS, L_PCLOCK, p, PST[p], 0, now, PSINCE[p], np.nan, np.nan)


@njit(cache=True)
def next_deadline(ACT, nact, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO):
    """``ClockHeap.bound``: the earliest deadline of a running clock that is not starving."""
    best = np.inf
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if INTREE[w] and ST[w] == ST_NON and not np.isnan(SINCE[w]):
            x = SINCE[w] + TO[w]
            if x < best:
                best = x
    for p in range(PST.shape[0]):
        if PST[p] == ST_NON and not np.isnan(PSINCE[p]):
            x = PSINCE[p] + PTO[p]
            if x < best:
                best = x
    return best


@njit(cache=True)
def advance(now, ACT, nact, npub, INTREE, ST, SINCE, TO, FPUB, UPUB, PST, PSINCE, PTO, PRE, OST, OSINCE,
             LOG, LT, LV, IS):
    """A refresh whose inputs did not move, past the earliest deadline: the clocks whose deadline
    passed turn starving, with their notes in trace order (``ClockHeap.advance``)."""
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if INTREE[w] and ST[w] == ST_NON and not np.isnan(SINCE[w]) and SINCE[w] + TO[w] < now:
            ST[w] = ST_STARVING
            row(LOG, LT, LV, IS, L_NOTE, w, N_STARTS, ST_STARVING, now, FPUB[w], UPUB[w], SINCE[w])
    OST[:] = PST
    OSINCE[:] = PSINCE
    for p in range(PST.shape[0]):
        if PST[p] == ST_NON and not np.isnan(PSINCE[p]) and PSINCE[p] + PTO[p] < now:
            PST[p] = ST_STARVING
    pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now)


@njit(cache=True)
def update(now, T, coef, pools_starve, ACT, nact, npub, nsub, PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE, LRANK,
            POOL, REQ, BOFF, BUCK, NPEND, NRUN, INTREE, PUBT, ITEM, FPUB, UPUB, DPUB, SINCE, ST, TO,
            IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM, PD, PU, PST, PSINCE, OST, OSINCE, GONE,
            LOG, LT, LV, IS, UPD):
    """A computed refresh (``update`` with moved inputs): the fair share by ``fill`` over the
    leaves' classes of equal tops, then statuses, clocks and notes; the row ``L_UPDATE``."""
    P = PAR.shape[0]
    BOFF[:] = 0  # the live operations by leaf, each leaf's in index order (``ACT``'s)
    for i in range(nact):
        BOFF[POOL[ACT[i]] + 1] += 1
    for p in range(P):
        BOFF[p + 1] += BOFF[p]
    for i in range(nact):
        p = POOL[ACT[i]]
        BUCK[BOFF[p]] = ACT[i]
        BOFF[p] += 1
    for p in range(P - 1, -1, -1):
        BOFF[p + 1] = BOFF[p]
    BOFF[0] = 0
    ni = 0
    for p in range(P):
        IOFF[p] = ni
        PD[p] = 0
        PU[p] = 0
        if not LEAF[p]:
            for j in range(KOFF[p], KOFF[p + 1]):
                c = KIDS[j]
                IPOOL[ni] = c
                IW[ni] = W[c]
                IHI[ni] = 0.0
                ICNT[ni] = 1
                ni += 1
                PD[p] += PD[c]
                PU[p] += PU[c]
            continue
        first = ni
        for j in range(BOFF[p], BOFF[p + 1]):
            w = BUCK[j]
            live = NPEND[w] + NRUN[w]
            if live == 0:
                ITEM[w] = -1
                continue
            d = float(live * REQ[w])
            top = T if T < d else d  # ``min(d, inf, T)``
            k = -1
            for i in range(first, ni):
                if IHI[i] == top:
                    k = i
                    break
            if k < 0:
                k = ni
                IPOOL[k] = -1
                IW[k] = 1.0
                IHI[k] = top
                ICNT[k] = 0
                ni += 1
            ICNT[k] += 1
            ITEM[w] = k
            PD[p] += live * REQ[w]
            PU[p] += NRUN[w] * REQ[w]
    IOFF[P] = ni
    k = IS[I_NUPD]
    IS[I_NUPD] = k + 1
    row(LOG, LT, LV, IS, L_UPDATE, k, 0, 0, now, np.nan, np.nan, np.nan)
    fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM)

    # operations, in trace order (the tree's): statuses, clocks, notes
    ng = 0
    for i in range(nact):
        w = ACT[i]
        live = NPEND[w] + NRUN[w]
        if live == 0:
            if w < npub and INTREE[w] and ST[w] == ST_STARVING:
                GONE[ng] = w
                ng += 1
            INTREE[w] = False
            ST[w] = ST_NON
            SINCE[w] = np.nan
            continue
        leaf = POOL[w]
        was = ST[w] if INTREE[w] else ST_NON
        if not INTREE[w]:
            ST[w] = ST_NON
            SINCE[w] = np.nan
            PUBT[w] = now
        INTREE[w] = True
        f = IVAL[ITEM[w]] / T
        u = float(NRUN[w] * REQ[w]) / T
        FPUB[w] = f
        UPUB[w] = u
        DPUB[w] = float(live * REQ[w]) / T
        to = PTO[leaf]
        r = NPEND[w] / coef if coef > 0 else 1.0
        if r < 1:
            to *= r
        TO[w] = to
        if below(f, float(live * REQ[w]) / T, u, PTOL[leaf], True):
            if np.isnan(SINCE[w]):
                SINCE[w] = now
            elif now > SINCE[w] + to:
                ST[w] = ST_STARVING
        else:
            ST[w] = ST_NON
            SINCE[w] = np.nan
        if (was == ST_NON) != (ST[w] == ST_NON):
            if ST[w] != ST_NON:
                row(LOG, LT, LV, IS, L_NOTE, w, N_STARTS, ST[w], now, f, u, SINCE[w])
            else:
                row(LOG, LT, LV, IS, L_NOTE, w, N_STOPS, ST_NON, now, f, u, np.nan)
    # operations that left while starving, in the last tree's order (its preorder)
    for a in range(1, ng):
        x = GONE[a]
        b = a - 1
        while b >= 0 and (LRANK[POOL[GONE[b]]] > LRANK[POOL[x]]
                          or (LRANK[POOL[GONE[b]]] == LRANK[POOL[x]] and GONE[b] > x)):
            GONE[b + 1] = GONE[b]
            b -= 1
        GONE[b + 1] = x
    for a in range(ng):
        row(LOG, LT, LV, IS, L_NOTE, GONE[a], N_FINISHED, ST_NON, now, np.nan, np.nan, np.nan)

    # pools (``<Root>`` never starves)
    OST[:] = PST
    OSINCE[:] = PSINCE
    for p in range(P - 1):
        if pools_starve and below(VAL[p] / T, PD[p] / T, PU[p] / T, PTOL[p], False):
            if np.isnan(PSINCE[p]):
                PSINCE[p] = now
            elif now > PSINCE[p] + PTO[p]:
                PST[p] = ST_STARVING
        else:
            PST[p] = ST_NON
            PSINCE[p] = np.nan
    pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now)

    for p in range(P):
        UPD[k, NUPD * p + U_FAIR] = VAL[p] / T
        UPD[k, NUPD * p + U_USAGE] = PU[p] / T
        UPD[k, NUPD * p + U_LEVEL] = LAM[p] / T
    root = 0.0
    for j in range(KOFF[P - 1], KOFF[P]):
        root += VAL[KIDS[j]] / T
    UPD[k, NUPD * (P - 1) + U_FAIR] = root


@njit(cache=True)
def any_starving(ACT, nact, npub, INTREE, ST, PST):
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if INTREE[w] and ST[w] == ST_STARVING:
            return True
    for p in range(PST.shape[0]):
        if PST[p] == ST_STARVING:
            return True
    return False


@njit(cache=True)
def notes(LOG, a, b):
    for i in range(a, b):
        if LOG[i, C_KIND] == L_NOTE:
            return True
    return False
