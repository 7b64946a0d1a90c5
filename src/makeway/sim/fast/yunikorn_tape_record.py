"""A compiled YuniKorn run recorded from the compiled walk's tapes (slice 4 of
``docs/plans/compiled-walks.md``).

``yunikorn_record.LogRun`` walks the engine's instants in Python. ``TapeRun`` has
``yunikorn_walk`` walk them, pending reasons included, and reads what it wrote once: the feed for
the sums, the events in the order the recorder appends them with the preemption counters, the
first starts, finishes and restarts, the pending set and the trails. The document is
``LogRun``'s, which is the general engine's. Where a tape has no room left (a trail longer than
the walk provided for), ``LogRun`` records the run.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from makeway.policies.yunikorn.fast import layout as L
from makeway.policies.yunikorn.model import preempt_reason
from makeway.sim.fast import kueue_walk_reasons as KR
from makeway.sim.fast import yunikorn_walk as YW
from makeway.sim.fast import yunikorn_walk_reasons as RW
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.fast.kueue_tape_record import read_reasons, submissions
from makeway.sim.fast.yunikorn_record import LogRun


class TapeRun(LogRun):
    """``LogRun`` with the walk compiled: the same recorder, fed from the tapes at the end."""

    def _run(self) -> Any:
        self.model.bind(self.state)
        rec = self.recorder
        out, tapes = self._walk()
        status = int(out[YW.O_STATUS])
        if status == YW.TAPE_FULL:
            return super()._run()
        if status != YW.OK:
            raise ReplayError(self._refusal(status, int(out[YW.O_WHERE]), int(out[YW.O_CALLS]), tapes["now"]))
        self.now = tapes["now"]
        self.events_processed = int(out[YW.O_EVENTS])
        self.pos, self.calls = int(out[YW.O_POS]), int(out[YW.O_CALLS])
        submissions(self, int(out[YW.O_SUB]))
        self._events(tapes["events"][:int(out[YW.O_EV])])
        self._starts_and_ends(out, tapes)
        read_reasons(rec.reasons, tapes["reasons"], None, len(self.wls))
        rec.feed = array("q", tapes["feed"][:int(out[YW.O_FEED])].tobytes())
        rec._marks = array("d", tapes["marks"][:int(out[YW.O_MARKS])].tobytes())
        if len(rec._marks):
            rec.last_t = rec._marks[-1]
        if out[YW.O_STOPPED]:
            rec.stopped_reason = "horizon"
        self.pend, self.queued = tapes["pend"].tolist(), tapes["queued"].tolist()
        rec.close(self.now)
        self._pending_gangs()
        return rec

    def _walk(self) -> tuple[np.ndarray, dict[str, Any]]:
        """``yunikorn_walk.walk`` over the packed log: its scalars and tapes."""
        packed, wls, state, n = self.packed, self.wls, self.state, self.n
        log = packed.LOG[:n]
        W, T = len(wls), len(self.tw)
        res = list(state.resources)
        R = max(1, len(res))
        REQ = np.zeros((max(1, W), R), np.int64)
        for w, shape in enumerate(self.w_shape):
            for r, v in shape.groups[0][1]:
                REQ[w, r] = v
        # C order whatever the shape: numba compiles the walk anew for another layout
        cap = np.ascontiguousarray(np.array(self.cap, np.int64).T.reshape(self.N, len(res))) if res else \
            np.zeros((self.N, 1), np.int64)
        total = self.total_calls
        fin_t, fin_row, fin_task = self._finishes()
        horizon = self.options.horizon
        room = T + 5 * n + W + 16
        tapes: dict[str, Any] = {
            "feed": np.zeros(room, np.int64), "marks": np.zeros(room, np.float64),
            "events": np.zeros((3 * n + 1, YW.NCOLS), np.float64), "first": np.full(max(1, W), np.nan),
            "fst": np.zeros(max(1, W), np.int64), "fin": np.zeros((max(1, W), 2), np.float64),
            "restarts": np.zeros((n + 1, 4), np.float64), "pend": np.zeros(max(1, T), np.bool_),
            "queued": np.zeros(max(1, T), np.int64)}
        S, Y, RIN = self._reason_state(room, room + 4 * T)
        tapes["reasons"] = S
        out = np.zeros(YW.NOUT, np.int64)
        subs = np.array(self.sub + [wl.submit for wl in self.late] + [np.inf], np.float64)
        tapes["now"] = float(YW.walk(
            log[:, L.C_KIND].copy(), log[:, L.C_A].copy(), log[:, L.C_B].copy(), log[:, L.C_C].copy(),
            log[:, L.C_CALL].copy(), packed.LT[:n].astype(np.float64), packed.CT[:total].astype(np.float64),
            packed.WK[:total].astype(np.float64), subs, W, np.array(fin_t, np.float64), np.array(fin_row + [0], np.int64),
            np.array(fin_task + [0], np.int64), np.array(self.tw or [0], np.int64)[:T], np.array(self.toff, np.int64),
            np.array(self.w_tasks or [0], np.int64), REQ, cap, np.inf if horizon is None else float(horizon),
            self.MAX_ROUNDS, float(self.recorder.last_t), bool(self.options.record_starts), tapes["feed"],
            tapes["marks"], tapes["events"], tapes["first"], tapes["fst"], tapes["fin"], tapes["restarts"],
            tapes["pend"], tapes["queued"], S, Y, RIN, out))
        return out, tapes

    def _reason_state(self, room: int, trail_rows: int) -> tuple:
        """The trails' fresh state and what they read (``yunikorn_walk_reasons``): ``room`` rows
        for the lists of fresh workloads and victims, ``trail_rows`` for the trail tape."""
        W, Q = len(self.wls), len(self.q_names)
        S = KR.new_state(W, Q, 1, 1, 1, 1, room, trail_rows)
        wq = np.array(self.w_q or [0], np.int64)
        per_q = np.bincount(wq[:W], minlength=Q) if W else np.zeros(max(1, Q), np.int64)
        qoff = np.zeros(max(1, Q), np.int64)
        if Q:
            qoff[1:Q] = np.cumsum(per_q)[:-1]
        ints = (wq, np.array(self.rank or [0], np.int64), np.array(self.by_rank or [0], np.int64), qoff,
                np.array([self.recorder.reasons.HEAD], np.int64))
        nowhere = np.array([sh.nowhere for sh in self.w_shape] or [False], np.bool_)
        return S, RW.new_touched(W), (ints, nowhere)

    def _refusal(self, status: int, k: int, call: int, now: float) -> str:
        """``LogRun``'s message for a log the walk refused (``yunikorn_walk`` status codes)."""
        if status == YW.CALLS_LEFT:
            return (f"the engine made {call} calls and took {k} log entries; the compiled loop made "
                    f"{self.total_calls} calls and logged {self.n}")
        if status == YW.CALL_AT_OTHER_INSTANT:
            at = float(self.packed.CT[k]) if k < self.total_calls else None
            return f"call {k + 1} at t={now}: the compiled log has it at t={at}"
        log = self.packed.LOG
        t = int(log[k, L.C_A])
        if status == YW.ROW_AT_OTHER_INSTANT:
            return f"call {call} at t={now}: the compiled log has it at t={float(self.packed.LT[k])}"
        if status == YW.NOT_PENDING:
            return f"the log starts {self.tid(t)} at t={now}, which is not pending"
        if status == YW.NO_FIT:
            return f"t={now}: {self.tid(t)} does not fit on {self.node_names[int(log[k, L.C_B])]}"
        if status == YW.VICTIM_NOT_RUNNING:
            return f"t={now}: victim {self.tid(t)} of {self.tid(int(log[k, L.C_B]))} is not running"
        return f"call {call}: the log unreserves {self.tid(t)}, which holds no reservation"

    def _events(self, tape: np.ndarray) -> None:
        """The events in tape order, with ``LogRun._preempt``'s counters and waste."""
        rec, wls, names, tw, tid = self.recorder, self.wls, self.node_names, self.tw, self.tid
        events, counts, by_queue, by_rule = rec.events, rec.preempt_count, rec.queue_preemptions, rec.by_rule
        cols = (YW.C_KIND, YW.C_T, YW.C_TASK, YW.C_BY, YW.C_NODE, YW.C_RESV, YW.C_START)
        for kind, now, t, by, node, at, start in tape[:, cols].tolist():
            t, node = int(t), int(node)
            wl = wls[tw[t]]
            if kind == YW.EV_PREEMPT:
                by = int(by)
                ask = wls[tw[by]]
                vid, queue, res = wl.id, wl.queue, wl.groups[0].resources
                vtid = tid(t)
                reason = preempt_reason(L.RULE, tid(by), ask.id, ask.queue, ask.priority, ask.groups[0].resources,
                                        vtid, queue, wl.priority, res, names[int(at)])
                rec.preemptions += 1
                counts[vid] = counts.get(vid, 0) + 1
                by_queue[queue] = by_queue.get(queue, 0) + 1
                rule = f"{reason.model}/{reason.rule}"
                by_rule[rule] = by_rule.get(rule, 0) + 1
                events.append({"time": now, "kind": "preempt", "allocation": vtid, "workload": vid, "queue": queue,
                               "node": names[node], "start": start, "resources": dict(res), "grace": wl.grace,
                               "reason": reason.to_dict()})
                rec.evicted_event(vtid, vid, queue, res, now - start, now)
            elif kind == YW.EV_START:
                events.append({"time": now, "kind": "start", "allocation": tid(t), "workload": wl.id,
                               "node": names[node]})
            else:
                events.append({"time": now, "kind": "finish", "allocation": tid(t), "workload": wl.id})

    def _starts_and_ends(self, out: np.ndarray, tapes: dict[str, Any]) -> None:
        rec, ids, names = self.recorder, self.w_id, self.node_names
        first = tapes["first"].tolist()
        for w in tapes["fst"][:int(out[YW.O_FST])].tolist():
            rec._first[w] = first[w]
            rec._started.append(w)
        rec._finished.extend((int(w), t) for w, t in tapes["fin"][:int(out[YW.O_FIN])].tolist())
        for now, t, node, ev in tapes["restarts"][:int(out[YW.O_RS])].tolist():
            t = int(t)
            rec.restarts.setdefault(ids[self.tw[t]], []).append((now, self.tid(t), names[int(node)], ev))
