"""The interface every preemption model implements (the registry that finds them by name is
``makeway.registry``).

A model is a deterministic object: given the same state, ``now`` and call sequence it returns the
same decisions in the same order. It may keep its own bookkeeping between calls (starvation clocks,
quota timers, admitted sets), but never reads a clock, a file or the network.

The executor calls, in this order for each instant:
  * ``on_config_change`` for each queue change at that time,
  * ``schedule(state, now)`` once after the events of the instant were applied,
  * ``heartbeat(state, node, now)`` for node heartbeats, when ``heartbeat_period`` is set,
and asks ``next_wakeup(state, now)`` when the model wants a call at a later time (a timer).
A model that says it is ``quiet`` lets the simulator skip its ticks and heartbeats up to the next
other event; ``skip_periodic`` then tells it which calls it did not get.
"""

from __future__ import annotations

from typing import Any, Mapping

from makeway.core.decisions import Decision
from makeway.core.objects import Queue
from makeway.core.state import ClusterState


class PreemptionModel:
    """Base class: places nothing, preempts nothing. Subclasses override what they need."""

    name = "none"
    heartbeat_period: float | None = None
    heartbeat_splay: float = 0.0
    tick_period: float | None = None
    # whether a workload's pending tasks start together or not at all (the ``gang`` pending reason)
    all_or_nothing = False
    # why a workload's priority cannot change once submitted under this model (None: it can)
    fixed_priority: str | None = None

    def __init__(self, settings: Mapping[str, Any] | None = None):
        self.settings: dict[str, Any] = dict(settings or {})
        # False: the reference path, nothing reused between calls; the cache-equivalence tests
        # compare a model against its own ``caches: false`` twin
        self.caches = bool(self.settings.get("caches", True))

    def options(self) -> dict[str, Any]:
        """How this run computed its decisions (recorded in the results): options that must not
        change a decision, so two runs differing only here are expected to agree."""
        return {"caches": self.caches}

    def bind(self, state: ClusterState) -> None:
        """Called once with the initial state, before any event."""

    def schedule(self, state: ClusterState, now: float) -> list[Decision]:
        return []

    def heartbeat(self, state: ClusterState, node: str, now: float) -> list[Decision]:
        return []

    def on_config_change(self, state: ClusterState, queue: str, old: Queue, now: float) -> list[Decision]:
        return []

    def on_priority_change(self, state: ClusterState, wl_id: str, old: int, now: float) -> None:
        """Called after ``state.set_priority`` gave waiting workload ``wl_id`` a new priority (``old``
        was its priority), so a model drops what it cached from the old one. Only called when
        ``fixed_priority`` is None."""

    def next_wakeup(self, state: ClusterState, now: float) -> float | None:
        return None

    def quiet(self, state: ClusterState, now: float) -> Any:
        """True when, until the next event that is not a tick or heartbeat, every periodic call
        (``schedule`` at their instants, ``heartbeat``) would return no decisions and change only
        what ``skip_periodic`` catches up on, so the simulator may skip them (idle stretches of
        long traces). A time instead of True: the same, but only for periodic calls before that
        time (a clock of the model's own would move then). A ``core.periodic.QuietExcept``: the
        same but for the heartbeats of some nodes, so only calls before the first of those may be
        skipped. Default False: a model opts in, and a test compares its skipped and unskipped
        runs. Reads only."""
        return False

    def skip_periodic(self, state: ClusterState, skipped: Any) -> None:
        """The periodic calls skipped after ``quiet`` said yes: ``skipped`` is a
        ``makeway.core.periodic.Skipped``, each tick and heartbeat row with its first skipped time,
        period and count, and exact look-ups of its times (the same floats the unskipped run would
        have used), so a model catches up without the times being listed."""

    def skip_wakes(self, state: ClusterState, wakes: list[float],
                   limit: float) -> tuple[int, float, float, list[float]] | None:
        """Run here, without the engine, instants before ``limit`` at which nothing but this
        model's own wake-ups happen (the engine has no event and no reason round before
        ``limit``): ``wakes`` are those asked for already, sorted; later ones are asked for by
        the model's own calls, as ``next_wakeup`` after each. Only instants at which each call
        would make no decision, in the engine's order; the stretch may end at any instant, which
        the engine then runs as usual. Returns the number of instants run, the last one's time,
        the end of the stretch (the wake-ups asked for before it were run) and the wake-ups asked
        for during it at or after its end; or None, changing nothing. Default None: a model opts
        in, and a test compares its runs with and without (``SimOptions.skip_idle``)."""
        return None

    def queue_order(self, state: ClusterState, queue: str, now: float) -> list[str]:
        """Pending workloads of leaf ``queue`` in the order this model serves them, for the
        position a user is shown (as Kueue's visibility API does). Default: priority, then
        submit time, then id. Reads only."""
        from makeway.core.pending import default_queue_order
        return default_queue_order(state, queue)

    def pending_reason(self, state: ClusterState, wl_id: str, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """(code, message, values) when the model knows better than the generic rules of
        ``makeway.core.pending`` why ``wl_id`` is pending (``values["blocking"]``: the queue that
        holds it, if any); None to use them. Called between scheduling calls; reads only."""
        return None

    def queue_shares(self, state: ClusterState, now: float) -> dict[str, dict[str, Any]]:
        """Per queue, the share the model schedules by, for operators (``makeway queues``): e.g.
        ``{"fair_share": 0.5, "usage_share": 0.7}`` (YTsaurus) or ``{"drs": 1200}`` (Kueue fair
        sharing). Read-only; a model without a share says nothing."""
        return {}

    def grace_period(self, state: ClusterState, allocation: str) -> float:
        """Seconds a victim keeps its resources after notice; the workload's own grace by default."""
        alloc = state.allocations[allocation]
        return state.workloads[alloc.workload].grace
