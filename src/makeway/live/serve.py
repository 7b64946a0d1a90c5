"""``makeway serve``: the store, the recovered scheduler loop, the API under uvicorn, optional local agents.

Start-up order matters for durability: migrate, recover (replay the journal), then listen, then start
the loop, so no request is answered by a core that has not caught up with what was acknowledged.
A loop that fails stops the server (fail-stop); a clean stop (SIGINT/SIGTERM) lets the current pass
commit, then exits, leaving running tasks to their supervisors.

With no token in the database the server is open to whoever can connect, so it listens on loopback
only (``--host`` elsewhere is refused) and says so; once a token exists every request needs one.
"""

from __future__ import annotations

import logging
import secrets
import signal
import socket
import threading
from pathlib import Path
from typing import Any, Optional

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


class Server:
    """One ``makeway serve`` process: build it, ``run()`` blocks until stopped."""

    def __init__(self, cfg: ClusterConfig, db: str, host: str = "127.0.0.1", port: int = 8642, *,
                 local_agent: bool = False, agent_dir: Optional[Path] = None, recovery_grace: float = 10.0,
                 min_pass_interval: float = 0.02, lease: float = 30.0, suspect_after: float = 10.0,
                 log_level: str = "warning"):
        import uvicorn

        from makeway.live.api import create_app
        from makeway.live.loop import SchedulerLoop
        from makeway.live.store import Store

        from makeway.live.auth import Authenticator, Principal, is_loopback

        self.cfg = cfg
        self.store = Store(db)
        self.open = not self.store.has_tokens()
        if self.open and not is_loopback(host):
            self.store.close()
            raise MakewayError(f"--host: {host} would serve anyone who can connect, and no token is configured; "
                               "create one with 'makeway token create --role admin --db URL', "
                               "or serve on 127.0.0.1")
        self.auth = Authenticator(self.store)
        self.agent_token = secrets.token_urlsafe(32)  # the local agents' credential: in memory only
        self.auth.add_secret(self.agent_token, Principal("local-agent", "agent"))
        self.loop = SchedulerLoop(cfg, self.store, recovery_grace=recovery_grace, min_interval=min_pass_interval,
                                  lease=lease, suspect_after=suspect_after)
        self.loop.recover()
        self.host, self.port = host, port or free_port(host)
        self.agent_dir = Path(agent_dir) if agent_dir else None
        self.local_agent = local_agent
        log_dirs = {}
        if local_agent:
            if self.agent_dir is None:
                raise MakewayError("--agent-dir: needed with --local-agent")
            log_dirs = {n.name: self.agent_dir / n.name for n in build_nodes(cfg)}
        self.app = create_app(self.loop, cfg, self.store, log_dirs=log_dirs, auth=self.auth)
        server = self

        class _Uvicorn(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                server._closing()
                super().handle_exit(sig, frame)

        self.uvicorn = _Uvicorn(uvicorn.Config(self.app.state.asgi, host=self.host, port=self.port, log_level=log_level,
                                               access_log=False, timeout_graceful_shutdown=2,
                                               proxy_headers=False))  # no proxy in front by default
        self.loop.on_fatal = self._fatal
        self.agents: list[Any] = []

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

    def _fatal(self, exc: BaseException) -> None:
        log.error("scheduler failed, stopping the server: %s", exc)
        self.app.state.feed.close()
        self.uvicorn.should_exit = True

    def _closing(self) -> None:
        """A stop was asked for: let the agents and the long-polls go, so the listener can close now."""
        for a in self.agents:
            a.stop()
        self.loop.release_waiters()
        self.app.state.feed.close()  # end the browsers' event streams too

    def _start_agents(self) -> None:
        from makeway.live.agent import start_local_agents

        assert self.agent_dir is not None
        self.agents = start_local_agents(self.url, build_nodes(self.cfg), self.agent_dir, token=self.agent_token)

    def run(self, on_listen: Any = None) -> None:
        started = threading.Event()

        def after_start() -> None:
            while not self.uvicorn.started and not self.uvicorn.should_exit:
                threading.Event().wait(0.02)
            if self.uvicorn.started:
                self.loop.start()
                if self.local_agent:
                    self._start_agents()
                if on_listen is not None:
                    on_listen(self.url)
            started.set()

        threading.Thread(target=after_start, name="makeway-start", daemon=True).start()

        def stopped(signum: int, frame: Any) -> None:
            raise _Stopped(signum)

        old = {s: signal.signal(s, stopped) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.uvicorn.run()
        except _Stopped:
            pass  # uvicorn re-raises the signal it handled once it has shut down: a clean stop
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            for a in self.agents:
                a.stop()
            self.loop.stop()
            self.app.state.committer.close()
            self.store.close()
        if self.loop.failed is not None:
            raise MakewayError(f"the scheduler stopped: {self.loop.failed}")


__all__ = ["Server", "default_db", "free_port"]
