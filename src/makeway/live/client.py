"""The HTTP client the CLI uses to talk to ``makeway serve`` (``--server`` or ``MAKEWAY_SERVER``).

It sends ``Authorization: Bearer <token>`` from ``--token`` or ``MAKEWAY_TOKEN`` when one is given.

Server answers become ``MakewayError`` lines naming the field (the API's 4xx body), so a bad job file
is exit status 2 with the same message a local check would give.

``--server`` may list several servers (``URL1,URL2``: a leader and its standbys on one PostgreSQL
database). A request goes to the server that answered last; on a 503 (a standby, or a server
whose scheduler stopped) or when a server cannot be reached, the next one is tried. A request that
may have reached a server before its connection broke is retried only when repeating it is
harmless: a GET, or a write carrying an ``Idempotency-Key``.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import httpx

from makeway.errors import MakewayError

DEFAULT_SERVER = "http://127.0.0.1:8642"


class ServerError(MakewayError):
    """The server refused a request or could not be reached."""


def parse_servers(text: Optional[str], option: str = "--server") -> list[str]:
    """``"http://a:1,http://b:2"`` -> the URLs, in order; a ``ServerError`` naming ``option`` otherwise."""
    urls = [u.strip().rstrip("/") for u in (text or "").split(",") if u.strip()]
    if not urls:
        raise ServerError(f"{option}: no server URL given")
    for u in urls:
        if not u.startswith(("http://", "https://")):
            raise ServerError(f"{option}: {u!r} is not an http(s) URL")
    return list(dict.fromkeys(urls))


def server_urls(explicit: Optional[str]) -> list[str]:
    return parse_servers(explicit or os.environ.get("MAKEWAY_SERVER") or DEFAULT_SERVER)


def server_url(explicit: Optional[str]) -> str:
    """The first of the servers given (``server_urls`` for all of them)."""
    return server_urls(explicit)[0]


class Client:
    def __init__(self, server: Optional[str] = None, timeout: float = 30.0, token: Optional[str] = None,
                 transport: Optional[httpx.BaseTransport] = None):
        self.servers = server_urls(server)
        self.base = self.servers[0]
        token = token or os.environ.get("MAKEWAY_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.http = httpx.Client(timeout=timeout, transport=transport, headers=headers)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        retry_safe = method == "GET" or any(k.lower() == "idempotency-key" for k in (kwargs.get("headers") or {}))
        start = self.servers.index(self.base)
        order = self.servers[start:] + self.servers[:start]
        failures = []
        resp = None
        for i, base in enumerate(order):
            try:
                resp = self.http.request(method, base + path, **kwargs)
            except httpx.ConnectError as exc:  # never reached the server: always safe to try the next
                failures.append(f"{base}: {exc}")
                continue
            except httpx.HTTPError as exc:
                failures.append(f"{base}: {exc}")
                if retry_safe:
                    continue
                raise ServerError(f"--server: {base}: {exc} (the request may or may not have been applied; "
                                  "repeat it with an Idempotency-Key to be sure)") from None
            if resp.status_code == 503 and i + 1 < len(order):
                failures.append(f"{base}: 503")
                continue
            self.base = base
            break
        if resp is None:
            raise ServerError(f"--server: cannot reach {'; '.join(failures)}")
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail")
            except ValueError:
                detail = resp.text
            if isinstance(detail, dict):
                message = detail.get("error") or str(detail)
            else:
                message = str(detail)
            raise ServerError(f"server said {resp.status_code}: {message}")
        if resp.headers.get("content-type", "").startswith("application/json"):
            return resp.json()
        return resp.text

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def submit(self, job: dict[str, Any], key: Optional[str] = None) -> dict[str, Any]:
        headers = {"Idempotency-Key": key} if key else {}
        return self.request("POST", "/v1/jobs", json=job, headers=headers)

    def cancel(self, job: str) -> dict[str, Any]:
        return self.request("DELETE", f"/v1/jobs/{job}")

    def patch_queue(self, queue: str, changes: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", f"/v1/queues/{queue}", json=changes)

    def preempt(self, job: str) -> dict[str, Any]:
        return self.request("POST", f"/v1/jobs/{job}/preempt")

    def reprioritise(self, job: str, priority: int) -> dict[str, Any]:
        return self.request("PATCH", f"/v1/jobs/{job}", json={"priority": priority})


__all__ = ["Client", "DEFAULT_SERVER", "ServerError", "parse_servers", "server_url", "server_urls"]
