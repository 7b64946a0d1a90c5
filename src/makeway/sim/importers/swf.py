"""Standard Workload Format (Parallel Workloads Archive, SWF v2.2) importer.

One job per line, 18 whitespace-separated fields, ``-1`` = unknown, ``;`` header comments
(``MaxNodes``, ``MaxProcs``, ``Queue: n name``, ``Partition: n name``, ``Preemption``...).

Mapping (why: SWF describes a space-shared machine of interchangeable processors):

* job number (1) -> ``id`` (as a string); submit (2) -> ``submit`` (seconds from log start);
  run time (4) -> ``duration``; processors -> one task of ``{cpu: procs}`` on a processor pool (``layout="pool"``, default) or ``procs`` one-cpu tasks (a
  gang, ``layout="nodes"``); requested time (9) ->
  ``requested_duration``; user (12) -> ``user: u<n>``.
* processors: ``processors="requested"`` (default) reads requested processors (8) and falls back on
  allocated (5) when the log has no request; ``"allocated"`` reads allocated first, requested when
  -1. Requested is the job's demand, what AccaSim and most HPC simulators replay, and what a
  different machine or scheduler would be asked for; allocated is what the logged machine gave,
  rounded to its own granularity (LANL's CM-5 gave 512 processors to 1,182 jobs that asked for 256,
  partitions being powers of two of at least 32). ``ImportStats.notes`` counts the jobs whose two
  numbers differ, so the choice is never silent.
* queue: the queue (15) named from the header (``Queue:`` lines) when set, else the partition
  (16), else ``default``; ``queue_by`` chooses ``user``/``group`` instead.
* status (11): 1 completed and 0 failed are replayed for their run time; 5 cancelled is replayed
  when it ran (run time > 0) and dropped otherwise (no demand). 2/3/4 are the parts of a
  checkpointed or swapped job (same job number): they are merged into one workload whose
  duration is the sum of the parts' run times, submitted at the first part's submit time.
* observed wait (3) and status go to ``settings`` (``wait``, ``status``) for validation.

Lines may be out of submit order: a first pass checks order (and partial-execution records);
only when needed are compact tuples collected and sorted, never full dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from makeway.config import MAX_TASKS, MAX_TIME
from makeway.sim.importers._common import ImportStats, Reporter, finite, numbered_lines, quiet, workload, wrong_width

FIELDS = 18
QUEUE_BY = ("auto", "user", "group")


@dataclass(slots=True)
class SwfHeader:
    """What the ``;`` header says about the machine and its queues."""

    max_nodes: int | None = None
    max_procs: int | None = None
    preemption: str | None = None
    queues: dict[int, str] = field(default_factory=dict)
    partitions: dict[int, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)


def read_header(path: Path) -> SwfHeader:
    """Parse the leading ``;`` comment block (stops at the first job line)."""
    hdr = SwfHeader()
    for _, line in numbered_lines(path, quiet(path)):
        s = line.strip()
        if not s:
            continue
        if not s.startswith(";"):
            break
        body = s[1:].strip()
        key, sep, value = body.partition(":")
        if not sep or " " in key.strip():
            continue
        key, value = key.strip(), value.strip()
        hdr.fields.setdefault(key, value)
        try:
            if key == "MaxNodes":
                hdr.max_nodes = int(value)
            elif key == "MaxProcs":
                hdr.max_procs = int(value)
            elif key in ("Queue", "Partition"):
                num_s, _, name = value.partition(" ")
                target = hdr.queues if key == "Queue" else hdr.partitions
                target[int(num_s)] = name.strip() or num_s
        except ValueError:
            continue
        if key == "Preemption":
            hdr.preemption = value
    return hdr


def queue_name(hdr: SwfHeader, queue: int, partition: int) -> str:
    """The workload's queue: named queue (15), else named partition (16), else ``default``."""
    if queue >= 0:
        name = hdr.queues.get(queue)
        return f"queue-{name}" if name is not None and name.isdigit() else (name or f"queue-{queue}")
    if partition >= 0:
        return hdr.partitions.get(partition) or f"partition-{partition}"
    return "default"


# compact row: (submit, lineno, job, wait, run, procs, req_time, status, user, group, queue, partition)
Row = tuple[float, int, int, float, float, int, float, int, int, int, int, int]


PROCESSORS = ("requested", "allocated")


def _parse(lineno: int, line: str, rep: Reporter, processors: str = "requested") -> Row | None:
    parts = line.split()
    if len(parts) < FIELDS:
        rep.bad(lineno, wrong_width(FIELDS, len(parts), "fields"))
        return None
    if len(parts) > FIELDS:
        rep.note(lineno, f"{len(parts)} fields, using the first {FIELDS}")
    try:
        v = [float(p) for p in parts[:FIELDS]]
    except ValueError:
        bad = next(p for p in parts[:FIELDS] if not _is_number(p))
        rep.bad(lineno, f"field {parts.index(bad) + 1} is not a number: {bad!r}")
        return None
    if not finite(*v):
        i = next(i for i, x in enumerate(v) if not finite(x))
        rep.bad(lineno, f"field {i + 1} is not a finite number: {parts[i]!r}")
        return None
    job, submit, wait, run, alloc, req_procs, req_time, status = int(v[0]), v[1], v[2], v[3], v[4], v[7], v[8], int(v[10])
    if submit < 0:
        rep.bad(lineno, f"job {job}: submit time {parts[1]} is unknown or negative")
        return None
    if processors == "requested":
        procs = int(req_procs) if req_procs > 0 else int(alloc)
    else:
        procs = int(alloc) if alloc > 0 else int(req_procs)
    if alloc > 0 and req_procs > 0 and alloc != req_procs:
        rep.stats.count(f"jobs whose allocated processors (field 5) differ from requested (field 8): "
                        f"{processors} read (--swf-processors)")
    if procs <= 0:
        rep.bad(lineno, f"job {job}: no processor count (allocated and requested are {parts[4]}, {parts[7]})")
        return None
    if procs > MAX_TASKS:
        rep.bad(lineno, f"job {job}: {procs} processors; the limit is {MAX_TASKS:,}")
        return None
    if max(submit, run, req_time) > MAX_TIME:
        rep.bad(lineno, f"job {job}: submit, run or requested time above {MAX_TIME:g} s")
        return None
    return (submit, lineno, job, wait, run, procs, req_time, status, int(v[11]), int(v[12]), int(v[14]), int(v[15]))


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _rows(path: Path, rep: Reporter, processors: str = "requested") -> Iterator[Row]:
    for lineno, line in numbered_lines(path, rep):
        s = line.strip()
        if not s or s.startswith(";"):
            continue
        row = _parse(lineno, s, rep, processors)
        if row is not None:
            yield row


def _needs_sort(path: Path) -> bool:
    """Cheap first pass: True when submit times go backwards or partial executions (2/3/4) occur."""
    last = float("-inf")
    for _, line in numbered_lines(path, quiet(path)):
        if not line or line.lstrip().startswith(";"):
            continue
        parts = line.split()
        if len(parts) < FIELDS:
            continue
        try:
            submit = float(parts[1])
        except ValueError:
            continue
        if submit < last or parts[10] in ("2", "3", "4"):
            return True
        last = submit
    return False


def _merge_partials(rows: list[Row], rep: Reporter) -> list[Row]:
    """Fold status 2/3/4 parts of one job into one row: first submit, summed run, last status."""
    first: dict[int, int] = {}
    out: list[Row | None] = []
    for row in rows:
        job, status = row[2], row[7]
        if status in (2, 3, 4):
            idx = first.get(job)
            if idx is None:
                first[job] = len(out)
                out.append(row)
                continue
            head = out[idx]
            assert head is not None
            final = 1 if status == 3 else 0 if status == 4 else head[7]
            out[idx] = (head[0], head[1], job, head[3], head[4] + max(row[4], 0.0), max(head[5], row[5]),
                        head[6], final, head[8], head[9], head[10], head[11])
            rep.stats.merged += 1
            if status in (3, 4):
                del first[job]
        else:
            out.append(row)
    for job, idx in first.items():
        head = out[idx]
        if head is not None:
            rep.note(head[1], f"job {job}: partial execution without a final part (status 3/4)")
    return [r for r in out if r is not None]


LAYOUTS = ("pool", "nodes")


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}")


def read(path: Path, *, strict: bool = False, stats: ImportStats | None = None,
         queue_by: str = "auto", layout: str = "pool", processors: str = "requested") -> Iterator[dict[str, Any]]:
    """Stream SWF jobs as makeway trace records, sorted by submit time.

    ``layout="pool"`` (default): a job is one task of ``procs`` cpu on a machine modelled as one pool
    of processors, which is how the archive's logs are replayed (processors are interchangeable,
    there is no topology in SWF) and costs one allocation per job. ``layout="nodes"``: a gang of
    ``procs`` one-cpu tasks on ``MaxNodes`` nodes, when node-level placement matters.
    ``processors``: ``requested`` (field 8, default) or ``allocated`` (field 5) first; see the module doc.
    """
    if processors not in PROCESSORS:
        raise ValueError(f"processors must be one of {PROCESSORS}")
    if queue_by not in QUEUE_BY:
        raise ValueError(f"queue_by must be one of {QUEUE_BY}")
    _check_layout(layout)
    stats = stats if stats is not None else ImportStats()
    rep = Reporter(path, strict, stats)
    hdr = read_header(path)
    from makeway.sim.importers import swf_scan  # numpy: loaded only when a log is read

    tp = swf_scan.tape(path, processors)
    if tp is not None:
        yield from _replayed(tp, hdr, queue_by, rep, layout)
        return
    if _needs_sort(path):
        rows = list(_rows(path, rep, processors))
        rows = _merge_partials(rows, rep)
        rows.sort(key=lambda r: (r[0], r[1]))
        source: Iterator[Row] = iter(rows)
    else:
        source = _rows(path, rep, processors)
    for row in source:
        rec = _record(row, hdr, queue_by, rep, layout)
        if rec is not None:
            stats.records += 1
            yield rec


def _replayed(tp: "swf_scan.Tape", hdr: SwfHeader, queue_by: str, rep: Reporter,
              layout: str) -> Iterator[dict[str, Any]]:
    """The records of a tape, its warnings reported where the line-by-line reader reported them."""
    from makeway.sim.importers import swf_scan

    events, pos = tp.events, tp.pos.tolist()
    e, ne = 0, len(events)
    for i, row in enumerate(swf_scan.records(tp)):
        if e < ne and pos[e] <= i:
            hi = e
            while hi < ne and pos[hi] <= i:
                hi += 1
            swf_scan.replay(events, rep, e, hi)
            e = hi
        rec = _record(row, hdr, queue_by, rep, layout)
        rep.stats.records += 1
        yield rec  # type: ignore[misc]
    swf_scan.replay(events, rep, e, ne)
    swf_scan.forget()


def workloads(path: Path, *, strict: bool = False, stats: ImportStats | None = None, queue_by: str = "auto",
              layout: str = "pool", processors: str = "requested") -> Iterator[Any] | None:
    """``read`` as core ``Workload`` objects, made straight from the log's arrays (no record dicts, no
    record validation: every value was checked as ``read`` checks it, and is what ``parse_record``
    would make of its record), or None when the log takes the line-by-line reader."""
    if processors not in PROCESSORS or queue_by not in QUEUE_BY:
        return None
    _check_layout(layout)
    from makeway.sim.importers import swf_scan

    tp = swf_scan.tape(path, processors)
    if tp is None:
        return None
    tp.parsed = None  # what ``cluster`` reads; not needed from here on
    stats = stats if stats is not None else ImportStats()
    return _made(tp, read_header(path), queue_by, Reporter(path, strict, stats), layout)


def _made(tp: "swf_scan.Tape", hdr: SwfHeader, queue_by: str, rep: Reporter, layout: str) -> Iterator[Any]:
    from makeway.core.objects import TaskGroup, Workload
    from makeway.sim.importers import swf_scan

    events, pos = tp.events, tp.pos.tolist()
    e, ne = 0, len(events)
    names: dict[tuple[int, int], str] = {}
    stats = rep.stats
    pool = layout == "pool"
    for i, (submit, _, job, wait, run, procs, req_time, status, user, group, queue, partition) in \
            enumerate(swf_scan.records(tp)):
        if e < ne and pos[e] <= i:
            hi = e
            while hi < ne and pos[hi] <= i:
                hi += 1
            swf_scan.replay(events, rep, e, hi)
            e = hi
        if queue_by == "auto":
            q = names.get((queue, partition))
            if q is None:
                q = names[(queue, partition)] = queue_name(hdr, queue, partition)
        elif queue_by == "user":
            q = f"user-{user}" if user >= 0 else "default"
        else:
            q = f"group-{group}" if group >= 0 else "default"
        settings: dict[str, Any] = {}
        if status >= 0:
            settings["status"] = status
        if wait >= 0:
            settings["wait"] = int(wait) if wait.is_integer() else wait
        group_ = TaskGroup(1, {"cpu": procs}) if pool else TaskGroup(procs, {"cpu": 1})
        stats.records += 1
        yield Workload(str(job), q, float(submit), float(run), (group_,), 0, True, 0.0,
                       float(req_time) if req_time > 0 else None, f"u{user}" if user >= 0 else None, {}, settings)
    swf_scan.replay(events, rep, e, ne)
    swf_scan.forget()  # read to its end: nothing reads the log's arrays again


def _record(row: Row, hdr: SwfHeader, queue_by: str, rep: Reporter, layout: str = "pool") -> dict[str, Any] | None:
    submit, lineno, job, wait, run, procs, req_time, status, user, group, queue, partition = row
    if status == 5 and run <= 0:
        rep.stats.drop("cancelled before start")
        return None
    if run < 0:
        rep.bad(lineno, f"job {job}: run time unknown (-1)")
        return None
    if queue_by == "user":
        q = f"user-{user}" if user >= 0 else "default"
    elif queue_by == "group":
        q = f"group-{group}" if group >= 0 else "default"
    else:
        q = queue_name(hdr, queue, partition)
    settings: dict[str, Any] = {}
    if status >= 0:
        settings["status"] = status
    if wait >= 0:
        settings["wait"] = int(wait) if wait.is_integer() else wait
    tasks = [{"count": 1, "resources": {"cpu": procs}}] if layout == "pool" else [{"count": procs, "resources": {"cpu": 1}}]
    return workload(str(job), q, submit, run, tasks,
                    requested_duration=req_time if req_time > 0 else None,
                    user=f"u{user}" if user >= 0 else None,
                    settings=settings or None)


def cluster(path: Path, *, queue_by: str = "auto", layout: str = "pool") -> dict[str, Any] | None:
    """A config for the machine the header describes (processors as ``cpu``), or None.

    Nodes: with ``layout="pool"`` one pool node of ``MaxProcs`` cpus (see ``read``); with
    ``layout="nodes"``, ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` cpus when that divides evenly,
    otherwise one pool node of ``MaxProcs`` cpus: SWF jobs ask for processors, not nodes. Queues: ``root`` with one child per queue/partition the header names or a job uses,
    plus ``default`` (one pass over the file for the numbers the header does not name).
    """
    hdr = read_header(path)
    procs = hdr.max_procs or hdr.max_nodes
    if not procs or procs <= 0:
        return None
    _check_layout(layout)
    nodes_n = hdr.max_nodes
    if layout == "nodes" and nodes_n and nodes_n > 0 and procs % nodes_n == 0:
        nodes = [{"name": "node", "count": nodes_n, "capacity": {"cpu": procs // nodes_n}}]
    else:
        nodes = [{"name": "pool", "capacity": {"cpu": procs}}]
    queues: dict[str, Any] = {"root": {}}
    import numpy as np

    from makeway.sim.importers import swf_scan

    tp = swf_scan.tape(path)
    if queue_by == "auto":
        names = [queue_name(hdr, n, -1) for n in sorted(hdr.queues)]
        names += [queue_name(hdr, -1, n) for n in sorted(hdr.partitions)]
        if tp is not None and tp.parsed is not None:
            used = set(map(tuple, np.unique(tp.parsed[:, 2:4], axis=0).tolist()))
        else:
            used = {(row[10], row[11]) for row in _rows(path, quiet(path))}  # numbers the header may not name
        names += sorted({queue_name(hdr, q, p) for q, p in used} - set(names) - {"default"})
    else:
        col = 8 if queue_by == "user" else 9
        if tp is not None and tp.parsed is not None:
            ids = {i for i in np.unique(tp.parsed[:, col - 8]).tolist() if i >= 0}
        else:
            ids = {row[col] for row in _rows(path, quiet(path)) if row[col] >= 0}
        names = [f"{queue_by}-{i}" for i in sorted(ids)]
    for qname in names:
        queues[qname] = {"parent": "root"}
    queues["default"] = {"parent": "root"}
    name = hdr.fields.get("Installation") or hdr.fields.get("Computer") or path.name
    return {"name": name, "resources": ["cpu"], "nodes": nodes, "queues": queues,
            "preemption": {"model": "none", "settings": {}}}
