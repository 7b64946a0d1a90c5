"""``makeway agent``: one per machine; runs the attempts the server wants on this node, stops the rest.

The agent keeps no state of its own worth protecting: each attempt's directory (written by the agent
and its supervisor, docs/service-protocol.md "Supervisor") says whether it started and how it ended,
and ``reports.jsonl`` holds the sequence number given to each report. So an agent killed at any moment
restarts, re-attaches to the supervisors still running (never starting an attempt twice) and resends
every report the server has not acknowledged, including exits that happened while it was down.

Three activities share one lock over the attempt directories:

- the main thread registers, then long-polls ``/v1/agent/desired`` and applies :func:`reconcile`;
- the heartbeat thread scans the attempt directories every ``WATCH`` s, turns new ``pid.json`` /
  ``exit.json`` files into sequence-numbered reports, and sends them (at once when there is something
  new, else every ``heartbeat_interval``) until acknowledged;
- each successful heartbeat refreshes the lease file the supervisors read, so tasks of an agent that
  lost the server for longer than the lease are killed by their supervisors before the server
  requeues them.

:func:`reconcile` is pure (desired set + local attempts -> actions) and tested without processes.

With several servers (a PostgreSQL leader and its standbys) the agent talks to one at a time and
moves to the next on a connection error, a 503 (a standby) or an answer from an epoch older than the
newest it has seen (a stale leader), registering there; the tasks run on meanwhile.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from makeway.errors import ConfigError
from makeway.live.crash import crash_point
from makeway.live.supervisor import read_json, write_json_atomic

log = logging.getLogger("makeway.agent")

WATCH = 0.1
"""Seconds between scans of the attempt directories for new starts and exits."""
MAX_REPORTS = 500
"""Reports per heartbeat; the rest go in the next one."""
SUPERVISOR_MODULE = "makeway.live.supervisor"


# -- the pure part -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Local:
    """What the attempt directory says about one attempt.

    ``state``: ``starting`` (spec written, supervisor alive, no pid yet), ``running``, ``exited``.
    ``stop_signal``: the signal of the stop request already written (``stop.json``), if any.
    """

    attempt: str
    state: str
    stop_signal: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    started: bool = False
    lost: bool = False          # its supervisor died without recording how the task ended


@dataclass(frozen=True)
class Action:
    """``start`` (spawn a supervisor), ``stop`` (notice + signal + deadline), ``kill`` (SIGKILL now:
    not in the desired set), ``skip`` (a stop for an attempt never started here: record it as exited
    without running anything, so the server learns it will never run)."""

    kind: str
    attempt: str
    entry: Optional[dict] = field(default=None, compare=False)


def reconcile(desired: Iterable[Mapping[str, Any]], local: Mapping[str, Local]) -> list[Action]:
    """The actions that bring this node's attempts to the desired set.

    An attempt that exists locally is never started again (whatever its state), a stop is written once,
    and a live attempt the server no longer lists is killed. Order: desired entries as given, then the
    killed attempts sorted by id, so equal inputs give equal action lists.
    """
    actions: list[Action] = []
    seen: set[str] = set()
    for entry in desired:
        attempt = str(entry.get("attempt", ""))
        if not attempt or attempt in seen:
            continue
        seen.add(attempt)
        mine = local.get(attempt)
        kind = entry.get("action", "run")
        if kind == "run":
            if mine is None:
                actions.append(Action("start", attempt, dict(entry)))
        elif kind == "stop":
            if mine is None:
                actions.append(Action("skip", attempt, dict(entry)))
            elif mine.state != "exited" and mine.stop_signal is None:
                actions.append(Action("stop", attempt, dict(entry)))
    for attempt in sorted(set(local) - seen):
        mine = local[attempt]
        if mine.state != "exited" and mine.stop_signal != "SIGKILL":
            actions.append(Action("kill", attempt))
    return actions


def dir_name(attempt: str) -> str:
    """The attempt's directory name under ``attempts/`` ('/' and '#' become '_')."""
    return attempt.replace("/", "_").replace("#", "_")


def parse_pairs(text: Optional[str], option: str) -> dict[str, str]:
    """``"a=1,b=2"`` -> ``{"a": "1", "b": "2"}``; a ConfigError naming ``option`` for anything else."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option}: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def parse_capacity(text: Optional[str]) -> dict[str, int | float]:
    """``--capacity cpu=4,memory=8Gi`` -> quantities (memory in bytes, as in the cluster YAML)."""
    from makeway.core.resources import QuantityError, parse_quantity

    out = {}
    for key, value in parse_pairs(text, "--capacity").items():
        try:
            out[key] = parse_quantity(value)
        except QuantityError as exc:
            raise ConfigError(f"--capacity: {key}: {exc}") from None
    return out


def machine_capacity() -> dict[str, int]:
    """This machine's CPUs and total memory (bytes)."""
    cap = {"cpu": os.cpu_count() or 1}
    try:
        cap["memory"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return cap


# -- processes, seen through /proc -----------------------------------------------------------------

def _proc_state(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()[0].decode()


def supervisor_alive(pid: Optional[int], directory: Path) -> bool:
    """Is ``pid`` a live (not zombie) supervisor of ``directory``? (Guards against a reused pid.)"""
    if not isinstance(pid, int) or pid <= 0:
        return False
    state = _proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return SUPERVISOR_MODULE.encode() in args and str(directory).encode() in args


def find_supervisor(directory: Path) -> Optional[int]:
    """The pid of a live supervisor of ``directory`` (for one that has not written pid.json yet)."""
    for name in os.listdir("/proc"):
        if name.isdigit() and supervisor_alive(int(name), directory):
            return int(name)
    return None


def kill_lost_group(pgid: Optional[int], directory: Path) -> None:
    """SIGKILL what is left of a task whose supervisor died, if the group still holds one of its processes."""
    if not isinstance(pgid, int) or pgid <= 0:
        return
    marker = f"MAKEWAY_PREEMPT_NOTICE={directory / 'notice.json'}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if int(stat[stat.rfind(b")") + 2:].split()[2]) != pgid:
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if marker in env:
            try:
                os.killpg(pgid, 9)
            except OSError:
                pass
            return


# -- the agent ---------------------------------------------------------------------------------

class Unregistered(Exception):
    """The server does not know this node or this epoch (404/409): register again."""


class Unavailable(Exception):
    """This server does not lead (503: a standby, or its scheduler stopped), or it answers for an
    epoch older than one already seen (a stale leader): try the next server and register there."""


class Agent:
    """Runs one node's attempts for a makeway server; ``run()`` blocks until ``stop()``."""

    def __init__(self, server_url: str | Sequence[str], node: str, capacity: Mapping[str, Any],
                 labels: Optional[Mapping[str, str]] = None, workdir: str | Path = ".", *,
                 heartbeat_interval: Optional[float] = None, poll_wait: float = 20.0,
                 http_timeout: float = 10.0, token: Optional[str] = None) -> None:
        import httpx

        from makeway.live.client import parse_servers

        self.servers = (parse_servers(server_url) if isinstance(server_url, str)
                        else parse_servers(",".join(server_url)))
        self._current = 0
        self.node = node
        self.capacity = dict(capacity)
        self.labels = dict(labels or {})
        self.workdir = Path(workdir).resolve()
        self.attempts_dir = self.workdir / "attempts"
        self.attempts_dir.mkdir(parents=True, exist_ok=True)
        self.fixed_interval = heartbeat_interval
        self.heartbeat_interval = heartbeat_interval or 5.0
        self.poll_wait = poll_wait
        self.lease: Optional[float] = None
        self.lease_file = self.workdir / "lease.json"
        self.epoch: Optional[int] = None
        self.newest_epoch = -1
        self.version: Any = -1
        token = token or os.environ.get("MAKEWAY_TOKEN")  # an agent or admin token, when the server has tokens
        self.http = httpx.Client(timeout=httpx.Timeout(http_timeout, read=poll_wait + http_timeout),
                                 headers={"Authorization": f"Bearer {token}"} if token else None)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._registered = threading.Event()
        self._tried = 0  # servers that failed in a row
        self._spawned: dict[Path, subprocess.Popen] = {}
        self._final: dict[Path, Local] = {}
        self._dirs: dict[str, Path] = {}
        self._reports_path = self.workdir / "reports.jsonl"
        self._reported: set[tuple[str, str]] = set()
        self._reports: list[dict] = []
        self._load_reports()
        self._acked = int((read_json(self.workdir / "acked.json") or {}).get("acked", 0))

    @property
    def server(self) -> str:
        """The server this agent talks to now (one of ``servers``)."""
        return self.servers[self._current]

    def _next_server(self, why: BaseException) -> bool:
        """Move to the next server (registering there); True when every server was tried since the
        last success, so the caller should back off."""
        if len(self.servers) > 1:
            old = self.server
            self._current = (self._current + 1) % len(self.servers)
            self._registered.clear()
            log.info("server %s: %s; trying %s", old, why, self.server)
        self._tried += 1
        if self._tried >= len(self.servers):
            self._tried = 0
            return True
        return False

    # -- reports, kept on disk ------------------------------------------------------------------
    def _load_reports(self) -> None:
        """Read the reports given so far; a last line cut by a crash is dropped from the file too.

        A report is sent only after its line is on disk, so a cut line was never sent: its event is
        derived again from the attempt directory, with the same seq, and the next append starts clean.
        """
        try:
            data = self._reports_path.read_bytes()
        except FileNotFoundError:
            return
        whole = data[:data.rfind(b"\n") + 1]
        if len(whole) != len(data):
            with open(self._reports_path, "r+b") as f:
                f.truncate(len(whole))
        for line in whole.decode().splitlines():
            r = json.loads(line)
            self._reports.append(r)
            self._reported.add((r["attempt"], r["event"]))

    @property
    def seq(self) -> int:
        return self._reports[-1]["seq"] if self._reports else 0

    def _append_report(self, attempt: str, event: str, exit_code=None, sig=None, lost: bool = False) -> None:
        r = {"seq": self.seq + 1, "attempt": attempt, "event": event, "exit_code": exit_code, "signal": sig}
        if lost:
            r["lost"] = True
        with open(self._reports_path, "a") as f:
            f.write(json.dumps(r) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._reports.append(r)
        self._reported.add((attempt, event))

    def unacked(self) -> list[dict]:
        with self._lock:
            return [r for r in self._reports if r["seq"] > self._acked][:MAX_REPORTS]

    # -- the attempt directories ----------------------------------------------------------------
    def scan(self) -> dict[str, Local]:
        """Every attempt under ``attempts/``, from its files; a lost or never-started one becomes exited."""
        with self._lock:
            local: dict[str, Local] = {}
            for d in sorted(self.attempts_dir.iterdir()):
                found = self._final.get(d) or self._read_attempt(d)
                if found is None:
                    continue
                local[found.attempt] = found
                self._dirs[found.attempt] = d
                if found.state == "exited":
                    self._final[d] = found
            for d, proc in list(self._spawned.items()):
                if proc.poll() is not None:
                    del self._spawned[d]
            return local

    def _read_attempt(self, d: Path) -> Optional[Local]:
        spec = read_json(d / "spec.json")
        if spec is None or not spec.get("attempt"):
            return None
        attempt = str(spec["attempt"])
        stop = read_json(d / "stop.json")
        stop_signal = str(stop.get("signal") or "SIGTERM") if stop else None
        for _ in range(2):  # the second look sees files written while the first decided "dead"
            done = read_json(d / "exit.json")
            pid = read_json(d / "pid.json")
            if done is not None:
                return Local(attempt, "exited", stop_signal, done.get("exit_code"), done.get("signal"),
                             started=pid is not None, lost=bool(done.get("error")))
            if pid is not None and supervisor_alive(pid.get("supervisor"), d):
                return Local(attempt, "running", stop_signal, started=True)
            proc = self._spawned.get(d)
            if pid is None and ((proc is not None and proc.poll() is None) or find_supervisor(d)):
                return Local(attempt, "starting", stop_signal)
        if pid is not None:
            kill_lost_group(pid.get("pgid"), d)
            record = {"exit_code": None, "signal": 9, "ended": time.time(), "error": "supervisor lost"}
        else:
            record = {"exit_code": None, "signal": None, "ended": time.time(), "error": "supervisor never started the task"}
        write_json_atomic(d / "exit.json", record)
        log.warning("attempt %s: %s", attempt, record["error"])
        return Local(attempt, "exited", stop_signal, None, record["signal"], started=pid is not None, lost=True)

    def collect(self) -> bool:
        """Scan, and append a report for each new start and exit; True if there is one."""
        with self._lock:
            local = self.scan()
            before = self.seq
            for attempt in sorted(local):
                a = local[attempt]
                if a.started and (attempt, "started") not in self._reported:
                    self._append_report(attempt, "started")
                if a.state == "exited" and (attempt, "exited") not in self._reported:
                    self._append_report(attempt, "exited", a.exit_code, a.signal, a.lost)
            return self.seq != before

    # -- actions ---------------------------------------------------------------------------------
    def apply(self, actions: Iterable[Action]) -> None:
        with self._lock:
            for a in actions:
                getattr(self, f"_do_{a.kind}")(a)

    def _new_dir(self, attempt: str) -> Path:
        d = self.attempts_dir / dir_name(attempt)
        n = 1
        while (d / "spec.json").exists():  # two ids that map to one name keep separate directories
            n += 1
            d = self.attempts_dir / f"{dir_name(attempt)}~{n}"
        d.mkdir(parents=True, exist_ok=True)
        self._dirs[attempt] = d
        return d

    def _spec(self, entry: dict) -> dict:
        env = {str(k): str(v) for k, v in (entry.get("env") or {}).items()}
        for key, field_ in (("MAKEWAY_JOB_ID", "job"), ("MAKEWAY_TASK_ID", "task"), ("MAKEWAY_ATTEMPT", "attempt_no")):
            if entry.get(field_) is not None:
                env[key] = str(entry[field_])
        return {"attempt": entry["attempt"], "command": entry.get("command"), "env": env, "cwd": entry.get("cwd"),
                "lease": str(self.lease_file) if self.lease else None}

    def _do_start(self, a: Action) -> None:
        d = self._new_dir(a.attempt)
        write_json_atomic(d / "spec.json", self._spec(a.entry or {}))
        with open(d / "supervisor.log", "ab") as err:
            self._spawned[d] = subprocess.Popen([sys.executable, "-m", SUPERVISOR_MODULE, str(d)],
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                                start_new_session=True, close_fds=True)
        crash_point("spawn")
        log.info("attempt %s: started", a.attempt)

    def _do_stop(self, a: Action) -> None:
        entry = a.entry or {}
        deadline = entry.get("deadline")
        write_json_atomic(self._dirs[a.attempt] / "stop.json", {
            "signal": entry.get("signal") or "SIGTERM",
            "deadline": deadline if isinstance(deadline, (int, float)) else time.time(),
            "notice": entry.get("notice")})
        self._final.pop(self._dirs[a.attempt], None)
        log.info("attempt %s: stop (%s)", a.attempt, entry.get("signal") or "SIGTERM")

    def _do_kill(self, a: Action) -> None:
        write_json_atomic(self._dirs[a.attempt] / "stop.json", {"signal": "SIGKILL", "deadline": time.time(), "notice": None})
        log.info("attempt %s: killed (not in the desired set)", a.attempt)

    def _do_skip(self, a: Action) -> None:
        d = self._new_dir(a.attempt)
        write_json_atomic(d / "spec.json", self._spec(a.entry or {}))
        write_json_atomic(d / "exit.json", {"exit_code": None, "signal": None, "ended": time.time(),
                                            "error": "stopped before it started"})

    def reconcile_with(self, desired: list[dict]) -> list[Action]:
        with self._lock:
            actions = reconcile(desired, self.scan())
            self.apply(actions)
        if actions:
            self._wake.set()
        return actions

    # -- the protocol ----------------------------------------------------------------------------
    def _post(self, path: str, body: dict) -> dict:
        r = self.http.post(self.server + path, json=body)
        if r.status_code in (404, 409):
            raise Unregistered(f"{path}: {r.status_code} {r.text[:200]}")
        if r.status_code == 503:
            raise Unavailable(f"{path}: 503 {r.text[:200]}")
        r.raise_for_status()
        return r.json()

    def _check_epoch(self, epoch: int, what: str) -> None:
        if epoch < self.newest_epoch:
            raise Unavailable(f"{what}: epoch {epoch} is older than {self.newest_epoch} (a stale leader)")

    def _refresh_lease(self, sent_at: float) -> None:
        if self.lease:
            write_json_atomic(self.lease_file, {"expires": sent_at + self.lease})

    def register(self) -> None:
        self.collect()
        with self._lock:
            local = self.scan()
            unacked = {r["attempt"] for r in self._reports if r["seq"] > self._acked}
            attempts = [{"attempt": a.attempt, "state": "exited" if a.state == "exited" else "running",
                         "exit_code": a.exit_code, "signal": a.signal, **({"lost": True} if a.lost else {})}
                        for a in local.values() if a.state != "exited" or a.attempt in unacked]
        sent_at = time.time()
        body = self._post("/v1/agent/register", {"node": self.node, "capacity": self.capacity, "labels": self.labels,
                                                 "attempts": attempts})
        self._check_epoch(int(body["epoch"]), "register")
        self.epoch = int(body["epoch"])
        self.newest_epoch = max(self.newest_epoch, self.epoch)
        if self.fixed_interval is None and body.get("heartbeat_interval"):
            self.heartbeat_interval = float(body["heartbeat_interval"])
        self.lease = float(body["lease"]) if body.get("lease") else None
        self._refresh_lease(sent_at)
        self.version = -1
        self._registered.set()
        self._wake.set()
        log.info("registered node %s with %s (epoch %s, %d attempts)", self.node, self.server, self.epoch, len(attempts))

    def heartbeat(self) -> None:
        reports = self.unacked()
        sent_at = time.time()
        body = self._post("/v1/agent/heartbeat", {"node": self.node, "epoch": self.epoch, "reports": reports})
        if body.get("epoch") is not None:
            self._check_epoch(int(body["epoch"]), "heartbeat")
        acked = int(body.get("acked", 0))
        self._refresh_lease(sent_at)
        with self._lock:
            if acked != self._acked:
                self._acked = acked
                write_json_atomic(self.workdir / "acked.json", {"acked": acked})

    def poll_desired(self) -> Optional[list[dict]]:
        """One long-poll; the attempts to reconcile with, or None (nothing new or an answer to ignore)."""
        r = self.http.get(self.server + "/v1/agent/desired",
                          params={"node": self.node, "version": self.version, "wait": self.poll_wait})
        if r.status_code in (404, 409):
            raise Unregistered(f"/v1/agent/desired: {r.status_code}")
        if r.status_code == 503:
            raise Unavailable(f"/v1/agent/desired: 503 {r.text[:200]}")
        r.raise_for_status()
        body = r.json()
        epoch = int(body.get("epoch", -1))
        if epoch > (self.epoch if self.epoch is not None else -1):
            self.newest_epoch = max(self.newest_epoch, epoch)
            raise Unregistered(f"server epoch {epoch} is newer than {self.epoch}")
        if epoch < self.newest_epoch:
            log.info("ignored a desired set from epoch %s (newest %s)", epoch, self.newest_epoch)
            raise Unavailable(f"/v1/agent/desired: epoch {epoch} is older than {self.newest_epoch} (a stale leader)")
        if epoch != self.epoch:
            log.info("ignored a desired set from epoch %s (registered under %s)", epoch, self.epoch)
            raise Unregistered(f"server epoch {epoch} is not {self.epoch}")
        self.version = body.get("version", -1)
        return list(body.get("attempts") or [])

    # -- the loops ---------------------------------------------------------------------------------
    def _heartbeats(self) -> None:
        next_beat = 0.0
        backoff = 0.2
        while not self._stopping.is_set():
            try:
                new = self.collect()
            except OSError as exc:
                log.error("scanning %s: %s", self.attempts_dir, exc)
                new = False
            now = time.monotonic()
            if self._registered.is_set() and (new or self._wake.is_set() or now >= next_beat):
                self._wake.clear()
                try:
                    self.heartbeat()
                    next_beat = now + self.heartbeat_interval
                    backoff = 0.2
                except Unregistered as exc:
                    log.info("heartbeat: %s; registering again", exc)
                    self._registered.clear()
                except Exception as exc:  # the server is away: keep reports, try again
                    log.warning("heartbeat: %s", exc)
                    next_beat = now + backoff
                    backoff = min(backoff * 2, self.heartbeat_interval)
            self._stopping.wait(WATCH)

    def run(self) -> None:
        """Register, then long-poll and reconcile until ``stop()`` (or KeyboardInterrupt)."""
        import httpx

        beats = threading.Thread(target=self._heartbeats, name="makeway-agent-heartbeat", daemon=True)
        beats.start()
        backoff = 0.2
        try:
            while not self._stopping.is_set():
                try:
                    if not self._registered.is_set():
                        self.register()
                    desired = self.poll_desired()
                    if desired is not None:
                        self.reconcile_with(desired)
                    backoff = 0.2
                    self._tried = 0
                except Unregistered as exc:
                    log.info("%s; registering again", exc)
                    self._registered.clear()
                except (Unavailable, httpx.TransportError) as exc:
                    if self._stopping.is_set():
                        break
                    if self._next_server(exc):
                        if len(self.servers) == 1:
                            log.warning("server %s: %s", self.server, exc)
                        self._stopping.wait(backoff)
                        backoff = min(backoff * 2, 5.0 if len(self.servers) == 1 else 2.0)
                except Exception as exc:
                    if self._stopping.is_set():
                        break
                    log.warning("server %s: %s", self.server, exc)
                    self._stopping.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
        except KeyboardInterrupt:
            pass
        finally:
            self._stopping.set()
            beats.join(timeout=5)
            self.http.close()

    def stop(self) -> None:
        """End ``run()``; the tasks keep running under their supervisors (an agent restart re-attaches)."""
        self._stopping.set()


def start_local_agents(server_url: str, nodes: Any, workdir: Path, **kwargs: Any) -> list[Agent]:
    """One agent thread per config node, for ``makeway serve --local-agent``: each node's attempts live
    under ``workdir/<node>`` so a restarted server's agents re-attach the tasks its last run left."""
    agents = []
    for n in nodes:
        a = Agent(server_url, n.name, dict(n.capacity), dict(n.labels), Path(workdir) / n.name, **kwargs)
        threading.Thread(target=a.run, name=f"makeway-local-agent-{n.name}", daemon=True).start()
        agents.append(a)
    return agents
