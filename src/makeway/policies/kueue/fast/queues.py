"""A ClusterQueue's pending entries, in BestEffortFIFO order, and their runs: what a call of the
compiled Kueue loop (``loop``) takes its heads from, kept from call to call.

Each ClusterQueue owns a slice of the shared arrays (from its offset, ``PQ_OFF``): ``PQ`` its
pending entries in order, and the same list run-length coded (``RC`` counts, ``RK`` twin codes,
``RM`` parked kinds; ``RN`` runs per queue): a run is entries in a row with one key, waiting mark
and parked kind. A call's heads are the unparked entries, in order; a release unparks a queue's
runs, and a call parks a run of twins as a run. So a pass costs the queue's runs, never its
entries: a deep backlog of twins is a few runs (issue 20).
"""

from __future__ import annotations

from numba import njit

from makeway.policies.kueue.fast.layout import NODE, W_CQ, W_KEY, W_PRIO, W_RANK, W_WAIT


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
    return k - lo


@njit(cache=True)
def pq_remove_at(PQ, PQ_OFF, PQ_N, c, p):
    """The entry at position ``p`` of queue ``c`` leaves its pending list."""
    lo, n = PQ_OFF[c], PQ_N[c]
    for j in range(lo + p, lo + n - 1):
        PQ[j] = PQ[j + 1]
    PQ_N[c] = n - 1


# -- the runs ------------------------------------------------------------------------------------

@njit(cache=True, inline='always')
def twin_code(WI, w):
    """What a run of twins shares besides its parked kind: the key and the waiting mark, as one
    int. An entry's outcome as a head reads only these and its tree (``loop._outcome``)."""
    return 2 * WI[w, W_KEY] + WI[w, W_WAIT]


@njit(cache=True, inline='always')
def _move_runs(RC, RK, RM, a, b, d):
    """Runs ``a..b-1`` moved by ``d`` places (either way, without overwriting what is moved)."""
    if d > 0:
        for j in range(b - 1, a - 1, -1):
            RC[j + d], RK[j + d], RM[j + d] = RC[j], RK[j], RM[j]
    else:
        for j in range(a, b):
            RC[j + d], RK[j + d], RM[j + d] = RC[j], RK[j], RM[j]


@njit(cache=True)
def run_at(RC, RN, lo, c, p):
    """The run holding position ``p`` of queue ``c`` and where that run starts (``RN[c]`` and the
    list's length when ``p`` is past its end)."""
    s = 0
    r = 0
    n = RN[c]
    while r < n and s + RC[lo + r] <= p:
        s += RC[lo + r]
        r += 1
    return r, s


@njit(cache=True)
def runs_insert(RC, RK, RM, RN, lo, c, p, code, mark):
    """An entry with ``code`` and parked kind ``mark`` at position ``p``: its run grows, or it
    starts one, splitting the run it lands in."""
    r, s = run_at(RC, RN, lo, c, p)
    n = RN[c]
    if r < n and RK[lo + r] == code and RM[lo + r] == mark:
        RC[lo + r] += 1
        return
    if p == s and r > 0 and RK[lo + r - 1] == code and RM[lo + r - 1] == mark:
        RC[lo + r - 1] += 1
        return
    if p == s:
        _move_runs(RC, RK, RM, lo + r, lo + n, 1)
        RC[lo + r], RK[lo + r], RM[lo + r] = 1, code, mark
        RN[c] = n + 1
        return
    o = p - s
    _move_runs(RC, RK, RM, lo + r + 1, lo + n, 2)
    RC[lo + r + 2], RK[lo + r + 2], RM[lo + r + 2] = RC[lo + r] - o, RK[lo + r], RM[lo + r]
    RC[lo + r], RC[lo + r + 1], RK[lo + r + 1], RM[lo + r + 1] = o, 1, code, mark
    RN[c] = n + 2


@njit(cache=True)
def runs_remove(RC, RK, RM, RN, lo, c, p):
    """The entry at position ``p`` leaves; its run shrinks, and a run emptied is dropped, its
    neighbours joined where they are alike. The entry's parked kind."""
    r, s = run_at(RC, RN, lo, c, p)
    mark = RM[lo + r]
    n = RN[c]
    RC[lo + r] -= 1
    if RC[lo + r] == 0:
        _move_runs(RC, RK, RM, lo + r + 1, lo + n, -1)
        n -= 1
        if 0 < r < n and RK[lo + r - 1] == RK[lo + r] and RM[lo + r - 1] == RM[lo + r]:
            RC[lo + r - 1] += RC[lo + r]
            _move_runs(RC, RK, RM, lo + r + 1, lo + n, -1)
            n -= 1
        RN[c] = n
    return mark


@njit(cache=True)
def runs_park(RC, RK, RM, RN, lo, c, r, o1, o2, kind):
    """Entries ``o1..o2-1`` of run ``r`` (unparked) parked as ``kind``: the run split in up to
    three. Neighbours left alike are joined by ``runs_join``."""
    n = RN[c]
    cnt, code = RC[lo + r], RK[lo + r]
    pieces = (o1 > 0) + 1 + (o2 < cnt)
    if pieces > 1:
        _move_runs(RC, RK, RM, lo + r + 1, lo + n, pieces - 1)
    k = lo + r
    if o1 > 0:
        RC[k], RK[k], RM[k] = o1, code, 0
        k += 1
    RC[k], RK[k], RM[k] = o2 - o1, code, kind
    if o2 < cnt:
        RC[k + 1], RK[k + 1], RM[k + 1] = cnt - o2, code, 0
    RN[c] = n + pieces - 1


@njit(cache=True)
def runs_join(RC, RK, RM, RN, lo, c):
    """Neighbouring runs alike (key, waiting mark and parked kind) joined into one."""
    m = 0
    for r in range(RN[c]):
        if m and RK[lo + m - 1] == RK[lo + r] and RM[lo + m - 1] == RM[lo + r]:
            RC[lo + m - 1] += RC[lo + r]
        else:
            RC[lo + m], RK[lo + m], RM[lo + m] = RC[lo + r], RK[lo + r], RM[lo + r]
            m += 1
    RN[c] = m


@njit(cache=True)
def runs_release(RC, RK, RM, RN, lo, c, rel):
    """A release: every parked run unparked where the queue's cohort tree freed quota (``rel``;
    ``Parked.release_queues``), else those parked for room (``release_nodes``)."""
    for r in range(RN[c]):
        if rel or RM[lo + r] == NODE:
            RM[lo + r] = 0
    runs_join(RC, RK, RM, RN, lo, c)


@njit(cache=True)
def runs_ok(WI, PQ, PQ_N, RC, RK, RM, RN, lo, c):
    """Whether queue ``c``'s runs code its pending list: counts positive and summing to its
    length, each entry's twin code its run's, no two neighbours alike (the tests' check, on with
    ``IS[I_CHECK]``)."""
    j = lo
    for r in range(RN[c]):
        if RC[lo + r] <= 0 or RM[lo + r] < 0:
            return False
        if r and RK[lo + r - 1] == RK[lo + r] and RM[lo + r - 1] == RM[lo + r]:
            return False
        for _ in range(RC[lo + r]):
            if j >= lo + PQ_N[c] or twin_code(WI, PQ[j]) != RK[lo + r]:
                return False
            j += 1
    return j == lo + PQ_N[c]
