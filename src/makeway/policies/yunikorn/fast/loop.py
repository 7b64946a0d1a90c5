"""The compiled YuniKorn run: the engine's instants and ``YuniKornModel._schedule_reference``'s
calls on the arrays ``pack`` fills (``docs/plans/yunikorn-compiled-loop.md``, sections 2 and 3).

An instant is every finish (a preempted task's stale finish included: the engine calls the model
there too), submission and wake-up; the model is called up to ``MAX_ROUNDS`` times while victims
leave at once, and its wake-up is queued after the instant's last call. A call visits only the asks
that can act, in the model's walk order (static rank): asks of a request shape that may still fit
somewhere (``live``), asks due for a preemption attempt in a leaf with attempts left, and asks
holding a reservation. An ask outside these would change nothing; it only feeds the wake-up, which
the due-time heaps give in closed form.

The helpers here and in ``preempt`` and ``kernel`` allocate nothing and are compiled without
numba's runtime (``_nrt=False``): with it, each call counted the references of the arrays it
takes in and out, an atomic add each (17% of a Philly run's samples under ``perf``; the loop
3.96 -> 3.44 s). Only ``run`` and ``_grown``, which allocate, keep it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import os

from makeway.jitcache import by_package

from makeway.policies.yunikorn.fast.kernel import (
    b_clear, b_next, b_set, d_pop, d_push, f_pop, f_push, t_first, t_leaf, w_pop, w_push,
)
from makeway.policies.yunikorn.fast.layout import (
    F_DUR, F_START, F_SUB, F_VGAP, F_VLAST, L_PREEMPT, L_START, L_UNRESERVE, N_CNT, N_OFF, N_RESV, Q_BUDGET,
    Q_DELAY, Q_LIVE, Q_LN, S_DONE, S_PENDING, S_RUNNING, T_CHK, T_DUE, T_EVER, T_GEN, T_HGEN, T_LAST, T_LPOS,
    T_NODE, T_NPOS, T_PLEV, T_Q, T_RANK, T_RESAT, T_RESV, T_SEQ, T_SHAPE, T_STARTUS, T_STATE, T_SUBUS, T_TOUCH,
    T_TRIG, T_VICT, T_VN, T_W, NWC, W_NDUE, W_NP, W_NPS,
)
from makeway.policies.yunikorn.fast.preempt import guarantees, try_preemption

by_package(os.path.dirname(__file__))  # the loop inlines helpers from every file here: any edit recompiles

MAX_ROUNDS = 16  # ``Simulation.MAX_ROUNDS``
BUDGET = 10  # ``MAX_PREEMPTION_ATTEMPTS``
FREQ_US = 15_000_000  # ``PREEMPT_ATTEMPT_FREQUENCY_US``
TIMEOUT_US = 3_600_000_000  # ``RESERVATION_TIMEOUT_US``
NOT_SET = np.iinfo(np.int64).max

(I_CALLS, I_NLOG, I_SEQ, I_FSEQ, I_FN, I_WN, I_NSUB, I_NRUN, I_NRL, I_NVICT, I_PRE_NOW, I_STOP, I_NTOUCH,
 I_ATTEMPTS, I_VISITS, I_NSL, I_FREED, NIS) = range(18)
X_SINCE, X_CYCLING, X_PERIOD, X_STOPPED = range(4)


# -- the no-progress watch (``sim.progress.NoProgressWatch``) -----------------------------------

@njit(cache=True, _nrt=False)
def _w_progress(IS, TI, X, TOUCH, now):
    X[X_SINCE] = now
    X[X_CYCLING] = np.nan
    X[X_PERIOD] = 0.0
    for k in range(IS[I_NTOUCH]):
        TI[TOUCH[k], T_VN] = 0
        TI[TOUCH[k], T_TOUCH] = 0
    IS[I_NTOUCH] = 0


@njit(cache=True, _nrt=False)
def _w_preempted(IS, TI, TF, X, TOUCH, v, now):
    IS[I_PRE_NOW] = 1
    TI[v, T_EVER] = 1
    if TI[v, T_VN] == 0:
        TI[v, T_VN] = 1
        TF[v, F_VLAST] = now
        TF[v, F_VGAP] = 0.0
        if not TI[v, T_TOUCH]:
            TI[v, T_TOUCH] = 1
            TOUCH[IS[I_NTOUCH]] = v
            IS[I_NTOUCH] += 1
    else:
        gap = now - TF[v, F_VLAST]
        TI[v, T_VN] += 1
        TF[v, F_VLAST] = now
        if gap > TF[v, F_VGAP]:
            TF[v, F_VGAP] = gap
            if gap > X[X_PERIOD]:
                X[X_PERIOD] = gap


@njit(cache=True, _nrt=False)
def _w_stuck(IS, TI, TF, QI, LL, X, window, now, pending):
    if pending or now - X[X_SINCE] < window / 2 or X[X_PERIOD] <= 0:
        X[X_CYCLING] = np.nan
        return False
    for q in range(QI.shape[0]):
        for j in range(QI[q, Q_LN]):
            t = LL[q, j]
            if t >= 0 and (TI[t, T_VN] == 0 or now - TF[t, F_START] > X[X_PERIOD]):
                X[X_CYCLING] = np.nan
                return False
    if X[X_CYCLING] != X[X_CYCLING]:
        X[X_CYCLING] = now
    return now - X[X_SINCE] >= window and now - X[X_CYCLING] >= window / 2


# -- the walk's streams: one bit per workload rank, set while one of its tasks is in the stream --

@njit(cache=True, _nrt=False)
def _in_ps(TI, WC, PSB, PSS, PSN, x):
    w = TI[x, T_W]
    WC[w, W_NPS] += 1
    PSN[TI[x, T_SHAPE]] += 1
    b_set(PSB, PSS, TI[x, T_SHAPE], TI[x, T_RANK])


@njit(cache=True, _nrt=False)
def _out_ps(TI, WC, PSB, PSS, PSN, x):
    w = TI[x, T_W]
    WC[w, W_NPS] -= 1
    PSN[TI[x, T_SHAPE]] -= 1
    if WC[w, W_NPS] == 0:
        b_clear(PSB, PSS, TI[x, T_SHAPE], TI[x, T_RANK])


@njit(cache=True, _nrt=False)
def _in_due(TI, WC, DSB, DSS, DSN, x):
    TI[x, T_DUE] = 1
    WC[TI[x, T_W], W_NDUE] += 1
    DSN[TI[x, T_Q]] += 1
    b_set(DSB, DSS, TI[x, T_Q], TI[x, T_RANK])


@njit(cache=True, _nrt=False)
def _out_due(TI, WC, DSB, DSS, DSN, x):
    w = TI[x, T_W]
    TI[x, T_DUE] = 0
    WC[w, W_NDUE] -= 1
    DSN[TI[x, T_Q]] -= 1
    if WC[w, W_NDUE] == 0:
        b_clear(DSB, DSS, TI[x, T_Q], TI[x, T_RANK])


# -- the state's side --------------------------------------------------------------------------

@njit(cache=True, _nrt=False)
def _log(IS, LOG, LT, kind, a, b, c, now):
    n = IS[I_NLOG]
    LOG[n, 0] = kind
    LOG[n, 1] = a
    LOG[n, 2] = b
    LOG[n, 3] = c
    LOG[n, 4] = IS[I_CALLS]
    LT[n] = now
    IS[I_NLOG] = n + 1


@njit(cache=True, _nrt=False)
def _room(TI, REQ, U, UR, NI, CAP, USED, T, size, x, n, sign):
    """Task ``x``'s usage on node ``n``, its leaf and the root, added (1) or taken away (-1)."""
    q = TI[x, T_Q]
    for k in range(REQ.shape[1]):
        USED[n, k] += sign * REQ[x, k]
        U[q, k] += sign * REQ[x, k]
        UR[k] += sign * REQ[x, k]
    t_leaf(T, size, CAP, USED, NI, N_RESV, n)


@njit(cache=True, _nrt=False)
def _start(TI, TF, REQ, QI, U, UR, NI, CAP, USED, NL, LL, T, size, PSB, PSS, PSN, DSB, DSS, DSN, WC, PL, TOFF, IS,
           X, TOUCH, HT, HI, LOG, LT, VL, x, n, in_ps, now, now_us):
    q = TI[x, T_Q]
    if TI[x, T_DUE]:
        _out_due(TI, WC, DSB, DSS, DSN, x)
    if in_ps:
        _out_ps(TI, WC, PSB, PSS, PSN, x)
    w = TI[x, T_W]
    o = TOFF[w]
    m = WC[w, W_NP] - 1
    j = 0
    while PL[o + j] != x:
        j += 1
    while j < m:  # the workload's other pending tasks keep their order
        PL[o + j] = PL[o + j + 1]
        j += 1
    WC[w, W_NP] = m
    TI[x, T_STATE] = S_RUNNING
    TI[x, T_NODE] = n
    TI[x, T_STARTUS] = now_us
    TF[x, F_START] = now
    IS[I_SEQ] += 1
    TI[x, T_SEQ] = IS[I_SEQ]
    TI[x, T_GEN] += 1
    _room(TI, REQ, U, UR, NI, CAP, USED, T, size, x, n, 1)
    c = NI[n, N_CNT]
    NL[NI[n, N_OFF] + c] = x
    TI[x, T_NPOS] = c
    NI[n, N_CNT] = c + 1
    if QI[q, Q_LN] == LL.shape[1]:  # compact the leaf's start-order list
        m = 0
        for j in range(QI[q, Q_LN]):
            t = LL[q, j]
            if t >= 0:
                LL[q, m] = t
                TI[t, T_LPOS] = m
                m += 1
        QI[q, Q_LN] = m
    LL[q, QI[q, Q_LN]] = x
    TI[x, T_LPOS] = QI[q, Q_LN]
    QI[q, Q_LN] += 1
    QI[q, Q_LIVE] += 1
    IS[I_NRUN] += 1
    IS[I_NSL] += 1
    VL[VL.shape[0] - IS[I_NSL]] = x  # the call's starts fill ``VL`` from its end, its victims from the start
    IS[I_FN] = f_push(HT, HI, IS[I_FN], now + TF[x, F_DUR], IS[I_FSEQ], x, TI[x, T_GEN])
    IS[I_FSEQ] += 1
    _log(IS, LOG, LT, L_START, x, n, 0, now)
    if not TI[x, T_EVER]:
        _w_progress(IS, TI, X, TOUCH, now)


@njit(cache=True, _nrt=False)
def _end(TI, REQ, QI, U, UR, NI, CAP, USED, NL, LL, LC, T, size, x):
    """Running task ``x`` leaves (finished or evicted)."""
    n = TI[x, T_NODE]
    q = TI[x, T_Q]
    _room(TI, REQ, U, UR, NI, CAP, USED, T, size, x, n, -1)
    o = NI[n, N_OFF]
    last = NI[n, N_CNT] - 1
    moved = NL[o + last]
    NL[o + TI[x, T_NPOS]] = moved
    TI[moved, T_NPOS] = TI[x, T_NPOS]
    NI[n, N_CNT] = last
    LL[q, TI[x, T_LPOS]] = -1
    QI[q, Q_LIVE] -= 1
    if not TI[x, T_VICT]:  # a victim left the counts when it was chosen
        LC[q, TI[x, T_PLEV]] -= 1


@njit(cache=True, _nrt=False)
def _pend(TI, QI, PSB, PSS, PSN, WC, PL, TOFF, HK, HX, HN, x):
    """Task ``x`` is pending as a fresh ask, last of its workload's pending tasks (as a requeue
    appends to ``state.pending``): in its shape's stream, due at submit + delay."""
    TI[x, T_STATE] = S_PENDING
    TI[x, T_TRIG] = 0
    TI[x, T_CHK] = 0
    TI[x, T_HGEN] += 1
    w = TI[x, T_W]
    PL[TOFF[w] + WC[w, W_NP]] = x
    WC[w, W_NP] += 1
    _in_ps(TI, WC, PSB, PSS, PSN, x)
    d_push(HK, HX, HN, 0, TI[x, T_SUBUS] + QI[TI[x, T_Q], Q_DELAY], x, TI[x, T_HGEN])


@njit(cache=True, _nrt=False)
def _valid(TI, x, gen):
    return (TI[x, T_STATE] == S_PENDING) & (TI[x, T_TRIG] == 0) & (TI[x, T_HGEN] == gen)  # no branches


@njit(cache=True, _nrt=False)
def _compact(TI, HK, HX, HN, h):
    """Drop the heap's dead entries (it only ever needs the live ones, one per ask)."""
    m = 0
    for j in range(HN[h]):
        if _valid(TI, HX[h, j, 0], HX[h, j, 1]):
            HK[h, m] = HK[h, j]
            HX[h, m, 0] = HX[h, j, 0]
            HX[h, m, 1] = HX[h, j, 1]
            m += 1
    n = m
    HN[h] = 0
    for j in range(n):
        d_push(HK, HX, HN, h, HK[h, j], HX[h, j, 0], HX[h, j, 1])


@njit(cache=True, _nrt=False)
def _headroom(SREQ, ASKT, INCL, CAPT, UR, s):
    ok = True
    for k in range(SREQ.shape[1]):
        if ASKT[k] & INCL[k] & (SREQ[s, k] > max(0, CAPT[k] - UR[k])):
            ok = False
    return ok


@njit(cache=True, _nrt=False)
def _free_fits(REQ, ASKT, CAP, USED, n, x):
    for k in range(REQ.shape[1]):
        if ASKT[k] and REQ[x, k] > CAP[n, k] - USED[n, k]:
            return False
    return True


# -- one call of ``YuniKornModel.schedule`` -----------------------------------------------------

@njit(cache=True, _nrt=False)
def _unreserve(TI, NI, CAP, USED, T, size, RL, IS, x, i):
    """Ask ``x`` (``RL[i]``) lets its reserved node go."""
    n = TI[x, T_RESV]
    NI[n, N_RESV] = -1
    t_leaf(T, size, CAP, USED, NI, N_RESV, n)
    TI[x, T_RESV] = -1
    TI[x, T_RESAT] = -1
    IS[I_FREED] += 1
    for j in range(i + 1, IS[I_NRL]):
        RL[j - 1] = RL[j]
    IS[I_NRL] -= 1


# -- the run ------------------------------------------------------------------------------------

@njit(cache=True)
def _grown(a, need):
    """``a`` with room for at least ``need`` rows (doubled as often as that takes)."""
    if need <= a.shape[0]:
        return a
    m = a.shape[0]
    while m < need:
        m *= 2
    out = np.zeros((m,) + a.shape[1:], a.dtype)
    out[:a.shape[0]] = a
    return out


@njit(cache=True)
def run(TI, TF, REQ, QI, G, GT, PREFIX, ASKT, INCL, CAPT, NI, CAP, BYNAME, SREQ, RANK2W, NPLEV, TOFF, horizon,
        window):
    """The whole run, up to the last instant at or before ``horizon``; stopped where the
    no-progress watch (``window`` seconds, ``inf``: none) finds it cycling. Returns the log
    (``LOG``, ``LT``), the calls' instants and wake-ups (``CT``, ``WK``), the scalars and the
    watch's floats (``X[X_STOPPED]``: when it stopped). Rows of ``TI``/``TF``/``REQ`` are tasks;
    workload ``w``'s are ``TOFF[w]`` to ``TOFF[w + 1] - 1``."""
    T_, R = REQ.shape
    W = TOFF.shape[0] - 1
    Q = QI.shape[0]
    N = CAP.shape[0]
    S = SREQ.shape[0]
    IS = np.zeros(NIS, np.int64)
    X = np.array([0.0, np.nan, 0.0, np.nan])
    U = np.zeros((Q, R), np.int64)
    P = np.zeros((Q, R), np.int64)
    UR = np.zeros(R, np.int64)
    USED = np.zeros((N, R), np.int64)
    ncap = 0
    for n in range(N):
        ncap += NI[n, 4]
    NL = np.zeros(max(1, ncap), np.int64)
    LL = np.full((Q, T_ + 8), -1, np.int64)
    LC = np.zeros((Q, NPLEV), np.int64)
    size = 1
    while size < max(1, N):
        size *= 2
    T = np.full((R, 2 * size), -1, np.int64)
    for n in range(N):
        t_leaf(T, size, CAP, USED, NI, N_RESV, n)
    NW = (W + 63) // 64 + 1
    NS = (NW + 63) // 64 + 1
    PSB = np.zeros((S, NW), np.uint64)
    PSS = np.zeros((S, NS), np.uint64)
    PSN = np.zeros(S, np.int64)
    DSB = np.zeros((Q, NW), np.uint64)
    DSS = np.zeros((Q, NS), np.uint64)
    HT = np.zeros(2 * T_ + 16, np.float64)
    HI = np.zeros((2 * T_ + 16, 3), np.int64)
    hcap = 4 * T_ + 10 * Q + 64
    HK = np.zeros((2, hcap), np.int64)
    HX = np.zeros((2, hcap, 2), np.int64)
    HN = np.zeros(2, np.int64)
    WH = np.zeros(64, np.float64)
    LOG = np.zeros((4 * T_ + 1024, 5), np.int64)
    LT = np.zeros(4 * T_ + 1024, np.float64)
    CT = np.zeros(8 * W + 1024, np.float64)
    WK = np.zeros(8 * W + 1024, np.float64)
    RL = np.zeros(T_ + 1, np.int64)
    VL = np.zeros(2 * T_ + 2, np.int64)
    TOUCH = np.zeros(T_ + 1, np.int64)
    final = np.zeros(T_ + 1, np.int64)
    WC = np.zeros((W, NWC), np.int64)
    PL = np.zeros(T_ + 1, np.int64)
    most = 1
    for w in range(W):
        most = max(most, TOFF[w + 1] - TOFF[w])
    SNAP = np.zeros(most, np.int64)
    live = np.zeros(S, np.bool_)
    hdead = np.zeros(S, np.bool_)
    tstack = np.zeros(4 * size + 8, np.int64)
    ccap = 1
    for n in range(N):
        ccap = max(ccap, NI[n, 4])
    SCOPE, REFUSED, PTR = np.zeros(Q, np.bool_), np.zeros(Q, np.bool_), np.zeros(Q, np.int64)
    KEPT = np.zeros(N + 1, np.int64)
    Uw, avail, total = np.zeros((Q, R), np.int64), np.zeros(R, np.int64), np.zeros(R, np.int64)
    cand, head, tail = np.zeros(ccap + 1, np.int64), np.zeros(ccap + 1, np.int64), np.zeros(ccap + 1, np.int64)
    res, bestv = np.zeros(ccap + 1, np.int64), np.zeros(ccap + 1, np.int64)
    DSN = np.zeros(Q, np.int64)
    DEADAT = np.full(S, -1, np.int64)  # per shape: ``IS[I_FREED]`` when it last found no fit
    inf = np.inf
    while True:
        have_sub = IS[I_NSUB] < W
        now = inf
        if IS[I_FN] > 0:
            now = HT[0]
        if have_sub and TF[TOFF[IS[I_NSUB]], F_SUB] < now:
            now = TF[TOFF[IS[I_NSUB]], F_SUB]
        if IS[I_WN] > 0 and WH[0] < now:
            now = WH[0]
        if now == inf or now > horizon:
            break
        IS[I_PRE_NOW] = 0
        while IS[I_FN] > 0 and HT[0] == now:
            x, gen = HI[0, 1], HI[0, 2]
            IS[I_FN] = f_pop(HT, HI, IS[I_FN])
            if TI[x, T_STATE] != S_RUNNING or TI[x, T_GEN] != gen:
                continue  # a victim's finish: the instant stays
            _end(TI, REQ, QI, U, UR, NI, CAP, USED, NL, LL, LC, T, size, x)
            IS[I_FREED] += 1
            IS[I_NRUN] -= 1
            TI[x, T_STATE] = S_DONE
            _w_progress(IS, TI, X, TOUCH, now)
        while IS[I_NSUB] < W and TF[TOFF[IS[I_NSUB]], F_SUB] <= now:
            w = IS[I_NSUB]
            for x in range(TOFF[w], TOFF[w + 1]):
                if HN[0] + 2 * T_ + 10 * Q + 16 > hcap:
                    _compact(TI, HK, HX, HN, 0)
                _pend(TI, QI, PSB, PSS, PSN, WC, PL, TOFF, HK, HX, HN, x)
            _w_progress(IS, TI, X, TOUCH, now)
            IS[I_NSUB] = w + 1
        while IS[I_WN] > 0 and WH[0] == now:
            IS[I_WN] = w_pop(WH, IS[I_WN])
        for _ in range(MAX_ROUNDS):
            c = IS[I_CALLS]
            if c + 1 > CT.shape[0]:
                CT = _grown(CT, c + 1)
                WK = _grown(WK, c + 1)
            if IS[I_NLOG] + 2 * T_ + 16 > LOG.shape[0]:
                LOG = _grown(LOG, IS[I_NLOG] + 2 * T_ + 16)
                LT = _grown(LT, IS[I_NLOG] + 2 * T_ + 16)
            if IS[I_FN] + T_ + 1 > HT.shape[0]:
                HT = _grown(HT, IS[I_FN] + T_ + 1)
                HI = _grown(HI, IS[I_FN] + T_ + 1)
            for h in range(2):
                if HN[h] + 2 * T_ + 10 * Q + 16 > hcap:
                    _compact(TI, HK, HX, HN, h)
            # -- one ``schedule`` call, logged; its victims are left in ``VL[:IS[I_NVICT]]`` --
            IS[I_CALLS] += 1
            CT[IS[I_CALLS] - 1] = now
            seq0 = IS[I_SEQ]
            now_us = np.int64(np.rint(now * 1e6))
            running = IS[I_NRUN] > 0
            while IS[I_NRL] > 0 and now_us - TI[RL[0], T_RESAT] > TIMEOUT_US:  # ``_drop_stale``
                x = RL[0]
                _log(IS, LOG, LT, L_UNRESERVE, x, 0, 0, now)
                _unreserve(TI, NI, CAP, USED, T, size, RL, IS, x, 0)
                _in_ps(TI, WC, PSB, PSS, PSN, x)
            for h in range(2):
                while HN[h] > 0 and HK[h, 0] <= now_us:
                    x, gen = HX[h, 0, 0], HX[h, 0, 1]
                    d_pop(HK, HX, HN, h)
                    if _valid(TI, x, gen):
                        _in_due(TI, WC, DSB, DSS, DSN, x)
            for s in range(S):
                hdead[s] = PSN[s] > 0 and not _headroom(SREQ, ASKT, INCL, CAPT, UR, s)
                live[s] = False
                if PSN[s] > 0 and not hdead[s] and DEADAT[s] != IS[I_FREED]:  # nothing freed: still no fit
                    live[s] = t_first(T, size, N, SREQ, s, ASKT, tstack) >= 0
                    if not live[s]:
                        DEADAT[s] = IS[I_FREED]
            for q in range(Q):
                QI[q, Q_BUDGET] = BUDGET
            pos = 0
            while True:
                nxt = W
                for s in range(S):
                    if live[s]:
                        r = b_next(PSB, PSS, s, pos)
                        if r >= 0 and r < nxt:
                            nxt = r
                for q in range(Q):
                    if QI[q, Q_BUDGET] > 0 and DSN[q] > 0:
                        r = b_next(DSB, DSS, q, pos)
                        if r >= 0 and r < nxt:
                            nxt = r
                for i in range(IS[I_NRL]):
                    r = TI[RL[i], T_RANK]
                    if r >= pos and r < nxt:
                        nxt = r
                if nxt == W:
                    break
                pos = nxt + 1
                # ``try_allocate`` for ask ``x`` and what the model does with its result
                w = RANK2W[nxt]
                IS[I_VISITS] += 1
                npend = WC[w, W_NP]
                for j in range(npend):  # the model's ``list(state.pending[wl])``
                    SNAP[j] = PL[TOFF[w] + j]
                for jt in range(npend):
                    x = SNAP[jt]
                    s = TI[x, T_SHAPE]
                    q = TI[x, T_Q]
                    if TI[x, T_RESV] >= 0:
                        if not _headroom(SREQ, ASKT, INCL, CAPT, UR, s):
                            continue
                        n0 = TI[x, T_RESV]
                        node = n0
                        if not _free_fits(REQ, ASKT, CAP, USED, n0, x):
                            node = t_first(T, size, N, SREQ, s, ASKT, tstack)
                            for i in range(IS[I_NRL]):
                                m = TI[RL[i], T_RESV]
                                if (node < 0 or m < node) and _free_fits(REQ, ASKT, CAP, USED, m, x):
                                    node = m
                        if node < 0:
                            continue
                        for i in range(IS[I_NRL]):
                            if RL[i] == x:
                                _unreserve(TI, NI, CAP, USED, T, size, RL, IS, x, i)
                                break
                        _start(TI, TF, REQ, QI, U, UR, NI, CAP, USED, NL, LL, T, size, PSB, PSS, PSN, DSB, DSS, DSN, WC, PL,
                               TOFF, IS, X, TOUCH, HT, HI, LOG, LT, VL, x, node, False, now, now_us)
                        for r in range(S):  # a node came back: dead shapes may fit again
                            if not live[r] and not hdead[r] and PSN[r] > 0:
                                live[r] = t_first(T, size, N, SREQ, r, ASKT, tstack) >= 0
                        continue
                    room = _headroom(SREQ, ASKT, INCL, CAPT, UR, s)
                    if room:
                        if live[s]:
                            n = t_first(T, size, N, SREQ, s, ASKT, tstack)
                            if n >= 0:
                                _start(TI, TF, REQ, QI, U, UR, NI, CAP, USED, NL, LL, T, size, PSB, PSS, PSN, DSB, DSS,
                                       DSN, WC, PL, TOFF, IS, X, TOUCH, HT, HI, LOG, LT, VL, x, n, True, now, now_us)
                                continue
                            live[s] = False
                            DEADAT[s] = IS[I_FREED]
                    else:
                        live[s] = False
                        hdead[s] = True
                    if not TI[x, T_DUE] or QI[q, Q_BUDGET] <= 0:
                        continue
                    QI[q, Q_BUDGET] -= 1
                    IS[I_ATTEMPTS] += 1
                    _out_due(TI, WC, DSB, DSS, DSN, x)
                    TI[x, T_LAST] = now_us
                    TI[x, T_CHK] = 1
                    node, nf = -1, 0
                    if guarantees(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, INCL, CAPT, LC, SCOPE, x, q):
                        node, nf = try_preemption(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, NI, CAP, USED, NL, BYNAME, LL,
                                                  SCOPE, REFUSED, PTR, Uw, avail, total, cand, head, tail, res, bestv,
                                                  KEPT, seq0, x, q, final)
                    if node < 0:
                        TI[x, T_HGEN] += 1
                        d_push(HK, HX, HN, 1, now_us + FREQ_US, x, TI[x, T_HGEN])
                        continue
                    for j in range(nf):
                        v = final[j]
                        qv = TI[v, T_Q]
                        TI[v, T_VICT] = 1
                        for k in range(R):
                            P[qv, k] += REQ[v, k]
                        LC[qv, TI[v, T_PLEV]] -= 1
                        _log(IS, LOG, LT, L_PREEMPT, v, x, node, now)
                        VL[IS[I_NVICT]] = v
                        IS[I_NVICT] += 1
                        _w_preempted(IS, TI, TF, X, TOUCH, v, now)
                    TI[x, T_TRIG] = 1
                    NI[node, N_RESV] = x
                    TI[x, T_RESV] = node
                    TI[x, T_RESAT] = now_us
                    RL[IS[I_NRL]] = x
                    IS[I_NRL] += 1
                    t_leaf(T, size, CAP, USED, NI, N_RESV, node)
                    _out_ps(TI, WC, PSB, PSS, PSN, x)
            best = NOT_SET
            for h in range(2):
                if h == 1 and not running:
                    continue
                while HN[h] > 0 and not _valid(TI, HX[h, 0, 0], HX[h, 0, 1]):
                    d_pop(HK, HX, HN, h)
                if HN[h] > 0 and HK[h, 0] < best:
                    best = HK[h, 0]
            wake = np.nan
            if best != NOT_SET and best > now_us:
                wake = best / 1e6
                if not wake > now:
                    wake = np.nan
            WK[IS[I_CALLS] - 1] = wake
            for j in range(IS[I_NSL]):  # the call's starts are candidates from the next call on
                t = VL[VL.shape[0] - 1 - j]
                LC[TI[t, T_Q], TI[t, T_PLEV]] += 1
            IS[I_NSL] = 0
            nv = IS[I_NVICT]
            for j in range(nv):  # the engine: victims leave at once and ask again
                v = VL[j]
                _end(TI, REQ, QI, U, UR, NI, CAP, USED, NL, LL, LC, T, size, v)
                IS[I_FREED] += 1
                IS[I_NRUN] -= 1
                TI[v, T_VICT] = 0
                qv = TI[v, T_Q]
                for k in range(R):
                    P[qv, k] -= REQ[v, k]
                _pend(TI, QI, PSB, PSS, PSN, WC, PL, TOFF, HK, HX, HN, v)
            IS[I_NVICT] = 0
            if nv == 0:
                break
        wake = WK[IS[I_CALLS] - 1]
        if wake > now:
            queued = False
            for j in range(IS[I_WN]):
                if WH[j] == wake:
                    queued = True
                    break
            if not queued:
                WH = _grown(WH, IS[I_WN] + 1)
                IS[I_WN] = w_push(WH, IS[I_WN], wake)
        if IS[I_PRE_NOW] and window < inf:
            pending = IS[I_NSUB] < W or IS[I_WN] > 0
            if _w_stuck(IS, TI, TF, QI, LL, X, window, now, pending):
                X[X_STOPPED] = now
                IS[I_STOP] = 1
                break
    return LOG, LT, CT, WK, IS, X
