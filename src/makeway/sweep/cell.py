"""One cell of a sweep: its content address, the function every executor runs, and its stored result.

A cell's key hashes what decides its outcome: the config text, the trace's bytes, the model, the
axis values, the horizon, strictness, the trace format and makeway's version. Same key, same
result (the core is deterministic), so a finished cell is never run again and results from
different executors are interchangeable. The result file is written whole or not at all
(a temporary file renamed over), so a sweep killed at any instant leaves only finished cells.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from makeway.sweep.grid import CellSpec, cell_config, cell_queue_map

CELL_SCHEMA = "makeway.sweep-cell/1"
_trace_hashes: dict[str, str] = {}


def _version() -> str:
    from makeway import __version__

    return __version__


def content_hash(path: Optional[str]) -> Optional[str]:
    """sha256 of a trace file (or of a directory's files, by relative path), cached per path."""
    if path is None:
        return None
    if path in _trace_hashes:
        return _trace_hashes[path]
    h = hashlib.sha256()
    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            h.update(str(f.relative_to(p)).encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    _trace_hashes[path] = h.hexdigest()
    return _trace_hashes[path]


def cell_key(spec: CellSpec) -> str:
    ident = {"makeway": _version(), "config": hashlib.sha256(spec.config_text.encode()).hexdigest(),
             "trace": content_hash(spec.trace), "trace_format": spec.trace_format, "model": spec.model,
             "settings": spec.settings, "horizon": spec.horizon, "strict": spec.strict}
    if spec.queue_map is not None or spec.scale is not None or spec.swf_processors is not None:
        ident.update(queue_map=spec.queue_map, scale=spec.scale, swf_processors=spec.swf_processors)
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:24]


def keyed(spec: CellSpec) -> CellSpec:
    return dataclasses.replace(spec, key=cell_key(spec))


def _trimmed(results: dict[str, Any]) -> dict[str, Any]:
    """What the table and the comparison report read, without the per-event log (which grows with
    the trace): workload rows keep their times and counts, events only the preemptions."""
    keep = ("id", "queue", "submit", "first_start", "finish", "wait", "preemptions", "pending_reason")
    out = {k: v for k, v in results.items() if k not in ("workloads", "events")}
    out["workloads"] = [{k: w.get(k) for k in keep} for w in results.get("workloads") or []]
    out["events"] = [e for e in results.get("events") or [] if e.get("kind") == "preempt"]
    return out


def run_cell(spec: CellSpec) -> dict[str, Any]:
    """Simulate one cell and return its record (results and identity). The same function runs in a
    process pool, a Ray task or a Dask task; it reads nothing but the spec and the trace."""
    from makeway.sim.run import run

    cfg = cell_config(spec, spec.config_name)
    t0 = time.perf_counter()
    rec = run(cfg, Path(spec.trace) if spec.trace else None, spec.trace_format, strict=spec.strict,
              horizon=spec.horizon, queue_map=cell_queue_map(spec),
              trace_options={"processors": spec.swf_processors} if spec.swf_processors else None)
    meta = {"config": {"name": cfg.name, "model": spec.model, "path": spec.config_name},
            "trace": spec.trace}
    return {"schema": CELL_SCHEMA, "key": spec.key, "makeway": _version(), "model": spec.model,
            "config": spec.config_name, "trace": spec.trace, "settings": spec.settings,
            "horizon": spec.horizon, "elapsed_s": round(time.perf_counter() - t0, 3),
            "results": _trimmed(rec.results(meta))}


class CellStore:
    """``OUT/cells/<key>.json``, one file per finished cell."""

    def __init__(self, out: Path):
        self.dir = Path(out) / "cells"

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def done(self, key: str) -> bool:
        return self.path(key).is_file()

    def load(self, key: str) -> dict[str, Any]:
        return json.loads(self.path(key).read_text())

    def save(self, record: dict[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.path(record["key"])
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(record, fh, separators=(",", ":"), default=str)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def clean(self) -> int:
        """Remove temporary files a killed sweep left behind; how many there were."""
        if not self.dir.is_dir():
            return 0
        stale = list(self.dir.glob(".tmp-*.json"))
        for f in stale:
            f.unlink(missing_ok=True)
        return len(stale)
