"""One process per task attempt: it owns the task's process group and records how the task ended.

Run as ``python -m makeway.live.supervisor DIR``. The files in ``DIR`` are the whole interface with the
agent (docs/service-protocol.md, "Supervisor"), so a task outlives its agent: an agent that restarts
finds the attempt's ``pid.json`` and, later, its ``exit.json``, and never needs to be the task's parent.

Why the choices below:

- The task runs in its own session (hence its own process group): a stop signal reaches the task and
  every child it forked, and SIGKILL at the deadline leaves nothing behind. The supervisor is also a
  *child subreaper*, so descendants that left the group (``setsid``) are reparented to it when their
  parent dies; it kills and reaps those too, and zombies never pile up under a PID 1 that does not reap.
- The main child is observed with ``waitid(WNOWAIT)`` and reaped only after its group was killed: while
  it is a zombie its pid, which is the group id, cannot be reused, so ``killpg`` never hits a stranger.
- SIGTERM/SIGINT to the supervisor *forward-kill* the task (SIGTERM to the group, SIGKILL after
  ``TERM_GRACE`` s, exit recorded) instead of being ignored: a supervisor that is gone can neither
  enforce a deadline nor record an exit, so letting it die alone would orphan the task and let the
  server start a second copy; ignoring the signal would hide the task from an operator's ``kill``
  and from a service manager that stops everything. The recorded exit tells the server the truth.
- An optional lease file (``spec["lease"]``, refreshed by the agent after every acknowledged
  heartbeat) bounds how long a task runs without an agent talking to the server: past it the task is
  killed, so the server can requeue it after its own lease without ever running two copies.

Only the standard library is imported: a supervisor starts in well under a second.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from makeway.blas import as_the_user_set_it
from makeway.live.crash import crash_point

TICK = 0.05
"""Seconds between checks of the child, ``stop.json`` and the deadline (no busy spin)."""
TERM_GRACE = 5.0
"""Seconds a task gets after the supervisor itself was asked to terminate."""
LEASE_CHECK = 0.5
"""Seconds between reads of the lease file."""
_PR_SET_CHILD_SUBREAPER = 36


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` so a reader sees the old file or the whole new one, never a part (tmp + rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> Optional[dict]:
    """The file's JSON object, or None if it is absent or not (yet) a whole JSON object."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def signal_number(value: object) -> int:
    """``"SIGTERM"``, ``"TERM"``, ``15`` or ``"15"`` -> 15; ValueError naming the value otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int(signal.Signals(value))
    if isinstance(value, str):
        name = value.strip().upper()
        if name.isdigit():
            return int(signal.Signals(int(name)))
        if not name.startswith("SIG"):
            name = "SIG" + name
        try:
            return int(signal.Signals[name])
        except KeyError:
            pass
    raise ValueError(f"{value!r} is not a signal name")


def task_env(spec: dict, directory: Path) -> dict[str, str]:
    """The task's environment: the supervisor's own (PATH, HOME...) but what makeway set for itself
    (``makeway.blas``), the job's ``env``, the MAKEWAY_ ids.

    MAKEWAY_JOB_ID, MAKEWAY_TASK_ID and MAKEWAY_ATTEMPT come from ``env`` when the agent put them
    there, else from the attempt id ``<job>/<group>/<index>#<n>``; MAKEWAY_PREEMPT_NOTICE is always
    this attempt's notice file.
    """
    env = dict(os.environ)
    as_the_user_set_it(env)
    env.update({str(k): str(v) for k, v in (spec.get("env") or {}).items()})
    attempt = str(spec.get("attempt", ""))
    task, _, number = attempt.rpartition("#")
    if not task:
        task, number = attempt, ""
    parts = task.rsplit("/", 2)
    env.setdefault("MAKEWAY_TASK_ID", task)
    env.setdefault("MAKEWAY_JOB_ID", parts[0] if len(parts) == 3 else task)
    env.setdefault("MAKEWAY_ATTEMPT", number)
    env["MAKEWAY_PREEMPT_NOTICE"] = str(directory / "notice.json")
    return env


def _become_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the process group alone bounds the task
        pass


def _children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(name))
    return out


def _kill(pid: int, sig: int, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Supervisor:
    """The loop for one attempt directory; ``run()`` returns the supervisor's exit status."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.child: Optional[subprocess.Popen] = None
        self.pgid = 0
        self.stop_key: Optional[tuple] = None
        self.sent: set[int] = set()
        self.deadline: Optional[float] = None
        self.lease: Optional[Path] = None
        self.next_lease_check = 0.0
        self.lease_expired = False
        self.terminate = False

    # -- setup ---------------------------------------------------------------------------------
    def spawn(self, spec: dict) -> Optional[dict]:
        """Start the task; on failure, the exit record to write (shell-style 127/126)."""
        command = spec.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            return self._failed(127, "spec.json: command must be a non-empty list of strings")
        cwd = spec.get("cwd") or None
        out = open(self.dir / "stdout.log", "ab")
        err = open(self.dir / "stderr.log", "ab")
        try:
            self.child = subprocess.Popen(command, cwd=cwd, env=task_env(spec, self.dir), stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=err, start_new_session=True, close_fds=True)
        except (FileNotFoundError, NotADirectoryError) as exc:
            return self._failed(127, f"cannot start {command[0]!r}: {exc}")
        except (PermissionError, OSError) as exc:
            return self._failed(126, f"cannot start {command[0]!r}: {exc}")
        finally:
            out.close()
            err.close()
        self.pgid = self.child.pid
        write_json_atomic(self.dir / "pid.json", {"supervisor": os.getpid(), "child": self.child.pid,
                                                  "pgid": self.pgid, "started": time.time()})
        return None

    def _failed(self, code: int, message: str) -> dict:
        with open(self.dir / "stderr.log", "a") as f:
            f.write(f"makeway supervisor: {message}\n")
        return {"exit_code": code, "signal": None, "ended": time.time(), "error": message}

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        spec = read_json(self.dir / "spec.json")
        if spec is None:
            print(f"makeway supervisor: {self.dir / 'spec.json'}: missing or not a JSON object", file=sys.stderr)
            return 2
        if os.getsid(0) != os.getpid():
            try:
                os.setsid()
            except OSError:
                pass
        _become_subreaper()
        signal.signal(signal.SIGTERM, self._on_terminate)
        signal.signal(signal.SIGINT, self._on_terminate)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.lease = Path(spec["lease"]) if spec.get("lease") else None
        failed = self.spawn(spec)
        if failed is not None:
            write_json_atomic(self.dir / "exit.json", failed)
            return 0
        while True:
            record = self._main_exit()
            if record is not None:
                break
            now = time.time()
            self._check_stop(now)
            if self.terminate:
                self.terminate = False
                self._stop(signal.SIGTERM, now + TERM_GRACE, {"kind": "supervisor-terminated", "reason": None,
                                                               "preemptor": None, "deadline": now + TERM_GRACE})
            self._check_lease(now)
            if self.deadline is not None and now >= self.deadline:
                self._kill_all()
            self._reap_others()
            time.sleep(TICK)
        self._kill_all()
        assert self.child is not None
        self.child.wait()
        self._drain()
        if self.lease_expired and record["exit_code"] != 0:
            # not the task's own end: the agent reports it lost, so the task runs again, not failing its job
            record["error"] = "lease expired: killed by its supervisor"
        crash_point("exit")
        write_json_atomic(self.dir / "exit.json", record)
        return 0

    def _on_terminate(self, signum, frame) -> None:
        self.terminate = True

    def _main_exit(self) -> Optional[dict]:
        """The exit record once the main child has ended (left a zombie, so its pid stays reserved)."""
        assert self.child is not None
        try:
            info = os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        if info is None:
            return None
        if info.si_code == os.CLD_EXITED:
            return {"exit_code": info.si_status, "signal": None, "ended": time.time()}
        return {"exit_code": None, "signal": info.si_status, "ended": time.time()}

    def _check_stop(self, now: float) -> None:
        """Act on a new ``stop.json`` (the agent replaces it atomically, so a new inode = a new request)."""
        path = self.dir / "stop.json"
        try:
            st = path.stat()
        except OSError:
            return
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key == self.stop_key:
            return
        stop = read_json(path)
        if stop is None:
            return
        self.stop_key = key
        try:
            sig = signal_number(stop.get("signal") or "SIGTERM")
        except ValueError:
            sig = int(signal.SIGTERM)
        deadline = stop.get("deadline")
        deadline = float(deadline) if isinstance(deadline, (int, float)) else now
        self._stop(sig, deadline, stop.get("notice"))

    def _stop(self, sig: int, deadline: float, notice: Optional[dict]) -> None:
        """Notice first, then the signal to the group (once per signal), SIGKILL due at the earliest deadline."""
        if notice is not None and not self.sent:
            write_json_atomic(self.dir / "notice.json", notice)
        if sig not in self.sent:
            self.sent.add(sig)
            _kill(self.pgid, sig, group=True)
        if self.deadline is None or deadline < self.deadline:
            self.deadline = deadline

    def _check_lease(self, now: float) -> None:
        if self.lease is None or now < self.next_lease_check:
            return
        self.next_lease_check = now + LEASE_CHECK
        lease = read_json(self.lease)
        expires = lease.get("expires") if lease else None
        if isinstance(expires, (int, float)) and now > expires:
            self.lease_expired = True
            self._stop(signal.SIGKILL, now, {"kind": "lease-expired", "reason": None, "preemptor": None,
                                             "deadline": now})

    def _kill_all(self) -> None:
        """SIGKILL the task's group and every descendant reparented to this supervisor."""
        _kill(self.pgid, signal.SIGKILL, group=True)
        me = os.getpid()
        for pid in _children_of(me):
            if self.child is None or pid != self.child.pid:
                _kill(pid, signal.SIGKILL, group=False)

    def _reap_others(self) -> None:
        """Reap reparented descendants; the main child is left for ``_main_exit``."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or (self.child is not None and info.si_pid == self.child.pid):
                return
            try:
                os.waitpid(info.si_pid, 0)
            except ChildProcessError:
                return

    def _drain(self, limit: float = 2.0) -> None:
        """After the main child: kill and reap until no descendant is left (each death may orphan more)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            self._kill_all()
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                time.sleep(0.01)


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m makeway.live.supervisor DIR", file=sys.stderr)
        return 2
    directory = Path(args[0]).resolve()
    if not directory.is_dir():
        print(f"makeway supervisor: {directory}: not a directory", file=sys.stderr)
        return 2
    return Supervisor(directory).run()


if __name__ == "__main__":
    sys.exit(main())
