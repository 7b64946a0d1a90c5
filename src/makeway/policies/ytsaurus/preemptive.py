"""The preemptive stages of a YTsaurus heartbeat (SEMANTICS §6.4-6.6), after the regular stage.

Under the per-node backoff: the aggressive stage, then the normal one, each picking the least
satisfied starving operation with a task that fits the node's free resources plus what that stage
may preempt there, preempting youngest preemptible allocations until it fits (and pool-limit
violators), and starting the task when nothing it preempted has a graceful timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from makeway.core.decisions import Decision, Preempt, Reason, Start
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import durations, heartbeat, starvation, views

if TYPE_CHECKING:
    from makeway.policies.ytsaurus.model import YTsaurusModel

STAGE_RULE = {"preemptive_aggressive": "aggressive-preemptive-stage", "preemptive_normal": "preemptive-stage"}


def stages(model: YTsaurusModel, state: ClusterState, node: str, free: list[float],
           qusage: dict[str, list[float]], opusage: dict[str, list[float]],
           started: set[str]) -> list[Decision]:
    snap = model.snap
    assert snap is not None
    scope = str(model.settings.get("scheduling_preemption_priority_scope", "operation_and_ancestors"))
    cap = model._vec(state.nodes[node].capacity)
    if model.caches and not (model._clock_sig[1] or model._clock_sig[2]) and not model._any_limits(state) \
            and not heartbeat.exceeds([c - f for c, f in zip(cap, free)], cap):
        # nobody starves, so neither stage picks anyone; the node fits and no pool has limits,
        # so there is no victim either: the candidates (and their classes) are not needed
        return []
    out: list[Decision] = []
    all_cands = model._cands(state, node)
    for stage in heartbeat.STAGES:
        target = heartbeat.STAGE_PRIORITY[stage]
        cands = heartbeat.stage_candidates(all_cands, stage, _blocked_for(model, state, stage))
        disc = heartbeat.discount(cands, len(cap))
        room = [f + d for f, d in zip(free, disc)]
        if model.caches:  # operations no task of which fits the room are passed over unpicked
            ops = model._waiting.preemptive(model, state, snap, scope, target, room)
        else:
            ops = {w for w, p in state.pending.items() if p and w in snap.published
                   and starvation.preemption_priority(snap.view, w, scope) == target}
        picker = model._picker(snap.tree, ops, views.heartbeat_sat(model, opusage))
        chosen = model.next_fitting(picker, state, room, started, qusage)
        if chosen is None and stage != "preemptive_normal":
            continue
        used_after = [c - f for c, f in zip(cap, free)]
        if chosen is not None:
            used_after = [u + r for u, r in zip(used_after, model._vec(state.task_resources(chosen[1])))]
        victims = heartbeat.preempt_after_scheduling(used_after, cap, cands, _violates(model, state, qusage))
        for c, why in victims:
            rule = STAGE_RULE[stage] if why == "preemption" else "resource-limits-overcommit"
            a = snap.result.attrs.get(chosen[0]) if chosen else None
            model.grace[c.id] = _timeout(model, state, c.op)
            out.append(Preempt(c.id, Reason(
                "ytsaurus", rule, chosen[0] if chosen and why == "preemption" else f"resource-limits:{c.op}",
                f"{c.status} allocation of {c.op}",
                {"victim_status": c.status,
                 "preemptor_fair_share": max(a.fair_share, default=0.0) if a else None,
                 "preemptor_usage_share": max(a.usage_share, default=0.0) if a else None,
                 "preemptor_satisfaction": model._sat(chosen[0], opusage) if chosen else None,
                 "victim_satisfaction": model._sat(c.op, opusage) if c.op in opusage else None})))
            model._account(state, c.op, c.res, free, qusage, opusage, +1, pools=why == "preemption")
        if chosen is not None:
            pick, tid = chosen
            req = model._vec(state.task_resources(tid))
            if heartbeat.fits(req, free) and all(model.grace.get(c.id, 0) <= 0 for c, _ in victims):
                out.append(Start(tid, node))
                started.add(tid)
                model._account(state, pick, req, free, qusage, opusage, -1)
            break
    return out

def _timeout(model: YTsaurusModel, state: ClusterState, wid: str) -> float:
    ws = state.workloads[wid].settings or {}
    t = ws.get("allocation_preemption_timeout", model.settings.get("allocation_preemption_timeout"))
    return float(durations.seconds(t)) if t is not None else float(state.workloads[wid].grace)

def _blocked_for(model: YTsaurusModel, state: ClusterState, stage: str):
    snap = model.snap
    assert snap is not None

    def blocked(c: heartbeat.Cand) -> bool:
        if stage == "preemptive_normal":
            for q in state.path_to_root(state.workloads[c.op].queue):
                if (state.queues[q].settings or {}).get("allow_normal_preemption") is False:
                    return True
        return False
    return blocked

def _violates(model: YTsaurusModel, state: ClusterState, qusage: dict[str, list[float]]):
    def violates(c: heartbeat.Cand) -> bool:
        queue = state.workloads[c.op].queue
        for q in state.path_to_root(queue):
            lim = state.queues[q].max
            if not lim:
                continue
            u = qusage[q]
            if any(r in lim and lim[r] is not None and u[k] > float(lim[r]) + EPS
                   for k, r in enumerate(model.resources)):
                for q2 in state.path_to_root(queue):  # live re-check for the next candidate
                    qusage[q2] = [x - y for x, y in zip(qusage[q2], c.res)]
                return True
        return False
    return violates
