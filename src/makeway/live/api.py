"""The REST API (``/v1``) and the agent endpoints (``/v1/agent``) of ``makeway serve``.

Every input is journaled (committed) before the answer, then the scheduler loop is woken; reads
come from the loop's core under its lock, so they show what the last committed pass decided.
Bad input is a 4xx whose body names the field: ``{"detail": {"field": ..., "error": ...}}``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Optional

from fastapi import Body, Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from makeway import __version__
from makeway.config import ClusterConfig
from makeway.live.auth import Authenticator, Principal, Tenancy, may_cancel, may_preempt, quota_problem, sees_job
from makeway.live.core import TERMINAL
from makeway.live import views
from makeway.live.crash import crash_point
from makeway.live.loop import SchedulerLoop
from makeway.live.metrics import mount_metrics
from makeway.live.login import cookie_header, login_redirect, mount_login
from makeway.live.spec import SpecError, parse_priority_change, parse_queue_change
from makeway.live.submit import AGENT_PATHS, MAX_BATCH, PUBLIC, Submitter, SubmitFastPath, bad, make_principal
from makeway.live.ui import mount_ui, ui_env

__all__ = ["AGENT_PATHS", "MAX_BATCH", "PUBLIC", "SubmitFastPath", "bad", "create_app"]

HEARTBEAT_INTERVAL = 2.0
MAX_WAIT = 30.0


def create_app(loop: SchedulerLoop, cfg: ClusterConfig, store: Any, *,
               log_dirs: Optional[dict[str, Path]] = None, auth: Optional[Authenticator] = None,
               worker: Optional[int] = None) -> FastAPI:
    """The API of the scheduler's process; ``worker`` (0) when acceptor processes share its socket,
    so submit answers name the process that gave them."""
    auth = auth or Authenticator(store)
    tenancy = Tenancy(cfg)

    principal = make_principal(auth)

    async def guard(request: Request) -> Principal:
        try:
            p = await principal(request.url.path, cookie_header(request))
        except HTTPException as exc:
            to = login_redirect(request) if exc.status_code == 401 else None
            if to is None:
                raise
            raise HTTPException(303, "log in first", headers={"Location": to.headers["location"]}) from None
        request.state.principal = p
        return p

    app = FastAPI(title="makeway", version=__version__, dependencies=[Depends(guard)],
                  description="makeway live scheduler: jobs, queues, nodes, preemptions, agents")
    app.state.auth = auth
    accepted: dict[str, dict[str, Any]] = {}       # journaled, not yet applied by a pass
    app.state.accepted = accepted                  # the read views (UI too) show these as pending
    reports_lock = threading.Lock()
    from makeway.live.group_commit import GroupCommit

    committer = GroupCommit(store)  # concurrent requests share one commit (one flush)
    app.state.committer = committer
    scanned = [loop.applied_seq]  # the journal is read for submits up to here

    def catch_up() -> None:
        """Read-your-write across processes: jobs another API process journaled (``--api-workers``)
        and no pass has applied yet join ``accepted``, so a 201 from any process is found here."""
        after = max(scanned[0], loop.applied_seq)
        for row in store.events_after(after):
            if row.kind == "submit":
                accepted.setdefault(row.payload["job"]["id"], row.payload["job"])
            after = row.seq
        scanned[0] = after

    catch_up()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid"}
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        return JSONResponse(status_code=422, content={"detail": {"field": loc, "error": f"{loc}: {err.get('msg')}"}})

    @app.exception_handler(views.NotFound)
    async def _not_found(request: Request, exc: views.NotFound) -> JSONResponse:
        return JSONResponse(status_code=404, content={"detail": {"field": exc.field, "error": str(exc)}})

    def now() -> float:
        return loop.service_now()

    def record(p: Principal, action: str, target: str, target_tenant: Optional[str], outcome: str, status: int,
               details: Optional[dict[str, Any]] = None) -> None:
        store.add_audit({"at": loop.clock(), "who": p.name, "role": p.role, "tenant": p.tenant, "action": action,
                         "target": target, "target_tenant": target_tenant, "outcome": outcome, "status": status,
                         "details": details})

    def refuse(p: Principal, status: int, action: str, target: str, target_tenant: Optional[str],
               message: str, field: Optional[str] = None, details: Optional[dict[str, Any]] = None) -> HTTPException:
        """The refusal, audited (who tried what on which target)."""
        record(p, action, target, target_tenant, "forbidden" if status == 403 else "not-found", status,
               {**(details or {}), "error": message})
        return bad(status, message, field)

    def journal(kind: str, payload: dict[str, Any], key: Optional[str] = None, *, tenant: str = "default",
                audit: Optional[tuple[Principal, str, str, Optional[str], dict[str, Any]]] = None) -> tuple[int, bool]:
        """Commit one input; with ``audit`` = (principal, action, target, target tenant, details) its
        audit row commits in the same transaction."""
        if loop.failed is not None:
            raise bad(503, f"the scheduler stopped: {loop.failed}", "server")
        if audit is not None:
            p, action, target, ttenant, details = audit
            row = {"at": loop.clock(), "who": p.name, "role": p.role, "tenant": p.tenant, "action": action,
                   "target": target, "target_tenant": ttenant, "outcome": "ok", "status": 200, "details": details}
            seq, created = store.append_audited(kind, payload, row, tenant=tenant, idem_key=key, at=now())
        else:
            seq, created = committer.append(kind, payload, tenant=tenant, idem_key=key, at=now())
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

    submitter = Submitter(cfg, store, committer, now=now, clock=loop.clock, failed=lambda: loop.failed,
                          wake=loop.wake, on_accepted=lambda spec: accepted.__setitem__(spec["id"], spec),
                          worker=worker)
    app.state.submitter = submitter

    @app.post("/v1/jobs", status_code=201)
    async def submit(request: Request, idempotency_key: Optional[str] = Header(None),
                     p: Principal = Depends(guard)) -> dict[str, Any]:
        """Submit one job (an object, or ``{"job": {...}}``) or a job array (a list, or ``{"jobs": [...]}``,
        at most 1,000, all or nothing). The answer comes after the commit: a 201 is durable."""
        return await submitter.accept(await request.body(), idempotency_key, p)

    # what serve runs: the app behind the submit fast path
    app.state.asgi = SubmitFastPath(app, submitter.accept, principal, worker)

    def visible_to(p: Principal) -> Any:
        """The tenancy rule as the views take it: which (queue, user) jobs ``p`` is shown."""
        return None if p.admin else (lambda queue, user: sees_job(p, tenancy, queue, user))

    def job_view(jid: str, p: Principal, action: Optional[str] = None) -> dict[str, Any]:
        """The job as ``p`` may see it; a job it may not see is the same 404 as one that does not
        exist (audited when ``action`` names what was attempted)."""
        try:
            try:
                v = views.job_view(loop, jid, accepted, tenancy.job_tenant)
            except views.NotFound:
                catch_up()
                v = views.job_view(loop, jid, accepted, tenancy.job_tenant)
        except views.NotFound:
            if action is not None:
                raise refuse(p, 404, action, f"job:{jid}", None, f"job: no job {jid!r}", "job") from None
            raise
        if not p.admin and not sees_job(p, tenancy, v["queue"], v["spec"].get("user")):
            if action is not None:
                raise refuse(p, 404, action, f"job:{jid}", tenancy.job_tenant(v["queue"]), f"job: no job {jid!r}", "job")
            raise bad(404, f"job: no job {jid!r}", "job")
        return v

    @app.get("/v1/jobs")
    def list_jobs(state: Optional[str] = None, queue: Optional[str] = None,
                  limit: int = Query(1000, ge=1, le=100000), p: Principal = Depends(guard)) -> dict[str, Any]:
        catch_up()
        return views.list_jobs(loop, accepted, state, queue, limit, visible=visible_to(p), tenant_of=tenancy.job_tenant)

    @app.get("/v1/jobs/{jid}")
    def get_job(jid: str, p: Principal = Depends(guard)) -> dict[str, Any]:
        return job_view(jid, p)

    @app.delete("/v1/jobs/{jid}", status_code=202)
    def cancel(jid: str, idempotency_key: Optional[str] = Header(None), p: Principal = Depends(guard)) -> dict[str, Any]:
        v = job_view(jid, p, "job.cancel")
        user = v["spec"].get("user")
        if not may_cancel(p, tenancy, v["queue"], user):
            raise refuse(p, 403, "job.cancel", f"job:{jid}", v["tenant"], f"job: {p.name} may not cancel {jid!r}")
        if v["state"] in TERMINAL:
            return {"id": jid, "state": v["state"], "seq": None}
        seq, _ = journal("cancel", {"job": jid, "by": p.name}, idempotency_key, tenant=p.scope,
                         audit=(p, "job.cancel", f"job:{jid}", v["tenant"], {"queue": v["queue"], "user": user}))
        return {"id": jid, "state": "cancelling", "seq": seq}

    @app.patch("/v1/jobs/{jid}", status_code=202)
    def reprioritise(jid: str, body: Any = Body(...), idempotency_key: Optional[str] = Header(None),
                     p: Principal = Depends(guard)) -> dict[str, Any]:
        """Change a waiting job's priority (``{"priority": N}``, the only field that changes). As with
        Slurm's ``scontrol update``, a user may lower its own job's priority; raising one takes its
        tenant's admin or an admin. Refused (409) while any of the job's tasks runs, and under a model
        whose priorities are fixed at submission (YuniKorn)."""
        v = job_view(jid, p, "job.reprioritise")
        try:
            priority = parse_priority_change(body)
        except SpecError as exc:
            raise bad(422, str(exc)) from None
        old = v["spec"].get("priority", 0)
        if p.role == "user" and priority > old:
            raise refuse(p, 403, "job.reprioritise", f"job:{jid}", v["tenant"],
                         f"priority: a user may lower its own job's priority, not raise it ({old} -> {priority})",
                         "priority", {"from": old, "to": priority})
        fixed = loop.core.model.fixed_priority
        if fixed:
            raise bad(409, f"priority: cannot change under the {cfg.preemption.model} model: {fixed}", "priority")
        if v["state"] in TERMINAL:
            raise bad(409, f"job: {jid!r} has ended ({v['state']})", "job")
        with loop.lock:
            running = bool(loop.core.state.running.get(jid))
        if running:
            raise bad(409, f"job: {jid!r} has running tasks; a priority changes only while nothing of the job runs",
                      "job")
        seq, _ = journal("priority", {"job": jid, "priority": priority, "by": p.name}, idempotency_key,
                         tenant=p.scope, audit=(p, "job.reprioritise", f"job:{jid}", v["tenant"],
                                                {"queue": v["queue"], "from": old, "to": priority}))
        return {"id": jid, "priority": priority, "previous": old, "seq": seq}

    @app.post("/v1/jobs/{jid}/preempt", status_code=202)
    def preempt(jid: str, idempotency_key: Optional[str] = Header(None), p: Principal = Depends(guard)) -> dict[str, Any]:
        """Manual preemption: the job's running tasks get their stop signal and grace, then wait again
        (reason rule ``manual``, naming who). Admins, and tenant admins within their tenant."""
        v = job_view(jid, p, "job.preempt")
        if not may_preempt(p, tenancy, v["queue"]):
            raise refuse(p, 403, "job.preempt", f"job:{jid}", v["tenant"],
                         f"job: a {p.role} token may not preempt {jid!r}")
        if v["state"] in TERMINAL or not any(a["state"] in ("assigned", "running") for a in v["attempts"]):
            raise bad(409, f"job: {jid!r} has nothing running to preempt ({v['state']})", "job")
        seq, _ = journal("preempt", {"job": jid, "by": p.name}, idempotency_key, tenant=p.scope,
                         audit=(p, "job.preempt", f"job:{jid}", v["tenant"], {"queue": v["queue"]}))
        return {"id": jid, "state": "preempting", "seq": seq}

    @app.get("/v1/jobs/{jid}/explain")
    def explain(jid: str, p: Principal = Depends(guard)) -> dict[str, Any]:
        job_view(jid, p)
        return views.explain(loop, jid, accepted)

    @app.get("/v1/jobs/{jid}/events")
    def job_events(jid: str, p: Principal = Depends(guard)) -> dict[str, Any]:
        job_view(jid, p)
        return views.job_events(loop, jid, accepted)

    @app.get("/v1/jobs/{jid}/logs", response_class=PlainTextResponse)
    def job_logs(jid: str, task: Optional[str] = None, attempt: Optional[int] = None,
                 stream: str = Query("stdout", pattern="^(stdout|stderr)$"), p: Principal = Depends(guard)) -> str:
        job_view(jid, p)
        return views.job_log(loop, jid, accepted, log_dirs, task, attempt, stream)

    # -- queues ----------------------------------------------------------------------------------

    @app.get("/v1/queues")
    def queues() -> dict[str, Any]:
        return views.queues(loop, cfg.preemption.model)

    @app.patch("/v1/queues/{name}")
    def patch_queue(name: str, body: Any = Body(...), idempotency_key: Optional[str] = Header(None),
                    p: Principal = Depends(guard)) -> dict[str, Any]:
        with loop.lock:
            q = loop.core.state.queues.get(name)
            if q is None:
                raise bad(404, f"queue: no queue {name!r}", "queue")
            current = (q.guaranteed, q.max)
        if not p.admin and p.role != "tenant-admin":
            raise refuse(p, 403, "queue.patch", f"queue:{name}", tenancy.tenant_of(name),
                         f"queue: a {p.role} token cannot change quotas", "queue", {"body": body})
        try:
            changes = parse_queue_change(body, cfg, name, current)
        except SpecError as exc:
            raise bad(422, str(exc)) from None

        def root_limits(root: str) -> tuple[Optional[dict], Optional[dict]]:
            with loop.lock:
                rq = loop.core.state.queues[root]
                return rq.guaranteed, rq.max

        problem = quota_problem(p, tenancy, name, changes, root_limits)
        if problem is not None:
            raise refuse(p, 403, "queue.patch", f"queue:{name}", tenancy.tenant_of(name), problem, None,
                         {"changes": changes})
        seq, _ = journal("queue", {"queue": name, "changes": changes}, idempotency_key, tenant=p.scope,
                         audit=(p, "queue.patch", f"queue:{name}", tenancy.tenant_of(name),
                                {"changes": changes, "before": {"guaranteed": current[0], "max": current[1]}}))
        return {"queue": name, "seq": seq, "changes": changes}

    @app.get("/v1/queues/{name}/pending")
    def queue_pending(name: str, p: Principal = Depends(guard)) -> dict[str, Any]:
        return views.queue_pending(loop, name, visible=visible_to(p))

    # -- nodes -----------------------------------------------------------------------------------

    @app.get("/v1/nodes")
    def nodes() -> dict[str, Any]:
        return views.nodes(loop)

    def _node_op(name: str, cordon: bool, drain: bool, key: Optional[str], p: Principal) -> dict[str, Any]:
        action = "node.drain" if drain else ("node.cordon" if cordon else "node.uncordon")
        if not p.admin:
            raise refuse(p, 403, action, f"node:{name}", None, f"node: a {p.role} token cannot {action[5:]} nodes")
        with loop.lock:
            if name not in loop.core.state.nodes:
                raise bad(404, f"node: no node {name!r}", "node")
        seq, _ = journal("cordon", {"node": name, "cordon": cordon, "drain": drain}, key, tenant=p.scope,
                         audit=(p, action, f"node:{name}", None, {}))
        return {"node": name, "cordon": cordon, "drain": drain, "seq": seq}

    @app.post("/v1/nodes/{name}/cordon")
    def cordon(name: str, idempotency_key: Optional[str] = Header(None), p: Principal = Depends(guard)) -> dict[str, Any]:
        return _node_op(name, True, False, idempotency_key, p)

    @app.post("/v1/nodes/{name}/uncordon")
    def uncordon(name: str, idempotency_key: Optional[str] = Header(None), p: Principal = Depends(guard)) -> dict[str, Any]:
        return _node_op(name, False, False, idempotency_key, p)

    @app.post("/v1/nodes/{name}/drain")
    def drain(name: str, idempotency_key: Optional[str] = Header(None), p: Principal = Depends(guard)) -> dict[str, Any]:
        return _node_op(name, True, True, idempotency_key, p)

    # -- preemptions -------------------------------------------------------------------------------

    @app.get("/v1/preemptions")
    def preemptions(limit: int = Query(100, ge=1, le=10000), p: Principal = Depends(guard)) -> dict[str, Any]:
        return views.preemptions(loop, limit, visible=visible_to(p))

    # -- audit -------------------------------------------------------------------------------------

    @app.get("/v1/audit")
    def audit_log(after: int = Query(0, ge=0), limit: int = Query(1000, ge=1, le=100000),
                  p: Principal = Depends(guard)) -> dict[str, Any]:
        """Who did what: every quota change, cancel, manual preemption, node operation and every
        refused attempt. Admins see all; a tenant admin its tenant's principals and targets."""
        if not p.admin and p.role != "tenant-admin":
            raise refuse(p, 403, "audit.read", "audit", p.tenant, f"audit: a {p.role} token cannot read the audit log",
                         "audit")
        return {"audit": store.audit(None if p.admin else p.tenant, after, limit)}

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

    mount_ui(app, loop, cfg.preemption.model, accepted, log_dirs,
             visible_for=lambda request: visible_to(request.state.principal))
    mount_metrics(app, loop, cfg.preemption.model, accepted, committer, refresh=catch_up)
    mount_login(app, ui_env(), auth.authenticate,
                lambda p, outcome, status, details: record(p or Principal("anonymous", "none"), "ui.login", "ui",
                                                           p.tenant if p else None, outcome, status, details))
    return app

