"""Why a workload waited, read from the reasons the simulation recorded (``ReasonLog``).

Each workload row that ever waited carries ``reasons``: ``[time, code, blocking queue]`` entries, one
per change of reason, recorded while the run went on. This module turns them into wait periods
(submission to first start, eviction to restart), the reason in force at an instant, the time
spent under each reason, and the workloads that overtook a waiting one. ``makeway explain`` and
``makeway pending`` read it; nothing here reruns a model.
"""

from __future__ import annotations

from typing import Any

from makeway.errors import MakewayError
from makeway.reports import derive as d

# The codes of makeway.core.pending, for a reader.
REASONS = {
    "fits-nowhere": "no node is big enough for a task of it",
    "queue-max": "what it asks exceeds a queue's max on its own",
    "quota": "its queue (or an ancestor) has used its quota, guarantee or share",
    "preempting": "victims were preempted for it and have not left yet",
    "gang": "its tasks must start together and do not all fit",
    "priority": "work ahead of it in its queue's order is served first",
    "resources": "first in line, but no node has room for it",
}


def describe(code: str | None, blocking: str | None = None) -> str:
    if not code:
        return "-"
    text = f"{code} ({REASONS.get(code, 'no description')})"
    return text + (f"; blocked at queue {blocking}" if blocking else "")


def waits(results: dict[str, Any], w: dict[str, Any], end: float | None = None) -> list[tuple[float, float | None]]:
    """The workload's wait periods (from, to), ``to`` None when it was still waiting at the end: from
    submission to first start, then from each eviction to its restart."""
    end = d.run_end(results) if end is None else end
    out: list[tuple[float, float | None]] = []
    if w.get("submit") is not None:
        out.append((float(w["submit"]), None if w.get("first_start") is None else float(w["first_start"])))
    restarts = {(r.get("allocation"), float(r["evicted_at"])): float(r["time"])
                for r in (w.get("restarts") or []) if r.get("evicted_at") is not None}
    for e in d.events_of(results, "evicted"):
        if e.get("workload") != w.get("id"):
            continue
        t = float(e.get("time") or 0.0)
        back = restarts.get((e.get("allocation"), t))
        if back is None and w.get("finish") is not None:
            continue  # another task of it finished the workload
        out.append((t, back))
    merged: list[tuple[float, float | None]] = []
    for start, stop in sorted(out, key=lambda p: p[0]):
        if merged and (merged[-1][1] is None or start <= merged[-1][1]):
            last = merged[-1]
            if last[1] is not None and (stop is None or stop > last[1]):
                merged[-1] = (last[0], stop)
            continue
        merged.append((start, stop))
    return merged


def trail(w: dict[str, Any]) -> list[tuple[float, str, str | None]]:
    return [(float(t), str(code), blocking) for t, code, blocking in (w.get("reasons") or [])]


def reason_at(w: dict[str, Any], at: float, since: float) -> tuple[str | None, str | None, float | None]:
    """(code, blocking, since when) in force at ``at`` within the wait that began at ``since``."""
    entries = [e for e in trail(w) if since <= e[0] <= at]
    if not entries:
        return None, None, None
    t, code, blocking = entries[-1]
    return code, blocking, t


def time_by_reason(results: dict[str, Any], w: dict[str, Any]) -> list[tuple[str, str | None, float]]:
    """Seconds spent under each (code, blocking) over all of the workload's waits, longest first;
    the stretch of a wait before its first recorded reason is ``unrecorded``."""
    end = d.run_end(results)
    entries = trail(w)
    totals: dict[tuple[str, str | None], float] = {}
    for start, stop in waits(results, w, end):
        stop_t = end if stop is None else stop
        inside = [e for e in entries if start <= e[0] < stop_t or (e[0] == start == stop_t)]
        first = inside[0][0] if inside else stop_t
        if first > start:
            totals[("unrecorded", None)] = totals.get(("unrecorded", None), 0.0) + first - start
        for i, (t, code, blocking) in enumerate(inside):
            nxt = inside[i + 1][0] if i + 1 < len(inside) else stop_t
            totals[(code, blocking)] = totals.get((code, blocking), 0.0) + max(0.0, nxt - t)
    return sorted(((c, b, s) for (c, b), s in totals.items()), key=lambda x: (-x[2], x[0], x[1] or ""))


def overtaken_by(results: dict[str, Any], w: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(all, same queue): workloads submitted after it that first started before it did (before the
    end of the run when it never started)."""
    submit = w.get("submit")
    if submit is None:
        return [], []
    until = float(w["first_start"]) if w.get("first_start") is not None else float("inf")
    everyone, mine = [], []
    for x in d.workloads(results):
        if x.get("id") == w.get("id") or x.get("submit") is None or x.get("first_start") is None:
            continue
        if float(x["submit"]) > float(submit) and float(x["first_start"]) < until:
            everyone.append(str(x["id"]))
            if x.get("queue") == w.get("queue"):
                mine.append(str(x["id"]))
    return everyone, mine


def parse_time(text: str, option: str = "--at") -> float:
    """Seconds from ``3600``, ``90s``, ``45m``, ``2h`` or ``1.5d``; a MakewayError naming ``option`` else."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    raw = text.strip().lower()
    scale = units.get(raw[-1:], None) if raw else None
    number = raw[:-1] if scale is not None else raw
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise MakewayError(f"{option}: {text!r} is not a time (seconds, or a number with s, m, h or d)") from None
    if value != value or value < 0 or value == float("inf"):
        raise MakewayError(f"{option}: {text!r} must be a finite time of at least 0")
    return value


def pending_at(results: dict[str, Any], at: float | None = None, queue: str | None = None) -> dict[str, Any]:
    """What was pending at ``at`` (default: the end of the run) and why, oldest wait first.

    Unknown ``queue`` or an ``at`` after the run's end are MakewayErrors naming the option."""
    end = d.run_end(results)
    if queue is not None:
        known = d.queue_names(results)
        if queue not in known:
            raise MakewayError(f"--queue: unknown queue {queue!r} (known: {', '.join(known) or 'none'})")
    if at is None:
        at = end
    elif at > end:
        raise MakewayError(f"--at: {at:g} s is after the end of the run ({end:g} s)")
    rows = []
    for w in d.workloads(results):
        if queue is not None and w.get("queue") != queue:
            continue
        if w.get("submit") is None or float(w["submit"]) > at:
            continue
        for start, stop in waits(results, w, end):
            if start <= at and (stop is None or at < stop):
                code, blocking, since = reason_at(w, at, start)
                if code is None and stop is None and at >= end and w.get("pending_reason"):
                    code = w["pending_reason"]
                rows.append({"id": w.get("id"), "queue": w.get("queue"), "priority": w.get("priority"),
                             "submit": float(w["submit"]), "waiting_since": start, "waited": at - start,
                             "reason": code, "reason_since": since, "blocking": blocking,
                             "restart": start != float(w["submit"])})
                break
    rows.sort(key=lambda r: (r["waiting_since"], str(r["id"])))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["reason"] or "-"] = counts.get(r["reason"] or "-", 0) + 1
    return {"at": at, "end": end, "queue": queue, "pending": rows, "by_reason": dict(sorted(counts.items()))}
