"""The compiled YTsaurus run: the engine's instants and ``YTsaurusModel``'s ``schedule`` and
``heartbeat`` calls on arrays (``docs/plans/ytsaurus-compiled-loop.md`` §2-§4, slices 3 and 4).

**Instants** (``Simulation._run``): finishes at ``start + duration``, submissions in trace order,
the model's tick chain from 0.0 and one heartbeat chain per node from its splay offset, each a
chain of float additions (``t = t + period``), never ``t0 + k*period``. Within an instant:
finishes (in push order), submissions, the tick, the heartbeats (in push order: nodes that beat
together keep the order their last beats were pushed in), then one ``schedule`` call, then each
heartbeat with its starts applied before the next.

**Quiet stretches** (``_quiet``): where no refresh needs the fair share, no node has room for the
least pending task, and no node's free units plus its preemptible allocations' hold the least task
of an operation the preemptive stage could choose, nothing is decided until the next finish or
submission or the first clock deadline; the periodic instants up to there move only the tick
chain, the refresh chain and each node's backoff, which ``_quiet`` walks in a tight loop (without
``trace``). Tested to count the same instants, refreshes and backoff runs as walking them.

**Refresh** (``fast.refresh``; ``YTsaurusModel.schedule``/``update``): at the first call, and at every instant
``now >= snap_t + update_period - EPS``. When a start, finish or submission happened since the last
computed update, the fair share is computed again (``fill`` over classes of equal operations,
built by walking each leaf's live operations), then every status, clock and note, as
``starvation.update_statuses`` and ``update`` make them. Otherwise only the snapshot's time moves,
and clocks whose deadline ``since + timeout`` is strictly before ``now`` turn starving
(``clockheap.ClockHeap.advance``), with the same notes.

**Regular stage** (``stages.pick``; ``heartbeat``, ``Waiting.picker``, ``HeapPicker``): among the published
operations with a pending task that fits the node's free units, the least ``(satisfaction, tree
position)``; satisfaction is ``local_satisfaction`` of the live usage against the snapshot's fair
share, the position the leaf's rank in the pools' preorder and then the trace index. Its first
pending task (its pending order: tasks in index order, an evicted one last again) starts; repeat
until none fits.

**Preemptive stage** (``fast.stages``): where preemption is on and the node's backoff allows
(``Backoff.should_run``, evaluated at every heartbeat), after the regular stage. Victims leave at
once (no grace in the class) and are pending again; their finishes stay in the heap, stale.

**The no-progress watch** is not followed: at an instant that preempted, with every submission
in and half a window since the last progress (a finish or a task's first start), the loop stops
with ``STOP_WATCH`` and the caller runs the general engine instead.

**Stop** (the engine's idle rule): nothing left to submit or finish, nothing running, and an
instant that made and changed nothing more than ``2 * max period`` after the first such one.
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit

from makeway.core.resources import EPS
from makeway.jitcache import by_package
from makeway.policies.ytsaurus.fast.layout import (
    I_COMPUTED, I_INSTANTS, I_NLOG, I_NUPD, I_PREEMPTS, I_QUIET, I_REFRESH, I_STAGES, I_STARTS, I_STOP, L_REFRESH,
    L_SHARE, L_START, NIS, NLOG_COLS, NLV, NUPD, NXS, STOP_HORIZON, STOP_IDLE, STOP_WATCH, X_LAST_T,
)
from makeway.policies.ytsaurus.fast.refresh import advance, any_starving, grown, next_deadline, notes, row, update
from makeway.policies.ytsaurus.fast.stages import least_needy, most_room, normal_stage, pick

by_package(os.path.dirname(__file__))  # the loop inlines helpers from every file here: any edit recompiles



# -- the finish heap: (time, push order, task); a preempted task's entry stays, stale (``ASEQ``) ------

@njit(cache=True, inline='always')
def _before(HT, HS, i, j):
    return HT[i] < HT[j] or (HT[i] == HT[j] and HS[i] < HS[j])


@njit(cache=True)
def _h_swap(HT, HS, HW, i, j):
    HT[i], HT[j] = HT[j], HT[i]
    HS[i], HS[j] = HS[j], HS[i]
    HW[i], HW[j] = HW[j], HW[i]


@njit(cache=True)
def _h_push(HT, HS, HW, n, t, s, g):
    HT[n], HS[n], HW[n] = t, s, g
    i = n
    while i > 0:
        p = (i - 1) // 2
        if _before(HT, HS, i, p):
            _h_swap(HT, HS, HW, i, p)
            i = p
        else:
            break
    return n + 1


@njit(cache=True)
def _h_pop(HT, HS, HW, n):
    """Removes the top (read it before) and returns the new size."""
    n -= 1
    if n > 0:
        _h_swap(HT, HS, HW, 0, n)
        i = 0
        while True:
            a, b, m = 2 * i + 1, 2 * i + 2, i
            if a < n and _before(HT, HS, a, m):
                m = a
            if b < n and _before(HT, HS, b, m):
                m = b
            if m == i:
                break
            _h_swap(HT, HS, HW, i, m)
            i = m
    return n


# -- allocations: per task its operation, seq, start and node; per node its running tasks ------------

@njit(cache=True)
def _start(g, w, n, now, seq, REQ, RUNF, ASEQ, ASTART, AN, SOFF, NA, SLOT, USED, NPEND, NRUN):
    RUNF[g] = True
    ASEQ[g] = seq
    ASTART[g] = now
    AN[g] = n
    SLOT[SOFF[n] + NA[n]] = g
    NA[n] += 1
    USED[n] += REQ[w]
    NRUN[w] += 1


@njit(cache=True)
def _stop(g, w, REQ, RUNF, AN, SOFF, NA, SLOT, USED, NRUN):
    """The allocation of task ``g`` (of operation ``w``) ends: finished or evicted."""
    n = AN[g]
    RUNF[g] = False
    for i in range(SOFF[n], SOFF[n] + NA[n]):
        if SLOT[i] == g:
            SLOT[i] = SLOT[SOFF[n] + NA[n] - 1]
            break
    NA[n] -= 1
    USED[n] -= REQ[w]
    NRUN[w] -= 1


@njit(cache=True, inline='always')
def _pop_pending(w, TOFF, NT, RING, QHEAD, NPEND):
    """The first task of the operation's pending order (a task index within it) leaves that order."""
    k = RING[TOFF[w] + QHEAD[w]]
    QHEAD[w] = (QHEAD[w] + 1) % NT[w]
    NPEND[w] -= 1
    return k


@njit(cache=True, inline='always')
def _requeue(w, k, TOFF, NT, RING, QHEAD, NPEND):
    """Task ``k`` is pending again, last in its operation's order (``ClusterState.requeue``)."""
    RING[TOFF[w] + (QHEAD[w] + NPEND[w]) % NT[w]] = k
    NPEND[w] += 1


# -- the run ------------------------------------------------------------------------------------------

@njit(cache=True, _nrt=False)
def _next_beat(now, hb, ih, qh, qc, HB0, QT, QN):
    """The next heartbeat due at ``now``, in push order (a node's first beat from ``HB0``, then the
    sorted ring ``QT``/``QN`` of ``qc`` beats from ``qh``), pushed again at ``now + hb``:
    ``(node or -1, ih, qh, qc)``. Compiled without numba's runtime, so that a call counts no array
    references (with them it cost 60-110 ns a beat, against 3 ns written in place)."""
    N = HB0.shape[0]
    if ih < N and HB0[ih] == now:
        n = ih
        ih += 1
    elif qc > 0 and QT[qh] == now:
        n = QN[qh]
        qh = qh + 1 if qh < N else 0
        qc -= 1
    else:
        return -1, ih, qh, qc
    j = qh + qc
    if j > N:
        j -= N + 1
    QT[j] = now + hb
    QN[j] = n
    return n, ih, qh, qc + 1


@njit(cache=True)
def run(T, up, hb, HB0, maxp, coef, pools_starve, horizon, trace, enabled, backoff, aggr_thr, thr, ops_only, window,
        PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE, LRANK, ALLOWN, POOL, REQ, NT, SUB, DUR, CAP):
    """The whole run (arguments: ``args.loop_args``). Returns the log ``LOG``, ``LT``, ``LV`` (rows
    ``IS[I_NLOG]``), ``UPD`` (rows ``IS[I_NUPD]``), ``IS``, ``XS`` and ``PUBT`` (``fast.layout``)."""
    P = PAR.shape[0]
    NW = POOL.shape[0]
    N = CAP.shape[0]
    TOFF = np.zeros(NW + 1, np.int64)
    for w in range(NW):
        TOFF[w + 1] = TOFF[w] + NT[w]
    ntasks = TOFF[NW]
    cap0 = 64 + 4 * ntasks
    LOG = np.zeros((cap0, NLOG_COLS), np.int64)
    LT = np.zeros(cap0)
    LV = np.full((cap0, NLV), np.nan)
    UPD = np.zeros((64, NUPD * P))
    IS = np.zeros(NIS, np.int64)
    XS = np.zeros(NXS)

    NPEND = np.zeros(NW, np.int64)
    NRUN = np.zeros(NW, np.int64)
    INTREE = np.zeros(NW, np.bool_)
    PUBT = np.full(NW, np.inf)  # the first computed update whose tree held the operation
    ITEM = np.full(NW, -1, np.int64)
    FPUB = np.zeros(NW)
    UPUB = np.zeros(NW)
    DPUB = np.zeros(NW)
    SINCE = np.full(NW, np.nan)
    ST = np.zeros(NW, np.int64)
    TO = np.zeros(NW)
    GONE = np.zeros(NW, np.int64)
    QHEAD = np.zeros(NW, np.int64)
    BOFF = np.zeros(P + 1, np.int64)  # ``refresh.update``'s scratch: the live operations by leaf
    BUCK = np.zeros(NW, np.int64)
    ni_max = P + NW
    IOFF = np.zeros(P + 1, np.int64)
    IPOOL = np.zeros(ni_max, np.int64)
    IW = np.zeros(ni_max)
    IHI = np.zeros(ni_max)
    ICNT = np.zeros(ni_max, np.int64)
    IG = np.zeros(ni_max)
    IVAL = np.zeros(ni_max)
    HI, GEFF, VAL, LAM = np.zeros(P), np.zeros(P), np.zeros(P), np.zeros(P)
    PD = np.zeros(P, np.int64)
    PU = np.zeros(P, np.int64)
    PST = np.zeros(P, np.int64)
    PSINCE = np.full(P, np.nan)
    OST = np.zeros(P, np.int64)
    OSINCE = np.full(P, np.nan)

    # per task (operation ``w``'s tasks are ``TOFF[w]..TOFF[w+1]``)
    TOP = np.zeros(ntasks, np.int64)
    RING = np.zeros(ntasks, np.int64)  # per operation, its pending order from ``QHEAD``
    for w in range(NW):
        for k in range(NT[w]):
            TOP[TOFF[w] + k] = w
            RING[TOFF[w] + k] = k
    RUNF = np.zeros(ntasks, np.bool_)
    EVER = np.zeros(ntasks, np.bool_)  # evicted at least once (the watch: a restart is no progress)
    ASEQ = np.zeros(ntasks, np.int64)
    ASTART = np.zeros(ntasks)
    AN = np.zeros(ntasks, np.int64)

    USED = np.zeros(N, np.int64)
    SOFF = np.zeros(N + 1, np.int64)  # per node, room for one allocation per unit
    for n in range(N):
        SOFF[n + 1] = SOFF[n] + CAP[n]
    SLOT = np.zeros(SOFF[N] + 1, np.int64)
    NA = np.zeros(N, np.int64)
    CAND = np.zeros(SOFF[N] + 1, np.int64)
    ANC = np.zeros(P, np.bool_)
    BLAST = np.full(N, -np.inf)  # ``Backoff.last`` (-inf: never ran)
    # The heartbeat rows in (time, push order): the first beats (``HB0``, sorted, from ``ih``), then
    # a ring of the rows pushed since (``QT``/``QN`` from ``qh``, ``qc`` of them). Every push is
    # the popped time plus the period, and pops come in time order, so the ring stays sorted and
    # a push is an append; its rows were pushed after every first beat, so those win ties.
    # The heartbeat rows in (time, push order): the first beats (``HB0``, sorted, from ``ih``), then
    # a ring of the rows pushed since (``QT``/``QN``: ``qc`` of them from ``qh``). Every push is a
    # popped time plus the period, and pops come in time order, so the ring stays sorted and a
    # push is an append; its rows were pushed after every first beat, so those win ties. (Kept in
    # scalars, not behind calls: a call that takes arrays costs atomic reference counts.)
    QT = np.zeros(N + 1)
    QN = np.zeros(N + 1, np.int64)
    ih = qh = qc = 0
    RQ = np.zeros(3, np.int64)  # the same, for ``_quiet``
    BEATS = np.zeros(N, np.int64)
    nheap = 2 * ntasks + 1  # a first start, and one per eviction at most... grown below if need be
    HT = np.zeros(nheap)
    HS = np.zeros(nheap, np.int64)
    HW = np.zeros(nheap, np.int64)
    fh = 0
    fseq = 0

    TS = np.zeros(2)  # the tick chain's next time and the snapshot's time, for ``_quiet``
    tick = 0.0
    nsub = 0
    npub = 0  # operations submitted when the fair share was last computed: the published prefix
    # the live operations (submitted, and pending, running or in the last tree) in index order:
    # a submission appends, a computed update drops the done (nothing done is requeued)
    ACT = np.zeros(NW, np.int64)
    nact = 0
    nrunning = 0
    snap = False
    snap_t = 0.0
    moved = False
    clock_next = -np.inf
    idle_since = np.nan
    since = 0.0  # the watch's last progress: a finish, or a task's first start
    minreq = 0  # the least task among the published pending operations (``fresh``: known)
    fresh = False
    starving = False  # some operation or pool is starving: the preemptive stage may choose
    rfresh = False  # ``needy`` and ``room`` are known: no preemptive stage can choose while needy > room
    needy = room = 0
    now = 0.0
    while True:
        t = tick
        if fh > 0 and HT[0] < t:
            t = HT[0]
        if nsub < NW and SUB[nsub] < t:
            t = SUB[nsub]
        if ih < N and HB0[ih] < t:
            t = HB0[ih]
        if qc > 0 and QT[qh] < t:
            t = QT[qh]
        if t > horizon:
            IS[I_STOP] = STOP_HORIZON
            break
        now = t
        IS[I_INSTANTS] += 1
        changed = False
        made = False
        preempted = False
        while fh > 0 and HT[0] == now:
            g, seq = HW[0], HS[0]
            fh = _h_pop(HT, HS, HW, fh)
            if not RUNF[g] or ASEQ[g] != seq:  # its allocation was preempted: a stale finish
                continue
            w = TOP[g]
            _stop(g, w, REQ, RUNF, AN, SOFF, NA, SLOT, USED, NRUN)
            nrunning -= 1
            since = now
            moved = True
            rfresh = False
            changed = True
        while nsub < NW and SUB[nsub] == now:
            NPEND[nsub] = NT[nsub]
            ACT[nact] = nsub
            nact += 1
            nsub += 1
            moved = True
            rfresh = False
            changed = True
        if tick == now:
            tick = now + up
        nb = 0
        while True:
            n, ih, qh, qc = _next_beat(now, hb, ih, qh, qc, HB0, QT, QN)
            if n < 0:
                break
            BEATS[nb] = n
            nb += 1

        if not snap or now >= snap_t + up - EPS:
            IS[I_REFRESH] += 1
            need = IS[I_NLOG] + 3 * nact + P + 4
            if need > LOG.shape[0]:
                LOG, LT, LV = grown(LOG, LT, LV, need)
            before = IS[I_NLOG]
            if not snap or moved:
                if IS[I_NUPD] == UPD.shape[0]:
                    U2 = np.zeros((2 * UPD.shape[0], UPD.shape[1]))
                    U2[:UPD.shape[0]] = UPD
                    UPD = U2
                update(now, T, coef, pools_starve, ACT, nact, npub, nsub, PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE,
                        LRANK, POOL, REQ, BOFF, BUCK, NPEND, NRUN, INTREE, PUBT, ITEM, FPUB, UPUB, DPUB, SINCE, ST,
                        TO, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM, PD, PU, PST, PSINCE, OST, OSINCE,
                        GONE, LOG, LT, LV, IS, UPD)
                IS[I_COMPUTED] += 1
                npub = nsub
                fresh = False
                m = 0
                for i in range(nact):
                    w = ACT[i]
                    if NPEND[w] + NRUN[w] > 0 or INTREE[w]:
                        ACT[m] = w
                        m += 1
                nact = m
                moved = False
                snap = True
                clock_next = next_deadline(ACT, nact, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO)
                starving = any_starving(ACT, nact, npub, INTREE, ST, PST)
                rfresh = False
                made |= notes(LOG, before, IS[I_NLOG])
                if trace:
                    for i in range(nact):
                        w = ACT[i]
                        if INTREE[w]:
                            row(LOG, LT, LV, IS, L_SHARE, w, 0, ST[w], now, FPUB[w], UPUB[w], SINCE[w])
            else:
                if trace:
                    row(LOG, LT, LV, IS, L_REFRESH, 0, 0, 0, now, np.nan, np.nan, np.nan)
                if now > clock_next:
                    advance(now, ACT, nact, npub, INTREE, ST, SINCE, TO, FPUB, UPUB, PST, PSINCE, PTO, PRE, OST,
                             OSINCE, LOG, LT, LV, IS)
                    clock_next = next_deadline(ACT, nact, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO)
                    starving = any_starving(ACT, nact, npub, INTREE, ST, PST)
                    rfresh = False
                    made |= notes(LOG, before, IS[I_NLOG])
            snap_t = now

        for a in range(nb):
            n = BEATS[a]
            if IS[I_NLOG] + CAP[n] + 2 > LOG.shape[0]:
                LOG, LT, LV = grown(LOG, LT, LV, IS[I_NLOG] + CAP[n] + 2)
            if fh + CAP[n] + 1 > HT.shape[0]:
                HT, HS, HW = _heap_grown(HT, HS, HW, fh + CAP[n] + 1)
            free = CAP[n] - USED[n]
            seq0 = fseq
            if not fresh:
                minreq = _least_request(ACT, nact, npub, NPEND, REQ)
                fresh = True
            while free >= minreq:
                w = pick(free, T, ACT, nact, npub, NPEND, NRUN, REQ, FPUB, POOL, LRANK, False, ops_only, ST, ANC)
                if w < 0:
                    break
                k = _pop_pending(w, TOFF, NT, RING, QHEAD, NPEND)
                fresh = False
                g = TOFF[w] + k
                row(LOG, LT, LV, IS, L_START, w, k, n, now, np.nan, np.nan, np.nan)
                IS[I_STARTS] += 1
                free -= REQ[w]
                _start(g, w, n, now, fseq, REQ, RUNF, ASEQ, ASTART, AN, SOFF, NA, SLOT, USED, NPEND, NRUN)
                nrunning += 1
                if not EVER[g]:
                    since = now
                fh = _h_push(HT, HS, HW, fh, now + DUR[w], fseq, g)
                fseq += 1
                moved = True
                rfresh = False
                made = True
            if not enabled or not now > BLAST[n] + backoff:
                continue
            BLAST[n] = now
            IS[I_STAGES] += 1
            if not starving:  # nobody has normal preemption priority: no one is chosen
                continue
            c, nv = normal_stage(n, free, seq0, T, ACT, nact, npub, ops_only, aggr_thr, thr, CAP, SOFF, NA, SLOT, TOP,
                                 TOFF, NT, RUNF, ASEQ, ASTART, REQ, POOL, PAR, PST, ALLOWN, INTREE, ST, FPUB, DPUB, UPUB,
                                 NPEND, NRUN, LRANK, CAND, ANC, LOG, LT, LV, IS, now)
            if c < 0:
                continue
            k = _pop_pending(c, TOFF, NT, RING, QHEAD, NPEND)
            fresh = False
            for j in range(nv):
                g = CAND[j]
                v = TOP[g]
                _stop(g, v, REQ, RUNF, AN, SOFF, NA, SLOT, USED, NRUN)
                _requeue(v, g - TOFF[v], TOFF, NT, RING, QHEAD, NPEND)
                EVER[g] = True
                nrunning -= 1
            IS[I_PREEMPTS] += nv
            preempted |= nv > 0
            g = TOFF[c] + k
            row(LOG, LT, LV, IS, L_START, c, k, n, now, np.nan, np.nan, np.nan)
            IS[I_STARTS] += 1
            _start(g, c, n, now, fseq, REQ, RUNF, ASEQ, ASTART, AN, SOFF, NA, SLOT, USED, NPEND, NRUN)
            nrunning += 1
            if not EVER[g]:
                since = now
            fh = _h_push(HT, HS, HW, fh, now + DUR[c], fseq, g)
            fseq += 1
            moved = True
            rfresh = False
            made = True

        if preempted and nsub == NW and now - since >= window / 2:
            IS[I_STOP] = STOP_WATCH
            break
        if not trace and snap and not moved and (fh > 0 or nsub < NW):
            if not fresh:
                minreq = _least_request(ACT, nact, npub, NPEND, REQ)
                fresh = True
            if enabled and starving and not rfresh:
                needy = least_needy(ACT, nact, npub, ops_only, ST, POOL, PAR, PST, ANC, NPEND, REQ)
                room = most_room(T, aggr_thr, thr, CAP, USED, SOFF, NA, SLOT, TOP, TOFF, NT, RUNF, ASEQ, REQ, POOL,
                                 ALLOWN, FPUB, DPUB)
                rfresh = True
            if _most_free(CAP, USED) < minreq and not (enabled and starving and needy <= room):
                end = HT[0] if fh > 0 else np.inf
                if nsub < NW and SUB[nsub] < end:
                    end = SUB[nsub]
                TS[0], TS[1] = tick, snap_t
                RQ[0], RQ[1], RQ[2] = ih, qh, qc
                last = _quiet(end, clock_next, horizon, up, hb, enabled, backoff, HB0, QT, QN, RQ, BLAST, IS, TS)
                tick, snap_t = TS[0], TS[1]
                ih, qh, qc = RQ[0], RQ[1], RQ[2]
                if last > now:
                    now = last
                idle_since = np.nan
                continue
        if fh == 0 and nsub == NW and nrunning == 0 and not (made or changed):
            if np.isnan(idle_since):
                idle_since = now
            elif now - idle_since > 2 * maxp:
                IS[I_STOP] = STOP_IDLE
                break
        else:
            idle_since = np.nan
    XS[X_LAST_T] = now  # past the horizon: the last instant before it, as the engine's ``now``
    return LOG, LT, LV, UPD, IS, XS, PUBT


@njit(cache=True)
def _quiet(end, cbound, horizon, up, hb, enabled, backoff, HB0, QT, QN, RQ, BLAST, IS, TS):
    """Walks the periodic instants before ``end`` (the next finish or submission), no later than
    ``cbound`` (the first clock deadline: a refresh after it may change a status) and the
    horizon, where nothing can be decided: no heartbeat can start a task or choose a preemptor,
    and no refresh needs the fair share. Only the tick chain, the refresh chain (``TS``: the next
    tick and the snapshot's time) and each node's backoff move, as the instants themselves move
    them. Returns the last instant walked (-inf: none)."""
    N = HB0.shape[0]
    tick, snap_t = TS[0], TS[1]
    ih, qh, qc = RQ[0], RQ[1], RQ[2]
    last = -np.inf
    instants = refreshes = stages = 0
    while True:
        now = tick
        if ih < N and HB0[ih] < now:
            now = HB0[ih]
        if qc > 0 and QT[qh] < now:
            now = QT[qh]
        if not (now < end and now <= cbound and now <= horizon):
            break
        last = now
        instants += 1
        if tick == now:
            tick = now + up
        if now >= snap_t + up - EPS:
            snap_t = now
            refreshes += 1
        while True:
            n, ih, qh, qc = _next_beat(now, hb, ih, qh, qc, HB0, QT, QN)
            if n < 0:
                break
            if enabled and now > BLAST[n] + backoff:
                BLAST[n] = now
                stages += 1
    TS[0], TS[1] = tick, snap_t
    RQ[0], RQ[1], RQ[2] = ih, qh, qc
    IS[I_INSTANTS] += instants
    IS[I_QUIET] += instants
    IS[I_REFRESH] += refreshes
    IS[I_STAGES] += stages
    return last


@njit(cache=True)
def _most_free(CAP, USED):
    m = 0
    for n in range(CAP.shape[0]):
        if CAP[n] - USED[n] > m:
            m = CAP[n] - USED[n]
    return m


@njit(cache=True)
def _least_request(ACT, nact, npub, NPEND, REQ):
    """The least task of the published operations with a pending one (a huge number: none), so a
    heartbeat with fewer free units than it starts nothing without walking the backlog."""
    m = 1 << 62
    for i in range(nact):
        w = ACT[i]
        if w >= npub:
            break
        if NPEND[w] > 0 and REQ[w] < m:
            m = REQ[w]
    return m


@njit(cache=True)
def _heap_grown(HT, HS, HW, need):
    n = HT.shape[0]
    while n < need:
        n *= 2
    T2, S2, W2 = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
    m = HT.shape[0]
    T2[:m] = HT
    S2[:m] = HS
    W2[:m] = HW
    return T2, S2, W2

