"""``makeway serve``: the store, the recovered scheduler loop, the API under uvicorn, optional local agents.

Start-up order matters for durability: take the leader lock, migrate, recover (replay the journal),
then listen, then start the loop, so no request is answered by a core that has not caught up with
what was acknowledged. A loop that fails stops the server (fail-stop); a clean stop (SIGINT/SIGTERM)
lets the current pass commit, then exits, leaving running tasks to their supervisors.

On PostgreSQL a second ``serve`` on the same database is a standby (``live/leader.py``): it listens
at once, but only ``/healthz`` and ``/readyz`` answer (``role: standby``); every other request gets
503, so clients and agents try the next server. When the leader's lock is released it recovers
under a new epoch and serves. A leader that loses its lock stops (fail-stop) rather than writing.

With no token in the database the server is open to whoever can connect, so it listens on loopback
only (``--host`` elsewhere is refused) and says so; once a token exists every request needs one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from makeway.config import ClusterConfig, build_nodes
from makeway.errors import MakewayError

log = logging.getLogger("makeway.serve")


def default_db(config: Path) -> str:
    return f"sqlite:///{config.with_suffix('.db').resolve()}" if config.suffix else f"sqlite:///{config}.db"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class _Stopped(BaseException):
    """SIGINT/SIGTERM after uvicorn's own shutdown: the server stopped cleanly."""


async def _send_json(send: Callable, status: int, body: dict, headers: tuple = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


class Gate:
    """The ASGI app uvicorn serves: the API once this server leads, a standby's answers before.

    A standby answers ``/healthz`` (200, it is alive) and ``/readyz`` (503, with the leader it knows
    of) and 503 with ``Retry-After`` to everything else, writes and agent calls alike, so nothing is
    journaled through a server that does not lead. ``inner`` is set when this server leads, and
    dropped again (state ``stopping``, 503 to all) when it finds it no longer does.
    An API installed after start-up gets no lifespan events (``api.create_app`` uses none).
    """

    def __init__(self, leader_info: Callable[[], Optional[dict]]) -> None:
        self.inner: Any = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None  # uvicorn's, seen at the lifespan start
        self.leader_info = leader_info
        self.state = "standby"

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        inner = self.inner
        if inner is not None:
            return await inner(scope, receive, send)
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        if path == "/healthz":
            ok = self.state != "stopping"
            return await _send_json(send, 200 if ok else 503, {"ok": ok, "role": self.state})
        leader = await asyncio.to_thread(self._leader)
        if path == "/readyz":
            return await _send_json(send, 503, {"ready": False, "role": self.state, "leader": leader})
        where = f" (leader: {leader['url']}, epoch {leader['epoch']})" if leader and leader.get("url") else ""
        await _send_json(send, 503, {"detail": {"field": "server", "error": f"this server is a {self.state}, "
                                                f"not the leader{where}: try another server"}},
                         headers=((b"retry-after", b"1"),))

    def _leader(self) -> Optional[dict]:
        try:
            return self.leader_info()
        except Exception:  # noqa: BLE001 - the answer is 503 anyway; the leader is only a hint
            return None


class Server:
    """One ``makeway serve`` process: build it, ``run()`` blocks until stopped.

    On a database another ``serve`` leads (PostgreSQL), the server is built as a standby
    (``leading`` False) and ``run()`` waits for the lock before it recovers and serves.
    """

    def __init__(self, cfg: ClusterConfig, db: str, host: str = "127.0.0.1", port: int = 8642, *,
                 local_agent: bool = False, agent_dir: Optional[Path] = None, recovery_grace: float = 10.0,
                 min_pass_interval: float = 0.02, lease: float = 30.0, suspect_after: float = 10.0,
                 log_level: str = "warning", api_workers: int = 1):
        import uvicorn

        from makeway.live.leader import lock_for
        from makeway.live.loop import SchedulerLoop
        from makeway.live.store import Store

        from makeway.live.auth import Authenticator, Principal, is_loopback

        if isinstance(api_workers, bool) or not isinstance(api_workers, int) or api_workers < 1:
            raise MakewayError(f"--api-workers: expected a whole number >= 1, got {api_workers!r}")
        self.cfg = cfg
        self.db = db
        self.log_level = log_level
        self.api_workers = api_workers
        self.acceptors: Any = None
        self.sock: Optional[socket.socket] = None
        if api_workers > 1:  # bound here, inherited by the acceptor processes (live/acceptor.py)
            from makeway.live.acceptor import listening_socket

            self.sock = listening_socket(host, port)
            port = self.sock.getsockname()[1]
        self.host, self.port = host, port or free_port(host)
        self.agent_dir = Path(agent_dir) if agent_dir else None
        self.local_agent = local_agent
        if local_agent and self.agent_dir is None:
            raise MakewayError("--agent-dir: needed with --local-agent")
        self.lock = lock_for(db)
        self.leading = self.lock.try_acquire()  # SQLite: LockBusy (exit 2) when another serve has the file
        try:
            self.store = Store(db)
            self.open = not self.store.has_tokens()
            if self.open and not is_loopback(host):
                raise MakewayError(f"--host: {host} would serve anyone who can connect, and no token is configured; "
                                   "create one with 'makeway token create --role admin --db URL', "
                                   "or serve on 127.0.0.1")
        except BaseException:
            if hasattr(self, "store"):
                self.store.close()
            self.lock.close()
            if self.sock is not None:
                self.sock.close()
            raise
        self.auth = Authenticator(self.store)
        self.agent_token = secrets.token_urlsafe(32)  # the local agents' credential: in memory only
        self.auth_principal = Principal("local-agent", "agent")
        self.auth.add_secret(self.agent_token, self.auth_principal)
        self.loop = SchedulerLoop(cfg, self.store, recovery_grace=recovery_grace, min_interval=min_pass_interval,
                                  lease=lease, suspect_after=suspect_after)
        self.loop.on_fatal = self._fatal
        if api_workers > 1:
            from makeway.live.acceptor import Acceptors

            self.acceptors = Acceptors(api_workers - 1, self.loop.wake, on_ready=self._leave_public)
        self.app: Any = None
        self.gate = Gate(self._leader_info)
        self.agents: list[Any] = []
        self.failed: Optional[BaseException] = None
        self._stopping = threading.Event()
        server = self

        class _Uvicorn(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                server._closing()
                super().handle_exit(sig, frame)

        self.uvicorn = _Uvicorn(uvicorn.Config(self.gate, host=self.host, port=self.port, log_level=log_level,
                                               access_log=False, timeout_graceful_shutdown=2,
                                               proxy_headers=False))  # no proxy in front by default
        if self.leading:
            try:
                self._lead()
            except BaseException:
                self.close()
                raise

    @property
    def access_note(self) -> str:
        """One line on who may use this server, printed at start."""
        if self.open:
            return ("no token configured: open to local users only (127.0.0.1); "
                    "'makeway token create --role admin' makes every request need a token")
        return "tokens configured: every request needs 'Authorization: Bearer <token>'"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _lead(self) -> None:
        """Holding the lock: recover under a new epoch, record this server as the leader, open the API."""
        from makeway.live.api import create_app

        self.gate.state = "recovering"
        self.loop.recover()
        self.store.meta_set("leader", json.dumps({"url": self.url, "epoch": self.loop.epoch, "pid": os.getpid(),
                                                  "host": socket.gethostname(), "since": time.time()}))
        log_dirs = {}
        if self.local_agent:
            assert self.agent_dir is not None
            log_dirs = {n.name: self.agent_dir / n.name for n in build_nodes(self.cfg)}
        self.app = create_app(self.loop, self.cfg, self.store, log_dirs=log_dirs, auth=self.auth,
                              worker=0 if self.acceptors is not None else None)
        self.lock.watch(self._lost_lock)
        self.gate.state = "leader"
        self.gate.inner = self.app.state.asgi
        self.leading = True

    def _leader_info(self) -> Optional[dict]:
        raw = self.store.meta_get("leader")
        return json.loads(raw) if raw else None

    def _fatal(self, exc: BaseException) -> None:
        from makeway.live.leader import LeaderLost
        from makeway.live.store import StaleLeader

        log.error("scheduler failed, stopping the server: %s", exc)
        if self.app is not None:
            self.app.state.feed.close()
        if isinstance(exc, (StaleLeader, LeaderLost)):
            self.gate.state, self.gate.inner = "stopping", None  # another server leads: send everyone there
        self.failed = self.failed or exc
        if self.acceptors is not None:
            self.acceptors.stop()  # nothing more is accepted for a scheduler that stopped
        self.uvicorn.should_exit = True

    def _lost_lock(self, exc: BaseException) -> None:
        """Fail-stop: no pass, no event, no answer from a server that may no longer lead."""
        self.loop.failed = self.loop.failed or exc
        self._fatal(exc)
        self.loop.stop(timeout=5)

    def _closing(self) -> None:
        """A stop was asked for: let the agents and the long-polls go, so the listener can close now."""
        self._stopping.set()
        for a in self.agents:
            a.stop()
        if self.acceptors is not None:
            threading.Thread(target=self.acceptors.stop, name="makeway-acceptors-stop", daemon=True).start()
        self.loop.release_waiters()
        if self.app is not None:
            self.app.state.feed.close()  # end the browsers' event streams too

    def _start_agents(self) -> None:
        from makeway.live.agent import start_local_agents

        assert self.agent_dir is not None
        self.agents = start_local_agents(self.url, build_nodes(self.cfg), self.agent_dir, token=self.agent_token)

    def _leave_public(self) -> None:
        """Acceptors serve the public socket: this process stops taking connections from it and keeps
        its cores for scheduling and the requests they pass on (its copy of the socket stays open,
        for acceptors started again)."""
        loop, servers = self.gate.loop, getattr(self.uvicorn, "servers", None)
        if loop is None or not servers:
            return
        try:
            loop.call_soon_threadsafe(servers[0].close)
        except RuntimeError:
            pass  # uvicorn's loop is closed: the server is stopping anyway

    def _start_acceptors(self) -> None:
        """Leading now: the acceptor processes take their share of the socket (never on a standby)."""
        assert self.sock is not None
        secrets_ = [(self.agent_token, self.auth_principal)]
        self.acceptors.start(self.sock, {"config": self.cfg, "db": self.db, "log_level": self.log_level,
                                         "secrets": secrets_})

    def _serve(self, on_listen: Any, on_standby: Any) -> None:
        """Once listening: as a standby, wait for the lock and lead; then start the loop and agents."""
        if not self.leading:
            if on_standby is not None:
                on_standby(self.url)
            log.info("standby on %s: waiting for the leader lock", self.url)
            if not self.lock.wait(self._stopping):
                return
            if self._stopping.is_set():
                return
            log.info("took the leader lock; recovering")
            try:
                self._lead()
            except BaseException as exc:  # noqa: BLE001 - a standby that cannot recover must not serve
                self._fatal(exc)
                return
        self.loop.start()
        if self.acceptors is not None:
            self._start_acceptors()
        if self.local_agent:
            self._start_agents()
        if on_listen is not None:
            on_listen(self.url)

    def run(self, on_listen: Any = None, on_standby: Any = None) -> None:
        def after_start() -> None:
            while not self.uvicorn.started and not self.uvicorn.should_exit:
                threading.Event().wait(0.02)
            if self.uvicorn.started:
                self._serve(on_listen, on_standby)

        threading.Thread(target=after_start, name="makeway-start", daemon=True).start()

        def stopped(signum: int, frame: Any) -> None:
            raise _Stopped(signum)

        old = {s: signal.signal(s, stopped) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.uvicorn.run(sockets=None if self.sock is None else [self.sock.dup(), self.acceptors.private])
        except _Stopped:
            pass  # uvicorn re-raises the signal it handled once it has shut down: a clean stop
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self.close()
        failed = self.loop.failed or self.failed
        if failed is not None:
            raise MakewayError(f"the scheduler stopped: {failed}")

    def close(self) -> None:
        """Stop the loop and agents, give the lock up, close the database (also for a server never run)."""
        self._stopping.set()
        for a in self.agents:
            a.stop()
        if self.acceptors is not None:
            self.acceptors.close()
        self.loop.stop()
        if self.app is not None:
            self.app.state.committer.close()
        if self.sock is not None:
            self.sock.close()
        self.lock.close()
        self.store.close()


__all__ = ["Gate", "Server", "default_db", "free_port"]
