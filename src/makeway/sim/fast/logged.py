"""What the compiled models' runs (``kueue.CompiledKueue``, ``yunikorn.CompiledYuniKorn``,
``ytsaurus.CompiledYTsaurus``) share: when a model's run may be decided by its compiled loop at
all, and how such a run reads its trace and stands in for the general engine until its results
are recorded."""

from __future__ import annotations

from typing import Any, Iterable

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, Simulation
from makeway.sim.metrics import Recorder


def why_not(model: Any, model_class: type, options: SimOptions, has_changes: bool,
            periodic: bool = False) -> str | None:
    """None when ``model`` (exactly a ``model_class``) may be decided by its compiled loop (the
    workloads are checked when they are read); else the first reason it may not. ``periodic``:
    the loop follows the model's own heartbeats and ticks (YTsaurus's), so only the engine's
    override of the heartbeat period (``SimOptions.heartbeat_period``) is refused."""
    if type(model) is not model_class:
        return f"not the {model_class.name} model itself (a subclass may decide otherwise)"
    if options.engine == "general":
        return "the general engine was asked for"
    from makeway.sim.fast.compiled import enabled

    if not enabled():
        return "numba is not there or MAKEWAY_JIT=0"
    if has_changes:
        return "config events"
    if periodic:
        if options.heartbeat_period:
            return "SimOptions.heartbeat_period (the engine's override of the model's)"
    elif options.heartbeat_period or model.heartbeat_period or model.tick_period:
        return "heartbeats or ticks"
    if options.kill_at_requested_time:
        return "kill_at_requested_time"
    return None


class LoggedRun:
    """A run fed like the fast cores (``run(workloads)``, sorted by submit time), which reads as the
    general engine it holds in ``sim`` until the results recorded from the log replace it."""

    def __init__(self, state: ClusterState, model: Any, options: SimOptions):
        self.state, self.model, self.options = state, model, options
        self.sim: Any = Simulation(state, model, options)
        self.log_run: Any = None  # the results recorded from the log
        self.not_recorded: str | None = None  # why they were not

    @property
    def recorder(self) -> Recorder:
        return self.sim.recorder

    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def events_processed(self) -> int:
        return self.sim.events_processed

    def read(self, workloads: Iterable[Workload]) -> tuple[list[Workload], list[Workload], bool]:
        """The trace up to the horizon, and the first workload past it, which the engine is given
        too (it is what tells it the run was cut there): no further than the engine would read;
        and whether it is sorted by submit time."""
        horizon = self.options.horizon
        wls, late = [], []
        for wl in workloads:
            if horizon is not None and wl.submit > horizon:
                late.append(wl)
                break
            wls.append(wl)
        return wls, late, all(wls[i].submit <= wls[i + 1].submit for i in range(len(wls) - 1))

    def horizon(self) -> float:
        return float("inf") if self.options.horizon is None else float(self.options.horizon)
