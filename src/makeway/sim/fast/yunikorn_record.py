"""The results of a compiled YuniKorn run, recorded straight from its decision log.

``LogRun`` walks the general engine's instants (finishes, stale ones included, then submissions,
then the model's wake-ups, which the log's ``WK`` says), makes the logged calls there (again, up
to ``MAX_ROUNDS``, while victims leave at once) and feeds a recorder on index lists
(``YuniKornRecorder``, the fast core's ``FastRecorder`` with Kueue's preemption counters), with
``YuniKornReasons`` for the pending-reason trails. The document is the general engine's; the tests
compare the two whole (``tests/yunikorn_queue/test_log_record.py``).

The log names tasks (``layout``). A workload's tasks are asks of their own: they start, finish and
are evicted one by one, so the walk keeps them per task and, per workload, how many are pending,
hold a reservation or finished. A workload waits in its queue while any task is pending and
finishes at its last task's finish, as the engine's state and ``ReasonLog`` have it.

It is most of a compiled run's time, so the walk takes short ways where the engine's work is
known in advance: the finishes are the log's starts plus durations (one sorted list, stale ones
included, instead of a heap), an instant that is only a wake-up with an empty call costs a few
comparisons, the recorder's sums move by precomputed steps, and a reason round asks again only
the heads whose answer can have moved.

The walk and the log must agree on every call: a call at another instant than the log's, a start
of a task that is not pending or does not fit, a victim that is not running, or a run that ends
with calls left over or missing is a defect of the compiled loop, and raises ``ReplayError``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from typing import Any, Sequence

import numpy as np

from makeway.core.objects import Workload, task_id
from makeway.core.pending import FITS_NOWHERE, PREEMPTING, PRIORITY, RESOURCES
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.fast import layout as L
from makeway.policies.yunikorn.model import preempt_reason
from makeway.sim.collector import no_collections
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.fast.feed_record import FeedRecorder
from makeway.sim.fast.kueue_record import KueueReasons, queue_paths, workload_shapes


def why_not(state: ClusterState, options: Any, workloads: Sequence[Workload], packed: Any) -> str | None:
    """None when ``LogRun`` can record this compiled run; else why the general engine runs it."""
    if options.check_invariants:
        return "check_invariants"
    if packed.stopped:
        return "stopped by the no-progress watch"
    known = set(state.resources)
    for wl in workloads:
        if not known.issuperset(wl.groups[0].resources):
            return f"workload {wl.id}: a resource the state does not list"
    return None


class YuniKornReasons(KueueReasons):
    """``ReasonLog`` for a YuniKorn ``LogRun``. In this class no queue has a ``max`` and no task a
    grace period, so the rules reduce to ``fits-nowhere``; for the first ``HEAD`` of a queue, the
    model's ``preempting`` while the ask holds a reservation; ``preempting`` while a victim
    evicted for it runs again; ``priority``; ``resources``. The queue order is the default key.

    A round costs what changed, not every head: the engine asks the model about each queue's
    first ``HEAD`` at every round, but an answer moves only when the workload enters or leaves
    them, takes or loses the first place, or its reservation or victims move, so only those are
    asked again. The answers, the victims pruned and the trails are the engine's.
    """

    def __init__(self, run: "LogRun"):
        super().__init__(run)
        self._touched: set[int] = set()  # reservation set or cleared since the last round

    def _insert(self, w: int) -> None:
        """Each queue's pending workloads are kept as their ranks in the default order
        (``LogRun.rank``). Who enters the first ``HEAD`` (``w``), leaves them (the one pushed
        behind) or loses the first place is looked at in the next round: their answer may move."""
        run = self.sim
        q = run.w_q[w]
        lst = self.keys.get(q)
        if lst is None:
            lst = self.keys[q] = []  # type: ignore[assignment]
        i = bisect_left(lst, run.rank[w])  # type: ignore[arg-type]
        lst.insert(i, run.rank[w])  # type: ignore[arg-type]
        head = self.HEAD
        if i < head:
            stale, by_rank = self._stale, run.by_rank
            stale.add(w)
            if i == 0 and len(lst) > 1:
                stale.add(by_rank[lst[1]])
            if len(lst) > head:
                stale.add(by_rank[lst[head]])

    def started(self, w: int) -> None:
        """``w`` leaves its queue: who enters the first ``HEAD`` or takes the first place in its
        stead is looked at in the next round."""
        del self.pending[w]
        self._current.pop(w, None)
        self._waiting_on.discard(w)
        run = self.sim
        lst = self.keys[run.w_q[w]]
        i = bisect_left(lst, run.rank[w])  # type: ignore[arg-type]
        del lst[i]
        head = self.HEAD
        if i < head:
            stale, by_rank = self._stale, run.by_rank
            if len(lst) >= head:
                stale.add(by_rank[lst[head - 1]])
            if i == 0 and lst:
                stale.add(by_rank[lst[0]])

    def became_pending(self, w: int) -> None:
        """A task of ``w`` is pending again (``state.pending_log`` has ``w``): a workload still
        partly pending keeps its place in its queue, and is only looked at in the next round."""
        if w in self.pending:
            self._back.add(w)
        else:
            super().became_pending(w)

    def task_started(self, w: int, none_left: bool) -> None:
        """``ReasonLog.started``: with no task of ``w`` left pending it leaves its queue;
        otherwise its reason may have moved."""
        if none_left:
            self.started(w)
        else:
            self._stale.add(w)

    def reservation_moved(self, w: int) -> None:
        self._touched.add(w)

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        run = self.sim
        if run.w_shape[w].nowhere:
            return FITS_NOWHERE, None
        if ask_model and run.w_resv[w]:  # the model's answer: no pruning of the victims then
            return PREEMPTING, None
        if w in self._victims and self._preempting(w):
            return PREEMPTING, None
        if position > 1:
            return PRIORITY, None
        return RESOURCES, None

    def _round(self, now: float) -> None:
        """``ReasonLog._changed_round``, asking only what can have moved since the last round:
        the workloads pending again, fresh, waiting for victims, whose reservation moved, or
        that entered, left or moved across the first place of their queue's first ``HEAD``
        (``_insert``, ``started``); each at its place in its queue now."""
        pending, head, put, classify = self.pending, self.HEAD, self._set, self._classify
        flag = self._stale
        flag.update(w for w in self._back if w in pending)
        self._back = set()
        flag.update(self._waiting_on)
        flag.update(self._touched)
        self._touched = set()
        run = self.sim
        keys, w_q, rank = self.keys, run.w_q, run.rank
        for w in flag:
            if w in pending:
                i = bisect_left(keys[w_q[w]], rank[w])  # type: ignore[arg-type]
                put(w, now, classify(w, i + 1, True) if i < head else classify(w, head + 1, False))
        flag.clear()
        names = run.q_names
        self._waiting = {names[q]: len(lst) for q, lst in keys.items() if lst}


class YuniKornRecorder(FeedRecorder):
    """``FeedRecorder`` with YuniKorn's pending reasons (the class is exactly ``YuniKornModel``,
    which has no shares to sample)."""

    def __init__(self, state: ClusterState, model: Any, run: "LogRun"):
        super().__init__(state, model, run)
        self.reasons = YuniKornReasons(run)  # type: ignore[assignment]


class LogRun:
    """The engine's walk of a compiled YuniKorn run, fed from its log (see the module docstring);
    ``run()`` returns the recorder, as ``Simulation.run`` does."""

    MAX_ROUNDS = 16

    def __init__(self, packed: Any, state: ClusterState, model: Any, options: Any, wls: list[Workload],
                 late: list[Workload]):
        self.state, self.model, self.options = state, model, options
        self.packed, self.wls, self.late = packed, wls, late
        self.now = 0.0
        self.events_processed = 0
        self.n = int(packed.nlog)
        self.total_calls = int(packed.calls)
        self.q_names, qix, self.paths = queue_paths(state)
        self.ints = True
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        self.cap = [[n.capacity.get(r, 0) for n in nodes] for r in state.resources]
        self.used = [[0] * len(nodes) for _ in state.resources]
        self.N = len(nodes)
        self.w_id = [wl.id for wl in wls]
        self.w_q = [qix[wl.queue] for wl in wls]
        self.w_tasks = packed.NT.tolist()
        self.w_shape = workload_shapes(wls, state.resources, nodes)  # one task's request, every amount positive
        self.sub = [wl.submit for wl in wls]
        self.prio = [wl.priority for wl in wls]
        # the default queue order (priority, submit time, id) as one rank per workload
        ranked = getattr(packed, "ranked", None)  # the loop ranks them alike
        self.by_rank = ranked if ranked is not None else \
            sorted(range(len(wls)), key=lambda w: (-self.prio[w], self.sub[w], self.w_id[w]))
        self.rank = [0] * len(wls)
        for i, w in enumerate(self.by_rank):
            self.rank[w] = i
        W = len(wls)
        # per task (``packed.TW`` its workload, ``T_IX`` its index in the group): pending, running,
        # the log row of its current (or last) start, node, start; its place in its workload's
        # pending order (submitted in index order, a requeued task behind the others)
        self.tw, self.t_ix, self.toff = packed.TW.tolist(), packed.T_IX.tolist(), packed.TOFF.tolist()
        T = len(self.tw)
        self.pend = [False] * T
        self.running = [False] * T
        self.start_row = [-1] * T
        self.on = [0] * T
        self.started_at = [0.0] * T
        self.queued = list(range(T))
        self.requeues = T
        self.resv: dict[int, int] = {}  # pending ask (a task) -> the node it reserved
        # per workload: its pending tasks, its pending tasks holding a reservation, finished tasks
        self.w_np = [0] * W
        self.w_resv = [0] * W
        self.w_fin = [0] * W
        self.recorder = YuniKornRecorder(state, model, self)
        self.recorder.model_options = model.options()
        self.recorder.record_starts = options.record_starts

    def run(self) -> Any:
        with no_collections():
            return self._run()

    def _run(self) -> Any:
        """The engine's loop (``Simulation._run``) on the three streams of instants. Most instants
        of a preemption run are the model's own wake-ups, deciding nothing: those take a short way
        (a wake-up before any finish or submission, a call without a log row)."""
        self.model.bind(self.state)
        packed, n = self.packed, self.n
        log = packed.LOG[:n]
        self.kind, self.la, self.lb, self.lc, self.lcall = (log[:, c].tolist() for c in
                                                            (L.C_KIND, L.C_A, L.C_B, L.C_C, L.C_CALL))
        self.lt = packed.LT[:n].tolist()
        total = self.total_calls
        nan = float("nan")  # past the last call: no instant equals it
        ct, wk = packed.CT[:total].tolist() + [nan], packed.WK[:total].tolist() + [nan]
        chain_end = self._chains()
        rec = self.recorder
        reasons = rec.reasons
        clock = reasons.clock
        wls, state = self.wls, self.state
        inf = float("inf")
        horizon = self.options.horizon
        stop = inf if horizon is None else horizon
        progress = self.options.progress
        fin_t, fin_row, fin_task = self._finishes()
        fi = 0
        wakes: list = []
        pending_wakes: set = set()
        subs = self.sub + [wl.submit for wl in self.late] + [inf]
        W, ns = len(wls), 0
        max_rounds = self.MAX_ROUNDS
        pos, calls, events = 0, 0, 0
        lcall = self.lcall
        next_call = lcall[0] if n else -1
        running, start_row = self.running, self.start_row
        shapes, used, on = self.w_shape, self.used, self.on
        tw, w_fin, w_tasks, toff, pend, w_np = self.tw, self.w_fin, self.w_tasks, self.toff, self.pend, self.w_np
        heappop, heappush = heapq.heappop, heapq.heappush
        while True:
            now = subs[ns]
            if fin_t[fi] < now:
                now = fin_t[fi]
            if wakes and wakes[0] < now:  # a wake-up alone
                now = wakes[0]
                if now > stop:
                    rec.stopped_reason = "horizon"
                    break
                self.now = now
                heappop(wakes)
                pending_wakes.discard(now)
                events += 1
                if ct[calls] != now:
                    self._out_of_step(calls, ct, now)
                if next_call != calls + 1:
                    if not wakes and now < clock.next and progress is None:
                        # the only wake-up, and its call's wake-up the next call's instant: a
                        # stretch of them before the next other event or round, run at once
                        k = calls
                        last = chain_end[bisect_left(chain_end, k)]
                        limit = subs[ns]
                        if fin_t[fi] < limit:
                            limit = fin_t[fi]
                        if clock.next < limit:
                            limit = clock.next
                        m = bisect_left(ct, limit, k, last + 1) - 1
                        if ct[m] > stop:
                            m = bisect_right(ct, stop, k, m + 1) - 1
                        events += m - k
                        calls = m
                        now = self.now = ct[m]
                    calls += 1
                    if now >= clock.next:
                        reasons.observe(now)
                    wake = wk[calls - 1]
                    if wake > now and wake not in pending_wakes:
                        pending_wakes.add(wake)
                        heappush(wakes, wake)
                    if progress is not None:
                        progress(now, events)
                    continue
                changed = True
            else:
                if now == inf:
                    break
                if now > stop:
                    rec.stopped_reason = "horizon"
                    break
                self.now = now
                changed = False
                while fin_t[fi] == now and fin_row[fi] < pos:
                    t = fin_task[fi]
                    fi += 1
                    events += 1
                    if start_row[t] != fin_row[fi - 1] or not running[t]:
                        continue
                    changed = True
                    if rec.last_t != now:
                        rec.before_change(now)
                    w = tw[t]
                    node = on[t]
                    for r, v in shapes[w].groups[0][1]:
                        used[r][node] -= v
                    running[t] = False
                    done = w_fin[w] = w_fin[w] + 1
                    rec.task_finished(w, 0, now, False, done == w_tasks[w])
                    if rec.record_starts:
                        rec.events.append({"time": now, "kind": "finish", "allocation": self.tid(t),
                                           "workload": self.w_id[w]})
                while subs[ns] == now and ns < W:
                    wl = wls[ns]
                    events += 1
                    changed = True
                    if rec.last_t != now:
                        rec.before_change(now)
                    state.workloads[wl.id] = wl
                    for t in range(toff[ns], toff[ns + 1]):
                        pend[t] = True
                    w_np[ns] = w_tasks[ns]
                    rec.submitted(ns, wl, shapes[ns], now)
                    ns += 1
                if wakes and wakes[0] == now:
                    heappop(wakes)
                    pending_wakes.discard(now)
                    events += 1
                    changed = True
            made = False
            for _ in range(max_rounds):
                if ct[calls] != now:
                    self._out_of_step(calls, ct, now)
                calls += 1
                if next_call == calls:
                    pos, decided, freed = self._call(pos, calls, now)
                    next_call = lcall[pos] if pos < n else -1
                    made |= decided
                    if freed:
                        continue
                break
            if made or changed:
                if reasons.fresh or now >= clock.next:
                    reasons.observe(now)
            wake = wk[calls - 1]
            if wake > now and wake not in pending_wakes:
                pending_wakes.add(wake)
                heappush(wakes, wake)
            if progress is not None:
                progress(now, events)
        self.events_processed = events
        if pos != n or calls != total:
            raise ReplayError(f"the engine made {calls} calls and took {pos} log entries; the compiled "
                              f"loop made {total} calls and logged {n}")
        self.pos, self.calls = pos, calls
        rec.close(self.now)
        self._pending_gangs()
        return rec

    def _pending_gangs(self) -> None:
        """The pending tasks and demand of each pending workload of several tasks at the close, as
        the engine's state has them: the recorder writes every task of a pending workload, in
        index order, but a gang may be partly started, and a requeued task is behind the others."""
        state, wls, toff, pend, queued = self.state, self.wls, self.toff, self.pend, self.queued
        for w in self.recorder.reasons.pending:
            if self.w_tasks[w] > 1:
                wl = wls[w]
                tasks = sorted((t for t in range(toff[w], toff[w + 1]) if pend[t]), key=queued.__getitem__)
                state.pending[wl.id] = dict.fromkeys(self.tid(t) for t in tasks)
                state.pending_res[wl.id] = {k: v * len(tasks) for k, v in wl.groups[0].resources.items()}

    def _chains(self) -> list[int]:
        """The calls that end a chain of wake-ups (ascending, the last call among them): from a
        call with no log row up to the next such end, each call has no row and its ``WK`` is the
        next call's instant. Where nothing else happens meanwhile, the engine runs those instants
        one after the other, each only moving the wake-up to the next (``_run``)."""
        total, packed = self.total_calls, self.packed
        ct, wk = packed.CT[:total], packed.WK[:total]
        norow = np.ones(total + 1, bool)
        calls = packed.LOG[:self.n, L.C_CALL] - 1
        norow[calls[(calls >= 0) & (calls < total)]] = False
        norow[total] = False
        linked = norow[:total] & norow[1:]
        linked[:-1] &= (wk[:-1] > ct[:-1]) & (wk[:-1] == ct[1:])
        if total:
            linked[-1] = False
        return np.flatnonzero(~linked).tolist()

    def _finishes(self) -> tuple[list, list, list]:
        """Every finish the engine will have in its heap, stale ones included, known from the log:
        each start's instant plus the task's duration (the float sum the engine makes), in time
        order and, at one instant, in the order of the starts. A finish is taken once its start
        was (a task of no duration finishes in a new round of its start's instant)."""
        n = self.n
        packed = self.packed
        rows = np.flatnonzero(packed.LOG[:n, L.C_KIND] == L.L_START)
        tasks = packed.LOG[:n, L.C_A][rows]
        ends = packed.LT[:n][rows] + np.array([wl.duration for wl in self.wls], np.float64)[packed.TW[tasks]]
        order = np.argsort(ends, kind="stable")
        return ends[order].tolist() + [float("inf")], rows[order].tolist(), tasks[order].tolist()

    def _out_of_step(self, calls: int, ct: list, now: float) -> None:
        at = ct[calls] if calls < self.total_calls else None
        raise ReplayError(f"call {calls + 1} at t={now}: the compiled log has it at t={at}")

    def _call(self, k: int, call: int, now: float) -> tuple[int, bool, bool]:
        """One logged ``schedule`` call applied as the engine applies it: (the next log index,
        decided, victims left)."""
        n, lcall, kind, lt, la = self.n, self.lcall, self.kind, self.lt, self.la
        decided = freed = False
        while k < n and lcall[k] == call:
            if lt[k] != now:
                raise ReplayError(f"call {call} at t={now}: the compiled log has it at t={lt[k]}")
            what = kind[k]
            if what == L.L_START:
                self._start(k, la[k], self.lb[k], now)
                decided = True
            elif what == L.L_PREEMPT:
                self._preempt(la[k], self.lb[k], self.lc[k], now)
                decided = freed = True
            else:
                t = la[k]
                if self.resv.pop(t, None) is None:
                    raise ReplayError(f"call {call}: the log unreserves {self.tid(t)}, which holds no reservation")
                w = self.tw[t]
                self.w_resv[w] -= 1
                self.recorder.reasons.reservation_moved(w)
            k += 1
        return k, decided, freed

    def tid(self, t: int) -> str:
        """Task ``t``'s id (``core.objects.task_id``)."""
        return task_id(self.w_id[self.tw[t]], 0, self.t_ix[t])

    def _start(self, k: int, t: int, node: int, now: float) -> None:
        """The engine's ``_start`` and ``Recorder.start`` of task ``t`` (the recorder's steps
        inlined: the walk's most frequent decision)."""
        rec = self.recorder
        reasons = rec.reasons
        if not self.pend[t]:
            raise ReplayError(f"the log starts {self.tid(t)} at t={now}, which is not pending")
        w = self.tw[t]
        used, cap = self.used, self.cap
        pairs = self.w_shape[w].groups[0][1]
        for r, v in pairs:
            if used[r][node] + v > cap[r][node]:
                raise ReplayError(f"t={now}: {self.tid(t)} does not fit on {self.node_names[node]}")
        for r, v in pairs:
            used[r][node] += v
        if self.resv.pop(t, None) is not None:
            self.w_resv[w] -= 1
            reasons.reservation_moved(w)
        self.start_row[t] = k
        self.pend[t] = False
        self.running[t] = True
        self.on[t] = node
        self.started_at[t] = now
        if rec.last_t != now:
            rec.before_change(now)
        rec.tasks_started(w, 1)
        left = self.w_np[w] = self.w_np[w] - 1
        reasons.task_started(w, not left)
        rec.workload_started(w, now)
        if rec._evicted_at or rec.record_starts:
            rec.task_restarted(self.w_id[w], self.tid(t), self.node_names[node], now)

    def _preempt(self, v: int, by: int, node: int, now: float) -> None:
        """``Recorder.preempt`` of the victim task ``v`` for the ask (a task) ``by``, which reserves
        ``node`` (if it holds no reservation yet), then the engine's ``_evict``: no grace period in
        this class. The victim is pending again, behind its workload's other pending tasks."""
        if not self.running[v]:
            raise ReplayError(f"t={now}: victim {self.tid(v)} of {self.tid(by)} is not running")
        rec = self.recorder
        reasons = rec.reasons
        p, wv = self.tw[by], self.tw[v]
        if by not in self.resv:
            self.resv[by] = node
            self.w_resv[p] += 1
            reasons.reservation_moved(p)
        wl, ask = self.wls[wv], self.wls[p]
        vid, queue, res = wl.id, wl.queue, wl.groups[0].resources
        tid, names = self.tid(v), self.node_names
        reason = preempt_reason(L.RULE, self.tid(by), ask.id, ask.queue, ask.priority,
                                ask.groups[0].resources, tid, queue, wl.priority, res, names[node])
        start = self.started_at[v]
        lost = now - start
        self.running[v] = False
        self.pend[v] = True
        self.queued[v] = self.requeues
        self.requeues += 1
        rec.preemptions += 1
        rec.preempt_count[vid] = rec.preempt_count.get(vid, 0) + 1
        rec.queue_preemptions[queue] = rec.queue_preemptions.get(queue, 0) + 1
        rule = f"{reason.model}/{reason.rule}"
        rec.by_rule[rule] = rec.by_rule.get(rule, 0) + 1
        reasons.preempted_for(p, tid, v)
        events = rec.events
        events.append({"time": now, "kind": "preempt", "allocation": tid, "workload": vid, "queue": queue,
                       "node": names[self.on[v]], "start": start, "resources": dict(res), "grace": wl.grace,
                       "reason": reason.to_dict()})
        rec.before_change(now)
        used, at = self.used, self.on[v]
        for r, x in self.w_shape[wv].groups[0][1]:
            used[r][at] -= x
        rec.task_evicted(wv, now)
        rec.evicted_event(tid, vid, queue, res, lost, now)
        self.w_np[wv] += 1
        reasons.became_pending(wv)
