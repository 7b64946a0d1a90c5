"""The compiled Kueue run: the engine's instants (ends, submissions, up to ``MAX_ROUNDS`` calls
while victims leave at once) and ``KueueModel.schedule``'s calls, on the arrays ``pack`` fills.

A call is the model's: parked workloads released where quota or room was freed, the unparked
entries of every ClusterQueue taken one head per queue per round, the heads of a round in classic
order, each admitted (pods first-fit on the flavor's nodes), or its targets evicted, or parked.
A head whose twin (same key) decided nothing since the last change it could read is parked as
its twin was, unevaluated (``twins``), and rounds made of such heads only are taken at once.

The pending lists are kept as runs (``queues.runs_*``): entries next to each other with one twin
code and one parked kind are one run, so a release, a park and a skip cost one step a run, not
one an entry; a call reads its lists as they were and edits them at its end (``_edit``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.kueue.fast.kernel import add, assign, search
from makeway.policies.kueue.fast.layout import (
    FIT, L_PREEMPT, L_START, L_UNWAIT, NODE, NOFIT, P_ANY, PENDING, QUOTA, RECLAIM, ROOT, RUNNING, DONE, HASBL, BL, NOM,
    W_CNT, W_CQ, W_EVER, W_GEN, W_KEY, W_PARK, W_PCNT, W_PRIO, W_QV, W_RANK, W_STATE, W_TOFF, W_TOUCH, W_VN,
    W_WAIT, I_BAD, I_CALLS, I_CHANGED, I_CHECK, I_EVALS, I_FREED, I_FULL, I_GV, I_HN, I_NED, I_NEV, I_NLN, I_NLOG,
    I_NSL, I_NSUB, I_NTOUCH, I_NV, I_NVA, I_NVICT, I_PRE_NOW, I_PRIO_PRE, I_SKIPPED, I_STOP, I_WPRE, X_CYCLING,
    X_PERIOD, X_SINCE, X_STOPPED,
)
from makeway.policies.kueue.fast.finish_heap import h_pop, h_push
from makeway.policies.kueue.fast.queues import (fifo_order, pq_insert, pq_remove_at, runs_insert, runs_join, runs_ok,
                                               runs_park, runs_release, runs_remove, twin_code)

MAX_ROUNDS = 16  # ``Simulation.MAX_ROUNDS``


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
def _start(TI, IS, WI, dur, adm, REQ, used, TN, u, RV, SL, HW, HT, HS, HG, LOG, LT, LN, watch, w, out, now):
    """A head admitted. It leaves its pending list at the call's end (``_edit``), where every
    list the call read is edited at once, so that a call reads its lists as they were."""
    c = WI[w, W_CQ]
    if not WI[w, W_EVER]:  # a first start is progress, a restart is not
        X, VF, TOUCH = watch
        _w_progress(IS, WI, X, TOUCH, now)
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
    h_push(IS, HW, HT, HS, HG, w, WI[w, W_GEN], now + dur[w])
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
    RQ, RQ_OFF, RQ_N = queues
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
            _start(TI, IS, WI, dur, adm, REQ, used, TN, u, RV, SL, HW, HT, HS, HG, LOG, LT, LN, watch, w, out, now)
    else:
        nt = search(TI, KC_OFF, KC, KQ_OFF, KQ, u, c, v, WI[w, W_PRIO], sub_t[w], WI, sub_t, adm, RQ_OFF, RQ,
                    RQ_N, tw, tvar, tallow, tlca, SCT, SCW)
        if nt == 0:
            if WI[w, W_WAIT]:
                _log(IS, LOG, LT, L_UNWAIT, w, 0, 0, 0, 0, now)
            WI[w, W_WAIT] = 0  # it moves in its pending list at the call's end (``_edit``)
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
                    WI[w, W_WAIT] = 1
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
def _unparked_from(RC, RM, lo, n, r, s):
    """The first unparked run from run ``r`` (which starts at position ``s``), and its start."""
    while r < n and RM[lo + r]:
        s += RC[lo + r]
        r += 1
    return r, s


@njit(cache=True, inline='always')
def _advance(RC, RM, lo, n, r, o, s, k):
    """A cursor on an unparked entry (offset ``o`` in run ``r``, which starts at ``s``) moved on
    by ``k`` unparked entries: a run at a step."""
    while k > 0:
        left = RC[lo + r] - o
        if k < left:
            return r, o + k, s
        k -= left
        r, s = _unparked_from(RC, RM, lo, n, r + 1, s + RC[lo + r])
        o = 0
    return r, o, s


@njit(cache=True, inline='always')
def _park(IS, EV, c, r, o1, o2, kind):
    """Entries ``o1..o2-1`` of run ``r`` of queue ``c`` parked as ``kind``, noted for the call's
    end (``runs_park``): the runs stay as they are while the call reads them."""
    n = IS[I_NEV]
    EV[n, 0], EV[n, 1], EV[n, 2], EV[n, 3], EV[n, 4] = c, r, o1, o2, kind
    IS[I_NEV] = n + 1


@njit(cache=True, inline='always')
def _skip_known(TI, IS, WI, RV, MO, CQO, PQ_OFF, RC, RK, RM, RN, CUR, NU, SC, EV, root, local):
    """``TwinSkipping._skip_known`` (``root`` -1: every queue) and ``_skip_known_trees`` (the
    queues of tree ``root``, with ``local`` stamps): where every head is a known twin, the rounds
    up to the first head that must be evaluated are taken at once (they change nothing but
    parking). The rounds taken; -1 for all of them, -2 for none. Each queue is read a run at a
    step (``queues``): the outcome of a run's first entry is every one's."""
    nv, gv = IS[I_NV], IS[I_GV]
    live = False
    for x in range(CQO.shape[0]):
        c = CQO[x]
        if root >= 0 and TI[c, ROOT] != root or CUR[c, 3] >= NU[c]:
            continue
        code = RK[PQ_OFF[c] + CUR[c, 0]]
        k = code >> 1
        if _outcome(code & 1, MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], RV[TI[c, ROOT]], nv, gv, local) < 0:
            return -2
        live = True
    if not live:
        return -2
    # The first head to evaluate, by queue: each queue is read a window at a time, the window
    # doubled until one is found, so that a deep queue of twins is not read to its end for a
    # step another queue bounds at a few rounds.
    step = np.int64(-1)
    for x in range(CQO.shape[0]):
        c = CQO[x]
        SC[c, 0], SC[c, 1], SC[c, 2], SC[c, 3] = CUR[c, 0], CUR[c, 1], CUR[c, 2], CUR[c, 3]
    window = 8
    while True:
        more = False
        for x in range(CQO.shape[0]):
            c = CQO[x]
            if root >= 0 and TI[c, ROOT] != root:
                continue
            n, at = NU[c], CUR[c, 3]
            end = at + window if step < 0 else at + step
            if end > n:
                end = n
            lo, nr, rv = PQ_OFF[c], RN[c], RV[TI[c, ROOT]]
            r, o, s, j = SC[c, 0], SC[c, 1], SC[c, 2], SC[c, 3]
            while j < end:
                code = RK[lo + r]
                k = code >> 1
                if _outcome(code & 1, MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], rv, nv, gv, local) < 0:
                    break
                take = min(RC[lo + r] - o, end - j)
                r, o, s = _advance(RC, RM, lo, nr, r, o, s, take)
                j += take
            SC[c, 0], SC[c, 1], SC[c, 2], SC[c, 3] = r, o, s, j
            if j < end:
                step = j - at
            elif j < n and step < 0:
                more = True
        if step >= 0 or not more:
            break
        window *= 2
    # the rounds taken: each queue's heads in them parked as their twins were, a run at a time
    for x in range(CQO.shape[0]):
        c = CQO[x]
        if root >= 0 and TI[c, ROOT] != root:
            continue
        n, at = NU[c], CUR[c, 3]
        stop = n if step < 0 else min(n, at + step)
        lo, nr, rv = PQ_OFF[c], RN[c], RV[TI[c, ROOT]]
        r, o, s = CUR[c, 0], CUR[c, 1], CUR[c, 2]
        j = at
        while j < stop:
            code = RK[lo + r]
            k = code >> 1
            kind = _outcome(code & 1, MO[k, 0], MO[k, 1], MO[k, 2], MO[k, 3], rv, nv, gv, local)
            take = min(RC[lo + r] - o, stop - j)
            if kind > 0:
                _park(IS, EV, c, r, o, o + take, kind)
            r, o, s = _advance(RC, RM, lo, nr, r, o, s, take)
            j += take
        CUR[c, 0], CUR[c, 1], CUR[c, 2], CUR[c, 3] = r, o, s, stop
        IS[I_SKIPPED] += stop - at
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
         PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, CUR, NU, SC, EV, ED, HPOS, RQ, RQ_OFF, RQ_N, RPOS, SL, VA, VICT, VL,
         HW, HT, HS, HG, LOG, LT, LN, X, VF, TOUCH, HD, HB, ROOTS, RESUME, NODEP, out, tw, tvar, tallow, tlca,
         SCT, SCW, path, now, caches):
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
            runs_release(RC, RK, RM, RN, lo, c, rel)
            NODEP[c] = 0
        n = 0
        for r in range(RN[c]):
            if not RM[lo + r]:
                n += RC[lo + r]
        NU[c] = n
        r, s = _unparked_from(RC, RM, lo, RN[c], 0, 0)
        CUR[c, 0], CUR[c, 1], CUR[c, 2], CUR[c, 3] = r, 0, s, 0
        if IS[I_CHECK] and not runs_ok(WI, PQ, PQ_N, RC, RK, RM, RN, lo, c):
            IS[I_BAD] += 1
    if freed:
        for x in range(CQO.shape[0]):
            RFREED[TI[CQO[x], ROOT]] = 0
        IS[I_FREED] = 0
    NR = ROOTS.shape[0]
    kids, times, queues = (KC_OFF, KC, KQ_OFF, KQ), (sub_t, dur, adm), (RQ, RQ_OFF, RQ_N)
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
                _skip_known(TI, IS, WI, RV, MO, CQO, PQ_OFF, RC, RK, RM, RN, CUR, NU, SC, EV, -1, False)
            if NR > 1:
                for x in range(NR):
                    r = ROOTS[x]
                    if RESUME[r] > rnd:
                        continue
                    step = _skip_known(TI, IS, WI, RV, MO, CQO, PQ_OFF, RC, RK, RM, RN, CUR, NU, SC, EV, r, True)
                    if step > 0:
                        RESUME[r] = rnd + step
        nh = 0
        held = -1
        for x in range(CQO.shape[0]):
            c = CQO[x]
            if CUR[c, 3] < NU[c]:
                back = RESUME[TI[c, ROOT]]
                if back > rnd:
                    held = back if held < 0 or back < held else held
                    continue
                lo = PQ_OFF[c]
                r, o, s = CUR[c, 0], CUR[c, 1], CUR[c, 2]
                w = PQ[lo + s + o]
                HPOS[w, 0], HPOS[w, 1], HPOS[w, 2] = r, o, s + o
                WI[w, W_PARK] = 0  # the head's parked kind, if this call parks it
                r, o, s = _advance(RC, RM, lo, RN[c], r, o, s, 1)
                CUR[c, 0], CUR[c, 1], CUR[c, 2] = r, o, s
                CUR[c, 3] += 1
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
            c = WI[w, W_CQ]
            kind = _known(TI, IS, WI, RV, MO, w)
            if kind >= 0:  # parked as its twin was, unevaluated
                if kind:
                    _park(IS, EV, c, HPOS[w, 0], HPOS[w, 1], HPOS[w, 1] + 1, kind)
                IS[I_SKIPPED] += 1
                continue
            wait0 = WI[w, W_WAIT]
            _process(TI, kids, IS, WI, times, REQ, cap, used, TN, FN, u, RV, MO, queues, SL, VA, VICT, VL, heap,
                     logs, targets, watch, SCT, SCW, path, w, now)
            kind = WI[w, W_PARK]
            if kind:
                _park(IS, EV, c, HPOS[w, 0], HPOS[w, 1], HPOS[w, 1] + 1, kind)
            # a release of room reads this queue's runs anew; its twins parked so later need no flag
            # of their own, since the release that clears the flag also voids their outcome
            if kind == NODE:
                NODEP[c] = 1
            if WI[w, W_STATE] == RUNNING or WI[w, W_WAIT] != wait0:  # it leaves or moves
                n = IS[I_NED]
                ED[n, 0], ED[n, 1], ED[n, 2] = c, HPOS[w, 2], w
                IS[I_NED] = n + 1
    _edit(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, NU, EV, ED, IS)
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
        _queue(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, w, 0)
        _bump(TI, IS, RV, WI[w, W_CQ])
    IS[I_NVICT] = 0
    return nv


@njit(cache=True, inline='always')
def _queue(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, w, mark):
    """``w`` into its queue's pending list, and its runs, with parked kind ``mark``."""
    c = WI[w, W_CQ]
    p = pq_insert(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, w)
    runs_insert(RC, RK, RM, RN, PQ_OFF[c], c, p, twin_code(WI, w), mark)


@njit(cache=True)
def _edit(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, NU, EV, ED, IS):
    """The pending lists as the call leaves them: its parked runs (``EV``), then its heads that
    started or changed their waiting mark (``ED``) taken out, and the latter put back in their
    new place with the parked kind they had. Each list was noted in order and is edited from
    its end, so that every noted run and position still means what it meant in the call."""
    for k in range(IS[I_NEV] - 1, -1, -1):
        c = EV[k, 0]
        runs_park(RC, RK, RM, RN, PQ_OFF[c], c, EV[k, 1], EV[k, 2], EV[k, 3], EV[k, 4])
    for k in range(IS[I_NEV]):
        c = EV[k, 0]
        if NU[c] >= 0:
            runs_join(RC, RK, RM, RN, PQ_OFF[c], c)
            NU[c] = -1  # joined (the unparked counts are the call's, done with)
    IS[I_NEV] = 0
    for k in range(IS[I_NED] - 1, -1, -1):
        c, p = ED[k, 0], ED[k, 1]
        ED[k, 3] = runs_remove(RC, RK, RM, RN, PQ_OFF[c], c, p)
        pq_remove_at(PQ, PQ_OFF, PQ_N, c, p)
    for k in range(IS[I_NED]):
        w = ED[k, 2]
        if WI[w, W_STATE] == PENDING:
            _queue(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, w, ED[k, 3])
    IS[I_NED] = 0


@njit(cache=True)
def run(TI, KC_OFF, KC, KQ_OFF, KQ, IS, WI, sub_t, dur, adm, REQ, cap, used, TN, FN, u, RV, RFREED, MO, CQO,
        PQ, PQ_OFF, PQ_N, RQ, RQ_OFF, RQ_N, RPOS, SL, VA, VICT, VL, HW, HT, HS, HG,
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
    NODEP = np.zeros(T, np.int64)  # per ClusterQueue: it may have entries parked for room
    # per ClusterQueue (from ``PQ_OFF``): its pending list's runs (``queues``)
    RC = np.zeros(max(1, W), np.int64)
    RK = np.zeros(max(1, W), np.int64)
    RM = np.zeros(max(1, W), np.int64)
    RN = np.zeros(T, np.int64)
    # a call's: per ClusterQueue, where it reads (run, offset in it, the run's start, heads taken)
    # and a scan's copy of that, its unparked entries; the runs it parks and the heads that leave
    CUR = np.zeros((T, 4), np.int64)
    SC = np.zeros((T, 4), np.int64)
    NU = np.zeros(T, np.int64)
    EV = np.zeros((W + 1, 5), np.int64)
    ED = np.zeros((W + 1, 4), np.int64)
    HPOS = np.zeros((max(1, W), 3), np.int64)
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
            h_pop(IS, HW, HT, HS, HG)
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
            _queue(WI, sub_t, IS[I_PRIO_PRE], PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, w, 0)
            _w_progress(IS, WI, X, TOUCH, now)
            IS[I_NSUB] = w + 1
        for _ in range(MAX_ROUNDS):
            if call(TI, KC_OFF, KC, KQ_OFF, KQ, IS, WI, sub_t, dur, adm, REQ, cap, used, TN, FN, u, RV, RFREED,
                    MO, CQO, PQ, PQ_OFF, PQ_N, RC, RK, RM, RN, CUR, NU, SC, EV, ED, HPOS, RQ, RQ_OFF, RQ_N, RPOS,
                    SL, VA, VICT, VL, HW, HT, HS, HG, LOG, LT, LN, X, VF, TOUCH, HD, HB, ROOTS, RESUME, NODEP, out,
                    tw, tvar, tallow, tlca, SCT, SCW, path, now, caches) == 0:
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
