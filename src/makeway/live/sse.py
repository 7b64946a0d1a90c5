"""Server-sent events: one ``pass`` event per committed scheduling pass, saying what it changed.

The scheduler thread publishes; each ``GET /v1/events`` client reads from its own bounded asyncio
queue on the server's event loop. The events only tell a page *when* to refresh and which jobs,
queues and nodes moved, so a slow client that overflows its queue just misses some (the next one
still makes it refresh). ``close`` ends every stream at once, so a stopping server is not held open
by its browsers (as long-polls are released on stop).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, AsyncIterator, Optional

KEEPALIVE = 15.0
QUEUE_SIZE = 256


class PassFeed:
    """Fan-out of pass summaries from the scheduler thread to any number of SSE streams."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = set()
        self.last: Optional[dict[str, Any]] = None
        self.closed = False

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)

    def publish(self, info: dict[str, Any]) -> None:
        with self._lock:
            self.last = info
            subs = list(self._subs)
        for aloop, q in subs:
            _offer(aloop, q, info)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            subs = list(self._subs)
        for aloop, q in subs:
            _offer(aloop, q, None)

    async def stream(self, limit: Optional[int] = None) -> AsyncIterator[str]:
        """The SSE text of one client: a ``hello`` with the last pass, then each pass as it commits;
        ends on ``close`` or after ``limit`` pass events."""
        q: asyncio.Queue = asyncio.Queue(QUEUE_SIZE)
        sub = (asyncio.get_running_loop(), q)
        with self._lock:
            closed = self.closed
            if not closed:
                self._subs.add(sub)
            last = self.last
        try:
            yield "retry: 2000\n" + _frame("hello", {"pass": last["pass"] if last else None})
            sent = 0
            while not closed and (limit is None or sent < limit):
                try:
                    info = await asyncio.wait_for(q.get(), KEEPALIVE)
                except asyncio.TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                if info is None:
                    break
                yield _frame("pass", info, info.get("pass"))
                sent += 1
            yield _frame("bye", {})
        finally:
            with self._lock:
                self._subs.discard(sub)


def _offer(aloop: asyncio.AbstractEventLoop, q: asyncio.Queue, item: Any) -> None:
    def put() -> None:
        try:
            q.put_nowait(item)
        except asyncio.QueueFull:
            if item is None:  # the end must get through: make room for it
                q.get_nowait()
                q.put_nowait(None)

    try:
        aloop.call_soon_threadsafe(put)
    except RuntimeError:
        pass  # that client's event loop is gone


def _frame(event: str, data: dict[str, Any], ident: Any = None) -> str:
    head = f"id: {ident}\n" if ident is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def pass_summary(pass_no: int, now: float, seconds: float, decisions: list[dict[str, Any]],
                 jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], cap: int = 200) -> dict[str, Any]:
    """What one pass changed, small enough to send to every browser (ids capped at ``cap``)."""
    job_ids = [j["id"] for j in jobs]
    return {"pass": pass_no, "now": now, "seconds": seconds, "decisions": len(decisions),
            "starts": sum(1 for d in decisions if d["kind"] == "start"),
            "preemptions": sum(1 for d in decisions if d["kind"] == "preempt"),
            "jobs": job_ids[:cap], "jobs_changed": len(job_ids),
            "queues": sorted({j["queue"] for j in jobs}), "nodes": [n["name"] for n in nodes][:cap]}


__all__ = ["PassFeed", "pass_summary"]
