"""The YuniKorn recording walk's instants, compiled (slice 4 of ``docs/plans/compiled-walks.md``).

``yunikorn_record.LogRun`` walks the engine's instants in Python: finishes (stale ones included),
submissions, the model's wake-ups, and up to ``MAX_ROUNDS`` logged calls at each. ``walk`` runs
the same instants over the packed log with the same checks, task by task, reservations and
pending reasons included (``yunikorn_walk_reasons``), and writes tapes: ``FeedRecorder``'s codes
and instant marks, one event row per preemption (and, with ``record_starts``, per start and
finish), first starts, finished workloads, restarts. ``yunikorn_tape_record.TapeRun`` reads them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.yunikorn.fast import layout as L
from makeway.policies.yunikorn.fast.kernel import w_pop, w_push
from makeway.sim.fast import kueue_walk as KW
from makeway.sim.fast import yunikorn_walk_reasons as RW
from makeway.sim.fast.kueue_walk import _codes, _event, _mark
from makeway.sim.fast.kueue_walk_reasons import F_NEXT, F_RF, I_RS, R_FRESH, R_FULL, preempted_for
from makeway.sim.fast.sums import E_EVICT, E_FINISH, E_START, E_SUBMIT

# what went wrong, where ``LogRun`` raises ``ReplayError`` (the log row or call it happened at is
# returned); ``TAPE_FULL``: a tape had no room left (the run is recorded by ``LogRun``)
(OK, CALL_AT_OTHER_INSTANT, ROW_AT_OTHER_INSTANT, NOT_PENDING, NO_FIT, VICTIM_NOT_RUNNING, NO_RESERVATION,
 CALLS_LEFT, TAPE_FULL) = range(9)
# the event tape, in the order the recorder appends events, in the Kueue walk's columns
# (``kueue_walk._event``): kind, time, task, node (a preemption: the victim's), the victim's
# start, the preemptor (an ask) and the node it reserves
EV_PREEMPT, EV_START, EV_FINISH = range(3)
C_KIND, C_T, C_TASK, C_NODE, C_START, C_BY, C_RESV = KW.C_KIND, KW.C_T, KW.C_W, KW.C_NODE, KW.C_START, KW.C_BY, KW.C_ROW
NCOLS = 8
# the results' scalars: status, where, feed and marks written, events, calls made, log rows
# taken, first starts, finishes, restarts, submissions, events processed, stopped at the horizon
(O_STATUS, O_WHERE, O_FEED, O_MARKS, O_EV, O_CALLS, O_POS, O_FST, O_FIN, O_RS, O_SUB, O_EVENTS, O_STOPPED,
 NOUT) = range(14)


@njit(cache=True, _nrt=False)
def _wake_pop(WH, NW):
    """The first wake-up off the heap (``kernel.w_push`` / ``w_pop``, duplicates kept): every
    copy of it at once, as the engine's set of pending wake-ups holds one."""
    t = WH[0]
    while NW[0] and WH[0] == t:
        NW[0] = w_pop(WH, NW[0])


@njit(cache=True)
def walk(LK, LA, LB, LC, LCALL, LT, ct, wk, subs, W, fin_t, fin_row, fin_task, TW, TOFF, NT, REQ, cap, stop,
         max_rounds, last_t, record_starts, feed, marks, ev, first, fst, fin, restarts, pend, queued, S, Y, RIN, out):
    """The instants of a logged YuniKorn run (``LogRun._run``'s order, each wake-up on its own);
    ``out`` gets the ``O_*`` scalars, ``pend`` and ``queued`` each task's state at the end."""
    n = LK.shape[0]
    total = ct.shape[0]
    T = TW.shape[0]
    R = REQ.shape[1]
    running = np.zeros(T, np.bool_)
    start_row = np.full(T, -1, np.int64)
    on = np.zeros(T, np.int64)
    started_at = np.zeros(T, np.float64)
    resv = np.full(T, -1, np.int64)
    evicted_at = np.full(T, np.nan)
    w_np = np.zeros(max(1, W), np.int64)
    w_resv = np.zeros(max(1, W), np.int64)
    w_fin = np.zeros(max(1, W), np.int64)
    used = np.zeros(cap.shape, np.int64)
    WH = np.empty(total + 1, np.float64)
    NW = np.zeros(1, np.int64)
    FS = np.zeros(3, np.float64)  # last change's instant, feed length, marks
    FS[0] = last_t
    for t in range(T):
        queued[t] = t
    requeues = T
    fi = ns = pos = calls = events = nev = nfst = nfin = nrs = 0
    next_call = LCALL[0] if n else -1
    walked = 0.0  # the last instant walked: the recorder's close marks it
    status, where = OK, 0
    inf = np.inf
    while True:
        now = subs[ns]
        if fin_t[fi] < now:
            now = fin_t[fi]
        if NW[0] and WH[0] < now:  # a wake-up alone
            now = WH[0]
            if now > stop:
                out[O_STOPPED] = 1
                break
            walked = now
            _wake_pop(WH, NW)
            events += 1
            if calls >= total or ct[calls] != now:
                status, where = CALL_AT_OTHER_INSTANT, calls
                break
            if next_call != calls + 1:
                calls += 1
                if now >= S[2][F_RF][F_NEXT]:
                    RW.observe(S, Y, RIN, now, w_resv, running)
                wake = wk[calls - 1]
                if wake > now:
                    NW[0] = w_push(WH, NW[0], wake)
                continue
            changed = True
        else:
            if now == inf:
                break
            if now > stop:
                out[O_STOPPED] = 1
                break
            walked = now
            changed = False
            while fin_t[fi] == now and fin_row[fi] < pos:
                t = fin_task[fi]
                row = fin_row[fi]
                fi += 1
                events += 1
                if start_row[t] != row or not running[t]:
                    continue
                changed = True
                _mark(now, FS, feed, marks)
                w = TW[t]
                node = on[t]
                for r in range(R):
                    used[node, r] -= REQ[w, r]
                running[t] = False
                w_fin[w] += 1
                _codes(4 * w + E_FINISH, 1, FS, feed)
                if w_fin[w] == NT[w]:
                    fin[nfin, 0] = w
                    fin[nfin, 1] = now
                    nfin += 1
                if record_starts:
                    nev = _event(ev, nev, EV_FINISH, now, t, 0, node)
            while ns < W and subs[ns] == now:
                events += 1
                changed = True
                _mark(now, FS, feed, marks)
                for t in range(TOFF[ns], TOFF[ns + 1]):
                    pend[t] = True
                w_np[ns] = NT[ns]
                _codes(4 * ns + E_SUBMIT, NT[ns], FS, feed)
                RW.submitted(S, RIN, ns)
                ns += 1
            if NW[0] and WH[0] == now:
                _wake_pop(WH, NW)
                events += 1
                changed = True
        made = False
        for _ in range(max_rounds):
            if calls >= total or ct[calls] != now:
                status, where = CALL_AT_OTHER_INSTANT, calls
                break
            calls += 1
            if next_call != calls:
                break
            freed = False
            k = pos
            while k < n and LCALL[k] == calls:
                if LT[k] != now:
                    status = ROW_AT_OTHER_INSTANT
                    break
                what = LK[k]
                if what == L.L_START:
                    t, node = LA[k], LB[k]
                    if not pend[t]:
                        status = NOT_PENDING
                        break
                    w = TW[t]
                    for r in range(R):
                        if used[node, r] + REQ[w, r] > cap[node, r]:
                            status = NO_FIT
                    if status != OK:
                        break
                    for r in range(R):
                        used[node, r] += REQ[w, r]
                    if resv[t] >= 0:
                        resv[t] = -1
                        w_resv[w] -= 1
                        RW.reservation_moved(Y, w)
                    start_row[t] = k
                    pend[t] = False
                    running[t] = True
                    on[t] = node
                    started_at[t] = now
                    _mark(now, FS, feed, marks)
                    _codes(4 * w + E_START, 1, FS, feed)
                    w_np[w] -= 1
                    RW.task_started(S, RIN, w, w_np[w] == 0)
                    if first[w] != first[w]:
                        first[w] = now
                        fst[nfst] = w
                        nfst += 1
                    e = evicted_at[t]
                    if e == e:
                        restarts[nrs, 0] = now
                        restarts[nrs, 1] = t
                        restarts[nrs, 2] = node
                        restarts[nrs, 3] = e
                        nrs += 1
                        evicted_at[t] = np.nan
                    if record_starts:
                        nev = _event(ev, nev, EV_START, now, t, 0, node)
                    made = True
                elif what == L.L_PREEMPT:
                    v, by, node = LA[k], LB[k], LC[k]
                    if not running[v]:
                        status = VICTIM_NOT_RUNNING
                        break
                    p, wv = TW[by], TW[v]
                    if resv[by] < 0:
                        resv[by] = node
                        w_resv[p] += 1
                        RW.reservation_moved(Y, p)
                    at = on[v]
                    running[v] = False
                    pend[v] = True
                    queued[v] = requeues
                    requeues += 1
                    preempted_for(S, p, v)
                    ev[nev, C_BY] = by
                    ev[nev, C_RESV] = node
                    ev[nev, C_START] = started_at[v]
                    nev = _event(ev, nev, EV_PREEMPT, now, v, 0, at)
                    _mark(now, FS, feed, marks)
                    for r in range(R):
                        used[at, r] -= REQ[wv, r]
                    _codes(4 * wv + E_EVICT, 1, FS, feed)
                    evicted_at[v] = now
                    w_np[wv] += 1
                    RW.became_pending(S, RIN, wv)
                    made = freed = True
                else:
                    t = LA[k]
                    if resv[t] < 0:
                        status = NO_RESERVATION
                        break
                    resv[t] = -1
                    w = TW[t]
                    w_resv[w] -= 1
                    RW.reservation_moved(Y, w)
                k += 1
            if status != OK:
                where = k
                break
            pos = k
            next_call = LCALL[pos] if pos < n else -1
            if not freed:
                break
        if status != OK:
            break
        if made or changed:
            if S[0][I_RS][R_FRESH] or now >= S[2][F_RF][F_NEXT]:
                RW.observe(S, Y, RIN, now, w_resv, running)
        wake = wk[calls - 1]
        if wake > now:
            NW[0] = w_push(WH, NW[0], wake)
    if status == OK and (pos != n or calls != total):
        status, where = CALLS_LEFT, pos
    if status == OK and S[0][I_RS][R_FULL]:
        status = TAPE_FULL
    if status == OK:
        _mark(walked, FS, feed, marks)
    out[O_STATUS], out[O_WHERE], out[O_FEED], out[O_MARKS], out[O_EV] = status, where, int(FS[1]), int(FS[2]), nev
    out[O_CALLS], out[O_POS], out[O_FST], out[O_FIN], out[O_RS], out[O_SUB] = calls, pos, nfst, nfin, nrs, ns
    out[O_EVENTS] = events
    return walked
