"""The compiled event loop itself (``run``) over the arrays ``makeway.sim.fast.kernel`` lays out.

Split from ``kernel.py`` (heaps, trees, placement): this module is what happens at an instant,
the recorder's sums, the pending-reason log and the samples.
"""

from __future__ import annotations

import numpy as np

from makeway.sim.fast.kernel import (
    BAD, BAD_INPUT, BLOCKED_REL, BLOCKED_W, C_GANG, C_NOWHERE, C_PRIORITY, C_RESOURCES, CUR, DONE, END_T, EVENTS,
    FIFO, FIN, FIN_N, GOFF, NG, FINAL, FIRST, FIRST_T, FITS_EMPTY, FAILED_AT, FRESH_LO, HAS_FIRST, HEAD, HORIZON, KILL, KILLC,
    LAST_T, LEFT, LOG_FULL, MORE, NEED_INPUT, NEGP, NEWMARK, NEXT_ROUND, NFINISHED, NLOAD, NOTES_N, NOW, NOWHERE,
    NPLACE, NSAMP, NSHAPES, NSTARTED, NSUB, ORD, ORDPTR, PCOUNT, PHEAD, PNEXT, PNUM, POFF, PPREV, PTAIL, Q,
    RELEASED, RELEASES, RINTERVAL, ROOT, ROUNDS, RPD, RUN, S, SEQ, SINCE, SINGLE, SINTERVAL, STAMP, STATE, STOPPED,
    STRICT, SUB, TASKS, TLAST, TRAIL_N, _descend, _first_group, _fpop, _fpush, _free_fit, _hpop, _hpush, _leaf,
    _less, _place, njit,
)


@njit(cache=True, _nrt=False)
def _jain(qusage, ptasks, leaf_q, leaf_w, ccap):
    R = qusage.shape[1]
    total = 0.0
    sq = 0.0
    n = 0
    for k in range(leaf_q.shape[0]):
        q = leaf_q[k]
        busy = ptasks[q] != 0
        if not busy:
            for r in range(R):
                if qusage[q, r] != 0:
                    busy = True
                    break
        if not busy:
            continue
        share = 0.0
        first = True
        for r in range(R):
            c = ccap[r]
            if c:
                x = qusage[q, r] / c
                if first or x > share:
                    share = x
                    first = False
        x = share / leaf_w[k]
        total += x
        sq += x * x
        n += 1
    if n == 0:
        return 1.0
    return (total * total) / (n * sq) if sq > 0 else 1.0


@njit(cache=True, _nrt=False)
def _sample(IS, FS, now, rused, qusage, pres, pn, ptasks, tq, leaf_q, leaf_w, ccap, ST, SU, SQ, SP, SPN, SJ):
    n = IS[NSAMP]
    if n >= ST.shape[0]:  # keep every other sample, double the interval
        m = (n + 1) // 2
        for k in range(m):  # element by element: a row copy would compile numba's shape checks
            ST[k] = ST[2 * k]
            SJ[k] = SJ[2 * k]
            for r in range(SU.shape[1]):
                SU[k, r] = SU[2 * k, r]
            for t in range(SQ.shape[1]):
                SPN[k, t] = SPN[2 * k, t]
                for r in range(SQ.shape[2]):
                    SQ[k, t, r] = SQ[2 * k, t, r]
                    SP[k, t, r] = SP[2 * k, t, r]
        n = m
        FS[SINTERVAL] *= 2
    ST[n] = now
    for r in range(rused.shape[0]):
        SU[n, r] = rused[r]
    for t in range(tq.shape[0]):
        q = tq[t]
        for r in range(rused.shape[0]):
            SQ[n, t, r] = qusage[q, r]
            SP[n, t, r] = pres[q, r]
        SPN[n, t] = pn[q]
    SJ[n] = _jain(qusage, ptasks, leaf_q, leaf_w, ccap)
    IS[NSAMP] = n + 1


@njit(cache=True, _nrt=False)
def _set(IS, WI, TRW, TRT, TRC, w, now, code):
    if WI[w, CUR] == code:
        return
    WI[w, CUR] = code
    last = WI[w, TLAST]
    if last >= 0 and TRT[last] == now:
        TRC[last] = code
        return
    n = IS[TRAIL_N]
    TRW[n] = w
    TRT[n] = now
    TRC[n] = code
    WI[w, TLAST] = n
    IS[TRAIL_N] = n + 1


@njit(cache=True, _nrt=False)
def _classify(IS, WI, SI, GC, GV, T, size, N, cap, used, capt, rused, INV, w, position, extra, mark, touched, stack):
    s = np.int64(WI[w, S])
    if SI[s, NOWHERE]:
        return C_NOWHERE
    multi = WI[w, TASKS] > 1
    if IS[STRICT]:
        p = IS[ORDPTR]
        while p < IS[NLOAD] and WI[INV[p], STATE] == 2:
            p += 1
        IS[ORDPTR] = p
        if p < WI[w, ORD]:
            return C_PRIORITY
        if multi and not _free_fit(SI, GC, GV, cap, used, s, np.int64(0), extra, mark, touched) \
                and _free_fit(SI, GC, GV, cap, used, s, np.int64(1), extra, mark, touched):
            return C_GANG
    elif multi:
        o, ng = SI[s, GOFF], SI[s, NG]
        enough = True
        for r in range(cap.shape[0]):
            tot = 0
            for k in range(ng):
                if GC[o + k] > 0:
                    tot += GC[o + k] * GV[o + k, r]
            if tot > 0 and capt[r] - rused[r] < tot:
                enough = False
                break
        gang = True
        if enough and _free_fit(SI, GC, GV, cap, used, s, np.int64(0), extra, mark, touched):
            gang = False
        if gang and _descend(T, size, N, GV, _first_group(SI, GC, s), stack) >= 0:
            return C_GANG
    if position > 1:
        return C_PRIORITY
    return C_RESOURCES


@njit(cache=True, _nrt=False)
def _before(WI, WF, qrank, a, b):
    """The round's order: queue name, then the model's order (priority, submit, id)."""
    qa, qb = qrank[WI[a, Q]], qrank[WI[b, Q]]
    if qa != qb:
        return qa < qb
    pa, pb = WF[a, NEGP], WF[b, NEGP]
    if pa != pb:
        return pa < pb
    return WI[a, ORD] < WI[b, ORD]


@njit(cache=True)
def _sort_round(P, WI, WF, qrank):
    """Bottom-up merge sort of ``P`` by ``_before`` (the keys are unique)."""
    n = P.shape[0]
    src = P
    dst = np.empty_like(P)
    width = 1
    swapped = False
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if _before(WI, WF, qrank, src[b], src[a]):
                    dst[k] = src[b]
                    b += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < hi:
                dst[k] = src[b]
                b += 1
                k += 1
            lo = hi
        src, dst = dst, src
        swapped = not swapped
        width *= 2
    if swapped:
        for k in range(n):
            P[k] = src[k]


@njit(cache=True)
def _observe(IS, FS, WI, WF, SI, GC, GV, T, size, N, cap, used, capt, rused, INV, qrank, waitcnt,
             TRW, TRT, TRC, extra, mark, touched, stack, now):
    if now >= FS[NEXT_ROUND]:
        npend = IS[PCOUNT]
        P = np.empty(npend, np.int64)
        w = IS[PHEAD]
        k = 0
        while w >= 0:
            P[k] = w
            k += 1
            w = np.int64(WI[w, PNEXT])
        _sort_round(P, WI, WF, qrank)
        for q in range(waitcnt.shape[0]):
            waitcnt[q] = 0
        head = IS[HEAD]
        for k in range(npend):
            w = P[k]
            q = WI[w, Q]
            pos = waitcnt[q] + 1
            waitcnt[q] = pos
            if pos <= head:
                code = _classify(IS, WI, SI, GC, GV, T, size, N, cap, used, capt, rused, INV, w, pos,
                                 extra, mark, touched, stack)
            else:
                code = C_NOWHERE if SI[WI[w, S], NOWHERE] else C_PRIORITY
            _set(IS, WI, TRW, TRT, TRC, w, now, code)
        IS[ROUNDS] += 1
        IS[SINCE] += 1
        if IS[SINCE] >= IS[RPD]:
            FS[RINTERVAL] *= 2
            IS[SINCE] = 0
        FS[NEXT_ROUND] = now + FS[RINTERVAL]
    else:
        for w in range(IS[FRESH_LO], IS[NSUB]):
            if WI[w, STATE] != 1:
                continue
            q = WI[w, Q]
            if WI[w, CUR] >= 0:
                pos = 2 if waitcnt[q] > 1 else 1
            else:
                pos = waitcnt[q] + 1
                waitcnt[q] = pos
            code = _classify(IS, WI, SI, GC, GV, T, size, N, cap, used, capt, rused, INV, w, pos,
                             extra, mark, touched, stack)
            _set(IS, WI, TRW, TRT, TRC, w, now, code)
    IS[FRESH_LO] = IS[NSUB]


@njit(cache=True, _nrt=False)
def _start(IS, FS, WI, WF, GV, FT, FI, PG, PI, T, cap, used, size, rused, qusage, pres, pn, ptasks,
           qp_off, qp, tracked, STL, w, n, out_g, out_i, now):
    R = cap.shape[0]
    q = WI[w, Q]
    for k in range(n):
        g = out_g[k]
        i = out_i[k]
        for r in range(R):
            v = GV[g, r]
            used[r, i] += v
            rused[r] += v
        for j in range(qp_off[q], qp_off[q + 1]):
            p = qp[j]
            for r in range(R):
                qusage[p, r] += GV[g, r]
            if tracked[p]:
                for r in range(R):
                    pres[p, r] -= GV[g, r]
                pn[p] -= 1
        ptasks[q] -= 1
    IS[SEQ] += 1
    end = now + WF[w, RUN]
    if n == 1:
        _fpush(FT, FI, IS, end, IS[SEQ], w, out_g[0], out_i[0])
    else:
        o = IS[NPLACE]
        for k in range(n):
            PG[o + k] = out_g[k]
            PI[o + k] = out_i[k]
        IS[NPLACE] = o + n
        WI[w, POFF] = o
        WI[w, PNUM] = n
        _fpush(FT, FI, IS, end, IS[SEQ], w, np.int64(-1), o)
    for k in range(n):
        if k == 0 or out_i[k] != out_i[k - 1]:
            _leaf(T, cap, used, size, out_i[k])
    WF[w, FIRST] = now
    STL[IS[NSTARTED]] = w
    IS[NSTARTED] += 1
    WI[w, STATE] = 2
    WI[w, CUR] = -1
    a, b = WI[w, PPREV], WI[w, PNEXT]
    if a >= 0:
        WI[a, PNEXT] = b
    else:
        IS[PHEAD] = b
    if b >= 0:
        WI[b, PPREV] = a
    else:
        IS[PTAIL] = a
    IS[PCOUNT] -= 1


@njit(cache=True, _nrt=False)
def _task_done(IS, FS, WI, WF, GV, cap, used, rused, qusage, qp_off, qp, FNL, w, g, i, now):
    R = cap.shape[0]
    q = WI[w, Q]
    for r in range(R):
        v = GV[g, r]
        used[r, i] -= v
        rused[r] -= v
    for j in range(qp_off[q], qp_off[q + 1]):
        p = qp[j]
        for r in range(R):
            qusage[p, r] -= GV[g, r]
    IS[RELEASES] += 1
    left = WI[w, LEFT] - 1
    WI[w, LEFT] = left
    if WI[w, KILL]:
        WI[w, KILLC] += 1
    if left == 0:
        WF[w, FIN] = now
        FNL[IS[NFINISHED]] = w
        IS[NFINISHED] += 1
    if now > FS[END_T]:
        FS[END_T] = now


@njit(cache=True)
def run(IS, FS, WI, WF, INV, SI, GC, GV, T, cap, used, capt, rused, integral, qusage, pres, pn, ptasks,
        qp_off, qp, tracked, tq, leaf_q, leaf_w, ccap, qrank, waitcnt, FT, FI, PG, PI, STL, FNL,
        TRW, TRT, TRC, NTW, NTT, ST, SU, SQ, SP, SPN, SJ, newl):
    R = cap.shape[0]
    N = cap.shape[1]
    size = T.shape[1] // 2
    nmax = WI.shape[0]
    out_g = np.empty(nmax if nmax > 1 else 1, np.int64)
    out_i = np.empty(nmax if nmax > 1 else 1, np.int64)
    taken = np.empty((N if N else 1, R), np.int64)
    extra = np.empty((N if N else 1, R), np.int64)
    mark = np.zeros(N if N else 1, np.int8)
    touched = np.empty(N if N else 1, np.int64)
    stack = np.empty(3 * 130, np.int64)
    horizon = FS[HORIZON]
    strict = IS[STRICT]
    nnew = 0
    while True:
        if IS[NSUB] == IS[NLOAD] and IS[MORE]:
            return NEED_INPUT
        if TRW.shape[0] - IS[TRAIL_N] < IS[PCOUNT] + (IS[NLOAD] - IS[NSUB]) + 1:
            return LOG_FULL
        have_next = IS[NSUB] < IS[NLOAD]
        nf = IS[FIN_N]
        if nf == 0 and not have_next:
            break
        if not have_next or (nf and FT[0] <= WF[IS[NSUB], SUB]):
            time = FT[0]
        else:
            time = WF[IS[NSUB], SUB]
        if time > horizon:
            IS[STOPPED] = 1
            break
        FS[NOW] = time
        if time > FS[LAST_T]:
            dt = time - FS[LAST_T]
            for r in range(R):
                v = rused[r]
                if v:
                    integral[r] = integral[r] + v * dt
            FS[LAST_T] = time
            if IS[NSAMP] == 0 or time - ST[IS[NSAMP] - 1] >= FS[SINTERVAL]:
                _sample(IS, FS, time, rused, qusage, pres, pn, ptasks, tq, leaf_q, leaf_w, ccap,
                        ST, SU, SQ, SP, SPN, SJ)
        while IS[FIN_N] and FT[0] == time:
            k = _fpop(FT, FI, IS)
            w, g, i = FI[k, 1], FI[k, 2], FI[k, 3]
            IS[EVENTS] += 1
            IS[RELEASED] = 1
            if g >= 0:
                _task_done(IS, FS, WI, WF, GV, cap, used, rused, qusage, qp_off, qp, FNL, w, g, i, time)
                _leaf(T, cap, used, size, i)
            else:
                o, n = WI[w, POFF], WI[w, PNUM]
                for j in range(o, o + n):
                    _task_done(IS, FS, WI, WF, GV, cap, used, rused, qusage, qp_off, qp, FNL, w, PG[j], PI[j], time)
                IS[EVENTS] += n - 1
                for j in range(o, o + n):
                    if j == o or PI[j] != PI[j - 1]:
                        _leaf(T, cap, used, size, PI[j])
        while IS[NSUB] < IS[NLOAD] and WF[IS[NSUB], SUB] <= time:
            w = IS[NSUB]
            if WI[w, BAD]:
                return BAD_INPUT
            IS[EVENTS] += 1
            s = np.int64(WI[w, S])
            q = WI[w, Q]
            tasks = WI[w, TASKS]
            ptasks[q] += tasks
            o, ng = SI[s, GOFF], SI[s, NG]
            for j in range(qp_off[q], qp_off[q + 1]):
                p = qp[j]
                if tracked[p]:
                    for k in range(ng):
                        c = GC[o + k]
                        if c > 0:
                            for r in range(R):
                                pres[p, r] += c * GV[o + k, r]
                    pn[p] += tasks
            if not IS[HAS_FIRST]:
                IS[HAS_FIRST] = 1
                FS[FIRST_T] = time
            WI[w, STATE] = 1
            WI[w, CUR] = -1
            WI[w, TLAST] = -1
            WI[w, PNEXT] = -1
            WI[w, PPREV] = IS[PTAIL]
            if IS[PTAIL] >= 0:
                WI[IS[PTAIL], PNEXT] = w
            else:
                IS[PHEAD] = w
            IS[PTAIL] = w
            IS[PCOUNT] += 1
            if strict:
                IS[FIFO] = _hpush(WI, WF, IS[FIFO], w)
            else:
                SI[s, ROOT] = _hpush(WI, WF, SI[s, ROOT], w)
                if SI[s, NEWMARK] != IS[STAMP]:
                    SI[s, NEWMARK] = IS[STAMP]
                    newl[nnew] = s
                    nnew += 1
            IS[NSUB] = w + 1
        # the pass
        if strict:
            root = IS[FIFO]
            if root >= 0 and (IS[RELEASED] or not (IS[BLOCKED_W] == root and IS[BLOCKED_REL] == IS[RELEASES])):
                blocked = False
                while IS[FIFO] >= 0:
                    w = IS[FIFO]
                    s = np.int64(WI[w, S])
                    if not SI[s, FITS_EMPTY]:
                        IS[FIFO] = _hpop(WI, WF, w)
                        NTW[IS[NOTES_N]] = w
                        NTT[IS[NOTES_N]] = time
                        IS[NOTES_N] += 1
                        continue
                    n = _place(SI, GC, GV, T, size, N, capt, rused, s, out_g, out_i, taken, mark, touched, stack)
                    if n < 0:
                        IS[BLOCKED_W] = w
                        IS[BLOCKED_REL] = IS[RELEASES]
                        blocked = True
                        break
                    IS[FIFO] = _hpop(WI, WF, w)
                    _start(IS, FS, WI, WF, GV, FT, FI, PG, PI, T, cap, used, size, rused, qusage, pres, pn, ptasks,
                           qp_off, qp, tracked, STL, w, n, out_g, out_i, time)
                if not blocked:
                    IS[BLOCKED_W] = -1
        else:
            rel = IS[RELEASES]
            nc = 0
            if IS[RELEASED]:
                for s in range(IS[NSHAPES]):
                    if SI[s, ROOT] >= 0 and not SI[s, NOWHERE]:
                        newl[nnew + nc] = s
                        nc += 1
            else:
                for k in range(nnew):
                    s = newl[k]
                    if SI[s, FAILED_AT] != rel and SI[s, ROOT] >= 0 and not SI[s, NOWHERE]:
                        newl[nnew + nc] = s
                        nc += 1
            while nc:
                best = np.int64(-1)
                bk = np.int64(-1)
                for k in range(nc):
                    s = newl[nnew + k]
                    if best < 0 or _less(WI, WF, SI[s, ROOT], SI[best, ROOT]):
                        best = s
                        bk = k
                n = _place(SI, GC, GV, T, size, N, capt, rused, best, out_g, out_i, taken, mark, touched, stack)
                if n < 0:
                    SI[best, FAILED_AT] = rel
                    newl[nnew + bk] = newl[nnew + nc - 1]
                    nc -= 1
                    continue
                w = SI[best, ROOT]
                SI[best, ROOT] = _hpop(WI, WF, w)
                _start(IS, FS, WI, WF, GV, FT, FI, PG, PI, T, cap, used, size, rused, qusage, pres, pn, ptasks,
                       qp_off, qp, tracked, STL, w, n, out_g, out_i, time)
                if SI[best, ROOT] < 0:
                    newl[nnew + bk] = newl[nnew + nc - 1]
                    nc -= 1
        IS[RELEASED] = 0
        nnew = 0
        IS[STAMP] += 1
        _observe(IS, FS, WI, WF, SI, GC, GV, T, size, N, cap, used, capt, rused, INV, qrank, waitcnt,
                 TRW, TRT, TRC, extra, mark, touched, stack, time)
    # close: the last instant's integral and sample
    now = FS[NOW]
    if now > FS[LAST_T]:
        dt = now - FS[LAST_T]
        for r in range(R):
            v = rused[r]
            if v:
                integral[r] = integral[r] + v * dt
        FS[LAST_T] = now
        if IS[NSAMP] == 0 or now - ST[IS[NSAMP] - 1] >= FS[SINTERVAL]:
            _sample(IS, FS, now, rused, qusage, pres, pn, ptasks, tq, leaf_q, leaf_w, ccap, ST, SU, SQ, SP, SPN, SJ)
    if now > FS[END_T]:
        FS[END_T] = now
    IS[FINAL] = 1
    return DONE
