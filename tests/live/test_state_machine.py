"""A hypothesis state machine over the live service (issue 15): submit, cancel, quota change, kill the
server, kill an agent, restart, advance time, in any order, on a fake clock.

The server runs in process (``SchedulerLoop`` + ``create_app`` + TestClient on a SQLite file), stepped
by hand. "Kill the server" abandons the loop, the app and the store with no close and no snapshot:
only what was committed survives, as after kill -9; "restart" recovers a new one from the same file
(which replays the journal and checks every recorded digest). Two scripted agents speak the agent
protocol over the API and use the real agent's ``reconcile``; their "disk" (attempts, reports,
acknowledged seq, lease) survives a kill, their memory (registered, epoch, version) does not. The
tasks are simulated by the "supervisors" of that disk: a task ends when its time is up, on its stop
signal (or at the deadline when it ignores it), or when the agent's lease expired, as the real
supervisor does.

After every step: every acknowledged id is in the journal and in the server's jobs; no task runs
twice at once on the agents' disks; the core keeps ``check_invariants()`` and never hands one task
out twice (``harness.core_problems``); every job is finished, running, or pending with a reason. At
teardown everything is brought back and drained (the tasks run to exit 0): every acknowledged job
ends, finished unless it was cancelled, and the journal replays pass by pass without a problem.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)

from makeway.config import parse_config
from makeway.live.agent import Local, reconcile
from makeway.live.api import create_app
from makeway.live.core import TERMINAL
from makeway.live.loop import SchedulerLoop
from makeway.live.store import Store
from tests.live.harness import core_problems, replay_checked, two_queue_kueue

CFG = two_queue_kueue("machine", {"n1": 2, "n2": 2})
CONFIG = parse_config(CFG)
LEASE, SUSPECT, MARGIN, GRACE = 10.0, 4.0, 3.0, 5.0
EXAMPLES, STEPS = 10, 25
STEPS_RUN = [0, 0]  # invariant checks, machines built
STATS: dict[str, int] = {}


def count(what: str, n: int = 1) -> None:
    STATS[what] = STATS.get(what, 0) + n


class Server:
    """One in-process server on the database file; abandoned, never closed, when killed."""

    def __init__(self, url: str, clock: list[float]):
        self.store = Store(url)
        self.loop = SchedulerLoop(CONFIG, self.store, clock=lambda: clock[0], recovery_grace=GRACE, lease=LEASE,
                                  suspect_after=SUSPECT, kill_margin=MARGIN, snapshot_every=7)
        self.loop.recover()
        self.app = create_app(self.loop, CONFIG, self.store)
        self.client = TestClient(self.app)
        self.client.__enter__()

    def tick(self) -> bool:
        """What one turn of the loop thread does; True when a pass ran."""
        loop = self.loop
        if not loop.ready and not loop._check_ready():
            return False
        loop.check_leases()
        return loop.step()

    def close(self) -> None:
        """Only at teardown, long after the kill: the abandoned server wrote nothing since."""
        self.client.__exit__(None, None, None)
        self.app.state.committer.close()
        self.store.close()


class Agent:
    """A scripted agent for one node; ``disk`` survives a kill, ``mem`` does not."""

    def __init__(self, node: str, cpu: int, clock: list[float]):
        self.node, self.cpu, self.clock = node, cpu, clock
        self.disk: dict[str, Any] = {"attempts": {}, "reports": [], "seq": 0, "acked": 0, "lease_until": None}
        self.mem: Optional[dict[str, Any]] = {"registered": False, "epoch": None, "version": None}
        self.draining = False
        self.cut = False  # alive, but cut off from the server

    @property
    def alive(self) -> bool:
        return self.mem is not None

    def kill(self) -> None:
        self.mem = None

    def restart(self) -> None:
        self.mem = {"registered": False, "epoch": None, "version": None}

    # -- the supervisors: they run whether the agent lives or not -------------------------------------
    def supervise(self) -> None:
        now = self.clock[0]
        lease = self.disk["lease_until"]
        for a in self.disk["attempts"].values():
            if a["state"] != "running":
                continue
            if lease is not None and now > lease:
                self._exit(a, None, 9, "lease expired: killed by its supervisor")
            elif a["stop"] is not None and now >= a["deadline"]:
                self._exit(a, None, 9)
            elif a["stop"] is None and (now >= a["ends_at"] or self.draining):
                self._exit(a, 0, None)

    @staticmethod
    def _exit(a: dict, code: Optional[int], sig: Optional[int], error: Optional[str] = None) -> None:
        a.update(state="exited", exit_code=code, signal=sig, error=error)

    # -- the agent ----------------------------------------------------------------------------------
    def local(self) -> dict[str, Local]:
        return {aid: Local(aid, a["state"], a["stop"], a["exit_code"], a["signal"], a["started"], bool(a["error"]))
                for aid, a in self.disk["attempts"].items()}

    def collect(self) -> bool:
        """New starts and exits on disk become sequence-numbered reports (kept on disk until acked)."""
        before = self.disk["seq"]
        for aid in sorted(self.disk["attempts"]):
            a = self.disk["attempts"][aid]
            for event in ("started", "exited"):
                if event in a["reported"] or (event == "started" and not a["started"]) or \
                        (event == "exited" and a["state"] != "exited"):
                    continue
                a["reported"].add(event)
                self.disk["seq"] += 1
                rep = {"seq": self.disk["seq"], "attempt": aid, "event": event}
                if event == "exited":
                    rep.update(exit_code=a["exit_code"], signal=a["signal"])
                    if a["error"]:
                        rep["lost"] = True
                self.disk["reports"].append(rep)
        return self.disk["seq"] != before

    def sync(self, client: TestClient) -> bool:
        """Register if needed, send reports, fetch the desired set and act on it, report again; True
        when the server was told something new or the agent acted."""
        mem = self.mem
        assert mem is not None
        changed = self.collect() or any(r["seq"] > self.disk["acked"] for r in self.disk["reports"])
        if not mem["registered"]:
            changed = True
            unacked = {r["attempt"] for r in self.disk["reports"] if r["seq"] > self.disk["acked"]}
            atts = [{"attempt": aid, "state": "exited" if a["state"] == "exited" else "running",
                     "exit_code": a["exit_code"], "signal": a["signal"], **({"lost": True} if a["error"] else {})}
                    for aid, a in sorted(self.disk["attempts"].items()) if a["state"] != "exited" or aid in unacked]
            sent = self.clock[0]
            r = client.post("/v1/agent/register", json={"node": self.node, "capacity": {"cpu": self.cpu},
                                                        "attempts": atts})
            assert r.status_code == 200, r.text
            body = r.json()
            mem.update(registered=True, epoch=body["epoch"], version=None, lease=body["lease"])
            self.disk["lease_until"] = sent + body["lease"] if body["lease"] else None
        if not self._heartbeat(client):
            return True
        r = client.get("/v1/agent/desired", params={"node": self.node, "wait": 0})
        if r.status_code == 409:
            mem["registered"] = False
            return True
        assert r.status_code == 200, r.text
        body = r.json()
        if body["epoch"] > mem["epoch"]:
            mem["registered"] = False  # a newer server: register with it first
            return True
        if body["epoch"] < mem["epoch"]:
            return changed
        mem["version"] = body["version"]
        actions = reconcile(body["attempts"], self.local())
        for act in actions:
            self._apply(act)
        self.supervise()
        if self.collect():
            self._heartbeat(client)
        return changed or bool(actions)

    def _heartbeat(self, client: TestClient) -> bool:
        mem = self.mem
        sent = self.clock[0]
        reports = [r for r in self.disk["reports"] if r["seq"] > self.disk["acked"]]
        r = client.post("/v1/agent/heartbeat", json={"node": self.node, "epoch": mem["epoch"], "reports": reports})
        if r.status_code == 409:
            mem["registered"] = False
            return False
        assert r.status_code == 200, r.text
        self.disk["acked"] = r.json()["acked"]
        if mem.get("lease"):
            self.disk["lease_until"] = sent + mem["lease"]
        return True

    def _apply(self, act: Any) -> None:
        now = self.clock[0]
        atts = self.disk["attempts"]
        if act.kind == "start":
            cmd = act.entry["command"]
            atts[act.attempt] = {"task": act.entry["task"], "state": "running", "started": True, "stop": None,
                                 "deadline": None, "ends_at": now + float(cmd[1]), "stubborn": cmd[0] == "stubborn",
                                 "exit_code": None, "signal": None, "error": None, "reported": set()}
        elif act.kind == "stop":
            a = atts[act.attempt]
            a["stop"], a["deadline"] = act.entry.get("signal") or "SIGTERM", act.entry["deadline"]
            if a["state"] == "running" and not a["stubborn"]:
                self._exit(a, 143, None)
        elif act.kind == "kill":
            a = atts[act.attempt]
            a["stop"] = "SIGKILL"
            if a["state"] == "running":
                self._exit(a, None, 9)
        elif act.kind == "skip":
            atts[act.attempt] = {"task": act.entry["task"], "state": "exited", "started": False,
                                 "stop": act.entry.get("signal") or "SIGTERM", "deadline": None, "ends_at": now,
                                 "stubborn": False, "exit_code": None, "signal": None,
                                 "error": "stopped before it started", "reported": set()}


def job_body(jid: str, kind: str, seconds: float, grace: float, stubborn: bool) -> dict:
    queue = "prod" if kind == "prod" else "batch"
    count = 1 if kind == "urgent" else 2
    return {"id": jid, "queue": queue, "priority": 0 if kind == "batch" else 10, "grace": grace,
            "tasks": [{"count": count, "resources": {"cpu": 1}}],
            "command": ["stubborn" if stubborn else "work", str(seconds)]}


class LiveMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="makeway-machine-"))
        self.url = f"sqlite:///{self.dir / 'machine.db'}"
        self.clock = [1000.0]
        self.server: Optional[Server] = Server(self.url, self.clock)
        self.dead: list[Server] = []
        self.agents = [Agent("n1", 2, self.clock), Agent("n2", 2, self.clock)]
        self.acked: dict[str, None] = {}
        self.cancelled: set[str] = set()
        self.unanswered: dict[str, str] = {}   # idempotency key -> job id, committed but never answered
        self.n = 0
        STEPS_RUN[1] += 1
        self.settle()

    # -- the world turning --------------------------------------------------------------------------
    def settle(self, rounds: int = 4) -> None:
        """Supervisors, agents and the loop take turns at the current time until nothing changes (at
        most ``rounds`` turns)."""
        for _ in range(rounds):
            for a in self.agents:
                a.supervise()
            if self.server is None:
                return
            changed = False
            for a in self.agents:
                if a.alive and not a.cut:
                    changed |= a.sync(self.server.client)
            changed |= self.server.tick()
            if not changed:
                return

    def submit(self, body: dict, key: str) -> Any:
        assert self.server is not None
        return self.server.client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})

    # -- rules ----------------------------------------------------------------------------------------
    @precondition(lambda self: self.server is not None)
    @rule(kind=st.sampled_from(["batch", "urgent", "prod"]), seconds=st.sampled_from([1.0, 3.0, 8.0]),
          grace=st.sampled_from([0.0, 2.0]), stubborn=st.booleans(), crash=st.integers(0, 3).map(lambda n: n == 0))
    def submit_job(self, kind, seconds, grace, stubborn, crash):
        """A submission; with ``crash`` the server dies after committing it, before the answer."""
        self.n += 1
        jid, key = f"{kind}-{self.n}", f"key-{self.n}"
        r = self.submit(job_body(jid, kind, seconds, grace, stubborn), key)
        assert r.status_code == 201, r.text
        if crash:
            self.unanswered[key] = jid
            count("crashes after a commit, before the answer")
            self.kill_server()
            return
        assert r.json()["id"] == jid
        self.acked[jid] = None
        self.settle()

    @precondition(lambda self: self.server is not None)
    @rule(seconds=st.sampled_from([2.0, 6.0]), urgent=st.integers(0, 2))
    def submit_burst(self, seconds, urgent):
        """Batch work filling the cluster, then ``urgent`` jobs that must make it make way."""
        for i in range(2 + urgent):
            self.n += 1
            kind = "batch" if i < 2 else ("urgent", "prod")[i % 2]
            jid = f"{kind}-{self.n}"
            r = self.submit(job_body(jid, kind, seconds, 1.0, False), f"key-{self.n}")
            assert r.status_code == 201 and r.json()["id"] == jid, r.text
            self.acked[jid] = None
            self.settle(rounds=2)

    @precondition(lambda self: self.server is not None and self.acked)
    @rule(data=st.data())
    def cancel(self, data):
        jid = data.draw(st.sampled_from(sorted(self.acked)))
        r = self.server.client.delete(f"/v1/jobs/{jid}")
        assert r.status_code == 202, r.text
        self.cancelled.add(jid)
        self.settle()

    @precondition(lambda self: self.server is not None)
    @rule(cpu=st.sampled_from([2, 3, 4]))
    def quota_change(self, cpu):
        r = self.server.client.patch("/v1/queues/batch", json={"max": {"cpu": cpu}})
        assert r.status_code == 200, r.text
        self.settle()

    @precondition(lambda self: self.server is not None)
    @rule()
    def kill_server(self):
        count("server kills")
        self.dead.append(self.server)
        self.server = None
        self.settle()

    @precondition(lambda self: any(a.alive for a in self.agents))
    @rule(i=st.sampled_from([0, 1]), away=st.sampled_from([0.0, LEASE + 1.0, 3 * LEASE]))
    def kill_agent(self, i, away):
        """The agent dies; ``away`` seconds pass before anything else happens (inside the lease, past
        the lease but not yet lost, or lost)."""
        count("agent kills")
        self.agents[i].kill()
        self.clock[0] += away
        self.settle()

    @precondition(lambda self: self.server is None or not all(a.alive for a in self.agents))
    @rule()
    def restart(self):
        self.bring_back()
        self.settle()

    @rule(seconds=st.sampled_from([0.5, 2.0, 5.0, 12.0, 30.0]))
    def advance_time(self, seconds):
        self.clock[0] += seconds
        self.settle()

    def bring_back(self) -> None:
        if self.server is None:
            self.server = Server(self.url, self.clock)
            for key, jid in sorted(self.unanswered.items()):
                r = self.submit({"id": jid, "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}],
                                 "command": ["work", "1"]}, key)
                assert r.status_code == 201 and r.json() == {"id": jid, "seq": r.json()["seq"], "created": False}, \
                    f"{key}: committed before the crash, yet {r.status_code} {r.text}"
                self.acked[jid] = None
            self.unanswered.clear()
        for a in self.agents:
            if not a.alive:
                a.restart()

    # -- oracles ------------------------------------------------------------------------------------
    @invariant()
    def count_step(self):
        STEPS_RUN[0] += 1  # after each step, and once after __init__ (subtracted)

    @invariant()
    def acknowledged_jobs_are_journaled_and_listed_with_a_reason(self):
        if self.server is None:
            return
        store = self.server.store
        journaled = {e.payload["job"]["id"] for e in store.events_after(0) if e.kind == "submit"}
        missing = [j for j in self.acked if j not in journaled]
        assert not missing, f"acknowledged, not in the journal: {missing}"
        jobs = self.server.client.get("/v1/jobs").json()["jobs"]
        missing = [j for j in self.acked if j not in {v["id"] for v in jobs}]
        assert not missing, f"acknowledged, not among the server's jobs: {missing}"
        for j in jobs:  # every job is finished (or ended), running, or pending with a reason
            assert j["state"] in (*TERMINAL, "running", "preempting", "pending"), j
            if j["state"] == "pending":
                assert j["reason_code"], f"pending without a reason: {j}"

    @invariant()
    def no_task_runs_twice_at_once(self):
        running: dict[str, list[str]] = {}
        for a in self.agents:
            for aid, att in a.disk["attempts"].items():
                if att["state"] == "running":
                    running.setdefault(att["task"], []).append(f"{a.node}:{aid}")
        twice = {t: r for t, r in running.items() if len(r) > 1}
        assert not twice, f"tasks running twice at once: {twice}"

    @invariant()
    def core_holds(self):
        if self.server is None:
            return
        with self.server.loop.lock:
            problems = core_problems(self.server.loop.core)
        assert problems == [], problems

    def teardown(self):
        try:
            if self.server is not None or self.acked or self.unanswered:
                self.drain()
        finally:
            for s in self.dead + ([self.server] if self.server else []):
                s.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def drain(self) -> None:
        self.bring_back()
        for a in self.agents:
            a.draining = True
        want = set(self.acked)
        states: dict[str, str] = {}
        for _ in range(40):
            self.clock[0] += 2.0
            self.settle()
            states = {j: self.server.client.get(f"/v1/jobs/{j}").json()["state"] for j in want}
            if all(s in TERMINAL for s in states.values()):
                break
        not_done = {j: s for j, s in states.items() if s not in TERMINAL}
        assert not not_done, f"never ended: {not_done}"
        wrong = {j: s for j, s in states.items() if s != "finished" and (j not in self.cancelled or s != "cancelled")}
        assert not wrong, f"acknowledged jobs that did not finish: {wrong}"
        passes, problems = replay_checked(CONFIG, self.url)
        assert problems == [], problems[:5]
        store = self.server.store
        count("acknowledged jobs", len(want))
        count("cancelled", len(self.cancelled))
        count("preemptions", len(store.decisions(kind="preempt", limit=None)))
        count("nodes lost", sum(1 for e in store.events_after(0) if e.kind == "lost"))
        count("passes replayed", passes)


def test_live_service_state_machine():
    """EXAMPLES runs of STEPS steps, derandomized (CI runs the same steps every time)."""
    STEPS_RUN[:] = [0, 0]
    STATS.clear()
    run_state_machine_as_test(LiveMachine, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck)))
    steps = STEPS_RUN[0] - STEPS_RUN[1]
    print(f"\nstate machine: {STEPS_RUN[1]} runs, {steps} steps, each checked; {STATS}")
    assert steps >= 200, steps


def test_tasks_killed_at_the_lease_are_requeued_not_failed():
    """Regression (found by the machine): an agent away longer than its lease but not yet declared lost
    (lease < silence < lease + margin) finds its tasks killed by their supervisors. Those exits are the
    lease's doing, not the tasks': reported at registration (agent restarted) or in a heartbeat (line
    cut, then back) they must requeue the tasks, not fail the jobs. Before the fix both jobs failed."""
    m = LiveMachine()
    try:
        m.submit_job("batch", 8.0, 0.0, False, False)
        m.submit_job("batch", 8.0, 0.0, False, False)
        nodes = {j["id"]: j["node"] for j in m.server.client.get("/v1/jobs").json()["jobs"]}
        assert sorted(nodes.values()) == ["n1", "n2"], nodes
        m.agents[0].kill()          # back by a restart: the exits ride on its registration
        m.agents[1].cut = True      # back as it was: the exits ride on a heartbeat
        m.advance_time(LEASE + 1.0)
        killed = sorted(aid for ag in m.agents for aid, a in ag.disk["attempts"].items() if a["signal"] == 9)
        assert len(killed) == 4, "the supervisors kill every task at the lease"
        jobs = {j["id"]: j["state"] for j in m.server.client.get("/v1/jobs").json()["jobs"]}
        assert set(jobs.values()) == {"running"}, f"not declared lost yet (lease + margin): {jobs}"
        m.agents[1].cut = False
        m.restart()
        for jid in jobs:
            v = m.server.client.get(f"/v1/jobs/{jid}").json()
            assert v["state"] != "failed", v["message"]
            assert {a["attempt_no"] for a in v["attempts"]} == {1, 2}, "each task runs again as attempt 2"
    finally:
        m.teardown()  # drains: both jobs must finish


def test_the_real_agent_reports_a_lease_killed_task_lost_when_it_registers(tmp_path):
    """The same fix through the real ``Agent`` (its registration) and the real API: an attempt
    directory whose supervisor recorded a lease kill is reported lost, and the task waits again."""
    import os
    import subprocess

    from makeway.live.agent import Agent, dir_name
    from makeway.live.supervisor import write_json_atomic

    clock = [1000.0]
    server = Server(f"sqlite:///{tmp_path / 'agent.db'}", clock)
    try:
        client = server.client
        assert client.post("/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 2}}).status_code == 200
        assert client.post("/v1/jobs", json=job_body("b", "batch", 8.0, 0.0, False)).status_code == 201
        server.tick()
        running = [a["attempt"] for a in client.get("/v1/jobs/b").json()["attempts"]]
        assert len(running) == 2
        dead = subprocess.Popen(["true"])
        dead.wait()
        worker = Agent("http://testserver", "n1", {"cpu": 2}, {}, tmp_path / "agent")
        worker.http = client
        for aid in running:  # what a supervisor killed at the lease leaves behind
            d = worker.attempts_dir / dir_name(aid)
            d.mkdir()
            write_json_atomic(d / "spec.json", {"attempt": aid, "command": ["work", "8"], "env": {}, "cwd": None})
            write_json_atomic(d / "pid.json", {"supervisor": dead.pid, "child": dead.pid, "pgid": dead.pid,
                                               "started": 0})
            write_json_atomic(d / "exit.json", {"exit_code": None, "signal": 9, "ended": 0,
                                                "error": "lease expired: killed by its supervisor"})
        worker.register()
        assert os.path.exists(worker.lease_file)
        server.tick()
        v = client.get("/v1/jobs/b").json()
        assert v["state"] != "failed", v["message"]
        assert sorted(a["attempt_no"] for a in v["attempts"]) == [1, 1, 2, 2], v["attempts"]
    finally:
        server.close()
