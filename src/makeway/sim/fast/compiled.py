"""The fast core on numba (``makeway[fast]``): workloads packed into arrays, the loop compiled.

``CompiledSimulation`` reads the trace in batches (every workload of one submit time in the same
batch), writes each workload as a row of numpy arrays and lets ``makeway.sim.fast.loop.run`` take
the run as far as those rows go; the results are read out of the arrays once, at the end, into the
same ``Recorder`` fields the pure-Python fast core fills. Where a row cannot be packed exactly (a
quantity that is not an integer, which the compiled sums would not round as ``add_into`` does), the
run starts again on the pure-Python fast core, which the workloads read so far are handed to: same
results, only slower. Without numba, or with ``MAKEWAY_JIT=0`` in the environment, the pure-Python
core runs from the start.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

import numpy as np

from makeway.core.decisions import Note
from makeway.core.objects import Workload
from makeway.core.pending import FITS_NOWHERE, GANG, PRIORITY, RESOURCES
from makeway.core.resources import EPS
from makeway.sim.fast import layout as K
from makeway.sim.fast.reasons import FastReasons
from makeway.sim.metrics import Recorder

CODES = (FITS_NOWHERE, GANG, PRIORITY, RESOURCES)
LIMIT = 1 << 52  # every quantity and every sum of them stays exact in a float64


def enabled() -> bool:
    """numba is there and the environment does not turn it off (``MAKEWAY_JIT=0``)."""
    global _HAVE_NUMBA
    if _HAVE_NUMBA is None:
        try:
            _HAVE_NUMBA = importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):  # blocked (``sys.modules["numba"] = None``) or broken
            _HAVE_NUMBA = False
    return _HAVE_NUMBA and os.environ.get("MAKEWAY_JIT", "1") != "0"


_HAVE_NUMBA: bool | None = None


class _Fallback(Exception):
    """A workload the arrays cannot hold exactly: the run goes to the pure-Python core."""


class _Reasons:
    """What ``Recorder`` reads of a reason log: the trails by workload id, each read out of the
    log arrays when its row is written (no list of every trail is ever built)."""

    def __init__(self, sim: "CompiledSimulation"):
        n = int(sim.IS[K.TRAIL_N])
        self.sim = sim
        self.order = np.argsort(sim.TRW[:n], kind="stable")  # entries grouped by workload, in log order
        self.starts = np.searchsorted(sim.TRW[:n][self.order], np.arange(len(sim.ids) + 1))
        self.at = memoryview(self.starts)  # Python ints per index, without numpy scalars

    def rows(self) -> "_LazyTrails":
        return _LazyTrails(self)


class _LazyTrails(Mapping):
    def __init__(self, log: _Reasons):
        self.log = log

    def _span(self, key: object) -> tuple[int, int]:
        w = self.log.sim.idx.get(key)  # type: ignore[arg-type]
        if w is None:
            return 0, 0
        at = self.log.at
        return at[w], at[w + 1]

    def __getitem__(self, key: str) -> list[list[Any]]:
        lo, hi = self._span(key)
        if lo == hi:
            raise KeyError(key)
        sim, sel = self.log.sim, self.log.order[lo:hi]
        return [[t, CODES[c], None] for t, c in zip(sim.TRT[sel].tolist(), sim.TRC[sel].tolist())]

    def __contains__(self, key: object) -> bool:
        lo, hi = self._span(key)
        return lo < hi

    def __iter__(self) -> Iterator[str]:
        ids = self.log.sim.ids
        starts = self.log.starts
        return (ids[w] for w in np.nonzero(starts[1:] > starts[:-1])[0].tolist())

    def __len__(self) -> int:
        starts = self.log.starts
        return int(np.count_nonzero(starts[1:] > starts[:-1]))


class _Column(Mapping):
    """``Recorder.submit_t``/``first_start``/``finish_t`` after a compiled run: id -> time, read from the
    arrays (rows ``order``, column ``col`` of ``WF``), not a dict of every workload held to the end."""

    def __init__(self, sim: "CompiledSimulation", order: np.ndarray, col: int):
        self.sim, self.order, self.col = sim, order, col

    def __getitem__(self, key: str) -> float:
        w = self.sim.idx.get(key)
        if w is None or w >= int(self.sim.IS[K.NSUB]):
            raise KeyError(key)
        t = float(self.sim.WF[w, self.col])
        if t != t:
            raise KeyError(key)
        return t

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        ids = self.sim.ids
        return (ids[w] for w in self.order.tolist())

    def __len__(self) -> int:
        return int(self.order.shape[0])

    def values(self) -> list[float]:  # type: ignore[override]
        return self.sim.WF[self.order, self.col].tolist()


class CompiledRecorder(Recorder):
    sim: Any = None

    def counts(self) -> tuple[int, int]:
        return len(self.finish_t), len(self.submit_t)

    def workload_fields(self, w: str) -> tuple[str, Any, float]:
        sim = self.sim
        i = sim.idx[w]
        return sim.q_names[int(sim.WI[i, K.Q])], sim.prio[i], float(sim.dur[i])

    # the results read from the arrays (``fast.tables``), not one workload at a time
    def waits(self) -> list[float]:
        from makeway.sim.fast import tables

        return tables.waits(self.sim)

    def _slowdowns(self, ids: Any = None) -> list[float]:
        if ids is not None:
            return super()._slowdowns(ids)
        from makeway.sim.fast import tables

        return tables.slowdowns(self.sim)

    def queue_table(self) -> dict[str, Any]:
        from makeway.sim.fast import tables

        return tables.queue_table(self, self.sim)

    def pending_reasons(self) -> dict[str, str]:
        from makeway.sim.fast import tables
        from makeway.sim.pending import pending_reasons

        return pending_reasons(self.state, tables.unfinished(self.sim), self.stopped_reason)

    def workload_json(self) -> Iterator[str]:
        """Each row of ``iter_workload_rows`` as its compact JSON text (``results_io`` writes them)."""
        from makeway.sim.fast import tables

        return tables.workload_json(self, self.sim)


class _View(Mapping):
    """``state.workloads`` after a compiled run: every workload read so far, in submission order.
    An unfinished one is its own ``Workload``; a finished one is made again from the arrays when it is
    asked for (id, queue, submit, duration, groups, priority, requested duration: what the fast
    models and the results read)."""

    def __init__(self, sim: "CompiledSimulation", live: dict[str, Workload]):
        self.sim, self.live = sim, live

    def __getitem__(self, key: str) -> Workload:
        hit = self.live.get(key)
        if hit is not None:
            return hit
        sim = self.sim
        w = sim.idx[key]
        req = float(sim.req[w])
        return Workload(key, sim.q_names[sim.WI[w, K.Q]], float(sim.WF[w, K.SUB]), float(sim.dur[w]),
                        sim.raw_groups[sim.WI[w, K.RAW]], sim.prio[w],
                        requested_duration=None if req != req else req)

    def __contains__(self, key: object) -> bool:
        return key in self.sim.idx

    def __iter__(self) -> Iterator[str]:
        return iter(self.sim.idx)

    def __len__(self) -> int:
        return len(self.sim.idx)


def _too_big() -> Exception:
    from makeway.sim.engine import SimulationError

    return SimulationError("more than 2**31 workloads: run with MAKEWAY_JIT=0")


def _grow(a: np.ndarray, n: int, fill: Any = 0) -> np.ndarray:
    b = np.full((n,) + a.shape[1:], fill, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


class CompiledSimulation:
    """``run(workloads)`` returns a ``Recorder``; ``pure`` is the pure-Python core's class.

    A run of fewer than ``MIN_JOBS`` workloads goes to the pure-Python core: loading the compiled
    loop (numba's import and its cache, about a second of CPU) costs more than it saves there.
    """

    BATCH = 8192
    PLACES = 1024  # least room for gang placements (see ``_placements``)
    MIN_JOBS = 20_000

    def __init__(self, state: Any, model: Any, options: Any, pure: type):
        self.state, self.model, self.options, self.pure = state, model, options, pure
        self.strict = bool(pure.strict)

    def _setup(self) -> None:
        state, model, options = self.state, self.model, self.options
        self.now = 0.0
        self.events_processed = 0
        res = state.resources
        self.R = R = len(res)
        self.rix = {r: i for i, r in enumerate(res)}
        nodes = list(state.nodes.values())
        self.N = N = len(nodes)
        caps = [[n.capacity.get(r, 0) for n in nodes] for r in res]
        self.ints = all(type(v) is int and 0 <= v for row in caps for v in row) and \
            all(sum(row) < LIMIT for row in caps)
        self.cap_lists = caps
        if not self.ints:
            return
        self.cap = np.array(caps, dtype=np.int64).reshape(R, N)
        self.used = np.zeros((R, N), np.int64)
        size = 1
        while size < max(1, N):
            size *= 2
        self.T = np.full((R, 2 * size), K.PAD, np.int64)
        self.T[:, size:size + N] = self.cap
        for i in range(size - 1, 0, -1):
            self.T[:, i] = np.maximum(self.T[:, 2 * i], self.T[:, 2 * i + 1])
        self.capt = self.cap.sum(axis=1) if N else np.zeros(R, np.int64)
        qnames = list(state.queues)
        self.q_names = qnames
        self.qix = {q: i for i, q in enumerate(qnames)}
        nq = len(qnames)
        paths = [[self.qix[a] for a in state.path_to_root(q)] for q in qnames]
        self.qp_off = np.array([0] + list(itertools.accumulate(len(p) for p in paths)), np.int64)
        self.qp = np.array([p for path in paths for p in path] or [0], np.int64)
        self.rec = rec = CompiledRecorder(state, record_starts=False, model=model)
        rec.model_options = model.options()
        self.tracked = np.zeros(nq, np.int8)
        for q in rec.tracked_queues:
            self.tracked[self.qix[q]] = 1
        self.tq = np.array([self.qix[q] for q in rec.tracked_queues] or [], np.int64)
        self.leaf_q = np.array([self.qix[q] for q in rec.leaves], np.int64)
        self.leaf_w = np.array([float(state.queues[q].weight or 1.0) for q in rec.leaves], np.float64)
        self.ccap = np.array([rec.capacity.get(k, 0) for k in res], np.int64)
        order = sorted(range(nq), key=qnames.__getitem__)
        self.qrank = np.empty(nq, np.int64)
        self.qrank[order] = np.arange(nq)
        self.waitcnt = np.zeros(nq, np.int64)
        self.rused = np.zeros(R, np.int64)
        self.integral = np.zeros(R, np.float64)
        self.qusage = np.zeros((nq, R), np.int64)
        self.pres = np.zeros((nq, R), np.int64)
        self.pn = np.zeros(nq, np.int64)
        self.ptasks = np.zeros(nq, np.int64)
        ms, ntq = Recorder.MAX_SAMPLES, len(self.tq)
        self.ST = np.zeros(ms, np.float64)
        self.SU = np.zeros((ms, R), np.int64)
        self.SQ = np.zeros((ms, ntq, R), np.int64)
        self.SP = np.zeros((ms, ntq, R), np.int64)
        self.SPN = np.zeros((ms, ntq), np.int64)
        self.SJ = np.zeros(ms, np.float64)
        self.IS = np.zeros(K.NIS, np.int64)
        self.FS = np.zeros(K.NFS, np.float64)
        IS, FS = self.IS, self.FS
        IS[K.PHEAD] = IS[K.PTAIL] = IS[K.FIFO] = IS[K.BLOCKED_W] = -1
        IS[K.STRICT] = int(self.strict)
        IS[K.HEAD] = FastReasons.HEAD
        IS[K.RPD] = FastReasons.ROUNDS_PER_DOUBLING
        IS[K.MORE] = 1
        FS[K.NEXT_ROUND] = -np.inf
        FS[K.RINTERVAL] = 1.0
        FS[K.SINTERVAL] = rec.sample_interval
        FS[K.HORIZON] = np.inf if options.horizon is None else float(options.horizon)
        # per workload
        self.WI = np.zeros((0, K.NWI), np.int32)  # (int32: half the memory; sizes are checked)
        self.WF = np.zeros((0, K.NWF), np.float64)
        self.INV = np.zeros(0, np.int32)
        self.FT = np.zeros(0, np.float64)
        self.FI = np.zeros((0, 4), np.int64)
        self.STL = np.zeros(0, np.int32)
        self.FNL = np.zeros(0, np.int32)
        self.NTW = np.zeros(0, np.int32)
        self.NTT = np.zeros(0, np.float64)
        self.PG = np.zeros(1, np.int32)  # (int32: a gang placement is a task's group and node)
        self.PI = np.zeros(1, np.int32)
        self.TRW = np.zeros(1024, np.int32)
        self.TRT = np.zeros(1024, np.float64)
        self.TRC = np.zeros(1024, np.int8)
        # shapes
        self.shapes: dict[tuple, int] = {}
        self._raw: dict[tuple, tuple[int, tuple, int]] = {}
        self.raw_groups: list[tuple] = []
        # what a workload's row needs once its ``Workload`` is let go (``_View``)
        self.idx: dict[str, int] = {}
        self.prio: list[Any] = []
        self.dur = np.zeros(0, np.float64)
        self.req = np.zeros(0, np.float64)
        self._dropped = 0
        self.shape_info: list[tuple[int, bool]] = []   # (tasks, nowhere)
        self.SI = np.zeros((0, K.NSI), np.int64)
        self.GC = np.zeros(0, np.int64)
        self.GV = np.zeros((0, R), np.int64)
        self.newl = np.zeros(2, np.int64)
        self.ids: list[str] = []
        self.bad: Any = None
        self._peek: Any = None
        self._last_fed = -np.inf
        self._unpacked: list[Workload] = []
        self._columnar = False

    # -- shapes ----------------------------------------------------------------------------------

    def _shape_of(self, wl: Workload) -> tuple[int, int]:
        """(shape, index of its groups as read) of a workload."""
        raw = tuple((g.count, tuple(g.resources.items())) for g in wl.groups)
        hit = self._raw.get(raw)
        if hit is None:
            hit = self._raw[raw] = (self._new_shape(wl), wl.groups, len(self.raw_groups))
            self.raw_groups.append(wl.groups)
        elif wl.groups is not hit[1]:
            wl.groups = hit[1]
        return hit[0], hit[2]

    def _new_shape(self, wl: Workload) -> int:
        rix, R = self.rix, self.R
        key, tasks = [], 0
        for g in wl.groups:
            if type(g.count) is not int:
                raise _Fallback
            for k, v in g.resources.items():
                if type(v) is not int or not 0 <= v < LIMIT or (g.count > 0 and g.count * v >= LIMIT):
                    raise _Fallback
            key.append((g.count, tuple((rix[k], v) for k, v in g.resources.items() if k in rix)))
            if g.count > 0:
                tasks += g.count
        if tasks == 0:
            return -1
        key = tuple(key)
        s = self.shapes.get(key)
        if s is not None:
            return s
        vecs = []
        for count, pairs in key:
            vec = [0] * R
            for r, v in pairs:
                vec[r] = v
            vecs.append(vec)
        nowhere = any(c > 0 and not self._fits_some_node(vec) for (c, _), vec in zip(key, vecs))
        nowhere = nowhere or any(k not in rix and v > 0 for g in wl.groups for k, v in g.resources.items())
        s = self.shapes[key] = len(self.shape_info)
        self.shape_info.append((tasks, nowhere))
        if s >= self.SI.shape[0]:
            self.SI = _grow(self.SI, 2 * s + 8)
            self.newl = np.zeros(2 * self.SI.shape[0] + 2, np.int64)
        g0 = self.GC.shape[0]
        self.GC = np.concatenate([self.GC, np.array([c for c, _ in key], np.int64)])
        self.GV = np.concatenate([self.GV, np.array(vecs, np.int64).reshape(len(key), R)])
        single = len(key) == 1 and key[0][0] == 1
        row = self.SI[s]
        row[K.NG], row[K.GOFF], row[K.NOWHERE], row[K.SINGLE] = len(key), g0, int(nowhere), int(single)
        row[K.FITS_EMPTY] = int(self.strict and not nowhere and self._fits_empty(key, vecs))
        row[K.FAILED_AT], row[K.ROOT], row[K.NEWMARK] = -1, -1, -1
        self.IS[K.NSHAPES] = s + 1
        return s

    def _fits_some_node(self, vec: list) -> bool:
        cap = self.cap_lists
        return any(all(v <= 0 or v <= cap[r][i] + EPS for r, v in enumerate(vec)) for i in range(self.N))

    def _fits_empty(self, key: tuple, vecs: list) -> bool:
        from makeway.sim.fast.strict import FastStrictFifo

        class _Shape:
            groups = [(c, list(pairs), vec) for (c, pairs), vec in zip(key, vecs)]

        class _Cluster:
            cap, N = self.cap_lists, self.N

        return FastStrictFifo._groups_fit_empty(_Cluster, _Shape)  # type: ignore[arg-type]

    # -- loading a batch ---------------------------------------------------------------------------

    def _load(self, feed: Iterable[Workload]) -> None:
        """The next batch of workloads into the arrays (every one of its last submit time)."""
        batch: list[Workload] = []
        nxt = self._peek if self._peek is not None else next(feed, None)
        self._peek = None
        while nxt is not None:
            batch.append(nxt)
            nxt = next(feed, None)
            if len(batch) >= self.BATCH and (nxt is None or nxt.submit != batch[-1].submit):
                break
        self._peek = nxt
        if nxt is None:
            self.IS[K.MORE] = 0
        self._pack(batch)

    def _pack(self, batch: list[Workload]) -> None:
        state, qix, wls = self.state, self.qix, self.state.workloads
        kill, strict = self.options.kill_at_requested_time, self.strict
        base = len(self.ids)
        qs, ss, tks, runs, kills, negp, subs, raws, durs, reqs = [], [], [], [], [], [], [], [], [], []
        idx, prio, ids = self.idx, self.prio, self.ids
        shape_of, info, raw_hits = self._shape_of, self.shape_info, self._raw
        last = self._last_fed
        bad = None
        nan = np.nan
        i = base
        for at, wl in enumerate(batch):
            sub = wl.submit
            wid = wl.id
            if sub < last or wl.queue not in qix or wid in idx:
                bad = wl
                break
            groups = wl.groups
            hit = None
            if len(groups) == 1:  # the common case, looked up without a generator
                g = groups[0]
                hit = raw_hits.get(((g.count, tuple(g.resources.items())),))
            if hit is not None:
                if hit[1] is not groups:
                    wl.groups = hit[1]  # one copy of an equal tuple per shape, as ``_shape_of`` keeps
                s, raw = hit[0], hit[2]
            else:
                try:
                    s, raw = shape_of(wl)
                except _Fallback:
                    self._unpacked = batch[at:]
                    raise
            if s < 0:
                bad = wl
                break
            last = sub
            wls[wid] = wl
            idx[wid] = i
            i += 1
            ids.append(wid)
            raws.append(raw)
            p = wl.priority
            prio.append(p)
            negp.append(-p)
            dur = wl.duration
            durs.append(dur)
            req = wl.requested_duration
            reqs.append(nan if req is None else req)
            tks.append(info[s][0])
            qs.append(qix[wl.queue])
            ss.append(s)
            subs.append(sub)
            if kill and req is not None and req < dur:
                runs.append(req)
                kills.append(1)
            else:
                runs.append(dur)
                kills.append(0)
        if strict:
            negp = [0] * len(negp)
        self._last_fed = last
        n = len(qs)
        hi = base + n + (bad is not None)
        self._capacity(hi)
        WI, WF = self.WI, self.WF
        sl = slice(base, base + n)
        WI[sl, K.Q] = qs
        WI[sl, K.S] = ss
        WI[sl, K.TASKS] = tks
        WI[sl, K.LEFT] = tks
        WI[sl, K.KILL] = kills
        WI[sl, K.CHILD] = -1
        WI[sl, K.RAW] = raws
        self.dur[sl] = durs
        self.req[sl] = reqs
        WI[sl, K.SIB] = -1
        WF[sl, K.SUB] = subs
        WF[sl, K.RUN] = runs
        WF[sl, K.NEGP] = negp
        WF[sl, K.FIRST] = np.nan
        WF[sl, K.FIN] = np.nan
        ords = list(range(base, base + n))
        ids = self.ids
        i = 0
        while i < n:  # a run of one submit time is ordered by id
            j = i + 1
            while j < n and subs[j] == subs[i]:
                j += 1
            if j - i > 1:
                run = sorted(range(i, j), key=lambda k: ids[base + k])
                for rank, k in enumerate(run):
                    ords[k] = base + i + rank
            i = j
        WI[sl, K.ORD] = ords
        self.INV[np.array(ords, np.int64)] = np.arange(base, base + n)
        if bad is not None:
            self.bad = bad
            WI[base + n, K.BAD] = 1
            WF[base + n, K.SUB] = bad.submit
            self.IS[K.MORE] = 0
        self.IS[K.NLOAD] = hi

    def _capacity(self, hi: int) -> None:
        if hi > self.WI.shape[0]:
            cap = max(hi, self.WI.shape[0] * 3 // 2, 1024)
            if cap >= 1 << 31:
                raise _too_big()
            self.WI = _grow(self.WI, cap)
            self.WF = _grow(self.WF, cap)
            for name in ("INV", "FT", "STL", "FNL", "NTW", "NTT", "dur", "req"):
                setattr(self, name, _grow(getattr(self, name), cap))
            self.FI = _grow(self.FI, cap)

    def _placements(self) -> None:
        """Room in ``PG``/``PI`` for every gang that may start in the next call. Only running gangs'
        placements are live (a finished gang's are never read again): when room runs out they are
        moved to the front, so the arrays stay the size of what runs, not of the whole trace."""
        IS, WI = self.IS, self.WI
        rows = WI[: int(IS[K.NLOAD])]
        waiting = int(rows[(rows[:, K.STATE] < 2) & (rows[:, K.TASKS] > 1), K.TASKS].sum())
        if int(IS[K.NPLACE]) + waiting < self.PG.shape[0]:
            return
        live = np.nonzero(self.FI[: int(IS[K.FIN_N]), 2] == -1)[0].tolist()
        spans = [(k, w, int(WI[w, K.POFF]), int(WI[w, K.PNUM])) for k, w in
                 zip(live, self.FI[live, 1].tolist())]
        used = sum(m for *_, m in spans)
        cap = max(2 * (used + waiting), self.PLACES)
        PG, PI = np.zeros(cap, np.int32), np.zeros(cap, np.int32)
        o = 0
        for k, w, a, m in spans:
            PG[o:o + m] = self.PG[a:a + m]
            PI[o:o + m] = self.PI[a:a + m]
            WI[w, K.POFF] = o
            self.FI[k, 3] = o
            o += m
        IS[K.NPLACE] = o
        self.PG, self.PI = PG, PI

    # -- the run ---------------------------------------------------------------------------------

    def run(self, workloads: Iterable[Workload]) -> Any:
        """``workloads``: ``Workload`` objects in submit order, or a columnar trace
        (``importers.swf_columns.Columns``), packed a block at a time by ``fast.columns``."""
        cols = workloads if hasattr(workloads, "take") else None
        if cols is not None:
            if len(cols) - cols.at < self.MIN_JOBS:  # type: ignore[arg-type]
                return self._pure(iter(workloads))
            feed: Iterator[Workload] = iter(())
        else:
            feed = iter(workloads)
            head = list(itertools.islice(feed, self.MIN_JOBS))
            if len(head) < self.MIN_JOBS:
                return self._pure(iter(head))
            feed = itertools.chain(head, feed)
        from makeway.sim.fast import heap

        heap.hold()
        self._setup()
        if not self.ints:
            return self._pure(iter(workloads) if cols is not None else feed)
        self._columnar = cols is not None
        from makeway.sim.fast.aot import loop_for

        progress = self.options.progress
        while True:
            if self.IS[K.NSUB] == self.IS[K.NLOAD] and self.IS[K.MORE]:
                try:
                    if cols is not None:
                        from makeway.sim.fast import columns

                        columns.load(self, cols)
                    else:
                        self._load(feed)
                except _Fallback:
                    return self._restart(feed)
                continue
            self._placements()
            need = self.IS[K.PCOUNT] + (self.IS[K.NLOAD] - self.IS[K.NSUB]) + 1
            if self.TRW.shape[0] - self.IS[K.TRAIL_N] < need:
                cap = self.TRW.shape[0] * 3 // 2 + int(need)
                self.TRW, self.TRT, self.TRC = _grow(self.TRW, cap), _grow(self.TRT, cap), _grow(self.TRC, cap)
            args = (self.IS, self.FS, self.WI, self.WF, self.INV, self.SI, self.GC, self.GV, self.T, self.cap,
                    self.used, self.capt, self.rused, self.integral, self.qusage, self.pres, self.pn, self.ptasks,
                    self.qp_off, self.qp, self.tracked, self.tq, self.leaf_q, self.leaf_w, self.ccap, self.qrank,
                    self.waitcnt, self.FT, self.FI, self.PG, self.PI, self.STL, self.FNL, self.TRW, self.TRT,
                    self.TRC, self.NTW, self.NTT, self.ST, self.SU, self.SQ, self.SP, self.SPN, self.SJ, self.newl)
            status = loop_for(args)(*args)
            self.now = float(self.FS[K.NOW])
            self.events_processed = int(self.IS[K.EVENTS])
            if progress is not None:
                progress(self.now, self.events_processed)
            self._drop()
            if status == K.DONE:
                break
            if status == K.BAD_INPUT:
                self._refuse(self.bad)
        self._materialise()
        return self.rec

    def _pure(self, feed: Iterable[Workload]) -> Any:
        return self.pure(self.state, self.model, self.options).run(feed)

    def _drop(self) -> None:
        """Let go of the ``Workload`` of every workload finished so far: its row is read from the
        arrays (``_View``); only unfinished ones keep theirs (their pending reasons read it)."""
        n = int(self.IS[K.NFINISHED])
        if n == self._dropped or self._columnar:  # columns: no ``Workload`` was ever made
            return
        wls, ids = self.state.workloads, self.ids
        for w in self.FNL[self._dropped:n].tolist():
            del wls[ids[w]]
        self._dropped = n

    def _restart(self, feed: Iterable[Workload]) -> Any:
        """Start again on the pure-Python core with every workload read so far, then the rest."""
        view = _View(self, self.state.workloads)
        seen = [view[i] for i in self.ids]
        self.state.workloads.clear()
        rest = [self._peek] if self._peek is not None else []
        self._peek = None
        return self._pure(itertools.chain(seen, self._unpacked, rest, feed))

    def _refuse(self, wl: Workload) -> None:
        from makeway.sim.engine import SimulationError

        if wl.submit >= self._last_fed and wl.queue in self.qix and wl.id not in self.idx:
            raise SimulationError(f"workload {wl.id!r} has no task")
        self.pure._refuse(self, wl, self._last_fed)  # type: ignore[arg-type]

    # -- results ---------------------------------------------------------------------------------

    def _materialise(self) -> None:
        rec, state, IS, FS = self.rec, self.state, self.IS, self.FS
        ids, wls = self.ids, _View(self, state.workloads)
        nsub = int(IS[K.NSUB])
        WF, WI = self.WF, self.WI
        rec.submit_t = _Column(self, np.arange(nsub), K.SUB)  # type: ignore[assignment]
        rec.first_start = _Column(self, self.STL[: IS[K.NSTARTED]].astype(np.int64), K.FIRST)  # type: ignore[assignment]
        finished = self.FNL[: IS[K.NFINISHED]].astype(np.int64)
        rec.finish_t = _Column(self, finished, K.FIN)  # type: ignore[assignment]
        killc = WI[:, K.KILLC]
        rec.killed = {ids[w]: int(killc[w]) for w in finished[killc[finished] != 0].tolist()}
        res = state.resources
        rused = self.rused.tolist()
        rec.used = {k: v for k, v in zip(res, rused) if v}
        rec.used_integral = {k: v for k, v in zip(res, self.integral.tolist()) if v}
        names = self.q_names
        rec.pending_tasks = dict(zip(names, self.ptasks.tolist()))
        pres, pn, qusage = self.pres.tolist(), self.pn.tolist(), self.qusage.tolist()
        for q in rec.tracked_queues:
            i = self.qix[q]
            rec.pending_res[q] = {k: v for k, v in zip(res, pres[i]) if v}
            rec.pending_n[q] = pn[i]
        for i, q in enumerate(names):
            state.queue_usage[q] = {k: v for k, v in zip(res, qusage[i]) if v}
        if IS[K.HAS_FIRST]:
            rec.first_t = float(FS[K.FIRST_T])
        rec.last_t = float(FS[K.LAST_T])
        rec.end_t = float(FS[K.END_T])
        if IS[K.STOPPED]:
            rec.stopped_reason = "horizon"
        self._samples()
        nowhere = [s for s, (_, nw) in enumerate(self.shape_info) if nw]
        if nowhere:
            flag = np.zeros(len(self.shape_info), bool)
            flag[nowhere] = True
            for w in np.nonzero(flag[WI[:nsub, K.S]])[0].tolist():
                too_big = rec.beyond_every_node(wls[ids[w]])
                if too_big is not None:
                    rec.unplaceable += 1
                    if rec.first_unplaceable is None:
                        rec.first_unplaceable = (ids[w], *too_big)
        for w, t in zip(self.NTW[: IS[K.NOTES_N]].tolist(), self.NTT[: IS[K.NOTES_N]].tolist()):
            wl = wls[ids[w]]
            rec.note(Note("unschedulable", wl.id, "does not fit the cluster even when it is empty",
                          {"need": wl.total()}), t)
        for w in np.nonzero(WI[:nsub, K.STATE] == 1)[0].tolist():
            wl = wls[ids[w]]
            state.pending[wl.id] = dict.fromkeys(wl.task_ids())
            state.pending_res[wl.id] = wl.total()
        rec.reasons = _Reasons(self)  # type: ignore[assignment]
        rec.sim = self
        state.workloads = wls  # type: ignore[assignment]

    def _samples(self) -> None:
        rec, res = self.rec, self.state.resources
        n = int(self.IS[K.NSAMP])
        rec.sample_interval = float(self.FS[K.SINTERVAL])
        rec.series_t = self.ST[:n].tolist()
        for r, k in enumerate(res):
            cap = rec.capacity.get(k, 0)
            rec.series_used[k] = [u / cap if cap else 0.0 for u in self.SU[:n, r].tolist()]
        for t, q in enumerate(rec.tracked_queues):
            for r, k in enumerate(res):
                rec.series_queues[q][k] = self.SQ[:n, t, r].tolist()
                rec.series_pending[q][k] = self.SP[:n, t, r].tolist()
            rec.series_pending_n[q] = self.SPN[:n, t].tolist()
        rec.series_jain = self.SJ[:n].tolist()
        rec._quotas_read = True


def warm() -> float:
    """Load the compiled loop now (``fast.aot``: the built module, built first if need be) with a run of
    two workloads, so a measurement that follows does not pay it; the CPU seconds it took (0 without it)."""
    if not enabled():
        return 0.0
    import time

    from makeway.core.objects import Node, Queue, TaskGroup
    from makeway.core.state import ClusterState
    from makeway.policies.first_fit.model import PriorityFirstFit
    from makeway.sim.engine import SimOptions
    from makeway.sim.fast.core import FastSimulation

    t0 = time.process_time()
    state = ClusterState(["cpu"], [Queue("root"), Queue("a", "root")], [Node("n0", {"cpu": 2})])
    model = PriorityFirstFit()
    model.bind(state)
    sim = CompiledSimulation(state, model, SimOptions(), FastSimulation)
    sim.MIN_JOBS = 0
    sim.run([Workload(f"w{i}", "a", float(i), 1.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(2)])
    return time.process_time() - t0
