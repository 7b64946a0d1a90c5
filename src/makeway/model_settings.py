"""Per-model settings: which pydantic class checks which ``settings`` block, and the check itself.

Each model has three settings classes (``policies/<model>/settings.py``, named by ``makeway.registry``): model-level (``preemption.settings``),
queue-level (``queues.<q>.settings``, also a config event's ``settings``) and workload-level
(``settings`` of a trace workload). Unknown keys are errors that name the field path.

One config may carry settings for several models (one queue tree describing a Kueue cohort and a
YuniKorn queue), and ``--model``/``compare --model`` run a config under a model it was not written
for. So a key is judged like this:

* a key the selected model reads is checked against that model's class;
* a key only other models read is checked against theirs (it must be valid for one of them) and is
  ignored by the run;
* a key no model reads is an error: ``queues.a.settings.preemptoin: unknown field``.

Nested blocks (``preemption: {withinClusterQueue: ...}``, ``properties: {...}``) are always checked
in full against the class that owns them. Trace records are read before any model is chosen, so
their settings are judged against every model (selected model ``None``); workload settings may also
carry the trace importers' provenance keys (``TRACE_METADATA``), which no model reads.
"""

from __future__ import annotations

import difflib
import functools
import typing
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from pydantic import BaseModel, ValidationError

from makeway.errors import ConfigError
from makeway.policies.settings_common import Settings, field_names
from makeway.registry import MODELS, entries, resolve

LEVELS = ("model", "queue", "workload")


@dataclass(frozen=True)
class SettingsClasses:
    model: type[Settings]
    queue: type[Settings]
    workload: type[Settings]

    def at(self, level: str) -> type[Settings]:
        return getattr(self, level)


class _ByClass(Mapping[str, SettingsClasses]):
    """Policy -> its settings classes, each model's imported when first asked for: a run checks its
    own model's keys, and builds every model's pydantic classes (a fifth of a short run's CPU) only
    for a key its model does not read."""

    def __init__(self) -> None:
        self._specs = {e.policy: e.settings for e in entries()}
        self._got: dict[str, SettingsClasses] = {}

    def __getitem__(self, policy: str) -> SettingsClasses:
        hit = self._got.get(policy)
        if hit is None:
            hit = self._got[policy] = SettingsClasses(*map(resolve, self._specs[policy]))
        return hit

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


# keyed by the model's class (the registry's ``policy``), so an alias of a model name shares its settings
BY_CLASS: Mapping[str, SettingsClasses] = _ByClass()

# What the trace importers (sim/importers) record about each workload: provenance no model reads.
TRACE_METADATA = frozenset({"scheduling_class", "observed_evictions", "end", "censored",  # google2011
                            "wait", "status",                                           # swf
                            "phase", "num_gpu", "gpu_milli", "never_scheduled"})        # alibaba


def settings_classes(model: str) -> SettingsClasses:
    """The settings classes of a model name (``ConfigError`` for a name no registry knows)."""
    found = MODELS.get(model)
    if found is None:
        raise ConfigError(f"preemption.model: no settings classes for model {model!r}")
    return BY_CLASS[found.policy]


@functools.cache
def _owners(level: str) -> dict[str, tuple[type[Settings], ...]]:
    """Key -> the classes (of every model) that read it at this level, in registry order."""
    out: dict[str, tuple[type[Settings], ...]] = {}
    for cls in dict.fromkeys(c.at(level) for c in BY_CLASS.values()):
        for key in field_names(cls):
            out[key] = out.get(key, ()) + (cls,)
    return out


def _nested_names(cls: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """Every key a class and the classes nested in it accept (for "did you mean")."""
    seen = set() if seen is None else seen
    if cls in seen:
        return set()
    seen.add(cls)
    out = set(field_names(cls))
    for f in cls.model_fields.values():
        stack = [f.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                out |= _nested_names(t, seen)
            stack.extend(typing.get_args(t))
    return out


def _hint(key: Any, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(key), sorted(candidates), n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _path(where: str, loc: tuple, data: Any) -> str:
    """``where`` + the error location, list indexes replaced by the element's ``name`` when it has one."""
    from makeway.config import _named_loc  # config imports this module when it validates settings

    return ".".join([where, *_named_loc(loc, data)])


def _errors(cls: type[Settings], data: Mapping[str, Any], where: str) -> dict[Any, list[str]]:
    """Top-level key -> problems, for a block checked against one class."""
    try:
        cls.model_validate(data)
    except ValidationError as exc:
        out: dict[Any, list[str]] = {}
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not str(p).startswith("function-"))
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field" + _hint(loc[-1] if loc else "", _nested_names(cls))
            elif (isinstance(err.get("input"), (str, int, float)) and not msg.startswith("unknown field")
                  and repr(err["input"]) not in msg):
                msg += f" (got {err['input']!r})"
            line = f"{_path(where, loc, data)}: {msg}"
            bucket = out.setdefault(loc[0] if loc else None, [])
            if line not in bucket:
                bucket.append(line)
        return out
    return {}


def settings_problems(level: str, data: Any, model: str | None, where: str) -> list[str]:
    """Problems of one settings block (``[]`` when valid); ``model=None`` judges it against every model."""
    if data is None:
        return []
    if not isinstance(data, dict):
        return [f"{where}: expected a mapping of settings, got {type(data).__name__}"]
    own_cls = settings_classes(model).at(level) if model is not None else None
    own_keys = set(field_names(own_cls)) if own_cls is not None else set()
    owners: dict[str, tuple[type[Settings], ...]] = {}
    if any(k not in own_keys for k in data):  # only then are other models' classes read
        owners = _owners(level)
    problems: list[str] = []
    checked: dict[type[Settings], dict[Any, list[str]]] = {}

    def check(cls: type[Settings]) -> dict[Any, list[str]]:
        if cls not in checked:
            keys = set(field_names(cls))
            checked[cls] = _errors(cls, {k: v for k, v in data.items() if k in keys}, where)
        return checked[cls]

    for key in data:
        if level == "workload" and key in TRACE_METADATA and key not in own_keys:
            continue
        if key in own_keys:
            problems.extend(check(own_cls).get(key, ()))  # type: ignore[arg-type]
        elif key in owners:
            found = [check(c).get(key) for c in owners[key]]
            if all(found):
                problems.extend(found[0])  # type: ignore[arg-type]
        else:
            known = own_keys or set(owners)
            problems.append(f"{where}.{key}: unknown field{_hint(key, known)}")
    return problems


def validate_config_settings(cfg: Any, source: str) -> None:
    """Check ``preemption.settings`` and every ``queues.<q>.settings`` of a parsed ``ClusterConfig``."""
    model = cfg.preemption.model
    problems = settings_problems("model", cfg.preemption.settings, model, "preemption.settings")
    for name, q in cfg.queues.items():
        problems += settings_problems("queue", q.settings, model, f"queues.{name}.settings")
    if problems:
        raise ConfigError(f"{source}: {'; '.join(problems)}")


_TRACE_SEEN: dict[tuple, str | None] = {}


def trace_settings_problem(level: str, data: Any) -> str | None:
    """For a trace record (no model chosen yet): one message naming every bad key, or None.

    Traces repeat a few settings blocks millions of times, so verdicts on blocks of plain values
    (type included) are remembered, a few thousand at most.
    """
    if not data or (level == "workload" and TRACE_METADATA.issuperset(data)):
        return None
    try:
        key: tuple | None = (level, *((k, type(v), v) for k, v in data.items()))  # True == 1, but not here
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _TRACE_SEEN:
        return _TRACE_SEEN[key]
    problems = settings_problems(level, data, None, "settings")
    verdict = "; ".join(problems) if problems else None
    if key is not None:
        if len(_TRACE_SEEN) >= 4096:
            _TRACE_SEEN.clear()
        _TRACE_SEEN[key] = verdict
    return verdict
