"""Writing a results document to disk piece by piece, never whole in memory.

``Recorder.results`` builds the whole document as one dict; a run of 100,000 workloads then holds
every row twice (the dict and the JSON text) at the moment it is written. ``write_results`` writes
the same document member by member instead: the small members as ``json.dumps(..., indent=1)``
writes them, byte for byte, and the ``workloads`` and ``events`` arrays one element per line
(compact), each row made, written and dropped in turn. A reader (``json.load``) gets the same
document either way (``docs/results-schema.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Iterable

from makeway.sim.metrics import RESULTS_SCHEMA, Recorder

_STREAMED = ("workloads", "events")


def _member(key: str, value: Any) -> str:
    """``"key": value`` exactly as it stands inside ``json.dumps(document, indent=1)``."""
    text = json.dumps({key: value}, indent=1, default=str)
    return text[2:-2]  # drop "{\n" and "\n}"


def _array(out: IO[str], key: str, items: Iterable[Any], encoded: bool = False) -> None:
    encode = json.JSONEncoder(separators=(",", ":"), default=str).encode
    out.write(f" {json.dumps(key)}: [")
    first = True
    for item in items:
        out.write("\n  " if first else ",\n  ")
        out.write(item if encoded else encode(item))
        first = False
    out.write("]" if first else "\n ]")


def write_results(rec: Recorder, meta: dict[str, Any] | None, path: Path | str) -> None:
    """The document ``rec.results(meta)`` describes, written to ``path`` as it is produced."""
    head = {"schema": RESULTS_SCHEMA, **(meta or {}), "model_options": dict(rec.model_options),
            "capacity": dict(rec.capacity), "summary": rec.summary(), "queues": rec.queue_table(),
            "quota_convergence": rec.convergence, "timeseries": rec.timeseries()}
    with open(path, "w") as out:
        out.write("{\n")
        for key, value in head.items():
            if key in _STREAMED:
                continue
            out.write(_member(key, value))
            out.write(",\n")
        rows = getattr(rec, "workload_json", None)  # a recorder that encodes its rows itself (the fast core's)
        _array(out, "workloads", rows() if rows is not None else rec.iter_workload_rows(), rows is not None)
        out.write(",\n")
        _array(out, "events", rec.events)
        out.write("\n}")


__all__ = ["write_results"]
