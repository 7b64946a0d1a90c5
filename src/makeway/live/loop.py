"""The scheduler loop: one thread, the single writer of the ``LiveCore``, one pass per transaction.

A pass reads the journal after ``applied_seq``, applies it, lets the model decide at the wall-clock
``now``, and commits the decisions, the changed query rows and the pass row together. Only then are
the nodes' desired sets published to agents, so an agent never acts on a decision the database does
not hold. A failed commit stops the loop (fail-stop): the in-memory core is then ahead of the
database and must not be trusted; a restart recovers from the journal.

Recovery replays every recorded pass (its events, its ``now``) into a fresh core and checks the
running decision digest against the one recorded, then waits (at most ``recovery_grace`` seconds)
for the agents of nodes with live attempts to re-register before the first new pass.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
import time
from typing import Any, Callable, Optional

from makeway.config import ClusterConfig
from makeway.errors import MakewayError
from makeway.live.core import Event, LiveCore
from makeway.live.crash import crash_point
from makeway.live.sse import pass_summary

log = logging.getLogger("makeway.serve")


class RecoveryError(MakewayError):
    """The journal replayed into a fresh core did not give the decisions recorded."""


def _event(row: Any) -> Event:
    return Event(row.seq, row.kind, row.payload, row.at, getattr(row, "tenant", "default"))


def _decision_row(d: dict[str, Any]) -> dict[str, Any]:
    reason = d.get("reason")
    if d["kind"] != "note":
        reason = {**(reason or {}), "attempt": d.get("attempt"), "time": d.get("time")}
        if "grace" in d:
            reason["grace"] = d["grace"]
    return {"idx": d["idx"], "kind": d["kind"], "task": d.get("task"), "node": d.get("node"),
            "workload": d.get("workload"), "reason": reason}


def _job_row(v: dict[str, Any], now: float) -> dict[str, Any]:
    return {"id": v["id"], "queue": v["queue"], "state": v["state"], "tenant": v["tenant"], "spec": v["spec"],
            "submitted": v["submitted"], "updated": now, "reason": v["reason"], "pending": None}


def _node_row(v: dict[str, Any], now: float) -> dict[str, Any]:
    state = "cordoned" if v["cordoned"] else ("ready" if v["registered"] else "unregistered")
    return {"name": v["name"], "capacity": v["capacity"], "labels": v["labels"], "state": state, "last_seen": now}


class SchedulerLoop:
    """Owns the core; the API reads it under ``lock`` and wakes the loop after journaling input."""

    def __init__(self, cfg: ClusterConfig, store: Any, *, clock: Callable[[], float] = time.time,
                 recovery_grace: float = 10.0, idle_poll: float = 1.0, min_interval: float = 0.02,
                 snapshot_every: int = 1000, lease: float = 30.0, suspect_after: float = 10.0,
                 kill_margin: float = 3.0):
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.recovery_grace = recovery_grace
        self.idle_poll = idle_poll
        # inputs arriving within this many seconds of a pass wait for the next one, so a burst of
        # submissions costs a few passes rather than one each (Slurm's sched_min_interval)
        self.min_interval = min_interval
        self.pass_spacing = 2.0
        # every this many passes the pickled core rides along with the pass, so recovery replays
        # only what came after it
        self.snapshot_every = snapshot_every
        # node liveness, on this process's clock: silent past ``suspect_after`` -> no new starts;
        # past ``lease + kill_margin`` (the supervisors kill their tasks at the lease) -> lost
        self.lease, self.suspect_after, self.kill_margin = lease, suspect_after, kill_margin
        self.last_seen: dict[str, float] = {}
        self._liveness_since = 0.0
        self.snapshot_pass = 0
        self.lock = threading.RLock()
        self.published = threading.Condition()
        self.desired: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self.core = LiveCore(cfg)
        self.origin = 0.0
        self.epoch = 0
        self.applied_seq = 0
        self.ready = False
        self.failed: Optional[BaseException] = None
        self.report_seq: dict[str, int] = {}
        self.replayed_passes = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._ready_at = 0.0
        self._waiting_for: set[str] = set()
        self._releasing = False
        self.pass_ms: deque[float] = deque(maxlen=10000)
        self.on_fatal: Callable[[BaseException], None] = lambda exc: None
        # called after each committed pass with its summary (``sse.pass_summary``)
        self.pass_listeners: list[Callable[[dict[str, Any]], None]] = []

    # -- clock --------------------------------------------------------------------------------------

    def service_now(self) -> float:
        return max(self.clock() - self.origin, self.core.now)

    # -- recovery -----------------------------------------------------------------------------------

    def recover(self) -> None:
        """Rebuild the core from the journal; every replayed pass must reproduce its digest."""
        store = self.store
        origin = store.meta_get("clock_origin")
        if origin is None:
            origin = repr(self.clock())
            store.meta_set("clock_origin", origin)
        self.origin = float(origin)
        self.epoch = store.bump_epoch()
        start_seq = self._load_snapshot()
        events = store.events_after(start_seq)
        i = 0
        for p in store.passes_after(self.core.pass_no):
            batch = []
            while i < len(events) and events[i].seq <= p.applied_seq:
                batch.append(_event(events[i]))
                i += 1
            self._note_reports(batch)
            self.core.run_pass(batch, p.now)
            if self.core.digest != p.digest:
                raise RecoveryError(f"replay of pass {p.pass_no} gave decision digest {self.core.digest[:12]}, "
                                    f"the journal recorded {p.digest[:12]}")
            self.applied_seq = p.applied_seq
            self.replayed_passes += 1
        self.core.drain_changes()
        self._note_reports([_event(e) for e in events[i:]])
        self._publish(all_nodes=True)
        self._waiting_for = {n for n, live in self.core.node_live.items() if live}
        self._ready_at = self.clock() + (self.recovery_grace if self._waiting_for else 0.0)
        self._liveness_since = self.clock()  # every agent gets a whole lease to come back
        self.ready = not self._waiting_for
        log.info("recovered: snapshot of pass %d, %d passes replayed, applied_seq %d, epoch %d, digest %s",
                 self.snapshot_pass, self.replayed_passes, self.applied_seq, self.epoch, self.core.digest[:12])

    def _load_snapshot(self) -> int:
        """Start from the latest snapshot when it is usable; the journal seq it covers (0 without one).

        A snapshot from another makeway version, or one whose digest is not the one its pass
        recorded, is ignored: replaying from the start is slower but always right."""
        import pickle

        from makeway import __version__

        snap = self.store.latest_snapshot()
        if snap is None:
            return 0
        pass_no, blob = snap
        rows = self.store.passes_after(pass_no - 1, limit=1)
        try:
            version, core, reports = pickle.loads(blob)
        except Exception as exc:  # noqa: BLE001 - an unreadable snapshot only costs a longer replay
            log.warning("snapshot of pass %d unreadable (%s); replaying from the start", pass_no, exc)
            return 0
        if version != __version__ or not rows or core.pass_no != pass_no or core.digest != rows[0].digest:
            log.warning("snapshot of pass %d not usable (makeway %s); replaying from the start", pass_no, version)
            return 0
        self.core, self.report_seq = core, dict(reports)
        self.applied_seq = rows[0].applied_seq
        self.snapshot_pass = pass_no
        return self.applied_seq

    def _snapshot(self) -> bytes:
        import pickle

        from makeway import __version__

        return pickle.dumps((__version__, self.core, self.report_seq), protocol=pickle.HIGHEST_PROTOCOL)

    def _note_reports(self, batch: list[Event]) -> None:
        for ev in batch:
            if ev.kind in ("started", "exited") and "report_seq" in ev.payload:
                node = ev.payload.get("node")
                self.report_seq[node] = max(self.report_seq.get(node, 0), int(ev.payload["report_seq"]))

    # -- the thread ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="makeway-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self.published:
            self.published.notify_all()

    def release_waiters(self) -> None:
        """Answer every long-poll now (the server is stopping)."""
        self._releasing = True
        with self.published:
            self.published.notify_all()

    def wake(self) -> None:
        self._wake.set()

    def _timeout(self) -> float:
        due = self.core.next_due()
        if not self.ready:
            return min(0.2, self.idle_poll)
        now = self.clock() - self.origin
        if self.lease:  # leases are checked on the wall clock: the core's own clock stands still while idle
            due = min(due if due is not None else float("inf"), now + 0.5)
        if due is None:
            return self.idle_poll
        return max(0.0, min(self.idle_poll, due - now))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._timeout())
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                if not self.ready and not self._check_ready():
                    continue
                self.check_leases()
                if self.step():
                    # a long pass spaces the next one out, so the scheduler holds at most about a
                    # third of the interpreter and the API keeps answering under a big backlog
                    self._stop.wait(max(self.min_interval, self.pass_spacing * self.pass_ms[-1] / 1000.0))
            except BaseException as exc:  # fail-stop: the core may be ahead of the database
                self.failed = exc
                log.exception("scheduler loop stopped")
                self.on_fatal(exc)
                return

    def seen(self, node: str) -> None:
        """An agent spoke for ``node`` (register, heartbeat, long-poll)."""
        self.last_seen[node] = self.clock()

    def check_leases(self) -> list[tuple[str, dict[str, Any]]]:
        """Journal ``silent``/``lost`` for registered nodes whose agents went quiet; the events written."""
        if not self.lease:
            return []
        now = self.clock()
        with self.lock:
            core = self.core
            nodes = [(n, n in core.silent) for n, reg in core.registered.items() if reg]
        out = []
        for node, flagged in nodes:
            quiet = now - self.last_seen.get(node, self._liveness_since)
            if quiet > self.lease + self.kill_margin:
                out.append(("lost", {"node": node, "silent_for": round(quiet, 3), "lease": self.lease}))
            elif quiet > self.suspect_after and not flagged:
                out.append(("silent", {"node": node, "silent": True, "silent_for": round(quiet, 3)}))
        for kind, payload in out:
            self.store.append_event_as(self.epoch, kind, payload, at=self.service_now())
        return out

    def _check_ready(self) -> bool:
        events = self.store.events_after(self.applied_seq)
        back = {e.payload.get("node") for e in events if e.kind == "node"}
        self._waiting_for -= back
        if not self._waiting_for or self.clock() >= self._ready_at:
            self.ready = True
        return self.ready

    def step(self, force: bool = False) -> bool:
        """One pass if there is input or a timer is due; True when a pass ran."""
        rows = self.store.events_after(self.applied_seq)
        now = self.service_now()
        due = self.core.next_due()
        if not rows and not force and (due is None or now + 1e-6 < due):
            return False
        events = [_event(r) for r in rows]
        t0 = time.perf_counter()
        with self.lock:
            decisions = self.core.run_pass(events, now)
            jobs, attempts, nodes = self.core.drain_changes()
            applied = events[-1].seq if events else self.applied_seq
            self._note_reports(events)
            snap = self._snapshot() if self.snapshot_every and self.core.pass_no % self.snapshot_every == 0 else None
            self.store.record_pass(self.core.pass_no, applied, now, self.core.digest,
                                   [_decision_row(d) for d in decisions], [_job_row(j, now) for j in jobs],
                                   attempts, [_node_row(n, now) for n in nodes], snapshot=snap,
                                   expect_epoch=self.epoch)
            self.applied_seq = applied
        crash_point("pass-commit")
        seconds = time.perf_counter() - t0
        self.pass_ms.append(seconds * 1000.0)
        self._publish()
        if self.pass_listeners:
            self._tell(pass_summary(self.core.pass_no, now, seconds, decisions, jobs, nodes))
        return True

    def _tell(self, info: dict[str, Any]) -> None:
        """Hand a committed pass's summary to the listeners (live pages, metrics); a listener that
        fails is logged, never allowed to stop the scheduler."""
        for fn in list(self.pass_listeners):
            try:
                fn(info)
            except Exception:  # noqa: BLE001 - observers only
                log.exception("pass listener %r failed", fn)

    # -- desired sets -------------------------------------------------------------------------------

    def _publish(self, all_nodes: bool = False) -> None:
        changed = False
        with self.lock:
            for node, version in self.core.node_version.items():
                old = self.desired.get(node)
                if all_nodes or old is None or old[0] != version:
                    self.desired[node] = self.core.desired(node, self.origin)
                    changed = True
        if changed:
            with self.published:
                self.published.notify_all()

    def wait_desired(self, node: str, version: Optional[int], wait: float) -> tuple[int, list[dict[str, Any]]]:
        """The node's published desired set, once its version differs from ``version`` or ``wait`` passed."""
        deadline = time.monotonic() + max(0.0, wait)
        with self.published:
            while True:
                cur = self.desired.get(node, (0, []))
                left = deadline - time.monotonic()
                if version is None or cur[0] != version or left <= 0 or self._stop.is_set() or self._releasing:
                    return cur
                self.published.wait(left)


__all__ = ["RecoveryError", "SchedulerLoop"]
