"""An SWF log's jobs as columns, handed to the compiled core a block at a time (no ``Workload`` per job).

Why: making one ``Workload`` per job, checking it against the config and packing it into the
compiled core's arrays one field at a time cost more than the simulation on the KTH log. A
``Columns`` holds what ``swf._made`` would make of each job as numpy columns (id, queue, submit,
run time, requested time, processors); the compiled core packs a block of them with array
operations (``CompiledSimulation._load_columns``). Every other consumer iterates it and gets the
same ``Workload`` objects ``swf._made`` yields, so the pure-Python and general engines see no
difference. The tape's warnings, counts and drops are replayed as the rows are taken, at the same
points of the stream (``take``), and ``ImportStats.records`` counts the rows taken.

``columns`` returns None where the checks ``run`` makes per workload could say anything (a queue the
config lacks, an undeclared ``cpu``, a job number seen twice): that run takes the per-workload path,
whose messages and skips are the reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np

from makeway.sim.importers import swf_scan
from makeway.sim.importers._common import ImportStats, Reporter


class Columns:
    """The rows of a tape as the columns a run reads; ``at``: rows taken so far."""

    def __init__(self, tp: "swf_scan.Tape", qnames: list[str], qcode: np.ndarray, rep: Reporter, pool: bool):
        cols = tp.cols
        self.job = cols[:, swf_scan.JOB].astype(np.int64)
        self.sub = np.ascontiguousarray(cols[:, swf_scan.SUBMIT])
        self.run = np.ascontiguousarray(cols[:, swf_scan.RUN])
        req = cols[:, swf_scan.REQ]
        self.req = np.where(req > 0, req, np.nan)
        self.procs = cols[:, swf_scan.PROCS].astype(np.int64)
        # what only the ``Workload`` objects read (settings, user): kept small, the tape let go
        self.status = cols[:, swf_scan.STATUS].astype(np.int32)
        self.wait = np.ascontiguousarray(cols[:, swf_scan.WAIT])
        self.user = cols[:, swf_scan.USER].astype(np.int64)
        self.qnames, self.qcode, self.pool = qnames, qcode, pool
        self.rep = rep
        swf_scan.forget()  # the tape (its 12-column matrix) is not read again
        self.events, self.pos = tp.events, tp.pos
        self._e = 0
        self.at = 0

    def __len__(self) -> int:
        return self.job.shape[0]

    def _replay(self, upto: int | None) -> None:
        """Report every event placed before row ``upto`` is yielded (None: all of them, the log read)."""
        ne = len(self.events)
        hi = ne if upto is None else int(np.searchsorted(self.pos, upto, side="right"))
        if hi > self._e:
            swf_scan.replay(self.events, self.rep, self._e, hi)
            self._e = hi
        if upto is None:
            swf_scan.forget()  # read to its end: nothing reads the log's arrays again

    def start(self) -> None:
        """What reading the first row reports (its events; all of them when there is none)."""
        self._replay(0 if len(self) else None)

    def take(self, hi: int) -> tuple[int, int]:
        """Rows ``at:hi`` handed out: their events reported, ``records`` counted; (lo, hi)."""
        lo = self.at
        self._replay(hi - 1)
        self.rep.stats.records += hi - lo
        self.at = hi
        return lo, hi

    def finish(self) -> None:
        """The events after the last row (the reader's end)."""
        self._replay(None)

    def __iter__(self) -> Iterator[Any]:
        """The rows not taken yet as ``swf._made`` makes them."""
        from makeway.core.objects import TaskGroup, Workload

        n = len(self)
        while self.at < n:
            lo = self.at
            hi = min(n, lo + 4096)
            block = zip(self.job[lo:hi].tolist(), self.sub[lo:hi].tolist(), self.run[lo:hi].tolist(),
                        self.procs[lo:hi].tolist(), self.req[lo:hi].tolist(), self.status[lo:hi].tolist(),
                        self.wait[lo:hi].tolist(), self.user[lo:hi].tolist(), self.qcode[lo:hi].tolist())
            for k, (job, submit, run, procs, req, status, wait, user, q) in enumerate(block):
                self.take(lo + k + 1)
                settings: dict[str, Any] = {}
                if status >= 0:
                    settings["status"] = status
                if wait >= 0:
                    settings["wait"] = int(wait) if wait.is_integer() else wait
                group = TaskGroup(1, {"cpu": procs}) if self.pool else TaskGroup(procs, {"cpu": 1})
                yield Workload(str(job), self.qnames[q], submit, run, (group,), 0, True, 0.0,
                               None if req != req else req, f"u{user}" if user >= 0 else None, {}, settings)
        self.finish()


def columns(path: Path, cfg: Any, *, strict: bool = False, stats: ImportStats | None = None,
            queue_by: str = "auto", layout: str = "pool", processors: str = "requested") -> Columns | None:
    """The log's jobs as ``Columns`` for a run on ``cfg``, or None (see the module doc)."""
    from makeway.sim.importers import swf

    if processors not in swf.PROCESSORS or queue_by not in swf.QUEUE_BY or layout not in swf.LAYOUTS:
        return None
    tp = swf_scan.tape(path, processors)
    if tp is None:
        return None
    cols = tp.cols
    if cols.shape[0] and "cpu" not in cfg.resources:
        return None
    if np.unique(cols[:, swf_scan.JOB]).shape[0] != cols.shape[0]:
        return None
    hdr = swf.read_header(path)
    if queue_by == "auto":
        keys = cols[:, [swf_scan.QUEUE, swf_scan.PART]].astype(np.int64)
        uniq, code = np.unique(keys, axis=0, return_inverse=True)
        names = [swf.queue_name(hdr, q, p) for q, p in uniq.tolist()]
    else:
        col = swf_scan.USER if queue_by == "user" else swf_scan.GROUP
        uniq, code = np.unique(cols[:, col].astype(np.int64), return_inverse=True)
        names = [f"{queue_by}-{i}" if i >= 0 else "default" for i in uniq.tolist()]
    if any(q not in cfg.queues for q in names):
        return None
    tp.parsed = None  # what ``cluster`` reads; not needed from here on
    stats = stats if stats is not None else ImportStats()
    return Columns(tp, names, code.reshape(-1).astype(np.int32), Reporter(path, strict, stats), layout == "pool")


__all__ = ["Columns", "columns"]
