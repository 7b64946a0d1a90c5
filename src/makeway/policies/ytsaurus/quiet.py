"""When the YTsaurus model's periodic calls would decide nothing (``YTsaurusModel.quiet``).

Between two events that are not ticks or heartbeats, a fair share update whose inputs did not move
only advances the starvation clocks, and a heartbeat only starts what fits and preempts for whom is
starving. So the calls are idle, and may be skipped, while
  * no pending task fits the free resources of any schedulable node (the regular stage starts
    nothing);
  * no pending task of an operation with a preemption priority fits a node's free resources plus
    what that priority's stage may preempt there (the preemptive stages choose nobody, so they preempt nothing;
    without overcommitted nodes and pools above their limits they have no other victims);
  * no graceful operation runs, no node is overcommitted, no pool is above its limits;
and only until the first starvation clock could move (``since + timeout``): a status change
changes who may preempt. Pool limits are not checked on fitting, so the verdict errs on "not quiet".
This holds in a contended cluster with a backlog as in an idle one: the backlog waits for the next
finish or submission without the model being called five times a second.

Where the first two fail only on some nodes (a finish left room on node A, and the task that fits
waits for A's next heartbeat), the others' heartbeats and the ticks still decide nothing until
then: nothing moves the state before a call decides, and each of those nodes' stages finds
nothing. The verdict then carries a test of those nodes (``QuietExcept``, ``_Decides``), and the
simulator skips up to the first heartbeat of one of them instead of calling every node on the way.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from makeway.core.periodic import QuietExcept
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import heartbeat, starvation
from makeway.policies.ytsaurus.classify import P

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import Snapshot, YTsaurusModel


def clock_bound(snap: Snapshot) -> float:
    """The earliest time a starvation clock could change status (an update past it may; ``step``
    compares strictly, so an update at it changes nothing)."""
    bound = math.inf
    params = snap.params
    for name, c in snap.view.clocks.items():
        if c.since is None:
            continue
        p = params.get(name)
        if p is None:
            return -math.inf  # not quiet at all
        if c.status == starvation.NON:
            bound = min(bound, c.since + p.timeout)
        if p.aggressive_enabled and c.status != starvation.AGGRESSIVE:
            bound = min(bound, c.since + p.aggressive_timeout)
    return bound


def _fits(shapes: set[tuple[float, ...]], room: list[float]) -> bool:
    fits = heartbeat.fits
    return any(fits(shape, room) for shape in shapes)  # type: ignore[arg-type]


def _below_most(shapes: set[tuple[float, ...]], rooms: list[list[float]]) -> set[tuple[float, ...]]:
    """``shapes`` but those above every room's most of some resource, which fit none of them."""
    if len(rooms) < 2 or not shapes:
        return shapes
    most = [max(col) for col in zip(*rooms)]
    return {s for s in shapes if heartbeat.fits(s, most)}  # type: ignore[arg-type]


class _Decides:
    """Whether a node's next heartbeat may decide, asked node by node in heartbeat order by the
    simulator (``QuietExcept.decides``) and kept: its regular stage may start a waiting task
    that fits its free resources (``shapes``), or a preemptive stage (``stages``: the needy
    requests and the stage) may find room for a starving one. The state and snapshot it reads
    stay as they are while the verdict is kept, so each node is read at most once; the first
    node that may decide ends the stretch, and the nodes after it are never read."""

    def __init__(self, model: YTsaurusModel, state: ClusterState, free: dict[str, list[float]],
                 shapes: set[tuple[float, ...]], stages: list[tuple[set[tuple[float, ...]], str]]) -> None:
        self.model, self.state, self.free, self.shapes, self.stages = model, state, free, shapes, stages
        self.known: dict[str, bool] = {}
        self.may: dict = {}  # ``_normal_room``'s classification, per operation
        self.cands: dict[str, list] = {}

    def __call__(self, node: str) -> bool:
        got = self.known.get(node)
        if got is None:
            got = self.known[node] = self._decides(node)
        return got

    def _decides(self, node: str) -> bool:
        room = self.free.get(node)
        if room is None:
            return False  # not schedulable: its heartbeat returns at once
        if _fits(self.shapes, room):
            return True
        model, state = self.model, self.state
        for needy, stage in self.stages:
            if stage == "preemptive_normal" and model.caches:
                # no pending task fits this node's free resources (above): only its P
                # allocations may give a needy task room
                got = _normal_room(model, state, node, room, self.may)
            else:
                got = _stage_room(model, state, node, room, stage, self.cands)
            if got is not None and _fits(needy, got):
                return True
        return False


def _node_free(model: YTsaurusModel, state: ClusterState, node: str) -> tuple[list[float], bool]:
    """The node's free vector and whether it is overcommitted, kept while its allocations stay:
    they are appended in start order, so (topology epoch, count, newest seq) changes whenever the
    node's usage or capacity may have (without caches: computed every time)."""
    if not model.caches:
        return _free_and_over(model, state, node)
    allocs = state.node_allocs[node]
    sig = (state.topology_epoch, len(allocs), state.allocations[next(reversed(allocs))].seq if allocs else 0)
    hit = model._node_free.get(node)
    if hit is not None and hit[0] == sig:
        return hit[1], hit[2]
    free, over = _free_and_over(model, state, node)
    model._node_free[node] = (sig, free, over)
    return free, over


def _free_and_over(model: YTsaurusModel, state: ClusterState, node: str) -> tuple[list[float], bool]:
    cap, used = state.nodes[node].capacity, state.node_used[node]
    free = [c - u for c, u in zip(model._vec(cap), model._vec(used))]
    return free, any(float(v) > float(cap.get(r, 0)) + EPS for r, v in used.items())


def _backlog(model: YTsaurusModel, state: ClusterState, snap: Snapshot, scope: str):
    """``Waiting.backlog`` walked afresh (the reference path)."""
    shapes: set[tuple[float, ...]] = set()
    needy: dict[str, set[tuple[float, ...]]] = {"aggressive": set(), "normal": set()}
    published, failed = snap.published, model.failed
    for w, tasks in state.pending.items():
        if not tasks or w in failed:
            continue
        if w not in published:
            return True, shapes, needy
        own = model._pending_shapes(state, w, tasks)
        shapes |= own
        priority = starvation.preemption_priority(snap.view, w, scope)
        if priority != "none":
            needy[priority] |= own
    return False, shapes, needy


def _graceful_ops(model: YTsaurusModel, snap: Snapshot) -> list[str]:
    """The snapshot tree's operations in graceful preemption mode: every operation element is made
    (or kept from an earlier update) by ``build_tree``, which records the graceful ones, so this
    costs the graceful operations, not the tree."""
    elements = snap.tree.elements
    return [w for w in model._graceful_ids if w in elements and elements[w].is_op]


def _normal_room(model: YTsaurusModel, state: ClusterState, node: str, free: list[float],
                 may: dict) -> list[float] | None:
    """``free`` plus what the normal preemptive stage may preempt on ``node`` (its ``P`` allocations,
    summed in the node's order as ``heartbeat.discount`` sums them), classifying only the
    operations that may have any (``YTsaurusModel.may_preempt``, kept in ``may`` for one check).
    None where it may preempt nothing there: the room is ``free``, which no pending task fits."""
    disc = None
    allocations = state.allocations
    for tid in state.node_allocs[node]:
        a = allocations[tid]
        if a.preempting:
            continue
        ok = may.get(a.workload)
        if ok is None:
            ok = may[a.workload] = model.may_preempt(state, a.workload, may)
        if ok and not model._graceful(state, a.workload) and model.allocation_status(state, tid) == P:
            if disc is None:
                disc = [0.0] * len(free)
            for k, v in enumerate(model._vec(a.resources)):
                disc[k] += v
    return None if disc is None else [f + d for f, d in zip(free, disc)]


def _stage_room(model: YTsaurusModel, state: ClusterState, node: str, free: list[float], stage: str,
                cands: dict[str, list]) -> list[float]:
    """``free`` plus what ``stage`` may preempt on ``node``, from the stage's own candidates, blocked
    ones included (more room: errs on "not quiet"); each node's candidates read once (``cands``)."""
    mine = cands.get(node)
    if mine is None:
        mine = cands[node] = model._cands(state, node)
    return [f + d for f, d in zip(free, heartbeat.discount(heartbeat.stage_candidates(mine, stage), len(free)))]


def quiet_until(model: YTsaurusModel, state: ClusterState, snap: Snapshot) -> float | bool | QuietExcept:
    """False, or the time before which every periodic call decides nothing (``math.inf``: until
    the next other event), or that time with a test of the nodes whose heartbeats may decide (a
    waiting task fits there, or a starving one once the stage's victims there are counted): every other
    call decides nothing until the first of those heartbeats (``_Decides``, asked lazily). The
    snapshot must already reflect the state (the caller checks)."""
    if model.caches:  # the tree's graceful operations as ``build_tree`` recorded them (``state.running``
        # keeps an entry for every workload ever submitted: walking it costs the trace so far)
        if any(state.running.get(w) for w in _graceful_ops(model, snap)):
            return False
    else:
        elements = snap.tree.elements
        if any(tasks and w in elements and elements[w].is_op and model._graceful(state, w)
               for w, tasks in state.running.items()):
            return False
    for q in state.queues.values():
        if q.max:
            usage = state.queue_usage.get(q.name) or {}
            if any(v is not None and float(usage.get(r, 0)) > float(v) + EPS for r, v in q.max.items()):
                return False
    free: dict[str, list[float]] = {}
    for n, node in state.nodes.items():
        room, over = _node_free(model, state, n)
        if over:
            return False
        if node.schedulable:
            free[n] = room
    scope = str(model.settings.get("scheduling_preemption_priority_scope", "operation_and_ancestors"))
    if model.caches:  # the walk the heartbeats share (``waiting.Waiting``)
        unpublished, shapes, needy = model._waiting.backlog(model, state, snap, scope)
    else:
        unpublished, shapes, needy = _backlog(model, state, snap, scope)
    if unpublished:
        return False  # submitted after the update: the snapshot does not reflect the state
    if not model.enabled:
        needy = {"aggressive": set(), "normal": set()}
    bound = model._clock_next if model.caches else clock_bound(snap)  # the same, kept per update
    if bound == -math.inf:
        return False
    stages = [(needy[p], stage) for p, stage in (("aggressive", "preemptive_aggressive"),
                                                   ("normal", "preemptive_normal")) if needy[p]]
    shapes = _below_most(shapes, list(free.values()))
    if not shapes and not stages:
        return True if bound == math.inf else bound
    return QuietExcept(bound, _Decides(model, state, free, shapes, stages))

