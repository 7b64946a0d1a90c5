"""The web UI under ``/ui``: server-rendered pages over the same read views as the JSON API.

Every page is plain HTML that works without JavaScript (links and GET forms). With JavaScript, the
page's live part (``#live``) re-fetches itself when the server-sent events stream (``/v1/events``)
reports a committed pass: htmx asks for the same URL with ``HX-Request`` and gets only that part.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Optional

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape

from makeway.live import views
from makeway.live.login import COOKIE
from makeway.live.sse import PassFeed

HERE = Path(__file__).resolve().parent
JOB_STATES = ("pending", "running", "preempting", "finished", "failed", "cancelled")
LOG_LINES = 40


def _num(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if not math.isfinite(v):
        return "∞"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _pct(v: Any, scale: float) -> str:
    if not isinstance(v, (int, float)) or not scale or not math.isfinite(v):
        return "0"
    return f"{max(0.0, min(100.0, 100.0 * v / scale)):.2f}"


def _val(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_val(x)}" for k, x in v.items()) or "–"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_val(x) for x in v) + "]"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _num(v)
    return "–" if v is None else str(v) if not isinstance(v, str) else v


def _res(d: Optional[dict[str, Any]]) -> str:
    return ", ".join(f"{k} {_num(v)}" for k, v in (d or {}).items()) or "–"


def ui_env() -> Environment:
    env = Environment(loader=PackageLoader("makeway.live", "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, pct=_pct, val=_val, res=_res, json=lambda v: json.dumps(v, sort_keys=True))
    return env


def mount_ui(app: FastAPI, loop: Any, model: str, accepted: dict[str, Any],
             log_dirs: Optional[dict[str, Path]] = None,
             visible_for: Optional[Callable[[Request], Any]] = None) -> PassFeed:
    """The pages, their static files, ``/`` -> ``/ui/`` and the SSE stream; the feed that the
    scheduler loop publishes each pass to (``app.state.feed``; ``close`` it to end the streams).
    ``visible_for(request)`` is the API's tenancy rule for whoever asks (None: everything shown):
    the pages show a user the jobs the JSON API would, and queue-level figures to everyone."""

    def shown(request: Request) -> Any:
        return visible_for(request) if visible_for is not None else None
    env = ui_env()
    feed = PassFeed()
    loop.pass_listeners.append(feed.publish)
    app.state.feed = feed
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")

    def clock(t: Optional[float]) -> str:
        if t is None:
            return "–"
        return time.strftime("%H:%M:%S", time.localtime(loop.origin + t))

    env.filters["clock"] = clock

    def page(request: Request, name: str, title: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        with loop.lock:
            pass_no, now = loop.core.pass_no, loop.core.now
        url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        common = {"page": name, "title": title, "model": model, "pass_no": pass_no, "now": now, "self_url": url,
                  "logged_in": bool(request.cookies.get(COOKIE))}
        live = env.get_template(f"_{name}.html").render(**common, **ctx)
        tpl = "_live.html" if request.headers.get("HX-Request") else "page.html"
        return HTMLResponse(env.get_template(tpl).render(**common, live=live, **ctx), status_code=status)

    def missing(request: Request, exc: views.NotFound) -> HTMLResponse:
        return page(request, "missing", "not found", status=404, error=str(exc))

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    @app.get("/ui/queues", include_in_schema=False)
    def queues_page(request: Request) -> HTMLResponse:
        return page(request, "queues", "queues", board=views.queue_board(loop, model))

    @app.get("/ui/jobs", include_in_schema=False)
    def jobs_page(request: Request, queue: Optional[str] = None, state: Optional[str] = None,
                  user: Optional[str] = None, limit: int = Query(500, ge=1, le=100000)) -> HTMLResponse:
        queue, state, user = queue or None, state or None, user or None
        jobs = views.list_jobs(loop, accepted, state, queue, limit, user, visible=shown(request))["jobs"]
        with loop.lock:
            names = list(loop.core.state.queues)
        return page(request, "jobs", "jobs", jobs=jobs, queues=names, states=JOB_STATES,
                    f={"queue": queue or "", "state": state or "", "user": user or ""}, limit=limit)

    @app.get("/ui/jobs/{jid}", include_in_schema=False)
    def job_page(request: Request, jid: str) -> HTMLResponse:
        try:
            return page(request, "job", f"job {jid}", **job_story(jid, shown(request)))
        except views.NotFound as exc:
            return missing(request, exc)

    def job_story(jid: str, visible: Any) -> dict[str, Any]:
        job = views.job_view(loop, jid, accepted)
        if visible is not None and not visible(job["queue"], job["spec"].get("user")):
            raise views.NotFound("job", f"job: no job {jid!r}")
        ex = views.explain(loop, jid, accepted)
        events = views.job_events(loop, jid, accepted)["events"]
        with loop.lock:
            core = loop.core
            preempted = []
            for p in ex["preemptions"]:
                secs, lost = views.work_lost(core, p["attempt"], core.now)
                by = views.preemptor_job(core, p.get("preemptor"))
                preempted.append({**p, "preemptor_job": by, "preemptor_queue": core.jobs[by].queue if by else None,
                                  "lost_seconds": secs, "lost": lost})
        log_text, log_note = None, None
        if job["attempts"]:
            try:
                lines = views.job_log(loop, jid, accepted, log_dirs).splitlines()
                log_text = "\n".join(lines[-LOG_LINES:])
            except views.NotFound as exc:
                log_note = str(exc)
        return {"job": job, "story": ex["story"], "preempted": preempted, "events": events,
                "log_text": log_text, "log_note": log_note}

    @app.get("/ui/preemptions", include_in_schema=False)
    def preemptions_page(request: Request, limit: int = Query(200, ge=1, le=10000)) -> HTMLResponse:
        rows = views.preemptions(loop, 10**9, visible=shown(request))["preemptions"]
        by_rule: dict[str, int] = {}
        matrix: dict[tuple[str, str], int] = {}
        for p in rows:
            rule = f"{p['model']}/{p['rule']}"
            by_rule[rule] = by_rule.get(rule, 0) + 1
            cell = (p["preemptor_queue"] or "–", p["queue"])
            matrix[cell] = matrix.get(cell, 0) + 1
        rows_q = sorted({a for a, _ in matrix})
        cols_q = sorted({b for _, b in matrix})
        return page(request, "preemptions", "preemptions", feed=list(reversed(rows[-limit:])), total=len(rows),
                    by_rule=sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])), matrix=matrix,
                    rows_q=rows_q, cols_q=cols_q)

    @app.get("/ui/nodes", include_in_schema=False)
    def nodes_page(request: Request) -> HTMLResponse:
        rows = views.nodes(loop)["nodes"]
        resources = list(loop.cfg.resources)
        scale = {r: max([n["capacity"].get(r, 0) for n in rows] + [0]) or 1 for r in resources}
        return page(request, "nodes", "nodes", nodes=rows, resources=resources, scale=scale)

    @app.get("/v1/events", include_in_schema=True, summary="Server-sent events: one `pass` event per committed pass")
    def events(limit: Optional[int] = Query(None, ge=0)) -> StreamingResponse:
        return StreamingResponse(feed.stream(limit), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return feed


__all__ = ["mount_ui"]
