"""A ``FastRecorder``'s sums and samples made in one compiled pass over its feed, at the close.

A recorder of whole-number tasks (one task per workload, as a compiled YuniKorn run records) only
needs its sums (usage per resource and per queue, pending demand of the tracked queues, pending
tasks) and the utilisation integral at each change of instant and at the samples, so its feed can
be a list of codes (``events``) read once at the end, instead of a dozen list updates per event
in Python. ``replay`` makes the sums, the integral and the samples in the order and with the
float operations ``FastRecorder`` makes them (``before_change``, ``_sample``, ``_thin``,
``jain_now``), so the document is the same.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# an event code is ``w * 4 + kind``; a change of instant is ``-1 - k``, the instant ``marks[k]``
E_START, E_EVICT, E_FINISH, E_SUBMIT = range(4)


@njit(cache=True)
def _pysum(xs, n, compensated):
    """Python's ``sum`` of the floats ``xs[:n]``: plain additions up to 3.11, Neumaier's
    compensated sum from 3.12 on (CPython's ``builtin_sum``)."""
    f = 0.0
    c = 0.0
    for i in range(n):
        x = xs[i]
        t = f + x
        if compensated:
            if abs(f) >= abs(x):
                c += (f - t) + x
            else:
                c += (x - t) + f
        f = t
    if compensated and c != 0.0 and np.isfinite(c):
        f += c
    return f


@njit(cache=True)
def _jain(qusage, ptasks, leaf_q, leaf_w, ccap, xs, sq, compensated):
    """``FastRecorder.jain_now``."""
    R = qusage.shape[1]
    n = 0
    for k in range(leaf_q.shape[0]):
        q = leaf_q[k]
        busy = ptasks[q] != 0
        for r in range(R):
            if qusage[q, r] != 0:
                busy = True
        if not busy:
            continue
        share = 0.0
        first = True
        for r in range(R):
            if ccap[r] != 0:
                x = qusage[q, r] / ccap[r]
                if first or x > share:
                    share = x
                    first = False
        xs[n] = share / leaf_w[k]
        sq[n] = xs[n] * xs[n]
        n += 1
    if n == 0:
        return 1.0
    total = _pysum(xs, n, compensated)
    s2 = _pysum(sq, n, compensated)
    return (total * total) / (n * s2) if s2 > 0 else 1.0


@njit(cache=True)
def replay(events, marks, REQ, WQ, PATH, TRK, nq, last_t, interval, cap_samples, leaf_q, leaf_w, ccap, tq,
           compensated):
    """The feed ``events`` applied in order: (used, integral, qusage, pres, pn, ptasks, and the
    samples ``ST``, ``SU``, ``SQ``, ``SP``, ``SPN``, ``SJ`` with their count and interval).
    ``PATH[q]``/``TRK[q]``: queue ``q``'s path to the root and its tracked part, -1 padded."""
    R = REQ.shape[1]
    T = tq.shape[0]
    used = np.zeros(R, np.int64)
    integral = np.zeros(R, np.float64)
    qusage = np.zeros((nq, R), np.int64)
    pres = np.zeros((nq, R), np.int64)
    pn = np.zeros(nq, np.int64)
    ptasks = np.zeros(nq, np.int64)
    ST = np.zeros(cap_samples, np.float64)
    SU = np.zeros((cap_samples, R), np.int64)
    SQ = np.zeros((cap_samples, T, R), np.int64)
    SP = np.zeros((cap_samples, T, R), np.int64)
    SPN = np.zeros((cap_samples, T), np.int64)
    SJ = np.zeros(cap_samples, np.float64)
    xs = np.zeros(leaf_q.shape[0] + 1, np.float64)
    sq = np.zeros(leaf_q.shape[0] + 1, np.float64)
    ns = 0
    for e in events:
        if e < 0:  # ``before_change`` at a later instant
            now = marks[-1 - e]
            dt = now - last_t
            for r in range(R):
                if used[r] != 0:
                    integral[r] = integral[r] + used[r] * dt
            last_t = now
            if ns == 0 or now - ST[ns - 1] >= interval:
                if ns >= cap_samples:  # ``_thin``: every other sample, the interval doubled
                    m = (ns + 1) // 2
                    for k in range(m):
                        ST[k] = ST[2 * k]
                        SJ[k] = SJ[2 * k]
                        for r in range(R):
                            SU[k, r] = SU[2 * k, r]
                        for t in range(T):
                            SPN[k, t] = SPN[2 * k, t]
                            for r in range(R):
                                SQ[k, t, r] = SQ[2 * k, t, r]
                                SP[k, t, r] = SP[2 * k, t, r]
                    ns = m
                    interval *= 2
                ST[ns] = now
                for r in range(R):
                    SU[ns, r] = used[r]
                for t in range(T):
                    q = tq[t]
                    for r in range(R):
                        SQ[ns, t, r] = qusage[q, r]
                        SP[ns, t, r] = pres[q, r]
                    SPN[ns, t] = pn[q]
                SJ[ns] = _jain(qusage, ptasks, leaf_q, leaf_w, ccap, xs, sq, compensated)
                ns += 1
            continue
        w = e >> 2
        kind = e & 3
        q = WQ[w]
        if kind == E_SUBMIT:
            sign = 1
        elif kind == E_START:
            sign = -1
        elif kind == E_EVICT:
            sign = 1
        else:
            sign = 0
        if kind != E_FINISH:  # pending demand and tasks
            ptasks[q] += sign
            for j in range(TRK.shape[1]):
                p = TRK[q, j]
                if p < 0:
                    break
                pn[p] += sign
                for r in range(R):
                    pres[p, r] += sign * REQ[w, r]
        if kind != E_SUBMIT:  # usage
            up = 1 if kind == E_START else -1
            for r in range(R):
                used[r] += up * REQ[w, r]
            for j in range(PATH.shape[1]):
                p = PATH[q, j]
                if p < 0:
                    break
                for r in range(R):
                    qusage[p, r] += up * REQ[w, r]
    return used, integral, qusage, pres, pn, ptasks, ST, SU, SQ, SP, SPN, SJ, ns, interval, last_t
