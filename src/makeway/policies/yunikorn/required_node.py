"""YuniKorn's required-node (DaemonSet) preemption, SEMANTICS §3.

A pinned ask that does not fit its node takes victims on that node alone: a filter with counters
(the reasons candidates were left out), a sort (preemptible first, then lower priority, then newest),
and a prefix of that order until the ask fits. It runs once per ask.
"""

from __future__ import annotations

from dataclasses import dataclass

from makeway.core.resources import Res, add
from makeway.policies.yunikorn.common import Partition, YAlloc, YAsk, go_slice_stable, log_failure
from makeway.policies.yunikorn import events
from makeway.policies.yunikorn.resources import match_any, strictly_greater_than, strictly_greater_than_or_equals

NO_VICTIM_REQUIRED_NODE = "NoVictimForRequiredNode"


@dataclass(slots=True)
class RequiredNodeFilter:
    candidates: list[YAlloc]
    counters: dict[str, int]


def required_node_filter(part: Partition, ask: YAsk) -> RequiredNodeFilter:
    counters = {"total": 0, "requiredNode": 0, "noMatchingResourceType": 0, "higherPriority": 0,
                "alreadyPreempted": 0, "released": 0}
    out = []
    for a in part.node_allocs(ask.required_node):
        counters["total"] += 1
        if a.required_node:
            counters["requiredNode"] += 1
        elif a.priority > ask.priority:
            counters["higherPriority"] += 1
        elif a.preempted:
            counters["alreadyPreempted"] += 1
        elif not match_any(a.resources, ask.resources):
            counters["noMatchingResourceType"] += 1
        elif a.released:
            counters["released"] += 1
        else:
            out.append(a)
    return RequiredNodeFilter(out, counters)


def _ds_class(a: YAlloc) -> int:
    if a.originator:
        return 2
    return 1 if not a.allow_preemption else 0


def sort_required_node(allocs: list[YAlloc]) -> list[YAlloc]:
    def less(l: YAlloc, r: YAlloc) -> bool:
        cl, cr = _ds_class(l), _ds_class(r)
        if cl != cr:
            return cl < cr
        if l.priority != r.priority:
            return l.priority < r.priority
        if l.create_us != r.create_us:
            return l.create_us > r.create_us
        return not strictly_greater_than(l.resources, r.resources)
    return go_slice_stable(allocs, less)


def required_node_victims(ask: YAsk, sorted_candidates: list[YAlloc], free: Res) -> list[YAlloc] | None:
    total: Res = {}
    out: list[YAlloc] = []
    for a in sorted_candidates:
        if strictly_greater_than_or_equals(total, ask.resources):
            break
        out.append(a)
        total = add(total, a.resources)
    if strictly_greater_than_or_equals(add(total, free), ask.resources):
        return out
    return None


def required_node_preemption(part: Partition, ask: YAsk) -> list[YAlloc] | None:
    """Run once for a pinned ask that does not fit its node; commits and returns the victims."""
    if ask.triggered_preemption or not ask.required_node or ask.required_node not in part.nodes:
        return None
    cands = sort_required_node(required_node_filter(part, ask).candidates)
    victims = required_node_victims(ask, cands, part.nodes[ask.required_node].free)
    if not victims:
        log_failure(ask, NO_VICTIM_REQUIRED_NODE)
        part.events.append(events.required_node_failed(ask.key, ask.app, ask.required_node, ask.resources))
        return None
    for v in victims:
        if not v.preempted:
            v.preempted = True
            part.add_preempting(v.queue, v.resources)
            part.events.append(events.preempted_by_scheduler(v.key, v.app, ask.key, ask.app, ask.queue, v.resources))
    ask.triggered_preemption = True
    return victims
