"""A compiled Kueue run recorded from the compiled walk's tapes (slice 3 of
``docs/plans/compiled-walks.md``).

``kueue_record.LogRun`` walks the engine's instants in Python. ``TapeRun`` has ``kueue_walk``
walk them, trails included, and reads what it wrote once: the feed for the sums, the events in
the order the recorder appends them, the counters, the restarts, the first starts and finishes,
the pending set and the trails. The document is ``LogRun``'s, which is the general engine's.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from makeway.policies.kueue.heads import preemption_note
from makeway.sim.fast import kueue_walk as KW
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.fast.kueue_record import LogRun
from makeway.sim.fast.kueue_walk_reasons import B_PEND, I_PSEQ, I_RS, R_FULL



class TapeRun(LogRun):
    """``LogRun`` with the walk compiled: the same recorder, fed from the tapes at the end."""

    def _run(self) -> Any:
        self.model.bind(self.state)
        self._named: dict[int, list[str]] = {}
        opts, rec = self.options, self.recorder
        out = KW.run_walk(self.packed, self.wls, self.late, self.state, self.model, opts.horizon, rec.last_t,
                          self.MAX_ROUNDS, opts.record_starts, self.w_shape)
        if out["reasons"][0][I_RS][R_FULL]:  # a trail longer than the tape's room: the Python walk
            return super()._run()
        if out["status"] != KW.OK:
            raise ReplayError(self._refusal(out))
        self.now = out["now"]
        self._submissions(out["submitted"])
        self._events(out["events"])
        self._starts_and_ends(out)
        self._reasons(out["reasons"])
        rec.feed = array("q", out["feed"].tobytes())
        rec._marks = array("d", out["marks"].tobytes())
        if len(out["marks"]):
            rec.last_t = float(out["marks"][-1])
        if out["stopped"]:
            rec.stopped_reason = "horizon"
        rec.close(self.now)
        return rec

    def _refusal(self, out: dict) -> str:
        """``LogRun``'s message for a log the walk refused (``kueue_walk`` status codes)."""
        status, k, call, ids = out["status"], out["where"], out["calls"], self.w_id
        log = self.packed.LOG
        if status == KW.CALLS_LEFT:
            return (f"the engine made {call} calls and took {k} log entries; the compiled loop made "
                    f"{self.total_calls} calls and logged {self.n}")
        if status == KW.AT_OTHER_INSTANT:
            return f"call {call} at t={out['now']}: the compiled log has it at t={float(self.packed.LT[k])}"
        w = ids[int(log[k, 1])]
        if status == KW.NOT_PENDING:
            return f"call {call}: the log starts {w}, which is not pending"
        if status == KW.POD_COUNT:
            return f"call {call}: {w} has {len(self.order[int(log[k, 1])])} pods pending, the log starts {int(log[k, 3])}"
        if status == KW.NO_FIT:
            return f"call {call}: {w} does not fit on the nodes the log gives it"
        if status == KW.VICTIM_NOT_RUNNING:
            return f"call {call}: victim {w} of {ids[int(log[k, 2])]} is not running"
        return f"call {call}: more pods end than the log started"

    def _submissions(self, n: int) -> None:
        submissions(self, n)

    def _tid(self, w: int, rank: int) -> str:
        """The id of ``w``'s pod of this rank in name order (a gang's names sorted once)."""
        tids = self.order[w]
        if len(tids) == 1:
            return tids[0]
        named = self._named.get(w)
        if named is None:
            named = self._named[w] = sorted(tids)
        return named[rank]

    def _events(self, tape: Any) -> None:
        """The events in tape order, with ``LogRun._preemption``'s and ``_evict``'s counters and notes.

        Most rows are evicted pods (30,858 of 47,009 on the Kueue baseline), so their work is
        written out here: the victim's fixed parts read once per workload, the reason looked up in
        the note's cache before a call, ``KueueRecorder.evicted_event``'s waste and event inline."""
        rec, packed = self.recorder, self.packed
        events, names, ids, wls = rec.events, self.node_names, self.w_id, self.wls
        tnodes, w_cq, prio, order = packed.tnodes, self.w_cq, self.prio, self.order
        lw, lb, lc, ld = (packed.LOG[:self.n, c].tolist() for c in (1, 3, 4, 5))
        counts, by_queue, by_rule = rec.preempt_count, rec.queue_preemptions, rec.by_rule
        wasted, queue_wasted, evicted_at = rec.wasted, rec.queue_wasted, rec._evicted_at
        append, victim_reason = events.append, self.victim_reason
        victims: dict[int, tuple] = {}
        reasons_for: dict[tuple, tuple[str, dict]] = {}
        ints = tape[:, [KW.C_KIND, KW.C_W, KW.C_POD, KW.C_NODE, KW.C_BY, KW.C_ROW]].astype(np.int64).T.tolist()
        floats = tape[:, [KW.C_T, KW.C_START]].T.tolist()
        preempted = 0
        for kind, w, pod, node, by, row, t, start in zip(*ints, *floats):
            if kind == KW.EV_PREEMPT:
                v = victims.get(w)
                if v is None:
                    wl = wls[w]
                    res = wl.groups[0].resources
                    qw = queue_wasted.get(wl.queue)
                    if qw is None:
                        qw = queue_wasted[wl.queue] = {}
                    v = victims[w] = (wl.id, wl.queue, res, tuple(res.items()), wl.grace, qw)
                vid, queue, res, pairs, grace, qw = v
                alike = (prio[w], w_cq[w], lb[row], lc[row], ld[row])
                got = reasons_for.get(alike)
                if got is None:
                    got = victim_reason(by, w, lb[row], lc[row], ld[row], reasons_for)
                tids = order[w]
                tid = tids[0] if len(tids) == 1 else self._tid(w, pod)
                lost = t - start
                preempted += 1
                counts[vid] = counts.get(vid, 0) + 1
                by_queue[queue] = by_queue.get(queue, 0) + 1
                by_rule[got[0]] = by_rule.get(got[0], 0) + 1
                append({"time": t, "kind": "preempt", "allocation": tid, "workload": vid, "queue": queue,
                        "node": names[node], "start": start, "resources": dict(res), "grace": grace,
                        "reason": got[1]})
                for r, x in pairs:
                    wasted[r] = wasted.get(r, 0) + x * lost
                    qw[r] = qw.get(r, 0) + x * lost
                evicted_at[tid] = t
                append({"time": t, "kind": "evicted", "allocation": tid, "workload": vid, "queue": queue,
                        "resources": dict(res), "lost_seconds": lost})
            elif kind == KW.EV_NOTE:
                rec.note(preemption_note(ids[w], tnodes[w_cq[w]].name, [ids[lw[k]] for k in range(pod, node)]), t)
                reasons_for = {}
            elif kind == KW.EV_START:
                append({"time": t, "kind": "start", "allocation": self._tid(w, pod), "workload": ids[w],
                        "node": names[node]})
            else:
                append({"time": t, "kind": "finish", "allocation": self._tid(w, pod), "workload": ids[w]})
        rec.preemptions += preempted

    def _starts_and_ends(self, out: dict) -> None:
        rec, ids, names = self.recorder, self.w_id, self.node_names
        first = out["first"].tolist()
        for w in out["first_order"].tolist():
            rec._first[w] = first[w]
            rec._started.append(w)
        rec._finished.extend((int(w), t) for w, t in out["finished"].tolist())
        for t, w, pod, node, ev in out["restarts"].tolist():
            w = int(w)
            rec.restarts.setdefault(ids[w], []).append((t, self._tid(w, int(pod)), names[int(node)], ev))

    def _reasons(self, S: tuple) -> None:
        read_reasons(self.recorder.reasons, S, self.packed, len(self.wls))


def submissions(run: Any, n: int) -> None:
    """What the recorder keeps of the first ``n`` workloads' submissions beyond the walk's feed
    (a ``TapeRun`` of either model: its ``recorder``, ``state``, ``wls`` and ``w_shape``)."""
    rec, state, wls, shapes = run.recorder, run.state, run.wls, run.w_shape
    if n and rec.first_t is None:
        rec.first_t = wls[0].submit
    for w in range(n):
        wl = wls[w]
        state.workloads[wl.id] = wl
        rec._first.append(None)
        rec.count_unplaceable(wl, shapes[w])


def read_reasons(reasons: Any, S: tuple, packed: Any, W: int) -> None:
    """A walk's trails and pending set (in the order they became pending), where ``reasons``
    (``KueueReasons`` or ``YuniKornReasons``) keeps them for the document."""
    reasons.trail = KW.trails(S, packed)
    pend, seq = S[1][B_PEND][:W], S[0][I_PSEQ]
    reasons.pending = dict.fromkeys(sorted((int(w) for w in pend.nonzero()[0]), key=lambda w: seq[w]))
