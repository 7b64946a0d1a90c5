"""The agent: the pure reconcile table, then a real agent against a fake server speaking the protocol.

The fake server is a FastAPI app under uvicorn in a thread on 127.0.0.1 (free port): it serves a
desired set the test changes, and records registrations and reports (deduplicated by seq, as the
protocol says). Tasks are real processes under real supervisors. The file runs in about 10 s.
"""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from makeway.errors import ConfigError
from makeway.live.agent import Agent, Local, parse_capacity, parse_pairs, reconcile, supervisor_alive

from .test_supervisor import alive, read, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

PY = sys.executable


# -- reconcile, table-driven -----------------------------------------------------------------------

def run_(a):
    return {"attempt": a, "action": "run", "command": ["true"]}


def stop_(a):
    return {"attempt": a, "action": "stop", "signal": "SIGTERM", "deadline": 100.0, "notice": {"kind": "preempted"}}


RUNNING, STARTING = Local("x", "running", started=True), Local("x", "starting")
EXITED, STOPPING = Local("x", "exited", exit_code=0, started=True), Local("x", "running", "SIGTERM", started=True)
KILLED = Local("x", "running", "SIGKILL", started=True)

CASES = [
    ("run, not here: start", [run_("a")], {}, [("start", "a")]),
    ("run, running: nothing", [run_("a")], {"a": RUNNING}, []),
    ("run, starting: nothing", [run_("a")], {"a": STARTING}, []),
    ("run, exited: never again", [run_("a")], {"a": EXITED}, []),
    ("stop, running: stop", [stop_("a")], {"a": RUNNING}, [("stop", "a")]),
    ("stop, starting: stop", [stop_("a")], {"a": STARTING}, [("stop", "a")]),
    ("stop, already asked: once", [stop_("a")], {"a": STOPPING}, []),
    ("stop, exited: nothing", [stop_("a")], {"a": EXITED}, []),
    ("stop, never started: skip", [stop_("a")], {}, [("skip", "a")]),
    ("absent, running: kill", [], {"a": RUNNING}, [("kill", "a")]),
    ("absent, stopping gracefully: kill", [], {"a": STOPPING}, [("kill", "a")]),
    ("absent, killed already: nothing", [], {"a": KILLED}, []),
    ("absent, exited: nothing", [], {"a": EXITED}, []),
    ("duplicate entries: first wins", [run_("a"), stop_("a")], {}, [("start", "a")]),
    ("unknown action: nothing", [{"attempt": "a", "action": "pause"}], {}, []),
    ("order: desired as given, kills sorted",
     [run_("c"), stop_("b"), run_("a")], {"b": RUNNING, "z": RUNNING, "y": STARTING},
     [("start", "c"), ("stop", "b"), ("start", "a"), ("kill", "y"), ("kill", "z")]),
]


@pytest.mark.parametrize("desired, local, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reconcile(desired, local, expected):
    got = reconcile(desired, local)
    assert [(a.kind, a.attempt) for a in got] == expected
    for a in got:
        if a.kind in ("start", "stop", "skip"):
            assert a.entry["attempt"] == a.attempt
    assert reconcile(desired, local) == got


def test_reconcile_applied_twice_is_quiet():
    """After the actions take effect, the same desired set asks for nothing more."""
    desired = [run_("a"), stop_("b")]
    first = reconcile(desired, {"b": RUNNING, "c": RUNNING})
    assert {(a.kind, a.attempt) for a in first} == {("start", "a"), ("stop", "b"), ("kill", "c")}
    after = {"a": STARTING, "b": STOPPING, "c": KILLED}
    assert reconcile(desired, after) == []


def test_option_parsing():
    assert parse_capacity("cpu=4, memory=8Gi") == {"cpu": 4, "memory": 8 * 2**30}
    assert parse_pairs("zone=a,gpu=a100", "--labels") == {"zone": "a", "gpu": "a100"}
    with pytest.raises(ConfigError, match="--capacity: cpu"):
        parse_capacity("cpu=lots")
    with pytest.raises(ConfigError, match="--labels"):
        parse_pairs("zone", "--labels")


def test_reports_survive_a_cut_line_and_lost_supervisors_become_exits(tmp_path):
    """No server needed: the agent's view of its workdir after a crash."""
    from makeway.live.supervisor import write_json_atomic

    work = tmp_path / "agent"
    (work / "attempts").mkdir(parents=True)
    lines = [json.dumps({"seq": n, "attempt": f"old/0/0#{n}", "event": "started", "exit_code": None, "signal": None})
             for n in (1, 2)]
    (work / "reports.jsonl").write_text("\n".join(lines) + '\n{"seq": 3, "attem')
    dead = subprocess.Popen(["true"])
    dead.wait()
    lost, never = work / "attempts" / "lost_0_0_1", work / "attempts" / "never_0_0_1"
    for d, attempt in ((lost, "lost/0/0#1"), (never, "never/0/0#1")):
        d.mkdir()
        write_json_atomic(d / "spec.json", {"attempt": attempt, "command": ["true"], "env": {}, "cwd": None})
    write_json_atomic(lost / "pid.json", {"supervisor": dead.pid, "child": dead.pid, "pgid": dead.pid, "started": 0})
    worker = Agent("http://127.0.0.1:9", "n1", {"cpu": 1}, {}, work)
    assert worker.seq == 2 and (work / "reports.jsonl").read_text().endswith("\n")
    assert worker.collect()
    got = [(r["seq"], r["attempt"], r["event"], r["signal"]) for r in worker.unacked()]
    assert got[2:] == [(3, "lost/0/0#1", "started", None), (4, "lost/0/0#1", "exited", 9),
                       (5, "never/0/0#1", "exited", None)]
    assert read(lost / "exit.json")["error"] == "supervisor lost"
    assert not worker.collect(), "each event is reported once"
    again = Agent("http://127.0.0.1:9", "n1", {"cpu": 1}, {}, work)
    assert again.seq == 5 and not again.collect()


# -- a fake server ---------------------------------------------------------------------------------

class FakeServer:
    """Speaks /v1/agent: register, heartbeat (409 on a wrong epoch), long-polled desired set."""

    def __init__(self) -> None:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse

        self.epoch = 1
        self.answer_epoch = None  # when set, desired answers claim this epoch
        self.version = 0
        self.attempts: list[dict] = []
        self.registers: list[dict] = []
        self.reports: dict[int, dict] = {}
        self.url = ""
        self.closing = False
        app = FastAPI()

        @app.post("/v1/agent/register")
        async def register(request: Request):
            self.registers.append(await request.json())
            return {"epoch": self.epoch, "heartbeat_interval": 0.2, "lease": 30}

        @app.post("/v1/agent/heartbeat")
        async def heartbeat(request: Request):
            body = await request.json()
            if body.get("epoch") != self.epoch:
                return JSONResponse({"detail": "epoch: stale"}, status_code=409)
            for r in body["reports"]:
                self.reports.setdefault(r["seq"], r)
            return {"acked": max(self.reports, default=0)}

        @app.get("/v1/agent/desired")
        async def desired(node: str, version: int, wait: float):
            if not any(r["node"] == node for r in self.registers):
                return JSONResponse({"detail": f"node: {node} not registered"}, status_code=404)
            end = time.monotonic() + wait
            while self.version == version and time.monotonic() < end and not self.closing:
                await asyncio.sleep(0.02)
            epoch = self.epoch if self.answer_epoch is None else self.answer_epoch
            return {"epoch": epoch, "version": self.version, "attempts": list(self.attempts)}

        self.app = app

    def set(self, attempts: list[dict]) -> None:
        self.attempts = attempts
        self.version += 1

    def events(self, attempt: str) -> list[tuple]:
        return [(r["event"], r["exit_code"], r["signal"]) for _, r in sorted(self.reports.items())
                if r["attempt"] == attempt]


@pytest.fixture
def server():
    import uvicorn

    fake = FakeServer()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    fake.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv = uvicorn.Server(uvicorn.Config(fake.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: srv.started, 10, "the fake server")
    yield fake
    fake.closing = True
    srv.should_exit = True
    thread.join(10)
    sock.close()


def cleanup(workdir: Path) -> None:
    """Kill every task and supervisor a test left behind."""
    for pid_file in workdir.glob("attempts/*/pid.json"):
        pids = read(pid_file) or {}
        if supervisor_alive(pids.get("supervisor"), pid_file.parent):
            os.kill(pids["supervisor"], signal.SIGKILL)
        try:
            os.killpg(pids.get("pgid", 0), signal.SIGKILL)
        except (OSError, TypeError):
            pass


@pytest.fixture
def agent(server, tmp_path):
    workdir = tmp_path / "agent"
    worker = Agent(server.url, "n1", {"cpu": 4, "memory": 2**33}, {"zone": "a"}, workdir, poll_wait=0.5)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    yield worker
    worker.stop()
    thread.join(10)
    cleanup(workdir)


def entry(attempt: str, command: list[str], action: str = "run", **extra) -> dict:
    task, _, n = attempt.rpartition("#")
    return {"attempt": attempt, "job": task.split("/")[0], "task": task, "attempt_no": int(n), "command": command,
            "env": {}, "resources": {"cpu": 1}, "action": action, "signal": "SIGTERM", "deadline": None,
            "notice": None, **extra}


TRAPPER = """
import json, os, signal, sys, time
def on_term(signum, frame):
    json.dump(json.load(open(os.environ["MAKEWAY_PREEMPT_NOTICE"])), open(sys.argv[1], "w"))
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""


def test_agent_starts_reports_and_stops(server, agent, tmp_path):
    marker, ckpt = tmp_path / "marker", tmp_path / "ckpt.json"
    a = entry("a/0/0#1", ["sh", "-c", f'echo "$MAKEWAY_JOB_ID $MAKEWAY_TASK_ID $MAKEWAY_ATTEMPT" >> {marker}; exit 3'])
    b = entry("b/0/0#2", [PY, "-c", TRAPPER, str(ckpt)])
    c = entry("c/0/0#1", ["sh", "-c", "while :; do sleep 0.05; done"])
    server.set([a, b, c])
    wait_for(lambda: server.events("a/0/0#1") == [("started", None, None), ("exited", 3, None)], 10, "a's exit")
    wait_for(lambda: Path(str(ckpt) + ".ready").exists() and server.events("c/0/0#1"), 10, "b and c running")
    reg = server.registers[0]
    assert (reg["node"], reg["capacity"], reg["labels"], reg["attempts"]) == ("n1", {"cpu": 4, "memory": 2**33},
                                                                             {"zone": "a"}, [])
    deadline = time.time() + 5
    notice = {"reason": {"model": "kueue", "rule": "reclaim"}, "preemptor": "big", "deadline": deadline,
              "kind": "preempted"}
    d = entry("d/0/0#1", ["sh", "-c", f"echo d >> {marker}"], action="stop", deadline=deadline, notice=notice)
    server.set([a, dict(b, action="stop", deadline=deadline, notice=notice), d])
    wait_for(lambda: ("exited", 0, None) in server.events("b/0/0#2"), 10, "b's graceful exit")
    wait_for(lambda: ("exited", None, 9) in server.events("c/0/0#1"), 10, "c killed (absent from the set)")
    wait_for(lambda: server.events("d/0/0#1"), 10, "d skipped")
    assert json.loads(ckpt.read_text()) == notice
    assert server.events("d/0/0#1") == [("exited", None, None)], "a stop for an attempt never started runs nothing"
    assert marker.read_text() == "a a/0/0 1\n", "a ran once, d never"
    seqs = sorted(server.reports)
    assert seqs == list(range(1, len(seqs) + 1))
    assert len({(r["attempt"], r["event"]) for r in server.reports.values()}) == len(seqs), "each report once"


def test_agent_ignores_an_older_epoch_and_registers_again_on_a_new_one(server, agent, tmp_path):
    wait_for(lambda: server.registers, 10, "registration")
    server.answer_epoch = 0
    e = entry("e/0/0#1", ["sh", "-c", "while :; do sleep 0.05; done"])
    server.set([e])
    time.sleep(0.8)
    assert not server.events("e/0/0#1") and not list((tmp_path / "agent" / "attempts").iterdir())
    server.answer_epoch = None
    server.set([e])
    wait_for(lambda: server.events("e/0/0#1") == [("started", None, None)], 10, "e started")
    server.epoch = 2  # the server restarted: heartbeats get 409, desired answers carry epoch 2
    wait_for(lambda: len(server.registers) >= 2, 10, "registration in the new epoch")
    assert server.registers[-1]["attempts"] == [{"attempt": "e/0/0#1", "state": "running", "exit_code": None,
                                                "signal": None}]
    server.set([])
    wait_for(lambda: ("exited", None, 9) in server.events("e/0/0#1"), 10, "e killed after the new epoch's empty set")


def spawn_agent(server, workdir: Path) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "makeway", "agent", "--node", "n1", "--capacity", "cpu=2,memory=1Gi",
                             "--labels", "zone=b", "--workdir", str(workdir)],
                            env={**os.environ, "MAKEWAY_SERVER": server.url},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_agent_restart_reattaches_and_reports_the_exits(server, tmp_path):
    workdir, marker = tmp_path / "agent", tmp_path / "marker"
    cmd = 'echo "$MAKEWAY_TASK_ID" >> {m}; while [ ! -e {r} ]; do sleep 0.05; done; exit {code}'
    x = entry("x/0/0#1", ["sh", "-c", cmd.format(m=marker, r=tmp_path / "rx", code=7)])
    y = entry("y/0/0#1", ["sh", "-c", cmd.format(m=marker, r=tmp_path / "ry", code=8)])
    server.set([x, y])
    first = spawn_agent(server, workdir)
    try:
        wait_for(lambda: server.events("x/0/0#1") and server.events("y/0/0#1"), 15, "x and y started")
        assert server.registers[0]["capacity"] == {"cpu": 2, "memory": 2**30}
        first.kill()
        first.wait(5)
        pids = read(workdir / "attempts" / "x_0_0_1" / "pid.json")
        assert alive(pids["child"]), "the task outlives its agent"
        (tmp_path / "ry").touch()  # y exits while no agent runs
        wait_for(lambda: (workdir / "attempts" / "y_0_0_1" / "exit.json").exists(), 5, "y's exit.json")
        second = spawn_agent(server, workdir)
        try:
            wait_for(lambda: len(server.registers) >= 2, 15, "the second registration")
            listed = {a["attempt"]: a for a in server.registers[1]["attempts"]}
            assert listed["x/0/0#1"]["state"] == "running"
            wait_for(lambda: ("exited", 8, None) in server.events("y/0/0#1"), 10, "y's exit reported after restart")
            (tmp_path / "rx").touch()
            wait_for(lambda: ("exited", 7, None) in server.events("x/0/0#1"), 10, "x's exit")
            assert server.events("x/0/0#1") == [("started", None, None), ("exited", 7, None)]
            assert sorted(marker.read_text().split()) == ["x/0/0", "y/0/0"], "each task started exactly once"
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(10) == 0
    finally:
        first.kill()
        cleanup(workdir)
