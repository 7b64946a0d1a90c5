"""Packing a block of a columnar trace (``makeway.sim.importers.swf_columns.Columns``) into the compiled
core's per-workload arrays with array operations: what ``CompiledSimulation._pack`` writes for the
same workloads, row for row, without a ``Workload`` object per job.

Every job of such a trace is one group of int cpus (``procs`` x 1 cpu, or 1 x ``procs`` cpus), of
priority 0, already checked against the config (queue known, ``cpu`` declared, no id twice) and in
submit order, so none of ``_pack``'s per-row refusals can happen; a shape is made once per distinct
processor count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Iterator

import numpy as np

from makeway.sim.fast import layout as K


class _Groups:
    __slots__ = ("groups",)

    def __init__(self, groups: tuple):
        self.groups = groups


class JobIds(Sequence):
    """Row -> workload id (its job number as text) for the rows loaded so far, read from the job column:
    no string per workload held for the run (a columnar trace packs every row, in order)."""

    def __init__(self, job: np.ndarray):
        self.job, self.n = job, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, w: Any) -> Any:
        if isinstance(w, slice):
            return list(map(str, self.job[: self.n][w].tolist()))
        if w < 0:
            w += self.n
        if not 0 <= w < self.n:
            raise IndexError(w)
        return str(int(self.job[w]))

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, self.n, 4096):
            yield from map(str, self.job[lo:min(self.n, lo + 4096)].tolist())


class IdIndex(Mapping):
    """Workload id -> row, made when first asked (the results of a run mostly read rows, not ids)."""

    def __init__(self, ids: JobIds):
        self.ids = ids
        self._map: dict[str, int] | None = None
        self._n = -1

    def _get(self) -> dict[str, int]:
        if self._map is None or self._n != len(self.ids):
            self._map = {w: i for i, w in enumerate(self.ids)}
            self._n = len(self.ids)
        return self._map

    def __getitem__(self, key: str) -> int:
        return self._get()[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._get().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._get()

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self.ids)


def batch_end(src: Any, batch: int) -> int:
    """Where the next batch ends: ``batch`` rows, then every row of the last one's submit time
    (``CompiledSimulation._load``'s batches)."""
    lo, n = src.at, len(src)
    if lo + batch >= n:
        return n
    return int(np.searchsorted(src.sub, src.sub[lo + batch - 1], side="right"))


def load(sim: Any, src: Any) -> None:
    """The next batch of ``src`` into ``sim``'s arrays (``CompiledSimulation._load`` for columns)."""
    from makeway.core.objects import TaskGroup

    lo, hi = src.take(batch_end(src, sim.BATCH))
    if hi >= len(src):
        sim.IS[K.MORE] = 0
        src.finish()
    n = hi - lo
    base = len(sim.ids)
    if n == 0:
        sim.IS[K.NLOAD] = base
        return
    procs = src.procs[lo:hi]
    uniq, inv = np.unique(procs, return_inverse=True)
    shape_of = np.empty(uniq.shape[0], np.int64)
    raw_of = np.empty(uniq.shape[0], np.int64)
    tasks_of = np.empty(uniq.shape[0], np.int64)
    for u, p in enumerate(uniq.tolist()):
        key = ((1, (("cpu", p),)),) if src.pool else ((p, (("cpu", 1),)),)
        hit = sim._raw.get(key)
        if hit is None:
            groups = (TaskGroup(1, {"cpu": p}),) if src.pool else (TaskGroup(p, {"cpu": 1}),)
            s, raw = sim._shape_of(_Groups(groups))
        else:
            s, raw = hit[0], hit[2]
        shape_of[u], raw_of[u], tasks_of[u] = s, raw, sim.shape_info[s][0]
    inv = inv.reshape(-1)
    if not isinstance(sim.ids, JobIds):
        sim.ids = JobIds(src.job)
        sim.idx = IdIndex(sim.ids)
    sim.ids.n = hi
    sim.prio.extend([0] * n)
    sub, dur, req = src.sub[lo:hi], src.run[lo:hi], src.req[lo:hi]
    sim._last_fed = float(sub[-1])
    sim._capacity(max(base + n, len(src)))  # the whole trace at once: no grown copy beside its original
    sl = slice(base, base + n)
    WI, WF = sim.WI, sim.WF
    tks = tasks_of[inv]
    WI[sl, K.Q] = np.array([sim.qix[q] for q in src.qnames], np.int64)[src.qcode[lo:hi]]
    WI[sl, K.S] = shape_of[inv]
    WI[sl, K.TASKS] = tks
    WI[sl, K.LEFT] = tks
    WI[sl, K.CHILD] = -1
    WI[sl, K.RAW] = raw_of[inv]
    WI[sl, K.SIB] = -1
    if sim.options.kill_at_requested_time:
        with np.errstate(invalid="ignore"):
            kill = req < dur  # NaN (no request) compares False
        WI[sl, K.KILL] = kill
        WF[sl, K.RUN] = np.where(kill, req, dur)
    else:
        WI[sl, K.KILL] = 0
        WF[sl, K.RUN] = dur
    sim.dur[sl] = dur
    sim.req[sl] = req
    WF[sl, K.SUB] = sub
    WF[sl, K.NEGP] = 0.0
    WF[sl, K.FIRST] = np.nan
    WF[sl, K.FIN] = np.nan
    perm = np.lexsort((src.job[lo:hi].astype(str), sub))  # a run of one submit time is ordered by id (as text)
    ords = np.empty(n, np.int64)
    ords[perm] = np.arange(base, base + n)
    WI[sl, K.ORD] = ords
    sim.INV[ords] = np.arange(base, base + n)
    sim.IS[K.NLOAD] = base + n
