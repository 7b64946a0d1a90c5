"""GRID.yaml: the schema of a sweep and its expansion into cells.

A grid is a product: configs x traces x models x settings values. Settings axes are model-level
(``preemption.settings``): ``settings`` holds axes every model of the grid that reads the key
varies, ``model_settings`` those of one model only: either axes (key -> values, a product) or a
list of variants (each a settings mapping, run as given: knobs that only make sense together). A model that does not read a ``settings`` key
runs once for that axis, not once per value: the value would change nothing (the config rules of
``model_settings.py`` ignore a key only other models read), and repeating identical runs would
make the table look like more was measured than was.

Everything is checked before the first cell runs: each config, each model, and each axis value on
its own (so an error names ``settings.KEY[i]``), then every cell's config as it will run.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from makeway.errors import ConfigError


class GridError(ConfigError):
    """A GRID.yaml problem: one line naming the file and the field."""


class _GridSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Optional[StrictStr] = None
    configs: list[StrictStr] = Field(min_length=1)
    traces: Optional[list[StrictStr]] = Field(default=None, min_length=1)
    trace_format: Optional[StrictStr] = None
    models: Optional[list[StrictStr]] = Field(default=None, min_length=1)
    settings: dict[StrictStr, list[Any]] = Field(default_factory=dict)
    model_settings: dict[StrictStr, Union[dict[StrictStr, list[Any]], list[dict[StrictStr, Any]]]] = Field(
        default_factory=dict)
    horizon: Optional[float] = None
    strict: Optional[StrictBool] = None
    queue_map: Optional[StrictStr] = None
    scale_cluster: Optional[float] = None
    swf_processors: Optional[StrictStr] = None


@dataclass(frozen=True)
class CellSpec:
    """Everything a worker needs to run one cell, as plain picklable data.

    The config travels as text (a remote worker need not see the grid's files); the trace travels
    as a path, so on a cluster it must be readable at that path on every worker.
    """

    index: int
    config_name: str      # the config file's path as the grid gives it (a label)
    config_text: str
    trace: Optional[str]  # absolute path
    trace_format: Optional[str]
    model: str
    settings: dict[str, Any]   # the axis values this cell sets (only keys the model reads)
    horizon: Optional[float]
    strict: Optional[bool]
    key: str = ""
    # study inputs (as `simulate --queue-map/--scale-cluster/--swf-processors`): the map as data (a
    # parsed YAML mapping, or inline PATTERN=QUEUE rules), so a remote worker need not read the file
    queue_map: Any = None
    scale: Optional[float] = None
    swf_processors: Optional[str] = None

    def label(self) -> str:
        parts = [self.model] + [f"{k}={fmt_value(v)}" for k, v in self.settings.items()]
        return " ".join(parts)


@dataclass
class Grid:
    name: str
    path: Path
    cells: list[CellSpec] = field(default_factory=list)
    multi_config: bool = False
    multi_trace: bool = False


def fmt_value(v: Any) -> str:
    """An axis value in one short token (mappings as k:v, lists comma-joined)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{fmt_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(fmt_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _fail(where: str, msg: str) -> GridError:
    return GridError(f"{where}: {msg}")


def _spec(data: Any, where: str) -> _GridSpec:
    if not isinstance(data, dict):
        raise _fail(where, "the top level must be a mapping (configs, traces, models, settings, ...)")
    try:
        return _GridSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise _fail(where, f"{loc}: {msg}") from None


def _axes_checked(axes: dict[str, list[Any]], prefix: str, where: str) -> None:
    for key, values in axes.items():
        if not values:
            raise _fail(where, f"{prefix}.{key}: give at least one value")
        seen = []
        for i, v in enumerate(values):
            if v in seen:
                raise _fail(where, f"{prefix}.{key}[{i}]: {fmt_value(v)} appears twice")
            seen.append(v)


def _model_reads(model: str) -> set[str]:
    from makeway.model_settings import settings_classes
    from makeway.policies.settings_common import field_names

    return set(field_names(settings_classes(model).model))


def _with(data: dict[str, Any], model: str, settings: dict[str, Any]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(data)
    pre = dict(out.get("preemption") or {})
    pre["model"] = model
    pre["settings"] = {**(pre.get("settings") or {}), **settings}
    out["preemption"] = pre
    return out


def cell_config(spec: CellSpec, source: str = "cell"):
    """The ``ClusterConfig`` one cell runs: the config text, its model replaced and the axis values
    merged into ``preemption.settings`` (the grid's horizon is given to the run itself)."""
    from makeway.config import parse_config, parse_yaml

    data = parse_yaml(spec.config_text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    data = _with(data, spec.model, spec.settings)
    if spec.scale is not None:
        from makeway.sim.scale import scale_cluster

        data = scale_cluster(data, spec.scale)
    return parse_config(data, source)


def cell_queue_map(spec: CellSpec):
    """The cell's ``QueueMap`` (None without one), built from the data the spec carries."""
    from makeway.sim.queue_map import from_data, from_inline

    if spec.queue_map is None:
        return None
    if isinstance(spec.queue_map, str):
        return from_inline(spec.queue_map, "queue_map")
    return from_data(spec.queue_map, "queue_map")


def load_grid(path: Path) -> Grid:
    """Read, check and expand GRID.yaml (paths inside are relative to it)."""
    from makeway.config import load_config, parse_yaml, read_text, trace_path
    from makeway.registry import MODELS
    from makeway.sim.importers.detect import FORMATS

    path = Path(path)
    where = str(path)
    spec = _spec(parse_yaml(read_text(path, GridError), where, GridError), where)
    base = path.parent
    if spec.trace_format is not None and spec.trace_format not in FORMATS:
        raise _fail(where, f"trace_format: unknown format {spec.trace_format!r} (known: {', '.join(FORMATS)})")
    if spec.horizon is not None and not (0 < spec.horizon < math.inf):
        raise _fail(where, f"horizon: {spec.horizon} is not a positive time in seconds")
    for i, m in enumerate(spec.models or []):
        if m not in MODELS:
            raise _fail(where, f"models[{i}]: unknown model {m!r} (known: {', '.join(sorted(MODELS))})")
    if spec.models and len(set(spec.models)) != len(spec.models):
        raise _fail(where, "models: a model appears twice")
    _axes_checked(spec.settings, "settings", where)
    qmap_data = _queue_map_data(spec.queue_map, base, where)
    if spec.scale_cluster is not None and not (0 < spec.scale_cluster < math.inf):
        raise _fail(where, f"scale_cluster: {spec.scale_cluster} is not a factor > 0")
    if spec.swf_processors is not None:
        from makeway.sim.importers.swf import PROCESSORS

        if spec.swf_processors not in PROCESSORS:
            raise _fail(where, f"swf_processors: {spec.swf_processors!r} is not one of {', '.join(PROCESSORS)}")
    for m, axes in spec.model_settings.items():
        if m not in MODELS:
            raise _fail(where, f"model_settings.{m}: unknown model (known: {', '.join(sorted(MODELS))})")
        if spec.models is not None and m not in spec.models:
            raise _fail(where, f"model_settings.{m}: {m} is not one of the grid's models ({', '.join(spec.models)})")
        if isinstance(axes, list):
            if not axes:
                raise _fail(where, f"model_settings.{m}: give at least one variant")
            for i, v in enumerate(axes):
                if v in axes[:i]:
                    raise _fail(where, f"model_settings.{m}[{i}]: the same variant appears twice")
        else:
            _axes_checked(axes, f"model_settings.{m}", where)

    configs = []
    for i, c in enumerate(spec.configs):
        cpath = Path(c) if Path(c).is_absolute() else base / c
        if not cpath.is_file():
            raise _fail(where, f"configs[{i}]: {cpath}: no such file")
        cfg = load_config(cpath)
        configs.append((c, cpath, read_text(cpath), cfg))
    traces: list[Optional[Path]] | None = None
    if spec.traces is not None:
        traces = []
        for i, t in enumerate(spec.traces):
            tpath = Path(t) if Path(t).is_absolute() else base / t
            if not tpath.exists():
                raise _fail(where, f"traces[{i}]: {tpath}: no such file")
            traces.append(tpath.resolve())
    models_seen = set(spec.models) if spec.models else {cfg.preemption.model for *_, cfg in configs}
    for key in spec.settings:
        if not any(key in _model_reads(m) for m in models_seen):
            raise _fail(where, f"settings.{key}: no model of the grid reads it ({', '.join(sorted(models_seen))})")
    for m, axes in spec.model_settings.items():
        named = [(f"model_settings.{m}[{i}].{k}", k) for i, v in enumerate(axes) for k in v] \
            if isinstance(axes, list) else [(f"model_settings.{m}.{k}", k) for k in axes]
        for loc, key in named:
            if key not in _model_reads(m):
                raise _fail(where, f"{loc}: {m} has no model-level setting {key!r} "
                                   f"(it reads: {', '.join(sorted(_model_reads(m)))})")

    cells: list[CellSpec] = []
    checked: set[tuple[str, str, str]] = set()
    for cname, cpath, text, cfg in configs:
        own = trace_path(cfg, cpath)
        if traces is None and own is None:
            raise _fail(where, f"configs: {cname} names no trace; give traces")
        for tpath in (traces if traces is not None else [own.resolve()]):
            for m in (spec.models or [cfg.preemption.model]):
                for loc, variant in _variants(spec, m):
                    if (cname, m, loc) not in checked:  # each axis value or variant alone, so the error names it
                        checked.add((cname, m, loc))
                        probe = CellSpec(0, cname, text, None, None, m, dict(variant), None, None,
                                         scale=spec.scale_cluster)
                        try:
                            cell_config(probe, loc)
                        except ConfigError as exc:
                            raise _fail(where, f"{loc} ({cname}, {m}): {_tail(exc)}") from None
                for combo in _combinations(spec, m):
                    cells.append(CellSpec(len(cells), cname, text, str(tpath), spec.trace_format, m, combo,
                                          spec.horizon, spec.strict, queue_map=qmap_data,
                                          scale=spec.scale_cluster, swf_processors=spec.swf_processors))
                    try:
                        cfg_cell = cell_config(cells[-1], cname)
                        qmap = cell_queue_map(cells[-1])
                        if qmap is not None:
                            qmap.check(cfg_cell.queues)
                    except ConfigError as exc:
                        raise _fail(where, f"cell {cells[-1].label()} ({cname}): {_tail(exc)}") from None
    return Grid(spec.name or path.stem, path, cells, multi_config=len(configs) > 1,
                multi_trace=len({c.trace for c in cells}) > 1)


def _queue_map_data(value: Optional[str], base: Path, where: str) -> Any:
    """``queue_map:`` as the cells carry it: a YAML file beside the grid read into data, or inline
    rules kept as text; checked here so the error names the grid's field."""
    from makeway.config import load_yaml
    from makeway.sim.queue_map import from_data, from_inline

    if value is None:
        return None
    path = Path(value) if Path(value).is_absolute() else base / value
    try:
        if path.is_file():
            data = load_yaml(path)
            from_data(data, f"queue_map {value}")
            return data
        if "=" not in value:
            raise ConfigError(f"{path}: no such file (and not inline PATTERN=QUEUE rules)")
        from_inline(value, "queue_map")
        return value
    except ConfigError as exc:
        raise _fail(where, f"queue_map: {exc}") from None


def _flat_axes(spec: _GridSpec, model: str) -> dict[str, list[Any]]:
    reads = _model_reads(model)
    axes = {k: v for k, v in spec.settings.items() if k in reads}
    own = spec.model_settings.get(model)
    if isinstance(own, dict):
        axes.update(own)
    return axes


def _variants(spec: _GridSpec, model: str):
    """(where, settings) of every single axis value and every listed variant of ``model``."""
    own = spec.model_settings.get(model)
    for key, values in _flat_axes(spec, model).items():
        prefix = f"model_settings.{model}" if isinstance(own, dict) and key in own else "settings"
        for i, v in enumerate(values):
            yield f"{prefix}.{key}[{i}]", {key: v}
    if isinstance(own, list):
        for i, v in enumerate(own):
            yield f"model_settings.{model}[{i}]", v


def _combinations(spec: _GridSpec, model: str) -> list[dict[str, Any]]:
    """The settings of each cell of ``model``: the product of its axes, times its variants."""
    axes = _flat_axes(spec, model)
    keys = list(axes)
    combos = [dict(zip(keys, c)) for c in itertools.product(*(axes[k] for k in keys))]
    own = spec.model_settings.get(model)
    if isinstance(own, list):
        combos = [{**c, **v} for c in combos for v in own]
    return combos


def _tail(exc: Exception) -> str:
    """The config checker's message without the source it was given (the grid names the field)."""
    msg = str(exc)
    head, sep, rest = msg.partition(": ")
    return rest if sep and head.startswith(("model_settings.", "settings.")) else msg
