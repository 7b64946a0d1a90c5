"""YuniKorn's inter-queue preemption decided by the compiled loop, its results recorded from the log.

``makeway.policies.yunikorn.fast`` decides a whole run of its class (``pack.unsupported``: leaves
under the root, guarantees, whole numbers, one task group per workload, each task an ask of its
own...), every ``schedule`` call at every instant the engine would call it, wake-ups included.
``yunikorn_record.LogRun`` then records the general engine's results document from the log, task
by task. Where the engine would read more
than the log says (``yunikorn_record.why_not``: ``check_invariants``, a run the no-progress watch
stopped), and outside the class, the general engine runs the model itself: a YuniKorn log has
no replay, since a run outside ``LogRun``'s reach is rare and the model decides it anyway.
"""

from __future__ import annotations

from typing import Any, Iterable

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.fast import pack
from makeway.sim.engine import SimOptions
from makeway.sim.fast import logged
from makeway.sim.fast.kueue import ReplayError
from makeway.sim.metrics import Recorder

__all__ = ["CompiledYuniKorn", "ReplayError", "why_not"]


def why_not(state: ClusterState, model: Any, options: SimOptions, has_changes: bool) -> str | None:
    """None when a run of this model may be decided by the compiled loop (the workloads are
    checked when they are read, ``pack.unsupported``); else the first reason it may not."""
    from makeway.policies.yunikorn.model import YuniKornModel

    return logged.why_not(model, YuniKornModel, options, has_changes)


class CompiledYuniKorn(logged.LoggedRun):
    """A YuniKorn run fed like the fast cores (``run(workloads)``, sorted by submit time)."""

    def run(self, workloads: Iterable[Workload]) -> Recorder:
        wls, late, ordered = self.read(workloads)
        model = self.model
        self.not_recorded = ("the trace is not sorted" if not ordered else
                             "check_invariants" if self.options.check_invariants else
                             pack.unsupported(self.state, model, wls, gangs=True))
        if self.not_recorded is None:
            packed = pack.run(self.state, model, wls, self.horizon(), self.sim._window(), checked=True, gangs=True)
            from makeway.sim.fast import yunikorn_record

            self.not_recorded = yunikorn_record.why_not(self.state, self.options, wls, packed)
            if self.not_recorded is None:
                run = yunikorn_record.LogRun
                if self.options.progress is None:  # the compiled walk reports no instants as it goes
                    from makeway.sim.fast.yunikorn_tape_record import TapeRun as run  # type: ignore[assignment]
                self.sim = self.log_run = run(packed, self.state, model, self.options, wls, late)
                return self.log_run.run()
        self.sim.add_workloads(wls + late)
        return self.sim.run()


def warm() -> float:
    """Load the compiled YuniKorn loop now (numba's cache; compiled first if need be) with a run of
    three workloads, one preempting, so a measurement that follows does not pay it; the CPU seconds it
    took (0 without numba)."""
    from makeway.sim.fast.compiled import enabled

    if not enabled():
        return 0.0
    import time

    from makeway.core.objects import Node, Queue, TaskGroup
    from makeway.policies.yunikorn.model import YuniKornModel

    t0 = time.process_time()
    queues = [Queue("root", settings={"properties": {"preemption.delay": "1s"}}),
              Queue("a", "root", guaranteed={"cpu": 1}), Queue("b", "root", guaranteed={"cpu": 1})]
    state = ClusterState(["cpu"], queues, [Node("n0", {"cpu": 2})])
    CompiledYuniKorn(state, YuniKornModel({}), SimOptions()).run(
        [Workload(f"w{i}", "a", 0.0, 100.0, (TaskGroup(1, {"cpu": 1}),)) for i in range(2)]
        + [Workload("w2", "b", 1.0, 10.0, (TaskGroup(1, {"cpu": 1}),))])
    return time.process_time() - t0
