"""Import IBM Spectrum Symphony application profiles (XML) into a makeway config.

Each profile registers one application bound to one leaf consumer. We read the ``Consumer``
element (``applicationName``, ``consumerId``, ``policy``, ``preemptionScope`` and, when present,
``preemptionCriteria``) and the ``SessionTypes/Type`` elements (``preemptive``, ``preemptionRank``,
``priority``). Consumers become queues named by their consumer ID (``/Finance/Risk``), inner path
segments become parent queues under ``/``; the session types are stored in the leaf queue's
``settings.sessionTypes`` so a trace session names one with ``settings.sessionType``.

A profile says nothing about hosts, so the config gets a placeholder host group (with a warning)
for the user to replace. Everything else in a profile (SOAM, Service, ...) is ignored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from makeway.adapters.detect import check_kind
from makeway.errors import ConfigError
from makeway.policies.symphony.rules import normalize_criteria, normalize_scope

ROOT = "/"
RANK_RANGE = (1, 10000)
PRIORITY_RANGE = (1, 10000)
PLACEHOLDER_NODES = [{"name": "host", "count": 4, "capacity": {"cpu": 8, "memory": "32Gi", "slots": 8}}]


def _local(tag: str) -> str:
    """Element name without its XML namespace (profiles carry Symphony's namespace or none)."""
    return tag.rsplit("}", 1)[-1]


def _child(elem: ET.Element, name: str) -> ET.Element | None:
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


def _children(elem: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in elem if _local(c.tag) == name]


def _int(value: str, where: str, lo: int, hi: int) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not an integer") from None
    if not lo <= n <= hi:
        raise ConfigError(f"{where}: {n} is outside {lo}..{hi}")
    return n


def _bool(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigError(f"{where}: {value!r} is not true or false")


def read_profile(path: Path) -> tuple[dict[str, Any], list[str]]:
    """One profile as ``{"consumer": id, "settings": {...}}`` plus warnings."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except ET.ParseError as exc:
        raise ConfigError(f"{path}: invalid XML: {exc}") from None
    except (LookupError, ValueError) as exc:  # e.g. an unknown encoding in the XML declaration
        raise ConfigError(f"{path}: invalid XML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if _local(root.tag) != "Profile":
        raise ConfigError(f"{path}: Profile/?: <root>: expected a <Profile> element, found <{_local(root.tag)}>")
    consumer = _child(root, "Consumer")
    if consumer is None:
        raise ConfigError(f"{path}: Profile/?: Consumer: missing <Consumer> element")
    app = consumer.get("applicationName") or ""
    where = f"{path}: Profile/{app or '?'}"
    if not app.strip():
        raise ConfigError(f"{where}: Consumer.applicationName: missing")
    cid = (consumer.get("consumerId") or "").strip()
    if not cid.startswith("/") or cid == "/" or "//" in cid or cid.endswith("/"):
        raise ConfigError(f"{where}: Consumer.consumerId: {cid!r} is not a consumer path like /Dept/App")
    warnings: list[str] = []
    settings: dict[str, Any] = {"applicationName": app, "consumerId": cid}
    policy = consumer.get("policy")
    if policy:
        settings["policy"] = policy
        if policy != "R_Proportion":
            warnings.append(f"{path}: Profile/{app}: Consumer.policy: {policy} is recorded, but the symphony "
                            "model schedules sessions with R_Proportion (rank-based preemption)")
    if consumer.get("resourceGroupName"):
        settings["resourceGroupName"] = consumer.get("resourceGroupName")
    try:
        settings["preemptionScope"] = normalize_scope(consumer.get("preemptionScope"))
    except ValueError as exc:
        raise ConfigError(f"{where}: Consumer.preemptionScope: {exc}") from None
    if consumer.get("preemptionCriteria") is not None:
        try:
            settings["preemptionCriteria"] = normalize_criteria(consumer.get("preemptionCriteria"))
        except ValueError as exc:
            raise ConfigError(f"{where}: Consumer.preemptionCriteria: {exc}") from None
    types: dict[str, dict[str, Any]] = {}
    section = _child(root, "SessionTypes")
    for i, t in enumerate(_children(section, "Type") if section is not None else []):
        name = t.get("name")
        if name is None:
            raise ConfigError(f"{where}: SessionTypes.Type[{i}].name: missing")
        tw = f"{where}: SessionTypes.Type[{name}]"
        if name in types:
            raise ConfigError(f"{tw}.name: duplicate session type")
        spec: dict[str, Any] = {"preemptive": False, "preemptionRank": 1}
        if t.get("preemptive") is not None:
            spec["preemptive"] = _bool(t.get("preemptive", ""), f"{tw}.preemptive")
        if t.get("preemptionRank") is not None:
            spec["preemptionRank"] = _int(t.get("preemptionRank", ""), f"{tw}.preemptionRank", *RANK_RANGE)
        if t.get("priority") is not None:
            spec["priority"] = _int(t.get("priority", ""), f"{tw}.priority", *PRIORITY_RANGE)
        types[name] = spec
    if types:
        settings["sessionTypes"] = types
    return {"consumer": cid, "settings": settings}, warnings


def import_files(paths: list[Path]) -> tuple[dict, list[str]]:
    """Profiles -> makeway config dict (consumer tree, one leaf per application) and warnings."""
    warnings: list[str] = []
    queues: dict[str, dict[str, Any]] = {ROOT: {}}
    leaves: dict[str, Path] = {}
    for path in map(Path, paths):
        check_kind("symphony", path)
    for path in map(Path, paths):
        prof, warn = read_profile(path)
        warnings.extend(warn)
        cid = prof["consumer"]
        app = prof["settings"]["applicationName"]
        if cid in leaves:
            raise ConfigError(f"{path}: Profile/{app}: Consumer.consumerId: {cid} is already bound to the "
                              f"application of {leaves[cid]} (one application per leaf consumer)")
        parts = cid.strip("/").split("/")
        parent = ROOT
        for depth in range(1, len(parts) + 1):
            name = "/" + "/".join(parts[:depth])
            if depth < len(parts) and name in leaves:
                raise ConfigError(f"{path}: Profile/{app}: Consumer.consumerId: {name} is a leaf consumer "
                                  f"of {leaves[name]} and cannot have children")
            queues.setdefault(name, {"parent": parent})
            parent = name
        if queues[cid].get("settings") or any(q.get("parent") == cid for q in queues.values()):
            raise ConfigError(f"{path}: Profile/{app}: Consumer.consumerId: {cid} must be a leaf consumer")
        queues[cid]["settings"] = prof["settings"]
        leaves[cid] = path
    warnings.append("application profiles do not describe hosts: the config has a placeholder host group "
                    "(4 hosts x 8 slots); replace `nodes` with your resource groups")
    config = {
        "name": "symphony-import",
        "resources": ["cpu", "memory", "slots"],
        "nodes": [dict(n) for n in PLACEHOLDER_NODES],
        "queues": queues,
        "preemption": {"model": "symphony", "settings": {}},
    }
    return config, warnings


__all__ = ["import_files", "read_profile"]
