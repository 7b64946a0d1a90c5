"""The cluster config: one YAML file describing resources, nodes, the queue tree and the model.

Validated with pydantic; every error is reported as ``field.path: problem`` with the queue or node
name in the path (``queues.prod.max.memory: '12Qx' is not a quantity``), because a user fixing a
config needs to know where to look, not how our classes are nested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from makeway.core.model import Node, Queue
from makeway.core.policy import MODELS
from makeway.core.resources import Number, QuantityError, parse_quantity
from makeway.core.state import ClusterState
from makeway.errors import ConfigError


def _quantity(value: Any) -> Number:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


Quantity = Annotated[Number, BeforeValidator(_quantity)]
ResourceMap = dict[str, Quantity]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeSpec(_Strict):
    name: str = Field(min_length=1)
    count: int = Field(default=1, ge=1)
    capacity: ResourceMap
    labels: dict[str, str] = Field(default_factory=dict)


class QueueSpec(_Strict):
    parent: Optional[str] = None
    guaranteed: Optional[ResourceMap] = None
    max: Optional[ResourceMap] = None
    weight: float = Field(default=1.0, ge=0)
    borrowing_limit: Optional[ResourceMap] = None
    lending_limit: Optional[ResourceMap] = None
    priority: int = 0
    rank: int = 0
    settings: dict[str, Any] = Field(default_factory=dict)


class PreemptionSpec(_Strict):
    model: str = "none"
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("model")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in MODELS:
            raise ValueError(f"unknown model {v!r} (known: {', '.join(sorted(MODELS))})")
        return v


class SimulationSpec(_Strict):
    horizon: Optional[float] = Field(default=None, gt=0)
    kill_at_requested_time: bool = False
    heartbeat_period: Optional[float] = Field(default=None, gt=0)


class ClusterConfig(_Strict):
    name: str = "cluster"
    resources: list[str] = Field(min_length=1)
    nodes: list[NodeSpec] = Field(min_length=1)
    queues: dict[str, QueueSpec] = Field(default_factory=lambda: {"default": QueueSpec()})
    preemption: PreemptionSpec = Field(default_factory=PreemptionSpec)
    trace: Optional[str] = None
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - safe loader subclass
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: invalid YAML: {where}{problem}") from None


def _named_loc(loc: tuple, data: Any) -> list[str]:
    """Replace list indexes by the element's ``name`` where it has one (``nodes.gpu-pool...``)."""
    out, cur = [], data
    for part in loc:
        if isinstance(cur, list) and isinstance(part, int) and part < len(cur):
            cur = cur[part]
            name = cur.get("name") if isinstance(cur, dict) else None
            out.append(str(name) if isinstance(name, str) and name else str(part))
            continue
        out.append(str(part))
        cur = cur.get(part) if isinstance(cur, dict) else None
    return out


def _format_errors(exc: ValidationError, data: Any = None) -> str:
    lines = []
    for err in exc.errors():
        parts = _named_loc(tuple(p for p in err["loc"] if not str(p).startswith("function-")), data)
        loc = ".".join(parts)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(lines)


def _check_semantics(cfg: ClusterConfig) -> None:
    declared = set(cfg.resources)
    problems: list[str] = []
    if len(declared) != len(cfg.resources):
        problems.append("resources: duplicate resource name")

    def check_names(prefix: str, res: dict | None) -> None:
        for k in res or {}:
            if k not in declared:
                problems.append(f"{prefix}.{k}: unknown resource (declared: {', '.join(cfg.resources)})")

    names: set[str] = set()
    for i, n in enumerate(cfg.nodes):
        check_names(f"nodes.{n.name}.capacity", n.capacity)
        expanded = [n.name] if n.count == 1 else [f"{n.name}-{j}" for j in range(n.count)]
        for name in expanded:
            if name in names:
                problems.append(f"nodes.{i}.name: duplicate node name {name!r}")
            names.add(name)
    for qname, q in cfg.queues.items():
        for fld in ("guaranteed", "max", "borrowing_limit", "lending_limit"):
            check_names(f"queues.{qname}.{fld}", getattr(q, fld))
        if q.parent is not None and q.parent not in cfg.queues:
            problems.append(f"queues.{qname}.parent: unknown queue {q.parent!r}")
        if q.guaranteed and q.max:
            for k, v in q.guaranteed.items():
                if k in q.max and v > q.max[k]:
                    problems.append(f"queues.{qname}.guaranteed.{k}: {v} is above max {q.max[k]}")
    for qname in cfg.queues:
        seen, cur = set(), qname
        while cur is not None and cur in cfg.queues:
            if cur in seen:
                problems.append(f"queues.{qname}.parent: cycle through {cur!r}")
                break
            seen.add(cur)
            cur = cfg.queues[cur].parent
    if problems:
        raise ConfigError("; ".join(dict.fromkeys(problems)))


def parse_config(data: Any, source: str = "config") -> ClusterConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_format_errors(exc, data)}") from None
    try:
        _check_semantics(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    from makeway.model_settings import validate_config_settings  # per-model settings (docs/models/*.md)
    validate_config_settings(cfg, source)
    return cfg


def load_config(path: Path) -> ClusterConfig:
    return parse_config(load_yaml(path), str(path))


def build_nodes(cfg: ClusterConfig) -> list[Node]:
    out = []
    for n in cfg.nodes:
        names = [n.name] if n.count == 1 else [f"{n.name}-{j}" for j in range(n.count)]
        out.extend(Node(name, dict(n.capacity), dict(n.labels)) for name in names)
    return out


def build_queues(cfg: ClusterConfig) -> list[Queue]:
    return [Queue(name, q.parent, q.guaranteed, q.max, q.weight, q.borrowing_limit, q.lending_limit,
                  q.priority, q.rank, dict(q.settings)) for name, q in cfg.queues.items()]


def build_state(cfg: ClusterConfig) -> ClusterState:
    return ClusterState(cfg.resources, build_queues(cfg), build_nodes(cfg))


def trace_path(cfg: ClusterConfig, config_path: Path) -> Path | None:
    if cfg.trace is None:
        return None
    p = Path(cfg.trace)
    return p if p.is_absolute() else (config_path.parent / p)
