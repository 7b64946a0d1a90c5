"""Google cluster trace 2011-2 (Borg) ``task_events`` importer.

Rows (CSV, no header): time (microseconds), missing-info, job id, task index, machine id, event
type, user (hashed), scheduling class, priority (0-11), CPU request, memory request, disk
request (normalised to the largest machine), different-machines constraint.

Mapping, and why:

* One workload per task *submission*, id ``<job>.<task index>`` (``.<k>`` appended for the k-th
  resubmission). Borg schedules tasks independently, so a task is the unit a model places.
* ``EVICT`` followed by a re-``SUBMIT`` is NOT a new workload: the eviction is what our models
  decide themselves; the count of observed evictions goes to ``settings.observed_evictions`` for
  comparison with ours. ``FAIL``, ``KILL`` and ``LOST`` end a submission; a later ``SUBMIT`` of the
  same task is a new workload (a retry or a resubmission is new demand).
* ``duration`` = the last run (``SCHEDULE`` to the event that ended it). A submission that never
  ran is dropped (no demand): ended before scheduling, or still pending at the trace end. A task
  still running at the trace end gets ``duration = trace end - last SCHEDULE`` and
  ``settings.censored = true``.
* Requests: CPU and memory are normalised to the largest machine; they are scaled to a nominal
  machine of ``cpu_scale`` cores (default 32) and ``memory_scale`` bytes (default 128 GiB),
  rounded to milli-cores and whole MiB. The last request seen for the task (SUBMIT, SCHEDULE or
  UPDATE rows) is used; rows at trace start often lack it. A task with no request at all is skipped
  with a warning.
* ``priority`` = Borg priority (0-11); ``queue`` = its band: ``free`` (0-1), ``batch`` (2-8),
  ``production`` (9-11) (``queue_by="user"`` uses the hashed user instead); ``user`` = hashed user;
  ``settings.scheduling_class`` = latency class.

Records are emitted in first-SUBMIT order (the input is time-ordered) once the submission ended,
holding only compact per-task state (int keys, interned users) for submissions still open or
queued behind an earlier open one. A task running through the whole window holds back everything
submitted after it, so peak memory grows with the window: about 200 MB for the five parts here.
``job_events`` are not read: their names are hashes and their users repeat ``task_events``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Iterator

from makeway.sim.importers._common import ImportStats, Reporter, finite, num, numbered_lines, workload, wrong_width

SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
ENDS = {FAIL: "FAIL", FINISH: "FINISH", KILL: "KILL", LOST: "LOST"}
CPU_SCALE = 32
MEMORY_SCALE = 128 * 2**30
_PART = re.compile(r"part-(\d+)-of-(\d+)")


def band(priority: int) -> str:
    """Borg 2011 priority bands: 0-1 free, 9-11 production, the rest batch/middle."""
    if priority <= 1:
        return "free"
    if priority >= 9:
        return "production"
    return "batch"


def task_event_files(path: Path) -> list[Path]:
    """The part files to read: a directory (or its ``task_events/``) gives all parts in order."""
    if path.is_dir():
        sub = path / "task_events"
        base = sub if sub.is_dir() else path
        files = [p for p in base.iterdir() if p.is_file() and p.name.startswith("part-")]
        return sorted(files, key=lambda p: (int(m.group(1)) if (m := _PART.search(p.name)) else 0, p.name))
    return [path]


class _Open:
    """Per-submission state, kept small: many thousands are open at once."""

    __slots__ = ("job", "index", "attempt", "submit", "priority", "user", "sclass", "cpu", "mem", "sched",
                 "run", "evictions", "end", "done", "file", "lineno")

    def __init__(self, job: int, index: int, attempt: int, submit: int, priority: int, user: str, sclass: int,
                 file: int, lineno: int):
        self.job, self.index, self.attempt = job, index, attempt
        self.submit, self.priority, self.user, self.sclass = submit, priority, user, sclass
        self.file, self.lineno = file, lineno
        self.cpu: float | None = None
        self.mem: float | None = None
        self.sched: int | None = None  # microseconds, exact
        self.run: int | None = None
        self.evictions = 0
        self.end: str | None = None
        self.done = False

    @property
    def id(self) -> str:
        return f"{self.job}.{self.index}" + (f".{self.attempt}" if self.attempt else "")


def read(path: Path, *, strict: bool = False, stats: ImportStats | None = None, queue_by: str = "band",
         cpu_scale: float = CPU_SCALE, memory_scale: float = MEMORY_SCALE) -> Iterator[dict[str, Any]]:
    """Stream task submissions of one part file or a directory of parts, in submit order."""
    stats = stats if stats is not None else ImportStats()
    files = task_event_files(path)
    open_: dict[int, _Open] = {}
    order: dict[int, _Open] = {}
    attempts: dict[int, int] = {}
    seq = 0
    head = 0
    trace_end = 0

    def emit(o: _Open) -> dict[str, Any] | None:
        if o.run is None:
            stats.drop("never scheduled" if o.end else "pending at trace end")
            return None
        if o.cpu is None and o.mem is None:
            Reporter(files[o.file], strict, stats).bad(o.lineno, f"task {o.id}: no resource request in any event")
            return None
        settings: dict[str, Any] = {"scheduling_class": o.sclass}
        if o.evictions:
            settings["observed_evictions"] = o.evictions
        if o.end:
            settings["end"] = o.end
        else:
            settings["censored"] = True
        res = {"cpu": num(round((o.cpu or 0.0) * cpu_scale, 3)), "memory": int(round((o.mem or 0.0) * memory_scale / 2**20)) * 2**20}
        q = band(o.priority) if queue_by == "band" else f"user-{o.user[:12]}"
        stats.records += 1
        return workload(o.id, q, o.submit / 1e6, max(o.run, 0) / 1e6, [{"count": 1, "resources": res}],
                        priority=o.priority, user=o.user, settings=settings)

    def drain() -> Iterator[dict[str, Any]]:
        nonlocal head
        while head < seq and order[head].done:
            rec = emit(order.pop(head))
            head += 1
            if rec is not None:
                yield rec

    for file_no, f in enumerate(files):
        rep = Reporter(f, strict, stats)
        for lineno, line in numbered_lines(f, rep):
            if not line:
                continue
            cols = line.split(",")
            if len(cols) < 13:
                rep.bad(lineno, wrong_width(13, len(cols)))
                continue
            try:
                t = int(cols[0])
                etype = int(cols[5])
                priority = int(cols[8]) if cols[8] else 0
                sclass = int(cols[7]) if cols[7] else 0
                cpu = float(cols[9]) if cols[9] else None
                mem = float(cols[10]) if cols[10] else None
                job, index = int(cols[2]), int(cols[3])
                if not finite(cpu, mem):
                    raise ValueError(f"cpu {cols[9]!r} or memory {cols[10]!r} is not finite")
            except ValueError as exc:
                rep.bad(lineno, f"not a number: {exc}")
                continue
            if etype < 0 or etype > UPDATE_RUNNING or job < 0 or not 0 <= index < 2**24:
                rep.bad(lineno, f"unknown event type {cols[5]!r} or bad job/task id")
                continue
            stats.events += 1
            trace_end = max(trace_end, t)
            key = (job << 24) | index
            o = open_.get(key)
            if etype == SUBMIT:
                if o is not None:
                    if o.sched is not None:
                        rep.note(lineno, f"task {o.id}: SUBMIT while running; treated as a requeue")
                    o.sched = None
                else:
                    k = attempts.get(key, 0)
                    attempts[key] = k + 1
                    o = _Open(job, index, k, t, priority, sys.intern(cols[6]), sclass, file_no, lineno)
                    open_[key] = o
                    order[seq] = o
                    seq += 1
            elif o is None:
                continue  # events of a task submitted before the window, or of a finished submission
            if cpu is not None:
                o.cpu = cpu
            if mem is not None:
                o.mem = mem
            if etype == SCHEDULE:
                o.sched = t
            elif etype == EVICT:
                o.evictions += 1
                if o.sched is not None:
                    o.run = t - o.sched
                o.sched = None
            elif etype in ENDS:
                if o.sched is not None:
                    o.run = t - o.sched
                o.end = ENDS[etype]
                o.done = True
                del open_[key]
                yield from drain()
    for o in open_.values():
        if o.sched is not None:
            o.run = trace_end - o.sched
        o.done = True
    open_.clear()
    yield from drain()
