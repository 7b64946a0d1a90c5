"""Kueue's classic admission decided by the compiled loop, its results recorded from the log.

``makeway.policies.kueue.fast`` decides a whole run (every ``KueueModel.schedule`` call, at every
instant the engine calls it) in a small fraction of the model's time. Its log is then recorded
into the general engine's results document, in one of two ways:

* ``kueue_record.LogRun`` walks the engine's instants itself and feeds a recorder on index lists,
  at a few µs per start, eviction or finish (the usual way);
* where the engine would read more than the log says (``kueue_record.why_not``: a queue ``max``,
  ``check_invariants``, a run the no-progress watch stopped...), the general engine runs again
  with ``schedule`` answered from the log, call by call (``_Replay``); the queue order and
  pending reason its reason rounds read are answered by the replay too, the rest by the model.

Either way the document is the general engine's: events, reasons, samples, counters and pending
trails. The log and the walk must agree on every call: a call at another instant than the log's, a
decision the state cannot take, or a run that ends with calls left over or missing is a defect
of the compiled loop, and stops the run with ``ReplayError`` instead of giving other results.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import Any, Iterable

import numpy as np

from makeway.core.decisions import Decision, Preempt, Start
from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.policies.kueue.fast import layout as L
from makeway.policies.kueue.fast import pack
from makeway.policies.kueue.heads import preemption_note, preemption_reason
from makeway.policies.kueue.quota import units
from makeway.sim.engine import SimOptions
from makeway.sim.fast import logged
from makeway.sim.metrics import Recorder


class ReplayError(RuntimeError):
    """The engine and the compiled loop's log disagree about a call: a defect, never an input error."""


def why_not(state: ClusterState, model: Any, options: SimOptions, has_changes: bool) -> str | None:
    """None when a run of this model may be decided by the compiled loop (the workloads are
    checked when they are read, ``pack.unsupported``); else the first reason it may not."""
    from makeway.policies.kueue.model import KueueModel

    return logged.why_not(model, KueueModel, options, has_changes)


class CompiledKueue(logged.LoggedRun):
    """A Kueue run fed like the fast cores (``run(workloads)``, sorted by submit time)."""

    def __init__(self, state: ClusterState, model: Any, options: SimOptions):
        super().__init__(state, model, options)
        self.replay: _Replay | None = None

    def run(self, workloads: Iterable[Workload]) -> Recorder:
        wls, late, ordered = self.read(workloads)
        sim, model = self.sim, self.model
        if not ordered or pack.unsupported(self.state, model, wls) is not None:
            sim.add_workloads(wls + late)
            return sim.run()
        packed = pack.run(self.state, model, wls, self.horizon(), sim._window(), checked=True)
        from makeway.sim.fast import kueue_record

        self.not_recorded = kueue_record.why_not(self.state, self.options, wls, packed)
        if self.not_recorded is None:
            run = kueue_record.LogRun
            if self.options.progress is None:  # the compiled walk reports no instants as it goes
                from makeway.sim.fast.kueue_tape_record import TapeRun as run  # type: ignore[assignment]
            self.sim = self.log_run = run(packed, self.state, model, self.options, wls, late)
            return self.log_run.run()
        self.replay = replay = _Replay(packed, model)
        model.schedule = replay.schedule
        model.pending_reason = replay.pending_reason
        model.queue_order = replay.queue_order
        try:
            sim.add_workloads(wls + late)
            rec = sim.run()
        finally:
            del model.schedule, model.pending_reason, model.queue_order
        replay.finish()
        return rec


class _Replay:
    """``schedule`` answered from the compiled loop's log, with the model's ``_waiting`` (the
    preemptors waiting for their victims, since when) kept as the model keeps it: the queue order
    and the pending reasons read it.

    The recorder's reason rounds read ``queue_order`` and ``pending_reason``. The model answers
    them from a snapshot it keeps current in its own calls, which are not made here; rebuilt at
    every read, they were most of a replay. So the replay answers them too, from what it keeps:
    each queue's pending workloads in the model's order (its ``_order_key``), brought up to date
    from the state's journals, and the flavor assignment (``kernel.assign``) on the admitted
    usage (the state's per-queue usage, in Kueue's units).
    """

    def __init__(self, packed: Any, model: Any):
        from makeway.policies.kueue.fast.layout import I_CALLS, I_NLOG

        n = int(packed.IS[I_NLOG])
        self.model = model
        self.total_calls = int(packed.IS[I_CALLS])
        self.kind, self.w, self.a, self.b, self.c, self.d, self.call = packed.LOG[:n].T.tolist()
        self.t = packed.LT[:n].tolist()
        self.nodes = packed.LN.tolist()
        self.node_names = packed.node_names
        self.ids = [wl.id for wl in packed.wls]
        self.tnodes = packed.tnodes
        self.prio = packed.WI[:, L.W_PRIO].tolist()
        self.n, self.pos, self.calls = n, 0, 0
        # the pending reasons: per workload its ClusterQueue and request (Kueue units)
        self.index = {wl_id: i for i, wl_id in enumerate(self.ids)}
        self.w_cq = packed.WI[:, L.W_CQ].tolist()
        self.w_qv = packed.WI[:, L.W_QV].tolist()
        self.cq_names = [packed.tnodes[c].name for c in packed.CQO.tolist()]
        self.resource = packed.resource
        self.modes = QuotaModes(packed)
        self.state: ClusterState | None = None  # the state a reason round reads, for ``_usage``
        # the queue order: sorted keys per queue, each pending workload's key, the journals read
        self.keys: dict[str, list[tuple]] = {}
        self.key_of: dict[str, tuple] = {}
        self.read_to: tuple[int, int] | None = None
        self.rekey: set[str] = set()  # waiting marks changed since the last read

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        self.calls += 1
        out: list[Decision] = []
        k, n, call = self.pos, self.n, self.call
        waiting = self.model._waiting
        while k < n and call[k] == self.calls:
            if self.t[k] != now:
                raise ReplayError(f"call {self.calls} at t={now}: the compiled log has it at t={self.t[k]}")
            kind, w = self.kind[k], self.w[k]
            wl = self.ids[w]
            if kind == L.L_START:
                tasks = list(state.pending.get(wl, ()))
                if len(tasks) != self.b[k]:
                    raise ReplayError(f"call {self.calls}: {wl} has {len(tasks)} pods pending, the log starts "
                                      f"{self.b[k]}")
                at = self.a[k]
                out.extend(Start(t, self.node_names[self.nodes[at + i]]) for i, t in enumerate(tasks))
                if waiting.pop(wl, None) is not None:
                    self.rekey.add(wl)
                k += 1
            elif kind == L.L_UNWAIT:
                waiting.pop(wl, None)
                self.rekey.add(wl)
                k += 1
            else:
                k = self._preemption(state, k, out, now)
        self.pos = k
        return out

    def _preemption(self, state: ClusterState, k: int, out: list[Decision], now: float) -> int:
        """One preemptor's victims (consecutive in the log, in name order) and its note, as
        ``HeadAdmission._preempt`` writes them; the index after them."""
        by, call = self.a[k], self.call[k]
        p, p_cq = self.ids[by], self.tnodes[self.w_cq[by]]
        victims = []
        while k < self.n and self.kind[k] == L.L_PREEMPT and self.a[k] == by and self.call[k] == call:
            v, var = self.w[k], self.b[k]
            values = {"variant": var, "allowBorrowing": bool(self.c[k]),
                      "lca": None if self.d[k] < 0 else self.tnodes[self.d[k]].name}
            reason = preemption_reason(p, self.prio[by], p_cq, self.prio[v], self.tnodes[self.w_cq[v]],
                                       pack.VARIANT_REASON[var], values)
            allocs = state.allocations
            tids = [tid for tid in sorted(state.running.get(self.ids[v], ())) if not allocs[tid].preempting]
            if not tids:
                raise ReplayError(f"call {self.calls}: victim {self.ids[v]} of {p} is not running")
            out.extend(Preempt(tid, reason) for tid in tids)
            victims.append(self.ids[v])
            k += 1
        self.model._waiting[p] = now
        self.rekey.add(p)
        out.append(preemption_note(p, p_cq.name, victims))
        return k

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """``Explain.pending_reason`` as the reason rounds read it (the code and the blocking
        queue): quota, blocked by the workload's ClusterQueue, unless its flavor assignment on
        the admitted usage fits (then the generic rules say). The model's ``preempting`` answer
        needs victims in their grace period, which this class has none of."""
        self.state = state
        w = self.index[wl_id]
        if self.modes.mode((state.alloc_epoch, state.config_epoch), self._usage, self.w_cq[w], self.w_qv[w]) == L.FIT:
            return None
        cq = self.tnodes[self.w_cq[w]].name
        return ("quota", f"ClusterQueue {cq} has no quota for it now", {"clusterQueue": cq, "blocking": cq})

    def _usage(self) -> list:
        used, res = self.state.queue_usage, self.resource  # type: ignore[union-attr]
        return [used[q].get(res, 0) for q in self.cq_names]

    def queue_order(self, state: ClusterState, queue: str, now: float) -> Sequence[str]:
        """``Explain.queue_order``: the queue's pending workloads by the model's key."""
        self._sync(state)
        return _Ids(self.keys.get(queue, []))

    def _sync(self, state: ClusterState) -> None:
        fresh = ran = None
        if self.read_to is not None:
            fresh = state.pending_log.since(self.read_to[0])
            ran = state.run_log.since(self.read_to[1]) if fresh is not None else None
        if ran is None:
            self.keys, self.key_of = {}, {}
            touched: Iterable[str] = state.pending
        else:
            touched = {*fresh, *ran, *self.rekey}
        self.rekey = set()
        self.read_to = (state.pending_log.position, state.run_log.position)
        wls, pending, model = state.workloads, state.pending, self.model
        for w in touched:
            old = self.key_of.pop(w, None)
            lst = self.keys.setdefault(wls[w].queue, [])
            if old is not None:
                del lst[bisect_left(lst, old)]
            if w in pending:
                key = self.key_of[w] = model._order_key(wls[w])
                insort(lst, key)

    def finish(self) -> None:
        """After the engine's run: every logged call made, and every decision of the log taken."""
        if self.pos != self.n or self.calls != self.total_calls:
            raise ReplayError(f"the engine made {self.calls} calls and took {self.pos} log entries; the compiled "
                              f"loop made {self.total_calls} calls and logged {self.n}")


class QuotaModes:
    """Kueue's flavor-assignment mode (``kernel.mode_of``) per (ClusterQueue, request) on the
    admitted usage, as the pending reasons read it: the usage is read at most once per epoch
    (``usage``: each ClusterQueue's, in makeway's units, in ``packed.CQO`` order), and the modes
    are kept till the epoch moves."""

    def __init__(self, packed: Any):
        from makeway.policies.kueue.fast import kernel  # numba: imported only once a run is compiled

        self.kernel, self.TI, self.cqo, self.resource = kernel, packed.TI, packed.CQO, packed.resource
        self.path = np.empty(packed.TI.shape[0] + 1, np.int64)
        self.u = np.zeros(packed.TI.shape[0], np.int64)
        self.epoch: Any = None
        self.modes: dict[tuple[int, int], int] = {}

    def mode(self, epoch: Any, usage: Any, cq: int, qv: int) -> int:
        if epoch != self.epoch:
            res = self.resource
            amounts = np.array([units(res, v) for v in usage()], np.int64)
            self.u = self.kernel.usage_of(self.TI, self.cqo, amounts)
            self.epoch, self.modes = epoch, {}
        key = (cq, qv)
        found = self.modes.get(key)
        if found is None:
            found = self.modes[key] = self.kernel.mode_of(self.TI, self.u, cq, qv, self.path)
        return found


class _Ids(Sequence):
    """The workload ids of a sorted key list (the id last in each key), read as they are asked
    for: a reason round reads a queue's first few, not its whole backlog."""

    def __init__(self, keys: list[tuple]):
        self._keys = keys

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [k[-1] for k in self._keys[i]]
        return self._keys[i][-1]


def warm() -> float:
    """Load the compiled Kueue loop now (numba's cache; compiled first if need be) with a run of two
    workloads, so a measurement that follows does not pay it; the CPU seconds it took (0 without
    numba)."""
    from makeway.sim.fast.compiled import enabled

    if not enabled():
        return 0.0
    import time

    from makeway.core.objects import Node, Queue, TaskGroup
    from makeway.policies.kueue.model import KueueModel

    t0 = time.process_time()
    quota = {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
    state = ClusterState(["cpu"], [Queue("cq", settings={"kind": "ClusterQueue", "resourceGroups": [quota]})],
                         [Node("n0", {"cpu": 1}, {"flavor": "f"})])
    CompiledKueue(state, KueueModel({}), SimOptions()).run(
        [Workload(f"w{i}", "cq", float(i), 2.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(2)])
    return time.process_time() - t0
