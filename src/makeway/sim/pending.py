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

A per-model reason (Kueue's inadmissible message, YuniKorn's headroom...) is a later refinement.
"""

from __future__ import annotations

from makeway.core.model import Workload
from makeway.core.resources import Res
from makeway.core.state import ClusterState

UNPLACEABLE = "unplaceable"
QUEUE_MAX = "queue-max"
HORIZON = "horizon"
NO_PROGRESS = "no-progress"
WAITING = "waiting"
CODES = (UNPLACEABLE, QUEUE_MAX, HORIZON, NO_PROGRESS, WAITING)

_EPS = 1e-9


def fits_some_node(state: ClusterState, request: Res) -> bool:
    """True when one node's whole capacity holds ``request`` (whether it is schedulable or not)."""
    for node in state.nodes.values():
        cap = node.capacity
        if all(v <= 0 or v <= cap.get(k, 0) + _EPS for k, v in request.items()):
            return True
    return False


def blocking_max(state: ClusterState, queue: str, demand: Res) -> str | None:
    """The first queue on the path to the root whose ``max`` ``demand`` alone exceeds, or None."""
    for q in state.path_to_root(queue):
        limit = state.queues[q].max
        if not limit:
            continue
        for k, v in demand.items():
            if v > 0 and k in limit and limit[k] is not None and v > limit[k] + _EPS:
                return q
    return None


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
