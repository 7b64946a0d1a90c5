"""The cluster config: one YAML file describing resources, nodes, the queue tree and the model.

Validated with pydantic; every error is reported as ``field.path: problem`` with the queue or node
name in the path (``queues.prod.max.memory: '12Qx' is not a quantity``), because a user fixing a
config needs to know where to look, not how our classes are nested.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from makeway.core.objects import Node, Queue
from makeway.registry import MODELS
from makeway.core.resources import Number, QuantityError, parse_quantity
from makeway.core.state import ClusterState
from makeway.errors import ConfigError


# Limits on sizes and numbers, checked when a config or trace is read so that nothing a file says can
# exhaust memory or stall the simulated clock (see README, "Errors").
MAX_NODES = 1_000_000
"""Total nodes after ``count`` expansion (the Google 2011 cell has 12,500)."""
MAX_TASKS = 1_000_000
"""Tasks of one workload, all groups together (the largest Google 2011 job has about 90,000)."""
MAX_TIME = 1e10
"""Seconds (about 317 years): times, durations, horizons. Far below where adding a 1 ms heartbeat to a
float time would stop changing it."""
MIN_HEARTBEAT = 1e-3
"""Seconds: a shorter heartbeat makes a simulation that never gets anywhere."""
MAX_INT = 2**31 - 1
"""Priorities and ranks are int32, as in Kubernetes and YuniKorn."""
MAX_WEIGHT = 1e9
MAX_DEPTH = 64
"""Nesting of mappings and lists in a config or trace record."""
MAX_ITEMS = 1_000_000
"""Values in one config document (YAML aliases can expand a small file into billions)."""


def _quantity(value: Any) -> Number:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


Quantity = Annotated[Number, BeforeValidator(_quantity)]
ResourceMap = dict[str, Quantity]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


Int32 = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]


class NodeSpec(_Strict):
    name: str = Field(min_length=1)
    count: int = Field(default=1, ge=1, le=MAX_NODES)
    capacity: ResourceMap
    labels: dict[str, str] = Field(default_factory=dict)


class QueueSpec(_Strict):
    parent: Optional[str] = None
    guaranteed: Optional[ResourceMap] = None
    max: Optional[ResourceMap] = None
    weight: float = Field(default=1.0, ge=0, le=MAX_WEIGHT)
    borrowing_limit: Optional[ResourceMap] = None
    lending_limit: Optional[ResourceMap] = None
    priority: Int32 = 0
    rank: Int32 = 0
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
    horizon: Optional[float] = Field(default=None, gt=0, le=MAX_TIME)
    kill_at_requested_time: bool = False
    heartbeat_period: Optional[float] = Field(default=None, ge=MIN_HEARTBEAT, le=MAX_TIME)


class TenantSpec(_Strict):
    """A tenant of the live service owns the subtrees rooted at ``queues`` (docs/tenants.md)."""

    queues: list[str] = Field(min_length=1)


TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ClusterConfig(_Strict):
    name: str = "cluster"
    resources: list[str] = Field(min_length=1)
    nodes: list[NodeSpec] = Field(min_length=1)
    queues: dict[str, QueueSpec] = Field(default_factory=lambda: {"default": QueueSpec()})
    preemption: PreemptionSpec = Field(default_factory=PreemptionSpec)
    trace: Optional[str] = None
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)
    tenants: dict[str, TenantSpec] = Field(default_factory=dict)


@functools.cache
def _unique_key_loader() -> type:
    """A YAML loader that refuses duplicate keys instead of silently keeping the last one.

    Parsed by libyaml where PyYAML was built with it (ten times faster on a large config; the
    safe constructors, and so the values, are the same Python code either way). Made on first
    use: a run on a trace that describes its own cluster reads no YAML and need not import it."""
    import yaml

    loader = type("_UniqueKeyLoader", (getattr(yaml, "CSafeLoader", yaml.SafeLoader),), {})
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    return loader


def _construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def read_text(path: Path, error: type[ConfigError] = ConfigError) -> str:
    """A UTF-8 text file's contents; a missing, unreadable or binary file is one ``error`` line."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None


def check_shape(data: Any, where: str, error: type[ConfigError] = ConfigError) -> Any:
    """Refuse documents nested deeper than ``MAX_DEPTH`` or holding more than ``MAX_ITEMS`` values.

    Iterative (a deep document must not exhaust the stack here either) and counting shared values
    each time they are reached, which is what every later walk over the document will cost.
    """
    stack, seen = [(data, 1)], 0
    while stack:
        cur, depth = stack.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise error(f"{where}: more than {MAX_ITEMS:,} values (YAML aliases expanding?)")
        if isinstance(cur, dict):
            children: Any = list(cur.keys()) + list(cur.values())
        elif isinstance(cur, list):
            children = cur
        else:
            continue
        if depth >= MAX_DEPTH and children:
            raise error(f"{where}: nested deeper than {MAX_DEPTH} levels")
        stack.extend((c, depth + 1) for c in children)
    return data


def _flow_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` (strings not excluded: an upper bound, cheap to take)."""
    depth = deepest = 0
    for c in re.sub(r"[^\[\]{}]+", "", text):
        depth = depth + 1 if c in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


@contextmanager
def _yaml_errors(where: str, error: type[ConfigError], text: str) -> Iterator[Any]:
    """Every way PyYAML can refuse a text, as one ``error`` line naming ``where``; gives the
    ``yaml`` module, imported here on first use."""
    import yaml

    if _flow_depth(text) > 4 * MAX_DEPTH:  # PyYAML takes seconds (quadratic) before it gives up
        raise error(f"{where}: invalid YAML: nested deeper than {MAX_DEPTH} levels")
    try:
        yield yaml
    except ConfigError as exc:
        raise error(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise error(f"{where}: invalid YAML: {at}{problem}") from None
    except RecursionError:
        raise error(f"{where}: invalid YAML: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, TypeError, OverflowError) as exc:
        # the safe constructors raise these for values they cannot build (an int of 5,000 digits,
        # an unhashable mapping key, a timestamp out of range)
        raise error(f"{where}: invalid YAML: {str(exc).splitlines()[0][:200]}") from None


def parse_yaml(text: str, where: str, error: type[ConfigError] = ConfigError) -> Any:
    """One YAML document (duplicate keys refused); every problem is one ``error`` line."""
    with _yaml_errors(where, error, text) as yaml:
        data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - safe loader subclass
    return check_shape(data, where, error)


def parse_yaml_all(text: str, where: str, error: type[ConfigError] = ConfigError) -> list[Any]:
    """Every non-empty document of a YAML stream (Kubernetes manifests), with ``parse_yaml``'s checks."""
    with _yaml_errors(where, error, text) as yaml:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    for d in docs:
        check_shape(d, where, error)
    return docs


def load_yaml(path: Path) -> Any:
    return parse_yaml(read_text(path), str(path))


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


def _unknown_resources(resources: list[str], prefix: str, res: dict | None) -> list[str]:
    return [f"{prefix}.{k}: unknown resource (declared: {', '.join(resources)})"
            for k in res or {} if k not in resources]


def queue_limit_problems(resources: list[str], prefix: str, guaranteed: dict | None,
                         max_: dict | None) -> list[str]:
    """What is wrong with a queue's guarantee and max: undeclared resources, a guarantee above max.

    Shared by the config and its config-change events, so an event cannot set what the file refuses.
    ``prefix`` starts each field path (``queues.prod``; empty for an event, which names its queue).
    """
    at = f"{prefix}." if prefix else ""
    problems = _unknown_resources(resources, f"{at}guaranteed", guaranteed)
    problems += _unknown_resources(resources, f"{at}max", max_)
    for k, v in (guaranteed or {}).items():
        if max_ and k in max_ and v > max_[k]:
            problems.append(f"{at}guaranteed.{k}: {v} is above max {max_[k]}")
    return problems


def _check_sizes(cfg: ClusterConfig) -> None:
    """Refuse clusters that cannot fit in memory before anything is expanded."""
    total = sum(n.count for n in cfg.nodes)
    if total > MAX_NODES:
        raise ConfigError(f"nodes: {total:,} nodes in all (counts added up); the limit is {MAX_NODES:,}")


def _check_semantics(cfg: ClusterConfig) -> None:
    _check_sizes(cfg)
    declared = set(cfg.resources)
    problems: list[str] = []
    if len(declared) != len(cfg.resources):
        problems.append("resources: duplicate resource name")

    def check_names(prefix: str, res: dict | None) -> None:
        problems.extend(_unknown_resources(cfg.resources, prefix, res))

    names: set[str] = set()
    for i, n in enumerate(cfg.nodes):
        check_names(f"nodes.{n.name}.capacity", n.capacity)
        expanded = [n.name] if n.count == 1 else [f"{n.name}-{j}" for j in range(n.count)]
        for name in expanded:
            if name in names:
                problems.append(f"nodes.{i}.name: duplicate node name {name!r}")
            names.add(name)
    for qname, q in cfg.queues.items():
        for fld in ("borrowing_limit", "lending_limit"):
            check_names(f"queues.{qname}.{fld}", getattr(q, fld))
        problems.extend(queue_limit_problems(cfg.resources, f"queues.{qname}", q.guaranteed, q.max))
        if q.parent is not None and q.parent not in cfg.queues:
            problems.append(f"queues.{qname}.parent: unknown queue {q.parent!r}")
    for qname in cfg.queues:
        seen, cur = set(), qname
        while cur is not None and cur in cfg.queues:
            if cur in seen:
                problems.append(f"queues.{qname}.parent: cycle through {cur!r}")
                break
            seen.add(cur)
            cur = cfg.queues[cur].parent
    problems.extend(_tenant_problems(cfg))
    if problems:
        raise ConfigError("; ".join(dict.fromkeys(problems)))


def _tenant_problems(cfg: ClusterConfig) -> list[str]:
    """Each tenant names queues that exist, and no queue is in two tenants' subtrees (nor listed twice)."""
    problems: list[str] = []
    roots: list[tuple[str, int, str]] = []
    for tname, t in cfg.tenants.items():
        if not TENANT_NAME.match(tname):
            problems.append(f"tenants.{tname}: not a tenant name (letters, digits and ._-, at most 64)")
        for i, root in enumerate(t.queues):
            if root not in cfg.queues:
                problems.append(f"tenants.{tname}.queues.{i}: unknown queue {root!r}")
            else:
                roots.append((tname, i, root))

    def ancestors(q: str) -> set[str]:
        out: set[str] = set()
        while q is not None and q in cfg.queues and q not in out:
            out.add(q)
            q = cfg.queues[q].parent
        return out

    for j, (tname, i, root) in enumerate(roots):
        up = ancestors(root)
        for other, k, oroot in roots[:j]:
            if oroot in up or root in ancestors(oroot):
                problems.append(f"tenants.{tname}.queues.{i}: queue {root!r} overlaps the subtree of "
                                f"{oroot!r} (tenant {other!r})")
    return problems


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
