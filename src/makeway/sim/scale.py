"""``--scale-cluster F``: the same cluster with F times the nodes, so a trace's load contends (or not).

GPU traces describe clusters far larger than their load (Philly averages 374 busy GPUs of 2,816):
replayed as is, nothing ever waits and no model has anything to decide. Scaling keeps the node
kinds and shrinks or grows how many of each there are.

* A node kind is a capacity with its labels; config entries of the same kind (Alibaba lists each
  machine on its own line) are counted together, in order of first appearance.
* Each kind gets ``max(1, floor(count * F + 0.5))`` nodes: rounded half up, and never zero, so every
  kind a workload may need survives the shrink.
* A kind that was one entry keeps its name; a kind gathered from several entries becomes one entry
  named after its first node (``count`` expands it to ``name-0``, ``name-1``, ...).
* With ``quotas=True`` (used for clusters built from a trace, whose guarantees the importer derived
  from the trace's own sizes, e.g. Philly VC node counts) queue ``guaranteed`` and ``max`` quantities
  scale too, rounded half up and never below 1 where they were positive. A config written by hand
  keeps its quotas: they are the user's.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from makeway.errors import ConfigError


def _round(x: float) -> int:
    return int(math.floor(x + 0.5))


def check_factor(factor: float) -> None:
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ConfigError(f"--scale-cluster: {factor} is not a factor > 0")


def scale_cluster(data: dict[str, Any], factor: float, *, quotas: bool = False) -> dict[str, Any]:
    """A copy of the config dict ``data`` with every node kind scaled by ``factor`` (see module doc)."""
    check_factor(factor)
    out = copy.deepcopy(data)
    kinds: dict[tuple, dict[str, Any]] = {}
    for entry in out.get("nodes") or []:
        key = (tuple(sorted((str(k), str(v)) for k, v in (entry.get("capacity") or {}).items())),
               tuple(sorted((entry.get("labels") or {}).items())))
        kind = kinds.get(key)
        if kind is None:
            kinds[key] = {"entry": dict(entry), "count": int(entry.get("count", 1)), "entries": 1}
        else:
            kind["count"] += int(entry.get("count", 1))
            kind["entries"] += 1
    nodes = []
    for kind in kinds.values():
        entry = kind["entry"]
        n = max(1, _round(kind["count"] * factor))
        entry.pop("count", None)
        if n > 1 or kind["entries"] > 1:
            entry["count"] = n
        nodes.append(entry)
    out["nodes"] = nodes
    if quotas:
        for q in (out.get("queues") or {}).values():
            for key in ("guaranteed", "max"):
                if isinstance(q, dict) and isinstance(q.get(key), dict):
                    q[key] = {r: _scale_quantity(v, factor) for r, v in q[key].items()}
    return out


def _scale_quantity(value: Any, factor: float) -> Any:
    from makeway.core.resources import parse_quantity

    v = float(parse_quantity(value))
    if v <= 0:
        return value
    return max(1, _round(v * factor))


def describe(data: dict[str, Any]) -> str:
    """One line: how many nodes, of how many kinds, with what in all (for the terminal, not 10,000 lines)."""
    from makeway.core.resources import format_quantity, parse_quantity

    total: dict[str, float] = {}
    count = 0
    for entry in data.get("nodes") or []:
        n = int(entry.get("count", 1))
        count += n
        for r, v in (entry.get("capacity") or {}).items():
            total[r] = total.get(r, 0) + n * float(parse_quantity(v))
    caps = ", ".join(f"{r} {format_quantity(int(v) if float(v).is_integer() else v)}" for r, v in total.items())
    queues = [q for q in (data.get("queues") or {}) if q != "root"]
    return f"{count:,} nodes ({caps}), {len(queues)} queues"


__all__ = ["check_factor", "describe", "scale_cluster"]
