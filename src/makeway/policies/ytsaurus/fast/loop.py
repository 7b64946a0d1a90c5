"""The compiled YTsaurus run: the engine's instants and ``YTsaurusModel``'s ``schedule`` and
``heartbeat`` calls on arrays (``docs/plans/ytsaurus-compiled-loop.md`` §2-§4, slices 3 and 4).

**Instants** (``Simulation._run``): finishes at ``start + duration``, submissions in trace order,
the model's tick chain from 0.0 and one heartbeat chain per node from its splay offset, each a
chain of float additions (``t = t + period``), never ``t0 + k*period``. Within an instant:
finishes (in push order), submissions, the tick, the heartbeats (in push order: nodes that beat
together keep the order their last beats were pushed in), then one ``schedule`` call, then each
heartbeat with its starts applied before the next. The loop walks every instant; the engine skips
quiet stretches, which is tested equal to walking them.

**Refresh** (``YTsaurusModel.schedule``/``update``): at the first call, and at every instant
``now >= snap_t + update_period - EPS``. When a start, finish or submission happened since the last
computed update, the fair share is computed again (``fill`` over classes of equal operations,
built by walking each leaf's live operations), then every status, clock and note, as
``starvation.update_statuses`` and ``update`` make them. Otherwise only the snapshot's time moves,
and clocks whose deadline ``since + timeout`` is strictly before ``now`` turn starving
(``clockheap.ClockHeap.advance``), with the same notes.

**Regular stage** (``heartbeat``, ``Waiting.picker``, ``HeapPicker``): among the published
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
from makeway.policies.ytsaurus.fast.fill import fill
from makeway.policies.ytsaurus.fast.layout import (
    C_A, C_B, C_C, C_KIND, I_COMPUTED, I_INSTANTS, I_NLOG, I_NUPD, I_PREEMPTS, I_REFRESH, I_STAGES, I_STARTS, I_STOP,
    L_NOTE, L_PCLOCK, L_REFRESH, L_SHARE, L_START, L_UPDATE, N_FINISHED, N_STARTS, N_STOPS, NIS, NLOG_COLS, NLV, NUPD,
    NXS, ST_NON, ST_STARVING, STOP_HORIZON, STOP_IDLE, STOP_WATCH, U_FAIR, U_LEVEL, U_USAGE, V_FAIR, V_SINCE, V_USAGE,
    X_LAST_T,
)
from makeway.policies.ytsaurus.fast.stages import normal_stage

by_package(os.path.dirname(__file__))  # the loop inlines helpers from every file here: any edit recompiles

INF_SAT = 1e9  # ``status.INF_SAT``


# -- the log ------------------------------------------------------------------------------------------

@njit(cache=True)
def _grown(LOG, LT, LV, need):
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
def _row(LOG, LT, LV, IS, kind, a, b, c, t, v0, v1, v2):
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


# -- the finish heap: (time, push order) ------------------------------------------------------------

@njit(cache=True, inline='always')
def _before(HT, HS, i, j):
    return HT[i] < HT[j] or (HT[i] == HT[j] and HS[i] < HS[j])


@njit(cache=True)
def _h_swap(HT, HS, HW, HN, i, j):
    HT[i], HT[j] = HT[j], HT[i]
    HS[i], HS[j] = HS[j], HS[i]
    HW[i], HW[j] = HW[j], HW[i]
    HN[i], HN[j] = HN[j], HN[i]


@njit(cache=True)
def _h_push(HT, HS, HW, HN, n, t, s, w, node):
    HT[n], HS[n], HW[n], HN[n] = t, s, w, node
    i = n
    while i > 0:
        p = (i - 1) // 2
        if _before(HT, HS, i, p):
            _h_swap(HT, HS, HW, HN, i, p)
            i = p
        else:
            break
    return n + 1


@njit(cache=True)
def _h_pop(HT, HS, HW, HN, n):
    """Removes the top (read it before) and returns the new size."""
    n -= 1
    if n > 0:
        _h_swap(HT, HS, HW, HN, 0, n)
        i = 0
        while True:
            a, b, m = 2 * i + 1, 2 * i + 2, i
            if a < n and _before(HT, HS, a, m):
                m = a
            if b < n and _before(HT, HS, b, m):
                m = b
            if m == i:
                break
            _h_swap(HT, HS, HW, HN, i, m)
            i = m
    return n


# -- one refresh --------------------------------------------------------------------------------------

@njit(cache=True)
def _below(f, d, u, tol, is_op):
    """``status.element_status(...) == "below_fair_share"`` with one resource (shares)."""
    if is_op and abs(f - d) <= 1e-4:
        tol = 1.0
    bound = f * tol
    if d < bound:
        bound = d
    return bound > u + EPS


@njit(cache=True)
def _pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now):
    """An ``L_PCLOCK`` row per pool whose clock moved, in the pools' preorder."""
    for k in range(PRE.shape[0]):
        p = PRE[k]
        same = PST[p] == OST[p] and ((np.isnan(PSINCE[p]) and np.isnan(OSINCE[p])) or PSINCE[p] == OSINCE[p])
        if not same:
            _row(LOG, LT, LV, IS, L_PCLOCK, p, PST[p], 0, now, PSINCE[p], np.nan, np.nan)


@njit(cache=True)
def _clock_next(wlo, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO):
    """``ClockHeap.bound``: the earliest deadline of a running clock that is not starving."""
    best = np.inf
    for w in range(wlo, npub):
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
def _advance(now, wlo, npub, INTREE, ST, SINCE, TO, FPUB, UPUB, PST, PSINCE, PTO, PRE, OST, OSINCE,
             LOG, LT, LV, IS):
    """A refresh whose inputs did not move, past the earliest deadline: the clocks whose deadline
    passed turn starving, with their notes in trace order (``ClockHeap.advance``)."""
    for w in range(wlo, npub):
        if INTREE[w] and ST[w] == ST_NON and not np.isnan(SINCE[w]) and SINCE[w] + TO[w] < now:
            ST[w] = ST_STARVING
            _row(LOG, LT, LV, IS, L_NOTE, w, N_STARTS, ST_STARVING, now, FPUB[w], UPUB[w], SINCE[w])
    OST[:] = PST
    OSINCE[:] = PSINCE
    for p in range(PST.shape[0]):
        if PST[p] == ST_NON and not np.isnan(PSINCE[p]) and PSINCE[p] + PTO[p] < now:
            PST[p] = ST_STARVING
    _pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now)


@njit(cache=True)
def _update(now, T, coef, pools_starve, wlo, npub, nsub, PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE, LRANK,
            POOL, REQ, OOFF, OPS, LLO, NPEND, NRUN, INTREE, PUBT, ITEM, FPUB, UPUB, DPUB, SINCE, ST, TO,
            IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM, PD, PU, PST, PSINCE, OST, OSINCE, GONE,
            LOG, LT, LV, IS, UPD):
    """A computed refresh (``update`` with moved inputs): the fair share by ``fill`` over the
    leaves' classes of equal tops, then statuses, clocks and notes; the row ``L_UPDATE``."""
    P = PAR.shape[0]
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
        while LLO[p] < OOFF[p + 1] and OPS[LLO[p]] < nsub and NPEND[OPS[LLO[p]]] + NRUN[OPS[LLO[p]]] == 0:
            ITEM[OPS[LLO[p]]] = -1  # done for good: nothing is ever requeued here
            LLO[p] += 1
        for j in range(LLO[p], OOFF[p + 1]):
            w = OPS[j]
            if w >= nsub:
                break
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
    _row(LOG, LT, LV, IS, L_UPDATE, k, 0, 0, now, np.nan, np.nan, np.nan)
    fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM)

    # operations, in trace order (the tree's): statuses, clocks, notes
    ng = 0
    for w in range(wlo, nsub):
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
        if _below(f, float(live * REQ[w]) / T, u, PTOL[leaf], True):
            if np.isnan(SINCE[w]):
                SINCE[w] = now
            elif now > SINCE[w] + to:
                ST[w] = ST_STARVING
        else:
            ST[w] = ST_NON
            SINCE[w] = np.nan
        if (was == ST_NON) != (ST[w] == ST_NON):
            if ST[w] != ST_NON:
                _row(LOG, LT, LV, IS, L_NOTE, w, N_STARTS, ST[w], now, f, u, SINCE[w])
            else:
                _row(LOG, LT, LV, IS, L_NOTE, w, N_STOPS, ST_NON, now, f, u, np.nan)
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
        _row(LOG, LT, LV, IS, L_NOTE, GONE[a], N_FINISHED, ST_NON, now, np.nan, np.nan, np.nan)

    # pools (``<Root>`` never starves)
    OST[:] = PST
    OSINCE[:] = PSINCE
    for p in range(P - 1):
        if pools_starve and _below(VAL[p] / T, PD[p] / T, PU[p] / T, PTOL[p], False):
            if np.isnan(PSINCE[p]):
                PSINCE[p] = now
            elif now > PSINCE[p] + PTO[p]:
                PST[p] = ST_STARVING
        else:
            PST[p] = ST_NON
            PSINCE[p] = np.nan
    _pool_rows(LOG, LT, LV, IS, PRE, PST, PSINCE, OST, OSINCE, now)

    for p in range(P):
        UPD[k, NUPD * p + U_FAIR] = VAL[p] / T
        UPD[k, NUPD * p + U_USAGE] = PU[p] / T
        UPD[k, NUPD * p + U_LEVEL] = LAM[p] / T
    root = 0.0
    for j in range(KOFF[P - 1], KOFF[P]):
        root += VAL[KIDS[j]] / T
    UPD[k, NUPD * (P - 1) + U_FAIR] = root


# -- one heartbeat's regular stage -----------------------------------------------------------------

@njit(cache=True)
def _pick(free, T, wlo, npub, NPEND, NRUN, REQ, FPUB, POOL, LRANK):
    """The operation the regular stage serves next, or -1: least (satisfaction, tree position)."""
    best = -1
    bs = 0.0
    br = 0
    for w in range(wlo, npub):
        if NPEND[w] == 0 or REQ[w] > free:
            continue
        f = FPUB[w]
        if f <= EPS:
            s = INF_SAT
        else:
            s = (float(NRUN[w] * REQ[w]) / T) / f
            if INF_SAT < s:
                s = INF_SAT
        r = LRANK[POOL[w]]
        if best < 0 or s < bs or (s == bs and r < br):  # same leaf: the earlier index, walked first
            best, bs, br = w, s, r
    return best


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

@njit(cache=True)
def run(T, up, hb, HB0, maxp, coef, pools_starve, horizon, trace, enabled, backoff, aggr_thr, thr, ops_only, window,
        PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE, LRANK, ALLOWN, POOL, REQ, NT, SUB, DUR, OOFF, OPS, CAP):
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
    LLO = OOFF[:P].copy()  # per leaf, where its live operations begin in ``OPS``
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
    BLAST = np.full(N, -np.inf)  # ``Backoff.last`` (-inf: never ran)
    HB = HB0.copy()
    HSEQ = np.arange(N).astype(np.int64)
    hseq = N
    BEATS = np.zeros(N, np.int64)
    nheap = 2 * ntasks + 1  # a first start, and one per eviction at most... grown below if need be
    HT = np.zeros(nheap)
    HS = np.zeros(nheap, np.int64)
    HW = np.zeros(nheap, np.int64)
    HN = np.zeros(nheap, np.int64)
    fh = 0
    fseq = 0

    tick = 0.0
    nsub = 0
    npub = 0  # operations submitted when the fair share was last computed: the published prefix
    wlo = 0  # operations before it are done
    nrunning = 0
    snap = False
    snap_t = 0.0
    moved = False
    clock_next = -np.inf
    idle_since = np.nan
    since = 0.0  # the watch's last progress: a finish, or a task's first start
    now = 0.0
    while True:
        t = tick
        if fh > 0 and HT[0] < t:
            t = HT[0]
        if nsub < NW and SUB[nsub] < t:
            t = SUB[nsub]
        for n in range(N):
            if HB[n] < t:
                t = HB[n]
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
            fh = _h_pop(HT, HS, HW, HN, fh)
            if not RUNF[g] or ASEQ[g] != seq:  # its allocation was preempted: a stale finish
                continue
            w = TOP[g]
            _stop(g, w, REQ, RUNF, AN, SOFF, NA, SLOT, USED, NRUN)
            nrunning -= 1
            since = now
            moved = True
            changed = True
        while nsub < NW and SUB[nsub] == now:
            NPEND[nsub] = NT[nsub]
            nsub += 1
            moved = True
            changed = True
        while wlo < nsub and NPEND[wlo] + NRUN[wlo] == 0 and not INTREE[wlo]:
            wlo += 1
        if tick == now:
            tick = now + up
        nb = 0
        for n in range(N):
            if HB[n] == now:
                BEATS[nb] = n
                nb += 1
        for a in range(1, nb):
            x = BEATS[a]
            b = a - 1
            while b >= 0 and HSEQ[BEATS[b]] > HSEQ[x]:
                BEATS[b + 1] = BEATS[b]
                b -= 1
            BEATS[b + 1] = x
        for a in range(nb):
            n = BEATS[a]
            HB[n] = now + hb
            HSEQ[n] = hseq
            hseq += 1

        if not snap or now >= snap_t + up - EPS:
            IS[I_REFRESH] += 1
            need = IS[I_NLOG] + 3 * (nsub - wlo) + P + 4
            if need > LOG.shape[0]:
                LOG, LT, LV = _grown(LOG, LT, LV, need)
            before = IS[I_NLOG]
            if not snap or moved:
                if IS[I_NUPD] == UPD.shape[0]:
                    U2 = np.zeros((2 * UPD.shape[0], UPD.shape[1]))
                    U2[:UPD.shape[0]] = UPD
                    UPD = U2
                _update(now, T, coef, pools_starve, wlo, npub, nsub, PAR, W, GU, KOFF, KIDS, LEAF, PTOL, PTO, PRE,
                        LRANK, POOL, REQ, OOFF, OPS, LLO, NPEND, NRUN, INTREE, PUBT, ITEM, FPUB, UPUB, DPUB, SINCE, ST,
                        TO, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM, PD, PU, PST, PSINCE, OST, OSINCE,
                        GONE, LOG, LT, LV, IS, UPD)
                IS[I_COMPUTED] += 1
                npub = nsub
                moved = False
                snap = True
                clock_next = _clock_next(wlo, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO)
                made |= _notes(LOG, before, IS[I_NLOG])
                if trace:
                    for w in range(wlo, nsub):
                        if INTREE[w]:
                            _row(LOG, LT, LV, IS, L_SHARE, w, 0, ST[w], now, FPUB[w], UPUB[w], SINCE[w])
            else:
                if trace:
                    _row(LOG, LT, LV, IS, L_REFRESH, 0, 0, 0, now, np.nan, np.nan, np.nan)
                if now > clock_next:
                    _advance(now, wlo, npub, INTREE, ST, SINCE, TO, FPUB, UPUB, PST, PSINCE, PTO, PRE, OST,
                             OSINCE, LOG, LT, LV, IS)
                    clock_next = _clock_next(wlo, npub, INTREE, ST, SINCE, TO, PST, PSINCE, PTO)
                    made |= _notes(LOG, before, IS[I_NLOG])
            snap_t = now

        for a in range(nb):
            n = BEATS[a]
            if IS[I_NLOG] + CAP[n] + 2 > LOG.shape[0]:
                LOG, LT, LV = _grown(LOG, LT, LV, IS[I_NLOG] + CAP[n] + 2)
            if fh + CAP[n] + 1 > HT.shape[0]:
                HT, HS, HW, HN = _heap_grown(HT, HS, HW, HN, fh + CAP[n] + 1)
            free = CAP[n] - USED[n]
            seq0 = fseq
            while free > 0:  # every task asks at least one unit
                w = _pick(free, T, wlo, npub, NPEND, NRUN, REQ, FPUB, POOL, LRANK)
                if w < 0:
                    break
                k = _pop_pending(w, TOFF, NT, RING, QHEAD, NPEND)
                g = TOFF[w] + k
                _row(LOG, LT, LV, IS, L_START, w, k, n, now, np.nan, np.nan, np.nan)
                IS[I_STARTS] += 1
                free -= REQ[w]
                _start(g, w, n, now, fseq, REQ, RUNF, ASEQ, ASTART, AN, SOFF, NA, SLOT, USED, NPEND, NRUN)
                nrunning += 1
                if not EVER[g]:
                    since = now
                fh = _h_push(HT, HS, HW, HN, fh, now + DUR[w], fseq, g, n)
                fseq += 1
                moved = True
                made = True
            if not enabled or not now > BLAST[n] + backoff:
                continue
            BLAST[n] = now
            IS[I_STAGES] += 1
            c, nv = normal_stage(n, free, seq0, T, wlo, npub, ops_only, aggr_thr, thr, CAP, SOFF, NA, SLOT, TOP, TOFF, NT,
                                 RUNF, ASEQ, ASTART, REQ, POOL, PAR, PST, ALLOWN, INTREE, ST, FPUB, DPUB, UPUB, NPEND,
                                 NRUN, LRANK, CAND, LOG, LT, LV, IS, now)
            if c < 0:
                continue
            k = _pop_pending(c, TOFF, NT, RING, QHEAD, NPEND)
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
            _row(LOG, LT, LV, IS, L_START, c, k, n, now, np.nan, np.nan, np.nan)
            IS[I_STARTS] += 1
            _start(g, c, n, now, fseq, REQ, RUNF, ASEQ, ASTART, AN, SOFF, NA, SLOT, USED, NPEND, NRUN)
            nrunning += 1
            if not EVER[g]:
                since = now
            fh = _h_push(HT, HS, HW, HN, fh, now + DUR[c], fseq, g, n)
            fseq += 1
            moved = True
            made = True

        if preempted and nsub == NW and now - since >= window / 2:
            IS[I_STOP] = STOP_WATCH
            break
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
def _heap_grown(HT, HS, HW, HN, need):
    n = HT.shape[0]
    while n < need:
        n *= 2
    T2, S2, W2, N2 = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    m = HT.shape[0]
    T2[:m] = HT
    S2[:m] = HS
    W2[:m] = HW
    N2[:m] = HN
    return T2, S2, W2, N2


@njit(cache=True)
def _notes(LOG, a, b):
    for i in range(a, b):
        if LOG[i, C_KIND] == L_NOTE:
            return True
    return False
