"""Real processes on 127.0.0.1 for the live tests: a `makeway serve --local-agent` subprocess, the CLI,
and an oracle read from the task's own marker lines (start/checkpoint/end, written by the demo task).

Every wait is bounded; teardown kills whatever the run left (servers, supervisors, tasks) by the
temp path on their command lines, so a failing test leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import httpx

from makeway.live.serve import free_port

REPO = Path(__file__).resolve().parents[2]
LIVE = REPO / "examples" / "live"


def wait_for(cond: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = cond()
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            last = None
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class ServerExited(AssertionError):
    """The serve process ended while a test waited on it."""

    def __init__(self, returncode: int, log: str):
        super().__init__(f"serve exited with {returncode}: {log}")
        self.returncode = returncode


class Served:
    """One `makeway serve` subprocess with a local agent."""

    def __init__(self, config: Path, db: str, workdir: Path, recovery_grace: float = 3.0, local_agent: bool = True,
                 extra: list[str] = (), env: dict[str, str] | None = None):
        self.config, self.db, self.workdir = config, db, workdir
        self.recovery_grace = recovery_grace
        self.local_agent = local_agent
        self.extra = list(extra)
        self.env = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = workdir / "serve.log"

    def start(self, timeout: float = 60.0) -> "Served":
        env = {**os.environ, "MAKEWAY_SERVER": self.url, "PYTHONUNBUFFERED": "1", **self.env}
        self.out = self.log.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "makeway", "serve", str(self.config), "--db", self.db, "--port", str(self.port),
             *(["--local-agent", "--agent-dir", str(self.workdir / "agent")] if self.local_agent else []),
             "--recovery-grace", str(self.recovery_grace), *self.extra], stdout=self.out, stderr=subprocess.STDOUT, env=env, cwd=self.workdir)
        wait_for(lambda: not self._dead() and httpx.get(self.url + "/healthz", timeout=2).status_code == 200,
                 timeout, "the server to listen")
        return self

    def _dead(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerExited(self.proc.returncode, self.log.read_text()[-3000:])
        return False

    def ready(self, timeout: float = 30.0) -> None:
        wait_for(lambda: not self._dead() and httpx.get(self.url + "/readyz", timeout=2).status_code == 200,
                 timeout, "readyz")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 20.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([sys.executable, "-m", "makeway", *args, "--server", self.url], capture_output=True,
                           text=True, timeout=60, cwd=self.workdir)
        if check and p.returncode != 0:
            raise AssertionError(f"makeway {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p

    def get(self, path: str) -> Any:
        r = httpx.get(self.url + path, timeout=10)
        r.raise_for_status()
        return r.json()

    def post(self, path: str, body: Any, **kw: Any) -> httpx.Response:
        return httpx.post(self.url + path, json=body, timeout=10, **kw)

    def job(self, jid: str) -> dict:
        return self.get(f"/v1/jobs/{jid}")


def job_file(model: str, name: str, tmp: Path, seconds: float, jid: str, grace: float | None = None,
             extra: list[str] = ()) -> Path:
    """A copy of examples/live/<model>/jobs/<name>.yaml with an id, a short run and a private checkpoint dir."""
    import yaml

    job = yaml.safe_load((LIVE / model / "jobs" / f"{name}.yaml").read_text())
    job["id"] = jid
    job["command"] = [sys.executable, "-m", "makeway.live.demo_task", "--seconds", str(seconds),
                      "--checkpoint", str(tmp / "ck"), *extra]
    job["env"] = {}
    if grace is not None:
        job["grace"] = grace
    path = tmp / f"{jid}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def markers(tmp: Path) -> list[list[str]]:
    path = tmp / "ck" / "markers.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def overlapping_runs(tmp: Path) -> list[str]:
    """Tasks with two attempts alive at once, from the start/end marker lines (the oracle)."""
    alive: dict[str, str] = {}
    bad = []
    for m in markers(tmp):
        kind, task, attempt = m[0], m[1], m[2]
        if kind == "start":
            if task in alive:
                bad.append(f"{task}: attempt {attempt} started while {alive[task]} ran")
            alive[task] = attempt
        elif kind == "end" and alive.get(task) == attempt:
            del alive[task]
    return bad


def kill_leftovers(tag: str) -> None:
    """SIGKILL every process whose command line mentions ``tag`` (a test's temp dir)."""
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if tag in cmd:
            try:
                os.kill(int(d.name), signal.SIGKILL)
            except OSError:
                pass


def group_alive(pgid: int) -> list[int]:
    """Pids still in process group ``pgid``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def dump(s: Served) -> str:
    try:
        return json.dumps(s.get("/v1/jobs"), indent=1)[:4000] + "\n" + s.log.read_text()[-4000:]
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        return f"(no dump: {exc})"
