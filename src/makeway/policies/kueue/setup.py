"""From makeway's queue tree to Kueue's quota tree.

Leaf queues are ClusterQueues and inner queues are Cohorts. Per-flavor quota comes from
``settings.resourceGroups`` (Kueue's own shape, k8s quantities); without it the common fields are
a shorthand for one flavor (``defaultFlavor``, default ``default``): ``guaranteed`` is the
nominal quota, ``borrowing_limit``/``lending_limit`` the limits, and ``max`` (if no borrowing limit)
gives ``borrowingLimit = max - guaranteed``. ``settings.kind`` (ClusterQueue/Cohort) overrides
the leaf/inner rule, for a cohort without members. ``settings.preemption`` is Kueue's ClusterQueue
``spec.preemption``; ``weight`` is ``fairSharing.weight``.
"""

from __future__ import annotations

from typing import Any, Mapping

from makeway.core.objects import Queue
from makeway.core.resources import parse_quantity
from makeway.policies.kueue.quota import FR, CohortSpec, CQSpec, FlavorQuota, Policy, units

Groups = list[tuple[tuple[str, ...], tuple[str, ...]]]


def _num(resource: str, value: Any) -> int:
    return units(resource, parse_quantity(value))


def parse_resource_groups(spec: Any) -> tuple[dict[FR, FlavorQuota], Groups]:
    quotas: dict[FR, FlavorQuota] = {}
    groups: Groups = []
    for g in spec or []:
        flavors: list[str] = []
        covered = tuple(str(r) for r in g.get("coveredResources", []))
        for f in g.get("flavors", []) or []:
            name = str(f["name"])
            flavors.append(name)
            for r in f.get("resources", []) or []:
                res = str(r["name"])
                bl, ll = r.get("borrowingLimit"), r.get("lendingLimit")
                quotas[(name, res)] = FlavorQuota(_num(res, r.get("nominalQuota", 0)),
                                                  None if bl is None else _num(res, bl),
                                                  None if ll is None else _num(res, ll))
        if not covered:
            covered = tuple(sorted({res for (flv, res) in quotas if flv in flavors}))
        groups.append((covered, tuple(flavors)))
    return quotas, groups


def parse_policy(spec: Mapping[str, Any] | None) -> Policy:
    spec = spec or {}
    bwc = spec.get("borrowWithinCohort") or {}
    thr = bwc.get("maxPriorityThreshold")
    return Policy(str(spec.get("withinClusterQueue") or "Never"), str(spec.get("reclaimWithinCohort") or "Never"),
                  str(bwc.get("policy") or "Never"), None if thr is None else int(thr))


def _shorthand(q: Queue, resources: set[str], flavor: str, is_cq: bool) -> tuple[dict[FR, FlavorQuota], Groups]:
    names = set(q.guaranteed or {}) | set(q.max or {}) | set(q.borrowing_limit or {}) | set(q.lending_limit or {})
    if is_cq:
        names |= set(resources)
    if not names:
        return {}, []
    quotas: dict[FR, FlavorQuota] = {}
    for res in sorted(names):
        nominal = (q.guaranteed or {}).get(res, 0)
        bl = (q.borrowing_limit or {}).get(res)
        if bl is None and q.max is not None and res in q.max:
            bl = max(0, q.max[res] - nominal)
        ll = (q.lending_limit or {}).get(res)
        quotas[(flavor, res)] = FlavorQuota(units(res, nominal), None if bl is None else units(res, bl),
                                            None if ll is None else units(res, ll))
    return quotas, [(tuple(sorted(names)), (flavor,))]


def specs_from_queues(queues: Mapping[str, Queue], resources: tuple[str, ...],
                      default_flavor: str = "default",
                      default_preemption: Mapping[str, Any] | None = None) -> tuple[list[CohortSpec], list[CQSpec]]:
    cohorts: list[CohortSpec] = []
    cqs: list[CQSpec] = []
    mentioned: set[str] = set()  # resources with a quota somewhere: the shorthand's covered resources
    capped: dict[str, Mapping[str, Any]] = {}  # shorthand cohorts whose borrowing limit comes from max
    for q in queues.values():
        for fld in (q.guaranteed, q.max, q.borrowing_limit, q.lending_limit):
            mentioned |= set(fld or {})
    for name in sorted(queues):
        q = queues[name]
        settings = q.settings or {}
        kind = settings.get("kind")
        is_cq = (kind == "ClusterQueue") if kind in ("ClusterQueue", "Cohort") else not q.children
        if settings.get("resourceGroups") is not None:
            quotas, groups = parse_resource_groups(settings["resourceGroups"])
        else:
            quotas, groups = _shorthand(q, mentioned, default_flavor, is_cq)
        if not is_cq and settings.get("resourceGroups") is None and q.max and not q.borrowing_limit:
            capped[name] = q.max
        if is_cq:
            cqs.append(CQSpec(name, q.parent, float(q.weight), quotas, groups, parse_policy(settings.get("preemption", default_preemption))))
        else:
            cohorts.append(CohortSpec(name, q.parent, float(q.weight), quotas, groups))
    if capped:
        _cap_cohorts(queues, cohorts, cqs, capped)
    return cohorts, cqs


def _cap_cohorts(queues: Mapping[str, Queue], cohorts: list[CohortSpec], cqs: list[CQSpec],
                 capped: Mapping[str, Mapping[str, Any]]) -> None:
    """A cohort's ``max`` caps its whole subtree's usage, as ``max`` does in every model.

    The subtree may use its own nominal quota (every member's) plus the borrowing limit, so the
    limit is ``max`` minus the subtree's nominal quota, not minus the cohort's own (which let the
    subtree run above ``max`` by its members' quota). A ``max`` below the subtree's nominal quota
    cannot be expressed in Kueue's quota tree (members may always use their nominal quota); the
    borrowing limit is then 0. A root cohort has no borrowing limit in Kueue: its usage is capped
    by its subtree's quota alone.
    """
    own: dict[str, dict] = {spec.name: spec.quotas for spec in list(cohorts) + list(cqs)}
    subtree: dict[str, dict] = {name: {} for name in own}
    for name, quotas in own.items():
        cur: str | None = name
        while cur is not None:
            if cur in subtree:
                acc = subtree[cur]
                for fr, fq in quotas.items():
                    acc[fr] = acc.get(fr, 0) + fq.nominal
            cur = queues[cur].parent if cur in queues else None
    for spec in cohorts:
        limit = capped.get(spec.name)
        if limit is None:
            continue
        for fr, fq in list(spec.quotas.items()):
            if fr[1] in limit:
                bl = max(0, units(fr[1], limit[fr[1]]) - subtree[spec.name].get(fr, 0))
                spec.quotas[fr] = FlavorQuota(fq.nominal, bl, fq.lending_limit)
