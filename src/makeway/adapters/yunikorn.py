"""Import Apache YuniKorn queue configuration (``queues.yaml``, bare or inside a ConfigMap).

YuniKorn describes queues and limits but no nodes (the cluster reports those), so the importer
synthesises nodes sized from the root or parent max, or the sum of guarantees, and says so.
Queue names become full dotted paths (``root.tenants.a``) so a trace can use YuniKorn's own queue
labels. ``vcore`` becomes ``cpu`` (Kubernetes quantity, ``m`` = millicores), memory keeps its SI or
binary suffix, other types pass through. Queue properties ride in ``settings.properties`` as strings,
the partition's preemption flags in ``preemption.settings``; the ``yunikorn`` model reads both.

Kubernetes workload manifests (Pod, Job, Deployment...) found among the files are not config: their
queues are created if missing, and ``import_workloads`` turns them into trace records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable


from makeway.adapters.detect import check_kind
from makeway.config import MAX_TASKS, parse_yaml, parse_yaml_all, read_text
from makeway.core.resources import QuantityError, format_quantity, parse_quantity
from makeway.errors import ConfigError

RESOURCE_NAMES = {"vcore": "cpu", "vcores": "cpu", "cpu": "cpu", "memory": "memory", "mem": "memory"}
KNOWN_QUEUE_KEYS = {"name", "parent", "queues", "resources", "properties"}
IGNORED_QUEUE_KEYS = {"submitacl", "adminacl", "maxapplications", "limits", "childtemplate"}
WORKLOAD_KINDS = {"Pod": 1, "Job": None, "Deployment": None, "StatefulSet": None, "ReplicaSet": None}
DEFAULT_NODE = {"cpu": "64", "memory": "256Gi"}


class _Ctx:
    def __init__(self, source: str, partition: str):
        self.source = source
        self.partition = partition
        self.warnings: list[str] = []
        self.resources: dict[str, None] = {}

    def error(self, path: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: Partition/{self.partition}: {path}: {problem}")

    def warn(self, text: str) -> None:
        self.warnings.append(f"{self.source}: {text}")


def _documents(path: Path) -> list[Any]:
    return parse_yaml_all(read_text(path), str(path))


def _queue_config(doc: Any, source: str) -> tuple[dict | None, str]:
    """The queues.yaml mapping inside a document (ConfigMap or bare), and what it was."""
    if not isinstance(doc, dict):
        return None, "not a mapping"
    if doc.get("kind") == "ConfigMap":
        data = _dict(doc.get("data"))
        raw = data.get("queues.yaml")
        if raw is None:
            return None, "ConfigMap without queues.yaml"
        name = _dict(doc.get("metadata")).get("name", "?")
        inner = parse_yaml(str(raw), f"{source}: ConfigMap/{name}: data.queues.yaml")
        if not isinstance(inner, dict) or "partitions" not in inner:
            name = _dict(doc.get("metadata")).get("name", "?")
            raise ConfigError(f"{source}: ConfigMap/{name}: data.queues.yaml: no partitions")
        return inner, "ConfigMap"
    if "partitions" in doc:
        return doc, "queues.yaml"
    return None, str(doc.get("kind") or "unknown document")


def _quantity(ctx: _Ctx, path: str, rtype: str, value: Any) -> tuple[str, str]:
    """One YuniKorn resource entry as (makeway name, quantity string)."""
    name = RESOURCE_NAMES.get(rtype, rtype)
    text = str(value).strip()
    try:
        number = parse_quantity(text)
    except QuantityError as exc:
        raise ctx.error(path, str(exc)) from None
    if name != "cpu" and text.endswith("m") and not text.endswith("Mm"):
        raise ctx.error(path, f"{value!r}: the milli suffix is only valid for vcore")
    if name != "cpu" and isinstance(number, float):
        raise ctx.error(path, f"{value!r} is not a whole number")
    ctx.resources.setdefault(name, None)
    return name, text


def _resources(ctx: _Ctx, path: str, spec: Any) -> dict[str, str] | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ctx.error(path, "must be a mapping of resource type to quantity")
    out: dict[str, str] = {}
    for k, v in spec.items():
        name, q = _quantity(ctx, f"{path}.{k}", str(k), v)
        if name in out:
            raise ctx.error(f"{path}.{k}", f"resource {name!r} given twice")
        out[name] = q
    if not any(parse_quantity(v) > 0 for v in out.values()):
        if out:
            ctx.warn(f"{path}: all values are zero; YuniKorn treats it as not set")
        return None
    return out


def _walk(ctx: _Ctx, spec: Any, parent: str | None, path: str, out: dict[str, dict]) -> None:
    if not isinstance(spec, dict) or not spec.get("name"):
        raise ctx.error(path, "a queue needs a name")
    name = str(spec["name"])
    if "." in name:
        raise ctx.error(f"{path}.name", f"{name!r}: queue names cannot contain dots")
    full = name if parent is None else f"{parent}.{name}"
    if full in out:
        raise ctx.error(path, f"duplicate queue {full!r}")
    where = f"queues.{full}"
    res = spec.get("resources") or {}
    if not isinstance(res, dict):
        raise ctx.error(f"{where}.resources", "must be a mapping")
    guaranteed = _resources(ctx, f"{where}.resources.guaranteed", res.get("guaranteed"))
    maximum = _resources(ctx, f"{where}.resources.max", res.get("max"))
    if guaranteed and maximum:
        for k, v in guaranteed.items():
            if k in maximum and parse_quantity(v) > parse_quantity(maximum[k]):
                raise ctx.error(f"{where}.resources.guaranteed.{k}", f"{v} is above max {maximum[k]}")
    props = spec.get("properties") or {}
    if not isinstance(props, dict):
        raise ctx.error(f"{where}.properties", "must be a mapping")
    ignored = sorted(k for k in spec if k in IGNORED_QUEUE_KEYS)
    unknown = sorted(k for k in spec if k not in KNOWN_QUEUE_KEYS | IGNORED_QUEUE_KEYS)
    if ignored:
        ctx.warn(f"{where}: ignored {', '.join(ignored)} (user/group limits and ACLs are not modelled)")
    if unknown:
        ctx.warn(f"{where}: unknown keys ignored: {', '.join(unknown)}")
    entry: dict[str, Any] = {}
    if parent is not None:
        entry["parent"] = parent
    if guaranteed:
        entry["guaranteed"] = guaranteed
    if maximum:
        entry["max"] = maximum
    entry["settings"] = {"properties": {str(k): str(v) for k, v in props.items()}}
    if spec.get("parent") is True:
        entry["settings"]["parent"] = True
    out[full] = entry
    children = spec.get("queues") or []
    if not isinstance(children, list):
        raise ctx.error(f"{where}.queues", "must be a list")
    for i, child in enumerate(children):
        _walk(ctx, child, full, f"{where}.queues[{i}]", out)


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


def _partition(ctx: _Ctx, part: Any) -> tuple[dict[str, dict], dict[str, Any]]:
    if not isinstance(part, dict):
        raise ctx.error("partitions", "a partition must be a mapping")
    top = part.get("queues") or []
    if not isinstance(top, list) or not top:
        raise ctx.error("queues", "a partition needs at least one queue")
    if not (len(top) == 1 and str(_dict(top[0]).get("name", "")).lower() == "root"):
        ctx.warn(f"partition {ctx.partition}: top-level queues placed under a synthetic root")
        top = [{"name": "root", "queues": top}]
    queues: dict[str, dict] = {}
    _walk(ctx, top[0], None, "queues[0]", queues)
    for key in ("placementrules", "limits", "nodesortpolicy", "statedumpfilepath", "usergroupresolver"):
        if part.get(key):
            ctx.warn(f"partition {ctx.partition}: {key} ignored (not modelled)")
    pre = part.get("preemption") or {}
    if not isinstance(pre, dict):
        raise ctx.error("preemption", "must be a mapping")
    settings = {"preemptionEnabled": _flag(pre.get("enabled"), True),
                "quotaPreemptionEnabled": _flag(pre.get("quotapreemptionenabled"), False)}
    return queues, settings


def _size(queues: dict[str, dict], name: str, rtype: str, children: dict[str, list[str]]) -> float:
    """Capacity a queue needs in one type: its max, else what its children need, else its guarantee."""
    q = queues[name]
    if rtype in (q.get("max") or {}):
        return parse_quantity(q["max"][rtype])
    kids = children.get(name, [])
    need = sum(_size(queues, c, rtype, children) for c in kids)
    own = parse_quantity((q.get("guaranteed") or {}).get(rtype, 0))
    return max(need, own)


def _nodes(ctx: _Ctx, queues: dict[str, dict], root: str) -> list[dict]:
    children: dict[str, list[str]] = {}
    for n, q in queues.items():
        if "parent" in q:
            children.setdefault(q["parent"], []).append(n)
    capacity: dict[str, str] = {}
    for rtype in ctx.resources:
        total = _size(queues, root, rtype, children)
        if total > 0:
            capacity[rtype] = format_quantity(total) if rtype != "cpu" else _cpu(total)
    if not capacity:
        capacity = dict(DEFAULT_NODE)
        for k in capacity:
            ctx.resources.setdefault(k, None)
        ctx.warn(f"no queue sets max or guaranteed resources: one placeholder node {capacity} synthesised")
    else:
        ctx.warn(f"YuniKorn configs carry no nodes: one node sized from the queue limits synthesised: {capacity}")
    return [{"name": "yk-node", "count": 1, "capacity": capacity}]


def _cpu(cores: float) -> str:
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _dict(value: Any) -> dict:
    """A manifest's sub-mapping, or ``{}`` when absent or not a mapping (Kubernetes itself would
    refuse such a manifest; here it only loses what it cannot say)."""
    return value if isinstance(value, dict) else {}


def _workload_docs(doc: Any) -> list[dict]:
    if isinstance(doc, dict) and doc.get("kind") == "List":
        items = doc.get("items") if isinstance(doc.get("items"), list) else []
        return [d for d in items if isinstance(d, dict) and d.get("kind") in WORKLOAD_KINDS]
    return [doc] if isinstance(doc, dict) and doc.get("kind") in WORKLOAD_KINDS else []


def _count(value: Any) -> int:
    try:
        n = int(value or 1)
    except (TypeError, ValueError, OverflowError):
        return 1
    return n if 1 <= n <= MAX_TASKS else 1


def _pod_template(doc: dict) -> tuple[dict, dict, int]:
    """(pod metadata, pod spec, count) of a workload manifest."""
    kind = doc["kind"]
    spec = _dict(doc.get("spec"))
    if kind == "Pod":
        return _dict(doc.get("metadata")), spec, 1
    tmpl = _dict(spec.get("template"))
    if kind == "Job":
        count = _count(spec.get("parallelism", spec.get("completions", 1)))
    else:
        count = _count(spec.get("replicas", 1))
    return _dict(tmpl.get("metadata")), _dict(tmpl.get("spec")), count


def _pod_queue(meta: dict) -> str | None:
    labels = _dict(meta.get("labels"))
    ann = _dict(meta.get("annotations"))
    q = ann.get("yunikorn.apache.org/queue") or labels.get("queue")
    return str(q) if q else None


def import_files(paths: list[Path], partition: str | None = None) -> tuple[dict, list[str]]:
    """The makeway config for the YuniKorn queue configuration found in ``paths``, plus warnings.

    The first partition is used unless ``partition`` names another; the others are reported.
    """
    config_doc: tuple[dict, str] | None = None
    workloads: list[tuple[dict, str]] = []
    warnings: list[str] = []
    for p in paths:
        check_kind("yunikorn", Path(p))
    for p in paths:
        for doc in _documents(Path(p)):
            qc, what = _queue_config(doc, str(p))
            if qc is not None:
                if config_doc is None:
                    config_doc = (qc, str(p))
                else:
                    warnings.append(f"{p}: a second queue configuration ({what}) ignored")
                continue
            wls = _workload_docs(doc)
            if wls:
                workloads.extend((w, str(p)) for w in wls)
            else:
                warnings.append(f"{p}: {what} ignored (not a YuniKorn queue configuration)")
    if config_doc is None and not workloads:
        raise ConfigError(f"{', '.join(str(p) for p in paths)}: no YuniKorn queue configuration found")
    if config_doc is not None:
        qc, source = config_doc
        parts = qc.get("partitions") or []
        if not isinstance(parts, list) or not parts:
            raise ConfigError(f"{source}: partitions: at least one partition is required")
        names = [str(_dict(pt).get("name", "default")) for pt in parts]
        chosen = names.index(partition) if partition in names else 0
        if partition is not None and partition not in names:
            raise ConfigError(f"{source}: partitions: no partition named {partition!r} (have {', '.join(names)})")
        ctx = _Ctx(source, names[chosen])
        if len(parts) > 1:
            ctx.warn(f"{len(parts)} partitions ({', '.join(names)}): imported {names[chosen]!r} only")
        queues, settings = _partition(ctx, parts[chosen])
    else:
        source = str(workloads[0][1])
        ctx = _Ctx(source, "default")
        ctx.warn("no queue configuration: queues created from the workloads' queue labels")
        queues, settings = {"root": {"settings": {"properties": {}}}}, {
            "preemptionEnabled": True, "quotaPreemptionEnabled": False}
    root = next(n for n, q in queues.items() if "parent" not in q)
    for doc, src in workloads:
        meta, _, _ = _pod_template(doc)
        q = _pod_queue(meta)
        if q and q not in queues:
            parts_ = q.split(".")
            if parts_[0] != root:
                parts_ = [root] + parts_
            for i in range(1, len(parts_)):
                name = ".".join(parts_[: i + 1])
                if name not in queues:
                    queues[name] = {"parent": ".".join(parts_[:i]), "settings": {"properties": {}}}
                    ctx.warn(f"queue {name} created for workload {_dict(doc.get('metadata')).get('name')} ({src})")
    if workloads:
        ctx.warn(f"{len(workloads)} workload manifest(s) are not config: use import_workloads for a trace")
    if not ctx.resources:
        ctx.resources.update(dict.fromkeys(("cpu", "memory")))
    nodes = _nodes(ctx, queues, root)
    name = Path(source).stem
    config = {
        "name": f"yunikorn-{name}-{ctx.partition}",
        "resources": list(ctx.resources),
        "nodes": nodes,
        "queues": queues,
        "preemption": {"model": "yunikorn", "settings": settings},
    }
    return config, warnings + ctx.warnings


def import_workloads(paths: Iterable[Path], *, submit: float = 0.0, duration: float = 10**7,
                     default_queue: str = "root.default") -> list[dict]:
    """Trace records (makeway JSONL schema) for the Pod/Job/Deployment manifests in ``paths``."""
    records: list[dict] = []
    for p in paths:
        for doc in _documents(Path(p)):
            for w in _workload_docs(doc):
                meta, spec, count = _pod_template(w)
                req: dict[str, str] = {}
                for c in spec.get("containers") or []:
                    for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
                        prev = parse_quantity(req[k]) if k in req else 0
                        req[k] = str(parse_quantity(v) + prev) if k in req else str(v)
                labels = meta.get("labels") or {}
                ann = meta.get("annotations") or {}
                wid = labels.get("applicationId") or (w.get("metadata") or {}).get("name") or f"w{len(records)}"
                settings: dict[str, Any] = {}
                allow = ann.get("yunikorn.apache.org/allow-preemption")
                if allow is not None:
                    settings["allowPreemption"] = str(allow).lower() == "true"
                records.append({"id": str(wid), "queue": _pod_queue(meta) or default_queue, "submit": submit,
                                "duration": duration, "priority": 0,
                                "grace": float(spec.get("terminationGracePeriodSeconds", 0) or 0),
                                "tasks": [{"count": count, "resources": req, "name": w["kind"].lower()}],
                                "settings": settings})
    return records
