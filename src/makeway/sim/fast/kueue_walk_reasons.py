"""The pending-reason trails of the compiled Kueue walk (slice 2 of ``docs/plans/compiled-walks.md``):
``KueueReasons`` and the ``IndexedReasons`` rounds it runs, on arrays.

A queue's pending order is ``KueueReasons``' key made one int64: ``(flag * P + priority rank) * W
+ rank``, where the flag is 0 for a preemptor waiting for its victims (with
``prioritizePreemptorWorkloads``) and 1 otherwise, and the rank orders workloads by (submit, id).
Each queue keeps its pending keys sorted in its own stretch of one array. The sets of
``IndexedReasons`` (stale, pending again, waiting on victims) are flags with the list of their
members; the trails are a tape of (workload, time, code, detail) rows, the last row of a
workload rewritten where ``_set`` rewrites it (a second reason at the same instant).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.core.resources import EPS
from makeway.policies.kueue.fast.kernel import add, mode_of
from makeway.policies.kueue.fast.layout import FIT

# reason codes (``CODES`` below) and "no reason yet"
C_NOWHERE, C_QUOTA, C_PREEMPTING, C_GANG, C_PRIORITY, C_RESOURCES = range(6)
NONE = -1
HEAD = 32  # ``ReasonLog.HEAD``
PER_DOUBLING = 250  # ``ReasonLog.ROUNDS_PER_DOUBLING``
# RS: integer scalars
(R_FRESH, R_STALE, R_BACK, R_WON, R_TAPE, R_VE, R_HSTAMP, R_DSTAMP, R_USTALE, R_MSTAMP, R_SINCE, R_SEQ,
 R_HEADS, NRS) = range(14)
# RF: the round clock (next round, interval)
# Every function here is compiled without numba's reference counts: none allocates, and each
# unpacks arrays from the two tuples, which would count every one in and out at every call.
F_NEXT, F_INTERVAL, NRF = range(3)


def new_state(W: int, Q: int, npairs: int, N: int, R: int, T: int, room: int) -> tuple:
    """The reasons' arrays for ``W`` workloads in ``Q`` queues, ``npairs`` (ClusterQueue, request)
    pairs, ``N`` nodes of ``R`` resources and ``T`` quota tree nodes (``room``: rows for the tapes)."""
    RS = np.zeros(NRS, np.int64)
    RF = np.array([-np.inf, 1.0], np.float64)
    w = max(1, W)
    return (RS, RF,
            np.zeros(w, np.bool_), np.zeros(w, np.int64),  # pending, its order (dict order)
            np.full(w, NONE, np.int64), np.full(w, NONE, np.int64),  # current code, detail
            np.full(w, -1, np.int64),  # last trail row
            np.zeros(w, np.int64),  # key
            np.zeros(w, np.bool_),  # waiting for victims (``LogRun.waiting``)
            np.zeros(max(1, Q), np.int64), np.zeros(max(1, Q), np.int64),  # per queue: pending, counted at the round
            np.zeros(w, np.int64),  # the sorted keys, per queue
            np.zeros(room, np.int64),  # fresh
            np.zeros(w, np.bool_), np.zeros(w, np.int64),  # stale: flag, list
            np.zeros(w, np.bool_), np.zeros(w, np.int64),  # pending again since the round
            np.zeros(w, np.bool_), np.zeros(w, np.bool_), np.zeros(room, np.int64),  # waiting on victims: flag, listed, list
            np.full(w, -1, np.int64), np.zeros(room, np.int64), np.zeros(room, np.int64),  # victims: head, next, workload
            np.zeros(w, np.int64), np.zeros(w, np.int64), np.zeros(w, np.int64),  # head stamp, first-reason stamp, heads
            np.zeros(max(1, npairs), np.int64), np.full(max(1, npairs), -1, np.int64),  # modes and their stamps
            np.zeros(max(1, T), np.int64),  # the usage the modes read
            np.zeros((max(1, N), max(1, R)), np.float64),  # gang fit scratch
            np.zeros(room, np.int64), np.zeros(room, np.float64), np.zeros(room, np.int64), np.zeros(room, np.int64))


@njit(cache=True, _nrt=False)
def _find(PK, a, n, key):
    lo, hi = a, a + n
    while lo < hi:
        mid = (lo + hi) // 2
        if PK[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, _nrt=False)
def _insert(S, RIN, w):
    KEY, WAIT, QN, PK = S[7], S[8], S[9], S[11]
    WQ, PIDX, RANK, QOFF, prio_pre, NP = RIN[1], RIN[4], RIN[5], RIN[7], RIN[16], RIN[17]
    W = RANK.shape[0]
    flag = 0 if (prio_pre and WAIT[w]) else 1
    key = (flag * NP + PIDX[w]) * W + RANK[w]
    KEY[w] = key
    q = WQ[w]
    a = QOFF[q]
    n = QN[q]
    at = _find(PK, a, n, key)
    for j in range(a + n, at, -1):
        PK[j] = PK[j - 1]
    PK[at] = key
    QN[q] = n + 1


@njit(cache=True, _nrt=False)
def _remove(S, RIN, w):
    KEY, QN, PK = S[7], S[9], S[11]
    q = RIN[1][w]
    a = RIN[7][q]
    n = QN[q]
    at = _find(PK, a, n, KEY[w])
    for j in range(at, a + n - 1):
        PK[j] = PK[j + 1]
    QN[q] = n - 1


@njit(cache=True, _nrt=False)
def _flag(F, L, RS, at, w):
    if not F[w]:
        F[w] = True
        L[RS[at]] = w
        RS[at] += 1


@njit(cache=True, _nrt=False)
def _won_add(S, w):
    RS, WONF, WONIN, WONL = S[0], S[17], S[18], S[19]
    WONF[w] = True
    if not WONIN[w]:
        WONIN[w] = True
        WONL[RS[R_WON]] = w
        RS[R_WON] += 1


@njit(cache=True, _nrt=False)
def became_pending(S, RIN, w):
    RS, PEND, PSEQ, VH = S[0], S[2], S[3], S[20]
    PEND[w] = True
    PSEQ[w] = RS[R_SEQ]
    RS[R_SEQ] += 1
    _flag(S[15], S[16], RS, R_BACK, w)
    _insert(S, RIN, w)
    if VH[w] >= 0:
        _won_add(S, w)


@njit(cache=True, _nrt=False)
def submitted(S, RIN, w):
    RS, FRESH = S[0], S[12]
    FRESH[RS[R_FRESH]] = w
    RS[R_FRESH] += 1
    became_pending(S, RIN, w)


@njit(cache=True, _nrt=False)
def started(S, RIN, w):
    S[2][w] = False
    S[4][w] = NONE
    S[5][w] = NONE
    S[17][w] = False
    _remove(S, RIN, w)


@njit(cache=True, _nrt=False)
def rekey(S, RIN, w):
    if S[2][w]:
        _remove(S, RIN, w)
        _insert(S, RIN, w)


@njit(cache=True, _nrt=False)
def preempted_for(S, p, v):
    RS, FRESH, VH, VN, VV = S[0], S[12], S[20], S[21], S[22]
    e = RS[R_VE]
    VV[e] = v
    VN[e] = VH[p]
    VH[p] = e
    RS[R_VE] = e + 1
    _won_add(S, p)
    FRESH[RS[R_FRESH]] = p
    RS[R_FRESH] += 1


@njit(cache=True, _nrt=False)
def _preempting(S, w, running):
    """``KueueReasons._preempting``: whether a victim evicted for ``w`` runs again, forgetting
    the others (and ``w``'s wait on them once none does)."""
    VH, VN, VV = S[20], S[21], S[22]
    e = VH[w]
    if e < 0:
        return False
    keep = -1
    while e >= 0:
        nxt = VN[e]
        if running[VV[e]]:
            VN[e] = keep
            keep = e
        e = nxt
    VH[w] = keep
    if keep < 0:
        S[17][w] = False
        return False
    return True


@njit(cache=True, _nrt=False)
def _mode(S, RIN, w, cq_used):
    RS, MC, MS = S[0], S[26], S[27]
    pair = RIN[12][w]
    if RS[R_USTALE]:
        U, CQO = S[28], RIN[14]
        U[:] = 0
        for k in range(CQO.shape[0]):  # ``kernel.usage_of`` into the kept array
            add(RIN[13], U, CQO[k], cq_used[k] * RIN[15])
        RS[R_USTALE] = 0
        RS[R_MSTAMP] += 1
    if MS[pair] != RS[R_MSTAMP]:
        MC[pair] = mode_of(RIN[13], S[28], RIN[2][w], RIN[3][w], RIN[18])
        MS[pair] = RS[R_MSTAMP]
    return MC[pair]


@njit(cache=True, _nrt=False)
def _free_fit(S, RIN, w, first_only, REQ, used, cap):
    """``IndexedReasons._free_fit`` for workload ``w``'s pods, first fit in node order."""
    EX = S[29]
    R = REQ.shape[1]
    N = cap.shape[0]
    left = 1 if first_only else RIN[19][w]
    i = 0
    ok = True
    while left:
        while i < N:
            fits = True
            for r in range(R):
                v = REQ[w, r]
                if v > 0 and used[i, r] + EX[i, r] + v > cap[i, r] + EPS:
                    fits = False
                    break
            if fits:
                break
            i += 1
        if i >= N:
            ok = False
            break
        for r in range(R):
            EX[i, r] += REQ[w, r]
        left -= 1
    EX[:, :] = 0.0
    return ok


@njit(cache=True, _nrt=False)
def classify(S, RIN, w, position, ask_model, running, cq_used, REQ, used, cap):
    """``KueueReasons._classify``: (code, detail); the detail of ``C_QUOTA`` is the ClusterQueue."""
    if RIN[0][w]:
        return C_NOWHERE, NONE
    if ask_model and _mode(S, RIN, w, cq_used) != FIT:
        return C_QUOTA, RIN[2][w]
    if _preempting(S, w, running):
        return C_PREEMPTING, NONE
    if ask_model and RIN[19][w] > 1 and not _free_fit(S, RIN, w, False, REQ, used, cap) and \
            _free_fit(S, RIN, w, True, REQ, used, cap):
        return C_GANG, NONE
    if position > 1:
        return C_PRIORITY, NONE
    return C_RESOURCES, NONE


@njit(cache=True, _nrt=False)
def _set(S, w, now, code, det):
    RS, CUR, CDET, LAST = S[0], S[4], S[5], S[6]
    TW, TT, TC, TD = S[30], S[31], S[32], S[33]
    if CUR[w] == code and CDET[w] == det:
        return
    CUR[w] = code
    CDET[w] = det
    last = LAST[w]
    if last >= 0 and TT[last] == now:
        TC[last] = code
        TD[last] = det
        return
    n = RS[R_TAPE]
    TW[n] = w
    TT[n] = now
    TC[n] = code
    TD[n] = det
    LAST[w] = n
    RS[R_TAPE] = n + 1


@njit(cache=True, _nrt=False)
def _round(S, RIN, now, running, cq_used, REQ, used, cap):
    """``IndexedReasons._heads_round`` with ``KueueReasons``' waiting preemptors as ``also``."""
    RS, PEND, QN, QCNT, PK = S[0], S[2], S[9], S[10], S[11]
    STF, STL, BKF, BKL, WONF, WONIN, WONL = S[13], S[14], S[15], S[16], S[17], S[18], S[19]
    HS, HL = S[23], S[25]
    RANKW, QOFF, QORDER = RIN[6], RIN[7], RIN[8]
    W = RANKW.shape[0]
    for k in range(RS[R_BACK]):
        w = BKL[k]
        BKF[w] = False
        if PEND[w]:
            _flag(STF, STL, RS, R_STALE, w)
    RS[R_BACK] = 0
    m = 0
    for k in range(RS[R_WON]):
        w = WONL[k]
        if WONF[w]:
            WONL[m] = w
            m += 1
            _flag(STF, STL, RS, R_STALE, w)
        else:
            WONIN[w] = False
    RS[R_WON] = m
    RS[R_HSTAMP] += 1
    stamp = RS[R_HSTAMP]
    nh = 0
    QCNT[:] = 0
    for x in range(QORDER.shape[0]):
        q = QORDER[x]
        n = QN[q]
        if n == 0:
            continue
        QCNT[q] = n
        for i in range(min(HEAD, n)):
            w = RANKW[PK[QOFF[q] + i] % W]
            HS[w] = stamp
            HL[nh] = w
            nh += 1
            code, det = classify(S, RIN, w, i + 1, True, running, cq_used, REQ, used, cap)
            _set(S, w, now, code, det)
    for k in range(RS[R_STALE]):
        w = STL[k]
        if PEND[w] and HS[w] != stamp:
            code, det = classify(S, RIN, w, HEAD + 1, False, running, cq_used, REQ, used, cap)
            _set(S, w, now, code, det)
    for k in range(RS[R_STALE]):
        STF[STL[k]] = False
    RS[R_STALE] = 0
    for k in range(nh):
        _flag(STF, STL, RS, R_STALE, HL[k])


@njit(cache=True, _nrt=False)
def _first_reasons(S, RIN, now, running, cq_used, REQ, used, cap):
    RS, PEND, CUR, QCNT, FRESH, DS = S[0], S[2], S[4], S[10], S[12], S[24]
    RS[R_DSTAMP] += 1
    stamp = RS[R_DSTAMP]
    for k in range(RS[R_FRESH]):
        w = FRESH[k]
        if not PEND[w] or DS[w] == stamp:
            continue
        DS[w] = stamp
        q = RIN[1][w]
        if CUR[w] != NONE:
            position = 2 if QCNT[q] > 1 else 1
        else:
            position = QCNT[q] + 1
            QCNT[q] = position
        code, det = classify(S, RIN, w, position, True, running, cq_used, REQ, used, cap)
        _set(S, w, now, code, det)


@njit(cache=True, _nrt=False)
def observe(S, RIN, now, running, cq_used, REQ, used, cap):
    """``IndexedReasons.observe`` after an instant where something changed or was decided."""
    RS, RF, FRESH, STF, STL = S[0], S[1], S[12], S[13], S[14]
    for k in range(RS[R_FRESH]):
        _flag(STF, STL, RS, R_STALE, FRESH[k])
    if now >= RF[F_NEXT]:
        _round(S, RIN, now, running, cq_used, REQ, used, cap)
        RS[R_SINCE] += 1
        if RS[R_SINCE] >= PER_DOUBLING:
            RF[F_INTERVAL] *= 2
            RS[R_SINCE] = 0
        RF[F_NEXT] = now + RF[F_INTERVAL]
    elif RS[R_FRESH]:
        _first_reasons(S, RIN, now, running, cq_used, REQ, used, cap)
    RS[R_FRESH] = 0


@njit(cache=True, _nrt=False)
def use(S, RIN, cq_used, w, pods):
    """``LogRun._use``: ``pods`` pods of ``w`` start (negative: leave); its ClusterQueues' usage moves."""
    a = RIN[11][w] * pods
    q = RIN[1][w]
    for j in range(RIN[9][q], RIN[9][q + 1]):
        cq_used[RIN[10][j]] += a
    S[0][R_USTALE] = 1
