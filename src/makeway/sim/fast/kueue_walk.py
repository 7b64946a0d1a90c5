"""The Kueue recording walk's instants, compiled: slice 1 of ``docs/plans/compiled-walks.md``.

``kueue_record.LogRun`` walks the engine's instants in Python (ends, submissions, up to
``MAX_ROUNDS`` logged calls) and spends a few µs on every start, eviction and finish. ``walk``
runs the same instants over the packed log with the same checks and writes what the walk
feeds its recorder without the pending reasons: ``FeedRecorder``'s codes and instant marks, and
one row per evicted pod. Nothing takes it yet; ``tests/kueue/test_walk.py`` holds it to
``LogRun``, feed for feed and row for row, until the reasons are in it too (slice 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from makeway.core.resources import EPS
from makeway.policies.kueue.fast.layout import L_PREEMPT, L_START, L_UNWAIT
from makeway.policies.kueue.fast.finish_heap import h_pop, h_push
from makeway.policies.kueue.fast.layout import I_FULL, I_HN, NIS
from makeway.sim.fast import kueue_walk_reasons as RW
from makeway.sim.fast.kueue_walk_reasons import B_WAIT, J_CQO
from makeway.sim.fast.sums import E_EVICT, E_FINISH, E_START, E_SUBMIT

# what went wrong, where ``LogRun`` raises ``ReplayError`` (the index it happened at is returned)
OK, AT_OTHER_INSTANT, NOT_PENDING, POD_COUNT, NO_FIT, VICTIM_NOT_RUNNING, CALLS_LEFT, HEAP_FULL = range(8)
# per workload
NEW, PENDING, RUNNING = range(3)
# the event tape, in the order the recorder appends events: a pod preempted (and evicted), a
# preemptor's note, with ``record_starts`` a pod started or finished. Columns: kind, time,
# workload, its pod's rank in name order (the note: its first log row), node (the note: the row
# after its last), the victim's start, the preemptor, the log row
EV_PREEMPT, EV_NOTE, EV_START, EV_FINISH = range(4)
C_KIND, C_T, C_W, C_POD, C_NODE, C_START, C_BY, C_ROW = range(8)


@njit(cache=True, _nrt=False)
def _mark(now, S, feed, marks):
    """``FeedRecorder.before_change``: an instant's first change writes its mark."""
    if now - S[0] > 0:
        S[0] = now
        feed[int(S[1])] = -1 - int(S[2])
        marks[int(S[2])] = now
        S[1] += 1
        S[2] += 1


@njit(cache=True, _nrt=False)
def _event(ev, n, kind, t, w, pod, node):
    """Row ``n`` of the event tape (its other columns are the caller's); the next row."""
    ev[n, C_KIND] = kind
    ev[n, C_T] = t
    ev[n, C_W] = w
    ev[n, C_POD] = pod
    ev[n, C_NODE] = node
    return n + 1


@njit(cache=True, _nrt=False)
def _codes(code, count, S, feed):
    for _ in range(count):
        feed[int(S[1])] = code
        S[1] += 1


@njit(cache=True)
def walk(kind, lw, la, lb, lcall, lt, ln, subs, W, dur, ntask, name_pos, REQ, cap, horizon, max_rounds, total_calls,
         last_t, record_starts, feed, marks, ev, first, fst, fin, restarts, pod_off, S, RIN):
    """The instants of a logged Kueue run (``LogRun._run``'s order). Returns (status, where, the
    feed's length, the marks', evicted pods, calls made, log rows taken, the last instant, 1 if
    stopped at ``horizon``), the close's mark written. ``name_pos[w, i]``: the rank of pod ``i`` in its workload's name
    order (pods are evicted in name order, and start again in it)."""
    n = kind.shape[0]
    R = REQ.shape[1]
    state = np.zeros(W, np.int64)
    gen = np.zeros(W, np.int64)
    done = np.zeros(W, np.int64)
    on_at = np.zeros(W, np.int64)  # where in ``ln`` the current start's nodes are
    started = np.zeros(W, np.float64)
    renamed = np.zeros(W, np.bool_)  # pods in name order since its first eviction
    used = np.zeros(cap.shape, np.float64)
    size = max(1, ln.shape[0])
    IS = np.zeros(NIS, np.int64)
    HW = np.empty(size, np.int64)  # pod entries: workload * stride + pod index
    HT = np.empty(size, np.float64)
    HS = np.empty(size, np.int64)
    HG = np.empty(size, np.int64)
    stride = 1
    for w in range(W):
        if ntask[w] > stride:
            stride = ntask[w]
    evicted_at = np.full(max(1, pod_off[W]), np.nan)  # per pod (by name rank) while it waits to restart
    nfst = 0
    nfin = 0
    nrs = 0
    FS = np.zeros(3, np.float64)  # last change's instant, feed length, marks
    FS[0] = last_t
    running = np.zeros(W, np.bool_)
    cq_used = np.zeros(RIN[0][J_CQO].shape[0], np.int64)
    WAIT = S[1][B_WAIT]
    nev = 0
    ns = 0
    pos = 0
    calls = 0
    now = 0.0
    last = 0.0  # the last instant walked: the recorder's close marks it
    inf = np.inf
    stopped = 0
    while True:
        t_sub = subs[ns] if ns < subs.shape[0] else inf
        now = HT[0] if IS[I_HN] and HT[0] <= t_sub else t_sub
        if now == inf:
            break
        if now > horizon:
            stopped = 1
            break
        last = now
        changed = False
        made = False
        while IS[I_HN] and HT[0] == now:
            p, g = HW[0], HG[0]
            h_pop(IS, HW, HT, HS, HG)
            w, i = p // stride, p % stride
            if g != gen[w] or state[w] != RUNNING:
                continue
            changed = True
            _mark(now, FS, feed, marks)
            node = ln[on_at[w] + i]
            for r in range(R):
                used[node, r] -= REQ[w, r]
            done[w] += 1
            if done[w] >= ntask[w]:
                state[w] = NEW  # ended: neither pending nor running
                running[w] = False
                fin[nfin, 0] = w
                fin[nfin, 1] = now
                nfin += 1
            _codes(4 * w + E_FINISH, 1, FS, feed)
            if record_starts:
                nev = _event(ev, nev, EV_FINISH, now, w, i if renamed[w] else name_pos[w, i], 0)
            RW.use(S, RIN, cq_used, w, -1)
        while ns < W and subs[ns] == now:
            changed = True
            _mark(now, FS, feed, marks)
            _codes(4 * ns + E_SUBMIT, ntask[ns], FS, feed)
            state[ns] = PENDING
            RW.submitted(S, RIN, ns)
            ns += 1
        for _ in range(max_rounds):
            calls += 1
            freed = False
            k = pos
            while k < n and lcall[k] == calls:
                if lt[k] != now:
                    return AT_OTHER_INSTANT, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                if kind[k] == L_START:
                    w = lw[k]
                    count = ntask[w]
                    if state[w] != PENDING:
                        return NOT_PENDING, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                    if count != lb[k]:
                        return POD_COUNT, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                    at = la[k]
                    on_at[w] = at
                    for j in range(count):
                        node = ln[at + j]
                        for r in range(R):
                            v = REQ[w, r]
                            if used[node, r] + v > cap[node, r] + EPS:
                                return NO_FIT, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                            used[node, r] += v
                    gen[w] += 1
                    state[w] = RUNNING
                    running[w] = True
                    done[w] = 0
                    started[w] = now
                    _mark(now, FS, feed, marks)
                    _codes(4 * w + E_START, count, FS, feed)
                    RW.use(S, RIN, cq_used, w, count)
                    RW.started(S, RIN, w)
                    if first[w] != first[w]:
                        first[w] = now
                        fst[nfst] = w
                        nfst += 1
                    for j in range(count):
                        rank = j if renamed[w] else name_pos[w, j]
                        node = ln[at + j]
                        e = evicted_at[pod_off[w] + rank]
                        if e == e:
                            restarts[nrs, 0] = now
                            restarts[nrs, 1] = w
                            restarts[nrs, 2] = rank
                            restarts[nrs, 3] = node
                            restarts[nrs, 4] = e
                            nrs += 1
                            evicted_at[pod_off[w] + rank] = np.nan
                        if record_starts:
                            nev = _event(ev, nev, EV_START, now, w, rank, node)
                    WAIT[w] = False
                    made = True
                    end = now + dur[w]
                    for j in range(count):
                        h_push(IS, HW, HT, HS, HG, w * stride + j, gen[w], end)
                    if IS[I_FULL]:
                        return HEAP_FULL, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                    k += 1
                elif kind[k] == L_UNWAIT:
                    WAIT[lw[k]] = False
                    RW.rekey(S, RIN, lw[k])
                    k += 1
                else:
                    by = la[k]
                    k0 = k
                    while k < n and kind[k] == L_PREEMPT and la[k] == by and lcall[k] == calls:
                        v = lw[k]
                        if state[v] != RUNNING:
                            return VICTIM_NOT_RUNNING, k, int(FS[1]), int(FS[2]), nev, calls, k, now, 0, nfst, nfin, nrs, ns
                        count = ntask[v]
                        state[v] = PENDING
                        running[v] = False
                        gen[v] += 1
                        _mark(now, FS, feed, marks)
                        # pods in name order: the j-th of them is the pod whose rank is j
                        for j in range(count):
                            for i in range(count):
                                rank = name_pos[v, i] if not renamed[v] else i
                                if rank == j:
                                    node = ln[on_at[v] + i]
                                    ev[nev, C_START] = started[v]
                                    ev[nev, C_BY] = by
                                    ev[nev, C_ROW] = k
                                    nev = _event(ev, nev, EV_PREEMPT, now, v, j, node)
                                    evicted_at[pod_off[v] + j] = now
                                    for r in range(R):
                                        used[node, r] -= REQ[v, r]
                                    _codes(4 * v + E_EVICT, 1, FS, feed)
                                    RW.preempted_for(S, by, v)
                        renamed[v] = True
                        RW.use(S, RIN, cq_used, v, -count)
                        RW.became_pending(S, RIN, v)
                        k += 1
                    WAIT[by] = True
                    RW.rekey(S, RIN, by)
                    nev = _event(ev, nev, EV_NOTE, now, by, k0, k)
                    freed = True
                    made = True
            pos = k
            if not freed:
                break
        if made or changed:
            RW.observe(S, RIN, now, running, cq_used, REQ, used, cap)
    if pos != n or calls != total_calls:
        return CALLS_LEFT, pos, int(FS[1]), int(FS[2]), nev, calls, pos, last, stopped, nfst, nfin, nrs, ns
    _mark(last, FS, feed, marks)
    return OK, pos, int(FS[1]), int(FS[2]), nev, calls, pos, last, stopped, nfst, nfin, nrs, ns


def run_walk(packed: Any, wls: list, late: list, state: Any, model: Any, horizon: float | None, last_t: float,
             max_rounds: int, record_starts: bool = False, shapes: list | None = None) -> dict[str, Any]:
    """``walk`` over a packed run: its status and tapes as numpy arrays (``feed``, ``marks``,
    ``events``, ``first`` start per workload and ``first_order``, ``finished`` (workload, time),
    ``restarts`` (time, workload, pod rank, node, evicted at), ``reasons`` (the trails' state)).
    ``shapes``: the workloads' ``kueue_record.workload_shapes``, where the caller has them."""
    from makeway.policies.kueue.fast.layout import I_CALLS, I_NLN, I_NLOG

    n = int(packed.IS[I_NLOG])
    log = packed.LOG[:n]
    res = list(state.resources)
    nodes = list(state.nodes.values())
    W = len(wls)
    REQ = np.zeros((max(1, W), max(1, len(res))), np.float64)
    for w, wl in enumerate(wls):
        for k, v in wl.groups[0].resources.items():
            REQ[w, res.index(k)] = v
    cap = np.array([[nd.capacity.get(r, 0) for r in res] for nd in nodes], np.float64).reshape(len(nodes), max(1, len(res)))
    ntask = np.array([wl.groups[0].count for wl in wls] or [0], np.int64)
    most = int(ntask.max()) if W else 1
    name_pos = np.zeros((max(1, W), max(1, most)), np.int64)
    for w, wl in enumerate(wls):
        if ntask[w] > 1:  # one pod: rank 0
            tids = wl.task_ids()
            at = {tid: i for i, tid in enumerate(tids)}
            for j, tid in enumerate(sorted(tids)):
                name_pos[w, at[tid]] = j
    subs = np.array([wl.submit for wl in wls] + [wl.submit for wl in late], np.float64)
    dur = np.array([wl.duration for wl in wls] or [0.0], np.float64)
    ln = packed.LN[:max(1, int(packed.IS[I_NLN]))]
    pods = int(ntask[:W].sum()) if W else 0
    room = pods + 3 * ln.shape[0] + 2 * (subs.shape[0] + n) + 16
    feed = np.zeros(room, np.int64)
    marks = np.zeros(room, np.float64)
    pods_run = ln.shape[0]
    ev = np.zeros((2 * pods_run + n + 1, 8), np.float64)
    first = np.full(max(1, W), np.nan)
    fst = np.zeros(max(1, W), np.int64)
    fin = np.zeros((pods_run + 1, 2), np.float64)
    restarts = np.zeros((pods_run + 1, 5), np.float64)
    pod_off = np.zeros(W + 1, np.int64)
    pod_off[1:] = np.cumsum(ntask[:W])
    rin, S = _reason_inputs(packed, wls, state, model, ntask, room, shapes)
    out = walk(log[:, 0].copy(), log[:, 1].copy(), log[:, 2].copy(), log[:, 3].copy(), log[:, 6].copy(),
               packed.LT[:n].copy(), ln.copy(), subs, W, dur, ntask, name_pos, REQ, cap,
               np.inf if horizon is None else float(horizon), max_rounds, int(packed.IS[I_CALLS]), float(last_t),
               bool(record_starts), feed, marks, ev, first, fst, fin, restarts, pod_off, S, rin)
    status, where, nf, nm, nev, calls, pos, now, stopped, nfst, nfin, nrs, nsub = out
    return {"status": int(status), "where": int(where), "feed": feed[:nf], "marks": marks[:nm], "events": ev[:nev],
            "first": first[:W], "first_order": fst[:nfst], "finished": fin[:nfin], "restarts": restarts[:nrs],
            "calls": int(calls), "now": float(now), "stopped": bool(stopped), "submitted": int(nsub), "reasons": S}


def _reason_inputs(packed: Any, wls: list, state: Any, model: Any, ntask: np.ndarray, room: int,
                   shapes: list | None) -> tuple:
    """What the trails read of the run (``kueue_walk_reasons``' ``RIN``) and their fresh state."""
    from makeway.policies.kueue.fast import layout as L
    from makeway.sim.fast.kueue_record import queue_paths, workload_shapes

    W = len(wls)
    names, qix, paths = queue_paths(state)
    nodes = list(state.nodes.values())
    shapes = shapes if shapes is not None else workload_shapes(wls, state.resources, nodes)
    nowhere = np.array([sh.nowhere for sh in shapes] or [False], np.bool_)
    wq = np.array([qix[wl.queue] for wl in wls] or [0], np.int64)
    wcq = packed.WI[:, L.W_CQ].astype(np.int64) if W else np.zeros(1, np.int64)
    wqv = packed.WI[:, L.W_QV].astype(np.int64) if W else np.zeros(1, np.int64)
    prio = packed.WI[:, L.W_PRIO].tolist()
    prios = sorted(set(prio), reverse=True) or [0]
    at = {p: i for i, p in enumerate(prios)}
    pidx = np.array([at[p] for p in prio] or [0], np.int64)
    by_order = sorted(range(W), key=lambda w: (wls[w].submit, wls[w].id, w))
    rank = np.zeros(max(1, W), np.int64)
    rank[by_order] = np.arange(W)
    rank_w = np.array(by_order or [0], np.int64)
    per_q = np.bincount(wq[:W], minlength=len(names)) if W else np.zeros(len(names), np.int64)
    qoff = np.concatenate([[0], np.cumsum(per_q)[:-1]]).astype(np.int64) if len(names) else np.zeros(1, np.int64)
    qorder = np.array(sorted(range(len(names)), key=lambda q: names[q]), np.int64)
    cols = {qix[packed.tnodes[c].name]: j for j, c in enumerate(packed.CQO.tolist())}
    qcols = [[cols[a] for a in path if a in cols] for path in paths]
    qcol_off = np.array([0] + np.cumsum([len(c) for c in qcols]).tolist(), np.int64)
    qcol = np.array([j for c in qcols for j in c] or [0], np.int64)
    wamt = np.array([wl.groups[0].resources.get(packed.resource, 0) for wl in wls] or [0], np.int64)
    pairs: dict[tuple[int, int], int] = {}
    mp = np.array([pairs.setdefault((int(c), int(v)), len(pairs)) for c, v in zip(wcq[:W].tolist(), wqv[:W].tolist())]
                  or [0], np.int64)
    T = packed.TI.shape[0]
    const = np.array([1000 if packed.resource == "cpu" else 1, int(bool(model.prioritize_preemptors)), len(prios)],
                     np.int64)
    ints = (wq, wcq, wqv, pidx, rank, rank_w, qoff, qorder, qcol_off, qcol, wamt, mp, packed.CQO.astype(np.int64),
            np.empty(T + 1, np.int64), ntask.astype(np.int64), const)
    rin = (ints, nowhere, packed.TI)
    S = RW.new_state(W, len(names), len(pairs), len(nodes), len(state.resources), T, room)
    return rin, S


def trails(S: tuple, packed: Any) -> dict[int, list[tuple[float, str, str | None]]]:
    """The pending-reason trails the walk wrote, as ``KueueReasons.trail`` keeps them."""
    from makeway.core.pending import FITS_NOWHERE, GANG, PREEMPTING, PRIORITY, QUOTA, RESOURCES
    from makeway.sim.fast.kueue_walk_reasons import F_TT, I_RS, I_TC, I_TD, I_TW, R_TAPE

    codes = (FITS_NOWHERE, QUOTA, PREEMPTING, GANG, PRIORITY, RESOURCES)
    n = int(S[0][I_RS][R_TAPE])
    out: dict[int, list[tuple[float, str, str | None]]] = {}
    si, tt = S[0], S[2][F_TT]
    for w, t, c, d in zip(si[I_TW][:n].tolist(), tt[:n].tolist(), si[I_TC][:n].tolist(), si[I_TD][:n].tolist()):
        out.setdefault(w, []).append((t, codes[c], packed.tnodes[d].name if d >= 0 else None))
    return out
