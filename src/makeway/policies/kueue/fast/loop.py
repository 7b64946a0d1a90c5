"""The compiled Kueue run: the engine's instants (ends, submissions, up to ``MAX_ROUNDS`` calls
while victims leave at once) and ``KueueModel.schedule``'s calls, on the arrays ``pack`` fills.

A call is the model's: parked workloads released where quota or room was freed, the unparked
entries of every ClusterQueue taken one head per queue per round, the heads of a round in classic
order, each admitted (pods first-fit on the flavor's nodes), or its targets evicted, or parked.
A head whose twin (same key) decided nothing since the last change it could read is parked as
its twin was, unevaluated (``twins``), and rounds made of such heads only are taken at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.kueue.fast.kernel import add, assign, search
from makeway.policies.kueue.fast.layout import (
    FIT, L_PREEMPT, L_START, L_UNWAIT, NODE, NOFIT, P_ANY, PENDING, QUOTA, RECLAIM, ROOT, RUNNING, DONE, HASBL, BL, NOM,
    W_CNT, W_CQ, W_EVER, W_GEN, W_KEY, W_PARK, W_PCNT, W_PRIO, W_QV, W_RANK, W_STATE, W_TOFF, W_TOUCH, W_VN,
    W_WAIT,
)
from makeway.policies.kueue.fast.queues import carry, fifo_order, list_ok, pq_insert, pq_remove, rebuild, runs

MAX_ROUNDS = 16  # ``Simulation.MAX_ROUNDS``

# IS: scalars
(I_NV, I_GV, I_CHANGED, I_FREED, I_NLOG, I_NLN, I_SEQ, I_HN, I_NSUB, I_CALLS, I_PRIO_PRE, I_NVA, I_NSL,
 I_NVICT, I_FULL, I_EVALS, I_SKIPPED, I_WPRE, I_NTOUCH, I_PRE_NOW, I_STOP, I_CHECK, I_BAD, NIS) = range(24)

# the watch's floats: since, cycling since (NaN: not cycling), the longest gap between two
# preemptions of one victim, the time the run was stopped at
X_SINCE, X_CYCLING, X_PERIOD, X_STOPPED = range(4)


@njit(cache=True)
def _set_waiting(WI, sub_t, IS, PQ, PQ_OFF, PQ_N, w, flag):
    if WI[w, W_WAIT] == flag:
        return
    pending = WI[w, W_STATE] == PENDING
    if pending:
        pq_remove(WI, sub_t, IS[I_PRIO_PRE], PQ, PQ_OFF, PQ_N, w)
    WI[w, W_WAIT] = flag
    if pending:
        pq_insert(WI, sub_t, IS[I_PRIO_PRE], PQ, PQ_OFF, PQ_N, w)


# -- the finish heap: an evicted workload's entry stays, as the engine's does (its instant is one
# at which the model is called), and is told apart by the workload's start count ------------------

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
def _h_push(IS, HW, HT, HS, HG, w, gen, t):
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
def _h_pop(IS, HW, HT, HS, HG):
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


# -- the state's side: starts, ends, evictions --------------------------------------------------

@njit(cache=True)
def _bump(TI, IS, RV, c):
    RV[TI[c, ROOT]] += 1
    IS[I_GV] += 1


@njit(cache=True, inline='always')
def _on_nodes(WI, REQ, used, TN, w, sign):
    """Add (``sign`` 1) or take away (-1) the node usage of running workload ``w``'s pods."""
    o = WI[w, W_TOFF]
    for k in range(WI[w, W_CNT]):
        i = TN[o + k]
        for r in range(REQ.shape[1]):
            used[i, r] += sign * REQ[w, r]


@njit(cache=True)
def _release(TI, IS, WI, REQ, used, TN, u, RQ, RQ_OFF, RQ_N, RPOS, RFREED, w):
    """A running workload leaves (ends or is evicted): its pods' node usage and its quota go."""
    c = WI[w, W_CQ]
    _on_nodes(WI, REQ, used, TN, w, -1)
    add(TI, u, c, -WI[w, W_QV])
    p = RPOS[w]
    last = RQ_OFF[c] + RQ_N[c] - 1
    moved = RQ[last]
    RQ[p] = moved
    RPOS[moved] = p
    RQ_N[c] -= 1
    RPOS[w] = -1
    RFREED[TI[c, ROOT]] = 1
    IS[I_FREED] = 1
    IS[I_CHANGED] = 1


# -- placement: first fit over the flavor's nodes ----------------------------------------------

@njit(cache=True)
def _place(WI, REQ, cap, used, FN, w, out):
    """Every pod of ``w`` on the first flavor node (in node order) where it fits; the number
    placed (``W_CNT``) or -1. The pods are alike, so a node takes as many as it has room for."""
    R = REQ.shape[1]
    n = WI[w, W_CNT]
    placed = 0
    for x in range(FN.shape[0]):
        i = FN[x]
        room = n - placed
        for r in range(R):
            v = REQ[w, r]
            if v > 0:
                k = (cap[i, r] - used[i, r]) // v
                if k < room:
                    room = k
        for _ in range(room):
            out[placed] = i
            placed += 1
        if placed == n:
            return n
    return -1


@njit(cache=True)
def _place_without(WI, REQ, cap, used, TN, FN, w, targets, nt, out):
    """``_place`` with the targets' pods gone from the nodes (``HeadAdmission._without``)."""
    for k in range(nt):
        _on_nodes(WI, REQ, used, TN, targets[k], -1)
    n = _place(WI, REQ, cap, used, FN, w, out)
    for k in range(nt):
        _on_nodes(WI, REQ, used, TN, targets[k], 1)
    return n


# -- twins ------------------------------------------------------------------------------------

@njit(cache=True, inline='always')
def _outcome(wait, at_v, how, stamp, kind, rv, nv, gv, local):
    """The parked kind of a workload whose twin decided nothing under the current stamps, else
    -1: from its waiting mark, its key's outcome (``MO``: root version, stamp kind, stamp, parked
    kind) and the current root, node and global versions. ``local``: an outcome stamped with the
    global version counts as not known. Scalars only: an inlined helper given arrays counts
    their references in and out at every use, which in the twin walks was most of a run."""
    if wait or kind < 0 or at_v != rv:
        return -1
    if how == 1 and stamp != nv:
        return -1
    if how == 2 and (local or stamp != gv):
        return -1
    return kind


@njit(cache=True, inline='always')
def _known(TI, IS, WI, RV, MO, w):
    """``_outcome`` of workload ``w`` as a head, with the global stamps."""
    k = WI[w, W_KEY]
    return _outcome(WI[w, W_WAIT], MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], RV[TI[WI[w, W_CQ], ROOT]],
                    IS[I_NV], IS[I_GV], False)


# -- the no-progress watch (``sim.progress.NoProgressWatch``), per workload: a victim's pods are
# preempted together, so each of them has the workload's count, last time and gap -----------------

@njit(cache=True)
def _w_touch(IS, WI, TOUCH, w):
    if not WI[w, W_TOUCH]:
        WI[w, W_TOUCH] = 1
        TOUCH[IS[I_NTOUCH]] = w
        IS[I_NTOUCH] += 1


@njit(cache=True)
def _w_progress(IS, WI, X, TOUCH, now):
    X[X_SINCE] = now
    X[X_CYCLING] = np.nan
    X[X_PERIOD] = 0.0
    IS[I_WPRE] = 0
    for k in range(IS[I_NTOUCH]):
        w = TOUCH[k]
        WI[w, W_VN] = 0
        WI[w, W_PCNT] = 0
        WI[w, W_TOUCH] = 0
    IS[I_NTOUCH] = 0


@njit(cache=True)
def _w_preempted(IS, WI, X, VF, TOUCH, w, by, now):
    """Every pod of victim ``w`` preempted for ``by`` (``NoProgressWatch.preempted``)."""
    n = WI[w, W_CNT]
    IS[I_WPRE] += n
    IS[I_PRE_NOW] = 1
    WI[w, W_EVER] = 1
    if WI[w, W_VN] == 0:
        WI[w, W_VN] = 1
        VF[w, 0] = now
        VF[w, 1] = 0.0
        _w_touch(IS, WI, TOUCH, w)
    else:
        gap = now - VF[w, 0]
        WI[w, W_VN] += 1
        VF[w, 0] = now
        if gap > VF[w, 1]:
            VF[w, 1] = gap
            if gap > X[X_PERIOD]:
                X[X_PERIOD] = gap
    WI[by, W_PCNT] += n
    _w_touch(IS, WI, TOUCH, by)


@njit(cache=True)
def _w_stuck(IS, WI, X, adm, CQO, RQ, RQ_OFF, RQ_N, window, now):
    """``NoProgressWatch.stuck`` at an instant where something was preempted."""
    if IS[I_NSUB] < WI.shape[0] or now - X[X_SINCE] < window / 2 or X[X_PERIOD] <= 0:
        X[X_CYCLING] = np.nan
        return False
    for x in range(CQO.shape[0]):
        c = CQO[x]
        for j in range(RQ_OFF[c], RQ_OFF[c] + RQ_N[c]):
            w = RQ[j]
            if WI[w, W_VN] == 0 or now - adm[w] > X[X_PERIOD]:
                X[X_CYCLING] = np.nan
                return False
    if X[X_CYCLING] != X[X_CYCLING]:
        X[X_CYCLING] = now
    return now - X[X_SINCE] >= window and now - X[X_CYCLING] >= window / 2


# -- one call of ``KueueModel.schedule`` --------------------------------------------------------

@njit(cache=True)
def _log(IS, LOG, LT, kind, w, a, b, c, d, now):
    """One entry of the decision log (``L_PREEMPT``: victim ``w``, preemptor ``a``, variant ``b``,
    allowBorrowing ``c``, lca ``d``; ``L_UNWAIT``: ``w`` alone), stamped with the call."""
    n = IS[I_NLOG]
    if n >= LOG.shape[0]:
        IS[I_FULL] = 1
        return
    LOG[n, 0] = kind
    LOG[n, 1] = w
    LOG[n, 2] = a
    LOG[n, 3] = b
    LOG[n, 4] = c
    LOG[n, 5] = d
    LOG[n, 6] = IS[I_CALLS]
    LT[n] = now
    IS[I_NLOG] = n + 1


@njit(cache=True)
def _start(TI, IS, WI, sub_t, dur, adm, REQ, used, TN, u, RV, PQ, PQ_OFF, PQ_N, SL, HW, HT, HS, HG,
           LOG, LT, LN, watch, w, out, now):
    c = WI[w, W_CQ]
    if not WI[w, W_EVER]:  # a first start is progress, a restart is not
        X, VF, TOUCH = watch
        _w_progress(IS, WI, X, TOUCH, now)
    pq_remove(WI, sub_t, IS[I_PRIO_PRE], PQ, PQ_OFF, PQ_N, w)
    WI[w, W_STATE] = RUNNING
    WI[w, W_WAIT] = 0
    n = WI[w, W_CNT]
    o = WI[w, W_TOFF]
    for j in range(n):  # element by element: a slice copy would allocate
        TN[o + j] = out[j]
    _on_nodes(WI, REQ, used, TN, w, 1)
    add(TI, u, c, WI[w, W_QV])
    adm[w] = now
    WI[w, W_GEN] += 1
    _h_push(IS, HW, HT, HS, HG, w, WI[w, W_GEN], now + dur[w])
    SL[IS[I_NSL]] = w
    IS[I_NSL] += 1
    IS[I_CHANGED] = 1
    _bump(TI, IS, RV, c)
    m = IS[I_NLOG]
    if m >= LOG.shape[0] or IS[I_NLN] + n > LN.shape[0]:
        IS[I_FULL] = 1
        return
    LOG[m, 0] = L_START
    LOG[m, 1] = w
    LOG[m, 2] = IS[I_NLN]
    LOG[m, 3] = n
    LOG[m, 6] = IS[I_CALLS]
    LT[m] = now
    for k in range(n):
        LN[IS[I_NLN] + k] = out[k]
    IS[I_NLN] += n
    IS[I_NLOG] = m + 1


@njit(cache=True, inline='always')
def _process(TI, kids, IS, WI, times, REQ, cap, used, TN, FN, u, RV, MO, queues, SL, VA, VICT, VL, heap, logs,
             targets, watch, SCT, SCW, path, w, now):
    """``HeadAdmission._process_head`` of a head not known as a twin (``TwinSkipping._process``
    around it: the outcome of a head that decided nothing is kept for its twins).

    Inlined into ``call``, with the arrays grouped in tuples: a call passing each array on its
    own counts every one's references in and out, and more than 30 arguments cannot be inlined."""
    KC_OFF, KC, KQ_OFF, KQ = kids
    sub_t, dur, adm = times
    PQ, PQ_OFF, PQ_N, RQ, RQ_OFF, RQ_N = queues
    HW, HT, HS, HG = heap
    LOG, LT, LN = logs
    out, tw, tvar, tallow, tlca = targets
    IS[I_EVALS] += 1
    c = WI[w, W_CQ]
    root = TI[c, ROOT]
    nlog, rv0, gv0, wait0 = IS[I_NLOG], RV[root], IS[I_GV], WI[w, W_WAIT]
    probed = False
    v = WI[w, W_QV]
    mode, borrow = assign(TI, u, c, v, path)
    if mode == NOFIT:
        WI[w, W_PARK] = QUOTA
    elif mode == FIT:
        probed = True
        if _place(WI, REQ, cap, used, FN, w, out) < 0:
            WI[w, W_PARK] = NODE
        else:
            _start(TI, IS, WI, sub_t, dur, adm, REQ, used, TN, u, RV, PQ, PQ_OFF, PQ_N, SL, HW, HT, HS, HG,
                   LOG, LT, LN, watch, w, out, now)
    else:
        nt = search(TI, KC_OFF, KC, KQ_OFF, KQ, u, c, v, WI[w, W_PRIO], sub_t[w], WI, sub_t, adm, RQ_OFF, RQ,
                    RQ_N, tw, tvar, tallow, tlca, SCT, SCW)
        if nt == 0:
            if WI[w, W_WAIT]:
                _log(IS, LOG, LT, L_UNWAIT, w, 0, 0, 0, 0, now)
            _set_waiting(WI, sub_t, IS, PQ, PQ_OFF, PQ_N, w, 0)
            WI[w, W_PARK] = QUOTA
            if TI[c, RECLAIM] != P_ANY:  # quota held back for it (``HeadAdmission._reserve``)
                used_q = u[c]
                if borrow > 0:
                    r = v if not TI[c, HASBL] else max(0, min(v, TI[c, NOM] + TI[c, BL] - used_q))
                else:
                    r = max(0, min(v, TI[c, NOM] - used_q))
                if r > 0:
                    add(TI, u, c, r)
                    n = IS[I_NVA]
                    VA[n, 0] = c
                    VA[n, 1] = r
                    IS[I_NVA] = n + 1
                    _bump(TI, IS, RV, c)
        else:
            overlap = False
            for k in range(nt):
                if VICT[tw[k]]:
                    overlap = True
                    break
            if not overlap:
                probed = True
                if _place_without(WI, REQ, cap, used, TN, FN, w, tw, nt, out) < 0:
                    WI[w, W_PARK] = NODE
                else:
                    _set_waiting(WI, sub_t, IS, PQ, PQ_OFF, PQ_N, w, 1)
                    # the victims in name order, each marked and logged
                    for a in range(1, nt):
                        x, xv, xa, xl = tw[a], tvar[a], tallow[a], tlca[a]
                        b = a - 1
                        while b >= 0 and WI[tw[b], W_RANK] > WI[x, W_RANK]:
                            tw[b + 1], tvar[b + 1], tallow[b + 1], tlca[b + 1] = tw[b], tvar[b], tallow[b], tlca[b]
                            b -= 1
                        tw[b + 1], tvar[b + 1], tallow[b + 1], tlca[b + 1] = x, xv, xa, xl
                    for k in range(nt):
                        x = tw[k]
                        VICT[x] = 1
                        VL[IS[I_NVICT]] = x
                        IS[I_NVICT] += 1
                        _log(IS, LOG, LT, L_PREEMPT, x, w, tvar[k], tallow[k], tlca[k], now)
                        _w_preempted(IS, WI, watch[0], watch[1], watch[2], x, w, now)
                    add(TI, u, c, v)
                    n = IS[I_NVA]
                    VA[n, 0] = c
                    VA[n, 1] = v
                    IS[I_NVA] = n + 1
                    _bump(TI, IS, RV, c)
    if not wait0 and nlog == IS[I_NLOG] and rv0 == RV[root] and gv0 == IS[I_GV]:
        k = WI[w, W_KEY]
        MO[k, 0] = rv0
        if not probed:
            MO[k, 1] = 0
        elif WI[w, W_CNT] == 1:
            MO[k, 1] = 1
            MO[k, 2] = IS[I_NV]
        else:
            MO[k, 1] = 2
            MO[k, 2] = gv0
        MO[k, 3] = WI[w, W_PARK]


@njit(cache=True, inline='always')
def _skip_known(TI, IS, WI, RV, MO, CQO, PL, RE, PL_OFF, PL_N, AT, SC, root, local):
    """``TwinSkipping._skip_known`` (``root`` -1: every queue) and ``_skip_known_trees`` (the
    queues of tree ``root``, with ``local`` stamps): where every head is a known twin, the rounds
    up to the first head that must be evaluated are taken at once (they change nothing but
    parking). The rounds taken; -1 for all of them, -2 for none. The scan reads one entry per
    twin run (``queues.runs``): the outcome of its first is every one's."""
    nv, gv = IS[I_NV], IS[I_GV]
    live = False
    for x in range(CQO.shape[0]):
        c = CQO[x]
        if root >= 0 and TI[c, ROOT] != root or AT[c] >= PL_N[c]:
            continue
        w = PL[PL_OFF[c] + AT[c]]
        k = WI[w, W_KEY]
        if _outcome(WI[w, W_WAIT], MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], RV[TI[c, ROOT]], nv, gv, local) < 0:
            return -2
        live = True
    if not live:
        return -2
    # The first head to evaluate, by queue: each queue is walked a window at a time, the window
    # doubled until one is found, so that a deep queue of twins is not walked to its end for a
    # step another queue bounds at a few rounds.
    step = np.int64(-1)
    for x in range(CQO.shape[0]):
        SC[CQO[x]] = AT[CQO[x]]
    window = 8
    while True:
        more = False
        for x in range(CQO.shape[0]):
            c = CQO[x]
            if root >= 0 and TI[c, ROOT] != root:
                continue
            n = PL_N[c]
            end = AT[c] + window if step < 0 else AT[c] + step
            if end > n:
                end = n
            j = SC[c]
            rv = RV[TI[c, ROOT]]
            lo = PL_OFF[c]
            while j < end:
                w = PL[lo + j]
                k = WI[w, W_KEY]
                kind = _outcome(WI[w, W_WAIT], MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], rv, nv, gv, local)
                if kind < 0:
                    break
                e = RE[lo + j] - lo
                if e > end:
                    e = end
                if kind > 0:  # parked as it is scanned; undone below past the rounds taken
                    for i in range(lo + j, lo + e):
                        WI[PL[i], W_PARK] = kind
                j = e
            SC[c] = j
            if j < end:
                step = j - AT[c]
            elif j < n and step < 0:
                more = True
        if step >= 0 or not more:
            break
        window *= 2
    for x in range(CQO.shape[0]):
        c = CQO[x]
        if root >= 0 and TI[c, ROOT] != root:
            continue
        n = PL_N[c]
        stop = n if step < 0 else min(n, AT[c] + step)
        for j in range(stop, SC[c]):  # scanned past the rounds taken: unparked, as in the list
            WI[PL[PL_OFF[c] + j], W_PARK] = 0
        IS[I_SKIPPED] += stop - AT[c]
        AT[c] = stop
    return step


@njit(cache=True, inline='always')
def _head_order(xa, xb, ha, hb, pa, pb, sa, sb, ra, rb):
    """Not waiting first, then the lower borrowing level, then ``fifo_order`` (scalars only:
    ``queues.pq_order``)."""
    if xa != xb:
        return xa
    if ha != hb:
        return ha < hb
    return fifo_order(pa, pb, sa, sb, ra, rb)


@njit(cache=True, _nrt=False)
def call(TI, KC_OFF, KC, KQ_OFF, KQ, IS, WI, sub_t, dur, adm, REQ, cap, used, TN, FN, u, RV, RFREED, MO, CQO,
         PQ, PQ_OFF, PQ_N, PL, PL_N, AT, RQ, RQ_OFF, RQ_N, RPOS, SL, VA, VICT, VL, HW, HT, HS, HG,
         LOG, LT, LN, X, VF, TOUCH, HD, HB, ROOTS, RESUME, SC, NQ, NQ_N, NODEP, PK, RE, out, tw, tvar, tallow, tlca, SCT,
         SCW, path, now, caches):
    """One ``KueueModel.schedule`` call and the engine applying its decisions; the number of
    victims evicted (the engine calls again at once while there are any).

    Compiled without numba's runtime (``_nrt=False``): a call allocates nothing, and with the
    runtime every helper inlined here counted the references of the arrays it takes in and out,
    an atomic add each (half the loop's time on the Kueue baseline, by ``perf``)."""
    IS[I_CALLS] += 1
    if IS[I_CHANGED]:
        IS[I_NV] += 1
        IS[I_GV] += 1
        IS[I_CHANGED] = 0
    prio_pre = IS[I_PRIO_PRE]
    freed = IS[I_FREED]
    for x in range(CQO.shape[0]):
        c = CQO[x]
        lo = PQ_OFF[c]
        rel = freed and RFREED[TI[c, ROOT]]
        if rel or (freed and NODEP[c]):
            n = rebuild(WI, PQ, PL, PK, RE, lo, PQ_N[c], rel)
            NODEP[c] = 0
        else:
            n = carry(WI, sub_t, prio_pre, PL, lo, PL_N[c], NQ, NQ_N[c])
            runs(WI, PL, PK, RE, lo, n)
        NQ_N[c] = 0
        PL_N[c] = n
        AT[c] = 0
        if IS[I_CHECK] and not list_ok(WI, PQ, PL, lo, PQ_N[c], n, freed):
            IS[I_BAD] += 1
    if freed:
        for x in range(CQO.shape[0]):
            RFREED[TI[CQO[x], ROOT]] = 0
        IS[I_FREED] = 0
    NR = ROOTS.shape[0]
    kids, times, queues = (KC_OFF, KC, KQ_OFF, KQ), (sub_t, dur, adm), (PQ, PQ_OFF, PQ_N, RQ, RQ_OFF, RQ_N)
    heap, logs, targets = (HW, HT, HS, HG), (LOG, LT, LN), (out, tw, tvar, tallow, tlca)
    watch = (X, VF, TOUCH)
    # per cohort tree sitting rounds out (``_skip_known_trees``): the round it takes heads again
    for x in range(NR):
        RESUME[ROOTS[x]] = 0
    rnd = 0
    while True:
        if caches:
            resting = False
            for x in range(NR):
                if RESUME[ROOTS[x]] > rnd:
                    resting = True
            if not resting:
                _skip_known(TI, IS, WI, RV, MO, CQO, PL, RE, PQ_OFF, PL_N, AT, SC, -1, False)
            if NR > 1:
                for x in range(NR):
                    r = ROOTS[x]
                    if RESUME[r] > rnd:
                        continue
                    step = _skip_known(TI, IS, WI, RV, MO, CQO, PL, RE, PQ_OFF, PL_N, AT, SC, r, True)
                    if step > 0:
                        RESUME[r] = rnd + step
        nh = 0
        held = -1
        for x in range(CQO.shape[0]):
            c = CQO[x]
            if AT[c] < PL_N[c]:
                back = RESUME[TI[c, ROOT]]
                if back > rnd:
                    held = back if held < 0 or back < held else held
                    continue
                w = PL[PQ_OFF[c] + AT[c]]
                AT[c] += 1
                HD[nh] = w
                HB[nh] = assign(TI, u, c, WI[w, W_QV], path)[1]
                nh += 1
        if nh == 0:
            if held < 0:
                break
            rnd = held  # every tree with heads left sits rounds out: the first to come back
            continue
        rnd += 1
        for a in range(1, nh):  # insertion sort: the round's heads in classic order
            w, b_ = HD[a], HB[a]
            b = a - 1
            while b >= 0:
                HB[nh] = b_  # scratch slot for the comparison
                wb = HD[b]
                if _head_order(prio_pre and WI[w, W_WAIT], prio_pre and WI[wb, W_WAIT], HB[nh], HB[b], WI[w, W_PRIO],
                               WI[wb, W_PRIO], sub_t[w], sub_t[wb], WI[w, W_RANK], WI[wb, W_RANK]):
                    HD[b + 1] = HD[b]
                    HB[b + 1] = HB[b]
                    b -= 1
                else:
                    break
            HD[b + 1] = w
            HB[b + 1] = b_
        for a in range(nh):
            w = HD[a]
            kind = _known(TI, IS, WI, RV, MO, w)
            if kind >= 0:  # parked as its twin was, unevaluated
                if kind:
                    WI[w, W_PARK] = kind
                IS[I_SKIPPED] += 1
                continue
            _process(TI, kids, IS, WI, times, REQ, cap, used, TN, FN, u, RV, MO, queues, SL, VA, VICT, VL, heap,
                     logs, targets, watch, SCT, SCW, path, w, now)
            # a release of room reads this queue whole; its twins parked so later need no flag of
            # their own, since the release that clears the flag also voids their outcome
            if WI[w, W_PARK] == NODE:
                NODEP[WI[w, W_CQ]] = 1
    # the call's end: in-call usage taken back, starts admitted, victims evicted and requeued
    for k in range(IS[I_NVA] - 1, -1, -1):
        add(TI, u, VA[k, 0], -VA[k, 1])
        _bump(TI, IS, RV, VA[k, 0])
    IS[I_NVA] = 0
    for k in range(IS[I_NSL]):
        w = SL[k]
        c = WI[w, W_CQ]
        p = RQ_OFF[c] + RQ_N[c]
        RQ[p] = w
        RPOS[w] = p
        RQ_N[c] += 1
        _bump(TI, IS, RV, c)
    IS[I_NSL] = 0
    nv = IS[I_NVICT]
    for k in range(nv):
        w = VL[k]
        VICT[w] = 0
        _release(TI, IS, WI, REQ, used, TN, u, RQ, RQ_OFF, RQ_N, RPOS, RFREED, w)
        WI[w, W_STATE] = PENDING
        WI[w, W_WAIT] = 0
        WI[w, W_PARK] = 0
        pq_insert(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, w)
        pq_insert(WI, sub_t, prio_pre, NQ, PQ_OFF, NQ_N, w)
        _bump(TI, IS, RV, WI[w, W_CQ])
    IS[I_NVICT] = 0
    return nv


@njit(cache=True)
def run(TI, KC_OFF, KC, KQ_OFF, KQ, IS, WI, sub_t, dur, adm, REQ, cap, used, TN, FN, u, RV, RFREED, MO, CQO,
        PQ, PQ_OFF, PQ_N, PL, PL_N, AT, RQ, RQ_OFF, RQ_N, RPOS, SL, VA, VICT, VL, HW, HT, HS, HG,
        LOG, LT, LN, FIN, X, VF, TOUCH, caches, horizon, window):
    """The whole run, up to the last instant at or before ``horizon``; returns 0, or 1 when the
    log filled up (the caller runs again with more room). A run found cycling (``window``:
    ``SimOptions.no_progress_window``) stops as the engine stops it (``IS[I_STOP]``)."""
    W = WI.shape[0]
    T = TI.shape[0]
    C = CQO.shape[0]
    HD = np.empty(C + 1, np.int64)
    HB = np.empty(C + 1, np.int64)
    RESUME = np.zeros(T, np.int64)
    SC = np.zeros(T, np.int64)
    NQ = np.zeros(max(1, W), np.int64)  # per ClusterQueue (``PQ_OFF``): entries queued since its last call
    NQ_N = np.zeros(T, np.int64)
    NODEP = np.zeros(T, np.int64)  # per ClusterQueue: it may have entries parked for room
    PK = np.zeros(PL.shape[0], np.int64)  # per unparked entry: its key and waiting mark (``queues.runs``)
    RE = np.zeros(PL.shape[0], np.int64)  # per unparked entry: where its twin run ends
    seen = np.zeros(T, np.bool_)
    for x in range(C):
        seen[TI[CQO[x], ROOT]] = True
    ROOTS = np.nonzero(seen)[0]  # the cohort trees with ClusterQueues, in node order
    cmax = 1
    for w in range(W):
        if WI[w, W_CNT] > cmax:
            cmax = WI[w, W_CNT]
    out = np.empty(cmax, np.int64)
    tw = np.empty(W + 1, np.int64)
    tvar = np.empty(W + 1, np.int64)
    tallow = np.empty(W + 1, np.int64)
    tlca = np.empty(W + 1, np.int64)
    path = np.empty(T + 1, np.int64)
    SCT = np.empty((7, T + 1), np.int64)  # the target search's scratch rows (``kernel.search``)
    SCW = np.empty((7, W + 1), np.int64)
    while True:
        have_sub = IS[I_NSUB] < W
        if IS[I_HN] == 0 and not have_sub:
            break
        if IS[I_HN] and (not have_sub or HT[0] <= sub_t[IS[I_NSUB]]):
            now = HT[0]
        else:
            now = sub_t[IS[I_NSUB]]
        if now > horizon:
            break
        IS[I_PRE_NOW] = 0
        while IS[I_HN] and HT[0] == now:
            w, gen = HW[0], HG[0]
            _h_pop(IS, HW, HT, HS, HG)
            if WI[w, W_STATE] != RUNNING or WI[w, W_GEN] != gen:
                continue  # a victim's end, evicted before it
            _release(TI, IS, WI, REQ, used, TN, u, RQ, RQ_OFF, RQ_N, RPOS, RFREED, w)
            _w_progress(IS, WI, X, TOUCH, now)
            WI[w, W_STATE] = DONE
            FIN[w] = now
            _bump(TI, IS, RV, WI[w, W_CQ])
        while IS[I_NSUB] < W and sub_t[IS[I_NSUB]] <= now:
            w = IS[I_NSUB]
            WI[w, W_STATE] = PENDING
            pq_insert(WI, sub_t, IS[I_PRIO_PRE], PQ, PQ_OFF, PQ_N, w)
            pq_insert(WI, sub_t, IS[I_PRIO_PRE], NQ, PQ_OFF, NQ_N, w)
            _w_progress(IS, WI, X, TOUCH, now)
            IS[I_NSUB] = w + 1
        for _ in range(MAX_ROUNDS):
            if call(TI, KC_OFF, KC, KQ_OFF, KQ, IS, WI, sub_t, dur, adm, REQ, cap, used, TN, FN, u, RV, RFREED,
                    MO, CQO, PQ, PQ_OFF, PQ_N, PL, PL_N, AT, RQ, RQ_OFF, RQ_N, RPOS, SL, VA, VICT, VL, HW, HT,
                    HS, HG, LOG, LT, LN, X, VF, TOUCH, HD, HB, ROOTS, RESUME, SC, NQ, NQ_N, NODEP, PK, RE, out, tw,
                    tvar, tallow, tlca, SCT, SCW, path, now, caches) == 0:
                break
            if IS[I_FULL]:
                return 1
        if IS[I_FULL]:
            return 1
        if IS[I_PRE_NOW] and _w_stuck(IS, WI, X, adm, CQO, RQ, RQ_OFF, RQ_N, window, now):
            X[X_STOPPED] = now
            IS[I_STOP] = 1
            break
    return 0
