"""Which makeway queue a trace's workload goes to: ``--queue-map``.

A real trace names its own tenants (Philly's virtual clusters, Alibaba's QoS classes, an SWF log's
queues, partitions or users); a study replays it against *its* config, whose queues are different.
The map is a small YAML file or inline text, read at a glance::

    by: queue                 # the record field matched: queue (the trace's own: VC, QoS class,
                              # SWF queue/partition; aliases vc, qos, partition), user, or id
    map: {6214e9: prod, 11cb48: research}   # exact values -> queue
    rules:                    # then these, in order; the first that matches wins
      - {match: "0e*", queue: research}     # shell glob (fnmatch, case-sensitive)
      - {regex: "^(ed|10)", queue: batch}   # Python regular expression (re.search)
      - {by: user, match: "u1?", queue: prod}  # a rule may match another field
    default: batch            # everything else; without it, unmatched workloads keep their queue

Inline: ``--queue-map '6214e9=prod,11cb48=research,0e*=research,*=batch'``: comma-separated
``PATTERN=QUEUE`` globs tried in order (``*=Q`` is the default); ``user:u1*=prod`` matches another
field. Targets are checked against the config before any run: an unknown queue, a bad pattern or an
unknown field is an error naming it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from makeway.errors import ConfigError

FIELDS = ("queue", "user", "id")
ALIASES = {"vc": "queue", "qos": "queue", "partition": "queue"}
_KEYS = {"by", "map", "rules", "default"}
_RULE_KEYS = {"by", "match", "regex", "queue"}


@dataclass(frozen=True, slots=True)
class Rule:
    field: str
    pattern: str
    queue: str
    test: Callable[[str], bool]


@dataclass(slots=True)
class QueueMap:
    """Exact values first, then rules in order, then the default. ``where`` names the source."""

    by: str = "queue"
    exact: dict[str, str] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    default: str | None = None
    where: str = "--queue-map"
    _memo: dict[tuple[str | None, ...], str | None] = field(default_factory=dict)

    def target(self, rec: dict[str, Any]) -> str | None:
        """The queue for one workload record, or None to keep the record's own."""
        key = tuple(_value(rec, f) for f in FIELDS)
        if key in self._memo:
            return self._memo[key]
        found = self._target(dict(zip(FIELDS, key)))
        if len(self._memo) < 100_000:
            self._memo[key] = found
        return found

    def _target(self, values: dict[str, str | None]) -> str | None:
        v = values[self.by]
        if v is not None and v in self.exact:
            return self.exact[v]
        for r in self.rules:
            v = values[r.field]
            if v is not None and r.test(v):
                return r.queue
        return self.default

    def apply(self, rec: dict[str, Any]) -> dict[str, Any]:
        """The record with its queue replaced; the trace's own queue is kept as ``labels.trace_queue``."""
        q = self.target(rec)
        if q is None or q == rec.get("queue"):
            return rec
        out = dict(rec)
        out["labels"] = {**(rec.get("labels") or {}), "trace_queue": str(rec.get("queue"))}
        out["queue"] = q
        return out

    def targets(self) -> list[str]:
        out = list(self.exact.values()) + [r.queue for r in self.rules]
        if self.default is not None:
            out.append(self.default)
        return list(dict.fromkeys(out))

    def check(self, queues: Iterable[str]) -> None:
        """Every target must be a queue of the config."""
        known = list(queues)
        for q in self.targets():
            if q not in known:
                raise ConfigError(f"{self.where}: queue: unknown queue {q!r} (config queues: {', '.join(known[:8])})")


def _value(rec: dict[str, Any], name: str) -> str | None:
    v = rec.get(name)
    return None if v is None else str(v)


def _field(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: must be one of {', '.join(FIELDS + tuple(ALIASES))}, not {value!r}")
    name = ALIASES.get(value, value)
    if name not in FIELDS:
        raise ConfigError(f"{where}: unknown field {value!r} (known: {', '.join(FIELDS + tuple(ALIASES))})")
    return name


def _queue(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be a queue name, not {value!r}")
    return value


def _glob(pattern: str, where: str) -> Callable[[str], bool]:
    if not pattern:
        raise ConfigError(f"{where}: empty pattern")
    return re.compile(fnmatch.translate(pattern)).match


def _regex(pattern: Any, where: str) -> Callable[[str], bool]:
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}: must be a non-empty regular expression")
    try:
        return re.compile(pattern).search
    except re.error as exc:
        raise ConfigError(f"{where}: bad regular expression {pattern!r}: {exc}") from None


def from_data(data: Any, where: str) -> QueueMap:
    """A map from the parsed YAML document (see the module docstring)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the top level must be a mapping with by, map, rules, default")
    unknown = sorted(set(map(str, data)) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]}: unknown field (known: by, map, rules, default)")
    by = _field(data.get("by", "queue"), f"{where}: by")
    exact = data.get("map") or {}
    if not isinstance(exact, dict):
        raise ConfigError(f"{where}: map: must be a mapping of trace values to queues")
    qm = QueueMap(by=by, where=where,
                  exact={str(k): _queue(v, f"{where}: map.{k}") for k, v in exact.items()},
                  default=None if data.get("default") is None else _queue(data["default"], f"{where}: default"))
    rules = data.get("rules") or []
    if not isinstance(rules, list):
        raise ConfigError(f"{where}: rules: must be a list of {{match|regex, queue}}")
    for i, r in enumerate(rules):
        at = f"{where}: rules.{i}"
        if not isinstance(r, dict):
            raise ConfigError(f"{at}: must be a mapping with match or regex, and queue")
        bad = sorted(set(map(str, r)) - _RULE_KEYS)
        if bad:
            raise ConfigError(f"{at}.{bad[0]}: unknown field (known: by, match, regex, queue)")
        if ("match" in r) == ("regex" in r):
            raise ConfigError(f"{at}: give exactly one of match (a glob) or regex")
        fld = _field(r.get("by", by), f"{at}.by")
        queue = _queue(r.get("queue"), f"{at}.queue")
        if "match" in r:
            if not isinstance(r["match"], (str, int)):
                raise ConfigError(f"{at}.match: must be a glob pattern")
            pat = str(r["match"])
            qm.rules.append(Rule(fld, pat, queue, _glob(pat, f"{at}.match")))
        else:
            qm.rules.append(Rule(fld, str(r["regex"]), queue, _regex(r["regex"], f"{at}.regex")))
    return qm


def from_inline(text: str, where: str = "--queue-map") -> QueueMap:
    """``PATTERN=QUEUE[,...]`` globs in order, ``*=Q`` the default, ``FIELD:PATTERN=QUEUE`` another field."""
    qm = QueueMap(where=where)
    for i, part in enumerate(p.strip() for p in text.split(",")):
        if not part:
            continue
        at = f"{where}: rule {i + 1} ({part!r})"
        pattern, sep, queue = part.rpartition("=")
        if not sep or not pattern:
            raise ConfigError(f"{at}: expected PATTERN=QUEUE")
        fld = "queue"
        head, colon, rest = pattern.partition(":")
        if colon and (head in FIELDS or head in ALIASES):
            fld, pattern = _field(head, at), rest
        queue = _queue(queue.strip(), at)
        if pattern == "*" and fld == "queue":
            qm.default = queue
            continue
        qm.rules.append(Rule(fld, pattern, queue, _glob(pattern, at)))
    if not qm.rules and qm.default is None:
        raise ConfigError(f"{where}: no rules (expected PATTERN=QUEUE[,...] or a YAML file)")
    return qm


def load(spec: str) -> QueueMap:
    """A YAML file when ``spec`` names one, else inline rules."""
    from makeway.config import load_yaml

    path = Path(spec)
    if path.is_file():
        return from_data(load_yaml(path), f"--queue-map {spec}")
    if "=" not in spec:
        raise ConfigError(f"--queue-map: {spec}: no such file (and not inline PATTERN=QUEUE rules)")
    return from_inline(spec)


__all__ = ["QueueMap", "from_data", "from_inline", "load"]
