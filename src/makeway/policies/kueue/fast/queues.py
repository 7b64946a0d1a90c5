"""A ClusterQueue's pending entries, in BestEffortFIFO order, and the unparked lists a call of
the compiled Kueue loop (``loop``) takes its heads from, kept from call to call.

Each ClusterQueue owns a slice of the shared arrays (from its offset, ``PQ_OFF``): ``PQ`` its
pending entries in order, ``PL`` the unparked ones of the current call, ``NQ`` those queued since
the last call (arrivals and requeued victims, in order).
"""

from __future__ import annotations

from numba import njit

from makeway.policies.kueue.fast.layout import NODE, PENDING, W_CQ, W_KEY, W_PARK, W_PRIO, W_RANK, W_STATE, W_WAIT


@njit(cache=True, inline='always')
def pq_before(WI, sub_t, prio_pre, a, b):
    return pq_order(prio_pre and WI[a, W_WAIT], prio_pre and WI[b, W_WAIT], WI[a, W_PRIO], WI[b, W_PRIO],
                    sub_t[a], sub_t[b], WI[a, W_RANK], WI[b, W_RANK])


@njit(cache=True, inline='always')
def pq_order(wa, wb, pa, pb, sa, sb, ra, rb):
    """Not waiting first, then ``fifo_order``. Scalars only, as every comparison helper here: an
    inlined helper that takes arrays and branches counts their references in and out at every
    call (about 7 ns an array), which the comparisons of a sort or a search repeat."""
    if wa != wb:
        return wa
    return fifo_order(pa, pb, sa, sb, ra, rb)


@njit(cache=True, inline='always')
def fifo_order(pa, pb, sa, sb, ra, rb):
    """Higher priority, then earlier creation, then name (rank)."""
    if pa != pb:
        return pa > pb
    if sa != sb:
        return sa < sb
    return ra < rb


@njit(cache=True)
def pq_find(WI, sub_t, prio_pre, PQ, lo, n, w):
    """Where ``w`` goes (or is) among the ``n`` entries from ``lo``."""
    a, b = lo, lo + n
    while a < b:
        m = (a + b) // 2
        if pq_before(WI, sub_t, prio_pre, PQ[m], w):
            a = m + 1
        else:
            b = m
    return a


@njit(cache=True)
def pq_insert(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, w):
    c = WI[w, W_CQ]
    lo, n = PQ_OFF[c], PQ_N[c]
    k = pq_find(WI, sub_t, prio_pre, PQ, lo, n, w)
    for j in range(lo + n, k, -1):
        PQ[j] = PQ[j - 1]
    PQ[k] = w
    PQ_N[c] = n + 1


@njit(cache=True)
def pq_remove(WI, sub_t, prio_pre, PQ, PQ_OFF, PQ_N, w):
    c = WI[w, W_CQ]
    lo, n = PQ_OFF[c], PQ_N[c]
    k = pq_find(WI, sub_t, prio_pre, PQ, lo, n, w)
    for j in range(k, lo + n - 1):
        PQ[j] = PQ[j + 1]
    PQ_N[c] = n - 1


# -- the unparked lists ---------------------------------------------------------------------------

@njit(cache=True)
def rebuild(WI, PQ, PL, PK, RE, lo, n_pq, rel):
    """A ClusterQueue's unparked entries, read from its whole pending list, at a call after a
    release: where its cohort tree freed quota (``rel``; ``Parked.release_queues``: every parked
    entry released), or where it has entries parked for room (``release_nodes``), with their
    twin runs (``runs``). The number of entries."""
    n = 0
    for j in range(lo, lo + n_pq):
        w = PQ[j]
        k = WI[w, W_PARK]
        if k and (rel or k == NODE):
            WI[w, W_PARK] = 0
            k = 0
        if not k:
            PL[lo + n] = w
            PK[lo + n] = _twin_code(WI[w, W_KEY], WI[w, W_WAIT])
            n += 1
    _run_ends(PK, RE, lo, n)
    return n


@njit(cache=True)
def runs(WI, PL, PK, RE, lo, n):
    """Each entry's twin run in an unparked list: ``RE[j]``, where the run of entries from ``j``
    with its key and waiting mark ends. A run's entries share their outcome as heads (``loop.
    _outcome`` reads only these and the queue's tree), so a scan for the first head to evaluate
    takes a run at a step rather than entry by entry."""
    for j in range(lo, lo + n):
        w = PL[j]
        PK[j] = _twin_code(WI[w, W_KEY], WI[w, W_WAIT])
    _run_ends(PK, RE, lo, n)


@njit(cache=True, inline='always')
def _twin_code(key, wait):
    """What a twin run shares: the key and the waiting mark, as one int (scalars only)."""
    return 2 * key + wait


@njit(cache=True, inline='always')
def _run_ends(PK, RE, lo, n):
    e = lo + n
    for j in range(lo + n - 2, lo - 1, -1):
        if PK[j] != PK[j + 1]:
            e = j + 1
        RE[j] = e
    if n:
        RE[lo + n - 1] = lo + n


@njit(cache=True, inline='always')
def keep_unparked(WI, A, lo, n):
    """The entries of ``A[lo:lo + n]`` still pending and unparked, kept in order at its start;
    their number."""
    m = 0
    for j in range(lo, lo + n):
        w = A[j]
        if WI[w, W_STATE] == PENDING and not WI[w, W_PARK]:
            A[lo + m] = w
            m += 1
    return m


@njit(cache=True)
def carry(WI, sub_t, prio_pre, PL, lo, n_pl, NQ, n_nq):
    """A ClusterQueue's unparked entries where nothing was released for it: the last call's
    entries still pending and unparked, merged with those queued since (``NQ``, in order). The
    call walked every last entry, so this costs no more than the call did; the parked backlog is
    not walked. The number of entries.

    Where preemptors go first, an entry that starts or stops waiting moves in the pending list,
    and the last call's order may be stale for it. By this call it is parked (it stopped waiting
    for want of targets), or its victims left and freed its cohort tree's quota, so that its
    queue was read anew (``rebuild``). ``Packed.run(check_lists=True)`` checks this."""
    n = keep_unparked(WI, PL, lo, n_pl)
    m = keep_unparked(WI, NQ, lo, n_nq)
    i, d = n - 1, n + m - 1
    for k in range(lo + m - 1, lo - 1, -1):
        w = NQ[k]
        while i >= 0 and pq_before(WI, sub_t, prio_pre, w, PL[lo + i]):
            PL[lo + d] = PL[lo + i]
            i -= 1
            d -= 1
        PL[lo + d] = w
        d -= 1
    return n + m


@njit(cache=True)
def list_ok(WI, PQ, PL, lo, n_pq, n_pl, freed):
    """Whether a ClusterQueue's unparked list is its pending list's unparked entries, in order,
    none parked for room where room was freed (the tests' check of ``carry``, on with
    ``IS[I_CHECK]``)."""
    m = 0
    for j in range(lo, lo + n_pq):
        w = PQ[j]
        k = WI[w, W_PARK]
        if freed and k == NODE:
            return False
        if not k:
            if m >= n_pl or PL[lo + m] != w:
                return False
            m += 1
    return m == n_pl
