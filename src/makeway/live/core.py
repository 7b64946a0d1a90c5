"""The live executor: journal events in, the model's decisions out, with no clock and no I/O.

``LiveCore`` is to the service what ``Simulation`` is to the simulator: it owns the ``ClusterState``
and the model, applies inputs (submissions, cancels, quota changes, node registrations, attempt
starts and exits reported by agents) and asks the model for decisions at the ``now`` it is given.
Everything it does is a function of the events and the ``now`` of each pass, so the journal replayed
into a fresh core gives the same decisions (``digest``), which is how the service recovers.

What differs from the simulator is only what reality supplies: a task ends when its process exits,
not after ``duration``; a victim holds its resources until its exit is confirmed, unless the model
counts them free at notice (``grace_period`` 0), as in the simulator; nodes come and go as agents
register. A task runs as numbered attempts, and a new attempt is never handed out while an earlier
one of the same task has not exited, so one task never runs twice at once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from makeway.config import ClusterConfig, build_state
from makeway.core.decisions import Decision, Note, Preempt, Reason, Start
from makeway.core.objects import Node, split_task_id
from makeway.registry import load_model
from makeway.errors import MakewayError
from makeway.live.spec import workload_of

ASSIGNED, RUNNING, STOPPING, EXITED = "assigned", "running", "stopping", "exited"
PENDING, PREEMPTING, FINISHED, FAILED, CANCELLED = "pending", "preempting", "finished", "failed", "cancelled"
TERMINAL = (FINISHED, FAILED, CANCELLED)


class LiveError(MakewayError):
    """A model asked the live executor for something impossible (a bug, never bad input)."""


@dataclass(slots=True, frozen=True)
class Event:
    """One journal row as the core sees it."""

    seq: int
    kind: str
    payload: dict[str, Any]
    at: float = 0.0
    tenant: str = "default"


@dataclass(slots=True)
class Attempt:
    id: str
    task: str
    job: str
    no: int
    node: str
    state: str
    assigned: float
    started: Optional[float] = None
    ended: Optional[float] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    # why it is being stopped: {"kind": preempted|cancelled|failed|drained, "signal", "deadline"
    # (service clock), "reason": Reason dict or None, "preemptor"}
    stop: Optional[dict[str, Any]] = None
    held: bool = True          # the state still holds this attempt's allocation

    def view(self) -> dict[str, Any]:
        return {"attempt": self.id, "job": self.job, "task": self.task, "attempt_no": self.no,
                "node": self.node, "state": self.state, "started": self.started, "ended": self.ended,
                "exit_code": self.exit_code, "signal": self.signal,
                "deadline": self.stop["deadline"] if self.stop else None,
                "reason": self.stop if self.stop else None}


@dataclass(slots=True)
class Job:
    id: str
    queue: str
    tenant: str
    spec: dict[str, Any]
    submitted: float
    state: str = PENDING
    ended: Optional[float] = None
    message: str = ""
    live: dict[str, None] = field(default_factory=dict)       # attempts not exited
    preemptions: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)  # priority changes, applied or not

    def view(self) -> dict[str, Any]:
        last = self.preemptions[-1] if self.preemptions else None
        return {"id": self.id, "queue": self.queue, "tenant": self.tenant, "state": self.state,
                "submitted": self.submitted, "ended": self.ended, "message": self.message,
                "spec": self.spec, "reason": last, "changes": list(self.changes)}


class LiveCore:
    MAX_ROUNDS = 16

    def __init__(self, cfg: ClusterConfig):
        self.cfg = cfg
        self.state = build_state(cfg)
        self.model = load_model(cfg.preemption.model, cfg.preemption.settings)
        self.heartbeat_period = cfg.simulation.heartbeat_period or self.model.heartbeat_period
        for name in self.state.nodes:  # a config node offers nothing until an agent registers it
            self.state.set_schedulable(name, False)
        self.model.bind(self.state)
        self.registered: dict[str, bool] = dict.fromkeys(self.state.nodes, False)
        self.cordoned: set[str] = set()
        self.silent: set[str] = set()                # registered, but its agent stopped heartbeating
        self.jobs: dict[str, Job] = {}
        self.attempts: dict[str, Attempt] = {}
        self.current: dict[str, str] = {}            # task -> its latest attempt
        self.node_live: dict[str, dict[str, None]] = {n: {} for n in self.state.nodes}
        self.node_version: dict[str, int] = dict.fromkeys(self.state.nodes, 0)
        self.now = 0.0
        self.pass_no = 0
        self.decision_count = 0
        self._digest = hashlib.sha256(b"makeway.live/1").hexdigest()
        self._hb_due: dict[str, float] = {}
        self._wake: Optional[float] = None
        self._dirty_jobs: dict[str, None] = {}
        self._dirty_attempts: dict[str, None] = {}
        self._dirty_nodes: dict[str, None] = {}

    # -- the pass --------------------------------------------------------------------------------

    @property
    def digest(self) -> str:
        """A chain over every decision so far: equal digests mean the same decisions in the same order."""
        return self._digest

    def run_pass(self, events: Iterable[Event], now: float, schedule: bool = True) -> list[dict[str, Any]]:
        """Apply ``events`` in order, then let the model decide at ``now``; the decisions as records."""
        if now < self.now:
            raise LiveError(f"pass at {now} is earlier than the previous one at {self.now}")
        self.now = now
        self.pass_no += 1
        out: list[dict[str, Any]] = []
        for ev in events:
            self._apply_event(ev, out)
        if schedule:
            for _ in range(self.MAX_ROUNDS):
                if not self._apply(self.model.schedule(self.state, now), out):
                    break
            for node in self._heartbeats_due(now):
                self._apply(self.model.heartbeat(self.state, node, now), out)
            self._wake = self.model.next_wakeup(self.state, now)
        return out

    def next_due(self) -> Optional[float]:
        """When the model wants its next pass without any new event (a timer, a heartbeat, a tick)."""
        if not self.state.pending and not self.state.allocations:
            return None
        due = [t for t in (self._wake,) if t is not None and t > self.now]
        due.extend(self._hb_due.values())
        if self.model.tick_period:
            due.append(self.now + self.model.tick_period)
        return min(due) if due else None

    def _heartbeats_due(self, now: float) -> list[str]:
        period = self.heartbeat_period
        if not period:
            return []
        due = sorted((t, self.state.node_order[n], n) for n, t in self._hb_due.items() if t <= now)
        for t, _, n in due:
            while t <= now:
                t += period
            self._hb_due[n] = t
        return [n for _, _, n in due if self.state.nodes[n].schedulable]

    # -- decisions ---------------------------------------------------------------------------------

    def _record(self, rec: dict[str, Any], out: list[dict[str, Any]]) -> None:
        rec["idx"] = self.decision_count
        rec["time"] = self.now
        self.decision_count += 1
        self._digest = hashlib.sha256((self._digest + json.dumps(rec, sort_keys=True, separators=(",", ":")))
                                      .encode()).hexdigest()
        out.append(rec)

    def _apply(self, decisions: list[Decision], out: list[dict[str, Any]]) -> bool:
        """Apply the model's decisions; True when a victim's resources came back at once."""
        freed = False
        for d in decisions:
            if isinstance(d, Start):
                self._start(d, out)
            elif isinstance(d, Preempt):
                freed |= self._preempt(d, out)
            elif isinstance(d, Note):
                self._record({"kind": "note", "task": None, "node": None, "workload": d.subject,
                              "reason": {"kind": d.kind, "message": d.message, "values": d.values}}, out)
                if d.kind == "operation-failed" and d.subject in self.jobs:
                    self._fail(self.jobs[d.subject], d.message)
            else:
                raise LiveError(f"model {self.model.name!r} returned {d!r}, not a decision")
        return freed

    def _start(self, d: Start, out: list[dict[str, Any]]) -> None:
        state = self.state
        wl_id = split_task_id(d.task)[0]
        if d.task not in state.pending.get(wl_id, ()):
            raise LiveError(f"model {self.model.name!r} started {d.task!r}, which is not pending")
        if d.node not in state.nodes or not state.fits_node(state.task_resources(d.task), d.node):
            raise LiveError(f"model {self.model.name!r} started {d.task!r} on {d.node!r}, where it does not fit")
        state.start(d.task, d.node, self.now)
        job = self.jobs[wl_id]
        prev = self.current.get(d.task)
        no = self.attempts[prev].no + 1 if prev else 1
        a = Attempt(f"{d.task}#{no}", d.task, wl_id, no, d.node, ASSIGNED, self.now)
        self.attempts[a.id] = a
        self.current[d.task] = a.id
        job.live[a.id] = None
        job.attempts.append(a.id)
        self.node_live[d.node][a.id] = None
        self._touch(a)
        self._refresh(job)
        self._record({"kind": "start", "task": d.task, "node": d.node, "workload": wl_id, "reason": None,
                      "attempt": a.id}, out)

    def _preempt(self, d: Preempt, out: list[dict[str, Any]]) -> bool:
        state = self.state
        alloc = state.allocations.get(d.allocation)
        if alloc is None:
            raise LiveError(f"model {self.model.name!r} preempted unknown allocation {d.allocation!r}")
        if alloc.preempting:
            return False
        grace = self.model.grace_period(state, d.allocation)
        job = self.jobs[alloc.workload]
        a = self.attempts[self.current[d.allocation]]
        reason = d.reason.to_dict()
        self._record({"kind": "preempt", "task": d.allocation, "node": alloc.node, "workload": alloc.workload,
                      "reason": reason, "attempt": a.id, "grace": grace}, out)
        kill_after = grace if grace > 0 else float(job.spec.get("grace") or 0.0)
        self._stop(a, "preempted", kill_after, reason)
        job.preemptions.append({"time": self.now, "task": d.allocation, "attempt": a.id, "node": alloc.node,
                                **reason})
        if grace > 0:
            state.mark_preempting(d.allocation)
            self._refresh(job)
            return False
        self._release(a, requeue=True)
        self._refresh(job)
        return True

    # -- attempts ----------------------------------------------------------------------------------

    def _touch(self, a: Attempt) -> None:
        self._dirty_attempts[a.id] = None
        self.node_version[a.node] = self.node_version.get(a.node, 0) + 1

    def _stop(self, a: Attempt, kind: str, kill_after: float, reason: Optional[dict[str, Any]]) -> None:
        if a.state in (EXITED, STOPPING):
            return
        job = self.jobs[a.job]
        a.state = STOPPING
        a.stop = {"kind": kind, "signal": job.spec.get("stop_signal", "SIGTERM"),
                  "deadline": self.now + kill_after, "reason": reason,
                  "preemptor": (reason or {}).get("preemptor")}
        self._touch(a)

    def _release(self, a: Attempt, requeue: bool) -> None:
        """Give the attempt's allocation back to the state; its task waits again when ``requeue``."""
        if not a.held:
            return
        a.held = False
        self.state.end(a.task)
        if requeue:
            self.state.requeue(a.task)

    def _mark_exited(self, a: Attempt) -> None:
        """The attempt is over: off its node's desired set; a newer attempt that waited for it may go."""
        a.state, a.ended = EXITED, self.now
        del self.node_live[a.node][a.id]
        self.jobs[a.job].live.pop(a.id, None)
        self._touch(a)
        nxt = self.current.get(a.task)
        if nxt != a.id and nxt in self.attempts:
            self._touch(self.attempts[nxt])

    def _exited(self, a: Attempt, exit_code: Optional[int], sig: Optional[int], lost: bool = False) -> None:
        """An attempt ended. ``lost``: its supervisor died without recording how, so whether the task
        finished is unknown: it runs again (at least once) rather than failing the job."""
        if a.state == EXITED:
            return
        job = self.jobs[a.job]
        kind = a.stop["kind"] if a.stop else None
        a.exit_code, a.signal = exit_code, sig
        self._mark_exited(a)
        if a.held:
            if kind in ("preempted", "drained"):
                self._release(a, requeue=job.state not in TERMINAL)
            elif kind is not None:
                self._release(a, requeue=False)
            elif lost:
                self._release(a, requeue=job.state not in TERMINAL)
            elif exit_code == 0 and sig is None:
                a.held = False
                self.state.finish(a.task)
            else:
                self._release(a, requeue=False)
                how = f"signal {sig}" if sig is not None else f"exit code {exit_code}"
                self._fail(job, f"task {a.task} attempt {a.no} failed ({how})")
        self._refresh(job)

    # -- jobs --------------------------------------------------------------------------------------

    def _withdraw(self, job: Job) -> None:
        if job.id in self.state.pending:
            self.state.withdraw(job.id)

    def _end_job(self, job: Job, state: str, message: str, kind: str) -> None:
        job.state, job.ended, job.message = state, self.now, message
        self._withdraw(job)
        for aid in list(job.live):
            self._stop(self.attempts[aid], kind, float(job.spec.get("grace") or 0.0), None)
        self._dirty_jobs[job.id] = None

    def _fail(self, job: Job, message: str) -> None:
        if job.state not in TERMINAL:
            self._end_job(job, FAILED, message, "failed")

    def _refresh(self, job: Job) -> None:
        """Derive a job's state from its attempts (terminal states stay)."""
        self._dirty_jobs[job.id] = None
        if job.state in TERMINAL:
            return
        wl = self.state.workloads[job.id]
        if self.state.finished_tasks.get(job.id, 0) >= wl.task_count:
            job.state, job.ended = FINISHED, self.now
            return
        live = [self.attempts[a] for a in job.live]
        if any(a.state == STOPPING and a.stop and a.stop["kind"] == "preempted" for a in live):
            job.state = PREEMPTING
        elif live:
            job.state = RUNNING
        else:
            job.state = PENDING

    # -- events ------------------------------------------------------------------------------------

    def _apply_event(self, ev: Event, out: list[dict[str, Any]]) -> None:
        handler = getattr(self, f"_on_{ev.kind}", None)
        if handler is None:
            raise LiveError(f"journal event {ev.seq}: unknown kind {ev.kind!r}")
        handler(ev, out)

    def _on_submit(self, ev: Event, out: list[dict[str, Any]]) -> None:
        spec = ev.payload["job"]
        if spec["id"] in self.jobs:  # the API refuses these; a replayed duplicate is ignored
            return
        wl = workload_of(spec, min(ev.at, self.now))
        self.state.submit(wl)
        job = Job(wl.id, wl.queue, ev.tenant, spec, wl.submit)
        self.jobs[wl.id] = job
        self._dirty_jobs[wl.id] = None

    def _on_cancel(self, ev: Event, out: list[dict[str, Any]]) -> None:
        job = self.jobs.get(ev.payload["job"])
        if job is None or job.state in TERMINAL:
            return
        self._end_job(job, CANCELLED, ev.payload.get("message") or "cancelled", "cancelled")

    def _on_preempt(self, ev: Event, out: list[dict[str, Any]]) -> None:
        """A manual preemption (an operator's, through the API): the job's running tasks get their
        stop signal and grace and wait again, as if its model had preempted them (rule ``manual``)."""
        job = self.jobs.get(ev.payload["job"])
        if job is None or job.state in TERMINAL:
            return
        by = ev.payload.get("by")
        reason = Reason("makeway", "manual", None, f"preempted by {by}" if by else "preempted by an operator",
                        {"by": by} if by else {})
        for aid in list(job.live):
            a = self.attempts[aid]
            alloc = self.state.allocations.get(a.task)
            if a.held and a.state != STOPPING and alloc is not None and not alloc.preempting:
                self._preempt(Preempt(a.task, reason), out)

    def _on_priority(self, ev: Event, out: list[dict[str, Any]]) -> None:
        """A new priority for a waiting job (``PATCH /v1/jobs/{id}``). The API refuses what it can see
        is refused; what changed between its check and this pass (the job started, or ended) is kept
        on the job as a change not applied, with why, rather than dropped in silence."""
        p = ev.payload
        job = self.jobs.get(p["job"])
        if job is None:
            return
        new, by = int(p["priority"]), p.get("by")
        wl = self.state.workloads[job.id]
        change = {"time": self.now, "change": "priority", "from": wl.priority, "to": new, "by": by}
        why = None
        if job.state in TERMINAL:
            why = f"the job had ended ({job.state})"
        elif self.model.fixed_priority:
            why = self.model.fixed_priority
        elif self.state.running.get(job.id):
            why = "the job had started: a priority changes only while nothing of the job runs"
        if why is not None:
            job.changes.append({**change, "applied": False, "why": why})
            self._dirty_jobs[job.id] = None
            return
        self.state.set_priority(job.id, new)
        self.model.on_priority_change(self.state, job.id, wl.priority, self.now)
        job.spec = {**job.spec, "priority": new}
        job.changes.append({**change, "applied": True})
        self._record({"kind": "note", "task": None, "node": None, "workload": job.id,
                      "reason": {"kind": "reprioritised", "message": f"priority {wl.priority} -> {new}"
                                 + (f" by {by}" if by else ""), "values": {"from": wl.priority, "to": new, "by": by}}},
                     out)
        self._dirty_jobs[job.id] = None

    def _on_queue(self, ev: Event, out: list[dict[str, Any]]) -> None:
        name = ev.payload["queue"]
        old = self.state.update_queue(name, **ev.payload["changes"])
        self._apply(self.model.on_config_change(self.state, name, old, self.now), out)

    def _on_node(self, ev: Event, out: list[dict[str, Any]]) -> None:
        p = ev.payload
        name = p["node"]
        state = self.state
        if name not in state.nodes:
            state.add_node(Node(name, dict(p["capacity"]), dict(p.get("labels") or {})))
            self.node_live[name] = {}
            self.node_version.setdefault(name, 0)
        elif getattr(state.nodes[name], "removed", False):
            state.add_node(Node(name, dict(p["capacity"]), dict(p.get("labels") or {})))
        self.registered[name] = True
        self.silent.discard(name)
        self._sync_schedulable(name)
        if self.heartbeat_period and name not in self._hb_due:
            self._hb_due[name] = self.now
        self.node_version[name] += 1
        self._dirty_nodes[name] = None

    def _on_silent(self, ev: Event, out: list[dict[str, Any]]) -> None:
        """A node whose agent stopped heartbeating gets no new starts until it speaks again."""
        name, silent = ev.payload["node"], bool(ev.payload.get("silent", True))
        if name not in self.state.nodes or not self.registered.get(name):
            return
        self.silent.discard(name)
        if silent:
            self.silent.add(name)
        self._sync_schedulable(name)
        self._dirty_nodes[name] = None

    def _on_lost(self, ev: Event, out: list[dict[str, Any]]) -> None:
        """The node's lease ran out (its supervisors have killed its tasks): its attempts are lost and
        their tasks wait again, with reason ``node-lost`` on the job; the node waits for its agent."""
        name = ev.payload["node"]
        if name not in self.state.nodes or not self.registered.get(name):
            return
        self.registered[name] = False
        self.silent.discard(name)
        self._sync_schedulable(name)
        self._hb_due.pop(name, None)
        reason = Reason("makeway", "node-lost", None,
                        f"node {name} was silent past its lease; its supervisors stopped its tasks",
                        {k: ev.payload[k] for k in ("node", "silent_for", "lease") if k in ev.payload}).to_dict()
        for aid in list(self.node_live[name]):
            a = self.attempts[aid]
            job = self.jobs[a.job]
            self._record({"kind": "lost", "task": a.task, "node": name, "workload": a.job, "reason": reason,
                          "attempt": a.id}, out)
            if a.state != STOPPING:
                a.stop = {"kind": "lost", "signal": "SIGKILL", "deadline": self.now, "reason": reason,
                          "preemptor": None}
                job.preemptions.append({"time": self.now, "task": a.task, "attempt": a.id, "node": name, **reason})
            requeue = job.state not in TERMINAL
            if a.held and a.stop and a.stop["kind"] in ("cancelled", "failed"):
                requeue = False
            self._release(a, requeue=requeue)
            self._mark_exited(a)
            self._refresh(job)
        self._dirty_nodes[name] = None

    def _sync_schedulable(self, name: str) -> None:
        want = self.registered.get(name, False) and name not in self.cordoned and name not in self.silent
        if self.state.nodes[name].schedulable != want:
            self.state.set_schedulable(name, want)

    def _on_cordon(self, ev: Event, out: list[dict[str, Any]]) -> None:
        name, on = ev.payload["node"], bool(ev.payload.get("cordon", True))
        if name not in self.state.nodes:
            return
        if on:
            self.cordoned.add(name)
        else:
            self.cordoned.discard(name)
        self._sync_schedulable(name)
        if on and ev.payload.get("drain"):
            reason = Reason("makeway", "node-drain", None, f"node {name} drained",
                            {"node": name}).to_dict()
            for aid in list(self.node_live[name]):
                a = self.attempts[aid]
                job = self.jobs[a.job]
                self._stop(a, "drained", float(job.spec.get("grace") or 0.0), reason)
                if a.held:
                    self.state.mark_preempting(a.task)
                self._refresh(job)
        self._dirty_nodes[name] = None

    def _on_started(self, ev: Event, out: list[dict[str, Any]]) -> None:
        a = self.attempts.get(ev.payload["attempt"])
        if a is None or a.state != ASSIGNED:
            if a is not None and a.started is None:
                a.started = self.now
                self._dirty_attempts[a.id] = None
            return
        a.state, a.started = RUNNING, self.now
        self._dirty_attempts[a.id] = None
        self._refresh(self.jobs[a.job])

    def _on_exited(self, ev: Event, out: list[dict[str, Any]]) -> None:
        a = self.attempts.get(ev.payload["attempt"])
        if a is None:
            return
        self._exited(a, ev.payload.get("exit_code"), ev.payload.get("signal"), bool(ev.payload.get("lost")))

    # -- views -------------------------------------------------------------------------------------

    def desired(self, node: str, origin: float) -> tuple[int, list[dict[str, Any]]]:
        """The node's desired set (version, attempts): what runs there and what stops, by when."""
        out = []
        for aid in self.node_live.get(node, ()):
            a = self.attempts[aid]
            job = self.jobs[a.job]
            if a.state == STOPPING:
                stop = a.stop or {}
                deadline = origin + stop["deadline"]
                notice = {"kind": stop["kind"], "reason": stop.get("reason"), "preemptor": stop.get("preemptor"),
                          "deadline": deadline}
                out.append(self._desired_entry(a, job, "stop", stop.get("signal"), deadline, notice))
                continue
            if self.current.get(a.task) == a.id and a.no > 1:
                prev = self.attempts.get(f"{a.task}#{a.no - 1}")
                if prev is not None and prev.state != EXITED:
                    continue  # the earlier attempt of this task has not confirmed its exit yet
            out.append(self._desired_entry(a, job, "run", None, None, None))
        return self.node_version.get(node, 0), out

    @staticmethod
    def _desired_entry(a: Attempt, job: Job, action: str, sig: Optional[str], deadline: Optional[float],
                       notice: Optional[dict[str, Any]]) -> dict[str, Any]:
        g = split_task_id(a.task)[1]
        return {"attempt": a.id, "job": a.job, "task": a.task, "attempt_no": a.no,
                "command": job.spec["command"], "env": job.spec.get("env") or {}, "cwd": job.spec.get("cwd"),
                "resources": job.spec["tasks"][g]["resources"], "action": action, "signal": sig,
                "deadline": deadline, "notice": notice}

    def node_view(self, name: str) -> dict[str, Any]:
        n = self.state.nodes[name]
        return {"name": name, "capacity": dict(n.capacity), "labels": dict(n.labels),
                "used": dict(self.state.node_used.get(name, {})), "registered": self.registered.get(name, False),
                "cordoned": name in self.cordoned, "silent": name in self.silent, "schedulable": n.schedulable,
                "attempts": len(self.node_live.get(name, ()))}

    def drain_changes(self) -> tuple[list[dict], list[dict], list[dict]]:
        """The job, attempt and node views changed since the last call (for the query tables)."""
        jobs = [self.jobs[j].view() for j in self._dirty_jobs]
        attempts = [self.attempts[a].view() for a in self._dirty_attempts]
        nodes = [self.node_view(n) for n in self._dirty_nodes]
        self._dirty_jobs, self._dirty_attempts, self._dirty_nodes = {}, {}, {}
        return jobs, attempts, nodes


__all__ = ["Attempt", "Event", "Job", "LiveCore", "LiveError"]
