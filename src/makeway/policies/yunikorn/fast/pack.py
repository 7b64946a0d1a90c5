"""The class of YuniKorn runs a compiled loop can take (the first slice of
``docs/plans/yunikorn-compiled-loop.md``; the loop itself is the next).

Inside: the partition's preemption on, quota preemption off; a root with neither guarantee nor
max and, under it, leaves only, without a max, with guarantees in whole numbers and no
preemption property but ``preemption.delay``; schedulable nodes with whole capacities; an empty
state; workloads of one task asking positive whole amounts of one same set of resources, without
settings, always preemptible and without a grace period. There the model's rules reduce to what
the plan restates on arrays: no fences, priority offsets, required nodes, originators, float
rounding or Go-faithful sorts of comparators that are not strict weak orders.
"""

from __future__ import annotations

from typing import Any, Sequence

from makeway.core.objects import Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.common import INT32_MAX, INT32_MIN, QueueProps
from makeway.policies.yunikorn.views import nonzero, queue_props


def _whole(values: Any) -> bool:
    return all(type(v) is int for v in values)


def unsupported(state: ClusterState, model: Any, workloads: Sequence[Workload]) -> str | None:
    """Why the compiled YuniKorn loop could not run this (None: it could): the first thing
    outside its class, named."""
    if getattr(model, "name", None) != "yunikorn":
        return "not the yunikorn model"
    if not model.preemption_enabled:
        return "settings.preemptionEnabled: false"
    if model.quota.enabled:
        return "settings.quotaPreemptionEnabled: true"
    if len(state.roots) != 1:
        return "not one root queue"
    root = state.roots[0]
    if nonzero(state.queues[root].guaranteed) or nonzero(state.queues[root].max):
        return f"queue {root}: a guaranteed or max"
    props, plain = queue_props(state), QueueProps()
    for name, q in state.queues.items():
        if name == root:
            continue
        if q.parent != root or not q.is_leaf:
            return f"queue {name}: not a leaf under {root}"
        if nonzero(q.max):
            return f"queue {name}: a max"
        if q.guaranteed and (not _whole(q.guaranteed.values()) or min(q.guaranteed.values()) < 0):
            return f"queue {name}: a guaranteed that is not in non-negative whole numbers"
        p = props[name]
        if (p.preemption_policy, p.priority_fence, p.priority_offset) != \
                (plain.preemption_policy, plain.priority_fence, plain.priority_offset):
            return f"queue {name}: a preemption or priority policy, or a priority offset"
    for n in state.nodes.values():
        if not n.schedulable or n.removed or not _whole(n.capacity.values()):
            return f"node {n.name}: not schedulable, or a capacity that is not whole"
    if state.workloads or state.allocations:
        return "the state already holds workloads"
    kinds = None
    for wl in workloads:
        if len(wl.groups) != 1 or wl.groups[0].count != 1:
            return f"workload {wl.id}: not one task"
        res = wl.groups[0].resources
        if not res or not _whole(res.values()) or min(res.values()) <= 0:
            return f"workload {wl.id}: a request that is not in positive whole numbers"
        if kinds is None:
            kinds = set(res)
        elif set(res) != kinds:
            return f"workload {wl.id}: asks for other resources than {sorted(kinds)}"
        if wl.queue not in state.queues or wl.queue == root:
            return f"workload {wl.id}: queue {wl.queue} is not a leaf"
        if not wl.preemptible or wl.grace or wl.settings:
            return f"workload {wl.id}: not preemptible, a grace period, or settings"
        if type(wl.priority) is not int or not INT32_MIN <= wl.priority <= INT32_MAX:
            return f"workload {wl.id}: a priority that is not a 32-bit integer"
    return None


__all__ = ["unsupported"]
