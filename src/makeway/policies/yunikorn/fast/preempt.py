"""``Preemptor.try_preemption`` on the compiled loop's arrays, for the class ``pack.unsupported``
accepts (``docs/plans/yunikorn-compiled-loop.md``, section 2).

In the class the root has no guarantee, so a queue's remaining guarantee is its own
``G - (U - P)`` over its guarantee's types, or unset (no guarantee, or the prefix rule of
``Snap.remaining_guaranteed``: ``PREFIX[q, a]``). Every candidate comparator left is the key
``(-start_us, leaf, seq)``. Tasks started in the call are no candidates: the model's view of
the allocations is made at the call's start (``LC`` counts them from the next call).
``additional_victims`` never fails here (a victim is kept only where it fits the ask queue's
remainder, so that remainder stays non-negative), so its walk stops as soon as the final
selection is settled.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import os

from makeway.jitcache import by_package

from makeway.policies.yunikorn.fast.layout import (
    N_CNT, N_OFF, N_RESV, Q_HASG, Q_LN, T_MARK, T_NODE, T_PLEV, T_PRIO, T_Q, T_SEQ, T_STARTUS, T_VICT,
)

by_package(os.path.dirname(__file__))  # the loop inlines helpers from every file here: any edit recompiles



@njit(cache=True, _nrt=False, inline='always')
def _copy2(dst, src):
    """``dst[:, :] = src`` without an allocation (a slice copy checks for overlap through a
    temporary, which needs numba's runtime)."""
    for i in range(src.shape[0]):
        for k in range(src.shape[1]):
            dst[i, k] = src[i, k]

@njit(cache=True, _nrt=False)
def over(G, GT, P, ASKT, Uw, q):
    """``victim_queue_over``: some ask type of ``q``'s remainder is negative."""
    for k in range(G.shape[1]):
        if GT[q, k] and ASKT[k] and G[q, k] - Uw[q, k] + P[q, k] < 0:
            return True
    return False


@njit(cache=True, _nrt=False)
def fits_rem(G, GT, P, ASKT, Uw, q, REQ, v):
    """``fit_in_actual(remaining(q), REQ[v])``."""
    for k in range(G.shape[1]):
        if GT[q, k] and ASKT[k] and REQ[v, k] > G[q, k] - Uw[q, k] + P[q, k]:
            return False
    return True


@njit(cache=True, _nrt=False)
def within(G, GT, P, Uw, q):
    for k in range(G.shape[1]):
        if GT[q, k] and G[q, k] - Uw[q, k] + P[q, k] < 0:
            return False
    return True


@njit(cache=True, _nrt=False)
def _before(TI, a, b):
    """The candidates' order: newest start first, then leaf order, then start order."""
    if TI[a, T_STARTUS] != TI[b, T_STARTUS]:
        return TI[a, T_STARTUS] > TI[b, T_STARTUS]
    if TI[a, T_Q] != TI[b, T_Q]:
        return TI[a, T_Q] < TI[b, T_Q]
    return TI[a, T_SEQ] < TI[b, T_SEQ]


@njit(cache=True, _nrt=False)
def sgt(ASKT, REQ, x, total, empty):
    """``strictly_greater_than_only_existing(ask, total)``; every request has the ask's types."""
    if empty:
        return True
    differs = False
    for k in range(total.shape[0]):
        if ASKT[k]:
            if total[k] > REQ[x, k]:
                return False
            if total[k] != REQ[x, k]:
                differs = True
    return differs


@njit(cache=True, inline='always')
def _by_node(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, CAP, USED, x, a, n, nc, beat, Uw, avail, cand, head,
             tail, res):
    """``victims_by_node`` on a node where the ask does not fit as it is, its ``nc`` candidates in
    ``cand`` (``try_preemption`` collects them; a node without any, or with ``beat`` 1 and no single
    candidate that makes the ask fit, answers None there): (index, count of ``res``), or (-1, -1)
    for None."""
    R = REQ.shape[1]
    if beat > 1:  # only an index below ``beat`` wins: ``beat`` candidates at most must make it fit
        for k in range(R):
            if not ASKT[k]:
                continue
            need = REQ[x, k] - (CAP[n, k] - USED[n, k])
            got = 0
            last = np.iinfo(np.int64).max
            lastn = 0
            for _ in range(min(beat, nc)):  # the ``beat`` largest amounts, ties counted
                top = -1
                for i in range(nc):
                    val = REQ[cand[i], k]
                    if val < last and val > top:
                        top = val
                if top < 0:
                    break
                cnt = 0
                for i in range(nc):
                    if REQ[cand[i], k] == top:
                        cnt += 1
                use = min(cnt, beat - lastn)
                got += use * top
                lastn += use
                last = top
                if lastn >= beat:
                    break
            if got < need:
                return -1, -1
    for i in range(1, nc):
        t = cand[i]
        k = i
        while k > 0 and _before(TI, t, cand[k - 1]):
            cand[k] = cand[k - 1]
            k -= 1
        cand[k] = t
    _copy2(Uw, U)
    for k in range(R):
        avail[k] = CAP[n, k] - USED[n, k]
    nh = 0
    nt = 0
    for i in range(nc):
        v = cand[i]
        qs = TI[v, T_Q]
        is_over = not (QI[qs, Q_HASG] != 0 and (qs == a or not PREFIX[qs, a])) or over(G, GT, P, ASKT, Uw, qs)
        for k in range(R):
            Uw[qs, k] -= REQ[v, k]
        if is_over:
            if QI[a, Q_HASG] and fits_rem(G, GT, P, ASKT, Uw, a, REQ, v):
                for k in range(R):
                    Uw[a, k] += REQ[v, k]
            else:
                for k in range(R):
                    Uw[qs, k] += REQ[v, k]
                break
            same = True
            for k in range(R):
                if ASKT[k]:
                    s0 = max(0, REQ[x, k] - avail[k])
                    s1 = max(0, REQ[x, k] - avail[k] - REQ[v, k])
                    if s0 != s1:
                        same = False
            if same:
                for k in range(R):
                    Uw[qs, k] += REQ[v, k]
                    Uw[a, k] -= REQ[v, k]
                tail[nt] = v
                nt += 1
            else:
                for k in range(R):
                    avail[k] += REQ[v, k]
                head[nh] = v
                nh += 1
        else:
            for k in range(R):
                Uw[qs, k] += REQ[v, k]
    if nh + nt == 0:
        return -1, -1
    for i in range(nt):
        head[nh + i] = tail[i]
    _copy2(Uw, U)
    for k in range(R):
        avail[k] = CAP[n, k] - USED[n, k]
    nr = 0
    index = -1
    for i in range(nh + nt):
        v = head[i]
        qs = TI[v, T_Q]
        is_over = not (QI[qs, Q_HASG] != 0 and (qs == a or not PREFIX[qs, a])) or over(G, GT, P, ASKT, Uw, qs)
        for k in range(R):
            Uw[qs, k] -= REQ[v, k]
        if is_over:
            for k in range(R):
                avail[k] += REQ[v, k]
            if index < 0:
                ok = True
                for k in range(R):
                    if ASKT[k] and REQ[x, k] > max(0, avail[k]):
                        ok = False
                        break
                if ok:
                    index = nr
            res[nr] = v
            nr += 1
        else:
            for k in range(R):
                Uw[qs, k] += REQ[v, k]
    if index < 0:
        return -1, -1
    return index, nr


@njit(cache=True, _nrt=False)
def _eligible(REQ, ASKT, NI, CAP, USED, x, n):
    """Node ``n`` is searched for victims of ask ``x``: not reserved by another ask, large
    enough, and without room for the ask as it is."""
    rv = NI[n, N_RESV]
    if rv >= 0 and rv != x:
        return False
    free = True
    for k in range(REQ.shape[1]):
        if ASKT[k]:
            if REQ[x, k] > max(0, CAP[n, k]):
                return False
            if REQ[x, k] > CAP[n, k] - USED[n, k]:
                free = False
    return not free


@njit(cache=True, _nrt=False)
def _candidate(TI, SCOPE, p, seq0, t):
    return SCOPE[TI[t, T_Q]] and TI[t, T_PRIO] <= p and not TI[t, T_VICT] and TI[t, T_SEQ] <= seq0


@njit(cache=True, _nrt=False)
def _first(TI, NI, NL, SCOPE, p, seq0, n):
    """The first of node ``n``'s candidates in the victims' order, or -1. ``_by_node``'s walk
    starts there: a leaf in scope is over its guarantee in some ask type (in the class no usage
    lies outside the ask types), so the walk skips none of its candidates."""
    first = -1
    for j in range(NI[n, N_OFF], NI[n, N_OFF] + NI[n, N_CNT]):
        t = NL[j]
        if _candidate(TI, SCOPE, p, seq0, t) and (first < 0 or _before(TI, t, first)):
            first = t
    return first


@njit(cache=True, _nrt=False)
def _fits_after(REQ, ASKT, CAP, USED, x, n, v):
    """Whether ask ``x`` fits on ``n`` once victim ``v`` alone is gone. Where ``v`` is the node's
    ``_first`` and fits the ask queue's remainder, this is ``_by_node``'s index being 0: every
    request is positive in every ask type (``pack.unsupported``), so ``v`` cuts the shortfall and
    heads the node's victims."""
    for k in range(REQ.shape[1]):
        if ASKT[k] and REQ[x, k] > max(0, CAP[n, k] - USED[n, k] + REQ[v, k]):
            return False
    return True


@njit(cache=True, _nrt=False)
def _node_index(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, NI, CAP, USED, NL, SCOPE, Uw, avail, cand, head, tail, res,
                seq0, x, a, n, beat):
    """``victims_by_node`` on eligible node ``n`` as ``_by_node`` answers it, its candidates
    collected here; with ``beat`` 1 (only an index of 0 can win), a node where no single candidate
    makes the ask fit answers None at once: its index is at least 1."""
    R = REQ.shape[1]
    p = TI[x, T_PRIO]
    nc = 0
    one = beat != 1
    for j in range(NI[n, N_OFF], NI[n, N_OFF] + NI[n, N_CNT]):
        t = NL[j]
        if _candidate(TI, SCOPE, p, seq0, t):
            cand[nc] = t
            nc += 1
            if not one:
                one = True
                for k in range(R):
                    if ASKT[k] and REQ[x, k] > CAP[n, k] - USED[n, k] + REQ[t, k]:
                        one = False
                        break
    if nc == 0 or not one:
        return -1, -1
    return _by_node(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, CAP, USED, x, a, n, nc, beat, Uw, avail, cand, head,
                    tail, res)


@njit(cache=True, _nrt=False)
def guarantees(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, INCL, CAPT, LC, SCOPE, x, a):
    """The leaves in scope (``SCOPE``: not within their guarantee, with a candidate; none when
    the ask's leaf is fenced) and ``check_queue_guarantees`` in closed form: whether the attempt
    of ask ``x`` (leaf ``a``) goes on."""
    Q, R = G.shape[0], G.shape[1]
    fenced = False
    for k in range(R):
        if ASKT[k] and INCL[k] and U[a, k] + REQ[x, k] > CAPT[k]:
            fenced = True
    any_cand = False
    plev = TI[x, T_PLEV]
    for q in range(Q):
        SCOPE[q] = False
        if fenced or q == a:
            continue
        if QI[q, Q_HASG] != 0 and (q == a or not PREFIX[q, a]) and within(G, GT, P, U, q):
            continue
        c = 0
        for lv in range(plev + 1):
            c += LC[q, lv]
        if c > 0:
            SCOPE[q] = True
            any_cand = True
    if not QI[a, Q_HASG]:
        return False
    if not fits_rem(G, GT, P, ASKT, U, a, REQ, x):
        if not any_cand:
            return False
        for k in range(R):
            if GT[a, k] and ASKT[k] and G[a, k] - U[a, k] - REQ[x, k] + P[a, k] < 0:
                return False
    return True


@njit(cache=True, _nrt=False)
def try_preemption(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, NI, CAP, USED, NL, BYNAME, LL, SCOPE, REFUSED, PTR, Uw,
                   avail, total, cand, head, tail, res, best, KEPT, seq0, x, a, final):
    """The attempt of ask ``x`` (leaf ``a``) once its preconditions and ``guarantees`` held,
    with ``SCOPE`` as that left it: (node, victims in ``final[:count]``), or (-1, 0). Nothing is
    committed here (``seq0``: the last start sequence before the call)."""
    R = G.shape[1]
    N = CAP.shape[0]
    # the node: least (index, name). The model first looks for a node with room for the ask as it
    # is when the ask exceeded the partition's headroom (nodes not tried); no node has more room
    # than the headroom (usage never passes capacity in the class), so that search is left out.
    p = TI[x, T_PRIO]
    chosen = -1
    index = -1
    # first the least node whose index is 0 (it wins at once, so the nodes before it need no
    # index); the nodes that may have an index are kept for the search by index, should there be none
    nk = 0
    for i in range(N):
        n = BYNAME[i]
        if not _eligible(REQ, ASKT, NI, CAP, USED, x, n):
            continue
        v0 = _first(TI, NI, NL, SCOPE, p, seq0, n)
        if v0 < 0 or not (QI[a, Q_HASG] and fits_rem(G, GT, P, ASKT, U, a, REQ, v0)):
            continue  # no victim at all here: the walk takes none or stops at the first
        if _fits_after(REQ, ASKT, CAP, USED, x, n, v0):
            chosen, index = n, 0
            best[0] = v0
            break
        KEPT[nk] = n
        nk += 1
    if chosen < 0:
        for i in range(nk):
            n = KEPT[i]
            beat = index if chosen >= 0 else -1
            idx, cnt = _node_index(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, NI, CAP, USED, NL, SCOPE, Uw, avail,
                                   cand, head, tail, res, seq0, x, a, n, beat)
            if cnt < 0:
                continue
            if chosen < 0 or idx < index:
                chosen = n
                index = idx
                for j in range(idx + 1):
                    best[j] = res[j]
    if chosen < 0:
        return -1, 0
    # final selection over the node's victims, then additional_victims' as they come
    nf = 0
    for k in range(R):
        total[k] = 0
    empty = True
    for j in range(index + 1):
        v = best[j]
        final[nf] = v
        nf += 1
        for k in range(R):
            total[k] += REQ[v, k]
        empty = False
        if not sgt(ASKT, REQ, x, total, empty):
            break
    if sgt(ASKT, REQ, x, total, empty) and QI[a, Q_HASG]:  # the ask does not fit as it is: not ``fits``
        gshared = False
        for k in range(R):
            if GT[a, k] and ASKT[k]:
                gshared = True
        if gshared:
            nf, empty = _extras(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, LL, SCOPE, REFUSED, PTR, Uw, total, best,
                                seq0, x, a, chosen, index, final, nf, empty)
    if sgt(ASKT, REQ, x, total, empty):
        return -1, 0
    return chosen, nf


@njit(cache=True, _nrt=False)
def _extras(TI, REQ, QI, G, GT, U, P, PREFIX, ASKT, LL, SCOPE, REFUSED, PTR, Uw, total, best, seq0, x, a, chosen,
            index, final, nf, empty):
    """``additional_victims``' walk, each victim kept going to the final selection at once; it
    stops when the selection is full (``strictly_greater_than_only_existing`` turned false)."""
    Q, R = G.shape[0], G.shape[1]
    p = TI[x, T_PRIO]
    _copy2(Uw, U)
    for j in range(index + 1):
        v = best[j]
        TI[v, T_MARK] = 1
        for k in range(R):
            Uw[TI[v, T_Q], k] -= REQ[v, k]
    for q in range(Q):
        REFUSED[q] = not SCOPE[q]
        PTR[q] = QI[q, Q_LN] - 1
    done = False
    while not done:
        bq = -1
        bsu = 0
        for q in range(Q):
            if REFUSED[q]:
                continue
            j = PTR[q]
            while j >= 0 and LL[q, j] < 0:
                j -= 1
            PTR[q] = j
            if j < 0:
                continue
            su = TI[LL[q, j], T_STARTUS]
            if bq < 0 or su > bsu:
                bq = q
                bsu = su
        if bq < 0:
            break
        top = PTR[bq]
        b = top
        j = top - 1
        while j >= 0:
            t = LL[bq, j]
            if t >= 0:
                if TI[t, T_STARTUS] != bsu:
                    break
                b = j
            j -= 1
        PTR[bq] = b - 1
        for j in range(b, top + 1):
            v = LL[bq, j]
            if v < 0 or TI[v, T_PRIO] > p or TI[v, T_VICT] or TI[v, T_MARK] or TI[v, T_SEQ] > seq0:
                continue
            if REFUSED[bq]:
                break
            if QI[bq, Q_HASG] != 0 and (bq == a or not PREFIX[bq, a]) and not over(G, GT, P, ASKT, Uw, bq):
                REFUSED[bq] = True
                break
            if not fits_rem(G, GT, P, ASKT, Uw, a, REQ, v):
                done = True
                break
            for k in range(R):
                Uw[a, k] += REQ[v, k]
                Uw[bq, k] -= REQ[v, k]
            if TI[v, T_NODE] == chosen:
                final[nf] = v
                nf += 1
                for k in range(R):
                    total[k] += REQ[v, k]
                empty = False
                if not sgt(ASKT, REQ, x, total, empty):
                    done = True
                    break
    for j in range(index + 1):
        TI[best[j], T_MARK] = 0
    return nf, empty
