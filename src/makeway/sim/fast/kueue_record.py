"""The results of a compiled Kueue run, recorded straight from its decision log.

The replay (``sim.fast.kueue._Replay``) gets the general engine's results document by running the
engine again with every decision read from the log: about 20 µs per start, eviction or finish,
spent in the engine's heap, the state's dictionaries and the recorder. ``LogRun`` walks the same
instants itself (ends and submissions in the engine's order, then the logged calls, up to
``MAX_ROUNDS`` while victims leave at once) and feeds a recorder on index lists (the fast core's
``FastRecorder``), with ``KueueReasons`` for the pending-reason trails. The document is the
engine's; the property tests compare the two whole.

It takes the runs the replay takes, less those where the engine reads more than the log says
(``why_not``): a queue with a ``max`` (the limits enter the pending reasons), a request of a
resource the state does not list, ``check_invariants``, and a run the no-progress watch stopped
(the engine writes what it saw there). Those are replayed.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from typing import Any, Sequence

from makeway.core.objects import Workload
from makeway.core.pending import FITS_NOWHERE, GANG, PREEMPTING, PRIORITY, QUOTA, RESOURCES
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.kueue.fast import layout as L
from makeway.policies.kueue.fast import pack
from makeway.policies.kueue.heads import preemption_note, preemption_reason, queue_path
from makeway.sim.collector import no_collections
from makeway.sim.fast.kueue import QuotaModes, ReplayError
from makeway.sim.fast.reasons import IndexedReasons
from makeway.sim.fast.recorder import FastRecorder


def why_not(state: ClusterState, options: Any, workloads: Sequence[Workload], packed: Any) -> str | None:
    """None when ``LogRun`` can record this compiled run; else why it is replayed instead."""
    from makeway.policies.kueue.fast.loop import I_STOP

    if options.check_invariants:
        return "check_invariants"
    if packed.IS[I_STOP]:
        return "stopped by the no-progress watch"
    for q in state.queues.values():
        if q.max:
            return f"queue {q.name} has a max"
    known = set(state.resources)
    for wl in workloads:
        if not known.issuperset(wl.groups[0].resources):
            return f"workload {wl.id}: a resource the state does not list"
    return None


class _Shape:
    """What ``FastRecorder`` reads of a request: its group (count, [(resource index, amount)], dense
    vector) and whether no node could ever hold one of its pods."""

    __slots__ = ("groups", "nowhere")

    def __init__(self, count: int, pairs: list, vec: list, nowhere: bool):
        self.groups = [(count, pairs, vec)]
        self.nowhere = nowhere


def queue_paths(state: ClusterState) -> tuple[list[str], dict[str, int], list[list[int]]]:
    """The queues in the state's order, each one's index, and each one's path to its root as
    indexes (itself first): what a ``LogRun`` keeps its per-queue sums by."""
    names = list(state.queues)
    qix = {q: i for i, q in enumerate(names)}
    return names, qix, [[qix[a] for a in state.path_to_root(q)] for q in names]


def workload_shapes(wls: Sequence[Workload], resources: Sequence[str], nodes: Sequence[Any]) -> list[_Shape]:
    """Each workload's ``_Shape`` (its one task group's count, requests by resource index, and
    whether it fits no node), one object per distinct group, shared."""
    rix = {r: i for i, r in enumerate(resources)}
    shapes: dict[tuple, _Shape] = {}
    out = []
    for wl in wls:
        g = wl.groups[0]
        raw = (g.count, tuple(g.resources.items()))
        shape = shapes.get(raw)
        if shape is None:
            vec = [0] * len(rix)
            for k, v in g.resources.items():
                vec[rix[k]] = v
            nowhere = not any(all(v <= 0 or v <= n.capacity.get(k, 0) + EPS for k, v in g.resources.items())
                              for n in nodes)
            shape = shapes[raw] = _Shape(g.count, [(rix[k], v) for k, v in g.resources.items()], vec, nowhere)
        out.append(shape)
    return out


class KueueRecorder(FastRecorder):
    """``FastRecorder`` with what a preemption adds: victims' counters, events, waste and restarts."""

    def __init__(self, state: ClusterState, model: Any, run: "LogRun"):
        super().__init__(state, model, run)
        self.reasons = KueueReasons(run)  # type: ignore[assignment]

    def workload_started(self, w: int, now: float) -> None:
        if self._first[w] is None:
            self._first[w] = now
            self._started.append(w)

    def task_restarted(self, wid: str, tid: str, node: str, now: float) -> None:
        """What a start adds beyond the sums: the restart of a task evicted before, and the start
        event where ``record_starts`` (call it only where either may apply)."""
        if self._evicted_at:
            ev = self._evicted_at.pop(tid, None)
            if ev is not None:
                self.restarts.setdefault(wid, []).append((now, tid, node, ev))
        if self.record_starts:
            self.events.append({"time": now, "kind": "start", "allocation": tid, "workload": wid, "node": node})

    def task_evicted(self, w: int, now: float) -> None:
        """A victim's pod leaves and is pending again (``Recorder.evicted``'s sums)."""
        self._move(w, 0, -1)

    def evicted_event(self, tid: str, wid: str, queue: str, res: dict, lost: float, now: float) -> None:
        """``Recorder.evicted``'s waste and event for a victim that ran ``lost`` seconds."""
        wasted, qw = self.wasted, self.queue_wasted.setdefault(queue, {})
        for r, x in res.items():
            wasted[r] = wasted.get(r, 0) + x * lost
            qw[r] = qw.get(r, 0) + x * lost
        self._evicted_at[tid] = now
        self.events.append({"time": now, "kind": "evicted", "allocation": tid, "workload": wid, "queue": queue,
                            "resources": dict(res), "lost_seconds": lost})


class KueueReasons(IndexedReasons):
    """``ReasonLog`` for a ``LogRun``: the same rounds on the same grid, the same first reasons,
    positions and trails. In this class of runs no queue has a ``max`` and no victim has a grace
    period, so the rules reduce to ``fits-nowhere``, Kueue's ``quota`` (the flavor assignment on
    the admitted usage does not fit: ``_Replay.pending_reason``), ``preempting`` (a victim evicted
    for it runs again), ``gang``, ``priority`` and ``resources``. The queue order is the model's
    key, kept per queue as workloads become pending, start, or start or stop waiting."""

    def __init__(self, run: "LogRun"):
        super().__init__(run)
        self._victims: dict[int, set[tuple[str, int]]] = {}  # preemptor -> (task, victim) evicted for it
        self._waiting_on: set[int] = set()  # the pending ones among them (``_victims`` keeps the started)
        self.keys: dict[int, list[tuple]] = {}
        self.key_of: dict[int, tuple] = {}

    # -- fed by the run ------------------------------------------------------------------------------

    def submitted(self, w: int) -> None:
        self.fresh.append(w)
        self.became_pending(w)

    def became_pending(self, w: int) -> None:
        self.pending[w] = None
        self._back.add(w)
        self._insert(w)
        if w in self._victims:
            self._waiting_on.add(w)

    def started(self, w: int) -> None:
        """All pods of ``w`` started: its wait ends. (``ReasonLog.started`` also marks it stale
        at each pod but the last; that mark is read only while it is pending, and it is pending
        again only by a requeue, which marks it too.)"""
        del self.pending[w]
        self._current.pop(w, None)
        self._waiting_on.discard(w)
        lst = self.keys[self.sim.w_q[w]]
        del lst[bisect_left(lst, self.key_of.pop(w))]

    def rekey(self, w: int) -> None:
        """``w`` started or stopped waiting for its victims: its place in the queue order moves."""
        if w in self.pending:
            lst = self.keys[self.sim.w_q[w]]
            del lst[bisect_left(lst, self.key_of.pop(w))]
            self._insert(w)

    def _insert(self, w: int) -> None:
        run = self.sim
        key = self.key_of[w] = (not (run.prio_pre and w in run.waiting), -run.prio[w], run.sub[w], run.w_id[w], w)
        lst = self.keys.get(run.w_q[w])
        if lst is None:
            lst = self.keys[run.w_q[w]] = []
        insort(lst, key)

    def preempted_for(self, p: int, tid: str, v: int) -> None:
        self._victims.setdefault(p, set()).add((tid, v))
        self._waiting_on.add(p)
        self.fresh.append(p)

    # -- after each instant ----------------------------------------------------------------------------

    def _preempting(self, w: int) -> bool:
        """``ReasonLog._victims_of``: whether a pod evicted for ``w`` runs again (its workload
        restarted), forgetting the others."""
        mine = self._victims.get(w)
        if not mine:
            return False
        running = self.sim.running
        alive = {e for e in mine if running[e[1]]}
        if alive:
            self._victims[w] = alive
        else:
            del self._victims[w]
            self._waiting_on.discard(w)
        return bool(alive)

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        run = self.sim
        if run.w_shape[w].nowhere:
            return FITS_NOWHERE, None
        if ask_model and run.modes.mode(run.epoch, run.usage, run.w_cq[w], run.w_qv[w]) != L.FIT:
            return QUOTA, run.cq_name[w]
        if self._preempting(w):
            return PREEMPTING, None
        shape = run.w_shape[w]
        if ask_model and run.w_tasks[w] > 1 and not self._free_fit(shape, False) and self._free_fit(shape, True):
            return GANG, None
        if position > 1:
            return PRIORITY, None
        return RESOURCES, None

    def _round(self, now: float) -> None:
        """The heads, and behind them what may have moved, victims evicted for it among them."""
        self._heads_round(now, self._waiting_on)


class LogRun:
    """The engine's walk of a compiled Kueue run, fed from its log (see the module docstring);
    ``run()`` returns the recorder, as ``Simulation.run`` does."""

    MAX_ROUNDS = 16

    def __init__(self, packed: Any, state: ClusterState, model: Any, options: Any, wls: list[Workload],
                 late: list[Workload]):
        from makeway.policies.kueue.fast.loop import I_CALLS, I_NLOG

        self.state, self.model, self.options = state, model, options
        self.packed, self.wls, self.late = packed, wls, late
        self.now = 0.0
        self.events_processed = 0
        self.n = int(packed.IS[I_NLOG])
        self.total_calls = int(packed.IS[I_CALLS])
        # what ``FastRecorder`` reads
        self.q_names, qix, self.paths = queue_paths(state)
        self.ints = True
        rix = {r: i for i, r in enumerate(state.resources)}
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        self.cap = [[n.capacity.get(r, 0) for n in nodes] for r in state.resources]
        self.used = [[0] * len(nodes) for _ in state.resources]  # per resource and node
        self.N = len(nodes)
        self.w_id = [wl.id for wl in wls]
        self.w_q = [qix[wl.queue] for wl in wls]
        self.w_tasks = [wl.groups[0].count for wl in wls]
        self.w_shape = workload_shapes(wls, state.resources, nodes)
        self.sub = [wl.submit for wl in wls]
        self.prio = packed.WI[:, L.W_PRIO].tolist()
        self.w_cq = packed.WI[:, L.W_CQ].tolist()
        self.w_qv = packed.WI[:, L.W_QV].tolist()
        self.cq_name = [packed.tnodes[c].name for c in self.w_cq]
        self.q_path = {c: queue_path(packed.tnodes[c]) for c in set(self.w_cq)}  # per ClusterQueue node
        self.prio_pre = bool(model.prioritize_preemptors)
        self.modes = QuotaModes(packed)  # the flavor assignment on the usage, for the pending reasons
        self._cq_cols = [(qix[packed.tnodes[c].name], rix[packed.resource]) for c in packed.CQO.tolist()]
        # each ClusterQueue's admitted usage of the packed resource, kept as the walk goes (the
        # recorder's sums are made at the close): per queue the columns on its path, per
        # workload a pod's amount
        cols = {q: j for j, (q, _) in enumerate(self._cq_cols)}
        self.cq_used = [0] * len(cols)
        self.q_cols = [[cols[a] for a in path if a in cols] for path in self.paths]
        self.w_amt = [wl.groups[0].resources.get(packed.resource, 0) for wl in wls]
        self.epoch = 0  # bumped at every pod start and end
        # per workload: running now, its run's generation, pods (pending order), nodes, start
        W = len(wls)
        self.running = [False] * W
        self.gen = [0] * W
        self.order: list[list[str]] = [wl.task_ids() for wl in wls]
        self.on: list[list[int]] = [[] for _ in range(W)]
        self.started_at = [0.0] * W
        self.done = [0] * W
        self.waiting: dict[int, float] = {}
        from makeway.sim.fast.feed_record import FeedRecorder

        self.recorder = FeedRecorder(state, model, self)
        self.recorder.model_options = model.options()
        self.recorder.record_starts = options.record_starts

    def usage(self) -> list:
        """Each ClusterQueue's admitted usage now, in ``packed.CQO`` order (``QuotaModes``)."""
        return list(self.cq_used)

    def _use(self, w: int, pods: int) -> None:
        """``pods`` pods of ``w`` start (or, negative, leave): its ClusterQueues' usage moves."""
        a, used = self.w_amt[w] * pods, self.cq_used
        for j in self.q_cols[self.w_q[w]]:
            used[j] += a

    # -- the walk --------------------------------------------------------------------------------------

    def run(self) -> Any:
        with no_collections():
            return self._run()

    def _run(self) -> Any:
        self.model.bind(self.state)
        packed = self.packed
        log = packed.LOG[:self.n].T.tolist()
        self.kind, self.lw, self.la, self.lb, self.lc, self.ld, self.lcall = log
        self.lt = packed.LT[:self.n].tolist()
        self.ln = packed.LN.tolist()
        rec, reasons = self.recorder, self.recorder.reasons
        wls, state = self.wls, self.state
        horizon = self.options.horizon
        progress = self.options.progress
        record_starts = self.options.record_starts
        heap: list = []
        self.heap = heap
        subs = self.sub + [wl.submit for wl in self.late]
        W, ns = len(wls), 0
        inf = float("inf")
        self.pos, self.calls, self.seq = 0, 0, 0
        while True:
            t_sub = subs[ns] if ns < len(subs) else inf
            now = heap[0][0] if heap and heap[0][0] <= t_sub else t_sub
            if now == inf:
                break
            if horizon is not None and now > horizon:
                rec.stopped_reason = "horizon"
                break
            self.now = now
            changed = False
            while heap and heap[0][0] == now:
                _, _, w, gen, i = heapq.heappop(heap)
                self.events_processed += 1
                if gen != self.gen[w] or not self.running[w]:
                    continue
                changed = True
                rec.before_change(now)
                node = self.on[w][i]
                for r, v in self.w_shape[w].groups[0][1]:
                    self.used[r][node] -= v
                self.epoch += 1
                self.done[w] += 1
                finished = self.done[w] >= self.w_tasks[w]
                if finished:
                    self.running[w] = False
                rec.task_finished(w, 0, now, False, finished)
                self._use(w, -1)
                if record_starts:
                    rec.events.append({"time": now, "kind": "finish", "allocation": self.order[w][i],
                                       "workload": self.w_id[w]})
            while ns < W and subs[ns] == now:
                wl = wls[ns]
                self.events_processed += 1
                changed = True
                rec.before_change(now)
                state.workloads[wl.id] = wl
                rec.submitted(ns, wl, self.w_shape[ns], now)
                ns += 1
            made = False
            for _ in range(self.MAX_ROUNDS):
                decided, freed = self._call(now)
                made |= decided
                if not freed:
                    break
            if made or changed:
                reasons.observe(now)
            if progress is not None:
                progress(now, self.events_processed)
        if self.pos != self.n or self.calls != self.total_calls:
            raise ReplayError(f"the engine made {self.calls} calls and took {self.pos} log entries; the compiled "
                              f"loop made {self.total_calls} calls and logged {self.n}")
        rec.close(self.now)
        return rec

    def _call(self, now: float) -> tuple[bool, bool]:
        """One logged ``schedule`` call applied as the engine applies it; (decided, victims left)."""
        self.calls += 1
        k, n, lcall, call = self.pos, self.n, self.lcall, self.calls
        decided = freed = False
        while k < n and lcall[k] == call:
            if self.lt[k] != now:
                raise ReplayError(f"call {call} at t={now}: the compiled log has it at t={self.lt[k]}")
            kind = self.kind[k]
            if kind == L.L_START:
                self._start(k, now)
                decided = True
                k += 1
            elif kind == L.L_UNWAIT:
                w = self.lw[k]
                self.waiting.pop(w, None)
                self.recorder.reasons.rekey(w)
                k += 1
            else:
                k = self._preemption(k, now)
                decided = freed = True
        self.pos = k
        return decided, freed

    def _start(self, k: int, now: float) -> None:
        w = self.lw[k]
        rec, reasons = self.recorder, self.recorder.reasons
        if self.running[w] or w not in reasons.pending:
            raise ReplayError(f"call {self.calls}: the log starts {self.w_id[w]}, which is not pending")
        pods = self.order[w]
        count = len(pods)
        if count != self.lb[k]:
            raise ReplayError(f"call {self.calls}: {self.w_id[w]} has {count} pods pending, the log starts "
                              f"{self.lb[k]}")
        at = self.la[k]
        on = self.on[w] = self.ln[at:at + count]
        pairs = self.w_shape[w].groups[0][1]
        used, cap = self.used, self.cap
        for node in on:
            for r, v in pairs:
                if used[r][node] + v > cap[r][node] + EPS:
                    raise ReplayError(f"call {self.calls}: {self.w_id[w]} does not fit on {self.node_names[node]}")
                used[r][node] += v
        gen = self.gen[w] = self.gen[w] + 1
        self.running[w] = True
        self.done[w] = 0
        self.started_at[w] = now
        self.epoch += count
        rec.before_change(now)
        rec.tasks_started(w, count)
        self._use(w, count)
        reasons.started(w)
        rec.workload_started(w, now)
        if rec._evicted_at or rec.record_starts:
            self._restarts(w, pods, on, now)
        end, heap, seq = now + self.wls[w].duration, self.heap, self.seq
        for i in range(count):
            seq += 1
            heapq.heappush(heap, (end, seq, w, gen, i))
        self.seq = seq
        if self.waiting.pop(w, None) is not None:
            reasons.rekey(w)

    def _restarts(self, w: int, pods: list[str], on: list[int], now: float) -> None:
        """The restarts of pods evicted before, and the start events when they are recorded."""
        rec, names = self.recorder, self.node_names
        evicted_at = rec._evicted_at
        for tid, node in zip(pods, on):
            if evicted_at:
                ev = evicted_at.pop(tid, None)
                if ev is not None:
                    rec.restarts.setdefault(self.w_id[w], []).append((now, tid, names[node], ev))
            if rec.record_starts:
                rec.events.append({"time": now, "kind": "start", "allocation": tid, "workload": self.w_id[w],
                                   "node": names[node]})

    def _preemption(self, k: int, now: float) -> int:
        """One preemptor's victims (consecutive in the log) evicted pod by pod in name order, then
        its note; the index after them."""
        by, call = self.la[k], self.lcall[k]
        packed, rec = self.packed, self.recorder
        reasons = rec.reasons
        tnodes, w_cq, ids = packed.tnodes, self.w_cq, self.w_id
        p, p_cq = ids[by], tnodes[w_cq[by]]
        victims = []
        reasons_for: dict[tuple, Any] = {}
        while k < self.n and self.kind[k] == L.L_PREEMPT and self.la[k] == by and self.lcall[k] == call:
            v = self.lw[k]
            if not self.running[v]:
                raise ReplayError(f"call {self.calls}: victim {ids[v]} of {p} is not running")
            reason = self.victim_reason(by, v, self.lb[k], self.lc[k], self.ld[k], reasons_for)
            self._evict(v, by, reason, now)
            victims.append(ids[v])
            k += 1
        self.waiting[by] = now
        reasons.rekey(by)
        note = preemption_note(p, p_cq.name, victims)
        rec.note(note, now)
        return k

    def victim_reason(self, by: int, v: int, var: int, allow: int, lca: int, made: dict) -> tuple[str, dict]:
        """The reason victim ``v`` of ``by`` carries (search variant, allowBorrowing, lca node), as
        its rule's counter key and its dict; victims alike (priority, ClusterQueue, search values)
        share one, kept in ``made`` for the preemptor's victims."""
        alike = (self.prio[v], self.w_cq[v], var, allow, lca)
        got = made.get(alike)
        if got is None:
            tnodes, w_cq, qpath = self.packed.tnodes, self.w_cq, self.q_path
            values = {"variant": var, "allowBorrowing": bool(allow), "lca": None if lca < 0 else tnodes[lca].name}
            r = preemption_reason(self.w_id[by], self.prio[by], tnodes[w_cq[by]], self.prio[v], tnodes[w_cq[v]],
                                  pack.VARIANT_REASON[var], values, (qpath[w_cq[by]], qpath[w_cq[v]]))
            got = made[alike] = (f"{r.model}/{r.rule}", r.to_dict())
        return got

    def _evict(self, v: int, by: int, reason: tuple[str, dict], now: float) -> None:
        """``Recorder.preempt``, then the engine's ``_evict`` (no grace period in this class), for
        every pod of ``v`` in name order; ``reason``: its rule's counter key and its reason's
        dict (shared by the events of victims alike, which the document only reads)."""
        rec = self.recorder
        wl = self.wls[v]
        vid, queue, res = wl.id, wl.queue, wl.groups[0].resources
        order, on = self.order[v], self.on[v]
        pods = sorted(order)
        if pods != order:
            at = {tid: i for i, tid in enumerate(order)}
            on = [on[at[tid]] for tid in pods]
        rule, why = reason
        start, grace, names = self.started_at[v], wl.grace, self.node_names
        lost = now - start
        events, reasons = rec.events, rec.reasons
        pairs, used = self.w_shape[v].groups[0][1], self.used
        self.running[v] = False
        self.gen[v] += 1
        n = len(pods)
        rec.preemptions += n
        rec.preempt_count[vid] = rec.preempt_count.get(vid, 0) + n
        rec.queue_preemptions[queue] = rec.queue_preemptions.get(queue, 0) + n
        rec.by_rule[rule] = rec.by_rule.get(rule, 0) + n
        rec.before_change(now)
        self.epoch += n
        for tid, node in zip(pods, on):
            reasons.preempted_for(by, tid, v)
            events.append({"time": now, "kind": "preempt", "allocation": tid, "workload": vid, "queue": queue,
                           "node": names[node], "start": start, "resources": dict(res), "grace": grace,
                           "reason": why})
            for r, x in pairs:
                used[r][node] -= x
            rec.task_evicted(v, now)
            rec.evicted_event(tid, vid, queue, res, lost, now)
        self._use(v, -n)
        reasons.became_pending(v)
        self.order[v] = pods
