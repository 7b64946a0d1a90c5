"""Loader for ``yunikorn-preemption`` cases: YuniKorn unit-test fixtures onto the real preemptor code.

The case's queues, nodes, allocations and ask become a ``Partition`` (the same structure the
simulator model builds from the cluster state), the predicate mock becomes an oracle object, and the
``entry`` says which stage of ``policies.yunikorn.preemptor`` the Go test exercised.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from makeway.conformance.result import CaseResult
from makeway.policies.yunikorn.resources import equals, is_zero
from makeway.policies.yunikorn import preemptor as yp
from makeway.policies.yunikorn import required_node as rn
from makeway.policies.yunikorn.common import (MAX_PREEMPTION_ATTEMPTS, Partition, YAlloc, YAsk, YNode, YQueue,
                                              resolve_props, sort_allocations_based_on_ask)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_REF = "2024-01-01T10:30:00.000000Z"


def _us(ts: str | None) -> int:
    if not ts:
        ts = _REF
    dt = datetime.strptime(ts.replace("Z", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc)
    d = dt - _EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _queues(specs: list[dict]) -> list[YQueue]:
    by_path = {q["path"]: q for q in specs}
    out: list[YQueue] = []
    raw: dict[str, dict] = {}
    props: dict[str, Any] = {}
    for spec in sorted(specs, key=lambda q: q["path"].count(".")):
        path = spec["path"]
        parent = path.rsplit(".", 1)[0] if "." in path else None
        if parent is not None and parent not in by_path:
            parent = None
        p, merged = resolve_props(spec.get("properties"), raw.get(parent), props.get(parent))
        raw[path], props[path] = merged, p
        out.append(YQueue(path, parent, spec.get("guaranteed"), spec.get("max"), props=p,
                          leaf=not spec.get("parent", False)))
    return out


def _alloc(a: dict) -> YAlloc:
    return YAlloc(a["key"], a["app"], a["queue"], a["node"], dict(a["resources"]), a.get("priority", 0),
                  _us(a.get("createTime")), a.get("originator", False), a.get("allowPreemption", True),
                  a.get("requiredNode", "") or "", a.get("released", False), a.get("preempted", False),
                  a.get("trackedByApp", True), a.get("releasedDuringPreemption", False))


def _ask(a: dict) -> YAsk:
    return YAsk(a["key"], a["app"], a["queue"], dict(a["resources"]), a.get("priority", 0), _us(a.get("createTime")),
                a.get("allowPreemptOther", False), a.get("allowPreemption", True), a.get("originator", False),
                a.get("requiredNode", "") or "")


def build_partition(inp: dict) -> Partition:
    queues = _queues(inp.get("queues", []))
    nodes = [YNode(n["id"], dict(n["capacity"])) for n in inp.get("nodes", [])]
    allocs = [_alloc(a) for a in inp.get("allocations", [])]
    part = Partition(queues, nodes, allocs)
    for q in queues:  # a case's "parent: true" queue stays a parent even without children
        spec_parent = next((s.get("parent", False) for s in inp["queues"] if s["path"] == q.path), False)
        q.leaf = not spec_parent and not q.children
    for a in allocs:
        if a.queue in part.queues:
            part.add_usage(a.queue, a.resources)
        if a.node in part.nodes:
            node = part.nodes[a.node]
            node.used = _plus(node.used, a.resources)
    for spec in inp.get("queues", []):
        q = part.queues[spec["path"]]
        if "allocated" in spec:
            q.allocated = dict(spec["allocated"] or {})
        if spec.get("preempting"):
            q.preempting = dict(spec["preempting"])
    return part


def _plus(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


class MockOracle:
    """The Go test's resource-manager mock: exact victims and start index per node, else failure."""

    def __init__(self, spec: dict):
        self.alloc = spec.get("allocate") or {}
        self.entries = {e["node"]: e for e in spec.get("preemption") or []}
        self.errors: list[str] = []

    def allocate(self, ask: str, node: str) -> bool:
        return self.alloc.get(ask) == node

    def preemption(self, ask: str, node: str, victims: list[str], start_index: int) -> tuple[bool, int]:
        e = self.entries.get(node)
        if e is None:
            return False, -1
        if e["expectedVictims"] != victims or e["expectedStartIndex"] != start_index:
            self.errors.append(f"{node}: sent {victims}@{start_index}, expected "
                               f"{e['expectedVictims']}@{e['expectedStartIndex']}")
            return False, -1
        return bool(e["success"]), int(e["index"])


def _oracle(inp: dict) -> MockOracle | None:
    spec = inp.get("predicates")
    return None if spec is None else MockOracle(spec)


def _preempted(part: Partition) -> list[str]:
    return sorted(a.key for a in part.allocs.values() if a.preempted)


def _project(expected: dict, full: dict, part: Partition, ask: YAsk) -> dict:
    """The got-dict restricted to the keys the case asserts, evaluated the way each key is meant."""
    got: dict[str, Any] = {}
    pre = _preempted(part)
    for key, exp in expected.items():
        if key in full:
            got[key] = full[key]
        elif key == "preempted":
            got[key] = pre
        elif key == "notPreempted":
            got[key] = [k for k in exp if k not in pre]
        elif key == "preemptedAtLeastOneOf":
            got[key] = exp if any(k in pre for k in exp) else pre
        elif key == "allocationLogEmpty":
            got[key] = not ask.log
        elif key == "allocationLogContains":
            got[key] = [r for r in exp if r in ask.log] if all(r in ask.log for r in exp) else list(ask.log)
        elif key == "allocationLogExactly":
            got[key] = list(ask.log)
        elif key == "allocationLogFirst":
            got[key] = next(iter(ask.log), None)
        elif key == "events":
            got[key] = match_events(exp, part.events)
        else:
            got[key] = exp if key in ("comparison", "sideEffect") else f"<unsupported {key}>"
    return got


_EVENT_ALIASES = {"objectid": "objectID", "allocationkey": "objectID", "victim": "objectID", "key": "objectID",
                  "referenceid": "referenceID", "applicationid": "referenceID", "app": "referenceID",
                  "message": "message", "msg": "message", "type": "type", "eventtype": "type",
                  "changetype": "changeType", "eventchangetype": "changeType",
                  "changedetail": "changeDetail", "eventchangedetail": "changeDetail",
                  "resource": "resource", "resources": "resource", "allocatedresource": "resource"}


def _event_field(name: str) -> str | None:
    return _EVENT_ALIASES.get("".join(ch for ch in name.lower() if ch.isalnum()))


def _event_value(field: str, value: Any) -> Any:
    """YuniKorn's enum names may be written with their prefix (``EventRecord_REQUEST``)."""
    if field in ("type", "changeType", "changeDetail") and isinstance(value, str):
        return value.removeprefix("EventRecord_")
    return value


def match_events(expected: Any, events: list[dict]) -> Any:
    """The events sent, in the shape the case wrote: a count, a list of messages, or records
    compared on the fields the case names (YuniKorn's ``EventRecord`` names, any case)."""
    if isinstance(expected, bool) or not isinstance(expected, (int, list, dict)):
        return f"<unsupported events {expected!r}>"
    if isinstance(expected, int):
        return len(events)
    if isinstance(expected, dict):
        if "count" in expected or "messages" in expected:
            out: dict[str, Any] = {}
            if "count" in expected:
                out["count"] = len(events)
            if "messages" in expected:
                out["messages"] = [e["message"] for e in events]
            return {**expected, **out}
        expected = [expected]
    got: list[Any] = []
    for i, e in enumerate(events):
        want = expected[i] if i < len(expected) else None
        if isinstance(want, str) or want is None:
            got.append(e["message"])
            continue
        rec = {}
        for name, value in want.items():
            fld = _event_field(name)
            if fld is None:
                rec[name] = f"<unsupported event field {name}>"
            elif fld == "resource":
                rec[name] = e[fld] if equals(e[fld], value or {}) is False else value
            else:
                rec[name] = e[fld] if _event_value(fld, value) != e[fld] else value
        got.append(rec)
    return got


def _pick(expected: dict, full: dict) -> dict:
    """The answers to the keys a case asserts; a key this entry cannot answer fails the case by name."""
    return {k: full[k] if k in full else (v if k == "comparison" else f"<unsupported {k}>")
            for k, v in expected.items()}


def _try_preemption(inp: dict, expected: dict) -> tuple[dict, Partition, YAsk]:
    part = build_partition(inp)
    ask = _ask(inp["ask"])
    oracle = _oracle(inp)
    p = yp.Preemptor(part, ask, inp.get("headroom"), False, oracle)
    r = p.try_preemption()
    full = {"ok": r.ok, "result": "Reserved" if r.ok else None, "reservedNode": r.node,
            "request": ask.key if r.ok else None, "resultNotNull": r.ok,
            "victims": sorted(v.key for v in r.victims), "victimCount": len(r.victims),
            "predicateError": (oracle.errors or None) if oracle else None}
    return _project(expected, full, part, ask), part, ask


def run_case(case: dict) -> CaseResult:
    inp, exp = case["input"], case["expected"]
    entry = inp.get("entry", "")
    try:
        got = _dispatch(entry, inp, exp)
    except Exception as exc:  # a crash is a failed case with a readable line
        return CaseResult(False, exp, f"{type(exc).__name__}: {exc}")
    return CaseResult(got == exp, exp, got)


def _dispatch(entry: str, inp: dict, exp: dict) -> Any:
    if entry == "Preemptor.TryPreemption":
        return _try_preemption(inp, exp)[0]
    if entry == "Preemptor.CheckPreconditions":
        return _preconditions(inp, exp)
    if entry.startswith("Queue.FindEligiblePreemptionVictims"):
        part = build_partition(inp)
        search = yp.find_victims(part, _ask(inp["ask"]))
        victims = sorted(a.key for s in search.snapshots.values() for a in s.victims)
        return _pick(exp, {"fenceRoot": search.fence_root, "snapshotCount": len(search.snapshots),
                           "victims": victims, "victimCount": len(victims), "filteredCount": len(victims)})
    if entry.startswith("isAskQueueUnderGuaranteed"):
        return {"rows": [yp.ask_queue_under(r["askResource"], r["remaining"]) for r in inp["rows"]]}
    if entry.startswith("isVictimQueueOverGuaranteed"):
        return {"rows": [yp.victim_queue_over(r["askResource"], r["remaining"]) for r in inp["rows"]]}
    if entry == "Preemptor.checkPreemptionQueueGuarantees":
        part = build_partition(inp)
        ask = _ask(inp["ask"])
        got: dict[str, Any] = {"checkPreemptionQueueGuarantees":
                               yp.Preemptor(part, ask, inp.get("headroom")).check_queue_guarantees()}
        if "tryPreemption" in exp:
            got["tryPreemption"] = _try_preemption(inp, exp["tryPreemption"])[0]
        return got
    if entry == "RequiredNodePreemptor.filterAllocations":
        part = build_partition(inp)
        f = rn.required_node_filter(part, _ask(inp["ask"]))
        return _pick(exp, {"counters": f.counters, "filteredCount": len(f.candidates),
                           "order": [a.key for a in rn.sort_required_node(f.candidates)]})
    if entry.startswith("RequiredNodePreemptor.filterAllocations + sortAllocations"):
        part = build_partition(inp)
        ask = _ask(inp["ask"])
        filtered = rn.required_node_filter(part, ask)
        cands = rn.sort_required_node(filtered.candidates)
        mut = inp.get("afterSortMutation")
        if mut:
            for k, v in mut.items():
                if k != "key":
                    setattr(part.allocs[mut["key"]], k, v)
        victims = rn.required_node_victims(ask, cands, part.nodes[ask.required_node].free) or []
        return _pick(exp, {"victims": [v.key for v in victims], "victimCount": len(victims),
                           "counters": filtered.counters, "filteredCount": len(filtered.candidates),
                           "order": [a.key for a in cands]})
    if entry.startswith("QueuePreemptionSnapshot.GetPreemptableResource"):
        return _preemptable(inp, exp)
    if entry == "QueuePreemptionSnapshot.GetRemainingGuaranteedResource":
        return _remaining(inp, exp)
    if entry.startswith("SortAllocationsBasedOnAsk"):
        allocs = [_alloc(a) for a in inp["allocations"]]
        return {"order": [a.key for a in sort_allocations_based_on_ask(allocs, inp.get("total"), inp.get("ask"))]}
    if entry == "SortAllocations":
        return {"order": [a.key for a in rn.sort_required_node([_alloc(a) for a in inp["allocations"]])]}
    if entry.startswith("Application.tryAllocate"):
        return _try_allocate_phases(inp, exp)
    if entry == "PartitionContext.tryAllocate sequence":
        return _partition_sequence(inp, exp)
    raise ValueError(f"unsupported entry {entry!r}")


def _preconditions(inp: dict, exp: dict) -> dict:
    delay = int(inp.get("preemptionDelaySeconds", 30) * 1_000_000)
    now = _us(_REF)
    rows: list[bool] = []
    prev: tuple[yp.Preemptor, int] | None = None
    part = Partition([YQueue("root", None)], [], [])
    for row in inp["rows"]:
        if row.get("repeatOfPreviousRow") and prev is not None:
            rows.append(prev[0].check_preconditions(prev[1], delay))
            continue
        a = row["ask"]
        since = a.get("secondsSinceLastCheck")
        ask = YAsk("ask", "app", "root", {"first": 1}, 0, now - int(a["ageSeconds"] * 1_000_000),
                   a["allowPreemptOther"], True, False, a.get("requiredNode", "") or "",
                   a.get("triggeredPreemption", False), None if since is None else now - int(since * 1_000_000))
        p = yp.Preemptor(part, ask)
        rows.append(p.check_preconditions(now, delay))
        prev = (p, now)
    got: dict[str, Any] = {"rows": rows}
    if "sideEffect" in exp:
        got["sideEffect"] = exp["sideEffect"]
    if "tryAllocateWithFailingPreconditions" in exp:
        # ask first:5 in root.child (max first:5), headroom first:2, delay 1s, 1 attempt left, checked just now
        qs = [YQueue("root", None), YQueue("root.child", "root", None, {"first": 5})]
        qs[1].allocated = {"first": 3}
        qs[0].allocated = {"first": 3}
        part = Partition(qs, [YNode("node-1", {"first": 10}, {"first": 3})], [])
        ask = YAsk("ask", "app", "root.child", {"first": 5}, 0, now - 2_000_000, True, True, False, "",
                   False, now)
        budget = [1]
        r = yp.try_allocate(part, ask, now, budget, {}, None, headroom={"first": 2})
        want = exp["tryAllocateWithFailingPreconditions"]
        got["tryAllocateWithFailingPreconditions"] = {
            "setup": want["setup"], "result": r.kind,
            "allocationLogContains": [x for x in want["allocationLogContains"] if x in ask.log]}
    return got


def _snapshot_tree(inp: dict, overrides: dict, ask_queue: str | None) -> dict[str, yp.Snap]:
    specs = sorted(inp["queues"], key=lambda q: q["path"].count("."))
    snaps: dict[str, yp.Snap] = {}
    for q in specs:
        path = q["path"]
        parent = path.rsplit(".", 1)[0] if "." in path else None
        o = {**q, **overrides.get(path, {})}
        snaps[path] = yp.Snap(path, snaps.get(parent) if parent else None, not q.get("parent", False),
                              o.get("allocated"), o.get("preempting"), o.get("max"), o.get("guaranteed"))
    if ask_queue is not None:
        for s in snaps.values():
            # The Go test created the ask path's snapshots before linking, so root carries no ask link.
            if s.parent is not None:
                s.ask_queue = snaps[ask_queue]
    return snaps


def _preemptable(inp: dict, exp: dict) -> dict:
    snaps = _snapshot_tree(inp, {}, None)
    got = {}
    for path, want in exp["preemptable"].items():
        val = snaps[path].preemptable()
        ok = is_zero(val) if want is None else equals(val, want)
        got[path] = want if ok else val
    return {"preemptable": got, "comparison": exp.get("comparison")}


def _remaining(inp: dict, exp: dict) -> dict:
    snaps = _snapshot_tree(inp, inp.get("overrides") or {}, inp["askQueue"])
    return {"remaining": {p: snaps[p].remaining_guaranteed() for p in exp["remaining"]},
            "comparison": exp.get("comparison")}


def _try_allocate_phases(inp: dict, exp: dict) -> dict:
    part = build_partition(inp)
    ask = _ask(inp["ask"])
    delay = int(inp.get("preemptionDelaySeconds", 30) * 1_000_000)
    for q in part.queues.values():
        q.props = type(q.props)(q.props.preemption_policy, delay, q.props.priority_fence, q.props.priority_offset)
    now = ask.create_us
    budget = [MAX_PREEMPTION_ATTEMPTS]
    phases = []
    for ph, want in zip(inp["phases"], exp["phases"]):
        ask.log.clear()
        ask.last_check_us = None
        if ph.get("preemptionAttemptsRemaining") is not None and ph["preemptionAttemptsRemaining"] != budget[0] \
                and ph["preemptionAttemptsRemaining"] == 0:
            budget[0] = 0
        elif budget[0] == 0:
            budget[0] = ph.get("preemptionAttemptsRemaining", MAX_PREEMPTION_ATTEMPTS)
        ask.create_us = now - int(ph.get("askAgeSeconds", 0) * 1_000_000)
        oracle = _oracle(inp)
        r = yp.try_allocate(part, ask, now, budget, {}, oracle, inp.get("allowPreemption", True),
                            headroom=inp.get("headroom"))
        full = {"result": r.kind, "request": ask.key if r.kind else None, "preempted": _preempted(part),
                "attemptsRemainingAfter": budget[0]}
        got = {}
        for k in want:
            if k == "events":
                got[k] = match_events(want[k], part.events)
            elif k == "allocationLogContains":
                got[k] = [x for x in want[k] if x in ask.log] if all(x in ask.log for x in want[k]) else list(ask.log)
            else:
                got[k] = full.get(k, f"<unsupported {k}>")
        phases.append(got)
    return {"phases": phases}


def _partition_sequence(inp: dict, exp: dict) -> dict:
    part = build_partition(inp)
    ask = _ask(inp["ask"])
    enabled = (inp.get("partition") or {}).get("preemptionEnabled", True)
    now = max([a.create_us for a in part.allocs.values()] + [ask.create_us])
    reservations: dict[str, str] = {}
    budget = [MAX_PREEMPTION_ATTEMPTS]
    got: dict[str, Any] = {}
    names = iter(["afterFirstTryAllocate", "afterSecondTryAllocate", "afterThirdTryAllocate"])
    preempted_seconds: dict[str, int] = {}

    def preempting() -> dict:
        return {p: {k: v for k, v in q.preempting.items() if v} for p, q in part.queues.items()}

    for step in inp["steps"]:
        if step.startswith("wait"):
            now += int(float(step.split()[1].rstrip("s")) * 1_000_000)
        elif step == "tryAllocate":
            budget[0] = MAX_PREEMPTION_ATTEMPTS
            r = yp.try_allocate(part, ask, now, budget, reservations, None, enabled)
            name = next(names)
            want = exp.get(name, {})
            res = r.kind if r.kind in ("Allocated", "AllocatedReserved") else None
            full = {"result": res, "request": ask.key if res else None, "preempted": _preempted(part),
                    "reservationsLeft": len(reservations)}
            g = {}
            for k, v in want.items():
                if k == "notPreempted":
                    g[k] = [x for x in v if x not in full["preempted"]]
                elif k == "events":
                    g[k] = match_events(v, part.events)
                elif k == "preemptingResource":
                    pr = preempting()
                    g[k] = {p: pr[p] for p in v}
                else:
                    g[k] = full.get(k, f"<unsupported {k}>")
            got[name] = g
        elif step.startswith("release"):
            key = step.split()[1]
            a = part.allocs.pop(key)
            part.add_usage(a.queue, a.resources, -1)
            if a.preempted:
                part.add_preempting(a.queue, a.resources, -1)
            node = part.nodes[a.node]
            node.used = {k: node.used.get(k, 0) - a.resources.get(k, 0) for k in node.used}
            secs = (now - a.create_us) // 1_000_000
            for k, v in a.resources.items():
                preempted_seconds[k] = preempted_seconds.get(k, 0) + v * secs
            want = exp.get("afterRelease", {})
            pr = preempting()
            got["afterRelease"] = {"preemptingResource": {p: pr[p] for p in want.get("preemptingResource", {})}}
    if "preemptedResourceSecondsOnVictimApp" in exp:
        want = exp["preemptedResourceSecondsOnVictimApp"]
        got["preemptedResourceSecondsOnVictimApp"] = {
            k: (preempted_seconds.get(k, "absent") if v != "absent" else
                ("absent" if k not in preempted_seconds else preempted_seconds[k])) for k, v in want.items()}
    return got
