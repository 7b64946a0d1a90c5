"""The REST API (``/v1``) and the agent endpoints (``/v1/agent``) of ``makeway serve``.

Every input is journaled (committed) before the answer, then the scheduler loop is woken; reads
come from the loop's core under its lock, so they show what the last committed pass decided.
Bad input is a 4xx whose body names the field: ``{"detail": {"field": ..., "error": ...}}``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from fastapi import Body, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from makeway import __version__
from makeway.config import ClusterConfig
from makeway.core.pending import explain_pending
from makeway.live.core import TERMINAL
from makeway.live.crash import crash_point
from makeway.live.loop import SchedulerLoop
from makeway.live.spec import SpecError, parse_job, parse_queue_change

HEARTBEAT_INTERVAL = 2.0
MAX_WAIT = 30.0
MAX_BATCH = 1000


def _field_of(message: str) -> str:
    head = message.split(":", 1)[0].strip()
    return head if head and " " not in head else "body"


def bad(status: int, message: str, field: Optional[str] = None) -> HTTPException:
    return HTTPException(status, {"field": field or _field_of(message), "error": message})


def create_app(loop: SchedulerLoop, cfg: ClusterConfig, store: Any, *,
               log_dirs: Optional[dict[str, Path]] = None) -> FastAPI:
    app = FastAPI(title="makeway", version=__version__,
                  description="makeway live scheduler: jobs, queues, nodes, preemptions, agents")
    ids_lock = threading.Lock()
    known_ids: set[str] = set()
    accepted: dict[str, dict[str, Any]] = {}       # journaled, not yet applied by a pass
    counter = itertools.count(1)
    reports_lock = threading.Lock()
    from makeway.live.store import GroupCommit

    committer = GroupCommit(store)  # concurrent requests share one commit (one flush)
    app.state.committer = committer

    with loop.lock:
        known_ids.update(loop.core.jobs)
    for row in store.events_after(loop.applied_seq):
        if row.kind == "submit":
            known_ids.add(row.payload["job"]["id"])
            accepted[row.payload["job"]["id"]] = row.payload["job"]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid"}
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        return JSONResponse(status_code=422, content={"detail": {"field": loc, "error": f"{loc}: {err.get('msg')}"}})

    def now() -> float:
        return loop.service_now()

    def journal(kind: str, payload: dict[str, Any], key: Optional[str] = None) -> tuple[int, bool]:
        if loop.failed is not None:
            raise bad(503, f"the scheduler stopped: {loop.failed}", "server")
        seq, created = committer.append(kind, payload, tenant="default", idem_key=key, at=now())
        crash_point("event-commit")
        loop.wake()
        return seq, created

    # -- health ----------------------------------------------------------------------------------

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        if loop.failed is not None:
            return JSONResponse({"ok": False, "error": str(loop.failed)}, status_code=503)
        return JSONResponse({"ok": True})

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        ok = loop.ready and loop.failed is None
        return JSONResponse({"ready": ok, "epoch": loop.epoch, "applied_seq": loop.applied_seq,
                             "replayed_passes": loop.replayed_passes}, status_code=200 if ok else 503)

    @app.get("/v1/stats")
    def stats() -> dict[str, Any]:
        """Scheduling-pass latency (ms, recent passes) and journal position, for benchmarks and operators."""
        ms = sorted(loop.pass_ms)

        def pct(p: float) -> Optional[float]:
            return ms[min(len(ms) - 1, int(p * len(ms)))] if ms else None

        with loop.lock:
            pending = len(loop.core.state.pending)
            running = len(loop.core.state.allocations)
        return {"passes": loop.core.pass_no, "applied_seq": loop.applied_seq, "pending_workloads": pending,
                "running_tasks": running, "pass_ms": {"n": len(ms), "p50": pct(0.5), "p99": pct(0.99),
                                                      "max": ms[-1] if ms else None}}

    # -- jobs ------------------------------------------------------------------------------------

    def new_job_id() -> str:
        """An id for a job submitted without one: time, a counter and a random tail."""
        return f"j-{int(time.time() * 1000) % 10**10:010d}-{next(counter)}-{uuid.uuid4().hex[:4]}"

    async def ajournal(kind: str, payload: dict[str, Any], key: Optional[str] = None) -> tuple[int, bool]:
        """``journal`` without a thread per waiting request: the event loop awaits the group commit."""
        if loop.failed is not None:
            raise bad(503, f"the scheduler stopped: {loop.failed}", "server")
        fut = committer.submit(kind, payload, tenant="default", idem_key=key, at=now())
        seq, created = await asyncio.wrap_future(fut)
        crash_point("event-commit")
        loop.wake()
        return seq, created

    @app.post("/v1/jobs", status_code=201)
    async def submit(request: Request, idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            raise bad(400, f"body: not JSON: {exc}", "body") from None
        if isinstance(body, list) or (isinstance(body, dict) and isinstance(body.get("jobs"), list)):
            return await submit_many(body if isinstance(body, list) else body["jobs"], idempotency_key)
        data = body.get("job", body) if isinstance(body, dict) and isinstance(body.get("job"), dict) else body
        gen = None
        if isinstance(data, dict) and "id" not in data:
            gen = new_job_id()
        try:
            spec = parse_job(data, cfg, gen)
        except SpecError as exc:
            raise bad(422, str(exc)) from None
        if key := idempotency_key:
            seq, created = await ajournal("submit", {"job": spec}, key)
            if not created:
                first = store.event(seq)
                jid = first.payload["job"]["id"] if first is not None else spec["id"]
                return {"id": jid, "seq": seq, "created": False}
            with ids_lock:
                known_ids.add(spec["id"])
                accepted[spec["id"]] = spec
            return {"id": spec["id"], "seq": seq, "created": True}
        with ids_lock:  # reserve the id; the commit itself runs unlocked so concurrent submits share it
            if spec["id"] in known_ids:
                raise bad(409, f"id: job {spec['id']!r} already exists", "id")
            known_ids.add(spec["id"])
        try:
            seq, _ = await ajournal("submit", {"job": spec})
        except BaseException:
            with ids_lock:
                known_ids.discard(spec["id"])
            raise
        with ids_lock:
            accepted[spec["id"]] = spec
        return {"id": spec["id"], "seq": seq, "created": True}

    async def submit_many(items: list[Any], key: Optional[str]) -> dict[str, Any]:
        """A list of jobs in one request (a job array): all are checked first, then journaled in one
        transaction; one bad job refuses the whole request, naming ``jobs.<i>.<field>``."""
        if not 1 <= len(items) <= MAX_BATCH:
            raise bad(422, f"jobs: between 1 and {MAX_BATCH} jobs in one request", "jobs")
        specs = []
        for i, data in enumerate(items):
            gen = None
            if isinstance(data, dict) and "id" not in data:
                gen = new_job_id()
            try:
                specs.append(parse_job(data, cfg, gen))
            except SpecError as exc:
                raise bad(422, f"jobs.{i}.{exc}", f"jobs.{i}.{_field_of(str(exc))}") from None
        ids = [sp["id"] for sp in specs]
        if len(set(ids)) != len(ids):
            dup = next(j for j in ids if ids.count(j) > 1)
            raise bad(409, f"id: job {dup!r} appears twice in the request", "id")
        with ids_lock:
            if not key:
                taken = next((j for j in ids if j in known_ids), None)
                if taken is not None:
                    raise bad(409, f"id: job {taken!r} already exists", "id")
                known_ids.update(ids)
        if loop.failed is not None:
            raise bad(503, f"the scheduler stopped: {loop.failed}", "server")
        at = now()
        rows = [{"kind": "submit", "payload": {"job": sp}, "at": at, "tenant": "default",
                 "idem_key": f"{key}#{i}" if key else None} for i, sp in enumerate(specs)]
        try:
            got = await asyncio.to_thread(store.append_events, rows)
        except BaseException:
            if not key:
                with ids_lock:
                    known_ids.difference_update(ids)
            raise
        loop.wake()
        out = []
        with ids_lock:
            for sp, (seq, created) in zip(specs, got):
                if created:
                    known_ids.add(sp["id"])
                    accepted[sp["id"]] = sp
                    out.append({"id": sp["id"], "seq": seq, "created": True})
                else:
                    first = store.event(seq)
                    out.append({"id": first.payload["job"]["id"] if first else sp["id"], "seq": seq,
                                "created": False})
        return {"jobs": out}

    def job_view(jid: str) -> dict[str, Any]:
        with loop.lock:
            job = loop.core.jobs.get(jid)
            if job is not None:
                accepted.pop(jid, None)
                v = job.view()
                v["attempts"] = [loop.core.attempts[a].view() for a in job.attempts]
                v["node"] = _job_node(v["attempts"])
                if job.state not in TERMINAL and jid in loop.core.state.pending:
                    v["pending"] = pending_info(jid)
                return v
        spec = accepted.get(jid)
        if spec is None:
            raise bad(404, f"job: no job {jid!r}", "job")
        return {"id": jid, "queue": spec["queue"], "tenant": "default", "state": "pending", "submitted": None,
                "ended": None, "message": "accepted; not yet seen by the scheduler", "spec": spec, "reason": None,
                "attempts": [], "node": None, "pending": {"code": "accepted", "message": "accepted", "position": None}}

    def pending_info(jid: str) -> dict[str, Any]:
        info = _all_pending(loop.core).get(jid)
        if info is None:
            return {"code": "waiting", "message": "waiting", "position": None}
        return {"code": info.code, "message": info.message, "position": info.position, "queue": info.queue,
                "blocking": info.blocking, "values": info.values}

    @app.get("/v1/jobs")
    def list_jobs(state: Optional[str] = None, queue: Optional[str] = None,
                  limit: int = Query(1000, ge=1, le=100000)) -> dict[str, Any]:
        out = []
        with loop.lock:
            core = loop.core
            reasons = None
            for job in core.jobs.values():
                if (state and job.state != state) or (queue and job.queue != queue):
                    continue
                v = {"id": job.id, "queue": job.queue, "state": job.state, "submitted": job.submitted,
                     "ended": job.ended, "priority": job.spec.get("priority", 0)}
                atts = [core.attempts[a] for a in job.live]
                v["node"] = ",".join(sorted({a.node for a in atts})) or None
                code = None
                if job.state not in TERMINAL and job.id in core.state.pending:
                    if reasons is None:
                        reasons = _all_pending(core)
                    r = reasons.get(job.id)
                    code = r.code if r is not None else "waiting"
                elif job.preemptions and job.state in ("pending", "preempting"):
                    code = "preempted"
                v["reason_code"] = code
                v["reason"] = job.preemptions[-1] if job.preemptions else None
                out.append(v)
                if len(out) >= limit:
                    break
            for jid, spec in list(accepted.items()):
                if jid in core.jobs:
                    accepted.pop(jid, None)
                elif (not state or state == "pending") and (not queue or spec["queue"] == queue):
                    out.append({"id": jid, "queue": spec["queue"], "state": "pending", "submitted": None,
                                "ended": None, "priority": spec.get("priority", 0), "node": None,
                                "reason_code": "accepted", "reason": None})
        return {"jobs": out, "now": loop.service_now()}

    @app.get("/v1/jobs/{jid}")
    def get_job(jid: str) -> dict[str, Any]:
        return job_view(jid)

    @app.delete("/v1/jobs/{jid}", status_code=202)
    def cancel(jid: str, idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        v = job_view(jid)
        if v["state"] in TERMINAL:
            return {"id": jid, "state": v["state"], "seq": None}
        seq, _ = journal("cancel", {"job": jid}, idempotency_key)
        return {"id": jid, "state": "cancelling", "seq": seq}

    @app.get("/v1/jobs/{jid}/explain")
    def explain(jid: str) -> dict[str, Any]:
        v = job_view(jid)
        story = []
        with loop.lock:
            for a in v["attempts"]:
                story.append(f"attempt {a['attempt_no']} of {a['task']} on {a['node']}: {a['state']}"
                             + (f", exit {a['exit_code']}" if a["exit_code"] is not None else "")
                             + (f", signal {a['signal']}" if a["signal"] is not None else ""))
            job = loop.core.jobs.get(jid)
            preemptions = list(job.preemptions) if job else []
        for p in preemptions:
            story.append(f"t={p['time']:.3f} task {p['task']} preempted on {p['node']} by {p.get('preemptor')} "
                         f"({p['model']} rule {p['rule']}): {p.get('detail', '')}")
        return {"id": jid, "state": v["state"], "queue": v["queue"], "pending": v.get("pending"),
                "reason": v["reason"], "preemptions": preemptions, "attempts": v["attempts"],
                "message": v.get("message", ""), "story": story}

    @app.get("/v1/jobs/{jid}/events")
    def job_events(jid: str) -> dict[str, Any]:
        v = job_view(jid)
        events: list[dict[str, Any]] = [{"time": v["submitted"], "event": "submitted"}]
        for a in v["attempts"]:
            events.append({"time": a["started"], "event": "started", "attempt": a["attempt"], "node": a["node"]})
            if a["ended"] is not None:
                events.append({"time": a["ended"], "event": "exited", "attempt": a["attempt"],
                               "exit_code": a["exit_code"], "signal": a["signal"]})
        with loop.lock:
            job = loop.core.jobs.get(jid)
            for p in (job.preemptions if job else []):
                events.append({"time": p["time"], "event": "preempted", "attempt": p["attempt"], "reason": p})
        if v["ended"] is not None:
            events.append({"time": v["ended"], "event": v["state"]})
        events.sort(key=lambda e: (e["time"] is None, e["time"] or 0.0))
        return {"id": jid, "events": events}

    @app.get("/v1/jobs/{jid}/logs", response_class=PlainTextResponse)
    def job_logs(jid: str, task: Optional[str] = None, attempt: Optional[int] = None,
                 stream: str = Query("stdout", pattern="^(stdout|stderr)$")) -> str:
        v = job_view(jid)
        atts = [a for a in v["attempts"] if (task is None or a["task"] == task)
                and (attempt is None or a["attempt_no"] == attempt)]
        if not atts:
            raise bad(404, f"attempt: job {jid!r} has no such attempt", "attempt")
        a = atts[-1]
        base = (log_dirs or {}).get(a["node"])
        if base is None:
            raise bad(404, f"logs: node {a['node']} is not served by this server's local agent; "
                           f"read them on the node", "logs")
        path = base / "attempts" / a["attempt"].replace("/", "_").replace("#", "_") / f"{stream}.log"
        try:
            return path.read_text(errors="replace")
        except OSError:
            raise bad(404, f"logs: no {stream} for attempt {a['attempt']} yet", "logs") from None

    # -- queues ----------------------------------------------------------------------------------

    @app.get("/v1/queues")
    def queues() -> dict[str, Any]:
        with loop.lock:
            core = loop.core
            st = core.state
            pending_count: dict[str, int] = {}
            for wid in st.pending:
                pending_count[st.workloads[wid].queue] = pending_count.get(st.workloads[wid].queue, 0) + 1
            shares = core.model.queue_shares(st, core.now)
            out = []
            for name, q in st.queues.items():
                out.append({"name": name, "parent": q.parent, "guaranteed": q.guaranteed, "max": q.max,
                            "weight": q.weight, "usage": dict(st.queue_usage[name]), "share": shares.get(name),
                            "pending": sum(pending_count.get(d, 0) for d in st.descendants(name)),
                            "running": len(st.queue_allocs[name]), "children": list(q.children)})
        return {"queues": out, "model": cfg.preemption.model}

    @app.patch("/v1/queues/{name}")
    def patch_queue(name: str, body: Any = Body(...), idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        with loop.lock:
            q = loop.core.state.queues.get(name)
            if q is None:
                raise bad(404, f"queue: no queue {name!r}", "queue")
            current = (q.guaranteed, q.max)
        try:
            changes = parse_queue_change(body, cfg, name, current)
        except SpecError as exc:
            raise bad(422, str(exc)) from None
        seq, _ = journal("queue", {"queue": name, "changes": changes}, idempotency_key)
        return {"queue": name, "seq": seq, "changes": changes}

    @app.get("/v1/queues/{name}/pending")
    def queue_pending(name: str) -> dict[str, Any]:
        with loop.lock:
            core = loop.core
            if name not in core.state.queues:
                raise bad(404, f"queue: no queue {name!r}", "queue")
            reasons = _all_pending(core)
            leaves = set(core.state.descendants(name))
            rows = [{"job": wid, "queue": r.queue, "position": r.position, "code": r.code, "message": r.message}
                    for wid, r in reasons.items() if r.queue in leaves]
        rows.sort(key=lambda r: (r["queue"], r["position"] or 0, r["job"]))
        return {"queue": name, "pending": rows}

    # -- nodes -----------------------------------------------------------------------------------

    @app.get("/v1/nodes")
    def nodes() -> dict[str, Any]:
        with loop.lock:
            return {"nodes": [loop.core.node_view(n) for n in loop.core.state.nodes]}

    def _node_op(name: str, cordon: bool, drain: bool, key: Optional[str]) -> dict[str, Any]:
        with loop.lock:
            if name not in loop.core.state.nodes:
                raise bad(404, f"node: no node {name!r}", "node")
        seq, _ = journal("cordon", {"node": name, "cordon": cordon, "drain": drain}, key)
        return {"node": name, "cordon": cordon, "drain": drain, "seq": seq}

    @app.post("/v1/nodes/{name}/cordon")
    def cordon(name: str, idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        return _node_op(name, True, False, idempotency_key)

    @app.post("/v1/nodes/{name}/uncordon")
    def uncordon(name: str, idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        return _node_op(name, False, False, idempotency_key)

    @app.post("/v1/nodes/{name}/drain")
    def drain(name: str, idempotency_key: Optional[str] = Header(None)) -> dict[str, Any]:
        return _node_op(name, True, True, idempotency_key)

    # -- preemptions -------------------------------------------------------------------------------

    @app.get("/v1/preemptions")
    def preemptions(limit: int = Query(100, ge=1, le=10000)) -> dict[str, Any]:
        out = []
        with loop.lock:
            for job in loop.core.jobs.values():
                for p in job.preemptions:
                    out.append({"victim": job.id, **p})
        out.sort(key=lambda p: (p["time"], p["task"]))
        return {"preemptions": out[-limit:]}

    # -- agents ------------------------------------------------------------------------------------

    def heartbeat_interval() -> float:
        """Often enough that a healthy agent is never taken for a silent one."""
        bounds = [HEARTBEAT_INTERVAL] + [t / 3 for t in (loop.lease, loop.suspect_after) if t]
        return max(0.1, min(bounds))

    def require_registered(node: str) -> bool:
        """409 for a node the server does not know (lost, or never registered): its agent must
        register again. Marks the node seen; True when it had been flagged silent."""
        with loop.lock:
            registered = loop.core.registered.get(node, False)
            silent = node in loop.core.silent
        if not registered and node not in accepted_nodes(node):
            raise bad(409, f"node: {node!r} is not registered (lost or unknown): register again", "node")
        loop.seen(node)
        return silent

    def accepted_nodes(node: str) -> set[str]:
        """Nodes whose registration is journaled but not yet applied by a pass."""
        return {row.payload.get("node") for row in store.events_after(loop.applied_seq) if row.kind == "node"}

    @app.post("/v1/agent/register")
    def register(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        node = body.get("node")
        if not isinstance(node, str) or not node or "/" in node:
            raise bad(422, "node: a node name is required", "node")
        cap = body.get("capacity")
        if not isinstance(cap, dict) or not all(isinstance(v, (int, float)) and 0 <= v <= 2**63 - 1
                                                for v in cap.values()):
            raise bad(422, "capacity: a mapping of resource to a number >= 0", "capacity")
        unknown = [r for r, v in cap.items() if v and r not in cfg.resources]
        if unknown:
            raise bad(422, f"capacity.{unknown[0]}: unknown resource (declared: {', '.join(cfg.resources)})")
        loop.seen(node)
        events = [("node", {"node": node, "capacity": cap, "labels": body.get("labels") or {}})]
        with loop.lock:
            known = loop.core.attempts
            for rep in body.get("attempts") or []:
                a = known.get(rep.get("attempt"))
                if a is None or a.node != node:
                    continue
                if rep.get("state") == "exited" and a.state != "exited":
                    events.append(("exited", {"attempt": a.id, "node": node, "exit_code": rep.get("exit_code"),
                                              "signal": rep.get("signal"),
                                              **({"lost": True} if rep.get("lost") else {})}))
                elif rep.get("state") == "running" and a.state == "assigned":
                    events.append(("started", {"attempt": a.id, "node": node}))
        for kind, payload in events:
            journal(kind, payload)
        return {"epoch": loop.epoch, "heartbeat_interval": heartbeat_interval(), "lease": loop.lease or None}

    @app.post("/v1/agent/heartbeat")
    def heartbeat(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        node = body.get("node")
        if not isinstance(node, str) or not node:
            raise bad(422, "node: a node name is required", "node")
        if require_registered(node):
            journal("silent", {"node": node, "silent": False})
        with reports_lock:
            acked = loop.report_seq.get(node, 0)
            for rep in sorted(body.get("reports") or [], key=lambda r: int(r.get("seq", 0))):
                seq = int(rep.get("seq", 0))
                if seq <= acked:
                    continue
                event = rep.get("event")
                if event not in ("started", "exited"):
                    raise bad(422, f"reports.event: {event!r} is not started or exited", "reports.event")
                payload = {"attempt": rep.get("attempt"), "node": node, "report_seq": seq}
                if event == "exited":
                    payload.update(exit_code=rep.get("exit_code"), signal=rep.get("signal"))
                    if rep.get("lost"):
                        payload["lost"] = True
                journal(event, payload)
                acked = seq
                loop.report_seq[node] = seq
        return {"acked": acked, "epoch": loop.epoch}

    @app.get("/v1/agent/desired")
    def desired(node: str, version: Optional[int] = None,
                wait: float = Query(0.0, ge=0, le=MAX_WAIT)) -> dict[str, Any]:
        require_registered(node)
        ver, attempts = loop.wait_desired(node, version, wait)
        return {"epoch": loop.epoch, "version": ver, "attempts": attempts}

    return app


def _job_node(attempts: list[dict[str, Any]]) -> Optional[str]:
    live = sorted({a["node"] for a in attempts if a["state"] != "exited"})
    return ",".join(live) or None


def _all_pending(core: Any) -> dict[str, Any]:
    """Every pending workload's reason code and queue position, as the model sees them now."""
    return explain_pending(core.state, core.model, core.now)


__all__ = ["create_app"]
