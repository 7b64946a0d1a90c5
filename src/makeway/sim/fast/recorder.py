"""The ``Recorder`` of a fast-core run: sums kept in lists, indexed by resource and queue.

It is a ``Recorder`` (the results document, the summary and every reader of them are the same code)
whose feed methods take the fast core's integer indexes instead of allocations: usage per
resource and per queue, pending demand of the tracked queues and the utilisation integral are
added up in the order and with the rounding the general recorder uses, and sampled on the same
grid. The per-workload dictionaries the readers use are built once, when the run closes.
"""

from __future__ import annotations

from typing import Any

from makeway.core.objects import Workload
from makeway.sim.fast.reasons import FastReasons
from makeway.sim.metrics import Recorder, _round


def _add(x: Any, v: Any) -> Any:
    y = x + v
    return round(y, 9) if type(y) is float else y


class FastRecorder(Recorder):
    def __init__(self, state: Any, model: Any, sim: Any):
        super().__init__(state, record_starts=False, model=model)
        self.sim = sim
        self.reasons = FastReasons(sim)  # type: ignore[assignment]
        res = state.resources
        nq = len(state.queues)
        self._res = res
        self._used = [0] * len(res)
        self._integral = [0] * len(res)
        self._qusage = [[0] * len(res) for _ in range(nq)]
        self._ptasks = [0] * nq
        qix = {q: i for i, q in enumerate(state.queues)}
        self._qix = qix
        self._pres = {qix[q]: [0] * len(res) for q in self.tracked_queues}
        self._pn = {qix[q]: 0 for q in self.tracked_queues}
        self._tracked_paths = [[p for p in sim.paths[i] if p in self._pres] for i in range(nq)]
        self._leaves = [(qix[q], state.queues[q].weight or 1.0) for q in self.leaves]
        self._caps = [self.capacity.get(k, 0) for k in res]
        self._nonzero_caps = [(r, c) for r, c in enumerate(self._caps) if c]  # what ``jain_now`` divides by
        self._first: list[float | None] = []
        self._started: list[int] = []
        self._finished: list[tuple[int, float]] = []
        self._killed: dict[int, int] = {}
        self.ints = sim.ints

    def counts(self) -> tuple[int, int]:
        return len(self._finished), len(self.sim.w_id)

    # -- feed from the fast core -----------------------------------------------------------------

    def before_change(self, now: float) -> None:
        dt = now - self.last_t
        if dt > 0:
            integral = self._integral
            for r, v in enumerate(self._used):
                if v:
                    integral[r] = integral[r] + v * dt
            self.last_t = now
            if not self.series_t or now - self.series_t[-1] >= self.sample_interval:
                self._sample(now)

    def submitted(self, w: int, wl: Workload, shape: Any, now: float) -> None:
        if self.first_t is None:
            self.first_t = now
        sim = self.sim
        q = sim.w_q[w]
        tasks = sim.w_tasks[w]
        self._ptasks[q] += tasks
        self._first.append(None)
        pres = self._pres
        tracked = self._tracked_paths[q]
        if tracked:
            for count, pairs, _ in shape.groups:
                if count > 0:
                    for p in tracked:
                        acc = pres[p]
                        for r, v in pairs:
                            acc[r] = acc[r] + count * v if self.ints else _add(acc[r], count * v)
            for p in tracked:
                self._pn[p] += tasks
        self.reasons.submitted(w)
        self.count_unplaceable(wl, shape)

    def count_unplaceable(self, wl: Any, shape: Any) -> None:
        """A submitted workload no node could ever hold counts as unplaceable (the first one named)."""
        if shape.nowhere:
            too_big = self.beyond_every_node(wl)
            if too_big is not None:
                self.unplaceable += 1
                if self.first_unplaceable is None:
                    self.first_unplaceable = (wl.id, *too_big)

    def task_started(self, w: int, g: int, now: float) -> None:
        if self.ints:
            self._move(w, g, 1)
            return
        sim = self.sim
        pairs = sim.w_shape[w].groups[g][1]
        used = self._used
        q = sim.w_q[w]
        qusage, pres, pn = self._qusage, self._pres, self._pn
        for r, v in pairs:
            used[r] = _add(used[r], v)
        for p in sim.paths[q]:
            acc = qusage[p]
            for r, v in pairs:
                acc[r] = _add(acc[r], v)
        for p in self._tracked_paths[q]:
            if p in pres:
                acc = pres[p]
                for r, v in pairs:
                    acc[r] = _add(acc[r], -v)
                pn[p] -= 1
        self._ptasks[q] -= 1

    def _move(self, w: int, g: int, sign: int) -> None:
        """A pod of group ``g`` of ``w`` starts (``sign`` 1) or goes back to pending (-1), with
        integer quantities: usage up, pending demand down, or the other way."""
        sim = self.sim
        pairs = sim.w_shape[w].groups[g][1]
        used, qusage, pres, pn = self._used, self._qusage, self._pres, self._pn
        q = sim.w_q[w]
        for r, v in pairs:
            used[r] += sign * v
        for p in sim.paths[q]:
            acc = qusage[p]
            for r, v in pairs:
                acc[r] += sign * v
            if p in pres:
                acc = pres[p]
                for r, v in pairs:
                    acc[r] -= sign * v
                pn[p] -= sign
        self._ptasks[q] -= sign

    def workload_started(self, w: int, now: float) -> None:
        self._first[w] = now
        self._started.append(w)
        self.reasons.started(w)

    def task_finished(self, w: int, g: int, now: float, killed: bool, done: bool) -> None:
        sim = self.sim
        pairs = sim.w_shape[w].groups[g][1]
        used = self._used
        qusage = self._qusage
        if self.ints:
            for r, v in pairs:
                used[r] -= v
            for p in sim.paths[sim.w_q[w]]:
                acc = qusage[p]
                for r, v in pairs:
                    acc[r] -= v
        else:
            for r, v in pairs:
                used[r] = _add(used[r], -v)
            for p in sim.paths[sim.w_q[w]]:
                acc = qusage[p]
                for r, v in pairs:
                    acc[r] = _add(acc[r], -v)
        self._ended(w, now, killed, done)

    def _ended(self, w: int, now: float, killed: bool, done: bool) -> None:
        """What a task's finish adds beyond the sums: a kill, the workload's finish, the end."""
        if killed:
            self._killed[w] = self._killed.get(w, 0) + 1
        if done:
            self._finished.append((w, now))
        if now > self.end_t:
            self.end_t = now

    # -- samples -----------------------------------------------------------------------------------

    def _sample(self, now: float) -> None:
        if len(self.series_t) >= self.MAX_SAMPLES:
            self._thin()
        self.series_t.append(now)
        for r, k in enumerate(self._res):
            cap = self._caps[r]
            self.series_used[k].append(self._used[r] / cap if cap else 0.0)
        qix = self._qix
        for q, per_res in self.series_queues.items():
            i = qix[q]
            u = self._qusage[i]
            p = self._pres[i]
            pending = self.series_pending[q]
            for r, k in enumerate(self._res):
                per_res[k].append(u[r])
                pending[k].append(_round(p[r]))
            self.series_pending_n[q].append(self._pn[i])
        self._sample_shares(now, len(self.series_t) - 1)
        if not self._quotas_read:
            self._read_quotas()
        self.series_jain.append(self.jain_now())

    def jain_now(self) -> float:
        caps = self._nonzero_caps
        xs = []
        qusage, ptasks = self._qusage, self._ptasks
        for i, weight in self._leaves:
            usage = qusage[i]
            if not ptasks[i] and not any(usage):
                continue
            share = max([usage[r] / c for r, c in caps]) if caps else 0.0
            xs.append(share / weight)
        if not xs:
            return 1.0
        total, sq = sum(xs), sum([x * x for x in xs])
        return (total * total) / (len(xs) * sq) if sq > 0 else 1.0

    # -- the end ----------------------------------------------------------------------------------

    def close(self, now: float) -> None:
        self.before_change(now)
        self.end_t = max(self.end_t, now)
        self._materialise()

    def _materialise(self) -> None:
        """The dictionaries ``Recorder``'s readers take, in the order the general recorder fills them."""
        sim, state = self.sim, self.state
        ids = sim.w_id
        self.submit_t = {ids[w]: state.workloads[ids[w]].submit for w in range(len(ids))}
        self.first_start = {ids[w]: self._first[w] for w in self._started}
        self.finish_t = {ids[w]: t for w, t in self._finished}
        self.killed = {ids[w]: n for w, n in self._killed.items()}
        self.used = {k: self._used[r] for r, k in enumerate(self._res) if self._used[r] or type(self._used[r]) is float}
        self.used_integral = {k: v for k, v in zip(self._res, self._integral) if v}
        names = list(state.queues)
        self.pending_tasks = {q: self._ptasks[i] for i, q in enumerate(names)}
        for q in self.tracked_queues:
            i = self._qix[q]
            self.pending_res[q] = {k: v for k, v in zip(self._res, self._pres[i]) if v}
            self.pending_n[q] = self._pn[i]
        for i, q in enumerate(names):
            state.queue_usage[q] = {k: v for k, v in zip(self._res, self._qusage[i]) if v}
        wls = state.workloads
        for w in self.reasons.pending:
            wl = wls[ids[w]]
            state.pending[wl.id] = dict.fromkeys(wl.task_ids())
            state.pending_res[wl.id] = wl.total()
