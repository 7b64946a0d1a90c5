"""The HTTP client the CLI uses to talk to ``makeway serve`` (``--server`` or ``MAKEWAY_SERVER``).

It sends ``Authorization: Bearer <token>`` from ``--token`` or ``MAKEWAY_TOKEN`` when one is given.

Server answers become ``MakewayError`` lines naming the field (the API's 4xx body), so a bad job file
is exit status 2 with the same message a local check would give.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import httpx

from makeway.errors import MakewayError

DEFAULT_SERVER = "http://127.0.0.1:8642"


class ServerError(MakewayError):
    """The server refused a request or could not be reached."""


def server_url(explicit: Optional[str]) -> str:
    url = explicit or os.environ.get("MAKEWAY_SERVER") or DEFAULT_SERVER
    if not url.startswith(("http://", "https://")):
        raise ServerError(f"--server: {url!r} is not an http(s) URL")
    return url.rstrip("/")


class Client:
    def __init__(self, server: Optional[str] = None, timeout: float = 30.0, token: Optional[str] = None):
        self.base = server_url(server)
        token = token or os.environ.get("MAKEWAY_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.http = httpx.Client(base_url=self.base, timeout=timeout, headers=headers)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServerError(f"--server: cannot reach {self.base}: {exc}") from None
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


__all__ = ["Client", "DEFAULT_SERVER", "ServerError", "server_url"]
