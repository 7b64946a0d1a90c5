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


_HTTP: httpx.Client | None = None


def http() -> httpx.Client:
    """One client for the whole test process: ``httpx.get`` builds a client, and with it a TLS
    context, on every call (about 45 ms of CPU), and the tests poll servers several times a second.
    No keep-alive, so a request never lands on a connection to a server that was killed."""
    global _HTTP
    if _HTTP is None:
        _HTTP = httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0))
    return _HTTP


class ServerExited(AssertionError):
    """The serve process ended while a test waited on it."""

    def __init__(self, returncode: int, log: str):
        super().__init__(f"serve exited with {returncode}: {log}")
        self.returncode = returncode


class Served:
    """One `makeway serve` subprocess with a local agent."""

    def __init__(self, config: Path, db: str, workdir: Path, recovery_grace: float = 3.0, local_agent: bool = True,
                 extra: list[str] = (), env: dict[str, str] | None = None, launcher: "Launcher | None" = None):
        self.config, self.db, self.workdir = config, db, workdir
        self.launcher = launcher
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
        args = ["serve", str(self.config), "--db", self.db, "--port", str(self.port),
                *(["--local-agent", "--agent-dir", str(self.workdir / "agent")] if self.local_agent else []),
                "--recovery-grace", str(self.recovery_grace), *self.extra]
        if self.launcher is not None:
            self.proc = self.launcher.spawn(args, env, self.workdir, self.log)
        else:
            self.out = self.log.open("a")
            self.proc = subprocess.Popen([sys.executable, "-m", "makeway", *args], stdout=self.out,
                                         stderr=subprocess.STDOUT, env=env, cwd=self.workdir)
        wait_for(lambda: not self._dead() and http().get(self.url + "/healthz", timeout=2).status_code == 200,
                 timeout, "the server to listen")
        return self

    def _dead(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerExited(self.proc.returncode, self.log.read_text()[-3000:])
        return False

    def ready(self, timeout: float = 30.0) -> None:
        wait_for(lambda: not self._dead() and http().get(self.url + "/readyz", timeout=2).status_code == 200,
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
        r = http().get(self.url + path, timeout=10)
        r.raise_for_status()
        return r.json()

    def post(self, path: str, body: Any, **kw: Any) -> httpx.Response:
        return http().post(self.url + path, json=body, timeout=10, **kw)

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


def supervisor_ends(tmp: Path) -> dict[tuple[str, str], float]:
    """(task, attempt) -> when its supervisor recorded the exit (``exit.json``), for every attempt
    directory of every agent under ``tmp``. The supervisor writes it only once the task's group is
    dead, so it ends an attempt whose task died before it could write its own end line."""
    out: dict[tuple[str, str], float] = {}
    for path in tmp.glob("**/attempts/*/exit.json"):
        try:
            spec = json.loads((path.parent / "spec.json").read_text())
            ended = json.loads(path.read_text()).get("ended")
        except (OSError, ValueError):
            continue
        task, _, no = str(spec.get("attempt", "")).rpartition("#")
        if task and isinstance(ended, (int, float)):
            out[(task, no)] = float(ended)
    return out


def overlapping_runs(tmp: Path) -> list[str]:
    """Tasks with two attempts alive at once, from the start/end marker lines (the oracle).

    An attempt with no end line before the next attempt's start still counts as over when its
    supervisor recorded its exit before that start (a stop signal can land before the task has set
    up its handler, or SIGKILL leaves no line)."""
    ends = supervisor_ends(tmp)
    alive: dict[str, str] = {}
    bad = []
    for m in markers(tmp):
        kind, task, attempt = m[0], m[1], m[2]
        if kind == "start":
            prev = alive.get(task)
            if prev is not None and ends.get((task, prev), float("inf")) > float(m[3]):
                bad.append(f"{task}: attempt {attempt} started while {prev} ran")
            alive[task] = attempt
        elif kind == "end" and alive.get(task) == attempt:
            del alive[task]
    return bad


def kill_leftovers(tag: str) -> None:
    """SIGKILL every process whose command line mentions ``tag`` (a test's temp dir), and the whole
    process group of each (a task's children need not mention it: a failed test must not leave them)."""
    me, mine = os.getpid(), os.getpgid(0)
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if tag in cmd:
            try:
                pgid = os.getpgid(int(d.name))
                if pgid != mine:
                    os.killpg(pgid, signal.SIGKILL)
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


def duplicate_starts(tmp: Path) -> list[str]:
    """(task, attempt) pairs whose start marker appears more than once: one attempt started twice."""
    from collections import Counter

    seen = Counter((m[1], m[2]) for m in markers(tmp) if m[0] == "start")
    return [f"{t} attempt {a} started {n} times" for (t, a), n in sorted(seen.items()) if n > 1]


def core_problems(core: Any) -> list[str]:
    """What must never hold in a live core: the state's own invariants broken, a task with two attempts
    assigned or running, a task handed out to run (on any node) while another of its attempts has not
    exited, or an allocation without exactly one attempt holding it."""
    from makeway.live.core import ASSIGNED, EXITED, RUNNING

    problems = list(core.state.check_invariants())
    by_task: dict[str, list[Any]] = {}
    for a in core.attempts.values():
        by_task.setdefault(a.task, []).append(a)
    runs: dict[str, list[str]] = {}
    for node in core.node_live:
        for entry in core.desired(node, 0.0)[1]:
            if entry["action"] == "run":
                runs.setdefault(entry["task"], []).append(entry["attempt"])
    for task, atts in by_task.items():
        active = [a.id for a in atts if a.state in (ASSIGNED, RUNNING)]
        if len(active) > 1:
            problems.append(f"{task}: attempts {active} assigned or running at once")
        handed = runs.get(task, [])
        if len(handed) > 1:
            problems.append(f"{task}: attempts {handed} handed out to run at once")
        if handed:
            others = [a.id for a in atts if a.id != handed[0] and a.state != EXITED]
            if others:
                problems.append(f"{task}: {handed[0]} handed out while {others} have not exited")
        held = [a.id for a in atts if a.held and a.state != EXITED]
        if task in core.state.allocations and len(held) != 1:
            problems.append(f"{task}: allocated, held by attempts {held}")
        if task not in core.state.allocations and held:
            problems.append(f"{task}: not allocated, yet attempts {held} hold it")
    return problems


def replay_checked(cfg: Any, url: str) -> tuple[int, list[str]]:
    """Replay the journal at ``url`` pass by pass into a fresh core, checking the recorded digest and
    ``core_problems`` after every pass; (passes replayed, problems found, each naming its pass)."""
    from makeway.live.core import Event, LiveCore
    from makeway.live.store import Store

    store = Store(url)
    try:
        events, passes = store.events_after(0), store.passes_after(0)
    finally:
        store.close()
    core = LiveCore(cfg)
    problems: list[str] = []
    i = 0
    for p in passes:
        batch = []
        while i < len(events) and events[i].seq <= p.applied_seq:
            e = events[i]
            batch.append(Event(e.seq, e.kind, e.payload, e.at, e.tenant))
            i += 1
        core.run_pass(batch, p.now)
        if core.digest != p.digest:
            problems.append(f"pass {p.pass_no}: replay digest {core.digest[:12]} != recorded {p.digest[:12]}")
            break
        problems.extend(f"pass {p.pass_no}: {x}" for x in core_problems(core))
    return len(passes), problems


_LAUNCHER = r'''
import json, os, sys, time, traceback
import makeway.cli, makeway.live.agent, makeway.live.api, makeway.live.loop, makeway.live.serve, makeway.live.store
import alembic.command, uvicorn
from makeway.live.store import Store  # noqa: F401 - imported so a child starts warm

def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "spawn":
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                fd = os.open(cmd["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                os.dup2(fd, 1); os.dup2(fd, 2); os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.chdir(cmd["cwd"])
                os.environ.clear(); os.environ.update(cmd["env"])
                sys.argv = ["makeway", *cmd["args"]]
                makeway.cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush(); sys.stderr.flush()
                finally:
                    os._exit(code)
        reply({"pid": pid})
    elif cmd["op"] == "poll":
        try:
            got, status = os.waitpid(cmd["pid"], os.WNOHANG)
        except ChildProcessError:
            got, status = 0, None
        reply({"code": os.waitstatus_to_exitcode(status) if got else None})
'''


class Launcher:
    """Starts `makeway serve` processes forked from one process that has imported makeway, FastAPI,
    SQLAlchemy and Alembic already, so a restart costs what serve itself does (migrate, replay,
    listen) rather than seconds of imports. Each child is a real process, running the same
    ``makeway.cli.main`` as the command, killed with real signals; ``tag`` goes on the launcher's
    command line (and so its children's) for ``kill_leftovers``."""

    def __init__(self, tag: str):
        import threading

        self.lock = threading.Lock()
        self.proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, tag], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=REPO)

    def call(self, **cmd: Any) -> dict:
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the launcher died ({self.proc.poll()})")
        return json.loads(line)

    def spawn(self, args: list[str], env: dict[str, str], cwd: Path, log: Path) -> "Forked":
        return Forked(self, self.call(op="spawn", args=args, env=env, cwd=str(cwd), log=str(log))["pid"])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class Forked:
    """A launcher's child with the part of ``subprocess.Popen``'s interface the harness uses."""

    def __init__(self, launcher: Launcher, pid: int):
        self.launcher, self.pid = launcher, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.launcher.call(op="poll", pid=self.pid)["code"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def two_queue_kueue(name: str, nodes: dict[str, float]) -> dict:
    """The live tests' cluster: Kueue, ``prod`` and ``batch`` under one root, each guaranteed 2 cpu and
    reclaiming from the other (``batch`` may borrow up to 4), on the given nodes (name -> cpu)."""
    prio = {"preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}
    return {"name": name, "resources": ["cpu"],
            "nodes": [{"name": n, "capacity": {"cpu": c}} for n, c in nodes.items()],
            "queues": {"root": {}, "prod": {"parent": "root", "guaranteed": {"cpu": 2}, "settings": prio},
                       "batch": {"parent": "root", "guaranteed": {"cpu": 2}, "max": {"cpu": 4}, "settings": prio}},
            "preemption": {"model": "kueue"}}
