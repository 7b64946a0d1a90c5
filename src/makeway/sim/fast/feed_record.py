"""A recorder of a compiled run whose sums are made once, at the close, from a feed of codes.

In the classes the compiled Kueue and YuniKorn loops take, every task asks whole numbers and the
model has no shares to sample (no fair sharing; ``queue_shares`` answers nothing), so a start, an
eviction or a finish of one task, or a submission, only appends codes to ``feed`` (a change of
instant, its mark), and ``sums.replay`` makes the sums, the utilisation integral and the samples
from them as ``FastRecorder`` would have as it went: the same document, without a dozen list
updates per event in Python. A code names the task's workload (its tasks ask alike): one per
task started, evicted or finished, and one per task at the submission. Nothing may read the
sums during the run (a walk that needs a queue's usage as it goes keeps its own).
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import numpy as np

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.sim.fast.kueue_record import KueueRecorder
from makeway.sim.fast.sums import E_EVICT, E_FINISH, E_START, E_SUBMIT, replay


class FeedRecorder(KueueRecorder):
    """``KueueRecorder`` with its sums made at the close (see the module docstring)."""

    def __init__(self, state: ClusterState, model: Any, run: Any):
        super().__init__(state, model, run)
        self.feed = array("q")  # event codes (``sums``)
        self._marks = array("d")

    def before_change(self, now: float) -> None:
        if now - self.last_t > 0:
            self.last_t = now
            self.feed.append(-1 - len(self._marks))
            self._marks.append(now)

    def task_started(self, w: int, g: int, now: float) -> None:
        self.feed.append(4 * w + E_START)

    def tasks_started(self, w: int, count: int) -> None:
        """``count`` tasks of ``w`` start at once (a walk's start, without a call per task)."""
        self._codes(4 * w + E_START, count)

    def _codes(self, code: int, count: int) -> None:
        if count == 1:
            self.feed.append(code)
        else:
            self.feed.extend([code] * count)

    def task_finished(self, w: int, g: int, now: float, killed: bool, done: bool) -> None:
        self.feed.append(4 * w + E_FINISH)
        self._ended(w, now, killed, done)

    def task_evicted(self, w: int, now: float) -> None:
        self.feed.append(4 * w + E_EVICT)

    def submitted(self, w: int, wl: Workload, shape: Any, now: float) -> None:
        if self.first_t is None:
            self.first_t = now
        tasks = self.sim.w_tasks[w]
        self._codes(4 * w + E_SUBMIT, tasks)
        self._first.append(None)
        self.reasons.submitted(w)
        self.count_unplaceable(wl, shape)

    def close(self, now: float) -> None:
        self.before_change(now)
        self.end_t = max(self.end_t, now)
        self._replay()
        self._materialise()

    def _replay(self) -> None:
        """The sums and samples from the feed (``sums.replay``), where ``FastRecorder`` keeps them."""
        run, res = self.sim, self._res
        R, nq = len(res), len(run.q_names)
        W = len(run.w_shape)
        REQ = np.zeros((max(1, W), max(1, R)), np.int64)
        if W and R:
            REQ[:W, :R] = [shape.groups[0][2] for shape in run.w_shape]
        depth = max([len(p) for p in run.paths] + [1])
        PATH = np.full((nq, depth), -1, np.int64)
        TRK = np.full((nq, depth), -1, np.int64)
        for q in range(nq):
            PATH[q, :len(run.paths[q])] = run.paths[q]
            TRK[q, :len(self._tracked_paths[q])] = self._tracked_paths[q]
        qix = self._qix
        tq = np.array([qix[q] for q in self.series_queues], np.int64)
        leaf_q = np.array([i for i, _ in self._leaves], np.int64)
        leaf_w = np.array([float(w) for _, w in self._leaves], np.float64)
        out = replay(np.frombuffer(self.feed, np.int64) if self.feed else np.zeros(0, np.int64),
                     np.frombuffer(self._marks, np.float64) if self._marks else np.zeros(0, np.float64),
                     REQ, np.array(run.w_q + [0], np.int64), PATH, TRK, nq, 0.0, float(self.sample_interval),
                     self.MAX_SAMPLES, leaf_q, leaf_w, np.array(self._caps, np.int64), tq, sys.version_info >= (3, 12))
        used, integral, qusage, pres, pn, ptasks, ST, SU, SQ, SP, SPN, SJ, ns, interval, _ = out
        self._used = used[:R].tolist()
        self._integral = [v if v else 0 for v in integral[:R].tolist()]
        self._qusage = [row[:R] for row in qusage.tolist()]
        self._ptasks = ptasks.tolist()
        pres_l, pn_l = pres.tolist(), pn.tolist()
        self._pres = {i: pres_l[i][:R] for i in self._pres}
        self._pn = {i: pn_l[i] for i in self._pn}
        self.sample_interval = float(interval)
        self.series_t = ST[:ns].tolist()
        for r, k in enumerate(res):
            cap = self._caps[r]
            self.series_used[k] = [u / cap if cap else 0.0 for u in SU[:ns, r].tolist()]
        for t, q in enumerate(self.series_queues):
            per_res, pending = self.series_queues[q], self.series_pending[q]
            for r, k in enumerate(res):
                per_res[k] = SQ[:ns, t, r].tolist()
                pending[k] = SP[:ns, t, r].tolist()
            self.series_pending_n[q] = SPN[:ns, t].tolist()
        self.series_jain = SJ[:ns].tolist()
        if ns and not self._quotas_read:
            self._read_quotas()
