"""YTsaurus's fair share preemption decided by the compiled loop, its results recorded from the log.

``makeway.policies.ytsaurus.fast`` decides a whole run of its class (``pack.unsupported``: one
resource, fair share pools without limits, one task group per operation...), every refresh and
heartbeat at every instant the engine would have them. ``ytsaurus_record.LogRun`` then records
the general engine's results document from the log. Outside the class, where the loop stops
where the engine's no-progress watch might (``layout.STOP_WATCH``), with ``check_invariants``,
or where the log cannot say what the engine would record, the general engine runs the model
itself: like YuniKorn's, a YTsaurus log has no replay, since those runs are rare and the model
decides them anyway.

The workload first past a horizon is given to the loop too (it is never submitted there): the
engine is given it, and while it waits the engine's idle rule cannot end the run before the
horizon, so the loop must not either.
"""

from __future__ import annotations

from typing import Any, Iterable

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions
from makeway.sim.fast import logged
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.metrics import Recorder

__all__ = ["CompiledYTsaurus", "ReplayError", "why_not", "warm"]


def why_not(state: ClusterState, model: Any, options: SimOptions, has_changes: bool) -> str | None:
    """None when a run of this model may be decided by the compiled loop (the workloads are
    checked when they are read, ``pack.unsupported``); else the first reason it may not. The
    model's own heartbeats and ticks are the loop's; the engine's override of the heartbeat
    period is not, and ``skip_idle`` false exists to check the engine's skipping, so it runs the
    engine."""
    from makeway.policies.ytsaurus.model import YTsaurusModel

    why = logged.why_not(model, YTsaurusModel, options, has_changes, periodic=True)
    if why is not None:
        return why
    if not options.skip_idle:
        return "skip_idle false (a check of the engine's own skipping)"
    if not (model.update_period > 0 and (model.heartbeat_period or 0) > 0):
        return "a fair share update or heartbeat period that is not positive"
    return None


class CompiledYTsaurus(logged.LoggedRun):
    """A YTsaurus run fed like the fast cores (``run(workloads)``, sorted by submit time)."""

    def run(self, workloads: Iterable[Workload]) -> Recorder:
        wls, late, ordered = self.read(workloads)
        model, state = self.model, self.state
        if not ordered:
            self.not_recorded = "the trace is not sorted"
        elif self.options.check_invariants:
            self.not_recorded = "check_invariants"
        else:
            from makeway.policies.ytsaurus.fast import pack

            self.not_recorded = pack.unsupported(state, model, wls + late)
        if self.not_recorded is None:
            from makeway.policies.ytsaurus.fast import args
            from makeway.sim.fast import ytsaurus_record

            ran = args.run(state, model, wls + late, self.horizon(), window=self.sim._window(), checked=True)
            self.not_recorded = ytsaurus_record.why_not(ran)
            if self.not_recorded is None:
                self.sim = self.log_run = ytsaurus_record.LogRun(ran, state, model, self.options, wls, late)
                return self.log_run.run()
        self.sim.add_workloads(wls + late)
        return self.sim.run()


def warm() -> float:
    """Load the compiled YTsaurus loop now (numba's cache; compiled first if need be) with a run of
    three operations, one starving and preempting, so a measurement that follows does not pay it;
    the CPU seconds it took (0 without numba)."""
    from makeway.sim.fast.compiled import enabled

    if not enabled():
        return 0.0
    import time

    from makeway.core.objects import Node, Queue, TaskGroup
    from makeway.policies.ytsaurus.model import YTsaurusModel

    t0 = time.process_time()
    queues = [Queue("root", guaranteed={"gpu": 2}), Queue("a", "root", guaranteed={"gpu": 1}),
              Queue("b", "root", guaranteed={"gpu": 1})]
    state = ClusterState(["gpu"], queues, [Node("n0", {"gpu": 2})])
    settings = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "fair_share_starvation_timeout": 1.0,
                "preemptive_scheduling_backoff": 0.0}
    CompiledYTsaurus(state, YTsaurusModel(settings), SimOptions()).run(
        [Workload(f"w{i}", "a", 0.0, 100.0, (TaskGroup(1, {"gpu": 1}),)) for i in range(2)]
        + [Workload("w2", "b", 1.0, 10.0, (TaskGroup(1, {"gpu": 1}),))])
    return time.process_time() - t0
