"""Acceptor processes: ``makeway serve --api-workers N`` answers submits in N processes.

One interpreter cannot parse, validate and commit submits fast enough while it also schedules, so
the serving process (the *leader*: it owns the scheduler loop) starts N-1 acceptor processes that
serve its listening socket. An acceptor answers ``POST /v1/jobs`` itself, through the same
``Submitter`` as the leader over a store connection and a group committer of its own: submits need
nothing from the scheduler's memory (ids are unique in the database, keys in the journal). Every
other request it forwards, unchanged, to the leader over a unix socket only these processes know
(in a 0700 directory), streaming the answer back, so server-sent events and the agents' long-polls
work whichever process took the connection. Once an acceptor serves, the leader stops taking
connections from the public socket itself: its share of the cores goes to scheduling (a pass per
batch of submits costs about as much CPU as accepting them) and the requests passed on to it.

Why an inherited descriptor rather than SO_REUSEPORT: the socket is bound once, by the leader, so
no other program can bind the same port alongside (any process of the same user could with
SO_REUSEPORT), port 0 needs no second step, and connections waiting in the one accept queue are
not lost when an acceptor exits: the others take them, and the leader starts it again.

Lifetimes: each acceptor watches a pipe whose only write end the leader holds; end of file (the
leader closed it to stop them, or died, even by SIGKILL) makes it finish the requests it has, commit
what is queued, and exit. The leader is told of new journal rows through a second pipe, one byte a
submit (a full pipe means a wake is pending already), so the scheduler runs a pass at once instead
of at its idle poll; an acceptor that serves says so on the same pipe (``R``).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import pickle
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

log = logging.getLogger("makeway.serve")

_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade",
        b"proxy-connection", b"content-length"}


def listening_socket(host: str, port: int) -> socket.socket:
    """The public socket, bound by the leader and inherited by the acceptors."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        from makeway.errors import MakewayError

        raise MakewayError(f"--port: cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(2048)
    return sock


class Acceptors:
    """The leader's side: the private socket it forwards to, the pipes, the acceptor processes.

    ``on_ready`` is called (once, from a thread of its own) when the first acceptor serves; an
    acceptor that exits while the set is running is started again (same number), so the public
    socket, which the leader stops taking connections from once acceptors serve, is never unserved
    for long.
    """

    RESTART_CHECK = 0.5

    def __init__(self, count: int, wake: Callable[[], None], on_ready: Callable[[], None] = lambda: None) -> None:
        self.count = count
        self.wake = wake
        self.on_ready = on_ready
        self.ready = 0
        self.restarts = 0
        self.dir = Path(tempfile.mkdtemp(prefix="makeway-api-"))  # mkdtemp makes it 0700
        self.path = self.dir / "leader.sock"
        self.private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.private.bind(str(self.path))
        self.private.listen(1024)
        self.procs: dict[int, subprocess.Popen] = {}
        self._sock: Optional[socket.socket] = None
        self._spec: dict[str, Any] = {}
        self._watch_r: Optional[int] = None
        self._watch_w: Optional[int] = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._running = threading.Event()
        self._closed = threading.Event()
        self._guard = threading.Lock()
        threading.Thread(target=self._wakes, name="makeway-acceptor-wakes", daemon=True).start()

    def _wakes(self) -> None:
        while not self._closed.is_set():
            try:
                got = os.read(self._wake_r, 4096)
            except OSError:
                return
            if not got:
                return
            ready = got.count(b"R")
            if ready:
                self.ready += ready
                if self.ready == ready:  # the first one
                    threading.Thread(target=self.on_ready, name="makeway-acceptors-ready", daemon=True).start()
            if len(got) > ready:
                self.wake()

    def start(self, sock: socket.socket, spec: dict[str, Any]) -> None:
        """Start ``count`` acceptors on ``sock``; ``spec`` holds what they need (config, db, ...)."""
        with self._guard:
            if self._running.is_set() or self._closed.is_set():
                return
            self._sock, self._spec = sock, spec
            self._watch_r, self._watch_w = os.pipe()
            for i in range(1, self.count + 1):
                self._spawn(i)
            self._running.set()
        threading.Thread(target=self._keep, name="makeway-acceptors", daemon=True).start()
        log.info("started %d acceptor process(es): pids %s", len(self.procs), self.pids())

    def _spawn(self, worker: int) -> None:
        assert self._sock is not None and self._watch_r is not None
        fds = {"worker": worker, "listen_fd": self._sock.fileno(), "watch_fd": self._watch_r,
               "wake_fd": self._wake_w, "leader": str(self.path)}
        blob = json.dumps(fds).encode() + b"\n" + pickle.dumps(self._spec)
        proc = subprocess.Popen([sys.executable, "-c", "from makeway.live.acceptor import main; main()"],
                                stdin=subprocess.PIPE, pass_fds=(self._sock.fileno(), self._watch_r, self._wake_w))
        assert proc.stdin is not None
        proc.stdin.write(blob)
        proc.stdin.close()
        self.procs[worker] = proc

    def _keep(self) -> None:
        while not self._closed.wait(self.RESTART_CHECK):
            with self._guard:
                if not self._running.is_set():
                    return
                for worker, proc in list(self.procs.items()):
                    if proc.poll() is not None:
                        log.warning("acceptor %d (pid %d) exited with %s; starting it again", worker, proc.pid,
                                    proc.returncode)
                        self.restarts += 1
                        self._spawn(worker)

    def pids(self) -> list[int]:
        return [p.pid for _, p in sorted(self.procs.items())]

    def stop(self, timeout: float = 5.0) -> None:
        """Tell the acceptors to finish (close the watch pipe), wait for them, kill the slow ones."""
        with self._guard:
            self._running.clear()
            for fd in (self._watch_w, self._watch_r):
                if fd is not None:
                    os.close(fd)
            self._watch_w = self._watch_r = None
        deadline = time.monotonic() + timeout
        for p in list(self.procs.values()):
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("acceptor %d did not stop within %.0f s: killed", p.pid, timeout)
                p.kill()
                p.wait()

    def close(self) -> None:
        self.stop()
        self._closed.set()
        for fd in (self._wake_w, self._wake_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.private.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- acceptor

class Forward:
    """ASGI app that passes a request to the leader's private socket and streams the answer back."""

    def __init__(self, path: str, worker: int) -> None:
        import httpx

        self.via = (b"x-makeway-via", str(worker).encode())  # which acceptor passed the answer on
        self.client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=path), base_url="http://leader",
                                        timeout=httpx.Timeout(None, connect=5.0))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        import httpx

        from makeway.live.submit import read_body

        body = await read_body(receive)
        if body is None:
            return
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        req = self.client.build_request(scope["method"], target.decode("latin-1"), headers=headers,
                                        content=body)
        try:
            resp = await self.client.send(req, stream=True)
        except httpx.HTTPError as exc:
            body = json.dumps({"detail": {"field": "server", "error": f"server: the scheduler's process did "
                                          f"not answer ({type(exc).__name__})"}}).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1")]})
            await send({"type": "http.response.body", "body": body})
            return
        try:
            await send({"type": "http.response.start", "status": resp.status_code,
                        "headers": [*((k, v) for k, v in resp.headers.raw if k.lower() not in _HOP), self.via]})
            stream = asyncio.ensure_future(self._copy(resp, send))
            gone = asyncio.ensure_future(self._disconnected(receive))
            await asyncio.wait({stream, gone}, return_when=asyncio.FIRST_COMPLETED)
            for t in (stream, gone):
                t.cancel()
            if stream.done() and not stream.cancelled() and stream.exception() is None:
                await send({"type": "http.response.body", "body": b""})
        finally:
            await resp.aclose()

    @staticmethod
    async def _copy(resp: Any, send: Any) -> None:
        async for chunk in resp.aiter_raw():
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

    @staticmethod
    async def _disconnected(receive: Any) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass


def _poke(fd: int) -> Callable[[], None]:
    def wake() -> None:
        try:
            os.write(fd, b"\0")
        except BlockingIOError:
            pass  # the pipe is full: the leader has wakes pending
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
    return wake


def main() -> None:
    """An acceptor process: read its spec from stdin, serve the inherited socket until told to stop.

    The parent watch starts first, before the imports (seconds on a loaded machine), so an acceptor
    whose leader dies while it starts does not live on."""
    head = json.loads(sys.stdin.buffer.readline())
    server: Any = None

    def watch() -> None:
        while os.read(head["watch_fd"], 1):
            pass
        if server is None:
            os._exit(0)  # not serving yet: nothing to finish
        server.should_exit = True  # the leader stopped us, or died

    threading.Thread(target=watch, name="makeway-acceptor-watch", daemon=True).start()
    spec = {**pickle.loads(sys.stdin.buffer.read()), **head}
    logging.basicConfig(level=logging.WARNING, format=f"%(asctime)s acceptor-{spec['worker']} %(levelname)s "
                        "%(message)s")
    import uvicorn

    from makeway.live.auth import Authenticator
    from makeway.live.group_commit import GroupCommit
    from makeway.live.store import Store
    from makeway.live.submit import Submitter, SubmitFastPath, make_principal

    cfg = spec["config"]
    store = Store(spec["db"], migrate=False)
    origin = float(store.meta_get("clock_origin") or 0.0)
    auth = Authenticator(store)
    for secret, principal in spec.get("secrets", ()):
        auth.add_secret(secret, principal)
    committer = GroupCommit(store)
    submitter = Submitter(cfg, store, committer, now=lambda: time.time() - origin, wake=_poke(spec["wake_fd"]),
                          worker=spec["worker"])
    app = SubmitFastPath(Forward(spec["leader"], spec["worker"]), submitter.accept, make_principal(auth), spec["worker"])
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level=spec.get("log_level", "warning"),
                                           access_log=False, timeout_graceful_shutdown=2, proxy_headers=False))
    def announce() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if server.started:
            os.write(spec["wake_fd"], b"R")  # serving: the leader may leave the public socket to us

    threading.Thread(target=announce, name="makeway-acceptor-ready", daemon=True).start()
    sock = socket.socket(fileno=spec["listen_fd"])
    try:
        server.run(sockets=[sock])
    finally:
        committer.close()
        store.close()


__all__ = ["Acceptors", "Forward", "listening_socket", "main"]
