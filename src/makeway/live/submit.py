"""``POST /v1/jobs`` on its own: parse, authorize, journal, answer. Shared by the API process and the
acceptor processes of ``makeway serve --api-workers N`` (``live/acceptor.py``), so a submit gets the
same answer, byte for byte, whichever process takes it.

Nothing here reads the scheduler's memory: the job-id uniqueness check is the store's (``job_ids``,
written in the journal's transaction), idempotency keys are the journal's, so any process with a
store connection can accept. ``on_accepted`` lets the API process keep its read-your-write cache.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from typing import Any, Callable, Optional

from fastapi import HTTPException

from makeway.config import ClusterConfig
from makeway.live.auth import Authenticator, Principal, Tenancy, submit_problem
from makeway.live.crash import crash_point
from makeway.live.spec import SpecError, parse_job
from makeway.live.store import IdTaken

PUBLIC = ("/healthz", "/readyz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/ui/login", "/ui/logout")
AGENT_PATHS = "/v1/agent/"
MAX_BATCH = 1000


def _field_of(message: str) -> str:
    head = message.split(":", 1)[0].strip()
    return head if head and " " not in head else "body"


def bad(status: int, message: str, field: Optional[str] = None) -> HTTPException:
    return HTTPException(status, {"field": field or _field_of(message), "error": message})


def make_principal(auth: Authenticator) -> Callable:
    async def principal(path: str, header: Optional[str]) -> Principal:
        """Who asks (HTTPException 401/403 otherwise). Every route but health and the API docs needs a
        principal (when tokens exist); agent endpoints take an agent or admin token, every other route
        refuses an agent token. Async, so a submit takes no thread hop; the rare store read (a look-up
        not cached) runs in a thread. Shared by the routes' dependency and the submit fast path."""
        if path in PUBLIC:
            return Principal("anonymous", "none")
        if auth.needs_store(header):
            p, why = await asyncio.to_thread(auth.authenticate, header)
        else:
            p, why = auth.authenticate(header)
        if p is None:
            raise HTTPException(401, {"field": "authorization", "error": f"authorization: {why}"},
                                headers={"WWW-Authenticate": "Bearer"})
        agent_path = path.startswith(AGENT_PATHS)
        if (agent_path and p.role not in ("agent", "admin")) or (not agent_path and p.role == "agent"):
            raise HTTPException(403, {"field": "authorization", "error": f"authorization: a {p.role} token "
                                      f"cannot use {'the agent endpoints' if agent_path else 'this endpoint'}"})
        return p

    return principal


class Submitter:
    """The submit path over one store and one group committer.

    ``now`` gives the service time a submit is journaled at; ``failed`` the reason this process must
    not accept (the scheduler stopped), or None; ``wake`` tells the scheduler there is input;
    ``on_accepted(spec)`` is told of every job this process journaled; ``worker`` (a number) makes
    generated job ids unique across the processes that share a journal.
    """

    def __init__(self, cfg: ClusterConfig, store: Any, committer: Any, *, now: Callable[[], float],
                 clock: Callable[[], float] = time.time, failed: Callable[[], Any] = lambda: None,
                 wake: Callable[[], None] = lambda: None,
                 on_accepted: Callable[[dict[str, Any]], None] = lambda spec: None,
                 worker: Optional[int] = None) -> None:
        self.cfg, self.store, self.committer = cfg, store, committer
        self.tenancy = Tenancy(cfg)
        self.now, self.clock, self.failed, self.wake = now, clock, failed, wake
        self.on_accepted = on_accepted
        self.worker = worker
        self._counter = itertools.count(1)

    # -- helpers ---------------------------------------------------------------------------------

    def refuse(self, p: Principal, status: int, action: str, target: str, target_tenant: Optional[str],
               message: str, field: Optional[str] = None, details: Optional[dict[str, Any]] = None) -> HTTPException:
        """The refusal, audited (who tried what on which target)."""
        self.store.add_audit({"at": self.clock(), "who": p.name, "role": p.role, "tenant": p.tenant,
                              "action": action, "target": target, "target_tenant": target_tenant,
                              "outcome": "forbidden" if status == 403 else "not-found", "status": status,
                              "details": {**(details or {}), "error": message}})
        return bad(status, message, field)

    def new_job_id(self) -> str:
        """An id for a job submitted without one: time, a counter (and the process's number when
        several processes accept) and a random tail."""
        n = next(self._counter)
        count = f"{n}" if self.worker is None else f"{self.worker}.{n}"
        return f"j-{int(time.time() * 1000) % 10**10:010d}-{count}-{uuid.uuid4().hex[:4]}"

    def _check_running(self) -> None:
        failed = self.failed()
        if failed is not None:
            raise bad(503, f"the scheduler stopped: {failed}", "server")

    def authorize(self, p: Principal, spec: dict[str, Any], where: str = "") -> str:
        """The tenant the job belongs to, once ``p`` may submit it; a user's job records its user."""
        tenancy = self.tenancy
        problem = submit_problem(p, tenancy, spec["queue"], spec.get("user"))
        if problem is not None:
            field, message = problem
            raise self.refuse(p, 403, "job.submit", f"job:{spec['id']}", tenancy.tenant_of(spec["queue"]),
                              f"{where}{message}", f"{where}{field}", {"queue": spec["queue"]})
        if p.role == "user":
            spec["user"] = p.name
        return tenancy.job_tenant(spec["queue"])

    def _first_id(self, seq: int, fallback: str) -> str:
        first = self.store.event(seq)
        return first.payload["job"]["id"] if first is not None else fallback

    # -- the submit --------------------------------------------------------------------------------

    async def accept(self, raw: bytes, idempotency_key: Optional[str], p: Principal) -> dict[str, Any]:
        """A submission's body in, its answer out (HTTPException for a refusal)."""
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise bad(400, f"body: not JSON: {exc}", "body") from None
        if isinstance(body, list) or (isinstance(body, dict) and isinstance(body.get("jobs"), list)):
            return await self.accept_many(body if isinstance(body, list) else body["jobs"], idempotency_key, p)
        data = body.get("job", body) if isinstance(body, dict) and isinstance(body.get("job"), dict) else body
        gen = self.new_job_id() if isinstance(data, dict) and "id" not in data else None
        try:
            spec = parse_job(data, self.cfg, gen)
        except SpecError as exc:
            raise bad(422, str(exc)) from None
        tenant = self.authorize(p, spec)
        self._check_running()
        fut = self.committer.submit_async("submit", {"job": spec}, tenant=tenant, idem_key=idempotency_key,
                                          at=self.now())
        try:
            seq, created = await fut
        except IdTaken as exc:
            raise bad(409, str(exc), "id") from None
        crash_point("event-commit")
        self.wake()
        if not created:
            return {"id": self._first_id(seq, spec["id"]), "seq": seq, "created": False}
        self.on_accepted(spec)
        return {"id": spec["id"], "seq": seq, "created": True}

    async def accept_many(self, items: list[Any], key: Optional[str], p: Principal) -> dict[str, Any]:
        """A list of jobs in one request (a job array): all are checked first, then journaled in one
        transaction; one bad job refuses the whole request, naming ``jobs.<i>.<field>``."""
        if not 1 <= len(items) <= MAX_BATCH:
            raise bad(422, f"jobs: between 1 and {MAX_BATCH} jobs in one request", "jobs")
        specs = []
        for i, data in enumerate(items):
            gen = self.new_job_id() if isinstance(data, dict) and "id" not in data else None
            try:
                specs.append(parse_job(data, self.cfg, gen))
            except SpecError as exc:
                raise bad(422, f"jobs.{i}.{exc}", f"jobs.{i}.{_field_of(str(exc))}") from None
        tenants = [self.authorize(p, sp, f"jobs.{i}.") for i, sp in enumerate(specs)]
        ids = [sp["id"] for sp in specs]
        if len(set(ids)) != len(ids):
            dup = next(j for j in ids if ids.count(j) > 1)
            raise bad(409, f"id: job {dup!r} appears twice in the request", "id")
        self._check_running()
        at = self.now()
        rows = [{"kind": "submit", "payload": {"job": sp}, "at": at, "tenant": t,
                 "idem_key": f"{key}#{i}" if key else None} for i, (sp, t) in enumerate(zip(specs, tenants))]
        try:
            got = await asyncio.to_thread(self.store.append_events, rows)
        except IdTaken as exc:
            raise bad(409, str(exc), "id") from None
        self.wake()
        out = []
        for sp, (seq, created) in zip(specs, got):
            if created:
                self.on_accepted(sp)
                out.append({"id": sp["id"], "seq": seq, "created": True})
            else:
                out.append({"id": self._first_id(seq, sp["id"]), "seq": seq, "created": False})
        return {"jobs": out}


async def read_body(receive: Callable) -> Optional[bytes]:
    """A request's whole body from ASGI ``receive``; None when the client went away first."""
    chunks = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return None
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(chunks)


class SubmitFastPath:
    """``POST /v1/jobs`` served straight from ASGI, in front of the app; the rest passed on to it.

    Submission is the API's hot path: the framework's layers (middleware stack, request objects,
    dependency resolution, response validation) cost more than the validation and the commit, and
    capped durable single-job submits near 700/s. This answers the same bodies with the same codes
    through the same ``accept`` coroutine, so the route in the OpenAPI schema and the fast path
    cannot disagree (tests/live/test_api.py holds them to the same answers). With ``worker`` set
    (several processes accept), the answer names the process in an ``x-makeway-worker`` header.
    """

    def __init__(self, app: Any, accept: Any, principal: Any, worker: Optional[int] = None) -> None:
        self.app, self.accept, self.principal = app, accept, principal
        self.tag = [] if worker is None else [(b"x-makeway-worker", str(worker).encode())]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/v1/jobs":
            await self.app(scope, receive, send)
            return
        key = authorization = None
        for name, value in scope["headers"]:
            if name == b"idempotency-key":
                key = value.decode("latin-1")
            elif name == b"authorization":
                authorization = value.decode("latin-1")
        body = await read_body(receive)
        if body is None:
            return
        extra: list[tuple[bytes, bytes]] = []
        try:
            who = await self.principal(scope["path"], authorization)
            status, content = 201, await self.accept(body, key, who)
        except HTTPException as exc:
            status, content = exc.status_code, {"detail": exc.detail}
            extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (exc.headers or {}).items()]
        body = json.dumps(content, separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                *extra, *self.tag]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["MAX_BATCH", "Submitter", "SubmitFastPath", "bad", "make_principal"]
