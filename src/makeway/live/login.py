"""A browser's way in when tokens exist: ``/ui/login`` takes a token once and keeps it in a cookie.

A browser cannot send ``Authorization: Bearer`` on its own, so the UI would be closed to everyone once
the first token is created. The login form checks the token as the API does and, if it is good, sets
it as an HttpOnly, SameSite=Strict cookie (Secure behind https). The API honours that cookie on GET
and HEAD requests only: the UI reads and never writes, so a forged cross-site form can change nothing
(no CSRF token needed), and every write still needs the bearer header. Logins, good and bad, go to the
audit log, so a guessed token shows up there.
"""

from __future__ import annotations

from typing import Any, Callable, Optional
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment

COOKIE = "makeway_token"
SAFE_METHODS = ("GET", "HEAD")
MAX_FORM = 4096


def cookie_header(request: Request) -> Optional[str]:
    """The ``Authorization`` value a request carries: its header, else (reads only) its login cookie."""
    header = request.headers.get("authorization")
    if header is None and request.method in SAFE_METHODS:
        token = request.cookies.get(COOKIE)
        if token:
            return f"Bearer {token}"
    return header


def login_redirect(request: Request) -> Optional[RedirectResponse]:
    """Where a browser without a usable token is sent: the login page, coming back afterwards."""
    path = request.url.path
    if request.method not in SAFE_METHODS or not (path == "/" or path.startswith("/ui")):
        return None
    here = path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?next={quote(here, safe='')}", status_code=303)


def _local_next(value: Optional[str]) -> str:
    """Only a path of this UI: a login never redirects elsewhere (no open redirect)."""
    if value and value.startswith("/ui") and "//" not in value and "\\" not in value:
        return value
    return "/ui/"


def mount_login(app: FastAPI, env: Environment, authenticate: Callable[[str], Any],
                record: Callable[..., None]) -> None:
    """``authenticate(header)`` is the API's (principal or None, why); ``record(principal_or_name,
    outcome, status, details)`` writes the audit row."""

    def form(next_url: str, error: str = "", status: int = 200) -> HTMLResponse:
        html = env.get_template("login.html").render(title="log in", next_url=next_url, error=error)
        return HTMLResponse(html, status_code=status)

    @app.get("/ui/login", include_in_schema=False)
    def login_page(next: Optional[str] = None) -> HTMLResponse:  # noqa: A002 - the query's name
        return form(_local_next(next))

    @app.post("/ui/login", include_in_schema=False)
    async def login(request: Request) -> Any:
        raw = await request.body()
        if len(raw) > MAX_FORM:
            return form("/ui/", "the form is too large", 413)
        fields = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=4)
        token = (fields.get("token") or [""])[0].strip()
        next_url = _local_next((fields.get("next") or [None])[0])
        if not token:
            return form(next_url, "token: give the token 'makeway token create' printed", 422)
        p, why = await _in_thread(authenticate, f"Bearer {token}")
        if p is None or p.role == "agent":
            why = why or "an agent token cannot use the UI"
            record(None, "forbidden" if p is not None else "unauthenticated", 401, {"error": f"token: {why}"})
            return form(next_url, f"token: {why}", 401)
        record(p, "ok", 200, {})
        resp = RedirectResponse(next_url, status_code=303)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")
        return resp

    @app.post("/ui/logout", include_in_schema=False)
    def logout() -> RedirectResponse:
        resp = RedirectResponse("/ui/login", status_code=303)
        resp.delete_cookie(COOKIE, path="/")
        return resp


async def _in_thread(fn: Callable, *args: Any) -> Any:
    import asyncio

    return await asyncio.to_thread(fn, *args)


__all__ = ["COOKIE", "cookie_header", "login_redirect", "mount_login"]
