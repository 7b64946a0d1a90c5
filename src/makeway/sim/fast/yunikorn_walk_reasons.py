"""The pending-reason trails of the compiled YuniKorn walk: ``YuniKornReasons`` on arrays (slice 4
of ``docs/plans/compiled-walks.md``).

The state is the Kueue walk's (``kueue_walk_reasons.new_state``: pending flags and order, current
reason, the trail tape, the stale, pending-again and waiting-on-victims sets as flags with their
lists, the victims as linked entries), with what YuniKorn adds: the workloads whose reservation
moved since the last round (``Y``). A queue's pending order is the default one, each workload's
``rank``, kept sorted per queue in its stretch of ``I_PK``. A round asks again only the flagged
workloads, each at its place in its queue now, as ``YuniKornReasons._round`` does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.sim.fast.kueue_walk_reasons import (
    B_BKF, B_PEND, B_STF, C_NOWHERE, C_PREEMPTING, C_PRIORITY, C_RESOURCES, F_NEXT, F_RF, I_BKL,
    I_FRESH, I_PK, I_PSEQ, I_QCNT, I_QN, I_RS, I_STL, I_VH, NONE, R_BACK, R_DSTAMP, R_FRESH, R_SEQ, R_STALE,
    _find, _flag, _preempting, _won_add, first_position, no_longer_pending, set_reason, stale_moved, tick,
)

# what the trails read of the run (``RIN[0]``, integer arrays; ``RIN[1]``: fits nowhere): each
# workload's queue, rank in the default order, the workload of each rank, each queue's stretch
# of ``I_PK``, and (``HEAD``,)
J_WQ, J_RANK, J_BYRANK, J_QOFF, J_CONST = range(5)
# ``Y``: touched flags, their list, and how many are listed
Y_TF, Y_TL, Y_N = range(3)


def new_touched(W: int) -> tuple:
    w = max(1, W)
    return np.zeros(w, np.int64), np.zeros(w, np.int64), np.zeros(1, np.int64)


@njit(cache=True, _nrt=False)
def _stale(S, w):
    _flag(S[1][B_STF], S[0][I_STL], S[0][I_RS], R_STALE, w)


@njit(cache=True, _nrt=False)
def _insert(S, RIN, w):
    """``YuniKornReasons._insert``: who enters the first ``HEAD``, leaves them or loses the
    first place is looked at in the next round."""
    PK, QN = S[0][I_PK], S[0][I_QN]
    BYRANK, head = RIN[0][J_BYRANK], RIN[0][J_CONST][0]
    q = RIN[0][J_WQ][w]
    a = RIN[0][J_QOFF][q]
    n = QN[q]
    key = RIN[0][J_RANK][w]
    at = _find(PK, a, n, key)
    for j in range(a + n, at, -1):
        PK[j] = PK[j - 1]
    PK[at] = key
    n += 1
    QN[q] = n
    i = at - a
    if i < head:
        _stale(S, w)
        if i == 0 and n > 1:
            _stale(S, BYRANK[PK[a + 1]])
        if n > head:
            _stale(S, BYRANK[PK[a + head]])


@njit(cache=True, _nrt=False)
def _started(S, RIN, w):
    """``YuniKornReasons.started``: ``w`` leaves its queue."""
    no_longer_pending(S, w)
    PK, QN = S[0][I_PK], S[0][I_QN]
    BYRANK, head = RIN[0][J_BYRANK], RIN[0][J_CONST][0]
    q = RIN[0][J_WQ][w]
    a = RIN[0][J_QOFF][q]
    n = QN[q]
    at = _find(PK, a, n, RIN[0][J_RANK][w])
    for j in range(at, a + n - 1):
        PK[j] = PK[j + 1]
    n -= 1
    QN[q] = n
    i = at - a
    if i < head:
        if n >= head:
            _stale(S, BYRANK[PK[a + head - 1]])
        if i == 0 and n:
            _stale(S, BYRANK[PK[a]])


@njit(cache=True, _nrt=False)
def task_started(S, RIN, w, none_left):
    if none_left:
        _started(S, RIN, w)
    else:
        _stale(S, w)


@njit(cache=True, _nrt=False)
def became_pending(S, RIN, w):
    """A task of ``w`` is pending (again): a workload still partly pending keeps its place."""
    RS = S[0][I_RS]
    _flag(S[1][B_BKF], S[0][I_BKL], RS, R_BACK, w)
    if S[1][B_PEND][w]:
        return
    S[1][B_PEND][w] = True
    S[0][I_PSEQ][w] = RS[R_SEQ]
    RS[R_SEQ] += 1
    _insert(S, RIN, w)
    if S[0][I_VH][w] >= 0:
        _won_add(S, w)


@njit(cache=True, _nrt=False)
def submitted(S, RIN, w):
    RS = S[0][I_RS]
    S[0][I_FRESH][RS[R_FRESH]] = w
    RS[R_FRESH] += 1
    became_pending(S, RIN, w)


@njit(cache=True, _nrt=False)
def reservation_moved(Y, w):
    TF, TL, N = Y[Y_TF], Y[Y_TL], Y[Y_N]
    if not TF[w]:
        TF[w] = 1
        TL[N[0]] = w
        N[0] += 1


@njit(cache=True, _nrt=False)
def _classify(S, RIN, w, position, ask_model, w_resv, running):
    """``YuniKornReasons._classify``: a reason code (no detail in this class)."""
    if RIN[1][w]:
        return C_NOWHERE
    if ask_model and w_resv[w]:
        return C_PREEMPTING
    if _preempting(S, w, running):
        return C_PREEMPTING
    if position > 1:
        return C_PRIORITY
    return C_RESOURCES


@njit(cache=True, _nrt=False)
def _round(S, Y, RIN, now, w_resv, running):
    """``YuniKornReasons._round``: the flagged workloads still pending, each at its place."""
    RS, PEND, QN, QCNT, PK = S[0][I_RS], S[1][B_PEND], S[0][I_QN], S[0][I_QCNT], S[0][I_PK]
    STF, STL = S[1][B_STF], S[0][I_STL]
    TF, TL, N = Y[Y_TF], Y[Y_TL], Y[Y_N]
    WQ, RANK, QOFF, head = RIN[0][J_WQ], RIN[0][J_RANK], RIN[0][J_QOFF], RIN[0][J_CONST][0]
    stale_moved(S)
    for k in range(N[0]):
        w = TL[k]
        TF[w] = 0
        _stale(S, w)
    N[0] = 0
    for k in range(RS[R_STALE]):
        w = STL[k]
        if PEND[w]:
            q = WQ[w]
            i = _find(PK, QOFF[q], QN[q], RANK[w]) - QOFF[q]
            if i < head:
                code = _classify(S, RIN, w, i + 1, True, w_resv, running)
            else:
                code = _classify(S, RIN, w, head + 1, False, w_resv, running)
            set_reason(S, w, now, code, NONE)
    for k in range(RS[R_STALE]):
        STF[STL[k]] = False
    RS[R_STALE] = 0
    for q in range(QN.shape[0]):
        QCNT[q] = QN[q]


@njit(cache=True, _nrt=False)
def _first_reasons(S, Y, RIN, now, w_resv, running):
    RS, FRESH = S[0][I_RS], S[0][I_FRESH]
    RS[R_DSTAMP] += 1
    for k in range(RS[R_FRESH]):
        w = FRESH[k]
        position = first_position(S, w, RIN[0][J_WQ][w], RS[R_DSTAMP])
        if position:
            set_reason(S, w, now, _classify(S, RIN, w, position, True, w_resv, running), NONE)


@njit(cache=True, _nrt=False)
def observe(S, Y, RIN, now, w_resv, running):
    """``IndexedReasons.observe`` after an instant where something changed or was decided, or a
    round is due."""
    RS, RF, FRESH = S[0][I_RS], S[2][F_RF], S[0][I_FRESH]
    for k in range(RS[R_FRESH]):
        _stale(S, FRESH[k])
    if now >= RF[F_NEXT]:
        _round(S, Y, RIN, now, w_resv, running)
        tick(S, now)
    elif RS[R_FRESH]:
        _first_reasons(S, Y, RIN, now, w_resv, running)
    RS[R_FRESH] = 0
