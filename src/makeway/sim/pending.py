"""Why a workload was still unfinished when a run ended: one code per workload, the same for every model.

A results file that lists a workload as never finished should say whether waiting longer would
have helped. The codes are generic, read from the final state alone, and checked in this order
(the first that applies wins):

* ``unplaceable``: a task asks for more than any single node has, so it can never start;
* ``queue-max``: what the workload still has to start exceeds, on its own, the ``max`` of its queue
  or of an ancestor (limits as they were at the end of the run), so it waits for a config change;
* ``horizon`` / ``no-progress``: the run stopped early, cut by ``--horizon`` or by the engine when the
  model could make no progress (``Recorder.stopped_reason``);
* ``waiting``: otherwise; resources or quota were held by others.

These codes are part of the results schema and stay as they are; the live service's finer,
per-model reasons and queue positions are ``makeway.core.pending`` (whose helpers these share).
"""

from __future__ import annotations

from makeway.core.objects import Workload
from makeway.core.pending import blocking_max, fits_some_node
from makeway.core.state import ClusterState

UNPLACEABLE = "unplaceable"
QUEUE_MAX = "queue-max"
HORIZON = "horizon"
NO_PROGRESS = "no-progress"
WAITING = "waiting"
CODES = (UNPLACEABLE, QUEUE_MAX, HORIZON, NO_PROGRESS, WAITING)


def pending_reason(state: ClusterState, wl: Workload, stopped: str | None) -> str:
    """The code for one unfinished workload (see the module docstring)."""
    if any(g.count > 0 and not fits_some_node(state, g.resources) for g in wl.groups):
        return UNPLACEABLE
    demand = state.pending_demand(wl.id)
    if demand and blocking_max(state, wl.queue, demand) is not None:
        return QUEUE_MAX
    code = stopped.split(":", 1)[0] if stopped else None  # "no-progress: <what the engine saw>"
    if code in (HORIZON, NO_PROGRESS):
        return code
    return WAITING


def pending_reasons(state: ClusterState, unfinished: list[str], stopped: str | None) -> dict[str, str]:
    """Codes for the given unfinished workloads, by id."""
    wls = state.workloads
    return {w: pending_reason(state, wls[w], stopped) for w in unfinished}


__all__ = ["CODES", "HORIZON", "NO_PROGRESS", "QUEUE_MAX", "UNPLACEABLE", "WAITING", "blocking_max",
           "fits_some_node", "pending_reason", "pending_reasons"]
