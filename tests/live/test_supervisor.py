"""The per-task supervisor with real processes: notice, stop signal to the group, SIGKILL at the deadline.

Each test is bounded by explicit timeouts; the file runs in about 10 s.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from makeway.live.supervisor import signal_number, task_env, write_json_atomic

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

PY = sys.executable


def alive(pid: int) -> bool:
    """Running, not a zombie (a zombie's pid answers kill(pid, 0))."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


def wait_for(cond, timeout: float, what: str):
    end = time.time() + timeout
    while time.time() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


_SPAWNED: list[tuple[subprocess.Popen, Path]] = []


@pytest.fixture(autouse=True)
def no_leftovers():
    """A failing test must not leave its task or supervisor running."""
    yield
    while _SPAWNED:
        sup, d = _SPAWNED.pop()
        pgid = (read(d / "pid.json") or {}).get("pgid")
        sup.kill()
        sup.wait(5)
        if pgid:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass


def supervise(d: Path, command, env=None, attempt="train-1/0/2#3", **extra) -> subprocess.Popen:
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(d / "spec.json", {"attempt": attempt, "command": command, "env": env or {}, "cwd": None, **extra})
    sup = subprocess.Popen([PY, "-m", "makeway.live.supervisor", str(d)], start_new_session=True)
    _SPAWNED.append((sup, d))
    return sup


def stop(d: Path, sig: str, deadline: float, notice=None) -> None:
    write_json_atomic(d / "stop.json", {"signal": sig, "deadline": deadline, "notice": notice})


def started(d: Path) -> dict:
    return wait_for(lambda: read(d / "pid.json"), 5, "pid.json")


def finished(d: Path, timeout: float = 5) -> dict:
    return wait_for(lambda: read(d / "exit.json"), timeout, "exit.json")


CHECKPOINTER = """
import json, os, signal, sys, time
def on_stop(signum, frame):
    notice = json.load(open(os.environ["MAKEWAY_PREEMPT_NOTICE"]))
    keys = ("MAKEWAY_JOB_ID", "MAKEWAY_TASK_ID", "MAKEWAY_ATTEMPT", "MAKEWAY_PREEMPT_NOTICE", "K")
    json.dump({"signal": signum, "notice": notice, "env": {k: os.environ.get(k) for k in keys}},
              open(sys.argv[1], "w"))
    sys.exit(0)
signal.signal(getattr(signal, sys.argv[2]), on_stop)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGUSR1"])
def test_a_task_that_traps_the_stop_signal_checkpoints_within_grace(tmp_path, sig):
    d, ckpt = tmp_path / "a", tmp_path / "ckpt.json"
    sup = supervise(d, [PY, "-c", CHECKPOINTER, str(ckpt), sig], env={"K": "V"})
    wait_for(lambda: Path(str(ckpt) + ".ready").exists(), 5, "the task's handler")
    deadline = time.time() + 5
    notice = {"reason": {"model": "kueue", "rule": "reclaim"}, "preemptor": "big-1", "deadline": deadline,
              "kind": "preempted"}
    stop(d, sig, deadline, notice)
    ended = finished(d)
    assert sup.wait(5) == 0
    assert ended["exit_code"] == 0 and ended["signal"] is None
    assert ended["ended"] < deadline
    got = json.loads(ckpt.read_text())
    assert got["signal"] == signal_number(sig)
    assert got["notice"] == notice
    assert got["env"] == {"MAKEWAY_JOB_ID": "train-1", "MAKEWAY_TASK_ID": "train-1/0/2", "MAKEWAY_ATTEMPT": "3",
                          "MAKEWAY_PREEMPT_NOTICE": str(d / "notice.json"), "K": "V"}


def test_a_task_ignoring_sigterm_dies_with_its_grandchild_at_the_deadline(tmp_path):
    d, gc = tmp_path / "a", tmp_path / "gc.pid"
    script = f'trap "" TERM; sleep 1000 & echo $! > {gc}; while :; do sleep 0.1; done'
    sup = supervise(d, ["sh", "-c", script])
    child = started(d)["child"]
    grandchild = int(wait_for(lambda: gc.exists() and gc.read_text().strip(), 5, "the grandchild's pid"))
    deadline = time.time() + 1.0
    stop(d, "SIGTERM", deadline, {"reason": None, "preemptor": None, "deadline": deadline, "kind": "cancelled"})
    time.sleep(max(0.0, deadline - 0.3 - time.time()))
    assert alive(child) and alive(grandchild), "SIGTERM is ignored: both live until the deadline"
    wait_for(lambda: not alive(child) and not alive(grandchild), deadline + 1.0 - time.time(),
             "both dead within 1 s of the deadline")
    assert time.time() <= deadline + 1.0
    ended = finished(d)
    assert ended == {"exit_code": None, "signal": signal.SIGKILL, "ended": ended["ended"]}
    assert deadline <= ended["ended"] <= deadline + 1.0
    assert sup.wait(5) == 0
    assert (d / "notice.json").exists()


@pytest.mark.parametrize("command, code, sig", [
    (["sh", "-c", "echo out; echo err >&2; exit 3"], 3, None),
    (["sh", "-c", "kill -USR2 $$"], None, signal.SIGUSR2),
    (["/nonexistent/task"], 127, None),
])
def test_exit_code_and_signal_are_recorded(tmp_path, command, code, sig):
    d = tmp_path / "a"
    sup = supervise(d, command)
    ended = finished(d)
    assert (ended["exit_code"], ended["signal"]) == (code, sig)
    assert sup.wait(5) == 0
    if code == 3:
        assert (d / "stdout.log").read_text() == "out\n" and (d / "stderr.log").read_text() == "err\n"
        assert read(d / "pid.json")["pgid"] == read(d / "pid.json")["child"]
    if code == 127:
        assert "/nonexistent/task" in (d / "stderr.log").read_text() and not (d / "pid.json").exists()


def test_what_is_left_of_the_group_is_killed_when_the_task_ends(tmp_path):
    d, gc = tmp_path / "a", tmp_path / "gc.pid"
    sup = supervise(d, ["sh", "-c", f"sleep 1000 & echo $! > {gc}; exit 0"])
    ended = finished(d)
    assert ended["exit_code"] == 0
    grandchild = int(gc.read_text())
    wait_for(lambda: not alive(grandchild), 1, "the leftover grandchild killed")
    assert sup.wait(5) == 0


def test_the_supervisor_outlives_its_parent(tmp_path):
    d, release = tmp_path / "a", tmp_path / "release"
    d.mkdir()
    write_json_atomic(d / "spec.json", {"attempt": "j/0/0#1", "command": ["sh", "-c", f"while [ ! -e {release} ]; do "
                                        "sleep 0.05; done; exit 5"], "env": {}, "cwd": None})
    spawner = ("import subprocess, sys, time\n"
               f"p = subprocess.Popen([{PY!r}, '-m', 'makeway.live.supervisor', {str(d)!r}], start_new_session=True)\n"
               "print(p.pid, flush=True)\ntime.sleep(1000)\n")
    parent = subprocess.Popen([PY, "-c", spawner], stdout=subprocess.PIPE, text=True)
    sup_pid = int(parent.stdout.readline())
    started(d)
    parent.kill()
    parent.wait(5)
    time.sleep(0.2)
    assert alive(sup_pid), "the supervisor died with its parent"
    release.touch()
    ended = finished(d)
    assert ended["exit_code"] == 5
    wait_for(lambda: not alive(sup_pid), 5, "the supervisor to exit")


def test_sigterm_to_the_supervisor_stops_the_task_and_records_the_exit(tmp_path):
    d = tmp_path / "a"
    sup = supervise(d, ["sh", "-c", "while :; do sleep 0.05; done"])
    child = started(d)["child"]
    sup.send_signal(signal.SIGTERM)
    ended = finished(d)
    assert ended["signal"] == signal.SIGTERM
    assert sup.wait(5) == 0 and not alive(child)
    assert read(d / "notice.json")["kind"] == "supervisor-terminated"


def test_an_expired_lease_kills_the_task(tmp_path):
    d, lease = tmp_path / "a", tmp_path / "lease.json"
    write_json_atomic(lease, {"expires": time.time() + 0.5})
    sup = supervise(d, ["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"], lease=str(lease))
    started(d)
    ended = finished(d, timeout=3)
    assert ended["signal"] == signal.SIGKILL
    assert ended["error"].startswith("lease expired"), "not the task's own end: the agent reports it lost"
    assert sup.wait(5) == 0
    assert read(d / "notice.json")["kind"] == "lease-expired"


def test_signal_names_and_env(tmp_path):
    assert signal_number("SIGUSR1") == signal_number("usr1") == signal_number(10) == signal_number("10") == 10
    with pytest.raises(ValueError):
        signal_number("SIGNOPE")
    env = task_env({"attempt": "a/b/c/0/1#2", "env": {"MAKEWAY_JOB_ID": "kept"}}, tmp_path)
    assert (env["MAKEWAY_JOB_ID"], env["MAKEWAY_TASK_ID"], env["MAKEWAY_ATTEMPT"]) == ("kept", "a/b/c/0/1", "2")
    assert env["MAKEWAY_PREEMPT_NOTICE"] == str(tmp_path / "notice.json") and "PATH" in env


def test_a_task_gets_the_blas_threads_its_submitter_had(tmp_path, monkeypatch):
    """The command line keeps numpy's OpenBLAS to one thread for makeway itself (``makeway.blas``);
    a task the agent runs must not inherit that, only what the user or the job set."""
    from makeway import blas

    monkeypatch.delenv(blas.VAR, raising=False)
    monkeypatch.delenv(blas.MARK, raising=False)
    blas.one_thread(os.environ)
    assert os.environ[blas.VAR] == "1"
    env = task_env({"attempt": "j/0/0#1"}, tmp_path)
    assert blas.VAR not in env and blas.MARK not in env
    assert task_env({"attempt": "j/0/0#1", "env": {blas.VAR: "8"}}, tmp_path)[blas.VAR] == "8"
    monkeypatch.delenv(blas.MARK)
    monkeypatch.setenv(blas.VAR, "4")  # the user's own choice, which the command line keeps
    blas.one_thread(os.environ)
    assert task_env({"attempt": "j/0/0#1"}, tmp_path)[blas.VAR] == "4"
