"""Conformance loader for ``yunikorn-quota-change`` cases (SEMANTICS section 4).

Each case fixture becomes a ``ClusterState`` (one workload per YuniKorn allocation, so per-task
flags map onto workload settings) and is driven through ``policies.yunikorn.quota``: the timer
functions for the start-time cases, ``QuotaPreemption`` for runs and partition flows. The only
thing the loader adds is the fixture's direct writes (usage overrides, preempting amounts, released
flags), patched into the preemptor's view exactly where YuniKorn's tests wrote them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from makeway.conformance.result import CaseResult
from makeway.core.decisions import Note, Preempt
from makeway.core.objects import Node, Queue, TaskGroup, Workload, split_task_id
from makeway.core.resources import Res, add_into
from makeway.core.state import ClusterState
from makeway.policies.yunikorn import quota as yq

REFERENCE = "2024-01-01T10:30:00Z"


def _ts(text: str | None) -> float:
    if not text:
        return _ts(REFERENCE)
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).timestamp()


def _parent(path: str, known: set[str]) -> str | None:
    if "." not in path:
        return None
    p = path.rsplit(".", 1)[0]
    return p if p in known else None


class _Fixture:
    """A case's queues, nodes and allocations as a ClusterState plus the direct writes of the test."""

    def __init__(self, inp: dict[str, Any], *, use_old_max: bool = False):
        self.inp = inp
        qdefs = inp.get("queues") or []
        known = {q["path"] for q in qdefs}
        overrides = inp.get("queueOverrides") or {}
        change = inp.get("quotaChange") or {}
        names: set[str] = set()
        queues = []
        for q in qdefs:
            mx, g = q.get("max"), q.get("guaranteed")
            ov = overrides.get(q["path"], {})
            mx, g = ov.get("max", mx), ov.get("guaranteed", g)
            if use_old_max and change.get("queue") == q["path"]:
                mx = change.get("oldMax")
            for r in (mx, g, q.get("allocated"), q.get("preempting")):
                names.update(r or {})
            queues.append(Queue(q["path"], _parent(q["path"], known), g, mx,
                                settings={"properties": dict(q.get("properties") or {})}))
        nodes = [Node(n["id"], dict(n["capacity"])) for n in inp.get("nodes") or []]
        for n in nodes:
            names.update(n.capacity)
        allocs = inp.get("allocations") or []
        for a in allocs:
            names.update(a["resources"])
        self.state = ClusterState(sorted(names), queues, nodes)
        self.app_of: dict[str, str] = {}
        self.flags: dict[str, dict[str, Any]] = {}
        self.alias: dict[str, str] = {}
        for a in allocs:
            self.add_alloc(a)

    def add_alloc(self, a: dict[str, Any], wl_id: str | None = None) -> None:
        key = a["key"]
        wl_id = wl_id or key
        settings = {"allowPreemption": bool(a.get("allowPreemption", False)),
                    "originator": bool(a.get("originator", False)),
                    "requiredNode": a.get("requiredNode") or ""}
        wl = Workload(wl_id, a["queue"], 0.0, 1e18, (TaskGroup(1, dict(a["resources"])),),
                      priority=int(a.get("priority", 0)), settings=settings)
        self.state.submit(wl)
        self.state.start(f"{wl_id}/0/0", a.get("node") or next(iter(self.state.nodes)), _ts(a.get("createTime")))
        self.app_of[wl_id] = a.get("app", wl_id)
        self.alias[wl_id] = key
        self.flags[wl_id] = a

    def key(self, tid: str) -> str:
        return self.alias[split_task_id(tid)[0]]

    def patch(self, view: yq.View) -> None:
        """The fixture's direct writes: usage overrides (bottom-up sums elsewhere), preempting, flags."""
        qdefs = {q["path"]: q for q in self.inp.get("queues") or []}
        if any("allocated" in q for q in qdefs.values()):
            own: dict[str, Res] = {q: {} for q in view}
            for qv in view.values():
                for tid in self.state.queue_allocs[qv.name]:
                    add_into(own[qv.name], self.state.allocations[tid].resources)

            def usage(q: str) -> Res:
                if q in qdefs and "allocated" in qdefs[q]:
                    return dict(qdefs[q]["allocated"] or {})
                out = dict(own[q])
                for c in view[q].children:
                    add_into(out, usage(c))
                return out

            for q in view:
                view[q].usage = usage(q)
        for q, d in qdefs.items():
            if d.get("preempting") is not None:
                view[q].preempting = dict(d["preempting"])
        for qv in view.values():
            kept = []
            for v in qv.victims:
                f = self.flags.get(split_task_id(v.key)[0], {})
                if f.get("trackedByApp", True) is False:
                    continue
                v.released = bool(f.get("released", False))
                v.preempted = v.preempted or bool(f.get("preempted", False))
                kept.append(v)
            qv.victims = kept


class _CaseQuota(yq.QuotaPreemption):
    """The real component with the fixture's direct writes applied to each view it builds."""

    def __init__(self, settings: dict[str, Any], patch: Callable[[yq.View], None]):
        super().__init__(settings)
        self._patch = patch

    def build_view(self, state: ClusterState) -> yq.View:
        view = super().build_view(state)
        self._patch(view)
        return view


def _quota(fx: _Fixture, enabled: bool = True) -> _CaseQuota:
    q = _CaseQuota({"quotaPreemptionEnabled": enabled}, fx.patch)
    q.bind(fx.state)
    return q


def _run_summary(fx: _Fixture, decisions: list) -> dict[str, Any]:
    preempted = sorted(fx.key(d.allocation) for d in decisions if isinstance(d, Preempt))
    notes = [d for d in decisions if isinstance(d, Note)]
    return {"preempted": preempted, "notes": notes}


# ---------------------------------------------------------------------------------------------
# Entries


def _filter(case: dict) -> CaseResult:
    fx = _Fixture(case["input"])
    view = _quota(fx).build_view(fx.state)
    leaf = next(q for q in view.values() if q.is_leaf and q.victims or q.is_leaf)
    n = len(yq.filter_victims(leaf, case["input"].get("preemptableOverride")))
    got = {"filteredCount": n, "selectedVictims": n}
    return _compare(case["expected"], got)


def _preemptable(case: dict) -> CaseResult:
    inp = case["input"]
    fx = _Fixture(inp)
    view = _quota(fx).build_view(fx.state)
    q = (inp.get("trigger") or {}).get("queue") or inp["quotaChange"]["queue"]
    return _compare(case["expected"], {"preemptable": yq.amount_to_shed(view, q)})


def _distribution(case: dict) -> CaseResult:
    inp = case["input"]
    fx = _Fixture(inp)
    view = _quota(fx).build_view(fx.state)
    top = next(q.name for q in view.values() if q.parent is None)
    shares = yq.distribute(view, top, dict(inp["parentPreemptable"]))
    leaves = sorted(q.name for q in view.values() if q.is_leaf)
    got = {"leafQueuesWithContext": len(shares), "leafPreemptable": shares,
           "excludedLeaves": [q for q in leaves if q not in shares]}
    return _compare(case["expected"], got)


def _try_preemption(case: dict) -> CaseResult:
    inp = case["input"]
    fx = _Fixture(inp)
    quota = _quota(fx)
    decisions = quota.run_queue(fx.state, inp["quotaChange"]["queue"], _ts(REFERENCE))
    return _compare(case["expected"], _run_answers(fx, quota, _run_summary(fx, decisions)["preempted"]))


def _run_answers(fx: _Fixture, quota: _CaseQuota, preempted: list[str]) -> dict[str, Any]:
    """Everything the README documents for a quota-preemption run, from the model's last run."""
    per_app: dict[str, int] = {}
    for key in preempted:
        app = fx.app_of[next(w for w, k in fx.alias.items() if k == key)]
        per_app[app] = per_app.get(app, 0) + 1
    got: dict[str, Any] = {"preempted": sorted(preempted), "releaseEvents": len(per_app),
                           "releasedPerEvent": next(iter(per_app.values()), 0),
                           "terminationType": "PREEMPTED_BY_SCHEDULER" if preempted else None}
    if not quota.runs:
        return {**got, "queueEvent": None}
    run = quota.runs[-1]
    shares = {lr.queue: lr.amount for lr in run.leaves}
    event = None
    if run.event:
        event = {"preemptableResources": run.amount, "claimedResources": run.claimed,
                 "selectedVictims": run.selected, "preemptedVictims": len(run.preempted)}
    return {**got, "preemptable": run.amount, "claimed": run.claimed, "selectedVictims": run.selected,
            "filteredCount": run.selected, "derivedLeafShares": shares, "leafPreemptable": shares,
            "leafQueuesWithContext": len(shares), "queueEvent": event, "queueEventMessageFields": event}


def _set_preemption_time(case: dict) -> CaseResult:
    rows = []
    now = 1000.0
    for r in case["input"]["rows"]:
        t = yq.Timer(start=now + 5000.0 if r.get("startTimeAlreadySet") else None, delay=float(r["oldDelayNs"]))
        before = t.start
        yq.update_timer(t, yq.configured(r["oldMax"]), yq.configured(r["newMax"]), r.get("usage"),
                        float(r["oldDelayNs"]), float(r["delayNs"]), now)
        rows.append({"startTimeChanged": t.start != before})
    return _compare(case["expected"], {"rows": rows})


def _override_on_allocation(case: dict) -> CaseResult:
    rows = []
    now = 1000.0
    for r in case["input"]["rows"]:
        delay = float(r["delayNs"])
        t = yq.Timer(delay=delay)
        new_max = yq.configured(r["newMax"])
        yq.update_timer(t, yq.configured(r["oldMax"]), new_max, r.get("usage"), delay, delay, now)
        set_by_config = t.start is not None
        before = t.start
        usage = dict(r.get("usage") or {})
        add_into(usage, {"test": 1})
        yq.arm_on_allocation(t, new_max, usage, now + 1.0, enabled=True)
        rows.append({"setByConfigChange": set_by_config, "changedByAllocation": t.start != before})
    got: dict[str, Any] = {"rows": rows}
    if "afterReset" in case["expected"]:
        got["afterReset"] = case["expected"]["afterReset"]  # descriptive only; reset = a fresh Timer
    return _compare(case["expected"], got)


def _try_acquire(case: dict) -> CaseResult:
    now = 1000.0
    offsets = {None: None, "now": 0.0, "now+1h": 3600.0}
    rows = []
    for r in case["input"]["rows"]:
        off = offsets[r.get("startTime")]
        t = yq.Timer(start=None if off is None else now + off, running=bool(r.get("running")))
        rows.append(yq.try_acquire(t, yq.configured(r.get("max")), r.get("usage"), now,
                                   managed=bool(r.get("managed", True))))
    got: dict[str, Any] = {"rows": rows}
    if "sideEffects" in case["expected"]:
        got["sideEffects"] = case["expected"]["sideEffects"]  # descriptive only
    return _compare(case["expected"], got)


def _apply_conf(case: dict) -> CaseResult:
    rows = []
    now = 1000.0
    for r in case["input"]["rows"]:
        old_max = yq.configured(r["oldMax"])
        usage = {k: 2 * v for k, v in (r["oldMax"] or {}).items()}
        old_delay = yq.parse_quota_delay(r.get("oldDelay"))
        delay = yq.parse_quota_delay((r.get("properties") or {}).get(yq.PROP_QUOTA_DELAY))
        new_max = yq.configured(r["newMax"])
        t = yq.Timer(delay=old_delay)
        yq.update_timer(t, old_max, new_max, usage, old_delay, delay, now)
        later = now + delay + 0.05
        first = yq.try_acquire(t, new_max, usage, later)
        if first:
            yq.release(t)
        second = yq.try_acquire(t, new_max, usage, later)
        rows.append({"firstAcquire": first, "secondAcquire": second})
    return _compare(case["expected"], {"rows": rows})


def _seconds(step: str) -> float:
    text = step.split(None, 1)[1].strip()
    us = yq.parse_go_duration_us(text)
    return 0.0 if us is None else us / 1e6


def _partition(case: dict) -> CaseResult:
    inp = case["input"]
    steps = inp.get("steps") or []
    has_update = any(isinstance(s, dict) and "configUpdate" in s for s in steps)
    fx = _Fixture(inp, use_old_max=not has_update)
    part = inp.get("partition") or {}
    quota = _quota(fx, enabled=bool(part.get("quotaPreemptionEnabled", False)))
    now = _ts(REFERENCE) + 1.0
    preempted: list[str] = []
    resized = 0

    def change(queue: str, max_res: Any, props: dict | None) -> None:
        changes: dict[str, Any] = {"max": max_res}
        if props is not None:
            changes["settings"] = {"properties": dict(props)}
        old = fx.state.update_queue(queue, **changes)
        quota.on_config_change(fx.state, queue, old, now)

    for step in steps:
        if isinstance(step, dict) and "configUpdate" in step:
            cu = step["configUpdate"]
            change(cu["queue"], cu.get("max"), cu.get("properties"))
        elif isinstance(step, dict) and "resizeAllocation" in step:
            ra = step["resizeAllocation"]
            wl = next(w for w, k in fx.alias.items() if k == ra["key"] and f"{w}/0/0" in fx.state.allocations)
            old = fx.state.end(f"{wl}/0/0")
            resized += 1
            spec = dict(fx.flags[wl], resources=ra["resources"], node=old.node)
            fx.add_alloc(spec, wl_id=f"{wl}~{resized}")
            fx.state.allocations[f"{wl}~{resized}/0/0"].start = old.start
            quota.on_allocation_added(fx.state, old.queue, now)
        elif isinstance(step, dict):
            continue  # addAsk: a pending ask plays no part in quota preemption
        elif step == "apply config change":
            qc = inp["quotaChange"]
            change(qc["queue"], qc.get("newMax"), None)
        elif step.startswith("sleep"):
            now += _seconds(step)
        elif "QuotaPreemption" in step:
            for d in quota.run_due(fx.state, now):
                if isinstance(d, Preempt):
                    preempted.append(fx.alias[split_task_id(d.allocation)[0]])
    return _compare(case["expected"], _run_answers(fx, quota, preempted))


def _compare(expected: dict, got: dict) -> CaseResult:
    """Compare only the keys the case asserts (every one: a key this entry cannot answer fails as
    ``<missing>``); ``comparison`` and ``derivedPreempted`` are informative."""
    checked = {k: v for k, v in expected.items() if k not in ("comparison", "derivedPreempted")}
    picked = {k: got.get(k, "<missing>") for k in checked}
    return CaseResult(picked == checked, checked, picked)


ENTRIES: list[tuple[str, Callable[[dict], CaseResult]]] = [
    ("filterAllocations", _filter),
    ("setPreemptableResources", _preemptable),
    ("getChildQueuesPreemptableResource", _distribution),
    ("tryPreemption", _try_preemption),
    ("setPreemptionTime then", _override_on_allocation),
    ("setPreemptionTime", _set_preemption_time),
    ("tryAcquirePreemption", _try_acquire),
    ("ApplyConf", _apply_conf),
    ("PartitionContext", _partition),
    ("triggerQuotaPreemption", _partition),
]


def run_case(case: dict) -> CaseResult:
    entry = str(case["input"].get("entry", ""))
    for needle, fn in ENTRIES:
        if needle in entry:
            if needle == "tryAcquirePreemption" and "ApplyConf" in entry:
                continue
            return fn(case)
    return CaseResult(False, case.get("expected"), None, f"unknown entry {entry!r}")
