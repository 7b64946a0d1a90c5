"""Conformance loader for ``kueue-cycle`` cases: one whole Kueue scheduling cycle.

The case (schema in conformance/kueue-cycle/README.md) is mapped onto the quota tree the simulator
model uses; the ClusterQueue heaps, heads, namespace selectors, flavor taints and queueing
strategies are set up as Kueue's queue manager holds them; ``policies.kueue.cycle.run_cycle`` runs
the cycle (the same flavor assignment, target selection and head ordering as the model); then
every head that was not admitted is requeued to the active heap or the inadmissible list. Every
expected key the README documents is compared, except condition messages (informational there).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from makeway.conformance.kueue import _q, quota_specs  # the same quota schema as the preemption cases
from makeway.conformance.result import CaseResult
from makeway.policies.kueue.cycle import (BEST_EFFORT_FIFO, MISCONFIGURED, RQ_GENERIC, RQ_NAMESPACE_MISMATCH,
                                          RQ_NO_CANDIDATES, RQ_NO_FIT, CycleConfig, Head, final_requeue_reason,
                                          requeue_to_active, run_cycle, writes_status)
from makeway.policies.kueue.flavorassign import Fungibility, PodSetRequest
from makeway.policies.kueue.preemption import DEFAULT_STRATEGIES
from makeway.policies.kueue.selectors import selector_matches, untolerated
from makeway.policies.kueue.quota import FR, Admitted, Policy, QuotaTree

_GIB = 2**30
_HUMAN = {"InClusterQueue": "prioritization in the ClusterQueue",
          "InCohortReclamation": "reclamation within the cohort",
          "InCohortFairSharing": "Fair Sharing within the cohort",
          "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing"}

# Gates whose value changes nothing these inputs can express (no TAS flavor, no slices, no boost
# annotation, no preemption gates, no admission checks, no reclaimable pods, status write path).
_INERT_GATES = {"TopologyAwareScheduling", "TASRecomputeAssignmentWithinSchedulingCycle",
                "ElasticJobsViaWorkloadSlices", "ConcurrentAdmission", "MultiKueueOrchestratedPreemption",
                "AdmissionFairSharing", "ReclaimablePods", "WorkloadRequestUseMergePatch",
                "UnadmittedWorkloadsExplicitStatus", "QuotaCheckStrategy", "PriorityBoost",
                "PrioritizePreemptorWorkloads", "FlavorFungibility"}
_HANDLED_GATES = {"PartialAdmission", "RecomputeAssignmentUponPreemptionTargetsOverlap",
                  "FlavorFungibilityPreserveScanProgress", "PrioritySortingWithinCohort",
                  "SchedulingEquivalenceHashing", "UnadmittedWorkloadsObservability",
                  "FairSharingPreemptWithinNominal", "FairSharingPrioritizeNonBorrowing"}
_GATE_DEFAULTS = {"PartialAdmission": True, "FlavorFungibility": True, "FlavorFungibilityPreserveScanProgress": True,
                  "PrioritySortingWithinCohort": True, "PrioritizePreemptorWorkloads": False,
                  "RecomputeAssignmentUponPreemptionTargetsOverlap": True, "FairSharingPreemptWithinNominal": True,
                  "FairSharingPrioritizeNonBorrowing": True, "SchedulingEquivalenceHashing": True,
                  "UnadmittedWorkloadsObservability": True}


class Unsupported(ValueError):
    """A case input this loader cannot run faithfully; the case fails with this message."""


def _back(resource: str, value: int) -> float:
    if resource == "cpu":
        return value / 1000
    if resource == "memory":
        return value / _GIB
    return value


def _time(value: Any) -> float:
    if value is None:
        return float("-inf")
    dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - datetime(1, 1, 1, tzinfo=timezone.utc)).total_seconds()


def _policy(spec: Mapping[str, Any] | None) -> Policy:
    """As the cache sees it: an unset field is ``""``, which is not ``Never`` (see README)."""
    spec = spec or {}
    bwc = spec.get("borrowWithinCohort")
    within = spec.get("withinClusterQueue")
    reclaim = spec.get("reclaimWithinCohort")
    return Policy("Never" if within is None else str(within), "Never" if reclaim is None else str(reclaim),
                  "Never" if bwc is None else str(bwc.get("policy") if bwc.get("policy") is not None else ""),
                  None if bwc is None else bwc.get("maxPriorityThreshold"))


def _gates(config: Mapping[str, Any]) -> dict[str, bool]:
    gates = dict(_GATE_DEFAULTS)
    for k, v in (config.get("featureGates") or {}).items():
        if k not in _INERT_GATES and k not in _HANDLED_GATES:
            raise Unsupported(f"input.config.featureGates.{k}: gate unknown to this loader")
        gates[k] = bool(v)
    for k in ("FairSharingPreemptWithinNominal", "FairSharingPrioritizeNonBorrowing"):
        if not gates[k]:
            raise Unsupported(f"input.config.featureGates.{k}=false is not modelled")
    return gates


def _check_config(config: Mapping[str, Any]) -> None:
    for k in ("admissionFairSharing", "waitForPodsReady"):
        if config.get(k) is not None:
            raise Unsupported(f"input.config.{k}: only null is modelled")
    if int(config.get("cycles", 1) or 1) != 1:
        raise Unsupported("input.config.cycles: only one cycle is modelled")
    if config.get("quotaCheckStrategy", "BlockUndeclared") not in ("BlockUndeclared", "IgnoreUndeclared", None):
        raise Unsupported(f"input.config.quotaCheckStrategy: {config.get('quotaCheckStrategy')!r}")


def build(inp: Mapping[str, Any]):
    """The tree (with admitted workloads), ClusterQueue attributes and the pending heaps."""
    cohorts, cq_specs = quota_specs(inp, _policy)
    tree = QuotaTree(cohorts, cq_specs)
    for w in inp.get("workloads", []):
        adm = w.get("admission")
        if adm is None or adm["clusterQueue"] not in tree.cqs:
            continue
        usage: dict[FR, int] = {}
        for psa in adm.get("podSetAssignments", []):
            for res, v in (psa.get("resourceUsage") or {}).items():
                flv = psa["flavors"].get(res)
                if flv is None:
                    continue
                usage[(flv, res)] = usage.get((flv, res), 0) + _q(res, v)
        tree.add_workload(Admitted(_key(w), adm["clusterQueue"], int(w.get("priority", 0)), usage,
                                   _time(w.get("quotaReservedAt") or inp.get("now")), _time(w.get("createdAt")),
                                   str(w.get("uid") or "")))
    return tree


def _key(w: Mapping[str, Any]) -> str:
    return f"{w['namespace']}/{w['name']}"


def _heap_key(w: Mapping[str, Any]) -> tuple:
    return (-int(w.get("priority", 0)), _time(w.get("createdAt")), str(w.get("uid") or ""))


def _hash(w: Mapping[str, Any]) -> tuple:
    """The scheduling equivalence hash: priority and the pod sets' shape."""
    return (int(w.get("priority", 0)),
            tuple((ps["name"], ps.get("count", 1), ps.get("minCount"),
                   tuple(sorted((ps.get("requests") or {}).items())),
                   tuple(sorted((ps.get("limits") or {}).items())), repr(ps.get("tolerations")))
                  for ps in w.get("podSets", [])))


def _head(w: Mapping[str, Any], cq: Mapping[str, Any], cq_resources: set[str], flavors: Mapping[str, Any],
          namespaces: Mapping[str, Mapping[str, str]], ignore_undeclared: bool) -> Head:
    pod_sets = []
    rejected = None
    for ps in w.get("podSets", []):
        requests = ps.get("requests") or {}
        limits = ps.get("limits") or {}
        over = sorted(r for r, v in requests.items() if r in limits and v > limits[r])
        if over and rejected is None:
            rejected = (MISCONFIGURED, RQ_GENERIC,
                        f"resource validation failed: requests exceed limits for {', '.join(over)} "
                        f"in pod set {ps['name']}")
        per_pod = {r: _q(r, v) for r, v in requests.items()}
        if ignore_undeclared:
            per_pod = {r: v for r, v in per_pod.items() if r in cq_resources}
        excluded = {}
        for name, f in flavors.items():
            t = untolerated(f.get("taints") or [], list(ps.get("tolerations") or []) + list(f.get("tolerations") or []))
            if t is not None:
                taint = f"{t.get('key')} {t.get('value')} {t.get('effect')}"
                excluded[name] = f"untolerated taint {{{taint}}} in flavor {name}"
        count = int(ps.get("count", 1))
        mc = ps.get("minCount")
        pod_sets.append(PodSetRequest(ps["name"], count, per_pod, None if mc is None else int(mc), excluded))
    labels = namespaces.get(w["namespace"], {})
    if not selector_matches(cq.get("namespaceSelector"), labels):
        rejected = (MISCONFIGURED, RQ_NAMESPACE_MISMATCH,
                    f"workload namespace {w['namespace']} does not match the ClusterQueue's namespaceSelector")
    return Head(_key(w), cq["name"], int(w.get("priority", 0)), _time(w.get("createdAt")), str(w.get("uid") or ""),
                pod_sets, rejected)


def _path(tree: QuotaTree, cq: str) -> str:
    node = tree.cqs[cq]
    parts = []
    cur = node
    while cur is not None:
        parts.append(cur.name)
        cur = cur.parent
    return "/" + "/".join(reversed(parts))


def simulate(case: Mapping[str, Any]) -> dict[str, Any]:
    """Run the case's cycle; returns every key of ``expected`` the README documents."""
    inp = case["input"]
    config = inp.get("config") or {}
    _check_config(config)
    gates = _gates(config)
    fs = config.get("fairSharing")
    fair = fs is not None
    strategies = tuple((fs or {}).get("preemptionStrategies") or DEFAULT_STRATEGIES) if fair else DEFAULT_STRATEGIES
    tree = build(inp)
    cqs = {q["name"]: q for q in inp.get("clusterQueues", [])}
    flavors = {f["name"]: f for f in inp.get("resourceFlavors", [])}
    namespaces = {n["name"]: dict(n.get("labels") or {}) for n in inp.get("namespaces", [])}
    lqs = {(lq["namespace"], lq["name"]): lq["clusterQueue"] for lq in inp.get("localQueues", [])}
    active = {name for name, q in cqs.items()
              if all(f["name"] in flavors for g in q.get("resourceGroups") or [] for f in g.get("flavors", []))}
    heaps: dict[str, list[dict]] = {}
    by_key = {}
    for w in inp.get("workloads", []):
        by_key[_key(w)] = w
        if w.get("admission") is not None:
            continue
        cq = lqs.get((w["namespace"], w.get("queueName") or ""))
        if cq is None or cq not in cqs:
            continue
        heaps.setdefault(cq, []).append(w)
    for h in heaps.values():
        h.sort(key=_heap_key)
    ignore = config.get("quotaCheckStrategy") == "IgnoreUndeclared"
    heads = []
    for name in sorted(heaps):
        if name not in active or not heaps[name]:
            continue
        w = heaps[name].pop(0)
        covered = {r for g in cqs[name].get("resourceGroups") or [] for r in g.get("coveredResources", [])}
        heads.append(_head(w, cqs[name], covered, flavors, namespaces, ignore))
    cfg = CycleConfig(fair, strategies, gates["PartialAdmission"],
                      gates["RecomputeAssignmentUponPreemptionTargetsOverlap"],
                      gates["FlavorFungibilityPreserveScanProgress"],
                      {n: Fungibility.of(q.get("flavorFungibility")) for n, q in cqs.items()},
                      frozenset(flavors), gates["PrioritySortingWithinCohort"])
    res = run_cycle(tree, heads, cfg)

    pending = {n: [_key(w) for w in h] for n, h in heaps.items()}
    inadmissible: dict[str, list[str]] = {}
    workloads: dict[str, dict[str, Any]] = {k: {"outcome": "unchanged"} for k in by_key}
    observability = gates["UnadmittedWorkloadsObservability"]
    for e in res.entries:
        key, cq = e.head.key, e.head.cq
        if key in res.admitted:
            workloads[key] = {"outcome": "admitted", "admittedCondition": True}
            continue
        strategy = cqs[cq].get("queueingStrategy") or BEST_EFFORT_FIFO
        if requeue_to_active(e, strategy):
            pending.setdefault(cq, []).append(key)
        else:
            inadmissible.setdefault(cq, []).append(key)
            reason = final_requeue_reason(e)
            if (gates["SchedulingEquivalenceHashing"] and strategy == BEST_EFFORT_FIFO
                    and reason in (RQ_NO_FIT, RQ_NO_CANDIDATES)):
                same = _hash(by_key[key])
                moved = [k for k in pending.get(cq, []) if k != key and _hash(by_key[k]) == same]
                pending[cq] = [k for k in pending.get(cq, []) if k not in moved]
                inadmissible[cq].extend(moved)
        if writes_status(e):
            reason = e.quota_reason or "Pending"
            if not observability:
                reason = "Waiting" if reason == "WaitingForPodsReady" else "Pending"
            workloads[key] = {"outcome": "pending", "quotaReservedReason": reason, "message": e.message}
    assignments: dict[str, Any] = {}
    for w in inp.get("workloads", []):
        if w.get("admission") is not None and w["admission"]["clusterQueue"] in tree.cqs:
            assignments[_key(w)] = w["admission"]
    for key, a in res.admitted.items():
        assignments[key] = {"clusterQueue": by_key_cq(res, key), "podSetAssignments": [
            {"name": ps.name, "count": ps.count, "flavors": dict(sorted(ps.flavors.items())),
             "resourceUsage": {r: _back(r, ps.requests.get(r, 0)) for r in sorted(ps.flavors)}}
            for ps in a.pod_sets]}
    preempted = {}
    for victim, (t, e) in res.preempted.items():
        pw = by_key.get(e.head.key, {})
        pjob = (pw.get("labels") or {}).get("kueue.x-k8s.io/job-uid")
        msg = (f"Preempted to accommodate a workload (UID: {e.head.uid or 'UNKNOWN'}, JobUID: {pjob or 'UNKNOWN'}) "
               f"due to {_HUMAN.get(t.reason, 'UNKNOWN')}; preemptor path: {_path(tree, e.head.cq)}; "
               f"preemptee path: {_path(tree, t.workload.cq)}")
        workloads[victim] = {"outcome": "preempted", "evictedReason": "Preempted", "preemptionReason": t.reason,
                             "message": msg}
        preempted[victim] = t.reason
    return {
        "assignments": assignments,
        "admitted": sorted(res.admitted),
        "preempted": preempted,
        "pending": {k: sorted(v) for k, v in sorted(pending.items()) if v},
        "inadmissible": {k: sorted(v) for k, v in sorted(inadmissible.items()) if v},
        "workloads": workloads,
        "skippedPreemptions": dict(res.skipped_preemptions),
        "preemptionTargetRecomputations": {k: dict(v) for k, v in res.recomputations.items()},
    }


def by_key_cq(res, key: str) -> str:
    for e in res.entries:
        if e.head.key == key:
            return e.head.cq
    raise KeyError(key)


def _strip_messages(workloads: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: {f: v for f, v in w.items() if f != "message"} for k, w in workloads.items()}


def _norm_assignments(assignments: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, a in assignments.items():
        out[k] = {"clusterQueue": a["clusterQueue"], "podSetAssignments": sorted(
            ({"name": p["name"], "count": p.get("count", 1), "flavors": dict(p.get("flavors") or {}),
              "resourceUsage": {r: float(v) for r, v in (p.get("resourceUsage") or {}).items()}}
             for p in a.get("podSetAssignments", [])), key=lambda p: p["name"])}
    return out


def compare(expected: Mapping[str, Any], got: Mapping[str, Any]) -> tuple[dict, dict]:
    """The parts of ``got`` the case asserts, next to ``expected`` in the same shape."""
    want: dict[str, Any] = {}
    have: dict[str, Any] = {}
    for k in ("admitted", "preempted", "pending", "inadmissible"):
        if k in expected:
            want[k], have[k] = expected[k], got[k]
    if "assignments" in expected:
        want["assignments"] = _norm_assignments(expected["assignments"])
        have["assignments"] = _norm_assignments(got["assignments"])
    if "workloads" in expected:
        want["workloads"] = _strip_messages(expected["workloads"])
        have["workloads"] = _strip_messages({k: got["workloads"].get(k, {"outcome": "absent"})
                                             for k in expected["workloads"]})
    if "skippedPreemptions" in expected:
        want["skippedPreemptions"] = dict(expected["skippedPreemptions"])
        have["skippedPreemptions"] = {cq: got["skippedPreemptions"].get(cq, 0) for cq in expected["skippedPreemptions"]}
    if "preemptionTargetRecomputations" in expected:
        exp = expected["preemptionTargetRecomputations"]
        want["preemptionTargetRecomputations"] = {cq: dict(v) for cq, v in exp.items()}
        have["preemptionTargetRecomputations"] = {
            cq: {r: got["preemptionTargetRecomputations"].get(cq, {}).get(r, 0) for r in v} for cq, v in exp.items()}
    return want, have


def run_case(case: dict) -> CaseResult:
    try:
        got = simulate(case)
    except Unsupported as exc:
        return CaseResult(False, case.get("expected"), None, f"unsupported input: {exc}")
    want, have = compare(case.get("expected") or {}, got)
    if want == have:
        return CaseResult(True, want, have)
    diff_w = {k: v for k, v in want.items() if have.get(k) != v}
    diff_h = {k: have.get(k) for k in diff_w}
    return CaseResult(False, diff_w, diff_h)
