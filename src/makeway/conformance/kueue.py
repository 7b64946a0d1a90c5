"""Conformance loader for ``kueue-classic`` and ``kueue-fair-sharing`` cases.

Maps a case (schema in conformance/kueue/README.md) onto the same quota tree and target selection
the simulator model uses (``makeway.policies.kueue``), then compares the target set, the reasons
the case asserts, the fit flag and, for ``drs-`` cases, the share table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from makeway.conformance.result import CaseResult
from makeway.policies.kueue.drs import dominant_resource_share
from makeway.policies.kueue.preemption import DEFAULT_STRATEGIES, Preemptor, get_targets
from makeway.policies.kueue.quota import (FR, Admitted, CohortSpec, CQSpec, FlavorQuota, Policy, QuotaTree,
                                          units)

_GIB = 2**30


def _q(resource: str, value: float) -> int:
    """Case units (cpu cores, memory GiB, others units) to Kueue's integer units."""
    if resource == "memory":
        return units(resource, value * _GIB)
    return units(resource, value)


def _time(value: Any) -> float:
    if value is None:
        return float("-inf")
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _groups(spec: list[dict]) -> tuple[dict[FR, FlavorQuota], list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    quotas: dict[FR, FlavorQuota] = {}
    groups = []
    for g in spec or []:
        flavors = []
        for f in g.get("flavors", []):
            flavors.append(f["name"])
            for r in f.get("resources", []):
                res = r["name"]
                bl, ll = r.get("borrowingLimit"), r.get("lendingLimit")
                quotas[(f["name"], res)] = FlavorQuota(
                    _q(res, r.get("nominalQuota", 0)),
                    None if bl is None else _q(res, bl),
                    None if ll is None else _q(res, ll))
        groups.append((tuple(g.get("coveredResources", [])), tuple(flavors)))
    return quotas, groups


def _policy(spec: dict | None) -> Policy:
    spec = spec or {}
    bwc = spec.get("borrowWithinCohort") or {}
    return Policy(spec.get("withinClusterQueue") or "Never", spec.get("reclaimWithinCohort") or "Never",
                  bwc.get("policy") or "Never", bwc.get("maxPriorityThreshold"))


def quota_specs(inp: dict, policy=None) -> tuple[list[CohortSpec], list[CQSpec]]:
    """Cohort and ClusterQueue specs of a case's ``cohorts`` and ``clusterQueues`` (cohorts marked
    ``implicit`` exist only by being named, so they get no spec); ``policy`` reads a queue's
    ``preemption`` block (the whole-cycle cases read unset fields as Kueue's cache does)."""
    policy = policy or _policy
    cohorts = []
    for c in inp.get("cohorts", []):
        if c.get("implicit"):
            continue
        quotas, groups = _groups(c.get("resourceGroups"))
        cohorts.append(CohortSpec(c["name"], c.get("parent"), float(c.get("fairSharingWeight", 1)), quotas, groups))
    cqs = []
    for q in inp.get("clusterQueues", []):
        quotas, groups = _groups(q.get("resourceGroups"))
        cqs.append(CQSpec(q["name"], q.get("cohort"), float(q.get("fairSharingWeight", 1)), quotas, groups,
                          policy(q.get("preemption"))))
    return cohorts, cqs


def build_tree(inp: dict) -> QuotaTree:
    tree = QuotaTree(*quota_specs(inp))
    for w in inp.get("admittedWorkloads", []):
        usage = {(flv, res): _q(res, v) for flv, rs in w["usage"].items() for res, v in rs.items()}
        tree.add_workload(Admitted(w["name"], w["clusterQueue"], int(w.get("priority", 0)), usage,
                                   _time(w.get("admittedAt") or inp.get("now")), _time(w.get("createdAt")),
                                   str(w.get("uid") or ""), bool(w.get("evicted", False))))
    return tree


def build_preemptor(spec: dict) -> Preemptor:
    pod_sets = spec.get("podSets") or [{"count": spec.get("count", 1), "requests": spec.get("requests", {}),
                                         "assignedFlavors": spec.get("assignedFlavors", {})}]
    requests: dict[FR, int] = {}
    need: set[FR] = set()
    for ps in pod_sets:
        count = ps.get("count", 1)
        for res, a in ps.get("assignedFlavors", {}).items():
            fr = (a["flavor"], res)
            if a.get("mode") == "Preempt":
                need.add(fr)
            v = _q(res, ps.get("requests", {}).get(res, 0) * count)
            if v:
                requests[fr] = requests.get(fr, 0) + v
    return Preemptor(spec["name"], spec["clusterQueue"], int(spec.get("priority", 0)), requests, frozenset(need),
                     _time(spec.get("createdAt")), str(spec.get("uid") or ""))


def _fair_config(inp: dict) -> tuple[bool, tuple[str, ...]]:
    fs = (inp.get("config") or {}).get("fairSharing")
    if fs is None:
        return False, DEFAULT_STRATEGIES
    return True, tuple(fs.get("preemptionStrategies") or DEFAULT_STRATEGIES)


def _run_shares(case: dict, tree: QuotaTree) -> CaseResult:
    inp = case["input"]
    probe = (inp.get("shareProbe") or {}).get("addedUsage") or {}
    extra = {(flv, res): _q(res, v) for flv, rs in probe.items() for res, v in rs.items()}
    expected = case["expected"]["shares"]
    got = {}
    for name, exp in expected.items():
        node = tree.cqs.get(name) if exp.get("kind") == "ClusterQueue" else tree.cohorts.get(name)
        if node is None:
            got[name] = None
            continue
        own_extra = {fr: v for fr, v in extra.items() if fr in node.subtree}
        s = dominant_resource_share(node, own_extra)
        got[name] = {"kind": exp.get("kind"), "weightedShare": s.rounded,
                     "dominantResource": s.resource if s.borrowing else "", "borrowing": s.borrowing}
    return CaseResult(got == expected, expected, got)


def run_case(case: dict) -> CaseResult:
    inp = case["input"]
    tree = build_tree(inp)
    if inp.get("preemptor") is None:
        return _run_shares(case, tree)
    fair, strategies = _fair_config(inp)
    targets = get_targets(tree, build_preemptor(inp["preemptor"]), fair, strategies)
    exp = case["expected"]
    names = sorted(t.workload.name for t in targets)
    reasons = {t.workload.name: t.reason for t in targets}
    full: dict[str, Any] = {"targets": names, "fits": bool(targets), "preemptedCount": len(targets),
                            "reasons": {k: reasons.get(k) for k in exp.get("reasons", {})}}
    want: dict[str, Any] = {k: sorted(v) if k == "targets" and isinstance(v, list) else v
                            for k, v in exp.items() if k != "note"}
    got = {k: full.get(k, f"<unsupported {k}>") for k in want}
    if got != want:
        got["allReasons"] = reasons
    return CaseResult(all(got.get(k) == v for k, v in want.items()), want, got)
