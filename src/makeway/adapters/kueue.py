"""Import Kueue manifests (kueue.x-k8s.io v1beta1/v1beta2) into a makeway config.

Kinds read: ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass and the Kueue
``Configuration`` (``config.kueue.x-k8s.io``, also when embedded in a ConfigMap), of which only the
``fairSharing`` block matters. Cohorts become inner queues and ClusterQueues leaf queues; Kueue's
per-flavor quota and preemption policy are kept verbatim in ``settings`` (``resourceGroups``,
``preemption``, ``flavorFungibility``), which is what the kueue model reads. Manifests say nothing
about nodes, so one node group per flavor is synthesised, sized to the flavor's total nominal quota
(labelled ``flavor: <name>``), and a warning says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


from makeway.adapters.detect import check_kind
from makeway.config import parse_yaml, parse_yaml_all, read_text
from makeway.core.resources import QuantityError, format_quantity, parse_quantity
from makeway.errors import ConfigError

_GROUPS = ("kueue.x-k8s.io/",)
_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass")
PLACEHOLDER_NODE = {"name": "node", "count": 1, "capacity": {"cpu": 8, "memory": "32Gi"},
                    "labels": {"flavor": "default"}}


class _Doc:
    __slots__ = ("file", "kind", "name", "body")

    def __init__(self, file: str, kind: str, name: str, body: dict):
        self.file, self.kind, self.name, self.body = file, kind, name, body

    def where(self, field: str = "") -> str:
        return f"{self.file}: {self.kind}/{self.name}" + (f": {field}" if field else "")


def _mapping(value: Any, where: str) -> dict:
    """``value`` when it is a mapping, ``{}`` when absent; anything else is the manifest's error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: must be a list, got {type(value).__name__}")
    return value


def _load(paths: list[Path], warnings: list[str]) -> list[_Doc]:
    docs: list[_Doc] = []
    for path in paths:
        items = parse_yaml_all(read_text(path), str(path))
        for i, item in enumerate(items):
            if item is None:
                continue
            if not isinstance(item, dict):
                raise ConfigError(f"{path}: document {i + 1}: not a mapping")
            docs.extend(_classify(str(path), item, warnings))
    return docs


def _classify(file: str, item: dict, warnings: list[str]) -> list[_Doc]:
    kind = str(item.get("kind", ""))
    api = str(item.get("apiVersion", ""))
    name = str(_mapping(item.get("metadata"), f"{file}: {kind or '?'}: metadata").get("name", ""))
    if kind == "Configuration" and api.startswith("config.kueue.x-k8s.io/"):
        return [_Doc(file, kind, name or "config", item)]
    if kind == "ConfigMap":
        out: list[_Doc] = []
        for key, text in _mapping(item.get("data"), f"{file}: ConfigMap/{name}: data").items():
            try:
                inner = parse_yaml(text, f"{file}: ConfigMap/{name}: data.{key}") if isinstance(text, str) else None
            except ConfigError:
                inner = None
            if isinstance(inner, dict) and inner.get("kind") == "Configuration":
                out.append(_Doc(file, "Configuration", f"{name}[{key}]", inner))
        if not out:
            warnings.append(f"{file}: ConfigMap/{name}: no Kueue Configuration inside, skipped")
        return out
    if kind in _KINDS and api.startswith(_GROUPS):
        if not name:
            raise ConfigError(f"{file}: {kind}: metadata.name: missing")
        return [_Doc(file, kind, name, item)]
    warnings.append(f"{file}: {kind or '?'}/{name or '?'} ({api or 'no apiVersion'}): not a Kueue object we import, skipped")
    return []


def _quantity(doc: _Doc, field: str, value: Any) -> Any:
    """Check a quantity (error names the field), keep it in Kubernetes form for the config."""
    try:
        parse_quantity(value, allow_negative=True)
        n = parse_quantity(value)
    except QuantityError as exc:
        msg = str(exc)
        if "negative" in msg:
            raise ConfigError(doc.where(f"{field}: negative quantity {value!r}")) from None
        raise ConfigError(doc.where(f"{field}: {msg}")) from None
    return value if isinstance(value, str) else n


def _resource_groups(doc: _Doc, spec: dict) -> list[dict]:
    out = []
    for gi, g in enumerate(_list(spec.get("resourceGroups"), doc.where("spec.resourceGroups"))):
        g = _mapping(g, doc.where(f"spec.resourceGroups[{gi}]"))
        flavors = []
        for fi, f in enumerate(_list(g.get("flavors"), doc.where(f"spec.resourceGroups[{gi}].flavors"))):
            f = _mapping(f, doc.where(f"spec.resourceGroups[{gi}].flavors[{fi}]"))
            resources = []
            for ri, r in enumerate(_list(f.get("resources"), doc.where(f"spec.resourceGroups[{gi}].flavors[{fi}].resources"))):
                base = f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]"
                r = _mapping(r, doc.where(base))
                if "name" not in r:
                    raise ConfigError(doc.where(f"{base}.name: missing"))
                entry: dict[str, Any] = {"name": str(r["name"]),
                                         "nominalQuota": _quantity(doc, f"{base}.nominalQuota", r.get("nominalQuota", 0))}
                for lim in ("borrowingLimit", "lendingLimit"):
                    if r.get(lim) is not None:
                        entry[lim] = _quantity(doc, f"{base}.{lim}", r[lim])
                resources.append(entry)
            if "name" not in f:
                raise ConfigError(doc.where(f"spec.resourceGroups[{gi}].flavors[{fi}].name: missing"))
            flavors.append({"name": str(f["name"]), "resources": resources})
        covered = _list(g.get("coveredResources"), doc.where(f"spec.resourceGroups[{gi}].coveredResources"))
        out.append({"coveredResources": [str(r) for r in covered], "flavors": flavors})
    return out


def _weight(doc: _Doc, spec: dict) -> float | None:
    fs = _mapping(spec.get("fairSharing"), doc.where("spec.fairSharing"))
    if fs.get("weight") is None:
        return None
    w = fs["weight"]
    return float(parse_quantity(_quantity(doc, "spec.fairSharing.weight", w)))


def _fair_sharing(doc: _Doc) -> dict | None:
    fs = doc.body.get("fairSharing")
    if fs is None:
        return None
    if not isinstance(fs, dict):
        raise ConfigError(doc.where("fairSharing: must be a mapping"))
    if fs.get("enable") is False:  # v1beta1
        return None
    out: dict[str, Any] = {}
    strategies = fs.get("preemptionStrategies")
    if strategies:
        allowed = [["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
                   ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]]
        if not isinstance(strategies, list) or strategies not in allowed:
            raise ConfigError(doc.where(f"fairSharing.preemptionStrategies: {strategies!r} is not an allowed list"))
        out["preemptionStrategies"] = list(strategies)
    return out


def import_files(paths: list[Path]) -> tuple[dict, list[str]]:
    warnings: list[str] = []
    for p in paths:
        check_kind("kueue", Path(p))
    docs = _load([Path(p) for p in paths], warnings)
    if not docs:
        skipped = f" ({len(warnings)} other documents skipped)" if warnings else ""
        raise ConfigError(f"{', '.join(map(str, paths))}: no Kueue object found (ClusterQueue, Cohort, "
                          f"ResourceFlavor, LocalQueue, WorkloadPriorityClass, Configuration){skipped}")
    flavors: dict[str, dict] = {}
    cohorts: dict[str, _Doc] = {}
    cqs: dict[str, _Doc] = {}
    local_queues: dict[str, list[str]] = {}
    priority_classes: dict[str, int] = {}
    fair: dict | None = None
    fair_seen = False
    for d in docs:
        spec = _mapping(d.body.get("spec"), d.where("spec"))
        if d.kind == "ResourceFlavor":
            flavors[d.name] = spec
        elif d.kind == "Cohort":
            if d.name in cohorts:
                warnings.append(f"{d.where()}: defined again; the later manifest replaces {cohorts[d.name].file}")
            cohorts[d.name] = d
        elif d.kind == "ClusterQueue":
            if d.name in cqs:
                warnings.append(f"{d.where()}: defined again; the later manifest replaces {cqs[d.name].file}")
            cqs[d.name] = d
        elif d.kind == "LocalQueue":
            ns = (d.body.get("metadata") or {}).get("namespace", "default")
            cq = spec.get("clusterQueue")
            if not cq:
                raise ConfigError(d.where("spec.clusterQueue: missing"))
            local_queues.setdefault(str(cq), []).append(f"{ns}/{d.name}")
        elif d.kind == "WorkloadPriorityClass":
            value = d.body.get("value", 0)
            try:
                if isinstance(value, float) and not value.is_integer():  # 1.5, .inf, .nan
                    raise ValueError(value)
                priority_classes[d.name] = int(value)
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(d.where(f"value: {value!r} is not an integer")) from None
        elif d.kind == "Configuration":
            fs = _fair_sharing(d)
            if fair_seen and fs != fair:
                warnings.append(f"{d.where()}: a second Configuration; its fairSharing block wins")
            fair, fair_seen = fs, True

    queues: dict[str, dict] = {}
    parents: dict[str, str | None] = {}
    cohort_key = {n: (n if n not in cqs else f"cohort-{n}") for n in cohorts}

    def cohort_queue(name: str, referrer: _Doc) -> str:
        if name not in cohort_key:
            cohort_key[name] = name if name not in cqs else f"cohort-{name}"
            warnings.append(f"{referrer.where()}: Cohort/{name} is referenced but not defined; created without quota")
            queues[cohort_key[name]] = {"settings": {"kind": "Cohort"}}
            parents[cohort_key[name]] = None
        return cohort_key[name]

    for name in sorted(cohorts):
        d = cohorts[name]
        spec = _mapping(d.body.get("spec"), d.where("spec"))
        q: dict[str, Any] = {"settings": {"kind": "Cohort"}}
        groups = _resource_groups(d, spec)
        if groups:
            q["settings"]["resourceGroups"] = groups
        w = _weight(d, spec)
        if w is not None:
            q["weight"] = w
        if name != cohort_key[name]:
            warnings.append(f"{d.where()}: a ClusterQueue has the same name; the cohort is queue {cohort_key[name]!r}")
        queues[cohort_key[name]] = q
        parents[cohort_key[name]] = None
    for name in sorted(cohorts):
        d = cohorts[name]
        spec = _mapping(d.body.get("spec"), d.where("spec"))
        parent = spec.get("parentName", spec.get("parent"))
        if parent:
            parents[cohort_key[name]] = cohort_queue(str(parent), d)
    for name in sorted(cohorts):  # cycles disable the whole tree in Kueue; we refuse the input
        seen, cur = [name], parents.get(cohort_key[name])
        while cur is not None:
            if cur == cohort_key[name] or cur in seen:
                raise ConfigError(cohorts[name].where(f"spec.parentName: cohort cycle {' -> '.join(seen + [cur])}"))
            seen.append(cur)
            cur = parents.get(cur)

    for name in sorted(cqs):
        d = cqs[name]
        spec = _mapping(d.body.get("spec"), d.where("spec"))
        settings: dict[str, Any] = {"kind": "ClusterQueue", "resourceGroups": _resource_groups(d, spec)}
        if spec.get("preemption"):
            settings["preemption"] = spec["preemption"]
        if spec.get("flavorFungibility"):
            settings["flavorFungibility"] = spec["flavorFungibility"]
        strategy = spec.get("queueingStrategy")
        if strategy is not None:
            if strategy not in ("BestEffortFIFO", "StrictFIFO"):
                raise ConfigError(d.where(f"spec.queueingStrategy: {strategy!r} is not BestEffortFIFO or StrictFIFO"))
            settings["queueingStrategy"] = strategy
        if spec.get("namespaceSelector") is not None:
            settings["namespaceSelector"] = _mapping(spec["namespaceSelector"], d.where("spec.namespaceSelector"))
        if name in local_queues:
            settings["localQueues"] = sorted(local_queues[name])
        q = {"settings": settings}
        w = _weight(d, spec)
        if w is not None:
            q["weight"] = w
        cohort = spec.get("cohortName", spec.get("cohort"))
        queues[name] = q
        parents[name] = cohort_queue(str(cohort), d) if cohort else None
        for fl in settings["resourceGroups"]:
            for f in fl["flavors"]:
                if f["name"] not in flavors:
                    warnings.append(f"{d.where()}: ResourceFlavor/{f['name']} is not defined in the input")
                    flavors[f["name"]] = {}
    for cq, lqs in local_queues.items():
        if cq not in cqs:
            warnings.append(f"LocalQueue(s) {', '.join(lqs)} point to unknown ClusterQueue/{cq}; ignored")

    # order: parents before children, names sorted within
    ordered: dict[str, dict] = {}
    for name in sorted(queues, key=lambda n: (_depth(n, parents), n)):
        q = queues[name]
        if parents.get(name):
            q = {"parent": parents[name], **q}
        ordered[name] = q

    resources, nodes = _nodes(ordered, flavors, warnings)
    if not ordered:
        ordered = {"default": {"settings": {"kind": "ClusterQueue", "resourceGroups": [
            {"coveredResources": list(resources), "flavors": [{"name": "default", "resources": [
                {"name": r, "nominalQuota": PLACEHOLDER_NODE["capacity"][r]} for r in resources]}]}]}}}
        warnings.append("no ClusterQueue in the input: added ClusterQueue 'default' sized like the placeholder node")
    settings: dict[str, Any] = {"fairSharing": fair}
    if priority_classes:
        settings["priorityClasses"] = dict(sorted(priority_classes.items()))
    tainted = {}
    for name, spec in sorted(flavors.items()):
        kept = {k: _list(spec.get(k), f"ResourceFlavor/{name}: spec.{k}") for k in ("nodeTaints", "tolerations")
                if spec.get(k)}
        if kept:
            tainted[name] = kept
    if tainted:
        settings["resourceFlavors"] = tainted
    stem = Path(paths[0]).stem if paths else "kueue"
    return ({"name": stem, "resources": resources, "nodes": nodes, "queues": ordered,
             "preemption": {"model": "kueue", "settings": settings}}, warnings)


def _depth(name: str, parents: dict[str, str | None]) -> int:
    d, cur = 0, parents.get(name)
    while cur is not None and d < 1000:
        d, cur = d + 1, parents.get(cur)
    return d


def _nodes(queues: dict[str, dict], flavors: dict[str, dict], warnings: list[str]) -> tuple[list[str], list[dict]]:
    totals: dict[str, dict[str, float]] = {}
    resources: list[str] = []
    for q in queues.values():
        for g in q.get("settings", {}).get("resourceGroups", []) or []:
            for r in g.get("coveredResources", []):
                if r not in resources:
                    resources.append(r)
            for f in g["flavors"]:
                tot = totals.setdefault(f["name"], {})
                for r in f["resources"]:
                    if r["name"] not in resources:
                        resources.append(r["name"])
                    tot[r["name"]] = tot.get(r["name"], 0) + parse_quantity(r["nominalQuota"])
    nodes = []
    for flv in sorted(set(totals) | set(flavors)):
        cap = {r: v for r, v in totals.get(flv, {}).items() if v > 0}
        if not cap:
            warnings.append(f"ResourceFlavor/{flv}: no nominal quota anywhere; no nodes synthesised for it")
            continue
        nodes.append({"name": f"{flv}-node", "count": 1,
                      "capacity": {r: format_quantity(v) if r == "memory" else v for r, v in sorted(cap.items())},
                      "labels": {"flavor": flv}})
    if nodes:
        warnings.append("Kueue manifests describe no nodes: synthesised one node per flavor "
                        f"({', '.join(n['name'] for n in nodes)}) sized to the flavor's total nominal quota")
    else:
        nodes = [dict(PLACEHOLDER_NODE)]
        warnings.append("no quota in the input: added a placeholder node group 'node' (cpu 8, memory 32Gi)")
    if not resources:
        resources = ["cpu", "memory"]
    for r in PLACEHOLDER_NODE["capacity"] if nodes[0] is not None and nodes[0]["name"] == "node" else ():
        if r not in resources:
            resources.append(r)
    return sorted(resources), nodes
