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
 R_FULL, NRS) = range(14)
# the state's integer arrays (``SI``): scalars, pending order (dict order), current reason and
# detail, last trail row, key, per queue pending and counted at the round, sorted keys per queue,
# fresh, stale, pending again, waiting on victims, victims (head, next, workload), round stamps,
# first-reason stamps, heads, flavor modes and their stamps, the usage they read, the trail tape
(I_RS, I_PSEQ, I_CUR, I_CDET, I_LAST, I_KEY, I_QN, I_QCNT, I_PK, I_FRESH, I_STL, I_BKL, I_WONL, I_VH, I_VN, I_VV, I_HS,
 I_DS, I_HL, I_MC, I_MS, I_U, I_TW, I_TC, I_TD, NSI) = range(26)
# its flags (``SB``): pending, waiting for victims, stale, pending again, waiting on victims (set,
# listed)
B_PEND, B_WAIT, B_STF, B_BKF, B_WONF, B_WONIN, NSB = range(7)
# its floats (``SF``): the round clock (next round, interval), the trail tape's times
F_RF, F_TT = range(2)
# what the trails read of the run (``RIN[0]``, integer arrays; ``RIN[1]``: fits nowhere; ``RIN[2]``:
# the quota tree): queue, ClusterQueue, request, priority rank, rank, workload by rank, per queue its
# stretch of sorted keys, queues by name, per queue its ClusterQueue columns, pod amount, mode pair,
# the ClusterQueues in order, path scratch, pods, and (usage scale, prioritize preemptors, priorities)
(J_WQ, J_WCQ, J_WQV, J_PIDX, J_RANK, J_RANKW, J_QOFF, J_QORDER, J_QCOL_OFF, J_QCOL, J_WAMT, J_MP, J_CQO, J_PATH,
 J_NTASK, J_CONST, NJ) = range(17)
# Every function here is compiled without numba's reference counts: none allocates, and each
# unpacks arrays from the two tuples, which would count every one in and out at every call.
F_NEXT, F_INTERVAL, NRF = range(3)


def new_state(W: int, Q: int, npairs: int, N: int, R: int, T: int, room: int, trail_rows: int | None = None) -> tuple:
    """The reasons' arrays for ``W`` workloads in ``Q`` queues, ``npairs`` (ClusterQueue, request)
    pairs, ``N`` nodes of ``R`` resources and ``T`` quota tree nodes (``room``: rows for the
    lists and, unless ``trail_rows`` says otherwise, the trail tape): ``(SI, SB, SF, EX)``, each of
    the first three a tuple of arrays of one type."""
    w, q = max(1, W), max(1, Q)
    tr = room if trail_rows is None else trail_rows
    ints = {I_RS: np.zeros(NRS, np.int64), I_CUR: np.full(w, NONE, np.int64), I_CDET: np.full(w, NONE, np.int64),
            I_LAST: np.full(w, -1, np.int64), I_QN: np.zeros(q, np.int64), I_QCNT: np.zeros(q, np.int64),
            I_FRESH: np.zeros(room, np.int64), I_WONL: np.zeros(room, np.int64), I_VH: np.full(w, -1, np.int64),
            I_VN: np.zeros(room, np.int64), I_VV: np.zeros(room, np.int64), I_MC: np.zeros(max(1, npairs), np.int64),
            I_MS: np.full(max(1, npairs), -1, np.int64), I_U: np.zeros(max(1, T), np.int64),
            I_TW: np.zeros(tr, np.int64), I_TC: np.zeros(tr, np.int64), I_TD: np.zeros(tr, np.int64)}
    SI = tuple(ints.get(k, np.zeros(w, np.int64)) for k in range(NSI))
    SB = tuple(np.zeros(w, np.bool_) for _ in range(NSB))
    SF = (np.array([-np.inf, 1.0], np.float64), np.zeros(tr, np.float64))
    return SI, SB, SF, np.zeros((max(1, N), max(1, R)), np.float64)


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
    KEY, WAIT, QN, PK = S[0][I_KEY], S[1][B_WAIT], S[0][I_QN], S[0][I_PK]
    WQ, PIDX, RANK, QOFF, prio_pre, NP = RIN[0][J_WQ], RIN[0][J_PIDX], RIN[0][J_RANK], RIN[0][J_QOFF], RIN[0][J_CONST][1], RIN[0][J_CONST][2]
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
    KEY, QN, PK = S[0][I_KEY], S[0][I_QN], S[0][I_PK]
    q = RIN[0][J_WQ][w]
    a = RIN[0][J_QOFF][q]
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
    RS, WONF, WONIN, WONL = S[0][I_RS], S[1][B_WONF], S[1][B_WONIN], S[0][I_WONL]
    WONF[w] = True
    if not WONIN[w]:
        WONIN[w] = True
        WONL[RS[R_WON]] = w
        RS[R_WON] += 1


@njit(cache=True, _nrt=False)
def became_pending(S, RIN, w):
    RS, PEND, PSEQ, VH = S[0][I_RS], S[1][B_PEND], S[0][I_PSEQ], S[0][I_VH]
    PEND[w] = True
    PSEQ[w] = RS[R_SEQ]
    RS[R_SEQ] += 1
    _flag(S[1][B_BKF], S[0][I_BKL], RS, R_BACK, w)
    _insert(S, RIN, w)
    if VH[w] >= 0:
        _won_add(S, w)


@njit(cache=True, _nrt=False)
def submitted(S, RIN, w):
    RS, FRESH = S[0][I_RS], S[0][I_FRESH]
    FRESH[RS[R_FRESH]] = w
    RS[R_FRESH] += 1
    became_pending(S, RIN, w)


@njit(cache=True, _nrt=False)
def no_longer_pending(S, w):
    """``w`` started: no reason, no wait on victims (``ReasonLog.started``)."""
    S[1][B_PEND][w] = False
    S[0][I_CUR][w] = NONE
    S[0][I_CDET][w] = NONE
    S[1][B_WONF][w] = False


@njit(cache=True, _nrt=False)
def started(S, RIN, w):
    no_longer_pending(S, w)
    _remove(S, RIN, w)


@njit(cache=True, _nrt=False)
def rekey(S, RIN, w):
    if S[1][B_PEND][w]:
        _remove(S, RIN, w)
        _insert(S, RIN, w)


@njit(cache=True, _nrt=False)
def preempted_for(S, p, v):
    RS, FRESH, VH, VN, VV = S[0][I_RS], S[0][I_FRESH], S[0][I_VH], S[0][I_VN], S[0][I_VV]
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
    VH, VN, VV = S[0][I_VH], S[0][I_VN], S[0][I_VV]
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
        S[1][B_WONF][w] = False
        return False
    return True


@njit(cache=True, _nrt=False)
def _mode(S, RIN, w, cq_used):
    RS, MC, MS = S[0][I_RS], S[0][I_MC], S[0][I_MS]
    pair = RIN[0][J_MP][w]
    if RS[R_USTALE]:
        U, CQO = S[0][I_U], RIN[0][J_CQO]
        U[:] = 0
        for k in range(CQO.shape[0]):  # ``kernel.usage_of`` into the kept array
            add(RIN[2], U, CQO[k], cq_used[k] * RIN[0][J_CONST][0])
        RS[R_USTALE] = 0
        RS[R_MSTAMP] += 1
    if MS[pair] != RS[R_MSTAMP]:
        MC[pair] = mode_of(RIN[2], S[0][I_U], RIN[0][J_WCQ][w], RIN[0][J_WQV][w], RIN[0][J_PATH])
        MS[pair] = RS[R_MSTAMP]
    return MC[pair]


@njit(cache=True, _nrt=False)
def _free_fit(S, RIN, w, first_only, REQ, used, cap):
    """``IndexedReasons._free_fit`` for workload ``w``'s pods, first fit in node order."""
    EX = S[3]
    R = REQ.shape[1]
    N = cap.shape[0]
    left = 1 if first_only else RIN[0][J_NTASK][w]
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
    if RIN[1][w]:
        return C_NOWHERE, NONE
    if ask_model and _mode(S, RIN, w, cq_used) != FIT:
        return C_QUOTA, RIN[0][J_WCQ][w]
    if _preempting(S, w, running):
        return C_PREEMPTING, NONE
    if ask_model and RIN[0][J_NTASK][w] > 1 and not _free_fit(S, RIN, w, False, REQ, used, cap) and \
            _free_fit(S, RIN, w, True, REQ, used, cap):
        return C_GANG, NONE
    if position > 1:
        return C_PRIORITY, NONE
    return C_RESOURCES, NONE


@njit(cache=True, _nrt=False)
def set_reason(S, w, now, code, det):
    """``IndexedReasons._set``: a trail row where the reason changed, the last one rewritten at
    the same instant. Where the tape has no room left, ``R_FULL`` is set and nothing written
    (the walk's caller then records the run in Python)."""
    RS, CUR, CDET, LAST = S[0][I_RS], S[0][I_CUR], S[0][I_CDET], S[0][I_LAST]
    TW, TT, TC, TD = S[0][I_TW], S[2][F_TT], S[0][I_TC], S[0][I_TD]
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
    if n >= TW.shape[0]:
        RS[R_FULL] = 1
        return
    TW[n] = w
    TT[n] = now
    TC[n] = code
    TD[n] = det
    LAST[w] = n
    RS[R_TAPE] = n + 1


@njit(cache=True, _nrt=False)
def stale_moved(S):
    """A round's first step: the pending again since the last round and the waiting on victims
    join the stale set (the waiting-on list dropping those no longer waiting)."""
    RS, PEND, STF, STL = S[0][I_RS], S[1][B_PEND], S[1][B_STF], S[0][I_STL]
    BKF, BKL, WONF, WONIN, WONL = S[1][B_BKF], S[0][I_BKL], S[1][B_WONF], S[1][B_WONIN], S[0][I_WONL]
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


@njit(cache=True, _nrt=False)
def _round(S, RIN, now, running, cq_used, REQ, used, cap):
    """``IndexedReasons._heads_round`` with ``KueueReasons``' waiting preemptors as ``also``."""
    RS, PEND, QN, QCNT, PK = S[0][I_RS], S[1][B_PEND], S[0][I_QN], S[0][I_QCNT], S[0][I_PK]
    STF, STL = S[1][B_STF], S[0][I_STL]
    HS, HL = S[0][I_HS], S[0][I_HL]
    RANKW, QOFF, QORDER = RIN[0][J_RANKW], RIN[0][J_QOFF], RIN[0][J_QORDER]
    W = RANKW.shape[0]
    stale_moved(S)
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
            set_reason(S, w, now, code, det)
    for k in range(RS[R_STALE]):
        w = STL[k]
        if PEND[w] and HS[w] != stamp:
            code, det = classify(S, RIN, w, HEAD + 1, False, running, cq_used, REQ, used, cap)
            set_reason(S, w, now, code, det)
    for k in range(RS[R_STALE]):
        STF[STL[k]] = False
    RS[R_STALE] = 0
    for k in range(nh):
        _flag(STF, STL, RS, R_STALE, HL[k])


@njit(cache=True, _nrt=False)
def first_position(S, w, q, stamp):
    """``IndexedReasons._first_reasons``' position of fresh workload ``w`` in its queue ``q`` (as
    last counted), or 0 where it gets none: not pending, or already given one at this instant."""
    if not S[1][B_PEND][w] or S[0][I_DS][w] == stamp:
        return 0
    S[0][I_DS][w] = stamp
    QCNT = S[0][I_QCNT]
    if S[0][I_CUR][w] != NONE:
        return 2 if QCNT[q] > 1 else 1
    QCNT[q] += 1
    return QCNT[q]


@njit(cache=True, _nrt=False)
def tick(S, now):
    """``RoundClock.tick``: a round ran at ``now``."""
    RS, RF = S[0][I_RS], S[2][F_RF]
    RS[R_SINCE] += 1
    if RS[R_SINCE] >= PER_DOUBLING:
        RF[F_INTERVAL] *= 2
        RS[R_SINCE] = 0
    RF[F_NEXT] = now + RF[F_INTERVAL]


@njit(cache=True, _nrt=False)
def _first_reasons(S, RIN, now, running, cq_used, REQ, used, cap):
    RS, FRESH = S[0][I_RS], S[0][I_FRESH]
    RS[R_DSTAMP] += 1
    for k in range(RS[R_FRESH]):
        w = FRESH[k]
        position = first_position(S, w, RIN[0][J_WQ][w], RS[R_DSTAMP])
        if position:
            code, det = classify(S, RIN, w, position, True, running, cq_used, REQ, used, cap)
            set_reason(S, w, now, code, det)


@njit(cache=True, _nrt=False)
def observe(S, RIN, now, running, cq_used, REQ, used, cap):
    """``IndexedReasons.observe`` after an instant where something changed or was decided."""
    RS, RF, FRESH, STF, STL = S[0][I_RS], S[2][F_RF], S[0][I_FRESH], S[1][B_STF], S[0][I_STL]
    for k in range(RS[R_FRESH]):
        _flag(STF, STL, RS, R_STALE, FRESH[k])
    if now >= RF[F_NEXT]:
        _round(S, RIN, now, running, cq_used, REQ, used, cap)
        tick(S, now)
    elif RS[R_FRESH]:
        _first_reasons(S, RIN, now, running, cq_used, REQ, used, cap)
    RS[R_FRESH] = 0


@njit(cache=True, _nrt=False)
def use(S, RIN, cq_used, w, pods):
    """``LogRun._use``: ``pods`` pods of ``w`` start (negative: leave); its ClusterQueues' usage moves."""
    a = RIN[0][J_WAMT][w] * pods
    q = RIN[0][J_WQ][w]
    for j in range(RIN[0][J_QCOL_OFF][q], RIN[0][J_QCOL_OFF][q + 1]):
        cq_used[RIN[0][J_QCOL][j]] += a
    S[0][I_RS][R_USTALE] = 1
