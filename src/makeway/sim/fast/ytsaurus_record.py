"""The results of a compiled YTsaurus run, recorded straight from its decision log.

``LogRun`` walks the general engine's instants that can change the document: finishes (stale ones
included: a preempted allocation's finish still makes an instant, which changes nothing), then
submissions, then the log's rows of the instant (``policies.ytsaurus.fast.layout``): computed
fair share updates, starvation notes, starts and preemptions, in the order the model made them.
The instants where only periodic calls ran and nothing was decided change nothing the recorder
keeps, so they are not walked. It feeds a recorder on index lists (``YTsaurusRecorder``, the fast
core's ``FastRecorder`` with Kueue's preemption counters) where the engine calls its own:
``after_instant`` where something was decided (a note, a start, a preemption) or changed (a
finish, a submission), as the engine's ``made or changed``.

What the log does not hold is kept by the walk: the snapshot's shares (``queue_shares`` reads the
last computed update's row of ``UPD``), each operation's clock status (from the notes), and each
operation's demand and usage as the last computed update saw them (an operation's fair share,
which its pending reason compares with its usage, is ``fast.fill`` on that tree again, computed
only when a reason round asks and the tree moved since: ``_OpShares``).

The walk and the log must agree: a start of a task that is not pending or does not fit, a victim
that is not running where the log says, an update out of order, rows left over, or a stop the walk
does not reach is a defect of the compiled loop, and raises ``ReplayError``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from typing import Any

from makeway.core.objects import Workload
from makeway.core.pending import FITS_NOWHERE, PREEMPTING, PRIORITY, QUOTA, RESOURCES
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import starvation
from makeway.policies.ytsaurus.classify import AP, NP, P
from makeway.policies.ytsaurus.fast import layout as L
from makeway.sim.collector import no_collections
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.fast.kueue_record import KueueRecorder, queue_paths, workload_shapes
from makeway.sim.fast.reasons import IndexedReasons

STATUS = {L.S_NP: NP, L.S_AP: AP, L.S_P: P}
RULE = "preemptive-stage"


def why_not(ran: Any) -> str | None:
    """None when ``LogRun`` can record this compiled run (``fast.args.run``'s result); else why
    the general engine runs it."""
    if ran.stop == L.STOP_WATCH:
        return "the no-progress watch might stop it"
    if ran.stop not in (L.STOP_IDLE, L.STOP_HORIZON):
        return f"the loop stopped with code {ran.stop}"
    return None


class YTsaurusReasons(IndexedReasons):
    """``ReasonLog`` for a YTsaurus ``LogRun``: the same rounds on the same grid, first reasons,
    positions and trails. In this class no pool has a ``max``, no task is larger than every node
    and no victim has a grace period, so for each queue's first ``HEAD`` (default order: priority,
    submit time, id) the model's ``pending_reason`` decides (``LogRun.model_reason``), and
    otherwise the generic rules reduce to ``preempting`` (a task evicted for it runs again),
    ``priority`` and ``resources``. An operation is pending while one of its tasks is: it stays in
    its queue's order while partly running, and comes back when a victim task is requeued."""

    def __init__(self, run: "LogRun"):
        super().__init__(run)
        self._victims: dict[int, set[int]] = {}  # preemptor -> tasks (global indexes) evicted for it
        self.keys: dict[int, list[tuple]] = {}  # queue -> its pending operations' order keys, sorted

    def submitted(self, w: int) -> None:
        self.fresh.append(w)
        self.became_pending(w)

    def became_pending(self, w: int) -> None:
        """A task of ``w`` is pending (submitted or requeued): ``state.pending_log`` has it."""
        self._back.add(w)
        if w not in self.pending:
            self.pending[w] = None
            run = self.sim
            lst = self.keys.get(run.w_q[w])
            if lst is None:
                lst = self.keys[run.w_q[w]] = []
            insort(lst, run.key[w])

    def task_started(self, w: int, none_left: bool) -> None:
        """``ReasonLog.started``: with no task left pending ``w`` stops waiting; otherwise its
        reason behind the heads may have moved."""
        if not none_left:
            self._stale.add(w)
            return
        del self.pending[w]
        self._current.pop(w, None)
        run = self.sim
        lst = self.keys[run.w_q[w]]
        del lst[bisect_left(lst, run.key[w])]

    def preempted_for(self, p: int, g: int) -> None:
        self._victims.setdefault(p, set()).add(g)
        self.fresh.append(p)

    def _preempting(self, w: int) -> bool:
        """``ReasonLog._victims_of``: whether a task evicted for ``w`` runs again, forgetting the
        others."""
        mine = self._victims.get(w)
        if not mine:
            return False
        running = self.sim.running
        alive = {g for g in mine if running[g]}
        if alive:
            self._victims[w] = alive
        else:
            del self._victims[w]
        return bool(alive)

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        run = self.sim
        if run.w_shape[w].nowhere:
            return FITS_NOWHERE, None
        if ask_model:
            mine = run.model_reason(w)
            if mine is not None:
                return mine
        if self._preempting(w):
            return PREEMPTING, None
        if position > 1:
            return PRIORITY, None
        return RESOURCES, None

    def _round(self, now: float) -> None:
        """The heads, and behind them what may have moved, victims evicted for it among them."""
        self._heads_round(now, [p for p in self._victims if p in self.pending])


class _Shares:
    """What the general recorder asks the model for at each sample (``queue_shares``: each pool's
    fair share and usage share of the last computed update), answered by the walk: the recorder's
    samples are ``Recorder._sample_shares``'s own code."""

    def __init__(self, run: "LogRun"):
        self.run = run

    def queue_shares(self, state: ClusterState, now: float) -> dict[str, dict[str, Any]]:
        return self.run.shares()


class YTsaurusRecorder(KueueRecorder):
    """``KueueRecorder`` fed per task: an operation's tasks start, finish and are evicted one by one."""

    def __init__(self, state: ClusterState, model: Any, run: "LogRun"):
        super().__init__(state, model, run)
        self.reasons = YTsaurusReasons(run)  # type: ignore[assignment]
        self.model = _Shares(run)


class _OpShares:
    """Each operation's fair share and usage share as the last computed update published them.

    The log keeps them per pool only. The walk keeps, per operation, its live and running task
    counts now and, for an operation changed since the last update, as they were then (copied at
    its first change after it). The tree of that update is then known, and ``fast.fill`` on it
    (``Packed.solve``, the loop's own code on the same items, so the same bits) gives every
    operation's fair share; it is computed again only when asked after another update."""

    def __init__(self, run: "LogRun"):
        self.run = run
        self.k = -1
        self.fair: dict[int, float] = {}

    def of(self, w: int) -> tuple[float, float]:
        run = self.run
        if self.k != run.kupd:
            self.fair = self._solve()
            self.k = run.kupd
        changed = run.mark[w] == run.kupd
        running = run.s_run[w] if changed else run.nrun[w]
        return self.fair[w], float(running * run.req[w]) / run.T

    def _solve(self) -> dict[int, float]:
        run = self.run
        k, mark, s_live, live = run.kupd, run.mark, run.s_live, run.live
        demand: dict[int, int] = {}
        for w in run.alive:
            if mark[w] != k:
                demand[w] = live[w] * run.req[w]
        for w in run.touched:
            if s_live[w] > 0:
                demand[w] = s_live[w] * run.req[w]
        packed = run.packed
        rows = packed.rows(demand)
        _, _, IVAL = packed.solve(rows)
        vals, item = (IVAL / run.T).tolist(), rows.OPITEM
        return {w: vals[item[w]] for w in demand if item[w] >= 0}


class LogRun:
    """The engine's walk of a compiled YTsaurus run, fed from its log (see the module docstring);
    ``run()`` returns the recorder, as ``Simulation.run`` does."""

    def __init__(self, ran: Any, state: ClusterState, model: Any, options: Any, wls: list[Workload],
                 late: list[Workload]):
        self.state, self.model, self.options = state, model, options
        self.ran, self.wls, self.late = ran, wls, late
        packed = self.packed = ran.packed
        self.now = 0.0
        self.events_processed = 0
        self.q_names, qix, self.paths = queue_paths(state)
        self.ints = True
        nodes = list(state.nodes.values())
        self.node_names = [n.name for n in nodes]
        self.cap = packed.CAP.tolist()
        self.used = [0] * len(nodes)
        self.T = float(packed.T)
        W = len(wls)
        self.w_id = [wl.id for wl in wls]
        self.w_q = [qix[wl.queue] for wl in wls]
        self.w_tasks = [wl.groups[0].count for wl in wls]
        self.req = packed.REQ[:W].tolist()
        self.pool = packed.POOL[:W].tolist()
        self.dur = [wl.duration for wl in wls]
        self.sub = [wl.submit for wl in wls]
        self.key = [(-wl.priority, wl.submit, wl.id, w) for w, wl in enumerate(wls)]
        self.w_shape = workload_shapes(wls, state.resources, nodes)
        # per task (operation ``w``'s are ``toff[w]..toff[w+1]-1``): running, pending, node, start, seq
        self.toff = [0] * (W + 1)
        for w in range(W):
            self.toff[w + 1] = self.toff[w] + self.w_tasks[w]
        ntasks = self.toff[W]
        self.top = [w for w in range(W) for _ in range(self.w_tasks[w])]
        self.running = [False] * ntasks
        self.tpend = [False] * ntasks
        self.tnode = [0] * ntasks
        self.tstart = [0.0] * ntasks
        self.tseq = [0] * ntasks
        self.seq = 0
        self.fin: list = []  # (end, seq, task): every finish pushed, stale ones too
        # per operation: pending and running tasks now; as the last computed update saw them
        self.npend = [0] * W
        self.nrun = [0] * W
        self.nfin = [0] * W
        self.live = [0] * W  # pending or running tasks
        self.alive: dict[int, None] = {}  # operations with a live task
        self.kupd = 0  # computed updates walked
        self.upd_row = -1  # the last one's row of ``UPD``
        self.npub = 0  # operations submitted at the last computed update: its tree's
        self.mark = [-1] * W  # the update count at which the operation last changed
        self.s_live = [0] * W  # its live and running tasks before that change
        self.s_run = [0] * W
        self.touched: list[int] = []  # operations changed since the last computed update
        self.starving = [False] * W  # the operation's clock is not ``non_starving`` (from the notes)
        self.op_shares = _OpShares(self)
        self.pix = {p: i for i, p in enumerate(packed.pools)}
        self._share_cols = [(q, 3 * self.pix[q]) for q in state.queues]
        self._upd = ran.UPD.tolist()
        self.recorder = YTsaurusRecorder(state, model, self)
        self.recorder.model_options = model.options()
        self.recorder.record_starts = options.record_starts

    # -- what the recorder and the reasons ask --------------------------------------------------------

    def shares(self) -> dict[str, dict[str, Any]]:
        """``YTsaurusModel.queue_shares``: each pool's shares in the last computed update."""
        if self.upd_row < 0:
            return {}
        row = self._upd[self.upd_row]
        return {q: {"fair_share": row[c + L.U_FAIR], "usage_share": row[c + L.U_USAGE]} for q, c in self._share_cols}

    def model_reason(self, w: int) -> tuple[str, str | None] | None:
        """``YTsaurusModel.pending_reason``'s code and blocking queue for pending operation ``w``:
        ``resources`` before an update published it, and while it starves (``preempting`` needs an
        allocation in its grace period, which this class has none of); ``quota`` at its fair share;
        else None, the generic rules."""
        if w >= self.npub or self.starving[w]:
            return RESOURCES, None
        fair, usage = self.op_shares.of(w)
        if usage + EPS >= fair:
            return QUOTA, self.wls[w].queue
        return None

    def _mark(self, w: int) -> None:
        """Operation ``w`` is about to change: keep what the last computed update saw of it."""
        if self.mark[w] != self.kupd:
            self.mark[w] = self.kupd
            self.s_live[w] = self.live[w]
            self.s_run[w] = self.nrun[w]
            self.touched.append(w)

    def tid(self, w: int, k: int) -> str:
        return f"{self.w_id[w]}/0/{k}"

    # -- the walk -------------------------------------------------------------------------------------------

    def run(self) -> Any:
        with no_collections():
            return self._run()

    def _run(self) -> Any:
        self.model.bind(self.state)
        ran = self.ran
        n = len(ran.LOG)
        log = ran.LOG.T.tolist() if n else [[] for _ in range(L.NLOG_COLS)]
        kind, la, lb, lc, ld = log[L.C_KIND], log[L.C_A], log[L.C_B], log[L.C_C], log[L.C_D]
        lt = ran.LT.tolist()
        lv = ran.LV.tolist()
        rec, wls = self.recorder, self.wls
        inf = float("inf")
        horizon = self.options.horizon
        stop = inf if horizon is None else float(horizon)
        progress = self.options.progress
        record_starts = self.options.record_starts
        fin = self.fin
        subs = self.sub + [wl.submit for wl in self.late] + [inf]
        W, ns, pos, events = len(wls), 0, 0, 0
        running, tseq, top = self.running, self.tseq, self.top
        heappop = heapq.heappop
        last = None
        while True:
            now = subs[ns]
            if fin and fin[0][0] < now:
                now = fin[0][0]
            if pos < n and lt[pos] < now:
                now = lt[pos]
            if now == inf:
                break
            if now > stop:
                rec.stopped_reason = "horizon"
                break
            last = self.now = now
            changed = False
            while fin and fin[0][0] == now:
                _, s, g = heappop(fin)
                events += 1
                if not running[g] or tseq[g] != s:
                    continue  # its allocation was preempted: a stale finish
                changed = True
                self._finish(g, top[g], now, record_starts)
            while subs[ns] == now and ns < W:
                events += 1
                changed = True
                self._submit(ns, wls[ns], now)
                ns += 1
            made = False
            while pos < n and lt[pos] == now:
                what = kind[pos]
                if what == L.L_START:
                    self._start(la[pos], lb[pos], lc[pos], now)
                    made = True
                elif what == L.L_PREEMPT:
                    self._preempt(la[pos], lb[pos], lc[pos], ld[pos], log[L.C_E][pos], lv[pos], now)
                    made = True
                elif what == L.L_NOTE:
                    self._note(la[pos], lb[pos], lc[pos], lv[pos], now)
                    made = True
                elif what == L.L_UPDATE:
                    if la[pos] != self.kupd:
                        raise ReplayError(f"t={now}: update {la[pos]} logged after {self.kupd} updates")
                    self.kupd += 1
                    self.upd_row = la[pos]
                    self.touched = []
                    self.npub = ns
                pos += 1
            if made or changed:
                rec.after_instant(now)
            if progress is not None:
                progress(now, events)
        self.events_processed = events
        if pos != n:
            raise ReplayError(f"the walk took {pos} of the compiled loop's {n} log rows")
        if ran.stop == L.STOP_HORIZON:
            rec.stopped_reason = "horizon"
        elif rec.stopped_reason is not None:
            raise ReplayError(f"the walk met the horizon at t={last}, the compiled loop stopped idle")
        if last is not None and ran.last_t < last:
            raise ReplayError(f"the compiled loop stopped at t={ran.last_t}, before the walk's t={last}")
        self.now = ran.last_t  # the engine's last instant: periodic ones after the walk's last
        rec.close(self.now)
        return rec

    def _submit(self, w: int, wl: Workload, now: float) -> None:
        rec = self.recorder
        self._mark(w)
        self.npend[w] = self.live[w] = self.w_tasks[w]
        self.alive[w] = None
        tpend = self.tpend
        for g in range(self.toff[w], self.toff[w + 1]):
            tpend[g] = True
        rec.before_change(now)
        self.state.workloads[wl.id] = wl
        rec.submitted(w, wl, self.w_shape[w], now)

    def _finish(self, g: int, w: int, now: float, record_starts: bool) -> None:
        rec = self.recorder
        self._mark(w)
        self.running[g] = False
        self.used[self.tnode[g]] -= self.req[w]
        self.nrun[w] -= 1
        self.nfin[w] += 1
        self.live[w] -= 1
        if not self.live[w]:
            del self.alive[w]
        rec.before_change(now)
        rec.task_finished(w, 0, now, False, self.nfin[w] >= self.w_tasks[w])
        if record_starts:
            rec.events.append({"time": now, "kind": "finish", "allocation": self.tid(w, g - self.toff[w]),
                               "workload": self.w_id[w]})

    def _start(self, w: int, k: int, node: int, now: float) -> None:
        """The engine's ``_start`` and ``Recorder.start`` of task ``k`` of ``w`` on ``node``."""
        g = self.toff[w] + k
        if not (0 <= k < self.w_tasks[w]) or not self.tpend[g]:
            raise ReplayError(f"the log starts task {k} of {self.w_id[w]} at t={now}, which is not pending")
        req = self.req[w]
        if self.used[node] + req > self.cap[node]:
            raise ReplayError(f"t={now}: a task of {self.w_id[w]} does not fit on {self.node_names[node]}")
        rec = self.recorder
        self._mark(w)
        self.used[node] += req
        self.tpend[g] = False
        self.running[g] = True
        self.tnode[g] = node
        self.tstart[g] = now
        self.seq += 1
        self.tseq[g] = self.seq
        self.npend[w] -= 1
        self.nrun[w] += 1
        rec.before_change(now)
        rec.task_started(w, 0, now)
        rec.reasons.task_started(w, self.npend[w] == 0)
        rec.workload_started(w, now)
        if rec._evicted_at or rec.record_starts:
            rec.task_restarted(self.w_id[w], self.tid(w, k), self.node_names[node], now)
        heapq.heappush(self.fin, (now + self.dur[w], self.seq, g))

    def _preempt(self, v: int, k: int, node: int, by: int, status: int, values: list, now: float) -> None:
        """``Recorder.preempt`` of task ``k`` of ``v`` for ``by`` with the preemptive stage's reason,
        then the engine's ``_evict``: it leaves at once and is pending again."""
        g = self.toff[v] + k
        if not (0 <= k < self.w_tasks[v]) or not self.running[g] or self.tnode[g] != node:
            raise ReplayError(f"t={now}: the log preempts task {k} of {self.w_id[v]} on {self.node_names[node]}, "
                              "which does not run there")
        rec = self.recorder
        wl = self.wls[v]
        vid, queue, res = wl.id, wl.queue, wl.groups[0].resources
        tid = self.tid(v, k)
        st = STATUS[status]
        reason = {"model": "ytsaurus", "rule": RULE, "preemptor": self.w_id[by], "detail": f"{st} allocation of {vid}",
                  "values": {"victim_status": st, "preemptor_fair_share": values[L.V_PFAIR],
                             "preemptor_usage_share": values[L.V_PUSAGE],
                             "preemptor_satisfaction": values[L.V_PSAT], "victim_satisfaction": values[L.V_VSAT]}}
        start = self.tstart[g]
        lost = now - start
        rec.preemptions += 1
        rec.preempt_count[vid] = rec.preempt_count.get(vid, 0) + 1
        rec.queue_preemptions[queue] = rec.queue_preemptions.get(queue, 0) + 1
        rule = f"ytsaurus/{RULE}"
        rec.by_rule[rule] = rec.by_rule.get(rule, 0) + 1
        rec.reasons.preempted_for(by, g)
        events = rec.events
        events.append({"time": now, "kind": "preempt", "allocation": tid, "workload": vid, "queue": queue,
                       "node": self.node_names[node], "start": start, "resources": dict(res), "grace": 0.0,
                       "reason": reason})
        self._mark(v)
        rec.before_change(now)
        self.running[g] = False
        self.tpend[g] = True
        self.used[node] -= self.req[v]
        self.nrun[v] -= 1
        self.npend[v] += 1
        rec.task_evicted(v, now)
        rec.evicted_event(tid, vid, queue, res, lost, now)
        rec.reasons.became_pending(v)

    def _note(self, w: int, what: int, status: int, values: list, now: float) -> None:
        """The starvation note ``update`` returns (``starvation.note``, or the "(finished)" one)."""
        wid = self.w_id[w]
        if what == L.N_FINISHED:
            message, vals = f"operation {wid} stops starving (finished)", {"starving": False, "status": starvation.NON}
            self.starving[w] = False
        else:
            starts = what == L.N_STARTS
            st = starvation.STARVING if status == L.ST_STARVING else starvation.NON
            if starts == (st == starvation.NON):
                raise ReplayError(f"t={now}: a note of {wid} with clock status {status}")
            since = values[L.V_SINCE]
            message = f"operation {wid} {'starts' if starts else 'stops'} starving"
            vals = {"starving": starts, "status": st, "fair_share": values[L.V_FAIR],
                    "usage_share": values[L.V_USAGE], "below_fair_share_since": None if since != since else since}
            self.starving[w] = starts
        rec = self.recorder
        rec.note_counts["starvation"] = rec.note_counts.get("starvation", 0) + 1
        rec.events.append({"time": now, "kind": "note", "note": "starvation", "subject": wid, "message": message,
                           "values": vals})
