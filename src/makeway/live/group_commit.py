"""Group commit for the input journal: many threads' appends, one transaction and one flush a batch.

Split out of ``store.py`` (which keeps the single-append path and everything else durable) because
it is the one part of the store that runs its own thread.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from makeway.live.store import Appended, Store, _event_row


class GroupCommit:
    """Appends from many threads committed together: one transaction, one disk flush, per batch.

    Appends hold the journal lock on PostgreSQL and SQLite has one writer, so concurrent single
    appends commit one after another, each paying its own flush. A committer thread instead takes
    whatever is queued (up to ``max_batch``) into one ``append_events`` transaction. A caller gets
    its answer only once its row is committed; inputs are validated in the caller's thread, so a
    bad one fails alone, while a database error fails the whole batch it was in.
    """

    def __init__(self, store: Store, *, max_batch: int = 500) -> None:
        self.store = store
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._guard = threading.Lock()
        # called with (seconds, rows) after each committed batch (the commit-latency metric)
        self.observers: list = []
        self._thread = threading.Thread(target=self._run, name="makeway-journal", daemon=True)
        self._thread.start()

    def submit(self, kind: str, payload: dict, *, tenant: str = "default", idem_key: str | None = None,
               at: float) -> Future:
        """Queue one input; the returned future resolves to its ``Appended`` after the commit."""
        row = _event_row(0, {"kind": kind, "payload": payload, "tenant": tenant, "idem_key": idem_key, "at": at})
        fut: Future = Future()
        with self._guard:
            if self._closed:
                raise RuntimeError("the journal's group committer is closed")
            self._queue.put((row, fut, None))
        return fut

    def submit_async(self, kind: str, payload: dict, *, tenant: str = "default", idem_key: str | None = None,
                     at: float) -> "asyncio.Future":
        """``submit`` for a caller on an event loop: an asyncio future of that loop, resolved with the
        rest of its batch in one call from the committer thread (one wake-up of the loop a batch,
        not one thread hop a row: at thousands of submits a second, that hop is a real share of a
        submit's CPU)."""
        row = _event_row(0, {"kind": kind, "payload": payload, "tenant": tenant, "idem_key": idem_key, "at": at})
        aloop = asyncio.get_running_loop()
        fut = aloop.create_future()
        with self._guard:
            if self._closed:
                raise RuntimeError("the journal's group committer is closed")
            self._queue.put((row, fut, aloop))
        return fut

    def append(self, kind: str, payload: dict, *, tenant: str = "default", idem_key: str | None = None,
               at: float) -> Appended:
        return self.submit(kind, payload, tenant=tenant, idem_key=idem_key, at=at).result()

    def close(self) -> None:
        """Commit what is queued, then stop the committer thread."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def __enter__(self) -> "GroupCommit":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            t0 = time.perf_counter()
            try:
                answers: list[Any] = self.store._append_rows([item[0] for item in batch], per_row=True)
            except BaseException as exc:  # the callers own the failure; the committer keeps serving
                answers = [exc] * len(batch)
            else:
                self._observe(time.perf_counter() - t0, len(batch))
            by_loop: dict[Any, list] = {}
            for (_, fut, aloop), answer in zip(batch, answers):
                if aloop is not None:
                    by_loop.setdefault(aloop, []).append((fut, answer))
                elif isinstance(answer, BaseException):
                    fut.set_exception(answer)
                else:
                    fut.set_result(answer)
            for aloop, done in by_loop.items():
                try:
                    aloop.call_soon_threadsafe(_resolve, done)
                except RuntimeError:
                    pass  # that event loop is closed: nobody waits for these answers

    def _observe(self, seconds: float, rows: int) -> None:
        for fn in list(self.observers):
            try:
                fn(seconds, rows)
            except Exception:  # noqa: BLE001 - observers only
                pass


def _resolve(done: list) -> None:
    """On the callers' event loop: hand a committed batch its answers."""
    for fut, answer in done:
        if fut.done():
            continue  # the request went away
        if isinstance(answer, BaseException):
            fut.set_exception(answer)
        else:
            fut.set_result(answer)


