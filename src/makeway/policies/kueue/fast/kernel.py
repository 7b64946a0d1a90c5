"""Kueue's quota arithmetic, flavor assignment and classic target search on one flavor-resource,
compiled: ``quota_one.Frame``, ``assign._one_flavor`` and ``preemption._search_one`` restated on
the arrays of ``layout`` (the Python model stays the reference these are tested against).

The small helpers are inlined (``inline='always'``): a compiled call increments and decrements
the reference count of every array it is passed, atomically, and the search makes many.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from makeway.policies.kueue.fast.layout import (
    BL, BW_ALLOWED, BW_NOT_NEVER, FIT, HASBL, HASTH, HEIGHT, HIERARCHICAL, LQ, NOFIT, NOM, P_ANY, P_LOWER,
    P_LOWER_OR_NEWER, P_NEVER, P_OTHER, PAR, PREEMPT, RECLAIM, RECLAIM_WHILE_BORROWING,
    RECLAIM_WITHOUT_BORROWING, ROOT, SUB, TH, W_CQ, W_PRIO, W_QV, W_RANK, WITHIN, WITHIN_CQ,
)

INT64_MAX = np.int64(2**63 - 1)


@njit(cache=True, inline='always')
def sat_add(a, b):
    if a > INT64_MAX - b:
        return INT64_MAX
    return a + b


@njit(cache=True, inline='always')
def add(TI, u, i, delta):
    """``QuotaTree.add_usage`` of ``delta`` at node ``i``: the part above a node's local quota
    goes on to its parent."""
    while i >= 0 and delta != 0:
        old = u[i]
        new = old + delta
        u[i] = new
        q = TI[i, LQ]
        delta = (new - q if new > q else 0) - (old - q if old > q else 0)
        i = TI[i, PAR]


@njit(cache=True, inline='always')
def _up(TI, i, path):
    """Node ``i``'s ancestors below the root, and ``i`` itself unless it is the root, into
    ``path`` (``i`` first); their number."""
    n = 0
    j = i
    while TI[j, PAR] >= 0:
        path[n] = j
        n += 1
        j = TI[j, PAR]
    return n


@njit(cache=True, inline='always')
def available(TI, u, i, path):
    """``quota.available`` of node ``i`` (may be negative); ``path`` is scratch."""
    n = _up(TI, i, path)
    j = TI[i, ROOT]
    if n == 0:
        return TI[i, SUB] - u[i]
    a = TI[j, SUB] - u[j]
    for k in range(n - 1, -1, -1):
        j = path[k]
        q = TI[j, LQ]
        if TI[j, HASBL]:
            cap = (TI[j, SUB] - q) - (u[j] - q if u[j] > q else 0) + TI[j, BL]
            if cap < a:
                a = cap
        a += q - u[j] if q > u[j] else 0
    return a


@njit(cache=True, inline='always')
def fits(TI, u, i, v, allow_borrowing, path):
    """``preemption.workload_fits`` of a request ``v`` at ClusterQueue ``i``."""
    if not allow_borrowing and u[i] + v > TI[i, SUB]:
        return False
    a = available(TI, u, i, path)
    return v <= (a if a > 0 else 0)


@njit(cache=True, inline='always')
def potential_available(TI, i, path):
    """``quota.potential_available``: the most node ``i`` could take with nothing else admitted."""
    n = _up(TI, i, path)
    v = TI[TI[i, ROOT], SUB]
    for k in range(n - 1, -1, -1):
        j = path[k]
        v = sat_add(TI[j, LQ], v)
        if TI[j, HASBL]:
            cap = sat_add(TI[j, SUB], TI[j, BL])
            if cap < v:
                v = cap
    return v


@njit(cache=True, inline='always')
def assign(TI, u, ci, val, path):
    """(mode, borrowing level) of ``assign._one_flavor`` for a request of ``val`` on the one
    flavor-resource (``flavorassign.fits_resource_quota`` without the oracle)."""
    if val > potential_available(TI, ci, path):
        return NOFIT, 0
    # lowest_subtree_that_fits
    borrow = 0
    may_reclaim = TI[ci, PAR] >= 0
    if TI[ci, PAR] >= 0 and u[ci] + val > TI[ci, SUB]:
        lq = TI[ci, LQ]
        remaining = val - (lq - u[ci] if lq > u[ci] else 0)
        node = TI[ci, PAR]
        found = False
        while node >= 0:
            if not u[node] + remaining > TI[node, SUB]:
                borrow = TI[node, HEIGHT]
                may_reclaim = TI[node, PAR] >= 0
                found = True
                break
            lq = TI[node, LQ]
            remaining -= lq - u[node] if lq > u[node] else 0
            node = TI[node, PAR]
        if not found:
            borrow = TI[TI[ci, ROOT], HEIGHT]
            may_reclaim = False
    a = available(TI, u, ci, path)
    if val <= (a if a > 0 else 0):
        return FIT, borrow
    if TI[ci, NOM] >= val or may_reclaim or TI[ci, BW_NOT_NEVER]:
        return PREEMPT, borrow
    return NOFIT, 0  # a NoFit assignment carries no borrowing level


@njit(cache=True, inline='always')
def _cand_order(pa, pb, ta, tb, ra, rb):
    """CandidatesOrdering (no evicted workloads here): lower priority, newer admission, name
    (scalars only: ``queues.pq_order``)."""
    if pa != pb:
        return pa < pb
    if ta != tb:
        return ta > tb
    return ra < rb


@njit(cache=True, inline='always')
def _is_candidate(wp, created_w, policy, prio, created):
    """Whether a workload of priority ``wp`` created at ``created_w`` may be preempted under
    ``policy`` by one of ``prio`` created at ``created`` (scalars only: ``queues.pq_order``)."""
    if policy == P_LOWER:
        return wp < prio
    if policy == P_ANY:
        return True
    if policy == P_LOWER_OR_NEWER:
        return wp < prio or (wp == prio and created < created_w)
    return False


@njit(cache=True, inline='always')
def search(TI, KC_OFF, KC, KQ_OFF, KQ, u0, ci, v, prio, created, WI, sub_t, adm, RQ_OFF, RQ, RQ_N,
           out_w, out_var, out_allow, out_lca, SCT, SCW):
    """``preemption._search_one``: the targets (written to ``out_*``, in the search's order) and
    their number; 0 where there are none. ``SCT`` and ``SCW`` are scratch rows of the forest's
    and the workloads' sizes."""
    T = TI.shape[0]
    path, src_node, src_kind, src_adv, src_lca, stack, u = SCT[0], SCT[1], SCT[2], SCT[3], SCT[4], SCT[5], SCT[6]
    cw, cv, clca, ckind, taken_i, taken_amt, order = SCW[0], SCW[1], SCW[2], SCW[3], SCW[4], SCW[5], SCW[6]
    own_policy = TI[ci, WITHIN]
    reclaim = TI[ci, RECLAIM]
    ns = 0
    if own_policy != P_NEVER:
        src_node[ns] = ci
        src_kind[ns] = 2  # SAME
        src_adv[ns] = 0
        src_lca[ns] = -1
        ns += 1
    if TI[ci, PAR] >= 0 and reclaim != P_NEVER:
        advantage = u0[ci] + v <= TI[ci, SUB]
        lq = TI[ci, LQ]
        remaining = v - (lq - u0[ci] if lq > u0[ci] else 0)
        if remaining < 0:
            remaining = 0
        prev = -1
        anc = TI[ci, PAR]
        while anc >= 0:
            # the borrowing ClusterQueues below ``anc`` (child cohorts wholly), but the own queue
            # and the subtree the walk came up from
            sp = 0
            stack[sp] = anc
            sp += 1
            while sp:
                sp -= 1
                cur = stack[sp]
                for k in range(KC_OFF[cur], KC_OFF[cur + 1]):
                    c = KC[k]
                    if c != prev and u0[c] > TI[c, SUB]:
                        stack[sp] = c
                        sp += 1
                for k in range(KQ_OFF[cur], KQ_OFF[cur + 1]):
                    c = KQ[k]
                    if c != ci and u0[c] > TI[c, SUB]:
                        src_node[ns] = c
                        src_kind[ns] = 0 if advantage else 1  # HIER / PRIO
                        src_adv[ns] = 1 if advantage else 0
                        src_lca[ns] = anc
                        ns += 1
            fit_here = u0[anc] + remaining <= TI[anc, SUB]
            lq = TI[anc, LQ]
            remaining -= lq - u0[anc] if lq > u0[anc] else 0
            if remaining < 0:
                remaining = 0
            advantage = advantage or fit_here
            prev = anc
            anc = TI[anc, PAR]
    # the candidates of every source, with their variant, and the starting sums
    nc = 0
    hier = pri = False
    forbidden = not TI[ci, BW_ALLOWED]
    has_th = TI[ci, HASTH]
    th = TI[ci, TH]
    for k in range(T):
        u[k] = u0[k]
    for s in range(ns):
        node = src_node[s]
        own = node == ci
        policy = own_policy if own else reclaim
        if policy == P_NEVER or policy == P_OTHER:
            continue
        every = 0
        for j in range(RQ_OFF[node], RQ_OFF[node] + RQ_N[node]):
            w = RQ[j]
            if WI[w, W_QV] <= 0 or not _is_candidate(WI[w, W_PRIO], sub_t[w], policy, prio, created):
                continue
            wp = WI[w, W_PRIO]
            if own:
                var = WITHIN_CQ
            elif src_adv[s]:
                var = HIERARCHICAL
            elif forbidden or wp >= prio or (has_th and wp > th):
                var = RECLAIM_WITHOUT_BORROWING
            else:
                var = RECLAIM_WHILE_BORROWING
            cw[nc] = w
            cv[nc] = var
            clca[nc] = src_lca[s]
            ckind[nc] = src_kind[s]
            nc += 1
            every += WI[w, W_QV]
            if src_kind[s] == 0:
                hier = True
            elif src_kind[s] == 1:
                pri = True
        if every:
            add(TI, u, node, -every)
    if not fits(TI, u, ci, v, True, path):
        return 0
    under_nominal = u0[ci] < TI[ci, NOM]
    # Kueue's GetTargets attempts (``preemption._attempts``)
    if (not hier and not pri) or (forbidden and not under_nominal):
        attempts = (1, -1)
    elif forbidden and not hier:
        attempts = (0, 1)
    else:
        attempts = (1, 0)
    # no attempt fits with all its starting candidates gone: doomed
    any_fits = False
    for allow in attempts:
        if allow < 0:
            continue
        if allow:
            for k in range(T):
                u[k] = u0[k]
            for c in range(nc):
                if cv[c] != RECLAIM_WITHOUT_BORROWING:
                    add(TI, u, WI[cw[c], W_CQ], -WI[cw[c], W_QV])
        else:
            for k in range(T):
                u[k] = u0[k]
            for c in range(nc):
                add(TI, u, WI[cw[c], W_CQ], -WI[cw[c], W_QV])
        if fits(TI, u, ci, v, allow == 1, path):
            any_fits = True
            break
    if not any_fits:
        return 0
    # the order the search takes candidates: hierarchy, priority, same queue; each by key
    m = 0
    for kind in range(3):
        start = m
        for c in range(nc):
            if ckind[c] == kind:
                order[m] = c
                m += 1
        # insertion sort of this kind's candidates by CandidatesOrdering
        for x in range(start + 1, m):
            y = order[x]
            z = x - 1
            while z >= start and _cand_order(WI[cw[y], W_PRIO], WI[cw[order[z]], W_PRIO], adm[cw[y]], adm[cw[order[z]]],
                                             WI[cw[y], W_RANK], WI[cw[order[z]], W_RANK]):
                order[z + 1] = order[z]
                z -= 1
            order[z + 1] = y
    for allow in attempts:
        if allow < 0:
            continue
        for k in range(T):
            u[k] = u0[k]
        nt = 0
        for x in range(nc):
            c = order[x]
            w = cw[c]
            i = WI[w, W_CQ]
            if i != ci:
                if (allow == 1 and cv[c] == RECLAIM_WITHOUT_BORROWING) or u[i] <= TI[i, SUB]:
                    continue
                stop = clca[c]
                j = TI[i, PAR]
                while j >= 0 and j != stop and u[j] > TI[j, SUB]:
                    j = TI[j, PAR]
                if j >= 0 and j != stop:
                    continue
            amount = WI[w, W_QV]
            add(TI, u, i, -amount)
            taken_i[nt] = c
            taken_amt[nt] = amount
            nt += 1
            if fits(TI, u, ci, v, allow == 1, path):
                for k in range(nt - 2, -1, -1):  # fill back: a target given back is marked -1
                    bc = taken_i[k]
                    bi = WI[cw[bc], W_CQ]
                    add(TI, u, bi, taken_amt[k])
                    if fits(TI, u, ci, v, allow == 1, path):
                        taken_amt[k] = -1
                    else:
                        add(TI, u, bi, -taken_amt[k])
                n = 0
                for k in range(nt):
                    if taken_amt[k] >= 0:
                        bc = taken_i[k]
                        out_w[n] = cw[bc]
                        out_var[n] = cv[bc]
                        out_allow[n] = allow
                        out_lca[n] = clca[bc]
                        n += 1
                return n
    return 0


@njit(cache=True)
def usage_of(TI, cqs, amounts):
    """The forest's usage with ``amounts[k]`` admitted in ClusterQueue ``cqs[k]``: sums do not
    depend on the order they were added in, so this is the usage of every admitted workload."""
    u = np.zeros(TI.shape[0], np.int64)
    for k in range(cqs.shape[0]):
        add(TI, u, cqs[k], amounts[k])
    return u


@njit(cache=True)
def mode_of(TI, u, ci, val, path):
    """``assign``'s mode, for a caller in Python."""
    return assign(TI, u, ci, val, path)[0]
